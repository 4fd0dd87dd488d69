// server/image_budget.cc — see image_budget.h.
#include "server/image_budget.h"

#include <algorithm>
#include <string>

namespace mineru::server {

constexpr int64_t kBytesPerPixel = 3;  // decoded RGB

ImageBudget::~ImageBudget() {
  if (server_) server_->fetch_sub(held_bytes_ + reserved_ * kBytesPerPixel);
}

StatusOr<int64_t> ImageBudget::Reserve() {
  if (images_ >= lim_.max_images) {
    return ResourceExhaustedError("too many images in one request (the limit is " +
                                  std::to_string(lim_.max_images) + ")");
  }
  int64_t limit = std::min(lim_.max_image_pixels, lim_.max_pixels - pixels_);
  server_limited_ = false;
  if (server_ && limit > 0) {
    // Take what is free of the server's budget, up to `limit`, in one atomic step.
    int64_t used = server_->load();
    int64_t take = 0;
    do {
      take = std::min(limit, (server_limit_ - used) / kBytesPerPixel);
      if (take <= 0) return BusyError("the server is decoding too many images; retry shortly");
    } while (!server_->compare_exchange_weak(used, used + take * kBytesPerPixel));
    server_limited_ = take < limit;
    limit = take;
  }
  if (limit <= 0) {
    return ResourceExhaustedError("the images of one request have more than " +
                                  std::to_string(lim_.max_pixels) + " pixels together");
  }
  ++images_;
  reserved_ = limit;
  return limit;
}

void ImageBudget::Settle(int64_t pixels) {
  pixels = std::clamp<int64_t>(pixels, 0, reserved_);
  if (server_) {
    server_->fetch_sub((reserved_ - pixels) * kBytesPerPixel);
    held_bytes_ += pixels * kBytesPerPixel;
  }
  pixels_ += pixels;
  reserved_ = 0;
}

Status ImageBudget::Explain(const Status& e) const {
  if (e.code() != StatusCode::kResourceExhausted) return e;
  if (server_limited_) return BusyError("the server is decoding too many images; retry shortly");
  if (lim_.max_pixels - pixels_ < lim_.max_image_pixels) {
    return ResourceExhaustedError("the images of one request have more than " +
                                  std::to_string(lim_.max_pixels) + " pixels together");
  }
  return e;
}

}  // namespace mineru::server
