// engine/model_runner.h — the engine's model runner (internal to engine/): its only caller of
// the model. Encodes new images (through the image cache, in packed passes) and runs one packed
// decoder pass plus the LM head for a step plan. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/image_cache.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kernels/context.h"
#include "model/decoder.h"
#include "model/qwen2vl.h"

namespace mineru {

class ModelRunner {
 public:
  // model, pool and kv (the paged cache the scheduler's block tables index) are borrowed and
  // must outlive the runner. The kernels run with the model's configuration on pool, keeping their
  // scratch in the runner between steps.
  ModelRunner(const Qwen2VLModel& model, ThreadPool* pool, KvStore* kv, size_t image_cache_bytes);

  // Fills each sequence's `embeds` with its images' embeddings, in prompt order: cache hits,
  // and the misses encoded together in packed passes (attention stays per image). On return,
  // (*errors)[i] is empty or says why sequence i has no embeddings (its pass failed, ran out of
  // memory, or `health` failed after it: embeddings computed from changed weights are garbage
  // and never cached). Each sequence's preprocessed pixels are released.
  void EncodeImages(const std::vector<Sequence*>& seqs, const std::function<Status()>& health,
                    std::vector<std::string>* errors);

  // One packed decoder pass over the plan (block tables from `sched`; `seq` maps an id to its
  // sequence). The sequences whose known tokens are then all computed sample now: their ids are
  // appended to *sample_ids and their logits are rows of logits() [ids, vocab]. May throw
  // std::bad_alloc (activations).
  void Forward(const StepPlan& plan, const Scheduler& sched, const std::function<Sequence&(int64_t)>& seq,
               std::vector<int64_t>* sample_ids);
  // Mutable: sampling transforms a row in place (penalties, temperature).
  float* logits() { return logits_.data(); }

  const ImageCache& image_cache() const { return image_cache_; }

  // Frees the scratch the kernels keep between steps (for an idle engine; it grows again on the
  // next step).
  void ReleaseScratch() { kernels_.ReleaseScratch(); }

 private:
  struct ImageSlot {
    size_t seq, image;  // seqs[seq]->inputs[image]
  };
  using Slots = std::vector<std::vector<std::shared_ptr<const CachedImage>>>;  // [seq][image]
  // Encodes misses[start, end) in one pass, caches them and fills their slots; returns "" or
  // why the pass failed.
  std::string EncodePass(const std::vector<Sequence*>& seqs, const std::vector<ImageSlot>& misses,
                         size_t start, size_t end, const std::function<Status()>& health, Slots* slots);
  // The input embeddings of the plan's tokens [T, hidden] and each segment's positions.
  void GatherInputs(const StepPlan& plan, const Scheduler& sched,
                    const std::function<Sequence&(int64_t)>& seq, std::vector<float>* embeds,
                    std::vector<std::vector<int64_t>>* pos, std::vector<BatchSegment>* segs) const;

  const Qwen2VLModel& model_;
  kernels::KernelWorkspace kernels_;  // model_.kernel_config() on the engine's pool
  KvStore* kv_;
  ImageCache image_cache_;
  std::vector<float> logits_;  // reused across steps: [16, vocab] is ~10 MB
};

}  // namespace mineru
