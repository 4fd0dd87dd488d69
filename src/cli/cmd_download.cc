// cli/cmd_download.cc — `mineru-cpp download`: fetch the MinerU2.5 checkpoint from Hugging Face or
// ModelScope into the model directory (resumable, verified; see download/download.h).

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "download/download.h"

namespace mineru::cli {
namespace {

struct DownloadFlags {
  std::string model, source = "huggingface", repo, revision, endpoint;
  bool quiet = false, force = false;
};

int RunDownload(const DownloadFlags& f) {
  StatusOr<HubSource> source = ParseHubSource(f.source);
  if (!source.ok()) return Fail(source.status().message());
  StatusOr<std::string> repo = ResolveRepo(f.repo, *source);
  if (!repo.ok()) return Fail(repo.status().message());
  DownloadOptions o;
  o.source = *source;
  o.repo = *repo;
  o.revision = f.revision;
  o.endpoint = f.endpoint;
  // The default folder is named after the repository, so checkpoints never overwrite each other.
  const char* env = std::getenv("MINERU_MODEL");
  o.model_dir = !f.model.empty() || (env && *env) ? ResolveModelDir(f.model) : DefaultModelDir(*repo);
  o.force = f.force;
  DownloadSummary summary;
  Status s;
  {
    ProgressFn progress = MakeTerminalProgress(f.quiet);
    s = DownloadModel(o, progress, &summary);
  }
  if (!s.ok()) return Fail(s.message());
  if (!f.quiet) {
    if (summary.files_fetched == 0) {
      std::fprintf(stderr, "model in %s is complete (%d files verified, nothing to download)\n",
                   summary.model_dir.c_str(), summary.files_skipped);
    } else {
      std::fprintf(stderr, "downloaded %d file(s), %.1f MB from %s into %s\n", summary.files_fetched,
                   summary.bytes_fetched / (1024.0 * 1024.0), summary.endpoint.c_str(),
                   summary.model_dir.c_str());
    }
  }
  return 0;
}

}  // namespace

void AddDownload(CLI::App& app, Action* run) {
  auto f = std::make_shared<DownloadFlags>();
  CLI::App* c = app.add_subcommand("download", "Fetch the MinerU2.5 weights from Hugging Face or ModelScope");
  c->add_option("--model,-o,--output", f->model,
                "Model directory (default: $MINERU_MODEL, else ~/.cache/mineru-cpp/<repository name>)");
  c->add_option("--source", f->source, "huggingface or modelscope")->capture_default_str();
  c->add_option(
      "--repo", f->repo,
      "pro-2605 (default: opendatalab/MinerU2.5-Pro-2605-1.2B, what MinerU 3.3+ runs), pro-2604, 2509, "
      "gguf (the Pro-2605 GGUF pair: Q8_0 LM + mmproj), or any owner/name; OpenDataLab/... on ModelScope");
  c->add_option("--revision", f->revision, "Branch, tag or commit (default: main; master on ModelScope)");
  c->add_option("--endpoint", f->endpoint,
                "Hub URL, e.g. a mirror (default: $HF_ENDPOINT / $MODELSCOPE_ENDPOINT, else the public hub)");
  c->add_flag("--force", f->force, "Fetch every file again even when a verified copy is present");
  c->add_flag("-q,--quiet", f->quiet, "No progress bar and no summary");
  c->callback([f, run] { *run = [f](const kernels::KernelConfig&) { return RunDownload(*f); }; });
}

}  // namespace mineru::cli
