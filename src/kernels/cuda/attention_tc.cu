// kernels/cuda/attention_tc.cu — VarlenAttention's tensor-core form for bf16 (attention.h): the
// ViT's long images and the decoder's prefill, with Q K^T and P V on the tensor cores (WMMA
// 16x16x16 bf16 tiles, fp32 accumulation) and the online softmax in fp32.
//
// One thread block per (query tile of 64 rows, query head, sequence); each of its 4 warps owns 16
// query rows. Per tile of 64 keys (staged in shared memory with V): a warp computes its 16 x 64
// scores S = Q K^T into shared memory, two lanes per row fold them into the row's running maximum
// and sum (fp32), write the probabilities as bf16 and rescale the row's fp32 output accumulator
// (kept in shared memory: WMMA accumulators have no row layout to rescale in registers), then
// O += P V. The probabilities are rounded to bf16 before P V (as flash-attention does): with the
// output's own rounding, an output is within 2^-7 of sum_i p_i |v_i| of the fp32 result
// (tests/kernels/cuda_attention_test.cc checks that bound). The sum l is taken over the rounded
// probabilities, so the normalisation matches what P V summed.
//
// Heads of 16 to 128 dimensions in steps of 16 (the ViT's 80, the decoder's 64); others take the
// SIMT kernel (attention.cu). Compute capability 8.0 or newer (bf16 WMMA).

#include <mma.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/device_math.cuh"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 16;
constexpr int kTileQ = kWarps * kRowsPerWarp;  // 64
constexpr int kTileK = 64;
constexpr int kThreads = kWarps * kWarpSize;  // 128
constexpr int kMaxGridYZ = 65535;

// Shared memory of one block for heads of D dimensions (Q is read from it once, into fragments) (element
// pitches, all multiples of 8 bf16 or 4 floats as WMMA's ldm needs, every array starting on a 32-byte
// boundary).
template <int D>
struct TcLayout {
  static constexpr int kLdh = D + 8;       // Q, K, V rows (bf16)
  static constexpr int kLds = kTileK + 4;  // S rows (fp32)
  static constexpr int kLdp = kTileK + 8;  // P rows (bf16)
  static constexpr int kLdo = D + 4;       // O rows (fp32)
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = kQ + sizeof(__nv_bfloat16) * kTileQ * kLdh;
  static constexpr size_t kV = kK + sizeof(__nv_bfloat16) * kTileK * kLdh;
  static constexpr size_t kS = kV + sizeof(__nv_bfloat16) * kTileK * kLdh;
  static constexpr size_t kP = kS + sizeof(float) * kTileQ * kLds;
  static constexpr size_t kO = kP + sizeof(__nv_bfloat16) * kTileQ * kLdp;
  static constexpr size_t kBytes = kO + sizeof(float) * kTileQ * kLdo;
  static_assert(kK % 32 == 0 && kV % 32 == 0 && kS % 32 == 0 && kP % 32 == 0 && kO % 32 == 0, "alignment");
};

template <int D, bool kVec>
__global__ void __launch_bounds__(kThreads)
    TcFlashKernel(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* out,
                  VarlenParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using L = TcLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(smem + L::kQ);
  __nv_bfloat16* ks = reinterpret_cast<__nv_bfloat16*>(smem + L::kK);
  __nv_bfloat16* vs = reinterpret_cast<__nv_bfloat16*>(smem + L::kV);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  float* ss = reinterpret_cast<float*>(smem + L::kS) + warp * kRowsPerWarp * L::kLds;
  __nv_bfloat16* ps = reinterpret_cast<__nv_bfloat16*>(smem + L::kP) + warp * kRowsPerWarp * L::kLdp;
  float* os = reinterpret_cast<float*>(smem + L::kO) + warp * kRowsPerWarp * L::kLdo;

  const int seq = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kTileQ;
  const int q_begin = p.cu_q[seq], n_q = p.cu_q[seq + 1] - q_begin;
  const int k_begin = p.cu_k[seq], n_kv = p.cu_k[seq + 1] - k_begin;
  if (q0 >= n_q) return;  // uniform over the block
  const int kvh = h / p.group, rows = min(kTileQ, n_q - q0);
  LoadTileBf16<D, kThreads, kVec>(q + static_cast<int64_t>(q_begin + q0) * p.q_stride + h * D, p.q_stride,
                                  rows, kTileQ, qs, L::kLdh);
  for (int idx = lane; idx < kRowsPerWarp * L::kLdo; idx += kWarpSize) os[idx] = 0.0f;
  __syncthreads();  // Q written by every thread
  // The warp's 16 query rows as WMMA fragments, loaded once for every key tile.
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> qa[D / 16];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    wmma::load_matrix_sync(qa[kk], qs + warp * kRowsPerWarp * L::kLdh + kk * 16, L::kLdh);

  // Two lanes per row: lane 2r + half holds row r of the warp's 16 and columns [32 half, 32 half + 32).
  const int r = lane / 2, half = lane % 2;
  const int row = warp * kRowsPerWarp + r;  // in the tile
  const int offset = n_kv - n_q;            // causal: query i sees keys [0, offset + i]
  const int limit = p.causal ? min(n_kv, offset + q0 + row + 1) : n_kv;
  const int k_end = p.causal ? max(0, min(n_kv, offset + q0 + rows)) : n_kv;
  float m = -INFINITY, l = 0.0f;

  for (int k0 = 0; k0 < k_end; k0 += kTileK) {
    const int kn = min(kTileK, k_end - k0);
    __syncthreads();  // the previous tile fully read
    LoadTileBf16<D, kThreads, kVec>(k + static_cast<int64_t>(k_begin + k0) * p.k_stride + kvh * D, p.k_stride,
                                    kn, kTileK, ks, L::kLdh);
    LoadTileBf16<D, kThreads, kVec>(v + static_cast<int64_t>(k_begin + k0) * p.v_stride + kvh * D, p.v_stride,
                                    kn, kTileK, vs, L::kLdh);
    __syncthreads();
    // S [16, 64] = Q_warp [16, D] K^T [D, 64].
    for (int j = 0; j < kTileK / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
        wmma::load_matrix_sync(b, ks + j * 16 * L::kLdh + kk * 16, L::kLdh);
        wmma::mma_sync(acc, qa[kk], b, acc);
      }
      wmma::store_matrix_sync(ss + j * 16, acc, L::kLds, wmma::mem_row_major);
    }
    __syncwarp();
    // The online softmax of row r over this lane's 32 columns, combined with the partner lane's.
    const float* srow = ss + r * L::kLds + half * 32;
    float tmax = -INFINITY;
    for (int c = 0; c < 32; ++c) {
      const int col = half * 32 + c;
      if (col < kn && k0 + col < limit) tmax = fmaxf(tmax, srow[c] * p.scale);
    }
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
    const float m_new = fmaxf(m, tmax);
    // Nothing seen yet (m = -inf): the accumulator is 0 and stays 0 whatever alpha is.
    const float alpha = m == -INFINITY ? 0.0f : __expf(m - m_new);
    __nv_bfloat16* prow = ps + r * L::kLdp + half * 32;
    float psum = 0.0f;
    for (int c = 0; c < 32; ++c) {
      const int col = half * 32 + c;
      const bool on = col < kn && k0 + col < limit;
      const __nv_bfloat16 pb = __float2bfloat16_rn(on ? __expf(srow[c] * p.scale - m_new) : 0.0f);
      prow[c] = pb;
      psum += __bfloat162float(pb);
    }
    psum += __shfl_xor_sync(0xffffffffu, psum, 1);
    l = l * alpha + psum;
    m = m_new;
    float* orow = os + r * L::kLdo;
    for (int d = half; d < D; d += 2) orow[d] *= alpha;
    __syncwarp();
    // O [16, D] += P [16, 64] V [64, D].
#pragma unroll
    for (int j = 0; j < D / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, os + j * 16, L::kLdo, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
        wmma::load_matrix_sync(a, ps + kk * 16, L::kLdp);
        wmma::load_matrix_sync(b, vs + kk * 16 * L::kLdh + j * 16, L::kLdh);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(os + j * 16, acc, L::kLdo, wmma::mem_row_major);
    }
    __syncwarp();
  }
  __syncwarp();
  if (row >= rows) return;
  // Every block read its queries before its first tile: out may be q (other blocks of the same
  // rows read other heads' columns).
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  __nv_bfloat16* o = out + static_cast<int64_t>(q_begin + q0 + row) * p.out_stride + h * D;
  const float* orow = os + r * L::kLdo;
  for (int d = half; d < D; d += 2) o[d] = __float2bfloat16_rn(orow[d] * inv);
#else
  __trap();  // built for an architecture without bf16 tensor cores: never launched there
#endif
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <int D>
Status Launch(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s, Bf16* out,
              StreamHandle stream) {
  constexpr const char* kOp = "VarlenAttention";
  const size_t smem = TcLayout<D>::kBytes;
  const VarlenParams p = MakeVarlenParams(s);
  const dim3 grid(static_cast<unsigned>((s.max_seqlen_q + kTileQ - 1) / kTileQ),
                  static_cast<unsigned>(s.num_heads), static_cast<unsigned>(s.num_seqs));
  // Every row of q, k and v on a 16-byte boundary (D is a multiple of 16): whole-vector loads.
  const bool vec = Aligned16(q) && Aligned16(k) && Aligned16(v) && s.q_stride % 8 == 0 &&
                   s.k_stride % 8 == 0 && s.v_stride % 8 == 0;
  if (vec) {
    MINERU_RETURN_IF_ERROR(AllowSharedMemory(TcFlashKernel<D, true>, smem, kOp));
    TcFlashKernel<D, true>
        <<<grid, kThreads, smem, stream>>>(ToDevice(q), ToDevice(k), ToDevice(v), ToDevice(out), p);
  } else {
    MINERU_RETURN_IF_ERROR(AllowSharedMemory(TcFlashKernel<D, false>, smem, kOp));
    TcFlashKernel<D, false>
        <<<grid, kThreads, smem, stream>>>(ToDevice(q), ToDevice(k), ToDevice(v), ToDevice(out), p);
  }
  return LaunchStatus(kOp);
}

// The kernel's shared memory for heads of head_dim, else 0.
size_t TcSharedBytes(int64_t head_dim) {
  return WithTensorCoreHeadDim(head_dim, size_t{0},
                               [](auto d) { return TcLayout<decltype(d)::value>::kBytes; });
}

}  // namespace

size_t DeviceSharedOptin() {
  constexpr int kCachedDevices = 64;
  static std::atomic<int> cached[kCachedDevices] = {};  // 0: not asked yet; else bytes + 1
  int dev = 0, bytes = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (dev >= 0 && dev < kCachedDevices) {
    const int known = cached[dev].load(std::memory_order_relaxed);
    if (known > 0) return static_cast<size_t>(known - 1);
  }
  if (cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) return 0;
  if (dev >= 0 && dev < kCachedDevices) cached[dev].store(bytes + 1, std::memory_order_relaxed);
  return static_cast<size_t>(bytes);
}

bool VarlenWmmaFits(const VarlenAttentionShape& s) {
  const size_t smem = TcSharedBytes(s.head_dim);
  // A head too large for this device's shared memory takes the SIMT kernel instead.
  return smem > 0 && s.num_seqs <= kMaxGridYZ && s.num_heads <= kMaxGridYZ && smem <= DeviceSharedOptin();
}

Status LaunchVarlenWmma(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s, Bf16* out,
                        StreamHandle stream) {
  return WithTensorCoreHeadDim(s.head_dim,
                               InvalidArgumentError("VarlenAttention: no tensor-core form for this head_dim"),
                               [&](auto d) { return Launch<decltype(d)::value>(q, k, v, s, out, stream); });
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
