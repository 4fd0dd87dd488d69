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

// The activations of one Encode call over P patches. Per-row work (norms, products, GELU,
// residuals) runs in chunks of at most kChunkRows rows, so only the residual stream x and the
// attention's output are [P, E]; Q, K and V exist for one group of heads at a time
// ([P, E / groups] each: attention needs every patch's keys, but only its own heads'). Chunking
// and grouping change no value: every output is the same sum in the same order. At P = 5,476 and
// E = 1,280 this holds 2.75 [P, E] instead of 7 [P, E] (Q, K, V, hidden layer of all patches).
struct VisionEncoder::Buffers {
  int64_t P, E, chunk, groups;
  std::vector<float> x;       // [P, E] the residual stream
  std::vector<float> attn;    // [P, E] the attention's output, all heads
  std::vector<float> qkv;     // [3][P, E / groups] Q, K, V of one head group
  std::vector<float> hidden;  // [chunk, M]
  std::vector<float> tmp;     // [chunk, E] a norm's output rows, then a product's
  Buffers(int64_t p, int64_t e, int64_t m, int64_t heads)
      : P(p),
        E(e),
        chunk(RowChunkSize(p)),
        groups(HeadGroups(heads)),
        x(p * e),
        attn(p * e),
        qkv(3 * p * (e / groups)),
        hidden(chunk * m),
        tmp(chunk * e) {}
};

int64_t VisionEncoder::HeadGroups(int64_t num_heads) {
  for (int64_t g : {2}) {
    if (num_heads % g == 0) return g;
  }
  return 1;
}

int64_t VisionEncoder::RowChunkSize(int64_t patches) {
  if (patches <= 0) return 1;
  const int64_t n = (patches + kChunkRows - 1) / kChunkRows;
  return std::max<int64_t>(1, (patches + n - 1) / n);
}

// Q, K and V of heads [h0, h0 + G) for every patch: norm1 per chunk of rows, then the three row
// slices of qkv's weight (rows [3][H][D]) into buf.qkv ([3][P, G D]), Q and K rotated.
void VisionEncoder::GroupQkv(const VisionBlockWeights& b, int64_t h0, int64_t G, const float* cos,
                             const float* sin, Buffers& buf, ThreadPool* pool, OpProfile* profile) const {
  const int64_t P = buf.P, E = buf.E, D = c_.head_dim(), GD = G * D;
  float* out[3] = {buf.qkv.data(), buf.qkv.data() + P * GD, buf.qkv.data() + 2 * P * GD};
  WeightView w[3];
  for (int i = 0; i < 3; ++i) w[i] = kernels::RowSlice(b.qkv, i * E + h0 * D, GD);
  for (int64_t r0 = 0; r0 < P; r0 += buf.chunk) {
    const int64_t rows = std::min(buf.chunk, P - r0);
    {
      OpTimer t(profile, VisionOp::kNorm, 0);
      kernels::LayerNorm(buf.x.data() + r0 * E, rows, E, b.norm1_w.data(), b.norm1_b.data(),
                         c_.layer_norm_eps, buf.tmp.data(), pool);
    }
    for (int i = 0; i < 3; ++i) {
      OpTimer t(profile, VisionOp::kQkv, 2.0 * static_cast<double>(rows) * E * GD);
      kernels::MatMul(buf.tmp.data(), rows, w[i], b.qkv_b.data() + i * E + h0 * D, out[i] + r0 * GD, pool);
    }
  }
  OpTimer t(profile, VisionOp::kRope, 0);
  kernels::RopeRotateHalfRows(out[0], P, GD, G, D, cos, sin, pool);
  kernels::RopeRotateHalfRows(out[1], P, GD, G, D, cos, sin, pool);
}

void VisionEncoder::AttentionHalf(const VisionBlockWeights& b, const std::vector<ImageGrid>& grids,
                                  const float* cos, const float* sin, Buffers& buf, ThreadPool* pool,
                                  OpProfile* profile) const {
  const int64_t P = buf.P, E = buf.E, H = c_.num_heads, D = c_.head_dim();
  const int64_t G = H / buf.groups, GD = G * D;
  for (int64_t h0 = 0; h0 < H; h0 += G) {
    GroupQkv(b, h0, G, cos, sin, buf, pool, profile);
    const float* q = buf.qkv.data();
    // Full attention within each frame of each image, for this group's heads.
    int64_t start = 0;
    for (const ImageGrid& g : grids) {
      const int64_t frame = g.h * g.w;
      for (int64_t t = 0; t < g.t; ++t, start += frame) {
        kernels::AttentionShape s;
        s.n_q = s.n_kv = frame;
        s.num_heads = s.num_kv_heads = G;
        s.head_dim = D;
        s.q_stride = s.kv_stride = GD;
        s.out_stride = E;
        s.causal = false;
        s.scale = 1.0f / std::sqrt(static_cast<float>(D));
        // A quantized vision encoder (q8) also runs Q Kᵀ and P V in int8 where the CPU has the kernel.
        s.int8_qk = s.int8_pv = b.qkv.quantized();
        const float* base = q + start * GD;
        OpTimer timer(profile, VisionOp::kAttention, 4.0 * frame * frame * GD);  // Q K^T and P V
        kernels::Attention(base, base + P * GD, base + 2 * P * GD, s, buf.attn.data() + start * E + h0 * D,
                           pool);
      }
    }
  }
  for (int64_t r0 = 0; r0 < P; r0 += buf.chunk) {
    const int64_t rows = std::min(buf.chunk, P - r0);
    {
      OpTimer t(profile, VisionOp::kOut, 2.0 * static_cast<double>(rows) * E * E);
      kernels::MatMul(buf.attn.data() + r0 * E, rows, b.proj, b.proj_b.data(), buf.tmp.data(), pool);
    }
    OpTimer t(profile, VisionOp::kResidual, 0);
    kernels::AddInPlace(buf.x.data() + r0 * E, buf.tmp.data(), rows * E, pool);
  }
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

  Buffers buf(P, E, M, c_.num_heads);
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
  std::vector<float>& normed = buf.attn;

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
