#include "server/job_storage.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <vector>

#include "server/state.h"

namespace mineru::server {

int64_t TreeBytes(const std::string& path) {
  struct stat sb {};
  if (::lstat(path.c_str(), &sb) != 0) return 0;
  if (S_ISREG(sb.st_mode)) return static_cast<int64_t>(sb.st_size);
  if (!S_ISDIR(sb.st_mode)) return 0;
  int64_t total = 0;
  DIR* d = ::opendir(path.c_str());
  if (!d) return 0;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string f = e->d_name;
    if (f != "." && f != "..") names.push_back(f);
  }
  ::closedir(d);
  for (const std::string& f : names) total += TreeBytes(path + "/" + f);
  return total;
}

void MeasureJobStorage(Server::State& st) {
  int64_t bytes = TreeBytes(st.opt.data_dir + "/jobs");
  if (auto stored = st.jobs->StoredFileBytes(); stored.ok()) bytes += *stored;
  st.store_bytes = bytes;
}

namespace {

// Removes an expired job's local files and takes them off the count.
void Forget(Server::State& st, const Job& j) {
  const std::string dir = st.opt.data_dir + "/jobs/" + j.id;
  st.store_bytes -= TreeBytes(dir);
  RemoveTree(dir);
}

}  // namespace

Status MakeRoomForJob(Server::State& st, int64_t need) {
  const int64_t quota = static_cast<int64_t>(st.opt.max_store_mb) << 20;
  if (quota <= 0) return Status::Ok();
  std::lock_guard<std::mutex> lock(st.store_mu);  // one submission frees room at a time
  bool measured = false;
  while (st.store_bytes.load() + need > quota) {
    auto old = st.jobs->DeleteOldestFinished(8);
    if (!old.ok()) return old.status();
    for (const Job& j : *old) Forget(st, j);
    st.metrics.Inc("mineru_jobs_expired_total", "", static_cast<double>(old->size()));
    if (old->empty()) {
      // The store's own files (PostgreSQL) shrank with the rows: measure once before giving up.
      if (measured) {
        return ResourceExhaustedError("the server's job storage is full (" + std::to_string(quota >> 20) +
                                      " MB, --max-store-mb) with unfinished jobs; try again later");
      }
      MeasureJobStorage(st);
      measured = true;
    }
  }
  st.store_bytes += need;
  return Status::Ok();
}

void RetentionSweep(Server::State& st) {
  if (st.opt.retention_hours > 0) {
    auto old = st.jobs->DeleteFinishedBefore(NowSeconds() - st.opt.retention_hours * 3600);
    if (old.ok()) {
      for (const Job& j : *old) RemoveTree(st.opt.data_dir + "/jobs/" + j.id);
    }
  }
  MeasureJobStorage(st);
}

}  // namespace mineru::server
