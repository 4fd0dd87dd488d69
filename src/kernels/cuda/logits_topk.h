// kernels/cuda/logits_topk.h — the sampler's candidate logits picked on the GPU, so a step copies
// kilobytes to the host rather than whole vocabulary rows (engine/sampler.h, CandidateQuery: the
// touched tokens' logits and the top k of the others). Callable from ordinary C++ (no CUDA header).
// The twin: kernels/logit_candidates.h's TopLogitsExcluding (tests/kernels/cuda_logits_topk_test.cc).
// Contracts of cuda_ops.h: device pointers, queued on `stream`, InvalidArgument before anything is
// queued, a zero-sized call queues nothing. The device arrays are not checked on the device.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/cuda_ops.h"

namespace mineru {
namespace kernels {
namespace cuda {

struct LogitsTopKShape {
  int64_t rows = 0;   // rows of logits
  int32_t vocab = 0;  // logits per row (> 0 where rows > 0)
  int max_k = 0;      // the stride of the top outputs: no k[r] above it
};

// For each row r of logits [rows, vocab] (fp32, modified):
//  1. touched_out[j] = logits[r, touched[j]] for j in [offsets[r], offsets[r + 1]); those entries
//     then hold NaN, so they are never among the top;
//  2. count[r] = min(k[r], the row's tokens whose logits are not NaN), and for i < count[r]
//     top_ids[r * max_k + i] / top_logits[r * max_k + i] = those count[r] largest logits (the lower
//     id first on ties, -0 tying +0), in no particular order.
// Device arrays: offsets [rows + 1] (ascending from 0), touched [offsets[rows]] (per row distinct,
// in [0, vocab)), k [rows] (each in [0, max_k]); touched_out [offsets[rows]], top_ids and
// top_logits [rows * max_k], count [rows]. A row with k[r] = 0 is only step 1.
Status LogitsTopK(float* logits, const LogitsTopKShape& shape, const int32_t* offsets, const int32_t* touched,
                  const int32_t* k, float* touched_out, int32_t* top_ids, float* top_logits, int32_t* count,
                  StreamHandle stream = nullptr);

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
