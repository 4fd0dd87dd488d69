// download_test.cc — `mineru-cpp download` against a loopback hub.
//
// FakeHub is a cpp-httplib server on 127.0.0.1 (random free port) that answers the URL layouts of
// Hugging Face (api/models/{repo}/revision/{rev}, {repo}/resolve/{rev}/{path} with a redirect to a
// "CDN" for LFS files carrying X-Linked-Size/X-Linked-Etag) and of ModelScope
// (api/v1/models/{repo}/repo/files, api/v1/models/{repo}/repo?FilePath=). It serves the tinyvocab
// fixture model and can misbehave on demand: drop the connection after N bytes, stall, ignore
// Range, answer 503, advertise a wrong size or sha256, or serve flipped bytes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "../util/files.h"
#include "../util/run_cli.h"
#include "base/hash.h"
#include "base/mapped_file.h"
#include "download/download.h"

#ifndef MINERU_FIXTURES_DIR
#define MINERU_FIXTURES_DIR "tests/fixtures"
#endif
#ifndef MINERU_BINARY_DIR
#define MINERU_BINARY_DIR "build"
#endif

namespace mineru {
namespace {

namespace fs = std::filesystem;
using testing::CmdResult;
using testing::ReadAll;
using testing::RunCli;

// What `download` fetches by default (MinerU 3.3+'s checkpoint); a FakeHub serves this repo unless
// told otherwise (set_repo).
const std::string kHfRepo = "opendatalab/MinerU2.5-Pro-2605-1.2B";
const std::string kMsRepo = "OpenDataLab/MinerU2.5-Pro-2605-1.2B";

struct FakeFile {
  std::shared_ptr<const std::string> data;  // bytes served
  bool lfs = false;
  std::string listed_sha;               // sha256 advertised (listing + X-Linked-Etag)
  std::optional<uint64_t> listed_size;  // size advertised
  int drops = 0;                        // the next `drops` bodies break after drop_after bytes
  size_t drop_after = 0;
  int stalls = 0;  // the next `stalls` bodies stop after drop_after bytes and hang
  int errors = 0;  // the next `errors` requests get 503
};

struct LoggedRequest {
  std::string path;   // request path
  std::string file;   // repo file it served ("" for listings and redirects)
  std::string range;  // Range header as sent
  int status = 0;
};

class FakeHub {
 public:
  FakeHub() {
    using httplib::Request;
    using httplib::Response;
    svr_.Get(R"(/api/models/([^/]+/[^/]+)/revision/([^/]+))",
             [this](const Request& q, Response& r) { HfList(q, r, q.matches[1], q.matches[2]); });
    svr_.Get(R"(/api/v1/models/([^/]+/[^/]+)/repo/files)",
             [this](const Request& q, Response& r) { MsList(q, r, q.matches[1]); });
    svr_.Get(R"(/api/v1/models/([^/]+/[^/]+)/repo)",
             [this](const Request& q, Response& r) { MsFile(q, r, q.matches[1]); });
    svr_.Get(R"(/cdn/([^/]+))", [this](const Request& q, Response& r) { Serve(q, r, q.matches[1]); });
    svr_.Get(R"(/([^/]+/[^/]+)/resolve/([^/]+)/(.+))", [this](const Request& q, Response& r) {
      HfResolve(q, r, q.matches[1], q.matches[2], q.matches[3]);
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::yield();  // stop() is a no-op before this
  }
  ~FakeHub() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      released_ = true;
    }
    cv_.notify_all();
    svr_.stop();
    thread_.join();
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void Put(const std::string& name, std::string data, std::optional<bool> lfs = std::nullopt) {
    std::lock_guard<std::mutex> lk(mu_);
    FakeFile f;
    f.lfs = lfs ? *lfs : data.size() > (1 << 20);
    f.listed_sha = Sha256Hex(data);
    f.listed_size = data.size();
    f.data = std::make_shared<const std::string>(std::move(data));
    files_[name] = f;
  }
  void PutFixtureDir(const std::string& dir) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_regular_file()) Put(e.path().filename().string(), ReadAll(e.path().string()));
    }
    Put("README.md", "# tiny model\n");
    Put(".gitattributes", "*.safetensors filter=lfs diff=lfs merge=lfs -text\n");
  }
  // Changes a file's settings (under the lock).
  template <typename Fn>
  void Edit(const std::string& name, Fn fn) {
    std::lock_guard<std::mutex> lk(mu_);
    fn(files_.at(name));
  }
  void Remove(const std::string& name) {
    std::lock_guard<std::mutex> lk(mu_);
    files_.erase(name);
  }
  void set_ignore_range(bool v) { ignore_range_ = v; }
  // The repository ids this hub answers for (Hugging Face, ModelScope spelling).
  void set_repo(const std::string& hf, const std::string& ms) {
    std::lock_guard<std::mutex> lk(mu_);
    hf_repo_ = hf;
    ms_repo_ = ms;
  }

  std::vector<LoggedRequest> log() {
    std::lock_guard<std::mutex> lk(mu_);
    return log_;
  }
  void clear_log() {
    std::lock_guard<std::mutex> lk(mu_);
    log_.clear();
  }
  // Body requests for a file (the ones that reached Serve).
  std::vector<LoggedRequest> served(const std::string& file) {
    std::vector<LoggedRequest> out;
    for (const auto& r : log()) {
      if (r.file == file) out.push_back(r);
    }
    return out;
  }
  int requests_to(const std::string& prefix) {
    int n = 0;
    for (const auto& r : log()) n += r.path.rfind(prefix, 0) == 0;
    return n;
  }

 private:
  void Log(const httplib::Request& q, const std::string& file, int status) {
    log_.push_back({q.path, file, q.get_header_value("Range"), status});
  }

  void HfList(const httplib::Request& q, httplib::Response& r, const std::string& repo,
              const std::string& rev) {
    std::lock_guard<std::mutex> lk(mu_);
    Log(q, "", 0);
    if (repo != hf_repo_) {
      r.status = 404;
      r.set_header("X-Error-Code", "RepoNotFound");
      r.set_header("X-Error-Message", "Repository not found");
      r.set_content("{\"error\":\"Repository not found\"}", "application/json");
      return;
    }
    if (rev != "main") {
      r.status = 404;
      r.set_header("X-Error-Code", "RevisionNotFound");
      r.set_header("X-Error-Message", "Invalid rev id: " + rev);
      return;
    }
    const bool blobs = q.get_param_value("blobs") == "true";
    nlohmann::json sib = nlohmann::json::array();
    for (const auto& [name, f] : files_) {
      nlohmann::json s = {{"rfilename", name}};
      if (blobs) {
        s["blobId"] = std::string(40, 'b');
        s["size"] = *f.listed_size;
        if (f.lfs) s["lfs"] = {{"sha256", f.listed_sha}, {"size", *f.listed_size}, {"pointerSize", 134}};
      }
      sib.push_back(s);
    }
    nlohmann::json j = {{"_id", "x"}, {"id", repo}, {"sha", std::string(40, 'c')}, {"siblings", sib}};
    r.set_content(j.dump(), "application/json");
  }

  void HfResolve(const httplib::Request& q, httplib::Response& r, const std::string& repo,
                 const std::string& rev, const std::string& path) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = files_.find(path);
      if (repo != hf_repo_ || rev != "main" || it == files_.end()) {
        Log(q, "", 404);
        r.status = 404;
        r.set_header("X-Error-Code", "EntryNotFound");
        r.set_header("X-Error-Message", "Entry not found");
        return;
      }
      if (it->second.lfs) {  // like huggingface.co: 302 to the CDN, the metadata on the redirect
        Log(q, "", 302);
        r.status = 302;
        r.set_header("Location", endpoint() + "/cdn/" + path);
        r.set_header("X-Linked-Size", std::to_string(*it->second.listed_size));
        r.set_header("X-Linked-Etag", "\"" + it->second.listed_sha + "\"");
        r.set_header("X-Repo-Commit", std::string(40, 'c'));
        r.set_header("ETag", "\"" + std::string(40, 'e') + "\"");
        return;
      }
    }
    r.set_header("ETag", "\"" + std::string(40, 'e') + "\"");
    Serve(q, r, path);
  }

  void MsList(const httplib::Request& q, httplib::Response& r, const std::string& repo) {
    std::lock_guard<std::mutex> lk(mu_);
    Log(q, "", 0);
    if (repo != ms_repo_ || q.get_param_value("Revision") != "master") {
      nlohmann::json j = {{"Code", 10010205}, {"Message", "model not found"}, {"Success", false}};
      r.status = 404;
      r.set_content(j.dump(), "application/json");
      return;
    }
    nlohmann::json files = nlohmann::json::array();
    files.push_back(
        {{"Name", "examples"}, {"Path", "examples"}, {"Type", "tree"}, {"Size", 0}, {"Sha256", ""}});
    for (const auto& [name, f] : files_) {
      files.push_back({{"Name", name},
                       {"Path", name},
                       {"Type", "blob"},
                       {"Size", *f.listed_size},
                       {"Sha256", f.listed_sha},
                       {"Revision", std::string(40, 'c')}});
    }
    nlohmann::json j = {
        {"Code", 200}, {"Data", {{"Files", files}}}, {"Message", "success"}, {"Success", true}};
    r.set_content(j.dump(), "application/json");
  }

  void MsFile(const httplib::Request& q, httplib::Response& r, const std::string& repo) {
    const std::string path = q.get_param_value("FilePath");
    bool lfs = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = files_.find(path);
      if (repo != ms_repo_ || q.get_param_value("Revision") != "master" || it == files_.end()) {
        Log(q, "", 404);
        r.status = 404;
        return;
      }
      lfs = it->second.lfs;
      if (lfs) {  // big files come from object storage
        Log(q, "", 302);
        r.status = 302;
        r.set_header("Location", endpoint() + "/cdn/" + path);
        return;
      }
    }
    Serve(q, r, path);
  }

  // Sends a file's bytes, answering Range itself (so that it can also ignore it).
  void Serve(const httplib::Request& q, httplib::Response& r, const std::string& name) {
    std::unique_lock<std::mutex> lk(mu_);
    auto it = files_.find(name);
    if (it == files_.end()) {
      Log(q, name, 404);
      r.status = 404;
      return;
    }
    FakeFile& f = it->second;
    const_cast<httplib::Request&>(q).ranges.clear();  // httplib would slice the body again otherwise
    if (f.errors > 0) {
      --f.errors;
      Log(q, name, 503);
      r.status = 503;
      return;
    }
    const std::shared_ptr<const std::string> data = f.data;
    const std::string range = q.get_header_value("Range");
    size_t start = 0;
    bool partial = false;
    if (!range.empty() && !ignore_range_) {
      EXPECT_EQ(range.rfind("bytes=", 0), 0u) << range;
      EXPECT_EQ(range.back(), '-') << range;
      start = std::stoull(range.substr(6));
      partial = true;
    }
    if (partial && start >= data->size()) {
      Log(q, name, 416);
      r.status = 416;
      r.set_header("Content-Range", "bytes */" + std::to_string(data->size()));
      return;
    }
    size_t cut = SIZE_MAX;
    bool stall = false;
    if (f.drops > 0) {
      --f.drops;
      cut = f.drop_after;
    } else if (f.stalls > 0) {
      --f.stalls;
      cut = f.drop_after;
      stall = true;
    }
    r.status = partial ? 206 : 200;
    Log(q, name, r.status);
    if (partial) {
      r.set_header("Content-Range", "bytes " + std::to_string(start) + "-" +
                                        std::to_string(data->size() - 1) + "/" +
                                        std::to_string(data->size()));
    }
    lk.unlock();
    r.set_content_provider(
        data->size() - start, "application/octet-stream",
        [this, data, start, cut, stall](size_t off, size_t length, httplib::DataSink& sink) {
          const size_t n = std::min<size_t>(length, 64 * 1024);
          if (off + n > cut) {
            if (cut > off) sink.write(data->data() + start + off, cut - off);
            if (stall) {  // hang until the hub shuts down; the client must give up by itself
              std::unique_lock<std::mutex> lk2(mu_);
              cv_.wait(lk2, [this] { return released_; });
            }
            return false;  // drop the connection mid-body
          }
          return sink.write(data->data() + start + off, n);
        });
  }

  httplib::Server svr_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::map<std::string, FakeFile> files_;
  std::atomic<bool> ignore_range_{false};
  std::string hf_repo_ = kHfRepo, ms_repo_ = kMsRepo;
  std::vector<LoggedRequest> log_;
};

// N of "bytes=N-" (0 when absent or malformed).
uint64_t RangeStart(const std::string& range) {
  if (range.rfind("bytes=", 0) != 0) return 0;
  return std::strtoull(range.c_str() + 6, nullptr, 10);
}

const char* const kEngineFiles[] = {"config.json", "preprocessor_config.json", "tokenizer.json",
                                    "model.safetensors"};

class DownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = std::string(MINERU_FIXTURES_DIR) + "/tinyvocab";
    char tmpl[] = "/tmp/mineru_dl_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/model";
    ::unsetenv("HF_ENDPOINT");
    ::unsetenv("MODELSCOPE_ENDPOINT");
    ::unsetenv("MODELSCOPE_DOMAIN");
    ::unsetenv("HF_TOKEN");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  DownloadOptions Options(FakeHub& hub, HubSource source = HubSource::kHuggingFace) {
    DownloadOptions o;
    o.source = source;
    o.endpoint = hub.endpoint();
    o.model_dir = dir_;
    o.retry_delay_ms = 0;
    return o;
  }

  void ExpectIdentical(const std::string& name) {
    const std::string got = dir_ + "/" + name;
    ASSERT_TRUE(FileExists(got)) << name;
    EXPECT_TRUE(ReadAll(got) == ReadAll(fixture_ + "/" + name)) << name << " differs from the fixture";
    EXPECT_FALSE(FileExists(got + ".part")) << name;
  }
  void ExpectEngineFilesIdentical() {
    for (const char* n : kEngineFiles) ExpectIdentical(n);
  }
  // No stray files: only what the engine needs.
  void ExpectOnly(const std::vector<std::string>& names) {
    std::vector<std::string> have;
    for (const auto& e : fs::directory_iterator(dir_)) have.push_back(e.path().filename().string());
    std::sort(have.begin(), have.end());
    std::vector<std::string> want = names;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(have, want);
  }

  std::string fixture_, root_, dir_;
};

TEST_F(DownloadTest, HuggingFaceFullDownloadYieldsIdenticalFiles) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  std::vector<DownloadProgress> events;
  DownloadSummary sum;
  Status s = DownloadModel(
      Options(hub), [&](const DownloadProgress& p) { events.push_back(p); }, &sum);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectEngineFilesIdentical();
  ExpectOnly(
      {"config.json", "preprocessor_config.json", "tokenizer.json", "model.safetensors", kDownloadRecord});
  EXPECT_TRUE(ModelLooksComplete(dir_));
  EXPECT_EQ(sum.files_fetched, 4);
  EXPECT_EQ(sum.files_skipped, 0);
  // LFS files went through the redirect; files the engine does not need were never requested.
  EXPECT_GE(hub.requests_to("/cdn/model.safetensors"), 1);
  EXPECT_GE(hub.requests_to("/cdn/tokenizer.json"), 1);
  for (const char* skip :
       {"golden_one_image.safetensors", "golden_text_only.json", "README.md", "TOKENIZER_LICENSE"}) {
    EXPECT_TRUE(hub.served(skip).empty()) << skip;
  }
  // The listing asked for sizes and hashes.
  bool blobs = false;
  for (const auto& r : hub.log()) blobs |= r.path.find("/api/models/") == 0;
  EXPECT_TRUE(blobs);
  // Progress: ends with every byte accounted for, then kFinished.
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, DownloadProgress::Event::kFinished);
  uint64_t total = 0;
  for (const char* n : kEngineFiles) total += fs::file_size(dir_ + "/" + n);
  const DownloadProgress& last_done = events[events.size() - 2];
  EXPECT_EQ(last_done.event, DownloadProgress::Event::kFileDone);
  EXPECT_EQ(last_done.bytes_done, total);
  EXPECT_EQ(last_done.bytes_total, total);
  EXPECT_EQ(last_done.file_count, 4);
}

TEST_F(DownloadTest, ModelScopeFullDownloadYieldsIdenticalFiles) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  DownloadOptions o = Options(hub, HubSource::kModelScope);
  Status s = DownloadModel(o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectEngineFilesIdentical();
  ExpectOnly(
      {"config.json", "preprocessor_config.json", "tokenizer.json", "model.safetensors", kDownloadRecord});
  EXPECT_GE(hub.requests_to("/api/v1/models/" + kMsRepo + "/repo/files"), 1);
  EXPECT_GE(hub.requests_to("/cdn/model.safetensors"), 1);
  EXPECT_EQ(hub.requests_to("/api/models/"), 0);
}

TEST_F(DownloadTest, PresentVerifiedFilesAreSkippedAndBadOnesFetchedAgain) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  ASSERT_TRUE(DownloadModel(Options(hub)).ok());
  hub.clear_log();
  DownloadSummary sum;
  Status s = DownloadModel(Options(hub), {}, &sum);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(sum.files_fetched, 0);
  EXPECT_EQ(sum.files_skipped, 4);
  EXPECT_EQ(hub.log().size(), 1u);  // only the listing

  // A same-size copy with one flipped byte fails the sha256 check and is fetched again.
  {
    std::fstream f(dir_ + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    f.put('\x5a');
  }
  hub.clear_log();
  s = DownloadModel(Options(hub), {}, &sum);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(sum.files_fetched, 1);
  EXPECT_EQ(hub.served("model.safetensors").size(), 1u);
  ExpectEngineFilesIdentical();

  // --force fetches everything again.
  s = DownloadModel(
      [&] {
        DownloadOptions o = Options(hub);
        o.force = true;
        return o;
      }(),
      {}, &sum);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(sum.files_fetched, 4);
  ExpectEngineFilesIdentical();
}

TEST_F(DownloadTest, DroppedTransferResumesWithRangeInTheSameRun) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  const size_t cut = 3 * 1000 * 1000 + 17;
  hub.Edit("model.safetensors", [&](FakeFile& f) {
    f.drops = 2;
    f.drop_after = cut;
  });
  DownloadSummary sum;
  Status s = DownloadModel(Options(hub), {}, &sum);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectEngineFilesIdentical();
  const auto reqs = hub.served("model.safetensors");
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].range, "");
  // Each retry asks for the rest after what arrived (all `cut` bytes, on loopback).
  const uint64_t k1 = RangeStart(reqs[1].range), k2 = RangeStart(reqs[2].range);
  EXPECT_GT(k1, 0u);
  EXPECT_LE(k1, cut);
  EXPECT_GT(k2, k1);
  EXPECT_LE(k2, k1 + cut);
  EXPECT_EQ(reqs[1].status, 206);
  EXPECT_EQ(reqs[2].status, 206);
  // Each byte crossed the network once.
  uint64_t total = 0;
  for (const char* n : kEngineFiles) total += fs::file_size(dir_ + "/" + n);
  EXPECT_EQ(sum.bytes_fetched, total);
}

TEST_F(DownloadTest, InterruptedDownloadResumesFromThePartFileOnTheNextRun) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  hub.Edit("model.safetensors", [&](FakeFile& f) {
    f.drops = 1;
    f.drop_after = 2500000;
  });
  DownloadOptions o = Options(hub);
  o.max_attempts = 1;
  Status s = DownloadModel(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("model.safetensors.part"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("resumes"), std::string::npos) << s.message();
  EXPECT_FALSE(FileExists(dir_ + "/model.safetensors"));
  const uint64_t part = fs::file_size(dir_ + "/model.safetensors.part");
  EXPECT_GT(part, 0u);
  EXPECT_LE(part, 2500000u);
  EXPECT_FALSE(ModelLooksComplete(dir_));

  hub.clear_log();
  s = DownloadModel(Options(hub));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto reqs = hub.served("model.safetensors");
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].range, "bytes=" + std::to_string(part) + "-");
  EXPECT_EQ(reqs[0].status, 206);
  ExpectEngineFilesIdentical();
  EXPECT_TRUE(ModelLooksComplete(dir_));
}

TEST_F(DownloadTest, ServerThatIgnoresRangeRestartsFromZero) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  hub.set_ignore_range(true);
  // A stale .part of garbage: appending to it would give a wrong file.
  fs::create_directories(dir_);
  ASSERT_TRUE(WriteStringToFile(dir_ + "/model.safetensors.part", std::string(1000, 'x')).ok());
  // And a drop in the middle, so the retry's Range is ignored as well.
  hub.Edit("model.safetensors", [&](FakeFile& f) {
    f.drops = 1;
    f.drop_after = 1234567;
  });
  Status s = DownloadModel(Options(hub));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto reqs = hub.served("model.safetensors");
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].range, "bytes=1000-");
  EXPECT_EQ(reqs[0].status, 200);
  EXPECT_NE(reqs[1].range, "");
  EXPECT_EQ(reqs[1].status, 200);
  ExpectEngineFilesIdentical();
}

TEST_F(DownloadTest, StalledTransferIsAbortedByTheLowSpeedLimitAndResumed) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  hub.Edit("model.safetensors", [&](FakeFile& f) {
    f.stalls = 1;
    f.drop_after = 1 << 20;
  });
  DownloadOptions o = Options(hub);
  o.low_speed_time_s = 1;  // < 1 KB/s for 1 s
  Status s = DownloadModel(o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto reqs = hub.served("model.safetensors");
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_GT(RangeStart(reqs[1].range), 0u);
  EXPECT_LE(RangeStart(reqs[1].range), uint64_t(1) << 20);
  EXPECT_EQ(reqs[1].status, 206);
  ExpectEngineFilesIdentical();
}

TEST_F(DownloadTest, TransientServerErrorsAreRetried) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  hub.Edit("tokenizer.json", [&](FakeFile& f) { f.errors = 2; });
  Status s = DownloadModel(Options(hub, HubSource::kModelScope));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(hub.served("tokenizer.json").size(), 3u);
  ExpectEngineFilesIdentical();
}

TEST_F(DownloadTest, WrongAdvertisedSha256IsRejected) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  hub.Edit("model.safetensors", [&](FakeFile& f) { f.listed_sha = Sha256Hex("something else"); });
  Status s = DownloadModel(Options(hub));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("sha256 mismatch for model.safetensors"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(Sha256Hex("something else")), std::string::npos) << s.message();
  EXPECT_FALSE(FileExists(dir_ + "/model.safetensors"));
  EXPECT_FALSE(FileExists(dir_ + "/model.safetensors.part"));
  EXPECT_FALSE(ModelLooksComplete(dir_));
}

TEST_F(DownloadTest, FlippedBytesAreRejected) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  std::string bad = ReadAll(fixture_ + "/model.safetensors");
  bad[bad.size() / 2] ^= 0x01;
  hub.Edit("model.safetensors", [&](FakeFile& f) { f.data = std::make_shared<const std::string>(bad); });
  Status s = DownloadModel(Options(hub, HubSource::kModelScope));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("sha256 mismatch for model.safetensors"), std::string::npos) << s.message();
  EXPECT_FALSE(FileExists(dir_ + "/model.safetensors"));
  EXPECT_FALSE(FileExists(dir_ + "/model.safetensors.part"));
}

TEST_F(DownloadTest, SizeMismatchIsRejectedEvenWithoutAHash) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  // config.json is not an LFS file: Hugging Face lists its size but no sha256.
  hub.Edit("config.json", [&](FakeFile& f) { f.listed_size = f.data->size() + 10; });
  Status s = DownloadModel(Options(hub));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("size mismatch for config.json"), std::string::npos) << s.message();
  EXPECT_FALSE(FileExists(dir_ + "/config.json"));
  EXPECT_FALSE(FileExists(dir_ + "/config.json.part"));
}

TEST_F(DownloadTest, NotEnoughDiskSpaceIsReportedBeforeFetching) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  hub.Edit("model.safetensors", [&](FakeFile& f) { f.listed_size = uint64_t(1) << 60; });
  Status s = DownloadModel(Options(hub));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("not enough disk space"), std::string::npos) << s.message();
  EXPECT_TRUE(hub.served("model.safetensors").empty());
}

TEST_F(DownloadTest, UnreachableEndpointFailsFastWithAHint) {
  // A port nobody listens on: bind, read the number, close.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  ::close(fd);

  DownloadOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port);
  o.model_dir = dir_;
  o.retry_delay_ms = 0;
  Status s = DownloadModel(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  const std::string& m = s.message();
  EXPECT_EQ(m.rfind("cannot reach 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u) << m;
  EXPECT_NE(m.find("HF_ENDPOINT"), std::string::npos) << m;
  EXPECT_NE(m.find("--source modelscope"), std::string::npos) << m;
  EXPECT_NE(m.find("--model " + dir_), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(dir_));  // nothing created

  o.source = HubSource::kModelScope;
  s = DownloadModel(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("MODELSCOPE_ENDPOINT"), std::string::npos) << s.message();
}

TEST_F(DownloadTest, UnresolvableHostFailsFastWithAHint) {
  DownloadOptions o;
  o.endpoint = "http://no-such-host.invalid";
  o.model_dir = dir_;
  o.retry_delay_ms = 0;
  Status s = DownloadModel(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.message().rfind("cannot reach no-such-host.invalid: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("HF_ENDPOINT"), std::string::npos) << s.message();
}

TEST_F(DownloadTest, EndpointComesFromTheEnvironment) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  ::setenv("HF_ENDPOINT", (hub.endpoint() + "/").c_str(), 1);
  DownloadOptions o;
  o.model_dir = dir_;
  o.retry_delay_ms = 0;
  EXPECT_EQ(ResolveEndpoint(o), hub.endpoint());
  Status s = DownloadModel(o);
  ::unsetenv("HF_ENDPOINT");
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectEngineFilesIdentical();

  o.source = HubSource::kModelScope;
  EXPECT_EQ(ResolveEndpoint(o), "https://www.modelscope.cn");
  ::setenv("MODELSCOPE_ENDPOINT", "mirror.example.org/", 1);
  EXPECT_EQ(ResolveEndpoint(o), "https://mirror.example.org");
  ::unsetenv("MODELSCOPE_ENDPOINT");
  o.source = HubSource::kHuggingFace;
  EXPECT_EQ(ResolveEndpoint(o), "https://huggingface.co");
  o.endpoint = "http://flag.example/";
  EXPECT_EQ(ResolveEndpoint(o), "http://flag.example");
}

TEST_F(DownloadTest, MissingRepoRevisionOrFileIsReported) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  DownloadOptions o = Options(hub);
  o.repo = "nobody/nothing";
  Status s = DownloadModel(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("HTTP 404"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Repository not found"), std::string::npos) << s.message();

  o = Options(hub);
  o.revision = "v9";
  s = DownloadModel(o);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();

  o = Options(hub, HubSource::kModelScope);
  o.repo = "nobody/nothing";
  s = DownloadModel(o);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();

  hub.Remove("tokenizer.json");
  s = DownloadModel(Options(hub));
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("has no tokenizer.json"), std::string::npos) << s.message();
}

TEST_F(DownloadTest, ShardedCheckpointFetchesTheShardsOfTheIndex) {
  FakeHub hub;
  std::mt19937 rng(7);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  hub.Put("config.json", "{\"model_type\":\"qwen2_vl\"}");
  hub.Put("preprocessor_config.json", "{}");
  hub.Put("tokenizer.json", "{}");
  hub.Put("generation_config.json", "{\"do_sample\":false}");
  hub.Put("chat_template.json", "{\"chat_template\":\"x\"}");
  hub.Put("model.safetensors.index.json",
          R"({"metadata":{"total_size":1},"weight_map":{"a.weight":"model-00001-of-00002.safetensors",
              "b.weight":"model-00002-of-00002.safetensors","c.weight":"model-00001-of-00002.safetensors"}})");
  const std::string s1 = random_bytes(1500000), s2 = random_bytes(700000);
  hub.Put("model-00001-of-00002.safetensors", s1);
  hub.Put("model-00002-of-00002.safetensors", s2, /*lfs=*/true);
  hub.Put("model-00001-of-00003.safetensors", random_bytes(1000));  // stale, not in the index
  hub.Put("pytorch_model.bin", random_bytes(1000));
  for (HubSource src : {HubSource::kHuggingFace, HubSource::kModelScope}) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    Status s = DownloadModel(Options(hub, src));
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(ReadAll(dir_ + "/model-00001-of-00002.safetensors"), s1);
    EXPECT_EQ(ReadAll(dir_ + "/model-00002-of-00002.safetensors"), s2);
    ExpectOnly({"config.json", "preprocessor_config.json", "tokenizer.json", "generation_config.json",
                "chat_template.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors", kDownloadRecord});
    EXPECT_TRUE(ModelLooksComplete(dir_));
    fs::remove(dir_ + "/model-00002-of-00002.safetensors");
    EXPECT_FALSE(ModelLooksComplete(dir_));
  }
  EXPECT_TRUE(hub.served("model-00001-of-00003.safetensors").empty());
  EXPECT_TRUE(hub.served("pytorch_model.bin").empty());
}

TEST_F(DownloadTest, HostileShardNamesAreRefused) {
  FakeHub hub;
  hub.Put("config.json", "{}");
  hub.Put("preprocessor_config.json", "{}");
  hub.Put("tokenizer.json", "{}");
  hub.Put("model.safetensors.index.json", R"({"weight_map":{"a":"../evil.safetensors"}})");
  Status s = DownloadModel(Options(hub));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("../evil.safetensors"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(root_ + "/evil.safetensors"));
}

TEST_F(DownloadTest, ASecondDownloadIntoTheSameDirectoryIsRefused) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  fs::create_directories(dir_);
  const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  Status s = DownloadModel(Options(hub));
  ::close(fd);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("another download"), std::string::npos) << s.message();
  ASSERT_TRUE(DownloadModel(Options(hub)).ok());
}

TEST(DownloadUnit, HelpersAndModelCheck) {
  EXPECT_EQ(UrlEncode("refs/pr/1", false), "refs%2Fpr%2F1");
  EXPECT_EQ(UrlEncode("a b/c+d.json", true), "a%20b/c%2Bd.json");
  EXPECT_TRUE(ParseHubSource("HuggingFace").ok());
  EXPECT_EQ(*ParseHubSource("ms"), HubSource::kModelScope);
  EXPECT_FALSE(ParseHubSource("github").ok());
  EXPECT_EQ(DefaultRevision(HubSource::kHuggingFace), "main");
  EXPECT_EQ(DefaultRevision(HubSource::kModelScope), "master");
  EXPECT_TRUE(IsWantedModelFile("config.json"));
  EXPECT_TRUE(IsWantedModelFile("model.safetensors.index.json"));
  EXPECT_FALSE(IsWantedModelFile("README.md"));
  EXPECT_FALSE(IsWantedModelFile("golden_text_only.safetensors"));
  EXPECT_TRUE(ModelLooksComplete(std::string(MINERU_FIXTURES_DIR) + "/tinyvocab"));
  EXPECT_FALSE(ModelLooksComplete("/nonexistent/dir"));
  EXPECT_NE(DefaultModelDir().find(".cache/mineru-cpp/MinerU2.5-Pro-2605-1.2B"), std::string::npos);
  EXPECT_NE(DefaultModelDir("opendatalab/MinerU2.5-2509-1.2B").find(".cache/mineru-cpp/MinerU2.5-2509-1.2B"),
            std::string::npos);
}

TEST(DownloadUnit, RepoChoicesFollowMinerU) {
  const auto hf = HubSource::kHuggingFace, ms = HubSource::kModelScope;
  EXPECT_EQ(DefaultRepo(hf), "opendatalab/MinerU2.5-Pro-2605-1.2B");
  EXPECT_EQ(DefaultRepo(ms), "OpenDataLab/MinerU2.5-Pro-2605-1.2B");
  EXPECT_EQ(*ResolveRepo("", hf), "opendatalab/MinerU2.5-Pro-2605-1.2B");
  EXPECT_EQ(*ResolveRepo("pro-2605", ms), "OpenDataLab/MinerU2.5-Pro-2605-1.2B");
  EXPECT_EQ(*ResolveRepo("Pro-2604", hf), "opendatalab/MinerU2.5-Pro-2604-1.2B");
  EXPECT_EQ(*ResolveRepo("2509", hf), "opendatalab/MinerU2.5-2509-1.2B");
  EXPECT_EQ(*ResolveRepo("2509", ms), "OpenDataLab/MinerU2.5-2509-1.2B");
  EXPECT_EQ(*ResolveRepo("gguf", hf), std::string(kGgufRepo));
  EXPECT_EQ(*ResolveRepo("gguf", ms), std::string(kGgufRepo));
  EXPECT_EQ(*ResolveRepo("me/my-finetune", ms), "me/my-finetune");  // used as given
  EXPECT_FALSE(ResolveRepo("2510", hf).ok());
}

TEST(DownloadUnit, GgufPairPicksQ8AndItsProjector) {
  auto p = PickGgufPair({"README.md", "MinerU2.5-Pro-2605-1.2B-F16.gguf", "MinerU2.5-Pro-2605-1.2B-Q8_0.gguf",
                         "mmproj-MinerU2.5-Pro-2605-1.2B-F16.gguf",
                         "mmproj-MinerU2.5-Pro-2605-1.2B-Q8_0.gguf", "sub/other-Q8_0.gguf"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->first, "MinerU2.5-Pro-2605-1.2B-Q8_0.gguf");
  EXPECT_EQ(p->second, "mmproj-MinerU2.5-Pro-2605-1.2B-Q8_0.gguf");
  p = PickGgufPair({"m-bf16.gguf", "mmproj-m-bf16.gguf", "mmproj-m-f16.gguf"});  // one LM: it
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->first, "m-bf16.gguf");
  EXPECT_EQ(p->second, "mmproj-m-f16.gguf");
  EXPECT_FALSE(PickGgufPair({"m-Q8_0.gguf"}).ok());                                 // no projector
  EXPECT_FALSE(PickGgufPair({"a-F16.gguf", "b-Q4_0.gguf", "mmproj-x.gguf"}).ok());  // which LM?
}

TEST_F(DownloadTest, DownloadRecordsTheRepositoryAndTheModelIsNamedAfterIt) {
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  Status s = DownloadModel(Options(hub));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const nlohmann::json rec = nlohmann::json::parse(ReadAll(dir_ + "/" + kDownloadRecord));
  EXPECT_EQ(rec["repo"], kHfRepo);
  EXPECT_EQ(rec["source"], "huggingface");
  EXPECT_EQ(rec["revision"], "main");
  // 2509 when asked for it: another repository on the hub.
  hub.set_repo("opendatalab/MinerU2.5-2509-1.2B", "OpenDataLab/MinerU2.5-2509-1.2B");
  DownloadOptions o = Options(hub, HubSource::kModelScope);
  o.repo = *ResolveRepo("2509", HubSource::kModelScope);
  o.model_dir = dir_ + "-2509";
  s = DownloadModel(o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(nlohmann::json::parse(ReadAll(o.model_dir + "/" + kDownloadRecord))["repo"],
            "OpenDataLab/MinerU2.5-2509-1.2B");
  EXPECT_GE(hub.requests_to("/api/v1/models/OpenDataLab/MinerU2.5-2509-1.2B/repo/files"), 1);
  std::error_code ec;
  fs::remove_all(o.model_dir, ec);
}

TEST_F(DownloadTest, GgufRepositoryFetchesTheQ8PairOnly) {
  FakeHub hub;
  hub.set_repo(kGgufRepo, kGgufRepo);
  hub.Put("README.md", "# gguf\n");
  hub.Put("MinerU2.5-Pro-2605-1.2B-Q8_0.gguf", std::string(3000, 'L'), true);
  hub.Put("MinerU2.5-Pro-2605-1.2B-F16.gguf", std::string(5000, 'F'), true);
  hub.Put("mmproj-MinerU2.5-Pro-2605-1.2B-Q8_0.gguf", std::string(2000, 'V'), true);
  hub.Put("mmproj-MinerU2.5-Pro-2605-1.2B-F16.gguf", std::string(4000, 'W'), true);
  hub.Put("preprocessor_config.json", ReadAll(fixture_ + "/preprocessor_config.json"));
  for (HubSource src : {HubSource::kHuggingFace, HubSource::kModelScope}) {
    DownloadOptions o = Options(hub, src);
    o.repo = *ResolveRepo("gguf", src);
    DownloadSummary sum;
    Status s = DownloadModel(o, {}, &sum);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectOnly({"MinerU2.5-Pro-2605-1.2B-Q8_0.gguf", "mmproj-MinerU2.5-Pro-2605-1.2B-Q8_0.gguf",
                "preprocessor_config.json", kDownloadRecord});
    EXPECT_EQ(ReadAll(dir_ + "/MinerU2.5-Pro-2605-1.2B-Q8_0.gguf"), std::string(3000, 'L'));
    EXPECT_TRUE(ModelLooksComplete(dir_));
    EXPECT_TRUE(hub.served("MinerU2.5-Pro-2605-1.2B-F16.gguf").empty());
    EXPECT_EQ(sum.files_fetched + sum.files_skipped, 3);
  }
}

// --- the CLI, when `download` is registered in the binary ---------------------------------------

TEST_F(DownloadTest, CliDownloadsAndFailsWithOneLine) {
  const std::string bin = std::string(MINERU_BINARY_DIR) + "/src/cli/mineru-cpp";
  ASSERT_TRUE(FileExists(bin)) << bin;
  ASSERT_NE(RunCli({"--help"}).out.find("\n  download "), std::string::npos)
      << "mineru-cpp has no download subcommand";
  FakeHub hub;
  hub.PutFixtureDir(fixture_);
  CmdResult r = RunCli({"download", "--endpoint", hub.endpoint(), "-o", dir_});
  EXPECT_EQ(r.code, 0) << r.err;
  ExpectEngineFilesIdentical();
  EXPECT_NE(r.err.find("downloaded 4 file(s)"), std::string::npos) << r.err;  // not a tty: no bar
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;

  r = RunCli(
      {"download", "--quiet", "--source", "modelscope", "--endpoint", hub.endpoint(), "--model", dir_});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");

  r = RunCli({"download", "--endpoint", "http://no-such-host.invalid", "-o", dir_ + "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("error: cannot reach no-such-host.invalid", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = RunCli({"download", "--source", "github"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown source"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mineru
