// kernels/context.cc — KernelConfigForTier / KernelConfigFromEnv and the KernelWorkspace's
// scratch (kernels/context.h).

#include "kernels/context.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/scratch.h"

namespace mineru {
namespace kernels {

StatusOr<KernelConfig> KernelConfigForTier(const std::string& tier) {
  KernelConfig config;
  if (tier.empty()) return config;  // no cap: the best target this CPU runs
  if (tier == "ref" || tier == "reference") {
    config.reference = true;
    return config;
  }
  const std::vector<int64_t> runs_here = cpu::SupportedCompiledTargets();  // best first
#if HWY_ARCH_X86
  struct Tier {
    const char* name;
    int64_t above;   // Highway targets above the tier
    int64_t target;  // what the tier runs
    bool avx_vnni;   // the 256-bit panel kernel uses AVX-VNNI (the CPU must have it)
  };
  static const Tier kTiers[] = {
      {"avx512_vnni", 0, HWY_AVX3_DL, false},
      {"avx512", HWY_AVX3_DL, HWY_AVX3, false},
      {"avx2_vnni", HWY_AVX3_DL | HWY_AVX3, HWY_AVX2, true},
      {"avx2", HWY_AVX3_DL | HWY_AVX3, HWY_AVX2, false},
      {"sse4", HWY_AVX3_DL | HWY_AVX3 | HWY_AVX2, HWY_SSE4, false},
  };
  for (const Tier& t : kTiers) {
    if (tier != t.name) continue;
    if (t.avx_vnni && !cpu::HasDotExtension()) {
      return InvalidArgumentError("SIMD tier " + tier + " is not available here: this CPU has no AVX-VNNI");
    }
    int64_t runs = 0;  // the best target at or below the tier that runs here
    for (int64_t r : runs_here) {
      if (runs == 0 && (r & t.above) == 0) runs = r;
    }
    if (runs != t.target) {
      return InvalidArgumentError("SIMD tier " + tier + " (" + hwy::TargetName(t.target) +
                                  ") is not available here: this CPU and build run " +
                                  (runs != 0 ? hwy::TargetName(runs) : "none of it"));
    }
    config.target = t.target;
    config.dot_extension = t.avx_vnni;
    return config;
  }
  return InvalidArgumentError("unknown SIMD tier '" + tier +
                              "' (avx512_vnni, avx512, avx2_vnni, avx2, sse4, ref)");
#else
  (void)runs_here;
  return InvalidArgumentError("SIMD tiers name x86 targets; this build runs " +
                              std::string(cpu::DispatchedTargetName(config)));
#endif
}

StatusOr<KernelConfig> KernelConfigFromEnv() {
  const char* e = std::getenv("MINERU_KERNELS");
  if (e == nullptr) return KernelConfig();
  StatusOr<KernelConfig> config = KernelConfigForTier(e);
  if (!config.ok()) return InvalidArgumentError("MINERU_KERNELS: " + config.status().message());
  return config;
}

KernelScratch& KernelContext::scratch(size_t slot) const { return scratch_[slot]; }

KernelContext KernelContext::Serial(size_t worker) const { return {config_, nullptr, scratch_ + worker}; }

namespace {

KernelScratch* NewScratch(ThreadPool* pool) {
  return new KernelScratch[pool != nullptr ? pool->num_threads() : 1];
}

}  // namespace

KernelWorkspace::KernelWorkspace(const KernelConfig& config, ThreadPool* pool)
    : KernelContext(config, pool, NewScratch(pool)), owned_(&scratch(0)) {}

KernelWorkspace::~KernelWorkspace() = default;

void KernelWorkspace::ReleaseScratch() {
  for (size_t i = 0; i < workers(); ++i) owned_[i].Release();
}

size_t KernelWorkspace::scratch_bytes() const {
  size_t bytes = 0;
  for (size_t i = 0; i < workers(); ++i) bytes += owned_[i].Bytes();
  return bytes;
}

}  // namespace kernels
}  // namespace mineru
