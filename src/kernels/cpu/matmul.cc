// kernels/cpu/matmul.cc — fp32 MatMul y = x · W^T (+ bias) for dense (f32/bf16/f16) and,
// for large m, block-quantized W (dequantized panel by panel). Two algorithms:
//   dot     (small m): R rows of x × C rows of W accumulated along k in vector lanes, then
//           reduced; W streamed once per R rows, widened on the fly. Memory-bound GEMV at m=1.
//   packed  (larger m): BLIS-style. W^T is widened and packed into [KC][2N] panels (per task:
//           up to 8 panels of output columns), x rows are broadcast, a 6×2N register tile
//           accumulates in FMA registers. Tasks = column blocks, pulled dynamically.
// The integer path for quantized weights is in matmul_quant.cc.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <utility>
#include <vector>

#include "base/bf16.h"
#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/simd-inl.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"

HWY_BEFORE_NAMESPACE();
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Rows of x below which the dense MatMul uses the dot algorithm (measured crossover: the
// packing of W^T pays off earlier with AVX-512's wider FMA tiles).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int64_t kDotMaxRows = 8;
#else
constexpr int64_t kDotMaxRows = 32;
#endif
// Depth of one packed panel (multiple of 128 so quantized blocks never straddle panels).
constexpr size_t kKC = 256;

// ---------------------------------------------------------------------------------------
// Dequantization of whole blocks: out[0, nblk * block) from blocks starting at blk.

HWY_INLINE void DequantQ8Blocks(const uint8_t* HWY_RESTRICT blk, size_t nblk, float* HWY_RESTRICT out) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<int8_t, DF> d8;
  const size_t N = hn::Lanes(df);
  for (size_t b = 0; b < nblk; ++b, blk += internal::kQ8_0BlockBytes, out += 32) {
    const VF s = hn::Set(df, F16ToF32(internal::LoadU16(blk)));
    const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
    for (size_t i = 0; i < 32; i += N) {
      hn::StoreU(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, q + i))), s), df, out + i);
    }
  }
}

// Q4_0 (sub = 1) or Q4_G128 (sub = 4): each block = {f16 d; sub × 16 nibble bytes}.
HWY_INLINE void DequantQ4Blocks(const uint8_t* HWY_RESTRICT blk, size_t nblk, size_t sub,
                                float* HWY_RESTRICT out) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint8_t, DF> du8;
  const size_t N = hn::Lanes(df);
  const size_t bytes = 2 + 16 * sub;
  alignas(64) uint8_t nib[32];
  for (size_t b = 0; b < nblk; ++b, blk += bytes) {
    const VF s = hn::Set(df, F16ToF32(internal::LoadU16(blk)));
    const VF eight = hn::Set(df, 8.0f);
    for (size_t t = 0; t < sub; ++t, out += 32) {
#if HWY_TARGET == HWY_SCALAR
      for (size_t i = 0; i < 16; ++i) {
        nib[i] = blk[2 + 16 * t + i] & 15;
        nib[16 + i] = blk[2 + 16 * t + i] >> 4;
      }
#else
      const hn::Full128<uint8_t> d16;
      const auto v = hn::LoadU(d16, blk + 2 + 16 * t);
      const auto mask = hn::Set(d16, uint8_t{15});
      hn::Store(hn::And(v, mask), d16, nib);
      hn::Store(hn::And(hn::ShiftRight<4>(v), mask), d16, nib + 16);
#endif
      for (size_t i = 0; i < 32; i += N) {
        const VF f = hn::ConvertTo(
            df, hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<DF>(), hn::LoadU(du8, nib + i))));
        hn::StoreU(hn::Mul(hn::Sub(f, eight), s), df, out + i);
      }
    }
  }
}

// out[0, len) = row `row` of W, values [c0, c0 + len), as f32. For quantized W, c0 must be
// a multiple of the block and out must have room for len rounded up to whole blocks.
HWY_INLINE void WidenRowChunk(const WeightView& w, int64_t row, size_t c0, size_t len,
                              float* HWY_RESTRICT out) {
  if (!w.quantized()) {
    const size_t esize = w.dtype == DType::kF32 ? 4 : 2;
    const uint8_t* base = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(row) * w.cols * esize;
    WidenDenseChunk(w.dtype, base, c0, len, out);
    return;
  }
  const size_t bs = static_cast<size_t>(QuantBlockSize(w.quant));
  const size_t bb = QuantBlockBytes(w.quant);
  const uint8_t* base =
      static_cast<const uint8_t*>(w.data) + static_cast<size_t>(row) * QuantizedRowBytes(w.quant, w.cols);
  const uint8_t* blk = base + (c0 / bs) * bb;
  const size_t nblk = (len + bs - 1) / bs;
  if (w.quant == QuantType::kQ8_0) {
    DequantQ8Blocks(blk, nblk, out);
  } else {
    DequantQ4Blocks(blk, nblk, bs / 32, out);
  }
}

// ---------------------------------------------------------------------------------------
// Dot algorithm (small m).

template <int kDT>  // 0 f32, 1 bf16, 2 f16
HWY_INLINE VF LoadW(const void* row, size_t i) {
  if constexpr (kDT == 0) {
    return hn::LoadU(DF(), static_cast<const float*>(row) + i);
  } else if constexpr (kDT == 1) {
    return LoadWidenBf16(static_cast<const uint16_t*>(row) + i);
  } else {
    return LoadWidenF16(static_cast<const uint16_t*>(row) + i);
  }
}

// y[r][j + c] = dot(x[r][0, k), w[c][0, k)) (+ bias[j + c]) for the R x C tile. The
// accumulators are the pack acc (I = r * C + c; see GemmTileAcc for why not an array); the
// first kfull values (whole vectors) are read in place, the rest from xt / wt: zero-padded
// copies of the tails, or null when kfull == k.
template <int kDT, size_t R, size_t C, size_t... I, class... V>
HWY_INLINE void DotTileAcc(std::index_sequence<I...>, const float* const* HWY_RESTRICT x,
                           const void* const* HWY_RESTRICT w, size_t kfull, const float (*xt)[64],
                           const float (*wt)[64], const float* bias, float* const* y, size_t j, V... acc) {
  const DF d;
  const size_t N = hn::Lanes(d);
  for (size_t i = 0; i < kfull; i += N) {
    ((acc = hn::MulAdd(hn::LoadU(d, x[I / C] + i), LoadW<kDT>(w[I % C], i), acc)), ...);
  }
  if (xt != nullptr) ((acc = hn::MulAdd(hn::Load(d, xt[I / C]), hn::Load(d, wt[I % C]), acc)), ...);
  ((y[I / C][j + I % C] = ReduceSum(acc) + (bias ? bias[j + I % C] : 0.0f)), ...);
}

template <int kDT, size_t R, size_t C, size_t... I>
HWY_INLINE void DotTileFullImpl(std::index_sequence<I...> seq, const float* const* x, const void* const* w,
                                size_t k, DType dtype, const float* bias, float* const* y, size_t j) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t kfull = k - k % N;
  const float* xp[R];
  const void* wp[C];
  for (size_t r = 0; r < R; ++r) xp[r] = x[r];
  for (size_t c = 0; c < C; ++c) wp[c] = w[c];
  if (kfull == k) {
    DotTileAcc<kDT, R, C>(seq, xp, wp, kfull, nullptr, nullptr, bias, y, j,
                          (static_cast<void>(I), hn::Zero(d))...);
    return;
  }
  alignas(64) float xt[R][64], wt[C][64];  // the tails, zero-padded to one vector
  for (size_t r = 0; r < R; ++r) {
    std::fill(xt[r], xt[r] + N, 0.0f);
    std::copy(x[r] + kfull, x[r] + k, xt[r]);
  }
  for (size_t c = 0; c < C; ++c) {
    std::fill(wt[c], wt[c] + N, 0.0f);
    WidenDenseChunk(dtype, w[c], kfull, k - kfull, wt[c]);
  }
  DotTileAcc<kDT, R, C>(seq, xp, wp, kfull, xt, wt, bias, y, j, (static_cast<void>(I), hn::Zero(d))...);
}

template <int kDT, size_t R, size_t C>
HWY_INLINE void DotTileFull(const float* const* x, const void* const* w, size_t k, DType dtype,
                            const float* bias, float* const* y, size_t j) {
  DotTileFullImpl<kDT, R, C>(std::make_index_sequence<R * C>(), x, w, k, dtype, bias, y, j);
}

template <int kDT, size_t R>
void DotRows(const float* x, size_t i0, size_t k, const WeightView& w, const float* bias, float* y, size_t n,
             size_t j0, size_t j1) {
  constexpr size_t C = R <= 2 ? 4 : 3;
  const size_t esize = kDT == 0 ? 4 : 2;
  const uint8_t* wbase = static_cast<const uint8_t*>(w.data);
  const float* xr[R];
  float* yr[R];
  for (size_t r = 0; r < R; ++r) {
    xr[r] = x + (i0 + r) * k;
    yr[r] = y + (i0 + r) * n;
  }
  size_t j = j0;
  for (; j + C <= j1; j += C) {
    const void* wr[C];
    for (size_t c = 0; c < C; ++c) wr[c] = wbase + (j + c) * k * esize;
    if (i0 == 0 && j + 2 * C <= j1) {
      // The first row group streams W from memory: fetch the next tile's rows meanwhile.
      const uint8_t* next = wbase + (j + C) * k * esize;
      for (size_t off = 0; off < C * k * esize; off += 64) hwy::Prefetch(next + off);
    }
    DotTileFull<kDT, R, C>(xr, wr, k, w.dtype, bias, yr, j);
  }
  for (; j < j1; ++j) {
    const void* wr[1] = {wbase + j * k * esize};
    DotTileFull<kDT, R, 1>(xr, wr, k, w.dtype, bias, yr, j);
  }
}

template <int kDT>
void MatMulDotT(const float* x, size_t m, const WeightView& w, const float* bias, float* y,
                ThreadPool* pool) {
  const size_t n = static_cast<size_t>(w.rows), k = static_cast<size_t>(w.cols);
  // Column blocks of W small enough to stay in L2 while all row groups of x pass over them.
  const size_t chunk = (ChunkSize(n, pool, 16, 4) + 3) & ~size_t{3};
  const size_t tasks = (n + chunk - 1) / chunk;
  RunTasks(pool, tasks, [&](size_t t, size_t) {
    const size_t jt0 = t * chunk, jt1 = std::min(n, jt0 + chunk);
    const size_t esize = kDT == 0 ? 4 : 2;
    const size_t block = std::max<size_t>(4, (size_t{192} << 10) / (k * esize) & ~size_t{3});
    for (size_t j0 = jt0; j0 < jt1; j0 += block) {
      const size_t j1 = std::min(jt1, j0 + block);
      size_t i = 0;
      for (; i + 4 <= m; i += 4) DotRows<kDT, 4>(x, i, k, w, bias, y, n, j0, j1);
      switch (m - i) {
        case 3:
          DotRows<kDT, 3>(x, i, k, w, bias, y, n, j0, j1);
          break;
        case 2:
          DotRows<kDT, 2>(x, i, k, w, bias, y, n, j0, j1);
          break;
        case 1:
          DotRows<kDT, 1>(x, i, k, w, bias, y, n, j0, j1);
          break;
        default:
          break;
      }
    }
  });
}

void MatMulDot(const float* x, size_t m, const WeightView& w, const float* bias, float* y, ThreadPool* pool) {
  switch (w.dtype) {
    case DType::kBF16:
      MatMulDotT<1>(x, m, w, bias, y, pool);
      break;
    case DType::kF16:
      MatMulDotT<2>(x, m, w, bias, y, pool);
      break;
    default:
      MatMulDotT<0>(x, m, w, bias, y, pool);
      break;
  }
}

// ---------------------------------------------------------------------------------------
// Packed algorithm.

struct PackScratch {
  hwy::AlignedFreeUniquePtr<float[]> tmp;     // [NR][ldt] widened W rows of one panel
  hwy::AlignedFreeUniquePtr<float[]> panels;  // [ppt][KC][NR]
};

void MatMulPacked(const float* x, size_t m, const WeightView& w, const float* bias, float* y,
                  ThreadPool* pool) {
  const size_t n = static_cast<size_t>(w.rows), k = static_cast<size_t>(w.cols);
  const size_t NR = PanelWidth();
  const size_t num_panels = (n + NR - 1) / NR;
  const size_t threads = NumWorkers(pool);
  const size_t ppt = std::max<size_t>(1, std::min<size_t>(8, num_panels / (8 * threads)));
  const size_t tasks = (num_panels + ppt - 1) / ppt;
  const size_t ldt = kKC + 128;  // room for a quantized block overrun at the row end
  std::vector<PackScratch> scratch(std::min(threads, tasks));
  RunTasks(pool, tasks, [&](size_t t, size_t slot) {
    PackScratch& s = scratch[slot];
    if (!s.tmp) {
      s.tmp = hwy::AllocateAligned<float>(NR * ldt);
      s.panels = hwy::AllocateAligned<float>(ppt * kKC * NR);
    }
    const size_t p0 = t * ppt, np = std::min(ppt, num_panels - p0);
    alignas(64) float ctmp[kMR][64];
    alignas(64) float btmp[64];
    for (size_t k0 = 0; k0 < k; k0 += kKC) {
      const size_t kc = std::min(kKC, k - k0);
      // Pack the panels of this task for depth [k0, k0 + kc).
      for (size_t p = 0; p < np; ++p) {
        const size_t jp = (p0 + p) * NR, valid = std::min(NR, n - jp);
        for (size_t c = 0; c < valid; ++c)
          WidenRowChunk(w, static_cast<int64_t>(jp + c), k0, kc, s.tmp.get() + c * ldt);
        PackTransposed(s.tmp.get(), ldt, valid, NR, kc, s.panels.get() + p * kKC * NR, NR);
      }
      const bool first = k0 == 0;
      for (size_t i0 = 0; i0 < m; i0 += kMR) {
        const size_t mr = std::min(kMR, m - i0);
        const float* a[kMR];
        for (size_t r = 0; r < kMR; ++r) a[r] = x + (i0 + std::min(r, mr - 1)) * k + k0;
        for (size_t p = 0; p < np; ++p) {
          const size_t jp = (p0 + p) * NR, valid = std::min(NR, n - jp);
          const float* panel = s.panels.get() + p * kKC * NR;
          float* c[kMR];
          const float* bp = nullptr;
          if (valid == NR) {
            for (size_t r = 0; r < mr; ++r) c[r] = y + (i0 + r) * n + jp;
            if (bias) bp = bias + jp;
          } else {
            for (size_t r = 0; r < mr; ++r) {
              c[r] = ctmp[r];
              if (!first) std::copy(y + (i0 + r) * n + jp, y + (i0 + r) * n + jp + valid, ctmp[r]);
            }
            if (bias) {
              std::fill(btmp, btmp + NR, 0.0f);
              std::copy(bias + jp, bias + jp + valid, btmp);
              bp = btmp;
            }
          }
          if (first) {
            GemmTileRows<CMode::kStore>(mr, a, panel, NR, kc, c, bp, nullptr);
          } else {
            GemmTileRows<CMode::kAdd>(mr, a, panel, NR, kc, c, nullptr, nullptr);
          }
          if (valid != NR) {
            for (size_t r = 0; r < mr; ++r) std::copy(ctmp[r], ctmp[r] + valid, y + (i0 + r) * n + jp);
          }
        }
      }
    }
  });
}

}  // namespace

void MatMulImpl(const float* x, int64_t m, const WeightView& w, const float* bias, float* y, ThreadPool* pool,
                cpu::MatMulPath path) {
  if (m <= 0 || w.rows <= 0) return;
  {
    const size_t n = static_cast<size_t>(w.rows), k = static_cast<size_t>(w.cols);
    const size_t wbytes =
        w.quantized() ? n * QuantizedRowBytes(w.quant, w.cols) : n * k * (w.dtype == DType::kF32 ? 4 : 2);
    pool = PoolFor(pool, static_cast<size_t>(m) * n * k, wbytes);
  }
  if (path == cpu::MatMulPath::kAuto) {
    path = (!w.quantized() && m < kDotMaxRows) ? cpu::MatMulPath::kDot : cpu::MatMulPath::kPacked;
  }
  if (path == cpu::MatMulPath::kDot && !w.quantized()) {
    MatMulDot(x, static_cast<size_t>(m), w, bias, y, pool);
  } else {
    MatMulPacked(x, static_cast<size_t>(m), w, bias, y, pool);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {

HWY_EXPORT(MatMulImpl);

void MatMul(const float* x, int64_t m, const WeightView& w, const float* bias, float* y,
            const KernelContext& ctx, MatMulPath path) {
  if (path == MatMulPath::kQuantInt) {
    MatMulQuantInt(x, m, w, bias, y, ctx);
    return;
  }
  MINERU_DISPATCH(ctx.config(), MatMulImpl)(x, m, w, bias, y, ctx.pool(), path);
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
