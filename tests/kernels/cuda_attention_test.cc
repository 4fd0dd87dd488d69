// The CUDA attention kernels (kernels/cuda/attention.h) against the CPU's scalar twin,
// ref::Attention (kernels/reference.h), whose layout fits both directly: VarlenAttention is
// compared with ref::Attention run sequence by sequence on the same packed rows (pointers offset by
// cu_seqlens, the same strides), PagedDecodeAttention with ref::Attention over the same blocks in
// its paged form (AttentionShape::k_blocks: the CPU decoder's own path), one query per sequence.
//
// Shapes: the ViT's (16 heads of 80, no GQA, full attention within each image, q/k/v read in place
// from one fused [T, 3E] qkv buffer), the decoder's (14 query heads over 2 KV heads of 64, causal,
// prefill with and without an earlier context), a head of 128 (shared memory past 48 KiB), odd
// head dims; packed passes with one-token, empty and many sequences; paged contexts of 0, 1, a
// block, a block + 1 and many lengths at once, over non-contiguous block ids.
//
// Tolerances, |got - want| <= rel * |want| + abs, want = the twin in fp32 on the very inputs the
// kernel saw (bf16 inputs widened first):
//   fp32  rel 1e-4, abs 1e-5  (online vs two-pass softmax, CUDA's expf within 2 ulp, other sum orders:
//                              expected error ~1e-6 on outputs of size ~0.1)
//   bf16  rel 4e-3, abs 2e-5  (the fp32 result rounded once to bf16: half an ulp is <= 2^-8 of it);
//         VarlenAttention: 2^-7 of sum_i p_i |v_i|, abs 2e-5 (the tensor-core forms for heads of a
//         multiple of 16 also round the probabilities to bf16 before P V, as flash-attention does)
// The tests that need a device skip, saying why, where there is none (CPU machines, CI).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "cuda_test_util.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/buffer.h"
#include "kernels/kernels.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {
namespace cuda_test {
namespace {

constexpr Tol kAttnF32{1e-4f, 1e-5f};
constexpr Tol kAttnBf16{4e-3f, 2e-5f};

template <typename T>
Tol AttnTol() {
  return sizeof(T) == 4 ? kAttnF32 : kAttnBf16;
}

class CudaAttentionTest : public CudaDeviceTest {};

// One packed pass: per sequence its query and key counts.
struct VarlenCase {
  int64_t heads, kv_heads, head_dim;
  bool causal;
  bool fused_qkv;  // q, k, v inside one [T, QD + 2 KD] buffer (the ViT; needs n_q == n_kv)
  bool in_place;   // out = q
  std::vector<std::pair<int64_t, int64_t>> seqs;  // (n_q, n_kv)
  // Buffers at their allocation's start (256-byte aligned: the tensor-core form's whole-vector
  // loads, where the strides allow); otherwise one element in (no more than the element's own).
  bool aligned = false;
};

std::string Describe(const VarlenCase& c) {
  std::string s = std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + "x" +
                  std::to_string(c.head_dim) + (c.causal ? " causal" : "") + (c.fused_qkv ? " fused" : "") +
                  (c.in_place ? " in-place" : "") + (c.aligned ? " aligned" : "") + " seqs";
  for (size_t i = 0; i < c.seqs.size() && i < 8; ++i) {
    s += " " + std::to_string(c.seqs[i].first) + ":" + std::to_string(c.seqs[i].second);
  }
  return s + (c.seqs.size() > 8 ? " ... (" + std::to_string(c.seqs.size()) + ")" : "");
}

// The twin, sequence by sequence: ref::Attention on the packed rows in place.
void VarlenTwin(const VarlenCase& c, const std::vector<int32_t>& cu_q, const std::vector<int32_t>& cu_k,
                const float* q, const float* k, const float* v, int64_t q_stride, int64_t kv_stride,
                float* out, int64_t out_stride) {
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    AttentionShape a;
    a.n_q = c.seqs[s].first;
    a.n_kv = c.seqs[s].second;
    a.num_heads = c.heads;
    a.num_kv_heads = c.kv_heads;
    a.head_dim = c.head_dim;
    a.q_stride = q_stride;
    a.kv_stride = kv_stride;
    a.out_stride = out_stride;
    a.causal = c.causal;
    a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    ref::Attention(q + cu_q[s] * q_stride, k + cu_k[s] * kv_stride, v + cu_k[s] * kv_stride, a,
                   out + cu_q[s] * out_stride, KernelWorkspace(KernelConfig(), nullptr));
  }
}

// |got - want| <= rel * scale + abs per element (scale: a bound on the element's magnitude terms).
void ExpectNearScaled(const std::vector<float>& got, const std::vector<float>& want,
                      const std::vector<float>& scale, float rel, float abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= rel * scale[i] + abs)) {
      if (++bad <= 5) ADD_FAILURE() << what << " at " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " outside rel " << rel
                    << " of the scale";
}

template <typename T>
void CheckVarlen(cu::StreamHandle stream, const VarlenCase& c,
                 cu::VarlenKernel kernel = cu::VarlenKernel::kAuto) {
  const std::string what = std::string("VarlenAttention ") + TypeName<T>() + " " +
                           cu::VarlenKernelName(kernel) + " " + Describe(c);
  const int64_t qd = c.heads * c.head_dim, kd = c.kv_heads * c.head_dim;
  std::vector<int32_t> cu_q{0}, cu_k{0};
  int64_t max_q = 0;
  for (const auto& [nq, nkv] : c.seqs) {
    cu_q.push_back(cu_q.back() + static_cast<int32_t>(nq));
    cu_k.push_back(cu_k.back() + static_cast<int32_t>(nkv));
    max_q = std::max(max_q, nq);
  }
  const int64_t tq = cu_q.back(), tk = cu_k.back();
  // Fused: one buffer [T, qd + 2 kd] holding q | k | v per row. Else q [tq, qd] and kv [tk, 2 kd].
  const int64_t q_stride = c.fused_qkv ? qd + 2 * kd : qd, kv_stride = c.fused_qkv ? qd + 2 * kd : 2 * kd;
  const uint32_t seed = static_cast<uint32_t>(tq * 31 + tk * 7 + c.head_dim);
  const std::vector<float> qbuf =
      Representable<T>(RandomVec(static_cast<size_t>(tq * q_stride), seed, -1, 1));
  const std::vector<float> kvbuf =
      c.fused_qkv ? qbuf : Representable<T>(RandomVec(static_cast<size_t>(tk * kv_stride), seed + 1, -1, 1));
  const int64_t k_off = c.fused_qkv ? qd : 0, v_off = k_off + kd;
  const int64_t out_stride = c.in_place ? q_stride : qd;
  std::vector<float> want = c.in_place ? qbuf : std::vector<float>(static_cast<size_t>(tq * qd), 0.0f);
  std::vector<float> q_copy = qbuf;  // the twin's queries stay unchanged when it writes in place
  VarlenTwin(c, cu_q, cu_k, q_copy.data(), kvbuf.data() + k_off, kvbuf.data() + v_off, q_stride, kv_stride,
             want.data(), out_stride);

  const size_t offset = c.aligned ? 0 : 1;
  CUDA_TEST_ASSIGN(DeviceArray<T> dq, ToDevice<T>(qbuf, offset));
  DeviceArray<T> dkv_own;
  if (!c.fused_qkv) {
    CUDA_TEST_ASSIGN(dkv_own, ToDevice<T>(kvbuf, offset));
  }
  const DeviceArray<T>& dkv = c.fused_qkv ? dq : dkv_own;
  CUDA_TEST_ASSIGN(DeviceArray<T> dout, ToDevice<T>(std::vector<float>(want.size(), 0.0f)));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dcu_q, IntsToDevice(cu_q));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dcu_k, IntsToDevice(cu_k));
  cu::VarlenAttentionShape s;
  s.num_seqs = static_cast<int64_t>(c.seqs.size());
  s.cu_seqlens_q = dcu_q.as<int32_t>();
  s.cu_seqlens_k = dcu_k.as<int32_t>();
  s.max_seqlen_q = max_q;
  s.num_heads = c.heads;
  s.num_kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.q_stride = q_stride;
  s.k_stride = s.v_stride = kv_stride;
  s.out_stride = out_stride;
  s.causal = c.causal;
  s.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  s.kernel = kernel;
  T* out = c.in_place ? dq.data() : dout.data();
  CUDA_TEST_ASSERT_OK(cu::VarlenAttention(dq.data(), dkv.data() + k_off, dkv.data() + v_off, s, out, stream));
  CUDA_TEST_ASSIGN(std::vector<float> got, ToHost(c.in_place ? dq : dout));
  // In place over a fused buffer: the k and v columns must come back untouched (want holds them).
  if constexpr (sizeof(T) == 4) {
    ExpectNear(got, want, AttnTol<T>(), what);
  } else {
    // bf16: the tensor-core form rounds the probabilities to bf16 before P V, so an output may be
    // off by 2^-8 of sum_i p_i |v_i| (the attention of |v|, computed by the twin into `scale`)
    // besides its own rounding (2^-8 of |want|, at most that sum): bound 2^-7 of it, plus abs.
    std::vector<float> mixed = kvbuf;
    for (int64_t r = 0; r < tk; ++r) {
      for (int64_t j = 0; j < kd; ++j)
        mixed[r * kv_stride + v_off + j] = std::fabs(mixed[r * kv_stride + v_off + j]);
    }
    std::vector<float> scale(want.size());
    for (size_t i = 0; i < want.size(); ++i) scale[i] = std::fabs(want[i]);  // untouched columns: exact
    std::vector<float> q_again = qbuf;
    VarlenTwin(c, cu_q, cu_k, q_again.data(), mixed.data() + k_off, mixed.data() + v_off, q_stride, kv_stride,
               scale.data(), out_stride);
    ExpectNearScaled(got, want, scale, 1.0f / 128.0f, AttnTol<T>().abs, what);
  }
}

// The suite's cases through one kernel form; a tensor-core form skips the odd head dims it does not
// take (kAuto sends those to SIMT).
template <typename T>
void VarlenSuite(cu::StreamHandle stream, cu::VarlenKernel kernel = cu::VarlenKernel::kAuto) {
  const bool tensor_cores = kernel == cu::VarlenKernel::kTensorCoreWmma ||
                            kernel == cu::VarlenKernel::kTensorCoreMma ||
                            kernel == cu::VarlenKernel::kTensorCoreMmaWide;
  const int64_t max_head = kernel == cu::VarlenKernel::kTensorCoreMmaWide ? 96 : 128;
  std::vector<VarlenCase> cases = {
      // The ViT: one pass over several images of awkward sizes (one patch, under / over a tile,
      // over two tiles: the key tiles' double buffer turns over).
      {16, 16, 80, false, true, false, {{1, 1}, {37, 37}, {64, 64}, {100, 100}, {5, 5}, {130, 130}}},
      {16, 16, 80, false, true, true, {{33, 33}, {7, 7}}},
      // The decoder's prefill: causal, several prompts, some after an earlier context (n_kv > n_q),
      // an empty one, one token.
      {14, 2, 64, true, false, false, {{1, 1}, {33, 33}, {5, 40}, {0, 0}, {64, 64}, {31, 100}, {1, 77}}},
      {14, 2, 64, true, false, true, {{45, 45}, {3, 70}}},
      // Non-causal GQA with separate query and key lengths, keys absent for one sequence.
      {14, 2, 64, false, false, false, {{9, 50}, {4, 0}, {40, 3}}},
      // A head of 128 (shared memory past 48 KiB) and odd head dims.
      {4, 2, 128, true, false, false, {{70, 70}, {2, 9}}},
      {3, 1, 3, false, false, false, {{5, 5}, {40, 33}}},
      {2, 2, 81, true, true, false, {{35, 35}}},
      // Aligned buffers (the model's own): the ViT's fused rows and the decoder's separate k/v, in
      // bf16 through the tensor-core forms' whole-vector (cp.async) loads.
      {16, 16, 80, false, true, false, {{1, 1}, {37, 37}, {100, 100}, {200, 200}}, true},
      {14, 2, 64, true, false, false, {{1, 1}, {33, 33}, {5, 40}, {64, 64}, {150, 150}}, true},
      {4, 2, 128, true, false, true, {{70, 70}, {2, 9}}, true},
      {4, 4, 16, false, false, false, {{65, 65}, {3, 130}}, true},
  };
  for (const VarlenCase& c : cases) {
    if (tensor_cores && (c.head_dim % 16 != 0 || c.head_dim > max_head)) continue;
    ASSERT_NO_FATAL_FAILURE(CheckVarlen<T>(stream, c, kernel));
  }
}

TEST_F(CudaAttentionTest, VarlenF32) { VarlenSuite<float>(stream()); }
TEST_F(CudaAttentionTest, VarlenBf16) { VarlenSuite<Bf16>(stream()); }
// Each bf16 form held to the twin on its own (kAuto above runs the mma form where it fits).
TEST_F(CudaAttentionTest, VarlenBf16EachKernel) {
  for (cu::VarlenKernel k : {cu::VarlenKernel::kTensorCoreMma, cu::VarlenKernel::kTensorCoreMmaWide,
                             cu::VarlenKernel::kTensorCoreWmma, cu::VarlenKernel::kSimt}) {
    SCOPED_TRACE(cu::VarlenKernelName(k));
    ASSERT_NO_FATAL_FAILURE(VarlenSuite<Bf16>(stream(), k));
  }
}

// Many images in one pass (more sequences than any one grid row) and one long image.
TEST_F(CudaAttentionTest, VarlenManyAndLong) {
  std::mt19937 rng(5);
  VarlenCase many{16, 16, 80, false, true, false, {}};
  for (int i = 0; i < 70; ++i) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 50);
    many.seqs.push_back({n, n});
  }
  for (cu::VarlenKernel k : {cu::VarlenKernel::kTensorCoreMma, cu::VarlenKernel::kTensorCoreMmaWide,
                             cu::VarlenKernel::kTensorCoreWmma}) {
    ASSERT_NO_FATAL_FAILURE(CheckVarlen<Bf16>(stream(), many, k));
    ASSERT_NO_FATAL_FAILURE(
        CheckVarlen<Bf16>(stream(), {16, 16, 80, false, true, false, {{3, 3}, {600, 600}}, true}, k));
    ASSERT_NO_FATAL_FAILURE(
        CheckVarlen<Bf16>(stream(), {14, 2, 64, true, false, false, {{513, 513}, {200, 900}}, true}, k));
  }
  ASSERT_NO_FATAL_FAILURE(
      CheckVarlen<float>(stream(), {14, 2, 64, true, false, false, {{513, 513}, {200, 900}}}));
}

// One decode step over a paged cache laid out as engine::BlockPool: per block, per layer, K
// [block_size, kd] then V; the test reads layer 1 of 2, so blocks are 4 * block_size rows apart.
struct PagedCase {
  int64_t heads, kv_heads, head_dim, block_size;
  std::vector<int64_t> contexts;  // per sequence
};

// split_keys > 0: the split (flash-decoding) form, chunks of that many keys.
template <typename T>
void CheckPaged(cu::StreamHandle stream, const PagedCase& c, int64_t split_keys = 0) {
  std::string what = std::string("PagedDecodeAttention ") + TypeName<T>() + " split " +
                     std::to_string(split_keys) + " " + std::to_string(c.heads) + "/" +
                     std::to_string(c.kv_heads) + "x" + std::to_string(c.head_dim) + " block " +
                     std::to_string(c.block_size) + " contexts";
  for (int64_t n : c.contexts) what += " " + std::to_string(n);
  const int64_t qd = c.heads * c.head_dim, kd = c.kv_heads * c.head_dim, bs = c.block_size;
  const int64_t layers = 2, layer = 1, block_stride = layers * 2 * bs * kd;
  const int64_t seqs = static_cast<int64_t>(c.contexts.size());
  int64_t max_blocks = 1, total_blocks = 0;
  for (int64_t n : c.contexts) {
    max_blocks = std::max(max_blocks, (n + bs - 1) / bs);
    total_blocks += (n + bs - 1) / bs;
  }
  // Block ids: a shuffled permutation of twice the blocks needed (ids spread, none contiguous in order).
  std::vector<int32_t> ids(static_cast<size_t>(2 * total_blocks + 1));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(static_cast<uint32_t>(total_blocks)));
  const int64_t table_stride = max_blocks + 1;  // a spare entry per row, never read
  std::vector<int32_t> tables(static_cast<size_t>(seqs * table_stride), -1);
  for (int64_t s = 0, next = 0; s < seqs; ++s) {
    for (int64_t b = 0; b < (c.contexts[s] + bs - 1) / bs; ++b) tables[s * table_stride + b] = ids[next++];
  }
  const std::vector<float> pool = Representable<T>(
      RandomVec(static_cast<size_t>(static_cast<int64_t>(ids.size()) * block_stride), 11, -1.0f, 1.0f));
  const int64_t q_stride = qd + 2 * kd;  // queries read from a fused qkv row
  const std::vector<float> q =
      Representable<T>(RandomVec(static_cast<size_t>(seqs * q_stride), 12, -1.0f, 1.0f));
  const float* k_cache = pool.data() + layer * 2 * bs * kd;
  const float* v_cache = k_cache + bs * kd;

  std::vector<float> want(static_cast<size_t>(seqs * qd), 0.0f);
  for (int64_t s = 0; s < seqs; ++s) {
    std::vector<const float*> kb, vb;
    for (int64_t b = 0; b * bs < c.contexts[s]; ++b) {
      kb.push_back(k_cache + tables[s * table_stride + b] * block_stride);
      vb.push_back(v_cache + tables[s * table_stride + b] * block_stride);
    }
    AttentionShape a;
    a.n_q = 1;
    a.n_kv = c.contexts[s];
    a.num_heads = c.heads;
    a.num_kv_heads = c.kv_heads;
    a.head_dim = c.head_dim;
    a.q_stride = q_stride;
    a.kv_stride = kd;
    a.out_stride = qd;
    a.causal = true;
    a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    a.k_blocks = kb.data();
    a.v_blocks = vb.data();
    a.kv_block = bs;
    ref::Attention(q.data() + s * q_stride, nullptr, nullptr, a, want.data() + s * qd,
                   KernelWorkspace(KernelConfig(), nullptr));
  }

  std::vector<int32_t> lens(c.contexts.begin(), c.contexts.end());
  CUDA_TEST_ASSIGN(DeviceArray<T> dq, ToDevice<T>(q));
  CUDA_TEST_ASSIGN(DeviceArray<T> dpool, ToDevice<T>(pool));
  CUDA_TEST_ASSIGN(DeviceArray<T> dout, ToDevice<T>(std::vector<float>(want.size(), 7.0f)));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dlens, IntsToDevice(lens));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dtables, IntsToDevice(tables));
  cu::PagedDecodeShape s;
  s.num_seqs = seqs;
  s.num_heads = c.heads;
  s.num_kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.q_stride = q_stride;
  s.out_stride = qd;
  s.context_lens = dlens.as<int32_t>();
  s.block_tables = dtables.as<int32_t>();
  s.block_table_stride = table_stride;
  s.block_size = bs;
  s.block_stride = block_stride;
  s.row_stride = kd;
  s.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  s.split_keys = split_keys;
  // The workspace starts as NaN: the merge must read only what the chunks wrote.
  const int64_t ws = cu::PagedDecodeWorkspaceFloats(s);
  CUDA_TEST_ASSIGN(DeviceArray<float> dws,
                   ToDevice<float>(std::vector<float>(static_cast<size_t>(std::max<int64_t>(1, ws)), NAN)));
  s.workspace = split_keys > 0 ? dws.data() : nullptr;
  const T* dk = dpool.data() + layer * 2 * bs * kd;
  CUDA_TEST_ASSERT_OK(cu::PagedDecodeAttention(dq.data(), dk, dk + bs * kd, s, dout.data(), stream));
  CUDA_TEST_ASSIGN(std::vector<float> got, ToHost(dout));
  ExpectNear(got, want, AttnTol<T>(), what);
}

template <typename T>
void PagedSuite(cu::StreamHandle stream, int64_t split_keys = 0) {
  // The decoder (14 over 2 heads of 64) with the engine's 16-token blocks: a context of 1, exactly
  // a block, a block + 1, none, and a batch of many different lengths.
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {14, 2, 64, 16, {1}}, split_keys));
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {14, 2, 64, 16, {16}}, split_keys));
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {14, 2, 64, 16, {17}}, split_keys));
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {14, 2, 64, 16, {0, 5, 0}}, split_keys));
  std::vector<int64_t> many;
  std::mt19937 rng(3);
  for (int i = 0; i < 37; ++i) many.push_back(1 + static_cast<int64_t>(rng() % 700));
  many.push_back(128);
  many.push_back(129);
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {14, 2, 64, 16, many}, split_keys));
  // The CPU decoder's own 256-token blocks; a long context over many warps' tiles.
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {14, 2, 64, 256, {255, 256, 257, 1500}}, split_keys));
  // No GQA; a group of 16 (two chunks of heads per block); a head of 128; odd sizes.
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {16, 16, 80, 16, {1, 33, 300}}, split_keys));
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {16, 1, 64, 7, {1, 7, 8, 99, 300}}, split_keys));
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {4, 2, 128, 16, {3, 200}}, split_keys));
  ASSERT_NO_FATAL_FAILURE(CheckPaged<T>(stream, {3, 3, 5, 1, {1, 2, 65, 300}}, split_keys));
}

TEST_F(CudaAttentionTest, PagedDecodeF32) { PagedSuite<float>(stream()); }
TEST_F(CudaAttentionTest, PagedDecodeBf16) { PagedSuite<Bf16>(stream()); }
// The split form: chunks of one and of two tiles' worth of keys per warp group (contexts under,
// at and past a chunk, empty ones, chunks past a context that must stay unread).
TEST_F(CudaAttentionTest, PagedDecodeSplit) {
  for (int64_t split : {int64_t{128}, int64_t{256}}) {
    SCOPED_TRACE(split);
    ASSERT_NO_FATAL_FAILURE(PagedSuite<float>(stream(), split));
    ASSERT_NO_FATAL_FAILURE(PagedSuite<Bf16>(stream(), split));
  }
}

// Argument checks happen before anything touches the device: these run everywhere.
TEST(CudaAttentionArgsTest, RejectsBadShapesAndAcceptsEmptyWork) {
  float* fake = reinterpret_cast<float*>(uintptr_t{256});
  const int32_t* ifake = reinterpret_cast<const int32_t*>(uintptr_t{512});
  cu::VarlenAttentionShape v;
  v.num_seqs = 2;
  v.cu_seqlens_q = v.cu_seqlens_k = ifake;
  v.max_seqlen_q = 10;
  v.num_heads = 14, v.num_kv_heads = 2, v.head_dim = 64;
  v.q_stride = v.out_stride = 14 * 64;
  v.k_stride = v.v_stride = 2 * 64;
  auto varlen = [&](const cu::VarlenAttentionShape& s) {
    return cu::VarlenAttention(fake, fake, fake, s, fake).code();
  };
  cu::VarlenAttentionShape bad = v;
  bad.num_kv_heads = 3;  // does not divide 14
  EXPECT_EQ(varlen(bad), StatusCode::kInvalidArgument);
  bad = v;
  bad.head_dim = cu::kMaxAttentionHeadDim + 1;
  bad.q_stride = bad.out_stride = 14 * bad.head_dim, bad.k_stride = bad.v_stride = 2 * bad.head_dim;
  EXPECT_EQ(varlen(bad), StatusCode::kInvalidArgument);
  bad = v;
  bad.k_stride = 2 * 64 - 1;
  EXPECT_EQ(varlen(bad), StatusCode::kInvalidArgument);
  bad = v;
  bad.num_seqs = -1;
  EXPECT_EQ(varlen(bad), StatusCode::kInvalidArgument);
  bad = v;
  bad.cu_seqlens_k = nullptr;
  EXPECT_EQ(varlen(bad), StatusCode::kInvalidArgument);
  bad = v;
  bad.num_seqs = 0;  // nothing to do
  EXPECT_TRUE(cu::VarlenAttention(static_cast<const float*>(nullptr), nullptr, nullptr, bad, nullptr).ok());
  // A forced kernel form the type or the head size does not have: refused before any launch.
  for (cu::VarlenKernel k : {cu::VarlenKernel::kTensorCoreMma, cu::VarlenKernel::kTensorCoreMmaWide,
                             cu::VarlenKernel::kTensorCoreWmma}) {
    bad = v;
    bad.kernel = k;  // fp32 has only the SIMT form
    EXPECT_EQ(varlen(bad), StatusCode::kInvalidArgument) << cu::VarlenKernelName(k);
    bad.head_dim = 3;  // no tensor-core form for a head of 3
    bad.q_stride = bad.out_stride = 14 * 3, bad.k_stride = bad.v_stride = 2 * 3;
    Bf16* bfake = reinterpret_cast<Bf16*>(uintptr_t{256});
    EXPECT_EQ(cu::VarlenAttention(bfake, bfake, bfake, bad, bfake).code(), StatusCode::kInvalidArgument)
        << cu::VarlenKernelName(k);
  }
  bad = v;
  bad.kernel = cu::VarlenKernel::kTensorCoreMmaWide;  // built for heads up to 96
  bad.head_dim = 128;
  bad.q_stride = bad.out_stride = 14 * 128, bad.k_stride = bad.v_stride = 2 * 128;
  Bf16* bfake = reinterpret_cast<Bf16*>(uintptr_t{256});
  EXPECT_EQ(cu::VarlenAttention(bfake, bfake, bfake, bad, bfake).code(), StatusCode::kInvalidArgument);

  cu::PagedDecodeShape p;
  p.num_seqs = 3;
  p.num_heads = 14, p.num_kv_heads = 2, p.head_dim = 64;
  p.q_stride = p.out_stride = 14 * 64;
  p.context_lens = p.block_tables = ifake;
  p.block_table_stride = 4;
  p.block_size = 16;
  p.block_stride = 2 * 16 * 128;
  p.row_stride = 128;
  auto paged = [&](const cu::PagedDecodeShape& s) {
    return cu::PagedDecodeAttention(fake, fake, fake, s, fake).code();
  };
  cu::PagedDecodeShape pbad = p;
  pbad.block_size = 0;
  EXPECT_EQ(paged(pbad), StatusCode::kInvalidArgument);
  pbad = p;
  pbad.row_stride = 127;
  EXPECT_EQ(paged(pbad), StatusCode::kInvalidArgument);
  pbad = p;
  pbad.block_tables = nullptr;
  EXPECT_EQ(paged(pbad), StatusCode::kInvalidArgument);
  pbad = p;
  pbad.num_kv_heads = 0;
  EXPECT_EQ(paged(pbad), StatusCode::kInvalidArgument);
  pbad = p;
  pbad.split_keys = 100;  // not a multiple of kPagedDecodeSplitUnit
  pbad.workspace = fake;
  EXPECT_EQ(paged(pbad), StatusCode::kInvalidArgument);
  pbad.split_keys = int64_t{1} << 31;  // a multiple of the unit, but past any context
  EXPECT_EQ(paged(pbad), StatusCode::kInvalidArgument);
  pbad.split_keys = cu::kPagedDecodeSplitUnit;
  pbad.workspace = nullptr;  // a split without a workspace
  EXPECT_EQ(paged(pbad), StatusCode::kInvalidArgument);
  // The workspace a split needs: every head of every sequence, per chunk, head_dim + 2 floats.
  pbad.block_table_stride = 4, pbad.block_size = 16;  // 64 keys: one chunk of 128
  EXPECT_EQ(cu::PagedDecodeSplits(pbad), 1);
  EXPECT_EQ(cu::PagedDecodeWorkspaceFloats(pbad), 3 * 14 * 1 * 66);
  pbad.block_table_stride = 17;  // 272 keys: three chunks
  EXPECT_EQ(cu::PagedDecodeSplits(pbad), 3);
  pbad.split_keys = 0;
  EXPECT_EQ(cu::PagedDecodeWorkspaceFloats(pbad), 0);
  pbad = p;
  pbad.num_seqs = 0;
  EXPECT_TRUE(
      cu::PagedDecodeAttention(static_cast<const Bf16*>(nullptr), nullptr, nullptr, pbad, nullptr).ok());
}

}  // namespace
}  // namespace cuda_test
}  // namespace kernels
}  // namespace mineru
