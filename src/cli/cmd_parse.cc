// cli/cmd_parse.cc — `mineru-cpp parse`: PDFs and images to MinerU's Markdown and JSON.

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "download/download.h"
#include "pdf/pdf.h"
#include "pipeline/document.h"
#include "pipeline/model_backend.h"

namespace mineru::cli {
namespace {

struct ParseFlags {
  std::vector<std::string> inputs;
  std::string output = "output";
  std::string model;
  std::string replay;
  std::string pages;
  std::string text_source = "model";
  std::string vl_utils = std::string(pipeline::kDefaultPipelineVersion);
  bool quiet = false;
  bool json = false;
  bool yes = false;
  bool no_layout_pictures = false;
  int threads = 0;
  int max_block_tokens = 4096;
  int pages_in_flight = 2;
  double page_render_timeout_s = 300;
  int kv_cache_mb = 2048;
  KvCacheType kv_type = KvCacheType::kAuto;
  std::string quant;
  ModelLoadOptions load;  // --mmproj, --min-pixels, --max-pixels
  DeviceFlags device;     // --device, --gpu-memory, --gpu-precision
};

bool HasDocExtension(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* ext : {".pdf", ".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff"}) {
    const std::string e = ext;
    if (lower.size() > e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

// Files as given; directories expanded to their supported documents (sorted, not recursive).
StatusOr<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    struct stat st {};
    if (::stat(in.c_str(), &st) != 0) return NotFoundError("no such file or directory: " + in);
    if (!S_ISDIR(st.st_mode)) {
      out.push_back(in);
      continue;
    }
    DIR* d = ::opendir(in.c_str());
    if (!d) return IoError("cannot read directory " + in);
    std::vector<std::string> found;
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name[0] != '.' && HasDocExtension(name)) found.push_back(in + "/" + name);
    }
    ::closedir(d);
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  if (out.empty()) return InvalidArgumentError("no input documents");
  return out;
}

class Progress {
 public:
  Progress(const ParseFlags& f, const pipeline::Backend* backend, size_t files)
      : quiet_(f.quiet),
        json_(f.json),
        tty_(::isatty(2) != 0),
        backend_(backend),
        files_(files),
        start_(std::chrono::steady_clock::now()) {}

  void operator()(const pipeline::ProgressEvent& e) {
    using K = pipeline::ProgressEvent;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const int64_t tokens = backend_ ? backend_->stats().generated_tokens : 0;
    if (e.kind == K::kDocumentStart) ++file_index_;
    if (e.kind == K::kPageDone) {
      ++pages_done_;
      blocks_ += e.blocks;
    }
    if (json_) {
      nlohmann::json j = {{"event", e.kind == K::kDocumentStart ? "document_start"
                                    : e.kind == K::kPageDone    ? "page_done"
                                                                : "document_done"},
                          {"input", e.input},
                          {"pages_done", e.pages_done},
                          {"pages_total", e.pages_total},
                          {"elapsed_s", elapsed},
                          {"generated_tokens", tokens}};
      if (e.kind == K::kPageDone) {
        j["page"] = e.page + 1;
        j["blocks"] = e.blocks;
        j["ok"] = e.page_ok;
        if (!e.page_ok) j["error"] = e.error;
      }
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      std::fflush(stdout);
      return;
    }
    if (quiet_) return;
    if (e.kind == K::kPageDone && !e.page_ok) {
      if (tty_) std::fprintf(stderr, "\r\033[K");
      std::fprintf(stderr, "warning: %s page %d failed: %s\n", e.input.c_str(), e.page + 1, e.error.c_str());
    }
    if (e.kind != K::kPageDone) return;
    const double per_page = pages_done_ > 0 ? elapsed / pages_done_ : 0;
    const double eta = per_page * (e.pages_total - e.pages_done);
    char line[512];
    std::snprintf(line, sizeof(line),
                  "[file %zu/%zu] page %d/%d | blocks %d | %.1f tok/s | %.1fs | ETA %.0fs", file_index_,
                  files_, e.pages_done, e.pages_total, blocks_, elapsed > 0 ? tokens / elapsed : 0.0, elapsed,
                  eta);
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line);
      if (e.pages_done == e.pages_total) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "%s\n", line);
    }
  }

 private:
  bool quiet_, json_, tty_;
  const pipeline::Backend* backend_;
  size_t files_, file_index_ = 0;
  int pages_done_ = 0, blocks_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// The pipeline options the flags ask for; 0, or Fail()'s exit code on a bad flag.
int ToParseOptions(const ParseFlags& f, pipeline::ParseOptions* opt) {
  opt->output_dir = f.output;
  opt->pages = f.pages;
  opt->layout_pictures = !f.no_layout_pictures;
  if (f.pages_in_flight < 1 || f.pages_in_flight > 64) return Fail("--pages-in-flight must be 1..64");
  opt->pages_in_flight = f.pages_in_flight;
  opt->limits.pdf.render_timeout_s = f.page_render_timeout_s;
  if (f.text_source == "model")
    opt->text_source = pipeline::TextSource::kModel;
  else if (f.text_source == "pdf")
    opt->text_source = pipeline::TextSource::kPdf;
  else if (f.text_source == "auto")
    opt->text_source = pipeline::TextSource::kAuto;
  else
    return Fail("--text-source must be auto, pdf or model");
  StatusOr<pipeline::PipelineVersion> version = pipeline::PipelineVersionNamed(f.vl_utils);
  if (!version.ok()) return Fail("--vl-utils: " + version.status().message());
  opt->version = std::move(version).value();
  return 0;
}

// The backend and what it runs on. Members are destroyed bottom-up: the engine before the
// tokenizer and model it uses, the backend last.
struct BackendStack {
  std::unique_ptr<pipeline::Backend> backend;
  std::unique_ptr<Qwen2VLModel> model;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<Engine> engine;
};

// Downloads the model into dir when it is missing and the user agrees (--yes or a terminal
// answer); 0, or Fail()'s exit code.
int EnsureModel(const ParseFlags& f, const std::string& dir) {
  if (ModelLooksComplete(dir)) return 0;
  bool go = f.yes;
  if (!go && ::isatty(0) && ::isatty(2)) {
    std::fprintf(stderr, "The model is not in %s. Download MinerU2.5 (about 2.3 GB) now? [y/N] ",
                 dir.c_str());
    char answer[16] = {0};
    go = std::fgets(answer, sizeof(answer), stdin) && (answer[0] == 'y' || answer[0] == 'Y');
  }
  if (!go) return Fail("no model at " + dir + "; run `mineru-cpp download` (or pass --yes, or --model DIR)");
  DownloadOptions d;
  d.model_dir = dir;
  Status s = DownloadModel(d, MakeTerminalProgress(f.quiet || f.json));
  if (!s.ok()) return Fail(s.message());
  return 0;
}

// The replay backend (--replay) or the model, tokenizer and engine behind a model backend; 0, or
// Fail()'s exit code.
int LoadBackend(const ParseFlags& f, BackendStack* st) {
  if (!f.replay.empty()) {
    auto b = pipeline::MakeReplayBackend(f.replay);
    if (!b.ok()) return Fail(b.status().ToString());
    st->backend = std::move(b).value();
    return 0;
  }
  const std::string dir = ResolveModelDir(f.model);
  if (int rc = EnsureModel(f, dir); rc != 0) return rc;
  ThreadPool load_pool(ResolveThreads(f.threads));
  auto m = Qwen2VLModel::Load(dir, WithQuant(f.load, f.quant), &load_pool);
  if (!m.ok()) return Fail(m.status().ToString());
  st->model = std::move(m).value();
  // Which checkpoint runs (2509, Pro-2604/2605, a GGUF file): MinerU's answers differ between them.
  if (!f.quiet) std::fprintf(stderr, "model: %s (%s)\n", st->model->name().c_str(), dir.c_str());
  auto t = LoadTokenizer(dir, f.load.mmproj);
  if (!t.ok()) return Fail(t.status().ToString());
  st->tok = std::move(t).value();
  EngineConfig ec;
  ec.threads = static_cast<int>(ResolveThreads(f.threads));
  ec.kv_cache_mb = static_cast<size_t>(f.kv_cache_mb);
  ec.kv_type = f.kv_type;
  auto device = ResolveDevice(f.device, f.quiet);
  if (!device.ok()) return Fail(device.status().ToString());
  ApplyDevice(*device, f.device, &ec);
  auto e = Engine::Create(*st->model, st->tok.get(), ec);
  if (!e.ok()) return Fail(e.status().ToString());
  st->engine = std::move(e).value();
  pipeline::ModelBackendOptions mo;
  mo.max_block_tokens = f.max_block_tokens;
  mo.max_layout_tokens = f.max_block_tokens;
  st->backend = pipeline::MakeModelBackend(st->engine.get(), mo);
  return 0;
}

// Parses every input in turn, reporting each document; the exit code is 1 when any file or page
// failed.
int ParseInputs(const ParseFlags& f, const pipeline::ParseOptions& opt,
                const std::vector<std::string>& inputs, pipeline::Backend& backend) {
  Progress progress(f, &backend, inputs.size());
  int global_page = 0, failed_files = 0, failed_pages = 0, pages = 0;
  for (const std::string& in : inputs) {
    pipeline::DocumentReport r = pipeline::ParseDocument(in, opt, backend, &global_page, std::ref(progress));
    pages += static_cast<int>(r.pages.size());
    failed_pages += r.failed_pages();
    if (!r.status.ok()) {
      ++failed_files;
      if (f.json) {
        std::printf("%s\n", nlohmann::json(
                                {{"event", "document_failed"}, {"input", in}, {"error", r.status.ToString()}})
                                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                                .c_str());
      } else {
        std::fprintf(stderr, "error: %s: %s\n", in.c_str(), r.status.ToString().c_str());
      }
    } else if (!f.quiet && !f.json) {
      std::fprintf(stderr, "%s -> %s (%zu pages, %d failed)\n", in.c_str(), r.output_dir.c_str(),
                   r.pages.size(), r.failed_pages());
    }
  }
  if (f.json) {
    std::printf("%s\n", nlohmann::json({{"event", "done"},
                                        {"files", inputs.size()},
                                        {"failed_files", failed_files},
                                        {"pages", pages},
                                        {"failed_pages", failed_pages}})
                            .dump()
                            .c_str());
  }
  return failed_files == 0 && failed_pages == 0 ? 0 : 1;
}

int RunParse(const ParseFlags& f) {
  ConfigureAllocatorForModel();
  pipeline::ParseOptions opt;
  if (int rc = ToParseOptions(f, &opt); rc != 0) return rc;
  auto inputs = ExpandInputs(f.inputs);
  if (!inputs.ok()) return Fail(inputs.status().message());
  BackendStack stack;
  if (int rc = LoadBackend(f, &stack); rc != 0) return rc;
  const int code = ParseInputs(f, opt, *inputs, *stack.backend);
  if (AbandonedRenders() > 0) {
    // A render abandoned at its deadline still runs inside poppler (renders on threads: only when
    // there is no render helper, see main.cc): leave without running global destructors under it.
    // Every output file is closed by now.
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

}  // namespace

void AddParse(CLI::App& app, Action* run) {
  auto f = std::make_shared<ParseFlags>();
  CLI::App* c = app.add_subcommand("parse", "Parse PDFs and images into MinerU Markdown and JSON");
  c->add_option("inputs", f->inputs, "PDF/image files or directories")->required();
  c->add_option("-o,--output", f->output, "Output directory (one folder per input)")->capture_default_str();
  c->add_option("--model", f->model, "Model directory (default: $MINERU_MODEL or ~/.cache/mineru-cpp/...)");
  c->add_option("--replay", f->replay,
                "Take the model's raw outputs from this JSON file instead of the model");
  c->add_option("--pages", f->pages, "Page ranges, 1-based, e.g. 3-7,10");
  c->add_option("--text-source", f->text_source, "auto | pdf | model: where text/title blocks get their text")
      ->capture_default_str();
  c->add_option("--vl-utils", f->vl_utils,
                "Extraction and files to reproduce: " + pipeline::PipelineVersionChoices())
      ->capture_default_str();
  c->add_flag("--quiet", f->quiet, "No progress output");
  c->add_flag("--json", f->json, "Progress and results as JSON lines on stdout");
  c->add_flag("--yes", f->yes, "Answer yes to questions (e.g. downloading the model)");
  c->add_flag("--no-layout-pictures", f->no_layout_pictures, "Do not draw layout/page_NNNN.png");
  c->add_option("--threads", f->threads, "Worker threads (default: all cores)");
  c->add_option("--quant", f->quant, "Weights: bf16 (as stored), q8, q4 (group 32), q4_g128");
  AddModelFileFlags(c, &f->load);
  c->add_option("--max-block-tokens", f->max_block_tokens, "Token limit per request")->capture_default_str();
  c->add_option("--pages-in-flight", f->pages_in_flight, "Pages processed concurrently")
      ->capture_default_str();
  c->add_option(
       "--page-render-timeout-s", f->page_render_timeout_s,
       "Seconds a PDF page may take to render (0: no limit); past it the page fails and the rest go on")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  c->add_option("--kv-cache-mb", f->kv_cache_mb, "Upper bound of KV cache memory")->capture_default_str();
  AddKvCacheFlag(c, &f->kv_type);
  AddDeviceFlags(c, &f->device);
  AddBatchFlags(c, &f->device);
  c->callback([f, run] {
    *run = [f](const kernels::KernelConfig& k) {
      f->load.kernels = k;
      return RunParse(*f);
    };
  });
}

}  // namespace mineru::cli
