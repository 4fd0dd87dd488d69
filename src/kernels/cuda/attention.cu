// kernels/cuda/attention.cu — VarlenAttention (attention.h): flash-style attention over packed
// sequences. One thread block per (query tile of kTileQ rows, query head, sequence); the block
// keeps its queries in shared memory and walks the sequence's keys in tiles of kTileK, staging
// each key/value tile in shared memory (as fp32), with an online softmax per query row: the running
// maximum m, the running sum l and the fp32 output accumulator, rescaled by exp(m_old - m_new)
// whenever the maximum grows. Each query row belongs to a quad of kQuad adjacent threads: a thread
// scores kTileK / kQuad of the tile's keys and accumulates every kQuad-th output dimension.
//
// This is the plain fp32 SIMT form: fp32 attention, and bf16 heads whose size is not a multiple of
// 16 (or any bf16 head with VarlenKernel::kSimt); bf16 heads of 16 to 128 in steps of 16 take a
// tensor-core form (attention_mma.cu by default, attention_tc.cu on request): the dispatch below.

#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/cuda_internal.h"
#include "kernels/cuda/device_math.cuh"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

constexpr int kTileQ = 32;                      // query rows per block
constexpr int kTileK = 32;                      // keys per shared-memory tile
constexpr int kQuad = 4;                        // threads per query row
constexpr int kFlashThreads = kTileQ * kQuad;   // 128
constexpr int kColsPerThread = kTileK / kQuad;  // keys scored per thread per tile
constexpr int kDimsPerThread = static_cast<int>(kMaxAttentionHeadDim) / kQuad;  // accumulator size
constexpr int kMaxGridYZ = 65535;
static_assert(kMaxAttentionHeadDim % kQuad == 0, "head dims split over a quad");

// dst[r * ld + c] = src[r * stride + c] for r < rows, 0 for rows in [rows, tile_rows), c < cols.
template <typename D>
__device__ __forceinline__ void LoadTile(const D* src, int64_t stride, int rows, int tile_rows, int cols,
                                         float* dst, int ld) {
  for (int idx = threadIdx.x; idx < tile_rows * cols; idx += kFlashThreads) {
    const int r = idx / cols, c = idx % cols;
    dst[r * ld + c] = r < rows ? Load(src + r * stride + c) : 0.0f;
  }
}

// The quad's reductions: lanes 4i..4i+3 of a warp hold one query row.
__device__ __forceinline__ float QuadMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float QuadSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// The online-softmax state of one query row, as seen by one thread of its quad.
struct RowState {
  float m = -INFINITY;  // running maximum of the scores seen
  float l = 0.0f;       // running sum of exp(score - m)
  float acc[kDimsPerThread];
};

// Scores this thread's keys of the tile (keys at or past `limit` masked), folds them into the
// row's state and writes the row's probabilities to p_row[0, kTileK) for the P V product.
__device__ __forceinline__ void ScoreTile(const float* q_row, const float* ks, int ld, int hd, int k0, int kn,
                                          int limit, float scale, int lane4, float* p_row, RowState& st) {
  float sc[kColsPerThread];
  float tmax = -INFINITY;
#pragma unroll
  for (int c = 0; c < kColsPerThread; ++c) {
    const int col = lane4 + kQuad * c;
    sc[c] = -INFINITY;
    if (col < kn && k0 + col < limit) {
      const float* k_row = ks + col * ld;
      float dot = 0.0f;
      for (int d = 0; d < hd; ++d) dot += q_row[d] * k_row[d];
      sc[c] = dot * scale;
      tmax = fmaxf(tmax, sc[c]);
    }
  }
  const float m_new = fmaxf(st.m, QuadMax(tmax));
  // Nothing seen yet (m_new = -inf): the probabilities are 0 and the accumulator stays 0.
  const float alpha = st.m == -INFINITY ? 0.0f : expf(st.m - m_new);
  float psum = 0.0f;
#pragma unroll
  for (int c = 0; c < kColsPerThread; ++c) {
    const float p = sc[c] == -INFINITY ? 0.0f : expf(sc[c] - m_new);
    p_row[lane4 + kQuad * c] = p;
    psum += p;
  }
  st.l = st.l * alpha + QuadSum(psum);
  st.m = m_new;
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) st.acc[i] *= alpha;
}

template <typename D>
__global__ void __launch_bounds__(kFlashThreads)
    VarlenFlashKernel(const D* q, const D* k, const D* v, D* out, VarlenParams p) {
  extern __shared__ float smem[];
  const int hd = p.head_dim, ld = hd + 1;  // odd row pitch: the quads' column reads hit distinct banks
  float* qs = smem;                        // [kTileQ][ld]
  float* ks = qs + kTileQ * ld;            // [kTileK][ld]
  float* vs = ks + kTileK * ld;            // [kTileK][ld]
  float* ps = vs + kTileK * ld;            // [kTileQ][kTileK + 1]
  const int seq = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kTileQ;
  const int q_begin = p.cu_q[seq], n_q = p.cu_q[seq + 1] - q_begin;
  const int k_begin = p.cu_k[seq], n_kv = p.cu_k[seq + 1] - k_begin;
  if (q0 >= n_q) return;  // uniform over the block
  const int kvh = h / p.group, rows = min(kTileQ, n_q - q0);
  const int row = threadIdx.x / kQuad, lane4 = threadIdx.x % kQuad;
  LoadTile(q + static_cast<int64_t>(q_begin + q0) * p.q_stride + h * hd, p.q_stride, rows, kTileQ, hd, qs,
           ld);
  // Query i of the sequence sees keys [0, n_kv - n_q + i] when causal: the tile needs keys below k_end.
  const int offset = n_kv - n_q;
  const int limit = p.causal ? min(n_kv, offset + q0 + row + 1) : n_kv;
  const int k_end = p.causal ? max(0, min(n_kv, offset + q0 + rows)) : n_kv;
  RowState st;
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) st.acc[i] = 0.0f;
  for (int k0 = 0; k0 < k_end; k0 += kTileK) {
    const int kn = min(kTileK, k_end - k0);
    __syncthreads();  // the previous tile (and the queries, the first time) fully read / written
    LoadTile(k + static_cast<int64_t>(k_begin + k0) * p.k_stride + kvh * hd, p.k_stride, kn, kn, hd, ks, ld);
    LoadTile(v + static_cast<int64_t>(k_begin + k0) * p.v_stride + kvh * hd, p.v_stride, kn, kn, hd, vs, ld);
    __syncthreads();
    float* p_row = ps + row * (kTileK + 1);
    ScoreTile(qs + row * ld, ks, ld, hd, k0, kn, limit, p.scale, lane4, p_row, st);
    __syncwarp();  // the quad's probabilities written before any of its threads reads them
    for (int c = 0; c < kn; ++c) {
      const float pc = p_row[c];
      const float* v_row = vs + c * ld;
#pragma unroll
      for (int i = 0; i < kDimsPerThread; ++i) {
        const int d = lane4 + kQuad * i;
        if (d < hd) st.acc[i] += pc * v_row[d];
      }
    }
  }
  if (row >= rows) return;
  // Every read of this row's queries (qs) happened before: out may be q.
  const float inv = st.l > 0.0f ? 1.0f / st.l : 0.0f;
  D* o = out + static_cast<int64_t>(q_begin + q0 + row) * p.out_stride + h * hd;
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) {
    const int d = lane4 + kQuad * i;
    if (d < hd) Store(o + d, st.acc[i] * inv);
  }
}

Status CheckVarlen(const char* op, const VarlenAttentionShape& s) {
  MINERU_RETURN_IF_ERROR(
      CheckSizes(op, {s.num_seqs, s.max_seqlen_q, s.q_stride, s.k_stride, s.v_stride, s.out_stride}));
  MINERU_RETURN_IF_ERROR(
      CheckAttentionHeads(op, s.num_heads, s.num_kv_heads, s.head_dim, kMaxAttentionHeadDim));
  const int64_t qd = s.num_heads * s.head_dim, kd = s.num_kv_heads * s.head_dim;
  if (s.q_stride < qd || s.out_stride < qd || s.k_stride < kd || s.v_stride < kd) {
    return InvalidArgumentError(std::string(op) + ": row strides below the heads' width");
  }
  if (s.num_seqs > kMaxGridYZ || s.num_heads > kMaxGridYZ || s.max_seqlen_q > (int64_t{1} << 30)) {
    return InvalidArgumentError(std::string(op) + ": more than 65,535 sequences or heads, or 2^30 rows");
  }
  return Status::Ok();
}

std::string NoForm(const char* op, VarlenKernel k) {
  return std::string(op) + ": the " + VarlenKernelName(k) + " kernel takes bf16 heads of 16 to " +
         (k == VarlenKernel::kTensorCoreMmaWide ? "96" : "128") +
         " dimensions in steps of 16 within the device's shared memory";
}

template <typename T>
Status LaunchVarlen(const T* q, const T* k, const T* v, const VarlenAttentionShape& s, T* out,
                    StreamHandle stream) {
  constexpr const char* kOp = "VarlenAttention";
  MINERU_RETURN_IF_ERROR(CheckVarlen(kOp, s));
  if (s.num_seqs == 0 || s.max_seqlen_q == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(CheckPointers(kOp, {q, k, v, out, s.cu_seqlens_q, s.cu_seqlens_k}));
  if constexpr (std::is_same_v<T, Bf16>) {
    switch (s.kernel) {
      case VarlenKernel::kAuto:
        if (VarlenMmaFits(s, 1)) return LaunchVarlenMma(q, k, v, s, out, 1, stream);
        break;
      case VarlenKernel::kTensorCoreMma:
        if (!VarlenMmaFits(s, 1)) return InvalidArgumentError(NoForm(kOp, s.kernel));
        return LaunchVarlenMma(q, k, v, s, out, 1, stream);
      case VarlenKernel::kTensorCoreMmaWide:
        if (!VarlenMmaFits(s, 2)) return InvalidArgumentError(NoForm(kOp, s.kernel));
        return LaunchVarlenMma(q, k, v, s, out, 2, stream);
      case VarlenKernel::kTensorCoreWmma:
        if (!VarlenWmmaFits(s)) return InvalidArgumentError(NoForm(kOp, s.kernel));
        return LaunchVarlenWmma(q, k, v, s, out, stream);
      case VarlenKernel::kSimt:
        break;
    }
  } else if (s.kernel != VarlenKernel::kAuto && s.kernel != VarlenKernel::kSimt) {
    return InvalidArgumentError(NoForm(kOp, s.kernel));
  }
  const int ld = static_cast<int>(s.head_dim) + 1;
  const size_t smem = sizeof(float) * static_cast<size_t>((kTileQ + 2 * kTileK) * ld + kTileQ * (kTileK + 1));
  using D = typename DeviceType<T>::type;
  MINERU_RETURN_IF_ERROR(AllowSharedMemory(VarlenFlashKernel<D>, smem, kOp));
  const VarlenParams p = MakeVarlenParams(s);
  const dim3 grid(static_cast<unsigned>((s.max_seqlen_q + kTileQ - 1) / kTileQ),
                  static_cast<unsigned>(s.num_heads), static_cast<unsigned>(s.num_seqs));
  VarlenFlashKernel<D>
      <<<grid, kFlashThreads, smem, stream>>>(ToDevice(q), ToDevice(k), ToDevice(v), ToDevice(out), p);
  return LaunchStatus(kOp);
}

}  // namespace

const char* VarlenKernelName(VarlenKernel k) {
  switch (k) {
    case VarlenKernel::kAuto:
      return "auto";
    case VarlenKernel::kSimt:
      return "simt";
    case VarlenKernel::kTensorCoreWmma:
      return "wmma";
    case VarlenKernel::kTensorCoreMma:
      return "mma";
    case VarlenKernel::kTensorCoreMmaWide:
      return "mma2";
  }
  return "?";
}

Status VarlenAttention(const float* q, const float* k, const float* v, const VarlenAttentionShape& s,
                       float* out, StreamHandle stream) {
  return LaunchVarlen(q, k, v, s, out, stream);
}
Status VarlenAttention(const Bf16* q, const Bf16* k, const Bf16* v, const VarlenAttentionShape& s, Bf16* out,
                       StreamHandle stream) {
  return LaunchVarlen(q, k, v, s, out, stream);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
