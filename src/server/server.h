// server/server.h — `mineru-cpp serve`: the OpenAI-style model API (MinerU's http-client talks to
// it), mineru-api's document API (/file_parse, durable /tasks), operations endpoints (/health,
// /metrics) and the web page. HTTP only at the edge: requests become EngineRequests or document
// jobs; no model logic here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "pipeline/backend.h"
#include "pipeline/versions.h"
#include "server/edge_policy.h"
#include "server/job_store.h"
#include "server/metrics.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace mineru::server {

class HttpFront;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string model_dir;   // checkpoint folder, GGUF folder or LM .gguf (model/gguf_model.h)
  std::string quant;       // bf16 (as stored), q8, q4, q4_0
  ModelLoadOptions load;   // mmproj and pixel-budget overrides (its quant is ignored: `quant` wins)
  std::string model_name;  // id in /v1/models (default: the model directory's name)
  std::string api_key;     // empty: no auth
  bool allow_remote_images = false;
  bool allow_private_image_hosts =
      false;  // with allow_remote_images: loopback/private hosts too (tests, intranets)
  double remote_image_timeout_s = 30;  // all remote image fetches of one request together
  // MinerU 4 tasks (POST /v1/tasks) may name files by URL (fetched under remote_image_timeout_s,
  // public addresses only unless allow_private_source_hosts).
  bool allow_remote_sources = false;
  bool allow_private_source_hosts = false;
  size_t max_tasks = 10000;              // MinerU 4 tasks kept (until retention_hours); more: 429
  double task_upload_ttl_s = 24 * 3600;  // a task's upload links expire this long after creation
  std::string data_dir = "mineru-data";  // uploads, job outputs
  std::string jobs_db;                   // SQLite path (default: data_dir/jobs.sqlite3) or postgresql://…
  double job_lease_s = 30;               // a running job's lease; renewed every third of it
  double retention_hours = 24 * 7;
  // Uploads and results of all jobs together; a new job that does not fit expires the oldest
  // finished jobs first, else gets 507. 0: no quota.
  size_t max_store_mb = 20480;
  double job_timeout_s = 6 * 3600;  // one job from its claim to its end (0: no limit)
  int job_workers = 2;
  size_t max_queued_jobs = 1000;
  size_t max_body_mb = 200;
  int64_t max_image_pixels = 50000000;
  double file_parse_timeout_s = 1800;      // a /file_parse request past it: no page starts, 504
  double page_render_timeout_s = 300;      // a PDF page render past it fails the page (0: no limit)
  int max_request_images = 16;             // per chat/completion request (413 beyond)
  int64_t max_request_pixels = 100000000;  // all images of one request together (413 beyond)
  size_t max_image_memory_mb = 2048;       // decoded images of all requests being parsed (429 beyond)
  int max_pages = 1000;                    // per document
  int default_max_tokens = 4096;           // when a chat request sends none
  double request_timeout_s = 600;
  // A chat request that finds the engine full (max_queued in flight) waits this long for room
  // before it gets 429 with Retry-After: overload is a queue, not an error.
  double admission_wait_s = 300;
  // Identical deterministic non-streamed requests arriving while the first runs or up to this long
  // after it finished share its answer (a client's retry costs no page); 0 turns sharing off.
  double retry_grace_s = 30;
  int http_threads = 128;              // requests processed at once (waiting connections cost no thread)
  double read_timeout_s = 60;          // a request head must arrive within it; a body may pause this long
  double body_timeout_s = 300;         // a request body must be complete this long after its head (else 408)
  double write_timeout_s = 600;        // a response may wait this long in all for the client to read
  size_t max_connections = 1024;       // open connections; one more is answered 503 at once
  size_t max_waiting_requests = 1024;  // complete requests waiting for an HTTP thread; one more: 503
  int send_buffer_kb = 0;              // per connection; 0: the kernel sizes it (up to net.ipv4.tcp_wmem)
  // Document extraction and files (pipeline/versions.h): the same default as `parse`.
  std::string vl_utils = std::string(pipeline::kDefaultPipelineVersion);
  std::string replay;  // document jobs use recorded outputs (tests)
  int replay_delay_ms = 0;
  std::string web_dir;  // built web page (web/dist)
  // Host names, cross-site origins and proxies the server trusts (server/edge_policy.h); its
  // bound_host is filled from `host` at start.
  EdgePolicyOptions edge;
  EngineConfig engine;
};

// A choice's "finish_reason" in the OpenAI API: "stop" or "length" as OpenAI's, "error" (with the
// message next to it) when the engine failed the request, e.g. because the model file changed on
// disk or memory ran out mid-way. OpenAI has no "cancelled": a request cut short (its deadline,
// the engine shutting down) answers "length".
const char* OpenAiFinishReason(FinishReason r);

// Parses a /v1/chat/completions body (exposed for the fuzz target and tests).
Status ParseChatCompletionBody(const std::string& body, const ServerOptions& opt, EngineRequest* out,
                               bool* stream);

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();

  // Binds and starts serving in background threads; the model loads asynchronously (/health
  // answers 503 until it is ready). Returns the bound port.
  StatusOr<int> Start();
  // Stops accepting, lets in-flight requests finish, stops job workers (a running job stops at the
  // next page and goes back to the queue; one still running at drain_s stays "running" in the
  // store until its lease expires or, with SQLite, the next start).
  void Drain(double drain_s = 30);
  // Blocks until Drain() completes.
  void Wait();

  // Shared state for the route handlers (openai_api.cc, document_api.cc) and the job runner
  // (document_jobs.cc).
  struct State;

 private:
  ServerOptions opt_;
  std::unique_ptr<State> st_;
  std::unique_ptr<HttpFront> http_;
  std::thread listen_thread_, load_thread_, retention_thread_;
  std::vector<std::thread> workers_;
};

}  // namespace mineru::server
