// kernels/dispatch.cc — the public entry points of kernels.h: route each call to the SIMD
// kernels (kernels/cpu/, one HWY_DYNAMIC_DISPATCH per call) or to the scalar twins.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "base/check.h"
#include "hwy/targets.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {
namespace {

// -1: not yet read from the environment.
std::atomic<int> g_path{-1};

KernelPath PathFromEnv() {
  const char* e = std::getenv("MINERU_KERNELS");
  if (e && (std::strcmp(e, "ref") == 0 || std::strcmp(e, "reference") == 0)) return KernelPath::kReference;
  return KernelPath::kHighway;
}

inline bool UseRef() { return GetKernelPath() == KernelPath::kReference; }

}  // namespace

void SetKernelPath(KernelPath p) { g_path.store(static_cast<int>(p), std::memory_order_relaxed); }

KernelPath GetKernelPath() {
  int b = g_path.load(std::memory_order_relaxed);
  if (b < 0) {
    b = static_cast<int>(PathFromEnv());
    g_path.store(b, std::memory_order_relaxed);
  }
  return static_cast<KernelPath>(b);
}

int64_t QuantDequantMinRows() {
  // A dispatch-table lookup (cached; hwy::SupportedTargets() would run CPUID, which traps in VMs).
  return cpu::IntegerPathAtAnyRows() ? std::numeric_limits<int64_t>::max() : kQuantDequantMinRows;
}

bool IntegerPanelsAvailable() { return cpu::PrepackedPanels(); }

void PackedPanels::Free::operator()(uint8_t* p) const { std::free(p); }

PackedPanels PackIntegerPanels(const WeightView& w, ThreadPool* pool) {
  PackedPanels out;
  const size_t bytes = cpu::IntegerPanelsBytes(w);
  if (bytes == 0) return out;
  uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) & ~size_t{63}));
  if (buf == nullptr) throw std::bad_alloc();
  out.bytes_.reset(buf);
  cpu::PackIntegerPanels(w, buf, pool);
  out.size_ = bytes;
  return out;
}

WeightView WeightRows(const WeightView& w, int64_t r0, int64_t n) {
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
                                                      (r0 == 0 ? 0 : cpu::IntegerPanelsBytes(head)));
  }
  return v;
}

Status CapSimdTier(const std::string& tier) {
  if (tier.empty()) {  // no cap: the best target this CPU runs
    hwy::DisableTargets(0);
    cpu::AllowDotExtension(true);
    return Status::Ok();
  }
#if HWY_ARCH_X86
  struct Tier {
    const char* name;
    int64_t disable;  // Highway targets above the tier
    int64_t target;   // what the tier runs
    bool avx_vnni;    // the 256-bit panel kernel uses AVX-VNNI (the CPU must have it)
  };
  static const Tier kTiers[] = {
      {"avx512_vnni", 0, HWY_AVX3_DL, false},
      {"avx512", HWY_AVX3_DL, HWY_AVX3, false},
      {"avx2_vnni", HWY_AVX3_DL | HWY_AVX3, HWY_AVX2, true},
      {"avx2", HWY_AVX3_DL | HWY_AVX3, HWY_AVX2, false},
      {"sse4", HWY_AVX3_DL | HWY_AVX3 | HWY_AVX2, HWY_SSE4, false},
  };
  for (const Tier& t : kTiers) {
    if (tier != t.name) continue;
    if (t.avx_vnni && !cpu::HasDotExtension()) {
      return InvalidArgumentError("SIMD tier " + tier + " is not available here: this CPU has no AVX-VNNI");
    }
    hwy::DisableTargets(t.disable);
    const std::string runs = cpu::DispatchedTargetName(), want = hwy::TargetName(t.target);
    if (runs != want) {
      hwy::DisableTargets(0);
      return InvalidArgumentError("SIMD tier " + tier + " (" + want +
                                  ") is not available here: this CPU and build run " + runs);
    }
    cpu::AllowDotExtension(t.avx_vnni);
    return Status::Ok();
  }
  return InvalidArgumentError("unknown SIMD tier '" + tier +
                              "' (avx512_vnni, avx512, avx2_vnni, avx2, sse4)");
#else
  return InvalidArgumentError("SIMD tiers name x86 targets; this build runs " +
                              std::string(cpu::DispatchedTargetName()));
#endif
}

const char* ActiveTargetName() { return UseRef() ? "reference" : cpu::DispatchedTargetName(); }

void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y, ThreadPool* pool) {
  if (UseRef()) return ref::MatMul(x, m, w, bias, y, pool);
  if (w.quantized() && m < QuantDequantMinRows()) return cpu::MatMulQuantInt(x, m, w, bias, y, pool);
  cpu::MatMul(x, m, w, bias, y, pool);
}

ProbeResult FmaProbe(int64_t iters, float start) {
  if (UseRef()) return ref::FmaProbe(iters, start);
  return cpu::FmaProbe(iters, start);
}

DotProbeResult DotProbe(DotKind kind, int64_t iters) { return cpu::DotProbe(kind, iters); }

double ReadProbe(const float* x, int64_t n) {
  if (UseRef()) return ref::ReadProbe(x, n);
  return cpu::ReadProbe(x, n);
}

void WeightRowToF32(const WeightView& w, int64_t row, float* out) {
  if (UseRef()) return ref::WeightRowToF32(w, row, out);
  cpu::WeightRowToF32(w, row, out);
}

void RmsNorm(const float* x, int64_t m, int64_t n, const float* weight, float eps, float* y,
             ThreadPool* pool) {
  if (UseRef()) return ref::RmsNorm(x, m, n, weight, eps, y, pool);
  cpu::RmsNorm(x, m, n, weight, eps, y, pool);
}

void LayerNorm(const float* x, int64_t m, int64_t n, const float* weight, const float* bias, float eps,
               float* y, ThreadPool* pool) {
  if (UseRef()) return ref::LayerNorm(x, m, n, weight, bias, eps, y, pool);
  cpu::LayerNorm(x, m, n, weight, bias, eps, y, pool);
}

void QuickGelu(float* x, int64_t n, ThreadPool* pool) {
  if (UseRef()) return ref::QuickGelu(x, n, pool);
  cpu::QuickGelu(x, n, pool);
}

void GeluErf(float* x, int64_t n, ThreadPool* pool) {
  if (UseRef()) return ref::GeluErf(x, n, pool);
  cpu::GeluErf(x, n, pool);
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out, ThreadPool* pool) {
  if (UseRef()) return ref::SiluMul(gate, up, n, out, pool);
  cpu::SiluMul(gate, up, n, out, pool);
}

void AddInPlace(float* x, const float* d, int64_t n, ThreadPool* pool) {
  if (UseRef()) return ref::AddInPlace(x, d, n, pool);
  cpu::AddInPlace(x, d, n, pool);
}

void RopeRotateHalf(float* x, int64_t head_dim, const float* cos, const float* sin) {
  if (UseRef()) return ref::RopeRotateHalf(x, head_dim, cos, sin);
  cpu::RopeRotateHalf(x, head_dim, cos, sin);
}

void RopeRotateHalfRows(float* x, int64_t n, int64_t x_stride, int64_t num_heads, int64_t head_dim,
                        const float* cos, const float* sin, ThreadPool* pool) {
  if (UseRef()) return ref::RopeRotateHalfRows(x, n, x_stride, num_heads, head_dim, cos, sin, pool);
  cpu::RopeRotateHalfRows(x, n, x_stride, num_heads, head_dim, cos, sin, pool);
}

namespace {
std::atomic<bool> g_attention_int8{true};
}  // namespace

void AllowAttentionInt8(bool allow) { g_attention_int8.store(allow, std::memory_order_relaxed); }

namespace {
bool Int8AttentionRuns(const AttentionShape& s) {
  return !s.causal && s.k_blocks16 == nullptr && g_attention_int8.load(std::memory_order_relaxed) &&
         cpu::AttentionInt8Available();
}
}  // namespace

bool AttentionUsesInt8(const AttentionShape& s) { return s.int8_qk && Int8AttentionRuns(s); }
bool AttentionUsesInt8Pv(const AttentionShape& s) { return s.int8_pv && Int8AttentionRuns(s); }

void Attention(const float* q, const float* k, const float* v, const AttentionShape& s, float* out,
               ThreadPool* pool) {
  if (UseRef()) return ref::Attention(q, k, v, s, out, pool);
  if ((s.int8_qk && !AttentionUsesInt8(s)) || (s.int8_pv && !AttentionUsesInt8Pv(s))) {  // not allowed now
    AttentionShape fp32 = s;
    fp32.int8_qk = AttentionUsesInt8(s);
    fp32.int8_pv = AttentionUsesInt8Pv(s);
    return cpu::Attention(q, k, v, fp32, out, pool);
  }
  cpu::Attention(q, k, v, s, out, pool);
}

bool PackedAttentionRuns(const AttentionShape& s) {
  return !UseRef() && AttentionUsesInt8(s) && AttentionUsesInt8Pv(s);
}

size_t PackedKvHeadBytes(const AttentionShape& s) { return cpu::PackedKvHeadBytes(s); }

void PackKvInt8(const HalfKv& kv, const AttentionShape& s, uint8_t* dst, size_t dst_stride,
                ThreadPool* pool) {
  MINERU_CHECK(PackedAttentionRuns(s) && dst_stride >= PackedKvHeadBytes(s) && dst_stride % 64 == 0);
  cpu::PackKvInt8(kv, s, dst, dst_stride, pool);
}

void AttentionPacked(const float* q, const AttentionShape& s, const uint8_t* packed, size_t stride,
                     float* out, ThreadPool* pool) {
  MINERU_CHECK(PackedAttentionRuns(s));
  cpu::AttentionPacked(q, s, packed, stride, out, pool);
}

void ToF16Rows(const float* x, int64_t rows, int64_t cols, int64_t x_stride, uint16_t* out,
               int64_t out_stride, ThreadPool* pool) {
  if (UseRef()) return ref::ToF16Rows(x, rows, cols, x_stride, out, out_stride, pool);
  cpu::ToF16Rows(x, rows, cols, x_stride, out, out_stride, pool);
}

}  // namespace kernels
}  // namespace mineru
