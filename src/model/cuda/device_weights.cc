#include "model/cuda/device_weights.h"

#include <algorithm>
#include <utility>

#include "base/bf16.h"

namespace mineru {

namespace cu = kernels::cuda;

const char* CudaPrecisionName(CudaPrecision p) { return p == CudaPrecision::kF32 ? "fp32" : "bf16"; }

StatusOr<CudaPrecision> ParseCudaPrecision(const std::string& name) {
  if (name == "bf16") return CudaPrecision::kBf16;
  if (name == "fp32" || name == "f32") return CudaPrecision::kF32;
  return InvalidArgumentError("GPU precision must be bf16 or fp32, not \"" + name + "\"");
}

size_t CudaElementBytes(CudaPrecision p) { return p == CudaPrecision::kF32 ? 4 : 2; }

namespace {

// Host staging: rows are widened into fp32, narrowed to the device element and copied a slab of
// rows at a time, so a [151936, 896] embedding table never exists twice on the host.
constexpr size_t kStagingBytes = size_t{8} << 20;

}  // namespace

namespace {

// Rows of w, widened by `config`'s kernels and narrowed to p, into m's rows from row `at` on, a
// slab of rows at a time.
Status UploadRowsInto(const WeightView& w, const kernels::KernelConfig& config, DeviceMatrix* m, int64_t at) {
  if (w.rows < 0 || w.cols != m->cols || at < 0 || at + w.rows > m->rows) {
    return InvalidArgumentError("UploadMatrix: the rows do not fit the device matrix");
  }
  if (w.rows > 0 && w.cols > 0 && w.data == nullptr) return InvalidArgumentError("UploadMatrix: no data");
  const CudaPrecision p = m->precision;
  const size_t cols = static_cast<size_t>(w.cols), row_bytes = cols * CudaElementBytes(p);
  if (row_bytes == 0) return Status::Ok();
  const int64_t slab = static_cast<int64_t>(std::max<size_t>(1, kStagingBytes / row_bytes));
  const int64_t first = std::min(slab, w.rows);
  std::vector<float> wide(cols);
  std::vector<float> f32(p == CudaPrecision::kF32 ? static_cast<size_t>(first) * cols : 0);
  std::vector<cu::Bf16> b16(p == CudaPrecision::kBf16 ? static_cast<size_t>(first) * cols : 0);
  for (int64_t r0 = 0; r0 < w.rows; r0 += slab) {
    const int64_t n = std::min(slab, w.rows - r0);
    for (int64_t r = 0; r < n; ++r) {
      float* dst = p == CudaPrecision::kF32 ? f32.data() + r * w.cols : wide.data();
      kernels::WeightRowToF32(w, r0 + r, dst, config);
      if (p == CudaPrecision::kBf16) {
        for (size_t j = 0; j < cols; ++j) b16[r * w.cols + j] = cu::Bf16{F32ToBf16(wide[j])};
      }
    }
    const void* src = p == CudaPrecision::kF32 ? static_cast<const void*>(f32.data()) : b16.data();
    MINERU_RETURN_IF_ERROR(
        m->buf.CopyFromHost(src, static_cast<size_t>(n) * row_bytes, (at + r0) * row_bytes));
  }
  return Status::Ok();
}

StatusOr<DeviceMatrix> AllocateMatrix(int64_t rows, int64_t cols, CudaPrecision p) {
  if (rows < 0 || cols < 0) return InvalidArgumentError("UploadMatrix: negative shape");
  DeviceMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.precision = p;
  MINERU_ASSIGN_OR_RETURN(m.buf,
                          cu::DeviceBuffer::Allocate(static_cast<size_t>(rows * cols) * CudaElementBytes(p)));
  return m;
}

}  // namespace

StatusOr<DeviceMatrix> UploadMatrix(const WeightView& w, CudaPrecision p,
                                    const kernels::KernelConfig& config) {
  MINERU_ASSIGN_OR_RETURN(DeviceMatrix m, AllocateMatrix(w.rows, w.cols, p));
  MINERU_RETURN_IF_ERROR(UploadRowsInto(w, config, &m, 0));
  return m;
}

StatusOr<DeviceMatrix> UploadStacked(const std::vector<const WeightView*>& parts, CudaPrecision p,
                                     const kernels::KernelConfig& config) {
  int64_t rows = 0;
  for (const WeightView* w : parts) {
    if (w->cols != parts.front()->cols)
      return InvalidArgumentError("UploadStacked: the parts' widths differ");
    rows += w->rows;
  }
  MINERU_ASSIGN_OR_RETURN(DeviceMatrix m, AllocateMatrix(rows, parts.empty() ? 0 : parts.front()->cols, p));
  int64_t at = 0;
  for (const WeightView* w : parts) {
    MINERU_RETURN_IF_ERROR(UploadRowsInto(*w, config, &m, at));
    at += w->rows;
  }
  return m;
}

StatusOr<cu::DeviceBuffer> UploadFloats(const std::vector<float>& v) {
  MINERU_ASSIGN_OR_RETURN(cu::DeviceBuffer buf, cu::DeviceBuffer::Allocate(v.size() * sizeof(float)));
  if (!v.empty()) MINERU_RETURN_IF_ERROR(buf.CopyFromHost(v.data(), v.size() * sizeof(float)));
  return buf;
}

Status GrowingBuffer::Reserve(size_t bytes) {
  if (bytes <= buf_.size()) return Status::Ok();
  buf_ = cu::DeviceBuffer();  // free first: the old and new sizes need not fit together
  MINERU_ASSIGN_OR_RETURN(buf_, cu::DeviceBuffer::Allocate(bytes));
  return Status::Ok();
}

}  // namespace mineru
