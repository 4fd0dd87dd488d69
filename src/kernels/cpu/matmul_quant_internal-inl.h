// kernels/cpu/matmul_quant_internal-inl.h — what the two halves of the integer MatMul path share,
// per target: one quantized activation row as the row tiles read it, and the row tiles' entry
// (matmul_quant_tiles.cc) that the path's driver (matmul_quant.cc) calls. Internal to those two
// files, not an interface of the kernels layer. Re-included once per target by foreach_target
// (Highway's per-target guard pattern, as simd-inl.h).

#if defined(MINERU_KERNELS_CPU_MATMUL_QUANT_INTERNAL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MINERU_KERNELS_CPU_MATMUL_QUANT_INTERNAL_INL_H_
#undef MINERU_KERNELS_CPU_MATMUL_QUANT_INTERNAL_INL_H_
#else
#define MINERU_KERNELS_CPU_MATMUL_QUANT_INTERNAL_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/kernels.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
// Highway 1.0.3's AVX3_DL target string names "avxvnni" (VEX) but not "avx512vnni", which
// _mm512_dpbusd_epi32 needs; its CPU check for AVX3_DL does require AVX512-VNNI.
#pragma GCC target("avx512vnni")
#endif
namespace mineru {
namespace kernels {
namespace HWY_NAMESPACE {

struct QRow {  // one quantized activation row
  const int8_t* q;
  const float* d;
  const float* corr;
};

// The ARM integer instructions the row tiles use beyond the target's own: the dot product (sdot)
// and the int8 matrix multiply (smmla), each where the CPU has it and the configuration allows it
// (cpu::UseDotExtension, cpu::UseI8mm). Ignored elsewhere.
struct TileExtensions {
  bool sdot = false;
  bool smmla = false;
};

// y[(i0 + r) * n + j] (+ bias[j]) for the R quantized activation rows xr and columns [j0, j1)
// of W (rows of row_bytes bytes from wbase, nb blocks or groups each): the row tiles of
// matmul_quant_tiles.cc, for R = 1, 2, 3, 4.
template <size_t R>
void QuantRows(QuantType t, const QRow* xr, const uint8_t* wbase, size_t row_bytes, size_t nb,
               const float* bias, float* y, size_t i0, size_t n, size_t j0, size_t j1, TileExtensions ext);

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace mineru
HWY_AFTER_NAMESPACE();

#endif  // MINERU_KERNELS_CPU_MATMUL_QUANT_INTERNAL_INL_H_ toggle
