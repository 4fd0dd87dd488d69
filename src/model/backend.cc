#include "model/backend.h"

#include <algorithm>
#include <numeric>
#include <string>

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
  const size_t n = touched.size() + n_top;
  std::vector<int32_t> id(n);
  std::vector<float> value(n);
  std::copy(touched.begin(), touched.end(), id.begin());
  std::copy(touched_logits, touched_logits + touched.size(), value.begin());
  std::copy(top_ids, top_ids + n_top, id.begin() + static_cast<std::ptrdiff_t>(touched.size()));
  std::copy(top_logits, top_logits + n_top, value.begin() + static_cast<std::ptrdiff_t>(touched.size()));
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return id[a] < id[b]; });
  out->row = nullptr;
  out->ids.resize(n);
  out->logits.resize(n);
  for (size_t i = 0; i < n; ++i) {
    out->ids[i] = id[order[i]];
    out->logits[i] = value[order[i]];
  }
}

}  // namespace mineru
