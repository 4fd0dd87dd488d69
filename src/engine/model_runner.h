// engine/model_runner.h — the engine's model runner (internal to engine/): its only caller of
// the model. Encodes new images (through the image cache, in packed passes) and runs one packed
// decoder pass plus the LM head for a step plan, on a ModelBackend (model/backend.h: the CPU's
// kernels or a GPU), so everything around the two computations is one code path. Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/image_cache.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "model/backend.h"
#include "model/decoder.h"
#include "model/qwen2vl.h"

namespace mineru {

class ModelRunner {
 public:
  // model is borrowed and must outlive the runner; the backend (which holds or borrows the paged
  // cache the scheduler's block tables index) is owned.
  ModelRunner(const Qwen2VLModel& model, std::unique_ptr<ModelBackend> backend, size_t image_cache_bytes);

  // Fills each sequence's `embeds` with its images' embeddings, in prompt order: cache hits,
  // and the misses encoded together in packed passes (attention stays per image). On return,
  // (*errors)[i] is empty or says why sequence i has no embeddings (its pass failed, ran out of
  // memory, or `health` failed after it: embeddings computed from changed weights are garbage
  // and never cached). Each sequence's preprocessed pixels are released.
  void EncodeImages(const std::vector<Sequence*>& seqs, const std::function<Status()>& health,
                    std::vector<std::string>* errors);

  // One packed decoder pass over the plan (block tables from `sched`; `seq` maps an id to its
  // sequence). The sequences whose known tokens are then all computed sample now: their ids are
  // appended to *sample_ids and their logits are ReadLogits' rows, in that order. May throw
  // std::bad_alloc (activations); a backend's error (a GPU fault) is returned, and then the
  // pass's cache rows are undefined.
  Status Forward(const StepPlan& plan, const Scheduler& sched, const std::function<Sequence&(int64_t)>& seq,
                 std::vector<int64_t>* sample_ids);
  // The last Forward's logits as sampling asks for them (ModelBackend::ReadLogits).
  Status ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) {
    return backend_->ReadLogits(requests, out);
  }
  bool logits_on_device() const { return backend_->logits_on_device(); }

  const ImageCache& image_cache() const { return image_cache_; }
  // The work of every image encoded so far (model/flops.h), for throughput figures.
  double vision_flops() const { return vision_flops_; }

  // Frees the scratch the backend keeps between steps (for an idle engine; it grows again on the
  // next step).
  void ReleaseScratch() {
    backend_->ReleaseScratch();
    std::vector<float>().swap(embeds_);
  }
  // Where the model runs, in one line (ModelBackend::Describe).
  std::string DescribeBackend() const { return backend_->Describe(); }

 private:
  struct ImageSlot {
    size_t seq, image;  // seqs[seq]->inputs[image]
  };
  using Slots = std::vector<std::vector<std::shared_ptr<const CachedImage>>>;  // [seq][image]
  struct PassRange {
    size_t start, end;  // misses[start, end)
    std::string error;  // "" or why the pass failed
  };
  // Moves the pixels of misses[r.start, r.end) into one pass (r.error on running out of memory).
  void PackPass(const std::vector<Sequence*>& seqs, const std::vector<ImageSlot>& misses, PassRange& r,
                ModelBackend::ImagePass* pass) const;
  // Caches the embeddings `out` of misses[r.start, r.end) and fills their slots (r.error when
  // out failed or the cache entries cannot be made).
  void StorePass(const std::vector<Sequence*>& seqs, const std::vector<ImageSlot>& misses,
                 StatusOr<std::vector<float>>& out, PassRange& r, Slots* slots);
  // The input embeddings of the plan's tokens [T, hidden] and each segment's positions.
  void GatherInputs(const StepPlan& plan, const Scheduler& sched,
                    const std::function<Sequence&(int64_t)>& seq, std::vector<float>* embeds,
                    std::vector<std::vector<int64_t>>* pos, std::vector<BatchSegment>* segs) const;

  const Qwen2VLModel& model_;
  std::unique_ptr<ModelBackend> backend_;
  ImageCache image_cache_;
  // A step's input embeddings [T, hidden], kept between steps at the largest step's size (up to
  // max_batch_tokens rows) until the engine goes idle: a fresh buffer would be fresh pages every step.
  std::vector<float> embeds_;
  double vision_flops_ = 0;
};

}  // namespace mineru
