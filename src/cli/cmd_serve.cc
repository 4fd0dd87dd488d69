// cli/cmd_serve.cc — `mineru-cpp serve`: the HTTP service. SIGTERM/SIGINT drain gracefully: stop
// accepting, let in-flight requests finish, leave unfinished jobs for the next start.

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "cli/common.h"
#include "cli/commands.h"
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
};

int RunServe(ServeFlags f) {
  // Large buffers (page images, activations) always come from mmap and go back to the OS when
  // freed, and few malloc arenas: the server's memory returns to its baseline after load.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 4);
  f.o.model_dir = ResolveModelDir(f.model);
  f.o.engine.threads = static_cast<int>(ResolveThreads(f.threads));
  f.o.engine.kv_cache_mb = static_cast<size_t>(f.kv_cache_mb);
  if (f.o.web_dir.empty()) f.o.web_dir = std::string(MINERU_SOURCE_DIR) + "/web/dist";
  if (f.o.port < 0 || f.o.port > 65535) return Fail("--port must be 0..65535");
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
  std::fprintf(stderr, "listening on http://%s:%d (model %s)\n", f.o.host.c_str(), *port, f.o.model_dir.c_str());
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

}  // namespace

void AddServe(CLI::App& app, Action* run) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* c = app.add_subcommand("serve", "HTTP server: OpenAI-style API, /file_parse, /tasks, web page");
  c->add_option("--model", f->model, "Model directory");
  c->add_option("--host", f->o.host, "Address to bind")->capture_default_str();
  c->add_option("--port", f->o.port, "Port (0 = any free port)")->capture_default_str();
  c->add_option("--model-name", f->o.model_name, "Model id in /v1/models (default: the directory name)");
  c->add_option("--api-key", f->o.api_key, "Require Authorization: Bearer <key>");
  c->add_flag("--allow-remote-images", f->o.allow_remote_images, "Accept http(s) image URLs");
  c->add_option("--data-dir", f->o.data_dir, "Uploads and job outputs")->capture_default_str();
  c->add_option("--jobs-db", f->o.jobs_db,
                "Job store: a SQLite file (default: DATA_DIR/jobs.sqlite3) or postgresql://USER:PASS@HOST:PORT/DB "
                "(a queue shared by many servers; uploads and results kept in the database)");
  c->add_option("--job-lease-seconds", f->o.job_lease_s,
                "A running job's lease: renewed while it parses; when its server dies, another takes the job "
                "over after this long")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 86400.0));
  c->add_option("--retention-hours", f->o.retention_hours, "Keep finished jobs this long")->capture_default_str();
  c->add_option("--job-workers", f->o.job_workers, "Documents parsed concurrently")->capture_default_str();
  c->add_option("--max-queued-jobs", f->o.max_queued_jobs, "More queued jobs get 429")->capture_default_str();
  c->add_option("--max-body-mb", f->o.max_body_mb, "Request body limit")->capture_default_str();
  c->add_option("--max-image-pixels", f->o.max_image_pixels, "Per image")->capture_default_str();
  c->add_option("--max-pages", f->o.max_pages, "Per document")->capture_default_str();
  c->add_option("--max-tokens", f->o.default_max_tokens, "Generation limit when a request sets none")->capture_default_str();
  c->add_option("--max-queued-requests", f->o.engine.max_queued, "Chat requests in flight; more get 429")->capture_default_str();
  c->add_option("--max-prompt-tokens", f->o.engine.max_prompt_tokens, "Per request")->capture_default_str();
  c->add_option("--request-timeout", f->o.request_timeout_s, "Seconds per chat request")->capture_default_str();
  c->add_option("--http-threads", f->o.http_threads,
                "Requests processed at once (connections waiting for a request hold no thread)")
      ->capture_default_str();
  c->add_option("--read-timeout-s", f->o.read_timeout_s,
                "A request head must arrive within this (else 408 and close); a body may pause this long")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  c->add_option("--write-timeout-s", f->o.write_timeout_s,
                "A client that reads nothing of its response for this long is dropped (its generation is "
                "cancelled)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  c->add_option("--max-connections", f->o.max_connections, "Open connections; one more is answered 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  c->add_option("--send-buffer-kb", f->o.send_buffer_kb,
                "Kernel send buffer per connection (0: sized by the kernel, up to 4 MB): bounds the memory a "
                "client that does not read can pin, and how soon --write-timeout-s notices it")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  c->add_option("--threads", f->threads, "Compute threads (default: all cores)");
  c->add_option("--quant", f->o.quant, "Weights: bf16 (as stored), q8, q4 (group 32), q4_g128");
  c->add_option("--kv-cache-mb", f->kv_cache_mb, "Upper bound of KV cache memory")->capture_default_str();
  c->add_option("--replay", f->o.replay, "Document jobs use recorded outputs (tests)");
  c->add_option("--replay-delay-ms", f->o.replay_delay_ms, "With --replay: latency per page (tests)");
  c->add_option("--web-dir", f->o.web_dir, "Built web page (default: web/dist of the source tree)");
  c->add_option("--drain-seconds", f->drain_s, "Graceful shutdown budget")->capture_default_str();
  c->callback([f, run] { *run = [f] { return RunServe(*f); }; });
}

}  // namespace mineru::cli
