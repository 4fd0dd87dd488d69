// kernels/kernels.h — the op catalogue of the engine.
//
// Every op writes into caller-owned outputs and allocates nothing on the hot path except
// small per-call scratch. Activations are fp32, row-major. Weights are read as stored
// (f32/bf16/f16) through WeightView and widened on the fly. These entry points are the
// seam where SIMD/quantized versions replace the scalar reference (kernels/reference.cc);
// the reference stays as the twin the tests compare against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/safetensors.h"
#include "base/thread_pool.h"

namespace mineru {

// A read-only 2-D weight matrix [rows, cols], row-major, as stored on disk.
// For a Linear layer rows = out_features, cols = in_features.
struct WeightView {
  DType dtype = DType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};

namespace kernels {

// y[m, n] = x[m, k] · W[n, k]^T (+ bias[n]). x and y must not alias. pool may be null.
void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y, ThreadPool* pool);

// Row i of W widened to f32 into out[cols].
void WeightRowToF32(const WeightView& w, int64_t row, float* out);

// y = x / sqrt(mean(x^2) + eps) * weight, per row of n values (Qwen2 RMSNorm, fp32).
void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y);

// y = (x - mean) / sqrt(var + eps) * weight + bias, per row (biased variance, as torch).
void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y);

// In place: x = x * sigmoid(1.702 x).
void QuickGelu(float* x, int64_t n);
// In place: x = 0.5 x (1 + erf(x / sqrt 2)) (torch's exact GELU).
void GeluErf(float* x, int64_t n);
// out[i] = silu(gate[i]) * up[i].
void SiluMul(const float* gate, const float* up, int64_t n, float* out);

// NeoX-style rotation ("rotate_half") of one head vector x[head_dim] in place, with
// per-dimension cos/sin of length head_dim (the second half repeats the first).
void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin);

// Scaled dot-product attention for one sequence, all heads, GQA.
//   q: [n_q, num_heads * head_dim]     (row stride q_stride floats)
//   k, v: [n_kv, num_kv_heads * head_dim] (row stride kv_stride floats)
//   out: [n_q, num_heads * head_dim]   (row stride out_stride floats)
// causal: query i attends to keys [0, kv_offset + i] where kv_offset = n_kv - n_q.
// Softmax in fp32 with max subtraction.
struct AttentionShape {
  int64_t n_q = 0, n_kv = 0;
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, kv_stride = 0, out_stride = 0;
  bool causal = false;
  float scale = 1.0f;
};
void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               ThreadPool* pool);

}  // namespace kernels
}  // namespace mineru
