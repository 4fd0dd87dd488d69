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
#include <new>
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

// The quantized activations of one MatMulQuantInt call (matmul_quant.cc), grown to the largest
// call so far (a prefill's 2,048 x 4,864 is ~10 MB): a product per layer and step would otherwise
// allocate and fault in fresh pages each time (with the serving allocator's settings, cli/common.h,
// anything over 1 MB is a fresh mmap).
struct ActScratch {
  hwy::AlignedFreeUniquePtr<int8_t[]> q;       // [m, kpad]
  hwy::AlignedFreeUniquePtr<float[]> d, corr;  // [m, nb] each
  hwy::AlignedFreeUniquePtr<int32_t[]> xc;     // [m, nb]
  size_t q_cap = 0, b_cap = 0;

  // Room for q_elems int8 values and block_elems of each per-block array. Out of memory: frees
  // everything and throws std::bad_alloc (the caller's handling applies: a pass of a request
  // fails, not the process).
  void Reserve(size_t q_elems, size_t block_elems) {
    if (q_elems > q_cap) {
      q = hwy::AllocateAligned<int8_t>(q_elems);
      q_cap = q_elems;
    }
    if (block_elems > b_cap) {
      d = hwy::AllocateAligned<float>(block_elems);
      corr = hwy::AllocateAligned<float>(block_elems);
      xc = hwy::AllocateAligned<int32_t>(block_elems);
      b_cap = block_elems;
    }
    if ((q_elems > 0 && !q) || (block_elems > 0 && (!d || !corr || !xc))) {
      *this = ActScratch();
      throw std::bad_alloc();
    }
  }
  size_t Bytes() const { return q_cap + b_cap * (2 * sizeof(float) + sizeof(int32_t)); }
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
  // MatMulQuantInt (matmul_quant.cc): the call's int8 activations (slot 0's, used by the call).
  cpu::ActScratch act;

  // Frees every buffer (they grow again on the next call that needs them).
  void Release() {
    attention = cpu::KeptAttention();
    std::vector<int8_t>().swap(values8);
    packed_head.reset();
    packed_head_bytes = 0;
    act = cpu::ActScratch();
  }
  // Bytes held now.
  size_t Bytes() const { return attention.s.bytes + values8.capacity() + packed_head_bytes + act.Bytes(); }
};

}  // namespace kernels
}  // namespace mineru
