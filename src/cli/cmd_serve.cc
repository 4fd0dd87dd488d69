// cli/cmd_serve.cc — `mineru-cpp serve`: the HTTP service. SIGTERM/SIGINT drain gracefully: stop
// accepting, let in-flight requests finish, leave unfinished jobs for the next start.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "server/server.h"

#ifndef MINERU_SOURCE_DIR
#define MINERU_SOURCE_DIR "."
#endif

namespace mineru::cli {
namespace {

struct ServeFlags {
  server::ServerOptions o;
  std::string model;
  int threads = 0;
  double drain_s = 30;
  int kv_cache_mb = 2048;
  std::string api_key_file;
  DeviceFlags device;  // --device, --gpu-memory, --gpu-precision
};

// The API key from --api-key, else --api-key-file (first line), else $MINERU_API_KEY: the latter
// two keep it out of argv (visible to every local user in /proc). "" : no key.
bool ResolveApiKey(ServeFlags& f) {
  if (!f.o.api_key.empty()) return f.api_key_file.empty();
  if (!f.api_key_file.empty()) {
    std::FILE* in = std::fopen(f.api_key_file.c_str(), "r");
    if (!in) return false;
    char line[4096] = {0};
    const bool got = std::fgets(line, sizeof(line), in) != nullptr;
    std::fclose(in);
    std::string key = got ? line : "";
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
    f.o.api_key = key;
    return !key.empty();
  }
  if (const char* env = std::getenv("MINERU_API_KEY")) f.o.api_key = env;
  return true;
}

int RunServe(ServeFlags f) {
  ConfigureAllocatorForModel();
  f.o.model_dir = ResolveModelDir(f.model);
  f.o.engine.threads = static_cast<int>(ResolveThreads(f.threads));
  f.o.engine.kv_cache_mb = static_cast<size_t>(f.kv_cache_mb);
  auto device = ResolveDevice(f.device);
  if (!device.ok()) return Fail(device.status().ToString());
  ApplyDevice(*device, f.device, &f.o.engine);
  if (f.o.web_dir.empty()) f.o.web_dir = std::string(MINERU_SOURCE_DIR) + "/web/dist";
  if (f.o.port < 0 || f.o.port > 65535) return Fail("--port must be 0..65535");
  auto version = pipeline::PipelineVersionNamed(f.o.vl_utils);
  if (!version.ok()) return Fail("--vl-utils: " + version.status().message());
  if (!ResolveApiKey(f))
    return Fail("--api-key-file: give it alone, as a readable file whose first line is the key");
  // Signals are taken by one thread with sigwait, so no handler runs inside library code.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // A file size limit (ulimit -f) must fail the write (EFBIG, answered like a full disk), not kill
  // the server.
  signal(SIGXFSZ, SIG_IGN);
  server::Server srv(f.o);
  auto port = srv.Start();
  if (!port.ok()) return Fail(port.status().ToString());
  std::fprintf(stderr, "listening on http://%s:%d (model %s)\n", f.o.host.c_str(), *port,
               f.o.model_dir.c_str());
  // Clients that reach the server by another name (a container's service name) get 421: say so.
  std::string names = "IP addresses, localhost";
  for (const std::string& h : f.o.edge.allowed_hosts) names += ", " + h;
  std::fprintf(stderr, "answering Host: %s (more with --allowed-host NAME)\n", names.c_str());
  std::fflush(stderr);
  std::thread sig([&] {
    int s = 0;
    sigwait(&set, &s);
    std::fprintf(stderr, "signal %d: draining\n", s);
    // A second signal, or the drain deadline, ends the process at once.
    std::thread hard([&] {
      int s2 = 0;
      sigwait(&set, &s2);
      std::_Exit(1);
    });
    hard.detach();
    std::thread watchdog([d = f.drain_s] {
      std::this_thread::sleep_for(std::chrono::duration<double>(d + 10));
      std::_Exit(1);
    });
    watchdog.detach();
    srv.Drain(f.drain_s);
  });
  srv.Wait();
  sig.detach();
  std::fprintf(stderr, "stopped\n");
  std::_Exit(0);  // in-flight work is done or left to the job store; skip global destructors
}

// Where the server listens, what it serves, and who may call it.
void AddEndpointFlags(CLI::App* c, ServeFlags* f) {
  c->add_option("--model", f->model, "Model directory");
  c->add_option("--host", f->o.host, "Address to bind")->capture_default_str();
  c->add_option("--port", f->o.port, "Port (0 = any free port)")->capture_default_str();
  c->add_option("--model-name", f->o.model_name, "Model id in /v1/models (default: the directory name)");
  c->add_option(
      "--api-key", f->o.api_key,
      "Require Authorization: Bearer <key> (prefer --api-key-file or $MINERU_API_KEY: argv is visible)");
  c->add_option("--api-key-file", f->api_key_file, "Read the API key from the first line of this file");
  c->add_flag("--allow-remote-images", f->o.allow_remote_images,
              "Accept http(s) image URLs (public addresses only; see --allow-private-image-hosts)");
  c->add_flag("--allow-private-image-hosts", f->o.allow_private_image_hosts,
              "With --allow-remote-images: also fetch from loopback, private and link-local addresses "
              "(request forgery risk: only where every client is trusted)");
  c->add_option("--remote-image-timeout-s", f->o.remote_image_timeout_s,
                "With --allow-remote-images: seconds for all image fetches of one request together "
                "(fetched 4 at a time)")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  c->add_flag("--allow-remote-sources", f->o.allow_remote_sources,
              "MinerU 4 tasks (POST /v1/tasks) may name files by http(s) URL, fetched by the server under "
              "--remote-image-timeout-s (public addresses only; see --allow-private-source-hosts)");
  c->add_flag("--allow-private-source-hosts", f->o.allow_private_source_hosts,
              "With --allow-remote-sources: also fetch from loopback, private and link-local addresses "
              "(request forgery risk: only where every client is trusted)");
  c->add_option("--max-tasks", f->o.max_tasks,
                "MinerU 4 tasks kept at once (until --retention-hours); more: 429")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  c->add_option("--allowed-host", f->o.edge.allowed_hosts,
                "A host name clients may use besides the bound address, IP literals and localhost (repeat; "
                "behind a proxy: the name it forwards; '*': any, which lets DNS-rebinding pages in)");
  c->add_option("--cors-origin", f->o.edge.cors_origins,
                "A web origin (scheme://host[:port]) whose pages may call the API (repeat); other sites' "
                "state-changing requests get 403");
  c->add_option(
      "--trusted-proxy", f->o.edge.trusted_proxies,
      "A proxy's address whose X-Forwarded-For is believed (repeat); from anyone else it is ignored");
}

// Document jobs (/file_parse, /tasks): storage, workers and per-document limits.
void AddDocumentFlags(CLI::App* c, ServeFlags* f) {
  c->add_option("--data-dir", f->o.data_dir, "Uploads and job outputs")->capture_default_str();
  c->add_option(
      "--jobs-db", f->o.jobs_db,
      "Job store: a SQLite file (default: DATA_DIR/jobs.sqlite3) or postgresql://USER:PASS@HOST:PORT/DB "
      "(a queue shared by many servers; uploads and results kept in the database)");
  c->add_option("--job-lease-seconds", f->o.job_lease_s,
                "A running job's lease: renewed while it parses; when its server dies, another takes the job "
                "over after this long")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 86400.0));
  c->add_option("--retention-hours", f->o.retention_hours, "Keep finished jobs this long")
      ->capture_default_str();
  c->add_option("--max-store-mb", f->o.max_store_mb,
                "Bytes of uploads and results kept for jobs (the oldest finished jobs expire first; "
                "full of unfinished ones: 507; 0: no quota)")
      ->check(CLI::Range(size_t(0), size_t(1) << 30))
      ->capture_default_str();
  c->add_option("--job-timeout-s", f->o.job_timeout_s,
                "Seconds one document job may take from its start (0: no limit)")
      ->capture_default_str();
  c->add_option("--job-workers", f->o.job_workers, "Documents parsed concurrently")->capture_default_str();
  c->add_option("--max-queued-jobs", f->o.max_queued_jobs, "More queued jobs get 429")->capture_default_str();
  c->add_option("--max-body-mb", f->o.max_body_mb, "Request body limit")->capture_default_str();
  c->add_option("--max-image-pixels", f->o.max_image_pixels, "Per image")->capture_default_str();
  c->add_option(
       "--file-parse-timeout-s", f->o.file_parse_timeout_s,
       "Seconds a /file_parse request may parse; past it no page starts and the answer is 504 (use /tasks "
       "for long documents)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  c->add_option(
       "--page-render-timeout-s", f->o.page_render_timeout_s,
       "Seconds a PDF page may take to render (0: no limit); past it the page fails, the job goes on")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  c->add_option("--vl-utils", f->o.vl_utils,
                "Extraction and files of the mineru-api 3.x document routes (/file_parse, /tasks, the web "
                "page): " +
                    pipeline::PipelineVersionChoices() + "; MinerU 4's routes always write MinerU 4's files")
      ->capture_default_str();
}

// Request budgets (images, pixels, pages, tokens), chat admission and retry sharing.
void AddChatFlags(CLI::App* c, ServeFlags* f) {
  c->add_option("--max-request-images", f->o.max_request_images, "Images per chat request (413 beyond)")
      ->capture_default_str();
  c->add_option("--max-request-pixels", f->o.max_request_pixels,
                "Pixels of all images of one request together, checked from their headers (413 beyond)")
      ->capture_default_str();
  c->add_option("--max-image-memory-mb", f->o.max_image_memory_mb,
                "Decoded images of all requests being parsed (429 beyond)")
      ->capture_default_str();
  c->add_option("--max-pages", f->o.max_pages, "Per document")->capture_default_str();
  c->add_option("--max-tokens", f->o.default_max_tokens, "Generation limit when a request sets none")
      ->capture_default_str();
  c->add_option("--max-queued-requests", f->o.engine.max_queued,
                "Chat requests in flight; more wait (--admission-wait-s), then get 429")
      ->capture_default_str();
  c->add_option(
       "--admission-wait-s", f->o.admission_wait_s,
       "A chat request that finds --max-queued-requests in flight waits this long for room, then gets "
       "429 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  c->add_option(
       "--retry-grace-s", f->o.retry_grace_s,
       "Identical deterministic non-streamed requests (a client's retries) arriving while the first runs "
       "or this long after it finished share its answer; 0 turns this off")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  c->add_option("--max-prompt-tokens", f->o.engine.max_prompt_tokens, "Per request")->capture_default_str();
  c->add_option("--request-timeout", f->o.request_timeout_s, "Seconds per chat request")
      ->capture_default_str();
}

// The HTTP front: threads, deadlines and connection budgets.
void AddConnectionFlags(CLI::App* c, ServeFlags* f) {
  c->add_option("--http-threads", f->o.http_threads,
                "Requests processed at once (connections waiting for a request hold no thread)")
      ->capture_default_str();
  c->add_option("--read-timeout-s", f->o.read_timeout_s,
                "A request head must arrive within this (else 408 and close); a body may pause this long")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  c->add_option("--body-timeout-s", f->o.body_timeout_s,
                "A request body must be complete this long after its head (else 408 and close)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  c->add_option("--write-timeout-s", f->o.write_timeout_s,
                "A response may wait this long in all for the client to read it; then the client is dropped "
                "(its generation is cancelled)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  c->add_option("--max-connections", f->o.max_connections, "Open connections; one more is answered 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  c->add_option("--max-waiting-requests", f->o.max_waiting_requests,
                "Complete requests waiting for an HTTP thread when all --http-threads are busy; one more is "
                "answered 503 at once (GET /health and /metrics have threads of their own)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  c->add_option("--send-buffer-kb", f->o.send_buffer_kb,
                "Kernel send buffer per connection (0: sized by the kernel, up to 4 MB): bounds the memory a "
                "client that does not read can pin, and how soon --write-timeout-s notices it")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
}

// Compute, model loading, replay (tests), the web page and shutdown.
void AddRuntimeFlags(CLI::App* c, ServeFlags* f) {
  c->add_option("--threads", f->threads, "Compute threads (default: all cores)");
  c->add_option("--quant", f->o.quant, "Weights: bf16 (as stored), q8, q4 (group 32), q4_g128");
  AddModelFileFlags(c, &f->o.load);
  c->add_option("--kv-cache-mb", f->kv_cache_mb, "Upper bound of KV cache memory")->capture_default_str();
  AddKvCacheFlag(c, &f->o.engine.kv_type);
  AddDeviceFlags(c, &f->device);
  AddBatchFlags(c, &f->device);
  c->add_option("--replay", f->o.replay, "Document jobs use recorded outputs (tests)");
  c->add_option("--replay-delay-ms", f->o.replay_delay_ms, "With --replay: latency per page (tests)");
  c->add_option("--web-dir", f->o.web_dir, "Built web page (default: web/dist of the source tree)");
  c->add_option("--drain-seconds", f->drain_s, "Graceful shutdown budget")->capture_default_str();
}

}  // namespace

void AddServe(CLI::App& app, Action* run) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* c = app.add_subcommand("serve", "HTTP server: OpenAI-style API, /file_parse, /tasks, web page");
  AddEndpointFlags(c, f.get());
  AddDocumentFlags(c, f.get());
  AddChatFlags(c, f.get());
  AddConnectionFlags(c, f.get());
  AddRuntimeFlags(c, f.get());
  c->callback([f, run] {
    *run = [f](const kernels::KernelConfig& k) {
      f->o.load.kernels = k;
      return RunServe(*f);
    };
  });
}

}  // namespace mineru::cli
