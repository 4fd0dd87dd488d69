// kernels/cuda/attention_internal.h — the tensor-core form of VarlenAttention (attention_tc.cu),
// which attention.cu's bf16 entry point dispatches to. Internal to kernels/cuda.
#pragma once

#include "base/status.h"
#include "kernels/cuda/attention.h"

namespace mineru {
namespace kernels {
namespace cuda {

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
