// kernels/context.h — what the kernels run with, as values the caller holds and passes to every op
// of kernels.h: which kernels (KernelConfig, built once at start), on which pool, and where they
// keep scratch between calls (KernelWorkspace). The kernels keep no state of their own in the
// process: two contexts with different configurations may run side by side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"

namespace mineru {
namespace kernels {

// Which kernels the ops run. A plain value, built once where the program starts
// (KernelConfigFromEnv, KernelConfigForTier) and copied into every KernelContext. The default runs
// the SIMD kernels of kernels/cpu/ on the best target this CPU supports, with every extension the
// CPU has.
struct KernelConfig {
  // The scalar twins of kernels/reference.h instead of the SIMD kernels (MINERU_KERNELS=ref).
  bool reference = false;
  // The Highway target (HWY_AVX3_DL, HWY_AVX2, HWY_NEON...) every SIMD kernel runs on, the integer
  // paths included; 0 = the best one compiled into the kernels that this CPU supports. Anything
  // else must be one of cpu::SupportedCompiledTargets() (KernelConfigForTier checks).
  int64_t target = 0;
  // The integer dot-product extension the target lacks, used where the CPU has it
  // (cpu::HasDotExtension): AVX-VNNI on AVX2 (the tier avx2_vnni; avx2 turns it off), the ARM dot
  // product (sdot).
  bool dot_extension = true;
  // ARM's int8 matrix multiply (smmla) where the CPU has it (cpu::HasI8mm).
  bool i8mm = true;
  // Int8 Q Kᵀ and P V where an AttentionShape asks for them and the target has the kernel
  // (kernels.h AttentionUsesInt8); false runs them in fp32 (A/B and accuracy figures).
  bool attention_int8 = true;
};

// The configuration of a SIMD tier: "avx512_vnni" (AVX-512 + VNNI, Highway's AVX3_DL), "avx512"
// (AVX3), "avx2_vnni" (AVX2 + the VEX vpdpbusd of Alder Lake and later), "avx2", "sse4" cap every
// kernel at that x86 tier, so one machine measures what an older CPU gets; "" is the default
// (no cap); "ref" or "reference" selects the scalar twins. Errors: an unknown tier, or one this
// CPU or build does not run.
StatusOr<KernelConfig> KernelConfigForTier(const std::string& tier);
// KernelConfigForTier of the environment variable MINERU_KERNELS (unset or empty: the default);
// errors name the variable. The only place the kernels' configuration is read from the
// environment: call it once, where the program starts.
StatusOr<KernelConfig> KernelConfigFromEnv();

// One worker's kept scratch (kernels/cpu/scratch.h; opaque elsewhere).
class KernelScratch;

// Everything an op needs besides its operands: the configuration, the pool (may be null: the
// calling thread alone) and one KernelScratch per worker of the pool, which the op's workers use
// as they like during the call. A view: it owns neither the pool nor the scratch, which must
// outlive every call made with it. Calls sharing a context (or its scratch) must not overlap, as
// calls sharing a ThreadPool must not.
class KernelContext {
 public:
  // scratch: workers() objects (KernelWorkspace allocates them).
  KernelContext(const KernelConfig& config, ThreadPool* pool, KernelScratch* scratch)
      : config_(config), pool_(pool), scratch_(scratch) {}

  const KernelConfig& config() const { return config_; }
  ThreadPool* pool() const { return pool_; }
  size_t workers() const { return pool_ != nullptr ? pool_->num_threads() : 1; }
  // Worker slot `slot`'s scratch, slot < workers().
  KernelScratch& scratch(size_t slot) const;
  // The same configuration on worker `worker` of the pool alone, with that worker's scratch: for
  // ops called inside a task of pool()->ParallelFor (which passes the worker's index).
  KernelContext Serial(size_t worker) const;
  // The same pool and scratch with another configuration (A/B runs).
  KernelContext WithConfig(const KernelConfig& config) const { return {config, pool_, scratch_}; }

 private:
  KernelConfig config_;
  ThreadPool* pool_;
  KernelScratch* scratch_;
};

// A KernelContext that owns its scratch: what an engine, a command or a test holds for a pool
// (borrowed: it must outlive the workspace). The kernels grow each worker's buffers to the largest
// call so far and keep them for the next (no allocation per call once warm); ReleaseScratch frees
// them. Not copyable or movable (contexts made from it point into it).
class KernelWorkspace : public KernelContext {
 public:
  KernelWorkspace(const KernelConfig& config, ThreadPool* pool);
  ~KernelWorkspace();
  KernelWorkspace(const KernelWorkspace&) = delete;
  KernelWorkspace& operator=(const KernelWorkspace&) = delete;

  // Frees every buffer the kernels keep; they grow again on the next call that needs them. Not
  // during a call made with this workspace.
  void ReleaseScratch();
  // Bytes the kernels keep now, all workers together.
  size_t scratch_bytes() const;

 private:
  std::unique_ptr<KernelScratch[]> owned_;
};

}  // namespace kernels
}  // namespace mineru
