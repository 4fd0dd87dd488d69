// kernels/cuda/attention_internal.h — the tensor-core form of VarlenAttention (attention_tc.cu),
// which attention.cu's bf16 entry point dispatches to. Internal to kernels/cuda.
#pragma once

#include <cstdint>

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

// Whether the tensor-core kernel takes this shape: head_dim a multiple of 16 up to 128 whose shared
// memory the current device can give one block.
bool VarlenTensorCoreFits(const VarlenAttentionShape& s);

// The bf16 VarlenAttention on the tensor cores; the caller has checked the shape (CheckVarlen,
// VarlenTensorCoreFits) and the pointers, and that there is work.
Status LaunchVarlenTensorCore(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s,
                              Bf16* out, StreamHandle stream);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
