// The multi-machine deployment on loopback: a real PostgreSQL (Debian's initdb/postgres, run as the
// `postgres` user when the test runs as root), nginx started from deploy/nginx.conf (ports and paths
// rewritten), and `mineru-cpp serve` workers sharing one job queue (--jobs-db postgresql://…),
// each with its own data directory, parsing with recorded outputs (--replay) and a per-page delay.
//  1. Eight multi-page jobs go in through nginx; one worker is killed with SIGKILL while it parses;
//     every job still ends done exactly once (finishes = 1 in the store), the killed worker's jobs
//     after a second attempt, and every result, page and file is readable through nginx from the
//     surviving worker.
//  0. The PostgreSQL store keeps the lease contract, stores files only for the owner, and hands
//     each job to exactly one of many concurrent claimers (FOR UPDATE SKIP LOCKED).
//  2. A worker told to stop (SIGTERM) mid-job hands the job back at once: another worker finishes it
//     long before the lease (60 s here) would have run out.
//  3. A worker is frozen (SIGSTOP) mid-job until its lease expires and another worker takes the job
//     over and finishes it; when the frozen worker resumes (SIGCONT) its attempt is discarded
//     (mineru_jobs_lease_lost_total), and the job stays finished once.
// Missing PostgreSQL or nginx binaries fail the test (CI installs them), they are not skipped.

#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "../server/server_harness.h"
#include "../util/nginx_conf.h"
#include "../util/pdf_writer.h"
#include "../util/process.h"
#include "../util/replay.h"
#include "job_store_contract.h"

namespace mineru::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kPages = 6;
constexpr int kJobs = 8;

std::string Env(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v && *v ? v : def;
}

bool Executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0; }

// PostgreSQL in a temporary directory on a free loopback port.
class Postgres {
 public:
  bool Start(std::string* err) {
    const std::string bin = Env("MINERU_PG_BIN", "/usr/lib/postgresql/15/bin");
    if (!Executable(bin + "/initdb") || !Executable(bin + "/postgres")) {
      *err = "PostgreSQL server binaries not found in " + bin +
             " (install Debian's postgresql and libpq-dev: scripts/setup.sh; or set MINERU_PG_BIN)";
      return false;
    }
    char tmpl[] = "/tmp/mineru-pg-XXXXXX";
    if (!::mkdtemp(tmpl)) {
      *err = "mkdtemp failed";
      return false;
    }
    dir_ = tmpl;
    if (::geteuid() == 0) {  // postgres refuses to run as root
      passwd* pw = ::getpwnam("postgres");
      if (!pw) {
        *err = "running as root and there is no 'postgres' user to run PostgreSQL as (install postgresql)";
        return false;
      }
      uid_ = pw->pw_uid;
      gid_ = pw->pw_gid;
      if (::chown(dir_.c_str(), uid_, gid_) != 0) {
        *err = "cannot chown " + dir_;
        return false;
      }
    }
    log_ = dir_ + "/postgres.log";
    const int rc = WaitExit(Spawn({bin + "/initdb", "-D", dir_ + "/data", "-U", "mineru", "--auth=trust",
                                   "-E", "UTF8", "--no-sync", "--no-instructions"},
                                  log_, uid_, gid_, dir_));
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
      *err = "initdb failed: " + Log();
      return false;
    }
    port_ = FreePort();
    pid_ = Spawn({bin + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port_), "-k", dir_, "-c",
                  "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c",
                  "full_page_writes=off", "-c", "max_connections=100"},
                 log_, uid_, gid_, dir_);
    const std::string admin = "postgresql://mineru@127.0.0.1:" + std::to_string(port_) + "/postgres";
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (PQping(admin.c_str()) != PQPING_OK) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        *err = "postgres exited: " + Log();
        return false;
      }
      if (Clock::now() > end) {
        *err = "postgres did not accept connections within 60 s: " + Log();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition, with a deadline
    }
    PGconn* c = PQconnectdb(admin.c_str());
    PGresult* r = PQexec(c, "CREATE DATABASE mineru");
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) *err = std::string("CREATE DATABASE: ") + PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
    if (!ok) return false;
    db_ = PQconnectdb(Uri().c_str());
    if (PQstatus(db_) != CONNECTION_OK) {
      *err = std::string("connect: ") + PQerrorMessage(db_);
      return false;
    }
    return true;
  }
  // The password is ignored (trust authentication); it is here to exercise the URI form.
  std::string Uri() const {
    return "postgresql://mineru:secret@127.0.0.1:" + std::to_string(port_) + "/mineru";
  }
  std::string Log() const { return ReadFileToString(log_).ok() ? *ReadFileToString(log_) : ""; }

  // Runs sql; rows of text values (empty on error, with the error in *err when given).
  std::vector<std::vector<std::string>> Query(const std::string& sql,
                                              const std::vector<std::string>& params = {}) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    PGresult* r = PQexecParams(db_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                               nullptr, nullptr, 0);
    std::vector<std::vector<std::string>> rows;
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
      for (int i = 0; i < PQntuples(r); ++i) {
        rows.emplace_back();
        for (int k = 0; k < PQnfields(r); ++k) rows.back().push_back(PQgetvalue(r, i, k));
      }
    } else {
      ADD_FAILURE() << sql << ": " << PQerrorMessage(db_);
    }
    PQclear(r);
    return rows;
  }

  ~Postgres() {
    if (db_) PQfinish(db_);
    StopProcess(pid_, SIGINT, 30);  // fast shutdown
    if (!dir_.empty() && dir_.rfind("/tmp/mineru-pg-", 0) == 0)
      std::system(("rm -rf '" + dir_ + "'").c_str());
  }

 private:
  std::string dir_, log_;
  int port_ = 0;
  pid_t pid_ = -1;
  uid_t uid_ = static_cast<uid_t>(-1);
  gid_t gid_ = static_cast<gid_t>(-1);
  PGconn* db_ = nullptr;
};

// A server's job-owner id, from its start-up log line (/health does not show it: it carries a
// random nonce). "" when absent.
std::string WorkerIdOf(const ServerProcess& w) {
  const std::string log = w.log(), key = "worker id ";
  const size_t at = log.find(key);
  if (at == std::string::npos) return "";
  return log.substr(at + key.size(), log.find('\n', at) - at - key.size());
}

pid_t WorkerPid(const std::string& worker_id) {  // "<host>:<pid>:<random>"
  const size_t a = worker_id.find(':'), b = worker_id.rfind(':');
  if (a == std::string::npos || b == a) return -1;
  return static_cast<pid_t>(std::atoi(worker_id.substr(a + 1, b - a - 1).c_str()));
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

double MetricValue(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? 0 : std::atof(text.c_str() + at + name.size() + 2);
}

class MultiWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(pg_.Start(&err)) << err;
    dir_ = TempDir("multi_worker");
    replay_ = WriteReplay(dir_, kPages);
  }
  std::vector<std::string> WorkerArgs(int i, const std::string& lease_s = "2") const {
    return {"--model", kFx + "/tinyvocab", "--data-dir", dir_ + "/data" + std::to_string(i), "--jobs-db",
            pg_.Uri(), "--replay", replay_,
            // MinerU 3.4.4's files: the checks read model_output (one entry per page parsed).
            "--vl-utils", "1.2", "--replay-delay-ms", "400", "--job-workers", "2", "--job-lease-seconds",
            lease_s};
  }
  // The store's row for a job: status, attempts, finishes, worker_id, pages_done.
  std::map<std::string, std::string> Row(const std::string& id) {
    auto rows = pg_.Query(
        "SELECT status, attempts, finishes, coalesce(worker_id, ''), pages_done FROM jobs WHERE id = $1",
        {id});
    if (rows.size() != 1) return {};
    return {{"status", rows[0][0]},
            {"attempts", rows[0][1]},
            {"finishes", rows[0][2]},
            {"worker_id", rows[0][3]},
            {"pages_done", rows[0][4]}};
  }
  // Waits until every job in ids is done or failed (or the deadline passes); true when all are.
  bool WaitFinished(const std::vector<std::string>& ids, double deadline_s) {
    const auto end = Clock::now() + std::chrono::duration<double>(deadline_s);
    while (Clock::now() < end) {
      size_t finished = 0;
      for (const auto& id : ids) {
        const std::string s = Row(id)["status"];
        finished += (s == "done" || s == "failed");
      }
      if (finished == ids.size()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // The result, pages and files of a finished job, read through client c.
  void CheckResult(httplib::Client& c, const std::string& id, const std::string& name) {
    auto st = c.Get("/tasks/" + id);
    ASSERT_TRUE(st);
    ASSERT_EQ(st->status, 200) << st->body;
    Json s = Json::parse(st->body);
    EXPECT_EQ(s["status"], "done") << s.dump();
    EXPECT_GE(s["attempts"].get<int>(), 1);
    EXPECT_EQ(s["progress"]["pages_done"], kPages);
    auto r = c.Get("/tasks/" + id + "/result");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
    Json j = Json::parse(r->body);
    const Json& doc = j["results"][name];
    const std::string md = doc["md_content"].get<std::string>();
    for (int k = 1; k <= kPages; ++k) {
      EXPECT_EQ(Count(md, "Page Title " + std::to_string(k) + "\n"), 1u) << id << " page " << k << "\n" << md;
    }
    EXPECT_EQ(Json::parse(doc["model_output"].get<std::string>()).size(), static_cast<size_t>(kPages));
    EXPECT_EQ(Json::parse(doc["middle_json"].get<std::string>())["pdf_info"].size(),
              static_cast<size_t>(kPages));
    EXPECT_TRUE(Json::parse(doc["content_list"].get<std::string>()).is_array());
    EXPECT_FALSE(doc["images"].empty());  // the table crops
    for (int n = 0; n < kPages; ++n) {
      auto page = c.Get("/tasks/" + id + "/pages/" + std::to_string(n));
      ASSERT_TRUE(page);
      EXPECT_EQ(page->status, 200) << "page " << n;
      EXPECT_EQ(page->body.substr(1, 3), "PNG");
    }
    EXPECT_EQ(c.Get("/tasks/" + id + "/pages/" + std::to_string(kPages))->status, 404);
    auto md_file = c.Get("/tasks/" + id + "/files/" + name + ".md");
    ASSERT_TRUE(md_file);
    EXPECT_EQ(md_file->status, 200);
    EXPECT_EQ(md_file->body, md);
    // In the store: the upload, each page image once, the four result files.
    auto files = pg_.Query(
        "SELECT count(*) FILTER (WHERE name LIKE '%/pages/page_%'), count(DISTINCT name) FILTER (WHERE name "
        "LIKE "
        "'%/pages/page_%'), count(*) FILTER (WHERE name LIKE 'upload/%'), count(*) FILTER (WHERE name IN "
        "($2, $3, $4, "
        "$5)) FROM job_files WHERE job_id = $1",
        {id, name + "/" + name + ".md", name + "/" + name + "_model.json", name + "/" + name + "_middle.json",
         name + "/" + name + "_content_list.json"});
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0][0], std::to_string(kPages));
    EXPECT_EQ(files[0][1], std::to_string(kPages));
    EXPECT_EQ(files[0][2], "1");
    EXPECT_EQ(files[0][3], "4");
  }

  Postgres pg_;
  std::string dir_, replay_;
};

TEST_F(MultiWorkerTest, PostgresStoreKeepsTheContract) {
  auto s = server::JobStore::Open(pg_.Uri());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_STREQ((*s)->kind(), "postgresql");
  EXPECT_TRUE((*s)->stores_files());
  CheckJobStoreContract(**s, /*shared=*/true);
  // A second store on the same database (another server starting) finds the schema in place.
  auto again = server::JobStore::Open(pg_.Uri());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

TEST_F(MultiWorkerTest, PostgresStoreKeepsFilesForTheOwnerOnly) {
  auto opened = server::JobStore::Open(pg_.Uri());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  server::JobStore& s = **opened;
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary += static_cast<char>(i % 256);  // every byte value, NULs included
  const server::Job j = ContractJob("x");
  std::string existing;
  ASSERT_TRUE(s.Insert(j, &binary, &existing).ok());
  auto up = s.ReadFile(j.id, "upload/x.pdf");
  ASSERT_TRUE(up.ok() && up->has_value()) << up.status().ToString();
  EXPECT_EQ(**up, binary);
  auto claimed = s.ClaimNext("w1", 30);
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  const std::vector<server::JobFile> page = {{"x/pages/page_0001.png", binary + "1"}};
  EXPECT_FALSE(*s.PutFiles(j.id, "w2", page));
  EXPECT_TRUE(*s.PutFiles(j.id, "w1", page));
  EXPECT_TRUE(*s.PutFiles(j.id, "w1", page));  // again: replaced, not duplicated
  auto pages = s.ReadFiles(j.id, "x/pages/", true);
  ASSERT_TRUE(pages.ok());
  ASSERT_EQ(pages->size(), 1u);
  EXPECT_EQ((*pages)[0].data, binary + "1");
  EXPECT_FALSE(*s.Finish(j.id, "w2", true, "", "", {{"x/x.md", "zombie"}}));
  EXPECT_TRUE(*s.Finish(j.id, "w1", true, "", "", {{"x/x.md", "# X"}, {"x/images/a_b.jpg", binary}}));
  EXPECT_FALSE(*s.Finish(j.id, "w1", true, "", "", {{"x/x.md", "late"}}));
  EXPECT_EQ(**s.ReadFile(j.id, "x/x.md"), "# X");
  EXPECT_FALSE(s.ReadFile(j.id, "x/missing.md")->has_value());
  auto all = s.ReadFiles(j.id, "x/", false);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);  // the page, the markdown, the image ("_" is not a wildcard)
  EXPECT_EQ(s.ReadFiles(j.id, "x/images/a_", true)->size(), 1u);
  EXPECT_EQ(s.ReadFiles(j.id, "x/images/a%", true)->size(), 0u);
  // Retention takes the files with the job.
  ASSERT_TRUE(s.DeleteFinishedBefore(server::NowSeconds() + 60).ok());
  EXPECT_EQ(pg_.Query("SELECT count(*) FROM job_files WHERE job_id = $1", {j.id})[0][0], "0");
}

TEST_F(MultiWorkerTest, ConcurrentClaimersTakeEachJobOnce) {
  auto opened = server::JobStore::Open(pg_.Uri());
  ASSERT_TRUE(opened.ok());
  constexpr int kMany = 60;
  for (int i = 0; i < kMany; ++i) {
    std::string existing;
    ASSERT_TRUE((*opened)->Insert(ContractJob("j" + std::to_string(i)), nullptr, &existing).ok());
  }
  // Four "servers" (each its own store and connection pool), two claiming threads each.
  std::vector<std::unique_ptr<server::JobStore>> stores;
  for (int k = 0; k < 4; ++k) stores.push_back(std::move(server::JobStore::Open(pg_.Uri()).value()));
  std::mutex mu;
  std::map<std::string, int> claims;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      server::JobStore& s = *stores[t % 4];
      const std::string me = "w" + std::to_string(t);
      for (;;) {
        auto c = s.ClaimNext(me, 30);
        if (!c.ok()) {
          ++errors;
          return;
        }
        if (!c->has_value()) return;
        if (!*s.Finish((*c)->id, me, true, "", "", {})) ++errors;
        std::lock_guard<std::mutex> lock(mu);
        ++claims[(*c)->id];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(claims.size(), static_cast<size_t>(kMany));
  for (const auto& [id, n] : claims) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(
      pg_.Query("SELECT count(*) FROM jobs WHERE status = 'done' AND finishes = 1 AND attempts = 1")[0][0],
      std::to_string(kMany));
}

TEST_F(MultiWorkerTest, KilledWorkerJobsCompleteExactlyOnce) {
  ServerProcess w[2];
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(w[i].Start(WorkerArgs(i), dir_ + "/w" + std::to_string(i) + ".log")) << w[i].log();
  for (int i = 0; i < 2; ++i)
    EXPECT_NE(w[i].log().find("job store: postgresql"), std::string::npos) << w[i].log();
  Nginx ng;
  std::string err;
  ASSERT_TRUE(ng.Start(dir_, w[0].port(), w[1].port(), &err)) << err;
  auto lb = ng.Client();

  // Submissions through nginx with a document id for affinity, all but the last with an
  // Idempotency-Key (the last takes nginx's never-resent path, on a connection of its own).
  std::vector<std::string> ids, names;
  auto submit = [&](int i, bool keyed) {
    std::vector<PdfPage> pages;
    for (int k = 0; k < kPages; ++k)
      pages.push_back(TextPage("Doc " + std::to_string(i) + " page " + std::to_string(k)));
    const std::string name = "doc" + std::to_string(i);
    httplib::Headers h = {{"X-Document-Id", "document-" + std::to_string(i)}};
    if (keyed) h.insert({"Idempotency-Key", "key-" + std::to_string(::getpid()) + "-" + std::to_string(i)});
    auto r =
        lb.Post("/tasks", h,
                httplib::MultipartFormDataItems{{"files", MakePdf(pages), name + ".pdf", "application/pdf"}});
    ASSERT_TRUE(r) << "no response from nginx";
    ASSERT_EQ(r->status, 202) << r->body;
    ids.push_back(Json::parse(r->body)["task_id"]);
    names.push_back(name);
  };
  for (int i = 0; i < kJobs; ++i) {
    submit(i, i + 1 < kJobs);
    if (HasFatalFailure()) return;
  }
  // The same key on either replica is the same task (deduplicated in the shared store).
  for (int i = 0; i < 2; ++i) {
    auto c = w[i].Client();
    httplib::Headers h = {{"Idempotency-Key", "key-" + std::to_string(::getpid()) + "-0"}};
    auto r = c.Post(
        "/tasks", h,
        httplib::MultipartFormDataItems{{"files", MakePdf({TextPage("x")}), "doc0.pdf", "application/pdf"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 202);
    EXPECT_EQ(Json::parse(r->body)["task_id"], ids[0]);
    EXPECT_EQ(r->get_header_value("Idempotent-Replayed"), "true");
  }
  EXPECT_EQ(pg_.Query("SELECT count(*) FROM jobs")[0][0], std::to_string(kJobs));

  // Wait until a job is being parsed with at least one page done, then kill its worker hard.
  std::string victim_id;
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (victim_id.empty() && Clock::now() < end) {
    auto rows = pg_.Query(
        "SELECT worker_id FROM jobs WHERE status = 'running' AND pages_done >= 1 AND pages_done < $1 "
        "ORDER BY created LIMIT 1",
        {std::to_string(kPages)});
    if (!rows.empty())
      victim_id = rows[0][0];
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(victim_id.empty()) << "no job was seen running";
  const pid_t victim_pid = WorkerPid(victim_id);
  const int victim = victim_pid == w[0].pid() ? 0 : victim_pid == w[1].pid() ? 1 : -1;
  ASSERT_NE(victim, -1) << victim_id;
  w[victim].Stop(SIGKILL);
  // The jobs it held when it died.
  std::set<std::string> orphaned;
  for (const auto& row :
       pg_.Query("SELECT id FROM jobs WHERE status = 'running' AND worker_id = $1", {victim_id})) {
    orphaned.insert(row[0]);
  }
  EXPECT_FALSE(orphaned.empty());
  // Submissions keep working through nginx with one replica gone, whatever their hash picks, at
  // once: a keyed one may be resent, an unkeyed one goes out on a new connection (refused by the
  // dead replica before anything is sent, then retried); over a kept-alive connection to the dead
  // replica it would fail after being sent, a 502.
  for (int i = kJobs; i < kJobs + 4; ++i) {
    submit(i, i % 2 == 0);
    if (HasFatalFailure()) return;
  }

  // A hang guard, not a speed requirement: the orphaned jobs wait out their lease, then one
  // worker parses every remaining page (minutes under the sanitizers on two loaded cores).
  ASSERT_TRUE(WaitFinished(ids, 600)) << w[1 - victim].log();
  const std::string survivor_id = WorkerIdOf(w[1 - victim]);
  ASSERT_FALSE(survivor_id.empty()) << w[1 - victim].log();
  for (size_t i = 0; i < ids.size(); ++i) {
    auto row = Row(ids[i]);
    EXPECT_EQ(row["status"], "done") << ids[i];
    EXPECT_EQ(row["finishes"], "1") << ids[i] << ": finished more than once (or never)";
    EXPECT_GE(std::atoi(row["attempts"].c_str()), 1);
    if (orphaned.count(ids[i])) {
      EXPECT_GE(std::atoi(row["attempts"].c_str()), 2) << ids[i] << " was running on the killed worker";
      EXPECT_EQ(row["worker_id"], survivor_id) << ids[i];
    }
    CheckResult(lb, ids[i], names[i]);  // through nginx, served by the survivor
  }
  // The killed worker's failures were absorbed by nginx (retries on the next replica).
  auto health = lb.Get("/health");  // answered by the survivor (the other is gone)
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;
}

TEST_F(MultiWorkerTest, DrainingWorkerHandsItsJobOver) {
  ServerProcess w[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(w[i].Start(WorkerArgs(i, "60"), dir_ + "/d" + std::to_string(i) + ".log")) << w[i].log();
  }
  std::vector<PdfPage> pages;
  for (int k = 0; k < kPages; ++k) pages.push_back(TextPage("Drained page " + std::to_string(k)));
  auto r = w[0].Client().Post(
      "/tasks", httplib::MultipartFormDataItems{{"files", MakePdf(pages), "drained.pdf", "application/pdf"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = Json::parse(r->body)["task_id"];
  std::string owner;
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (owner.empty() && Clock::now() < end) {
    auto row = Row(id);
    if (row["status"] == "running" && std::atoi(row["pages_done"].c_str()) >= 1)
      owner = row["worker_id"];
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(owner.empty()) << "the job was not seen running";
  const int drained = WorkerPid(owner) == w[0].pid() ? 0 : 1;
  ASSERT_EQ(WorkerPid(owner), w[drained].pid());
  const int status = w[drained].Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The drained worker joins its job workers before it exits, and a cancelled parse releases its
  // job: once it is gone the job is queued again (or already claimed by the other worker), not
  // left running under the drained worker's 60 s lease.
  const std::string other_id = WorkerIdOf(w[1 - drained]);
  ASSERT_FALSE(other_id.empty()) << w[1 - drained].log();
  auto handed = Row(id);
  EXPECT_TRUE((handed["status"] == "queued" && handed["worker_id"].empty()) ||
              handed["worker_id"] == other_id)
      << "not handed over: status " << handed["status"] << ", worker " << handed["worker_id"] << "\n"
      << w[drained].log();
  EXPECT_NE(handed["worker_id"], owner);
  // A hang guard, not a speed requirement (the other worker parses the whole document again).
  ASSERT_TRUE(WaitFinished({id}, 600)) << w[1 - drained].log();
  auto row = Row(id);
  EXPECT_EQ(row["status"], "done");
  EXPECT_EQ(row["finishes"], "1");
  EXPECT_EQ(row["attempts"], "2");
  EXPECT_EQ(row["worker_id"], other_id);
  auto other = w[1 - drained].Client();
  CheckResult(other, id, "drained");
}

TEST_F(MultiWorkerTest, FrozenWorkerIsOvertakenAndItsLateFinishIsDiscarded) {
  ServerProcess w[2];
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(w[i].Start(WorkerArgs(i), dir_ + "/z" + std::to_string(i) + ".log")) << w[i].log();
  std::vector<PdfPage> pages;
  for (int k = 0; k < kPages; ++k) pages.push_back(TextPage("Frozen page " + std::to_string(k)));
  auto c0 = w[0].Client();
  auto r = c0.Post(
      "/tasks", httplib::MultipartFormDataItems{{"files", MakePdf(pages), "frozen.pdf", "application/pdf"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = Json::parse(r->body)["task_id"];

  std::string owner;
  auto end = Clock::now() + std::chrono::seconds(60);
  while (owner.empty() && Clock::now() < end) {
    auto row = Row(id);
    if (row["status"] == "running" && std::atoi(row["pages_done"].c_str()) >= 1)
      owner = row["worker_id"];
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(owner.empty()) << "the job was not seen running";
  const int frozen = WorkerPid(owner) == w[0].pid() ? 0 : 1;
  ASSERT_EQ(WorkerPid(owner), w[frozen].pid());
  // Page images are stored as pages are done: the other replica already serves the first one.
  auto first_page = w[1 - frozen].Client().Get("/tasks/" + id + "/pages/0");
  ASSERT_TRUE(first_page);
  EXPECT_EQ(first_page->status, 200);
  ::kill(w[frozen].pid(), SIGSTOP);
  // Its lease (2 s) runs out; the other worker claims the job and finishes it.
  ASSERT_TRUE(WaitFinished({id}, 600)) << w[1 - frozen].log();  // a hang guard
  auto row = Row(id);
  EXPECT_EQ(row["status"], "done");
  EXPECT_EQ(row["finishes"], "1");
  EXPECT_GE(std::atoi(row["attempts"].c_str()), 2);
  EXPECT_NE(row["worker_id"], owner);
  // The frozen worker resumes: it must find the job gone and discard its attempt.
  ::kill(w[frozen].pid(), SIGCONT);
  double lost = 0;
  end = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < end) {
    auto m = w[frozen].Client().Get("/metrics");
    if (m && m->status == 200) lost = MetricValue(m->body, "mineru_jobs_lease_lost_total");
    if (lost >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(lost, 1) << w[frozen].log();
  EXPECT_NE(w[frozen].log().find("taken over by another worker"), std::string::npos);
  row = Row(id);
  EXPECT_EQ(row["status"], "done");
  EXPECT_EQ(row["finishes"], "1") << "the late worker finished the job a second time";
  auto other = w[1 - frozen].Client();
  CheckResult(other, id, "frozen");
  auto resumed = w[frozen].Client();
  CheckResult(resumed, id, "frozen");  // any replica serves any job
}

}  // namespace
}  // namespace mineru::testing
