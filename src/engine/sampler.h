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

// The logits a draw needs when the whole row is not at hand (a GPU keeps its rows and sends back
// only these): the raw logits of the tokens the sampler's rules change ("touched": logit_bias
// ids, penalized ids, banned n-gram continuations) and of the top_k most likely other tokens. The
// rules only change touched tokens, so every token a draw can choose is among them, and
// SampleCandidates(those) returns what Sample(the whole row) returns, bit for bit (a NaN logit
// counts as -inf in both; only a row with no finite logit left may then differ in which id it
// returns).
struct CandidateQuery {
  int top_k = 0;                 // > 0: that many untouched tokens; 0: the draw needs the whole row
  std::vector<int32_t> touched;  // distinct, ascending, in [0, vocab)
};

class SequenceSampler {
 public:
  // The most untouched candidates a candidate query asks for; a larger top_k (or none, when not
  // greedy) needs the whole row.
  static constexpr int kMaxCandidateTopK = 1024;

  SequenceSampler(const SamplingParams& params, const std::vector<int32_t>& prompt_ids);

  // Applies logit_bias, penalties and n-gram bans to logits[vocab] in place, then picks a token.
  int32_t Sample(float* logits, int32_t vocab);
  // What the next draw needs of a row of `vocab` logits (CandidateQuery), for SampleCandidates.
  CandidateQuery Query(int32_t vocab) const;
  // The draw Sample would make from the whole row, made from its candidates: ids[n] distinct and
  // ascending with their raw logits[n] (modified in place): every touched token of Query(vocab)
  // and its top_k most likely untouched ones (all of them where fewer exist).
  int32_t SampleCandidates(const int32_t* ids, float* logits, size_t n, int32_t vocab);
  // Records a generated token (call after Sample with the token actually appended).
  void Accept(int32_t token);

  // Exposed for tests: the processing before the choice.
  void ApplyPenalties(float* logits, int32_t vocab) const;
  void ApplyNoRepeatNgram(float* logits, int32_t vocab) const;

  const std::vector<int32_t>& generated() const { return generated_; }

  // Exposed for tests: the tokens a draw chooses among (top_k, then top_p over the tempered
  // softmax), most likely first when top_k or top_p is on, in id order otherwise.
  std::vector<int32_t> KeptTokens(const float* logits, int32_t vocab);

 private:
  SamplingParams p_;
  std::vector<int32_t> generated_;
  // The distinct output tokens, ascending, and how often each was generated.
  std::vector<int32_t> out_ids_, out_counts_;
  std::vector<int32_t> prompt_unique_;
  // n-gram index: hash of the (n-1) tokens starting at i -> start indices i.
  std::unordered_multimap<uint64_t, int32_t> ngram_index_;
  std::mt19937_64 rng_;

  // The rules, over any view of a row: at(id) is the id's logit or nullptr (outside the row).
  template <typename At>
  void ApplyRules(const At& at) const;
  template <typename At>
  void ApplyPenaltiesAt(const At& at) const;
  // Calls f(id) for every token banned by the n-gram rule now.
  template <typename F>
  void ForEachBanned(const F& f) const;
  // Picks among logits[n] (the row's logits after the rules, the candidates in ascending id order
  // where not the whole row) by greedy or by a seeded draw; returns the position. `vocab` is the
  // whole row's size (top_k is off where it is not below it).
  size_t Choose(float* logits, size_t n, int32_t vocab);
  // Fills idx_/weight_ with the kept positions and their unnormalised weights
  // exp((logit - max) / temperature), weight_sum_ with their sum; returns how many were kept.
  // O(n) plus the sorting of the top_k (all when top_k is on) and of the nucleus.
  size_t Keep(const float* logits, size_t n, int32_t vocab);
  std::vector<int32_t> idx_;  // scratch kept across calls (one sequence: no sharing)
  std::vector<double> weight_;
  double weight_sum_ = 0;
};

}  // namespace mineru
