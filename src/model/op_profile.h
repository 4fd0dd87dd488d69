// model/op_profile.h — where the vision encoder's time goes, per kind of operation.
//
// An OpProfile passed to VisionEncoder::Encode accumulates, per op kind, the wall time of every
// call (each kernel call returns only when all of its pool's threads are done, so waits inside a
// call are part of that call's time) and the floating-point operations it does (2 per
// multiply-add of the matrix products and the attention; 0 for element-wise ops, whose cost is
// memory traffic). Not thread-safe: one profile per Encode call at a time.
#pragma once

#include <chrono>
#include <cstdint>

namespace mineru {

enum class VisionOp {
  kPatchEmbed,  // the patch-embedding product
  kNorm,        // LayerNorms (two per block, the merger's)
  kQkv,         // the fused q/k/v product
  kRope,        // the 2-D rotary embedding of q and k
  kAttention,   // softmax(Q K^T) V within each frame
  kOut,         // the attention output product
  kResidual,    // the residual additions
  kFc1,         // MLP up product
  kGelu,        // QuickGELU (blocks) and GELU (merger)
  kFc2,         // MLP down product
  kMerger,      // the merger's two products
  kCount
};

const char* VisionOpName(VisionOp op);

struct OpProfile {
  double seconds[static_cast<int>(VisionOp::kCount)] = {};
  double flops[static_cast<int>(VisionOp::kCount)] = {};
  int64_t calls[static_cast<int>(VisionOp::kCount)] = {};
};

// Times one call from construction to destruction into profile (nothing when it is null).
class OpTimer {
 public:
  OpTimer(OpProfile* profile, VisionOp op, double flops)
      : profile_(profile), op_(static_cast<int>(op)), flops_(flops) {
    if (profile_) t0_ = std::chrono::steady_clock::now();
  }
  ~OpTimer() {
    if (!profile_) return;
    profile_->seconds[op_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    profile_->flops[op_] += flops_;
    ++profile_->calls[op_];
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  OpProfile* profile_;
  int op_;
  double flops_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace mineru
