// kernels/cuda/buffer.h — owned device memory and an owned stream (RAII), in plain C++.
//
// No CUDA header: a stream travels as StreamHandle, CUDA's own stream pointer type (cudaStream_t is
// CUstream_st*), declared here. Both types are move-only; each owns exactly one CUDA object and
// releases it in its destructor. Failures are Status values, never aborts.
#pragma once

#include <cstddef>

#include "base/status.h"

struct CUstream_st;  // CUDA's opaque stream (driver_types.h: typedef struct CUstream_st* cudaStream_t)
struct CUevent_st;   // CUDA's opaque event (driver_types.h: typedef struct CUevent_st* cudaEvent_t)

namespace mineru {
namespace kernels {
namespace cuda {

// A CUDA stream, not owned: nullptr is the legacy default stream (which synchronises with every
// blocking stream, such as those CudaStream creates).
using StreamHandle = CUstream_st*;

// One cudaMalloc allocation of size() bytes, made on the calling thread's current device.
// Ownership: the buffer owns the allocation until it is destroyed or moved from; the destructor
// calls cudaFree, which waits for work still using it. Pointers from data() are borrowed: they die
// with the buffer. An empty buffer (default-constructed, moved-from or of 0 bytes) holds nullptr.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // bytes == 0 gives an empty buffer without asking the device. OutOfMemory when the device cannot
  // give that much, Unavailable without a usable device.
  static StatusOr<DeviceBuffer> Allocate(size_t bytes);

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size() const { return size_; }

  // Copies n bytes between host memory and bytes [offset, offset + n) of the buffer, synchronously
  // (cudaMemcpy: it first waits for the work queued on the legacy default stream and so on every
  // blocking stream). InvalidArgument when the range is outside the buffer.
  Status CopyFromHost(const void* src, size_t n, size_t offset = 0);
  Status CopyToHost(void* dst, size_t n, size_t offset = 0) const;
  // The same, queued on `stream` and returning at once: the host memory must stay valid until the
  // stream reaches the copy (and be pinned for the copy to overlap with other work).
  Status CopyFromHostAsync(const void* src, size_t n, size_t offset, StreamHandle stream);
  Status CopyToHostAsync(void* dst, size_t n, size_t offset, StreamHandle stream) const;
  // Sets every byte to 0, queued on `stream`.
  Status Zero(StreamHandle stream = nullptr);

 private:
  Status CheckRange(size_t n, size_t offset, const char* what) const;
  void Release();

  void* data_ = nullptr;
  size_t size_ = 0;
};

// Page-locked ("pinned") host memory from cudaMallocHost: copies between it and the device run at
// the bus's full speed and truly asynchronously (pageable memory goes through a staging copy).
// Ownership as DeviceBuffer's: move-only, freed (cudaFreeHost) by the destructor, which waits for
// the copies still using it. Empty: nullptr.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // bytes == 0 gives an empty buffer. OutOfMemory when the host cannot pin that much, Unavailable
  // without a usable device.
  static StatusOr<PinnedBuffer> Allocate(size_t bytes);

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size() const { return size_; }

 private:
  void Release();

  void* data_ = nullptr;
  size_t size_ = 0;
};

// One CUDA stream (by default a blocking stream, ordered with the legacy default stream).
// Ownership: owned until destroyed or moved from; the destructor calls cudaStreamDestroy, which
// returns at once while work already queued still runs to completion. A default-constructed stream
// is empty and its handle() is nullptr, the legacy default stream.
class CudaStream {
 public:
  CudaStream() = default;
  ~CudaStream();
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  // A new stream on the calling thread's current device; Unavailable without a usable device.
  // non_blocking: cudaStreamNonBlocking (not ordered with the legacy default stream).
  static StatusOr<CudaStream> Create(bool non_blocking = false);

  StreamHandle handle() const { return stream_; }
  // Waits for everything queued on the stream; an error here may come from any kernel queued
  // before (a fault inside a kernel is reported at the next synchronisation).
  Status Synchronize() const;

 private:
  void Release();

  StreamHandle stream_ = nullptr;
};

using EventHandle = CUevent_st*;

// One CUDA event without timing (cudaEventDisableTiming): a point in a stream that other streams
// and the host can wait for. Ownership as CudaStream's: move-only, destroyed (cudaEventDestroy) by
// the destructor. An event never recorded counts as reached.
class CudaEvent {
 public:
  CudaEvent() = default;
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  // Unavailable without a usable device.
  static StatusOr<CudaEvent> Create();

  // Marks the point after everything queued on `stream` so far (re-recording moves the mark).
  Status Record(StreamHandle stream);
  // Makes `stream` wait, on the device, for the last recorded point (the host does not wait).
  Status MakeWait(StreamHandle stream) const;
  // The host waits for the last recorded point.
  Status Synchronize() const;

 private:
  void Release();

  EventHandle event_ = nullptr;
};

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
