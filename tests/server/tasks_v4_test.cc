// MinerU 4.1's Tasks API on `serve`, driven as a 4.x client drives it (issue 37): create a task,
// PUT each file to the returned upload link with the returned headers, poll the task, download
// each result_url and unzip it (middle_json.json validated against DocVortex's schema by Python's
// jsonschema); idempotent retries, sha256 hits, url sources behind their flags, cancel, restart,
// and each refusal in 4.x's error envelope. Plus the status rules and the stored task as units.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "../util/eventually.h"
#include "../util/pdf_writer.h"
#include "../util/replay.h"
#include "base/hash.h"
#include "server/file_parse_v4.h"
#include "server/listen.h"
#include "server/tasks_v4_registry.h"
#include "server_harness.h"

namespace mineru::testing {
namespace {

using Json = nlohmann::json;
using server::FileStatusV4;
using server::TaskFileV4;
using server::TaskStatusV4;
using server::TaskV4;

// The path of an absolute URL this test's server returned ("http://host:port/path").
std::string PathOf(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
  return slash == std::string::npos ? "" : url.substr(slash);
}

class TasksV4Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    pdf_ = MakePdf({TextPage("One"), TextPage("Two"), TextPage("Three")});
  }
  void StartServer(std::vector<std::string> extra = {}, bool api_key = true) {
    std::vector<std::string> args = {"--model",      kFx + "/tinyvocab", "--data-dir",
                                     dir_ + "/data", "--replay",         WriteReplay(dir_, 6)};
    if (api_key) args.insert(args.end(), {"--api-key", "k"});
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(srv_.Start(args, dir_ + "/log")) << srv_.log();
  }
  httplib::Result Create(const Json& body, httplib::Headers h = {}) {
    h.emplace("Authorization", "Bearer k");
    return srv_.Client().Post("/v1/tasks", h, body.dump(), "application/json");
  }
  Json Get(const std::string& task_id) {
    auto r = srv_.Client().Get("/v1/tasks/" + task_id, {{"Authorization", "Bearer k"}});
    return r && r->status == 200 ? Json::parse(r->body) : Json();
  }
  // PUT to an upload link as a client does: only the link's own headers (no API key).
  httplib::Result Upload(const Json& link, const std::string& bytes) {
    httplib::Headers h;
    for (const auto& [k, v] : link["headers"].items()) {
      if (k != "Content-Type") h.emplace(k, v.get<std::string>());
    }
    return srv_.Client().Put(PathOf(link["url"]), h, bytes,
                             link["headers"].value("Content-Type", "").c_str());
  }
  std::string WaitForStatus(const std::string& task_id, const std::vector<std::string>& wanted) {
    std::string status;
    Eventually([&] {
      status = Get(task_id).value("status", "");
      return std::find(wanted.begin(), wanted.end(), status) != wanted.end();
    });
    return status;
  }
  void ExpectError(const httplib::Result& r, int status, const std::string& code,
                   const std::string& param = "") {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    const Json j = Json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
    EXPECT_EQ(j["error"]["code"], code) << r->body;
    EXPECT_TRUE(j["error"]["type"].is_string() && j["error"]["message"].is_string()) << r->body;
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], param) << r->body;
    }
  }
  // Downloads a result_url and checks the archive with Python: the four files, a schema-valid
  // middle_json.json with the expected pages.
  void ExpectResultZip(const std::string& result_url, const std::string& pages) {
    auto r = srv_.Client().Get(PathOf(result_url), {{"Authorization", "Bearer k"}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/zip");
    const std::string zip = dir_ + "/result-" + std::to_string(++zips_) + ".zip";
    ASSERT_TRUE(WriteStringToFile(zip, r->body).ok());
    const std::string check =
        "python3 -c \"import zipfile,json,jsonschema,sys;z=zipfile.ZipFile(sys.argv[1]);assert z.testzip() "
        "is "
        "None;n=set(z.namelist());assert {'middle_json.json','markdown.md','content_list.json',"
        "'structured_content.json'} <= n, n;assert not any(x.startswith('pages/') for x in n), n;"
        "m=json.loads(z.read('middle_json.json'));"
        "jsonschema.Draft202012Validator(json.load(open(sys.argv[2]))).validate(m);"
        "got=','.join(str(p['page_idx']) for p in m['pages']);assert got==sys.argv[3], got;"
        "assert m['extensions']['mineru']['tier']=='advanced'\" " +
        zip + " " + kFx + "/docvortex/middle-2.0.json " + pages;
    EXPECT_EQ(std::system(check.c_str()), 0);
  }
  std::string dir_, pdf_;
  int zips_ = 0;
  ServerProcess srv_;
};

TEST_F(TasksV4Test, CreateUploadPollDownload) {
  StartServer();
  const std::string png = *ReadFileToString(kFx + "/image0.png");
  auto r = Create({{"files",
                    {{{"file_name", "report.pdf"},
                      {"bytes", pdf_.size()},
                      {"sha256sum", Sha256Hex(pdf_)},
                      {"page_range", "2-r1"}},
                     {{"file_name", "scan.png"}, {"bytes", png.size()}}}},
                   {"ocr_mode", "auto"},
                   {"output_formats", {"default"}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const Json created = Json::parse(r->body);
  const std::string id = created["task_id"];
  EXPECT_EQ(id.rfind("task_", 0), 0u);
  EXPECT_EQ(created["status"], "waiting-file");
  ASSERT_EQ(created["files"].size(), 2u);
  EXPECT_EQ(created["files"][0]["file_name"], "report.pdf");
  EXPECT_EQ(created["files"][0]["status"], "waiting-file");
  EXPECT_EQ(created["files"][0]["upload"]["method"], "PUT");
  // The upload link is a capability: no API key needed (a client sends only the link's headers).
  auto up = Upload(created["files"][0]["upload"], pdf_);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 200) << up->body;
  EXPECT_EQ(Json::parse(up->body)["sha256sum"], Sha256Hex(pdf_));
  EXPECT_NE(Get(id)["status"], "completed") << "one file still waits for its bytes";
  up = Upload(created["files"][1]["upload"], png);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 200) << up->body;
  ASSERT_EQ(WaitForStatus(id, {"completed", "failed", "partial"}), "completed") << Get(id).dump();
  const Json done = Get(id);
  EXPECT_EQ(done["progress"]["files_completed"], 2);
  for (const Json& f : done["files"]) {
    EXPECT_EQ(f["status"], "completed");
    EXPECT_EQ(f["parse"]["tier"], "advanced");
    EXPECT_FALSE(f.contains("upload"));
  }
  ExpectResultZip(done["files"][0]["result_url"], "0,1");  // pages 2-3 of three
  ExpectResultZip(done["files"][1]["result_url"], "0");
  // The result needs the API key (only the upload link is a capability).
  auto anon = srv_.Client().Get(PathOf(done["files"][0]["result_url"]));
  ASSERT_TRUE(anon);
  EXPECT_EQ(anon->status, 401);
}

TEST_F(TasksV4Test, RetriesAreIdempotentAndKnownBytesNeedNoUpload) {
  StartServer();
  const Json body = {
      {"files", {{{"file_name", "a.pdf"}, {"bytes", pdf_.size()}, {"sha256sum", Sha256Hex(pdf_)}}}}};
  auto first = Create(body, {{"Idempotency-Key", "k-1"}});
  auto again = Create(body, {{"Idempotency-Key", "k-1"}});
  ASSERT_TRUE(first && again);
  ASSERT_EQ(again->status, 202);
  const Json a = Json::parse(first->body), b = Json::parse(again->body);
  EXPECT_EQ(a["task_id"], b["task_id"]);
  EXPECT_EQ(again->get_header_value("Idempotent-Replayed"), "true");
  auto up = Upload(a["files"][0]["upload"], pdf_);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 200) << up->body;
  // The same PUT again (a retry): the same answer; other bytes: 409.
  auto retry = Upload(a["files"][0]["upload"], pdf_);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->status, 200) << retry->body;
  ExpectError(Upload(a["files"][0]["upload"], pdf_ + " "), 409, "upload_already_terminal");
  ASSERT_EQ(WaitForStatus(a["task_id"], {"completed", "failed"}), "completed");
  // A new task declaring bytes the server holds: queued at once, no upload link.
  auto known =
      Create({{"files", {{{"file_name", "b.pdf"}, {"bytes", pdf_.size()}, {"sha256sum", Sha256Hex(pdf_)}}}}});
  ASSERT_TRUE(known);
  ASSERT_EQ(known->status, 202) << known->body;
  const Json k = Json::parse(known->body);
  EXPECT_NE(k["task_id"], a["task_id"]);
  EXPECT_TRUE(k["files"][0]["upload"].is_null()) << k.dump();
  EXPECT_NE(k["files"][0]["status"], "waiting-file");
  EXPECT_EQ(WaitForStatus(k["task_id"], {"completed", "failed"}), "completed");
}

TEST_F(TasksV4Test, EachRefusalIsInTheEnvelope) {
  StartServer();
  const Json file = {{"file_name", "a.pdf"}, {"bytes", pdf_.size()}};
  ExpectError(Create({{"files", {file}}, {"webhook", "x"}}), 400, "invalid_request", "webhook");
  ExpectError(Create({{"files", {{{"file_name", "a.pdf"}, {"bytes", 3}, {"mime", "x"}}}}}), 400,
              "invalid_request", "files.0.mime");
  ExpectError(Create({{"files", {{{"file_name", "a.pdf"}}}}}), 400, "invalid_request", "files.0.bytes");
  ExpectError(Create({{"files", {{{"file_name", "a.pdf"}, {"bytes", 0}}}}}), 400, "invalid_request",
              "files.0.bytes");
  ExpectError(
      Create({{"files", {{{"file_name", "a.pdf"}, {"bytes", 3}, {"url", "https://example.com/a.pdf"}}}}}),
      400, "invalid_request", "files.0.url");
  ExpectError(Create({{"files", {{{"file_name", "a.pdf"}, {"url", "https://example.com/a.pdf"}}}}}), 400,
              "unsupported_source", "files.0.url");
  ExpectError(Create({{"files", {{{"file_name", "../a.pdf"}, {"bytes", 3}}}}}), 400, "invalid_request",
              "files.0.file_name");
  ExpectError(Create({{"files", {{{"file_name", "a.pdf"}, {"bytes", 3}, {"sha256sum", "abc"}}}}}), 400,
              "invalid_sha256sum", "files.0.sha256sum");
  ExpectError(Create({{"files", {{{"file_name", "a.pdf"}, {"bytes", int64_t{1} << 40}}}}}), 413,
              "file_too_large", "files.0.bytes");
  ExpectError(Create({{"files", {file}}, {"tier", "standard"}}), 400, "unsupported_parameter", "tier");
  ExpectError(Create({{"files", {file}}, {"output_formats", {"docx"}}}), 400, "unsupported_output_format");
  ExpectError(Create({{"files", {file}}, {"page_range", "1-x"}}), 400, "invalid_request", "page_range");
  ExpectError(Create({{"files", Json::array()}}), 400, "invalid_request", "files");
  ExpectError(srv_.Client().Post("/v1/tasks", {{"Authorization", "Bearer k"}}, "files=1", "text/plain"), 400,
              "invalid_request");
  ExpectError(srv_.Client().Post("/v1/tasks", Json{{"files", {file}}}.dump(), "application/json"), 401,
              "invalid_api_key");
  ExpectError(srv_.Client().Get("/v1/tasks/task_00000000000000000000000000000000"), 401, "invalid_api_key");
  // Uploads: wrong size, wrong hash (the file waits for a right upload after each), unknown ids.
  auto r =
      Create({{"files", {{{"file_name", "a.pdf"}, {"bytes", pdf_.size()}, {"sha256sum", Sha256Hex(pdf_)}}}}});
  ASSERT_TRUE(r);
  const Json t = Json::parse(r->body);
  const Json link = t["files"][0]["upload"];
  ExpectError(Upload(link, pdf_.substr(1)), 400, "bytes_mismatch");
  std::string other = pdf_;
  other.back() ^= 1;
  ExpectError(Upload(link, other), 400, "file_hash_mismatch");
  Json bad_file = link;
  bad_file["url"] =
      link["url"].get<std::string>().substr(0, link["url"].get<std::string>().size() - 4) + "0000";
  ExpectError(Upload(bad_file, pdf_), 404, "upload_not_found");
  auto missing =
      srv_.Client().Get("/v1/tasks/task_00000000000000000000000000000000", {{"Authorization", "Bearer k"}});
  ExpectError(missing, 404, "task_not_found");
  auto del =
      srv_.Client().Delete("/v1/tasks/" + t["task_id"].get<std::string>(), {{"Authorization", "Bearer k"}});
  ExpectError(del, 405, "method_not_allowed");
  auto ok = Upload(link, pdf_);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(TasksV4Test, CancelStopsEveryFileAndIsRepeatable) {
  StartServer({"--replay-delay-ms", "400"});
  const std::string six =
      MakePdf({TextPage("1"), TextPage("2"), TextPage("3"), TextPage("4"), TextPage("5"), TextPage("6")});
  auto r = Create(
      {{"files",
        {{{"file_name", "long.pdf"}, {"bytes", six.size()}}, {{"file_name", "b.pdf"}, {"bytes", 10}}}}});
  ASSERT_TRUE(r);
  const Json t = Json::parse(r->body);
  const std::string id = t["task_id"];
  auto up = Upload(t["files"][0]["upload"], six);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 200) << up->body;
  ASSERT_TRUE(Eventually([&] { return Get(id)["files"][0]["status"] == "running"; })) << Get(id).dump();
  auto c = srv_.Client().Post("/v1/tasks/" + id + "/cancel", {{"Authorization", "Bearer k"}}, "", "");
  ASSERT_TRUE(c);
  ASSERT_EQ(c->status, 200) << c->body;
  const Json canceled = Json::parse(c->body);
  EXPECT_EQ(canceled["status"], "canceled");
  for (const Json& f : canceled["files"]) EXPECT_EQ(f["status"], "canceled") << canceled.dump();
  auto again = srv_.Client().Post("/v1/tasks/" + id + "/cancel", {{"Authorization", "Bearer k"}}, "", "");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  ExpectError(Upload(t["files"][1]["upload"], std::string(10, 'x')), 409, "upload_already_terminal");
  // The running job stops before its next page: it ends (finished_at) with fewer than six pages
  // parsed (uncanceled, it would parse all six).
  Json f0;
  ASSERT_TRUE(Eventually([&] {
    f0 = Get(id)["files"][0];
    return f0.contains("finished_at");
  })) << f0.dump();
  EXPECT_EQ(f0["status"], "canceled");
  EXPECT_LT(f0["progress"]["pages_done"].get<int>(), 6) << f0.dump();
}

// A sha256 hit is the caller's own: another caller declaring the same hash must upload the bytes
// (else anyone knowing a document's hash could read it). Callers told apart by address here.
TEST_F(TasksV4Test, KnownBytesAreTheCallersOwn) {
  StartServer({"--trusted-proxy", "127.0.0.1"}, /*api_key=*/false);
  auto create = [&](const std::string& addr) {
    auto r = srv_.Client().Post(
        "/v1/tasks", {{"X-Forwarded-For", addr}},
        Json{{"files", {{{"file_name", "a.pdf"}, {"bytes", pdf_.size()}, {"sha256sum", Sha256Hex(pdf_)}}}}}
            .dump(),
        "application/json");
    EXPECT_TRUE(r && r->status == 202) << (r ? r->body : "no answer");
    return r ? Json::parse(r->body) : Json();
  };
  const Json a = create("10.0.0.1");
  auto up = Upload(a["files"][0]["upload"], pdf_);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 200) << up->body;
  const Json other = create("10.0.0.2");
  EXPECT_EQ(other["files"][0]["status"], "waiting-file") << other.dump();
  EXPECT_TRUE(other["files"][0]["upload"].is_object()) << other.dump();
  const Json same = create("10.0.0.1");
  EXPECT_TRUE(same["files"][0]["upload"].is_null()) << same.dump();
}

// A cancel holds across a restart: the canceled task's jobs (one interrupted mid-way, one queued
// behind it) end canceled on the next start instead of being parsed.
TEST_F(TasksV4Test, ACancelHoldsAcrossARestart) {
  StartServer({"--replay-delay-ms", "1500", "--job-workers", "1"});
  const std::string six =
      MakePdf({TextPage("1"), TextPage("2"), TextPage("3"), TextPage("4"), TextPage("5"), TextPage("6")});
  auto r = Create(
      {{"files",
        {{{"file_name", "a.pdf"}, {"bytes", six.size()}}, {{"file_name", "b.pdf"}, {"bytes", six.size()}}}}});
  ASSERT_TRUE(r);
  const Json t = Json::parse(r->body);
  const std::string id = t["task_id"];
  for (int i = 0; i < 2; ++i) {
    auto up = Upload(t["files"][i]["upload"], six);
    ASSERT_TRUE(up && up->status == 200) << (up ? up->body : "no answer");
  }
  // a.pdf running, b.pdf queued behind it (one worker): b's cancel can only act when it is claimed,
  // which is after the restart.
  ASSERT_TRUE(Eventually([&] { return Get(id)["files"][0]["status"] == "running"; })) << Get(id).dump();
  auto c = srv_.Client().Post("/v1/tasks/" + id + "/cancel", {{"Authorization", "Bearer k"}}, "", "");
  ASSERT_TRUE(c && c->status == 200);
  srv_.Stop(SIGKILL);  // before the worker noticed: the jobs are left running / queued in the store
  StartServer({"--job-workers", "1"});
  Json d;
  ASSERT_TRUE(Eventually([&] {
    d = Get(id);
    return d["files"][0].contains("finished_at") && d["files"][1].contains("finished_at");
  })) << d.dump();
  EXPECT_EQ(d["status"], "canceled") << d.dump();
  for (const Json& f : d["files"]) {
    EXPECT_EQ(f["status"], "canceled") << d.dump();
    EXPECT_LT(f["progress"]["pages_done"].get<int>(), 6)
        << "a canceled job was parsed after the restart: " << d.dump();
  }
}

TEST_F(TasksV4Test, ATaskSurvivesARestart) {
  StartServer();
  auto r = Create({{"files", {{{"file_name", "a.pdf"}, {"bytes", pdf_.size()}}}}});
  ASSERT_TRUE(r);
  const Json t = Json::parse(r->body);
  srv_.Stop();
  StartServer();
  EXPECT_EQ(Get(t["task_id"])["status"], "waiting-file");
  Json link = t["files"][0]["upload"];  // the port changed: the path is what counts
  auto up = Upload(link, pdf_);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 200) << up->body;
  EXPECT_EQ(WaitForStatus(t["task_id"], {"completed", "failed"}), "completed");
}

// A loopback document host for url sources.
class DocumentHost {
 public:
  explicit DocumentHost(std::string body) : body_(std::move(body)) {
    srv_.Get("/doc.pdf", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(body_, "application/pdf");
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = server::ListenInBackground(srv_);
  }
  ~DocumentHost() {
    srv_.stop();
    thread_.join();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/doc.pdf"; }

 private:
  std::string body_;
  httplib::Server srv_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(TasksV4Test, UrlSourcesAreFetchedOnlyWhereAllowed) {
  DocumentHost host(pdf_);
  StartServer({"--allow-remote-sources"});
  // Loopback is refused by the request-forgery guard unless private hosts are allowed.
  auto r = Create({{"files", {{{"file_name", "a.pdf"}, {"url", host.Url()}}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const Json guarded = Get(Json::parse(r->body)["task_id"]);
  EXPECT_EQ(guarded["status"], "failed") << guarded.dump();
  EXPECT_EQ(guarded["files"][0]["error"]["code"], "source_fetch_failed") << guarded.dump();
  srv_.Stop();
  StartServer({"--allow-remote-sources", "--allow-private-source-hosts"});
  auto health = srv_.Client().Get("/v1/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(Json::parse(health->body)["features"]["sources"], Json({"upload", "url"}));
  r = Create({{"files", {{{"file_name", "a.pdf"}, {"url", host.Url()}}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const Json created = Json::parse(r->body);
  const std::string id = created["task_id"];
  ASSERT_EQ(WaitForStatus(id, {"completed", "failed"}), "completed") << Get(id).dump();
  ExpectResultZip(Get(id)["files"][0]["result_url"], "0,1,2");
  // A url source takes no upload.
  auto put =
      srv_.Client().Put("/v1/tasks/" + id + "/uploads/" + created["files"][0]["file_id"].get<std::string>(),
                        pdf_, "application/octet-stream");
  ExpectError(put, 409, "upload_already_terminal");
}

TEST(TasksV4Status, FilesAndTasks) {
  TaskFileV4 f;
  server::Job job;
  EXPECT_EQ(FileStatusV4(f, std::nullopt, 100, 10, 105), "waiting-file");
  EXPECT_EQ(FileStatusV4(f, std::nullopt, 100, 10, 111), "failed") << "an upload link past its time";
  f.state = "uploading";
  EXPECT_EQ(FileStatusV4(f, std::nullopt, 100, 10, 105), "pending");
  f.state = "submitted";
  EXPECT_EQ(FileStatusV4(f, std::nullopt, 100, 10, 105), "failed") << "its job expired";
  for (auto [js, want] : std::vector<std::pair<std::string, std::string>>{
           {"queued", "pending"}, {"running", "running"}, {"done", "completed"}, {"failed", "failed"}}) {
    job.status = js;
    EXPECT_EQ(FileStatusV4(f, job, 100, 10, 1e9), want) << js;
  }
  job.error = "canceled by the client";
  EXPECT_EQ(FileStatusV4(f, job, 100, 10, 105), "canceled");
  using V = std::vector<std::string>;
  EXPECT_EQ(TaskStatusV4(V{"waiting-file", "completed"}, false), "waiting-file");
  EXPECT_EQ(TaskStatusV4(V{"waiting-file", "pending"}, false), "pending");
  EXPECT_EQ(TaskStatusV4(V{"pending", "running"}, false), "running");
  EXPECT_EQ(TaskStatusV4(V{"completed", "completed"}, false), "completed");
  EXPECT_EQ(TaskStatusV4(V{"completed", "failed"}, false), "partial");
  EXPECT_EQ(TaskStatusV4(V{"completed", "canceled"}, true), "partial");
  EXPECT_EQ(TaskStatusV4(V{"failed", "canceled"}, true), "canceled");
  EXPECT_EQ(TaskStatusV4(V{"failed", "canceled"}, false), "failed");
  EXPECT_EQ(TaskStatusV4(V{"failed"}, false), "failed");
}

TEST(TasksV4Status, StoredTaskRoundTrips) {
  TaskV4 t;
  t.task_id = "task_1";
  t.created_at = 12.5;
  t.options.tier = "advanced";
  t.options.page_range = "r2-r1";
  TaskFileV4 f;
  f.file_id = "file_1";
  f.file_name = "a b.pdf";
  f.bytes = 42;
  f.state = "uploading";
  t.files.push_back(f);
  auto back = server::TaskFromJsonV4(server::TaskToJsonV4(t));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->task_id, "task_1");
  EXPECT_EQ(back->options.page_range, "r2-r1");
  EXPECT_EQ(back->files[0].bytes, 42);
  EXPECT_EQ(back->files[0].state, "waiting-file") << "an upload cut short by a restart waits again";
  EXPECT_FALSE(server::TaskFromJsonV4("{\"task_id\": 3}").ok());
  EXPECT_FALSE(server::TaskFromJsonV4("[").ok());
}

TEST(TasksV4Status, RegistryBoundsTasksAndFilesAndReloads) {
  const std::string dir = TempDir("tasks_v4_registry") + "/tasks";
  auto task = [](const std::string& id, int files, const std::string& key = "") {
    TaskV4 t;
    t.task_id = id;
    t.client_key = key;
    t.created_at = 100;
    for (int i = 0; i < files; ++i) {
      TaskFileV4 f;
      f.file_id = "file_" + std::to_string(i);
      f.file_name = "a.pdf";
      t.files.push_back(f);
    }
    return t;
  };
  server::TaskRegistryV4 reg(dir);
  ASSERT_TRUE(reg.Load().ok());
  bool replayed = false;
  ASSERT_TRUE(reg.Create(task("task_a", 15, "k"), 2, &replayed).ok());  // files: at most 10 x 2
  const auto too_many_files = reg.Create(task("task_b", 6), 2, &replayed);
  EXPECT_EQ(too_many_files.status().code(), StatusCode::kBusy);
  ASSERT_TRUE(reg.Create(task("task_c", 5), 2, &replayed).ok());
  EXPECT_EQ(reg.Create(task("task_d", 1), 2, &replayed).status().code(), StatusCode::kBusy);
  auto again = reg.Create(task("task_e", 1, "k"), 2, &replayed);  // a retry is answered when full
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(replayed);
  EXPECT_EQ(again->task_id, "task_a");
  server::TaskRegistryV4 reloaded(dir);
  ASSERT_TRUE(reloaded.Load().ok());
  EXPECT_EQ(reloaded.size(), 2u);
  EXPECT_EQ(reloaded.Create(task("task_f", 1), 2, &replayed).status().code(), StatusCode::kBusy);
  // Unused tasks (no file ever got a job) go at the earlier cutoff, used ones at the later.
  ASSERT_TRUE(reloaded
                  .Update("task_c",
                          [](TaskV4& t) {
                            t.files[0].job_id = "j";
                            return Status::Ok();
                          })
                  .ok());
  reloaded.PruneCreatedBefore(0, 101);
  EXPECT_EQ(reloaded.size(), 1u);
  EXPECT_TRUE(reloaded.Get("task_c").has_value());
  reloaded.PruneCreatedBefore(101);
  EXPECT_EQ(reloaded.size(), 0u);
  EXPECT_TRUE(reloaded.Create(task("task_g", 20), 2, &replayed).ok()) << "pruning gave the files back";
}

TEST(TasksV4Status, PageRangeSyntax) {
  for (const char* ok : {"1", "1-5,8", "r3-r1", "all", "2-r1", " 1 , 3 "})
    EXPECT_TRUE(server::PageRangeSyntaxV4(ok)) << ok;
  for (const char* bad : {"", "0", "1-", "-2", "a", "1,,2", "r", "1-2-3", "r0"})
    EXPECT_FALSE(server::PageRangeSyntaxV4(bad)) << bad;
}

}  // namespace
}  // namespace mineru::testing
