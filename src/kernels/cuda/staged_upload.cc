// kernels/cuda/staged_upload.cc — StagedUpload (host code only).

#include "kernels/cuda/staged_upload.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/cuda/cuda_internal.h"

namespace mineru {
namespace kernels {
namespace cuda {

StagedUpload::~StagedUpload() {
  if (stream_.handle() != nullptr) (void)stream_.Synchronize();
}

StagedUpload& StagedUpload::operator=(StagedUpload&& other) noexcept {
  if (this != &other) {
    if (stream_.handle() != nullptr) (void)stream_.Synchronize();  // before this one's chunks go
    stream_ = std::move(other.stream_);
    chunk_bytes_ = std::exchange(other.chunk_bytes_, 0);
    chunks_ = std::move(other.chunks_);
    chunk_free_ = std::move(other.chunk_free_);
    mark_ = std::move(other.mark_);
    next_ = std::exchange(other.next_, 0);
    pool_ = std::exchange(other.pool_, nullptr);
  }
  return *this;
}

StatusOr<StagedUpload> StagedUpload::Create(size_t chunk_bytes, int chunks, ThreadPool* host_pool) {
  if (chunk_bytes == 0 || chunks < 1) return InvalidArgumentError("StagedUpload: chunks must be non-empty");
  StagedUpload u;
  MINERU_ASSIGN_OR_RETURN(u.stream_, CudaStream::Create(/*non_blocking=*/true));
  MINERU_ASSIGN_OR_RETURN(u.mark_, CudaEvent::Create());
  u.chunk_bytes_ = chunk_bytes;
  u.pool_ = host_pool;
  for (int k = 0; k < chunks; ++k) {
    MINERU_ASSIGN_OR_RETURN(PinnedBuffer b, PinnedBuffer::Allocate(chunk_bytes));
    MINERU_ASSIGN_OR_RETURN(CudaEvent e, CudaEvent::Create());
    u.chunks_.push_back(std::move(b));
    u.chunk_free_.push_back(std::move(e));
  }
  return u;
}

Status StagedUpload::Copy(void* dst, const void* src, size_t n) {
  if (n == 0) return Status::Ok();
  if (chunks_.empty()) return InvalidArgumentError("StagedUpload: not created");
  MINERU_RETURN_IF_ERROR(CheckPointers("StagedUpload::Copy", {dst, src}));
  for (size_t off = 0; off < n;) {
    const size_t len = std::min(chunk_bytes_, n - off);
    const size_t k = next_;
    next_ = (next_ + 1) % chunks_.size();
    // The chunk's previous DMA must be done before the host overwrites it (an event never
    // recorded counts as reached).
    MINERU_RETURN_IF_ERROR(chunk_free_[k].Synchronize());
    ParallelCopy(chunks_[k].data(), static_cast<const char*>(src) + off, len, pool_);
    MINERU_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(static_cast<char*>(dst) + off, chunks_[k].data(), len,
                                                      cudaMemcpyHostToDevice, stream_.handle()),
                                      "cudaMemcpyAsync of a staged chunk"));
    MINERU_RETURN_IF_ERROR(chunk_free_[k].Record(stream_.handle()));
    off += len;
  }
  return Status::Ok();
}

Status StagedUpload::OrderBefore(StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(mark_.Record(stream_.handle()));
  return mark_.MakeWait(stream);
}

Status StagedUpload::WaitFor(StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(mark_.Record(stream));
  return mark_.MakeWait(stream_.handle());
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
