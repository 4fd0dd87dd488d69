#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace mineru {
namespace {

uint64_t HashTokens(const int32_t* t, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; ++i) {
    h ^= static_cast<uint32_t>(t[i]);
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace

SequenceSampler::SequenceSampler(const SamplingParams& params, const std::vector<int32_t>& prompt_ids)
    : p_(params), rng_(params.seed) {
  if (p_.repetition_penalty != 1.0f) {
    prompt_unique_ = prompt_ids;
    std::sort(prompt_unique_.begin(), prompt_unique_.end());
    prompt_unique_.erase(std::unique(prompt_unique_.begin(), prompt_unique_.end()), prompt_unique_.end());
  }
}

void SequenceSampler::ApplyPenalties(float* logits, int32_t vocab) const {
  // vLLM: repetition penalty over prompt + output tokens (divide positive logits, multiply
  // negative ones), then frequency and presence penalties over output tokens only.
  if (p_.repetition_penalty != 1.0f) {
    auto penalize = [&](int32_t t) {
      if (t < 0 || t >= vocab) return;
      logits[t] = logits[t] > 0 ? logits[t] / p_.repetition_penalty : logits[t] * p_.repetition_penalty;
    };
    std::vector<int32_t> seen = prompt_unique_;
    for (const auto& [t, c] : output_counts_) {
      if (!std::binary_search(prompt_unique_.begin(), prompt_unique_.end(), t)) seen.push_back(t);
    }
    for (int32_t t : seen) penalize(t);
  }
  if (p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f) {
    for (const auto& [t, c] : output_counts_) {
      if (t < 0 || t >= vocab) continue;
      logits[t] -= p_.frequency_penalty * static_cast<float>(c) + p_.presence_penalty;
    }
  }
}

void SequenceSampler::ApplyNoRepeatNgram(float* logits, int32_t vocab) const {
  const int n = p_.no_repeat_ngram_size;
  const int len = static_cast<int>(generated_.size());
  if (n <= 0 || len < n) return;  // as MinerU's processor: nothing until n tokens exist
  if (n == 1) {
    for (int32_t t : generated_) {
      if (t >= 0 && t < vocab) logits[t] = -std::numeric_limits<float>::infinity();
    }
    return;
  }
  // Ban every token that followed an earlier occurrence of the current (n-1)-token suffix.
  const int32_t* suffix = generated_.data() + len - (n - 1);
  const uint64_t key = HashTokens(suffix, n - 1);
  auto range = ngram_index_.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    const int32_t start = it->second;
    if (start + n - 1 >= len) continue;  // the suffix itself: nothing follows yet
    if (!std::equal(suffix, suffix + n - 1, generated_.data() + start)) continue;  // hash collision
    const int32_t next = generated_[start + n - 1];
    if (next >= 0 && next < vocab) logits[next] = -std::numeric_limits<float>::infinity();
  }
}

size_t SequenceSampler::Keep(const float* logits, int32_t vocab) {
  // Candidates: every token, or the top_k (unordered: nth_element is O(vocab)).
  const size_t v = static_cast<size_t>(vocab);
  idx_.resize(v);
  std::iota(idx_.begin(), idx_.end(), 0);
  auto before = [logits](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  const size_t k = (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < v) ? static_cast<size_t>(p_.top_k) : v;
  if (k < v) {
    std::nth_element(idx_.begin(), idx_.begin() + static_cast<std::ptrdiff_t>(k) - 1, idx_.end(), before);
    idx_.resize(k);
  }
  const double mx = *std::max_element(logits, logits + vocab);
  auto weight = [&](int32_t id) { return std::exp((static_cast<double>(logits[id]) - mx) / p_.temperature); };
  weight_.resize(k);
  weight_sum_ = 0;
  for (size_t i = 0; i < k; ++i) {
    weight_[i] = weight(idx_[i]);
    weight_sum_ += weight_[i];
  }
  if (p_.top_p >= 1.0f) return k;
  // The nucleus: the fewest most likely candidates whose mass reaches top_p. Candidates are put
  // in order a growing block at a time, so a peaked distribution costs O(vocab), not a full sort.
  double cum = 0;
  size_t sorted = 0, keep = k;
  bool reached = false;
  for (size_t block = 64; sorted < k && !reached; block *= 2) {
    const size_t end = std::min(k, sorted + block);
    const auto first = idx_.begin() + static_cast<std::ptrdiff_t>(sorted);
    const auto last = idx_.begin() + static_cast<std::ptrdiff_t>(end);
    std::nth_element(first, last - 1, idx_.end(), before);
    std::sort(first, last, before);
    for (; sorted < end; ++sorted) {
      cum += weight(idx_[sorted]) / weight_sum_;
      if (cum >= p_.top_p) {
        keep = sorted + 1;
        reached = true;
        break;
      }
    }
  }
  // The draw is over the kept candidates alone, most likely first.
  idx_.resize(keep);
  weight_.resize(keep);
  weight_sum_ = 0;
  for (size_t i = 0; i < keep; ++i) {
    weight_[i] = weight(idx_[i]);
    weight_sum_ += weight_[i];
  }
  return keep;
}

std::vector<int32_t> SequenceSampler::KeptTokens(const float* logits, int32_t vocab) {
  const size_t keep = Keep(logits, vocab);
  return std::vector<int32_t>(idx_.begin(), idx_.begin() + static_cast<std::ptrdiff_t>(keep));
}

int32_t SequenceSampler::Sample(float* logits, int32_t vocab) {
  for (const auto& [id, bias] : p_.logit_bias) {
    if (id >= 0 && id < vocab) logits[id] += bias;
  }
  ApplyPenalties(logits, vocab);
  ApplyNoRepeatNgram(logits, vocab);
  const int32_t best = static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
  const bool greedy = p_.temperature <= 0.0f || p_.top_k == 1;
  if (greedy || !std::isfinite(logits[best])) return best;
  // Temperature, then top-k, then top-p over the softmax, then a seeded draw among the kept
  // candidates in proportion to their weights.
  const size_t keep = Keep(logits, vocab);
  std::uniform_real_distribution<double> u(0.0, weight_sum_);
  double r = u(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= weight_[i];
    if (r <= 0) return idx_[i];
  }
  return idx_[keep - 1];
}

void SequenceSampler::Accept(int32_t token) {
  generated_.push_back(token);
  ++output_counts_[token];
  const int n = p_.no_repeat_ngram_size;
  const int len = static_cast<int>(generated_.size());
  if (n >= 2 && len >= n - 1) {
    // Index the (n-1)-gram that ends at the newest token.
    const int start = len - (n - 1);
    ngram_index_.emplace(HashTokens(generated_.data() + start, n - 1), start);
  }
}

}  // namespace mineru
