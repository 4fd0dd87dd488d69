// kernels/cuda/buffer.cc — DeviceBuffer and CudaStream (host code only).

#include "kernels/cuda/buffer.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "kernels/cuda/cuda_internal.h"

namespace mineru {
namespace kernels {
namespace cuda {

DeviceBuffer::~DeviceBuffer() { Release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void DeviceBuffer::Release() {
  // cudaFree's error (a device lost meanwhile) has no one to go to in a destructor; the next
  // call on the device reports it.
  if (data_ != nullptr) (void)cudaFree(data_);
  data_ = nullptr;
  size_ = 0;
}

StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes) {
  DeviceBuffer buf;
  if (bytes == 0) return buf;
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is not sticky: do not leave it for the next launch
    return CudaStatus(err, "cudaMalloc of " + std::to_string(bytes) + " bytes");
  }
  buf.data_ = p;
  buf.size_ = bytes;
  return buf;
}

PinnedBuffer::~PinnedBuffer() { Release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void PinnedBuffer::Release() {
  if (data_ != nullptr) (void)cudaFreeHost(data_);
  data_ = nullptr;
  size_ = 0;
}

StatusOr<PinnedBuffer> PinnedBuffer::Allocate(size_t bytes) {
  PinnedBuffer buf;
  if (bytes == 0) return buf;
  void* p = nullptr;
  const cudaError_t err = cudaMallocHost(&p, bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CudaStatus(err, "cudaMallocHost of " + std::to_string(bytes) + " bytes");
  }
  buf.data_ = p;
  buf.size_ = bytes;
  return buf;
}

Status DeviceBuffer::CheckRange(size_t n, size_t offset, const char* what) const {
  if (offset > size_ || n > size_ - offset) {
    return InvalidArgumentError(std::string(what) + ": bytes [" + std::to_string(offset) + ", +" +
                                std::to_string(n) + ") outside a device buffer of " + std::to_string(size_));
  }
  return Status::Ok();
}

Status DeviceBuffer::CopyFromHost(const void* src, size_t n, size_t offset) {
  MINERU_RETURN_IF_ERROR(CheckRange(n, offset, "CopyFromHost"));
  if (n == 0) return Status::Ok();
  return CudaStatus(cudaMemcpy(static_cast<char*>(data_) + offset, src, n, cudaMemcpyHostToDevice),
                    "cudaMemcpy to the device");
}

Status DeviceBuffer::CopyToHost(void* dst, size_t n, size_t offset) const {
  MINERU_RETURN_IF_ERROR(CheckRange(n, offset, "CopyToHost"));
  if (n == 0) return Status::Ok();
  return CudaStatus(cudaMemcpy(dst, static_cast<const char*>(data_) + offset, n, cudaMemcpyDeviceToHost),
                    "cudaMemcpy to the host");
}

Status DeviceBuffer::CopyFromHostAsync(const void* src, size_t n, size_t offset, StreamHandle stream) {
  MINERU_RETURN_IF_ERROR(CheckRange(n, offset, "CopyFromHostAsync"));
  if (n == 0) return Status::Ok();
  return CudaStatus(
      cudaMemcpyAsync(static_cast<char*>(data_) + offset, src, n, cudaMemcpyHostToDevice, stream),
      "cudaMemcpyAsync to the device");
}

Status DeviceBuffer::CopyToHostAsync(void* dst, size_t n, size_t offset, StreamHandle stream) const {
  MINERU_RETURN_IF_ERROR(CheckRange(n, offset, "CopyToHostAsync"));
  if (n == 0) return Status::Ok();
  return CudaStatus(
      cudaMemcpyAsync(dst, static_cast<const char*>(data_) + offset, n, cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync to the host");
}

Status DeviceBuffer::Zero(StreamHandle stream) {
  if (size_ == 0) return Status::Ok();
  return CudaStatus(cudaMemsetAsync(data_, 0, size_, stream), "cudaMemsetAsync");
}

CudaStream::~CudaStream() { Release(); }

CudaStream::CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    Release();
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void CudaStream::Release() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

StatusOr<CudaStream> CudaStream::Create(bool non_blocking) {
  CudaStream s;
  const cudaError_t err =
      cudaStreamCreateWithFlags(&s.stream_, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault);
  if (err != cudaSuccess) {
    s.stream_ = nullptr;
    (void)cudaGetLastError();
    return CudaStatus(err, "cudaStreamCreateWithFlags");
  }
  return s;
}

Status CudaStream::Synchronize() const {
  return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

CudaEvent::~CudaEvent() { Release(); }

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    Release();
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void CudaEvent::Release() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
  event_ = nullptr;
}

StatusOr<CudaEvent> CudaEvent::Create() {
  CudaEvent e;
  const cudaError_t err = cudaEventCreateWithFlags(&e.event_, cudaEventDisableTiming);
  if (err != cudaSuccess) {
    e.event_ = nullptr;
    (void)cudaGetLastError();
    return CudaStatus(err, "cudaEventCreateWithFlags");
  }
  return e;
}

Status CudaEvent::Record(StreamHandle stream) {
  return CudaStatus(cudaEventRecord(event_, stream), "cudaEventRecord");
}

Status CudaEvent::MakeWait(StreamHandle stream) const {
  return CudaStatus(cudaStreamWaitEvent(stream, event_, 0), "cudaStreamWaitEvent");
}

Status CudaEvent::Synchronize() const {
  return CudaStatus(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
