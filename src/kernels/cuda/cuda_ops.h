// kernels/cuda/cuda_ops.h — CUDA versions of kernels.h's norms, activations, residual add and
// RoPE, callable from ordinary C++ (this header includes no CUDA header).
//
// Contracts shared by every op:
//   - every data pointer is a device pointer (DeviceBuffer::data()), row-major and contiguous unless
//     a stride is given; no alignment beyond the element's own is assumed;
//   - activations are fp32 (float) or bf16 (Bf16), the same type in and out; weights, biases and
//     cos/sin tables are fp32. Arithmetic and sums are fp32; a bf16 result is rounded once, to
//     nearest even;
//   - formulas, eps placement and in-place rules are those of the scalar twin named at each op
//     (kernels/reference.cc): tests/kernels/cuda_ops_test.cc compares each op with its twin;
//   - the op is queued on `stream` (nullptr: the legacy default stream) and returns at once. Ok
//     means the launch was accepted; a fault inside the kernel shows at the next synchronisation
//     (CudaStream::Synchronize, a synchronous copy);
//   - InvalidArgument for a negative size, a bad shape or a null pointer with work to do, checked
//     before anything is queued; a zero size queues nothing and returns Ok; Unavailable without a
//     usable device.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/buffer.h"

namespace mineru {
namespace kernels {
namespace cuda {

// One bfloat16 value as stored: the upper 16 bits of an fp32 (base/bf16.h converts). Same size and
// layout as CUDA's __nv_bfloat16, which the kernels read it as.
struct Bf16 {
  uint16_t bits;
};
static_assert(sizeof(Bf16) == 2, "Bf16 is two bytes");

// y[i] = x[i] rounded to bf16 (to nearest even, as base/bf16.h's F32ToBf16; NaN stays NaN) over
// [0, n): fp32 host data uploaded once and narrowed on the device (the ViT's pixel values). x and y
// must not overlap. Twin: F32ToBf16.
Status CastF32ToBf16(const float* x, int64_t n, Bf16* y, StreamHandle stream = nullptr);
// y[i] = x[i] widened to fp32, exactly, over [0, n). x and y must not overlap. Twin: Bf16ToF32.
Status CastBf16ToF32(const Bf16* x, int64_t n, float* y, StreamHandle stream = nullptr);

// y = weight * (x / sqrt(mean(x^2) + eps)) per row: x, y [m, n], weight [n]. y may equal x.
// Twin: ref::RmsNorm.
Status RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
               StreamHandle stream = nullptr);
Status RmsNorm(const Bf16* x, int64_t m, int64_t n, const float* weight, float eps, Bf16* y,
               StreamHandle stream = nullptr);

// y = (x - mean) / sqrt(var + eps) * weight + bias per row (biased variance; mean and variance in
// two passes over the row): x, y [m, n], weight and bias [n]. y may equal x. Twin: ref::LayerNorm
// (which sums in double; the fp32 two-pass sums here stay within the tolerance the test states).
Status LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
                 float* y, StreamHandle stream = nullptr);
Status LayerNorm(const Bf16* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
                 Bf16* y, StreamHandle stream = nullptr);

// In place: x = x / (1 + exp(-1.702 x)) over x[0, n). Twin: ref::QuickGelu.
Status QuickGelu(float* x, int64_t n, StreamHandle stream = nullptr);
Status QuickGelu(Bf16* x, int64_t n, StreamHandle stream = nullptr);

// In place: x = 0.5 x (1 + erf(x / sqrt 2)) over x[0, n) (torch's exact GELU). Twin: ref::GeluErf.
Status GeluErf(float* x, int64_t n, StreamHandle stream = nullptr);
Status GeluErf(Bf16* x, int64_t n, StreamHandle stream = nullptr);

// out[i] = gate[i] / (1 + exp(-gate[i])) * up[i] over [0, n) (SwiGLU's silu(gate) * up). out may
// equal gate or up. Twin: ref::SiluMul.
Status SiluMul(const float* gate, const float* up, int64_t n, float* out, StreamHandle stream = nullptr);
Status SiluMul(const Bf16* gate, const Bf16* up, int64_t n, Bf16* out, StreamHandle stream = nullptr);

// In place: x[i] += d[i] over [0, n) (the residual connections). d must not overlap x unless equal.
// Twin: ref::AddInPlace.
Status AddInPlace(float* x, const float* d, int64_t n, StreamHandle stream = nullptr);
Status AddInPlace(Bf16* x, const Bf16* d, int64_t n, StreamHandle stream = nullptr);

// In place: y[i * n + j] += bias[j] over rows [0, m) (bias fp32 [n]): the bias of a matrix product
// where cuBLASLt's epilogue does not add it (gemm.h). Twin: the loop itself (ref::MatMul's bias).
Status AddBiasRows(float* y, int64_t m, int64_t n, const float* bias, StreamHandle stream = nullptr);
Status AddBiasRows(Bf16* y, int64_t m, int64_t n, const float* bias, StreamHandle stream = nullptr);

// NeoX-style rotate-half RoPE in place over heads [0, num_heads) of rows [0, n): head h of row i is
// x + i * x_stride + h * head_dim (x_stride >= num_heads * head_dim, in elements), and rotates with
// the fp32 tables cos, sin + i * head_dim ([n, head_dim]; the second half of a row repeats the first
// for the usual tables, but each half is read where the twin reads it):
//   x[j]        = x[j] * cos[j]               - x[j + half] * sin[j]
//   x[j + half] = x[j + half] * cos[j + half] + x[j] * sin[j + half],   j < half = head_dim / 2.
// head_dim must be even (InvalidArgument otherwise). Twin: ref::RopeRotateHalfRows.
Status RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                          const float* cos, const float* sin, StreamHandle stream = nullptr);
Status RopeRotateHalfRows(Bf16* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                          const float* cos, const float* sin, StreamHandle stream = nullptr);

// The ViT's 2-D rotary tables cos, sin [n, head_dim] gathered on the device from the frequency
// tables freq_cos, freq_sin [positions, head_dim / 4] and each row's (row, column) position hw
// [n, 2], exactly as the twin ref::RopeTables2D (a copy: the same bits). head_dim must be a
// multiple of 4 (InvalidArgument otherwise); a position outside [0, positions) gives NaN.
Status RopeTables2D(const float* freq_cos, const float* freq_sin, int64_t positions, const int32_t* hw,
                    int64_t n, int64_t head_dim, float* cos, float* sin, StreamHandle stream = nullptr);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
