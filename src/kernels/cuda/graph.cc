#include "kernels/cuda/graph.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "kernels/cuda/cuda_internal.h"

namespace mineru {
namespace kernels {
namespace cuda {

CudaGraph::~CudaGraph() { Release(); }

CudaGraph::CudaGraph(CudaGraph&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    Release();
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

void CudaGraph::Release() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  exec_ = nullptr;
}

Status CudaGraph::BeginCapture(StreamHandle stream) {
  if (stream == nullptr)
    return InvalidArgumentError("CudaGraph: the legacy default stream cannot be captured");
  Status st =
      CudaStatus(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  if (!st.ok()) (void)cudaGetLastError();  // reported here, not left for the next launch to find
  return st;
}

StatusOr<CudaGraph> CudaGraph::EndCapture(StreamHandle stream, const Status& queued) {
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  Status st = queued.ok() ? CudaStatus(ended, "cudaStreamEndCapture") : queued;
  CudaGraph g;
  if (st.ok()) {
    cudaGraphExec_t exec = nullptr;
    st = CudaStatus(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    if (st.ok()) g.exec_ = exec;
  }
  if (graph != nullptr) (void)cudaGraphDestroy(graph);  // the executable graph is independent of it
  // A refused launch while recording, an invalidated recording or a failed instantiation leaves its
  // (not sticky) error behind: it is reported here, not left for the next launch to find.
  if (!st.ok()) (void)cudaGetLastError();
  MINERU_RETURN_IF_ERROR(st);
  return g;
}

Status CudaGraph::Launch(StreamHandle stream) const {
  if (exec_ == nullptr) return InvalidArgumentError("CudaGraph: nothing recorded");
  return CudaStatus(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), stream), "cudaGraphLaunch");
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
