#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace mineru {
namespace {

// Per-patch cos/sin tables [P, head_dim] for the 2-D vision RoPE. For head_dim D the first D/4
// frequencies rotate by the patch row, the next D/4 by the column; the second half repeats.
void VisionRopeTables(const std::vector<ImageGrid>& grids, int merge, int head_dim, std::vector<float>* cos,
                      std::vector<float>* sin) {
  const int quarter = head_dim / 4, half = head_dim / 2;
  std::vector<float> inv_freq(quarter);
  for (int j = 0; j < quarter; ++j) {
    inv_freq[j] = static_cast<float>(1.0 / std::pow(10000.0, (2.0 * j) / half));
  }
  for (const ImageGrid& g : grids) {
    for (int64_t t = 0; t < g.t; ++t) {
      for (int64_t mr = 0; mr < g.h / merge; ++mr) {
        for (int64_t mc = 0; mc < g.w / merge; ++mc) {
          for (int sr = 0; sr < merge; ++sr) {
            for (int sc = 0; sc < merge; ++sc) {
              const float hpos = static_cast<float>(mr * merge + sr);
              const float wpos = static_cast<float>(mc * merge + sc);
              for (int d = 0; d < head_dim; ++d) {
                const int j = d % half;
                const float angle = j < quarter ? hpos * inv_freq[j] : wpos * inv_freq[j - quarter];
                cos->push_back(std::cos(angle));
                sin->push_back(std::sin(angle));
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

const char* VisionOpName(VisionOp op) {
  static const char* const kNames[] = {"patch_embed", "norm", "qkv",  "rope", "attention", "out_proj",
                                       "residual",    "fc1",  "gelu", "fc2",  "merger"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(VisionOp::kCount));
  return kNames[static_cast<int>(op)];
}

// The activations of one Encode call over P patches: three [P, x] buffers, each reused by the
// next op once its reader is done (x -> norm1 -> qkv -> attention -> out_proj -> x). The MLP's
// hidden layer (4x the stream's width) exists for one chunk of rows at a time: its products,
// GELU and residual are per row, so chunking changes no value, and the largest buffer shrinks
// from [P, M] to [chunk, M] (1,024 rows keep each product's tiles full; 21 MB at M = 5,120).
struct VisionEncoder::Buffers {
  static constexpr int64_t kMlpChunkRows = 1024;
  int64_t P, E, chunk;
  std::vector<float> x;       // [P, E] the residual stream
  std::vector<float> normed;  // [P, E] norm1(x), then the attention's output
  std::vector<float> qkv;     // [P, 3E]; its first P * E floats then hold out_proj's output
  std::vector<float> hidden;  // [chunk, M]
  std::vector<float> tmp;     // [chunk, E] norm2(x) rows, then fc2's output
  Buffers(int64_t p, int64_t e, int64_t m)
      : P(p),
        E(e),
        chunk(ChunkRows(p)),
        x(p * e),
        normed(p * e),
        qkv(p * 3 * e),
        hidden(chunk * m),
        tmp(chunk * e) {}
  // Rows per MLP chunk: P split evenly into as few chunks of at most kMlpChunkRows as fit
  // (1 for no patches at all).
  static int64_t ChunkRows(int64_t p) {
    if (p <= 0) return 1;
    const int64_t n = (p + kMlpChunkRows - 1) / kMlpChunkRows;
    return std::max<int64_t>(1, (p + n - 1) / n);
  }
};

void VisionEncoder::AttentionHalf(const VisionBlockWeights& b, const std::vector<ImageGrid>& grids,
                                  const float* cos, const float* sin, Buffers& buf, ThreadPool* pool,
                                  OpProfile* profile) const {
  const int64_t P = buf.P, E = buf.E, H = c_.num_heads, D = c_.head_dim();
  const double mac = 2.0 * static_cast<double>(P);  // flops per weight of a product over all patches
  {
    OpTimer t(profile, VisionOp::kNorm, 0);
    kernels::LayerNorm(buf.x.data(), P, E, b.norm1_w.data(), b.norm1_b.data(), c_.layer_norm_eps,
                       buf.normed.data(), pool);
  }
  {
    OpTimer t(profile, VisionOp::kQkv, mac * E * 3 * E);
    kernels::MatMul(buf.normed.data(), P, b.qkv, b.qkv_b.data(), buf.qkv.data(), pool);
  }
  {
    // qkv row layout: [3][H][D]. Rotate q and k of every head: q and k are adjacent, so they
    // are 2H heads of D values at the start of each row.
    OpTimer t(profile, VisionOp::kRope, 0);
    kernels::RopeRotateHalfRows(buf.qkv.data(), P, 3 * E, 2 * H, D, cos, sin, pool);
  }
  // Full attention within each frame of each image.
  int64_t start = 0;
  for (const ImageGrid& g : grids) {
    const int64_t frame = g.h * g.w;
    for (int64_t t = 0; t < g.t; ++t, start += frame) {
      kernels::AttentionShape s;
      s.n_q = s.n_kv = frame;
      s.num_heads = s.num_kv_heads = H;
      s.head_dim = D;
      s.q_stride = s.kv_stride = 3 * E;
      s.out_stride = E;
      s.causal = false;
      s.scale = 1.0f / std::sqrt(static_cast<float>(D));
      // A quantized vision encoder (q8) also runs Q Kᵀ and P V in int8 where the CPU has the kernel.
      s.int8_qk = s.int8_pv = b.qkv.quantized();
      const float* base = buf.qkv.data() + start * 3 * E;
      OpTimer timer(profile, VisionOp::kAttention, 4.0 * frame * frame * E);  // Q K^T and P V
      kernels::Attention(base, base + E, base + 2 * E, s, buf.normed.data() + start * E, pool);
    }
  }
  {
    OpTimer t(profile, VisionOp::kOut, mac * E * E);
    kernels::MatMul(buf.normed.data(), P, b.proj, b.proj_b.data(), buf.qkv.data(), pool);
  }
  OpTimer t(profile, VisionOp::kResidual, 0);
  kernels::AddInPlace(buf.x.data(), buf.qkv.data(), P * E, pool);
}

void VisionEncoder::MlpHalf(const VisionBlockWeights& b, Buffers& buf, ThreadPool* pool,
                            OpProfile* profile) const {
  const int64_t E = buf.E, M = c_.mlp_dim;
  for (int64_t r0 = 0; r0 < buf.P; r0 += buf.chunk) {
    const int64_t rows = std::min(buf.chunk, buf.P - r0);
    float* x = buf.x.data() + r0 * E;
    const double mac = 2.0 * static_cast<double>(rows);
    {
      OpTimer t(profile, VisionOp::kNorm, 0);
      kernels::LayerNorm(x, rows, E, b.norm2_w.data(), b.norm2_b.data(), c_.layer_norm_eps, buf.tmp.data(),
                         pool);
    }
    {
      OpTimer t(profile, VisionOp::kFc1, mac * E * M);
      kernels::MatMul(buf.tmp.data(), rows, b.fc1, b.fc1_b.data(), buf.hidden.data(), pool);
    }
    {
      OpTimer t(profile, VisionOp::kGelu, 0);
      kernels::QuickGelu(buf.hidden.data(), rows * M, pool);
    }
    {
      OpTimer t(profile, VisionOp::kFc2, mac * M * E);
      kernels::MatMul(buf.hidden.data(), rows, b.fc2, b.fc2_b.data(), buf.tmp.data(), pool);
    }
    OpTimer t(profile, VisionOp::kResidual, 0);
    kernels::AddInPlace(x, buf.tmp.data(), rows * E, pool);
  }
}

StatusOr<std::vector<float>> VisionEncoder::Encode(const float* pixel_values, int64_t num_patches,
                                                   const std::vector<ImageGrid>& grids, ThreadPool* pool,
                                                   VisionTrace* trace, OpProfile* profile) const {
  return EncodeImpl(pixel_values, num_patches, nullptr, grids, pool, trace, profile);
}

StatusOr<std::vector<float>> VisionEncoder::Encode(std::vector<float>&& pixel_values,
                                                   const std::vector<ImageGrid>& grids, ThreadPool* pool,
                                                   VisionTrace* trace, OpProfile* profile) const {
  const int64_t pd = c_.patch_dim();
  const int64_t size = static_cast<int64_t>(pixel_values.size());
  if (pd <= 0 || size % pd != 0) return InvalidArgumentError("pixel_values is not whole patches");
  std::vector<float> owned = std::move(pixel_values);
  return EncodeImpl(owned.data(), size / pd, &owned, grids, pool, trace, profile);
}

StatusOr<std::vector<float>> VisionEncoder::EncodeImpl(const float* pixel_values, int64_t num_patches,
                                                       std::vector<float>* owned,
                                                       const std::vector<ImageGrid>& grids, ThreadPool* pool,
                                                       VisionTrace* trace, OpProfile* profile) const {
  const int64_t E = c_.embed_dim, D = c_.head_dim(), M = c_.mlp_dim;
  const int merge = c_.spatial_merge_size, unit = c_.merge_unit();
  int64_t total = 0;
  for (const ImageGrid& g : grids) {
    if (g.t <= 0 || g.h <= 0 || g.w <= 0 || g.h % merge || g.w % merge) {
      return InvalidArgumentError("image grid must be positive and divisible by the merge size");
    }
    total += g.num_patches();
  }
  if (total != num_patches) return InvalidArgumentError("pixel_values rows do not match the image grids");
  const int64_t P = num_patches;

  Buffers buf(P, E, M);
  {
    OpTimer t(profile, VisionOp::kPatchEmbed, 2.0 * static_cast<double>(P) * c_.patch_dim() * E);
    kernels::MatMul(pixel_values, P, w_.patch_embed, nullptr, buf.x.data(), pool);
  }
  if (owned != nullptr) std::vector<float>().swap(*owned);
  if (trace) trace->patch_embed = buf.x;

  std::vector<float> cos, sin;
  cos.reserve(P * D);
  sin.reserve(P * D);
  VisionRopeTables(grids, merge, static_cast<int>(D), &cos, &sin);
  for (size_t bi = 0; bi < w_.blocks.size(); ++bi) {
    AttentionHalf(w_.blocks[bi], grids, cos.data(), sin.data(), buf, pool, profile);
    MlpHalf(w_.blocks[bi], buf, pool, profile);
    if (trace && bi == 0) trace->block0 = buf.x;
  }
  std::vector<float>().swap(buf.qkv);  // the merger's buffers take their place
  std::vector<float>().swap(buf.hidden);
  const std::vector<float>& x = buf.x;
  std::vector<float>& normed = buf.normed;

  // Merger: LayerNorm per patch, then 4 consecutive patches (one 2x2 group) form one row.
  {
    OpTimer t(profile, VisionOp::kNorm, 0);
    kernels::LayerNorm(x.data(), P, E, w_.merger_ln_w.data(), w_.merger_ln_b.data(), 1e-6f, normed.data(),
                       pool);
  }
  const int64_t T = P / unit, ME = E * unit;
  std::vector<float> mid(T * ME), out(T * c_.out_hidden_size);
  {
    OpTimer t(profile, VisionOp::kMerger, 2.0 * T * ME * ME);
    kernels::MatMul(normed.data(), T, w_.merger_fc1, w_.merger_fc1_b.data(), mid.data(), pool);
  }
  {
    OpTimer t(profile, VisionOp::kGelu, 0);
    kernels::GeluErf(mid.data(), T * ME, pool);
  }
  {
    OpTimer t(profile, VisionOp::kMerger, 2.0 * T * ME * c_.out_hidden_size);
    kernels::MatMul(mid.data(), T, w_.merger_fc2, w_.merger_fc2_b.data(), out.data(), pool);
  }
  return out;
}

}  // namespace mineru
