// kernels/cuda/paged_attention.cu — PagedDecodeAttention (attention.h): one query token per
// sequence over its paged keys and values. One thread block per (sequence, KV head, chunk of up
// to kDecodeHeads of that KV head's query heads), so a GQA group reads each key and value once.
// The block's kDecodeWarps warps split the context into tiles of 32 keys, warp w taking tiles w,
// w + kDecodeWarps, ...: the warp stages a tile's keys in shared memory (row by row, coalesced),
// each lane scores one key for every head of the chunk, and the warp keeps an online softmax per
// head (running maximum, sum, and an fp32 accumulator of head_dim / 32 dimensions per lane),
// reading the tile's values row by row from the cache. At the end the warps' states are merged
// in shared memory, as flash-decoding merges its splits.
//
// Split (PagedDecodeShape::split_keys > 0, flash-decoding): a third grid dimension cuts each
// context into chunks of split_keys keys, one block each, which writes its heads' unnormalised
// partial state (accumulator, maximum, sum) to the workspace instead of the output; a second
// kernel merges a sequence's chunks. A step of few sequences (one page's requests) then keeps more
// than a handful of the GPU's SMs busy. The grid is fixed by the block-table stride (chunks past a
// sequence's context return at once), so a recorded CUDA graph stays valid as contexts grow.

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/device_math.cuh"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

constexpr int kDecodeWarps = 4;
constexpr int kDecodeThreads = kDecodeWarps * kWarpSize;
constexpr int kDecodeHeads = 8;  // query heads per block (the decoder's group is 7)
constexpr int kDecodeDims = static_cast<int>(kMaxAttentionHeadDim) / kWarpSize;  // per lane
constexpr int kMaxGridY = 65535;
constexpr int kValueRows = 8;  // value rows a lane has in flight (divides the 32-key tile)
static_assert(kWarpSize % kValueRows == 0, "value rows in whole groups of a tile");
static_assert(kMaxAttentionHeadDim % kWarpSize == 0, "head dims split over a warp");

struct DecodeParams {
  int group, head_dim, chunks, num_heads;
  int split_keys, max_splits;  // split_keys 0: no split (max_splits 1)
  float* partial;              // with a split: [num_seqs][num_heads][max_splits][head_dim + 2]
  int64_t q_stride, out_stride;
  const int32_t* context_lens;
  const int32_t* block_tables;
  int64_t table_stride;
  int block_size;
  int64_t block_stride, row_stride;
  float scale;
};

// Offset of token t's row in the cache, through the sequence's block-table row.
__device__ __forceinline__ int64_t CacheRow(const DecodeParams& p, const int32_t* table, int t) {
  return static_cast<int64_t>(table[t / p.block_size]) * p.block_stride +
         static_cast<int64_t>(t % p.block_size) * p.row_stride;
}

// The online-softmax state of one head, per lane: lane holds dims lane + 32 i.
struct HeadState {
  float m[kDecodeHeads], l[kDecodeHeads], acc[kDecodeHeads][kDecodeDims];
};

// Folds the warp's tile of kn keys (from t0, keys staged in kw) into the state of every head.
template <typename D>
__device__ __forceinline__ void DecodeTile(const DecodeParams& p, const D* vc, const int32_t* table, int kvh,
                                           const float* qs, const float* kw, int t0, int kn, HeadState& st) {
  const int hd = p.head_dim, ld = hd + 1, lane = threadIdx.x % kWarpSize;
  float pr[kDecodeHeads];
#pragma unroll
  for (int g = 0; g < kDecodeHeads; ++g) pr[g] = 0.0f;
  if (lane < kn) {  // lane scores key t0 + lane for every head
    for (int d = 0; d < hd; ++d) {
      const float kd = kw[lane * ld + d];
#pragma unroll
      for (int g = 0; g < kDecodeHeads; ++g) pr[g] += qs[g * hd + d] * kd;
    }
  }
#pragma unroll
  for (int g = 0; g < kDecodeHeads; ++g) {
    const float s = lane < kn ? pr[g] * p.scale : -INFINITY;
    const float m_new = fmaxf(st.m[g], WarpMax(s));  // finite: kn >= 1
    const float alpha = st.m[g] == -INFINITY ? 0.0f : expf(st.m[g] - m_new);
    pr[g] = lane < kn ? expf(s - m_new) : 0.0f;
    st.l[g] = st.l[g] * alpha + WarpSum(pr[g]);
    st.m[g] = m_new;
#pragma unroll
    for (int i = 0; i < kDecodeDims; ++i) st.acc[g][i] *= alpha;
  }
  // The values, kValueRows rows at a time: every row's loads are issued before any is used (one
  // row at a time, each load's latency was paid in turn). Rows past kn read nothing and add 0
  // (their probabilities are 0 and their values 0).
  for (int r0 = 0; r0 < kn; r0 += kValueRows) {
    float vv[kValueRows][kDecodeDims];
#pragma unroll
    for (int u = 0; u < kValueRows; ++u) {
      const int r = r0 + u;
      const D* v_row = r < kn ? vc + CacheRow(p, table, t0 + r) + kvh * hd : vc;
#pragma unroll
      for (int i = 0; i < kDecodeDims; ++i) {
        const int d = lane + kWarpSize * i;
        vv[u][i] = r < kn && d < hd ? Load(v_row + d) : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kValueRows; ++u) {
#pragma unroll
      for (int g = 0; g < kDecodeHeads; ++g) {
        const float pg = __shfl_sync(0xffffffffu, pr[g], r0 + u);
#pragma unroll
        for (int i = 0; i < kDecodeDims; ++i) st.acc[g][i] += pg * vv[u][i];
      }
    }
  }
}

// Merges the warps' states (written to scratch) into the block's nh output heads; with `partial`
// (a split), into head g's unnormalised state there instead: accumulator at [g * part_stride, + hd),
// maximum and sum after it.
template <typename D>
__device__ __forceinline__ void MergeWarps(const HeadState& st, int hd, int nh, float* scratch, D* o,
                                           float* partial, int64_t part_stride) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* ms = scratch;                             // [kDecodeWarps][kDecodeHeads]
  float* ls = ms + kDecodeWarps * kDecodeHeads;    // [kDecodeWarps][kDecodeHeads]
  float* accs = ls + kDecodeWarps * kDecodeHeads;  // [kDecodeWarps][kDecodeHeads][hd]
#pragma unroll
  for (int g = 0; g < kDecodeHeads; ++g) {
    if (lane == 0) ms[warp * kDecodeHeads + g] = st.m[g], ls[warp * kDecodeHeads + g] = st.l[g];
#pragma unroll
    for (int i = 0; i < kDecodeDims; ++i) {
      const int d = lane + kWarpSize * i;
      if (d < hd) accs[(warp * kDecodeHeads + g) * hd + d] = st.acc[g][i];
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < nh * hd; idx += kDecodeThreads) {
    const int g = idx / hd, d = idx % hd;
    float m = -INFINITY;
    for (int w = 0; w < kDecodeWarps; ++w) m = fmaxf(m, ms[w * kDecodeHeads + g]);
    float l = 0.0f, a = 0.0f;
    if (m != -INFINITY) {  // else no key at all: zeros
      for (int w = 0; w < kDecodeWarps; ++w) {
        const float f = expf(ms[w * kDecodeHeads + g] - m);  // 0 for a warp that saw no key
        l += ls[w * kDecodeHeads + g] * f;
        a += accs[(w * kDecodeHeads + g) * hd + d] * f;
      }
    }
    if (partial != nullptr) {
      float* ps = partial + g * part_stride;
      ps[d] = a;
      if (d == 0) ps[hd] = m, ps[hd + 1] = l;
    } else {
      Store(o + g * hd + d, l > 0.0f ? a / l : 0.0f);
    }
  }
}

template <typename D>
__global__ void __launch_bounds__(kDecodeThreads)
    PagedDecodeKernel(const D* q, const D* kc, const D* vc, D* out, DecodeParams p) {
  extern __shared__ float smem[];
  const int hd = p.head_dim, ld = hd + 1;
  const int seq = blockIdx.x, kvh = blockIdx.y / p.chunks, split = blockIdx.z;
  const int h0 = kvh * p.group + (blockIdx.y % p.chunks) * kDecodeHeads;
  const int nh = min(kDecodeHeads, (kvh + 1) * p.group - h0);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* qs = smem;                    // [kDecodeHeads][hd], heads past nh zero
  float* ks = qs + kDecodeHeads * hd;  // per warp [32][ld]; the merge's scratch at the end
  const int32_t* table = p.block_tables + seq * p.table_stride;
  // Never past the block-table row, whatever context_lens says.
  const int ctx = max(0, min(p.context_lens[seq], static_cast<int>(p.table_stride * p.block_size)));
  // This block's keys [lo, hi): the whole context, or the split's chunk of it. A chunk past the
  // context is never read by the merge (chunk 0 always runs: an empty context writes its state).
  const int lo = p.split_keys > 0 ? split * p.split_keys : 0;
  const int hi = p.split_keys > 0 ? min(ctx, lo + p.split_keys) : ctx;
  if (split > 0 && lo >= ctx) return;  // uniform over the block
  for (int idx = threadIdx.x; idx < kDecodeHeads * hd; idx += kDecodeThreads) {
    const int g = idx / hd, d = idx % hd;
    qs[idx] = g < nh ? Load(q + seq * p.q_stride + (h0 + g) * hd + d) : 0.0f;
  }
  __syncthreads();
  HeadState st;
#pragma unroll
  for (int g = 0; g < kDecodeHeads; ++g) {
    st.m[g] = -INFINITY, st.l[g] = 0.0f;
#pragma unroll
    for (int i = 0; i < kDecodeDims; ++i) st.acc[g][i] = 0.0f;
  }
  float* kw = ks + warp * kWarpSize * ld;
  for (int t0 = lo + warp * kWarpSize; t0 < hi; t0 += kDecodeWarps * kWarpSize) {
    const int kn = min(kWarpSize, hi - t0);
#pragma unroll 4
    for (int r = 0; r < kn; ++r) {
      const D* k_row = kc + CacheRow(p, table, t0 + r) + kvh * hd;
      for (int d = lane; d < hd; d += kWarpSize) kw[r * ld + d] = Load(k_row + d);
    }
    __syncwarp();
    DecodeTile(p, vc, table, kvh, qs, kw, t0, kn, st);
    __syncwarp();  // the tile's keys read before the next tile overwrites them
  }
  __syncthreads();  // every warp is done with its keys: ks becomes the merge's scratch
  const int64_t part_stride = static_cast<int64_t>(p.max_splits) * (hd + 2);
  float* partial = p.split_keys > 0
                       ? p.partial + (static_cast<int64_t>(seq) * p.num_heads + h0) * part_stride +
                             static_cast<int64_t>(split) * (hd + 2)
                       : nullptr;
  MergeWarps(st, hd, nh, ks, out + seq * p.out_stride + h0 * hd, partial, part_stride);
}

// A split step's second kernel: one block per (sequence, head), one thread per dimension, merging
// the chunks that hold keys (as MergeWarps merges warps) into the output.
template <typename D>
__global__ void __launch_bounds__(kDecodeThreads) PagedDecodeMergeKernel(D* out, DecodeParams p) {
  const int seq = blockIdx.x, h = blockIdx.y, hd = p.head_dim, d = threadIdx.x;
  if (d >= hd) return;
  const int ctx = max(0, min(p.context_lens[seq], static_cast<int>(p.table_stride * p.block_size)));
  const int used = max(1, min(p.max_splits, (ctx + p.split_keys - 1) / p.split_keys));
  const float* ps = p.partial + (static_cast<int64_t>(seq) * p.num_heads + h) * p.max_splits * (hd + 2);
  float m = -INFINITY;
  for (int c = 0; c < used; ++c) m = fmaxf(m, ps[c * (hd + 2) + hd]);
  float l = 0.0f, a = 0.0f;
  if (m != -INFINITY) {  // else no key at all: zeros
    for (int c = 0; c < used; ++c) {
      const float* pc = ps + c * (hd + 2);
      const float f = expf(pc[hd] - m);  // 0 for a chunk that saw no key
      l += pc[hd + 1] * f;
      a += pc[d] * f;
    }
  }
  Store(out + seq * p.out_stride + static_cast<int64_t>(h) * hd + d, l > 0.0f ? a / l : 0.0f);
}

Status CheckDecode(const char* op, const PagedDecodeShape& s) {
  MINERU_RETURN_IF_ERROR(CheckSizes(
      op, {s.num_seqs, s.q_stride, s.out_stride, s.block_table_stride, s.block_stride, s.row_stride}));
  MINERU_RETURN_IF_ERROR(
      CheckAttentionHeads(op, s.num_heads, s.num_kv_heads, s.head_dim, kMaxAttentionHeadDim));
  const int64_t qd = s.num_heads * s.head_dim, kd = s.num_kv_heads * s.head_dim;
  if (s.q_stride < qd || s.out_stride < qd || s.row_stride < kd) {
    return InvalidArgumentError(std::string(op) + ": row strides below the heads' width");
  }
  if (s.block_size < 1 || s.block_table_stride * s.block_size > (int64_t{1} << 30)) {
    return InvalidArgumentError(std::string(op) + ": block size " + std::to_string(s.block_size) +
                                " (need >= 1, and at most 2^30 tokens a sequence)");
  }
  const int64_t chunks = (s.num_heads / s.num_kv_heads + kDecodeHeads - 1) / kDecodeHeads;
  if (s.num_kv_heads * chunks > kMaxGridY || s.num_heads > kMaxGridY || s.num_seqs > (int64_t{1} << 31) - 1) {
    return InvalidArgumentError(std::string(op) + ": too many heads or sequences for one launch");
  }
  if (s.split_keys < 0 || s.split_keys % kPagedDecodeSplitUnit != 0 || s.split_keys > (int64_t{1} << 30)) {
    return InvalidArgumentError(std::string(op) + ": split_keys " + std::to_string(s.split_keys) +
                                " (need 0 or a multiple of " + std::to_string(kPagedDecodeSplitUnit) +
                                " up to 2^30)");
  }
  if (s.split_keys > 0 && PagedDecodeSplits(s) > kMaxGridY) {
    return InvalidArgumentError(std::string(op) + ": more than 65,535 chunks of split_keys a context");
  }
  return Status::Ok();
}

template <typename T>
Status LaunchDecode(const T* q, const T* k_cache, const T* v_cache, const PagedDecodeShape& s, T* out,
                    StreamHandle stream) {
  constexpr const char* kOp = "PagedDecodeAttention";
  MINERU_RETURN_IF_ERROR(CheckDecode(kOp, s));
  if (s.num_seqs == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers(kOp, {q, k_cache, v_cache, out, s.context_lens, s.block_tables}));
  if (s.split_keys > 0 && s.workspace == nullptr) {
    return InvalidArgumentError(std::string(kOp) +
                                ": a split needs a workspace (PagedDecodeWorkspaceFloats)");
  }
  const int64_t hd = s.head_dim;
  const size_t smem =
      sizeof(float) * static_cast<size_t>(kDecodeHeads * hd + kDecodeWarps * kWarpSize * (hd + 1));
  using D = typename DeviceType<T>::type;
  MINERU_RETURN_IF_ERROR(AllowSharedMemory(PagedDecodeKernel<D>, smem, kOp));
  DecodeParams p;
  p.group = static_cast<int>(s.num_heads / s.num_kv_heads);
  p.head_dim = static_cast<int>(hd);
  p.chunks = (p.group + kDecodeHeads - 1) / kDecodeHeads;
  p.q_stride = s.q_stride;
  p.out_stride = s.out_stride;
  p.context_lens = s.context_lens;
  p.block_tables = s.block_tables;
  p.table_stride = s.block_table_stride;
  p.block_size = static_cast<int>(s.block_size);
  p.block_stride = s.block_stride;
  p.row_stride = s.row_stride;
  p.scale = s.scale;
  p.num_heads = static_cast<int>(s.num_heads);
  p.split_keys = static_cast<int>(s.split_keys);
  p.max_splits = s.split_keys > 0 ? static_cast<int>(PagedDecodeSplits(s)) : 1;
  p.partial = s.workspace;
  const dim3 grid(static_cast<unsigned>(s.num_seqs), static_cast<unsigned>(s.num_kv_heads * p.chunks),
                  static_cast<unsigned>(p.max_splits));
  PagedDecodeKernel<D><<<grid, kDecodeThreads, smem, stream>>>(ToDevice(q), ToDevice(k_cache),
                                                               ToDevice(v_cache), ToDevice(out), p);
  if (s.split_keys == 0) return LaunchStatus(kOp);
  MINERU_RETURN_IF_ERROR(LaunchStatus(kOp));
  const dim3 merge(static_cast<unsigned>(s.num_seqs), static_cast<unsigned>(s.num_heads));
  PagedDecodeMergeKernel<D><<<merge, kDecodeThreads, 0, stream>>>(ToDevice(out), p);
  return LaunchStatus(kOp);
}

}  // namespace

int64_t PagedDecodeSplits(const PagedDecodeShape& s) {
  if (s.split_keys <= 0) return 1;
  const int64_t keys = std::max<int64_t>(1, s.block_table_stride * s.block_size);
  return (keys + s.split_keys - 1) / s.split_keys;
}

int64_t PagedDecodeWorkspaceFloats(const PagedDecodeShape& s) {
  if (s.split_keys <= 0) return 0;
  return s.num_seqs * s.num_heads * PagedDecodeSplits(s) * (s.head_dim + 2);
}

Status PagedDecodeAttention(const float* q, const float* k_cache, const float* v_cache,
                            const PagedDecodeShape& s, float* out, StreamHandle stream) {
  return LaunchDecode(q, k_cache, v_cache, s, out, stream);
}
Status PagedDecodeAttention(const Bf16* q, const Bf16* k_cache, const Bf16* v_cache,
                            const PagedDecodeShape& s, Bf16* out, StreamHandle stream) {
  return LaunchDecode(q, k_cache, v_cache, s, out, stream);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
