// kernels/cuda/attention_mma.cu — VarlenAttention's register-accumulator tensor-core form for bf16
// (attention.h, VarlenKernel::kTensorCoreMma; the default where it fits): flash-attention 2's
// scheme with mma.sync m16n8k16 (bf16 in, fp32 accumulate), for the ViT's long images and the
// decoder's prefill.
//
// One thread block per (query tile of 64 rows, query head, sequence); each of its 4 warps owns 16
// query rows, held as A fragments in registers for the whole pass. Key/value tiles of 64 rows are
// staged in shared memory by cp.async, two buffers deep (the next tile loads while this one is
// used). Per tile, a warp computes its scores S = Q K^T [16 x 64] into registers (the mma
// accumulator layout: lane (g = lane / 4, t = lane % 4) holds rows g and g + 8, columns 2t and
// 2t + 1 of every 8-column block), folds them into each row's running maximum and sum (fp32; the
// four lanes of a row combine by shuffles), rounds the probabilities to bf16 and reuses those
// registers directly as the A fragments of O += P V (V^T fragments by ldmatrix.trans). The output
// accumulator [16 x D] stays in registers, rescaled there. Numerics as the WMMA form
// (attention_tc.cu): probabilities rounded to bf16 before P V, the sum l taken over the rounded
// values, one rounding of the output (tests/kernels/cuda_attention_test.cc bounds both).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16" with .bf16):
//   A [16 x 16], row-major: a0 = (g, 2t..2t+1), a1 = (g + 8, 2t..), a2 = (g, 2t + 8..), a3 = (g + 8, 2t
//   + 8..) B [16 x 8] (k x n):     b0 = (k = 2t..2t+1, n = g), b1 = (k = 2t + 8.., n = g) C [16 x 8], fp32:
//   c0, c1 = (g, 2t), (g, 2t + 1); c2, c3 = (g + 8, 2t), (g + 8, 2t + 1)
// each 32-bit register holding its two bf16 values lower column (or k) first.
//
// Heads of 16 to 128 dimensions in steps of 16 (the ViT's 80, the decoder's 64). Compute
// capability 8.0 or newer.

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/device_math.cuh"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

constexpr int kWarps = 4;
// A warp owns M m-tiles of 16 query rows (M = 1 or 2): with M = 2 every K and V fragment read from
// shared memory feeds two mma instead of one (half the shared-memory traffic per flop), for twice
// the registers. The block's query tile is kWarps * 16 * M rows.
template <int M>
constexpr int kTileQ = kWarps * 16 * M;
constexpr int kTileK = 64;
// The wide form (M = 2) is built for heads up to this size (the ViT's 80, the decoder's 64): its
// accumulators for larger heads would not fit in registers.
constexpr int kMaxWideHeadDim = 96;
constexpr int kThreads = kWarps * kWarpSize;  // 128
constexpr int kMaxGridYZ = 65535;

// Shared memory of one block for heads of D dimensions: the Q tile, then two K and two V buffers,
// rows of D + 8 bf16 (16-byte aligned rows for cp.async and ldmatrix; the pad also spreads the
// fragment loads of 8 consecutive rows over all 32 banks).
template <int D, int M>
struct MmaLayout {
  static constexpr int kLd = D + 8;
  static constexpr size_t kTileBytes = sizeof(__nv_bfloat16) * kTileK * kLd;
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = kQ + sizeof(__nv_bfloat16) * kTileQ<M> * kLd;  // [2][kTileK][kLd]
  static constexpr size_t kV = kK + 2 * kTileBytes;                           // [2][kTileK][kLd]
  static constexpr size_t kBytes = kV + 2 * kTileBytes;
  static_assert(kLd % 8 == 0 && kK % 16 == 0 && kV % 16 == 0, "16-byte rows");
};

// c += a b for one m16n8k16 tile (bf16 inputs, fp32 accumulators).
__device__ __forceinline__ void MmaBf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// Four 8x8 bf16 matrices, transposed: lanes 8i..8i+7 give the row addresses of matrix i, and
// register i receives matrix i's column (lane % 4) * 2, +1 at row lane / 4 of the transposed view
// (a B fragment's b0 or b1 when the rows are k).
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], const __nv_bfloat16* row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
#endif
}

// Two bf16 at p (4-byte aligned) as one register, p[0] in the low half.
__device__ __forceinline__ uint32_t Pair(const __nv_bfloat16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// (lo, hi) rounded to bf16 into one register, lo in the low half; *sum += both as rounded.
__device__ __forceinline__ uint32_t PackRounded(float lo, float hi, float* sum) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  *sum += __low2float(v) + __high2float(v);
  uint32_t bits;
  memcpy(&bits, &v, sizeof(bits));
  return bits;
}

// The per-row state of a warp's two rows (g and g + 8) across key tiles.
struct RowState {
  float m[2] = {-INFINITY, -INFINITY};  // running maximum of the scaled scores
  float l[2] = {0.0f, 0.0f};            // running sum of the rounded probabilities
  int limit[2];                         // keys [0, limit) are visible to the row (in the sequence)
};

// S [16 x 64] = Q_m K_tile^T for each of the warp's m-tiles; s[m][j] holds columns 8j.. in the C
// layout. Each K fragment is read once for all M m-tiles.
template <int D, int M>
__device__ __forceinline__ void Scores(const uint32_t (&qa)[M][D / 16][4], const __nv_bfloat16* ks, int g,
                                       int t, float (&s)[M][kTileK / 8][4]) {
  constexpr int kLd = D + 8;
#pragma unroll
  for (int j = 0; j < kTileK / 8; ++j) {
#pragma unroll
    for (int m = 0; m < M; ++m) s[m][j][0] = s[m][j][1] = s[m][j][2] = s[m][j][3] = 0.0f;
    const __nv_bfloat16* krow = ks + (j * 8 + g) * kLd + 2 * t;  // B^T row: key 8j + g
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t b0 = Pair(krow + kk * 16), b1 = Pair(krow + kk * 16 + 8);
#pragma unroll
      for (int m = 0; m < M; ++m) MmaBf16(s[m][j], qa[m][kk], b0, b1);
    }
  }
}

// Folds this tile's scores into the rows' maximum and sum, rescales o, and leaves in pa the
// rounded probabilities as A fragments of P [16 x 64] (pa[i]: keys 16i..16i+15). k0: the tile's
// first key in the sequence; kn: keys in the tile.
template <int D>
__device__ __forceinline__ void Softmax(float (&s)[kTileK / 8][4], int k0, int kn, int t, float scale,
                                        RowState& st, float (&o)[D / 8][4], uint32_t (&pa)[kTileK / 16][4]) {
  float alpha[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // h: row g (0) or g + 8 (1): accumulator entries 2h and 2h + 1
    float tmax = -INFINITY;
#pragma unroll
    for (int j = 0; j < kTileK / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = j * 8 + 2 * t + e;
        const bool on = col < kn && k0 + col < st.limit[h];
        s[j][2 * h + e] = on ? s[j][2 * h + e] * scale : -INFINITY;
        tmax = fmaxf(tmax, s[j][2 * h + e]);
      }
    }
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
    const float m_new = fmaxf(st.m[h], tmax);
    // Nothing seen yet (m = -inf): o is 0 and stays 0 whatever alpha is. A row that sees nothing
    // in this tile either keeps m_new = -inf and gets probabilities 0 below.
    alpha[h] = st.m[h] == -INFINITY ? 0.0f : __expf(st.m[h] - m_new);
    st.m[h] = m_new;
#pragma unroll
    for (int j = 0; j < kTileK / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float x = s[j][2 * h + e];
        s[j][2 * h + e] = x == -INFINITY ? 0.0f : __expf(x - m_new);
      }
    }
  }
  float psum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < kTileK / 16; ++i) {
    pa[i][0] = PackRounded(s[2 * i][0], s[2 * i][1], &psum[0]);
    pa[i][1] = PackRounded(s[2 * i][2], s[2 * i][3], &psum[1]);
    pa[i][2] = PackRounded(s[2 * i + 1][0], s[2 * i + 1][1], &psum[0]);
    pa[i][3] = PackRounded(s[2 * i + 1][2], s[2 * i + 1][3], &psum[1]);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    psum[h] += __shfl_xor_sync(0xffffffffu, psum[h], 1);
    psum[h] += __shfl_xor_sync(0xffffffffu, psum[h], 2);
    st.l[h] = st.l[h] * alpha[h] + psum[h];
  }
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    o[j][0] *= alpha[0];
    o[j][1] *= alpha[0];
    o[j][2] *= alpha[1];
    o[j][3] *= alpha[1];
  }
}

// o_m [16 x D] += P_m [16 x 64] V_tile [64 x D] for each m-tile; each V fragment read once.
template <int D, int M>
__device__ __forceinline__ void AccumulatePV(const uint32_t (&pa)[M][kTileK / 16][4], const __nv_bfloat16* vs,
                                             int lane, float (&o)[M][D / 8][4]) {
  constexpr int kLd = D + 8;
  // ldmatrix x4: matrices 0/1 are keys 0..7 / 8..15 of a 16-key step at columns 8j, matrices 2/3
  // the same keys at columns 8j + 8 (D / 8 is even for every D taken).
  const int key = lane & 15, col = (lane >> 4) * 8;
#pragma unroll
  for (int i = 0; i < kTileK / 16; ++i) {
#pragma unroll
    for (int j = 0; j < D / 8; j += 2) {
      uint32_t b[4];
      LdMatrixX4Trans(b, vs + (i * 16 + key) * kLd + j * 8 + col);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        MmaBf16(o[m][j], pa[m][i], b[0], b[1]);
        MmaBf16(o[m][j + 1], pa[m][i], b[2], b[3]);
      }
    }
  }
}

// Writes rows g and g + 8 of the warp's output (those inside the tile), divided by their sums.
template <int D>
__device__ __forceinline__ void StoreRows(const float (&o)[D / 8][4], const RowState& st, int row0, int rows,
                                          int t, __nv_bfloat16* out, int64_t stride) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    if (row >= rows) continue;
    const float inv = st.l[h] > 0.0f ? 1.0f / st.l[h] : 0.0f;
    __nv_bfloat16* dst = out + static_cast<int64_t>(row) * stride + 2 * t;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      dst[j * 8] = __float2bfloat16_rn(o[j][2 * h] * inv);
      dst[j * 8 + 1] = __float2bfloat16_rn(o[j][2 * h + 1] * inv);
    }
  }
}

template <int D, int M, bool kVec>
__global__ void __launch_bounds__(kThreads)
    MmaFlashKernel(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* out,
                   VarlenParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using L = MmaLayout<D, M>;
  constexpr int kRows = kTileQ<M>;
  extern __shared__ __align__(128) unsigned char smem[];
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(smem + L::kQ);
  __nv_bfloat16* kbuf = reinterpret_cast<__nv_bfloat16*>(smem + L::kK);
  __nv_bfloat16* vbuf = reinterpret_cast<__nv_bfloat16*>(smem + L::kV);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int g = lane / 4, t = lane % 4;

  const int seq = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kRows;
  const int q_begin = p.cu_q[seq], n_q = p.cu_q[seq + 1] - q_begin;
  const int k_begin = p.cu_k[seq], n_kv = p.cu_k[seq + 1] - k_begin;
  if (q0 >= n_q) return;  // uniform over the block
  const int kvh = h / p.group, rows = min(kRows, n_q - q0);
  const int offset = n_kv - n_q;  // causal: query i sees keys [0, offset + i]
  const int k_end = p.causal ? max(0, min(n_kv, offset + q0 + rows)) : n_kv;
  const int tiles = (k_end + kTileK - 1) / kTileK;
  const __nv_bfloat16* kseq = k + static_cast<int64_t>(k_begin) * p.k_stride + kvh * D;
  const __nv_bfloat16* vseq = v + static_cast<int64_t>(k_begin) * p.v_stride + kvh * D;
  auto load_kv = [&](int tile) {  // into buffer tile % 2, one cp.async group
    const int k0 = tile * kTileK, kn = min(kTileK, k_end - k0);
    const size_t at = static_cast<size_t>(tile % 2) * kTileK * L::kLd;
    LoadTileBf16Async<D, kThreads, kVec>(kseq + static_cast<int64_t>(k0) * p.k_stride, p.k_stride, kn, kTileK,
                                         kbuf + at, L::kLd);
    LoadTileBf16Async<D, kThreads, kVec>(vseq + static_cast<int64_t>(k0) * p.v_stride, p.v_stride, kn, kTileK,
                                         vbuf + at, L::kLd);
  };
  // Group 0: the queries and the first key/value tile. No keys: no copies (the output is zeros, and
  // with out == q a copy of q still in flight would race with the stores).
  if (tiles > 0) {
    LoadTileBf16Async<D, kThreads, kVec>(q + static_cast<int64_t>(q_begin + q0) * p.q_stride + h * D,
                                         p.q_stride, rows, kRows, qs, L::kLd);
    load_kv(0);
  }
  CpAsyncCommit();

  // m-tile m of this warp: tile rows warp * 16 M + 16 m + [0, 16); the lane's rows g and g + 8 there.
  RowState st[M];
  float o[M][D / 8][4];
  uint32_t qa[M][D / 16][4];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    for (int hh = 0; hh < 2; ++hh) {
      const int row = q0 + (warp * M + m) * 16 + g + 8 * hh;
      st[m].limit[hh] = p.causal ? min(n_kv, offset + row + 1) : n_kv;
    }
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[m][j][0] = o[m][j][1] = o[m][j][2] = o[m][j][3] = 0.0f;
  }

  for (int tile = 0; tile < tiles; ++tile) {
    if (tile + 1 < tiles) {  // the next tile's buffer was last read before the previous barrier
      load_kv(tile + 1);
      CpAsyncCommit();
      CpAsyncWait<1>();  // everything but the group just issued has landed
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();  // every thread's copies of this tile (and, at first, of Q) are visible
    if (tile == 0) {
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const __nv_bfloat16* qrow = qs + ((warp * M + m) * 16 + g) * L::kLd + 2 * t;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          qa[m][kk][0] = Pair(qrow + kk * 16);
          qa[m][kk][1] = Pair(qrow + 8 * L::kLd + kk * 16);
          qa[m][kk][2] = Pair(qrow + kk * 16 + 8);
          qa[m][kk][3] = Pair(qrow + 8 * L::kLd + kk * 16 + 8);
        }
      }
    }
    const size_t at = static_cast<size_t>(tile % 2) * kTileK * L::kLd;
    float s[M][kTileK / 8][4];
    Scores<D, M>(qa, kbuf + at, g, t, s);
    uint32_t pa[M][kTileK / 16][4];
#pragma unroll
    for (int m = 0; m < M; ++m)
      Softmax<D>(s[m], tile * kTileK, min(kTileK, k_end - tile * kTileK), t, p.scale, st[m], o[m], pa[m]);
    AccumulatePV<D, M>(pa, vbuf + at, lane, o);
    __syncthreads();  // this buffer fully read before the next iteration's copy overwrites it
  }
  CpAsyncWait<0>();  // no copy outstanding at the end (the loop's last wait drained them)
  // Every block read its queries before its first tile: out may be q (other blocks of the same
  // rows read other heads' columns). A sequence without keys writes zeros (l = 0).
  __nv_bfloat16* out_tile = out + static_cast<int64_t>(q_begin + q0) * p.out_stride + h * D;
#pragma unroll
  for (int m = 0; m < M; ++m)
    StoreRows<D>(o[m], st[m], (warp * M + m) * 16 + g, rows, t, out_tile, p.out_stride);
#else
  __trap();  // built for an architecture without bf16 mma: never launched there
#endif
}

bool Aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

template <int D, int M>
Status Launch(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s, Bf16* out,
              StreamHandle stream) {
  constexpr const char* kOp = "VarlenAttention";
  const size_t smem = MmaLayout<D, M>::kBytes;
  const VarlenParams p = MakeVarlenParams(s);
  const dim3 grid(static_cast<unsigned>((s.max_seqlen_q + kTileQ<M> - 1) / kTileQ<M>),
                  static_cast<unsigned>(s.num_heads), static_cast<unsigned>(s.num_seqs));
  // Every row of q, k and v on a 16-byte boundary (D is a multiple of 16): cp.async copies.
  const bool vec = Aligned16(q) && Aligned16(k) && Aligned16(v) && s.q_stride % 8 == 0 &&
                   s.k_stride % 8 == 0 && s.v_stride % 8 == 0;
  if (vec) {
    MINERU_RETURN_IF_ERROR(AllowSharedMemory(MmaFlashKernel<D, M, true>, smem, kOp));
    MmaFlashKernel<D, M, true>
        <<<grid, kThreads, smem, stream>>>(ToDevice(q), ToDevice(k), ToDevice(v), ToDevice(out), p);
  } else {
    MINERU_RETURN_IF_ERROR(AllowSharedMemory(MmaFlashKernel<D, M, false>, smem, kOp));
    MmaFlashKernel<D, M, false>
        <<<grid, kThreads, smem, stream>>>(ToDevice(q), ToDevice(k), ToDevice(v), ToDevice(out), p);
  }
  return LaunchStatus(kOp);
}

}  // namespace

bool VarlenMmaFits(const VarlenAttentionShape& s, int m_tiles) {
  if (m_tiles != 1 && (m_tiles != 2 || s.head_dim > kMaxWideHeadDim)) return false;
  const size_t smem = WithTensorCoreHeadDim(s.head_dim, size_t{0}, [&](auto d) {
    return m_tiles == 1 ? MmaLayout<decltype(d)::value, 1>::kBytes : MmaLayout<decltype(d)::value, 2>::kBytes;
  });
  return smem > 0 && s.num_seqs <= kMaxGridYZ && s.num_heads <= kMaxGridYZ && smem <= DeviceSharedOptin();
}

Status LaunchVarlenMma(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s, Bf16* out,
                       int m_tiles, StreamHandle stream) {
  return WithTensorCoreHeadDim(
      s.head_dim, InvalidArgumentError("VarlenAttention: no mma form for this head_dim"), [&](auto d) {
        constexpr int D = decltype(d)::value;
        if constexpr (D <= kMaxWideHeadDim) {
          if (m_tiles == 2) return Launch<D, 2>(q, k, v, s, out, stream);
        }
        return Launch<D, 1>(q, k, v, s, out, stream);
      });
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
