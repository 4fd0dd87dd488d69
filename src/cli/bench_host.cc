#include "cli/bench_host.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace mineru::cli {
namespace {

class NullBackend : public ModelBackend {
 public:
  NullBackend(std::unique_ptr<ModelBackend> inner, int64_t vocab)
      : inner_(std::move(inner)), vocab_(vocab), row_(static_cast<size_t>(vocab)) {
    for (size_t i = 0; i < row_.size(); ++i) row_[i] = static_cast<float>((i * 2654435761u) % 1000) / 100.0f;
  }
  StatusOr<std::vector<float>> EncodeImages(std::vector<float>&& pixels,
                                            const std::vector<ImageGrid>& grids) override {
    return inner_->EncodeImages(std::move(pixels), grids);
  }
  Status Forward(std::vector<float>*, const std::vector<BatchSegment>&,
                 const std::vector<int32_t>& rows) override {
    rows_ = rows.size();
    ++step_;
    return Status::Ok();
  }
  Status ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) override {
    MINERU_RETURN_IF_ERROR(CheckLogitsRequests(requests, rows_, vocab_));
    out->assign(requests.size(), RowLogits());
    for (size_t i = 0; i < requests.size(); ++i) {
      const LogitsRequest& r = requests[i];
      if (r.top_k <= 0) {  // a copy per row: sampling changes its row in place, rows in parallel
        if (whole_.size() <= i) whole_.resize(i + 1);
        whole_[i] = row_;
        (*out)[i].row = whole_[i].data();
        continue;
      }
      const std::vector<int32_t>& touched = r.touched_ids();
      std::vector<float> touched_logits(touched.size(), 1.0f);
      std::vector<int32_t> top;
      std::vector<float> top_logits;
      for (int k = 0; k < r.top_k; ++k) {
        const auto id =
            static_cast<int32_t>((step_ * 7919 + static_cast<int64_t>(i) * 104729 + k * 13) % vocab_);
        if (std::binary_search(touched.begin(), touched.end(), id) ||
            std::find(top.begin(), top.end(), id) != top.end())
          continue;
        top.push_back(id);
        top_logits.push_back(5.0f - 0.001f * static_cast<float>(k));
      }
      MergeCandidates(touched, touched_logits.data(), top.data(), top_logits.data(), top.size(), &(*out)[i]);
    }
    return Status::Ok();
  }
  bool logits_on_device() const override { return true; }
  int64_t max_patches_per_pass() const override { return inner_->max_patches_per_pass(); }
  void ReleaseScratch() override { inner_->ReleaseScratch(); }
  std::string Describe() const override { return "null (computes nothing) beside " + inner_->Describe(); }

 private:
  std::unique_ptr<ModelBackend> inner_;
  const int64_t vocab_;
  std::vector<float> row_;
  std::vector<std::vector<float>> whole_;  // the whole rows handed out by the last ReadLogits
  size_t rows_ = 0;
  int64_t step_ = 0;
};

}  // namespace

std::unique_ptr<ModelBackend> MakeNullBackend(std::unique_ptr<ModelBackend> inner, int64_t vocab) {
  return std::make_unique<NullBackend>(std::move(inner), vocab);
}

}  // namespace mineru::cli
