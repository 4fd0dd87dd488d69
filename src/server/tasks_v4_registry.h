// server/tasks_v4_registry.h — the tasks of MinerU 4.1's Tasks API (/v1/tasks): what a client
// declared (files, options), which file became which document job, and each file's and the task's
// status as MinerU 4 names them. The parsing itself is done by document jobs (job_store.h); a task
// only points at them. HTTP-free: the routes are in tasks_v4.cc.
//
// Persistence: one JSON file per task in `dir` (data_dir/tasks), written whole through a temporary
// file and rename, read back at start, so a task survives a restart of this server. Tasks are this
// server's: with a shared PostgreSQL job store the jobs are shared, the task records are not (a
// load balancer keeps a task on the server that created it). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/job_store.h"

namespace mineru::server {

// One file of a task. `state` is the task's own record of it; its status as the client sees it
// also depends on its job (FileStatusV4).
struct TaskFileV4 {
  std::string file_id;    // "file_" + 32 hex digits
  std::string file_name;  // as the client declared it (validated)
  int64_t bytes = 0;      // declared size (0 for a url source)
  std::string url, sha256sum, page_range;
  // waiting-file: no bytes yet; uploading: a PUT is storing them; submitted: job_id parses them;
  // failed: refused before a job existed (error_code, error); canceled: canceled before a job.
  std::string state = "waiting-file";
  std::string job_id;
  std::string error_code, error;
};

struct TaskOptionsV4 {
  std::string tier;  // "" = the server's choice (advanced, the only tier served)
  std::string ocr_mode = "auto";
  std::string page_range;
  std::vector<std::string> output_formats = {"default"};
};

struct TaskV4 {
  std::string task_id;  // "task_" + 32 hex digits
  double created_at = 0, updated_at = 0;
  std::string client_key;  // caller-scoped Idempotency-Key ("" none)
  std::string caller;      // who created it (CallerScope): sha256 hits stay within one caller
  TaskOptionsV4 options;
  std::vector<TaskFileV4> files;
  bool canceled = false;
  double canceled_at = 0;
};

// The status strings of MinerU 4.1 (`status_str`): waiting-file, pending, running, completed,
// partial (some files completed, some failed or canceled), failed, canceled.
// A file's status from its record and its job (nullopt: none, or expired): an upload not made
// (or not finished) within upload_ttl_s of the task's creation fails as expired.
std::string FileStatusV4(const TaskFileV4& f, const std::optional<Job>& job, double created_at,
                         double upload_ttl_s, double now);
// The task's status from its files' statuses.
std::string TaskStatusV4(const std::vector<std::string>& file_statuses, bool canceled);
bool TerminalStatusV4(const std::string& status);

class TaskRegistryV4 {
 public:
  explicit TaskRegistryV4(std::string dir) : dir_(std::move(dir)) {}
  // Reads every task file of dir (creating dir); unreadable files are reported and skipped.
  Status Load();
  // Stores a new task. When its client_key names a task already kept, nothing is stored and
  // that task is returned with *replayed set. Busy when max_tasks are kept, or when the files of
  // all tasks would pass 10 x max_tasks (what the records hold in memory stays bounded).
  StatusOr<TaskV4> Create(const TaskV4& t, size_t max_tasks, bool* replayed);
  std::optional<TaskV4> Get(const std::string& task_id) const;
  // Runs fn on the task under the registry's lock; when fn succeeds the change is kept (in memory
  // even when its file cannot be written: the error is returned, the process goes on with the
  // change) and the task as it is now is returned. NotFound: no such task (or pruned).
  StatusOr<TaskV4> Update(const std::string& task_id, const std::function<Status(TaskV4&)>& fn);
  // The job of a submitted file of caller's tasks whose bytes had this sha256 (the newest), if any.
  std::optional<std::string> JobWithSha256(const std::string& sha256, const std::string& caller) const;
  // The jobs of canceled tasks (to cancel again after a restart: State::CancelJob is per process).
  std::vector<std::string> CanceledJobs() const;
  // Forgets (and deletes the files of) tasks created before cutoff, and those created before
  // unused_cutoff none of whose files ever got a job (their upload links expired unused: a client
  // that only creates tasks holds room for a day, not for the retention).
  void PruneCreatedBefore(double cutoff, double unused_cutoff = 0);
  size_t size() const;

 private:
  Status Store(const TaskV4& t) const;
  std::string dir_;
  mutable std::mutex mu_;
  std::map<std::string, TaskV4> tasks_;
  size_t files_ = 0;  // files of all tasks kept
};

// A task as its stored JSON (and back): exposed for tests.
std::string TaskToJsonV4(const TaskV4& t);
StatusOr<TaskV4> TaskFromJsonV4(const std::string& text);

}  // namespace mineru::server
