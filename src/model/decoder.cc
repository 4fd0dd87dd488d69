#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/quant.h"

namespace mineru {

Decoder::Decoder(const TextConfig& config, const TextWeights& weights) : c_(config), w_(weights) {
  const int half = c_.head_dim / 2;
  inv_freq_.resize(half);
  for (int j = 0; j < half; ++j) {
    inv_freq_[j] = static_cast<float>(1.0 / std::pow(c_.rope_theta, (2.0 * j) / c_.head_dim));
  }
  dim_component_.resize(half);
  int d = 0;
  for (int comp = 0; comp < 3; ++comp) {
    for (int k = 0; k < c_.mrope_section[comp] && d < half; ++k) dim_component_[d++] = comp;
  }
}

void Decoder::Embed(const int32_t* ids, int64_t n, float* out, const kernels::KernelConfig& config) const {
  for (int64_t i = 0; i < n; ++i) {
    kernels::WeightRowToF32(w_.embed_tokens, ids[i], out + i * c_.hidden_size, config);
  }
}

void Decoder::RopeTables(int64_t n, const int64_t* pt, const int64_t* ph, const int64_t* pw,
                         std::vector<float>* cos, std::vector<float>* sin) const {
  const int D = c_.head_dim, half = D / 2;
  cos->resize(n * D);
  sin->resize(n * D);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos[3] = {pt[i], ph[i], pw[i]};
    for (int j = 0; j < half; ++j) {
      // torch computes position * inv_freq in fp32.
      const float angle = static_cast<float>(pos[dim_component_[j]]) * inv_freq_[j];
      const float c = std::cos(angle), s = std::sin(angle);
      (*cos)[i * D + j] = (*cos)[i * D + j + half] = c;
      (*sin)[i * D + j] = (*sin)[i * D + j + half] = s;
    }
  }
}

size_t KvTypeBytes(KvType t) { return t == KvType::kF16 ? sizeof(uint16_t) : sizeof(float); }
const char* KvTypeName(KvType t) { return t == KvType::kF16 ? "f16" : "f32"; }

void KvCache::Reserve(int64_t tokens, int layers, int64_t kv_dim) {
  if (layers != layers_ || kv_dim != kv_dim_) {
    Reset();
    layers_ = layers;
    kv_dim_ = kv_dim;
  }
  const size_t block_bytes =
      static_cast<size_t>(layers) * 2 * kBlockSize * static_cast<size_t>(kv_dim) * KvTypeBytes(type_);
  const size_t block_floats = (block_bytes + sizeof(float) - 1) / sizeof(float);
  while (static_cast<int64_t>(blocks_.size()) * kBlockSize < tokens) {
    table_.push_back(static_cast<int32_t>(blocks_.size()));
    blocks_.emplace_back(block_floats);
  }
}

void Decoder::Forward(const float* embeds, int64_t n, const int64_t* pos_t, const int64_t* pos_h,
                      const int64_t* pos_w, KvCache* cache, float* hidden_out,
                      const kernels::KernelContext& ctx, DecoderTrace* trace) const {
  cache->Reserve(cache->len() + n, c_.num_layers, int64_t{c_.num_kv_heads} * c_.head_dim);
  BatchSegment one;
  one.n = n;
  one.past = cache->len();
  one.pos_t = pos_t;
  one.pos_h = pos_h;
  one.pos_w = pos_w;
  one.block_table = cache->block_table().data();
  ForwardBatch(embeds, {one}, cache, hidden_out, ctx, trace);
  cache->Advance(n);
}

namespace {

// Most rows of one MLP chunk in ForwardBatch (see there).
constexpr int64_t kMlpRows = 512;

// Row `index` of a block's keys or values (kd elements of `type` each) = src[0, kd): fp16 rounds
// to nearest even, clamped to the largest finite half so that no key or value becomes infinite.
void StoreKvRow(void* block, int64_t index, const float* src, int64_t kd, KvType type) {
  if (type == KvType::kF32) {
    std::memcpy(static_cast<float*>(block) + index * kd, src, sizeof(float) * static_cast<size_t>(kd));
    return;
  }
  uint16_t* dst = static_cast<uint16_t*>(block) + index * kd;
  for (int64_t d = 0; d < kd; ++d) dst[d] = kernels::F32ToF16(std::clamp(src[d], -65504.0f, 65504.0f));
}

}  // namespace

// Layer l's attention for every segment of the batch: the new keys/values [T, KD] go into
// their blocks, then each segment's queries (rows of q [T, QD]) attend over its whole context,
// read from the blocks in place, into attn [T, QD].
void Decoder::AttendSegments(int l, const std::vector<BatchSegment>& segs, const float* q, const float* k,
                             const float* v, KvStore* kv, float* attn,
                             const kernels::KernelContext& ctx) const {
  const int64_t D = c_.head_dim, QD = c_.num_heads * D, KD = c_.num_kv_heads * D;
  const int64_t bs = kv->block_size();
  std::vector<int64_t> first_row(segs.size());
  for (size_t i = 0, r = 0; i < segs.size(); ++i) {
    first_row[i] = static_cast<int64_t>(r);
    r += static_cast<size_t>(segs[i].n);
  }
  // With many sequences (batched decode) the sequences run in parallel, each attention call
  // single-threaded; with few, each call uses the pool. The per-query arithmetic is the same
  // either way, so results do not depend on the batch.
  const size_t workers = ctx.workers();
  const bool across = segs.size() >= 2 * workers;
  const KvType type = kv->kv_type();
  // Per-worker scratch: a sequence's block addresses for this layer (fp32 or fp16 ones).
  struct Blocks {
    std::vector<const float*> k, v;
    std::vector<const uint16_t*> k16, v16;
  };
  std::vector<Blocks> blk(workers);
  auto one = [&](size_t si, size_t worker, const kernels::KernelContext& inner) {
    const BatchSegment& s = segs[si];
    const int64_t row = first_row[si];
    for (int64_t i = 0; i < s.n; ++i) {
      const int64_t p = s.past + i;
      const int32_t b = s.block_table[p / bs];
      StoreKvRow(kv->Key(b, l), p % bs, k + (row + i) * KD, KD, type);
      StoreKvRow(kv->Value(b, l), p % bs, v + (row + i) * KD, KD, type);
    }
    const int64_t ctx = s.past + s.n;
    Blocks& bl = blk[worker];
    bl.k.clear(), bl.v.clear(), bl.k16.clear(), bl.v16.clear();
    for (int64_t start = 0; start < ctx; start += bs) {
      const int32_t b = s.block_table[start / bs];
      if (type == KvType::kF16) {
        bl.k16.push_back(static_cast<const uint16_t*>(kv->Key(b, l)));
        bl.v16.push_back(static_cast<const uint16_t*>(kv->Value(b, l)));
      } else {
        bl.k.push_back(static_cast<const float*>(kv->Key(b, l)));
        bl.v.push_back(static_cast<const float*>(kv->Value(b, l)));
      }
    }
    kernels::AttentionShape a;
    a.n_q = s.n;
    a.n_kv = ctx;
    a.num_heads = c_.num_heads;
    a.num_kv_heads = c_.num_kv_heads;
    a.head_dim = D;
    a.q_stride = QD;
    a.kv_stride = KD;
    a.out_stride = QD;
    a.causal = true;
    a.scale = 1.0f / std::sqrt(static_cast<float>(D));
    if (type == KvType::kF16) {
      a.k_blocks16 = bl.k16.data();
      a.v_blocks16 = bl.v16.data();
    } else {
      a.k_blocks = bl.k.data();
      a.v_blocks = bl.v.data();
    }
    a.kv_block = bs;
    kernels::Attention(q + row * QD, nullptr, nullptr, a, attn + row * QD, inner);
  };
  if (across && ctx.pool() != nullptr) {
    ctx.pool()->ParallelFor(segs.size(), [&](size_t b, size_t e, size_t w) {
      for (size_t si = b; si < e; ++si) one(si, w, ctx.Serial(w));
    });
  } else {
    for (size_t si = 0; si < segs.size(); ++si) one(si, 0, ctx);
  }
}

void Decoder::ForwardBatch(const float* embeds, const std::vector<BatchSegment>& segs, KvStore* kv,
                           float* hidden_out, const kernels::KernelContext& ctx, DecoderTrace* trace) const {
  const int64_t Hd = c_.hidden_size, D = c_.head_dim, NH = c_.num_heads, KV = c_.num_kv_heads;
  const int64_t QD = NH * D, KD = KV * D, I = c_.intermediate_size;
  int64_t T = 0;
  std::vector<int64_t> pt, ph, pw;
  for (const BatchSegment& s : segs) {
    T += s.n;
    pt.insert(pt.end(), s.pos_t, s.pos_t + s.n);
    ph.insert(ph.end(), s.pos_h, s.pos_h + s.n);
    pw.insert(pw.end(), s.pos_w, s.pos_w + s.n);
  }
  if (T == 0) return;
  std::vector<float> cos, sin;
  RopeTables(T, pt.data(), ph.data(), pw.data(), &cos, &sin);

  // The residual stream: hidden_out itself when the caller passes its embeddings there (in place),
  // else a copy of them.
  std::vector<float> copy;
  float* x = hidden_out;
  if (hidden_out != embeds) {
    copy.assign(embeds, embeds + T * Hd);
    x = copy.data();
  }
  // The MLP's two [rows, I] intermediates hold one row chunk at a time (I = 5.4 Hd: whole they
  // were ~80 MB of a 2,048-token prefill). The chunks split T evenly (the last is short by less
  // than their count), so with more than one each has far more than the 48 rows below which the
  // matrix products switch paths: every row takes the path the whole batch would, and its bits.
  const int64_t mlp_chunks = (T + kMlpRows - 1) / kMlpRows, mlp_rows = (T + mlp_chunks - 1) / mlp_chunks;
  // Attention writes over q (kernels::Attention allows it); out_proj writes into normed, dead
  // until the next norm; each MLP chunk's output is added to x at once (the chunks read normed).
  std::vector<float> normed(T * Hd), q(T * QD), k(T * KD), v(T * KD), down(mlp_rows * Hd), gate(mlp_rows * I),
      up(mlp_rows * I);
  const float eps = c_.rms_norm_eps;
  for (int l = 0; l < c_.num_layers; ++l) {
    const DecoderLayerWeights& L = w_.layers[l];
    kernels::RmsNorm(x, T, Hd, L.input_norm.data(), eps, normed.data(), ctx);
    kernels::MatMul(normed.data(), T, L.q, L.q_b.data(), q.data(), ctx);
    kernels::MatMul(normed.data(), T, L.k, L.k_b.data(), k.data(), ctx);
    kernels::MatMul(normed.data(), T, L.v, L.v_b.data(), v.data(), ctx);
    kernels::RopeRotateHalfRows(q.data(), T, QD, NH, D, cos.data(), sin.data(), ctx);
    kernels::RopeRotateHalfRows(k.data(), T, KD, KV, D, cos.data(), sin.data(), ctx);
    AttendSegments(l, segs, q.data(), k.data(), v.data(), kv, q.data(), ctx);
    kernels::MatMul(q.data(), T, L.o, nullptr, normed.data(), ctx);
    kernels::AddInPlace(x, normed.data(), T * Hd, ctx);

    kernels::RmsNorm(x, T, Hd, L.post_attn_norm.data(), eps, normed.data(), ctx);
    for (int64_t r0 = 0; r0 < T; r0 += mlp_rows) {
      const int64_t rows = std::min(mlp_rows, T - r0);
      kernels::MatMul(normed.data() + r0 * Hd, rows, L.gate, nullptr, gate.data(), ctx);
      kernels::MatMul(normed.data() + r0 * Hd, rows, L.up, nullptr, up.data(), ctx);
      kernels::SiluMul(gate.data(), up.data(), rows * I, gate.data(), ctx);
      kernels::MatMul(gate.data(), rows, L.down, nullptr, down.data(), ctx);
      kernels::AddInPlace(x + r0 * Hd, down.data(), rows * Hd, ctx);
    }
    if (trace && l == 0) trace->layer0.assign(x, x + T * Hd);
  }
  kernels::RmsNorm(x, T, Hd, w_.final_norm.data(), eps, hidden_out, ctx);  // may be in place
}

void Decoder::Logits(const float* hidden, int64_t n, float* logits, const kernels::KernelContext& ctx) const {
  kernels::MatMul(hidden, n, w_.lm_head, nullptr, logits, ctx);
}

}  // namespace mineru
