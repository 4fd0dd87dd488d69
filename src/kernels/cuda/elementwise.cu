// kernels/cuda/elementwise.cu — QuickGelu, GeluErf, SiluMul, AddInPlace, AddBiasRows, RopeRotateHalfRows,
// RopeTables2D and the casts (cuda_ops.h): grid-stride loops, one element (or one rotated pair) per thread
// per step, fp32 arithmetic with the formulas of the scalar twins in kernels/reference.cc.

#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_math.cuh"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;  // 1M threads: more than any current GPU holds at once

__device__ __forceinline__ int64_t FirstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

struct QuickGeluOp {
  __device__ float operator()(float v) const { return v / (1.0f + expf(-1.702f * v)); }
};
struct GeluErfOp {
  __device__ float operator()(float v) const { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
};

// x[i] = f(x[i]) over [0, n).
template <typename T, typename F>
__global__ void __launch_bounds__(kThreads) UnaryKernel(T* x, int64_t n, F f) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) Store(x + i, f(Load(x + i)));
}

// out[i] = silu(gate[i]) * up[i]; out may equal gate or up (each element is read before it is written,
// by the same thread).
template <typename T>
__global__ void __launch_bounds__(kThreads) SiluMulKernel(const T* gate, const T* up, int64_t n, T* out) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const float g = Load(gate + i);
    Store(out + i, g / (1.0f + expf(-g)) * Load(up + i));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) AddKernel(T* x, const T* d, int64_t n) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) Store(x + i, Load(x + i) + Load(d + i));
}

// y[i, j] += bias[j] over an [m, n] y: item t is row t / n, column t % n.
template <typename T>
__global__ void __launch_bounds__(kThreads) AddBiasRowsKernel(T* y, int64_t m, int64_t n, const float* bias) {
  for (int64_t t = FirstIndex(); t < m * n; t += GridStride()) Store(y + t, Load(y + t) + bias[t % n]);
}

// y[i] = x[i] converted (Load widens, Store rounds to nearest even).
template <typename From, typename To>
__global__ void __launch_bounds__(kThreads) CastKernel(const From* x, int64_t n, To* y) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) Store(y + i, Load(x + i));
}

// Item t of n * num_heads * half is pair j of head h of row i: (i * num_heads + h) * half + j.
template <typename T>
__global__ void __launch_bounds__(kThreads) RopeKernel(T* x, int64_t n, int64_t x_stride, int64_t num_heads,
                                                       int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  const int64_t total = n * num_heads * half;
  for (int64_t t = FirstIndex(); t < total; t += GridStride()) {
    const int64_t j = t % half;
    const int64_t head = t / half;  // i * num_heads + h
    const int64_t i = head / num_heads, h = head % num_heads;
    T* xh = x + i * x_stride + h * head_dim;
    const float* c = cos + i * head_dim;
    const float* s = sin + i * head_dim;
    const float a = Load(xh + j), b = Load(xh + j + half);
    Store(xh + j, a * c[j] - b * s[j]);
    Store(xh + j + half, b * c[j + half] + a * s[j + half]);
  }
}

template <typename T, typename F>
Status LaunchUnary(const char* op, T* x, int64_t n, F f, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes(op, {n}));
  if (n == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers(op, {x}));
  UnaryKernel<<<GridBlocks(n, kThreads, kMaxBlocks), kThreads, 0, stream>>>(ToDevice(x), n, f);
  return LaunchStatus(op);
}

template <typename T>
Status LaunchSiluMul(const T* gate, const T* up, int64_t n, T* out, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes("SiluMul", {n}));
  if (n == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers("SiluMul", {gate, up, out}));
  SiluMulKernel<<<GridBlocks(n, kThreads, kMaxBlocks), kThreads, 0, stream>>>(ToDevice(gate), ToDevice(up), n,
                                                                              ToDevice(out));
  return LaunchStatus("SiluMul");
}

template <typename T>
Status LaunchAdd(T* x, const T* d, int64_t n, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes("AddInPlace", {n}));
  if (n == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers("AddInPlace", {x, d}));
  AddKernel<<<GridBlocks(n, kThreads, kMaxBlocks), kThreads, 0, stream>>>(ToDevice(x), ToDevice(d), n);
  return LaunchStatus("AddInPlace");
}

template <typename T>
Status LaunchAddBiasRows(T* y, int64_t m, int64_t n, const float* bias, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes("AddBiasRows", {m, n}));
  if (m == 0 || n == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers("AddBiasRows", {y, bias}));
  AddBiasRowsKernel<<<GridBlocks(m * n, kThreads, kMaxBlocks), kThreads, 0, stream>>>(ToDevice(y), m, n,
                                                                                      bias);
  return LaunchStatus("AddBiasRows");
}

template <typename From, typename To>
Status LaunchCast(const char* op, const From* x, int64_t n, To* y, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes(op, {n}));
  if (n == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers(op, {x, y}));
  CastKernel<<<GridBlocks(n, kThreads, kMaxBlocks), kThreads, 0, stream>>>(ToDevice(x), n, ToDevice(y));
  return LaunchStatus(op);
}

template <typename T>
Status LaunchRope(T* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim, const float* cos,
                  const float* sin, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes("RopeRotateHalfRows", {n, x_stride, num_heads, head_dim}));
  if (head_dim % 2 != 0) {
    return InvalidArgumentError("RopeRotateHalfRows: head_dim " + std::to_string(head_dim) + " is odd");
  }
  if (x_stride < num_heads * head_dim) {
    return InvalidArgumentError("RopeRotateHalfRows: x_stride " + std::to_string(x_stride) + " < " +
                                std::to_string(num_heads) + " heads * " + std::to_string(head_dim));
  }
  if (n == 0 || num_heads == 0 || head_dim == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers("RopeRotateHalfRows", {x, cos, sin}));
  const int64_t total = n * num_heads * (head_dim / 2);
  RopeKernel<<<GridBlocks(total, kThreads, kMaxBlocks), kThreads, 0, stream>>>(ToDevice(x), n, x_stride,
                                                                               num_heads, head_dim, cos, sin);
  return LaunchStatus("RopeRotateHalfRows");
}

// One (row, column) of the 2-D rotary tables a thread per step (ref::RopeTables2D).
__global__ void __launch_bounds__(kThreads)
    RopeTables2DKernel(const float* freq_cos, const float* freq_sin, int64_t positions, const int32_t* hw,
                       int64_t n, int64_t head_dim, float* cos, float* sin) {
  const int64_t half = head_dim / 2, quarter = head_dim / 4;
  for (int64_t e = FirstIndex(); e < n * head_dim; e += GridStride()) {
    const int64_t i = e / head_dim, j = e % head_dim % half;
    const int64_t p = j < quarter ? hw[2 * i] : hw[2 * i + 1];
    const int64_t at = p * quarter + (j < quarter ? j : j - quarter);
    const bool in = p >= 0 && p < positions;
    cos[e] = in ? freq_cos[at] : __int_as_float(0x7fc00000);
    sin[e] = in ? freq_sin[at] : __int_as_float(0x7fc00000);
  }
}

}  // namespace

Status RopeTables2D(const float* freq_cos, const float* freq_sin, int64_t positions, const int32_t* hw,
                    int64_t n, int64_t head_dim, float* cos, float* sin, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckSizes("RopeTables2D", {positions, n, head_dim}));
  if (head_dim % 4 != 0) {
    return InvalidArgumentError("RopeTables2D: head_dim " + std::to_string(head_dim) +
                                " is not a multiple of 4");
  }
  if (n == 0 || head_dim == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers("RopeTables2D", {freq_cos, freq_sin, hw, cos, sin}));
  RopeTables2DKernel<<<GridBlocks(n * head_dim, kThreads, kMaxBlocks), kThreads, 0, stream>>>(
      freq_cos, freq_sin, positions, hw, n, head_dim, cos, sin);
  return LaunchStatus("RopeTables2D");
}

Status QuickGelu(float* x, int64_t n, StreamHandle stream) {
  return LaunchUnary("QuickGelu", x, n, QuickGeluOp(), stream);
}
Status QuickGelu(Bf16* x, int64_t n, StreamHandle stream) {
  return LaunchUnary("QuickGelu", x, n, QuickGeluOp(), stream);
}

Status GeluErf(float* x, int64_t n, StreamHandle stream) {
  return LaunchUnary("GeluErf", x, n, GeluErfOp(), stream);
}
Status GeluErf(Bf16* x, int64_t n, StreamHandle stream) {
  return LaunchUnary("GeluErf", x, n, GeluErfOp(), stream);
}

Status SiluMul(const float* gate, const float* up, int64_t n, float* out, StreamHandle stream) {
  return LaunchSiluMul(gate, up, n, out, stream);
}
Status SiluMul(const Bf16* gate, const Bf16* up, int64_t n, Bf16* out, StreamHandle stream) {
  return LaunchSiluMul(gate, up, n, out, stream);
}

Status AddInPlace(float* x, const float* d, int64_t n, StreamHandle stream) {
  return LaunchAdd(x, d, n, stream);
}
Status AddInPlace(Bf16* x, const Bf16* d, int64_t n, StreamHandle stream) {
  return LaunchAdd(x, d, n, stream);
}

Status AddBiasRows(float* y, int64_t m, int64_t n, const float* bias, StreamHandle stream) {
  return LaunchAddBiasRows(y, m, n, bias, stream);
}
Status AddBiasRows(Bf16* y, int64_t m, int64_t n, const float* bias, StreamHandle stream) {
  return LaunchAddBiasRows(y, m, n, bias, stream);
}

Status CastF32ToBf16(const float* x, int64_t n, Bf16* y, StreamHandle stream) {
  return LaunchCast("CastF32ToBf16", x, n, y, stream);
}
Status CastBf16ToF32(const Bf16* x, int64_t n, float* y, StreamHandle stream) {
  return LaunchCast("CastBf16ToF32", x, n, y, stream);
}

Status RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                          const float* cos, const float* sin, StreamHandle stream) {
  return LaunchRope(x, n, x_stride, num_heads, head_dim, cos, sin, stream);
}
Status RopeRotateHalfRows(Bf16* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                          const float* cos, const float* sin, StreamHandle stream) {
  return LaunchRope(x, n, x_stride, num_heads, head_dim, cos, sin, stream);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
