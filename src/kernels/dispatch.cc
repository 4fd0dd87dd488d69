// kernels/dispatch.cc — the public entry points of kernels.h: route each call to the SIMD
// kernels (kernels/cpu/, dispatched to the configuration's target) or to the scalar twins.

#include <cstdlib>
#include <limits>
#include <new>

#include "base/check.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {

int64_t QuantDequantMinRows(const KernelConfig& config) {
  return cpu::IntegerPathAtAnyRows(config) ? std::numeric_limits<int64_t>::max() : kQuantDequantMinRows;
}

bool IntegerPanelsAvailable(const KernelConfig& config) { return cpu::PrepackedPanels(config); }

void PackedPanels::Free::operator()(uint8_t* p) const { std::free(p); }

PackedPanels PackIntegerPanels(const WeightView& w, const KernelContext& ctx) {
  PackedPanels out;
  const size_t bytes = cpu::IntegerPanelsBytes(w, ctx.config());
  if (bytes == 0) return out;
  uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) & ~size_t{63}));
  if (buf == nullptr) throw std::bad_alloc();
  out.bytes_.reset(buf);
  cpu::PackIntegerPanels(w, buf, ctx);
  out.size_ = bytes;
  return out;
}

WeightView WeightRows(const WeightView& w, int64_t r0, int64_t n, const KernelConfig& config) {
  MINERU_CHECK(r0 >= 0 && n >= 0 && r0 + n <= w.rows);
  WeightView v = w;
  v.rows = n;
  const size_t row_bytes =
      w.quantized() ? QuantizedRowBytes(w.quant, w.cols) : DTypeSize(w.dtype) * static_cast<size_t>(w.cols);
  v.data = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r0) * row_bytes;
  v.panels = nullptr;
  if (w.panels != nullptr && r0 % 16 == 0) {  // panels of 16 rows each, packed in order
    WeightView head = w;
    head.rows = r0;
    v.panels = reinterpret_cast<const IntegerPanels*>(reinterpret_cast<const uint8_t*>(w.panels) +
                                                      (r0 == 0 ? 0 : cpu::IntegerPanelsBytes(head, config)));
  }
  return v;
}

const char* TargetName(const KernelConfig& config) {
  return config.reference ? "reference" : cpu::DispatchedTargetName(config);
}

void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
            const KernelContext& ctx) {
  if (ctx.config().reference) return ref::MatMul(x, m, w, bias, y, ctx);
  if (w.quantized() && m < QuantDequantMinRows(ctx.config()))
    return cpu::MatMulQuantInt(x, m, w, bias, y, ctx);
  cpu::MatMul(x, m, w, bias, y, ctx);
}

ProbeResult FmaProbe(int64_t iters, float start, const KernelConfig& config) {
  if (config.reference) return ref::FmaProbe(iters, start);
  return cpu::FmaProbe(iters, start, config);
}

DotProbeResult DotProbe(DotKind kind, int64_t iters) { return cpu::DotProbe(kind, iters); }

double ReadProbe(const float* x, int64_t n, const KernelConfig& config) {
  if (config.reference) return ref::ReadProbe(x, n);
  return cpu::ReadProbe(x, n, config);
}

void WeightRowToF32(const WeightView& w, int64_t row, float* out, const KernelConfig& config) {
  if (config.reference) return ref::WeightRowToF32(w, row, out);
  cpu::WeightRowToF32(w, row, out, config);
}

void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
             const KernelContext& ctx) {
  if (ctx.config().reference) return ref::RmsNorm(x, m, n, weight, eps, y, ctx.pool());
  cpu::RmsNorm(x, m, n, weight, eps, y, ctx);
}

void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y, const KernelContext& ctx) {
  if (ctx.config().reference) return ref::LayerNorm(x, m, n, weight, bias, eps, y, ctx.pool());
  cpu::LayerNorm(x, m, n, weight, bias, eps, y, ctx);
}

void QuickGelu(float* x, int64_t n, const KernelContext& ctx) {
  if (ctx.config().reference) return ref::QuickGelu(x, n, ctx.pool());
  cpu::QuickGelu(x, n, ctx);
}

void GeluErf(float* x, int64_t n, const KernelContext& ctx) {
  if (ctx.config().reference) return ref::GeluErf(x, n, ctx.pool());
  cpu::GeluErf(x, n, ctx);
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out, const KernelContext& ctx) {
  if (ctx.config().reference) return ref::SiluMul(gate, up, n, out, ctx.pool());
  cpu::SiluMul(gate, up, n, out, ctx);
}

void AddInPlace(float* x, const float* d, int64_t n, const KernelContext& ctx) {
  if (ctx.config().reference) return ref::AddInPlace(x, d, n, ctx.pool());
  cpu::AddInPlace(x, d, n, ctx);
}

void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin,
                    const KernelConfig& config) {
  if (config.reference) return ref::RopeRotateHalf(x, head_dim, cos, sin);
  cpu::RopeRotateHalf(x, head_dim, cos, sin, config);
}

void RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                        const float* cos, const float* sin, const KernelContext& ctx) {
  if (ctx.config().reference) {
    return ref::RopeRotateHalfRows(x, n, x_stride, num_heads, head_dim, cos, sin, ctx.pool());
  }
  cpu::RopeRotateHalfRows(x, n, x_stride, num_heads, head_dim, cos, sin, ctx);
}

namespace {
bool Int8AttentionRuns(const AttentionShape& s, const KernelConfig& config) {
  return !s.causal && s.k_blocks16 == nullptr && config.attention_int8 && cpu::AttentionInt8Available(config);
}
}  // namespace

bool AttentionUsesInt8(const AttentionShape& s, const KernelConfig& config) {
  return s.int8_qk && Int8AttentionRuns(s, config);
}
bool AttentionUsesInt8Pv(const AttentionShape& s, const KernelConfig& config) {
  return s.int8_pv && Int8AttentionRuns(s, config);
}

void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               const KernelContext& ctx) {
  if (ctx.config().reference) return ref::Attention(q, k, v, s, out, ctx);
  const bool qk = AttentionUsesInt8(s, ctx.config()), pv = AttentionUsesInt8Pv(s, ctx.config());
  if (s.int8_qk != qk || s.int8_pv != pv) {  // asked for, not allowed here
    AttentionShape fp32 = s;
    fp32.int8_qk = qk;
    fp32.int8_pv = pv;
    return cpu::Attention(q, k, v, fp32, out, ctx);
  }
  cpu::Attention(q, k, v, s, out, ctx);
}

bool PackedAttentionRuns(const AttentionShape& s, const KernelConfig& config) {
  return !config.reference && AttentionUsesInt8(s, config) && AttentionUsesInt8Pv(s, config);
}

size_t PackedKvHeadBytes(const AttentionShape& s, const KernelConfig& config) {
  return cpu::PackedKvHeadBytes(s, config);
}

void PackKvInt8(const HalfKv& kv, const AttentionShape& s, uint8_t* dst, size_t dst_stride,
                const KernelContext& ctx) {
  MINERU_CHECK(PackedAttentionRuns(s, ctx.config()) && dst_stride >= PackedKvHeadBytes(s, ctx.config()) &&
               dst_stride % 64 == 0);
  cpu::PackKvInt8(kv, s, dst, dst_stride, ctx);
}

void AttentionPacked(const float* q, const AttentionShape& s, const uint8_t* packed, size_t stride,
                     float* out, const KernelContext& ctx) {
  MINERU_CHECK(PackedAttentionRuns(s, ctx.config()));
  cpu::AttentionPacked(q, s, packed, stride, out, ctx);
}

void ToF16Rows(const float* x, int64_t rows, int64_t cols, int64_t x_stride, uint16_t* out,
               int64_t out_stride, const KernelContext& ctx) {
  if (ctx.config().reference) return ref::ToF16Rows(x, rows, cols, x_stride, out, out_stride, ctx.pool());
  cpu::ToF16Rows(x, rows, cols, x_stride, out, out_stride, ctx);
}

}  // namespace kernels
}  // namespace mineru
