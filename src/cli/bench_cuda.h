// cli/bench_cuda.h — `bench --device cuda`: the workloads that run on a GPU so far (issue 34): the
// ViT (`vision`), the decoder's step (`decode_step`), the attention kernels (`attention`) and the
// GPU's own product throughput (`peak`). In a build without the CUDA
// backend every function here answers Unimplemented, saying how to get one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/backend.h"
#include "model/op_profile.h"
#include "model/qwen2vl.h"

namespace mineru::cli {

// True in a build with the CUDA backend (MINERU_CUDA found nvcc).
bool HaveCudaBackend();

struct CudaVisionBench {
  std::string precision = "bf16";                // bf16 | fp32
  GpuAttention attention = GpuAttention::kAuto;  // --gpu-attention
  int repeats = 10;                              // timed encodes after two warm-up ones
  bool profile = false;             // report the per-op profile (the profiled encode, op by op with
                                    // each op waited for, always runs: it counts the work)
  ThreadPool* host_pool = nullptr;  // borrowed: stages the pixels (as the engine's pool does)
};

struct CudaVisionBenchResult {
  nlohmann::json figures;     // device, upload and encode times, TFLOP/s, memory
  OpProfile profile;          // of the profiled encode (when asked)
  double profiled_s = 0;      // its wall time
  std::vector<float> output;  // the last encode's output [P / 4, out_hidden]
};

// Uploads m's vision weights to GPU 0 and encodes `pixels` (the images of `grids`, packed in one
// pass) repeats times, end to end (pixels up, embeddings down): mean and best time per pass,
// patches/s, TFLOP/s of the best pass (the encoder's products and attention, counted as the CPU
// profile counts them), weight and activation bytes, the device.
StatusOr<CudaVisionBenchResult> BenchVisionCuda(const Qwen2VLModel& m, const std::vector<float>& pixels,
                                                const std::vector<ImageGrid>& grids,
                                                const CudaVisionBench& o);

struct CudaDecodeStepBench {
  std::string precision = "bf16";  // bf16 | fp32
  int seqs = 256;                  // sequences decoding together
  int context = 1024;              // tokens each has in the cache before the timed steps
  int steps = 32;                  // timed steps of each form (one token per sequence a step)
};

// The decoder alone on GPU 0 (no engine, no sampling): one decode step of `seqs` sequences over
// `context` cached tokens each (the cache holds whatever the device memory held: timing only),
// the LM head over every row with the logits left on the device, as the engine leaves them. Best
// and mean step time kernel by kernel and as CUDA graphs, the tokens/s they allow, and where the
// time goes: the step's matrix products alone (every layer's, queued back to back at the same
// rows) and the step over a 16-token context (the difference is the attention's growth with the
// context).
StatusOr<nlohmann::json> BenchDecodeStepCuda(const Qwen2VLModel& m, const CudaDecodeStepBench& o);

// VarlenAttention alone on GPU 0, bf16, each kernel form (attention.h's VarlenKernel: mma, mma2,
// wmma, simt) at the model's shapes: the ViT's full attention over one 1036x1036 page (5,476 patches, 16
// heads of 80) and the decoder's causal prefill of four 1,400-token prompts (14 heads of 64 over 2
// KV heads). Best of `repeats` ms and TFLOP/s per form, and each tensor-core form's largest
// difference from the SIMT form's output (a first-run sanity check beside the twin tests).
StatusOr<nlohmann::json> BenchAttentionCuda(int repeats);

// GPU 0's memory in use now (total less free: every process's, this one's weights, KV cache and
// activations among them), in bytes. Unimplemented without the CUDA backend.
StatusOr<int64_t> GpuUsedBytes();

// The GPU's dense product throughput through the backend's own cuBLASLt path: bf16 and fp32
// (never TF32) [8192, 8192] x [8192, 8192]^T, best of a few, in TFLOP/s; and the device.
StatusOr<nlohmann::json> BenchPeakCuda();

}  // namespace mineru::cli
