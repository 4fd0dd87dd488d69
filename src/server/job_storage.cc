#include "server/job_storage.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
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

namespace {

// What the jobs keep: the store's own files when it keeps them (data_dir/jobs then holds only
// scratch copies of jobs being parsed), else data_dir/jobs. Caller holds st.store_mu.
void MeasureLocked(Server::State& st) {
  if (st.jobs->stores_files()) {
    if (auto stored = st.jobs->StoredFileBytes(); stored.ok()) st.store_bytes = *stored;
    return;
  }
  st.store_bytes = TreeBytes(st.opt.data_dir + "/jobs");
}

// Removes an expired job's local files and takes them off the count.
void Forget(Server::State& st, const Job& j) {
  const std::string dir = st.opt.data_dir + "/jobs/" + j.id;
  if (!st.jobs->stores_files()) st.store_bytes -= TreeBytes(dir);
  RemoveTree(dir);
}

// Expires the oldest finished jobs until need fits the quota; false when none is left.
bool ExpireUntilFits(Server::State& st, int64_t need, int64_t quota, Status* error) {
  while (st.store_bytes.load() + need > quota) {
    auto old = st.jobs->DeleteOldestFinished(8);
    if (!old.ok()) {
      *error = old.status();
      return false;
    }
    if (old->empty()) return false;
    for (const Job& j : *old) Forget(st, j);
    st.metrics.Inc("mineru_jobs_expired_total", "", static_cast<double>(old->size()));
    if (st.jobs->stores_files()) MeasureLocked(st);  // the rows took their files with them
  }
  return true;
}

}  // namespace

void MeasureJobStorage(Server::State& st) {
  std::lock_guard<std::mutex> lock(st.store_mu);
  MeasureLocked(st);
}

Status StoreCharge::Take() {
  const int64_t quota = static_cast<int64_t>(std::min<size_t>(st_.opt.max_store_mb, size_t(1) << 40) << 20);
  if (quota > 0) {
    if (need_ > quota) {
      return StorageFullError("the upload is larger than the server's whole job storage (" +
                              std::to_string(quota >> 20) + " MB, --max-store-mb)");
    }
    std::lock_guard<std::mutex> lock(st_.store_mu);
    Status error;
    if (!ExpireUntilFits(st_, need_, quota, &error)) {
      if (!error.ok()) return error;
      return StorageFullError("the server's job storage is full (" + std::to_string(quota >> 20) +
                              " MB, --max-store-mb) with unfinished jobs; try again later");
    }
  }
  st_.store_bytes += need_;
  taken_ = true;
  return Status::Ok();
}

StoreCharge::~StoreCharge() {
  if (taken_ && !kept_) st_.store_bytes -= need_;
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
