// kernels/cpu/matmul_quant.cc — integer path of MatMul for block-quantized W (Q8_0, Q4_0,
// Q4_G128): rows of x are quantized to int8 per block on the fly (kernels/quant_internal.h),
// then multiplied with W by the column panels where the target has them (matmul_vnni.cc on
// AVX-512 VNNI, matmul_panels256.cc on AVX2, for enough rows) or else by the row tiles
// (matmul_quant_tiles.cc: R rows of x × C rows of W, block by block). This file holds the
// activation quantization, that choice and the CPU's integer dot-product extensions (AVX-VNNI,
// ARM sdot / i8mm); not the tiles' arithmetic.

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <vector>

#include "hwy/highway.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/matmul_quant_internal-inl.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/scratch.h"
#include "kernels/cpu/simd-inl.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"

#if HWY_ARCH_X86
#include <cpuid.h>
#elif HWY_ARCH_ARM_A64 && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
// Highway 1.0.3's AVX3_DL target string names "avxvnni" (VEX) but not "avx512vnni", which
// _mm512_dpbusd_epi32 needs; its CPU check for AVX3_DL does require AVX512-VNNI.
#pragma GCC target("avx512vnni")
#endif
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// ---------------------------------------------------------------------------------------
// Activation quantization (same arithmetic as internal::QuantizeActRowRef).

// xc (optional): -128 * each block's sum of q, the term the integer panels need (VNNI multiplies
// w + 128).
void QuantizeActRow(const float* HWY_RESTRICT x, size_t k, const internal::ActLayout& l,
                    int8_t* HWY_RESTRICT q, float* HWY_RESTRICT d, float* HWY_RESTRICT corr,
                    int32_t* HWY_RESTRICT xc = nullptr) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int8_t, DF> d8;
  const size_t N = hn::Lanes(df);
  const size_t block = static_cast<size_t>(l.block);
  alignas(64) float xt[128];
  for (size_t b = 0; b < static_cast<size_t>(l.nb); ++b) {
    const size_t c0 = b * block, len = std::min(block, k - c0);
    const float* src = x + c0;
    if (len < block) {
      std::fill(xt, xt + block, 0.0f);
      std::copy(src, src + len, xt);
      src = xt;
    }
    VF amax = hn::Zero(df);
    for (size_t i = 0; i < block; i += N) amax = hn::Max(amax, hn::Abs(hn::LoadU(df, src + i)));
    const float db = ReduceMax(amax) / 127.0f;
    const VF id = hn::Set(df, db != 0.0f ? 1.0f / db : 0.0f);
    auto sum = hn::Zero(di);
    for (size_t i = 0; i < block; i += N) {
      const auto qi = hn::NearestInt(hn::Mul(hn::LoadU(df, src + i), id));
      sum = hn::Add(sum, qi);
      hn::StoreU(hn::DemoteTo(d8, qi), d8, q + c0 + i);
    }
    const int32_t total = hn::GetLane(hn::SumOfLanes(di, sum));  // |q| <= 127: the stored bytes' sum
    d[b] = db;
    corr[b] = db * static_cast<float>(8 * total);
    if (xc != nullptr) xc[b] = -128 * total;
  }
}

}  // namespace

#if HWY_TARGET == HWY_AVX3_DL
// matmul_vnni.cc: rows xs = int8 activations (stride kpad) with scales d and xc = -128 * the
// sum of each block of xs (both stride nb) x W, lanes = columns.
void MatMulVnniPanels(QuantType t, const int8_t* xs, const float* d, const int32_t* xc, size_t m, size_t kpad,
                      size_t nb, const uint8_t* wbase, size_t row_bytes, size_t n, const uint8_t* prepacked,
                      const float* bias, float* y, ThreadPool* pool);
// Below this many rows the row tiles win over panels packed per call (repacking W costs more than
// it saves). Prepacked panels run at every m: a row or two are bound by reading W, which they do
// as fast as the rows (same bytes per weight), and the rows' pages can then be given back.
constexpr size_t kVnniPanelMinRows = 4;
#elif HWY_TARGET == HWY_AVX2
// matmul_panels256.cc: the same contract on 256-bit lanes (AVX2, or AVX-VNNI when vnni).
void MatMulPanels256(QuantType t, const int8_t* xs, const float* d, const int32_t* xc, size_t m, size_t kpad,
                     size_t nb, const uint8_t* wbase, size_t row_bytes, size_t n, const float* bias, float* y,
                     ThreadPool* pool, bool vnni);
// Below this many rows the row tiles win (they need no repacking of W).
constexpr size_t kPanel256MinRows = 16;
#endif

// Targets with a panel kernel multiply int8 faster than fp32 at every m.
bool IntegerPathAtAnyRowsImpl() { return HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX2; }

void MatMulQuantIntImpl(const float* x, int64_t m64, const WeightView& w, const float* bias, float* y,
                        const KernelContext& ctx) {
  if (m64 <= 0 || w.rows <= 0) return;
  ThreadPool* pool = ctx.pool();
  const size_t m = static_cast<size_t>(m64), n = static_cast<size_t>(w.rows), k = static_cast<size_t>(w.cols);
  pool = PoolFor(pool, m * n * k, n * QuantizedRowBytes(w.quant, w.cols));
  const internal::ActLayout l = internal::MakeActLayout(w.quant, w.cols);
  const size_t kpad = static_cast<size_t>(l.kpad), nb = static_cast<size_t>(l.nb);
  // The int8 rows, kept in the context's scratch (slot 0's: the call's own) between calls.
  cpu::ActScratch& scratch = ctx.scratch(0).act;
  scratch.Reserve(m * kpad, m * nb);
  int8_t* const qs = scratch.q.get();
  float* d = scratch.d.get();
  float* corr = scratch.corr.get();
  // Few rows (decode): quantize inline rather than pay a pool round trip.
#if HWY_TARGET == HWY_AVX3_DL
  const bool panels = m >= kVnniPanelMinRows || w.panels != nullptr;
#elif HWY_TARGET == HWY_AVX2
  const bool panels = m >= kPanel256MinRows;
#else
  const bool panels = false;
#endif
  int32_t* xc = scratch.xc.get();  // the panels' per-block term, -128 * sum(q)
  const size_t qchunk = m * k < (size_t{1} << 16) ? m : ChunkSize(m, pool, 16, 2);
  RunTasks(m * k < (size_t{1} << 16) ? nullptr : pool, (m + qchunk - 1) / qchunk, [&](size_t t, size_t) {
    for (size_t i = t * qchunk; i < std::min(m, (t + 1) * qchunk); ++i) {
      // VNNI multiplies w + 128: each block's sum of x takes the 128 back out.
      QuantizeActRow(x + i * k, k, l, qs + i * kpad, d + i * nb, corr + i * nb,
                     panels ? xc + i * nb : nullptr);
    }
  });
#if HWY_TARGET == HWY_AVX3_DL
  if (panels) {
    MatMulVnniPanels(w.quant, qs, d, xc, m, kpad, nb, static_cast<const uint8_t*>(w.data),
                     QuantizedRowBytes(w.quant, w.cols), n, reinterpret_cast<const uint8_t*>(w.panels), bias,
                     y, pool);
    return;
  }
#elif HWY_TARGET == HWY_AVX2
  if (panels) {
    MatMulPanels256(w.quant, qs, d, xc, m, kpad, nb, static_cast<const uint8_t*>(w.data),
                    QuantizedRowBytes(w.quant, w.cols), n, bias, y, pool, cpu::UseDotExtension(ctx.config()));
    return;
  }
#endif
  TileExtensions ext;
  ext.sdot = cpu::UseDotExtension(ctx.config());
  ext.smmla = cpu::UseI8mm(ctx.config());
  std::vector<QRow> rows(m);
  for (size_t i = 0; i < m; ++i) rows[i] = QRow{qs + i * kpad, d + i * nb, corr + i * nb};

  const size_t row_bytes = QuantizedRowBytes(w.quant, w.cols);
  const uint8_t* wbase = static_cast<const uint8_t*>(w.data);
  const size_t chunk = (ChunkSize(n, pool, 16, 4) + 3) & ~size_t{3};
  // Columns per L2 block: the W rows of a block stay cached while all row groups pass.
  const size_t block = std::max<size_t>(4, ((size_t{192} << 10) / row_bytes) & ~size_t{3});
  RunTasks(pool, (n + chunk - 1) / chunk, [&](size_t t, size_t) {
    const size_t jt0 = t * chunk, jt1 = std::min(n, jt0 + chunk);
    for (size_t j0 = jt0; j0 < jt1; j0 += block) {
      const size_t j1 = std::min(jt1, j0 + block);
      size_t i = 0;
      for (; i + 4 <= m; i += 4)
        QuantRows<4>(w.quant, &rows[i], wbase, row_bytes, nb, bias, y, i, n, j0, j1, ext);
      switch (m - i) {
        case 3:
          QuantRows<3>(w.quant, &rows[i], wbase, row_bytes, nb, bias, y, i, n, j0, j1, ext);
          break;
        case 2:
          QuantRows<2>(w.quant, &rows[i], wbase, row_bytes, nb, bias, y, i, n, j0, j1, ext);
          break;
        case 1:
          QuantRows<1>(w.quant, &rows[i], wbase, row_bytes, nb, bias, y, i, n, j0, j1, ext);
          break;
        default:
          break;
      }
    }
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {
namespace {

bool CpuHasDotExtension() {
#if HWY_ARCH_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d) == 0) return false;
  return (a & (1u << 4)) != 0;  // CPUID.(EAX=7,ECX=1):EAX[4] = AVX-VNNI
#elif HWY_ARCH_ARM_A64 && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}

bool CpuHasI8mm() {
#if HWY_ARCH_ARM_A64 && defined(__linux__)
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)  // Linux's arm64 hwcap bit (kernel headers before 5.10 lack the name)
#endif
  return (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
#else
  return false;
#endif
}

}  // namespace

bool HasDotExtension() {
  static const bool has = CpuHasDotExtension();  // once (CPUID can trap to the hypervisor)
  return has;
}

bool UseDotExtension(const KernelConfig& config) { return config.dot_extension && HasDotExtension(); }

bool HasI8mm() {
  static const bool has = CpuHasI8mm();
  return has;
}

bool UseI8mm(const KernelConfig& config) { return config.i8mm && HasI8mm(); }

HWY_EXPORT(MatMulQuantIntImpl);
HWY_EXPORT(IntegerPathAtAnyRowsImpl);

bool IntegerPathAtAnyRows(const KernelConfig& config) {
  return MINERU_DISPATCH(config, IntegerPathAtAnyRowsImpl)();
}

void MatMulQuantInt(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
                    const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), MatMulQuantIntImpl)(x, m, w, bias, y, ctx);
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
