// kernels/reference.h — the scalar twins of every op in kernels.h, same signatures and
// contracts. Written for readability; the SIMD kernels are tested against these, and
// SetKernelPath(KernelPath::kReference) routes the public entry points here.
#pragma once

#include "kernels/kernels.h"

namespace mineru {
namespace kernels {
namespace ref {

void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y, ThreadPool* pool);
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
void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               ThreadPool* pool);

}  // namespace ref
}  // namespace kernels
}  // namespace mineru
