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

  const VisionConfig& config() const { return c_; }
  CudaPrecision precision() const { return o_.precision; }
  size_t weight_bytes() const { return w_.bytes; }
  // The activation memory the largest call so far kept (it stays allocated between calls).
  size_t activation_bytes() const;
  // Frees the activation memory (it is allocated again by the next call).
  void ReleaseActivations();

 private:
  CudaVisionEncoder(const VisionConfig& config, CudaVisionOptions options) : c_(config), o_(options) {}
  struct Pass;
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
  // Activations, grown to the largest call: pixels (fp32 as uploaded, then as T), x, ln, qkv,
  // the MLP's hidden chunk, the RoPE tables, the frame offsets and the fp32 output.
  GrowingBuffer pix_f32_, pix_, x_, ln_, qkv_, hidden_, cos_, sin_, cu_seqlens_, out_;
};

}  // namespace mineru
