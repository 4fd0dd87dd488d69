// kernels/cuda/graph.h — a CUDA graph: the work one stream queues, recorded once and replayed with
// one launch, so a step of a few hundred kernels costs the host one call. Plain C++ (no CUDA header).
//
// Recording: BeginCapture(stream), queue the work as usual (nothing runs), EndCapture(stream).
// While recording, this thread must not make calls the runtime forbids during a capture
// (synchronizing, allocating, copying from pageable memory): those fail the recording, which
// EndCapture then reports; the stream is back to normal either way. A replay runs the recorded
// kernels with the recorded arguments: every pointer they name must still be valid and hold what
// the replay means them to (the caller's contract).
#pragma once

#include "base/status.h"
#include "kernels/cuda/buffer.h"

namespace mineru {
namespace kernels {
namespace cuda {

class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph();
  CudaGraph(CudaGraph&& other) noexcept;
  CudaGraph& operator=(CudaGraph&& other) noexcept;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Starts recording `stream` (thread-local capture mode). The stream must not be the legacy
  // default stream (nullptr).
  static Status BeginCapture(StreamHandle stream);
  // Ends the recording of `stream` and instantiates it. `queued` is the status of the queuing in
  // between: an error there discards the recording and is returned (the capture still ends).
  static StatusOr<CudaGraph> EndCapture(StreamHandle stream, const Status& queued);

  // Queues one replay on `stream`.
  Status Launch(StreamHandle stream) const;
  bool empty() const { return exec_ == nullptr; }

 private:
  void Release();
  void* exec_ = nullptr;  // cudaGraphExec_t
};

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
