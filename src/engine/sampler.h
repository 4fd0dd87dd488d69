// engine/sampler.h — MinerU's sampling: vLLM-semantics penalties, no-repeat n-grams, greedy or
// seeded temperature/top-k/top-p sampling. One SequenceSampler per sequence; it sees only that
// sequence's tokens, so its choices do not depend on what else is in a batch.
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace mineru {

struct SamplingParams {
  float temperature = 0.0f;  // 0 = greedy
  float top_p = 1.0f;
  int top_k = 0;             // 0 or < 0 = off; 1 = greedy
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;
  int no_repeat_ngram_size = 0;  // 0 = off; MinerU uses 100
  uint64_t seed = 0;
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

 private:
  SamplingParams p_;
  std::vector<int32_t> generated_;
  std::unordered_map<int32_t, int32_t> output_counts_;
  std::vector<uint8_t> in_prompt_;  // for repetition_penalty (prompt + output tokens)
  std::vector<int32_t> prompt_unique_;
  // n-gram index: hash of the (n-1) tokens starting at i -> start indices i.
  std::unordered_multimap<uint64_t, int32_t> ngram_index_;
  std::mt19937_64 rng_;
};

}  // namespace mineru
