// kernels/reference.h — the scalar twins of every op in kernels.h, same contracts. Written for
// readability; the SIMD kernels are tested against these, and KernelConfig::reference routes the
// public entry points here. The twins whose arithmetic follows the configuration's target (MatMul's
// integer path, Attention's int8 paths) take the KernelContext; the others only a pool.
#pragma once

#include "kernels/kernels.h"

namespace mineru {
namespace kernels {
namespace ref {

void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
            const KernelContext& ctx);
ProbeResult FmaProbe(int64_t iters, float start);
double ReadProbe(const float* x, int64_t n);
// What DotProbe computes, for `available` (the instruction exists on this CPU).
DotProbeResult DotProbe(DotKind kind, int64_t iters, bool available);
void WeightRowToF32(const WeightView& w, int64_t row, float* out);
void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
             ThreadPool* pool = nullptr);
void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y, ThreadPool* pool = nullptr);
void QuickGelu(float* x, int64_t n, ThreadPool* pool = nullptr);
void GeluErf(float* x, int64_t n, ThreadPool* pool = nullptr);
void SiluMul(const float* gate, const float* up, int64_t n, float* out, ThreadPool* pool = nullptr);
void AddInPlace(float* x, const float* d, int64_t n, ThreadPool* pool = nullptr);
void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin);
void RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                        const float* cos, const float* sin, ThreadPool* pool = nullptr);
// The 2-D rotary tables (the ViT's) by gather: row i of cos and sin [n, head_dim] takes, at
// column d with j = d % (head_dim / 2) and quarter = head_dim / 4, freq_cos/freq_sin
// [hw[2i] * quarter + j] where j < quarter (the patch's row) and [hw[2i + 1] * quarter + j -
// quarter] otherwise (its column); freq tables [positions, quarter], hw [n, 2], every position
// inside [0, positions) (the caller's to ensure; the CUDA op checks it on the device).
void RopeTables2D(const float* freq_cos, const float* freq_sin, const int32_t* hw, int64_t n,
                  int64_t head_dim, float* cos, float* sin);
void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               const KernelContext& ctx);
void ToF16Rows(const float* x, int64_t rows, int64_t cols, int64_t x_stride, uint16_t* out,
               int64_t out_stride, ThreadPool* pool = nullptr);

// x rounded to the nearest integer, ties to even (std::nearbyint in the default rounding mode),
// for |x| < 2^22, inline rather than a libm call per value: x + 1.5 * 2^23 has no fraction bits
// left, so the addition rounds x, and the subtraction is exact.
inline float RoundHalfEven(float x) { return (x + 12582912.0f) - 12582912.0f; }

// Int8 Q Kᵀ (AttentionShape::int8_qk): the twin's quantizers; the SIMD kernel runs the same
// arithmetic vectorised (cpu::AttentionInt8Row / Keys, compared bit for bit in the tests).
// One row x[0, n) to int8: q8[d] = x[d] / (max|x| / 127) rounded to nearest even; returns the
// scale max|x| / 127 (0 for a zero row, whose q8 is all 0).
float AttentionInt8Row(const float* x, int64_t n, int8_t* q8);
// Keys [k_lo, k_lo + nk) of KV head kvh, each minus the mean of all n_kv keys of that head, as
// AttentionInt8Row rows in k8 (row stride `stride` >= head_dim, the padding zero) and scales ks.
void AttentionInt8Keys(const float* k, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                       int64_t stride, int8_t* k8, float* ks);

// Int8 P V (AttentionShape::int8_pv): the twin's quantizers. The kernel quantizes values with the
// same arithmetic (cpu::AttentionInt8Values, bit for bit) and probabilities with the same formula
// on its own exp.
// Values [k_lo, k_lo + nk) of KV head kvh, each minus mu[d] (the mean over all n_kv values of
// the head), quantized per dim: v8[j * stride + d] = (v[j][d] - mu[d]) / vs[d] rounded to nearest
// even, vs[d] = max over all n_kv of |v[j][d] - mu[d]| / 127 (0: all equal). Padding dims zero.
void AttentionInt8Values(const float* v, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                         int64_t stride, int8_t* v8, float* vs, float* mu);
// Probabilities p[0, n) (>= 0) of one key tile as u8: q[j] = p[j] / max p * 255 rounded to nearest
// even; returns the step max p / 255 (0 for an all-zero row) and *sum = sum of q.
float AttentionU8Probs(const float* p, int64_t n, uint8_t* q, int32_t* sum);
// Keys per tile of the int8 P V (the kernel's key tile): probabilities are quantized per tile.
constexpr int64_t kAttentionPvTile = 256;

}  // namespace ref
}  // namespace kernels
}  // namespace mineru
