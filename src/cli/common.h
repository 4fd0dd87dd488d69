// cli/common.h — shared helpers of the subcommands: model location, loading, parsing id lists.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "engine/engine.h"
#include "engine/sampler.h"
#include "model/qwen2vl.h"
#include "tokenizer/tokenizer.h"

namespace mineru::cli {

// --model if given, else $MINERU_MODEL, else ~/.cache/mineru-cpp/MinerU2.5-Pro-2605-1.2B (what `download`
// fetches; the 2509 folder when only that one is complete).
// The model is a checkpoint folder, a folder holding a GGUF pair, or an LM .gguf (with --mmproj).
std::string ResolveModelDir(const std::string& flag);

// Tokenizer of a model (tokenizer.json of a folder, or the GGUF's), or an error that says it is missing.
StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model, const std::string& mmproj = "");

// Adds --mmproj (the vision .gguf when --model names an LM .gguf file) and the pixel-budget
// overrides --min-pixels / --max-pixels to a subcommand.
void AddModelFileFlags(CLI::App* c, ModelLoadOptions* o);
// o with its quant set to quant.
inline ModelLoadOptions WithQuant(ModelLoadOptions o, const std::string& quant) {
  o.quant = quant;
  return o;
}

// "5 17 300" or "5,17,300" -> ids; errors on anything else.
StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text);

// For the commands that run the model (serve, parse, bench): buffers of 1 MB and more (page
// images, request bodies, activations) come from mmap and go back to the OS when freed, and at
// most 4 malloc arenas, so memory returns to its baseline after each request; bench runs with the
// same settings as serving. Hot loops must therefore not allocate per call (freed memory is
// given back at once and faulted in again): the kernels keep their scratch in the caller's
// kernels::KernelWorkspace.
void ConfigureAllocatorForModel();

// --kv-cache auto|f32|f16: the KV cache's element type (EngineConfig::kv_type).
void AddKvCacheFlag(CLI::App* c, KvCacheType* type);

// --device cpu|cuda|auto, --gpu-memory, --gpu-precision, --gpu-graphs, --gpu-decode-split and
// --gpu-attention: where the model runs (EngineConfig::device). Resolved by ResolveDevice once the
// command runs.
struct DeviceFlags {
  std::string device = "cpu";
  double gpu_memory = 0.9;
  std::string gpu_precision = "bf16";
  std::string gpu_graphs = "on";
  std::string gpu_attention = "auto";
  std::string gpu_decode_split = "on";
  int batch_tokens = 0;  // --batch-tokens (AddBatchFlags); 0: the device's default
  int max_seqs = 0;      // --max-seqs (AddBatchFlags); 0: the device's default
};
void AddDeviceFlags(CLI::App* c, DeviceFlags* f);
// --batch-tokens and --max-seqs: the engine's step budget and sequences per step.
void AddBatchFlags(CLI::App* c, DeviceFlags* f);
// Sets ec->device to d and, where the flags leave them 0, the step budget and the sequences per
// step to the device's defaults: 512 tokens and 64 sequences on the CPU (EngineConfig's), 8192 and
// 256 on a GPU (a step there is worth filling).
void ApplyDevice(const DeviceOptions& d, const DeviceFlags& f, EngineConfig* ec);
// --gpu-attention's value (auto, mma, mma2, wmma, simt; the flag's check refuses others) as the enum.
GpuAttention ParseGpuAttention(const std::string& name);
// The device the flags ask for: "cuda" needs a CUDA build (Unimplemented otherwise) and a usable
// GPU (Unavailable otherwise); "auto" takes the GPU when one is usable, else the CPU, and says
// which on stderr (with why when it falls back) unless quiet.
StatusOr<DeviceOptions> ResolveDevice(const DeviceFlags& f, bool quiet = false);

// Threads: flag value if > 0, else the hardware count.
size_t ResolveThreads(int flag);

// The sampling flags shared by the subcommands that generate text.
void AddSamplingFlags(CLI::App* c, SamplingParams* s);

}  // namespace mineru::cli
