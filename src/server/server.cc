#include "server/server.h"

#include "engine/model_tokenizer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <random>

#include "base/mapped_file.h"
#include "server/file_parse_v4.h"
#include "server/http_front.h"
#include "server/listen.h"
#include "server/state.h"
#include "server/tasks_v4.h"

namespace mineru::server {

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), "application/json");
}

bool SendFile(httplib::Response& res, const std::string& path, const std::string& content_type) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || ::fstat(fd, &sb) != 0) {
    if (fd >= 0) ::close(fd);
    return false;
  }
  auto file = std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  res.status = 200;
  res.set_content_provider(static_cast<size_t>(sb.st_size), content_type,
                           [file](size_t offset, size_t length, httplib::DataSink& sink) {
                             char buf[1 << 16];
                             const ssize_t n = ::pread(*file, buf, std::min(length, sizeof(buf)), offset);
                             return n > 0 && sink.write(buf, static_cast<size_t>(n));
                           });
  return true;
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 429 ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  SendJson(res, status,
           {{"object", "error"}, {"error", {{"message", message}, {"type", type}, {"code", status}}}});
}

Server::Server(ServerOptions options) : opt_(std::move(options)), st_(std::make_unique<State>()) {
  st_->opt = opt_;
  st_->retry = std::make_unique<RetryShare>(opt_.retry_grace_s);
}

Server::~Server() {
  if (!st_->draining) Drain(0);
  Wait();
}

namespace {

// Compares in time that depends on the expected value's length only (never on where the first
// difference is), so the key cannot be found byte by byte from response times.
bool ConstantTimeEquals(const std::string& got, const std::string& want) {
  unsigned diff = got.size() == want.size() ? 0u : 1u;
  for (size_t i = 0; i < want.size(); ++i) {
    diff |= static_cast<unsigned char>(i < got.size() ? got[i] : 0) ^ static_cast<unsigned char>(want[i]);
  }
  return diff == 0;
}

bool MakeDir(const std::string& d) { return ::mkdir(d.c_str(), 0755) == 0 || errno == EEXIST; }

// A server that cannot write its data directory would accept jobs it cannot keep: refuse to start.
Status CheckWritable(const std::string& dir) {
  const std::string probe = dir + "/.write-probe-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("the data directory " + dir + " is not writable: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

// Every open connection is a file descriptor: raise the soft limit to fit max_connections (or
// lower max_connections to what the hard limit allows).
void FitFileLimit(ServerOptions& o) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = static_cast<rlim_t>(o.max_connections) + 256;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
    (void)::setrlimit(RLIMIT_NOFILE, &rl);
    (void)::getrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    o.max_connections =
        rl.rlim_cur > 512 ? static_cast<size_t>(rl.rlim_cur) - 256 : static_cast<size_t>(rl.rlim_cur) / 2;
    std::fprintf(stderr, "warning: the open file limit (%llu) allows %zu connections\n",
                 static_cast<unsigned long long>(rl.rlim_cur), o.max_connections);
  }
}

std::string BaseName(std::string p) {
  while (!p.empty() && p.back() == '/') p.pop_back();
  const size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

void LoadModel(Server::State& st) {
  ThreadPool pool(st.opt.engine.threads > 0 ? static_cast<size_t>(st.opt.engine.threads)
                                            : ThreadPool::DefaultThreads());
  ModelLoadOptions lo = st.opt.load;
  lo.quant = st.opt.quant;
  auto m = Qwen2VLModel::Load(st.opt.model_dir, lo, &pool);
  if (!m.ok()) {
    st.SetLoadError(m.status().ToString());
    std::fprintf(stderr, "error: model: %s\n", m.status().ToString().c_str());
    return;
  }
  st.model = std::move(m).value();
  auto t = LoadModelTokenizer(st.model->files());
  if (!t.ok()) {
    st.SetLoadError(t.status().ToString());
    return;
  }
  st.tokenizer = std::move(t).value();
  auto e = Engine::Create(*st.model, st.tokenizer.get(), st.opt.engine);
  if (!e.ok()) {
    st.SetLoadError(e.status().ToString());
    return;
  }
  st.engine = std::move(e).value();
  // Logged before /health turns 200, so whoever saw it ready finds the line.
  std::fprintf(stderr, "model ready: %s (%s)\n", st.model->name().c_str(), st.opt.model_dir.c_str());
  st.ready = true;
  st.jobs_cv.notify_all();
}

// cpp-httplib (the Debian build) listens with a backlog of 5: a burst of clients connecting at once
// (MinerU's client opens one connection per block of a page) would see dropped SYNs and seconds of
// retransmission delay. Linux lets listen() be called again on the listening socket to raise it.
void WidenListenBacklog(int port) {
  for (int fd = 0; fd < 1024; ++fd) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof(addr);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int p = -1;
    if (addr.ss_family == AF_INET) p = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6) p = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (p == port) ::listen(fd, SOMAXCONN);
  }
}

// The data directory, the job store (interrupted jobs requeued) and, with --replay, the recorded
// document backend.
Status PrepareStorage(Server::State& st) {
  if (!MakeDir(st.opt.data_dir) || !MakeDir(st.opt.data_dir + "/jobs")) {
    return IoError("cannot create the data directory " + st.opt.data_dir + ": " + std::strerror(errno));
  }
  MINERU_RETURN_IF_ERROR(CheckWritable(st.opt.data_dir));
  MINERU_RETURN_IF_ERROR(CheckWritable(st.opt.data_dir + "/jobs"));
  RemoveLeftoverUploads(st.opt.data_dir);
  st.worker_id = NewWorkerId();
  MINERU_ASSIGN_OR_RETURN(
      st.jobs, JobStore::Open(st.opt.jobs_db.empty() ? st.opt.data_dir + "/jobs.sqlite3" : st.opt.jobs_db));
  MINERU_ASSIGN_OR_RETURN(int requeued, st.jobs->RequeueInterrupted());
  if (requeued > 0) std::fprintf(stderr, "resuming %d interrupted job(s)\n", requeued);
  MeasureJobStorage(st);
  st.tasks_v4 = std::make_unique<TaskRegistryV4>(st.opt.data_dir + "/tasks");
  MINERU_RETURN_IF_ERROR(st.tasks_v4->Load());
  for (const std::string& job : st.tasks_v4->CanceledJobs()) st.CancelJob(job);  // canceled before a restart
  std::fprintf(stderr, "job store: %s, worker id %s\n", st.jobs->kind(), st.worker_id.c_str());
  if (!st.opt.replay.empty()) {
    MINERU_ASSIGN_OR_RETURN(st.doc_backend,
                            pipeline::MakeReplayBackend(st.opt.replay, st.opt.replay_delay_ms));
  }
  return Status::Ok();
}

// Options of the connection front from the server's flags.
HttpFrontOptions FrontOptions(const ServerOptions& o) {
  HttpFrontOptions front;
  front.workers = std::max(8, o.http_threads);
  front.read_timeout_s = o.read_timeout_s;
  front.body_timeout_s = o.body_timeout_s;
  front.write_timeout_s = o.write_timeout_s;
  front.max_connections = std::max<size_t>(1, o.max_connections);
  front.max_queued = std::max<size_t>(1, o.max_waiting_requests);
  front.send_buffer_bytes = std::max(0, o.send_buffer_kb) * 1024;
  return front;
}

// The edge checks (server/edge_policy.h) and the web root's confinement; true when answered.
bool RefusedAtTheEdge(const httplib::Request& req, httplib::Response& res, Server::State& s,
                      const std::string& web_root_real) {
  auto refuse = [&](int code, const std::string& message) {
    s.metrics.Inc("mineru_http_errors_total", "code=\"" + std::to_string(code) + "\"");
    SendError(res, code, message);
    return true;
  };
  if (HasControlBytes(req.path)) return refuse(400, "the path holds a control byte");
  const EdgeVerdict v = CheckEdge(
      {req.method, req.path, req.get_header_value("Host"), req.get_header_value("Origin"),
       req.get_header_value("Sec-Fetch-Site"), req.get_header_value("Content-Type"), req.remote_addr},
      s.opt.edge);
  if (v.status != 0) return refuse(v.status, v.message);
  if (!web_root_real.empty() && (req.method == "GET" || req.method == "HEAD") &&
      !StaticPathInsideRoot(web_root_real, req.path)) {
    return refuse(404, "not found");
  }
  // A preflight from an allowed origin: what it may send (no route handles OPTIONS itself).
  if (req.method == "OPTIONS" && !AllowedCorsOrigin(req.get_header_value("Origin"), s.opt.edge).empty()) {
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS");
    res.set_header("Access-Control-Allow-Headers",
                   "Authorization, Content-Type, Idempotency-Key, X-Request-Id");
    res.set_header("Access-Control-Max-Age", "600");
    return true;
  }
  return false;
}

// The real path of the built web page, "" when there is none.
std::string WebRootReal(const std::string& web) {
  if (web.empty() || !FileExists(web + "/index.html")) return "";
  char real[PATH_MAX];
  return ::realpath(web.c_str(), real) != nullptr ? std::string(real) : "";
}

// The request's id, as MinerU 4's API gives one on every response: the client's own X-Request-Id
// when it is 1-64 of [A-Za-z0-9_-], else a new "req_" + 16 hex digits.
std::string RequestIdFor(const httplib::Request& req) {
  std::string given = req.get_header_value("X-Request-Id");
  const bool ok = !given.empty() && given.size() <= 64 &&
                  std::all_of(given.begin(), given.end(),
                              [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-'; });
  if (ok) return given;
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng(std::random_device{}() ^ (counter.fetch_add(1) << 32));
  char id[24];
  std::snprintf(id, sizeof(id), "req_%016llx", static_cast<unsigned long long>(rng()));
  return id;
}

// What runs around every request: the edge checks, the API key check, the request counter,
// CORS headers for allowed origins, exceptions as 500/507.
void InstallRequestHooks(HttpFront& http, Server::State& s) {
  http.set_pre_routing_handler(
      [&s, root = WebRootReal(s.opt.web_dir)](const httplib::Request& req, httplib::Response& res) {
        res.set_header("X-Request-Id", RequestIdFor(req));  // every answer, refusals included
        if (RefusedAtTheEdge(req, res, s, root)) return httplib::Server::HandlerResponse::Handled;
        const std::string path = CanonicalApiPath(req.path);
        // MinerU 4's discovery routes are public (health, models, tiers), and a task's upload link
        // is a capability (tasks_v4.h).
        const bool open_path =
            path == "/health" || path == "/v1/health" || path == "/v1/tiers" ||
            (req.method == "GET" && (path == "/v1/models" || path.rfind("/v1/models/", 0) == 0)) ||
            req.method == "OPTIONS" || (req.method == "PUT" && IsTaskUploadPathV4(path)) ||
            (req.method == "GET" && path.rfind("/v1", 0) != 0 && path.rfind("/tasks", 0) != 0 &&
             path != "/metrics");
        if (!s.opt.api_key.empty() && !open_path) {
          if (!ConstantTimeEquals(req.get_header_value("Authorization"), "Bearer " + s.opt.api_key)) {
            s.metrics.Inc("mineru_http_errors_total", "code=\"401\"");
            const char* why = "missing or wrong API key (send Authorization: Bearer <key>)";
            // MinerU 4's routes answer in MinerU 4's envelope, the others in OpenAI's.
            if (path == "/v1/file_parse" || path == "/v1/tasks" || path.rfind("/v1/tasks/", 0) == 0) {
              SendErrorV4(res, 401, "invalid_api_key", why);
            } else {
              SendError(res, 401, why);
            }
            return httplib::Server::HandlerResponse::Handled;
          }
        }
        return httplib::Server::HandlerResponse::Unhandled;
      });
  http.set_post_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    const std::string origin = AllowedCorsOrigin(req.get_header_value("Origin"), s.opt.edge);
    if (!origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
    }
  });
  http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    // A fixed set of labels (metrics.h RouteLabel); the status is a number httplib checked.
    s.metrics.Inc("mineru_http_requests_total", std::string("route=\"") +
                                                    RouteLabel(CanonicalApiPath(req.path)) + "\",code=\"" +
                                                    std::to_string(res.status) + "\"");
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, const std::exception_ptr& ep) {
        std::string what = "internal error";
        int code = 500;
        try {
          std::rethrow_exception(ep);
        } catch (const std::bad_alloc&) {
          // What a handler did not turn into a Status itself: the request is lost, the process is not.
          what = "out of memory handling the request";
          code = 507;
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SendError(res, code, what);
      });
}

// GET /health: 200 with the queue when ready; 503 while loading, draining, degraded or failed.
void HandleHealth(Server::State& s, httplib::Response& res) {
  if (const std::string err = s.LoadError(); !err.empty()) {
    return SendJson(res, 503, {{"status", "error"}, {"error", err}});
  }
  if (s.draining) return SendJson(res, 503, {{"status", "draining"}});
  if (!s.ready) return SendJson(res, 503, {{"status", "loading"}});
  // A weight file changed on disk under the mapping (checked now): requests fail until a restart.
  if (Status h = s.engine->Health(); !h.ok()) {
    return SendJson(res, 503, {{"status", "degraded"}, {"error", h.message()}});
  }
  EngineStats es = s.engine->Stats();
  Json body = {{"status", "ok"},
               {"model", s.opt.model_name},
               {"checkpoint", s.model->name()},
               {"device", s.engine->device_description()},
               {"queue", {{"running", es.running}, {"waiting", es.waiting}}},
               {"kv_blocks", {{"used", es.kv_blocks_used}, {"total", es.kv_blocks_total}}},
               {"jobs",
                {{"queued", s.jobs->CountByStatus("queued").ok() ? *s.jobs->CountByStatus("queued") : -1},
                 {"running", s.jobs_running.load()},
                 {"store", s.jobs->kind()}}}};
  SendJson(res, 200, body);
}

// GET /metrics: Prometheus text (counters of metrics.h and gauges read now).
void HandleMetrics(Server::State& s, HttpFront& http, httplib::Response& res) {
  std::vector<std::pair<std::string, double>> g = {
      {"mineru_ready", s.ready ? 1.0 : 0.0},
      {"mineru_jobs_running", double(s.jobs_running.load())},
      {"mineru_http_connections_open", double(http.open_connections())}};
  auto q = s.jobs->CountByStatus("queued");
  g.push_back({"mineru_jobs_queued", q.ok() ? double(*q) : -1.0});
  g.push_back({"mineru_store_bytes", double(s.store_bytes.load())});
  g.push_back({"mineru_store_quota_bytes", double(s.opt.max_store_mb) * 1048576.0});
  g.push_back({"mineru_job_timeout_seconds", s.opt.job_timeout_s});
  if (s.ready) {
    g.push_back({"mineru_model_degraded", s.engine->Health().ok() ? 0.0 : 1.0});
    EngineStats es = s.engine->Stats();
    g.insert(g.end(), {{"mineru_requests_running", double(es.running)},
                       {"mineru_queue_depth", double(es.waiting)},
                       {"mineru_kv_blocks_used", double(es.kv_blocks_used)},
                       {"mineru_kv_blocks_total", double(es.kv_blocks_total)},
                       {"mineru_kv_blocks_cached", double(es.kv_blocks_cached)},
                       {"mineru_kv_bytes_allocated", double(es.kv_bytes_allocated)},
                       {"mineru_prefix_cache_lookups_total", double(es.prefix_lookups)},
                       {"mineru_prefix_cache_hits_total", double(es.prefix_hits)},
                       {"mineru_image_cache_hits_total", double(es.image_cache_hits)},
                       {"mineru_image_cache_misses_total", double(es.image_cache_misses)},
                       {"mineru_generated_tokens_total", double(es.generated_tokens)},
                       {"mineru_computed_tokens_total", double(es.computed_tokens)},
                       {"mineru_engine_steps_total", double(es.steps)},
                       {"mineru_engine_requests_total", double(es.submitted)}});
  }
  res.set_content(s.metrics.Render(g), "text/plain; version=0.0.4");
}

// GET /: the built web app when --web-dir holds one, else how to build it.
void RegisterWebPage(HttpFront& http, const std::string& web) {
  if (!web.empty() && FileExists(web + "/index.html")) {
    http.set_mount_point("/", web);
  } else {
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          "<!doctype html><title>mineru.cpp</title><h1>mineru.cpp</h1><p>The web page is not built: run "
          "<code>cd web &amp;&amp; npm ci &amp;&amp; npm run build</code> and start the server with "
          "<code>--web-dir web/dist</code>. The API is at /v1/chat/completions, /file_parse and /tasks.</p>",
          "text/html");
    });
  }
}

}  // namespace

StatusOr<int> Server::Start() {
  State& st = *st_;
  if (st.opt.model_name.empty()) st.opt.model_name = BaseName(st.opt.model_dir);
  if (st.opt.model_name.empty()) st.opt.model_name = "mineru2.5";
  st.opt.edge.bound_host = st.opt.host;
  MINERU_RETURN_IF_ERROR(PrepareStorage(st));

  FitFileLimit(st.opt);
  http_ = std::make_unique<HttpFront>();
  HttpFront& http = *http_;
  http.set_payload_max_length(st.opt.max_body_mb << 20);
  const bool front_ok = http.StartFront(FrontOptions(st.opt), [this](const char* reason) {
    st_->metrics.Inc("mineru_http_connections_closed_total", std::string("reason=\"") + reason + "\"");
  });
  if (!front_ok) return IoError(std::string("cannot start the connection reader: ") + std::strerror(errno));
  InstallRequestHooks(http, st);
  http.Get("/health", [&st](const httplib::Request&, httplib::Response& res) { HandleHealth(st, res); });
  http.Get("/metrics", [&st, front = http_.get()](const httplib::Request&, httplib::Response& res) {
    HandleMetrics(st, *front, res);
  });
  RegisterOpenAiRoutes(http, st);
  RegisterDocumentRoutes(http, st);
  RegisterFileParseV4(http, st);
  RegisterTasksV4(http, st);
  RegisterWebPage(http, st.opt.web_dir);

  const int port = st.opt.port == 0 ? http.bind_to_any_port(st.opt.host)
                                    : (http.bind_to_port(st.opt.host, st.opt.port) ? st.opt.port : -1);
  if (port < 0) return IoError("cannot listen on " + st.opt.host + ":" + std::to_string(st.opt.port));
  WidenListenBacklog(port);
  listen_thread_ = ListenInBackground(*http_);  // a Drain() right after Start() must end it
  load_thread_ = std::thread([this] { LoadModel(*st_); });
  for (int i = 0; i < std::max(1, st.opt.job_workers); ++i)
    workers_.emplace_back([this] { JobWorker(*st_); });
  retention_thread_ = std::thread([this] {
    while (!st_->draining) {
      RetentionSweep(*st_);
      std::unique_lock<std::mutex> lock(st_->jobs_mu);
      st_->jobs_cv.wait_for(lock, std::chrono::seconds(60), [this] { return st_->draining.load(); });
    }
  });
  return port;
}

void Server::Drain(double drain_s) {
  State& st = *st_;
  {
    // Set under the mutex the waiters check it under: a waiter between its check and its wait
    // cannot miss the notification.
    std::lock_guard<std::mutex> lock(st.jobs_mu);
    st.draining = true;
  }
  st.jobs_cv.notify_all();
  // Job workers finish the page in flight or leave the job "running" for the next start.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(drain_s);
  while (st.jobs_running > 0 && std::chrono::steady_clock::now() < deadline) {
    std::unique_lock<std::mutex> lock(st.jobs_mu);
    st.jobs_cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  if (http_) http_->stop();  // closes the listener; in-flight handlers complete
}

void Server::Wait() {
  if (listen_thread_.joinable()) listen_thread_.join();
  if (http_) http_->StopFront();  // requests in flight finish; idle connections close
  if (load_thread_.joinable()) load_thread_.join();
  if (retention_thread_.joinable()) retention_thread_.join();
  // Workers stop at the next page boundary once draining (their job goes back to the queue).
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
}

}  // namespace mineru::server
