// server/job_store.h — durable document jobs. Two implementations behind one interface:
//  - SQLite (default, one machine): a file next to the data directory; uploads and results stay in
//    local files. A job survives a crash or restart (unfinished jobs go back to the queue).
//  - PostgreSQL (`--jobs-db postgresql://…`, many machines): several `mineru-cpp serve` workers share
//    one queue (claims use SELECT … FOR UPDATE SKIP LOCKED); uploads and result files live in the
//    database (job_files, bytea), so any replica answers for any job.
// Ownership: a claimed job carries the claiming worker's id and a lease that the worker renews while
// it parses. A job whose lease expired (its worker died or stalled) is claimed again by another
// worker. Progress, files and Finish only apply while the caller still owns the job, so a job is
// finished exactly once even when a worker presumed dead comes back.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace mineru::server {

struct Job {
  std::string id;
  std::string status;  // queued | running | done | failed
  double created = 0, updated = 0;
  std::string filename;    // the uploaded file's name
  std::string input_path;  // stored upload (local stores; empty when the store keeps the file)
  std::string options;     // JSON of the parse options
  int pages_done = 0, pages_total = 0;
  std::string error;
  std::string result_dir;  // where the outputs were written (local stores)
  int attempts = 0;        // claims so far
  std::string worker_id;   // owner while running
  double lease_until = 0;  // seconds since epoch (the store's clock)
  int finishes = 0;        // successful Finish calls: 1 for a finished job, never more
  std::string client_key;  // Idempotency-Key of the submission (empty: none)
};

// One stored file of a job: "upload/NAME" or a path relative to the result directory
// ("DOC/DOC.md", "DOC/images/x.jpg", "DOC/pages/page_0001.png").
struct JobFile {
  std::string name;
  std::string data;
};

class JobStore {
 public:
  // spec: "postgresql://…" or "postgres://…" (libpq URI) selects PostgreSQL; anything else is
  // the path of a SQLite file.
  static StatusOr<std::unique_ptr<JobStore>> Open(const std::string& spec);
  static bool IsPostgresSpec(const std::string& spec);
  virtual ~JobStore() = default;

  // "sqlite" or "postgresql".
  virtual const char* kind() const = 0;
  // True when uploads and results are kept in the store (every replica can read them).
  virtual bool stores_files() const { return false; }
  // True when other servers share the store (a job this one cannot finish is taken over).
  virtual bool shared() const { return false; }

  // Adds a queued job; with stores_files(), upload (not null) is kept as "upload/<filename>" in
  // the same transaction. When job.client_key is set and a job with that key exists, nothing is
  // inserted and *existing_id is set to that job's id (a deduplicated retry).
  virtual Status Insert(const Job& job, const std::string* upload, std::string* existing_id) = 0;
  virtual StatusOr<std::optional<Job>> Get(const std::string& id) = 0;
  // Takes the oldest job that is queued or whose lease expired, marks it running for worker_id
  // with a lease of lease_s seconds (attempts + 1). nullopt when none.
  virtual StatusOr<std::optional<Job>> ClaimNext(const std::string& worker_id, double lease_s) = 0;
  // Extends the lease; false when the job is no longer running for worker_id.
  virtual StatusOr<bool> RenewLease(const std::string& id, const std::string& worker_id, double lease_s) = 0;
  // Progress (also extends the lease); false when not owned any more.
  virtual StatusOr<bool> UpdateProgress(const std::string& id, const std::string& worker_id, int pages_done,
                                        int pages_total, double lease_s) = 0;
  // Stores files while owning the job (stores_files() only); false when not owned any more.
  virtual StatusOr<bool> PutFiles(const std::string& id, const std::string& worker_id,
                                  const std::vector<JobFile>& files);
  // Marks the job done/failed, only if worker_id still owns it (status running); files (stores_files()
  // only) are stored in the same transaction. false: not owned any more, nothing changed.
  virtual StatusOr<bool> Finish(const std::string& id, const std::string& worker_id, bool ok,
                                const std::string& error, const std::string& result_dir,
                                const std::vector<JobFile>& files) = 0;
  // Puts an owned running job back in the queue (a draining worker hands it over).
  virtual StatusOr<bool> Release(const std::string& id, const std::string& worker_id) = 0;
  // At startup. SQLite (one server per store): every running job was interrupted and goes back
  // to the queue. PostgreSQL (shared): only running jobs whose lease expired.
  virtual StatusOr<int> RequeueInterrupted() = 0;
  // Finished jobs older than cutoff (seconds since epoch): returns them and deletes the rows (and
  // their stored files).
  virtual StatusOr<std::vector<Job>> DeleteFinishedBefore(double cutoff) = 0;
  // The n finished jobs updated longest ago: returns them and deletes the rows (and their stored
  // files). For a store over its byte quota (oldest results expire first).
  virtual StatusOr<std::vector<Job>> DeleteOldestFinished(int n) = 0;
  virtual StatusOr<int> CountByStatus(const std::string& status) = 0;
  // Bytes of the files kept in the store itself (stores_files() only; 0 otherwise).
  virtual StatusOr<int64_t> StoredFileBytes() { return int64_t{0}; }

  // Stored files (stores_files() only). ReadFile: nullopt when absent.
  virtual StatusOr<std::optional<std::string>> ReadFile(const std::string& id, const std::string& name);
  // Files whose name starts with prefix (with their data when with_data).
  virtual StatusOr<std::vector<JobFile>> ReadFiles(const std::string& id, const std::string& prefix,
                                                   bool with_data);
};

// The SQLite store (exposed for tests).
StatusOr<std::unique_ptr<JobStore>> OpenSqliteJobStore(const std::string& path);
// The PostgreSQL store; an error when built without libpq.
StatusOr<std::unique_ptr<JobStore>> OpenPostgresJobStore(const std::string& uri);

double NowSeconds();
std::string NewJobId();
// "<host>:<pid>:<random>": identifies one server process as a job owner.
std::string NewWorkerId();

}  // namespace mineru::server
