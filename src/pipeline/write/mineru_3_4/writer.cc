// pipeline/write/mineru_3_4/writer.cc — MinerU 3.4.4's files (see writer.h).
#include "pipeline/write/mineru_3_4/writer.h"

#include <utility>

#include "base/mapped_file.h"
#include "pipeline/write/mineru_3_4/assemble.h"

namespace mineru::pipeline {
namespace {

class MinerU34Writer final : public OutputWriter {
 public:
  std::string_view version() const override { return "3.4.4"; }
  KindFiles Files(const std::string& name) const override {
    return {name + ".md", name + "_content_list.json", name + "_middle.json", name + "_model.json"};
  }

  Json AssemblePage(const PageInput& page, const PageMedia& media) const override {
    return PageInfoV34(page, Options(media));
  }

  // MinerU's write order: model.json, then NAME.md and the content lists (which normalise
  // middle.json's text spans in place), then NAME_middle.json.
  Status WriteDocument(const std::vector<PageInput>& pages, std::vector<Json> parts,
                       const DocumentFiles& files) const override {
    const AssembleV34Options names = Options(files.media);
    std::vector<std::vector<ContentBlock>> model;
    Json pdf_info = Json::array();
    for (size_t i = 0; i < pages.size(); ++i) {
      model.push_back(pages[i].blocks);
      const bool kept = i < parts.size() && !parts[i].is_null();
      pdf_info.push_back(kept ? std::move(parts[i]) : PageInfoV34(pages[i], names));
    }
    const std::string base = files.dir + "/" + files.name;
    MINERU_RETURN_IF_ERROR(WriteStringToFile(base + "_model.json", DumpJson(ModelJson(model))));
    Json middle = MiddleJsonV34FromPages(std::move(pdf_info), names);
    const OutputsV34 out = MakeOutputsV34(middle, "images");
    MINERU_RETURN_IF_ERROR(WriteStringToFile(base + ".md", out.markdown));
    MINERU_RETURN_IF_ERROR(WriteStringToFile(base + "_content_list.json", DumpJson(out.content_list)));
    MINERU_RETURN_IF_ERROR(WriteStringToFile(base + "_content_list_v2.json", DumpJson(out.content_list_v2)));
    return WriteStringToFile(base + "_middle.json", DumpJson(middle));
  }

 private:
  AssembleV34Options Options(const PageMedia& media) const {
    AssembleV34Options o;
    o.version_name = std::string(version());
    o.image_path = media.image_path;
    o.write_inline_image = media.write_inline_image;
    return o;
  }
};

}  // namespace

std::unique_ptr<OutputWriter> MakeMinerU34Writer() { return std::make_unique<MinerU34Writer>(); }

}  // namespace mineru::pipeline
