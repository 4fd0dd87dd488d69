// kernels/cpu/matmul_vnni.cc — the integer MatMul for several rows on AVX-512 VNNI (AVX3_DL
// target only; other targets compile nothing here).
//
// Why a second layout: the row-wise tiles of matmul_quant_tiles.cc put the 32 values of one block in
// the lanes of a vector, so every vpdpbusd (64 multiply-adds) is followed by a conversion, a
// scale product and an FMA for that block — the float epilogue, not the integer products,
// bounds them. Here lanes are output columns instead: W is repacked on the fly, 16 rows
// (columns of y) at a time, into "quads" (4 consecutive k values of 16 columns = one 64-byte
// vector), and each vpdpbusd multiplies one broadcast 4-byte group of an activation row with
// a quad. A 32-value block then costs 8 vpdpbusd per row and panel plus one epilogue (convert,
// scale, FMA) for all 16 columns: about 3x fewer instructions per multiply-add.
//
// Arithmetic (identical integers to the other paths): activations are int8 per block of the
// weight format (quant_internal.h); vpdpbusd needs one unsigned operand, so W is stored as
// w + 128 (an xor of the sign bit) and each row's sum gets -128 * sum(x) of the group (one
// integer per row and group, computed with the activations), leaving exactly sum(x * w). The
// Q4 formats are unpacked to signed int8 (nibble - 8) before the +128. Per group (32 values;
// 128 for Q4_G128): y += float(sum) * (scale_w * scale_x), groups in order.
//
// Panels packed once at load (PackIntegerPanelsImpl) keep the Q4 formats' nibbles: a vector holds
// two quads, the unsigned nibbles u of quad i in the low halves and of quad i + 4 in the high
// halves of its bytes (per 32-value sub-block; that is a Q4 block's byte order already, so
// packing only interleaves 4-byte groups across columns). The kernel masks them apart and the
// group's term becomes -8 * sum(x) = xc / 16: sum(u * x) - 8 sum(x) = sum((u - 8) * x), the same
// integers as the int8 panels, hence the same bits, in half their bytes (0.5625 per weight, as
// the rows: the rows' pages can be given back).

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul_vnni.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstring>

#include <unistd.h>

#include "base/bf16.h"
#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/quant_blocks-inl.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
// Highway 1.0.3's AVX3_DL target string lacks "avx512vnni" (its CPU check requires it).
#pragma GCC target("avx512vnni")
#endif
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3_DL

namespace {

constexpr size_t kCols = 16;  // columns per panel (int32 lanes of a vector)
// A tile is kRows x kPanels int32 sums (16 of the 32 vector registers) over one group: each
// broadcast 4-byte group of x feeds kPanels vpdpbusd and each quad kRows, so loads stay at half a
// load per vpdpbusd, and the per-group epilogue's scale loads are shared by four rows (the 16
// float accumulators it adds into are touched once per group; the compiler may keep them on the
// stack). 64 columns divide
// the vision encoder's widths (1280, 3840, 5120). (6 x 2 ran the ViT's products 9% slower.)
constexpr size_t kPanels = 4;  // panels per tile
constexpr size_t kRows = 4;    // activation rows per tile
constexpr size_t kTileCols = kCols * kPanels;

// A panel (16 columns of y = 16 rows of W) over ng groups: ng quad blocks, then ng x 16 f16
// scales (padded to 64 bytes), so the weight stream is 1.0625 bytes per weight like Q8_0 itself:
//   quad[i] lane c = w[col c][4i .. 4i+3] + 128  (as bytes; columns past n repeat the last one)
//   scale[c] = f16 scale of col c's block/group
inline size_t QuadBytes(size_t group) { return group / 4 * 64; }
// Bytes of one group's values in a panel: int8 quads, or nibble pairs of quads (half as many).
inline size_t GroupBytes(size_t group, bool nibbles) { return nibbles ? group / 8 * 64 : QuadBytes(group); }
inline size_t PanelBytes(size_t group, size_t ng, bool nibbles = false) {
  return ng * GroupBytes(group, nibbles) + (ng * 32 + 63) / 64 * 64;
}
// Prepacked panels of the Q4 formats keep nibbles; per-call ones and Q8_0 are int8.
inline bool PrepackedNibbles(QuantType t) { return t != QuantType::kQ8_0; }

// 8x8 transpose of 32-bit elements within each 256-bit half of eight vectors:
// in: v[i] = [col i: 8 dwords | col i+8: 8 dwords]  ->  out: v[q] lane c = dword q of col c.
HWY_INLINE void Transpose8x8Halves(__m512i v[8]) {
  __m512i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 0-3 (h = 0) and 4-7 (h = 1)
    const int b = 4 * h;
    u[b + 0] = _mm512_unpacklo_epi64(t[b + 0], t[b + 2]);
    u[b + 1] = _mm512_unpackhi_epi64(t[b + 0], t[b + 2]);
    u[b + 2] = _mm512_unpacklo_epi64(t[b + 1], t[b + 3]);
    u[b + 3] = _mm512_unpackhi_epi64(t[b + 1], t[b + 3]);
  }
  // u[j] (j < 4) holds dword j of cols 0-3 in 128-bit lane 0 (8-11 in lane 2) and dword j + 4
  // in lane 1 (lane 3); u[j + 4] the same for cols 4-7 / 12-15.
  const __m512i lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
  const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  for (int j = 0; j < 4; ++j) {
    v[j] = _mm512_permutex2var_epi64(u[j], lo, u[j + 4]);
    v[j + 4] = _mm512_permutex2var_epi64(u[j], hi, u[j + 4]);
  }
}

// Packs groups [g0, g1) of the panel of columns [j0, j0 + nv) (1 <= nv <= 16): quad blocks
// to quads, scales to scales (both for group g0 first).
// Lanes past nv repeat the last valid row (branch-free loads); their outputs are never written.
// ahead: bytes from a row to the same row of the next tile (0: none); the next tile's rows
// are prefetched group by group while this one is packed (a memory stream that is one tile
// ahead and never bursts).
template <QuantType T>
void PackPanelT(const uint8_t* wbase, size_t row_bytes, size_t j0, size_t nv, size_t group, size_t g0,
                size_t g1, size_t ahead, uint8_t* quads, uint8_t* scales) {
  const size_t subs = group / 32;
  const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
  const uint8_t* rows[kCols];
  for (size_t c = 0; c < kCols; ++c) rows[c] = wbase + (j0 + std::min(c, nv - 1)) * row_bytes;
  for (size_t g = g0; g < g1; ++g) {
    uint8_t* out = quads + (g - g0) * QuadBytes(group);
    if (ahead != 0) {
#pragma GCC unroll 16
      for (size_t c = 0; c < kCols; ++c) hwy::Prefetch(rows[c] + ahead + g * internal::BlockBytesOf(T));
    }
    for (size_t s = 0; s < subs; ++s) {
      __m512i v[8];
#pragma GCC unroll 8
      for (size_t i = 0; i < 8; ++i) {
        v[i] = _mm512_inserti64x4(_mm512_castsi256_si512(LoadSub<T>(rows[i], g, s)),
                                  LoadSub<T>(rows[i + 8], g, s), 1);
      }
      Transpose8x8Halves(v);
#pragma GCC unroll 8
      for (size_t q = 0; q < 8; ++q) _mm512_store_si512(out + (8 * s + q) * 64, _mm512_xor_si512(v[q], k128));
    }
    // The 16 f16 scales, one 16-bit load per column.
    uint16_t* h = reinterpret_cast<uint16_t*>(scales + (g - g0) * 32);
#pragma GCC unroll 16
    for (size_t c = 0; c < kCols; ++c) h[c] = internal::LoadU16(rows[c] + g * internal::BlockBytesOf(T));
  }
}

void PackPanel(QuantType t, const uint8_t* wbase, size_t row_bytes, size_t j0, size_t nv, size_t group,
               size_t g0, size_t g1, size_t ahead, uint8_t* quads, uint8_t* scales) {
  if (t == QuantType::kQ8_0) {
    PackPanelT<QuantType::kQ8_0>(wbase, row_bytes, j0, nv, group, g0, g1, ahead, quads, scales);
  } else if (t == QuantType::kQ4_0) {
    PackPanelT<QuantType::kQ4_0>(wbase, row_bytes, j0, nv, group, g0, g1, ahead, quads, scales);
  } else {
    PackPanelT<QuantType::kQ4_G128>(wbase, row_bytes, j0, nv, group, g0, g1, ahead, quads, scales);
  }
}

// The nibble panel of columns [j0, j0 + nv) of a Q4 matrix, all ng groups, for packing once at
// load: vector (g, s, i) lane c = the 4 bytes qs[16 s + 4 i ..] of column c's group g (nibbles of
// quads 8 s + i and 8 s + 4 + i), then the f16 scales as PackPanelT writes them.
void PackNibblePanel(QuantType t, const uint8_t* wbase, size_t row_bytes, size_t j0, size_t nv, size_t group,
                     size_t ng, uint8_t* out) {
  const size_t subs = group / 32, block_bytes = internal::BlockBytesOf(t);
  uint8_t* scales = out + ng * GroupBytes(group, true);
  for (size_t c = 0; c < kCols; ++c) {
    const uint8_t* row = wbase + (j0 + std::min(c, nv - 1)) * row_bytes;
    for (size_t g = 0; g < ng; ++g) {
      const uint8_t* blk = row + g * block_bytes;
      uint8_t* dst = out + g * GroupBytes(group, true) + 4 * c;
      for (size_t v = 0; v < 4 * subs; ++v) std::memcpy(dst + v * 64, blk + 2 + 4 * v, 4);
      std::memcpy(scales + g * 32 + 2 * c, blk, 2);
    }
  }
}

// acc[r][p] (+)= rows r0..r0+R of xs (signed int8) times the packed panels, groups [g0, g1);
// quads[k] / scales[k] point at group g0 of panel k. xs rows have stride kpad; d (scales) and
// xc (-128 * the group's sum of x) rows have stride nb.
// ahead: prefetch distance in groups along each panel's streams (0: none; prepacked panels
// come from DRAM in a decode step, packed-per-call ones are already in L1).
// kNq: the group's quads where known at compile time (8: groups of 32, Q8_0 and Q4_0), 0 = group
// / 4. A known count unrolls a group into straight-line code: with a loop over quads GCC zeroed
// the sums through the stack each group (the ViT's q8 products ran 5-10% slower in kernels_bench,
// a q4 prefill of 1,369 tokens ~12% slower).
template <size_t R, bool kNibbles, size_t kNq>
HWY_INLINE void TileGroups(const uint8_t* const* quads, const uint8_t* const* scales, size_t group, size_t g0,
                           size_t g1, const int8_t* xs, const float* d, const int32_t* xc, size_t kpad,
                           size_t nb, size_t ahead, __m512 acc[R][kPanels]) {
  const size_t nq = kNq != 0 ? kNq : group / 4, gbytes = GroupBytes(group, kNibbles);
  const __m512i low4 = _mm512_set1_epi8(15);
  for (size_t g = g0; g < g1; ++g) {
    const uint8_t* pp[kPanels];
    __m512i p[R][kPanels];
#pragma GCC unroll 4
    for (size_t k = 0; k < kPanels; ++k) {
      pp[k] = quads[k] + (g - g0) * gbytes;
      if (ahead != 0) {
        for (size_t off = 0; off < gbytes; off += 64) hwy::Prefetch(pp[k] + ahead * gbytes + off);
        hwy::Prefetch(scales[k] + (g - g0 + ahead) * 32);
      }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (size_t k = 0; k < kPanels; ++k) p[r][k] = _mm512_setzero_si512();
    }
    const int8_t* xg = xs + g * group;
    // One step: the quads w[k] of the panels times the 4-byte group of x at offset xo.
    auto Step = [&](const __m512i w[kPanels], size_t xo) HWY_ATTR {
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        int32_t x4;
        std::memcpy(&x4, xg + r * kpad + xo, 4);
        const __m512i xb = _mm512_set1_epi32(x4);
#pragma GCC unroll 4
        for (size_t k = 0; k < kPanels; ++k) p[r][k] = _mm512_dpbusd_epi32(p[r][k], w[k], xb);
      }
    };
    if constexpr (kNibbles) {
#pragma GCC unroll 4
      for (size_t v = 0; v < nq / 2; ++v) {  // vector v: quads 8s + i (low) and 8s + 4 + i (high)
        const size_t s = v / 4, i = v % 4;
        __m512i b[kPanels], w[kPanels];
#pragma GCC unroll 4
        for (size_t k = 0; k < kPanels; ++k) {
          b[k] = _mm512_load_si512(pp[k] + v * 64);
          w[k] = _mm512_and_si512(b[k], low4);
        }
        Step(w, 32 * s + 4 * i);
#pragma GCC unroll 4
        for (size_t k = 0; k < kPanels; ++k) w[k] = _mm512_and_si512(_mm512_srli_epi16(b[k], 4), low4);
        Step(w, 32 * s + 16 + 4 * i);
      }
    } else {
#pragma GCC unroll 8
      for (size_t q = 0; q < nq; ++q) {
        __m512i w[kPanels];
#pragma GCC unroll 4
        for (size_t k = 0; k < kPanels; ++k) w[k] = _mm512_load_si512(pp[k] + q * 64);
        Step(w, 4 * q);
      }
    }
    __m512 sw[kPanels];
#pragma GCC unroll 4
    for (size_t k = 0; k < kPanels; ++k)
      sw[k] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(scales[k] + (g - g0) * 32)));
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      const __m512 dx = _mm512_set1_ps(d[r * nb + g]);
      // Nibbles are offset by 8, not 128: the group's term is -8 sum(x) = xc / 16 (exact).
      const __m512i c = _mm512_set1_epi32(kNibbles ? xc[r * nb + g] / 16 : xc[r * nb + g]);
#pragma GCC unroll 4
      for (size_t k = 0; k < kPanels; ++k) {
        acc[r][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(p[r][k], c)),
                                    _mm512_mul_ps(sw[k], dx), acc[r][k]);
      }
    }
  }
}

// Rows [i0, i0 + R) over one packed chunk; partial sums live in accbuf (rows x kTileCols floats),
// which the first chunk (g0 == 0) starts instead of reading.
template <size_t R, bool kNibbles, size_t kNq>
void RunRows(const uint8_t* const* quads, const uint8_t* const* scales, size_t group, size_t g0, size_t g1,
             const int8_t* xs, const float* d, const int32_t* xc, size_t kpad, size_t nb, size_t i0,
             size_t ahead, float* accbuf) {
  __m512 acc[R][kPanels];
  for (size_t r = 0; r < R; ++r) {
    for (size_t k = 0; k < kPanels; ++k) {
      acc[r][k] = g0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(accbuf + (i0 + r) * kTileCols + kCols * k);
    }
  }
  TileGroups<R, kNibbles, kNq>(quads, scales, group, g0, g1, xs + i0 * kpad, d + i0 * nb, xc + i0 * nb, kpad,
                               nb, ahead, acc);
  for (size_t r = 0; r < R; ++r) {
    for (size_t k = 0; k < kPanels; ++k)
      _mm512_store_ps(accbuf + (i0 + r) * kTileCols + kCols * k, acc[r][k]);
  }
}

// Rows [0, rows) of a row block over one chunk of groups: tiles of kRows rows, then the rest.
// ahead0: prefetch distance (groups) for the first row tile, which streams the panels in.
template <bool kNibbles, size_t kNq>
void RunChunk(const uint8_t* const* quads, const uint8_t* const* scales, size_t group, size_t g0, size_t g1,
              const int8_t* xb, const float* db, const int32_t* cb, size_t kpad, size_t nb, size_t rows,
              size_t ahead0, float* accbuf) {
  size_t i = 0;
  for (; i + kRows <= rows; i += kRows) {
    RunRows<kRows, kNibbles, kNq>(quads, scales, group, g0, g1, xb, db, cb, kpad, nb, i, i == 0 ? ahead0 : 0,
                                  accbuf);
  }
  // The last rows - i < kRows rows: one tile of that height.
  static_assert(kRows == 4, "kTail lists one tile height per remainder");
  using Tail = void (*)(const uint8_t* const*, const uint8_t* const*, size_t, size_t, size_t, const int8_t*,
                        const float*, const int32_t*, size_t, size_t, size_t, size_t, float*);
  static constexpr Tail kTail[kRows] = {nullptr, RunRows<1, kNibbles, kNq>, RunRows<2, kNibbles, kNq>,
                                        RunRows<3, kNibbles, kNq>};
  if (i < rows)
    kTail[rows - i](quads, scales, group, g0, g1, xb, db, cb, kpad, nb, i, i == 0 ? ahead0 : 0, accbuf);
}

// The L1 data cache's bytes (sysconf, once), 32 KB where it is not reported or implausible.
size_t L1DataBytes() {
  static const size_t bytes = [] {
    const long v = ::sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return v >= (16 << 10) && v <= (256 << 10) ? static_cast<size_t>(v) : size_t{32} << 10;
  }();
  return bytes;
}

// y[i][j0, j0 + nv) = accbuf row i - i_begin + bias, rows [i_begin, i_end) (accbuf rows hold
// kTileCols floats; a full tile stores whole vectors).
void StoreTile(const float* accbuf, size_t i_begin, size_t i_end, size_t j0, size_t nv, size_t n,
               const float* bias, float* y) {
  if (nv == kTileCols) {
    __m512 b[kPanels];
    for (size_t k = 0; k < kPanels; ++k)
      b[k] = bias ? _mm512_loadu_ps(bias + j0 + k * kCols) : _mm512_setzero_ps();
    for (size_t i = i_begin; i < i_end; ++i) {
      const float* a = accbuf + (i - i_begin) * kTileCols;
      for (size_t k = 0; k < kPanels; ++k)
        _mm512_storeu_ps(y + i * n + j0 + k * kCols, _mm512_add_ps(_mm512_load_ps(a + k * kCols), b[k]));
    }
    return;
  }
  for (size_t i = i_begin; i < i_end; ++i) {
    const float* a = accbuf + (i - i_begin) * kTileCols;
    for (size_t c = 0; c < nv; ++c) y[i * n + j0 + c] = a[c] + (bias ? bias[j0 + c] : 0.0f);
  }
}

}  // namespace

// xs: the int8 activations; xc: -128 * the sum of each row's group of xs.
// prepacked: the whole matrix as PackIntegerPanelsImpl writes it, or null (pack per call).
void MatMulVnniPanels(QuantType t, const int8_t* xs, const float* d, const int32_t* xc, size_t m, size_t kpad,
                      size_t nb, const uint8_t* wbase, size_t row_bytes, size_t n, const uint8_t* prepacked,
                      const float* bias, float* y, ThreadPool* pool) {
  const size_t group = kpad / nb;
  const size_t npanels = (n + kCols - 1) / kCols;

  const size_t tile_cols = kCols * kPanels;
  const size_t ntiles = (n + tile_cols - 1) / tile_cols;
  // Row blocks keep a block's activations in L2 while every column tile passes over them;
  // group chunks keep the tile's packed panels (the L1 data cache's size: 48 KB = 22 groups of
  // Q8_0 on the development machine, so the ViT's K = 1,280 takes two chunks) close while the row
  // block passes. (32 KB chunks there ran the ViT's products ~5% slower in paired runs; 96 KB,
  // one chunk, ran 128-token prefill 20% slower.)
  const size_t row_block = std::min<size_t>(m, 192);
  const size_t nrb = (m + row_block - 1) / row_block;
  // (Chunks of equal size: a short last chunk would pay the per-chunk accumulator loads and
  // stores for a few groups.)
  const size_t max_chunk = std::max<size_t>(1, (L1DataBytes() / kPanels) / (QuadBytes(group) + 32));
  const size_t nchunks = (nb + max_chunk - 1) / max_chunk;
  const size_t chunk_groups = (nb + nchunks - 1) / nchunks;
  const size_t slots = std::max<size_t>(1, cpu::NumWorkers(pool));
  const size_t chunk_panel_bytes = PanelBytes(group, chunk_groups);  // one panel's chunk, packed per call
  const size_t pack_bytes = kPanels * chunk_panel_bytes;
  const bool nibbles = prepacked != nullptr && PrepackedNibbles(t);
  const size_t full_panel_bytes = PanelBytes(group, nb, nibbles);  // one prepacked panel
  auto scratch = hwy::AllocateAligned<uint8_t>(slots * (pack_bytes + row_block * tile_cols * sizeof(float)));
  auto Tile = [&](size_t rb, size_t jt, size_t slot, bool prefetch_next) {
    const size_t i_begin = rb * row_block, i_end = std::min(m, i_begin + row_block);
    const size_t j0 = jt * tile_cols, nv = std::min(tile_cols, n - j0);
    uint8_t* pack = scratch.get() + slot * (pack_bytes + row_block * tile_cols * sizeof(float));
    float* accbuf = reinterpret_cast<float*>(pack + pack_bytes);
    const uint8_t* quads[kPanels];
    const uint8_t* scales[kPanels];
    for (size_t k = 0; k < kPanels; ++k) {
      quads[k] = pack + k * chunk_panel_bytes;
      scales[k] = quads[k] + chunk_groups * QuadBytes(group);
    }
    for (size_t g0 = 0; g0 < nb; g0 += chunk_groups) {
      const size_t g1 = std::min(nb, g0 + chunk_groups);
      if (prepacked) {
        for (size_t k = 0; k < kPanels; ++k) {  // a missing last panel: any valid one, discarded
          const uint8_t* base = prepacked + std::min(jt * kPanels + k, npanels - 1) * full_panel_bytes;
          quads[k] = base + g0 * GroupBytes(group, nibbles);
          scales[k] = base + nb * GroupBytes(group, nibbles) + g0 * 32;
        }
      }
      for (size_t k = 0; k < kPanels && !prepacked; ++k) {
        size_t pj = j0 + k * kCols;
        size_t pnv = nv > k * kCols ? std::min(kCols, nv - k * kCols) : 0;
        if (pnv == 0) pj = j0, pnv = 1;  // an empty panel past n: any valid row, discarded
        // Prefetch the next tile of this task's run (complete next tiles only).
        const size_t ahead = prefetch_next && j0 + 2 * tile_cols <= n ? tile_cols * row_bytes : 0;
        uint8_t* q = pack + k * chunk_panel_bytes;
        PackPanel(t, wbase, row_bytes, pj, pnv, group, g0, g1, ahead, q, q + chunk_groups * QuadBytes(group));
      }
      // The first row tile of a chunk streams prepacked panels from memory: prefetch 8 groups ahead.
      const size_t ahead0 = prepacked ? 8 : 0;
      const size_t rows = i_end - i_begin;
      const auto run_chunk = group == 32 ? (nibbles ? RunChunk<true, 8> : RunChunk<false, 8>)
                                         : (nibbles ? RunChunk<true, 0> : RunChunk<false, 0>);
      run_chunk(quads, scales, group, g0, g1, xs + i_begin * kpad, d + i_begin * nb, xc + i_begin * nb, kpad,
                nb, rows, ahead0, accbuf);
    }
    StoreTile(accbuf, i_begin, i_end, j0, nv, n, bias, y);
  };
  // Each task is a run of consecutive column tiles of one row block, so that the next tile's
  // W rows can be prefetched while this one is packed (32 concurrent row streams defeat the
  // hardware prefetchers when W comes from DRAM).
  // Prepacked panels need no packing ahead: finer tasks even out the workers' finishing times.
  const size_t run = cpu::ChunkSize(ntiles, pool, 1, prepacked ? 16 : 4);
  const size_t nruns = (ntiles + run - 1) / run;
  cpu::RunTasks(pool, nrb * nruns, [&](size_t task, size_t slot) {
    const size_t rb = task / nruns, jr = task % nruns;
    const size_t jt_end = std::min(ntiles, (jr + 1) * run);
    for (size_t jt = jr * run; jt < jt_end; ++jt) Tile(rb, jt, slot, jt + 1 < jt_end);
  });
}

#endif  // HWY_TARGET == HWY_AVX3_DL

bool PrepackedPanelsImpl() { return HWY_TARGET == HWY_AVX3_DL; }

// Bytes of the packed panels of quantized w (0 where the target has no panel kernel).
size_t IntegerPanelsBytesImpl(const WeightView& w) {
#if HWY_TARGET == HWY_AVX3_DL
  if (!w.quantized() || w.rows <= 0) return 0;
  const size_t group = static_cast<size_t>(QuantBlockSize(w.quant));
  const size_t nb = (static_cast<size_t>(w.cols) + group - 1) / group;
  return (static_cast<size_t>(w.rows) + kCols - 1) / kCols * PanelBytes(group, nb, PrepackedNibbles(w.quant));
#else
  (void)w;
  return 0;
#endif
}

// Writes the panels (16 rows of W each, all groups) to out (64-byte aligned,
// IntegerPanelsBytesImpl(w) bytes).
void PackIntegerPanelsImpl(const WeightView& w, uint8_t* out, ThreadPool* pool) {
#if HWY_TARGET == HWY_AVX3_DL
  const size_t bytes = IntegerPanelsBytesImpl(w);
  if (bytes == 0) return;
  const size_t group = static_cast<size_t>(QuantBlockSize(w.quant));
  const size_t nb = (static_cast<size_t>(w.cols) + group - 1) / group;
  const size_t n = static_cast<size_t>(w.rows), npanels = (n + kCols - 1) / kCols;
  const size_t row_bytes = QuantizedRowBytes(w.quant, w.cols);
  const uint8_t* wbase = static_cast<const uint8_t*>(w.data);
  const bool nibbles = PrepackedNibbles(w.quant);
  const size_t panel_bytes = PanelBytes(group, nb, nibbles);
  cpu::RunTasks(pool, npanels, [&](size_t p, size_t) {
    const size_t nv = std::min(kCols, n - p * kCols);
    uint8_t* dst = out + p * panel_bytes;
    if (nibbles) {
      PackNibblePanel(w.quant, wbase, row_bytes, p * kCols, nv, group, nb, dst);
    } else {
      PackPanel(w.quant, wbase, row_bytes, p * kCols, nv, group, 0, nb, 0, dst, dst + nb * QuadBytes(group));
    }
  });
#else
  (void)w, (void)out, (void)pool;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mineru {
namespace kernels {
namespace cpu {

HWY_EXPORT(PrepackedPanelsImpl);
HWY_EXPORT(IntegerPanelsBytesImpl);
HWY_EXPORT(PackIntegerPanelsImpl);

bool PrepackedPanels(const KernelConfig& config) { return MINERU_DISPATCH(config, PrepackedPanelsImpl)(); }
size_t IntegerPanelsBytes(const WeightView& w, const KernelConfig& config) {
  return MINERU_DISPATCH(config, IntegerPanelsBytesImpl)(w);
}
void PackIntegerPanels(const WeightView& w, uint8_t* out, const KernelContext& ctx) {
  MINERU_DISPATCH(ctx.config(), PackIntegerPanelsImpl)(w, out, ctx.pool());
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
#endif  // HWY_ONCE
