// Sampling from candidate logits (engine/sampler.h, CandidateQuery; what a GPU backend sends back
// instead of whole rows): the candidates' draw is the whole row's draw, token for token, over
// random rules, histories and rows with ties; the CPU form of the candidate pick
// (kernels/logit_candidates.h, the CUDA kernel's twin) against a full sort.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "engine/sampler.h"
#include "kernels/logit_candidates.h"
#include "model/backend.h"

namespace mineru {
namespace {

// Every token not excluded and not NaN, most likely first, the lower id first on ties.
std::vector<int32_t> SortedUntouched(const std::vector<float>& row, const std::vector<int32_t>& excluded) {
  std::vector<int32_t> ids;
  for (int32_t t = 0; t < static_cast<int32_t>(row.size()); ++t) {
    if (!std::binary_search(excluded.begin(), excluded.end(), t) && !std::isnan(row[t])) ids.push_back(t);
  }
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  return ids;
}

// Quarter steps (many ties), some -inf, some signed zeros.
std::vector<float> RandomRow(int32_t vocab, std::mt19937* rng) {
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::uniform_int_distribution<int> odd(0, 19);
  std::vector<float> row(static_cast<size_t>(vocab));
  for (float& x : row) {
    const int o = odd(*rng);
    x = o == 0   ? -std::numeric_limits<float>::infinity()
        : o == 1 ? -0.0f
        : o == 2 ? 0.0f
                 : std::round(n(*rng) * 4) / 4;
  }
  return row;
}

TEST(LogitCandidatesTest, TopLogitsExcludingMatchesAFullSort) {
  std::mt19937 rng(11);
  for (int32_t vocab : {1, 2, 7, 64, 65, 1000, 4099}) {
    for (int top_k : {1, 2, 5, 64, 2000}) {
      for (int excluded_every : {0, 1, 3, 50}) {
        std::vector<float> row = RandomRow(vocab, &rng);
        if (vocab > 10) row[3] = std::numeric_limits<float>::quiet_NaN();  // never a candidate
        std::vector<int32_t> excluded;
        for (int32_t t = 0; excluded_every > 0 && t < vocab; t += excluded_every) excluded.push_back(t);
        std::vector<int32_t> want = SortedUntouched(row, excluded);
        if (want.size() > static_cast<size_t>(top_k)) want.resize(static_cast<size_t>(top_k));
        const std::vector<int32_t> got =
            kernels::TopLogitsExcluding(row.data(), vocab, excluded.data(), excluded.size(), top_k);
        ASSERT_EQ(got, want) << "vocab " << vocab << " top_k " << top_k << " excluded every "
                             << excluded_every;
      }
    }
  }
}

// What a backend answers: touched and top ids merged ascending with their logits; a top id that is
// also touched is kept once, with the touched logit (the one the rules then change).
TEST(LogitCandidatesTest, MergeCandidatesAscendsAndKeepsTouchedOnce) {
  const std::vector<int32_t> touched = {2, 5, 9};
  const std::vector<float> touched_logits = {0.2f, 0.5f, 0.9f};
  const std::vector<int32_t> top = {7, 5, 1};
  const std::vector<float> top_logits = {7.0f, 55.0f, 1.0f};
  RowLogits r;
  float dummy = 0;
  r.row = &dummy;
  MergeCandidates(touched, touched_logits.data(), top.data(), top_logits.data(), top.size(), &r);
  EXPECT_EQ(r.row, nullptr);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 2, 5, 7, 9}));
  EXPECT_EQ(r.logits, (std::vector<float>{1.0f, 0.2f, 0.5f, 7.0f, 0.9f}));
  MergeCandidates({}, nullptr, top.data(), top_logits.data(), 1, &r);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{7}));
}

SamplingParams RandomParams(std::mt19937* rng, int32_t vocab) {
  auto pick = [&](auto... v) {
    const std::vector<double> options = {static_cast<double>(v)...};
    return options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(*rng)];
  };
  SamplingParams p;
  p.temperature = static_cast<float>(pick(0.0, 0.5, 1.0, 1.7));
  p.top_k = static_cast<int>(pick(0, 1, 2, 7, 50, 5000));
  p.top_p = static_cast<float>(pick(1.0, 0.95, 0.5, 0.01));
  p.presence_penalty = static_cast<float>(pick(0.0, 1.0, -0.5));
  p.frequency_penalty = static_cast<float>(pick(0.0, 0.05, 0.3));
  p.repetition_penalty = static_cast<float>(pick(1.0, 1.3, 0.8));
  p.no_repeat_ngram_size = static_cast<int>(pick(0, 1, 2, 3, 100));
  p.seed = (*rng)();
  const int biases = static_cast<int>(pick(0, 1, 4));
  std::uniform_int_distribution<int32_t> id(-2, vocab + 2);  // some outside the vocabulary
  for (int i = 0; i < biases; ++i)
    p.logit_bias.push_back({id(*rng), static_cast<float>(pick(-100.0, 2.5, 100.0))});
  if (biases > 0) p.logit_bias.push_back(p.logit_bias.front());  // the same id twice adds twice
  return p;
}

// The candidates of Query(vocab) cut from a whole row, as a backend answers them: ascending ids
// with their raw logits.
void Candidates(const std::vector<float>& row, const CandidateQuery& q, std::vector<int32_t>* ids,
                std::vector<float>* logits) {
  std::vector<int32_t> top = SortedUntouched(row, q.touched);
  if (top.size() > static_cast<size_t>(q.top_k)) top.resize(static_cast<size_t>(q.top_k));
  *ids = q.touched;
  ids->insert(ids->end(), top.begin(), top.end());
  std::sort(ids->begin(), ids->end());
  logits->clear();
  for (int32_t t : *ids) logits->push_back(row[t]);
}

// Two samplers with the same rules and seed, one fed whole rows and one their candidates (where
// its Query allows; the whole row otherwise, as the engine does): the same token at every step.
TEST(SamplerCandidatesTest, CandidateDrawsAreTheWholeRowsDraws) {
  std::mt19937 rng(2024);
  int candidate_steps = 0, touched_steps = 0, sampled_steps = 0;
  for (int32_t vocab : {1, 3, 16, 200, 3000}) {
    for (int trial = 0; trial < 60; ++trial) {
      const SamplingParams p = RandomParams(&rng, vocab);
      std::vector<int32_t> prompt;
      for (int i = 0; i < 12; ++i)
        prompt.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab)));
      SequenceSampler whole(p, prompt), cand(p, prompt);
      // A small alphabet of hot tokens, so penalties and n-gram bans keep firing.
      for (int step = 0; step < 40; ++step) {
        std::vector<float> row = RandomRow(vocab, &rng);
        for (int h = 0; h < 4 && vocab > 8; ++h) row[static_cast<size_t>(h)] += 6.0f;
        const CandidateQuery q = cand.Query(vocab);
        std::vector<float> full = row;
        const int32_t want = whole.Sample(full.data(), vocab);
        int32_t got;
        if (q.top_k > 0) {
          std::vector<int32_t> ids;
          std::vector<float> logits;
          Candidates(row, q, &ids, &logits);
          got = cand.SampleCandidates(ids.data(), logits.data(), ids.size(), vocab);
          ++candidate_steps;
          touched_steps += !q.touched.empty();
          sampled_steps += q.top_k > 1;
        } else {
          std::vector<float> again = row;
          got = cand.Sample(again.data(), vocab);
        }
        ASSERT_EQ(got, want) << "vocab " << vocab << " trial " << trial << " step " << step << " T "
                             << p.temperature << " top_k " << p.top_k << " top_p " << p.top_p;
        whole.Accept(want);
        cand.Accept(got);
      }
    }
  }
  // The comparison above must have exercised the candidate path, with rules and with draws.
  EXPECT_GT(candidate_steps, 3000);
  EXPECT_GT(touched_steps, 1500);
  EXPECT_GT(sampled_steps, 500);
}

TEST(SamplerCandidatesTest, QueryNamesEveryTokenTheRulesChange) {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 5;
  p.repetition_penalty = 1.2f;
  p.no_repeat_ngram_size = 2;
  p.logit_bias = {{40, 1.0f}, {-1, 3.0f}, {99, 2.0f}, {40, 1.0f}};
  SequenceSampler s(p, {7, 3, 7});
  for (int32_t t : {11, 12, 11}) s.Accept(t);
  const CandidateQuery q = s.Query(60);
  EXPECT_EQ(q.top_k, 5);
  // bias 40 (99 and -1 are outside); the prompt's 3, 7; the output's 11, 12; after "11" came 12.
  EXPECT_EQ(q.touched, (std::vector<int32_t>{3, 7, 11, 12, 40}));
  // Greedy asks for one; no top_k with a temperature, or a top_k past the limit, needs the row.
  SamplingParams g;
  EXPECT_EQ(SequenceSampler(g, {}).Query(60).top_k, 1);
  EXPECT_TRUE(SequenceSampler(g, {}).Query(60).touched.empty());
  SamplingParams t;
  t.temperature = 1.0f;
  EXPECT_EQ(SequenceSampler(t, {}).Query(60).top_k, 0);
  t.top_k = SequenceSampler::kMaxCandidateTopK + 1;
  EXPECT_EQ(SequenceSampler(t, {}).Query(100000).top_k, 0);
  t.top_k = 60;  // not below the vocabulary: top_k is off
  EXPECT_EQ(SequenceSampler(t, {}).Query(60).top_k, 0);
}

}  // namespace
}  // namespace mineru
