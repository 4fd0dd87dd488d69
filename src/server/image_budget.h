// server/image_budget.h — how many image pixels one request, and all requests together, may decode.
//
// --max-image-pixels bounds one image, but a small body can carry many highly compressed images
// (a 1-bit 7071x7071 PNG is a few KB and decodes to 150 MB of RGB). Every image of a request is
// decoded before the request is queued, so the budget is checked from each image's header, before
// its pixels exist: the decoder is given the smaller of the per-image limit, what is left of the
// request's pixel budget and what is left of the server-wide decoded-image memory, and refuses a
// header that claims more (no allocation happens). Past the request's budget (count or pixels):
// ResourceExhausted (413); past the server's memory budget: Busy (429, retry later).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/status.h"

namespace mineru::server {

struct ImageBudgetLimits {
  int max_images = 16;                  // per request
  int64_t max_pixels = 100000000;       // per request, all images together
  int64_t max_image_pixels = 50000000;  // per image (--max-image-pixels)
};

class ImageBudget {
 public:
  // server_bytes: the decoded-image bytes held by all requests (nullptr: no server-wide budget);
  // server_limit: its bound in bytes.
  ImageBudget(const ImageBudgetLimits& lim, std::atomic<int64_t>* server_bytes, int64_t server_limit)
      : lim_(lim), server_(server_bytes), server_limit_(server_limit) {}
  ~ImageBudget();
  ImageBudget(const ImageBudget&) = delete;
  ImageBudget& operator=(const ImageBudget&) = delete;

  // Before decoding one more image: the pixel limit to decode it with (reserved server-wide).
  StatusOr<int64_t> Reserve();
  // After decoding (or failing to): charges `pixels` of the reservation, gives back the rest.
  void Settle(int64_t pixels);
  // A decoder's ResourceExhausted for an image decoded with Reserve()'s limit, said as the budget
  // that limited it.
  Status Explain(const Status& decode_error) const;

 private:
  ImageBudgetLimits lim_;
  std::atomic<int64_t>* server_;
  int64_t server_limit_;
  int images_ = 0;
  int64_t pixels_ = 0;      // decoded by this request
  int64_t reserved_ = 0;    // pixels reserved for the image being decoded
  int64_t held_bytes_ = 0;  // this request's share of *server_
  bool server_limited_ = false;
};

}  // namespace mineru::server
