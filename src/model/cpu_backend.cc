#include "model/cpu_backend.h"

#include <utility>

#include "kernels/kernels.h"
#include "kernels/logit_candidates.h"

namespace mineru {
namespace {

// Patches encoded in one pass at most: the activations grow with them (~25 KB a patch, plus the
// encoder's MLP chunk), so a page's crops are encoded in passes no larger than its layout image
// (5,476 patches at 1036x1036, which is one pass whatever the cap) instead of all at once (28,724
// patches on the bench page: 1.7 GB of activations); the page's peak is then the layout pass's.
// A pass repacks the quantized vision weights once where they were not packed at load (rows
// quantized at load; ~5% of a 1036x1036 image's time).
constexpr int64_t kMaxPatchesPerPass = 4096;

}  // namespace

CpuBackend::CpuBackend(const Qwen2VLModel& model, ThreadPool* pool, KvStore* kv)
    : model_(model),
      kernels_(model.kernel_config(), pool),
      kv_(kv),
      threads_(pool ? pool->num_threads() : 1) {}

StatusOr<std::vector<float>> CpuBackend::EncodeImages(std::vector<float>&& pixels,
                                                      const std::vector<ImageGrid>& grids) {
  return model_.vision().Encode(std::move(pixels), grids, kernels_);
}

Status CpuBackend::Forward(std::vector<float>* embeds, const std::vector<BatchSegment>& segments,
                           const std::vector<int32_t>& rows) {
  const int64_t H = model_.config().text.hidden_size, V = model_.config().text.vocab_size;
  rows_ = 0;
  model_.decoder().ForwardBatch(embeds->data(), segments, kv_, embeds->data(), kernels_);  // in place
  if (logits_.size() < rows.size() * static_cast<size_t>(V))
    logits_.resize(rows.size() * static_cast<size_t>(V));
  rows_ = rows.size();
  if (rows.empty()) return Status::Ok();
  std::vector<float> picked;
  picked.reserve(rows.size() * static_cast<size_t>(H));
  for (int32_t r : rows) picked.insert(picked.end(), embeds->begin() + r * H, embeds->begin() + (r + 1) * H);
  model_.decoder().Logits(picked.data(), static_cast<int64_t>(rows.size()), logits_.data(), kernels_);
  return Status::Ok();
}

Status CpuBackend::ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) {
  const int32_t V = static_cast<int32_t>(model_.config().text.vocab_size);
  MINERU_RETURN_IF_ERROR(CheckLogitsRequests(requests, rows_, V));
  out->assign(requests.size(), RowLogits());
  for (size_t i = 0; i < requests.size(); ++i) {
    float* row = logits_.data() + i * static_cast<size_t>(V);
    const LogitsRequest& r = requests[i];
    if (r.top_k <= 0) {
      (*out)[i].row = row;
      continue;
    }
    const std::vector<int32_t>& touched = r.touched_ids();
    const std::vector<int32_t> top =
        kernels::TopLogitsExcluding(row, V, touched.data(), touched.size(), r.top_k);
    std::vector<float> touched_logits(touched.size()), top_logits(top.size());
    for (size_t j = 0; j < touched.size(); ++j) touched_logits[j] = row[touched[j]];
    for (size_t j = 0; j < top.size(); ++j) top_logits[j] = row[top[j]];
    MergeCandidates(touched, touched_logits.data(), top.data(), top_logits.data(), top.size(), &(*out)[i]);
  }
  return Status::Ok();
}

int64_t CpuBackend::max_patches_per_pass() const { return kMaxPatchesPerPass; }

std::string CpuBackend::Describe() const {
  return std::string("cpu (") + kernels::TargetName(model_.kernel_config()) + ", " +
         std::to_string(threads_) + " threads)";
}

}  // namespace mineru
