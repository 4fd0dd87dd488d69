// model/cuda/logits_reader.h — what sampling needs of a step's logits, read from GPU memory
// (ModelBackend::ReadLogits): candidate rows picked on the device by kernels/cuda/logits_topk.h
// and copied back as a few kilobytes, whole rows copied as they are. All staging (pinned host
// memory, device scratch) is owned here and grown to the largest step. One thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "kernels/cuda/buffer.h"
#include "model/backend.h"
#include "model/cuda/device_weights.h"

namespace mineru {

class CudaLogitsReader {
 public:
  // Answers requests[i] from row i of logits [>= requests.size() rows, vocab] fp32 on the device
  // (modified: the touched entries of candidate rows are overwritten), queued on `stream` and
  // waited for. Whole rows in *out point into this reader's pinned memory, valid until the next
  // Read. The requests must have passed CheckLogitsRequests.
  Status Read(const kernels::cuda::DeviceBuffer& logits, int32_t vocab,
              const std::vector<LogitsRequest>& requests, const kernels::cuda::CudaStream& stream,
              std::vector<RowLogits>* out);

 private:
  // Queues the candidate pick of the requests with top_k > 0 and the copy of its results into
  // out_; `in` is the packed int32 request (offsets, k, touched ids); sizes as Read computes them.
  Status QueueCandidates(float* logits, int32_t vocab, const std::vector<int32_t>& in, int64_t rows,
                         int64_t touched, int max_k, kernels::cuda::StreamHandle stream);

  kernels::cuda::PinnedBuffer in_, out_, rows_;  // host staging: request, candidates, whole rows
  GrowingBuffer dev_in_, dev_out_;
};

}  // namespace mineru
