// kernels/reference.cc — scalar reference implementations of kernels.h (namespace ref).
// Obviously-correct loops; parallelised over independent rows/heads only. The quantized
// MatMul mirrors the SIMD algorithm (kernels/quant.h) in plain integer/float arithmetic.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/bf16.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {
namespace ref {

void WeightRowToF32(const WeightView& w, int64_t row, float* out) {
  const int64_t n = w.cols;
  if (w.quantized()) {
    DequantizeRow(w, row, out);
    return;
  }
  switch (w.dtype) {
    case DType::kF32:
      std::memcpy(out, static_cast<const float*>(w.data) + row * n, sizeof(float) * n);
      break;
    case DType::kBF16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + row * n;
      for (int64_t i = 0; i < n; ++i) out[i] = Bf16ToF32(p[i]);
      break;
    }
    case DType::kF16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + row * n;
      for (int64_t i = 0; i < n; ++i) out[i] = F16ToF32(p[i]);
      break;
    }
    default:
      std::memset(out, 0, sizeof(float) * n);  // loaders reject other dtypes
  }
}

namespace {
// Dot product with 8 independent partial sums (lets the compiler use vector registers
// without -ffast-math).
inline float Dot(const float* a, const float* b, int64_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  }
  float tail = 0;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail;
}

// Integer dot of one quantized weight row with one quantized activation row (the scalar
// twin of the SIMD integer kernels): sum over blocks of (dw * dx) * isum, minus, for the Q4
// formats, sum of dw * corr (the "-8" offset of the nibbles).
float QuantRowDot(QuantType t, const uint8_t* wrow, const int8_t* q, const float* d, const float* corr,
                  int64_t nb) {
  float acc = 0.0f, acc_corr = 0.0f;
  if (t == QuantType::kQ8_0) {
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = wrow + b * internal::kQ8_0BlockBytes;
      const float dw = F16ToF32(internal::LoadU16(blk));
      const int8_t* wq = reinterpret_cast<const int8_t*>(blk + 2);
      int32_t isum = 0;
      for (int t2 = 0; t2 < 32; ++t2) isum += static_cast<int32_t>(wq[t2]) * q[b * 32 + t2];
      acc += (dw * d[b]) * static_cast<float>(isum);
    }
    return acc;
  }
  const int64_t block = t == QuantType::kQ4_0 ? 32 : 128;
  const size_t bytes = t == QuantType::kQ4_0 ? internal::kQ4_0BlockBytes : internal::kQ4_G128BlockBytes;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = wrow + b * bytes;
    const float dw = F16ToF32(internal::LoadU16(blk));
    const uint8_t* qs = blk + 2;
    int32_t isum = 0;
    for (int64_t s = 0; s < block / 32; ++s) {
      for (int t2 = 0; t2 < 16; ++t2) {
        const uint8_t byte = qs[s * 16 + t2];
        isum += static_cast<int32_t>(byte & 15) * q[b * block + s * 32 + t2];
        isum += static_cast<int32_t>(byte >> 4) * q[b * block + s * 32 + 16 + t2];
      }
    }
    acc += (dw * d[b]) * static_cast<float>(isum);
    acc_corr += dw * corr[b];
  }
  return acc - acc_corr;
}

void MatMulQuantInt(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
                    ThreadPool* pool) {
  const int64_t n = w.rows, k = w.cols;
  const internal::ActLayout l = internal::MakeActLayout(w.quant, k);
  std::vector<int8_t> q(static_cast<size_t>(m * l.kpad));
  std::vector<float> d(static_cast<size_t>(m * l.nb)), corr(static_cast<size_t>(m * l.nb));
  for (int64_t i = 0; i < m; ++i) {
    internal::QuantizeActRowRef(x + i * k, k, l, q.data() + i * l.kpad, d.data() + i * l.nb,
                                corr.data() + i * l.nb);
  }
  const size_t row_bytes = QuantizedRowBytes(w.quant, k);
  auto body = [&](size_t begin, size_t end, size_t) {
    for (size_t j = begin; j < end; ++j) {
      const uint8_t* wrow = static_cast<const uint8_t*>(w.data) + j * row_bytes;
      const float b = bias ? bias[j] : 0.0f;
      for (int64_t i = 0; i < m; ++i) {
        y[i * n + static_cast<int64_t>(j)] = QuantRowDot(w.quant, wrow, q.data() + i * l.kpad,
                                                         d.data() + i * l.nb, corr.data() + i * l.nb, l.nb) +
                                             b;
      }
    }
  };
  if (pool) {
    pool->ParallelFor(static_cast<size_t>(n), body, 16);
  } else {
    body(0, static_cast<size_t>(n), 0);
  }
}
}  // namespace

void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
            const KernelContext& ctx) {
  ThreadPool* pool = ctx.pool();
  if (w.quantized() && m < QuantDequantMinRows(ctx.config())) {
    MatMulQuantInt(x, m, w, bias, y, pool);
    return;
  }
  const int64_t n = w.rows, k = w.cols;
  // Blocks of output columns: each weight row is widened once and used for all m inputs.
  auto body = [&](size_t begin, size_t end, size_t) {
    std::vector<float> row(static_cast<size_t>(k));
    for (size_t j = begin; j < end; ++j) {
      WeightRowToF32(w, static_cast<int64_t>(j), row.data());
      const float b = bias ? bias[j] : 0.0f;
      for (int64_t i = 0; i < m; ++i) y[i * n + static_cast<int64_t>(j)] = Dot(x + i * k, row.data(), k) + b;
    }
  };
  if (pool) {
    pool->ParallelFor(static_cast<size_t>(n), body, 16);
  } else {
    body(0, static_cast<size_t>(n), 0);
  }
}

void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y, ThreadPool*) {
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = weight[i] * (xr[i] * inv);
  }
}

void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y, ThreadPool*) {
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += xr[i];
    mean /= static_cast<double>(n);
    double var = 0;
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(n);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    const float mu = static_cast<float>(mean);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mu) * inv * weight[i] + bias[i];
  }
}

// One lane of the probe's recurrence (std::fma rounds as the hardware FMA does); flops as if
// scalar: 2 per FMA of 8 accumulators.
ProbeResult FmaProbe(int64_t iters, float start) {
  float v = start;
  for (int64_t i = 0; i < iters; ++i) v = std::fma(v, 0.999f, 0.001f);
  ProbeResult r;
  r.value = v;
  r.flops = 2.0 * 8.0 * static_cast<double>(iters);
  return r;
}

DotProbeResult DotProbe(DotKind kind, int64_t iters, bool available) {
  DotProbeResult r;
  r.ok = available;
  if (!available) return r;
  const bool bf16 = kind == DotKind::kBf16;
  if (bf16) {
    float v = 0;  // vdpbf16ps adds its two products in turn
    for (int64_t i = 0; i < iters; ++i) v = (v + 0.5f) + 0.5f;
    r.value = v;
  } else {
    int32_t v = 0;
    for (int64_t i = 0; i < iters; ++i) v += 4;
    r.value = v;
  }
  r.ops = 2.0 * (bf16 ? 2.0 : 4.0) * 16.0 * 8.0 * static_cast<double>(iters);
  return r;
}

double ReadProbe(const float* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  return sum;
}

void QuickGelu(float* x, int64_t n, ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
}

void GeluErf(float* x, int64_t n, ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out, ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void AddInPlace(float* x, const float* d, int64_t n, ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) x[i] += d[i];
}

void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    x[i] = a * cos[i] - b * sin[i];
    x[i + half] = b * cos[i + half] + a * sin[i + half];
  }
}

void RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                        const float* cos, const float* sin, ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t h = 0; h < num_heads; ++h) {
      RopeRotateHalf(x + i * x_stride + h * head_dim, head_dim, cos + i * head_dim, sin + i * head_dim);
    }
  }
}

void RopeTables2D(const float* freq_cos, const float* freq_sin, const int32_t* hw, int64_t n,
                  int64_t head_dim, float* cos, float* sin) {
  const int64_t half = head_dim / 2, quarter = head_dim / 4;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < head_dim; ++d) {
      const int64_t j = d % half;
      const int64_t at =
          j < quarter ? int64_t{hw[2 * i]} * quarter + j : int64_t{hw[2 * i + 1]} * quarter + j - quarter;
      cos[i * head_dim + d] = freq_cos[at];
      sin[i * head_dim + d] = freq_sin[at];
    }
  }
}

void ToF16Rows(const float* x, int64_t rows, int64_t cols, int64_t x_stride, uint16_t* out,
               int64_t out_stride, ThreadPool*) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      out[i * out_stride + j] = F32ToF16(std::clamp(x[i * x_stride + j], -65504.0f, 65504.0f));
  }
}

float AttentionInt8Row(const float* x, int64_t n, int8_t* q8) {
  float amax = 0.0f;
  for (int64_t d = 0; d < n; ++d) amax = std::max(amax, std::fabs(x[d]));
  const float scale = amax / 127.0f;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int64_t d = 0; d < n; ++d) q8[d] = static_cast<int8_t>(RoundHalfEven(x[d] * inv));
  return scale;
}

void AttentionInt8Keys(const float* k, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                       int64_t stride, int8_t* k8, float* ks) {
  const int64_t hd = s.head_dim;
  std::vector<float> mean(static_cast<size_t>(hd), 0.0f), row(static_cast<size_t>(hd));
  for (int64_t j = 0; j < s.n_kv; ++j) {
    const float* kj = KeyRow(s, k, j) + kvh * hd;
    for (int64_t d = 0; d < hd; ++d) mean[d] += kj[d];
  }
  for (int64_t d = 0; d < hd; ++d) mean[d] /= static_cast<float>(s.n_kv);
  for (int64_t j = 0; j < nk; ++j) {
    const float* kj = KeyRow(s, k, k_lo + j) + kvh * hd;
    for (int64_t d = 0; d < hd; ++d) row[d] = kj[d] - mean[d];
    int8_t* dst = k8 + j * stride;
    ks[j] = AttentionInt8Row(row.data(), hd, dst);
    std::fill(dst + hd, dst + stride, int8_t{0});
  }
}

void AttentionInt8Values(const float* v, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                         int64_t stride, int8_t* v8, float* vs, float* mu) {
  const int64_t hd = s.head_dim;
  std::fill(mu, mu + hd, 0.0f);
  for (int64_t j = 0; j < s.n_kv; ++j) {
    const float* vj = ValueRow(s, v, j) + kvh * hd;
    for (int64_t d = 0; d < hd; ++d) mu[d] += vj[d];
  }
  for (int64_t d = 0; d < hd; ++d) mu[d] /= static_cast<float>(s.n_kv);
  std::vector<float> amax(static_cast<size_t>(hd), 0.0f), inv(static_cast<size_t>(hd), 0.0f);
  for (int64_t j = 0; j < s.n_kv; ++j) {
    const float* vj = ValueRow(s, v, j) + kvh * hd;
    for (int64_t d = 0; d < hd; ++d) amax[d] = std::max(amax[d], std::fabs(vj[d] - mu[d]));
  }
  for (int64_t d = 0; d < hd; ++d) {
    vs[d] = amax[d] / 127.0f;
    inv[d] = vs[d] != 0.0f ? 1.0f / vs[d] : 0.0f;
  }
  for (int64_t j = 0; j < nk; ++j) {
    const float* vj = ValueRow(s, v, k_lo + j) + kvh * hd;
    int8_t* dst = v8 + j * stride;
    for (int64_t d = 0; d < hd; ++d) dst[d] = static_cast<int8_t>(RoundHalfEven((vj[d] - mu[d]) * inv[d]));
    std::fill(dst + hd, dst + stride, int8_t{0});
  }
}

float AttentionU8Probs(const float* p, int64_t n, uint8_t* q, int32_t* sum) {
  float pmax = 0.0f;
  for (int64_t j = 0; j < n; ++j) pmax = std::max(pmax, p[j]);
  const float inv = pmax > 0.0f ? 255.0f / pmax : 0.0f;
  int32_t total = 0;
  for (int64_t j = 0; j < n; ++j) {
    q[j] = static_cast<uint8_t>(std::min(255.0f, RoundHalfEven(p[j] * inv)));
    total += q[j];
  }
  *sum = total;
  return pmax / 255.0f;
}

namespace {

// Int8 V of every KV head (AttentionInt8Values over all keys), for the twin's P V.
struct Int8Values {
  std::vector<std::vector<int8_t>> v8;
  std::vector<std::vector<float>> vs, mu;
  Int8Values() = default;
  Int8Values(const float* v, const AttentionShape& s) {
    const size_t heads = static_cast<size_t>(s.num_kv_heads), hd = static_cast<size_t>(s.head_dim);
    v8.resize(heads);
    vs.resize(heads);
    mu.resize(heads);
    for (size_t h = 0; h < heads; ++h) {
      v8[h].resize(static_cast<size_t>(s.n_kv) * hd);
      vs[h].resize(hd);
      mu[h].resize(hd);
      AttentionInt8Values(v, s, static_cast<int64_t>(h), 0, s.n_kv, s.head_dim, v8[h].data(), vs[h].data(),
                          mu[h].data());
    }
  }
};

// acc[d] = sum_j p^_j (v^_j[d] + mu[d]) and returns sum_j p^_j, with p_j = exp(scores[j] - mx)
// quantized per tile of kAttentionPvTile keys (AttentionU8Probs) and v^ the int8 values.
float Int8Pv(const float* scores, float mx, int64_t limit, int64_t kvh, const Int8Values& iv, int64_t hd,
             float* acc) {
  const int8_t* v8 = iv.v8[kvh].data();
  const float* vs = iv.vs[kvh].data();
  const float* mu = iv.mu[kvh].data();
  std::vector<float> p(static_cast<size_t>(kAttentionPvTile));
  std::vector<uint8_t> q(p.size());
  std::vector<int32_t> dot(static_cast<size_t>(hd));
  std::fill(acc, acc + hd, 0.0f);
  float sum = 0.0f;
  for (int64_t t0 = 0; t0 < limit; t0 += kAttentionPvTile) {
    const int64_t n = std::min(kAttentionPvTile, limit - t0);
    for (int64_t j = 0; j < n; ++j) p[j] = std::exp(scores[t0 + j] - mx);
    int32_t qsum = 0;
    const float step = AttentionU8Probs(p.data(), n, q.data(), &qsum);
    std::fill(dot.begin(), dot.end(), 0);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t d = 0; d < hd; ++d) dot[d] += int32_t{q[j]} * int32_t{v8[(t0 + j) * hd + d]};
    }
    for (int64_t d = 0; d < hd; ++d) {
      acc[d] += step * (static_cast<float>(dot[d]) * vs[d] + static_cast<float>(qsum) * mu[d]);
    }
    sum += step * static_cast<float>(qsum);
  }
  return sum;
}

// Scores of the int8 path: scores[j] = (q8 · k8[j]) * (sq * sk[j]) * scale.
void Int8Scores(const float* qi, const AttentionShape& s, const std::vector<int8_t>& k8,
                const std::vector<float>& ks, int64_t limit, float* scores) {
  const int64_t hd = s.head_dim;
  std::vector<int8_t> q8(static_cast<size_t>(hd));
  const float sq = AttentionInt8Row(qi, hd, q8.data());
  for (int64_t j = 0; j < limit; ++j) {
    int32_t sum = 0;
    for (int64_t d = 0; d < hd; ++d) sum += int32_t{q8[d]} * int32_t{k8[j * hd + d]};
    scores[j] = static_cast<float>(sum) * (ks[j] * sq) * s.scale;
  }
}

// Attention over fp16 blocks (s.k_blocks16): the same attention over their values widened to
// fp32, contiguous, never in int8 (as in the kernel).
void AttentionOverWidenedF16(const float* q, const AttentionShape& s, float* out, const KernelContext& ctx) {
  const size_t row = static_cast<size_t>(s.kv_stride);
  std::vector<float> k32(static_cast<size_t>(s.n_kv) * row), v32(k32.size());
  for (int64_t j = 0; j < s.n_kv; ++j) {
    const uint16_t* kj = KeyRow16(s, j);
    const uint16_t* vj = ValueRow16(s, j);
    for (size_t d = 0; d < row; ++d) {
      k32[static_cast<size_t>(j) * row + d] = F16ToF32(kj[d]);
      v32[static_cast<size_t>(j) * row + d] = F16ToF32(vj[d]);
    }
  }
  AttentionShape contiguous = s;
  contiguous.k_blocks16 = contiguous.v_blocks16 = nullptr;
  contiguous.k_blocks = contiguous.v_blocks = nullptr;
  contiguous.int8_qk = contiguous.int8_pv = false;
  ref::Attention(q, k32.data(), v32.data(), contiguous, out, ctx);
}

}  // namespace

void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               const KernelContext& ctx) {
  ThreadPool* pool = ctx.pool();
  if (s.n_kv == 0) {  // no keys: zeros, as the kernel writes (an empty softmax would be 0 / 0)
    for (int64_t i = 0; i < s.n_q; ++i)
      std::fill(out + i * s.out_stride, out + i * s.out_stride + s.num_heads * s.head_dim, 0.0f);
    return;
  }
  if (s.k_blocks16 != nullptr) return AttentionOverWidenedF16(q, s, out, ctx);
  const int64_t group = s.num_heads / s.num_kv_heads;
  const int64_t kv_offset = s.n_kv - s.n_q;
  const int64_t hd = s.head_dim;
  // Int8 Q Kᵀ where the SIMD kernel runs it (kernels::AttentionUsesInt8): keys per KV head.
  const bool int8 = AttentionUsesInt8(s, ctx.config());
  std::vector<std::vector<int8_t>> k8(int8 ? static_cast<size_t>(s.num_kv_heads) : 0);
  std::vector<std::vector<float>> ks(k8.size());
  for (size_t h = 0; h < k8.size(); ++h) {
    k8[h].resize(static_cast<size_t>(s.n_kv * hd));
    ks[h].resize(static_cast<size_t>(s.n_kv));
    AttentionInt8Keys(k, s, static_cast<int64_t>(h), 0, s.n_kv, hd, k8[h].data(), ks[h].data());
  }
  const bool int8_pv = AttentionUsesInt8Pv(s, ctx.config());
  const Int8Values iv = int8_pv ? Int8Values(v, s) : Int8Values();
  // One task per (head, query row).
  auto body = [&](size_t begin, size_t end, size_t) {
    std::vector<float> scores(static_cast<size_t>(s.n_kv));
    std::vector<float> acc(static_cast<size_t>(hd));
    for (size_t task = begin; task < end; ++task) {
      const int64_t h = static_cast<int64_t>(task) / s.n_q;
      const int64_t i = static_cast<int64_t>(task) % s.n_q;
      const int64_t kvh = h / group;
      const float* qi = q + i * s.q_stride + h * hd;
      const int64_t limit = s.causal ? std::min(s.n_kv, kv_offset + i + 1) : s.n_kv;
      float mx = -INFINITY;
      if (int8) Int8Scores(qi, s, k8[kvh], ks[kvh], limit, scores.data());
      for (int64_t j = 0; j < limit; ++j) {
        if (!int8) scores[j] = Dot(qi, KeyRow(s, k, j) + kvh * hd, hd) * s.scale;
        mx = std::max(mx, scores[j]);
      }
      float* o = out + i * s.out_stride + h * hd;
      if (int8_pv) {
        const float inv = 1.0f / Int8Pv(scores.data(), mx, limit, kvh, iv, hd, acc.data());
        for (int64_t d = 0; d < hd; ++d) o[d] = acc[d] * inv;
        continue;
      }
      float sum = 0;
      for (int64_t j = 0; j < limit; ++j) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < limit; ++j) {
        const float p = scores[j];
        const float* vj = ValueRow(s, v, j) + kvh * hd;
        for (int64_t d = 0; d < hd; ++d) acc[d] += p * vj[d];
      }
      const float inv = 1.0f / sum;
      for (int64_t d = 0; d < hd; ++d) o[d] = acc[d] * inv;
    }
  };
  const size_t tasks = static_cast<size_t>(s.num_heads * s.n_q);
  if (pool) {
    pool->ParallelFor(tasks, body, 4);
  } else {
    body(0, tasks, 0);
  }
}

}  // namespace ref
}  // namespace kernels
}  // namespace mineru
