// kernels/quant.cc — block formats of kernels/quant.h: sizes, weight quantization and
// dequantization (scalar; run once at load or by the quantize tool), and the scalar
// activation quantizer shared with the reference MatMul.

#include "kernels/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/bf16.h"
#include "base/check.h"
#include "kernels/quant_internal.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {

int64_t QuantBlockSize(QuantType t) {
  switch (t) {
    case QuantType::kQ8_0:
    case QuantType::kQ4_0:
      return 32;
    case QuantType::kQ4_G128:
      return 128;
    default:
      return 0;
  }
}

size_t QuantBlockBytes(QuantType t) {
  switch (t) {
    case QuantType::kQ8_0:
      return internal::kQ8_0BlockBytes;
    case QuantType::kQ4_0:
      return internal::kQ4_0BlockBytes;
    case QuantType::kQ4_G128:
      return internal::kQ4_G128BlockBytes;
    default:
      return 0;
  }
}

size_t QuantizedRowBytes(QuantType t, int64_t cols) {
  const int64_t bs = QuantBlockSize(t);
  if (bs == 0) return 0;
  return static_cast<size_t>((cols + bs - 1) / bs) * QuantBlockBytes(t);
}

const char* QuantTypeName(QuantType t) {
  switch (t) {
    case QuantType::kNone:
      return "none";
    case QuantType::kQ8_0:
      return "q8_0";
    case QuantType::kQ4_0:
      return "q4_0";
    case QuantType::kQ4_G128:
      return "q4_g128";
    default:
      return "?";
  }
}

uint16_t F32ToF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {                                              // normal half
    const uint32_t mant = abs & 0x7fffffu;
    uint32_t h = ((abs >> 23) - 112) << 10 | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half (or zero): value = m * 2^-24.
  const int e = static_cast<int>(abs >> 23);        // biased f32 exponent, < 113
  if (e < 102) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  const int shift = 126 - e;  // 14..24
  uint32_t h = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

namespace {

// Round to nearest, ties to even, for |v| < 2^22 (the magic-number trick: no libm call and
// the same result as the SIMD NearestInt under the default rounding mode).
inline float RoundNearestEven(float v) {
  const float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

// One block of `n` values (n = 32 or 128) in Q8_0 / Q4 form. x has n readable values.
void QuantizeBlockQ8(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const uint16_t dh = F32ToF16(amax / 127.0f);
  const float d = F16ToF32(dh);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  std::memcpy(out, &dh, 2);
  int8_t* q = reinterpret_cast<int8_t*>(out + 2);
  for (int i = 0; i < 32; ++i) {
    const float v = RoundNearestEven(x[i] * id);
    q[i] = static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, v)));
  }
}

// Q4 with one scale over n values (n/32 nibble sub-blocks), values in [-8, 7] * d. The
// scale minimises the squared error: a few candidate grids d = max / -(8 + t) are tried
// (t = 0 is GGUF Q4_0's rule), each followed by a least-squares refit of d for its
// nibbles; the best is kept. The stored (f16-rounded) d is the one used to choose nibbles
// in a final pass.
void QuantizeBlockQ4(const float* x, int n, uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  float best_d = max / -8.0f;
  if (amax > 0.0f) {
    float best_score = -1.0f;
    static const float kT[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, -0.5f};
    for (float t : kT) {
      const float id = -(8.0f + t) / max;
      float sumlx = 0.0f, suml2 = 0.0f;
      for (int i = 0; i < n; ++i) {
        const float l = std::min(7.0f, std::max(-8.0f, RoundNearestEven(x[i] * id)));
        sumlx += l * x[i];
        suml2 += l * l;
      }
      // Error of the refit = sum x^2 - sumlx^2 / suml2: maximise sumlx^2 / suml2.
      if (suml2 > 0.0f && sumlx * sumlx / suml2 > best_score) {
        best_score = sumlx * sumlx / suml2;
        best_d = sumlx / suml2;
      }
    }
  }
  const uint16_t dh = F32ToF16(best_d);
  const float d = F16ToF32(dh);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  std::memcpy(out, &dh, 2);
  uint8_t* qs = out + 2;
  auto nib = [&](float v) {
    const float t = RoundNearestEven(v * id) + 8.0f;
    return static_cast<uint8_t>(std::min(15.0f, std::max(0.0f, t)));
  };
  for (int s = 0; s < n / 32; ++s) {
    for (int i = 0; i < 16; ++i) {
      qs[s * 16 + i] = static_cast<uint8_t>(nib(x[s * 32 + i]) | (nib(x[s * 32 + 16 + i]) << 4));
    }
  }
}

void QuantizeRowF32(const float* x, QuantType t, int64_t nb, uint8_t* out) {
  const int64_t bs = QuantBlockSize(t);
  const size_t bb = QuantBlockBytes(t);
  for (int64_t b = 0; b < nb; ++b) {
    if (t == QuantType::kQ8_0) {
      QuantizeBlockQ8(x + b * bs, out + b * bb);
    } else {
      QuantizeBlockQ4(x + b * bs, static_cast<int>(bs), out + b * bb);
    }
  }
}

}  // namespace

QuantizedMatrix::QuantizedMatrix(QuantType type, int64_t rows, int64_t cols)
    : type_(type), rows_(rows), cols_(cols) {
  size_ = QuantizedRowBytes(type, cols) * static_cast<size_t>(rows);
  bytes_.reset(new uint8_t[size_ ? size_ : 1]());
}

WeightView QuantizedMatrix::view() const { return QuantizedView(type_, bytes_.get(), rows_, cols_); }

WeightView QuantizedView(QuantType type, const void* data, int64_t rows, int64_t cols) {
  WeightView v;
  v.dtype = DType::kU8;
  v.data = data;
  v.rows = rows;
  v.cols = cols;
  v.quant = type;
  return v;
}

void QuantizeRows(const WeightView& w, QuantType type, int64_t row_begin, int64_t row_end, uint8_t* out) {
  MINERU_CHECK(!w.quantized() && type != QuantType::kNone);
  const int64_t bs = QuantBlockSize(type);
  const int64_t nb = (w.cols + bs - 1) / bs;
  const size_t row_bytes = QuantizedRowBytes(type, w.cols);
  std::vector<float> row(static_cast<size_t>(nb * bs), 0.0f);
  for (int64_t r = row_begin; r < row_end; ++r) {
    ref::WeightRowToF32(w, r, row.data());  // the padded tail stays zero
    QuantizeRowF32(row.data(), type, nb, out + (r - row_begin) * row_bytes);
  }
}

QuantizedMatrix Quantize(const WeightView& w, QuantType type, ThreadPool* pool) {
  QuantizedMatrix qm(type, w.rows, w.cols);
  const size_t row_bytes = QuantizedRowBytes(type, w.cols);
  uint8_t* out = qm.mutable_data();
  auto body = [&](size_t begin, size_t end, size_t) {
    QuantizeRows(w, type, static_cast<int64_t>(begin), static_cast<int64_t>(end), out + begin * row_bytes);
  };
  if (pool) {
    pool->ParallelFor(static_cast<size_t>(w.rows), body, 64);
  } else {
    body(0, static_cast<size_t>(w.rows), 0);
  }
  return qm;
}

void DequantizeRow(const WeightView& w, int64_t row, float* out) {
  const QuantType t = w.quant;
  const int64_t bs = QuantBlockSize(t);
  const size_t bb = QuantBlockBytes(t);
  const uint8_t* p =
      static_cast<const uint8_t*>(w.data) + static_cast<size_t>(row) * QuantizedRowBytes(t, w.cols);
  for (int64_t c0 = 0, b = 0; c0 < w.cols; c0 += bs, ++b) {
    const uint8_t* blk = p + b * bb;
    const float d = F16ToF32(internal::LoadU16(blk));
    const int64_t len = std::min(bs, w.cols - c0);
    for (int64_t i = 0; i < len; ++i) {
      float v;
      if (t == QuantType::kQ8_0) {
        v = static_cast<float>(reinterpret_cast<const int8_t*>(blk + 2)[i]) * d;
      } else {
        const int64_t s = i / 32, t2 = i % 32;
        const uint8_t byte = blk[2 + s * 16 + (t2 % 16)];
        const int nib = t2 < 16 ? (byte & 15) : (byte >> 4);
        v = static_cast<float>(nib - 8) * d;
      }
      out[c0 + i] = v;
    }
  }
}

namespace internal {

void QuantizeActRowRef(const float* x, int64_t k, const ActLayout& l, int8_t* q, float* d, float* corr) {
  for (int64_t b = 0; b < l.nb; ++b) {
    const int64_t c0 = b * l.block, len = std::min(l.block, k - c0);
    float amax = 0.0f;
    for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(x[c0 + i]));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    int32_t sum = 0;
    for (int64_t i = 0; i < l.block; ++i) {
      const int32_t v = i < len ? static_cast<int32_t>(RoundNearestEven(x[c0 + i] * id)) : 0;
      q[c0 + i] = static_cast<int8_t>(v);
      sum += v;
    }
    d[b] = db;
    corr[b] = db * static_cast<float>(8 * sum);
  }
}

}  // namespace internal
}  // namespace kernels
}  // namespace mineru
