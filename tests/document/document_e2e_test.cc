// End-to-end tests of `mineru-cpp parse`: replayed model outputs through the whole pipeline on PDFs
// the test writes, the fixture model on a real page, page ranges, per-page isolation, and hostile
// documents (corrupt, encrypted, empty, enormous pages, broken images) — each a clear error.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../util/files.h"
#include "../util/json_file.h"
#include "../util/pdf_writer.h"
#include "../util/run_cli.h"
#include "base/mapped_file.h"
#include "image/decode.h"

namespace {

using Json = nlohmann::json;
using mineru::testing::CmdResult;
using mineru::testing::EmptyTestDir;
using mineru::testing::kFx;
using mineru::testing::LoadJson;
using mineru::testing::MakePdf;
using mineru::testing::PdfPage;
using mineru::testing::Quote;
using mineru::testing::RunCli;

bool Exists(const std::string& p) { return mineru::FileExists(p); }

int CountFiles(const std::string& dir, const std::string& suffix) {
  std::string cmd = "ls " + Quote(dir) + " 2>/dev/null | grep -c " + Quote(suffix + "$");
  FILE* p = popen(cmd.c_str(), "r");
  int n = 0;
  if (fscanf(p, "%d", &n) != 1) n = 0;
  pclose(p);
  return n;
}

// A page with a title, `lines` numbered lines of body text and a grey rectangle (a figure) under them.
PdfPage TextPageWithFigure(const std::string& title, int lines) {
  PdfPage p;
  p.texts.push_back({72, 50, 20, title});
  for (int i = 0; i < lines; ++i) {
    p.texts.push_back({72, 110.0 + 14 * i, 10,
                       "The quick brown fox jumps over the lazy dog, line " + std::to_string(i + 1) + "."});
  }
  p.rects.push_back({72, 600, 200, 120, 0.6});
  return p;
}

// A realistic layout answer for a page: title, two columns, a table, a formula, a figure, a page
// number, then lines the parser must drop (out of range, degenerate, unknown type, garbage).
const char* kLayout =
    "<|box_start|>100 050 900 090<|box_end|><|ref_start|>title<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 100 480 400<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
    "<|box_start|>900 100 520 400<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 420 900 600<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 620 900 700<|box_end|><|ref_start|>equation<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 720 900 900<|box_end|><|ref_start|>image<|ref_end|><|rotate_up|>\n"
    "<|box_start|>450 950 550 980<|box_end|><|ref_start|>page_number<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 100 1200 200<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
    "<|box_start|>300 300 300 400<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 100 200 200<|box_end|><|ref_start|>sticker<|ref_end|><|rotate_up|>\n"
    "not a layout line";

Json ReplayPage(const std::string& title) {
  return {{"layout", kLayout},
          {"blocks",
           {title, "Left column with \\(x^2\\) inline math.", "Right column text.",
            "<fcel>A<fcel>B<nl><fcel>1<lcel><nl>", "\\[E = mc^2\\]", "7"}}};
}

TEST(DocumentE2E, ReplayTwoPagePdfWritesAllOutputs) {
  const std::string d = EmptyTestDir("doc_replay");
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/report.pdf", MakePdf({TextPageWithFigure("First", 10),
                                                                    TextPageWithFigure("Second", 5)}))
                  .ok());
  EXPECT_TRUE(mineru::WriteStringToFile(
                  d + "/replay.json", Json::array({ReplayPage("Title One"), ReplayPage("Title Two")}).dump())
                  .ok());
  CmdResult r = RunCli({"parse", d + "/report.pdf", "-o", d + "/out", "--vl-utils", "0.1", "--replay",
                        d + "/replay.json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string o = d + "/out/report/report";
  ASSERT_TRUE(Exists(o + ".md"));
  Json model = LoadJson(o + "_model.json");
  ASSERT_TRUE(model.is_array());
  ASSERT_EQ(model.size(), 2u);
  const Json& p0 = model[0];
  ASSERT_EQ(p0.size(), 7u) << p0.dump();  // the 4 bad lines dropped
  EXPECT_EQ(p0[0]["type"], "title");
  EXPECT_EQ(p0[0]["content"], "Title One");
  EXPECT_EQ(p0[2]["bbox"][0].get<double>(), 0.52);  // swapped x reordered
  EXPECT_EQ(p0[2]["bbox"][2].get<double>(), 0.9);
  EXPECT_EQ(p0[3]["type"], "table");
  EXPECT_EQ(p0[3]["content"],
            "<table><tr><td>A</td><td>B</td></tr><tr><td colspan=\"2\">1</td></tr></table>");
  EXPECT_EQ(p0[4]["type"], "equation");
  EXPECT_EQ(p0[4]["content"], "\\[E = mc^2\\]");  // already bracketed: unchanged
  EXPECT_EQ(p0[5]["type"], "image");
  EXPECT_TRUE(p0[5]["content"].is_null());
  EXPECT_EQ(p0[6]["type"], "page_number");
  EXPECT_EQ(model[1][0]["content"], "Title Two");

  Json middle = LoadJson(o + "_middle.json");
  EXPECT_EQ(middle["_backend"], "vlm");
  ASSERT_EQ(middle["pdf_info"].size(), 2u);
  EXPECT_EQ(middle["pdf_info"][0]["page_size"], Json::array({612, 792}));
  Json cl = LoadJson(o + "_content_list.json");
  ASSERT_TRUE(cl.is_array());
  EXPECT_FALSE(cl.empty());
  for (const Json& e : cl) {
    EXPECT_TRUE(e.contains("page_idx"));
    EXPECT_TRUE(e.contains("type"));
  }
  const std::string md = mineru::ReadFileToString(o + ".md").value();
  EXPECT_NE(md.find("# Title One"), std::string::npos) << md;
  EXPECT_NE(md.find("$x^2$"), std::string::npos) << md;
  EXPECT_NE(md.find("<table>"), std::string::npos) << md;
  EXPECT_NE(md.find("$$\nE = mc^2\n$$"), std::string::npos) << md;
  EXPECT_EQ(md.find("Title One\n\n7"), std::string::npos) << "page number must not reach the markdown";
  EXPECT_EQ(CountFiles(d + "/out/report/layout", ".png"), 2);
  EXPECT_GE(CountFiles(d + "/out/report/images", ".jpg"), 2);  // image and table crops per page
}

TEST(DocumentE2E, PageRangeAndPerPageIsolation) {
  const std::string d = EmptyTestDir("doc_isolation");
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/doc.pdf",
                                        MakePdf({TextPageWithFigure("A", 3), TextPageWithFigure("B", 3),
                                                 TextPageWithFigure("C", 3)}))
                  .ok());
  // Page 2's entry has too few block outputs: that page fails, the others complete.
  Json bad = ReplayPage("B");
  bad["blocks"] = Json::array({"only one"});
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/replay.json",
                                        Json::array({ReplayPage("A"), bad, ReplayPage("C")}).dump())
                  .ok());
  CmdResult r = RunCli({"parse", d + "/doc.pdf", "-o", d + "/out", "--vl-utils", "0.1", "--replay",
                        d + "/replay.json", "--json"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_FALSE(r.signaled);
  Json model = LoadJson(d + "/out/doc/doc_model.json");
  ASSERT_EQ(model.size(), 3u);
  EXPECT_EQ(model[0][0]["content"], "A");
  EXPECT_EQ(model[2][0]["content"], "C");
  EXPECT_NE(r.out.find("\"ok\":false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"event\":\"done\""), std::string::npos) << r.out;

  // --pages 3: only the third page, which consumes the first replay entry.
  const std::string d2 = EmptyTestDir("doc_range");
  EXPECT_TRUE(mineru::WriteStringToFile(d2 + "/doc.pdf",
                                        MakePdf({TextPageWithFigure("A", 3), TextPageWithFigure("B", 3),
                                                 TextPageWithFigure("C", 3)}))
                  .ok());
  EXPECT_TRUE(mineru::WriteStringToFile(d2 + "/replay.json", Json::array({ReplayPage("only")}).dump()).ok());
  CmdResult r2 = RunCli({"parse", d2 + "/doc.pdf", "-o", d2 + "/out", "--vl-utils", "0.1", "--replay",
                         d2 + "/replay.json", "--pages", "3", "--quiet"});
  ASSERT_EQ(r2.code, 0) << r2.err;
  Json m2 = LoadJson(d2 + "/out/doc/doc_model.json");
  ASSERT_EQ(m2.size(), 1u);
  EXPECT_EQ(CountFiles(d2 + "/out/doc/layout", ".png"), 1);
  EXPECT_TRUE(Exists(d2 + "/out/doc/layout/page_0003.png"));
  CmdResult bad_range = RunCli({"parse", d2 + "/doc.pdf", "-o", d2 + "/out", "--vl-utils", "0.1", "--replay",
                                d2 + "/replay.json", "--pages", "9-12", "--quiet"});
  EXPECT_NE(bad_range.code, 0);
}

// A page poppler would render for seconds fails at --page-render-timeout-s with a clear error; the
// pages around it complete and the process exits normally (exit code 1: a page failed).
TEST(DocumentE2E, PageRenderPastItsDeadlineFailsThatPageOnly) {
  const std::string d = EmptyTestDir("doc_render_deadline");
  PdfPage slow = TextPageWithFigure("B", 1);
  slow.slow_strokes = 1500;  // ~10 s against a deadline of 2 s; the text pages take tens of ms
  EXPECT_TRUE(mineru::WriteStringToFile(
                  d + "/doc.pdf", MakePdf({TextPageWithFigure("A", 3), slow, TextPageWithFigure("C", 3)}))
                  .ok());
  EXPECT_TRUE(mineru::WriteStringToFile(
                  d + "/replay.json", Json::array({ReplayPage("A"), ReplayPage("B"), ReplayPage("C")}).dump())
                  .ok());
  CmdResult r = RunCli({"parse", d + "/doc.pdf", "-o", d + "/out", "--vl-utils", "0.1", "--replay",
                        d + "/replay.json", "--page-render-timeout-s", "2", "--json"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_FALSE(r.signaled);
  EXPECT_NE(r.out.find("took longer than 2 s"), std::string::npos) << r.out;
  Json model = LoadJson(d + "/out/doc/doc_model.json");
  ASSERT_EQ(model.size(), 3u);
  EXPECT_EQ(model[0][0]["content"], "A");
  EXPECT_TRUE(model[1].empty());
  EXPECT_EQ(model[2][0]["content"], "C");
}

TEST(DocumentE2E, FixtureModelParsesGeneratedPdf) {
  const std::string d = EmptyTestDir("doc_model");
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/page.pdf", MakePdf({TextPageWithFigure("Model run", 6)})).ok());
  // No --vl-utils: the default, MinerU 4's files.
  CmdResult r = RunCli({"parse", d + "/page.pdf", "-o", d + "/out", "--model", kFx + "/tinyvocab",
                        "--max-block-tokens", "24", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string o = d + "/out/page/";
  for (const char* file :
       {"markdown.md", "middle_json.json", "content_list.json", "structured_content.json"}) {
    EXPECT_TRUE(Exists(o + file)) << file;
  }
  EXPECT_FALSE(Exists(o + "page_model.json"));
  EXPECT_TRUE(LoadJson(o + "middle_json.json")["pages"].is_array());
  EXPECT_TRUE(LoadJson(o + "content_list.json").is_array());
  EXPECT_EQ(CountFiles(d + "/out/page/layout", ".png"), 1);
}

TEST(DocumentE2E, ImageInputAndDirectory) {
  const std::string d = EmptyTestDir("doc_images");
  ::mkdir((d + "/in").c_str(), 0755);
  EXPECT_TRUE(
      mineru::WriteStringToFile(d + "/in/scan.png", mineru::ReadFileToString(kFx + "/image2.png").value())
          .ok());
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/in/notes.txt", "ignored").ok());
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/replay.json", Json::array({ReplayPage("Scan")}).dump()).ok());
  CmdResult r = RunCli(
      {"parse", d + "/in", "-o", d + "/out", "--vl-utils", "0.1", "--replay", d + "/replay.json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  Json middle = LoadJson(d + "/out/scan/scan_middle.json");
  EXPECT_EQ(middle["pdf_info"][0]["page_size"], Json::array({200, 200}));  // 1 px = 1 pt
  EXPECT_EQ(LoadJson(d + "/out/scan/scan_model.json")[0][0]["content"], "Scan");
}

TEST(DocumentE2E, HostileDocumentsGiveClearErrors) {
  const std::string d = EmptyTestDir("doc_hostile");
  EXPECT_TRUE(
      mineru::WriteStringToFile(d + "/replay.json", Json::array({ReplayPage("x"), ReplayPage("y")}).dump())
          .ok());
  struct Case {
    std::string name, bytes;
  };
  std::string pdf = MakePdf({TextPageWithFigure("ok", 2)});
  std::string corrupt = pdf.substr(0, 60) + std::string(200, '#');
  // Encrypted: a Standard security handler whose empty user password does not authenticate.
  std::string enc = pdf;
  const size_t tr = enc.find("trailer\n<<");
  enc.insert(tr + 10, " /Encrypt << /Filter /Standard /V 1 /R 2 /O <" + std::string(64, 'a') + "> /U <" +
                          std::string(64, 'b') +
                          "> /P -4 >> /ID [<0123456789abcdef0123456789abcdef> "
                          "<0123456789abcdef0123456789abcdef>]");
  PdfPage huge;
  huge.width = 14400;
  huge.height = 14400;
  huge.texts.push_back({100, 100, 200, "Huge"});
  std::vector<Case> cases = {{"empty.pdf", ""},
                             {"corrupt.pdf", corrupt},
                             {"encrypted.pdf", enc},
                             {"broken.png", "\x89PNG\r\n\x1a\n garbage garbage"},
                             {"zero_pages.pdf",
                              "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
                              "2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
                              "trailer << /Root 1 0 R >>\n%%EOF\n"}};
  for (const Case& c : cases) {
    EXPECT_TRUE(mineru::WriteStringToFile(d + "/" + c.name, c.bytes).ok());
    CmdResult r = RunCli({"parse", d + "/" + c.name, "-o", d + "/out", "--vl-utils", "0.1", "--replay",
                          d + "/replay.json", "--quiet"});
    EXPECT_FALSE(r.signaled) << c.name;
    EXPECT_EQ(r.code, 1) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.name), std::string::npos) << c.name << ": " << r.err;
  }
  // An enormous page renders capped at 3500 px and completes.
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/huge.pdf", MakePdf({huge})).ok());
  CmdResult r = RunCli({"parse", d + "/huge.pdf", "-o", d + "/out", "--vl-utils", "0.1", "--replay",
                        d + "/replay.json", "--quiet"});
  EXPECT_EQ(r.code, 0) << r.err;
  // One bad file among good ones: the good one is still parsed, the exit code reports the failure.
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/good.pdf", pdf).ok());
  CmdResult mixed = RunCli({"parse", d + "/corrupt.pdf", d + "/good.pdf", "-o", d + "/out2", "--vl-utils",
                            "0.1", "--replay", d + "/replay.json", "--quiet"});
  EXPECT_EQ(mixed.code, 1);
  EXPECT_TRUE(Exists(d + "/out2/good/good_model.json"));
  CmdResult missing = RunCli(
      {"parse", d + "/nope.pdf", "-o", d + "/out", "--vl-utils", "0.1", "--replay", d + "/replay.json"});
  EXPECT_EQ(missing.code, 1);
  CmdResult bad_replay = RunCli({"parse", d + "/good.pdf", "-o", d + "/out", "--vl-utils", "0.1", "--replay",
                                 d + "/hostile_missing.json"});
  EXPECT_EQ(bad_replay.code, 1);
  EXPECT_FALSE(bad_replay.signaled);
}

TEST(DocumentE2E, TextSourcePdfTakesTextLayer) {
  const std::string d = EmptyTestDir("doc_textsource");
  EXPECT_TRUE(
      mineru::WriteStringToFile(d + "/doc.pdf", MakePdf({TextPageWithFigure("Hybrid Title", 10)})).ok());
  const std::string layout =
      "<|box_start|>100 055 600 100<|box_end|><|ref_start|>title<|ref_end|><|rotate_up|>\n"
      "<|box_start|>100 130 900 330<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
      "<|box_start|>100 740 600 920<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>";
  // Only the table goes to the model: one block output.
  EXPECT_TRUE(mineru::WriteStringToFile(
                  d + "/replay.json", Json::array({{{"layout", layout}, {"blocks", {"<fcel>x<nl>"}}}}).dump())
                  .ok());
  for (const char* source : {"pdf", "auto"}) {
    CmdResult r = RunCli({"parse", d + "/doc.pdf", "-o", d + "/out_" + source, "--vl-utils", "0.1",
                          "--replay", d + "/replay.json", "--text-source", source, "--quiet"});
    ASSERT_EQ(r.code, 0) << source << ": " << r.err;
    Json m = LoadJson(d + "/out_" + std::string(source) + "/doc/doc_model.json");
    ASSERT_EQ(m[0].size(), 3u);
    EXPECT_EQ(m[0][0]["content"], "Hybrid Title") << source;
    const std::string body = m[0][1]["content"];
    EXPECT_EQ(body.rfind("The quick brown fox jumps over the lazy dog, line 1. The quick", 0), 0u) << body;
    EXPECT_NE(body.find("line 10."), std::string::npos) << body;
    EXPECT_EQ(m[0][2]["content"], "<table><tr><td>x</td></tr></table>");
  }
  // model: all three blocks go to the model, and this replay has only one output -> page fails.
  CmdResult r = RunCli({"parse", d + "/doc.pdf", "-o", d + "/out_model", "--vl-utils", "0.1", "--replay",
                        d + "/replay.json", "--quiet"});
  EXPECT_EQ(r.code, 1);
}

}  // namespace

namespace {

// Non-empty reference pages of tests/fixtures/vl_utils_121.json (recorded from mineru-vl-utils 1.2.1).
std::vector<Json> V12GoldenPages(size_t max_pages) {
  Json g = LoadJson(kFx + "/vl_utils_121.json");
  std::vector<Json> pages;
  for (const auto& p : g["pages"]) {
    if (!p["model"].empty()) pages.push_back(p);
    if (pages.size() == max_pages) break;
  }
  return pages;
}

}  // namespace

// `parse --replay` with the default extraction (1.2) on blank pages of the recorded sizes writes
// NAME_model.json block by block as 1.2.1 produces it (type, bbox, angle, content, merge_prev,
// sub_type), with the replay's "blocks" consumed in the order the pipeline issues its requests.
TEST(DocumentE2E, ReplayV12ModelJsonMatchesReference) {
  const std::string d = EmptyTestDir("doc_v12");
  ::mkdir((d + "/in").c_str(), 0755);
  const std::vector<Json> pages = V12GoldenPages(20);
  ASSERT_EQ(pages.size(), 20u);
  Json replay = Json::array();
  for (size_t i = 0; i < pages.size(); ++i) {
    mineru::RgbImage blank;
    blank.width = pages[i]["image_size"][0];  // rendered at 200 DPI into the recorded page_size
    blank.height = pages[i]["image_size"][1];
    blank.pixels.assign(static_cast<size_t>(blank.width) * blank.height * 3, 255);
    char name[32];
    std::snprintf(name, sizeof(name), "/p%03zu.png", i);
    ASSERT_TRUE(mineru::WritePngFile(blank, d + "/in" + name).ok());
    replay.push_back(
        {{"layout", pages[i]["layout"]}, {"blocks", pages[i]["outputs"]}, {"merges", Json::array()}});
  }
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/replay.json", replay.dump()).ok());
  CmdResult r = RunCli({"parse", "--vl-utils", "1.2", d + "/in", "-o", d + "/out", "--replay",
                        d + "/replay.json", "--quiet", "--no-layout-pictures"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (size_t i = 0; i < pages.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "p%03zu", i);
    const std::string stem = d + "/out/" + name + "/" + name;
    EXPECT_EQ(LoadJson(stem + "_model.json")[0], pages[i]["model"])
        << "page " << i << ": " << pages[i]["layout"];
  }
}

namespace {

// A blank 100x100 PNG in DIR/in/NAME.png (rendered at 200 DPI: 278x278 pixels).
void WriteBlankPng(const std::string& dir, const std::string& name) {
  mineru::RgbImage blank;
  blank.width = blank.height = 100;
  blank.pixels.assign(static_cast<size_t>(blank.width) * blank.height * 3, 255);
  ::mkdir((dir + "/in").c_str(), 0755);
  ASSERT_TRUE(mineru::WritePngFile(blank, dir + "/in/" + name + ".png").ok());
}

std::string V12Line(const std::string& box, const std::string& type) {
  return "<|box_start|>" + box + "<|box_end|><|ref_start|>" + type + "<|ref_end|><|rotate_up|>\n";
}

}  // namespace

// 1.2.1's prepare_for_extract (mineru_client.py, "Cropped block image has invalid size"): a block
// whose Pillow crop is under a pixel wide is not sent and keeps content None. The replay lists one
// answer per sent block, so the answers of the blocks around it stay theirs and no page fails;
// MinerU 3.4.4 reads the None text as "" (vlm_magic_model.py), an empty text in content_list.json.
TEST(DocumentE2E, ReplayV12DegenerateCropIsNotSent) {
  const std::string d = EmptyTestDir("doc_v12_degenerate");
  WriteBlankPng(d, "p");
  // x 0.500..0.501 on 278 pixels: round(139.0) == round(139.278), a crop 0 pixels wide.
  const std::string layout = V12Line("100 100 900 200", "text") + V12Line("500 300 501 400", "text") +
                             V12Line("100 500 900 600", "text");
  const Json replay = Json::array({{{"layout", layout}, {"blocks", {"first", "third"}}}});
  ASSERT_TRUE(mineru::WriteStringToFile(d + "/replay.json", replay.dump()).ok());
  CmdResult r = RunCli({"parse", "--vl-utils", "1.2", d + "/in", "-o", d + "/out", "--replay",
                        d + "/replay.json", "--quiet", "--no-layout-pictures"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json model = LoadJson(d + "/out/p/p_model.json")[0];
  ASSERT_EQ(model.size(), 3u) << model.dump();
  EXPECT_EQ(model[0]["content"], "first");
  EXPECT_TRUE(model[1]["content"].is_null()) << model[1].dump();
  EXPECT_EQ(model[2]["content"], "third");
  const Json list = LoadJson(d + "/out/p/p_content_list.json");
  ASSERT_EQ(list.size(), 3u) << list.dump();
  EXPECT_EQ(list[1]["text"], "");
  EXPECT_EQ(list[2]["text"], "third");
}

// 1.2.1's _cleanup_non_text_placeholder_blocks (post_process/__init__.py): an answer that is only
// "[Non-Text]" (stripped) drops a text block, leaves a header's box with "" and an equation with
// its placeholder (bracketed like any equation).
TEST(DocumentE2E, ReplayV12NonTextAnswer) {
  const std::string d = EmptyTestDir("doc_v12_non_text");
  WriteBlankPng(d, "p");
  const std::string layout = V12Line("100 020 900 060", "header") + V12Line("100 100 900 200", "text") +
                             V12Line("100 300 900 400", "text") + V12Line("100 500 900 600", "equation");
  const Json replay = Json::array(
      {{{"layout", layout}, {"blocks", {" [Non-Text] ", "first", "  [Non-Text]\n", "[Non-Text]"}}}});
  ASSERT_TRUE(mineru::WriteStringToFile(d + "/replay.json", replay.dump()).ok());
  CmdResult r = RunCli({"parse", "--vl-utils", "1.2", d + "/in", "-o", d + "/out", "--replay",
                        d + "/replay.json", "--quiet", "--no-layout-pictures"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json model = LoadJson(d + "/out/p/p_model.json")[0];
  ASSERT_EQ(model.size(), 3u) << model.dump();
  EXPECT_EQ(model[0]["type"], "header");
  EXPECT_EQ(model[0]["content"], "");
  EXPECT_EQ(model[1]["content"], "first");
  EXPECT_EQ(model[2]["type"], "equation");
  EXPECT_EQ(model[2]["content"], "\\[\n[Non-Text]\n\\]");
}

// 1.2: a table ending one page and a table starting the next are asked about once every page is
// done; the replay's "merges" of the second table's page answer, and a well-formed answer becomes
// cell_merge on that table in NAME_model.json (a malformed one leaves the table as it was).
TEST(DocumentE2E, ReplayV12CrossPageTableGetsCellMerge) {
  const std::string d = EmptyTestDir("doc_v12_cross_page");
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/doc.pdf",
                                        MakePdf({TextPageWithFigure("A", 1), TextPageWithFigure("B", 1),
                                                 TextPageWithFigure("C", 1)}))
                  .ok());
  const std::string table = "<|ref_start|>table<|ref_end|><|rotate_up|>";
  // Different rows on each page: identical leading rows would be taken for a repeated header.
  const std::string cells = "<fcel>a<fcel>b<nl><fcel>c<fcel>d<nl>";
  const std::string cells2 = "<fcel>e<fcel>f<nl><fcel>g<fcel>h<nl>";
  const std::string cells3 = "<fcel>i<fcel>j<nl>";
  const Json replay =
      Json::array({{{"layout",
                     "<|box_start|>100 050 900 100<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>"
                     "<|box_start|>100 600 900 950<|box_end|>" +
                         table},
                    {"blocks", {"Intro.", cells}}},
                   {{"layout", "<|box_start|>100 050 900 300<|box_end|>" + table +
                                   "<|box_start|>100 600 900 950<|box_end|>" + table},
                    {"blocks", {cells2, cells}},
                    {"merges", {"The first cell continues: [1, 0]"}}},
                   {{"layout", "<|box_start|>100 050 900 300<|box_end|>" + table},
                    {"blocks", {cells3}},
                    {"merges", {"[1, 0, 1]"}}}});
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/replay.json", replay.dump()).ok());
  CmdResult r = RunCli({"parse", "--vl-utils", "1.2", d + "/doc.pdf", "-o", d + "/out", "--replay",
                        d + "/replay.json", "--quiet", "--no-layout-pictures"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json model = LoadJson(d + "/out/doc/doc_model.json");
  ASSERT_EQ(model.size(), 3u);
  EXPECT_FALSE(model[0][1].contains("cell_merge"));
  ASSERT_TRUE(model[1][0].contains("cell_merge")) << model[1][0];
  EXPECT_EQ(model[1][0]["cell_merge"], Json::array({1, 0}));
  EXPECT_FALSE(model[1][1].contains("cell_merge"));
  EXPECT_FALSE(model[2][0].contains("cell_merge")) << "a malformed answer (3 flags for 2 cells) is ignored";
}

// The README's two-page sample of the 1.2 extraction (samples/report.pdf with its replay): a chart, a
// flowchart image analysed as Mermaid, a table crossing the page break (cell_merge, then merged in
// the files), a paragraph continued in the next column, a list.
TEST(DocumentE2E, SampleReportShowsTheNewContent) {
  const std::string d = EmptyTestDir("doc_sample_report");
  const std::string src = MINERU_SOURCE_DIR;
  CmdResult r = RunCli({"parse", "--vl-utils", "1.2", src + "/samples/report.pdf", "-o", d + "/out",
                        "--replay", src + "/samples/report_replay.json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string stem = d + "/out/report/report";
  const Json model = LoadJson(stem + "_model.json");
  ASSERT_EQ(model.size(), 2u);
  EXPECT_EQ(model[0][2]["type"], "chart");
  EXPECT_EQ(model[0][4]["sub_type"], "flowchart");
  EXPECT_EQ(model[1][0]["cell_merge"], Json::array({1, 0, 0}));
  EXPECT_EQ(model[1][2]["merge_prev"], true);
  auto md = mineru::ReadFileToString(stem + ".md");
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find("```mermaid\nflowchart LR"), std::string::npos) << *md;
  EXPECT_NE(md->find("<td>CPU q8, multi-threaded</td>"), std::string::npos)
      << *md;  // merged across the page break
  EXPECT_EQ(md->find("<td>threaded</td>"), std::string::npos) << *md;
  EXPECT_NE(md->find("so the cost of a page"), std::string::npos) << *md;  // the continued paragraph
  EXPECT_TRUE(Exists(stem + "_content_list_v2.json"));
  EXPECT_EQ(LoadJson(stem + "_middle.json")["_version_name"], "3.4.4");
}

// 1.2: an image inside a table is not requested; the table crop carries its token ("[AAAA]" for the
// first image of the layout's first block, table_images.h) and the table model's copy of it comes
// back as an <img> with the image's JPEG; the image block itself is dropped, as 1.2.1 drops it.
TEST(DocumentE2E, ReplayV12TableImageComesBackAsImg) {
  const std::string d = EmptyTestDir("doc_v12_table_image");
  ::mkdir((d + "/in").c_str(), 0755);
  mineru::RgbImage page;
  page.width = 400;
  page.height = 300;
  page.pixels.assign(static_cast<size_t>(page.width) * page.height * 3, 255);
  ASSERT_TRUE(mineru::WritePngFile(page, d + "/in/page.png").ok());
  const Json replay =
      Json::array({{{"layout",
                     "<|box_start|>100 100 900 900<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>"
                     "<|box_start|>300 300 700 700<|box_end|><|ref_start|>image<|ref_end|><|rotate_up|>"},
                    {"blocks", {"<fcel>[ AAAA ]<fcel>\\(x\\)<nl>"}}}});
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/replay.json", replay.dump()).ok());
  CmdResult r = RunCli(
      {"parse", "--vl-utils", "1.2", d + "/in", "-o", d + "/out", "--replay", d + "/replay.json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json model = LoadJson(d + "/out/page/page_model.json")[0];
  ASSERT_EQ(model.size(), 1u);
  EXPECT_EQ(model[0]["type"], "table");
  const std::string html = model[0]["content"];
  EXPECT_EQ(html.rfind("<table><tr><td><img src=\"data:image/jpeg;base64,/9j/", 0), 0u) << html;
  EXPECT_NE(html.find("<td><eq>x</eq></td>"), std::string::npos) << html;
}

// 1.2 writes MinerU 3.4.4's files: middle.json with preproc/para blocks and _version_name 3.4.4,
// NAME_content_list_v2.json, and the table's inline data-URI image decoded into images/ (its html
// then points at the file, in middle.json by name and in md / content lists under images/).
TEST(DocumentE2E, ReplayV12WritesMinerU344Files) {
  const std::string d = EmptyTestDir("doc_v12_344");
  ::mkdir((d + "/in").c_str(), 0755);
  mineru::RgbImage page;
  page.width = 400;
  page.height = 300;
  page.pixels.assign(static_cast<size_t>(page.width) * page.height * 3, 255);
  ASSERT_TRUE(mineru::WritePngFile(page, d + "/in/page.png").ok());
  const Json replay =
      Json::array({{{"layout",
                     "<|box_start|>100 100 900 900<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>"
                     "<|box_start|>300 300 700 700<|box_end|><|ref_start|>image<|ref_end|><|rotate_up|>"},
                    {"blocks", {"<fcel>[ AAAA ]<fcel>\\(x\\)<nl>"}}}});
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/replay.json", replay.dump()).ok());
  CmdResult r = RunCli(
      {"parse", "--vl-utils", "1.2", d + "/in", "-o", d + "/out", "--replay", d + "/replay.json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string o = d + "/out/page/page";
  const Json middle = LoadJson(o + "_middle.json");
  EXPECT_EQ(middle["_version_name"], "3.4.4");
  const Json& p0 = middle["pdf_info"][0];
  ASSERT_TRUE(p0.contains("preproc_blocks") && p0.contains("para_blocks"));
  ASSERT_EQ(p0["para_blocks"].size(), 1u);
  const Json& group = p0["para_blocks"][0];
  EXPECT_EQ(group["type"], "table");
  const std::string html = group["blocks"][0]["lines"][0]["spans"][0]["html"];
  const size_t at = html.find("src=\"");
  ASSERT_NE(at, std::string::npos) << html;
  const std::string file = html.substr(at + 5, html.find('"', at + 5) - at - 5);
  EXPECT_EQ(file.size(), 64u + 4u) << file;  // sha256 hex + ".jpg"
  EXPECT_TRUE(std::ifstream(d + "/out/page/images/" + file).good()) << file;
  const Json v2 = LoadJson(o + "_content_list_v2.json");
  ASSERT_EQ(v2.size(), 1u);
  ASSERT_EQ(v2[0].size(), 1u);
  EXPECT_EQ(v2[0][0]["type"], "table");
  EXPECT_EQ(v2[0][0]["content"]["table_type"], "simple_table");
  const Json cl = LoadJson(o + "_content_list.json");
  ASSERT_EQ(cl.size(), 1u);
  EXPECT_NE(cl[0]["table_body"].get<std::string>().find("src=\"images/" + file + "\""), std::string::npos);
  EXPECT_NE(cl[0]["table_body"].get<std::string>().find("<td> $x$ </td>"), std::string::npos);
  std::ifstream md(o + ".md");
  std::stringstream ss;
  ss << md.rdbuf();
  EXPECT_EQ(ss.str(), cl[0]["table_body"].get<std::string>());
}
