// pipeline/write/mineru_4/writer.cc — MinerU 4's files (see writer.h).
#include "pipeline/write/mineru_4/writer.h"

#include <utility>

#include "base/mapped_file.h"
#include "base/version.h"
#include "pipeline/write/mineru_4/middle2.h"
#include "pipeline/write/mineru_4/render.h"

namespace mineru::pipeline {
namespace {

class MinerU4Writer final : public OutputWriter {
 public:
  std::string_view version() const override { return "4.x"; }
  KindFiles Files(const std::string& name) const override {
    return {"markdown.md", "content_list.json", "middle_json.json", ""};
  }

  Json AssemblePage(const PageInput& page, const PageMedia& media) const override {
    return mineru4::MiddlePage(page, media.image_path);
  }

  // The result ZIP's files, each under DIR/: middle_json.json, markdown.md, content_list.json,
  // structured_content.json (MinerU 4.1+ writes no model output).
  Status WriteDocument(const std::vector<PageInput>& pages, std::vector<Json> parts,
                       const DocumentFiles& files) const override {
    std::vector<Json> done;
    for (size_t i = 0; i < pages.size(); ++i) {
      const bool kept = i < parts.size() && !parts[i].is_null();
      done.push_back(kept ? std::move(parts[i]) : mineru4::MiddlePage(pages[i], files.media.image_path));
    }
    mineru4::EnvelopeInfo info;
    info.producer_version = kMineruCppVersion;
    info.full_document = files.full_document;
    const Json middle = mineru4::MiddleEnvelope(std::move(done), info);
    const std::string dir = files.dir + "/";
    MINERU_RETURN_IF_ERROR(WriteStringToFile(dir + "middle_json.json", DumpJson(middle)));
    MINERU_RETURN_IF_ERROR(WriteStringToFile(dir + "markdown.md", mineru4::Markdown(middle)));
    MINERU_RETURN_IF_ERROR(
        WriteStringToFile(dir + "content_list.json", DumpJson(mineru4::ContentList(middle))));
    return WriteStringToFile(dir + "structured_content.json", DumpJson(mineru4::StructuredContent(middle)));
  }
};

}  // namespace

std::unique_ptr<OutputWriter> MakeMinerU4Writer() { return std::make_unique<MinerU4Writer>(); }

}  // namespace mineru::pipeline
