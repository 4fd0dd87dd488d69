// Attention: the tiled online-softmax kernel against the two-pass scalar reference on every
// target — non-causal (vision layout, interleaved qkv strides), causal prefill with
// kv_offset, GQA, decode (n_q = 1) including the key-split path, odd head dims.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "base/bf16.h"
#include "kernel_test_util.h"
#include "kernels/quant.h"
#include "kernels/reference.h"

namespace mineru {
namespace kernels {
namespace {

using testing::RandomVec;

class AttentionTest : public testing::PerTarget {};

struct Case {
  int64_t n_q, n_kv, heads, kv_heads, head_dim;
  bool causal;
  bool interleaved;  // q, k, v rows interleaved in one [n, 3, heads*hd] buffer (vision)
};

// The case's shape; strides are the caller's.
AttentionShape ShapeOf(const Case& c) {
  AttentionShape s;
  s.n_q = c.n_q;
  s.n_kv = c.n_kv;
  s.num_heads = c.heads;
  s.num_kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.causal = c.causal;
  s.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return s;
}

// The kernel with ctx against its twin (on the calling thread, ctx's configuration).
void RunAttentionCase(const Case& c, const KernelContext& ctx, uint32_t seed, float spread = 1.0f,
                      float rel = 1e-5f, bool int8_qk = false, bool int8_pv = false) {
  AttentionShape s = ShapeOf(c);
  s.int8_qk = int8_qk;
  s.int8_pv = int8_pv;
  const int64_t qd = c.heads * c.head_dim, kd = c.kv_heads * c.head_dim;
  std::vector<float> qbuf, kbuf, vbuf, shared;
  const float *q, *k, *v;
  if (c.interleaved) {
    // Vision: one [n, 3 * qd] buffer, misaligned by one float.
    shared = RandomVec(static_cast<size_t>(c.n_kv * 3 * qd + 1), seed, -spread, spread);
    q = shared.data() + 1;
    k = q + qd;
    v = q + 2 * qd;
    s.q_stride = s.kv_stride = 3 * qd;
  } else {
    qbuf = RandomVec(static_cast<size_t>(c.n_q * qd + 1), seed, -spread, spread);
    kbuf = RandomVec(static_cast<size_t>(c.n_kv * kd + 3), seed + 1, -spread, spread);
    vbuf = RandomVec(static_cast<size_t>(c.n_kv * kd), seed + 2);
    q = qbuf.data() + 1;
    k = kbuf.data() + 3;
    v = vbuf.data();
    s.q_stride = qd;
    s.kv_stride = kd;
  }
  s.out_stride = qd + 5;  // padded output rows
  std::vector<float> want(static_cast<size_t>(c.n_q * s.out_stride), 0.0f), got(want.size(), 0.0f);
  ref::Attention(q, k, v, s, want.data(), ctx.Serial(0));
  cpu::Attention(q, k, v, s, got.data(), ctx);
  int bad = 0;
  for (int64_t i = 0; i < c.n_q; ++i) {
    for (int64_t j = 0; j < s.out_stride; ++j) {
      const float a = got[i * s.out_stride + j], b = want[i * s.out_stride + j];
      const bool pad = j >= qd;
      if (pad ? a != 0.0f : !(std::fabs(a - b) <= rel * (std::fabs(b) + 0.2f))) {
        if (++bad <= 5) {
          ADD_FAILURE() << "n_q=" << c.n_q << " n_kv=" << c.n_kv << " H=" << c.heads << " KV=" << c.kv_heads
                        << " hd=" << c.head_dim << " causal=" << c.causal << " at (" << i << "," << j
                        << ") got " << a << " want " << b;
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST_P(AttentionTest, SmallAndOddShapes) {
  const Case cases[] = {
      {1, 1, 1, 1, 8, false, false},   {1, 1, 1, 1, 8, true, false},     {3, 3, 2, 1, 5, true, false},
      {7, 7, 2, 2, 13, false, false},  {7, 20, 4, 2, 16, true, false},   {17, 17, 3, 3, 80, false, true},
      {33, 70, 4, 2, 64, true, false}, {50, 50, 2, 2, 80, true, false},  {1, 37, 14, 2, 64, true, false},
      {2, 40, 14, 2, 64, true, false}, {1, 129, 2, 1, 24, false, false}, {5, 300, 7, 7, 17, true, false},
  };
  uint32_t seed = 1;
  const KernelWorkspace ctx = Ctx();  // one for all: its kept scratch serves every shape
  for (const Case& c : cases) RunAttentionCase(c, ctx, seed++);
}

TEST_P(AttentionTest, ManyTilesAndBlocksWithPool) {
  ThreadPool pool(3);
  const Case cases[] = {
      {300, 300, 2, 2, 80, false, true},   // vision-like: several row blocks and key tiles
      {200, 260, 14, 2, 64, true, false},  // causal prefill continuing a cached prefix
      {130, 130, 4, 1, 40, true, false},   // MQA
  };
  uint32_t seed = 50;
  const KernelWorkspace ctx = Ctx(&pool);
  for (const Case& c : cases) RunAttentionCase(c, ctx, seed++);
}

TEST_P(AttentionTest, DecodeKeySplitsMerge) {
  // 2 KV heads and 4 workers: decode splits the keys and merges the partial softmaxes.
  ThreadPool pool(4);
  const KernelWorkspace ctx = Ctx(&pool);
  RunAttentionCase({1, 1500, 14, 2, 64, true, false}, ctx, 77);
  RunAttentionCase({1, 1000, 4, 1, 80, false, false}, ctx, 78);
  RunAttentionCase({2, 2000, 2, 1, 64, true, false}, ctx, 79);
}

// Int8 Q Kᵀ (vision with q8 weights): the kernel and its twin quantize with the same functions,
// so they agree as tightly as the fp32 path, on every target (the int8 path runs on AVX-512
// VNNI; elsewhere both stay fp32); head dims not a multiple of 4, several tiles, key splits.
TEST_P(AttentionTest, Int8QkMatchesItsTwin) {
  ThreadPool pool(4);
  const Case cases[] = {{17, 17, 3, 3, 80, false, true},   {7, 7, 2, 2, 13, false, false},
                        {1, 129, 2, 1, 24, false, false},  {300, 300, 2, 2, 80, false, true},
                        {1, 1000, 4, 1, 80, false, false}, {50, 50, 2, 2, 80, true, false}};
  uint32_t seed = 300;
  const KernelWorkspace ctx = Ctx(&pool);
  for (const Case& c : cases) RunAttentionCase(c, ctx, seed++, 1.0f, 1e-5f, /*int8_qk=*/true);
}

// The int8 attention's quantizers as each target runs them give the scalar twins' bytes and
// scales exactly (K and V with offsets per dim, a constant row whose scale is 0, odd head dims).
TEST_P(AttentionTest, Int8QuantizersEqualTheirTwins) {
  for (int64_t hd : {80, 13, 24, 100}) {
    const int64_t n = 37, heads = 2, width = heads * hd + 3;
    std::vector<float> kv =
        RandomVec(static_cast<size_t>(n * width), 900 + static_cast<uint32_t>(hd), -3.0f, 3.0f);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t d = 0; d < heads * hd; ++d) kv[j * width + d] += 0.5f * static_cast<float>(d % 9) - 1.0f;
    }
    for (int64_t d = 0; d < hd; ++d) kv[5 * width + d] = 0.25f;  // one constant key row of head 0
    AttentionShape s = ShapeOf({n, n, heads, heads, hd, false, false});
    s.kv_stride = width;
    const int64_t stride = (hd + 15) / 16 * 16, k_lo = 3, nk = n - 5;
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<int8_t> want8(static_cast<size_t>(nk * stride), 7), got8(want8);
      std::vector<float> want_s(static_cast<size_t>(nk)), got_s(want_s.size());
      ref::AttentionInt8Keys(kv.data(), s, h, k_lo, nk, stride, want8.data(), want_s.data());
      cpu::AttentionInt8Keys(kv.data(), s, h, k_lo, nk, stride, got8.data(), got_s.data(), config());
      EXPECT_EQ(got8, want8) << "keys, hd " << hd << " head " << h;
      EXPECT_EQ(got_s, want_s) << "keys, hd " << hd << " head " << h;
      std::vector<float> want_vs(static_cast<size_t>(hd)), got_vs(want_vs.size()), want_mu(want_vs.size()),
          got_mu(want_vs.size());
      ref::AttentionInt8Values(kv.data(), s, h, k_lo, nk, stride, want8.data(), want_vs.data(),
                               want_mu.data());
      cpu::AttentionInt8Values(kv.data(), s, h, k_lo, nk, stride, got8.data(), got_vs.data(), got_mu.data(),
                               config());
      EXPECT_EQ(got8, want8) << "values, hd " << hd << " head " << h;
      EXPECT_EQ(got_vs, want_vs) << "values, hd " << hd;
      EXPECT_EQ(got_mu, want_mu) << "values, hd " << hd;
      std::vector<int8_t> wq(static_cast<size_t>(hd)), gq(wq.size());
      const float* row = kv.data() + (9 + h) * width + h * hd;
      EXPECT_EQ(cpu::AttentionInt8Row(row, hd, gq.data(), config()),
                ref::AttentionInt8Row(row, hd, wq.data()));
      EXPECT_EQ(gq, wq) << "row, hd " << hd;
    }
  }
}

// The quantizers' inline rounding is std::nearbyint (ties to even) over the range they use.
TEST(AttentionQuantTest, RoundHalfEvenIsNearbyint) {
  for (float x : {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, 127.5f, 254.5f, 255.49f, -127.5f, 0.0f}) {
    EXPECT_EQ(ref::RoundHalfEven(x), std::nearbyint(x)) << x;
  }
  const std::vector<float> r = RandomVec(100000, 11, -300.0f, 300.0f);
  for (float x : r) ASSERT_EQ(ref::RoundHalfEven(x), std::nearbyint(x)) << x;
}

// Int8 P V: the kernel quantizes values as its twin does (bit for bit) and probabilities with the
// same formula; they differ
// where a probability lands on a rounding boundary (the kernel's exp and online maximum against
// the twin's), and where key splits cut the tiles elsewhere, by a step of 1/255 of one weight.
// A misplaced value, tile or scale is off by far more. With and without int8 Q Kᵀ.
TEST_P(AttentionTest, Int8PvMatchesItsTwin) {
  ThreadPool pool(4);
  const Case cases[] = {
      {17, 17, 3, 3, 80, false, true},   {7, 7, 2, 2, 13, false, false},    {1, 129, 2, 1, 24, false, false},
      {300, 300, 2, 2, 80, false, true}, {1, 1000, 4, 1, 80, false, false}, {9, 70, 2, 2, 100, false, false},
      {50, 50, 2, 2, 80, true, false},   {5, 257, 2, 2, 80, false, false}};  // a tile + 1 key
  uint32_t seed = 400;
  const KernelWorkspace ctx = Ctx(&pool);
  for (const Case& c : cases) {
    RunAttentionCase(c, ctx, seed++, 1.0f, 1e-2f, /*int8_qk=*/true, /*int8_pv=*/true);
    RunAttentionCase(c, ctx, seed++, 1.0f, 1e-2f, /*int8_qk=*/false, /*int8_pv=*/true);
  }
}

// Int8 against fp32 attention on vision-like data (keys and values sharing a large offset, as
// the qkv bias gives them): every output row keeps cosine >= 0.999, with Q Kᵀ alone in int8 and
// with P V too.
TEST_P(AttentionTest, Int8StaysCloseToFp32) {
  const int64_t n = 400, heads = 2, hd = 80, qd = heads * hd;
  std::vector<float> buf = RandomVec(static_cast<size_t>(n * 3 * qd), 500, -2.0f, 2.0f);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < qd; ++d) {
      buf[i * 3 * qd + qd + d] += 4.0f + 0.05f * static_cast<float>(d % 7);
      buf[i * 3 * qd + 2 * qd + d] += 1.5f - 0.3f * static_cast<float>(d % 5);
    }
  }
  AttentionShape s = ShapeOf({n, n, heads, heads, hd, false, true});
  s.q_stride = s.kv_stride = 3 * qd;
  s.out_stride = qd;
  std::vector<float> fp32(static_cast<size_t>(n * qd)), int8(fp32.size()), qk_only;
  const KernelWorkspace ctx = Ctx();
  Attention(buf.data(), buf.data() + qd, buf.data() + 2 * qd, s, fp32.data(), ctx);
  for (bool pv : {false, true}) {
    s.int8_qk = true;
    s.int8_pv = pv;
    Attention(buf.data(), buf.data() + qd, buf.data() + 2 * qd, s, int8.data(), ctx);
    if (!pv) qk_only = int8;
    // Where the int8 P V runs, it is not the fp32 P V in disguise.
    if (pv && AttentionUsesInt8Pv(s, config())) {
      EXPECT_NE(int8, qk_only);
    }
    double worst = 1.0;
    for (int64_t i = 0; i < n * heads; ++i) {
      double dot = 0, na = 0, nb = 0;
      for (int64_t d = 0; d < hd; ++d) {
        dot += double{fp32[i * hd + d]} * int8[i * hd + d];
        na += double{fp32[i * hd + d]} * fp32[i * hd + d];
        nb += double{int8[i * hd + d]} * int8[i * hd + d];
      }
      worst = std::min(worst, dot / std::sqrt(na * nb));
    }
    EXPECT_GE(worst, 0.999) << (pv ? "int8 Q Kᵀ and P V" : "int8 Q Kᵀ");
  }
}

// In place (out == q, as the vision encoder calls it): bit-equal to the out-of-place call, fp32
// and int8, with several row blocks and workers, GQA, and the decode key-split path; the twin too.
// With no keys there is nothing to attend to: the kernel and its twin both write zeros (over
// whatever the output held), on the fp32 and the int8 paths.
TEST_P(AttentionTest, NoKeysGiveZerosInKernelAndTwin) {
  ThreadPool pool(2);
  for (bool int8 : {false, true}) {
    AttentionShape s = ShapeOf({5, 0, 4, 2, 16, false, false});
    s.int8_qk = s.int8_pv = int8;
    s.q_stride = s.out_stride = 4 * 16;
    s.kv_stride = 2 * 16;
    const std::vector<float> q = RandomVec(5 * 64, 41);
    const float unused = 0.0f;  // k and v are never read
    for (bool twin : {false, true}) {
      std::vector<float> out(5 * 64, 7.0f);
      if (twin) {
        ref::Attention(q.data(), &unused, &unused, s, out.data(), Ctx());
      } else {
        cpu::Attention(q.data(), &unused, &unused, s, out.data(), Ctx(&pool));
      }
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_EQ(out[i], 0.0f) << "twin=" << twin << " int8=" << int8 << " " << i;
    }
  }
}

TEST_P(AttentionTest, InPlaceOverTheQueriesEqualsOutOfPlace) {
  ThreadPool pool(3);
  const Case cases[] = {{300, 300, 2, 2, 80, false, true},
                        {130, 130, 4, 2, 40, false, true},
                        {1, 1000, 4, 1, 80, false, true},
                        {97, 97, 2, 2, 24, true, true}};
  uint32_t seed = 700;
  const KernelWorkspace ctx = Ctx(&pool);
  for (const Case& c : cases) {
    for (bool int8 : {false, true}) {
      AttentionShape s = ShapeOf(c);
      s.int8_qk = s.int8_pv = int8 && !c.causal;
      const int64_t qd = c.heads * c.head_dim, kd = c.kv_heads * c.head_dim, row = qd + 2 * kd;
      s.q_stride = s.kv_stride = s.out_stride = row;  // rows [q | k | v], n_q = n_kv or decode
      const std::vector<float> buf = RandomVec(static_cast<size_t>(c.n_kv * row), seed++, -2.0f, 2.0f);
      // Decode: the one query row is the last of the buffer's rows.
      const int64_t q0 = c.n_kv - c.n_q;
      std::vector<float> out(buf.size(), 0.0f);
      cpu::Attention(buf.data() + q0 * row, buf.data() + qd, buf.data() + qd + kd, s, out.data() + q0 * row,
                     ctx);
      for (bool twin : {false, true}) {
        std::vector<float> in_place = buf, want = out;
        float* q = in_place.data() + q0 * row;
        if (twin) {
          want.assign(buf.size(), 0.0f);
          ref::Attention(buf.data() + q0 * row, buf.data() + qd, buf.data() + qd + kd, s,
                         want.data() + q0 * row, ctx.Serial(0));
          ref::Attention(q, in_place.data() + qd, in_place.data() + qd + kd, s, q, ctx);
        } else {
          cpu::Attention(q, in_place.data() + qd, in_place.data() + qd + kd, s, q, ctx);
        }
        int bad = 0;
        for (int64_t i = q0; i < c.n_kv; ++i) {
          for (int64_t d = 0; d < row; ++d) {
            const float got = in_place[i * row + d];
            const float expect = d < qd ? want[i * row + d] : buf[i * row + d];  // K and V untouched
            if (got != expect && ++bad <= 3) {
              ADD_FAILURE() << "n_q=" << c.n_q << " n_kv=" << c.n_kv << " int8=" << int8 << " twin=" << twin
                            << " at (" << i << "," << d << ") got " << got << " want " << expect;
            }
          }
        }
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

TEST_P(AttentionTest, PeakedSoftmaxIsStable) {
  // Logits with a spread of ~±40: the online max rescaling must not overflow or lose the
  // peak. The result is ill-conditioned (a 1e-7 relative change of a logit of 40 moves its
  // weight by 4e-6), so the bound scales with the logit size.
  RunAttentionCase({40, 300, 2, 2, 64, false, false}, Ctx(), 90, 6.0f, 2e-4f);
  RunAttentionCase({40, 300, 2, 1, 64, true, false}, Ctx(), 91, 6.0f, 2e-4f);
}

// A case's shape with dense row strides and random q [n_q, heads * hd], k and v [n_kv,
// kv_heads * hd] drawn from seeds *seed, *seed + 1 and *seed + 2; *seed advances by 3.
struct DenseQkv {
  AttentionShape s;
  int64_t qd, kd;
  std::vector<float> q, k, v;
};
DenseQkv RandomDenseQkv(const Case& c, uint32_t* seed) {
  DenseQkv d;
  d.s = ShapeOf(c);
  d.qd = c.heads * c.head_dim;
  d.kd = c.kv_heads * c.head_dim;
  d.s.q_stride = d.s.out_stride = d.qd;
  d.s.kv_stride = d.kd;
  d.q = RandomVec(static_cast<size_t>(c.n_q * d.qd), *seed);
  d.k = RandomVec(static_cast<size_t>(c.n_kv * d.kd), *seed + 1);
  d.v = RandomVec(static_cast<size_t>(c.n_kv * d.kd), *seed + 2);
  *seed += 3;
  return d;
}

// Paged K/V (the KV cache read in place): rows scattered over blocks in shuffled order give
// the same bits as the contiguous buffers, on the SIMD kernel and on the reference, for block
// sizes that split the kernel's key panels anywhere (and the key-split decode path).
TEST_P(AttentionTest, PagedKvEqualsContiguous) {
  ThreadPool pool(4);
  const Case cases[] = {
      {1, 383, 14, 2, 64, true, false},
      {1, 1500, 14, 2, 64, true, false},
      {9, 70, 4, 2, 16, true, false},
      {33, 100, 2, 1, 80, false, false},
  };
  uint32_t seed = 200;
  for (const Case& c : cases) {
    for (int64_t bs : {1, 5, 16, 37}) {
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        const DenseQkv d = RandomDenseQkv(c, &seed);
        const AttentionShape& s = d.s;
        const int64_t qd = d.qd, kd = d.kd;
        const std::vector<float>&q = d.q, &k = d.k, &v = d.v;
        // Blocks in a pool, in reverse order of use, each with its own rows.
        const int64_t nblocks = (c.n_kv + bs - 1) / bs;
        std::vector<float> kpool(static_cast<size_t>(nblocks * bs * kd), NAN), vpool(kpool.size(), NAN);
        std::vector<const float*> kb(static_cast<size_t>(nblocks)), vb(kb.size());
        for (int64_t b = 0; b < nblocks; ++b) {
          const int64_t slot = nblocks - 1 - b;
          kb[static_cast<size_t>(b)] = kpool.data() + slot * bs * kd;
          vb[static_cast<size_t>(b)] = vpool.data() + slot * bs * kd;
        }
        for (int64_t j = 0; j < c.n_kv; ++j) {
          std::copy_n(&k[static_cast<size_t>(j * kd)], kd, const_cast<float*>(kb[j / bs]) + (j % bs) * kd);
          std::copy_n(&v[static_cast<size_t>(j * kd)], kd, const_cast<float*>(vb[j / bs]) + (j % bs) * kd);
        }
        AttentionShape paged = s;
        paged.k_blocks = kb.data();
        paged.v_blocks = vb.data();
        paged.kv_block = bs;
        const size_t n = static_cast<size_t>(c.n_q * qd);
        std::vector<float> want(n), got(n), ref_want(n), ref_got(n);
        const KernelWorkspace ctx = Ctx(p);
        cpu::Attention(q.data(), k.data(), v.data(), s, want.data(), ctx);
        cpu::Attention(q.data(), nullptr, nullptr, paged, got.data(), ctx);
        ref::Attention(q.data(), k.data(), v.data(), s, ref_want.data(), ctx);
        ref::Attention(q.data(), nullptr, nullptr, paged, ref_got.data(), ctx);
        EXPECT_EQ(got, want) << "n_kv=" << c.n_kv << " bs=" << bs << " pool=" << (p != nullptr);
        EXPECT_EQ(ref_got, ref_want) << "n_kv=" << c.n_kv << " bs=" << bs;
      }
    }
  }
}

// fp16 paged K/V (a half-precision KV cache): the same bits as fp32 paged blocks holding the
// fp16 values widened, on the SIMD kernel and on the twin, and the two agree (decode, prefill,
// GQA, head sizes that are not whole vectors, blocks that split the key panels anywhere).
TEST_P(AttentionTest, Fp16PagedKvEqualsItsWidenedValues) {
  ThreadPool pool(4);
  const Case cases[] = {
      {1, 383, 14, 2, 64, true, false},
      {1, 1500, 14, 2, 64, true, false},
      {9, 70, 4, 2, 16, true, false},
      {33, 100, 2, 1, 80, true, false},
      {48, 300, 14, 2, 64, true, false},
      {5, 90, 4, 2, 20, true, false},  // rows that end inside a vector (the widening's scalar tail)
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    for (int64_t bs : {1, 16, 37}) {
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        DenseQkv d = RandomDenseQkv(c, &seed);
        for (float& x : d.k) x *= 4.0f;  // scores spread as a model's
        const AttentionShape& s = d.s;
        const int64_t qd = d.qd, kd = d.kd;
        const std::vector<float>&q = d.q, &k = d.k, &v = d.v;
        // Blocks in reverse order of use; fp16 rows and their fp32 widening side by side.
        const int64_t nblocks = (c.n_kv + bs - 1) / bs;
        const size_t cells = static_cast<size_t>(nblocks * bs * kd);
        std::vector<uint16_t> k16(cells, 0x7e00), v16(cells, 0x7e00);  // NaN where unused
        std::vector<float> k32(cells, NAN), v32(cells, NAN);
        std::vector<const uint16_t*> kb16(static_cast<size_t>(nblocks)), vb16(kb16.size());
        std::vector<const float*> kb32(kb16.size()), vb32(kb16.size());
        for (int64_t b = 0; b < nblocks; ++b) {
          const size_t slot = static_cast<size_t>((nblocks - 1 - b) * bs * kd);
          kb16[static_cast<size_t>(b)] = k16.data() + slot;
          vb16[static_cast<size_t>(b)] = v16.data() + slot;
          kb32[static_cast<size_t>(b)] = k32.data() + slot;
          vb32[static_cast<size_t>(b)] = v32.data() + slot;
        }
        for (int64_t j = 0; j < c.n_kv; ++j) {
          const size_t at = static_cast<size_t>((nblocks - 1 - j / bs) * bs * kd + (j % bs) * kd);
          for (int64_t d = 0; d < kd; ++d) {
            const size_t src = static_cast<size_t>(j * kd + d), dst = at + static_cast<size_t>(d);
            k16[dst] = F32ToF16(k[src]);
            v16[dst] = F32ToF16(v[src]);
            k32[dst] = F16ToF32(k16[dst]);
            v32[dst] = F16ToF32(v16[dst]);
          }
        }
        AttentionShape half = s, widened = s;
        half.k_blocks16 = kb16.data();
        half.v_blocks16 = vb16.data();
        half.kv_block = widened.kv_block = bs;
        widened.k_blocks = kb32.data();
        widened.v_blocks = vb32.data();
        const size_t n = static_cast<size_t>(c.n_q * qd);
        std::vector<float> want(n), got(n), ref_want(n), ref_got(n);
        const KernelWorkspace ctx = Ctx(p);
        cpu::Attention(q.data(), nullptr, nullptr, widened, want.data(), ctx);
        cpu::Attention(q.data(), nullptr, nullptr, half, got.data(), ctx);
        ref::Attention(q.data(), nullptr, nullptr, widened, ref_want.data(), ctx);
        ref::Attention(q.data(), nullptr, nullptr, half, ref_got.data(), ctx);
        EXPECT_EQ(got, want) << "n_kv=" << c.n_kv << " bs=" << bs << " pool=" << (p != nullptr);
        EXPECT_EQ(ref_got, ref_want) << "n_kv=" << c.n_kv << " bs=" << bs;
        int bad = 0;
        for (size_t i = 0; i < n; ++i)
          bad += std::fabs(got[i] - ref_got[i]) > 1e-4f * (1.0f + std::fabs(ref_got[i]));
        EXPECT_EQ(bad, 0) << "fp16 K/V, kernel vs twin: n_kv=" << c.n_kv << " bs=" << bs;
      }
    }
  }
}

// The scratch a workspace keeps between calls (each worker's fp32 block buffers, the int8 value
// packer's rows) changes no bit: calls of growing, shrinking and changing shapes through one
// workspace, on the pool and on one worker's slot (Serial, as the decoder calls it inside its own
// tasks), equal the same calls through fresh workspaces. It holds memory after them, none after
// ReleaseScratch, and serves again after that.
TEST_P(AttentionTest, KeptScratchChangesNoBitAndIsReleased) {
  ThreadPool pool(3);
  KernelWorkspace kept = Ctx(&pool);
  const Case cases[] = {{1, 300, 14, 2, 64, true, false}, {1, 1500, 14, 2, 64, true, false},
                        {40, 90, 4, 2, 80, true, false},  {60, 60, 2, 2, 80, false, false},
                        {1, 200, 14, 2, 64, true, false}, {9, 70, 4, 2, 16, true, false}};
  auto run_all = [&](uint32_t seed) {
    for (const Case& c : cases) {
      for (bool int8 : {false, true}) {
        DenseQkv d = RandomDenseQkv(c, &seed);
        d.s.int8_qk = d.s.int8_pv = int8 && !c.causal;
        const size_t n = static_cast<size_t>(c.n_q * d.qd);
        std::vector<float> want(n), got(n), want1(n), got1(n);
        cpu::Attention(d.q.data(), d.k.data(), d.v.data(), d.s, want.data(), Ctx(&pool));
        cpu::Attention(d.q.data(), d.k.data(), d.v.data(), d.s, got.data(), kept);
        cpu::Attention(d.q.data(), d.k.data(), d.v.data(), d.s, want1.data(), Ctx());
        cpu::Attention(d.q.data(), d.k.data(), d.v.data(), d.s, got1.data(), kept.Serial(2));
        EXPECT_EQ(got, want) << "n_q=" << c.n_q << " n_kv=" << c.n_kv << " int8=" << int8;
        EXPECT_EQ(got1, want1) << "serial, n_q=" << c.n_q << " n_kv=" << c.n_kv << " int8=" << int8;
      }
    }
  };
  run_all(1000);
  EXPECT_GT(kept.scratch_bytes(), 0u);
  kept.ReleaseScratch();
  EXPECT_EQ(kept.scratch_bytes(), 0u);
  run_all(2000);
}

// Keys and values packed once (PackKvInt8, from fp16 rows head-major with padded strides) and
// queries attended in runs (AttentionPacked) give Attention's int8 result over the same values
// widened to fp32, bit for bit, however the queries are split, and packed in place over the fp16
// rows as beside them; and stay within the int8 twin's tolerance of ref::Attention. Targets
// without the int8 attention kernel have no packed form (0 bytes).
TEST_P(AttentionTest, PackedKvEqualsAttentionOverItsWidenedValues) {
  ThreadPool pool(3);
  struct PCase {
    int64_t n_q, n_kv, heads, kv_heads, hd;
  };
  const PCase cases[] = {{300, 300, 2, 2, 80}, {700, 700, 3, 3, 80}, {17, 17, 2, 2, 80},
                         {40, 257, 4, 2, 13},  {90, 600, 2, 2, 100}, {1, 5, 2, 1, 16}};
  uint32_t seed = 900;
  for (const PCase& c : cases) {
    AttentionShape s;
    s.n_q = c.n_q, s.n_kv = c.n_kv, s.num_heads = c.heads, s.num_kv_heads = c.kv_heads, s.head_dim = c.hd;
    s.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
    s.int8_qk = s.int8_pv = true;
    const size_t hb = cpu::PackedKvHeadBytes(s, config());
    if (!cpu::AttentionInt8Available(config())) {
      EXPECT_EQ(hb, 0u);
      continue;
    }
    ASSERT_EQ(hb % 64, 0u);
    const int64_t qd = c.heads * c.hd, kd = c.kv_heads * c.hd, rs = c.hd + 3, hs = 2 * c.n_kv * rs + 32;
    // fp16 keys and values with an offset (as the qkv bias gives them), head-major, and widened.
    std::vector<float> q = RandomVec(static_cast<size_t>(c.n_q * qd), seed++, -2.0f, 2.0f);
    std::vector<float> kv = RandomVec(static_cast<size_t>(2 * c.n_kv * kd), seed++, -2.0f, 2.0f);
    const size_t half_bytes = static_cast<size_t>(c.kv_heads * hs) * 2;
    auto* half = static_cast<uint16_t*>(
        std::aligned_alloc(64, (std::max(half_bytes, c.kv_heads * hb) + 63) / 64 * 64));
    std::vector<float> k32(static_cast<size_t>(c.n_kv * kd)), v32(k32.size());
    for (int64_t h = 0; h < c.kv_heads; ++h) {
      for (int64_t j = 0; j < c.n_kv; ++j) {
        for (int64_t d = 0; d < c.hd; ++d) {
          const size_t at = static_cast<size_t>(j * kd + h * c.hd + d);
          uint16_t* hk = half + h * hs + j * rs + d;
          uint16_t* hv = hk + c.n_kv * rs;
          *hk = F32ToF16(kv[at] + 1.5f);
          *hv = F32ToF16(kv[k32.size() + at] - 0.5f);
          k32[at] = F16ToF32(*hk);
          v32[at] = F16ToF32(*hv);
        }
      }
    }
    s.q_stride = qd, s.kv_stride = kd, s.out_stride = qd;
    const size_t n = static_cast<size_t>(c.n_q * qd);
    std::vector<float> want(n), twin(n);
    const KernelWorkspace ctx = Ctx(&pool), serial = Ctx();
    cpu::Attention(q.data(), k32.data(), v32.data(), s, want.data(), ctx);
    ref::Attention(q.data(), k32.data(), v32.data(), s, twin.data(), serial);
    const HalfKv src{half, half + c.n_kv * rs, hs, rs};
    auto* beside = static_cast<uint8_t*>(std::aligned_alloc(64, c.kv_heads * hb));
    cpu::PackKvInt8(src, s, beside, hb, ctx);
    for (int64_t run : {c.n_q, int64_t{37}, int64_t{1}}) {
      std::vector<float> got(n, NAN);
      for (int64_t q0 = 0; q0 < c.n_q; q0 += run) {
        AttentionShape part = s;
        part.n_q = std::min(run, c.n_q - q0);
        cpu::AttentionPacked(q.data() + q0 * qd, part, beside, hb, got.data() + q0 * qd,
                             q0 % 2 ? serial : ctx);
      }
      EXPECT_EQ(got, want) << "n_kv=" << c.n_kv << " run=" << run;
    }
    int bad = 0;
    for (size_t i = 0; i < n; ++i)
      bad += !(std::fabs(want[i] - twin[i]) <= 1e-2f * (std::fabs(twin[i]) + 0.2f));
    EXPECT_EQ(bad, 0) << "packed vs twin, n_kv=" << c.n_kv;
    if (hb <= static_cast<size_t>(hs) * 2) {  // in place over the fp16 heads, as the vision encoder packs
      cpu::PackKvInt8(src, s, reinterpret_cast<uint8_t*>(half), hb, ctx);
      std::vector<float> got(n);
      cpu::AttentionPacked(q.data(), s, reinterpret_cast<uint8_t*>(half), hb, got.data(), ctx);
      EXPECT_EQ(got, want) << "in place, n_kv=" << c.n_kv;
    }
    std::free(beside);
    std::free(half);
  }
}

MINERU_INSTANTIATE_PER_TARGET(AttentionTest);

}  // namespace
}  // namespace kernels
}  // namespace mineru
