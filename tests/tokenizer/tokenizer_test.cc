// Tests for tokenizer/: golden cases from Hugging Face `tokenizers` on the Qwen2 tokenizer.json,
// incremental decoding, error handling, and small hand-made tokenizers for the rarer options.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

namespace mineru {
namespace {

using json = nlohmann::json;

const std::string kFixtures = MINERU_FIXTURES_DIR;

// Independent strict UTF-8 validator (does not share code with the library).
bool ValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp;
    int n;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (int k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000))
      return false;  // overlong
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

class QwenTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto t0 = std::chrono::steady_clock::now();
    auto tok = Tokenizer::LoadFromFile(kFixtures + "/tinyvocab/tokenizer.json");
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ info     ] tokenizer.json loaded in %.1f ms\n", ms);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(tok).value().release();

    std::ifstream f(kFixtures + "/tokenizer_golden.json");
    ASSERT_TRUE(f.good());
    golden_ = new json(json::parse(f));
    ASSERT_TRUE(golden_->is_array());
    ASSERT_EQ(golden_->size(), 40u);
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
    delete golden_;
    golden_ = nullptr;
  }

  static std::vector<int32_t> Ids(const json& c) { return c["ids"].get<std::vector<int32_t>>(); }

  static Tokenizer* tok_;
  static json* golden_;
};

Tokenizer* QwenTokenizerTest::tok_ = nullptr;
json* QwenTokenizerTest::golden_ = nullptr;

TEST_F(QwenTokenizerTest, GoldenEncode) {
  ASSERT_NE(tok_, nullptr);
  for (size_t i = 0; i < golden_->size(); ++i) {
    const json& c = (*golden_)[i];
    const std::string text = c["text"].get<std::string>();
    auto ids = tok_->Encode(text);
    ASSERT_TRUE(ids.ok()) << "case " << i << ": " << ids.status().ToString();
    EXPECT_EQ(*ids, Ids(c)) << "case " << i << ": " << text;
  }
}

TEST_F(QwenTokenizerTest, GoldenDecode) {
  ASSERT_NE(tok_, nullptr);
  for (size_t i = 0; i < golden_->size(); ++i) {
    const json& c = (*golden_)[i];
    auto d = tok_->Decode(Ids(c), false);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(*d, c["decoded"].get<std::string>()) << "case " << i;
    auto ds = tok_->Decode(Ids(c), true);
    ASSERT_TRUE(ds.ok()) << ds.status().ToString();
    EXPECT_EQ(*ds, c["decoded_skip"].get<std::string>()) << "case " << i;
  }
}

void CheckIncremental(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip,
                      const std::string& label) {
  auto full = tok.Decode(ids, skip);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  IncrementalDecoder dec(tok, skip);
  std::string acc;
  for (int32_t id : ids) {
    const std::string piece = dec.Push(id);
    EXPECT_TRUE(ValidUtf8(piece)) << label << ": Push(" << id << ") yielded invalid UTF-8";
    acc += piece;
  }
  const std::string tail = dec.Flush();
  EXPECT_TRUE(ValidUtf8(tail)) << label;
  acc += tail;
  EXPECT_EQ(acc, *full) << label;
}

TEST_F(QwenTokenizerTest, GoldenIncrementalDecode) {
  ASSERT_NE(tok_, nullptr);
  for (size_t i = 0; i < golden_->size(); ++i) {
    const json& c = (*golden_)[i];
    CheckIncremental(*tok_, Ids(c), false, "case " + std::to_string(i));
    CheckIncremental(*tok_, Ids(c), true, "case " + std::to_string(i) + " skip");
  }
}

TEST_F(QwenTokenizerTest, IncrementalHoldsBackSplitCharacters) {
  ASSERT_NE(tok_, nullptr);
  // Emoji and rare CJK are split across byte-level tokens; the decoder must hold partial bytes back.
  for (const char* text_c :
       {"emoji 👍🏽 🇨🇳 👨‍👩‍👧‍👦 ✅", "鿰𠀀𪚥 丼", "x🦩y"}) {
    const std::string text(text_c);
    auto ids = tok_->Encode(text);
    ASSERT_TRUE(ids.ok());
    IncrementalDecoder dec(*tok_);
    std::string acc;
    bool held_back = false;
    for (int32_t id : *ids) {
      const std::string piece = dec.Push(id);
      ASSERT_TRUE(ValidUtf8(piece));
      if (dec.pending_bytes() > 0) held_back = true;
      acc += piece;
    }
    EXPECT_EQ(dec.pending_bytes(), 0u);
    acc += dec.Flush();
    EXPECT_EQ(acc, text);
    EXPECT_TRUE(held_back) << "expected '" << text << "' to split a character across tokens";
  }
}

TEST_F(QwenTokenizerTest, IncrementalRandomByteTokens) {
  ASSERT_NE(tok_, nullptr);
  // Random sequences of single-byte tokens (including invalid UTF-8) and ordinary tokens.
  std::vector<int32_t> byte_ids;
  for (int32_t id = 0; id < tok_->vocab_size(); ++id)
    if (tok_->TokenBytes(id).size() == 1) byte_ids.push_back(id);
  ASSERT_EQ(byte_ids.size(), 256u);
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int32_t> ids;
    const int n = 1 + static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) {
      const uint32_t r = rng() % 10;
      if (r < 7) {
        // Bias toward lead/continuation bytes so partial and broken sequences are common.
        const int32_t b =
            r < 3 ? 0x80 + static_cast<int32_t>(rng() % 0x40) : static_cast<int32_t>(rng() % 256);
        for (int32_t id : byte_ids)
          if (static_cast<unsigned char>(tok_->TokenBytes(id)[0]) == b) ids.push_back(id);
      } else if (r < 9) {
        ids.push_back(static_cast<int32_t>(rng() % 151643));
      } else {
        ids.push_back(151643 + static_cast<int32_t>(rng() % 26));
      }
    }
    CheckIncremental(*tok_, ids, false, "trial " + std::to_string(trial));
    CheckIncremental(*tok_, ids, true, "trial " + std::to_string(trial) + " skip");
  }
}

TEST_F(QwenTokenizerTest, DecodeRepairsInvalidUtf8LikeHF) {
  ASSERT_NE(tok_, nullptr);
  // Byte 0xE4 ('ä' in the byte alphabet) alone, then 'a': one U+FFFD for the truncated sequence.
  const auto e4 = tok_->TokenToId("ä");
  const auto a = tok_->TokenToId("a");
  ASSERT_TRUE(e4 && a);
  EXPECT_EQ(*tok_->Decode({*e4, *a}),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(*tok_->Decode({*e4}), "\xEF\xBF\xBD");
  IncrementalDecoder dec(*tok_);
  EXPECT_EQ(dec.Push(*e4), "");
  EXPECT_EQ(dec.pending_bytes(), 1u);
  EXPECT_EQ(dec.Flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(dec.Flush(), "");
}

TEST_F(QwenTokenizerTest, SpecialTokenIds) {
  ASSERT_NE(tok_, nullptr);
  EXPECT_EQ(tok_->TokenToId("<|im_start|>"), std::optional<int32_t>(151644));
  EXPECT_EQ(tok_->TokenToId("<|im_end|>"), std::optional<int32_t>(151645));
  EXPECT_EQ(tok_->TokenToId("<|endoftext|>"), std::optional<int32_t>(151643));
  EXPECT_EQ(tok_->TokenToId("<|image_pad|>"), std::optional<int32_t>(151655));
  EXPECT_EQ(tok_->TokenToId("<|vision_start|>"), std::optional<int32_t>(151652));
  EXPECT_EQ(tok_->TokenToId("<|vision_end|>"), std::optional<int32_t>(151653));
  EXPECT_EQ(tok_->IdToToken(151655), "<|image_pad|>");
  EXPECT_TRUE(tok_->IsSpecial(151644));
  EXPECT_TRUE(tok_->IsSpecial(151655));
  EXPECT_FALSE(tok_->IsSpecial(151667));  // <think> is an added, non-special token here
  EXPECT_TRUE(tok_->IsAdded(151667));
  EXPECT_FALSE(tok_->IsSpecial(9707));
  EXPECT_FALSE(tok_->IsSpecial(-1));
  EXPECT_FALSE(tok_->IsSpecial(1 << 30));
  EXPECT_EQ(tok_->vocab_size(), 151669);
  EXPECT_EQ(tok_->TokenToId("Hello"), std::optional<int32_t>(9707));
  EXPECT_EQ(tok_->IdToToken(9707), "Hello");
  EXPECT_EQ(tok_->IdToToken(220), "Ġ");
  EXPECT_EQ(tok_->IdToToken(-5), "");
  EXPECT_EQ(tok_->IdToToken(tok_->vocab_size()), "");
  EXPECT_FALSE(tok_->TokenToId("no such token, surely").has_value());
  EXPECT_EQ(tok_->AddedTokens().size(), 26u);
  auto ids = tok_->Encode("<|im_start|><|vision_start|><|image_pad|><|vision_end|>");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{151644, 151652, 151655, 151653}));
}

TEST_F(QwenTokenizerTest, VocabRoundTrip) {
  ASSERT_NE(tok_, nullptr);
  for (int32_t id = 0; id < tok_->vocab_size(); id += 97) {
    const std::string t = tok_->IdToToken(id);
    ASSERT_FALSE(t.empty()) << id;
    EXPECT_EQ(tok_->TokenToId(t), std::optional<int32_t>(id));
  }
}

TEST_F(QwenTokenizerTest, InvalidUtf8IsAnError) {
  ASSERT_NE(tok_, nullptr);
  for (const std::string& bad :
       {std::string("\xFF"), std::string("abc\xC3"), std::string("\xED\xA0\x80"), std::string("\xC0\xAF"),
        std::string("ok \xF4\x90\x80\x80"), std::string("\x80 lone continuation"), std::string("\xE4\xB8")}) {
    auto ids = tok_->Encode(bad);
    ASSERT_FALSE(ids.ok());
    EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
  }
  // Embedded NUL is valid UTF-8.
  auto ids = tok_->Encode(std::string("a\0b", 3));
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*tok_->Decode(*ids), std::string("a\0b", 3));
}

TEST_F(QwenTokenizerTest, OutOfRangeIdIsAnError) {
  ASSERT_NE(tok_, nullptr);
  for (int32_t bad : {-1, tok_->vocab_size(), 151936, 1 << 30}) {
    auto d = tok_->Decode({9707, bad});
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  }
  IncrementalDecoder dec(*tok_);
  EXPECT_EQ(dec.Push(-1), "");
  EXPECT_EQ(dec.Push(9707), "Hello");
}

TEST_F(QwenTokenizerTest, RoundTripsLongAndOddInputs) {
  ASSERT_NE(tok_, nullptr);
  std::vector<std::string> texts = {
      std::string(100000, ' '),
      std::string(20000, 'a'),
      std::string(5000, '\n') + "x" + std::string(5000, '\t'),
      "😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀",
      "<|im_start|<|im_start|>>|im_end|><|im_end",
      "\xEF\xBB\xBF BOM and \xC2\xA0 nbsp \xE2\x80\xA8 line sep",
  };
  std::string big;
  for (int i = 0; i < 2000; ++i) big += "表格 Table " + std::to_string(i) + " <|image_pad|>\n";
  texts.push_back(big);
  for (const std::string& t : texts) {
    auto ids = tok_->Encode(t);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    auto d = tok_->Decode(*ids);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, t);
  }
}

TEST_F(QwenTokenizerTest, RandomBytesNeverCrash) {
  ASSERT_NE(tok_, nullptr);
  std::mt19937 rng(77);
  const char* pool[] = {"a",        " ",         "\n",       "'s",           "中", "\xF0\x9F",
                        "\x98\x80", "\xE4",      "\xB8\xAD", "<|im_start|>", "<|", "\xC3",
                        "\xA9",     "e\xCC\x81", "\xFF",     "\x00",         "1",  "\t"};
  int valid = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string s;
    const int n = static_cast<int>(rng() % 16);
    for (int k = 0; k < n; ++k) s += pool[rng() % (sizeof(pool) / sizeof(pool[0]))];
    auto ids = tok_->Encode(s);
    if (!ValidUtf8(s)) {
      EXPECT_FALSE(ids.ok());
      continue;
    }
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    ++valid;
    auto d = tok_->Decode(*ids);
    ASSERT_TRUE(d.ok());
    // NFC may recompose e + U+0301; everything else round-trips.
    if (s.find("\xCC\x81") == std::string::npos) {
      EXPECT_EQ(*d, s);
    }
  }
  EXPECT_GT(valid, 100);
}

TEST_F(QwenTokenizerTest, ConcurrentEncode) {
  ASSERT_NE(tok_, nullptr);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        for (size_t i = 0; i < golden_->size(); ++i) {
          const json& c = (*golden_)[(i + t * 7) % golden_->size()];
          auto ids = tok_->Encode(c["text"].get<std::string>() + (rep % 2 ? " " + std::to_string(rep) : ""));
          if (!ids.ok()) {
            ++failures;
            continue;
          }
          if (rep % 2 == 0 && *ids != Ids(c)) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(QwenTokenizerTest, EncodeSpeed) {
  ASSERT_NE(tok_, nullptr);
  std::string text;
  for (const json& c : *golden_) text += c["text"].get<std::string>() + "\n";
  std::string big;
  while (big.size() < (1u << 20)) big += text;
  const auto t0 = std::chrono::steady_clock::now();
  auto ids = tok_->Encode(big);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(ids.ok());
  std::printf("[ info     ] encoded %.1f MB into %zu tokens in %.3f s\n", big.size() / 1e6, ids->size(), s);
}

// ---------------------------------------------------------------------------------------------
// Differential cases from Hugging Face `tokenizers` 0.23 (tests/tokenizer/make_hf_cases.js): random
// text on the fixture tokenizer and on variants of it that use the rarer tokenizer.json options.

class HfCasesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfCasesTest, MatchesHuggingFace) {
  std::ifstream cf(std::string(MINERU_TOKENIZER_TEST_DIR) + "/hf_cases.json");
  ASSERT_TRUE(cf.good());
  const json all = json::parse(cf);
  ASSERT_TRUE(all.contains(GetParam()));
  const json& v = all[GetParam()];

  std::ifstream tf(kFixtures + "/tinyvocab/tokenizer.json");
  ASSERT_TRUE(tf.good());
  json tj = json::parse(tf);
  for (const auto& kv : v["edit"].items()) tj[kv.key()] = kv.value();
  auto loaded = Tokenizer::LoadFromJson(tj.dump());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Tokenizer& tok = **loaded;
  EXPECT_EQ(tok.vocab_size(), v["vocab_size"].get<int32_t>());

  int mismatches = 0;
  for (const json& c : v["enc"]) {
    const std::string text = c["text"].get<std::string>();
    auto ids = tok.Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    if (*ids != c["ids"].get<std::vector<int32_t>>()) {
      ++mismatches;
      ADD_FAILURE() << "encode mismatch for " << json(text).dump();
      if (mismatches > 10) return;
    }
  }
  for (const json& c : v["dec"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    for (bool skip : {false, true}) {
      auto d = tok.Decode(ids, skip);
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(*d, c[skip ? "decoded_skip" : "decoded"].get<std::string>());
      CheckIncremental(tok, ids, skip, "hf decode case");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, HfCasesTest,
                         ::testing::Values("base", "added", "gpt2_nfkc", "prefix_nfd", "split_prev",
                                           "split_next", "split_contiguous", "split_removed_inverted"));

// ---------------------------------------------------------------------------------------------
// Errors on malformed tokenizer.json.

StatusCode LoadCode(const std::string& text) {
  auto t = Tokenizer::LoadFromJson(text);
  return t.ok() ? StatusCode::kOk : t.status().code();
}

json MiniTokenizer() {
  // Byte-level alphabet: bytes 'a'..'d' are themselves, space is "Ġ".
  json j;
  j["version"] = "1.0";
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  j["added_tokens"] = json::array();
  json vocab = {{"a", 0},  {"b", 1},   {"c", 2},  {"d", 3}, {"Ġ", 4},
                {"ab", 5}, {"abc", 6}, {"Ġa", 7}, {"cd", 8}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"vocab", vocab},
                {"merges", json::array({"a b", "ab c", "Ġ a", "c d"})}};
  return j;
}

TEST_F(QwenTokenizerTest, MergesListTheFilesMergesInRankOrder) {
  std::ifstream f(kFixtures + "/tinyvocab/tokenizer.json");
  ASSERT_TRUE(f.good());
  const json file = json::parse(f);
  std::vector<std::string> want;
  for (const json& m : file["model"]["merges"]) {
    want.push_back(m.is_string() ? m.get<std::string>()
                                 : m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  ASSERT_GT(want.size(), 1000u);
  EXPECT_EQ(tok_->Merges(), want);  // GGUF export writes these
}

TEST(TokenizerLoadTest, AddedTokenOverridesItsIdsVocabText) {
  json j = MiniTokenizer();
  j["added_tokens"] = json::array({{{"id", 8}, {"content", "<x>"}, {"special", true}},
                                   {{"id", 10}, {"content", "<y>"}, {"special", false}}});
  auto t = Tokenizer::LoadFromJson(j.dump());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Tokenizer& tok = **t;
  EXPECT_EQ(tok.vocab_size(), 11);  // ids 0..8 of the vocab, 9 a hole, 10 added
  EXPECT_EQ(tok.IdToToken(8), "<x>");
  EXPECT_EQ(tok.TokenBytes(8), "<x>");
  EXPECT_TRUE(tok.IsAdded(8));
  EXPECT_TRUE(tok.IsSpecial(8));
  EXPECT_EQ(tok.IdToToken(9), "");
  EXPECT_FALSE(tok.IsAdded(9));
  EXPECT_EQ(tok.IdToToken(10), "<y>");
  EXPECT_EQ(tok.TokenToId("<x>"), 8);
  EXPECT_EQ(tok.TokenToId("cd"), 8);  // the vocab text still finds its id
  EXPECT_EQ(tok.TokenToId("ab"), 5);
  EXPECT_EQ(tok.TokenToId("zz"), std::nullopt);
  // Merges keep the vocab's texts, in rank order.
  EXPECT_EQ(tok.Merges(), (std::vector<std::string>{"a b", "ab c", "Ġ a", "c d"}));
  EXPECT_EQ(*tok.Encode("cd"), (std::vector<int32_t>{8}));
}

TEST(TokenizerLoadTest, MalformedInputsGiveErrors) {
  EXPECT_NE(LoadCode(""), StatusCode::kOk);
  EXPECT_NE(LoadCode("{"), StatusCode::kOk);
  EXPECT_NE(LoadCode("[]"), StatusCode::kOk);
  EXPECT_NE(LoadCode("null"), StatusCode::kOk);
  EXPECT_NE(LoadCode("{}"), StatusCode::kOk);
  EXPECT_NE(LoadCode(R"({"model": 3})"), StatusCode::kOk);
  EXPECT_NE(LoadCode(R"({"model": {}})"), StatusCode::kOk);
  EXPECT_NE(LoadCode(R"({"model": {"type": "BPE", "merges": []}})"), StatusCode::kOk);
  EXPECT_NE(LoadCode("\xFF\xFE garbage"), StatusCode::kOk);

  ASSERT_EQ(LoadCode(MiniTokenizer().dump()), StatusCode::kOk);
  auto with = [](auto edit) {
    json j = MiniTokenizer();
    edit(j);
    return LoadCode(j.dump());
  };
  EXPECT_EQ(with([](json& j) { j["model"].erase("vocab"); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"].erase("merges"); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) {
              j["model"]["vocab"] = json::array({"a", "b"});
            }),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["vocab"]["a"] = "zero"; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["vocab"]["a"] = -3; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["vocab"]["a"] = 4000000000LL; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["merges"] = "a b"; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["merges"].push_back(12); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["merges"].push_back("ab"); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["merges"].push_back(json::array({"a"})); }),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["merges"].push_back("x y"); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["merges"].push_back("b a"); }),
            StatusCode::kInvalidArgument);  // "ba"
  EXPECT_EQ(with([](json& j) { j["model"]["type"] = "WordPiece"; }), StatusCode::kUnimplemented);
  EXPECT_EQ(with([](json& j) { j["model"]["type"] = 7; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["model"]["dropout"] = 0.1; }), StatusCode::kUnimplemented);
  EXPECT_EQ(with([](json& j) { j["model"]["unk_token"] = "<unk>"; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["added_tokens"] = json::object(); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) {
              j["added_tokens"].push_back({{"id", "9"}, {"content", "<x>"}});
            }),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["added_tokens"].push_back({{"id", 9}}); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) {
              j["added_tokens"].push_back({{"id", 9}, {"content", "<x>"}, {"special", "yes"}});
            }),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }), StatusCode::kUnimplemented);
  EXPECT_EQ(with([](json& j) { j["normalizer"] = "NFC"; }), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["pre_tokenizer"] = nullptr; }), StatusCode::kUnimplemented);
  EXPECT_EQ(with([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }), StatusCode::kUnimplemented);
  EXPECT_EQ(with([](json& j) {
              j["pre_tokenizer"] = {
                  {"type", "Sequence"},
                  {"pretokenizers",
                   json::array(
                       {{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}},
                        {{"type", "ByteLevel"}}})}};
            }),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }), StatusCode::kUnimplemented);

  auto missing = Tokenizer::LoadFromFile("/nonexistent/tokenizer.json");
  EXPECT_FALSE(missing.ok());
}

TEST(TokenizerLoadTest, TruncatedAndMutatedJsonNeverCrash) {
  const std::string good = MiniTokenizer().dump();
  for (size_t len = 0; len < good.size(); len += 3) {
    EXPECT_NE(LoadCode(good.substr(0, len)), StatusCode::kOk) << len;
  }
  std::mt19937 rng(5);
  const char repl[] = {'{', '}', '[', ']', '"', ',', ':', '0', 'x', ' ', '\\'};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string s = good;
    for (int k = 0; k < 3; ++k) s[rng() % s.size()] = repl[rng() % sizeof(repl)];
    auto t = Tokenizer::LoadFromJson(s);  // any Status is fine; no crash, no exception
    if (t.ok()) {
      auto ids = (*t)->Encode("abc abcd");
      EXPECT_TRUE(ids.ok());
    }
  }
}

TEST(TokenizerLoadTest, MergesAsStringsOrPairsAgree) {
  json j1 = MiniTokenizer();
  json j2 = MiniTokenizer();
  json pairs = json::array();
  for (const auto& m : j1["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    const size_t sp = s.find(' ');
    pairs.push_back(json::array({s.substr(0, sp), s.substr(sp + 1)}));
  }
  j2["model"]["merges"] = pairs;
  auto t1 = Tokenizer::LoadFromJson(j1.dump());
  auto t2 = Tokenizer::LoadFromJson(j2.dump());
  ASSERT_TRUE(t1.ok()) << t1.status().ToString();
  ASSERT_TRUE(t2.ok()) << t2.status().ToString();
  for (const char* text_c : {"abcd", "abc abcd", "dcba", " a ab", "cdab"}) {
    const std::string text(text_c);
    auto a = (*t1)->Encode(text);
    auto b = (*t2)->Encode(text);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b) << text;
  }
  // Merge order: "a b" (rank 0) then "ab c" (rank 1) beat "c d" (rank 3): abcd -> abc d.
  EXPECT_EQ(*(*t1)->Encode("abcd"), (std::vector<int32_t>{6, 3}));
  // " a" at the start of the word: "Ġ a" rank 2 applies once "a b" (rank 0) does not claim the a.
  EXPECT_EQ(*(*t1)->Encode(" ac"), (std::vector<int32_t>{7, 2}));
  EXPECT_EQ(*(*t1)->Encode(" ab"), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(*(*t1)->Decode({4, 5, 8}), " abcd");
}

TEST(TokenizerLoadTest, AddedTokenOptions) {
  json j = MiniTokenizer();
  j["added_tokens"] = json::array({
      {{"id", 20}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
      {{"id", 21}, {"content", "<ss>"}, {"special", true}, {"normalized", false}},
      {{"id", 22}, {"content", "[L]"}, {"special", false}, {"normalized", false}, {"lstrip", true}},
      {{"id", 23}, {"content", "[R]"}, {"special", false}, {"normalized", false}, {"rstrip", true}},
      {{"id", 24}, {"content", "bad"}, {"special", false}, {"normalized", false}, {"single_word", true}},
      {{"id", 25},
       {"content", "\xC3\xA9"},
       {"special", false},
       {"normalized", true}},  // é, matched after NFC
  });
  // Give the mini vocab the bytes needed below.
  j["model"]["vocab"]["["] = 9;
  j["model"]["vocab"]["]"] = 10;
  j["model"]["vocab"]["L"] = 11;
  j["model"]["vocab"]["R"] = 12;
  j["model"]["vocab"]["e"] = 13;
  j["model"]["vocab"]["Ì"] = 14;  // byte 0xCC
  j["model"]["vocab"]["ģ"] = 15;  // byte 0x81 (U+0301 is CC 81)
  auto t = Tokenizer::LoadFromJson(j.dump());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Tokenizer& tok = **t;
  EXPECT_EQ(tok.vocab_size(), 26);
  // Longest match first.
  EXPECT_EQ(*tok.Encode("<ss><s>"), (std::vector<int32_t>{21, 20}));
  // lstrip eats the spaces before, rstrip the spaces after.
  EXPECT_EQ(*tok.Encode("a  [L]"), (std::vector<int32_t>{0, 22}));
  EXPECT_EQ(*tok.Encode("[R]  a"), (std::vector<int32_t>{23, 0}));
  EXPECT_EQ(*tok.Encode("a  [R]"), (std::vector<int32_t>{0, 4, 4, 23}));
  // single_word: only when not inside a word.
  EXPECT_EQ(*tok.Encode("a bad c"), (std::vector<int32_t>{0, 4, 24, 4, 2}));
  EXPECT_EQ(*tok.Encode("abad"), (std::vector<int32_t>{5, 0, 3}));
  // normalized=true token matches the NFC form of a decomposed e + U+0301.
  EXPECT_EQ(*tok.Encode("e\xCC\x81"), (std::vector<int32_t>{25}));
  // Skipping special tokens on decode.
  EXPECT_EQ(*tok.Decode({20, 0, 21, 24}, true), "abad");
  EXPECT_EQ(*tok.Decode({20, 0, 21, 24}, false), "<s>a<ss>bad");
  // Ids in range that name nothing are dropped, like HF.
  EXPECT_EQ(*tok.Decode({0, 17, 1}), "ab");
}

TEST(TokenizerLoadTest, SplitBehaviours) {
  auto make = [](const std::string& behavior, bool invert) {
    json j = MiniTokenizer();
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Split"}, {"pattern", {{"String", "c"}}}, {"behavior", behavior}, {"invert", invert}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
    auto t = Tokenizer::LoadFromJson(j.dump());
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return std::move(t).value();
  };
  // "abcd": pieces per behaviour; merges then apply inside each piece only.
  EXPECT_EQ(*make("Isolated", false)->Encode("abcd"), (std::vector<int32_t>{5, 2, 3}));
  EXPECT_EQ(*make("Removed", false)->Encode("abcd"), (std::vector<int32_t>{5, 3}));
  EXPECT_EQ(*make("MergedWithPrevious", false)->Encode("abcd"), (std::vector<int32_t>{6, 3}));
  EXPECT_EQ(*make("MergedWithNext", false)->Encode("abcd"), (std::vector<int32_t>{5, 8}));
  EXPECT_EQ(*make("Contiguous", false)->Encode("abccd"), (std::vector<int32_t>{5, 2, 2, 3}));
  EXPECT_EQ(*make("Removed", true)->Encode("abcd"), (std::vector<int32_t>{2}));
}

}  // namespace
}  // namespace mineru
