// MinerU 4.1's synchronous POST /v1/file_parse, driven as `mineru-kit file-parse-server`'s clients
// drive it: one multipart upload, the result ZIP back (unzipped and its middle_json.json validated
// against DocVortex's schema by Python's zipfile and jsonschema), and each documented refusal in
// 4.x's error envelope (issue 37).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "../util/pdf_writer.h"
#include "../util/replay.h"
#include "server/file_parse_v4.h"
#include "server_harness.h"

namespace mineru::testing {
namespace {

using Json = nlohmann::json;

class FileParseV4Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(srv_.Start({"--model", kFx + "/tinyvocab", "--data-dir", dir_ + "/data", "--replay",
                            WriteReplay(dir_, 6), "--api-key", "k"},
                           dir_ + "/log"))
        << srv_.log();
    pdf_ = MakePdf({TextPage("One"), TextPage("Two"), TextPage("Three")});
  }
  httplib::Result Post(const httplib::MultipartFormDataItems& form, const std::string& query = "") {
    return srv_.Client().Post("/v1/file_parse" + query, {{"Authorization", "Bearer k"}}, form);
  }
  // The 4.x envelope of a refusal: its status, error.type, error.code and error.param.
  void ExpectRefusal(const httplib::MultipartFormDataItems& form, int status, const std::string& code,
                     const std::string& param, const std::string& query = "") {
    auto r = Post(form, query);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    const Json j = Json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
    EXPECT_EQ(j["error"]["code"], code) << r->body;
    EXPECT_TRUE(j["error"]["type"].is_string() && j["error"].contains("message")) << r->body;
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], param) << r->body;
    }
  }
  std::string dir_, pdf_;
  ServerProcess srv_;
};

TEST_F(FileParseV4Test, OneUploadGivesMinerU4sZip) {
  auto r = Post({{"file", pdf_, "report.pdf", "application/pdf"},
                 {"output_formats", "default", "", ""},
                 {"ocr_mode", "ocr", "", ""},
                 {"tier", "advanced", "", ""},
                 {"page_range", "2-r1", "", ""},
                 {"request_id", "req_42", "", ""}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 500);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/zip");
  EXPECT_EQ(r->get_header_value("Content-Disposition"), "attachment; filename=\"report.zip\"");
  EXPECT_EQ(r->get_header_value("X-Request-Id"), "req_42");
  const std::string zip = dir_ + "/result.zip";
  ASSERT_TRUE(WriteStringToFile(zip, r->body).ok());
  // Python reads the archive (every CRC), checks the files and validates middle_json.json.
  const std::string check =
      "python3 -c \"import zipfile,json,jsonschema,sys;z=zipfile.ZipFile(sys.argv[1]);assert z.testzip() is "
      "None;"
      "n=set(z.namelist());assert {'middle_json.json','markdown.md','content_list.json',"
      "'structured_content.json'} <= n, n;m=json.loads(z.read('middle_json.json'));"
      "jsonschema.Draft202012Validator(json.load(open(sys.argv[2]))).validate(m);"
      "assert [p['page_idx'] for p in m['pages']]==[0,1], m['pages'];"
      "assert m['extensions']['mineru']['tier']=='advanced';"
      "md=z.read('markdown.md').decode();assert '# Page Title 1' in md and '# Page Title 2' in md, md\" " +
      zip + " " + kFx + "/docvortex/middle-2.0.json";
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST_F(FileParseV4Test, EachRefusalIsInTheEnvelope) {
  const httplib::MultipartFormData pdf = {"file", pdf_, "report.pdf", "application/pdf"};
  ExpectRefusal({pdf, {"colour", "red", "", ""}}, 400, "unsupported_parameter", "colour");
  ExpectRefusal({pdf, {"tier", "advanced", "", ""}, {"tier", "advanced", "", ""}}, 400, "invalid_request",
                "tier");
  ExpectRefusal({pdf, {"tier", "standard", "", ""}}, 400, "unsupported_parameter", "tier");
  ExpectRefusal({pdf, {"output_formats", "docx", "", ""}}, 400, "unsupported_output_format",
                "output_formats");
  ExpectRefusal({pdf, {"ocr_mode", "maybe", "", ""}}, 400, "invalid_request", "ocr_mode");
  ExpectRefusal({pdf, {"wait_timeout", "3601", "", ""}}, 400, "invalid_request", "wait_timeout");
  ExpectRefusal({pdf, {"request_id", "no spaces", "", ""}}, 400, "invalid_request", "request_id");
  ExpectRefusal({pdf, pdf}, 400, "invalid_request", "file");
  ExpectRefusal({{"file", pdf_, "report", "application/pdf"}}, 400, "invalid_request", "file");
  ExpectRefusal({{"file", "", "empty.pdf", "application/pdf"}}, 400, "invalid_request", "file");
  ExpectRefusal({pdf}, 400, "invalid_request", "", "?tier=advanced");
  ExpectRefusal({pdf, {"page_range", "r9", "", ""}}, 400, "invalid_request", "file");
  // Without the key: 401 (the route is not a public one).
  auto r = srv_.Client().Post("/v1/file_parse", httplib::MultipartFormDataItems{pdf});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
}

TEST_F(FileParseV4Test, DiscoveryRoutesArePublicAndEveryAnswerHasARequestId) {
  auto c = srv_.Client();
  auto health = c.Get("/v1/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const Json h = Json::parse(health->body);
  EXPECT_EQ(h["status"], "ok");
  EXPECT_EQ(h["features"]["output_formats"], Json::array({"default"}));
  auto tiers = c.Get("/v1/tiers");
  ASSERT_TRUE(tiers);
  EXPECT_EQ(Json::parse(tiers->body)["data"][0]["id"], "advanced");
  const std::string id = health->get_header_value("X-Request-Id");
  EXPECT_EQ(id.rfind("req_", 0), 0u) << id;
  EXPECT_NE(tiers->get_header_value("X-Request-Id"), id);  // one per request
  // A client's own id comes back, on a refusal too (401 without the key).
  auto refused = c.Post("/v1/file_parse", {{"X-Request-Id", "abc-123"}}, "x", "text/plain");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(refused->get_header_value("X-Request-Id"), "abc-123");
  EXPECT_EQ(refused->get_header_value_count("X-Request-Id"), 1u);
}

// The upload counts against --max-store-mb while it is parsed: one larger than the whole store is
// refused (507 quota_exceeded), and the slot and the charge are given back (a small one then runs).
TEST(FileParseV4Quota, AnUploadOverTheStoreIsRefusedAndTheServerGoesOn) {
  const std::string dir = TempDir("file_parse_v4_quota");
  ServerProcess srv;
  ASSERT_TRUE(srv.Start({"--model", kFx + "/tinyvocab", "--data-dir", dir + "/data", "--replay",
                         WriteReplay(dir, 2), "--max-store-mb", "1", "--http-threads", "4"},
                        dir + "/log"))
      << srv.log();
  const std::string big = MakePdf({TextPage("One")}) + std::string(3 << 20, ' ');
  for (int i = 0; i < 3; ++i) {  // more than the one synchronous slot of 4 HTTP threads
    auto r =
        srv.Client().Post("/v1/file_parse", httplib::MultipartFormDataItems{{"file", big, "big.pdf", ""}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 507) << r->body;
    EXPECT_EQ(Json::parse(r->body)["error"]["code"], "quota_exceeded") << r->body;
  }
  auto ok = srv.Client().Post(
      "/v1/file_parse", httplib::MultipartFormDataItems{{"file", MakePdf({TextPage("One")}), "a.pdf", ""}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body.substr(0, 300);
  EXPECT_EQ(ok->get_header_value("Content-Type"), "application/zip");
}

TEST(PageRangeV4, FourXSyntax) {
  using mineru::server::PageRangeV4;
  EXPECT_EQ(*PageRangeV4("all", 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(*PageRangeV4("1-2,r1", 5), (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(*PageRangeV4("r3-r1", 5), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(*PageRangeV4("3, 1,3", 5), (std::vector<int>{2, 0}));
  for (const char* bad : {"", "0", "6", "r6", "2-1", "1,,2", "a", "1-", "r", "-1"}) {
    EXPECT_FALSE(PageRangeV4(bad, 5).ok()) << bad;
  }
  // A document claiming millions of pages: the work stays bounded by the page limit.
  std::string many = "all";
  for (int i = 0; i < 200; ++i) many += ",all";
  const auto big = PageRangeV4(many, 1 << 24, 1000);
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(PageRangeV4("1-600,601-1001", 5000, 1000).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(PageRangeV4("1-600,601-1000,1-1000", 5000, 1000)->size(), 1000u);
}

}  // namespace
}  // namespace mineru::testing
