// kernels/cpu/cpu_kernels.h — the Highway-dispatched implementations behind kernels.h.
// Each function performs one HWY_DYNAMIC_DISPATCH to the best compiled target the CPU
// supports (honouring hwy::SetSupportedTargetsForTest). Same contracts as kernels.h.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace mineru {
namespace kernels {
namespace cpu {

// MatMul path selection (for tests and benchmarks; kAuto is what kernels::MatMul uses).
enum class MatMulPath { kAuto, kDot, kPacked, kQuantInt };

void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y, ThreadPool* pool,
            MatMulPath path = MatMulPath::kAuto);
void WeightRowToF32(const WeightView& w, int64_t row, float* out);
void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
             ThreadPool* pool);
void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y, ThreadPool* pool);
void QuickGelu(float* x, int64_t n, ThreadPool* pool);
void GeluErf(float* x, int64_t n, ThreadPool* pool);
void SiluMul(const float* gate, const float* up, int64_t n, float* out, ThreadPool* pool);
void AddInPlace(float* x, const float* d, int64_t n, ThreadPool* pool);
void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin);
void RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                        const float* cos, const float* sin, ThreadPool* pool);
void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               ThreadPool* pool);

// Integer path of a quantized MatMul (any m); kernels::MatMul uses it for m < QuantDequantMinRows().
void MatMulQuantInt(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
                    ThreadPool* pool);

// The integer panels of kernels/quant.h (PackIntegerPanels): their size (0 where the
// dispatched target has no panel kernel) and the packing into a 64-byte aligned buffer.
size_t IntegerPanelsBytes(const WeightView& w);
void PackIntegerPanels(const WeightView& w, uint8_t* out, ThreadPool* pool);

// True when the dispatched target multiplies int8 faster than fp32 at every m (it has a panel
// kernel: AVX-512 VNNI, AVX2).
bool IntegerPathAtAnyRows();
// True when the dispatched target builds prepacked panels (PackIntegerPanels; AVX-512 VNNI).
bool PrepackedPanels();

// AVX-VNNI (VEX vpdpbusd on 256-bit lanes) for the AVX2 panel kernel: used when the CPU
// has it (CPUID, read once) and it is allowed (the SIMD tier cap; allowed by default).
bool HasAvxVnni();
void AllowAvxVnni(bool allow);
bool UseAvxVnni();

ProbeResult FmaProbe(int64_t iters, float start);
double ReadProbe(const float* x, int64_t n);
DotProbeResult DotProbe(DotKind kind, int64_t iters);  // probe_x86.cc

// Name of the target HWY_DYNAMIC_DISPATCH selects now.
const char* DispatchedTargetName();
// Targets compiled into the kernels and supported by this CPU (for per-target tests).
std::vector<int64_t> SupportedCompiledTargets();

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
