// kernels/cpu/scratch.h — what one worker of a KernelContext keeps between kernel calls
// (kernels/context.h KernelScratch): buffers grown to the largest call so far and reused, so a
// decode step's hundreds of calls allocate nothing once warm. Owned by the caller's
// KernelWorkspace; a kernel uses worker slot i's during a call made with that context (by the
// task running as slot i, or by the call itself for slot 0's call-wide buffers), never after it
// returns. Target-independent types: every Highway target's kernels use the same ones. Not a
// public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/context.h"

namespace mineru {
namespace kernels {
namespace cpu {

// Query rows per block of the attention kernel (attention_internal-inl.h kBQ).
constexpr size_t kAttentionRowBlock = 48;

// One worker's buffers for the attention block kernel, sized for a geometry by AllocScratch
// (attention_block.cc).
struct AttentionScratch {
  hwy::AlignedFreeUniquePtr<float[]> kt, vp, s, o;
  hwy::AlignedFreeUniquePtr<float[]> k32;  // fp16 keys of one panel widened [panel width][hd]
  std::vector<float> m, l, alpha;
  // int8 Q Kᵀ: key panels (16 keys x hd4 bytes each), key scales, the block's int8 Q rows
  // (kBQ x hd4), their scales and -128 x their sums.
  hwy::AlignedFreeUniquePtr<uint8_t[]> k8;
  hwy::AlignedFreeUniquePtr<float[]> ks;
  hwy::AlignedFreeUniquePtr<int8_t[]> q8;
  float qs[kAttentionRowBlock];
  int32_t qc[kAttentionRowBlock];
  // int8 P V: value panels (key quad, 16 dims: 64 bytes), per-dim scales and means (16-padded),
  // the tile's u8 probabilities (kBQ x kBK), their steps and sums.
  hwy::AlignedFreeUniquePtr<int8_t[]> v8;
  hwy::AlignedFreeUniquePtr<float[]> vs, vmu;
  hwy::AlignedFreeUniquePtr<uint8_t[]> p8;
  float ps[kAttentionRowBlock];
  int32_t psum[kAttentionRowBlock];
  // What the int8 tiles read: the buffers above, or one KV head of PackKvInt8's bytes.
  const uint8_t* k8p = nullptr;
  const float* ksp = nullptr;
  const int8_t* v8p = nullptr;
  const float *vsp = nullptr, *vmup = nullptr;
  size_t bytes = 0;  // allocated by AllocScratch
};

// Attention's fp32 scratch as a worker keeps it between calls, and what it was allocated for.
struct KeptAttention {
  AttentionScratch s;
  int64_t target = 0;  // the Highway target whose AllocScratch sized it
  size_t hd = 0, hdp = 0, keys = 0;
};

}  // namespace cpu

class KernelScratch {
 public:
  // Attention (attention.cc), fp32 path: this worker's block scratch.
  cpu::KeptAttention attention;
  // The int8 value packer's staging rows (attention_int8_pack.cc PackValuesInt8).
  std::vector<int8_t> values8;
  // PackKvInt8 (attention_packed.cc): one KV head's packed bytes, copied to their place after
  // each round of heads (slot i holds the round's head i).
  hwy::AlignedFreeUniquePtr<uint8_t[]> packed_head;
  size_t packed_head_bytes = 0;

  // Frees every buffer (they grow again on the next call that needs them).
  void Release() {
    attention = cpu::KeptAttention();
    std::vector<int8_t>().swap(values8);
    packed_head.reset();
    packed_head_bytes = 0;
  }
  // Bytes held now.
  size_t Bytes() const { return attention.s.bytes + values8.capacity() + packed_head_bytes; }
};

}  // namespace kernels
}  // namespace mineru
