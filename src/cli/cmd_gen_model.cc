// cli/cmd_gen_model.cc — `mineru-cpp gen-model`: a random-weight checkpoint of a real shape.

#include <cstdio>

#include "base/mapped_file.h"
#include "cli/commands.h"
#include "model/gen_model.h"

#ifndef MINERU_SOURCE_DIR
#define MINERU_SOURCE_DIR "."
#endif

namespace mineru::cli {
namespace {

struct GenModelFlags {
  std::string preset = "mineru2.5", out, dtype = "bf16", tokenizer;
  uint64_t seed = 0;
};

int RunGenModel(const GenModelFlags& f) {
  if (f.out.empty()) return Fail("-o DIR is required");
  GenModelOptions o;
  o.preset = f.preset;
  o.seed = f.seed;
  if (f.dtype == "bf16")
    o.dtype = DType::kBF16;
  else if (f.dtype == "f16")
    o.dtype = DType::kF16;
  else if (f.dtype == "f32")
    o.dtype = DType::kF32;
  else
    return Fail("--dtype must be bf16, f16 or f32");
  o.tokenizer_path = f.tokenizer;
  if (o.tokenizer_path.empty()) {
    const std::string fixture = std::string(MINERU_SOURCE_DIR) + "/tests/fixtures/tinyvocab/tokenizer.json";
    if (FileExists(fixture))
      o.tokenizer_path = fixture;
    else
      std::fprintf(stderr, "warning: no tokenizer found; the model will only accept --raw-ids\n");
  }
  Status s = GenerateRandomModel(f.out, o);
  if (!s.ok()) return Fail(s.ToString());
  std::fprintf(stderr, "wrote %s model (%s, seed %llu) to %s\n", f.preset.c_str(), f.dtype.c_str(),
               static_cast<unsigned long long>(f.seed), f.out.c_str());
  return 0;
}

}  // namespace

void AddGenModel(CLI::App& app, Action* run) {
  auto f = std::make_shared<GenModelFlags>();
  CLI::App* c = app.add_subcommand("gen-model", "Write a random-weight checkpoint of a real model shape");
  c->add_option("--preset", f->preset, "mineru2.5 (real shape) or tiny")->capture_default_str();
  c->add_option("-o,--output", f->out, "Output directory")->required();
  c->add_option("--dtype", f->dtype, "bf16, f16 or f32")->capture_default_str();
  c->add_option("--seed", f->seed, "Random seed")->capture_default_str();
  c->add_option("--tokenizer", f->tokenizer,
                "tokenizer.json to copy (default: the repo's fixture tokenizer)");
  c->callback([f, run] { *run = [f](const kernels::KernelConfig&) { return RunGenModel(*f); }; });
}

}  // namespace mineru::cli
