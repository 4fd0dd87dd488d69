// server/tasks_v4_registry.cc — MinerU 4 tasks and their statuses (see tasks_v4_registry.h).
#include "server/tasks_v4_registry.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "base/mapped_file.h"
#include "server/document_parse.h"

namespace mineru::server {

using Json = nlohmann::json;

std::string FileStatusV4(const TaskFileV4& f, const std::optional<Job>& job, double created_at,
                         double upload_ttl_s, double now) {
  const bool done = job && job->status == "done";
  if (f.state == "canceled") return "canceled";
  if (f.state == "failed") return "failed";
  const bool expired = now > created_at + upload_ttl_s;
  if (f.state == "waiting-file") return expired ? "failed" : "waiting-file";
  if (f.state == "uploading") return expired ? "failed" : "pending";  // a PUT cannot take a day
  if (!job) return "failed";  // its job expired (retention) or was never stored
  if (done) return "completed";
  if (job->status == "failed") return job->error == kJobCanceledError ? "canceled" : "failed";
  return job->status == "running" ? "running" : "pending";
}

bool TerminalStatusV4(const std::string& s) {
  return s == "completed" || s == "failed" || s == "canceled" || s == "partial";
}

std::string TaskStatusV4(const std::vector<std::string>& file_statuses, bool canceled) {
  int completed = 0, failed = 0, canceled_files = 0, running = 0, pending = 0;
  for (const std::string& s : file_statuses) {
    completed += s == "completed";
    failed += s == "failed";
    canceled_files += s == "canceled";
    running += s == "running";
    pending += s == "pending";
  }
  const int n = static_cast<int>(file_statuses.size());
  if (completed + failed + canceled_files < n) {  // some file is not finished
    return running ? "running" : pending ? "pending" : "waiting-file";
  }
  if (completed == n) return "completed";
  if (completed > 0) return "partial";
  if (canceled_files == n || (canceled && canceled_files > 0)) return "canceled";
  return "failed";
}

std::string TaskToJsonV4(const TaskV4& t) {
  Json files = Json::array();
  for (const TaskFileV4& f : t.files) {
    files.push_back({{"file_id", f.file_id},
                     {"file_name", f.file_name},
                     {"bytes", f.bytes},
                     {"url", f.url},
                     {"sha256sum", f.sha256sum},
                     {"page_range", f.page_range},
                     {"state", f.state},
                     {"job_id", f.job_id},
                     {"error_code", f.error_code},
                     {"error", f.error}});
  }
  return Json{{"task_id", t.task_id},
              {"created_at", t.created_at},
              {"updated_at", t.updated_at},
              {"client_key", t.client_key},
              {"caller", t.caller},
              {"canceled_at", t.canceled_at},
              {"options",
               {{"tier", t.options.tier},
                {"ocr_mode", t.options.ocr_mode},
                {"page_range", t.options.page_range},
                {"output_formats", t.options.output_formats}}},
              {"canceled", t.canceled},
              {"files", files}}
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

StatusOr<TaskV4> TaskFromJsonV4(const std::string& text) {
  Json j;
  MINERU_RETURN_IF_ERROR(ParseJson(text, {}, &j));
  try {
    TaskV4 t;
    t.task_id = j.at("task_id").get<std::string>();
    t.created_at = j.at("created_at").get<double>();
    t.updated_at = j.value("updated_at", t.created_at);
    t.client_key = j.value("client_key", "");
    t.caller = j.value("caller", "");
    t.canceled_at = j.value("canceled_at", 0.0);
    const Json& o = j.at("options");
    t.options.tier = o.value("tier", "");
    t.options.ocr_mode = o.value("ocr_mode", "auto");
    t.options.page_range = o.value("page_range", "");
    t.options.output_formats = o.value("output_formats", std::vector<std::string>{"default"});
    t.canceled = j.value("canceled", false);
    for (const Json& f : j.at("files")) {
      TaskFileV4 x;
      x.file_id = f.at("file_id").get<std::string>();
      x.file_name = f.at("file_name").get<std::string>();
      x.bytes = f.value("bytes", int64_t{0});
      x.url = f.value("url", "");
      x.sha256sum = f.value("sha256sum", "");
      x.page_range = f.value("page_range", "");
      x.state = f.value("state", "waiting-file");
      // A PUT cut short by a restart left no job: the file waits for its upload again.
      if (x.state == "uploading") x.state = "waiting-file";
      x.job_id = f.value("job_id", "");
      x.error_code = f.value("error_code", "");
      x.error = f.value("error", "");
      t.files.push_back(std::move(x));
    }
    return t;
  } catch (const std::exception& e) {
    return DataLossError(std::string("not a stored task: ") + e.what());
  }
}

Status TaskRegistryV4::Load() {
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return IoErrorFromErrno("cannot create " + dir_, errno);
  }
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return IoErrorFromErrno("cannot read " + dir_, errno);
  std::lock_guard<std::mutex> lock(mu_);
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    auto text = ReadFileToString(dir_ + "/" + name, size_t(16) << 20);
    auto t = text.ok() ? TaskFromJsonV4(*text) : StatusOr<TaskV4>(text.status());
    if (!t.ok()) {
      std::fprintf(stderr, "tasks: skipping %s: %s\n", name.c_str(), t.status().message().c_str());
      continue;
    }
    const std::string id = t->task_id;
    files_ += t->files.size();
    tasks_[id] = std::move(t).value();
  }
  ::closedir(d);
  return Status::Ok();
}

Status TaskRegistryV4::Store(const TaskV4& t) const {
  const std::string path = dir_ + "/" + t.task_id + ".json";
  MINERU_RETURN_IF_ERROR(WriteStringToFile(path + ".tmp", TaskToJsonV4(t)));
  if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) {
    return IoErrorFromErrno("cannot store " + path, errno);
  }
  return Status::Ok();
}

StatusOr<TaskV4> TaskRegistryV4::Create(const TaskV4& t, size_t max_tasks, bool* replayed) {
  std::lock_guard<std::mutex> lock(mu_);
  *replayed = false;
  if (!t.client_key.empty()) {
    for (const auto& [id, kept] : tasks_) {
      if (kept.client_key == t.client_key) {
        *replayed = true;
        return kept;
      }
    }
  }
  if (tasks_.size() >= max_tasks || files_ + t.files.size() > 10 * max_tasks) {
    return BusyError("the server keeps " + std::to_string(tasks_.size()) + " tasks of " +
                     std::to_string(files_) + " files, its limit (--max-tasks)");
  }
  MINERU_RETURN_IF_ERROR(Store(t));
  files_ += t.files.size();
  tasks_[t.task_id] = t;
  return t;
}

std::optional<TaskV4> TaskRegistryV4::Get(const std::string& task_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) return std::nullopt;
  return it->second;
}

StatusOr<TaskV4> TaskRegistryV4::Update(const std::string& task_id,
                                        const std::function<Status(TaskV4&)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(task_id);
  if (it == tasks_.end()) return NotFoundError("no such task");
  TaskV4 changed = it->second;
  MINERU_RETURN_IF_ERROR(fn(changed));
  changed.updated_at = NowSeconds();
  it->second = changed;  // kept whatever the disk says: a stuck record would be worse
  MINERU_RETURN_IF_ERROR(Store(changed));
  return changed;
}

std::optional<std::string> TaskRegistryV4::JobWithSha256(const std::string& sha256,
                                                         const std::string& caller) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<std::string> job;
  double newest = -1;
  for (const auto& [id, t] : tasks_) {
    if (t.caller != caller) continue;
    for (const TaskFileV4& f : t.files) {
      if (f.state == "submitted" && f.sha256sum == sha256 && !f.job_id.empty() && t.created_at > newest) {
        job = f.job_id;
        newest = t.created_at;
      }
    }
  }
  return job;
}

std::vector<std::string> TaskRegistryV4::CanceledJobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> jobs;
  for (const auto& [id, t] : tasks_) {
    for (const TaskFileV4& f : t.files) {
      if (t.canceled && !f.job_id.empty()) jobs.push_back(f.job_id);
    }
  }
  return jobs;
}

void TaskRegistryV4::PruneCreatedBefore(double cutoff, double unused_cutoff) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const TaskV4& t = it->second;
    const bool unused =
        t.created_at < unused_cutoff &&
        std::none_of(t.files.begin(), t.files.end(), [](const TaskFileV4& f) { return !f.job_id.empty(); });
    if (t.created_at < cutoff || unused) {
      std::remove((dir_ + "/" + it->first + ".json").c_str());
      files_ -= it->second.files.size();
      it = tasks_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t TaskRegistryV4::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

}  // namespace mineru::server
