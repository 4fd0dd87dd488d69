// server/job_store.cc — the JobStore dispatch, shared helpers and the SQLite store.
#include "server/job_store.h"

#include <sqlite3.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace mineru::server {

// ---- shared ----------------------------------------------------------------------------------------

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// 128 bits from the kernel's CSPRNG (getrandom): ids are capabilities (whoever knows a task id
// reads its results), so no id may be predictable from others a client has seen.
std::string NewJobId() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      std::fprintf(stderr, "fatal: getrandom: %s\n", std::strerror(errno));
      std::abort();  // never fall back to a guessable id
    }
  }
  static const char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  for (size_t i = 0; i < sizeof(bytes); ++i) {
    id[2 * i] = kHex[bytes[i] >> 4];
    id[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return id;
}

// host:pid:boot-nonce. The nonce is its own getrandom draw (job ids reveal nothing of it, and it
// reveals nothing of them); /health no longer shows it.
std::string NewWorkerId() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == 0) std::snprintf(host, sizeof(host), "host");
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" + NewJobId().substr(0, 8);
}

bool JobStore::IsPostgresSpec(const std::string& spec) {
  return spec.rfind("postgresql://", 0) == 0 || spec.rfind("postgres://", 0) == 0;
}

StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& spec) {
  if (IsPostgresSpec(spec)) return OpenPostgresJobStore(spec);
  return OpenSqliteJobStore(spec);
}

StatusOr<bool> JobStore::PutFiles(const std::string&, const std::string&, const std::vector<JobFile>&) {
  return UnimplementedError("this job store keeps files on the local disk");
}

StatusOr<std::optional<std::string>> JobStore::ReadFile(const std::string&, const std::string&) {
  return UnimplementedError("this job store keeps files on the local disk");
}

StatusOr<std::vector<JobFile>> JobStore::ReadFiles(const std::string&, const std::string&, bool) {
  return UnimplementedError("this job store keeps files on the local disk");
}

// ---- SQLite ----------------------------------------------------------------------------------------

namespace {

// RAII statement with typed binds/reads.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  Stmt(sqlite3* db, const std::string& sql) : Stmt(db, sql.c_str()) {}
  ~Stmt() { sqlite3_finalize(s_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  // Empty string binds NULL (optional unique keys).
  Stmt& BindOrNull(int i, const std::string& v) {
    if (v.empty())
      sqlite3_bind_null(s_, i);
    else
      Bind(i, v);
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
  int Step() { return s_ ? sqlite3_step(s_) : SQLITE_ERROR; }
  std::string Text(int c) {
    const unsigned char* t = sqlite3_column_text(s_, c);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, c)))
             : "";
  }
  double Real(int c) { return sqlite3_column_double(s_, c); }
  int Int(int c) { return sqlite3_column_int(s_, c); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_;
};

constexpr const char* kColumns =
    "id, status, created, updated, filename, input_path, options, pages_done, pages_total, error, "
    "result_dir, "
    "attempts, worker_id, lease_until, finishes, client_key";

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
  j.worker_id = s.Text(12);
  j.lease_until = s.Real(13);
  j.finishes = s.Int(14);
  j.client_key = s.Text(15);
  return j;
}

// Why the store's files cannot grow, when SQLite does not say ("disk I/O error"): the file system
// is (nearly) full, or a file is at the process's file size limit (ulimit -f). Empty: neither.
std::string StorageHint(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  if (!file || !*file) return "";
  const std::string path = file;
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) == 0) {
    const unsigned long long free_bytes =
        static_cast<unsigned long long>(::geteuid() == 0 ? v.f_bfree : v.f_bavail) * v.f_frsize;
    if (free_bytes < (1u << 20)) return std::strerror(ENOSPC);
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    for (const std::string& f : {path, path + "-wal", path + "-journal"}) {
      struct stat st {};
      if (::stat(f.c_str(), &st) == 0 && static_cast<rlim_t>(st.st_size) + 65536 >= rl.rlim_cur) {
        return std::string(std::strerror(EFBIG)) + ": the file size limit is " + std::to_string(rl.rlim_cur) +
               " bytes";
      }
    }
  }
  return "";
}

// A failed statement: StorageFull when the store's files found no room (SQLITE_FULL, or the OS's
// errno or StorageHint says so), IoError for other storage failures, else Internal.
Status DbError(sqlite3* db, const std::string& what) {
  const int code = sqlite3_errcode(db);
  std::string msg = what + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_FULL || code == SQLITE_READONLY || code == SQLITE_IOERR || code == SQLITE_CANTOPEN) {
    // The OS's reason ("No space left on device", "File too large", "Permission denied") is what
    // an operator needs; SQLite's own text is only "disk I/O error". Its errno is not always kept.
    const int sys = sqlite3_system_errno(db);
    bool full = code == SQLITE_FULL || IsStorageFullErrno(sys);
    std::string why;
    for (int e : {ENOSPC, EFBIG, EDQUOT, EROFS, EACCES, EPERM, EIO}) {
      if (sys == e) why = std::strerror(e);
    }
    if (why.empty() && code != SQLITE_READONLY) {
      why = StorageHint(db);  // names a full disk or the file size limit only
      full = full || !why.empty();
    }
    if (!why.empty()) msg += " (" + why + ")";
    return full ? StorageFullError("job store " + msg) : IoError("job store " + msg);
  }
  return InternalError("job store " + msg);
}

class SqliteJobStore final : public JobStore {
 public:
  ~SqliteJobStore() override {
    if (db_) sqlite3_close(db_);
  }

  Status Open(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "cannot open";
      return IoError("cannot open job store " + path + ": " + msg);
    }
    if (sqlite3_db_readonly(db_, "main") == 1) {
      return IoError("the job store " + path +
                     " is read-only (check the permissions of the file and its directory)");
    }
    sqlite3_busy_timeout(db_, 5000);
    MINERU_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
    MINERU_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL"));
    MINERU_RETURN_IF_ERROR(
        Exec("CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, status TEXT NOT NULL, created REAL, "
             "updated REAL, "
             "filename TEXT, input_path TEXT, options TEXT, pages_done INTEGER DEFAULT 0, pages_total "
             "INTEGER DEFAULT 0, "
             "error TEXT, result_dir TEXT, attempts INTEGER DEFAULT 0)"));
    // Columns added with leases (stores created by older versions get them here).
    const char* added[][2] = {{"worker_id", "TEXT"},
                              {"lease_until", "REAL DEFAULT 0"},
                              {"finishes", "INTEGER DEFAULT 0"},
                              {"client_key", "TEXT"}};
    for (const auto& col : added) {
      if (!HasColumn("jobs", col[0])) {
        MINERU_RETURN_IF_ERROR(Exec(std::string("ALTER TABLE jobs ADD COLUMN ") + col[0] + " " + col[1]));
      }
    }
    MINERU_RETURN_IF_ERROR(Exec("CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status, created)"));
    MINERU_RETURN_IF_ERROR(Exec("CREATE UNIQUE INDEX IF NOT EXISTS jobs_client_key ON jobs(client_key)"));
    return Status::Ok();
  }

  const char* kind() const override { return "sqlite"; }

  Status Insert(const Job& j, const std::string*, std::string* existing_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (existing_id) existing_id->clear();
    if (!j.client_key.empty()) {
      Stmt s(db_, "SELECT id FROM jobs WHERE client_key = ?");
      s.Bind(1, j.client_key);
      if (s.Step() == SQLITE_ROW) {
        if (existing_id) *existing_id = s.Text(0);
        return Status::Ok();
      }
    }
    Stmt s(db_,
           "INSERT INTO jobs (id, status, created, updated, filename, input_path, options, pages_done, "
           "pages_total, error, result_dir, attempts, worker_id, lease_until, finishes, client_key) "
           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!s.ok()) return DbError(db_, "prepare insert");
    s.Bind(1, j.id).Bind(2, j.status).Bind(3, j.created).Bind(4, j.updated).Bind(5, j.filename);
    s.Bind(6, j.input_path).Bind(7, j.options).Bind(8, j.pages_done).Bind(9, j.pages_total).Bind(10, j.error);
    s.Bind(11, j.result_dir).Bind(12, j.attempts).Bind(13, j.worker_id).Bind(14, j.lease_until);
    s.Bind(15, j.finishes).BindOrNull(16, j.client_key);
    const int rc = s.Step();
    if (rc == SQLITE_CONSTRAINT && !j.client_key.empty()) {  // the same key, inserted just now
      Stmt q(db_, "SELECT id FROM jobs WHERE client_key = ?");
      q.Bind(1, j.client_key);
      if (q.Step() == SQLITE_ROW && existing_id) *existing_id = q.Text(0);
      return Status::Ok();
    }
    if (rc != SQLITE_DONE) return DbError(db_, "insert");
    return Status::Ok();
  }

  StatusOr<std::optional<Job>> Get(const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?");
    if (!s.ok()) return DbError(db_, "prepare get");
    s.Bind(1, id);
    const int rc = s.Step();
    if (rc == SQLITE_ROW) return std::optional<Job>(ReadJob(s));
    if (rc == SQLITE_DONE) return std::optional<Job>();
    return DbError(db_, "get");
  }

  StatusOr<std::optional<Job>> ClaimNext(const std::string& worker_id, double lease_s) override {
    std::lock_guard<std::mutex> lock(mu_);
    MINERU_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    const double now = NowSeconds();
    std::optional<Job> job;
    {
      Stmt s(db_, std::string("SELECT ") + kColumns +
                      " FROM jobs WHERE status = 'queued' OR (status = 'running' AND lease_until < ?) "
                      "ORDER BY created LIMIT 1");
      if (!s.ok()) {
        (void)Exec("ROLLBACK");
        return DbError(db_, "prepare claim");
      }
      s.Bind(1, now);
      if (s.Step() == SQLITE_ROW) job = ReadJob(s);
    }
    if (job) {
      Stmt u(db_,
             "UPDATE jobs SET status = 'running', attempts = attempts + 1, worker_id = ?, lease_until = ?, "
             "updated = ? WHERE id = ?");
      u.Bind(1, worker_id).Bind(2, now + lease_s).Bind(3, now).Bind(4, job->id);
      if (u.Step() != SQLITE_DONE) {
        Status e = DbError(db_, "claim");
        (void)Exec("ROLLBACK");
        return e;
      }
      job->status = "running";
      job->attempts += 1;
      job->worker_id = worker_id;
      job->lease_until = now + lease_s;
      job->updated = now;
    }
    MINERU_RETURN_IF_ERROR(Exec("COMMIT"));
    return job;
  }

  StatusOr<bool> RenewLease(const std::string& id, const std::string& worker_id, double lease_s) override {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, "UPDATE jobs SET lease_until = ? WHERE id = ? AND worker_id = ? AND status = 'running'");
    s.Bind(1, NowSeconds() + lease_s).Bind(2, id).Bind(3, worker_id);
    if (s.Step() != SQLITE_DONE) return DbError(db_, "lease");
    return sqlite3_changes(db_) == 1;
  }

  StatusOr<bool> UpdateProgress(const std::string& id, const std::string& worker_id, int pages_done,
                                int pages_total, double lease_s) override {
    std::lock_guard<std::mutex> lock(mu_);
    const double now = NowSeconds();
    Stmt s(db_,
           "UPDATE jobs SET pages_done = ?, pages_total = ?, updated = ?, lease_until = ? "
           "WHERE id = ? AND worker_id = ? AND status = 'running'");
    s.Bind(1, pages_done)
        .Bind(2, pages_total)
        .Bind(3, now)
        .Bind(4, now + lease_s)
        .Bind(5, id)
        .Bind(6, worker_id);
    if (s.Step() != SQLITE_DONE) return DbError(db_, "progress");
    return sqlite3_changes(db_) == 1;
  }

  StatusOr<bool> Finish(const std::string& id, const std::string& worker_id, bool ok,
                        const std::string& error, const std::string& result_dir,
                        const std::vector<JobFile>& files) override {
    if (!files.empty()) return UnimplementedError("the SQLite job store keeps files on the local disk");
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_,
           "UPDATE jobs SET status = ?, error = ?, result_dir = ?, updated = ?, finishes = finishes + 1, "
           "lease_until = 0 WHERE id = ? AND worker_id = ? AND status = 'running'");
    s.Bind(1, std::string(ok ? "done" : "failed")).Bind(2, error).Bind(3, result_dir).Bind(4, NowSeconds());
    s.Bind(5, id).Bind(6, worker_id);
    if (s.Step() != SQLITE_DONE) return DbError(db_, "finish");
    return sqlite3_changes(db_) == 1;
  }

  StatusOr<bool> Release(const std::string& id, const std::string& worker_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_,
           "UPDATE jobs SET status = 'queued', worker_id = NULL, lease_until = 0, updated = ? "
           "WHERE id = ? AND worker_id = ? AND status = 'running'");
    s.Bind(1, NowSeconds()).Bind(2, id).Bind(3, worker_id);
    if (s.Step() != SQLITE_DONE) return DbError(db_, "release");
    return sqlite3_changes(db_) == 1;
  }

  StatusOr<int> RequeueInterrupted() override {
    std::lock_guard<std::mutex> lock(mu_);
    MINERU_RETURN_IF_ERROR(Exec(
        "UPDATE jobs SET status = 'queued', worker_id = NULL, lease_until = 0 WHERE status = 'running'"));
    return sqlite3_changes(db_);
  }

  StatusOr<std::vector<Job>> DeleteFinishedBefore(double cutoff) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Job> out;
    {
      Stmt s(db_, std::string("SELECT ") + kColumns +
                      " FROM jobs WHERE status IN ('done','failed') AND updated < ?");
      s.Bind(1, cutoff);
      while (s.Step() == SQLITE_ROW) out.push_back(ReadJob(s));
    }
    Stmt d(db_, "DELETE FROM jobs WHERE status IN ('done','failed') AND updated < ?");
    d.Bind(1, cutoff);
    if (d.Step() != SQLITE_DONE) return DbError(db_, "retention");
    return out;
  }

  StatusOr<std::vector<Job>> DeleteOldestFinished(int n) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Job> out;
    {
      Stmt s(db_, std::string("SELECT ") + kColumns +
                      " FROM jobs WHERE status IN ('done','failed') ORDER BY updated, id LIMIT ?");
      s.Bind(1, n);
      while (s.Step() == SQLITE_ROW) out.push_back(ReadJob(s));
    }
    // One statement (all or none), over the same rows: mu_ keeps every writer out meanwhile.
    Stmt d(db_,
           "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE status IN ('done','failed') "
           "ORDER BY updated, id LIMIT ?)");
    d.Bind(1, n);
    if (d.Step() != SQLITE_DONE) return DbError(db_, "expiring finished jobs");
    return out;
  }

  StatusOr<int> CountByStatus(const std::string& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    Stmt s(db_, "SELECT COUNT(*) FROM jobs WHERE status = ?");
    s.Bind(1, status);
    if (s.Step() != SQLITE_ROW) return DbError(db_, "count");
    return s.Int(0);
  }

 private:
  Status Exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "error";
      sqlite3_free(err);
      return DbError(db_, m + " in " + sql.substr(0, 40));
    }
    return Status::Ok();
  }

  bool HasColumn(const std::string& table, const std::string& column) {
    Stmt s(db_, "PRAGMA table_info(" + table + ")");
    while (s.Step() == SQLITE_ROW) {
      if (s.Text(1) == column) return true;
    }
    return false;
  }

  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

}  // namespace

StatusOr<std::unique_ptr<JobStore>> OpenSqliteJobStore(const std::string& path) {
  auto s = std::make_unique<SqliteJobStore>();
  MINERU_RETURN_IF_ERROR(s->Open(path));
  return std::unique_ptr<JobStore>(std::move(s));
}

}  // namespace mineru::server
