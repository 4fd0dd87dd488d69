// The paged-cache copies (kernels/cuda/kv_cache.h) against their twins, host loops over the same
// slots in the engine's BlockPool layout (per block, per layer: keys [block_size, kv_dim], then
// values): exact bits in fp32 and bf16, every element of the cache compared (the untouched ones
// keep their sentinel), at awkward shapes (one-token blocks, odd kv_dim, strides past the row, the
// last slot of the last block). Device tests skip without a GPU; the argument checks run everywhere.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/kv_cache.h"

namespace mineru {
namespace kernels {
namespace cuda_test {
namespace {

class CudaKvCacheTest : public CudaDeviceTest {};

struct Geometry {
  int64_t blocks, block_size, layers, kv_dim, layer;  // the layer whose K and V are addressed
};

// The cache of one test: layout and the element offset of the layer's keys and values.
struct Pool {
  cu::PagedKvLayout L;
  int64_t k_off = 0, v_off = 0, elements = 0;
};
Pool MakePool(const Geometry& g) {
  Pool p;
  p.L.block_size = g.block_size;
  p.L.kv_dim = g.kv_dim;
  p.L.row_stride = g.kv_dim;
  p.L.block_stride = g.layers * 2 * g.block_size * g.kv_dim;
  p.k_off = g.layer * 2 * g.block_size * g.kv_dim;
  p.v_off = p.k_off + g.block_size * g.kv_dim;
  p.elements = g.blocks * p.L.block_stride;
  return p;
}
int64_t SlotAt(const cu::PagedKvLayout& L, int32_t s) {
  return (s / L.block_size) * L.block_stride + (s % L.block_size) * L.row_stride;
}

template <typename T>
void CheckStoreAndGather(cu::StreamHandle stream, const Geometry& g, int64_t n, int64_t stride) {
  SCOPED_TRACE(std::string(TypeName<T>()) + " block_size=" + std::to_string(g.block_size) +
               " kv_dim=" + std::to_string(g.kv_dim) + " n=" + std::to_string(n));
  const Pool p = MakePool(g);
  // Distinct slots for the stores, the last one of the pool among them.
  std::vector<int32_t> all(static_cast<size_t>(g.blocks * g.block_size));
  std::iota(all.begin(), all.end(), 0);
  std::mt19937 rng(static_cast<uint32_t>(n * 31 + g.kv_dim));
  std::shuffle(all.begin(), all.end() - 1, rng);
  std::vector<int32_t> slots(all.end() - n, all.end());
  const std::vector<float> k = Representable<T>(RandomVec(static_cast<size_t>(n * stride), 5, -3.0f, 3.0f));
  const std::vector<float> v = Representable<T>(RandomVec(static_cast<size_t>(n * stride), 6, -3.0f, 3.0f));
  std::vector<float> want(static_cast<size_t>(p.elements), 7.0f);  // the sentinel
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < g.kv_dim; ++j) {
      want[p.k_off + SlotAt(p.L, slots[r]) + j] = k[r * stride + j];
      want[p.v_off + SlotAt(p.L, slots[r]) + j] = v[r * stride + j];
    }
  }
  CUDA_TEST_ASSIGN(DeviceArray<T> dk, ToDevice<T>(k));
  CUDA_TEST_ASSIGN(DeviceArray<T> dv, ToDevice<T>(v));
  CUDA_TEST_ASSIGN(DeviceArray<T> cache, ToDevice<T>(std::vector<float>(want.size(), 7.0f)));
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dslots, IntsToDevice(slots));
  CUDA_TEST_ASSERT_OK(cu::StoreKvRows(dk.data(), stride, dv.data(), stride, n, dslots.as<int32_t>(), p.L,
                                      cache.data() + p.k_off, cache.data() + p.v_off, stream));
  CUDA_TEST_ASSIGN(std::vector<float> got, ToHost(cache));
  ASSERT_EQ(got, want) << "the cache after StoreKvRows";

  // Gather: any slots, repeats included, back to packed rows.
  std::vector<int32_t> pick(static_cast<size_t>(n + 3));
  for (int32_t& s : pick) s = slots[rng() % slots.size()];
  std::vector<float> wk, wv;
  for (int32_t s : pick) {
    for (int64_t j = 0; j < g.kv_dim; ++j) {
      wk.push_back(want[p.k_off + SlotAt(p.L, s) + j]);
      wv.push_back(want[p.v_off + SlotAt(p.L, s) + j]);
    }
  }
  CUDA_TEST_ASSIGN(cu::DeviceBuffer dpick, IntsToDevice(pick));
  CUDA_TEST_ASSIGN(DeviceArray<T> ko, ToDevice<T>(std::vector<float>(wk.size(), 0.0f)));
  CUDA_TEST_ASSIGN(DeviceArray<T> vo, ToDevice<T>(std::vector<float>(wv.size(), 0.0f)));
  CUDA_TEST_ASSERT_OK(cu::GatherKvRows(cache.data() + p.k_off, cache.data() + p.v_off, p.L,
                                       dpick.as<int32_t>(), static_cast<int64_t>(pick.size()), ko.data(),
                                       vo.data(), stream));
  CUDA_TEST_ASSIGN(std::vector<float> gk, ToHost(ko));
  CUDA_TEST_ASSIGN(std::vector<float> gv, ToHost(vo));
  EXPECT_EQ(gk, wk);
  EXPECT_EQ(gv, wv);

  // GatherRows over the source rows (stride past the row), in reverse order.
  std::vector<int32_t> rows(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) rows[r] = static_cast<int32_t>(n - 1 - r);
  std::vector<float> wr;
  for (int32_t r : rows) wr.insert(wr.end(), k.begin() + r * stride, k.begin() + r * stride + g.kv_dim);
  CUDA_TEST_ASSIGN(cu::DeviceBuffer drows, IntsToDevice(rows));
  CUDA_TEST_ASSIGN(DeviceArray<T> dst, ToDevice<T>(std::vector<float>(wr.size(), 0.0f)));
  CUDA_TEST_ASSERT_OK(
      cu::GatherRows(dk.data(), stride, drows.as<int32_t>(), n, g.kv_dim, dst.data(), stream));
  CUDA_TEST_ASSIGN(std::vector<float> gr, ToHost(dst));
  EXPECT_EQ(gr, wr);
}

// One-token blocks; the decoder's kv_dim (2 heads of 64) at block size 16; an odd kv_dim with a
// stride past it; a single row.
const Geometry kGeometries[] = {{5, 1, 2, 8, 1}, {9, 16, 3, 128, 2}, {4, 7, 1, 67, 0}, {2, 16, 2, 64, 0}};

TEST_F(CudaKvCacheTest, StoreAndGatherF32) {
  for (const Geometry& g : kGeometries) {
    const int64_t n = std::min<int64_t>(g.blocks * g.block_size, 37);
    ASSERT_NO_FATAL_FAILURE(CheckStoreAndGather<float>(stream(), g, n, g.kv_dim + 3));
  }
  ASSERT_NO_FATAL_FAILURE(CheckStoreAndGather<float>(stream(), kGeometries[1], 1, 128));
}

TEST_F(CudaKvCacheTest, StoreAndGatherBf16) {
  for (const Geometry& g : kGeometries) {
    const int64_t n = std::min<int64_t>(g.blocks * g.block_size, 37);
    ASSERT_NO_FATAL_FAILURE(CheckStoreAndGather<Bf16>(stream(), g, n, g.kv_dim + 1));
  }
}

TEST(CudaKvCacheArgsTest, RejectsBadLayoutsAndAcceptsEmptyWork) {
  float* fake = reinterpret_cast<float*>(uintptr_t{256});
  const int32_t* slots = reinterpret_cast<const int32_t*>(uintptr_t{512});
  cu::PagedKvLayout L{16, 16 * 64 * 4, 64, 64};
  cu::PagedKvLayout no_blocks = L;
  no_blocks.block_size = 0;
  cu::PagedKvLayout narrow = L;
  narrow.row_stride = 32;
  EXPECT_EQ(cu::StoreKvRows(fake, 64, fake, 64, 2, slots, no_blocks, fake, fake).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::StoreKvRows(fake, 64, fake, 64, 2, slots, narrow, fake, fake).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::StoreKvRows(fake, 32, fake, 64, 2, slots, L, fake, fake).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::StoreKvRows(fake, 64, fake, 64, 2, nullptr, L, fake, fake).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::GatherKvRows(fake, fake, L, slots, -1, fake, fake).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cu::GatherRows(fake, 8, slots, 2, 16, fake).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      cu::StoreKvRows(static_cast<const float*>(nullptr), 64, nullptr, 64, 0, nullptr, L, nullptr, nullptr)
          .ok());
  EXPECT_TRUE(cu::GatherRows(static_cast<const Bf16*>(nullptr), 8, nullptr, 0, 8, nullptr).ok());
}

}  // namespace
}  // namespace cuda_test
}  // namespace kernels
}  // namespace mineru
