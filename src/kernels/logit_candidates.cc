#include "kernels/logit_candidates.h"

#include <algorithm>
#include <cmath>

namespace mineru {
namespace kernels {

std::vector<int32_t> TopLogitsExcluding(const float* row, int32_t vocab, const int32_t* excluded,
                                        size_t n_excluded, int top_k) {
  std::vector<int32_t> ids;
  if (vocab <= 0 || top_k <= 0) return ids;
  ids.reserve(static_cast<size_t>(vocab));
  size_t e = 0;  // the next excluded id at or after t
  for (int32_t t = 0; t < vocab; ++t) {
    while (e < n_excluded && excluded[e] < t) ++e;
    if (e < n_excluded && excluded[e] == t) continue;
    if (!std::isnan(row[t])) ids.push_back(t);
  }
  auto before = [row](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); };
  const size_t k = std::min(ids.size(), static_cast<size_t>(top_k));
  if (k < ids.size()) {
    std::nth_element(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k) - 1, ids.end(), before);
    ids.resize(k);
  }
  std::sort(ids.begin(), ids.end(), before);
  return ids;
}

}  // namespace kernels
}  // namespace mineru
