// model/cuda/vision_encoder_cuda.h — the Qwen2-VL ViT on one CUDA GPU: the CPU VisionEncoder's
// computation (model/vision_encoder.h) with weights and activations resident in GPU memory.
//
// Shapes are the CPU encoder's: pixel_values [P, C*T*p*p] fp32 on the host (P = the patches of
// every image, in the processor's merge-grouped order); output [P / 4, out_hidden] fp32 on the
// host. Several images go through in one packed pass (the products see all P rows at once);
// attention stays inside each frame (kernels::cuda::VarlenAttention over per-frame offsets).
//
// Per block, on one stream (E = embed_dim, M = mlp_dim, activations in the precision's type):
//   ln  [P, E]  = LayerNorm1(x)            qkv [P, 3E] = ln Wqkv^T + b, q and k rotated in place
//   ln  [P, E]  = attention(q, k, v)       qkv[0, PE)  = ln Wproj^T + b;  x += qkv[0, PE)
//   ln  [P, E]  = LayerNorm2(x)            per chunk of rows: h = QuickGELU(ln Wfc1^T + b),
//                                          qkv rows = h Wfc2^T + b;  x += qkv rows
// then the merger: ln = LayerNorm_q(x) seen as [P/4, 4E]; qkv = GELU(ln Wfc1^T + b); out [P/4, H]
// = qkv Wfc2^T + b, fp32, copied to the host.
// Numerics: products accumulate in fp32 (cuBLASLt), norms, softmax and activations in fp32; in
// bf16 every activation is rounded to bf16 between ops (as transformers in bf16 does). In fp32
// nothing is rounded below fp32 (never TF32): the output matches the CPU encoder's within the
// golden tests' tolerance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "kernels/context.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/staged_upload.h"
#include "model/config.h"
#include "model/cuda/device_weights.h"
#include "model/op_profile.h"
#include "model/vision_encoder.h"
#include "model/weights.h"

namespace mineru {

struct CudaVisionOptions {
  CudaPrecision precision = CudaPrecision::kBf16;
  // Rows per chunk of the MLP (its hidden layer is [rows, M]: 80 MiB in bf16 at 8192 rows of the
  // real model's M = 5120); the other ops take every row at once.
  int64_t mlp_chunk_rows = 8192;
  // The attention's kernel form (kernels/cuda/attention.h; --gpu-attention).
  kernels::cuda::VarlenKernel attention = kernels::cuda::VarlenKernel::kAuto;
  // Borrowed, may be null; must outlive the encoder: stages a pass's pixels into pinned memory
  // with all its workers (one thread cannot fill the host's memory bandwidth).
  ThreadPool* host_pool = nullptr;
};

// The ViT's weights on the device (VisionWeights' layout: matrices [out, in]).
struct CudaVisionBlock {
  kernels::cuda::DeviceBuffer norm1_w, norm1_b, norm2_w, norm2_b;
  DeviceMatrix qkv, proj, fc1, fc2;
  kernels::cuda::DeviceBuffer qkv_b, proj_b, fc1_b, fc2_b;
};
struct CudaVisionWeights {
  DeviceMatrix patch_embed;
  std::vector<CudaVisionBlock> blocks;
  kernels::cuda::DeviceBuffer merger_ln_w, merger_ln_b;
  DeviceMatrix merger_fc1, merger_fc2;
  kernels::cuda::DeviceBuffer merger_fc1_b, merger_fc2_b;
  size_t bytes = 0;  // device bytes the weights take
};

class CudaVisionEncoder {
 public:
  // Uploads the weights (dequantized where the host views are quantized; `kernels` reads them) to
  // the calling thread's current device and makes the encoder's stream and cuBLASLt handle. The
  // config is copied. Unavailable without a usable device; OutOfMemory when the weights do not fit.
  static StatusOr<std::unique_ptr<CudaVisionEncoder>> Create(const VisionConfig& config,
                                                             const VisionWeights& weights,
                                                             const kernels::KernelConfig& kernels,
                                                             CudaVisionOptions options = {});

  // Encodes the images of `grids` packed together (see the header comment); returns when the
  // output is on the host. InvalidArgument for grids that do not match the patches (the CPU
  // encoder's checks); OutOfMemory when the activations do not fit (nothing is left half done).
  // profile (optional): time and work per op kind; a profiled call waits for each op to finish
  // before the next is queued, so its total is slower than an unprofiled call's.
  // Not thread-safe: one call at a time per encoder.
  StatusOr<std::vector<float>> Encode(const float* pixel_values, int64_t num_patches,
                                      const std::vector<ImageGrid>& grids, OpProfile* profile = nullptr);

  // Encode in two halves, so that consecutive passes overlap: Submit checks and queues a pass and
  // returns its ticket once the pass's inputs are staged (the host's pixels may be freed then):
  // the inputs go up on a copy stream while the pass before still computes. Collect(ticket) waits
  // for that pass and returns what Encode would have. At most kSlots passes are outstanding
  // (InvalidArgument for one more: Collect one first); a failed Submit leaves nothing queued.
  // Encode(p) is Collect(Submit(p)). Same results, bit for bit, however passes are interleaved.
  static constexpr int kSlots = 2;
  StatusOr<int64_t> Submit(const float* pixel_values, int64_t num_patches,
                           const std::vector<ImageGrid>& grids);
  StatusOr<std::vector<float>> Collect(int64_t ticket);

  // Waits for every queued copy and op of outstanding passes before their memory goes.
  ~CudaVisionEncoder();

  const VisionConfig& config() const { return c_; }
  CudaPrecision precision() const { return o_.precision; }
  size_t weight_bytes() const { return w_.bytes; }
  // The activation memory the largest call so far kept (it stays allocated between calls),
  // pinned staging memory not counted.
  size_t activation_bytes() const;
  // Frees the activation memory (it is allocated again by the next call); passes still
  // outstanding are waited for and their results dropped.
  void ReleaseActivations();

 private:
  CudaVisionEncoder(const VisionConfig& config, CudaVisionOptions options) : c_(config), o_(options) {}
  struct Pass;
  // One outstanding pass's own memory: its inputs on the device (written by the copy stream while
  // the other slot's pass computes), its output in pinned memory, and the event after its output's
  // copy. ticket < 0: free.
  struct Slot {
    // fp32 pixels [P, patch_dim]; RoPE frequency tables [2, positions, D / 4] and patch positions
    // [P, 2] (VisionRopeFrequencies / VisionRopePositions); frame offsets [frames + 1]
    GrowingBuffer pixels, freq, hw, cu_seqlens;
    kernels::cuda::PinnedBuffer out;  // [P / merge_unit, out_hidden] fp32
    kernels::cuda::CudaEvent done;
    int64_t ticket = -1, out_floats = 0;
  };
  // Checks `grids` against num_patches and fills pass's shape.
  Status Plan(const std::vector<ImageGrid>& grids, int64_t num_patches, Pass* pass) const;
  Status ReserveFor(const Pass& pass, Slot& slot);
  // Submit's body: stages the inputs into `slot` and queues the pass and its output's copy.
  Status Queue(const float* pixel_values, const std::vector<ImageGrid>& grids, Pass& pass, Slot& slot,
               OpProfile* profile);
  StatusOr<int64_t> SubmitPass(const float* pixel_values, int64_t num_patches,
                               const std::vector<ImageGrid>& grids, OpProfile* profile);
  // Waits for every queued copy and op (after a failure: nothing queued may outlive the call).
  void Drain();
  // Encode's body in element type T (float or kernels::cuda::Bf16).
  template <typename T>
  Status Run(Pass& pass, OpProfile* profile);
  template <typename T>
  Status Block(const CudaVisionBlock& b, Pass& pass, OpProfile* profile);
  template <typename T>
  Status Merge(Pass& pass, OpProfile* profile);

  VisionConfig c_;
  CudaVisionOptions o_;
  CudaVisionWeights w_;
  kernels::cuda::CudaStream stream_;
  kernels::cuda::GemmHandle gemm_;
  kernels::cuda::StagedUpload upload_;  // the copy stream: inputs go up while a pass computes
  Slot slots_[kSlots];
  int64_t next_ticket_ = 0;
  // Activations shared by the passes (one computes at a time, in stream order), grown to the
  // largest pass: the pixels in bf16 (bf16 only), the RoPE tables [P, D] (gathered on the device
  // from the slot's frequencies and positions), x, ln, qkv, the MLP's hidden chunk and the fp32
  // output.
  GrowingBuffer pix_, cos_, sin_, x_, ln_, qkv_, hidden_, out_;
};

}  // namespace mineru
