#include "cli/common.h"

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "download/download.h"
#include "engine/model_tokenizer.h"
#if MINERU_HAVE_CUDA
#include "kernels/cuda/device.h"
#endif

namespace mineru::cli {

std::string ResolveModelDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MINERU_MODEL"); env && *env) return env;
  // What `download` fetches by default (Pro-2605); a 2509 checkpoint downloaded by an earlier
  // version is still found when it is the only one there.
  std::string pro = DefaultModelDir();
  std::string legacy = DefaultModelDir(*ResolveRepo("2509", HubSource::kHuggingFace));
  if (!ModelLooksComplete(pro) && ModelLooksComplete(legacy)) return legacy;
  return pro;
}

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model, const std::string& mmproj) {
  return LoadModelTokenizer(model, mmproj);
}

StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text) {
  std::vector<int32_t> ids;
  std::string s = text;
  for (char& c : s) {
    if (c == ',') c = ' ';
  }
  std::istringstream in(s);
  std::string tok;
  while (in >> tok) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (errno != 0 || end == tok.c_str() || *end != '\0' || v < 0 || v > 0x7fffffff) {
      return InvalidArgumentError("not a token id: '" + tok + "'");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return InvalidArgumentError("empty id list");
  return ids;
}

void ConfigureAllocatorForModel() {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 4);
}

size_t ResolveThreads(int flag) {
  return flag > 0 ? static_cast<size_t>(flag) : ThreadPool::DefaultThreads();
}

}  // namespace mineru::cli

namespace mineru::cli {

void AddSamplingFlags(CLI::App* c, SamplingParams* s) {
  c->add_option("--temperature", s->temperature, "0 = greedy");
  c->add_option("--top-k", s->top_k);
  c->add_option("--top-p", s->top_p);
  c->add_option("--seed", s->seed);
  c->add_option("--presence-penalty", s->presence_penalty);
  c->add_option("--frequency-penalty", s->frequency_penalty);
  c->add_option("--repetition-penalty", s->repetition_penalty);
  c->add_option("--no-repeat-ngram-size", s->no_repeat_ngram_size);
}

}  // namespace mineru::cli

namespace mineru::cli {

void AddKvCacheFlag(CLI::App* c, KvCacheType* type) {
  c->add_option_function<std::string>(
       "--kv-cache",
       [type](const std::string& s) {
         *type = s == "f32" ? KvCacheType::kF32 : s == "f16" ? KvCacheType::kF16 : KvCacheType::kAuto;
       },
       "KV cache type: auto (f16 for quantized weights, f32 otherwise), f32 or f16")
      ->check(CLI::IsMember({"auto", "f32", "f16"}));
}

void AddDeviceFlags(CLI::App* c, DeviceFlags* f) {
  c->add_option("--device", f->device,
                "Where the model runs: cpu, cuda (GPU 0; a CUDA build) or auto (the GPU when one is usable, "
                "else the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  c->add_option("--gpu-memory", f->gpu_memory,
                "GPU memory this process may use: a share of the GPU's (0-1] or bytes (> 1); the KV cache "
                "takes what the weights and activations leave")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c->add_option("--gpu-precision", f->gpu_precision, "Weights and activations on the GPU: bf16 or fp32")
      ->check(CLI::IsMember({"bf16", "fp32"}))
      ->capture_default_str();
  c->add_option("--gpu-graphs", f->gpu_graphs,
                "Decode steps on the GPU as recorded CUDA graphs (one launch a step): on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  c->add_option("--gpu-decode-split", f->gpu_decode_split,
                "Decode steps of few sequences on the GPU split each context over several thread blocks "
                "(flash-decoding): on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  c->add_option("--gpu-attention", f->gpu_attention,
                "The ViT's and the prefill's attention kernel on the GPU: auto (mma tensor cores where the "
                "head fits), mma, mma2 (32 query rows a warp), wmma or simt")
      ->check(CLI::IsMember({"auto", "mma", "mma2", "wmma", "simt"}))
      ->capture_default_str();
}

void AddBatchFlags(CLI::App* c, DeviceFlags* f) {
  c->add_option("--batch-tokens", f->batch_tokens,
                "Tokens per engine step, prefill chunks included (default: 512 on the CPU, 8192 on a GPU)")
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--max-seqs", f->max_seqs, "Sequences per engine step (default: 64 on the CPU, 256 on a GPU)")
      ->check(CLI::Range(1, 65535));
}

void ApplyDevice(const DeviceOptions& d, const DeviceFlags& f, EngineConfig* ec) {
  const bool gpu = d.device == ComputeDevice::kCuda;
  ec->device = d;
  ec->max_batch_tokens = f.batch_tokens > 0 ? f.batch_tokens : gpu ? 8192 : EngineConfig().max_batch_tokens;
  ec->max_seqs = f.max_seqs > 0 ? f.max_seqs : gpu ? 256 : EngineConfig().max_seqs;
}

GpuAttention ParseGpuAttention(const std::string& name) {
  return name == "mma"    ? GpuAttention::kMma
         : name == "mma2" ? GpuAttention::kMmaWide
         : name == "wmma" ? GpuAttention::kWmma
         : name == "simt" ? GpuAttention::kSimt
                          : GpuAttention::kAuto;
}

StatusOr<DeviceOptions> ResolveDevice(const DeviceFlags& f, bool quiet) {
  DeviceOptions o;
  o.gpu_memory = f.gpu_memory;
  o.gpu_fp32 = f.gpu_precision == "fp32";
  o.gpu_graphs = f.gpu_graphs == "on";
  o.gpu_attention = ParseGpuAttention(f.gpu_attention);
  o.gpu_decode_split = f.gpu_decode_split == "on";
  if (f.device == "cpu") return o;
#if MINERU_HAVE_CUDA
  const StatusOr<kernels::cuda::CudaDeviceInfo> gpu = kernels::cuda::ProbeUsableCudaDevice(0);
  if (gpu.ok()) {
    o.device = ComputeDevice::kCuda;
    if (!quiet) std::fprintf(stderr, "device: %s\n", kernels::cuda::DescribeCudaDevice(*gpu).c_str());
    return o;
  }
  const std::string why = gpu.status().message();
#else
  const std::string why =
      "this build has no CUDA backend (build with -DMINERU_CUDA=ON where the CUDA 13 toolkit is)";
#endif
  if (f.device == "cuda") {
#if MINERU_HAVE_CUDA
    return gpu.status();
#else
    return UnimplementedError(why);
#endif
  }
  if (!quiet) std::fprintf(stderr, "device: cpu (--device auto: %s)\n", why.c_str());
  return o;
}

void AddModelFileFlags(CLI::App* c, ModelLoadOptions* o) {
  c->add_option("--mmproj", o->mmproj,
                "Vision .gguf (mmproj) when --model names a language-model .gguf file");
  c->add_option("--min-pixels", o->min_pixels,
                "Smallest image area in pixels (default: the checkpoint's, or 3136)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  c->add_option("--max-pixels", o->max_pixels,
                "Largest image area in pixels (default: the checkpoint's, or 1605632)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
}

}  // namespace mineru::cli
