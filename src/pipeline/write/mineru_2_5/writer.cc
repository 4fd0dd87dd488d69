// pipeline/write/mineru_2_5/writer.cc — MinerU 2.5.4's files (see writer.h).
#include "pipeline/write/mineru_2_5/writer.h"

#include <utility>

#include "base/mapped_file.h"
#include "pipeline/write/mineru_2_5/assemble.h"

namespace mineru::pipeline {
namespace {

class MinerU25Writer final : public OutputWriter {
 public:
  std::string_view version() const override { return "2.5.4"; }
  KindFiles Files(const std::string& name) const override {
    return {name + ".md", name + "_content_list.json", name + "_middle.json", name + "_model.json"};
  }

  Json AssemblePage(const PageInput& page, const PageMedia& media) const override {
    return PageInfoJson(page, Options(media));
  }

  // MinerU's write order: model.json, middle.json, content_list.json, NAME.md.
  Status WriteDocument(const std::vector<PageInput>& pages, std::vector<Json> parts,
                       const DocumentFiles& files) const override {
    const AssembleOptions names = Options(files.media);
    std::vector<std::vector<ContentBlock>> model;
    Json pdf_info = Json::array();
    for (size_t i = 0; i < pages.size(); ++i) {
      model.push_back(pages[i].blocks);
      const bool kept = i < parts.size() && !parts[i].is_null();
      pdf_info.push_back(kept ? std::move(parts[i]) : PageInfoJson(pages[i], names));
    }
    Json middle = MiddleJsonFromPages(std::move(pdf_info), names);
    const std::string base = files.dir + "/" + files.name;
    MINERU_RETURN_IF_ERROR(WriteStringToFile(base + "_model.json", DumpJson(ModelJson(model))));
    MINERU_RETURN_IF_ERROR(WriteStringToFile(base + "_middle.json", DumpJson(middle)));
    MINERU_RETURN_IF_ERROR(
        WriteStringToFile(base + "_content_list.json", DumpJson(ContentListFromMiddle(middle, "images"))));
    return WriteStringToFile(base + ".md", MarkdownFromMiddle(middle));
  }

 private:
  AssembleOptions Options(const PageMedia& media) const {
    AssembleOptions o;
    o.version_name = std::string(version());
    o.image_path = media.image_path;
    return o;
  }
};

}  // namespace

std::unique_ptr<OutputWriter> MakeMinerU25Writer() { return std::make_unique<MinerU25Writer>(); }

}  // namespace mineru::pipeline
