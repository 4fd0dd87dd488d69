// kernels/cpu/matmul_panels256.cc — the integer MatMul for many rows on x86 CPUs without
// AVX-512 (the AVX2 target; other targets compile nothing here). The AVX3 target (AVX-512
// without VNNI) keeps the dequantized fp32 GEMM for many rows: measured at the ViT's shapes,
// these 256-bit integer panels without AVX-VNNI ran at ~0.8x of its 512-bit FMAs.
//
// Same idea as matmul_vnni.cc on 256-bit vectors: lanes are output columns, W is repacked per
// call, 8 rows (columns of y) at a time, into "quads" (4 consecutive k values of 8 columns = one
// 32-byte vector), and each broadcast 4-byte group of an activation row meets a quad. The float
// epilogue (convert, scale, FMA) then runs once per 32-value block for 8 columns, not once per
// block and column as in the row tiles of matmul_quant_tiles.cc.
//
// Two instruction sets, picked per call (UseDotExtension):
//   AVX2      vpmaddubsw + vpmaddwd with the sign trick: |w| (unsigned) times x with the sign
//             of w, pairs summed to int16 (<= 2 * 128 * 127: no saturation), then to int32.
//   AVX-VNNI  vpdpbusd on 256-bit lanes (Alder Lake and later, Zen 4/5): (w + 128) x x
//             summed four at a time, and -128 * sum(x) of the group added back per row.
// Both give exactly sum(x * w) per group: the same integers as every other integer path. Per
// group (32 values; 128 for Q4_G128): y += float(sum) * (scale_w * scale_x), groups in order.
// The Q4 formats are unpacked to signed int8 (nibble - 8) while packing.

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul_panels256.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstring>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/quant_blocks-inl.h"
#include "kernels/quant.h"
#include "kernels/quant_internal.h"

// The VEX-encoded vpdpbusd (AVX-VNNI): only functions that carry this attribute use it (the
// target's own features plus avxvnni: clang replaces, not extends, the pragma's features).
#if HWY_ARCH_X86 && defined(__GNUC__)
#define MINERU_ATTR_AVXVNNI __attribute__((target(HWY_TARGET_STR ",avxvnni")))
#else
#define MINERU_ATTR_AVXVNNI
#endif

HWY_BEFORE_NAMESPACE();
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2

namespace {

constexpr size_t kCols = 8;    // columns per panel (int32 lanes of a vector)
constexpr size_t kPanels = 2;  // panels per tile
constexpr size_t kRows = 4;    // activation rows per tile (16 vector registers)

// A panel's chunk of groups: ng quad blocks, then ng x 8 float scales:
//   quad[i] lane c = w[col c][4i .. 4i+3]  (signed int8; columns past n repeat the last one)
inline size_t QuadBytes(size_t group) { return group / 4 * 32; }
inline size_t PanelBytes(size_t group, size_t ng) { return ng * (QuadBytes(group) + kCols * sizeof(float)); }

// 8x8 transpose of 32-bit elements: in v[c] = dwords 0-7 of col c; out v[q] lane c = dword q of col c.
HWY_INLINE void Transpose8x8(__m256i v[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // cols 0-3 (h = 0) and 4-7 (h = 1)
    const int b = 4 * h;
    u[b + 0] = _mm256_unpacklo_epi64(t[b + 0], t[b + 2]);
    u[b + 1] = _mm256_unpackhi_epi64(t[b + 0], t[b + 2]);
    u[b + 2] = _mm256_unpacklo_epi64(t[b + 1], t[b + 3]);
    u[b + 3] = _mm256_unpackhi_epi64(t[b + 1], t[b + 3]);
  }
  // u[j] (j < 4): dword j of cols 0-3 in the low 128 bits, dword j + 4 in the high ones.
  for (int j = 0; j < 4; ++j) {
    v[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
    v[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
  }
}

// Packs groups [g0, g1) of the panel of columns [j0, j0 + nv) (1 <= nv <= 8).
template <QuantType T>
void PackPanelT(const uint8_t* wbase, size_t row_bytes, size_t j0, size_t nv, size_t group, size_t g0,
                size_t g1, uint8_t* quads, float* scales) {
  const uint8_t* rows[kCols];
  for (size_t c = 0; c < kCols; ++c) rows[c] = wbase + (j0 + std::min(c, nv - 1)) * row_bytes;
  for (size_t g = g0; g < g1; ++g) {
    uint8_t* out = quads + (g - g0) * QuadBytes(group);
    for (size_t s = 0; s < group / 32; ++s) {
      __m256i v[8];
#pragma GCC unroll 8
      for (size_t c = 0; c < 8; ++c) v[c] = LoadSub<T>(rows[c], g, s);
      Transpose8x8(v);
#pragma GCC unroll 8
      for (size_t q = 0; q < 8; ++q)
        _mm256_store_si256(reinterpret_cast<__m256i*>(out + (8 * s + q) * 32), v[q]);
    }
    for (size_t c = 0; c < kCols; ++c) {
      scales[(g - g0) * kCols + c] = _cvtsh_ss(internal::LoadU16(rows[c] + g * internal::BlockBytesOf(T)));
    }
  }
}

void PackPanel(QuantType t, const uint8_t* wbase, size_t row_bytes, size_t j0, size_t nv, size_t group,
               size_t g0, size_t g1, uint8_t* quads, float* scales) {
  if (t == QuantType::kQ8_0) {
    PackPanelT<QuantType::kQ8_0>(wbase, row_bytes, j0, nv, group, g0, g1, quads, scales);
  } else if (t == QuantType::kQ4_0) {
    PackPanelT<QuantType::kQ4_0>(wbase, row_bytes, j0, nv, group, g0, g1, quads, scales);
  } else {
    PackPanelT<QuantType::kQ4_G128>(wbase, row_bytes, j0, nv, group, g0, g1, quads, scales);
  }
}

// What a tile needs of one packed chunk and of its R activation rows.
struct TileArgs {
  const uint8_t* quads[kPanels];
  const float* scales[kPanels];
  size_t group, g0, g1;
  const int8_t* xs;   // row 0 of the tile, group 0; rows have stride kpad
  const float* d;     // scales of x: row stride nb
  const int32_t* xc;  // -128 * each group's sum of x (AVX-VNNI only): row stride nb
  size_t kpad, nb;
  float* acc;  // R rows x 16 partial sums, started by the first chunk (g0 == 0)
};

// acc[r][k] (+)= float(p[r][k]) * (scale_w * scale_x) for group g.
template <size_t R>
HWY_INLINE void Epilogue(const TileArgs& a, size_t g, const __m256i p[R][kPanels]) {
  const __m256 s0 = _mm256_load_ps(a.scales[0] + (g - a.g0) * kCols);
  const __m256 s1 = _mm256_load_ps(a.scales[1] + (g - a.g0) * kCols);
  for (size_t r = 0; r < R; ++r) {
    const __m256 dx = _mm256_set1_ps(a.d[r * a.nb + g]);
    float* acc = a.acc + r * kPanels * kCols;
    const bool first = a.g0 == 0 && g == 0;
    const __m256 a0 = first ? _mm256_setzero_ps() : _mm256_load_ps(acc);
    const __m256 a1 = first ? _mm256_setzero_ps() : _mm256_load_ps(acc + kCols);
    _mm256_store_ps(acc, _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[r][0]), _mm256_mul_ps(s0, dx), a0));
    _mm256_store_ps(acc + kCols, _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[r][1]), _mm256_mul_ps(s1, dx), a1));
  }
}

HWY_INLINE __m256i BroadcastX4(const int8_t* x) {
  int32_t x4;
  std::memcpy(&x4, x, 4);
  return _mm256_set1_epi32(x4);
}

// AVX2: sum(x * w) per lane through |w| x (x with the sign of w).
template <size_t R, size_t kNq>
void TileAvx2(const TileArgs& a) {
  const size_t nq = kNq != 0 ? kNq : a.group / 4, qbytes = QuadBytes(a.group);
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t g = a.g0; g < a.g1; ++g) {
    const uint8_t* pp0 = a.quads[0] + (g - a.g0) * qbytes;
    const uint8_t* pp1 = a.quads[1] + (g - a.g0) * qbytes;
    __m256i p[R][kPanels];
    for (size_t r = 0; r < R; ++r) p[r][0] = p[r][1] = _mm256_setzero_si256();
    const int8_t* xg = a.xs + g * a.group;
#pragma GCC unroll 8
    for (size_t q = 0; q < nq; ++q) {
      const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(pp0 + q * 32));
      const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(pp1 + q * 32));
      const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1);
#pragma GCC unroll 4
      for (size_t r = 0; r < R; ++r) {
        const __m256i xb = BroadcastX4(xg + r * a.kpad + 4 * q);
        p[r][0] = _mm256_add_epi32(
            p[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(xb, w0)), ones));
        p[r][1] = _mm256_add_epi32(
            p[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(a1, _mm256_sign_epi8(xb, w1)), ones));
      }
    }
    Epilogue<R>(a, g, p);
  }
}

// AVX-VNNI: (w + 128) x x with vpdpbusd, the 128 taken back out by xc.
template <size_t R, size_t kNq>
MINERU_ATTR_AVXVNNI void TileVnni(const TileArgs& a) {
  const size_t nq = kNq != 0 ? kNq : a.group / 4, qbytes = QuadBytes(a.group);
  const __m256i k128 = _mm256_set1_epi8(static_cast<char>(0x80));
  for (size_t g = a.g0; g < a.g1; ++g) {
    const uint8_t* pp0 = a.quads[0] + (g - a.g0) * qbytes;
    const uint8_t* pp1 = a.quads[1] + (g - a.g0) * qbytes;
    __m256i p[R][kPanels];
    for (size_t r = 0; r < R; ++r) p[r][0] = p[r][1] = _mm256_set1_epi32(a.xc[r * a.nb + g]);
    const int8_t* xg = a.xs + g * a.group;
#pragma GCC unroll 8
    for (size_t q = 0; q < nq; ++q) {
      const __m256i w0 =
          _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(pp0 + q * 32)), k128);
      const __m256i w1 =
          _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(pp1 + q * 32)), k128);
#pragma GCC unroll 4
      for (size_t r = 0; r < R; ++r) {
        const __m256i xb = BroadcastX4(xg + r * a.kpad + 4 * q);
        p[r][0] = _mm256_dpbusd_avx_epi32(p[r][0], w0, xb);
        p[r][1] = _mm256_dpbusd_avx_epi32(p[r][1], w1, xb);
      }
    }
    Epilogue<R>(a, g, p);
  }
}

// Groups of 32 (Q8_0, Q4_0) with their 8 quads known at compile time: each group becomes
// straight-line code (with a loop over quads, GCC's AVX-VNNI tiles ran the ViT's q8 products
// 1.45x slower in kernels_bench; the vpmaddubsw tiles ~1.04x).
template <size_t R>
void Tile(const TileArgs& a, bool vnni) {
  if (vnni) {
    (a.group == 32 ? TileVnni<R, 8> : TileVnni<R, 0>)(a);
  } else {
    (a.group == 32 ? TileAvx2<R, 8> : TileAvx2<R, 0>)(a);
  }
}

// Rows [0, rows) of one packed chunk, kRows at a time (a.xs/d/xc/acc at row 0).
void RunChunk(TileArgs a, size_t rows, bool vnni) {
  size_t i = 0;
  auto at = [&](size_t row) {
    TileArgs t = a;
    t.xs += row * a.kpad;
    t.d += row * a.nb;
    t.xc += row * a.nb;
    t.acc += row * kPanels * kCols;
    return t;
  };
  for (; i + kRows <= rows; i += kRows) Tile<kRows>(at(i), vnni);
  switch (rows - i) {
    case 3:
      Tile<3>(at(i), vnni);
      break;
    case 2:
      Tile<2>(at(i), vnni);
      break;
    case 1:
      Tile<1>(at(i), vnni);
      break;
    default:
      break;
  }
}

// y rows [i_begin, i_end), columns [j0, j0 + nv) from accbuf (+ bias).
void StoreTile(const float* accbuf, const float* bias, size_t i_begin, size_t i_end, size_t j0, size_t nv,
               size_t n, float* y) {
  const size_t tile_cols = kCols * kPanels;
  for (size_t i = i_begin; i < i_end; ++i) {
    const float* a = accbuf + (i - i_begin) * tile_cols;
    if (nv == tile_cols) {
      const __m256 b0 = bias ? _mm256_loadu_ps(bias + j0) : _mm256_setzero_ps();
      const __m256 b1 = bias ? _mm256_loadu_ps(bias + j0 + kCols) : _mm256_setzero_ps();
      _mm256_storeu_ps(y + i * n + j0, _mm256_add_ps(_mm256_load_ps(a), b0));
      _mm256_storeu_ps(y + i * n + j0 + kCols, _mm256_add_ps(_mm256_load_ps(a + kCols), b1));
    } else {
      for (size_t c = 0; c < nv; ++c) y[i * n + j0 + c] = a[c] + (bias ? bias[j0 + c] : 0.0f);
    }
  }
}

}  // namespace

// xs: the int8 activations (m rows, stride kpad); d: their scales and xc: -128 * the sum of
// each group of xs (both stride nb). W: n rows of row_bytes in format t. Packs W per call.
void MatMulPanels256(QuantType t, const int8_t* xs, const float* d, const int32_t* xc, size_t m, size_t kpad,
                     size_t nb, const uint8_t* wbase, size_t row_bytes, size_t n, const float* bias, float* y,
                     ThreadPool* pool, bool vnni) {
  const size_t group = kpad / nb, tile_cols = kCols * kPanels;
  const size_t ntiles = (n + tile_cols - 1) / tile_cols;
  // Row blocks keep a block's activations in L2 while every column tile passes over them;
  // group chunks keep the packed panels (<= ~16 KB) in L1 while the row block passes.
  const size_t row_block = std::min<size_t>(m, 192);
  const size_t nrb = (m + row_block - 1) / row_block;
  const size_t max_chunk = std::max<size_t>(1, (size_t{16} << 10) / (kPanels * PanelBytes(group, 1)));
  const size_t nchunks = (nb + max_chunk - 1) / max_chunk;
  const size_t chunk_groups = (nb + nchunks - 1) / nchunks;
  const size_t slots = std::max<size_t>(1, cpu::NumWorkers(pool));
  const size_t panel_bytes = PanelBytes(group, chunk_groups);
  const size_t slot_bytes = kPanels * panel_bytes + row_block * tile_cols * sizeof(float);
  auto scratch = hwy::AllocateAligned<uint8_t>(slots * slot_bytes);
  auto Tile = [&](size_t rb, size_t jt, size_t slot) {
    const size_t i_begin = rb * row_block, i_end = std::min(m, i_begin + row_block);
    const size_t j0 = jt * tile_cols, nv = std::min(tile_cols, n - j0);
    uint8_t* pack = scratch.get() + slot * slot_bytes;
    TileArgs a{};
    for (size_t k = 0; k < kPanels; ++k) {
      a.quads[k] = pack + k * panel_bytes;
      a.scales[k] = reinterpret_cast<const float*>(a.quads[k] + chunk_groups * QuadBytes(group));
    }
    a.group = group, a.kpad = kpad, a.nb = nb;
    a.xs = xs + i_begin * kpad, a.d = d + i_begin * nb, a.xc = xc + i_begin * nb;
    a.acc = reinterpret_cast<float*>(pack + kPanels * panel_bytes);
    for (size_t g0 = 0; g0 < nb; g0 += chunk_groups) {
      a.g0 = g0, a.g1 = std::min(nb, g0 + chunk_groups);
      for (size_t k = 0; k < kPanels; ++k) {
        const size_t pj = nv > k * kCols ? j0 + k * kCols : j0;  // an empty panel: any valid row, discarded
        const size_t pnv = nv > k * kCols ? std::min(kCols, nv - k * kCols) : 1;
        uint8_t* q = pack + k * panel_bytes;
        PackPanel(t, wbase, row_bytes, pj, pnv, group, a.g0, a.g1, q,
                  reinterpret_cast<float*>(q + chunk_groups * QuadBytes(group)));
      }
      RunChunk(a, i_end - i_begin, vnni);
    }
    StoreTile(a.acc, bias, i_begin, i_end, j0, nv, n, y);
  };
  const size_t run = cpu::ChunkSize(ntiles, pool, 1, 8);
  const size_t nruns = (ntiles + run - 1) / run;
  cpu::RunTasks(pool, nrb * nruns, [&](size_t task, size_t slot) {
    const size_t rb = task / nruns, jr = task % nruns;
    for (size_t jt = jr * run; jt < std::min(ntiles, (jr + 1) * run); ++jt) Tile(rb, jt, slot);
  });
}

#endif  // HWY_TARGET == HWY_AVX2

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();
