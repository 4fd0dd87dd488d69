// kernels/cpu/cpu_kernels.h — the Highway-dispatched implementations behind kernels.h.
// Each function dispatches once to its kernel compiled for the target of the KernelConfig it is
// given (kernels/cpu/dispatch.h; KernelConfig::reference plays no part here). Same contracts as
// kernels.h.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace mineru {
namespace kernels {
namespace cpu {

// MatMul path selection (for tests and benchmarks; kAuto is what kernels::MatMul uses).
enum class MatMulPath { kAuto, kDot, kPacked, kQuantInt };

void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
            const KernelContext& ctx, MatMulPath path = MatMulPath::kAuto);
void WeightRowToF32(const WeightView& w, int64_t row, float* out, const KernelConfig& config);
void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
             const KernelContext& ctx);
void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y, const KernelContext& ctx);
void QuickGelu(float* x, int64_t n, const KernelContext& ctx);
void GeluErf(float* x, int64_t n, const KernelContext& ctx);
void SiluMul(const float* gate, const float* up, int64_t n, float* out, const KernelContext& ctx);
void AddInPlace(float* x, const float* d, int64_t n, const KernelContext& ctx);
void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin,
                    const KernelConfig& config);
void RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                        const float* cos, const float* sin, const KernelContext& ctx);
// Attention with the shape's int8_qk / int8_pv as they are (kernels::Attention clears those that
// ctx.config() does not allow).
void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               const KernelContext& ctx);
// True when the configuration's target has the int8 Q Kᵀ attention kernel (AVX-512 VNNI).
bool AttentionInt8Available(const KernelConfig& config);
// The int8 attention's quantizers as the configuration's target runs them (vectorised on AVX-512
// VNNI, the scalar ref:: functions elsewhere), with ref::AttentionInt8Row / Keys / Values's
// contracts: the same bytes and scales on every target.
float AttentionInt8Row(const float* x, int64_t n, int8_t* q8, const KernelConfig& config);
void AttentionInt8Keys(const float* k, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                       int64_t stride, int8_t* k8, float* ks, const KernelConfig& config);
void AttentionInt8Values(const float* v, const AttentionShape& s, int64_t kvh, int64_t k_lo, int64_t nk,
                         int64_t stride, int8_t* v8, float* vs, float* mu, const KernelConfig& config);
// kernels.h's packed int8 attention on the configuration's target (nothing, and 0 bytes, where it
// lacks the int8 attention kernel).
size_t PackedKvHeadBytes(const AttentionShape& s, const KernelConfig& config);
void PackKvInt8(const HalfKv& kv, const AttentionShape& s, uint8_t* dst, size_t dst_stride,
                const KernelContext& ctx);
void AttentionPacked(const float* q, const AttentionShape& s, const uint8_t* packed, size_t stride,
                     float* out, const KernelContext& ctx);
void ToF16Rows(const float* x, int64_t rows, int64_t cols, int64_t x_stride, uint16_t* out,
               int64_t out_stride, const KernelContext& ctx);

// Integer path of a quantized MatMul (any m); kernels::MatMul uses it for m < QuantDequantMinRows().
void MatMulQuantInt(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
                    const KernelContext& ctx);

// The integer panels of kernels/quant.h (PackIntegerPanels): their size (0 where the
// configuration's target has no panel kernel) and the packing into a 64-byte aligned buffer.
size_t IntegerPanelsBytes(const WeightView& w, const KernelConfig& config);
void PackIntegerPanels(const WeightView& w, uint8_t* out, const KernelContext& ctx);

// True when the configuration's target multiplies int8 faster than fp32 at every m (it has a panel
// kernel: AVX-512 VNNI, AVX2).
bool IntegerPathAtAnyRows(const KernelConfig& config);
// True when the configuration's target builds prepacked panels (PackIntegerPanels; AVX-512 VNNI).
bool PrepackedPanels(const KernelConfig& config);

// The integer dot-product extension a Highway target lacks, used where the CPU has it (read
// once: CPUID / HWCAP) and the configuration allows it (KernelConfig::dot_extension):
// x86 AVX2: AVX-VNNI (VEX vpdpbusd on 256-bit lanes, matmul_panels256.cc);
// ARM NEON: the ARMv8.2 dot product (sdot; Raspberry Pi 5, Graviton, Apple M; matmul_quant.cc).
bool HasDotExtension();
bool UseDotExtension(const KernelConfig& config);

// aarch64 only (matmul_sdot_arm.cc, compiled for ARMv8.2 + dot product; call it only when
// HasDotExtension()): out[r * C + c] = row r of the int8 activations (xq[r], block scales xd[r])
// times row c of quantized W (wrow[c], format t), over nb blocks (groups for Q4_G128);
// 1 <= R <= 4, C in {1, 2, 4}.
void QuantTileSdot(QuantType t, size_t R, size_t C, const uint8_t* const* wrow, const int8_t* const* xq,
                   const float* const* xd, size_t nb, float* out);
// ARM: the int8 matrix multiply (i8mm `smmla`, HWCAP2_I8MM; Graviton 3/4, Apple M2 and later),
// read once, and whether the configuration uses it (KernelConfig::i8mm; the tests turn it off to
// cover sdot too).
bool HasI8mm();
bool UseI8mm(const KernelConfig& config);
// aarch64 only (matmul_smmla_arm.cc, compiled for ARMv8.2 + dot product + i8mm; call it only
// when HasI8mm()): QuantTileSdot's contract for R in {2, 4} rows and C = 2 columns.
void QuantTileSmmla(QuantType t, size_t R, const uint8_t* const* wrow, const int8_t* const* xq,
                    const float* const* xd, size_t nb, float* out);

ProbeResult FmaProbe(int64_t iters, float start, const KernelConfig& config);
double ReadProbe(const float* x, int64_t n, const KernelConfig& config);
DotProbeResult DotProbe(DotKind kind, int64_t iters);  // probe_x86.cc

// Name of the target the kernels of `config` run on.
const char* DispatchedTargetName(const KernelConfig& config);
// Targets compiled into the kernels and supported by this CPU, best first (for per-target tests:
// KernelConfig::target).
std::vector<int64_t> SupportedCompiledTargets();

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
