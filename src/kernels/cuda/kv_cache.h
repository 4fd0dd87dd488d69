// kernels/cuda/kv_cache.h — moving rows in and out of the paged KV cache on the GPU, and
// gathering rows by index, callable from ordinary C++ (no CUDA header).
//
// The cache's geometry is the engine's BlockPool layout (attention.h, PagedDecodeShape): a token's
// place is a slot, block * block_size + row, and its keys live at
//   k_cache + block * block_stride + row * row_stride   (kv_dim elements; values likewise).
// Slots and row indices are DEVICE int32 arrays (the host builds them from the block tables), not
// checked on the device: they must name valid blocks and rows.
// Contracts of cuda_ops.h: device pointers, fp32 or bf16 elements of one type, queued on
// `stream`, InvalidArgument before anything is queued, a zero-sized call queues nothing.
// Copies move bits: nothing is rounded.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/cuda_ops.h"

namespace mineru {
namespace kernels {
namespace cuda {

struct PagedKvLayout {
  int64_t block_size = 0;    // tokens per block (> 0)
  int64_t block_stride = 0;  // elements from one block id to the next
  int64_t row_stride = 0;    // elements between a block's rows (>= kv_dim)
  int64_t kv_dim = 0;        // elements of one key (or value) row: num_kv_heads * head_dim
};

// For r in [0, n): key row r (k + r * k_stride) and value row r (v + r * v_stride) are stored at
// slot slots[r] of k_cache and v_cache. Slots must be distinct (two rows to one slot race). The
// twin: Decoder's StoreKvRow over the same block tables (tests/kernels/cuda_kv_cache_test.cc).
Status StoreKvRows(const float* k, int64_t k_stride, const float* v, int64_t v_stride, int64_t n,
                   const int32_t* slots, const PagedKvLayout& layout, float* k_cache, float* v_cache,
                   StreamHandle stream = nullptr);
Status StoreKvRows(const Bf16* k, int64_t k_stride, const Bf16* v, int64_t v_stride, int64_t n,
                   const int32_t* slots, const PagedKvLayout& layout, Bf16* k_cache, Bf16* v_cache,
                   StreamHandle stream = nullptr);

// For r in [0, n): k_out row r and v_out row r (kv_dim elements each, packed) = the key and value
// rows at slot slots[r]: a sequence's context made contiguous for VarlenAttention.
Status GatherKvRows(const float* k_cache, const float* v_cache, const PagedKvLayout& layout,
                    const int32_t* slots, int64_t n, float* k_out, float* v_out,
                    StreamHandle stream = nullptr);
Status GatherKvRows(const Bf16* k_cache, const Bf16* v_cache, const PagedKvLayout& layout,
                    const int32_t* slots, int64_t n, Bf16* k_out, Bf16* v_out, StreamHandle stream = nullptr);

// For r in [0, n): dst row r (cols elements, packed) = src row rows[r] (src + rows[r] * src_stride):
// the rows that sample, picked for the LM head.
Status GatherRows(const float* src, int64_t src_stride, const int32_t* rows, int64_t n, int64_t cols,
                  float* dst, StreamHandle stream = nullptr);
Status GatherRows(const Bf16* src, int64_t src_stride, const int32_t* rows, int64_t n, int64_t cols,
                  Bf16* dst, StreamHandle stream = nullptr);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
