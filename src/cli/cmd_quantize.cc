// cli/cmd_quantize.cc — `mineru-cpp quantize`: write a pre-quantized checkpoint that loads by mmap
// with no conversion.

#include <cstdio>

#include "base/thread_pool.h"
#include "cli/common.h"
#include "cli/commands.h"
#include "model/quantize.h"

namespace mineru::cli {
namespace {

struct QuantizeFlags {
  std::string model, quant = "q8", out;
  int threads = 0;
};

int RunQuantize(const QuantizeFlags& f) {
  if (f.out.empty()) return Fail("-o DIR is required");
  auto q = ParseQuantName(f.quant);
  if (!q.ok()) return Fail(q.status().message());
  const std::string src = ResolveModelDir(f.model);
  if (src == f.out) return Fail("-o must differ from the model directory");
  ThreadPool pool(ResolveThreads(f.threads));
  Status s = WriteQuantizedModel(src, f.out, *q, &pool);
  if (!s.ok()) return Fail(s.ToString());
  std::fprintf(stderr, "wrote %s model to %s\n", f.quant.c_str(), f.out.c_str());
  return 0;
}

}  // namespace

void AddQuantize(CLI::App& app, Action* run) {
  auto f = std::make_shared<QuantizeFlags>();
  CLI::App* c = app.add_subcommand("quantize", "Write a pre-quantized model (q8, q4, q4_g128) for instant load");
  c->add_option("--model", f->model, "Source model directory");
  c->add_option("--quant", f->quant, "q8 | q4 (4-bit, group 32) | q4_g128 (4-bit, group 128)")->capture_default_str();
  c->add_option("-o,--output", f->out, "Output directory")->required();
  c->add_option("--threads", f->threads, "Worker threads");
  c->callback([f, run] { *run = [f] { return RunQuantize(*f); }; });
}

}  // namespace mineru::cli
