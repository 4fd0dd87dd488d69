// engine/sampler.h — MinerU's sampling: vLLM-semantics penalties, no-repeat n-grams, greedy or
// seeded temperature/top-k/top-p sampling. One SequenceSampler per sequence; it sees only that
// sequence's tokens, so its choices do not depend on what else is in a batch.
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mineru {

struct SamplingParams {
  float temperature = 0.0f;  // 0 = greedy
  float top_p = 1.0f;
  int top_k = 0;  // 0 or < 0 = off; 1 = greedy
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  int no_repeat_ngram_size = 0;  // 0 = off; MinerU uses 100
  uint64_t seed = 0;
  // OpenAI's logit_bias: added to a token's logit before everything else (ids outside the
  // vocabulary are ignored). +100 all but forces a token, -100 all but bans it.
  std::vector<std::pair<int32_t, float>> logit_bias;
};

class SequenceSampler {
 public:
  SequenceSampler(const SamplingParams& params, const std::vector<int32_t>& prompt_ids);

  // Applies penalties and n-gram bans to logits[vocab] in place, then picks a token.
  int32_t Sample(float* logits, int32_t vocab);
  // Records a generated token (call after Sample with the token actually appended).
  void Accept(int32_t token);

  // Exposed for tests: the processing before the choice.
  void ApplyPenalties(float* logits, int32_t vocab) const;
  void ApplyNoRepeatNgram(float* logits, int32_t vocab) const;

  const std::vector<int32_t>& generated() const { return generated_; }

  // Exposed for tests: the tokens a draw chooses among (top_k, then top_p over the tempered
  // softmax), most likely first when top_p < 1, in no particular order otherwise.
  std::vector<int32_t> KeptTokens(const float* logits, int32_t vocab);

 private:
  SamplingParams p_;
  std::vector<int32_t> generated_;
  std::unordered_map<int32_t, int32_t> output_counts_;
  std::vector<int32_t> prompt_unique_;
  // n-gram index: hash of the (n-1) tokens starting at i -> start indices i.
  std::unordered_multimap<uint64_t, int32_t> ngram_index_;
  std::mt19937_64 rng_;

  // Fills idx_/weight_ with the kept candidates and their unnormalised weights
  // exp((logit - max) / temperature), weight_sum_ with their sum; returns how many were kept.
  // O(vocab) plus the sorting of the nucleus (none without top_p).
  size_t Keep(const float* logits, int32_t vocab);
  std::vector<int32_t> idx_;  // scratch kept across calls (one sequence: no sharing)
  std::vector<double> weight_;
  double weight_sum_ = 0;
};

}  // namespace mineru
