#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/reference.h"

namespace mineru {
namespace {

// Floats left uninitialised: every one is written before it is read, so zeroing them (~120 MB
// for a 1036² image) was a memset pass that also faulted in every page before the patch
// embedding, while the pixel values were still held; now pages fault in as the kernels first
// write them. 64-byte aligned (the packed attention's panels live in them).
struct AlignedFloats {
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  explicit AlignedFloats(int64_t n) : n(n) {
    const size_t bytes = (static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float) + 63) / 64 * 64;
    p.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (p == nullptr) throw std::bad_alloc();
  }
  float* data() const { return p.get(); }
  std::vector<float> Copy() const { return std::vector<float>(p.get(), p.get() + n); }
  std::unique_ptr<float[], Free> p;
  int64_t n;
};

}  // namespace

void VisionRopeFrequencies(const std::vector<ImageGrid>& grids, int head_dim, std::vector<float>* freq_cos,
                           std::vector<float>* freq_sin) {
  const int quarter = head_dim / 4, half = head_dim / 2;
  std::vector<float> inv_freq(quarter);
  for (int j = 0; j < quarter; ++j) {
    inv_freq[j] = static_cast<float>(1.0 / std::pow(10000.0, (2.0 * j) / half));
  }
  // Rows repeat positions, so each cos and sin is computed once (the same float product and
  // std::cos as per element, so the same bits).
  int64_t longest = 0;
  for (const ImageGrid& g : grids) longest = std::max({longest, g.h, g.w});
  freq_cos->resize(static_cast<size_t>(longest * quarter));
  freq_sin->resize(freq_cos->size());
  for (int64_t p = 0; p < longest; ++p) {
    for (int j = 0; j < quarter; ++j) {
      const float angle = static_cast<float>(p) * inv_freq[j];
      (*freq_cos)[p * quarter + j] = std::cos(angle);
      (*freq_sin)[p * quarter + j] = std::sin(angle);
    }
  }
}

void VisionRopePositions(const std::vector<ImageGrid>& grids, int merge, std::vector<int32_t>* hw) {
  hw->clear();
  for (const ImageGrid& g : grids) {
    for (int64_t t = 0; t < g.t; ++t) {
      for (int64_t mr = 0; mr < g.h / merge; ++mr) {
        for (int64_t mc = 0; mc < g.w / merge; ++mc) {
          for (int sr = 0; sr < merge; ++sr) {
            for (int sc = 0; sc < merge; ++sc) {
              hw->push_back(static_cast<int32_t>(mr * merge + sr));
              hw->push_back(static_cast<int32_t>(mc * merge + sc));
            }
          }
        }
      }
    }
  }
}

void VisionRopeTables(const std::vector<ImageGrid>& grids, int merge, int head_dim, std::vector<float>* cos,
                      std::vector<float>* sin) {
  std::vector<float> freq_cos, freq_sin;
  std::vector<int32_t> hw;
  VisionRopeFrequencies(grids, head_dim, &freq_cos, &freq_sin);
  VisionRopePositions(grids, merge, &hw);
  const int64_t n = static_cast<int64_t>(hw.size() / 2);
  const size_t at = cos->size();
  cos->resize(at + static_cast<size_t>(n * head_dim));
  sin->resize(cos->size());
  kernels::ref::RopeTables2D(freq_cos.data(), freq_sin.data(), hw.data(), n, head_dim, cos->data() + at,
                             sin->data() + at);
}

const char* VisionOpName(VisionOp op) {
  static const char* const kNames[] = {"patch_embed", "norm", "qkv",  "rope", "attention", "out_proj",
                                       "residual",    "fc1",  "gelu", "fc2",  "merger"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(VisionOp::kCount));
  return kNames[static_cast<int>(op)];
}

// The activations of one Encode call over P patches: the residual stream x [P, E], one work
// buffer `big` that every op of a block reuses once its reader is done, and a chunk buffer
// `tmp`. Row-wise ops run on chunks of rows (norms, products, the MLP, whose hidden layer is 4x
// the stream's width): chunking changes no value (the products' per-row results do not depend
// on the rows around them), and the chunk buffers shrink from [P, x] to [chunk, x].
// The [P, 3E] form (fp32 attention, or int8 where the packed kernels do not run), per block:
//   norm1(x) chunk -> tmp -> qkv product -> big [P, 3E] (Q | K | V per row)
//   attention over Q, K, V -> written over each row's Q (kernels::Attention allows out == q)
//   the Q columns compacted to big[0, PE) -> out_proj -> big[PE, 2PE) -> x +=
// The packed form (options.packed_attention where kernels::PackedAttentionRuns), per frame of F
// patches (PackedHalf):
//   per third of a chunk: norm1(x) -> tmp -> K V product -> tmp -> rotated K, V as fp16 into
//     big, head-major (head h: keys [F, D], then values [F, D])
//   PackKvInt8: int8 panels, in place over the fp16 heads (or beside them for small frames)
//   per run of queries that fits in big past the panels: norm1(x) -> Q product -> big, rotated
//     -> AttentionPacked over them -> out_proj per chunk -> tmp -> x +=
// Both, then per chunk: norm2(x) -> tmp -> fc1 -> big[0, chunk M) -> GELU -> fc2 -> tmp -> x +=
struct VisionEncoder::Buffers {
  using Floats = AlignedFloats;
  int64_t P, E, chunk;
  bool packed;  // the packed attention form
  Floats x;     // [P, E] the residual stream
  Floats big;   // [P, 3E] form: max(3PE, chunk M); packed: max(F E, chunk M) for the largest frame F
  Floats tmp;   // [max(chunk, unit, 3), E]: chunk rows, one merged row, a norm and a K V row
  Buffers(int64_t p, int64_t e, int64_t m, int64_t unit, int64_t max_frame, int64_t chunk_rows,
          bool packed_form)
      : P(p),
        E(e),
        chunk(ChunkRows(p, chunk_rows)),
        packed(packed_form),
        x(p * e),
        big(std::max(packed_form ? max_frame * e : p * 3 * e, chunk * m)),
        tmp(std::max({chunk, unit, int64_t{3}}) * e) {}
  // Rows per chunk: P split evenly into as few chunks of at most `most` rows as fit (1 for no
  // patches at all).
  static int64_t ChunkRows(int64_t p, int64_t most) {
    most = std::max<int64_t>(1, most);
    if (p <= 0) return 1;
    const int64_t n = (p + most - 1) / most;
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
// those of one call (rows are independent), and a quantized product's int8 copy of x (scratch ctx
// keeps, sized by its largest call) stays at `chunk` rows instead of m.
void ChunkedMatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y, int64_t chunk,
                   const kernels::KernelContext& ctx) {
  for (int64_t r0 = 0; r0 < m; r0 += chunk) {
    kernels::MatMul(x + r0 * w.cols, std::min(chunk, m - r0), w, bias, y + r0 * w.rows, ctx);
  }
}

}  // namespace

kernels::AttentionShape VisionEncoder::FrameShape(int64_t n, bool int8) const {
  kernels::AttentionShape s;
  s.n_q = s.n_kv = n;
  s.num_heads = s.num_kv_heads = c_.num_heads;
  s.head_dim = c_.head_dim();
  s.causal = false;
  s.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  // A quantized vision encoder (q8) also runs Q Kᵀ and P V in int8 where the CPU has the kernel.
  s.int8_qk = s.int8_pv = int8;
  return s;
}

void VisionEncoder::AttentionHalf(const VisionBlockWeights& b, const std::vector<ImageGrid>& grids,
                                  const float* cos, const float* sin, Buffers& buf,
                                  const kernels::KernelContext& ctx, OpProfile* profile) const {
  const int64_t P = buf.P, E = buf.E, H = c_.num_heads, D = c_.head_dim();
  float* qkv = buf.big.data();
  for (int64_t r0 = 0; r0 < P; r0 += buf.chunk) {
    const int64_t rows = std::min(buf.chunk, P - r0);
    {
      OpTimer t(profile, VisionOp::kNorm, 0);
      kernels::LayerNorm(buf.x.data() + r0 * E, rows, E, b.norm1_w.data(), b.norm1_b.data(),
                         c_.layer_norm_eps, buf.tmp.data(), ctx);
    }
    OpTimer t(profile, VisionOp::kQkv, 2.0 * static_cast<double>(rows) * E * 3 * E);
    kernels::MatMul(buf.tmp.data(), rows, b.qkv, b.qkv_b.data(), qkv + r0 * 3 * E, ctx);
  }
  {
    // qkv row layout: [3][H][D]. Rotate q and k of every head: q and k are adjacent, so they
    // are 2H heads of D values at the start of each row.
    OpTimer t(profile, VisionOp::kRope, 0);
    kernels::RopeRotateHalfRows(qkv, P, 3 * E, 2 * H, D, cos, sin, ctx);
  }
  // Full attention within each frame of each image, its output over Q.
  int64_t start = 0;
  for (const ImageGrid& g : grids) {
    const int64_t frame = g.h * g.w;
    for (int64_t t = 0; t < g.t; ++t, start += frame) {
      kernels::AttentionShape s = FrameShape(frame, b.qkv.quantized());
      s.q_stride = s.kv_stride = s.out_stride = 3 * E;
      float* base = qkv + start * 3 * E;
      OpTimer timer(profile, VisionOp::kAttention, 4.0 * frame * frame * E);  // Q K^T and P V
      kernels::Attention(base, base + E, base + 2 * E, s, base, ctx);
    }
  }
  {
    OpTimer t(profile, VisionOp::kOut, 2.0 * static_cast<double>(P) * E * E);
    CompactQRows(qkv, P, E, ctx.pool());
    ChunkedMatMul(qkv, P, b.proj, b.proj_b.data(), qkv + P * E, buf.chunk, ctx);
  }
  OpTimer t(profile, VisionOp::kResidual, 0);
  kernels::AddInPlace(buf.x.data(), qkv + P * E, P * E, ctx);
}

namespace {

// The packed attention half of one block (VisionEncoder::AttentionHalfPacked), frame by frame:
// the residual stream x [P, E], a work buffer `big` and a chunk buffer `tmp` of chunk * E floats.
struct PackedHalf {
  const VisionBlockWeights& b;
  const VisionConfig& c;
  float* x;
  float* big;
  int64_t big_floats;
  float* tmp;
  int64_t chunk;  // rows of tmp
  const float *cos, *sin;
  const kernels::KernelContext& ctx;
  OpProfile* profile;
  int64_t E = c.embed_dim, H = c.num_heads, D = c.head_dim();
  WeightView wq = kernels::WeightRows(b.qkv, 0, E, ctx.config()),
             wkv = kernels::WeightRows(b.qkv, E, 2 * E, ctx.config());

  void Norm1(int64_t i0, int64_t rows, float* out) const {
    OpTimer t(profile, VisionOp::kNorm, 0);
    kernels::LayerNorm(x + i0 * E, rows, E, b.norm1_w.data(), b.norm1_b.data(), c.layer_norm_eps, out, ctx);
  }

  // kv16 rows [r0, r0 + rows) of every head (head-major, F rows per head) = the fp16 of the
  // rotated K | V product rows kv [rows, 2E]: one task per head's keys or values.
  void ToF16Heads(const float* kv, int64_t rows, int64_t r0, int64_t F, uint16_t* kv16) const {
    auto run = [&](size_t lo, size_t hi, size_t worker) {
      for (size_t i = lo; i < hi; ++i) {
        const int64_t h = static_cast<int64_t>(i) / 2, values = static_cast<int64_t>(i) % 2;
        kernels::ToF16Rows(kv + values * E + h * D, rows, D, 2 * E, kv16 + (2 * h + values) * F * D + r0 * D,
                           D, ctx.Serial(worker));
      }
    };
    if (ctx.pool() != nullptr) {
      ctx.pool()->ParallelFor(static_cast<size_t>(2 * H), run, 1);
    } else {
      run(0, static_cast<size_t>(2 * H), 0);
    }
  }

  // The frame's keys and values (rows [start, start + F)), rotated, as fp16 in kv16 head-major:
  // head h's keys [F, D] at kv16 + 2hFD, its values [F, D] after them. In chunks of a third of
  // tmp's rows: [rows, E] norm rows and [rows, 2E] product rows.
  void StageKv(int64_t start, int64_t F, uint16_t* kv16) const {
    const int64_t step = std::max<int64_t>(1, chunk / 3);
    float* ln = tmp;
    float* kv = tmp + step * E;
    for (int64_t r0 = 0; r0 < F; r0 += step) {
      const int64_t rows = std::min(step, F - r0), i0 = start + r0;
      Norm1(i0, rows, ln);
      {
        OpTimer t(profile, VisionOp::kQkv, 2.0 * static_cast<double>(rows) * E * 2 * E);
        kernels::MatMul(ln, rows, wkv, b.qkv_b.data() + E, kv, ctx);
      }
      OpTimer t(profile, VisionOp::kRope, 0);
      kernels::RopeRotateHalfRows(kv, rows, 2 * E, H, D, cos + i0 * D, sin + i0 * D, ctx);
      ToF16Heads(kv, rows, r0, F, kv16);
    }
  }

  // Queries [q0, q0 + n) of the frame into q (n rows of E), in tmp's chunks, rotated.
  void Queries(int64_t start, int64_t q0, int64_t n, float* q) const {
    for (int64_t r0 = 0; r0 < n; r0 += chunk) {
      const int64_t rows = std::min(chunk, n - r0), i0 = start + q0 + r0;
      Norm1(i0, rows, tmp);
      OpTimer t(profile, VisionOp::kQkv, 2.0 * static_cast<double>(rows) * E * E);
      kernels::MatMul(tmp, rows, wq, b.qkv_b.data(), q + r0 * E, ctx);
    }
    OpTimer t(profile, VisionOp::kRope, 0);
    kernels::RopeRotateHalfRows(q, n, E, H, D, cos + (start + q0) * D, sin + (start + q0) * D, ctx);
  }

  // x rows [i0, i0 + n) += out_proj(a), in tmp's chunks.
  void OutProj(int64_t i0, int64_t n, const float* a) const {
    for (int64_t r0 = 0; r0 < n; r0 += chunk) {
      const int64_t rows = std::min(chunk, n - r0);
      {
        OpTimer t(profile, VisionOp::kOut, 2.0 * static_cast<double>(rows) * E * E);
        kernels::MatMul(a + r0 * E, rows, b.proj, b.proj_b.data(), tmp, ctx);
      }
      OpTimer t(profile, VisionOp::kResidual, 0);
      kernels::AddInPlace(x + (i0 + r0) * E, tmp, rows * E, ctx);
    }
  }

  // One frame: stage, pack (in place over the fp16 heads when a head's packed bytes fit in its
  // fp16 ones, frames of more than ~300 patches; beside them otherwise), then the queries in as
  // few runs as the rest of `big` holds (each run streams every head's packed keys once).
  void Frame(int64_t start, int64_t F, kernels::AttentionShape s) const {
    auto* kv16 = reinterpret_cast<uint16_t*>(big);
    StageKv(start, F, kv16);
    const size_t head_bytes = kernels::PackedKvHeadBytes(s, ctx.config());
    const bool in_place = head_bytes <= static_cast<size_t>(4 * F * D);
    std::unique_ptr<AlignedFloats> beside;  // packed bytes of a small frame
    uint8_t* packed = reinterpret_cast<uint8_t*>(big);
    if (!in_place) {
      beside = std::make_unique<AlignedFloats>(static_cast<int64_t>((H * head_bytes + 3) / 4));
      packed = reinterpret_cast<uint8_t*>(beside->data());
    }
    {
      OpTimer t(profile, VisionOp::kAttention, 0);
      kernels::PackKvInt8(kernels::HalfKv{kv16, kv16 + F * D, 2 * F * D, D}, s, packed, head_bytes, ctx);
    }
    // The queries go to big past the packed heads (from its start when they lie beside).
    const int64_t used = in_place ? static_cast<int64_t>((H * head_bytes + 63) / 64 * 16) : 0;  // floats
    int64_t cap = (big_floats - used) / E;
    std::unique_ptr<AlignedFloats> own;
    float* q = big + used;
    if (cap < std::min(F, chunk)) {
      cap = std::min(F, chunk);
      own = std::make_unique<AlignedFloats>(cap * E);
      q = own->data();
    }
    const int64_t runs = (F + cap - 1) / cap, per = (F + runs - 1) / runs;
    for (int64_t q0 = 0; q0 < F; q0 += per) {
      const int64_t n = std::min(per, F - q0);
      Queries(start, q0, n, q);
      {
        OpTimer t(profile, VisionOp::kAttention, 4.0 * static_cast<double>(n) * F * E);
        s.n_q = n;
        kernels::AttentionPacked(q, s, packed, head_bytes, q, ctx);
      }
      OutProj(start + q0, n, q);
    }
  }
};

}  // namespace

void VisionEncoder::AttentionHalfPacked(const VisionBlockWeights& b, const std::vector<ImageGrid>& grids,
                                        const float* cos, const float* sin, Buffers& buf,
                                        const kernels::KernelContext& ctx, OpProfile* profile) const {
  const PackedHalf half{b,   c_,  buf.x.data(), buf.big.data(), buf.big.n, buf.tmp.data(), buf.chunk,
                        cos, sin, ctx,          profile};
  int64_t start = 0;
  for (const ImageGrid& g : grids) {
    const int64_t F = g.h * g.w;
    kernels::AttentionShape s = FrameShape(F, true);
    s.q_stride = s.out_stride = buf.E;
    for (int64_t t = 0; t < g.t; ++t, start += F) half.Frame(start, F, s);
  }
}

void VisionEncoder::MlpHalf(const VisionBlockWeights& b, Buffers& buf, const kernels::KernelContext& ctx,
                            OpProfile* profile) const {
  const int64_t E = buf.E, M = c_.mlp_dim;
  for (int64_t r0 = 0; r0 < buf.P; r0 += buf.chunk) {
    const int64_t rows = std::min(buf.chunk, buf.P - r0);
    float* x = buf.x.data() + r0 * E;
    const double mac = 2.0 * static_cast<double>(rows);
    {
      OpTimer t(profile, VisionOp::kNorm, 0);
      kernels::LayerNorm(x, rows, E, b.norm2_w.data(), b.norm2_b.data(), c_.layer_norm_eps, buf.tmp.data(),
                         ctx);
    }
    float* hidden = buf.big.data();  // [rows, M]: Q, K and V are dead until the next block
    {
      OpTimer t(profile, VisionOp::kFc1, mac * E * M);
      kernels::MatMul(buf.tmp.data(), rows, b.fc1, b.fc1_b.data(), hidden, ctx);
    }
    {
      OpTimer t(profile, VisionOp::kGelu, 0);
      kernels::QuickGelu(hidden, rows * M, ctx);
    }
    {
      OpTimer t(profile, VisionOp::kFc2, mac * M * E);
      kernels::MatMul(hidden, rows, b.fc2, b.fc2_b.data(), buf.tmp.data(), ctx);
    }
    OpTimer t(profile, VisionOp::kResidual, 0);
    kernels::AddInPlace(x, buf.tmp.data(), rows * E, ctx);
  }
}

StatusOr<std::vector<float>> VisionEncoder::Encode(const float* pixel_values, int64_t num_patches,
                                                   const std::vector<ImageGrid>& grids,
                                                   const kernels::KernelContext& ctx, VisionTrace* trace,
                                                   OpProfile* profile) const {
  return EncodeImpl(pixel_values, num_patches, nullptr, grids, ctx, trace, profile);
}

StatusOr<std::vector<float>> VisionEncoder::Encode(std::vector<float>&& pixel_values,
                                                   const std::vector<ImageGrid>& grids,
                                                   const kernels::KernelContext& ctx, VisionTrace* trace,
                                                   OpProfile* profile) const {
  const int64_t pd = c_.patch_dim();
  const int64_t size = static_cast<int64_t>(pixel_values.size());
  if (pd <= 0 || size % pd != 0) return InvalidArgumentError("pixel_values is not whole patches");
  std::vector<float> owned = std::move(pixel_values);
  return EncodeImpl(owned.data(), size / pd, &owned, grids, ctx, trace, profile);
}

StatusOr<std::vector<float>> VisionEncoder::EncodeImpl(const float* pixel_values, int64_t num_patches,
                                                       std::vector<float>* owned,
                                                       const std::vector<ImageGrid>& grids,
                                                       const kernels::KernelContext& ctx, VisionTrace* trace,
                                                       OpProfile* profile) const {
  const int64_t E = c_.embed_dim, D = c_.head_dim(), M = c_.mlp_dim;
  const int merge = c_.spatial_merge_size;
  int64_t total = 0, max_frame = 0;
  for (const ImageGrid& g : grids) {
    if (g.t <= 0 || g.h <= 0 || g.w <= 0 || g.h % merge || g.w % merge) {
      return InvalidArgumentError("image grid must be positive and divisible by the merge size");
    }
    total += g.num_patches();
    max_frame = std::max(max_frame, g.h * g.w);
  }
  if (total != num_patches) return InvalidArgumentError("pixel_values rows do not match the image grids");
  const int64_t P = num_patches;
  const bool quantized = !w_.blocks.empty() && w_.blocks[0].qkv.quantized();
  const bool packed =
      o_.packed_attention && quantized && kernels::PackedAttentionRuns(FrameShape(P, true), ctx.config());

  Buffers buf(P, E, M, c_.merge_unit(), max_frame, o_.chunk_rows, packed);
  {
    OpTimer t(profile, VisionOp::kPatchEmbed, 2.0 * static_cast<double>(P) * c_.patch_dim() * E);
    kernels::MatMul(pixel_values, P, w_.patch_embed, nullptr, buf.x.data(), ctx);
  }
  if (owned != nullptr) std::vector<float>().swap(*owned);
  if (trace) trace->patch_embed = buf.x.Copy();

  std::vector<float> cos, sin;
  cos.reserve(P * D);
  sin.reserve(P * D);
  VisionRopeTables(grids, merge, static_cast<int>(D), &cos, &sin);
  for (size_t bi = 0; bi < w_.blocks.size(); ++bi) {
    if (packed) {
      AttentionHalfPacked(w_.blocks[bi], grids, cos.data(), sin.data(), buf, ctx, profile);
    } else {
      AttentionHalf(w_.blocks[bi], grids, cos.data(), sin.data(), buf, ctx, profile);
    }
    MlpHalf(w_.blocks[bi], buf, ctx, profile);
    if (trace && bi == 0) trace->block0 = buf.x.Copy();
  }
  return Merge(buf, ctx, profile);
}

// LayerNorm per patch, then 4 consecutive patches (one 2x2 group) form one row of the merger's
// MLP, in chunks of merged rows: their normed patches in `big`, the hidden rows in `tmp`, the
// output rows over x's start (merged row t's output ends before x's row unit * (t + 1), whose
// patches are normed by then), copied out once the work buffers are freed.
std::vector<float> VisionEncoder::Merge(Buffers& buf, const kernels::KernelContext& ctx,
                                        OpProfile* profile) const {
  const int64_t E = buf.E, unit = c_.merge_unit(), T = buf.P / unit, ME = E * unit, H = c_.out_hidden_size;
  // Equal chunks (the last short by less than their count) of at least 64 rows where T has them
  // (big's and tmp's rows suffice at the default chunk sizes; else they get buffers of their
  // own), so that every product keeps the path, and the bits, of one product over all T rows
  // (quantized products switch paths below kernels::QuantDequantMinRows() rows on some CPUs).
  if (T == 0) return {};
  const int64_t least = std::min<int64_t>(T, 64);
  const int64_t most = std::max({least, std::min({T, buf.big.n / ME, buf.tmp.n / ME}), int64_t{1}});
  const int64_t chunks = (T + most - 1) / most, step = std::max<int64_t>(1, (T + chunks - 1) / chunks);
  std::unique_ptr<AlignedFloats> own_normed, own_mid;
  float* normed = buf.big.data();
  float* mid = buf.tmp.data();
  if (buf.big.n < step * ME) {
    own_normed = std::make_unique<AlignedFloats>(step * ME);
    normed = own_normed->data();
  }
  if (buf.tmp.n < step * ME) {
    own_mid = std::make_unique<AlignedFloats>(step * ME);
    mid = own_mid->data();
  }
  const bool over_x = H <= ME;
  std::vector<float> out(over_x ? 0 : T * H);
  float* dst = over_x ? buf.x.data() : out.data();
  for (int64_t t0 = 0; t0 < T; t0 += step) {
    const int64_t n = std::min(step, T - t0);
    {
      OpTimer t(profile, VisionOp::kNorm, 0);
      kernels::LayerNorm(buf.x.data() + t0 * ME, n * unit, E, w_.merger_ln_w.data(), w_.merger_ln_b.data(),
                         1e-6f, normed, ctx);
    }
    {
      OpTimer t(profile, VisionOp::kMerger, 2.0 * n * ME * ME);
      ChunkedMatMul(normed, n, w_.merger_fc1, w_.merger_fc1_b.data(), mid, buf.chunk, ctx);
    }
    {
      OpTimer t(profile, VisionOp::kGelu, 0);
      kernels::GeluErf(mid, n * ME, ctx);
    }
    OpTimer t(profile, VisionOp::kMerger, 2.0 * n * ME * H);
    ChunkedMatMul(mid, n, w_.merger_fc2, w_.merger_fc2_b.data(), dst + t0 * H, buf.chunk, ctx);
  }
  if (!over_x) return out;
  buf.big.p.reset();
  buf.tmp.p.reset();
  return std::vector<float>(dst, dst + T * H);
}

}  // namespace mineru
