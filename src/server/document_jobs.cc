// server/document_jobs.cc — the document job runner: the worker loop (JobWorker) that claims queued
// jobs and parses them. Not the job routes (document_api.cc: POST /tasks and GET /tasks/...) nor
// the job store (job_store.cc, pg_job_store.cc).
// A worker claims a job with a lease it renews while parsing (LeaseKeeper); progress and the
// finish only count while it still owns the job. With a store that keeps files (PostgreSQL), the
// upload and the outputs live in the store and any replica serves them; the worker parses in a
// local scratch directory and stores the page images as they are done and the rest at the finish.

#include <dirent.h>
#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <set>
#include <thread>

#include "base/mapped_file.h"
#include "pipeline/document.h"
#include "server/document_parse.h"
#include "server/job_storage.h"
#include "server/state.h"

namespace mineru::server {
namespace {

// Regular files under root/rel, as paths relative to root.
void ListTree(const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  const std::string dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const std::string f = e->d_name;
    if (f == "." || f == "..") continue;
    const std::string r = rel.empty() ? f : rel + "/" + f;
    struct stat sb;
    if (::stat((root + "/" + r).c_str(), &sb) != 0) continue;
    if (S_ISDIR(sb.st_mode))
      ListTree(root, r, out);
    else if (S_ISREG(sb.st_mode))
      out->push_back(r);
  }
  ::closedir(d);
}

// A job interrupted this many times (its worker died or stalled while parsing it each time) fails
// instead of taking down the next worker too.
constexpr int kMaxAttempts = 5;

// Keeps a claimed job's lease alive while it is parsed (renewed every lease/3), and cancels the
// parse when the server drains or when the job turns out to belong to another worker now (the
// lease expired, e.g. this process was stopped, and someone else claimed it).
class LeaseKeeper {
 public:
  LeaseKeeper(Server::State& st, std::string id) : st_(st), id_(std::move(id)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~LeaseKeeper() { Stop(); }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void MarkLost() {
    lost = true;
    cancel = true;
  }
  std::atomic<bool> cancel{false};     // the parse stops at the next page
  std::atomic<bool> lost{false};       // another worker owns the job: discard everything
  std::atomic<bool> by_client{false};  // the client canceled the job (State::CancelJob)

 private:
  void Run() {
    using Clock = std::chrono::steady_clock;
    const auto every = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(0.2, st_.opt.job_lease_s / 3)));
    auto next = Clock::now() + every;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));  // also notices draining within 0.1 s
      if (stop_) break;
      if (st_.draining) cancel = true;
      if (st_.JobCanceled(id_)) {
        by_client = true;
        cancel = true;
      }
      if (Clock::now() < next) continue;
      lock.unlock();
      auto r = st_.jobs->RenewLease(id_, st_.worker_id, st_.opt.job_lease_s);
      lock.lock();
      if (r.ok() && !*r) MarkLost();
      if (!r.ok())
        std::fprintf(stderr, "job %s: cannot renew the lease: %s\n", id_.c_str(),
                     r.status().message().c_str());
      next = Clock::now() + every;
    }
  }

  Server::State& st_;
  std::string id_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

void JobLost(Server::State& st, const Job& j) {
  std::fprintf(stderr,
               "job %s: taken over by another worker (the lease expired); this attempt is discarded\n",
               j.id.c_str());
  st.metrics.Inc("mineru_jobs_lease_lost_total");
}

void FinishJob(Server::State& st, const Job& j, bool ok, const std::string& err,
               const std::string& result_dir, const std::vector<JobFile>& files) {
  auto forget = [&] {
    std::lock_guard<std::mutex> lock(st.unrecorded_mu);
    st.unrecorded.erase(j.id);
  };
  for (int attempt = 0;; ++attempt) {
    auto f = st.jobs->Finish(j.id, st.worker_id, ok, err, result_dir, files);
    if (f.ok()) {
      forget();
      if (!*f) return JobLost(st, j);
      st.metrics.Inc("mineru_jobs_finished_total", ok ? "status=\"done\"" : "status=\"failed\"");
      return;
    }
    std::fprintf(stderr, "job %s: cannot record the finish: %s\n", j.id.c_str(),
                 f.status().message().c_str());
    st.metrics.Inc("mineru_storage_errors_total", "kind=\"finish\"");
    if (attempt == 0) {
      Job shown = j;
      shown.status = ok ? "done" : "failed";
      shown.error = err;
      shown.updated = NowSeconds();
      std::lock_guard<std::mutex> lock(st.unrecorded_mu);
      st.unrecorded[j.id] = shown;
    }
    // A shared store that is unreachable: retry briefly; after that the lease expires and another
    // worker redoes the job. The local store has no other worker: keep trying (the disk may get
    // space back) until the server drains; a job left "running" then is redone on the next start.
    if (st.draining || (st.jobs->shared() && attempt >= 3)) {
      if (st.jobs->shared()) forget();
      return;
    }
    std::unique_lock<std::mutex> lock(st.jobs_mu);
    st.jobs_cv.wait_for(lock, std::chrono::seconds(std::min(1 << std::min(attempt, 4), 5)),
                        [&] { return st.draining.load(); });
  }
}

// Where a job reads its document and writes its outputs. With a file-storing job store, `work` is
// a local scratch directory holding a copy of the upload and the outputs (removed after the job).
struct JobPaths {
  std::string input, result_dir, work;
};

// Copies the upload from a file-storing store into the scratch directory. False when the job
// cannot run here: it was released back to the queue (a local failure) or finished as failed (the
// upload is gone); the caller stops.
bool StageUpload(Server::State& st, const Job& j, JobPaths* paths) {
  paths->work = st.opt.data_dir + "/jobs/" + j.id;
  RemoveTree(paths->work);
  Status made = MakeDirs(paths->work);
  auto up = made.ok() ? st.jobs->ReadFile(j.id, "upload/" + j.filename)
                      : StatusOr<std::optional<std::string>>(made);
  if (!up.ok()) {
    std::fprintf(stderr, "job %s: cannot read the upload: %s\n", j.id.c_str(), up.status().message().c_str());
    (void)st.jobs->Release(j.id, st.worker_id);
    RemoveTree(paths->work);
    return false;
  }
  if (!up->has_value()) {
    FinishJob(st, j, false, "the upload is missing from the job store", "", {});
    return false;
  }
  paths->input = paths->work + "/" + j.filename;
  paths->result_dir = paths->work + "/out";
  Status w = WriteStringToFile(paths->input, **up);
  if (!w.ok()) {
    std::fprintf(stderr, "job %s: cannot write the scratch copy: %s\n", j.id.c_str(), w.message().c_str());
    (void)st.jobs->Release(j.id, st.worker_id);
    RemoveTree(paths->work);
    return false;
  }
  return true;
}

// The parse's progress callback: records pages done in the store (which also renews the lease)
// and, with a file-storing store, uploads each page image as soon as it is written. Marks the
// lease lost when the store says another worker owns the job. Passed by reference (std::ref).
struct JobProgress {
  Server::State& st;
  const Job& j;
  bool stored;
  std::string name;  // the document's folder under result_dir
  std::string result_dir;
  LeaseKeeper& keeper;
  std::set<std::string> stored_files;  // page images already in the store

  void operator()(const pipeline::ProgressEvent& e) {
    if (e.kind == pipeline::ProgressEvent::kDocumentDone || keeper.lost) return;
    if (stored && e.kind == pipeline::ProgressEvent::kPageDone) {
      // The page image first (a replica that shows "n pages done" can show page n), now rather
      // than at the finish, so every replica can show it while the job runs.
      const std::string rel = name + "/" + PageFile(e.page);
      auto png = ReadFileToString(result_dir + "/" + rel, 64u << 20);
      if (png.ok()) {
        auto put = st.jobs->PutFiles(j.id, st.worker_id, std::vector<JobFile>{JobFile{rel, std::move(*png)}});
        if (put.ok() && !*put) return keeper.MarkLost();
        if (put.ok())
          stored_files.insert(rel);  // else it goes with the other files at the finish
        else
          std::fprintf(stderr, "job %s: cannot store %s: %s\n", j.id.c_str(), rel.c_str(),
                       put.status().message().c_str());
      }
    }
    auto own = st.jobs->UpdateProgress(j.id, st.worker_id, e.pages_done, e.pages_total, st.opt.job_lease_s);
    if (own.ok() && !*own) keeper.MarkLost();
  }
};

// Every file under result_dir (relative paths) not already in the store, read for upload.
std::vector<JobFile> ResultFiles(const std::string& result_dir, const std::set<std::string>& stored_files) {
  std::vector<JobFile> files;
  std::vector<std::string> names;
  ListTree(result_dir, "", &names);
  for (const std::string& rel : names) {
    if (stored_files.count(rel)) continue;
    auto data = ReadFileToString(result_dir + "/" + rel, size_t(1) << 30);
    if (data.ok()) files.push_back({rel, std::move(*data)});
  }
  return files;
}

// Records how the parse ended: discarded (lease lost), handed back (draining), or finished.
void RecordOutcome(Server::State& st, const Job& j, const pipeline::DocumentReport& r,
                   const JobProgress& progress) {
  if (progress.keeper.lost) {
    JobLost(st, j);
  } else if (r.status.code() == StatusCode::kCancelled && progress.keeper.by_client) {
    FinishJob(st, j, false, kJobCanceledError, progress.stored ? "" : progress.result_dir, {});
  } else if (r.status.code() == StatusCode::kCancelled) {
    // Draining: hand the job back to the queue (another worker, or this one after a restart, redoes it).
    auto released = st.jobs->Release(j.id, st.worker_id);
    std::fprintf(stderr, "job %s: %s\n", j.id.c_str(),
                 released.ok() && *released ? "handed back to the queue (draining)"
                                            : "left for its lease to expire (draining)");
  } else {
    std::vector<JobFile> files;
    if (progress.stored && r.status.ok()) files = ResultFiles(progress.result_dir, progress.stored_files);
    FinishJob(st, j, r.status.ok(), JobError(r), progress.stored ? "" : progress.result_dir, files);
  }
}

void RunJob(Server::State& st, const Job& j) {
  if (j.attempts > kMaxAttempts) {
    return FinishJob(st, j, false,
                     "gave up after " + std::to_string(j.attempts - 1) +
                         " attempts: the worker parsing this document stopped each time",
                     j.result_dir, {});
  }
  if (st.JobCanceled(j.id)) return FinishJob(st, j, false, kJobCanceledError, j.result_dir, {});
  const bool stored = st.jobs->stores_files();
  JobPaths paths{j.input_path, j.result_dir, ""};
  if (stored && !StageUpload(st, j, &paths)) return;
  const ParseRequest p = JobParseRequest(j);
  std::unique_ptr<pipeline::Backend> owned;
  pipeline::Backend* backend = BackendFor(st, &owned);
  LeaseKeeper keeper(st, j.id);
  JobProgress progress{st, j, stored, pipeline::DocumentName(j.filename), paths.result_dir, keeper, {}};
  pipeline::ParseOptions o = OptionsFor(st, p, paths.result_dir);
  o.cancel = &keeper.cancel;
  // A job has --job-timeout-s in all from its claim: past it no page starts and it fails.
  if (st.opt.job_timeout_s > 0) {
    o.deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(st.opt.job_timeout_s));
  }
  int global_page = 0;
  pipeline::DocumentReport r =
      pipeline::ParseDocument(paths.input, o, *backend, &global_page, std::ref(progress));
  keeper.Stop();
  if (r.status.code() == StatusCode::kDeadlineExceeded) {
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%g", st.opt.job_timeout_s);
    r.status = DeadlineExceededError(std::string("the document took longer than --job-timeout-s (") + secs +
                                     " s); " + std::to_string(r.pages.size()) + " page(s) were parsed");
    st.metrics.Inc("mineru_jobs_deadline_exceeded_total");
  }
  // Counted before the job can expire (a stored job's files: at the next measure).
  if (!stored) st.store_bytes += TreeBytes(paths.result_dir);
  RecordOutcome(st, j, r, progress);
  if (stored) RemoveTree(paths.work);
  malloc_trim(0);
}

}  // namespace

void JobWorker(Server::State& st) {
  while (!st.draining) {
    {
      std::unique_lock<std::mutex> lock(st.jobs_mu);
      st.jobs_cv.wait_for(lock, std::chrono::seconds(2),
                          [&] { return st.draining.load() || st.ready.load() || st.doc_backend != nullptr; });
    }
    if (st.draining) break;
    if (!st.ready && !st.doc_backend) continue;
    // A degraded model (its file changed on disk) would fail every page: leave the jobs queued for
    // a healthy worker, or for this one after a restart.
    if (!st.doc_backend && !st.engine->Health().ok()) {
      std::unique_lock<std::mutex> lock(st.jobs_mu);
      st.jobs_cv.wait_for(lock, std::chrono::seconds(2), [&] { return st.draining.load(); });
      continue;
    }
    auto claimed = st.jobs->ClaimNext(st.worker_id, st.opt.job_lease_s);
    if (!claimed.ok() || !claimed->has_value()) {
      std::unique_lock<std::mutex> lock(st.jobs_mu);
      st.jobs_cv.wait_for(lock, std::chrono::milliseconds(500));
      continue;
    }
    ++st.jobs_running;
    try {
      RunJob(st, **claimed);
    } catch (const std::exception& e) {
      // Not expected (RunJob reports failures as statuses), but an escaping exception would end
      // the process and every other request with it.
      const bool oom = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
      const std::string err =
          oom ? "out of memory parsing the document" : std::string("internal error: ") + e.what();
      FinishJob(st, **claimed, false, err, (*claimed)->result_dir, {});
    }
    --st.jobs_running;
    st.jobs_cv.notify_all();
  }
}

}  // namespace mineru::server
