// kernels/cuda/attention.h — CUDA attention over packed sequences (the ViT's images in one pass,
// the decoder's prefill of several prompts) and paged decode attention over the KV cache's block
// tables, callable from ordinary C++ (this header includes no CUDA header).
//
// Contracts shared by both ops (and those of cuda_ops.h: device pointers, queued on `stream`,
// InvalidArgument before anything is queued, a zero-sized call queues nothing and returns Ok):
//   - q, k, v and out are all fp32 (float) or all bf16 (Bf16); scores, softmax and sums are fp32
//     (online softmax with max subtraction, as the CPU kernel's tiled form); a bf16 output is
//     rounded once, to nearest even;
//   - head h of a query row uses KV head h / (num_heads / num_kv_heads) (grouped-query attention;
//     num_heads % num_kv_heads == 0); head h of a row is the head_dim elements at h * head_dim;
//   - head_dim in [1, kMaxAttentionHeadDim] (64 for the decoder, 80 for the ViT);
//   - a query that sees no key (an empty sequence of keys) gets zeros, as ref::Attention writes.
// Twin: ref::Attention (kernels/reference.cc) run per sequence; tests/kernels/cuda_attention_test.cc.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/cuda_ops.h"

namespace mineru {
namespace kernels {
namespace cuda {

constexpr int64_t kMaxAttentionHeadDim = 128;

// Packed variable-length sequences (flash-attention's "varlen" form). Sequence s owns query rows
// [cu_seqlens_q[s], cu_seqlens_q[s + 1]) of q and out, and key/value rows [cu_seqlens_k[s],
// cu_seqlens_k[s + 1]) of k and v; rows are packed back to back, sequence after sequence.
//   q, out: [total_q, *], row r head h at q + r * q_stride + h * head_dim (out likewise);
//   k, v:   [total_k, *], row r KV head g at k + r * k_stride + g * head_dim (v: v_stride).
// cu_seqlens_q and cu_seqlens_k are DEVICE arrays of num_seqs + 1 int32 offsets, starting at 0 and
// non-decreasing (not checked: the host cannot read them without a synchronisation); max_seqlen_q is
// the host's bound on the longest query run (it sizes the grid: rows past it are not computed).
// Non-causal: every query of a sequence sees all its keys (the ViT: full attention within an image,
// cu_seqlens_k == cu_seqlens_q). Causal (prefill): with n_q queries and n_kv keys in a sequence,
// query i sees keys [0, n_kv - n_q + i] (the last n_q keys are the queries' own, the ones before
// them an earlier context), exactly ref::Attention's rule.
// In place: out may be q (out_stride == q_stride); k and v must not overlap out.
//
// Which kernel computes it. fp32 always takes the SIMT kernel. bf16 with kAuto takes the
// register-accumulator tensor-core kernel (mma.sync, flash-attention 2's scheme) where it fits
// (head_dim a multiple of 16 up to 128, its shared memory within the device's), else SIMT. The
// others force one form and give InvalidArgument where it does not fit or the type has none: the
// tests hold each form to the twin, and `bench --workload attention` compares their speeds. The
// tensor-core forms round the probabilities to bf16 before P V (as flash-attention does).
// kTensorCoreMmaWide is the mma form with 32 query rows a warp instead of 16 (each K and V fragment
// read from shared memory feeds two products; heads up to 96): which is faster is for the GPU to say.
enum class VarlenKernel { kAuto, kSimt, kTensorCoreWmma, kTensorCoreMma, kTensorCoreMmaWide };
const char* VarlenKernelName(VarlenKernel k);

struct VarlenAttentionShape {
  int64_t num_seqs = 0;
  const int32_t* cu_seqlens_q = nullptr;  // device, [num_seqs + 1]
  const int32_t* cu_seqlens_k = nullptr;  // device, [num_seqs + 1]
  int64_t max_seqlen_q = 0;               // host: >= every cu_seqlens_q[s + 1] - cu_seqlens_q[s]
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0, out_stride = 0;  // elements
  bool causal = false;
  float scale = 1.0f;  // scores are (q . k) * scale, usually 1 / sqrt(head_dim)
  VarlenKernel kernel = VarlenKernel::kAuto;
};
Status VarlenAttention(const float* q, const float* k, const float* v, const VarlenAttentionShape& s,
                       float* out, StreamHandle stream = nullptr);
Status VarlenAttention(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s, Bf16* out,
                       StreamHandle stream = nullptr);

// One decode step: one query row per sequence against that sequence's keys and values in a paged
// KV cache (the engine's BlockPool layout, engine/block_pool.h, with the engine's block_size).
//   q, out: [num_seqs, *], sequence s head h at q + s * q_stride + h * head_dim (out likewise);
//   the cache: token t of sequence s lives in block b = block_tables[s * block_table_stride +
//     t / block_size], row t % block_size; KV head g of that row is at
//       k_cache + b * block_stride + (t % block_size) * row_stride + g * head_dim (v_cache likewise).
//     A pool laid out as BlockPool (per block, per layer: K [block_size, kv_dim] then V) gives, for
//     layer l, k_cache = base + l * 2 * block_size * kv_dim, v_cache = k_cache + block_size * kv_dim,
//     block_stride = num_layers * 2 * block_size * kv_dim and row_stride = kv_dim.
// context_lens and block_tables are DEVICE arrays (int32): sequence s attends to its keys
// [0, context_lens[s]) (the new token's own key written there before the call), reading only the
// first ceil(context_lens[s] / block_size) entries of its block-table row, which must be valid
// block ids (not checked on the device). A context of 0 gives zeros.
struct PagedDecodeShape {
  int64_t num_seqs = 0;
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, out_stride = 0;   // elements
  const int32_t* context_lens = nullptr;  // device, [num_seqs]
  const int32_t* block_tables = nullptr;  // device, [num_seqs, block_table_stride]
  int64_t block_table_stride = 0;         // entries per sequence's row
  int64_t block_size = 0;                 // tokens per block (> 0)
  int64_t block_stride = 0;               // elements from one block id to the next
  int64_t row_stride = 0;                 // elements between a block's rows (>= num_kv_heads * head_dim)
  float scale = 1.0f;
  // > 0 (a multiple of kPagedDecodeSplitUnit): each context is cut into chunks of split_keys keys,
  // computed by separate thread blocks and merged by a second kernel (flash-decoding), for steps of
  // few sequences over long contexts. The grid has PagedDecodeSplits() chunks a sequence (fixed by
  // block_table_stride, so a recorded graph stays valid as contexts grow); workspace (device) holds
  // PagedDecodeWorkspaceFloats() floats, overwritten. Same result as unsplit to fp32 rounding.
  int64_t split_keys = 0;
  float* workspace = nullptr;
};
constexpr int64_t kPagedDecodeSplitUnit = 128;
// Chunks a sequence with split_keys (1 without a split), and the workspace that needs.
int64_t PagedDecodeSplits(const PagedDecodeShape& s);
int64_t PagedDecodeWorkspaceFloats(const PagedDecodeShape& s);
Status PagedDecodeAttention(const float* q, const float* k_cache, const float* v_cache,
                            const PagedDecodeShape& s, float* out, StreamHandle stream = nullptr);
Status PagedDecodeAttention(const Bf16* q, const Bf16* k_cache, const Bf16* v_cache,
                            const PagedDecodeShape& s, Bf16* out, StreamHandle stream = nullptr);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
