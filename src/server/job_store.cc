#include "server/job_store.h"

#include <sqlite3.h>

#include <chrono>
#include <random>

namespace mineru::server {
namespace {

// RAII statement with typed binds/reads.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& Bind(int i, int v) {
    sqlite3_bind_int(s_, i, v);
    return *this;
  }
  int Step() { return sqlite3_step(s_); }
  std::string Text(int c) {
    const unsigned char* t = sqlite3_column_text(s_, c);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, c))) : "";
  }
  double Real(int c) { return sqlite3_column_double(s_, c); }
  int Int(int c) { return sqlite3_column_int(s_, c); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_;
};

constexpr const char* kColumns =
    "id, status, created, updated, filename, input_path, options, pages_done, pages_total, error, result_dir, "
    "attempts";

Job ReadJob(Stmt& s) {
  Job j;
  j.id = s.Text(0);
  j.status = s.Text(1);
  j.created = s.Real(2);
  j.updated = s.Real(3);
  j.filename = s.Text(4);
  j.input_path = s.Text(5);
  j.options = s.Text(6);
  j.pages_done = s.Int(7);
  j.pages_total = s.Int(8);
  j.error = s.Text(9);
  j.result_dir = s.Text(10);
  j.attempts = s.Int(11);
  return j;
}

Status DbError(sqlite3* db, const std::string& what) {
  const int code = sqlite3_errcode(db);
  const std::string msg = what + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_FULL || code == SQLITE_READONLY || code == SQLITE_IOERR || code == SQLITE_CANTOPEN) {
    return IoError("job store " + msg);
  }
  return InternalError("job store " + msg);
}

}  // namespace

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string NewJobId() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}() ^
                             static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::lock_guard<std::mutex> lock(mu);
  char buf[40];
  const uint64_t a = rng(), b = rng();
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path) {
  std::unique_ptr<JobStore> s(new JobStore());
  if (sqlite3_open_v2(path.c_str(), &s->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = s->db_ ? sqlite3_errmsg(s->db_) : "cannot open";
    return IoError("cannot open job store " + path + ": " + msg);
  }
  sqlite3_busy_timeout(s->db_, 5000);
  MINERU_RETURN_IF_ERROR(s->Exec("PRAGMA journal_mode=WAL"));
  MINERU_RETURN_IF_ERROR(s->Exec("PRAGMA synchronous=NORMAL"));
  MINERU_RETURN_IF_ERROR(s->Exec(
      "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, status TEXT NOT NULL, created REAL, updated REAL, "
      "filename TEXT, input_path TEXT, options TEXT, pages_done INTEGER DEFAULT 0, pages_total INTEGER DEFAULT 0, "
      "error TEXT, result_dir TEXT, attempts INTEGER DEFAULT 0)"));
  MINERU_RETURN_IF_ERROR(s->Exec("CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status, created)"));
  return s;
}

JobStore::~JobStore() {
  if (db_) sqlite3_close(db_);
}

Status JobStore::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "error";
    sqlite3_free(err);
    return DbError(db_, m + " in " + sql.substr(0, 40));
  }
  return Status::Ok();
}

Status JobStore::Insert(const Job& j) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_,
         "INSERT INTO jobs (id, status, created, updated, filename, input_path, options, pages_done, pages_total, "
         "error, result_dir, attempts) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return DbError(db_, "prepare insert");
  s.Bind(1, j.id).Bind(2, j.status).Bind(3, j.created).Bind(4, j.updated).Bind(5, j.filename);
  s.Bind(6, j.input_path).Bind(7, j.options).Bind(8, j.pages_done).Bind(9, j.pages_total).Bind(10, j.error);
  s.Bind(11, j.result_dir).Bind(12, j.attempts);
  if (s.Step() != SQLITE_DONE) return DbError(db_, "insert");
  return Status::Ok();
}

StatusOr<std::optional<Job>> JobStore::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, (std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?").c_str());
  if (!s.ok()) return DbError(db_, "prepare get");
  s.Bind(1, id);
  const int rc = s.Step();
  if (rc == SQLITE_ROW) return std::optional<Job>(ReadJob(s));
  if (rc == SQLITE_DONE) return std::optional<Job>();
  return DbError(db_, "get");
}

StatusOr<std::optional<Job>> JobStore::ClaimNext() {
  std::lock_guard<std::mutex> lock(mu_);
  MINERU_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  std::optional<Job> job;
  {
    Stmt s(db_, (std::string("SELECT ") + kColumns +
                 " FROM jobs WHERE status = 'queued' ORDER BY created LIMIT 1").c_str());
    if (!s.ok()) {
      Exec("ROLLBACK");
      return DbError(db_, "prepare claim");
    }
    if (s.Step() == SQLITE_ROW) job = ReadJob(s);
  }
  if (job) {
    Stmt u(db_, "UPDATE jobs SET status = 'running', attempts = attempts + 1, updated = ? WHERE id = ?");
    u.Bind(1, NowSeconds()).Bind(2, job->id);
    if (u.Step() != SQLITE_DONE) {
      Exec("ROLLBACK");
      return DbError(db_, "claim");
    }
    job->status = "running";
    job->attempts += 1;
  }
  MINERU_RETURN_IF_ERROR(Exec("COMMIT"));
  return job;
}

Status JobStore::UpdateProgress(const std::string& id, int pages_done, int pages_total) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "UPDATE jobs SET pages_done = ?, pages_total = ?, updated = ? WHERE id = ?");
  s.Bind(1, pages_done).Bind(2, pages_total).Bind(3, NowSeconds()).Bind(4, id);
  if (s.Step() != SQLITE_DONE) return DbError(db_, "progress");
  return Status::Ok();
}

Status JobStore::Finish(const std::string& id, bool ok, const std::string& error, const std::string& result_dir) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "UPDATE jobs SET status = ?, error = ?, result_dir = ?, updated = ? WHERE id = ?");
  s.Bind(1, std::string(ok ? "done" : "failed")).Bind(2, error).Bind(3, result_dir).Bind(4, NowSeconds()).Bind(5, id);
  if (s.Step() != SQLITE_DONE) return DbError(db_, "finish");
  return Status::Ok();
}

StatusOr<int> JobStore::RequeueInterrupted() {
  std::lock_guard<std::mutex> lock(mu_);
  MINERU_RETURN_IF_ERROR(Exec("UPDATE jobs SET status = 'queued' WHERE status = 'running'"));
  return sqlite3_changes(db_);
}

StatusOr<std::vector<Job>> JobStore::DeleteFinishedBefore(double cutoff) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Job> out;
  {
    Stmt s(db_, (std::string("SELECT ") + kColumns +
                 " FROM jobs WHERE status IN ('done','failed') AND updated < ?").c_str());
    s.Bind(1, cutoff);
    while (s.Step() == SQLITE_ROW) out.push_back(ReadJob(s));
  }
  Stmt d(db_, "DELETE FROM jobs WHERE status IN ('done','failed') AND updated < ?");
  d.Bind(1, cutoff);
  if (d.Step() != SQLITE_DONE) return DbError(db_, "retention");
  return out;
}

StatusOr<int> JobStore::CountByStatus(const std::string& status) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_, "SELECT COUNT(*) FROM jobs WHERE status = ?");
  s.Bind(1, status);
  if (s.Step() != SQLITE_ROW) return DbError(db_, "count");
  return s.Int(0);
}

}  // namespace mineru::server
