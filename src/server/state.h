// server/state.h — what the route handlers share (private to the server layer).
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "model/qwen2vl.h"
#include "server/http_status.h"
#include "server/retry_share.h"
#include "server/server.h"
#include "server/tasks_v4_registry.h"
#include "tokenizer/tokenizer.h"

namespace mineru::server {

using Json = nlohmann::json;

struct Server::State {
  ServerOptions opt;
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};
  // Why the model failed to load (empty while loading or once ready). Written by the loader
  // thread while handlers read it: through the accessors only.
  void SetLoadError(std::string e) {
    std::lock_guard<std::mutex> lock(load_error_mu);
    load_error = std::move(e);
  }
  std::string LoadError() const {
    std::lock_guard<std::mutex> lock(load_error_mu);
    return load_error;
  }
  std::unique_ptr<Qwen2VLModel> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<pipeline::Backend> doc_backend;
  std::unique_ptr<JobStore> jobs;
  std::unique_ptr<TaskRegistryV4> tasks_v4;  // MinerU 4's tasks (data_dir/tasks)
  std::unique_ptr<RetryShare> retry;         // identical deterministic retries share one run
  std::string worker_id;                     // this process as a job owner (NewWorkerId)
  Metrics metrics;
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::atomic<int> jobs_running{0};
  std::atomic<int> inflight_http{0};
  std::atomic<int> sync_parses{0};              // /file_parse requests being handled
  std::atomic<int64_t> decoded_image_bytes{0};  // held by requests being parsed (image_budget.h)
  std::atomic<int64_t> store_bytes{0};          // jobs' uploads and results (job_storage.h)
  std::mutex store_mu;                          // one submission makes room at a time
  // Finished jobs whose outcome the store could not record yet (by id; see FinishJob).
  std::mutex unrecorded_mu;
  std::map<std::string, Job> unrecorded;
  // Jobs a client canceled (MinerU 4's POST /v1/tasks/{id}/cancel), by id: a queued one finishes
  // as failed with kJobCanceledError when a worker of this process claims it, a running one stops
  // before its next page. Kept by the process (the Tasks API is served per server).
  void CancelJob(const std::string& id) {
    std::lock_guard<std::mutex> lock(canceled_mu);
    canceled_jobs.insert(id);
  }
  bool JobCanceled(const std::string& id) const {
    std::lock_guard<std::mutex> lock(canceled_mu);
    return canceled_jobs.count(id) > 0;
  }

 private:
  mutable std::mutex canceled_mu;
  std::set<std::string> canceled_jobs;
  mutable std::mutex load_error_mu;
  std::string load_error;
};

// Writes an OpenAI-style error body {"object":"error","error":{"message","type","code"}}.
void SendError(httplib::Response& res, int status, const std::string& message);
void SendJson(httplib::Response& res, int status, const Json& body);
// Streams the file at path (200, content_type) from an open descriptor, so the file may be removed
// once this returns. False when it cannot be opened (res untouched).
bool SendFile(httplib::Response& res, const std::string& path, const std::string& content_type);

void RegisterOpenAiRoutes(httplib::Server& http, Server::State& st);
void RegisterDocumentRoutes(httplib::Server& http, Server::State& st);
// Removes /file_parse work folders (data_dir/sync-*) a previous process left behind (killed while
// parsing): at start, before any request.
void RemoveLeftoverUploads(const std::string& data_dir);
// Job worker loop (runs until draining).
void JobWorker(Server::State& st);
// Deletes finished jobs past retention (and their files), then measures what the jobs keep.
void RetentionSweep(Server::State& st);
// Sets st.store_bytes to what data_dir/jobs and the store's own files hold now.
void MeasureJobStorage(Server::State& st);
// `need` bytes of a new job charged to --max-store-mb: Take() expires the oldest finished jobs
// first when they would not fit (StorageFull, 507 at the edge, when unfinished jobs fill it or
// need alone is over the quota); the charge is given back at destruction unless Keep().
class StoreCharge {
 public:
  StoreCharge(Server::State& st, int64_t need) : st_(st), need_(need) {}
  ~StoreCharge();
  StoreCharge(const StoreCharge&) = delete;
  StoreCharge& operator=(const StoreCharge&) = delete;
  Status Take();
  void Keep() { kept_ = true; }

 private:
  Server::State& st_;
  int64_t need_;
  bool taken_ = false, kept_ = false;
};
// rm -rf of a job or work folder (nothing for "", "/" or a path with a quote).
void RemoveTree(const std::string& path);

}  // namespace mineru::server
