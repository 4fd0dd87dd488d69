#include "model/mrope.h"

#include <algorithm>

namespace mineru {

StatusOr<MropePositions> ComputeMropePositions(const std::vector<int32_t>& ids,
                                               const std::vector<ImageGrid>& grids, int merge_size,
                                               int32_t image_token_id) {
  MropePositions p;
  const size_t n = ids.size();
  p.t.reserve(n);
  p.h.reserve(n);
  p.w.reserve(n);
  int64_t next = 0;  // max position so far + 1
  size_t image = 0;
  size_t i = 0;
  while (i < n) {
    if (ids[i] != image_token_id) {
      p.t.push_back(next);
      p.h.push_back(next);
      p.w.push_back(next);
      ++next;
      ++i;
      continue;
    }
    if (image >= grids.size()) return InvalidArgumentError("more image tokens in the prompt than images");
    const ImageGrid& g = grids[image++];
    const int64_t gh = g.h / merge_size, gw = g.w / merge_size;
    const int64_t count = g.t * gh * gw;
    if (i + static_cast<size_t>(count) > n) {
      return InvalidArgumentError("an image's placeholder run is shorter than its grid");
    }
    for (int64_t k = 0; k < count; ++k) {
      if (ids[i + static_cast<size_t>(k)] != image_token_id) {
        return InvalidArgumentError("an image's placeholder run is shorter than its grid");
      }
    }
    const int64_t s = next;
    int64_t mx = s;
    for (int64_t ft = 0; ft < g.t; ++ft) {
      for (int64_t r = 0; r < gh; ++r) {
        for (int64_t c = 0; c < gw; ++c) {
          p.t.push_back(s + ft);
          p.h.push_back(s + r);
          p.w.push_back(s + c);
          mx = std::max({mx, s + ft, s + r, s + c});
        }
      }
    }
    next = mx + 1;
    i += static_cast<size_t>(count);
  }
  if (image != grids.size())
    return InvalidArgumentError("fewer image placeholders in the prompt than images");
  p.next_position = next;
  return p;
}

}  // namespace mineru
