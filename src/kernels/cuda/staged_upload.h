// kernels/cuda/staged_upload.h — host-to-device copies from any host memory that overlap with the
// device's work on other streams.
//
// A copy from pageable memory (a std::vector) cannot overlap anything: the driver stages it
// through its own pinned memory and may first wait for the stream's queued work (the runtime API's
// "API synchronization behavior"). StagedUpload copies through a ring of pinned chunks on its own
// stream instead: the host fills the next chunk while the DMA of the last one runs, and neither
// waits for kernels queued on other streams. A consumer orders its work after the copies with
// OrderBefore(its stream); copies into memory another stream may still read must first
// WaitFor(that stream).
//
// Ownership: the uploader owns its stream, pinned chunks and events; destroying it waits for its
// copies (the pinned chunks' release does). One thread at a time.
#pragma once

#include <cstddef>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/cuda/buffer.h"

namespace mineru {
namespace kernels {
namespace cuda {

class StagedUpload {
 public:
  StagedUpload() = default;
  // Waits for the copies still reading the pinned chunks.
  ~StagedUpload();
  StagedUpload(StagedUpload&& other) noexcept = default;
  StagedUpload& operator=(StagedUpload&& other) noexcept;
  StagedUpload(const StagedUpload&) = delete;
  StagedUpload& operator=(const StagedUpload&) = delete;

  // `chunks` pinned chunks of `chunk_bytes` each (both >= 1; at least 2 for the host's copy to
  // overlap the DMA), on a non-blocking stream (never serialised with the legacy default
  // stream). host_pool (borrowed, may be null; it must outlive the uploader's copies): the host's
  // copies into the chunks are split over its workers (ParallelCopy). OutOfMemory when the host
  // cannot pin the chunks, Unavailable without a device.
  static StatusOr<StagedUpload> Create(size_t chunk_bytes = size_t{8} << 20, int chunks = 4,
                                       ThreadPool* host_pool = nullptr);

  // Queues a copy of n bytes from src (any host memory, free for reuse once this returns) to dst
  // (device memory of at least n bytes) on the uploader's stream, after the copies queued before.
  // Returns once every byte is in pinned memory; the host waits only for chunks to come free.
  Status Copy(void* dst, const void* src, size_t n);
  // `stream` waits (on the device, not the host) for every copy queued so far.
  Status OrderBefore(StreamHandle stream);
  // The copies queued from now on wait (on the device) for the work queued on `stream` so far.
  Status WaitFor(StreamHandle stream);
  // The host waits for every copy queued so far.
  Status Synchronize() const { return stream_.Synchronize(); }
  StreamHandle stream() const { return stream_.handle(); }
  size_t chunk_bytes() const { return chunk_bytes_; }

 private:
  CudaStream stream_;
  size_t chunk_bytes_ = 0;
  std::vector<PinnedBuffer> chunks_;
  std::vector<CudaEvent> chunk_free_;  // [k]: recorded after chunk k's last DMA
  CudaEvent mark_;                     // OrderBefore's and WaitFor's point
  size_t next_ = 0;                    // the chunk the next copy fills first
  ThreadPool* pool_ = nullptr;
};

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
