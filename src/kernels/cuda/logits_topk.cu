// kernels/cuda/logits_topk.cu — LogitsTopK (logits_topk.h). Two kernels, one block per row:
//  GatherMaskKernel: the touched logits out, NaN in their place;
//  TopKKernel: a radix select over order-preserving 32-bit keys of the logits (four passes of
//  8-bit digits, histograms in shared memory) finds the k-th largest key; a last pass in id order
//  takes every key above it and, of the keys equal to it, the lowest ids (a block-wide prefix
//  count by warp ballots), so ties resolve as the CPU twin resolves them.

#include <string>

#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/logits_topk.h"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

constexpr int kMaskThreads = 128;
constexpr int kTopKThreads = 512;
constexpr int kWarps = kTopKThreads / 32;

// A key whose unsigned order is the floats' order; NaN is 0 (below every float), -0 is +0's key.
__device__ __forceinline__ uint32_t OrderKey(float f) {
  if (isnan(f)) return 0u;
  uint32_t b = __float_as_uint(f);
  if (b == 0x80000000u) b = 0u;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__global__ void __launch_bounds__(kMaskThreads)
    GatherMaskKernel(float* logits, int32_t vocab, const int32_t* offsets, const int32_t* touched,
                     float* out) {
  float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  const int32_t end = offsets[blockIdx.x + 1];
  // Ids are distinct within a row: each thread reads and writes its own entries.
  for (int32_t j = offsets[blockIdx.x] + threadIdx.x; j < end; j += kMaskThreads) {
    const int32_t t = touched[j];
    out[j] = row[t];
    row[t] = __uint_as_float(0x7fc00000u);
  }
}

// The radix select's four passes: on return *threshold is the k-th largest key of the row and
// *ties how many keys equal to it belong to the top k (>= 1). k >= 1 and k <= valid keys.
__device__ void SelectThreshold(const float* row, int32_t vocab, uint32_t k, uint32_t* hist,
                                uint32_t* shared2, uint32_t* threshold, uint32_t* ties) {
  uint32_t prefix = 0, mask = 0, remaining = k;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kTopKThreads) hist[i] = 0;
    __syncthreads();
    for (int32_t i = threadIdx.x; i < vocab; i += kTopKThreads) {
      const uint32_t key = OrderKey(row[i]);
      if (key != 0u && (key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      // The digit where the count from the top reaches `remaining` (its keys hold the k-th).
      uint32_t above = 0;
      int d = 255;
      for (; d > 0 && above + hist[d] < remaining; --d) above += hist[d];
      shared2[0] = prefix | (static_cast<uint32_t>(d) << shift);
      shared2[1] = remaining - above;
    }
    __syncthreads();
    prefix = shared2[0];
    remaining = shared2[1];
    mask |= 255u << shift;
    __syncthreads();  // every thread has read shared2 before it is written again
  }
  *threshold = prefix;
  *ties = remaining;
}

__global__ void __launch_bounds__(kTopKThreads)
    TopKKernel(const float* logits, int32_t vocab, const int32_t* k_in, int max_k, int32_t* top_ids,
               float* top_logits, int32_t* count) {
  __shared__ uint32_t hist[256];
  __shared__ uint32_t shared2[2];
  __shared__ uint32_t valid, taken_above, taken_equal;
  __shared__ uint32_t warp_equal[kWarps];
  const int64_t r = blockIdx.x;
  const float* row = logits + r * vocab;
  if (threadIdx.x == 0) valid = taken_above = taken_equal = 0;
  __syncthreads();
  uint32_t mine = 0;
  for (int32_t i = threadIdx.x; i < vocab; i += kTopKThreads) mine += OrderKey(row[i]) != 0u;
  atomicAdd(&valid, mine);
  __syncthreads();
  const uint32_t k = min(static_cast<uint32_t>(max(k_in[r], 0)), valid);
  if (k == 0) {  // uniform across the block
    if (threadIdx.x == 0) count[r] = 0;
    return;
  }
  uint32_t threshold, ties;
  SelectThreshold(row, vocab, k, hist, shared2, &threshold, &ties);
  const uint32_t above = k - ties;
  int32_t* ids = top_ids + r * max_k;
  float* vals = top_logits + r * max_k;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int32_t base = 0; base < vocab; base += kTopKThreads) {  // uniform trip count: ballots are safe
    const int32_t i = base + static_cast<int32_t>(threadIdx.x);
    const uint32_t key = i < vocab ? OrderKey(row[i]) : 0u;
    if (key > threshold) {  // exactly `above` of them in the row: their order is free
      const uint32_t at = atomicAdd(&taken_above, 1u);
      ids[at] = i;
      vals[at] = row[i];
    }
    const bool equal = i < vocab && key == threshold;
    const unsigned ballot = __ballot_sync(0xffffffffu, equal);
    if (lane == 0) warp_equal[warp] = __popc(ballot);
    __syncthreads();
    uint32_t before = taken_equal + __popc(ballot & ((1u << lane) - 1u)), chunk = 0;
    for (int w = 0; w < kWarps; ++w) {
      before += w < warp ? warp_equal[w] : 0u;
      chunk += warp_equal[w];
    }
    if (equal && before < ties) {
      ids[above + before] = i;
      vals[above + before] = row[i];
    }
    __syncthreads();  // every thread has read taken_equal and warp_equal
    if (threadIdx.x == 0) taken_equal += chunk;
    __syncthreads();
  }
  if (threadIdx.x == 0) count[r] = static_cast<int32_t>(k);
}

}  // namespace

Status LogitsTopK(float* logits, const LogitsTopKShape& s, const int32_t* offsets, const int32_t* touched,
                  const int32_t* k, float* touched_out, int32_t* top_ids, float* top_logits, int32_t* count,
                  StreamHandle stream) {
  const char* op = "LogitsTopK";
  MINERU_RETURN_IF_ERROR(CheckSizes(op, {s.rows, s.vocab, s.max_k}));
  if (s.rows == 0) return Status::Ok();
  if (s.vocab == 0) return InvalidArgumentError("LogitsTopK: rows of no logits");
  if (s.rows > INT32_MAX) return InvalidArgumentError("LogitsTopK: too many rows");
  MINERU_RETURN_IF_ERROR(
      CheckPointers(op, {logits, offsets, touched, k, touched_out, top_ids, top_logits, count}));
  const unsigned grid = static_cast<unsigned>(s.rows);
  GatherMaskKernel<<<grid, kMaskThreads, 0, stream>>>(logits, s.vocab, offsets, touched, touched_out);
  MINERU_RETURN_IF_ERROR(LaunchStatus(op));
  TopKKernel<<<grid, kTopKThreads, 0, stream>>>(logits, s.vocab, k, s.max_k, top_ids, top_logits, count);
  return LaunchStatus(op);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
