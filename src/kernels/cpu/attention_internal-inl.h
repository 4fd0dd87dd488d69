// kernels/cpu/attention_internal-inl.h — what the pieces of the CPU attention share, per target:
// the block and tile sizes, the kernel's geometry, the per-worker scratch and row state, the int8
// panels' lane layout and row sources (AVX3_DL), and the functions one piece calls in another:
//   attention.cc            the entry point: geometry, tasks, key splits and their merge
//   attention_block.cc      the fp32 block kernel: K/V panels, online softmax, P V, scratch
//   attention_int8.cc       the int8 tiles: Q Kᵀ, softmax to u8, P V (AVX3_DL)
//   attention_int8_pack.cc  the int8 quantizers and panels (AVX3_DL)
//   attention_packed.cc     the packed form (PackKvInt8, AttentionPacked)
// Internal to those files: not an interface of the kernels layer (kernels.h, cpu_kernels.h are).
// Re-included once per target by foreach_target (Highway's per-target guard pattern, as
// simd-inl.h).

#if defined(MINERU_KERNELS_CPU_ATTENTION_INTERNAL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINERU_KERNELS_CPU_ATTENTION_INTERNAL_INL_H_
#undef MINERU_KERNELS_CPU_ATTENTION_INTERNAL_INL_H_
#else
#define MINERU_KERNELS_CPU_ATTENTION_INTERNAL_INL_H_
#endif

// <immintrin.h> first, with GCC 12's false positive in it silenced (see the header).
#include "kernels/cpu/x86_intrinsics.h"  // IWYU pragma: keep

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "kernels/cpu/scratch.h"
#include "kernels/kernels.h"
#include "kernels/reference.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
// Highway 1.0.3's AVX3_DL target string lacks "avx512vnni" (its CPU check requires it).
#pragma GCC target("avx512vnni")
#endif
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {

constexpr size_t kBQ = cpu::kAttentionRowBlock;  // query rows per block (multiple of kMR)
// Keys per tile (Geometry::tile, also the row stride of the score tile S): kBK for int8 Q Kᵀ or
// P V, whose per-row softmax bookkeeping (two reductions, a scalar exp and the u8 step) is then
// shared by twice the keys (attention 8% faster at 5,476 patches); kBK / 2 for fp32 attention,
// whose score tile then stays within L1 (and whose results stay bit for bit those of before).
constexpr size_t kBK = 256;  // multiple of every panel width, as is kBK / 2
static_assert(kBK == ref::kAttentionPvTile, "the u8 probabilities' tile is the scalar twin's");
// The int8 P V's int32 sums (at most kBK u8 probabilities times |v8| <= 127) convert to float exactly.
static_assert(kBK * 255 * 127 < (size_t{1} << 24), "P V sums must stay exact in fp32");
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Geometry {
  size_t n_q, n_kv, hd, hdp, group, num_kv_heads, kv_offset;
  size_t pv_nv;  // > 0: P·V in one tile of pv_nv vectors per row (hdp = pv_nv * N), AVX-512 only
  size_t q_stride, kv_stride, out_stride;
  const AttentionShape* shape;  // row addressing of K/V (contiguous or paged)
  bool causal;
  float scale;
  size_t rows;   // query rows per KV head = n_q * group
  bool int8_qk;  // Q Kᵀ in int8 (see attention_int8.cc)
  bool int8_pv;  // P V in int8 (see attention_int8.cc)
  bool kv16;     // K and V are fp16 blocks (AttentionShape::k_blocks16), widened as they are packed
  size_t tile;   // keys per tile and the row stride of S: kBK with int8 Q Kᵀ or P V, else kBK / 2
};

// One worker's block scratch (kernels/cpu/scratch.h).
using Scratch = cpu::AttentionScratch;

// Per-row state of one block.
struct RowRefs {
  const float* q[kBQ];
  size_t limit[kBQ];  // keys [k_lo, k_lo + limit) are visible (relative to the packed range)
};

// Keys of the tile [kt0, kt0 + bk) that row r of the block sees (a prefix of the tile).
inline size_t VisibleKeys(const RowRefs& rows, size_t r, size_t nk, size_t kt0, size_t bk) {
  const size_t lim = std::min(rows.limit[r], nk);
  return lim > kt0 ? std::min(bk, lim - kt0) : 0;
}

#if HWY_TARGET == HWY_AVX3_DL
constexpr size_t kKeyLanes = 16;  // keys per int8 panel (int32 lanes)
inline size_t Hd4(const Geometry& g) { return (g.hd + 3) / 4 * 4; }

inline __mmask16 Live(size_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// Row sources of the quantizers: Load(j, c) = dims [16c, 16c + 16) of key / value row j of one
// KV head as fp32 (zero past hd). F32Rows reads them as AttentionShape addresses them; F16Rows
// widens fp16 rows (exactly, as F16ToF32 does), so both quantize the same values alike.
struct F32Rows {
  const AttentionShape& s;
  const float* kv;
  bool values;
  size_t kvh, hd;
  HWY_INLINE __m512 Load(size_t j, size_t c) const {
    const auto jj = static_cast<int64_t>(j);
    const float* row = (values ? ValueRow(s, kv, jj) : KeyRow(s, kv, jj)) + kvh * hd;
    return _mm512_maskz_loadu_ps(Live(hd - 16 * c), row + 16 * c);
  }
};
struct F16Rows {
  const uint16_t* base;  // row 0 of the head
  size_t row_stride, hd;
  HWY_INLINE __m512 Load(size_t j, size_t c) const {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(Live(hd - 16 * c), base + j * row_stride + 16 * c));
  }
};

constexpr size_t kDimLanes = 16;  // dims per int8 value panel vector
#endif                            // HWY_AVX3_DL

// ---------------------------------------------------------------------------------------
// Defined in attention_block.cc.

// K^T panels and V rows of keys [k_lo, k_lo + nk) of KV head kvh into s.kt / s.vp (the fp32
// panels: nothing where int8 Q Kᵀ / P V replace them).
void PackKeys(const Geometry& g, const float* k, const float* v, size_t kvh, size_t k_lo, size_t nk,
              Scratch& s);
// Runs one block of nr rows over the packed keys [0, nk) (tile by tile), leaving the
// unnormalised output in s.o and the softmax state in s.m / s.l.
void RunBlock(const Geometry& g, const RowRefs& rows, size_t nr, size_t nk, Scratch& s);
// Allocates s for up to max_keys keys; own_kv: false where the int8 key and value panels come
// from PackKvInt8's bytes instead.
void AllocScratch(const Geometry& g, size_t max_keys, Scratch& s, bool own_kv = true);

// ---------------------------------------------------------------------------------------
// Defined in attention.cc.

// The kernel's geometry for `shape` (n_q > 0, num_heads > 0).
Geometry MakeGeometry(const AttentionShape& shape);
// Row blocks per task for nblk blocks of each of g.num_kv_heads heads: ~4 tasks per worker.
size_t BlocksPerTask(const Geometry& g, size_t nblk, size_t threads);
// Row blocks [b0, b1) of KV head kvh over its packed keys [0, nk), normalised into out.
void RunRowBlocks(const Geometry& g, const float* q, size_t kvh, size_t b0, size_t b1, size_t nk, Scratch& s,
                  float* out);

#if HWY_TARGET == HWY_AVX3_DL
// ---------------------------------------------------------------------------------------
// Defined in attention_int8.cc.

// S of the block's rows over the tile at kt0 and, where int8_pv, their u8 probabilities.
void ScoresInt8(const Geometry& g, const RowRefs& rows, size_t nr, size_t nk, size_t kt0, size_t bk,
                Scratch& s);
// The u8 probabilities of row r of the block over the tile (valid visible keys, zero up to n4).
void SoftmaxRowU8(const float* HWY_RESTRICT srow, size_t valid, size_t n4, float scale, size_t r, Scratch& s);
// O = alpha O + P V for the block's nr rows over the tile at kt0 (bk keys), in int8.
void PvInt8(const Geometry& g, Scratch& s, size_t nr, size_t kt0, size_t bk);

// ---------------------------------------------------------------------------------------
// Defined in attention_int8_pack.cc (for Rows = F32Rows and F16Rows).

// The block's Q rows as int8, their scales and -128 x their sums.
void QuantizeQueries(const Geometry& g, const RowRefs& rows, size_t nr, Scratch& s);
// Keys [k_lo, k_lo + nk) of one KV head (n_kv keys in all) as int8 panels and their scales.
template <class Rows>
void PackKeysInt8(const Rows& rows, size_t n_kv, size_t hd, size_t k_lo, size_t nk, uint8_t* k8out,
                  float* ksout);
// Values [k_lo, k_lo + nk) of one KV head (n_kv in all) as int8 panels, per-dim scales and means;
// staging: the calling worker's rows of int8 values before the transpose (KernelScratch::values8).
template <class Rows>
void PackValuesInt8(const Rows& rows, size_t n_kv, size_t hd, size_t k_lo, size_t nk, int8_t* dst, float* vs,
                    float* mu, std::vector<int8_t>& staging);
#endif  // HWY_AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#endif  // MINERU_KERNELS_CPU_ATTENTION_INTERNAL_INL_H_ toggle
