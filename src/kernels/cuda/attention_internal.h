// kernels/cuda/attention_internal.h — the tensor-core forms of VarlenAttention (attention_tc.cu:
// WMMA; attention_mma.cu: mma.sync with register accumulators), which attention.cu's bf16 entry
// point dispatches to. Internal to kernels/cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "base/status.h"
#include "kernels/cuda/attention.h"

namespace mineru {
namespace kernels {
namespace cuda {

// What both VarlenAttention kernels read of a shape (passed by value to the kernel).
struct VarlenParams {
  const int32_t* cu_q;
  const int32_t* cu_k;
  int group, head_dim;
  int64_t q_stride, k_stride, v_stride, out_stride;
  bool causal;
  float scale;
};
inline VarlenParams MakeVarlenParams(const VarlenAttentionShape& s) {
  VarlenParams p;
  p.cu_q = s.cu_seqlens_q;
  p.cu_k = s.cu_seqlens_k;
  p.group = static_cast<int>(s.num_heads / s.num_kv_heads);
  p.head_dim = static_cast<int>(s.head_dim);
  p.q_stride = s.q_stride;
  p.k_stride = s.k_stride;
  p.v_stride = s.v_stride;
  p.out_stride = s.out_stride;
  p.causal = s.causal;
  p.scale = s.scale;
  return p;
}

// Calls f(std::integral_constant<int, D>()) for the head sizes the tensor-core kernels are built
// for (16 to 128 in steps of 16), returning what f returns; `otherwise` for any other head_dim.
template <typename R, typename F>
R WithTensorCoreHeadDim(int64_t head_dim, R otherwise, F&& f) {
  switch (head_dim) {
    case 16:
      return f(std::integral_constant<int, 16>());
    case 32:
      return f(std::integral_constant<int, 32>());
    case 48:
      return f(std::integral_constant<int, 48>());
    case 64:
      return f(std::integral_constant<int, 64>());
    case 80:
      return f(std::integral_constant<int, 80>());
    case 96:
      return f(std::integral_constant<int, 96>());
    case 112:
      return f(std::integral_constant<int, 112>());
    case 128:
      return f(std::integral_constant<int, 128>());
    default:
      return otherwise;
  }
}

// The shared memory one block of the current device may opt in to (99 KiB on sm_86/89, 163 on
// sm_80, 227 on sm_90); 0 when it cannot be asked. Asked of the runtime once per device.
size_t DeviceSharedOptin();

// Whether each tensor-core kernel takes this shape: head_dim a multiple of 16 up to 128 whose shared
// memory the current device can give one block. WMMA: attention_tc.cu; mma.sync: attention_mma.cu.
bool VarlenWmmaFits(const VarlenAttentionShape& s);
// m_tiles: 16-row m-tiles per warp in the mma form, 1 or 2 (2: heads up to 96 only).
bool VarlenMmaFits(const VarlenAttentionShape& s, int m_tiles);

// The bf16 VarlenAttention on the tensor cores; the caller has checked the shape (CheckVarlen, the
// form's Fits) and the pointers, and that there is work.
Status LaunchVarlenWmma(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s, Bf16* out,
                        StreamHandle stream);
Status LaunchVarlenMma(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s, Bf16* out,
                       int m_tiles, StreamHandle stream);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
