// Faults around the real server (`mineru-cpp serve` on loopback, document jobs with --replay):
//  - the job store's disk is full: simulated with RLIMIT_FSIZE applied to the running server
//    (prlimit), so its writes fail with EFBIG, and to this process for the SQLite store itself;
//  - the job store is read-only: the server runs as an unprivileged user (when the test runs as
//    root, where permissions are not enforced) and its data directory loses write permission;
//  - slow clients: a request head dribbled a byte at a time, a body that stalls, more stalled
//    connections than HTTP threads, more connections than --max-connections, and clients that
//    never read a streamed generation or a large download.
// Conditions are polled with deadlines; the only sleeps are a slow client's own pauses.

#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "../util/eventually.h"
#include "../util/pdf_writer.h"
#include "../util/process.h"
#include "../util/replay.h"
#include "../util/sanitizers.h"
#include "edge_socket.h"
#include "server/job_store.h"
#include "server_harness.h"

namespace mineru::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr uid_t kNobody = 65534;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The JSON body of a response, or an empty object when there was no response (a poll under a
// slow build may time out; the polling loops then simply try again) or no JSON in it.
Json JsonOf(const httplib::Result& r) {
  Json j = r ? Json::parse(r->body, nullptr, false) : Json::object();
  return j.is_object() ? j : Json::object();
}

// A server-side storage failure: a 5xx from `codes` with an OpenAI-style JSON error naming it.
::testing::AssertionResult IsStorageError(const httplib::Result& r, std::vector<int> codes) {
  if (!r) return ::testing::AssertionFailure() << "no response (" << httplib::to_string(r.error()) << ")";
  if (std::find(codes.begin(), codes.end(), r->status) == codes.end()) {
    return ::testing::AssertionFailure() << "status " << r->status << ": " << r->body;
  }
  const Json j = Json::parse(r->body, nullptr, false);
  if (!j.is_object() || j.value("object", "") != "error" || !j.contains("error") ||
      j["error"].value("message", "").find("storage") == std::string::npos) {
    return ::testing::AssertionFailure() << "not a clear JSON error: " << r->body;
  }
  // Server paths (the data directory, its files) stay in the log, out of answers to clients.
  if (r->body.find(MINERU_BINARY_DIR) != std::string::npos || r->body.find("/jobs") != std::string::npos) {
    return ::testing::AssertionFailure() << "the error names a server path: " << r->body;
  }
  return ::testing::AssertionSuccess() << r->body;
}

std::string Pdf(int pages) {
  std::vector<PdfPage> v(static_cast<size_t>(pages));
  for (int i = 0; i < pages; ++i) v[i].texts.push_back({72, 50, 20, "Page " + std::to_string(i + 1)});
  return MakePdf(v);
}

httplib::MultipartFormDataItems Upload(const std::string& pdf) {
  return {{"files", pdf, "doc.pdf", "application/pdf"}};
}

// The file size limit of a running process (as root any limit; otherwise up to the hard limit).
bool LimitFileSize(pid_t pid, rlim_t bytes) {
  rlimit old{};
  if (::prlimit(pid, RLIMIT_FSIZE, nullptr, &old) != 0) return false;
  rlimit lim{bytes, old.rlim_max};
  return ::prlimit(pid, RLIMIT_FSIZE, &lim, nullptr) == 0;
}

// The first directory on path's way that other users cannot enter ("" when there is none).
std::string ClosedToOthers(const std::string& path) {
  std::string cur;
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    cur = path.substr(0, i);
    struct stat st {};
    if (::stat(cur.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH)) return cur;
  }
  return "";
}

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir(std::string("fault_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    replay_ = WriteTitleTextReplay(dir_, 6);
    data_ = dir_ + "/data";
  }
  void TearDown() override {
    // Leave nothing unremovable for the next run (the test may stop half-way).
    for (const std::string& d : {data_, data_ + "/jobs"}) ::chmod(d.c_str(), 0755);
    ::chmod((data_ + "/jobs.sqlite3").c_str(), 0644);
  }
  std::vector<std::string> Args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {"--model", kFx + "/tinyvocab", "--data-dir", data_, "--replay", replay_};
    if (std::find(extra.begin(), extra.end(), "--max-tokens") == extra.end())
      a.insert(a.end(), {"--max-tokens", "24"});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  // The server runs as `nobody` when the test runs as root, so that file permissions apply to it.
  void RunAsUnprivileged(ServerProcess& srv) {
    if (::geteuid() != 0) return;
    for (const std::string& p : {kBin, kFx + "/tinyvocab/model.safetensors", dir_}) {
      const std::string dir = ClosedToOthers(p);
      ASSERT_TRUE(dir.empty()) << "uid " << kNobody << " cannot reach " << p << " (" << dir
                               << " is closed to others): build and test outside a private directory";
    }
    ::mkdir(data_.c_str(), 0755);
    ASSERT_EQ(::chown(data_.c_str(), kNobody, kNobody), 0) << std::strerror(errno);
    srv.child_setup = [] {
      if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(126);
    };
  }
  // Submits a job and waits for it to end; returns its final status JSON.
  Json RunJob(httplib::Client& cli, const std::string& pdf, double deadline_s = 60) {
    auto t = cli.Post("/tasks", Upload(pdf));
    EXPECT_TRUE(t && t->status == 202) << (t ? t->body : "no response");
    if (!t || t->status != 202) return Json();
    const std::string id = Json::parse(t->body)["task_id"];
    Json st;
    Eventually(
        [&] {
          st = JsonOf(cli.Get("/tasks/" + id));
          return st.is_object() && (st["status"] == "done" || st["status"] == "failed");
        },
        deadline_s);
    return st;
  }
  std::string Metrics(const ServerProcess& srv) {
    auto cli = srv.Client();
    cli.set_read_timeout(10, 0);
    auto m = cli.Get("/metrics");
    return m && m->status == 200 ? "\n" + m->body : std::string();
  }

  std::string dir_, replay_, data_;
};

// ---- the job store's disk is full ------------------------------------------------------------------

// Restores this process's file size limit (and SIGXFSZ) when it goes out of scope.
class OwnFileSizeLimit {
 public:
  explicit OwnFileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_sig_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{bytes, old_.rlim_max};
    ok_ = ::setrlimit(RLIMIT_FSIZE, &lim) == 0;
  }
  ~OwnFileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_sig_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  sighandler_t old_sig_;
  bool ok_ = false;
};

TEST_F(FaultTest, SqliteStoreReportsAFullDiskAndRecovers) {
  ::mkdir(data_.c_str(), 0755);
  auto store = server::OpenSqliteJobStore(data_ + "/jobs.sqlite3");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto job = [](const std::string& id) {
    server::Job j;
    j.id = id;
    j.status = "queued";
    j.created = j.updated = server::NowSeconds();
    j.filename = "doc.pdf";
    return j;
  };
  ASSERT_TRUE((*store)->Insert(job("before"), nullptr, nullptr).ok());
  auto claimed = (*store)->ClaimNext("w", 30);
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  {
    OwnFileSizeLimit full(1);
    ASSERT_TRUE(full.ok());
    Status ins = (*store)->Insert(job("during"), nullptr, nullptr);
    EXPECT_EQ(ins.code(), StatusCode::kStorageFull) << ins.ToString();
    EXPECT_NE(ins.message().find(std::strerror(EFBIG)), std::string::npos) << ins.ToString();
    auto fin = (*store)->Finish("before", "w", true, "", "", {});
    EXPECT_FALSE(fin.ok());
    // Reads still work.
    auto got = (*store)->Get("before");
    ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
    EXPECT_EQ((*got)->status, "running");
    EXPECT_TRUE((*store)->CountByStatus("queued").ok());
  }
  // Space again: the same connection writes.
  EXPECT_TRUE((*store)->Insert(job("after"), nullptr, nullptr).ok());
  auto fin = (*store)->Finish("before", "w", true, "", "", {});
  ASSERT_TRUE(fin.ok()) << fin.status().ToString();
  EXPECT_TRUE(*fin);
  auto during = (*store)->Get("during");
  ASSERT_TRUE(during.ok());
  EXPECT_FALSE(during->has_value());
  EXPECT_EQ(*(*store)->CountByStatus("queued"), 1);
}

TEST_F(FaultTest, DiskFullSubmissionsGet507AndTheServerRecovers) {
  ServerProcess srv;
  ASSERT_TRUE(srv.Start(Args({"--job-workers", "1"}), dir_ + "/log")) << srv.log();
  auto cli = srv.Client();
  Json before = RunJob(cli, Pdf(1));
  ASSERT_EQ(before.value("status", ""), "done") << before.dump();
  const std::string id = before["task_id"];

  // 1. The upload fits but the database (its WAL is past the limit by now) cannot grow.
  const std::string small = Pdf(1);
  ASSERT_LT(small.size(), 4096u);
  ASSERT_TRUE(LimitFileSize(srv.pid(), 4096)) << std::strerror(errno);
  EXPECT_TRUE(IsStorageError(cli.Post("/tasks", Upload(small)), {507}));
  // 2. Nothing can be written at all.
  ASSERT_TRUE(LimitFileSize(srv.pid(), 1));
  EXPECT_TRUE(IsStorageError(cli.Post("/tasks", Upload(small)), {507}));
  EXPECT_TRUE(IsStorageError(cli.Post("/file_parse", Upload(small)), {507}));

  // What needs no storage keeps answering; jobs stored before stay readable.
  EXPECT_TRUE(Alive(srv.pid()));
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;
  EXPECT_EQ(cli.Get("/v1/models")->status, 200);
  Json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}};
  auto c = cli.Post("/v1/chat/completions", chat.dump(), "application/json");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200) << c->body;
  auto st = cli.Get("/tasks/" + id);
  ASSERT_TRUE(st);
  EXPECT_EQ(JsonOf(st).value("status", ""), "done") << st->body;
  auto result = cli.Get("/tasks/" + id + "/result");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_NE(result->body.find("Title 1"), std::string::npos);
  EXPECT_GE(Metric(Metrics(srv), "mineru_storage_errors_total{kind=\"full\"}"), 3);

  // Space again: new submissions succeed without a restart.
  ASSERT_TRUE(LimitFileSize(srv.pid(), RLIM_INFINITY));
  EXPECT_EQ(RunJob(cli, small).value("status", ""), "done");
  auto parsed = cli.Post("/file_parse", Upload(small));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->status, 200) << parsed->body;
  EXPECT_EQ(srv.Stop(SIGTERM), 0);
}

// How long a job may take to reach a state: a bound, not a sleep (~56 s alone under TSan for the
// disk-full job below, 8 s in a release build).
constexpr double kJobStateWaitS = 60.0 * kSanitizerWaitFactor;

TEST_F(FaultTest, JobRunningWhenTheDiskFillsEndsFailed) {
  ServerProcess srv;
  ASSERT_TRUE(srv.Start(Args({"--job-workers", "1", "--replay-delay-ms", "1000"}), dir_ + "/log"))
      << srv.log();
  auto cli = srv.Client();
  auto t = cli.Post("/tasks", Upload(Pdf(6)));
  ASSERT_TRUE(t && t->status == 202);
  const std::string id = Json::parse(t->body)["task_id"];
  Json st;
  ASSERT_TRUE(Eventually(
      [&] {
        st = JsonOf(cli.Get("/tasks/" + id));
        return st.value("status", "") == "running" &&
               st.value("progress", Json::object()).value("pages_done", 0) >= 1;
      },
      kJobStateWaitS))
      << st.dump();
  ASSERT_TRUE(LimitFileSize(srv.pid(), 1));
  // The outputs cannot be written and the store cannot record the outcome either: the job shows
  // as failed (from memory) with the reason, instead of "running" forever.
  ASSERT_TRUE(Eventually(
      [&] {
        st = JsonOf(cli.Get("/tasks/" + id));
        return st.value("status", "") == "failed";
      },
      kJobStateWaitS))
      << st.dump();
  EXPECT_NE(st.value("error", "").find("storage is full"), std::string::npos) << st.dump();
  EXPECT_TRUE(Alive(srv.pid()));
  EXPECT_EQ(Metric(Metrics(srv), "mineru_jobs_finished_total{status=\"failed\"}"), 0);  // not recorded yet
  // Space again: the failure is recorded, and the next job runs.
  ASSERT_TRUE(LimitFileSize(srv.pid(), RLIM_INFINITY));
  EXPECT_TRUE(Eventually(
      [&] { return Metric(Metrics(srv), "mineru_jobs_finished_total{status=\"failed\"}") == 1; }, 60));
  EXPECT_EQ(JsonOf(cli.Get("/tasks/" + id)).value("status", ""), "failed");
  EXPECT_EQ(RunJob(cli, Pdf(1)).value("status", ""), "done");
  srv.Stop(SIGTERM);
  // The store agrees.
  auto store = server::OpenSqliteJobStore(data_ + "/jobs.sqlite3");
  ASSERT_TRUE(store.ok());
  auto j = (*store)->Get(id);
  ASSERT_TRUE(j.ok() && j->has_value());
  EXPECT_EQ((*j)->status, "failed");
}

// ---- the job store is read-only --------------------------------------------------------------------

TEST_F(FaultTest, ReadOnlyStoreRefusesToStart) {
  {  // A store with one finished job.
    ServerProcess srv;
    RunAsUnprivileged(srv);
    ASSERT_TRUE(srv.Start(Args(), dir_ + "/log0")) << srv.log();
    auto cli = srv.Client();
    ASSERT_EQ(RunJob(cli, Pdf(1)).value("status", ""), "done");
    ASSERT_EQ(srv.Stop(SIGTERM), 0);
  }
  auto refuses = [&](const std::string& log, const std::string& why) {
    ServerProcess srv;
    RunAsUnprivileged(srv);
    ASSERT_FALSE(srv.Start(Args(), log, 30)) << "started on a read-only store";
    const int status = srv.exit_status();
    ASSERT_TRUE(WIFEXITED(status)) << "not a clean exit: wait status " << status << "\n" << srv.log();
    EXPECT_NE(WEXITSTATUS(status), 0);
    const std::string out = srv.log();
    const size_t at = out.find("error: ");
    ASSERT_NE(at, std::string::npos) << out;
    const std::string line = out.substr(at, out.find('\n', at) - at);
    EXPECT_NE(line.find(why), std::string::npos) << line;
    EXPECT_EQ(out.find("terminate called"), std::string::npos) << out;
  };
  // The database file alone is read-only.
  ASSERT_EQ(::chmod((data_ + "/jobs.sqlite3").c_str(), 0444), 0);
  refuses(dir_ + "/log1", "read-only");
  // The whole data directory is.
  for (const std::string& d : {data_, data_ + "/jobs"}) ASSERT_EQ(::chmod(d.c_str(), 0555), 0);
  refuses(dir_ + "/log2", "not writable");
}

TEST_F(FaultTest, StoreTurningReadOnlyWhileRunning) {
  ServerProcess srv;
  RunAsUnprivileged(srv);
  ASSERT_TRUE(srv.Start(Args(), dir_ + "/log")) << srv.log();
  auto cli = srv.Client();
  Json before = RunJob(cli, Pdf(1));
  ASSERT_EQ(before.value("status", ""), "done");
  // The server keeps its open database handle (the kernel checks permissions at open), but new
  // job files cannot be created any more.
  for (const std::string& d : {data_, data_ + "/jobs"}) ASSERT_EQ(::chmod(d.c_str(), 0555), 0);
  ASSERT_EQ(::chmod((data_ + "/jobs.sqlite3").c_str(), 0444), 0);
  EXPECT_TRUE(IsStorageError(cli.Post("/tasks", Upload(Pdf(1))), {503}));
  EXPECT_TRUE(IsStorageError(cli.Post("/file_parse", Upload(Pdf(1))), {503}));
  EXPECT_TRUE(Alive(srv.pid()));
  EXPECT_EQ(cli.Get("/health")->status, 200);
  EXPECT_EQ(JsonOf(cli.Get("/tasks/" + before["task_id"].get<std::string>())).value("status", ""), "done");
  // Permissions back: submissions succeed again.
  for (const std::string& d : {data_, data_ + "/jobs"}) ASSERT_EQ(::chmod(d.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((data_ + "/jobs.sqlite3").c_str(), 0644), 0);
  EXPECT_EQ(RunJob(cli, Pdf(1)).value("status", ""), "done");
  auto parsed = cli.Post("/file_parse", Upload(Pdf(1)));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->status, 200) << parsed->body;
  EXPECT_EQ(srv.Stop(SIGTERM), 0);
}

// ---- slow clients ----------------------------------------------------------------------------------

TEST_F(FaultTest, SlowlorisIsClosedAfterTheReadTimeout) {
  ServerProcess srv;
  // 5 s for a head: the /health request below has seconds of margin even on a loaded machine.
  ASSERT_TRUE(srv.Start(Args({"--read-timeout-s", "5"}), dir_ + "/log")) << srv.log();
  // A body that stalls half-way (it times out meanwhile, checked below).
  RawConn body(srv.port());
  ASSERT_TRUE(
      body.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Content-Length: 100\r\n\r\n{\"messa"));
  // A head dribbled a byte every 100 ms, never finished.
  std::atomic<bool> closed{false}, started{false};
  std::string answer;
  double lasted = 0;
  std::thread slow([&] {
    const auto t0 = Clock::now();
    RawConn c(srv.port());
    const std::string head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    for (size_t i = 0; Seconds(t0) < 30; ++i) {
      if (!c.Send(std::string(1, i < head.size() ? head[i] : 'a')) ||
          !c.Poll(0.1, &answer)) {  // the dribble pace
        closed = true;
        break;
      }
      started = true;
    }
    lasted = Seconds(t0);
  });
  // Others are served meanwhile.
  ASSERT_TRUE(Eventually([&] { return started.load(); }, 10));
  auto h = srv.Client().Get("/health");
  EXPECT_FALSE(closed.load()) << "closed before the others were served";
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  slow.join();
  EXPECT_TRUE(closed.load()) << "the dribbling connection is still open after 30 s";
  EXPECT_GE(lasted, 4.5) << "closed before the read timeout";
  EXPECT_NE(answer.find("HTTP/1.1 408"), std::string::npos) << answer;

  // The body that stalled is closed too.
  std::string got;
  EXPECT_TRUE(body.ReadUntilClosed(30, &got)) << "the stalled body's connection is still open";
  EXPECT_NE(got.find("HTTP/1.1 408"), std::string::npos) << got;
  // A head that never ends is cut off at 64 KiB.
  RawConn huge(srv.port());
  huge.Send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(80 << 10, 'a'));
  got.clear();
  EXPECT_TRUE(huge.ReadUntilClosed(30, &got));
  EXPECT_NE(got.find("HTTP/1.1 431"), std::string::npos) << got.substr(0, 200);
  const std::string m = Metrics(srv);
  EXPECT_GE(Metric(m, "mineru_http_connections_closed_total{reason=\"head_timeout\"}"), 1) << m;
  EXPECT_GE(Metric(m, "mineru_http_connections_closed_total{reason=\"read_timeout\"}"), 1) << m;
}

TEST_F(FaultTest, MoreStalledConnectionsThanThreadsDoNotBlockOthers) {
  ServerProcess srv;
  ASSERT_TRUE(srv.Start(Args({"--http-threads", "8", "--read-timeout-s", "120"}), dir_ + "/log"))
      << srv.log();
  // Three times the thread count stall in their heads, as many again in their bodies.
  std::vector<std::unique_ptr<RawConn>> stalled;
  for (int i = 0; i < 24; ++i) {
    stalled.push_back(std::make_unique<RawConn>(srv.port()));
    ASSERT_TRUE(stalled.back()->Send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    stalled.push_back(std::make_unique<RawConn>(srv.port()));
    ASSERT_TRUE(
        stalled.back()->Send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Content-Length: 1000\r\n\r\n{\"messages\""));
  }
  double open = 0;
  ASSERT_TRUE(
      Eventually([&] { return (open = Metric(Metrics(srv), "mineru_http_connections_open")) >= 49; }, 30))
      << open;
  // Everyone else is served (the stalled ones have 120 s before they time out).
  auto cli = srv.Client();
  cli.set_read_timeout(20, 0);
  auto h = cli.Get("/health");
  ASSERT_TRUE(h) << httplib::to_string(h.error());
  EXPECT_EQ(h->status, 200);
  Json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}};
  auto c = cli.Post("/v1/chat/completions", chat.dump(), "application/json");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200) << c->body;
  auto p = cli.Post("/file_parse", Upload(Pdf(1)));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 200) << p->body;
  EXPECT_GE(Metric(Metrics(srv), "mineru_http_connections_open"), 49)
      << "the stalled connections went away early";
}

// Sends GET /health on c and reads the whole answer; its status, or -1 (no complete answer).
int AnsweredStatus(RawConn& c) {
  if (!c.Send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")) return -1;
  const std::string got = c.ReadUntil(10, [](const std::string& s) {
    const size_t end = s.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const size_t at = s.find("Content-Length: ");
    return at != std::string::npos && at < end &&
           s.size() >= end + 4 + std::strtoul(s.c_str() + at + 16, nullptr, 10);
  });
  return got.find("\r\n\r\n") == std::string::npos ? -1 : FirstStatus(got);
}

TEST_F(FaultTest, ConnectionsOverTheCapAreAnsweredAtOnce) {
  ServerProcess srv;
  ASSERT_TRUE(srv.Start(Args({"--max-connections", "4"}), dir_ + "/log")) << srv.log();
  // Four connections the server has certainly counted: each is answered one whole request (the
  // answer proves it was accepted) and then holds a head half sent. A connection the server has
  // not yet closed (Start's probe, one answered just before) may still count for a moment; a
  // connection refused because of it is simply opened again.
  std::vector<std::unique_ptr<RawConn>> held;
  std::string refused;
  ASSERT_TRUE(Eventually(
      [&] {
        auto c = std::make_unique<RawConn>(srv.port());
        const int status = AnsweredStatus(*c);
        if (status != 200) {
          refused = std::to_string(status);
          return false;
        }
        if (!c->Send("GET /health HTTP/1.1\r\n")) return false;
        held.push_back(std::move(c));
        return held.size() == 4;
      },
      30))
      << "held " << held.size() << ", last refused with " << refused;
  std::string last = "no response";
  EXPECT_TRUE(Eventually(
      [&] {
        httplib::Client cli("127.0.0.1", srv.port());
        cli.set_read_timeout(10, 0);
        auto r = cli.Get("/health");
        last = r ? std::to_string(r->status) + " " + r->body : "no response";
        return r && r->status == 503;
      },
      30))
      << last;
  EXPECT_NE(last.find("too many open connections"), std::string::npos) << last;
  held.clear();
  EXPECT_TRUE(Eventually(
      [&] {
        auto h = srv.Client().Get("/health");
        return h && h->status == 200;
      },
      30));
  EXPECT_GE(Metric(Metrics(srv), "mineru_http_connections_closed_total{reason=\"over_capacity\"}"), 1);
}

TEST_F(FaultTest, StreamNobodyReadsIsCancelledAfterTheWriteTimeout) {
  ServerProcess srv;
  // Small socket buffers on both sides, so that they fill after a few hundred events even with a
  // slow machine's generation speed (the kernel would otherwise queue megabytes).
  ASSERT_TRUE(srv.Start(Args({"--write-timeout-s", "2", "--send-buffer-kb", "16"}), dir_ + "/log"))
      << srv.log();
  Json req = {{"messages", {{{"role", "user"}, {"content", "Never stop."}}}},
              {"max_tokens", 16384},
              {"ignore_eos", true},
              {"stream", true}};  // minutes, unless cancelled
  const std::string body = req.dump();
  RawConn deaf(srv.port(), 4096);  // a small window, and nothing is ever read
  ASSERT_TRUE(
      deaf.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Content-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body));
  auto cli = srv.Client();
  auto running = [&] {
    auto h = cli.Get("/health");
    return h && h->status == 200 ? JsonOf(h)["queue"]["running"].get<int>() : -1;
  };
  ASSERT_TRUE(Eventually([&] { return running() >= 1; }, 30));
  // Others are served while it is stuck.
  EXPECT_EQ(cli.Get("/v1/models")->status, 200);
  // The send buffers fill, the write times out, and the generation is cancelled.
  EXPECT_TRUE(Eventually([&] { return running() == 0; }, 180)) << "the generation still runs";
  // The counters are bumped around the cancel (the disconnect just before it, the closed
  // connection once the HTTP worker is back from the request), so they are polled for.
  std::string m;
  EXPECT_TRUE(Eventually(
      [&] {
        m = Metrics(srv);
        return Metric(m, "mineru_http_connections_closed_total{reason=\"write_timeout\"}") >= 1 &&
               Metric(m, "mineru_client_disconnects_total") >= 1;
      },
      30))
      << m;
  EXPECT_EQ(Metric(m, "mineru_client_disconnects_total"), 1) << m;
  Json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}};
  auto c = cli.Post("/v1/chat/completions", chat.dump(), "application/json");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200) << c->body;
}

TEST_F(FaultTest, DownloadNobodyReadsIsDroppedAfterTheWriteTimeout) {
  const std::string web = dir_ + "/web";
  ::mkdir(web.c_str(), 0755);
  ASSERT_TRUE(WriteStringToFile(web + "/index.html", "<!doctype html>").ok());
  ASSERT_TRUE(WriteStringToFile(web + "/big.bin", std::string(64u << 20, 'x')).ok());
  ServerProcess srv;
  ASSERT_TRUE(srv.Start(Args({"--write-timeout-s", "2", "--web-dir", web}), dir_ + "/log")) << srv.log();
  RawConn deaf(srv.port(), 4096);
  ASSERT_TRUE(deaf.Send("GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  auto cli = srv.Client();
  EXPECT_EQ(cli.Get("/health")->status, 200);
  EXPECT_TRUE(Eventually(
      [&] {
        return Metric(Metrics(srv), "mineru_http_connections_closed_total{reason=\"write_timeout\"}") >= 1;
      },
      60))
      << Metrics(srv);
  std::string got;  // what was queued before the server gave up, then the end
  EXPECT_TRUE(deaf.ReadUntilClosed(30, &got)) << "the dropped download's connection is still open";
  EXPECT_LT(got.size(), 64u << 20);
  EXPECT_EQ(cli.Get("/health")->status, 200);
  ::unlink((web + "/big.bin").c_str());
}

}  // namespace
}  // namespace mineru::testing

namespace mineru::testing {
namespace {

// A PDF of about `bytes` (one page; the rest an unreferenced comment poppler skips).
std::string PaddedPdf(size_t bytes) {
  std::string pdf = Pdf(1);
  const size_t eof = pdf.rfind("%%EOF");
  std::string pad = "%" + std::string(bytes > pdf.size() ? bytes - pdf.size() : 0, 'x') + "\n";
  return pdf.substr(0, eof) + pad + pdf.substr(eof);
}

TEST_F(FaultTest, StoreQuotaExpiresOldestFinishedJobsThenRefusesWith507) {
  ServerProcess srv;
  ASSERT_TRUE(srv.Start(Args({"--max-store-mb", "2", "--job-workers", "1"}), dir_ + "/log")) << srv.log();
  auto cli = srv.Client();
  // Refused uploads (not a document) keep no charge.
  for (int i = 0; i < 6; ++i) {
    auto bad = cli.Post("/tasks", {{"files", std::string(700 << 10, 'x'), "doc.pdf", "application/pdf"}});
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 400) << bad->body;
  }
  auto m0 = cli.Get("/metrics");
  ASSERT_TRUE(m0);
  EXPECT_LT(Metric(m0->body, "mineru_store_bytes"), 100e3) << "refused uploads stayed charged";
  // Finished jobs of ~700 KB each: the third needs room, so the first (oldest) expires.
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    auto t = cli.Post("/tasks", Upload(PaddedPdf(700 << 10)));
    ASSERT_TRUE(t && t->status == 202) << (t ? t->body : "no response");
    ids.push_back(Json::parse(t->body)["task_id"]);
    ASSERT_TRUE(Eventually(
        [&] { return JsonOf(cli.Get("/tasks/" + ids.back())).value("status", "") == "done"; }, 60));
  }
  auto first = cli.Get("/tasks/" + ids[0]);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 404) << "the oldest finished job should have expired";
  auto last = cli.Get("/tasks/" + ids.back());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 200);
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_GE(Metric(m->body, "mineru_jobs_expired_total"), 1) << m->body;
  EXPECT_LE(Metric(m->body, "mineru_store_bytes"), 2.0 * 1048576) << m->body;
  EXPECT_NEAR(Metric(m->body, "mineru_store_quota_bytes"), 2.0 * 1048576, 1e3);
  // An upload larger than the whole quota cannot be made room for: 507, the server's condition.
  auto big = cli.Post("/tasks", Upload(PaddedPdf(3 << 20)));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 507) << big->body;
  EXPECT_NE(big->body.find("--max-store-mb"), std::string::npos) << big->body;
}

TEST_F(FaultTest, AJobPastItsTotalDeadlineFailsAndFreesTheWorker) {
  ServerProcess srv;
  // 6 pages at 400 ms each against a 1 s budget for the whole job.
  ASSERT_TRUE(srv.Start(Args({"--job-timeout-s", "1", "--replay-delay-ms", "400", "--job-workers", "1"}),
                        dir_ + "/log"))
      << srv.log();
  auto cli = srv.Client();
  const Json st = RunJob(cli, Pdf(6));
  EXPECT_EQ(st.value("status", ""), "failed") << st.dump();
  EXPECT_NE(st.value("error", "").find("--job-timeout-s"), std::string::npos) << st.dump();
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(Metric(m->body, "mineru_jobs_deadline_exceeded_total"), 1) << m->body;
  // The worker is free: a one-page job after it finishes.
  EXPECT_EQ(RunJob(cli, Pdf(1)).value("status", ""), "done");
}

}  // namespace
}  // namespace mineru::testing
