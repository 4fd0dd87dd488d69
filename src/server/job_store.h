// server/job_store.h — durable document jobs in SQLite: a job survives a crash or restart of the
// server (unfinished jobs go back to the queue; finished results stay until retention removes them).
// Thread-safe (one connection, serialised; SQLite in WAL mode with synchronous=NORMAL).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

struct sqlite3;

namespace mineru::server {

struct Job {
  std::string id;
  std::string status;  // queued | running | done | failed
  double created = 0, updated = 0;
  std::string filename;    // the uploaded file's name
  std::string input_path;  // stored upload
  std::string options;     // JSON of the parse options
  int pages_done = 0, pages_total = 0;
  std::string error;
  std::string result_dir;  // where the outputs were written
  int attempts = 0;
};

class JobStore {
 public:
  static StatusOr<std::unique_ptr<JobStore>> Open(const std::string& path);
  ~JobStore();

  Status Insert(const Job& job);
  StatusOr<std::optional<Job>> Get(const std::string& id);
  // Takes the oldest queued job and marks it running (attempts + 1). nullopt when none.
  StatusOr<std::optional<Job>> ClaimNext();
  Status UpdateProgress(const std::string& id, int pages_done, int pages_total);
  Status Finish(const std::string& id, bool ok, const std::string& error, const std::string& result_dir);
  // At startup: running jobs (interrupted by a crash) go back to queued.
  StatusOr<int> RequeueInterrupted();
  // Finished jobs older than cutoff (seconds since epoch): returns them and deletes the rows.
  StatusOr<std::vector<Job>> DeleteFinishedBefore(double cutoff);
  StatusOr<int> CountByStatus(const std::string& status);

 private:
  JobStore() = default;
  Status Exec(const std::string& sql);
  sqlite3* db_ = nullptr;
  std::mutex mu_;
};

double NowSeconds();
std::string NewJobId();

}  // namespace mineru::server
