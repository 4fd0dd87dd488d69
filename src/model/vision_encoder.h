// model/vision_encoder.h — the Qwen2-VL ViT: patch embedding, 2-D RoPE, pre-LN blocks with full
// attention inside each image (frame), and the 2x2 patch merger.
//
// Shapes: pixel_values [P, C*T*p*p] (P = sum over images of t*h*w patches, in the processor's
// merge-grouped order); output [P / 4, out_hidden] — one LLM token per 2x2 patches.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/context.h"
#include "model/config.h"
#include "model/op_profile.h"
#include "model/weights.h"

namespace mineru {

// Grid of one image in patches (t frames of h x w patches); h and w divisible by merge size.
struct ImageGrid {
  int64_t t = 1, h = 0, w = 0;
  int64_t num_patches() const { return t * h * w; }
};

// Per-patch cos/sin tables [P, head_dim] of the 2-D vision RoPE, appended to *cos and *sin, for
// the patches of `grids` in the processor's merge-grouped order. For head_dim D the first D/4
// frequencies rotate by the patch row, the next D/4 by the column; the second half of a row
// repeats the first. Shared by the CPU encoder and the CUDA one (model/cuda/).
// What those tables are gathered from (kernels::ref::RopeTables2D, or its CUDA twin on a GPU): the
// frequency tables cos/sin(p * inv_freq[j]) [longest, head_dim / 4] for positions p < longest (the
// longest side of `grids`), and each patch's (row, column) [P, 2], in the same order.
void VisionRopeFrequencies(const std::vector<ImageGrid>& grids, int head_dim, std::vector<float>* freq_cos,
                           std::vector<float>* freq_sin);
void VisionRopePositions(const std::vector<ImageGrid>& grids, int merge, std::vector<int32_t>* hw);
void VisionRopeTables(const std::vector<ImageGrid>& grids, int merge, int head_dim, std::vector<float>* cos,
                      std::vector<float>* sin);

// Intermediate activations for golden tests (filled only when a trace is passed).
struct VisionTrace {
  std::vector<float> patch_embed;  // [P, E]
  std::vector<float> block0;       // [P, E]
};

// How Encode lays out its work. Chunk sizes change no value as long as every product keeps 48
// rows or more (below that, quantized products take other kernels, with other float orders, on
// CPUs without AVX-512 VNNI; the default's chunks are far larger). The packed form rounds K and V
// to fp16 before their int8 quantization, the [P, 3E] form does not.
struct VisionEncoderOptions {
  // Rows per chunk of the row-wise ops (norms, products, the MLP): at most this many, P split
  // evenly. Larger chunks keep the products' tiles full; smaller ones hold less memory.
  int64_t chunk_rows = 512;
  // Where kernels::PackedAttentionRuns (a quantized encoder on AVX-512 VNNI): keys and values are
  // kept as fp16, packed to int8 once per block, and the queries computed chunk by chunk, so a
  // 1036x1036 image's [P, 3E] fp32 Q, K and V (80 MiB) never exist. false: the [P, 3E] form.
  bool packed_attention = true;
};

class VisionEncoder {
 public:
  VisionEncoder(const VisionConfig& config, const VisionWeights& weights, VisionEncoderOptions options = {})
      : c_(config), w_(weights), o_(options) {}

  // Encodes one or more images packed together; attention never crosses an image (frame) boundary.
  // profile (optional): time and work per op kind are added to it (model/op_profile.h).
  StatusOr<std::vector<float>> Encode(const float* pixel_values, int64_t num_patches,
                                      const std::vector<ImageGrid>& grids, const kernels::KernelContext& ctx,
                                      VisionTrace* trace = nullptr, OpProfile* profile = nullptr) const;
  // The same, taking the pixel values ([P, patch_dim]): they are freed as soon as the patches are
  // embedded (a 1036x1036 image's are 26 MB), so they do not sit beside the encoder's activations.
  StatusOr<std::vector<float>> Encode(std::vector<float>&& pixel_values, const std::vector<ImageGrid>& grids,
                                      const kernels::KernelContext& ctx, VisionTrace* trace = nullptr,
                                      OpProfile* profile = nullptr) const;

 private:
  struct Buffers;
  // Encode's body; owned (optional) holds pixel_values and is freed once they are embedded.
  StatusOr<std::vector<float>> EncodeImpl(const float* pixel_values, int64_t num_patches,
                                          std::vector<float>* owned, const std::vector<ImageGrid>& grids,
                                          const kernels::KernelContext& ctx, VisionTrace* trace,
                                          OpProfile* profile) const;
  // x [P, E] += attention over each frame of norm1(x) (Q, K, V from qkv, rotated; out_proj).
  void AttentionHalf(const VisionBlockWeights& b, const std::vector<ImageGrid>& grids, const float* cos,
                     const float* sin, Buffers& buf, const kernels::KernelContext& ctx,
                     OpProfile* profile) const;
  // The same with keys and values packed once per frame and queries per chunk (the packed path).
  void AttentionHalfPacked(const VisionBlockWeights& b, const std::vector<ImageGrid>& grids, const float* cos,
                           const float* sin, Buffers& buf, const kernels::KernelContext& ctx,
                           OpProfile* profile) const;
  // x [P, E] += fc2(gelu(fc1(norm2(x)))), in chunks of rows.
  void MlpHalf(const VisionBlockWeights& b, Buffers& buf, const kernels::KernelContext& ctx,
               OpProfile* profile) const;

  // The merger over the encoder's output x [P, E], chunk by chunk: [P / 4, out_hidden].
  std::vector<float> Merge(Buffers& buf, const kernels::KernelContext& ctx, OpProfile* profile) const;
  // The attention shape of one frame of n patches (queries set per call).
  kernels::AttentionShape FrameShape(int64_t n, bool int8) const;

  const VisionConfig& c_;
  const VisionWeights& w_;
  VisionEncoderOptions o_;
};

}  // namespace mineru
