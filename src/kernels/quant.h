// kernels/quant.h — block-quantized weight formats: layouts, quantization, dequantization.
//
// Layouts (all little-endian, rows stored one after another, no padding between blocks):
//   Q8_0     per 32 values: { uint16 d (f16); int8 q[32] }           value = q * d
//   Q4_0     per 32 values: { uint16 d (f16); uint8 qs[16] }         value = (nibble - 8) * d,
//            value i < 16 in the low nibble of qs[i], value i >= 16 in the high nibble of qs[i-16]
//   Q4_G128  per 128 values: { uint16 d (f16); uint8 qs[64] }        four Q4_0 nibble blocks
//            (qs[16 s .. 16 s + 16) holds values 32 s .. 32 s + 32) sharing one scale
// Q8_0 and Q4_0 are byte-identical to GGUF's block_q8_0 / block_q4_0. A row of `cols` values
// holds ceil(cols / block) blocks; the tail of the last block is zero.
//
// A QuantizedMatrix owns its bytes; QuantizedView() wraps bytes owned elsewhere (e.g. a
// mapped pre-quantized file) — both give a WeightView that every op accepts in place of
// the dense view. Quantization is deterministic (same input, same bytes on every target).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/thread_pool.h"
#include "kernels/kernels.h"

namespace mineru {
namespace kernels {

// Values per scale (32 or 128); 0 for kNone.
int64_t QuantBlockSize(QuantType t);
// Bytes of one block (34, 18, 66); 0 for kNone.
size_t QuantBlockBytes(QuantType t);
// Bytes of one row of `cols` values.
size_t QuantizedRowBytes(QuantType t, int64_t cols);
// "none", "q8_0", "q4_0", "q4_g128".
const char* QuantTypeName(QuantType t);

// MatMul with a quantized W and m < QuantDequantMinRows() quantizes each row of x to int8
// per block (block = QuantBlockSize) on the fly and uses integer dot products; for larger m
// it dequantizes W panel by panel to fp32 and runs the fp32 GEMM (no activation rounding
// there). The threshold is kQuantDequantMinRows, except where the configuration's target has an
// integer panel kernel — AVX-512 VNNI (AVX3_DL) and AVX2 (with AVX-VNNI where the CPU has it) —
// where integer products are faster at every m and the threshold is unlimited. Both backends follow the same
// rule (the reference twin takes the configuration's target too), so it computes what the SIMD path does.
constexpr int64_t kQuantDequantMinRows = 48;
int64_t QuantDequantMinRows(const KernelConfig& config);

// An owned quantized matrix. Movable, not copyable (the copy would be O(size)).
class QuantizedMatrix {
 public:
  QuantizedMatrix() = default;
  QuantizedMatrix(QuantType type, int64_t rows, int64_t cols);  // zero-filled bytes
  QuantizedMatrix(QuantizedMatrix&&) noexcept = default;
  QuantizedMatrix& operator=(QuantizedMatrix&&) noexcept = default;

  QuantType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const uint8_t* data() const { return bytes_.get(); }
  uint8_t* mutable_data() { return bytes_.get(); }
  size_t size_bytes() const { return size_; }
  // A view valid while this object lives (and is not moved from).
  WeightView view() const;

 private:
  QuantType type_ = QuantType::kNone;
  int64_t rows_ = 0, cols_ = 0;
  size_t size_ = 0;
  std::unique_ptr<uint8_t[]> bytes_;
};

// A quantized matrix repacked for the integer panel kernel of CPUs with AVX-512 VNNI
// (kernels/cpu/matmul_vnni.cc): panels of 16 rows of W, per block/group their values as
// 4-byte k groups interleaved across the 16 lanes (Q8_0: int8 + 128; Q4 formats: their nibbles,
// two k groups per byte lane), then the f16 scales: as many bytes as the rows (1.0625 per weight
// for Q8_0, 0.5625 for Q4_0). Built once at load and attached to the views (WeightView::panels):
// MatMul then runs them at every m instead of the rows (repacked per call, or the row tiles for
// m < 4), with the same bits as the per-call panels, so the rows' mapped pages can be given
// back. The row layout stays the reference (other targets, the twins).
class PackedPanels {
 public:
  PackedPanels() = default;
  // For WeightView::panels; the bytes behind it are kernels/cpu/'s business.
  const IntegerPanels* data() const { return reinterpret_cast<const IntegerPanels*>(bytes_.get()); }
  size_t size_bytes() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  friend PackedPanels PackIntegerPanels(const WeightView& w, const KernelContext& ctx);
  struct Free {
    void operator()(uint8_t* p) const;
  };
  size_t size_ = 0;
  std::unique_ptr<uint8_t, Free> bytes_;
};
// True when the kernels of `config` run the panel kernel (its target is AVX3_DL).
bool IntegerPanelsAvailable(const KernelConfig& config);
// The panels of quantized w; empty when !IntegerPanelsAvailable(ctx.config()) or w is not quantized.
PackedPanels PackIntegerPanels(const WeightView& w, const KernelContext& ctx);

// Rows [r0, r0 + n) of w as a view of their own (a product with it equals those columns of the
// product with w, bit for bit). Its panels are w's from row r0 when r0 is a multiple of the
// panels' 16 rows, else null (repacked per call); `config` is the one the panels were packed under.
WeightView WeightRows(const WeightView& w, int64_t r0, int64_t n, const KernelConfig& config);

// Quantizes a dense view (f32/bf16/f16) into `type` (not kNone). Rows are independent and
// are spread over pool when given. Precondition: !w.quantized().
QuantizedMatrix Quantize(const WeightView& w, QuantType type, ThreadPool* pool = nullptr);

// Quantizes rows [row_begin, row_end) of w into out (QuantizedRowBytes per row), for writers
// that stream a pre-quantized file.
void QuantizeRows(const WeightView& w, QuantType type, int64_t row_begin, int64_t row_end, uint8_t* out);

// A view over quantized bytes owned by the caller (e.g. a mapped file).
WeightView QuantizedView(QuantType type, const void* data, int64_t rows, int64_t cols);

// Dequantizes one row into out[cols].
void DequantizeRow(const WeightView& w, int64_t row, float* out);

// f32 -> IEEE half, round to nearest even (saturates to inf like the hardware conversion).
uint16_t F32ToF16(float f);

}  // namespace kernels
}  // namespace mineru
