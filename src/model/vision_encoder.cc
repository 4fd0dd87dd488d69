#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

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

// The activations of one Encode call over P patches: the residual stream x [P, E] and one work
// buffer `qkv` of max(3PE, chunk M) floats that every op of a block reuses once its reader is done. Row-wise
// ops run on chunks of rows (norm1 and the qkv product; the MLP, whose hidden layer is 4x the
// stream's width): chunking changes no value (the products' per-row results do not depend on
// the rows around them), and the chunk buffers shrink from [P, x] to [chunk, x] (1,024 rows keep
// each product's tiles full). Within one block:
//   norm1(x) chunk -> tmp -> qkv product -> qkv rows [P, 3E] (Q | K | V per row)
//   attention over Q, K, V -> written over each row's Q (kernels::Attention allows out == q)
//   the Q columns compacted to qkv[0, PE) -> out_proj -> qkv[PE, 2PE) -> x +=
//   per chunk: norm2(x) -> tmp -> fc1 -> qkv[0, chunk M) -> GELU -> fc2 -> tmp -> x +=
struct VisionEncoder::Buffers {
  // Floats left uninitialised: every one is written before it is read, so zeroing them (~120 MB
  // for a 1036² image) was a memset pass that also faulted in every page before the patch
  // embedding, while the pixel values were still held; now pages fault in as the kernels first
  // write them.
  struct Floats {
    explicit Floats(int64_t n) : p(new float[static_cast<size_t>(n)]), n(n) {}
    float* data() { return p.get(); }
    std::vector<float> Copy() const { return std::vector<float>(p.get(), p.get() + n); }
    std::unique_ptr<float[]> p;
    int64_t n;
  };
  static constexpr int64_t kChunkRows = 1024;
  int64_t P, E, chunk;
  Floats x;    // [P, E] the residual stream
  Floats qkv;  // max(3PE, chunk M) floats: Q, K, V; then out_proj's; then the MLP's hidden rows
  Floats tmp;  // [chunk, E] norm1 / norm2 rows, then fc2's output
  Buffers(int64_t p, int64_t e, int64_t m)
      : P(p), E(e), chunk(ChunkRows(p)), x(p * e), qkv(std::max(p * 3 * e, chunk * m)), tmp(chunk * e) {}
  // Rows per chunk: P split evenly into as few chunks of at most kChunkRows as fit (1 for no
  // patches at all).
  static int64_t ChunkRows(int64_t p) {
    if (p <= 0) return 1;
    const int64_t n = (p + kChunkRows - 1) / kChunkRows;
    return std::max<int64_t>(1, (p + n - 1) / n);
  }
};

namespace {

// Moves the first E floats of each of the P rows of stride 3E in buf to rows of stride E at its
// start, in rounds of rows [a, 3a) run in parallel: a row's destination [iE, iE + E) ends at or
// before 3aE, where the round's sources begin, and holds only sources of rows below a, which
// earlier rounds have moved (row 0 stays).
void CompactQRows(float* buf, int64_t P, int64_t E, ThreadPool* pool) {
  for (int64_t a = 1; a < P; a *= 3) {
    const int64_t b = std::min(P, 3 * a);
    auto move = [&](size_t lo, size_t hi, size_t) {
      for (int64_t i = a + static_cast<int64_t>(lo); i < a + static_cast<int64_t>(hi); ++i)
        std::memcpy(buf + i * E, buf + i * 3 * E, static_cast<size_t>(E) * sizeof(float));
    };
    if (pool != nullptr) {
      pool->ParallelFor(static_cast<size_t>(b - a), move, 64);
    } else {
      move(0, static_cast<size_t>(b - a), 0);
    }
  }
}

// y [m, w.rows] = x [m, w.cols] · Wᵀ + bias, in products of at most `chunk` rows: the values are
// those of one call (rows are independent), and a quantized product's int8 copy of x (scratch the
// calling thread keeps, sized by its largest call) stays at `chunk` rows instead of m.
void ChunkedMatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y, int64_t chunk,
                   ThreadPool* pool) {
  for (int64_t r0 = 0; r0 < m; r0 += chunk) {
    kernels::MatMul(x + r0 * w.cols, std::min(chunk, m - r0), w, bias, y + r0 * w.rows, pool);
  }
}

}  // namespace

void VisionEncoder::AttentionHalf(const VisionBlockWeights& b, const std::vector<ImageGrid>& grids,
                                  const float* cos, const float* sin, Buffers& buf, ThreadPool* pool,
                                  OpProfile* profile) const {
  const int64_t P = buf.P, E = buf.E, H = c_.num_heads, D = c_.head_dim();
  float* qkv = buf.qkv.data();
  for (int64_t r0 = 0; r0 < P; r0 += buf.chunk) {
    const int64_t rows = std::min(buf.chunk, P - r0);
    {
      OpTimer t(profile, VisionOp::kNorm, 0);
      kernels::LayerNorm(buf.x.data() + r0 * E, rows, E, b.norm1_w.data(), b.norm1_b.data(),
                         c_.layer_norm_eps, buf.tmp.data(), pool);
    }
    OpTimer t(profile, VisionOp::kQkv, 2.0 * static_cast<double>(rows) * E * 3 * E);
    kernels::MatMul(buf.tmp.data(), rows, b.qkv, b.qkv_b.data(), qkv + r0 * 3 * E, pool);
  }
  {
    // qkv row layout: [3][H][D]. Rotate q and k of every head: q and k are adjacent, so they
    // are 2H heads of D values at the start of each row.
    OpTimer t(profile, VisionOp::kRope, 0);
    kernels::RopeRotateHalfRows(qkv, P, 3 * E, 2 * H, D, cos, sin, pool);
  }
  // Full attention within each frame of each image, its output over Q.
  int64_t start = 0;
  for (const ImageGrid& g : grids) {
    const int64_t frame = g.h * g.w;
    for (int64_t t = 0; t < g.t; ++t, start += frame) {
      kernels::AttentionShape s;
      s.n_q = s.n_kv = frame;
      s.num_heads = s.num_kv_heads = H;
      s.head_dim = D;
      s.q_stride = s.kv_stride = s.out_stride = 3 * E;
      s.causal = false;
      s.scale = 1.0f / std::sqrt(static_cast<float>(D));
      // A quantized vision encoder (q8) also runs Q Kᵀ and P V in int8 where the CPU has the kernel.
      s.int8_qk = s.int8_pv = b.qkv.quantized();
      float* base = qkv + start * 3 * E;
      OpTimer timer(profile, VisionOp::kAttention, 4.0 * frame * frame * E);  // Q K^T and P V
      kernels::Attention(base, base + E, base + 2 * E, s, base, pool);
    }
  }
  {
    OpTimer t(profile, VisionOp::kOut, 2.0 * static_cast<double>(P) * E * E);
    CompactQRows(qkv, P, E, pool);
    ChunkedMatMul(qkv, P, b.proj, b.proj_b.data(), qkv + P * E, buf.chunk, pool);
  }
  OpTimer t(profile, VisionOp::kResidual, 0);
  kernels::AddInPlace(buf.x.data(), qkv + P * E, P * E, pool);
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
    float* hidden = buf.qkv.data();  // [rows, M]: Q, K and V are dead until the next block
    {
      OpTimer t(profile, VisionOp::kFc1, mac * E * M);
      kernels::MatMul(buf.tmp.data(), rows, b.fc1, b.fc1_b.data(), hidden, pool);
    }
    {
      OpTimer t(profile, VisionOp::kGelu, 0);
      kernels::QuickGelu(hidden, rows * M, pool);
    }
    {
      OpTimer t(profile, VisionOp::kFc2, mac * M * E);
      kernels::MatMul(hidden, rows, b.fc2, b.fc2_b.data(), buf.tmp.data(), pool);
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
  if (trace) trace->patch_embed = buf.x.Copy();

  std::vector<float> cos, sin;
  cos.reserve(P * D);
  sin.reserve(P * D);
  VisionRopeTables(grids, merge, static_cast<int>(D), &cos, &sin);
  for (size_t bi = 0; bi < w_.blocks.size(); ++bi) {
    AttentionHalf(w_.blocks[bi], grids, cos.data(), sin.data(), buf, pool, profile);
    MlpHalf(w_.blocks[bi], buf, pool, profile);
    if (trace && bi == 0) trace->block0 = buf.x.Copy();
  }
  buf.tmp.p.reset();
  // Merger: LayerNorm per patch, then 4 consecutive patches (one 2x2 group) form one row. Its
  // two [P, E] intermediates take the work buffer's first 2PE floats.
  const float* x = buf.x.data();
  float* normed = buf.qkv.data();
  float* mid = normed + P * E;
  {
    OpTimer t(profile, VisionOp::kNorm, 0);
    kernels::LayerNorm(x, P, E, w_.merger_ln_w.data(), w_.merger_ln_b.data(), 1e-6f, normed, pool);
  }
  const int64_t T = P / unit, ME = E * unit;
  std::vector<float> out(T * c_.out_hidden_size);
  {
    OpTimer t(profile, VisionOp::kMerger, 2.0 * T * ME * ME);
    ChunkedMatMul(normed, T, w_.merger_fc1, w_.merger_fc1_b.data(), mid, buf.chunk, pool);
  }
  {
    OpTimer t(profile, VisionOp::kGelu, 0);
    kernels::GeluErf(mid, T * ME, pool);
  }
  {
    OpTimer t(profile, VisionOp::kMerger, 2.0 * T * ME * c_.out_hidden_size);
    ChunkedMatMul(mid, T, w_.merger_fc2, w_.merger_fc2_b.data(), out.data(), buf.chunk, pool);
  }
  return out;
}

}  // namespace mineru
