#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <iterator>
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

template <typename At>
void SequenceSampler::ApplyPenaltiesAt(const At& at) const {
  // vLLM: repetition penalty over prompt + output tokens (divide positive logits, multiply
  // negative ones), then frequency and presence penalties over output tokens only.
  if (p_.repetition_penalty != 1.0f) {
    auto penalize = [&](int32_t t) {
      if (float* x = at(t)) *x = *x > 0 ? *x / p_.repetition_penalty : *x * p_.repetition_penalty;
    };
    // Every token of prompt and output once, ascending: the union of the two sorted lists.
    size_t i = 0, j = 0;
    while (i < prompt_unique_.size() || j < out_ids_.size()) {
      const bool take_prompt =
          j == out_ids_.size() || (i < prompt_unique_.size() && prompt_unique_[i] <= out_ids_[j]);
      const int32_t t = take_prompt ? prompt_unique_[i] : out_ids_[j];
      if (take_prompt && j < out_ids_.size() && out_ids_[j] == t) ++j;
      take_prompt ? ++i : ++j;
      penalize(t);
    }
  }
  if (p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f) {
    for (size_t i = 0; i < out_ids_.size(); ++i) {
      if (float* x = at(out_ids_[i]))
        *x -= p_.frequency_penalty * static_cast<float>(out_counts_[i]) + p_.presence_penalty;
    }
  }
}

void SequenceSampler::ApplyPenalties(float* logits, int32_t vocab) const {
  ApplyPenaltiesAt([&](int32_t t) { return t >= 0 && t < vocab ? logits + t : nullptr; });
}

template <typename F>
void SequenceSampler::ForEachBanned(const F& f) const {
  const int n = p_.no_repeat_ngram_size;
  const int len = static_cast<int>(generated_.size());
  if (n <= 0 || len < n) return;  // as MinerU's processor: nothing until n tokens exist
  if (n == 1) {
    for (int32_t t : generated_) f(t);
    return;
  }
  // Every token that followed an earlier occurrence of the current (n-1)-token suffix.
  const int32_t* suffix = generated_.data() + len - (n - 1);
  const uint64_t key = HashTokens(suffix, n - 1);
  auto range = ngram_index_.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    const int32_t start = it->second;
    if (start + n - 1 >= len) continue;  // the suffix itself: nothing follows yet
    if (!std::equal(suffix, suffix + n - 1, generated_.data() + start)) continue;  // hash collision
    f(generated_[start + n - 1]);
  }
}

void SequenceSampler::ApplyNoRepeatNgram(float* logits, int32_t vocab) const {
  ForEachBanned([&](int32_t t) {
    if (t >= 0 && t < vocab) logits[t] = -std::numeric_limits<float>::infinity();
  });
}

template <typename At>
void SequenceSampler::ApplyRules(const At& at) const {
  for (const auto& [id, bias] : p_.logit_bias) {
    if (float* x = at(id)) *x += bias;
  }
  ApplyPenaltiesAt(at);
  ForEachBanned([&](int32_t t) {
    if (float* x = at(t)) *x = -std::numeric_limits<float>::infinity();
  });
}

size_t SequenceSampler::Keep(const float* logits, size_t n, int32_t vocab) {
  // Candidates: every position, or the top_k (most likely first: the order of the draw must not
  // depend on how many other tokens the row had, so a candidate row draws what the whole row does).
  idx_.resize(n);
  std::iota(idx_.begin(), idx_.end(), 0);
  auto before = [logits](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  size_t k = n;
  if (p_.top_k > 0 && p_.top_k < vocab) {
    k = std::min(n, static_cast<size_t>(p_.top_k));
    if (k < n)
      std::nth_element(idx_.begin(), idx_.begin() + static_cast<std::ptrdiff_t>(k) - 1, idx_.end(), before);
    idx_.resize(k);
    std::sort(idx_.begin(), idx_.end(), before);
  }
  const double mx = *std::max_element(logits, logits + n);
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
  const size_t keep = Keep(logits, static_cast<size_t>(std::max(vocab, 0)), vocab);
  return std::vector<int32_t>(idx_.begin(), idx_.begin() + static_cast<std::ptrdiff_t>(keep));
}

size_t SequenceSampler::Choose(float* logits, size_t n, int32_t vocab) {
  // A NaN logit (a broken model) counts as -inf: never chosen, and the orderings below stay strict
  // (the candidate path leaves untouched NaNs out, which is the same).
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(logits[i])) logits[i] = -std::numeric_limits<float>::infinity();
  }
  const size_t best = static_cast<size_t>(std::max_element(logits, logits + n) - logits);
  const bool greedy = p_.temperature <= 0.0f || p_.top_k == 1;
  if (greedy || !std::isfinite(logits[best])) return best;
  // Temperature, then top-k, then top-p over the softmax, then a seeded draw among the kept
  // candidates in proportion to their weights.
  const size_t keep = Keep(logits, n, vocab);
  std::uniform_real_distribution<double> u(0.0, weight_sum_);
  double r = u(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= weight_[i];
    if (r <= 0) return static_cast<size_t>(idx_[i]);
  }
  return static_cast<size_t>(idx_[keep - 1]);
}

int32_t SequenceSampler::Sample(float* logits, int32_t vocab) {
  ApplyRules([&](int32_t t) { return t >= 0 && t < vocab ? logits + t : nullptr; });
  return static_cast<int32_t>(Choose(logits, static_cast<size_t>(vocab), vocab));
}

CandidateQuery SequenceSampler::Query(int32_t vocab) const {
  CandidateQuery q;
  const bool greedy = p_.temperature <= 0.0f || p_.top_k == 1;
  if (greedy) {
    q.top_k = 1;
  } else if (p_.top_k > 0 && p_.top_k < vocab && p_.top_k <= kMaxCandidateTopK) {
    q.top_k = p_.top_k;
  } else {
    return q;  // the draw's softmax spans the whole row
  }
  // The sorted lists merged (prompt and output tokens), then the few others (bias, bans) added.
  std::vector<int32_t> few;
  auto add = [&](int32_t t) {
    if (t >= 0 && t < vocab) few.push_back(t);
  };
  for (const auto& [id, bias] : p_.logit_bias) add(id);
  ForEachBanned(add);
  std::sort(few.begin(), few.end());
  const bool rep = p_.repetition_penalty != 1.0f;
  const bool out = rep || p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f;
  static const std::vector<int32_t> kNone;
  const std::vector<int32_t>& a = rep ? prompt_unique_ : kNone;
  const std::vector<int32_t>& b = out ? out_ids_ : kNone;
  std::vector<int32_t> ab;
  ab.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(ab));
  q.touched.reserve(ab.size() + few.size());
  std::set_union(ab.begin(), ab.end(), few.begin(), few.end(), std::back_inserter(q.touched));
  // Ids outside the vocabulary (a prompt or output id past it) are never candidates.
  while (!q.touched.empty() && q.touched.back() >= vocab) q.touched.pop_back();
  q.touched.erase(q.touched.begin(), std::lower_bound(q.touched.begin(), q.touched.end(), 0));
  q.touched.erase(std::unique(q.touched.begin(), q.touched.end()), q.touched.end());
  return q;
}

int32_t SequenceSampler::SampleCandidates(const int32_t* ids, float* logits, size_t n, int32_t vocab) {
  if (n == 0) return 0;  // no candidates (a malformed answer): token 0 rather than a crash
  // Lookups mostly come in ascending runs (the output tokens' loops): each search starts at the
  // previous answer when it can.
  const int32_t* from = ids;
  ApplyRules([&](int32_t t) -> float* {
    if (from == ids + n || *from > t) from = ids;
    const int32_t* at = std::lower_bound(from, ids + n, t);
    from = at;
    return at != ids + n && *at == t ? logits + (at - ids) : nullptr;
  });
  return ids[Choose(logits, n, vocab)];
}

void SequenceSampler::Accept(int32_t token) {
  generated_.push_back(token);
  const auto at = std::lower_bound(out_ids_.begin(), out_ids_.end(), token);
  const auto i = at - out_ids_.begin();
  if (at != out_ids_.end() && *at == token) {
    ++out_counts_[static_cast<size_t>(i)];
  } else {
    out_ids_.insert(at, token);
    out_counts_.insert(out_counts_.begin() + i, 1);
  }
  const int n = p_.no_repeat_ngram_size;
  const int len = static_cast<int>(generated_.size());
  if (n >= 2 && len >= n - 1) {
    // Index the (n-1)-gram that ends at the newest token.
    const int start = len - (n - 1);
    ngram_index_.emplace(HashTokens(generated_.data() + start, n - 1), start);
  }
}

}  // namespace mineru
