// cli/cmd_quantize.cc — `mineru-cpp quantize`: write a pre-quantized checkpoint that loads by mmap
// with no conversion: our safetensors layout, or llama.cpp's GGUF pair (--format gguf).

#include <cstdio>

#include "base/thread_pool.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/model_tokenizer.h"
#include "model/gguf_export.h"
#include "model/quantize.h"

namespace mineru::cli {
namespace {

struct QuantizeFlags {
  std::string model, quant = "q8", out, format = "safetensors";
  ModelLoadOptions load;
  int threads = 0;
};

// "Q8_0", "Q4_0", or the stored type ("BF16", "F16", "F32") for file names, as llama.cpp names its files.
std::string GgufSuffix(const std::string& quant, DType stored) {
  if (quant == "q8" || quant == "q8_0") return "Q8_0";
  if (quant == "q4" || quant == "q4_0") return "Q4_0";
  return stored == DType::kBF16 ? "BF16" : stored == DType::kF16 ? "F16" : "F32";
}

// Loads the model (quantized at load as --quant says) and writes it as a GGUF pair into f.out.
int WriteGguf(const QuantizeFlags& f, const std::string& src, ThreadPool* pool) {
  Status made = MakeDirs(f.out);
  if (!made.ok()) return Fail(made.message());
  auto model = Qwen2VLModel::Load(src, WithQuant(f.load, f.quant), pool);
  if (!model.ok()) return Fail(model.status().ToString());
  // The model's tokenizer (none for a vocabulary-less model) and chat template, as the LM's metadata.
  auto vocab = ModelGgufVocab(**model);
  if (!vocab.ok()) return Fail(vocab.status().ToString());
  std::string stem = (*model)->name();
  for (char& c : stem) {
    if (c == ' ' || c == '/' || c == '(' || c == ')') c = '_';
  }
  const std::string suffix = GgufSuffix(f.quant, (*model)->weights().stored_dtype);
  const std::string lm = f.out + "/" + stem + "-" + suffix + ".gguf";
  const std::string mm = f.out + "/mmproj-" + stem + "-" + suffix + ".gguf";
  Status s = WriteGgufPair(**model, *vocab, (*model)->name(), lm, mm);
  if (!s.ok()) return Fail(s.ToString());
  std::fprintf(stderr, "wrote %s and %s\n", lm.c_str(), mm.c_str());
  return 0;
}

int RunQuantize(const QuantizeFlags& f) {
  if (f.out.empty()) return Fail("-o DIR is required");
  auto q = ParseQuantName(f.quant);
  if (!q.ok()) return Fail(q.status().message());
  const std::string src = ResolveModelDir(f.model);
  if (src == f.out) return Fail("-o must differ from the model directory");
  ThreadPool pool(ResolveThreads(f.threads));
  if (f.format == "gguf") return WriteGguf(f, src, &pool);
  if (f.format != "safetensors") return Fail("--format must be safetensors or gguf");
  auto files = ResolveModelFiles(src, f.load.mmproj);
  if (files.ok() && files->gguf()) return Fail("a GGUF model can only be written as GGUF (--format gguf)");
  Status s = WriteQuantizedModel(src, f.out, *q, &pool);
  if (!s.ok()) return Fail(s.ToString());
  std::fprintf(stderr, "wrote %s model to %s\n", f.quant.c_str(), f.out.c_str());
  return 0;
}

}  // namespace

void AddQuantize(CLI::App& app, Action* run) {
  auto f = std::make_shared<QuantizeFlags>();
  CLI::App* c =
      app.add_subcommand("quantize", "Write a pre-quantized model (q8, q4, q4_g128) for instant load");
  c->add_option("--model", f->model, "Source model (checkpoint folder or GGUF)");
  c->add_option("--quant", f->quant,
                "q8 | q4 (4-bit, group 32) | q4_g128 (4-bit, group 128); bf16 with --format gguf")
      ->capture_default_str();
  c->add_option("--format", f->format, "safetensors (ours) | gguf (llama.cpp's pair: LM + mmproj)")
      ->capture_default_str();
  AddModelFileFlags(c, &f->load);
  c->add_option("-o,--output", f->out, "Output directory")->required();
  c->add_option("--threads", f->threads, "Worker threads");
  c->callback([f, run] {
    *run = [f](const kernels::KernelConfig& k) {
      f->load.kernels = k;
      return RunQuantize(*f);
    };
  });
}

}  // namespace mineru::cli
