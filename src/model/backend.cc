#include "model/backend.h"

#include <algorithm>
#include <new>
#include <numeric>
#include <string>
#include <utility>

namespace mineru {

Status CheckLogitsRequests(const std::vector<LogitsRequest>& requests, size_t rows, int64_t vocab) {
  if (requests.size() > rows) {
    return InvalidArgumentError("ReadLogits: " + std::to_string(requests.size()) +
                                " requests for a pass of " + std::to_string(rows) + " rows");
  }
  for (const LogitsRequest& r : requests) {
    if (r.top_k <= 0 || r.touched == nullptr) continue;
    int64_t last = -1;
    for (int32_t t : *r.touched) {
      if (t <= last || t >= vocab)
        return InvalidArgumentError("ReadLogits: touched ids must ascend inside the vocabulary");
      last = t;
    }
  }
  return Status::Ok();
}

void MergeCandidates(const std::vector<int32_t>& touched, const float* touched_logits, const int32_t* top_ids,
                     const float* top_logits, size_t n_top, RowLogits* out) {
  // touched ascends already; the few top ids are sorted, then the two are merged. A top id that is
  // also touched (no backend sends one) is kept once, as touched.
  std::vector<size_t> top(n_top);
  std::iota(top.begin(), top.end(), size_t{0});
  std::sort(top.begin(), top.end(), [&](size_t a, size_t b) { return top_ids[a] < top_ids[b]; });
  out->row = nullptr;
  out->ids.clear();
  out->logits.clear();
  out->ids.reserve(touched.size() + n_top);
  out->logits.reserve(touched.size() + n_top);
  size_t i = 0, j = 0;
  while (i < touched.size() || j < n_top) {
    if (j == n_top || (i < touched.size() && touched[i] <= top_ids[top[j]])) {
      if (j < n_top && touched[i] == top_ids[top[j]]) ++j;
      out->ids.push_back(touched[i]);
      out->logits.push_back(touched_logits[i++]);
    } else {
      out->ids.push_back(top_ids[top[j]]);
      out->logits.push_back(top_logits[top[j++]]);
    }
  }
}

void ModelBackend::EncodeImagePasses(std::vector<ImagePass>* passes,
                                     std::vector<StatusOr<std::vector<float>>>* out) {
  out->clear();
  out->reserve(passes->size());
  for (ImagePass& p : *passes) {
    // Out of memory fails this pass only (the CPU encoder's activations may throw).
    try {
      out->push_back(EncodeImages(std::move(p.pixels), p.grids));
    } catch (const std::bad_alloc&) {
      out->push_back(PassOutOfMemory(p.grids));
    }
  }
}

Status PassOutOfMemory(const std::vector<ImageGrid>& grids) {
  int64_t patches = 0;
  for (const ImageGrid& g : grids) patches += g.num_patches();
  return OutOfMemoryError("encoding " + std::to_string(patches) + " image patches");
}

}  // namespace mineru
