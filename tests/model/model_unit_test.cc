// Unit tests of the model layer's loaders (config, safetensors, weights) on good and hostile
// inputs, and of the sampler against hand-computed expectations.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "../util/files.h"
#include "base/mapped_file.h"
#include "base/safetensors.h"
#include "base/thread_pool.h"
#include "engine/generate.h"
#include "engine/sampler.h"
#include "golden_util.h"
#include "model/config.h"
#include "model/gen_model.h"
#include "model/qwen2vl.h"

namespace mineru {
namespace {

using Json = nlohmann::json;
using testing::FixturePath;
using testing::ReadAll;
using testing::TestDir;

void CopyFile(const std::string& from, const std::string& to) {
  ASSERT_TRUE(WriteStringToFile(to, ReadAll(from)).ok());
}

// Greedy ids of the tiny model on its text-only golden prompt.
std::vector<int32_t> GreedyIds(const Qwen2VLModel& m, int n) {
  testing::Golden g("tiny", "text_only");
  std::vector<int32_t> ids;
  for (int64_t x : g.I64("input_ids")) ids.push_back(static_cast<int32_t>(x));
  GenerateOptions o;
  o.max_new_tokens = n;
  o.ignore_eos = true;
  auto r = Generate(m, ids, {}, o, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->ids : std::vector<int32_t>{};
}

// ---- config ----

TEST(ConfigTest, ParsesFlatFixtureConfig) {
  auto c = LoadModelConfig(FixturePath("tiny/config.json"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->text.hidden_size, 64);
  EXPECT_EQ(c->text.head_dim, 16);
  EXPECT_EQ(c->text.mrope_section, (std::vector<int>{2, 3, 3}));
  EXPECT_EQ(c->vision.mlp_dim, 256);
  EXPECT_FALSE(c->text.tie_word_embeddings);
  EXPECT_EQ(c->image_token_id, 2000);
}

TEST(ConfigTest, ParsesNestedTextConfigAndInChannels) {
  Json flat = Json::parse(ReadAll(FixturePath("tinyvocab/config.json")));
  Json nested = {{"model_type", "qwen2_vl"},
                 {"image_token_id", 151655},
                 {"vision_start_token_id", 151652},
                 {"vision_end_token_id", 151653},
                 {"eos_token_id", {151645, 151643}}};
  Json text = Json::object();
  for (const char* k :
       {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "rms_norm_eps", "tie_word_embeddings"}) {
    text[k] = flat[k];
  }
  text["rope_parameters"] = {{"rope_type", "default"}, {"mrope_section", {2, 3, 3}}, {"rope_theta", 5000.0}};
  nested["text_config"] = text;
  Json vision = flat["vision_config"];
  vision.erase("in_chans");
  nested["vision_config"] = vision;
  auto c = ParseModelConfig(nested.dump());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->text.hidden_size, 32);
  EXPECT_TRUE(c->text.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c->text.rope_theta, 5000.0);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{151645, 151643}));
  EXPECT_EQ(c->vision.in_channels, 3);
}

TEST(ConfigTest, MissingOrBadFieldsAreErrors) {
  Json base = Json::parse(ReadAll(FixturePath("tiny/config.json")));
  for (const char* field :
       {"hidden_size", "num_hidden_layers", "vocab_size", "vision_config", "rope_scaling"}) {
    Json j = base;
    j.erase(field);
    auto c = ParseModelConfig(j.dump());
    EXPECT_FALSE(c.ok()) << "missing " << field;
  }
  Json j = base;
  j["num_attention_heads"] = "four";
  EXPECT_FALSE(ParseModelConfig(j.dump()).ok());
  j = base;
  j["rope_scaling"]["mrope_section"] = {2, 3, 4};
  EXPECT_FALSE(ParseModelConfig(j.dump()).ok());
  j = base;
  j["hidden_size"] = -5;
  EXPECT_FALSE(ParseModelConfig(j.dump()).ok());
  EXPECT_FALSE(ParseModelConfig("{not json").ok());
  EXPECT_FALSE(ParseModelConfig("[1,2]").ok());
}

TEST(ConfigTest, PreprocessorSizeForms) {
  auto a = ParseImageProcessorConfig(R"({"min_pixels": 100, "max_pixels": 2000})");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->min_pixels, 100);
  EXPECT_EQ(a->max_pixels, 2000);
  auto b = ParseImageProcessorConfig(R"({"size": {"shortest_edge": 3136, "longest_edge": 1605632}})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->min_pixels, 3136);
  EXPECT_EQ(b->max_pixels, 1605632);
  EXPECT_FALSE(ParseImageProcessorConfig(R"({"min_pixels": 5000, "max_pixels": 100})").ok());
  EXPECT_FALSE(ParseImageProcessorConfig(R"({"image_std": [0, 1, 1]})").ok());
}

// ---- safetensors ----

std::string HeaderFile(const std::string& header_json, size_t data_bytes) {
  std::string s(8, '\0');
  uint64_t n = header_json.size();
  std::memcpy(&s[0], &n, 8);
  return s + header_json + std::string(data_bytes, '\0');
}

TEST(SafetensorsTest, RejectsLyingHeaders) {
  const std::string dir = TestDir("st");
  struct Bad {
    const char* name;
    std::string bytes;
  } cases[] = {
      {"short", std::string("abc")},
      {"huge_header_len", std::string("\xff\xff\xff\xff\x00\x00\x00\x00", 8) + "{}"},
      {"not_json", HeaderFile("{bad json", 0)},
      {"offsets_past_end", HeaderFile(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8)},
      {"shape_mismatch", HeaderFile(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16)},
      {"bad_dtype", HeaderFile(R"({"a":{"dtype":"Q9","shape":[4],"data_offsets":[0,16]}})", 16)},
      {"negative_dim", HeaderFile(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", 16)},
      {"reversed_offsets", HeaderFile(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[16,0]}})", 16)},
      {"overlap", HeaderFile(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                             16)},
      {"absurd_shape", HeaderFile(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],)"
                                  R"("data_offsets":[0,16]}})",
                                  16)},
  };
  for (const auto& c : cases) {
    const std::string p = dir + "/" + c.name + ".safetensors";
    ASSERT_TRUE(WriteStringToFile(p, c.bytes).ok());
    auto f = SafetensorsFile::Open(p);
    EXPECT_FALSE(f.ok()) << c.name;
  }
  EXPECT_EQ(SafetensorsFile::Open(dir + "/does_not_exist").status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsTest, WriteThenRead) {
  const std::string p = TestDir("st") + "/ok.safetensors";
  std::string bytes(12, '\0');
  float v[3] = {1.5f, -2.0f, 3.25f};
  std::memcpy(&bytes[0], v, 12);
  ASSERT_TRUE(WriteSafetensors(p, {{"x", DType::kF32, {3}, bytes}}, {{"format", "pt"}}).ok());
  auto f = SafetensorsFile::Open(p);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  auto x = ReadAsF32(*(*f)->Find("x"));
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(*x, (std::vector<float>{1.5f, -2.0f, 3.25f}));
}

// ---- weights ----

TEST(WeightsTest, TruncatedModelFileIsAnError) {
  const std::string dir = TestDir("truncated");
  CopyFile(FixturePath("tiny/config.json"), dir + "/config.json");
  std::string w = ReadAll(FixturePath("tiny/model.safetensors"));
  ASSERT_TRUE(WriteStringToFile(dir + "/model.safetensors", w.substr(0, w.size() / 2)).ok());
  auto m = Qwen2VLModel::Load(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("truncated"), std::string::npos) << m.status().ToString();
}

TEST(WeightsTest, MissingDirAndMissingWeights) {
  EXPECT_EQ(Qwen2VLModel::Load("/nonexistent/model").status().code(), StatusCode::kNotFound);
  const std::string dir = TestDir("noweights");
  CopyFile(FixturePath("tiny/config.json"), dir + "/config.json");
  ::unlink((dir + "/model.safetensors").c_str());
  EXPECT_FALSE(Qwen2VLModel::Load(dir).ok());
}

// Rewrites the tiny checkpoint with a tensor transform; returns the directory.
std::string RewriteTiny(const std::string& name,
                        const std::function<void(std::vector<TensorToWrite>*)>& edit) {
  std::string dir = TestDir(name);
  CopyFile(FixturePath("tiny/config.json"), dir + "/config.json");
  auto f = SafetensorsFile::Open(FixturePath("tiny/model.safetensors")).value();
  std::vector<TensorToWrite> ts;
  for (const auto& t : f->tensors()) {
    ts.push_back({t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)});
  }
  edit(&ts);
  EXPECT_TRUE(WriteSafetensors(dir + "/model.safetensors", ts).ok());
  return dir;
}

TEST(WeightsTest, ShapeOrDtypeThatDisagreesWithConfigIsAnError) {
  std::string dir = RewriteTiny("badshape", [](std::vector<TensorToWrite>* ts) {
    for (auto& t : *ts) {
      if (t.name == "model.layers.1.mlp.up_proj.weight") t.shape = {64, 128};  // transposed
    }
  });
  auto m = Qwen2VLModel::Load(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("up_proj"), std::string::npos);
  dir = RewriteTiny("baddtype", [](std::vector<TensorToWrite>* ts) {
    for (auto& t : *ts) {
      if (t.name == "model.norm.weight") {
        t.dtype = DType::kI32;
      }
    }
  });
  EXPECT_FALSE(Qwen2VLModel::Load(dir).ok());
  dir = RewriteTiny("missingtensor", [](std::vector<TensorToWrite>* ts) {
    ts->erase(std::remove_if(ts->begin(), ts->end(),
                             [](const TensorToWrite& t) { return t.name == "visual.merger.ln_q.bias"; }),
              ts->end());
  });
  EXPECT_FALSE(Qwen2VLModel::Load(dir).ok());
}

TEST(WeightsTest, NewerNamingSchemeAndBf16GiveSameModel) {
  auto ref = Qwen2VLModel::Load(FixturePath("tiny")).value();
  const std::vector<int32_t> want = GreedyIds(*ref, 8);
  std::string dir = RewriteTiny("newnames", [](std::vector<TensorToWrite>* ts) {
    for (auto& t : *ts) {
      if (t.name.rfind("visual.", 0) == 0)
        t.name = "model." + t.name;
      else if (t.name.rfind("model.", 0) == 0)
        t.name = "model.language_model." + t.name.substr(6);
    }
  });
  auto m = Qwen2VLModel::Load(dir);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(GreedyIds(**m, 8), want);
}

TEST(WeightsTest, ShardedCheckpointWithIndex) {
  auto ref = Qwen2VLModel::Load(FixturePath("tiny")).value();
  const std::vector<int32_t> want = GreedyIds(*ref, 8);
  const std::string dir = TestDir("sharded");
  CopyFile(FixturePath("tiny/config.json"), dir + "/config.json");
  ::unlink((dir + "/model.safetensors").c_str());
  auto f = SafetensorsFile::Open(FixturePath("tiny/model.safetensors")).value();
  std::vector<TensorToWrite> a, b;
  Json map = Json::object();
  for (const auto& t : f->tensors()) {
    TensorToWrite w{t.name, t.dtype, t.shape, std::string(reinterpret_cast<const char*>(t.data), t.nbytes)};
    bool first = t.name.rfind("visual.", 0) == 0;
    map[t.name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    (first ? a : b).push_back(std::move(w));
  }
  ASSERT_TRUE(WriteSafetensors(dir + "/model-00001-of-00002.safetensors", a).ok());
  ASSERT_TRUE(WriteSafetensors(dir + "/model-00002-of-00002.safetensors", b).ok());
  ASSERT_TRUE(
      WriteStringToFile(dir + "/model.safetensors.index.json", Json{{"weight_map", map}}.dump()).ok());
  auto m = Qwen2VLModel::Load(dir);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(GreedyIds(**m, 8), want);
  // An index that escapes the directory is refused.
  ASSERT_TRUE(WriteStringToFile(dir + "/model.safetensors.index.json",
                                Json{{"weight_map", {{"x", "../../etc/passwd"}}}}.dump())
                  .ok());
  EXPECT_FALSE(Qwen2VLModel::Load(dir).ok());
}

TEST(WeightsTest, TiedEmbeddingsWhenLmHeadAbsent) {
  auto m = Qwen2VLModel::Load(FixturePath("tinyvocab"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->weights().tied_lm_head);
  EXPECT_EQ((*m)->weights().stored_dtype, DType::kBF16);
  auto t = Qwen2VLModel::Load(FixturePath("tiny"));
  EXPECT_FALSE((*t)->weights().tied_lm_head);
}

// A prefill longer than one MLP chunk (ForwardBatch splits rows above 512) gives every row the
// bits it gets in shorter steps that are not split: 700 tokens at once against 350 + 350, with
// the fixture's dense weights and quantized to q8 and q4 at load.
TEST(DecoderTest, LongPrefillEqualsItsHalvesBitForBit) {
  ThreadPool pool(2);
  for (const char* quant : {"", "q8", "q4"}) {
    auto m = Qwen2VLModel::Load(FixturePath("tiny"), quant, &pool);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const Decoder& dec = (*m)->decoder();
    const kernels::KernelWorkspace ctx((*m)->kernel_config(), &pool);
    const int64_t H = dec.config().hidden_size, n = 700;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> embeds(static_cast<size_t>(n * H));
    for (float& e : embeds) e = dist(rng);
    std::vector<int64_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), 0);
    std::vector<float> whole(embeds.size()), halves(embeds.size());
    KvCache one, two;
    dec.Forward(embeds.data(), n, pos.data(), pos.data(), pos.data(), &one, whole.data(), ctx);
    for (int64_t h0 = 0; h0 < n; h0 += n / 2) {
      const size_t at = static_cast<size_t>(h0);
      dec.Forward(embeds.data() + at * H, n / 2, pos.data() + at, pos.data() + at, pos.data() + at, &two,
                  halves.data() + at * H, ctx);
    }
    int bad = 0;
    for (size_t i = 0; i < whole.size(); ++i) {
      if (whole[i] != halves[i] && ++bad <= 3)
        ADD_FAILURE() << quant << " row " << i / H << ": " << whole[i] << " vs " << halves[i];
    }
    EXPECT_EQ(bad, 0) << quant;
  }
}

TEST(GenModelTest, TinyPresetLoadsAndRuns) {
  const std::string dir = TestDir("genmodel");
  GenModelOptions o;
  o.preset = "tiny";
  ASSERT_TRUE(GenerateRandomModel(dir, o).ok());
  auto m = Qwen2VLModel::Load(dir);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  GenerateOptions g;
  g.max_new_tokens = 3;
  g.ignore_eos = true;
  auto r = Generate(**m, {1, 2, 3}, {}, g, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ids.size(), 3u);
  GenModelOptions nonsense;
  nonsense.preset = "nonsense";
  EXPECT_FALSE(GenerateRandomModel(dir, nonsense).ok());
}

TEST(GenerateTest, RejectsBadPrompts) {
  auto m = Qwen2VLModel::Load(FixturePath("tiny")).value();
  GenerateOptions o;
  o.max_new_tokens = 2;
  EXPECT_FALSE(Generate(*m, {}, {}, o, nullptr).ok());
  EXPECT_FALSE(Generate(*m, {1, 99999}, {}, o, nullptr).ok());  // outside the vocabulary
  EXPECT_FALSE(Generate(*m, {1, -3}, {}, o, nullptr).ok());
  EXPECT_FALSE(Generate(*m, {1, 2000, 3}, {}, o, nullptr).ok());  // image token, no image
}

// ---- sampler ----

TEST(SamplerTest, PresenceAndFrequencyPenaltiesCountOutputOnly) {
  SamplingParams p;
  p.presence_penalty = 1.0f;
  p.frequency_penalty = 0.5f;
  SequenceSampler s(p, /*prompt_ids=*/{0, 0, 0});
  s.Accept(1);
  s.Accept(1);
  s.Accept(2);
  std::vector<float> logits = {5, 5, 5, 5};
  s.ApplyPenalties(logits.data(), 4);
  // token 0 only in the prompt: untouched; token 1: 5 - 2*0.5 - 1; token 2: 5 - 0.5 - 1.
  EXPECT_FLOAT_EQ(logits[0], 5.0f);
  EXPECT_FLOAT_EQ(logits[1], 3.0f);
  EXPECT_FLOAT_EQ(logits[2], 3.5f);
  EXPECT_FLOAT_EQ(logits[3], 5.0f);
}

TEST(SamplerTest, RepetitionPenaltyOverPromptAndOutput) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  SequenceSampler s(p, {0});
  s.Accept(1);
  std::vector<float> logits = {4, -4, 4, -4};
  s.ApplyPenalties(logits.data(), 4);
  EXPECT_FLOAT_EQ(logits[0], 2.0f);   // positive: divided
  EXPECT_FLOAT_EQ(logits[1], -8.0f);  // negative: multiplied
  EXPECT_FLOAT_EQ(logits[2], 4.0f);
  EXPECT_FLOAT_EQ(logits[3], -4.0f);
}

TEST(SamplerTest, NoRepeatNgramBansContinuations) {
  SamplingParams p;
  p.no_repeat_ngram_size = 3;
  SequenceSampler s(p, {});
  // generated: 7 8 9 7 8 -> the suffix (7 8) was followed by 9 before: 9 is banned.
  for (int32_t t : {7, 8, 9, 7, 8}) s.Accept(t);
  std::vector<float> logits(10, 0.0f);
  logits[9] = 10.0f;
  s.ApplyNoRepeatNgram(logits.data(), 10);
  EXPECT_TRUE(std::isinf(logits[9]) && logits[9] < 0);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(logits[i], 0.0f);
  std::vector<float> l2(10, 0.0f);
  l2[9] = 10.0f;
  EXPECT_NE(s.Sample(l2.data(), 10), 9);
  // Shorter than n: no bans.
  SequenceSampler t(p, {});
  t.Accept(4);
  t.Accept(4);
  std::vector<float> l3(5, 1.0f);
  t.ApplyNoRepeatNgram(l3.data(), 5);
  for (float x : l3) EXPECT_EQ(x, 1.0f);
}

TEST(SamplerTest, NoRepeatNgramOfHundredOnLoop) {
  SamplingParams p;
  p.no_repeat_ngram_size = 100;
  SequenceSampler s(p, {});
  // A 3-token loop repeated: after 100+ tokens the loop must be broken.
  std::vector<int32_t> cycle = {11, 12, 13};
  int broken_at = -1;
  for (int i = 0; i < 200; ++i) {
    std::vector<float> logits(20, 0.0f);
    logits[cycle[i % 3]] = 10.0f;
    int32_t t = s.Sample(logits.data(), 20);
    s.Accept(t);
    if (t != cycle[i % 3]) {
      broken_at = i;
      break;
    }
  }
  // The first 99 tokens plus the 100th are free; token index 102 would repeat the 100-gram
  // that starts at index 0... the first forbidden step is i = 102 (needs tokens 3..101 == 0..98).
  EXPECT_EQ(broken_at, 102);
}

TEST(SamplerTest, SeededSamplingIsReproducible) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.9f;
  p.top_k = 5;
  p.seed = 42;
  std::vector<float> logits = {1, 2, 3, 4, 5, 0, 0, 0};
  SequenceSampler a(p, {}), b(p, {});
  for (int i = 0; i < 20; ++i) {
    std::vector<float> la = logits, lb = logits;
    int32_t x = a.Sample(la.data(), 8), y = b.Sample(lb.data(), 8);
    EXPECT_EQ(x, y);
    EXPECT_GE(x, 0);
    EXPECT_LT(x, 5);  // top_k 5 keeps tokens 0..4
    a.Accept(x);
    b.Accept(y);
  }
}

// The reference for the sampler's candidate set: sort every token (most likely first, lower id
// on ties), keep top_k, then the shortest prefix whose softmax mass at the temperature reaches top_p.
std::vector<int32_t> ReferenceKept(const std::vector<float>& logits, const SamplingParams& p) {
  const int32_t v = static_cast<int32_t>(logits.size());
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(),
            [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  if (p.top_k > 0 && p.top_k < v) idx.resize(static_cast<size_t>(p.top_k));
  std::vector<double> w;
  double sum = 0;
  for (int32_t t : idx) {
    w.push_back(std::exp((static_cast<double>(logits[t]) - logits[idx[0]]) / p.temperature));
    sum += w.back();
  }
  if (p.top_p < 1.0f) {
    double cum = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      cum += w[i] / sum;
      if (cum >= p.top_p) {
        idx.resize(i + 1);
        break;
      }
    }
  }
  return idx;
}

TEST(SamplerTest, KeptCandidatesMatchAFullSort) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (int32_t vocab : {1, 2, 7, 63, 64, 65, 1000, 20000}) {
    for (float temperature : {0.3f, 1.0f, 2.0f}) {
      for (int top_k : {0, 1, 5, 64, 100000}) {
        for (float top_p : {0.05f, 0.5f, 0.9f, 0.999f, 1.0f}) {
          std::vector<float> logits(static_cast<size_t>(vocab));
          for (float& x : logits) x = std::round(n(rng) * 4) / 4;  // quarter steps: many ties
          SamplingParams p;
          p.temperature = temperature;
          p.top_k = top_k;
          p.top_p = top_p;
          SequenceSampler s(p, {});
          std::vector<int32_t> got = s.KeptTokens(logits.data(), vocab);
          std::vector<int32_t> want = ReferenceKept(logits, p);
          if (top_p >= 1.0f) {  // no nucleus: the order is free, the set is not
            std::sort(got.begin(), got.end());
            std::sort(want.begin(), want.end());
          }
          ASSERT_EQ(got, want) << "vocab " << vocab << " T " << temperature << " top_k " << top_k << " top_p "
                               << top_p;
        }
      }
    }
  }
}

TEST(SamplerTest, DrawsFollowTheTemperedSoftmax) {
  // Seeded, so the frequencies are fixed numbers: bounds of 5 standard deviations hold with room.
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -30.0f};
  for (float top_p : {1.0f, 0.8f}) {
    SamplingParams p;
    p.temperature = 0.7f;
    p.top_p = top_p;
    p.seed = 1234;
    SequenceSampler s(p, {});
    const std::vector<int32_t> kept = s.KeptTokens(logits.data(), 6);
    std::vector<double> prob(6, 0.0);
    double sum = 0;
    for (int32_t t : kept) sum += prob[t] = std::exp((logits[t] - 2.0) / 0.7);
    const int draws = 40000;
    std::vector<int> count(6, 0);
    for (int i = 0; i < draws; ++i) {
      std::vector<float> l = logits;
      ++count[s.Sample(l.data(), 6)];
    }
    for (int t = 0; t < 6; ++t) {
      const double q = prob[t] / sum;
      const double sd = std::sqrt(draws * q * (1 - q)) + 1e-9;
      EXPECT_NEAR(count[t], draws * q, 5 * sd + 0.5) << "token " << t << " top_p " << top_p;
    }
    if (top_p < 1.0f) {
      EXPECT_EQ(count[4], 0) << "outside the nucleus";
    }
  }
}

}  // namespace
}  // namespace mineru
