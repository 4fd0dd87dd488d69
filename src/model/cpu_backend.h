// model/cpu_backend.h — the CPU ModelBackend: the model's VisionEncoder and Decoder with the
// kernels of its configuration on a thread pool, over a paged KV store (the engine's BlockPool).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/context.h"
#include "model/backend.h"
#include "model/qwen2vl.h"

namespace mineru {

class CpuBackend : public ModelBackend {
 public:
  // model, pool and kv are borrowed and must outlive the backend.
  CpuBackend(const Qwen2VLModel& model, ThreadPool* pool, KvStore* kv);

  StatusOr<std::vector<float>> EncodeImages(std::vector<float>&& pixels,
                                            const std::vector<ImageGrid>& grids) override;
  // Runs in place over *embeds. May throw std::bad_alloc (activations), as the CPU kernels do.
  Status Forward(std::vector<float>* embeds, const std::vector<BatchSegment>& segments,
                 const std::vector<int32_t>& rows) override;
  // Whole rows point into the backend's logits; candidates are picked on the host
  // (kernels/logit_candidates.h: what the engine's tests of the candidate path run).
  Status ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) override;
  bool logits_on_device() const override { return false; }
  int64_t max_patches_per_pass() const override;
  void ReleaseScratch() override { kernels_.ReleaseScratch(); }
  std::string Describe() const override;

 private:
  const Qwen2VLModel& model_;
  kernels::KernelWorkspace kernels_;
  KvStore* kv_;
  size_t threads_;
  std::vector<float> logits_;  // reused across steps: [16, vocab] is ~10 MB
  size_t rows_ = 0;            // rows of logits_ the last Forward filled
};

}  // namespace mineru
