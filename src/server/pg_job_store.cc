// server/pg_job_store.cc — the PostgreSQL job store (libpq): one queue shared by every
// `mineru-cpp serve` worker that points at the same database, on any number of machines.
//
//   jobs(id, status, created, updated, filename, input_path, options, pages_done, pages_total, error,
//        result_dir, attempts, worker_id, lease_until, finishes, client_key UNIQUE)
//   job_files(job_id → jobs ON DELETE CASCADE, name, data bytea, PRIMARY KEY (job_id, name))
//
// Times come from the database's clock (so machines with skewed clocks agree on leases).
// A claim is one statement: UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP LOCKED) RETURNING …, so
// concurrent workers never wait on each other and never take the same job. Every write of a
// running job is conditional on (id, worker_id, status = 'running').
#include "server/job_store.h"

#ifdef MINERU_HAVE_LIBPQ

#include <libpq-fe.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace mineru::server {
namespace {

constexpr const char* kNow = "extract(epoch from clock_timestamp())";
constexpr const char* kColumns =
    "id, status, created, updated, filename, input_path, options, pages_done, pages_total, error, "
    "result_dir, "
    "attempts, worker_id, lease_until, finishes, client_key";
constexpr size_t kPoolSize = 8;

Status Unavailable(const std::string& m) { return Status(StatusCode::kUnavailable, "job store: " + m); }

std::string ConnError(PGconn* c) {
  std::string m = c ? PQerrorMessage(c) : "out of memory";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m;
}

// A query parameter: text, or binary (bytea), or NULL.
struct Param {
  std::string value;
  bool binary = false;
  bool null = false;
};
Param P(std::string v) { return Param{std::move(v), false, false}; }
Param P(double v) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.17g", v);
  return Param{b, false, false};
}
Param P(int v) { return Param{std::to_string(v), false, false}; }
Param OrNull(const std::string& v) { return Param{v, false, v.empty()}; }
Param Bytes(const std::string& v) { return Param{v, true, false}; }

class Result {
 public:
  explicit Result(PGresult* r = nullptr) : r_(r) {}
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result& operator=(Result&& o) noexcept {
    std::swap(r_, o.r_);
    return *this;
  }
  ~Result() {
    if (r_) PQclear(r_);
  }
  int rows() const { return PQntuples(r_); }
  int affected() const { return std::atoi(PQcmdTuples(r_)); }
  std::string Text(int row, int col) const {
    if (PQgetisnull(r_, row, col)) return "";
    return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
  }
  double Real(int row, int col) const { return std::strtod(PQgetvalue(r_, row, col), nullptr); }
  int Int(int row, int col) const { return std::atoi(PQgetvalue(r_, row, col)); }

 private:
  PGresult* r_;
};

Job ReadJob(const Result& r, int row) {
  Job j;
  j.id = r.Text(row, 0);
  j.status = r.Text(row, 1);
  j.created = r.Real(row, 2);
  j.updated = r.Real(row, 3);
  j.filename = r.Text(row, 4);
  j.input_path = r.Text(row, 5);
  j.options = r.Text(row, 6);
  j.pages_done = r.Int(row, 7);
  j.pages_total = r.Int(row, 8);
  j.error = r.Text(row, 9);
  j.result_dir = r.Text(row, 10);
  j.attempts = r.Int(row, 11);
  j.worker_id = r.Text(row, 12);
  j.lease_until = r.Real(row, 13);
  j.finishes = r.Int(row, 14);
  j.client_key = r.Text(row, 15);
  return j;
}

class PgJobStore;

// One pooled connection, returned to the pool when it goes out of scope.
class Conn {
 public:
  Conn(PgJobStore* store, PGconn* c) : store_(store), c_(c) {}
  Conn(Conn&& o) noexcept : store_(o.store_), c_(o.c_), in_tx_(o.in_tx_) { o.c_ = nullptr; }
  ~Conn();
  // Runs one statement; binary_result: columns come back in binary (bytea as raw bytes).
  StatusOr<Result> Exec(const std::string& sql, const std::vector<Param>& params = {},
                        bool binary_result = false) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const Param& p : params) {
      values.push_back(p.null ? nullptr : p.value.data());
      lengths.push_back(static_cast<int>(p.value.size()));
      formats.push_back(p.binary ? 1 : 0);
    }
    return Check(PQexecParams(c_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                              lengths.data(), formats.data(), binary_result ? 1 : 0),
                 sql);
  }
  Status Begin() {
    MINERU_RETURN_IF_ERROR(Exec("BEGIN").status());
    in_tx_ = true;
    return Status::Ok();
  }
  Status Commit() {
    in_tx_ = false;
    return Exec("COMMIT").status();
  }
  void Rollback() {
    if (in_tx_) (void)Exec("ROLLBACK");
    in_tx_ = false;
  }

 private:
  StatusOr<Result> Check(PGresult* raw, const std::string& sql) {
    Result owned(raw);  // null only when out of memory or the connection is gone
    const ExecStatusType st = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return owned;
    const std::string what = sql.substr(0, 48) + ": " + ConnError(c_);
    if (PQstatus(c_) != CONNECTION_OK) return Unavailable(what);
    const char* state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    // Class 53: insufficient resources: 53100 disk full, else out of memory, too many connections.
    const std::string sqlstate = state ? state : "";
    if (sqlstate == "53100") return StorageFullError("job store " + what);
    if (sqlstate.rfind("53", 0) == 0) return IoError("job store " + what);
    return InternalError("job store " + what);
  }

  PgJobStore* store_;
  PGconn* c_;
  bool in_tx_ = false;
};

class PgJobStore final : public JobStore {
 public:
  explicit PgJobStore(std::string uri) : uri_(std::move(uri)) {}
  ~PgJobStore() override {
    for (PGconn* c : idle_) PQfinish(c);
  }

  Status Open() {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_RETURN_IF_ERROR(c.Begin());
    // Several workers may start at once: one creates the schema, the others wait for it.
    Status s = [&]() -> Status {
      MINERU_RETURN_IF_ERROR(c.Exec("SELECT pg_advisory_xact_lock(7274201)").status());
      // Only a new database gets DDL (it takes table locks that would stall the running workers).
      MINERU_ASSIGN_OR_RETURN(
          Result have,
          c.Exec("SELECT to_regclass('jobs') IS NOT NULL AND to_regclass('job_files') IS NOT NULL"));
      if (have.Text(0, 0) == "t") return c.Commit();
      MINERU_RETURN_IF_ERROR(
          c.Exec("CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, status TEXT NOT NULL, created DOUBLE "
                 "PRECISION, "
                 "updated DOUBLE PRECISION, filename TEXT, input_path TEXT, options TEXT, pages_done INTEGER "
                 "DEFAULT 0, "
                 "pages_total INTEGER DEFAULT 0, error TEXT, result_dir TEXT, attempts INTEGER DEFAULT 0, "
                 "worker_id TEXT, lease_until DOUBLE PRECISION DEFAULT 0, finishes INTEGER DEFAULT 0, "
                 "client_key TEXT UNIQUE)")
              .status());
      MINERU_RETURN_IF_ERROR(
          c.Exec("CREATE INDEX IF NOT EXISTS jobs_status ON jobs(status, created)").status());
      MINERU_RETURN_IF_ERROR(c.Exec("CREATE TABLE IF NOT EXISTS job_files (job_id TEXT NOT NULL REFERENCES "
                                    "jobs(id) ON DELETE CASCADE, "
                                    "name TEXT NOT NULL, data BYTEA NOT NULL, PRIMARY KEY (job_id, name))")
                                 .status());
      // PNG/JPEG/PDF are compressed already: store them out of line without another compression pass.
      MINERU_RETURN_IF_ERROR(c.Exec("ALTER TABLE job_files ALTER COLUMN data SET STORAGE EXTERNAL").status());
      return c.Commit();
    }();
    if (!s.ok()) c.Rollback();
    return s;
  }

  const char* kind() const override { return "postgresql"; }
  bool stores_files() const override { return true; }
  bool shared() const override { return true; }

  Status Insert(const Job& j, const std::string* upload, std::string* existing_id) override {
    if (existing_id) existing_id->clear();
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_RETURN_IF_ERROR(c.Begin());
    Status s = [&]() -> Status {
      MINERU_ASSIGN_OR_RETURN(
          Result r,
          c.Exec(
              std::string("INSERT INTO jobs (") + kColumns + ") VALUES ($1,$2," + kNow + "," + kNow +
                  ",$3,$4,$5,$6,$7,$8,$9,$10,NULL,0,0,$11) ON CONFLICT (client_key) DO NOTHING RETURNING id",
              {P(j.id), P(j.status), P(j.filename), P(j.input_path), P(j.options), P(j.pages_done),
               P(j.pages_total), P(j.error), P(j.result_dir), P(j.attempts), OrNull(j.client_key)}));
      if (r.rows() == 0) {  // an existing submission with the same key
        MINERU_ASSIGN_OR_RETURN(Result e,
                                c.Exec("SELECT id FROM jobs WHERE client_key = $1", {P(j.client_key)}));
        if (e.rows() == 1 && existing_id) *existing_id = e.Text(0, 0);
        return c.Commit();
      }
      if (upload) {
        MINERU_RETURN_IF_ERROR(c.Exec("INSERT INTO job_files (job_id, name, data) VALUES ($1,$2,$3)",
                                      {P(j.id), P("upload/" + j.filename), Bytes(*upload)})
                                   .status());
      }
      return c.Commit();
    }();
    if (!s.ok()) c.Rollback();
    return s;
  }

  StatusOr<std::optional<Job>> Get(const std::string& id) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(Result r,
                            c.Exec(std::string("SELECT ") + kColumns + " FROM jobs WHERE id = $1", {P(id)}));
    if (r.rows() == 0) return std::optional<Job>();
    return std::optional<Job>(ReadJob(r, 0));
  }

  StatusOr<std::optional<Job>> ClaimNext(const std::string& worker_id, double lease_s) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(
        Result r,
        c.Exec(std::string("UPDATE jobs SET status = 'running', attempts = attempts + 1, worker_id = $1, "
                           "lease_until = ") +
                   kNow + " + $2, updated = " + kNow +
                   " WHERE id = (SELECT id FROM jobs WHERE status = 'queued' OR (status = 'running' AND "
                   "lease_until < " +
                   kNow + ") ORDER BY created LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING " + kColumns,
               {P(worker_id), P(lease_s)}));
    if (r.rows() == 0) return std::optional<Job>();
    return std::optional<Job>(ReadJob(r, 0));
  }

  StatusOr<bool> RenewLease(const std::string& id, const std::string& worker_id, double lease_s) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(Result r,
                            c.Exec(std::string("UPDATE jobs SET lease_until = ") + kNow +
                                       " + $3 WHERE id = $1 AND worker_id = $2 AND status = 'running'",
                                   {P(id), P(worker_id), P(lease_s)}));
    return r.affected() == 1;
  }

  StatusOr<bool> UpdateProgress(const std::string& id, const std::string& worker_id, int pages_done,
                                int pages_total, double lease_s) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(
        Result r, c.Exec(std::string("UPDATE jobs SET pages_done = $3, pages_total = $4, updated = ") + kNow +
                             ", lease_until = " + kNow +
                             " + $5 WHERE id = $1 AND worker_id = $2 AND status = 'running'",
                         {P(id), P(worker_id), P(pages_done), P(pages_total), P(lease_s)}));
    return r.affected() == 1;
  }

  StatusOr<bool> PutFiles(const std::string& id, const std::string& worker_id,
                          const std::vector<JobFile>& files) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    for (const JobFile& f : files) {
      // One statement per file (no transaction a stalled worker could leave open): the row lock
      // on the job (FOR SHARE) keeps a new owner from claiming it until the file is in, and a
      // job claimed by someone else meanwhile matches no row, so nothing is written.
      MINERU_ASSIGN_OR_RETURN(
          Result r,
          c.Exec("INSERT INTO job_files (job_id, name, data) SELECT id, $3, $4 FROM jobs WHERE id = $1 AND "
                 "worker_id = $2 AND status = 'running' FOR SHARE "
                 "ON CONFLICT (job_id, name) DO UPDATE SET data = EXCLUDED.data",
                 {P(id), P(worker_id), P(f.name), Bytes(f.data)}));
      if (r.affected() != 1) return false;
    }
    return true;
  }

  StatusOr<bool> Finish(const std::string& id, const std::string& worker_id, bool ok,
                        const std::string& error, const std::string& result_dir,
                        const std::vector<JobFile>& files) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_RETURN_IF_ERROR(c.Begin());
    StatusOr<bool> s = [&]() -> StatusOr<bool> {
      MINERU_ASSIGN_OR_RETURN(
          Result r,
          c.Exec(std::string("UPDATE jobs SET status = $3, error = $4, result_dir = $5, updated = ") + kNow +
                     ", finishes = finishes + 1, lease_until = 0 "
                     "WHERE id = $1 AND worker_id = $2 AND status = 'running'",
                 {P(id), P(worker_id), P(std::string(ok ? "done" : "failed")), P(error), P(result_dir)}));
      if (r.affected() != 1) {  // another worker owns it now (or it is finished): change nothing
        c.Rollback();
        return false;
      }
      MINERU_RETURN_IF_ERROR(Upsert(c, id, files));
      MINERU_RETURN_IF_ERROR(c.Commit());
      return true;
    }();
    if (!s.ok()) c.Rollback();
    return s;
  }

  StatusOr<bool> Release(const std::string& id, const std::string& worker_id) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(Result r,
                            c.Exec(std::string("UPDATE jobs SET status = 'queued', worker_id = NULL, "
                                               "lease_until = 0, updated = ") +
                                       kNow + " WHERE id = $1 AND worker_id = $2 AND status = 'running'",
                                   {P(id), P(worker_id)}));
    return r.affected() == 1;
  }

  StatusOr<int> RequeueInterrupted() override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(Result r,
                            c.Exec(std::string("UPDATE jobs SET status = 'queued', worker_id = NULL "
                                               "WHERE status = 'running' AND lease_until < ") +
                                   kNow));
    return r.affected();
  }

  StatusOr<std::vector<Job>> DeleteFinishedBefore(double cutoff) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(Result r,
                            c.Exec(std::string("DELETE FROM jobs WHERE status IN ('done','failed') AND "
                                               "updated < $1 RETURNING ") +
                                       kColumns,
                                   {P(cutoff)}));
    std::vector<Job> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(ReadJob(r, i));
    return out;
  }

  StatusOr<std::vector<Job>> DeleteOldestFinished(int n) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(
        Result r,
        c.Exec(std::string("DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE status IN "
                           "('done','failed') ORDER BY updated, id LIMIT $1 FOR UPDATE SKIP LOCKED) "
                           "RETURNING ") +
                   kColumns,
               {P(n)}));
    std::vector<Job> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(ReadJob(r, i));
    return out;
  }

  StatusOr<int64_t> StoredFileBytes() override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(Result r,
                            c.Exec("SELECT COALESCE(SUM(octet_length(data)), 0)::bigint FROM job_files", {}));
    return static_cast<int64_t>(std::strtoll(r.Text(0, 0).c_str(), nullptr, 10));
  }

  StatusOr<int> CountByStatus(const std::string& status) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(Result r, c.Exec("SELECT count(*) FROM jobs WHERE status = $1", {P(status)}));
    return r.Int(0, 0);
  }

  StatusOr<std::optional<std::string>> ReadFile(const std::string& id, const std::string& name) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(Result r, c.Exec("SELECT data FROM job_files WHERE job_id = $1 AND name = $2",
                                             {P(id), P(name)}, true));
    if (r.rows() == 0) return std::optional<std::string>();
    return std::optional<std::string>(r.Text(0, 0));
  }

  StatusOr<std::vector<JobFile>> ReadFiles(const std::string& id, const std::string& prefix,
                                           bool with_data) override {
    MINERU_ASSIGN_OR_RETURN(Conn c, Acquire());
    MINERU_ASSIGN_OR_RETURN(
        Result r,
        c.Exec(std::string("SELECT name, ") + (with_data ? "data" : "''::bytea") +
                   " FROM job_files WHERE job_id = $1 AND left(name, char_length($2)) = $2 ORDER BY name",
               {P(id), P(prefix)}, true));
    std::vector<JobFile> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back({r.Text(i, 0), r.Text(i, 1)});
    return out;
  }

  // The pool: up to kPoolSize connections, opened on demand, broken ones dropped.
  StatusOr<Conn> Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !idle_.empty() || open_ < kPoolSize; });
    if (!idle_.empty()) {
      PGconn* c = idle_.back();
      idle_.pop_back();
      lock.unlock();
      if (PQstatus(c) != CONNECTION_OK) PQreset(c);  // the server restarted or the network dropped
      if (PQstatus(c) != CONNECTION_OK) {
        const std::string e = ConnError(c);
        Drop(c);
        return Unavailable(e);
      }
      return Conn(this, c);
    }
    ++open_;
    lock.unlock();
    // Defaults the URI may override: a connect deadline, and a session that stalls inside a
    // transaction (a frozen worker holding a job's row lock) is ended by the server so other
    // workers can take that job over.
    const char* keys[] = {"connect_timeout", "application_name", "options", "dbname", nullptr};
    const char* vals[] = {"10", "mineru-cpp", "-c idle_in_transaction_session_timeout=10000", uri_.c_str(),
                          nullptr};
    PGconn* c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
      const std::string e = ConnError(c);
      Drop(c);
      return Unavailable("cannot connect: " + e);
    }
    return Conn(this, c);
  }

  void Return(PGconn* c) {
    if (PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) return Drop(c);
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(c);
    cv_.notify_one();
  }

 private:
  void Drop(PGconn* c) {
    if (c) PQfinish(c);
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
    cv_.notify_one();
  }

  Status Upsert(Conn& c, const std::string& id, const std::vector<JobFile>& files) {
    for (const JobFile& f : files) {
      MINERU_RETURN_IF_ERROR(c.Exec("INSERT INTO job_files (job_id, name, data) VALUES ($1,$2,$3) "
                                    "ON CONFLICT (job_id, name) DO UPDATE SET data = EXCLUDED.data",
                                    {P(id), P(f.name), Bytes(f.data)})
                                 .status());
    }
    return Status::Ok();
  }

  std::string uri_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PGconn*> idle_;
  size_t open_ = 0;
};

Conn::~Conn() {
  if (!c_) return;
  Rollback();
  store_->Return(c_);
}

}  // namespace

StatusOr<std::unique_ptr<JobStore>> OpenPostgresJobStore(const std::string& uri) {
  auto s = std::make_unique<PgJobStore>(uri);
  Status st = s->Open();
  if (!st.ok()) return st.WithPrefix("cannot open the PostgreSQL job store");
  return std::unique_ptr<JobStore>(std::move(s));
}

}  // namespace mineru::server

#else  // no libpq

namespace mineru::server {

StatusOr<std::unique_ptr<JobStore>> OpenPostgresJobStore(const std::string&) {
  return UnimplementedError(
      "this build has no PostgreSQL support: install libpq-dev (scripts/setup.sh) and rebuild");
}

}  // namespace mineru::server

#endif
