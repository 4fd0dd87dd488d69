// kernels/cpu/dispatch.h — the dispatch of the Highway kernels to the target a KernelConfig names,
// per call: MINERU_DISPATCH(config, Impl) in place of HWY_DYNAMIC_DISPATCH(Impl), which would
// read (and set) Highway's process-wide choice of target. For the HWY_ONCE part of kernels/cpu/
// files and kernels/*.cc only: HWY_TARGETS there (mineru_kernels' HWY_DISABLED_TARGETS) names the
// targets the HWY_EXPORT tables hold. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hwy/base.h"
#include "hwy/targets.h"
#include "kernels/context.h"

namespace mineru {
namespace kernels {
namespace cpu {

// The best target compiled into the kernels that this CPU supports (probed once; elementwise.cc).
int64_t BestTarget();

// The target the SIMD kernels run on under `config`.
inline int64_t TargetOf(const KernelConfig& config) {
  return config.target != 0 ? config.target : BestTarget();
}

// The index of `target` in a HWY_EXPORT table: Highway's ChosenTarget arithmetic for a set of one
// target (a target outside the table's, e.g. EMU128, falls back to its last entry, the portable
// one, as in Highway).
inline size_t DispatchIndex(int64_t target) {
#if (HWY_TARGETS & (HWY_TARGETS - 1)) == 0
  (void)target;
  return 0;  // one target: HWY_EXPORT's table has one entry
#else
  const int64_t mask = HWY_CHOSEN_TARGET_SHIFT(target) | HWY_CHOSEN_TARGET_MASK_SCALAR;
  return hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(mask & HWY_CHOSEN_TARGET_MASK_TARGETS));
#endif
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru

// The HWY_EXPORT-ed FUNC compiled for the target `config` selects (a function pointer to call).
#define MINERU_DISPATCH(config, FUNC) \
  (*(HWY_DISPATCH_TABLE(              \
      FUNC)[::mineru::kernels::cpu::DispatchIndex(::mineru::kernels::cpu::TargetOf(config))]))
