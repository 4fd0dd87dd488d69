// kernels/kernels.h — the op catalogue of the engine.
//
// Every op writes into caller-owned outputs and allocates nothing on the hot path except
// small per-call scratch. Activations are fp32, row-major. Weights are read as stored
// (f32/bf16/f16) through WeightView and widened on the fly, or in a block-quantized layout
// (kernels/quant.h). Every op takes what it runs with from its caller (kernels/context.h): a
// KernelContext (configuration, pool, kept scratch) where it may use a pool, the KernelConfig
// alone where it runs on the calling thread. The entry points dispatch once per call to the
// Highway kernels in kernels/cpu/ on the configuration's SIMD target, or to the scalar twins in
// kernels/reference.h (KernelConfig::reference), the reference the tests compare against.
//
// Thread safety: all ops are reentrant; two calls may run concurrently as long as they use
// different contexts (a ThreadPool and the scratch are not reentrant). A context's pool may always
// be null (single thread).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/context.h"

namespace mineru {

namespace kernels {
// A quantized matrix repacked for the integer panel kernel (kernels/quant.h PackedPanels). Opaque:
// only kernels/cpu/ knows its layout; everyone else holds the pointer.
struct IntegerPanels;
}  // namespace kernels

// Storage format of a weight matrix. kNone: dense, element type given by WeightView::dtype.
// The others are row-major rows of fixed-size blocks (see kernels/quant.h for the layouts):
//   kQ8_0     blocks of 32 int8 with one f16 scale (GGUF block_q8_0, 34 bytes)
//   kQ4_0     blocks of 32 4-bit values with one f16 scale (GGUF block_q4_0, 18 bytes)
//   kQ4_G128  groups of 128 4-bit values with one f16 scale (66 bytes, nibbles as Q4_0)
// Rows whose length is not a multiple of the block are zero-padded to whole blocks.
enum class QuantType : uint8_t { kNone, kQ8_0, kQ4_0, kQ4_G128, kCount };

// A read-only 2-D weight matrix [rows, cols], row-major, as stored on disk or quantized.
// For a Linear layer rows = out_features, cols = in_features. For quant != kNone, dtype is
// ignored and data points to rows * QuantizedRowBytes(quant, cols) bytes (no alignment
// requirement, so a view may point into a mapped file).
struct WeightView {
  DType dtype = DType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  QuantType quant = QuantType::kNone;
  // Optional: the same quantized matrix repacked for the integer panel kernel of AVX-512 VNNI
  // CPUs (kernels/quant.h PackIntegerPanels), owned elsewhere; null = repack per call.
  const kernels::IntegerPanels* panels = nullptr;

  bool quantized() const { return quant != QuantType::kNone; }
};

namespace kernels {

// Name of the SIMD target the kernels of `config` run on ("AVX2", "AVX3", "SSE4", "EMU128"…), or
// "reference" for the scalar twins.
const char* TargetName(const KernelConfig& config);

// y[m, n] = x[m, k] · W[n, k]^T (+ bias[n]). x and y must not alias.
// Dense W is widened to fp32 on the fly. Quantized W (kernels/quant.h): for
// m < QuantDequantMinRows() the rows of x are quantized to int8 per block and multiplied with
// integer dot products; for larger m W is dequantized panel by panel into the fp32 GEMM.
// Scratch: the int8 rows of x in ctx's scratch (kept, grown to the largest call), per-worker panels
// (~100 KB) per call.
void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
            const KernelContext& ctx);

// Row i of W widened (or dequantized) to f32 into out[cols].
void WeightRowToF32(const WeightView& w, int64_t row, float* out, const KernelConfig& config);

// y = x / sqrt(mean(x^2) + eps) * weight, per row of n values (Qwen2 RMSNorm, fp32).
// y may equal x.
void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
             const KernelContext& ctx);

// y = (x - mean) / sqrt(var + eps) * weight + bias, per row (biased variance, as torch).
// y may equal x.
void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y, const KernelContext& ctx);

// In place: x = x * sigmoid(1.702 x).
void QuickGelu(float* x, int64_t n, const KernelContext& ctx);
// In place: x = 0.5 x (1 + erf(x / sqrt 2)) (torch's exact GELU).
void GeluErf(float* x, int64_t n, const KernelContext& ctx);
// out[i] = silu(gate[i]) * up[i]. out may equal gate or up.
void SiluMul(const float* gate, const float* up, int64_t n, float* out, const KernelContext& ctx);
// In place: x[i] += d[i] (the residual connections of both encoders).
void AddInPlace(float* x, const float* d, int64_t n, const KernelContext& ctx);

// NeoX-style rotation ("rotate_half") of one head vector x[head_dim] in place, with
// per-dimension cos/sin of length head_dim (the second half repeats the first).
void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin,
                    const KernelConfig& config);
// The same for heads [0, num_heads) of rows [0, n): head h of row i starts at
// x + i * x_stride + h * head_dim and rotates with cos/sin + i * head_dim. One dispatch for
// the whole batch (prefer it to per-head calls in loops).
void RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                        const float* cos, const float* sin, const KernelContext& ctx);

// Scaled dot-product attention for one sequence, all heads, GQA.
//   q: [n_q, num_heads * head_dim]     (row stride q_stride floats)
//   k, v: [n_kv, num_kv_heads * head_dim] (row stride kv_stride floats)
//   out: [n_q, num_heads * head_dim]   (row stride out_stride floats)
// causal: query i attends to keys [0, kv_offset + i] where kv_offset = n_kv - n_q.
// Softmax in fp32 with max subtraction (the SIMD kernel uses the online, tiled form).
// Preconditions: num_heads % num_kv_heads == 0, n_kv >= n_q when causal, scale > 0. With no keys
// (n_kv == 0) every output row is zero.
// In place: out may be q itself (out_stride == q_stride): the output of query row i and head h is
// written only after every read of that row and head's queries, and nothing else reads them
// (keys and values must not overlap q or out). Results equal the out-of-place call's.
// Paged K/V (a paged KV cache, read in place): when k_blocks is set, key/value j is row
// j % kv_block of k_blocks[j / kv_block] / v_blocks[j / kv_block] (rows kv_stride apart);
// the k and v arguments are then ignored (may be null). Results equal the contiguous form.
struct AttentionShape {
  int64_t n_q = 0, n_kv = 0;
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, kv_stride = 0, out_stride = 0;
  bool causal = false;
  float scale = 1.0f;
  const float* const* k_blocks = nullptr;
  const float* const* v_blocks = nullptr;
  int64_t kv_block = 0;  // rows per block (> 0 when k_blocks or k_blocks16 is set)
  // Half-precision paged K/V (a KV cache in IEEE binary16): when k_blocks16 is set, key/value j is
  // row j % kv_block of k_blocks16[j / kv_block] / v_blocks16[j / kv_block] (rows kv_stride
  // elements apart), widened exactly to fp32 as it is read; k_blocks and the k and v arguments are
  // then ignored. Results equal the fp32 form over the widened values, bit for bit. Causal
  // attention only (never the int8 paths).
  const uint16_t* const* k_blocks16 = nullptr;
  const uint16_t* const* v_blocks16 = nullptr;
  // Q Kᵀ in int8 where AttentionUsesInt8 (non-causal, on CPUs with an int8 dot product the
  // kernel uses): K centred on its mean over the keys and quantized per key, Q per row; softmax
  // stays fp32. Otherwise (and by default) fp32. See kernels/cpu/attention_int8.cc.
  bool int8_qk = false;
  // P V in int8 where AttentionUsesInt8Pv (the same conditions): V centred per dim on its mean
  // over the keys and quantized per dim, the probabilities of each key tile as u8 against the
  // tile's largest. Independent of int8_qk.
  bool int8_pv = false;
};
// True when Attention under `config` computes Q Kᵀ of `s` in int8 (s.int8_qk, non-causal, the
// configuration's target has the int8 attention kernel: AVX-512 VNNI, and
// config.attention_int8). The twin follows the same rule.
bool AttentionUsesInt8(const AttentionShape& s, const KernelConfig& config);
// The same for P V (s.int8_pv).
bool AttentionUsesInt8Pv(const AttentionShape& s, const KernelConfig& config);
// Row j of the keys/values under `s` (contiguous or paged).
inline const float* KeyRow(const AttentionShape& s, const float* k, int64_t j) {
  return s.k_blocks ? s.k_blocks[j / s.kv_block] + (j % s.kv_block) * s.kv_stride : k + j * s.kv_stride;
}
inline const float* ValueRow(const AttentionShape& s, const float* v, int64_t j) {
  return s.v_blocks ? s.v_blocks[j / s.kv_block] + (j % s.kv_block) * s.kv_stride : v + j * s.kv_stride;
}
// Row j of the fp16 keys/values under `s` (s.k_blocks16 set).
inline const uint16_t* KeyRow16(const AttentionShape& s, int64_t j) {
  return s.k_blocks16[j / s.kv_block] + (j % s.kv_block) * s.kv_stride;
}
inline const uint16_t* ValueRow16(const AttentionShape& s, int64_t j) {
  return s.v_blocks16[j / s.kv_block] + (j % s.kv_block) * s.kv_stride;
}
void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               const KernelContext& ctx);

// Int8 attention with its keys and values quantized and packed once for several calls over the
// same keys (the vision encoder computes its queries in chunks of rows, so that the [P, E]
// queries never exist at once). Keys and values come in IEEE binary16: key j of KV head h at
// k + h * head_stride + j * row_stride, values alike from v.
struct HalfKv {
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  int64_t head_stride = 0, row_stride = 0;
};
// True when PackKvInt8 and AttentionPacked run for `s` under `config`: the SIMD kernels are in use
// (not the scalar twins) and both AttentionUsesInt8 and AttentionUsesInt8Pv hold.
bool PackedAttentionRuns(const AttentionShape& s, const KernelConfig& config);
// Bytes of one KV head's packed keys and values for s.n_kv keys of s.head_dim (a multiple of 64).
size_t PackedKvHeadBytes(const AttentionShape& s, const KernelConfig& config);
// Quantizes and packs the keys and values of every KV head as Attention's int8 path does with the
// same values widened to fp32: head h's bytes go to dst + h * dst_stride (dst 64-byte aligned,
// dst_stride >= PackedKvHeadBytes(s) and a multiple of 64). Precondition: PackedAttentionRuns(s,
// ctx.config()).
// In place: dst may overlap the fp16 keys and values of kv as long as head h's bytes overlap no
// key or value of a head after h (heads are packed in order, in rounds, each round's bytes
// written after all its reads).
void PackKvInt8(const HalfKv& kv, const AttentionShape& s, uint8_t* dst, size_t dst_stride,
                const KernelContext& ctx);
// Attention of s.n_q query rows (q, row stride s.q_stride) over the s.n_kv keys and values that
// PackKvInt8 packed for a shape with the same n_kv, heads and head_dim, into out (out may be q, as
// for Attention; zeros when n_kv is 0). Each row equals, bit for bit and however the queries are
// split into calls, Attention's row over those keys and values widened to fp32 in a call that
// does not split the keys (Attention splits them only for one row block per KV head with fewer
// KV heads than workers). Precondition: PackedAttentionRuns(s, ctx.config()).
void AttentionPacked(const float* q, const AttentionShape& s, const uint8_t* packed, size_t stride,
                     float* out, const KernelContext& ctx);

// out[i * out_stride + j] = x[i * x_stride + j] for rows [0, rows) and cols [0, cols) in IEEE
// binary16, rounded to nearest even after clamping to +-65504 (no infinities; as the fp16 KV
// cache stores keys); a NaN stays a NaN (the default quiet NaN becomes 0x7e00).
void ToF16Rows(const float* x, int64_t rows, int64_t cols, int64_t x_stride, uint16_t* out,
               int64_t out_stride, const KernelContext& ctx);

// Machine probes (bench --workload peak). FmaProbe: `iters` rounds of 8 independent vector
// fused multiply-adds x = x * 0.999 + 0.001 from `start`; value = where one lane ends, flops =
// the floating-point operations done (2 per lane per FMA). ReadProbe: the sum of x[0, n), read once.
struct ProbeResult {
  float value = 0;
  double flops = 0;
};
ProbeResult FmaProbe(int64_t iters, float start, const KernelConfig& config);
double ReadProbe(const float* x, int64_t n, const KernelConfig& config);
// DotProbe: `iters` rounds of 8 independent 512-bit dot-product instructions — kBf16 vdpbf16ps
// (AVX512-BF16: 2 bf16 products per fp32 lane, 1 x 0.5 each), kInt8 vpdpbusd (AVX512-VNNI: 4
// u8 x s8 products per int32 lane, 1 x 1 each); value = where every lane ends (iters or 4 iters),
// ops = products and adds done. ok = false (nothing run) where the CPU lacks the instruction.
enum class DotKind { kBf16, kInt8 };
struct DotProbeResult {
  bool ok = false;
  double value = 0;
  double ops = 0;
};
DotProbeResult DotProbe(DotKind kind, int64_t iters);

}  // namespace kernels
}  // namespace mineru
