#include "engine/model_runner.h"

#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "model/flops.h"

namespace mineru {
ModelRunner::ModelRunner(const Qwen2VLModel& model, std::unique_ptr<ModelBackend> backend,
                         size_t image_cache_bytes)
    : model_(model), backend_(std::move(backend)), image_cache_(image_cache_bytes) {}

void ModelRunner::PackPass(const std::vector<Sequence*>& seqs, const std::vector<ImageSlot>& misses,
                           PassRange& r, ModelBackend::ImagePass* pass) const {
  // The pass takes the images' pixel values (nothing reads them after encoding): one image's are
  // moved, several are packed and each freed as it is copied, so they are held once, and the
  // backend frees them once they are staged or embedded.
  try {
    for (size_t k = r.start; k < r.end; ++k) {
      ImageInput& in = seqs[misses[k].seq]->inputs[misses[k].image];
      pass->grids.push_back(in.grid);
      if (r.end - r.start == 1) {
        pass->pixels = std::move(in.pixel_values);
      } else {
        pass->pixels.insert(pass->pixels.end(), in.pixel_values.begin(), in.pixel_values.end());
        std::vector<float>().swap(in.pixel_values);
      }
    }
  } catch (const std::bad_alloc&) {
    int64_t patches = 0;
    for (size_t k = r.start; k < r.end; ++k)
      patches += seqs[misses[k].seq]->inputs[misses[k].image].grid.num_patches();
    r.error = OutOfMemoryError("encoding " + std::to_string(patches) + " image patches").message();
    *pass = ModelBackend::ImagePass();
  }
}

void ModelRunner::StorePass(const std::vector<Sequence*>& seqs, const std::vector<ImageSlot>& misses,
                            StatusOr<std::vector<float>>& out, PassRange& r, Slots* slots) {
  if (!out.ok()) {
    r.error = "vision encoding failed: " + out.status().message();
    return;
  }
  const int64_t H = model_.config().text.hidden_size;
  try {
    int64_t row = 0;
    for (size_t k = r.start; k < r.end; ++k) {
      const Sequence& s = *seqs[misses[k].seq];
      const ImageInput& in = s.inputs[misses[k].image];
      const int64_t rows = model_.ImageTokens(in.grid);
      auto c = std::make_shared<CachedImage>();
      c->grid = in.grid;
      c->embeddings.assign(out->begin() + row * H, out->begin() + (row + rows) * H);
      image_cache_.Put(s.image_hashes[misses[k].image], c);
      vision_flops_ += VisionFlops(model_.config().vision, in.grid);
      (*slots)[misses[k].seq][misses[k].image] = std::move(c);
      row += rows;
    }
  } catch (const std::bad_alloc&) {
    r.error = OutOfMemoryError("holding the embeddings of " + std::to_string(r.end - r.start) + " images")
                  .message();
  }
}

void ModelRunner::EncodeImages(const std::vector<Sequence*>& seqs, const std::function<Status()>& health,
                               std::vector<std::string>* errors) {
  errors->assign(seqs.size(), "");
  Slots slots(seqs.size());
  std::vector<ImageSlot> misses;
  for (size_t si = 0; si < seqs.size(); ++si) {
    Sequence& s = *seqs[si];
    slots[si].resize(s.inputs.size());
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      if (auto hit = image_cache_.Get(s.image_hashes[i])) {
        slots[si][i] = std::move(hit);
        s.comp.image_cache_hit = true;
      } else {
        misses.push_back({si, i});
      }
    }
  }
  // Consecutive misses up to the backend's patches per pass make a pass; the backend gets them
  // all at once (a GPU overlaps one pass's upload with the pass before).
  std::vector<PassRange> ranges;
  for (size_t start = 0; start < misses.size();) {
    size_t end = start;
    int64_t patches = 0;
    for (; end < misses.size(); ++end) {
      const int64_t p = seqs[misses[end].seq]->inputs[misses[end].image].grid.num_patches();
      if (end > start && patches + p > backend_->max_patches_per_pass()) break;
      patches += p;
    }
    ranges.push_back({start, end, ""});
    start = end;
  }
  std::vector<ModelBackend::ImagePass> to_encode;
  std::vector<size_t> sent;  // the ranges whose pass went to the backend
  for (size_t r = 0; r < ranges.size(); ++r) {
    ModelBackend::ImagePass pass;
    PackPass(seqs, misses, ranges[r], &pass);
    if (!ranges[r].error.empty()) continue;
    to_encode.push_back(std::move(pass));
    sent.push_back(r);
  }
  std::vector<StatusOr<std::vector<float>>> outs;
  try {
    if (!to_encode.empty()) backend_->EncodeImagePasses(&to_encode, &outs);
  } catch (const std::bad_alloc&) {  // a backend that broke its contract: fail the passes sent
    outs.clear();
    for (const ModelBackend::ImagePass& p : to_encode) outs.push_back(PassOutOfMemory(p.grids));
  }
  // Weights that changed under the passes make garbage embeddings: never cache them.
  const Status h = to_encode.empty() ? Status::Ok() : health();
  for (size_t k = 0; k < sent.size(); ++k) {
    PassRange& r = ranges[sent[k]];
    if (k >= outs.size()) {
      r.error = "vision encoding failed: the backend answered no pass";
    } else if (!h.ok() && outs[k].ok()) {  // a failed pass says why it failed
      r.error = h.message();
    } else {
      StorePass(seqs, misses, outs[k], r, &slots);
    }
    if (k < outs.size() && outs[k].ok()) std::vector<float>().swap(*outs[k]);  // cached: free it now
  }
  for (const PassRange& r : ranges) {
    if (r.error.empty()) continue;
    for (size_t k = r.start; k < r.end; ++k) (*errors)[misses[k].seq] = r.error;
  }
  for (size_t si = 0; si < seqs.size(); ++si) {
    Sequence& s = *seqs[si];
    bool ok = true;
    try {
      for (const auto& c : slots[si]) {
        if (!c) {
          ok = false;
          break;
        }
        s.embeds.insert(s.embeds.end(), c->embeddings.begin(), c->embeddings.end());
      }
    } catch (const std::bad_alloc&) {
      ok = false;
      (*errors)[si] = OutOfMemoryError("holding the image embeddings").message();
    }
    s.inputs.clear();  // pixel values are no longer needed
    if (!ok && (*errors)[si].empty()) (*errors)[si] = "vision encoding failed";
  }
}

void ModelRunner::GatherInputs(const StepPlan& plan, const Scheduler& sched,
                               const std::function<Sequence&(int64_t)>& seq, std::vector<float>* embeds,
                               std::vector<std::vector<int64_t>>* pos,
                               std::vector<BatchSegment>* segs) const {
  const int64_t H = model_.config().text.hidden_size;
  const Decoder& dec = model_.decoder();
  embeds->resize(static_cast<size_t>(plan.tokens() * H));
  pos->assign(3 * plan.seqs.size(), {});
  int64_t row = 0;
  for (size_t k = 0; k < plan.seqs.size(); ++k) {
    const ScheduledSeq& p = plan.seqs[k];
    const Sequence& s = seq(p.id);
    const int64_t plen = static_cast<int64_t>(s.prompt.size());
    std::vector<int64_t>&pt = (*pos)[3 * k], &ph = (*pos)[3 * k + 1], &pw = (*pos)[3 * k + 2];
    for (int64_t j = p.start; j < p.start + p.n; ++j, ++row) {
      float* dst = embeds->data() + row * H;
      if (j < plen && s.image_row[j] >= 0) {
        std::memcpy(dst, s.embeds.data() + s.image_row[j] * H, sizeof(float) * H);
      } else {
        dec.Embed(j < plen ? &s.prompt[j] : &s.generated[j - plen], 1, dst, model_.kernel_config());
      }
      // Generated tokens continue the text positions after the prompt's last one.
      const int64_t q = s.pos.next_position + (j - plen);
      pt.push_back(j < plen ? s.pos.t[j] : q);
      ph.push_back(j < plen ? s.pos.h[j] : q);
      pw.push_back(j < plen ? s.pos.w[j] : q);
    }
    BatchSegment seg;
    seg.n = p.n;
    seg.past = p.start;
    seg.pos_t = pt.data();
    seg.pos_h = ph.data();
    seg.pos_w = pw.data();
    seg.block_table = sched.BlockTable(p.id).data();
    segs->push_back(seg);
  }
}

Status ModelRunner::Forward(const StepPlan& plan, const Scheduler& sched,
                            const std::function<Sequence&(int64_t)>& seq, std::vector<int64_t>* sample_ids) {
  std::vector<std::vector<int64_t>> pos;
  std::vector<BatchSegment> segs;
  GatherInputs(plan, sched, seq, &embeds_, &pos, &segs);
  // A sequence samples once every known token is computed: after this step, start + n reaches
  // its token count. Its last row goes through one batched LM head with the others.
  std::vector<int32_t> rows;
  int64_t row = 0;
  for (const ScheduledSeq& p : plan.seqs) {
    row += p.n;
    if (p.start + p.n == sched.NumTokens(p.id)) {
      sample_ids->push_back(p.id);
      rows.push_back(static_cast<int32_t>(row - 1));
    }
  }
  return backend_->Forward(&embeds_, segs, rows);
}

}  // namespace mineru
