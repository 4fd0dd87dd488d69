// kernels/cpu/x86_intrinsics.h — <immintrin.h> for the hand-written x86 kernels; include it first
// (before hwy/foreach_target.h). A no-op elsewhere.
//
// GCC 12's own AVX-512 headers trip -Wmaybe-uninitialized on their _mm512_undefined_*()
// self-initialisations when inlined into our kernels (a false positive of GCC 12). The warning is
// silenced for those system headers only: GCC applies the diagnostic state at the header's lines,
// so the kernels' own code keeps the warning.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

// acc += u (unsigned bytes) . s (signed bytes), 4 products per int32 lane: vpdpbusd, in place.
// GCC 12 compiles _mm512_dpbusd_epi32 in a loop-carried accumulator tile by copying every
// accumulator to a fresh register around each instruction (two extra moves per vpdpbusd, half
// the issue slots of the attention's int8 loops); the asm pins the accumulator in place. Clang
// compiles the intrinsic well. Callers are compiled for AVX-512 VNNI.
#if defined(__GNUC__) && !defined(__clang__)
// The asm works on a local copy so that an accumulator array stays scalarizable into registers.
#define MINERU_DPBUSD512(acc, u, s)                                      \
  do {                                                                   \
    __m512i mineru_dp_acc_ = (acc);                                      \
    asm("vpdpbusd %2, %1, %0" : "+v"(mineru_dp_acc_) : "v"(u), "vm"(s)); \
    (acc) = mineru_dp_acc_;                                              \
  } while (0)
#else
#define MINERU_DPBUSD512(acc, u, s) ((acc) = _mm512_dpbusd_epi32((acc), (u), (s)))
#endif
#endif
