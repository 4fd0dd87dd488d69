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
#endif
