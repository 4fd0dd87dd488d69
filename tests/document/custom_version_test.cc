// The driver knows no versions: a made-up output writer, defined here in the test tree, runs a
// recorded document through ParseDocument beside the real versions without a line of the driver
// changing (issue 36). It also checks the driver's contract with writers: AssemblePage once per
// page while the page is held, WriteDocument once with every page's part, pages in order.
#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../util/files.h"
#include "base/mapped_file.h"
#include "pipeline/document.h"
#include "pipeline/versions.h"

namespace mineru::pipeline {
namespace {

using ::mineru::testing::ReadAll;

const std::string kSamples = std::string(MINERU_SOURCE_DIR) + "/samples";

// Writes NAME.blocks.txt: one line per block, "page<TAB>type<TAB>content"; counts its calls.
class LineWriter final : public OutputWriter {
 public:
  std::string_view version() const override { return "made-up 9.9"; }
  KindFiles Files(const std::string& name) const override { return {name + ".lines", "", "", ""}; }

  Json AssemblePage(const PageInput& page, const PageMedia& /*media*/) const override {
    std::lock_guard<std::mutex> lock(mu_);  // pages in flight assemble concurrently
    ++pages_assembled_;
    Json lines = Json::array();
    for (const ContentBlock& b : page.blocks) {
      lines.push_back(std::to_string(page.page_idx) + "\t" + b.type + "\t" + b.content.value_or(""));
    }
    return lines;
  }

  Status WriteDocument(const std::vector<PageInput>& pages, std::vector<Json> parts,
                       const DocumentFiles& files) const override {
    ++documents_written_;
    parts_given_ = parts.size();
    std::string text;
    for (size_t i = 0; i < pages.size(); ++i) {
      const Json part = parts[i].is_null() ? AssemblePage(pages[i], files.media) : parts[i];
      for (const Json& line : part) text += line.get<std::string>() + "\n";
    }
    return WriteStringToFile(files.dir + "/" + files.name + ".blocks.txt", text);
  }

  mutable std::mutex mu_;
  mutable int pages_assembled_ = 0;
  mutable int documents_written_ = 0;
  mutable size_t parts_given_ = 0;
};

TEST(CustomVersion, AMadeUpWriterRunsADocumentThroughTheDriver) {
  auto backend = MakeReplayBackend(kSamples + "/sample_replay_v12.json");
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  auto writer = std::make_shared<LineWriter>();
  ParseOptions opt;
  opt.output_dir = ::testing::TempDir() + "/custom_version";
  opt.layout_pictures = false;
  opt.version = DefaultPipelineVersion();
  opt.version.writer = writer;  // the default extraction, a writer no version folder knows
  int global_page = 0;
  const DocumentReport rep = ParseDocument(kSamples + "/sample.pdf", opt, **backend, &global_page);
  ASSERT_TRUE(rep.ok()) << rep.status.ToString();

  const int pages = static_cast<int>(rep.pages.size());
  ASSERT_GT(pages, 0);
  EXPECT_EQ(writer->documents_written_, 1);
  EXPECT_EQ(writer->parts_given_, rep.pages.size());
  EXPECT_GE(writer->pages_assembled_, pages);  // once each; again only for pages an answer changed
  const std::string text = ReadAll(rep.output_dir + "/" + rep.name + ".blocks.txt");
  EXPECT_NE(text.find("0\t"), std::string::npos) << text;
  EXPECT_NE(text.find("\ttext\t"), std::string::npos) << text;
  // The driver wrote nothing of another version's files.
  struct stat st {};
  EXPECT_NE(::stat((rep.output_dir + "/" + rep.name + "_middle.json").c_str(), &st), 0);
  EXPECT_NE(::stat((rep.output_dir + "/" + rep.name + ".md").c_str(), &st), 0);
}

TEST(CustomVersion, TheOneSettingNamesBothAxesAndRefusesUnknownNames) {
  for (const char* name : {"1.2", "3.4", "3.4.4"}) {
    auto v = PipelineVersionNamed(name);
    ASSERT_TRUE(v.ok()) << name;
    EXPECT_EQ(v->name, "1.2");
    EXPECT_EQ(v->extract->name(), "1.2.1");
    EXPECT_EQ(v->writer->version(), "3.4.4");
  }
  for (const char* name : {"0.1", "2.5", "2.5.4"}) {
    auto v = PipelineVersionNamed(name);
    ASSERT_TRUE(v.ok()) << name;
    EXPECT_EQ(v->extract->name(), "0.1.17");
    EXPECT_EQ(v->writer->version(), "2.5.4");
  }
  for (const char* name : {"4", "4.x"}) {
    auto v = PipelineVersionNamed(name);
    ASSERT_TRUE(v.ok()) << name;
    EXPECT_EQ(v->extract->name(), "1.2.1");
    EXPECT_EQ(v->writer->version(), "4.x");
  }
  const auto bad = PipelineVersionNamed("4.0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("1.2"), std::string::npos) << bad.status().ToString();
  EXPECT_EQ(DefaultPipelineVersion().name, std::string(kDefaultPipelineVersion));
  EXPECT_EQ(ParseOptions().version.writer->version(), "4.x");  // MinerU 4's files by default
}

}  // namespace
}  // namespace mineru::pipeline
