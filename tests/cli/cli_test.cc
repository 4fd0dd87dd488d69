// End-to-end tests of the mineru-cpp binary: golden generation through the CLI, the chat
// template on the real tokenizer, and hostile inputs that must give one error line, never a crash.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../util/files.h"
#include "../util/run_cli.h"
#include "base/gguf.h"
#include "base/mapped_file.h"
#include "base/safetensors.h"

namespace {

using mineru::testing::CmdResult;
using mineru::testing::kFx;
using mineru::testing::RunCli;
using mineru::testing::TestDir;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A failing command: non-zero exit, no crash, exactly one line "error: ..." on stderr.
void ExpectCleanFailure(const CmdResult& r, const std::string& what) {
  EXPECT_FALSE(r.signaled) << what;
  EXPECT_NE(r.code, 0) << what;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << what << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
}

struct GoldenCli {
  std::string model, name;
  int32_t image_token;
  std::string gguf = "";  // "" = the safetensors folder; else the GGUF pair of gguf/tinyvocab in this format
};

// --model (and --mmproj) for a case: the fixture folder, or the named GGUF pair.
std::vector<std::string> ModelArgs(const GoldenCli& c) {
  if (c.gguf.empty()) return {"--model", kFx + "/" + c.model};
  const std::string d = kFx + "/gguf/tinyvocab/";
  return {"--model", d + "model-" + c.gguf + ".gguf", "--mmproj", d + "mmproj-" + c.gguf + ".gguf"};
}

class CliGoldenTest : public ::testing::TestWithParam<GoldenCli> {};

TEST_P(CliGoldenTest, RawIdsReproduceGreedyIds) {
  const auto& c = GetParam();
  auto g = mineru::SafetensorsFile::Open(kFx + "/" + c.model + "/golden_" + c.name + ".safetensors").value();
  auto ids = mineru::ReadAsI64(*g->Find("input_ids")).value();
  auto want = mineru::ReadAsI64(*g->Find("generated_ids")).value();
  // Compact each image's placeholder run to one token, as a user of --raw-ids writes it.
  std::string raw;
  int64_t prev = -1;
  for (int64_t id : ids) {
    if (id == c.image_token && prev == c.image_token) continue;
    raw += (raw.empty() ? "" : " ") + std::to_string(id);
    prev = id;
  }
  std::vector<std::string> args = {"generate",    "--raw-ids", raw, "--max-new-tokens", "16", "--ignore-eos",
                                   "--print-ids", "--threads", "2"};
  for (const std::string& a : ModelArgs(c)) args.push_back(a);
  std::string meta = mineru::ReadFileToString(kFx + "/" + c.model + "/golden_" + c.name + ".json").value();
  for (const char* img : {"image0.png", "image1.png", "image2.png"}) {
    if (meta.find(img) != std::string::npos) {
      args.push_back("--image");
      args.push_back(kFx + "/" + img);
    }
  }
  CmdResult r = RunCli(args);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string expect;
  for (size_t i = 0; i < want.size(); ++i) expect += (i ? " " : "") + std::to_string(want[i]);
  EXPECT_EQ(Trim(r.out), expect);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, CliGoldenTest,
    ::testing::Values(GoldenCli{"tiny", "one_image", 2000}, GoldenCli{"tiny", "two_images", 2000},
                      GoldenCli{"tiny", "text_only", 2000}, GoldenCli{"tinyvocab", "one_image", 151655},
                      GoldenCli{"tinyvocab", "two_images", 151655},
                      GoldenCli{"tinyvocab", "text_only", 151655},
                      GoldenCli{"tinyvocab", "one_image", 151655, "f32"},
                      GoldenCli{"tinyvocab", "two_images", 151655, "f32"},
                      GoldenCli{"tinyvocab", "text_only", 151655, "f16"}),
    [](const auto& i) {
      return i.param.model + "_" + i.param.name + (i.param.gguf.empty() ? "" : "_gguf_" + i.param.gguf);
    });

TEST(CliTest, PromptThroughChatTemplateOnRealTokenizer) {
  CmdResult r = RunCli({"generate", "--model", kFx + "/tinyvocab", "--image", kFx + "/image0.png", "--prompt",
                        "\nText Recognition:", "--max-new-tokens", "5", "--ignore-eos", "--print-ids"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string ids = Trim(r.out);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), ' '), 4) << ids;
  // The prompt the template produces, tokenized: system turn, image, text, assistant header.
  CmdResult t = RunCli({"tokenize", "--model", kFx + "/tinyvocab", "--text",
                        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                        "<|vision_start|><|image_pad|><|vision_end|>\nText Recognition:<|im_end|>\n"
                        "<|im_start|>assistant\n"});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(Trim(t.out).rfind("151644 8948 198", 0), 0u) << t.out;
  // And text output decodes without error.
  CmdResult text = RunCli({"generate", "--model", kFx + "/tinyvocab", "--prompt", "Hello", "--max-new-tokens",
                           "4", "--ignore-eos"});
  EXPECT_EQ(text.code, 0) << text.err;
}

// --device: auto falls back to the CPU where no GPU is usable and says why (then with the ids of
// --device cpu); cuda there is a one-line error (a build without CUDA, or no usable GPU), never a
// crash; a value outside cpu|cuda|auto is refused. Where a GPU is usable, auto and cuda run on it.
TEST(CliTest, DeviceFlagChoosesAndExplains) {
  const std::vector<std::string> base = {"generate", "--model",      kFx + "/tinyvocab",
                                         "--prompt", "Hello",        "--max-new-tokens",
                                         "4",        "--ignore-eos", "--print-ids"};
  auto with = [&](const std::string& device) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--device", device});
    return RunCli(args);
  };
  const CmdResult cpu = with("cpu");
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  const CmdResult bad = with("tpu");
  EXPECT_NE(bad.code, 0);
  EXPECT_FALSE(bad.signaled);
  const CmdResult cuda = with("cuda");
  EXPECT_FALSE(cuda.signaled) << cuda.err;
  const CmdResult autod = with("auto");
  ASSERT_EQ(autod.code, 0) << autod.err;
  EXPECT_NE(autod.err.find("device: "), std::string::npos) << autod.err;
  if (cuda.code != 0) {  // no usable GPU here: auto ran on the CPU
    EXPECT_NE(cuda.err.find("error: "), std::string::npos) << cuda.err;
    EXPECT_NE(autod.err.find("device: cpu (--device auto: "), std::string::npos) << autod.err;
    EXPECT_EQ(autod.out, cpu.out);
  }
}

// bench --workload host: the engine around a model that computes nothing reports the host's
// milliseconds a step, greedy and under MinerU's rules, with every request's tokens generated.
TEST(CliTest, BenchHostReportsTheHostsShareOfAStep) {
  const CmdResult r = RunCli({"bench", "--workload", "host", "--model", kFx + "/tinyvocab", "--concurrency",
                              "8", "--new-tokens", "20", "--threads", "2", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"greedy", "mineru_rules"}) {
    const size_t at = r.out.find(std::string("\"") + part + "\":{");
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"host_ms_per_step\":", at), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("\"device\":\"null (computes nothing)"), std::string::npos) << r.out;
}

// The GPU's kernel benchmarks say what they need on a CPU device (no model is loaded for that).
TEST(CliTest, GpuKernelBenchmarksAskForTheGpu) {
  for (const char* w : {"attention", "decode_step"}) {
    const CmdResult r = RunCli({"bench", "--workload", w, "--model", kFx + "/tinyvocab", "--device", "cpu"});
    EXPECT_NE(r.code, 0) << w;
    EXPECT_NE(r.err.find("--device cuda"), std::string::npos) << w << ": " << r.err;
  }
}

TEST(CliTest, TokenizeRoundTrip) {
  CmdResult r = RunCli({"tokenize", "--model", kFx + "/tinyvocab", "--text", "Hello world 你好"});
  ASSERT_EQ(r.code, 0) << r.err;
  CmdResult d = RunCli({"tokenize", "--model", kFx + "/tinyvocab", "--decode", Trim(r.out)});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(Trim(d.out), "Hello world 你好");
}

TEST(CliTest, HostileInputsGiveOneLineErrors) {
  const std::string d = TestDir("cli_bad");
  const std::string tiny = kFx + "/tiny";
  // Missing model directory.
  ExpectCleanFailure(RunCli({"generate", "--model", d + "/nope", "--raw-ids", "1 2", "--print-ids"}),
                     "missing dir");
  // Truncated safetensors.
  const std::string trunc = TestDir("cli_trunc");
  EXPECT_TRUE(mineru::WriteStringToFile(trunc + "/config.json",
                                        mineru::ReadFileToString(tiny + "/config.json").value())
                  .ok());
  std::string w = mineru::ReadFileToString(tiny + "/model.safetensors").value();
  EXPECT_TRUE(mineru::WriteStringToFile(trunc + "/model.safetensors", w.substr(0, w.size() - 1000)).ok());
  ExpectCleanFailure(RunCli({"generate", "--model", trunc, "--raw-ids", "1 2", "--print-ids"}), "truncated");
  // Header whose offsets lie.
  const std::string lie = TestDir("cli_lie");
  EXPECT_TRUE(
      mineru::WriteStringToFile(lie + "/config.json", mineru::ReadFileToString(tiny + "/config.json").value())
          .ok());
  std::string h =
      R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[2048,64],"data_offsets":[0,999999999]}})";
  std::string bytes(8, '\0');
  uint64_t n = h.size();
  std::memcpy(&bytes[0], &n, 8);
  EXPECT_TRUE(mineru::WriteStringToFile(lie + "/model.safetensors", bytes + h + std::string(64, '\0')).ok());
  ExpectCleanFailure(RunCli({"generate", "--model", lie, "--raw-ids", "1 2", "--print-ids"}), "lying header");
  // Config with a missing field.
  const std::string cfg = TestDir("cli_cfg");
  std::string c = mineru::ReadFileToString(tiny + "/config.json").value();
  c.replace(c.find("\"num_hidden_layers\""), std::string("\"num_hidden_layers\"").size(),
            "\"num_hidden_layerz\"");
  EXPECT_TRUE(mineru::WriteStringToFile(cfg + "/config.json", c).ok());
  EXPECT_TRUE(mineru::WriteStringToFile(cfg + "/model.safetensors", w).ok());
  ExpectCleanFailure(RunCli({"generate", "--model", cfg, "--raw-ids", "1 2", "--print-ids"}), "config field");
  // Corrupt image, 1x1 image, an image claiming 60000x60000.
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/corrupt.png", "\x89PNG\r\n\x1a\nthis is not a png").ok());
  ExpectCleanFailure(RunCli({"generate", "--model", tiny, "--image", d + "/corrupt.png", "--raw-ids",
                             "1 2000 2", "--print-ids"}),
                     "corrupt image");
  // Minimal valid 1x1 RGB PNG.
  const unsigned char one[] = {0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d,
                               0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
                               0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xde, 0x00, 0x00, 0x00,
                               0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
                               0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00,
                               0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
  EXPECT_TRUE(
      mineru::WriteStringToFile(d + "/one.png", std::string(reinterpret_cast<const char*>(one), sizeof(one)))
          .ok());
  ExpectCleanFailure(RunCli({"generate", "--model", tiny, "--image", d + "/one.png", "--raw-ids", "1 2000 2",
                             "--print-ids"}),
                     "1x1 image");
  std::string big(reinterpret_cast<const char*>(one), sizeof(one));
  // IHDR width/height at bytes 16..23 -> 60000 x 60000 (CRC now wrong too: either error is fine).
  const unsigned char dims[] = {0x00, 0x00, 0xea, 0x60, 0x00, 0x00, 0xea, 0x60};
  big.replace(16, 8, reinterpret_cast<const char*>(dims), 8);
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/big.png", big).ok());
  ExpectCleanFailure(RunCli({"generate", "--model", tiny, "--image", d + "/big.png", "--raw-ids", "1 2000 2",
                             "--print-ids"}),
                     "60000x60000 image");
  // Invalid UTF-8 text.
  ExpectCleanFailure(RunCli({"generate", "--model", kFx + "/tinyvocab", "--prompt", "bad \xff\xfe utf8"}),
                     "invalid utf-8 prompt");
  ExpectCleanFailure(RunCli({"tokenize", "--model", kFx + "/tinyvocab", "--text", "\xc3"}),
                     "invalid utf-8 text");
  // Bad flags and ids.
  ExpectCleanFailure(RunCli({"generate", "--model", tiny, "--raw-ids", "1 x 2"}), "bad ids");
  ExpectCleanFailure(RunCli({"generate", "--model", tiny, "--raw-ids", "1 99999", "--print-ids"}),
                     "id past vocab");
  ExpectCleanFailure(RunCli({"generate", "--model", tiny, "--raw-ids", "1 2000 2", "--print-ids"}),
                     "image token without image");
  ExpectCleanFailure(RunCli({"generate", "--bogus-flag"}), "unknown flag");
  ExpectCleanFailure(RunCli({"tokenize", "--model", kFx + "/tinyvocab", "--decode", "99999999"}),
                     "decode range");
}

// quantize --format gguf writes a pair that reproduces the model it came from: the exported
// pair gives the ids the safetensors folder gives with the same --quant, for every format.
TEST(CliTest, GgufExportRoundTripsThroughGenerate) {
  const std::string src = kFx + "/tinyvocab";
  const std::vector<std::string> gen = {
      "generate",         "--image", kFx + "/image1.png", "--prompt",   "\nText Recognition:",
      "--max-new-tokens", "12",      "--ignore-eos",      "--print-ids"};
  for (const std::string q : {"bf16", "q8", "q4"}) {
    const std::string out = TestDir("cli_gguf_" + q);
    CmdResult e = RunCli({"quantize", "--model", src, "--format", "gguf", "--quant", q, "-o", out});
    ASSERT_EQ(e.code, 0) << q << ": " << e.err;
    std::vector<std::string> a = gen, b = gen;
    a.insert(a.end(), {"--model", src, "--quant", q});
    b.insert(b.end(), {"--model", out});
    CmdResult ra = RunCli(a), rb = RunCli(b);
    ASSERT_EQ(ra.code, 0) << ra.err;
    ASSERT_EQ(rb.code, 0) << q << ": " << rb.err;
    EXPECT_EQ(Trim(rb.out), Trim(ra.out)) << q;
    // The exported folder tokenizes as the original (tokenizer rebuilt from GGUF metadata).
    const std::string text = "<|im_start|>user\nTable 1: 价格 $x^2$<|im_end|>";
    CmdResult ta = RunCli({"tokenize", "--model", src, "--text", text}),
              tb = RunCli({"tokenize", "--model", out, "--text", text});
    EXPECT_EQ(Trim(tb.out), Trim(ta.out)) << q << ": " << tb.err;
  }
}

// A fresh folder of links to the tinyvocab checkpoint's files (without tokenizer.json unless
// with_tokenizer).
std::string CheckpointLinks(const std::string& name, bool with_tokenizer) {
  const std::string d = TestDir("cli_" + name);
  for (const char* f : {"config.json", "model.safetensors", "preprocessor_config.json", "tokenizer.json",
                        "chat_template.json"}) {
    ::unlink((d + "/" + f).c_str());
    if (std::string(f) == "chat_template.json" || (std::string(f) == "tokenizer.json" && !with_tokenizer)) {
      continue;
    }
    EXPECT_EQ(::symlink((kFx + "/tinyvocab/" + f).c_str(), (d + "/" + f).c_str()), 0) << f;
  }
  return d;
}

// The language-model .gguf quantize --format gguf wrote into dir (the file not named mmproj-*).
std::string ExportedLm(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 5 && n.substr(n.size() - 5) == ".gguf" && n.rfind("mmproj-", 0) != 0) return e.path();
  }
  return "";
}

// A checkpoint without a vocabulary exports as llama.cpp's vocabulary-less GGUF (tokenizer.ggml.model
// "none"), which runs on raw ids exactly as the safetensors folder does; commands that need text
// say the model has no vocabulary.
TEST(CliTest, VocabularyLessGgufRunsOnRawIds) {
  const std::string src = CheckpointLinks("novocab_src", false);
  const std::string out = TestDir("cli_novocab_gguf");
  for (const auto& e : std::filesystem::directory_iterator(out)) std::filesystem::remove(e.path());
  CmdResult e = RunCli({"quantize", "--model", src, "--format", "gguf", "--quant", "bf16", "-o", out});
  ASSERT_EQ(e.code, 0) << e.err;
  auto lm = mineru::GgufFile::Open(ExportedLm(out));
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  EXPECT_EQ((*lm)->GetString("tokenizer.ggml.model").value(), "none");
  const std::vector<std::string> gen = {
      "generate",
      "--raw-ids",
      "151644 872 198 151652 151655 151653 198 1178 151645 198 151644 77091 198",
      "--image",
      kFx + "/image1.png",
      "--max-new-tokens",
      "8",
      "--ignore-eos",
      "--print-ids",
      "--model"};
  std::vector<std::string> a = gen, b = gen;
  a.push_back(src);
  b.push_back(out);
  CmdResult ra = RunCli(a), rb = RunCli(b);
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  EXPECT_EQ(Trim(rb.out), Trim(ra.out));
  EXPECT_EQ(std::count(rb.out.begin(), rb.out.end(), ' '), 7) << rb.out;
  const std::vector<std::vector<std::string>> need_text = {
      {"generate", "--model", out, "--prompt", "Hello", "--max-new-tokens", "2"},
      {"generate", "--model", out, "--raw-ids", "1 2", "--max-new-tokens", "2"},
      {"tokenize", "--model", out, "--text", "Hello"},
      {"parse", "--model", out, "--quiet", "-o", TestDir("cli_novocab_parse"), kFx + "/image0.png"}};
  for (const auto& args : need_text) {
    CmdResult r = RunCli(args);
    ExpectCleanFailure(r, args[0] + " " + args[3]);
    EXPECT_NE(r.err.find("has no vocabulary"), std::string::npos) << r.err;
  }
}

// quantize --format gguf writes the checkpoint's chat template as tokenizer.chat_template (so
// llama.cpp chats without --chat-template), and keeps a GGUF source's template.
TEST(CliTest, GgufExportWritesTheChatTemplate) {
  const std::string src = CheckpointLinks("template_src", true);
  const std::string tmpl =
      "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
      "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
  nlohmann::json j = {{"chat_template", tmpl}};
  ASSERT_TRUE(mineru::WriteStringToFile(src + "/chat_template.json", j.dump()).ok());
  const std::string out = TestDir("cli_template_gguf"), again = TestDir("cli_template_gguf2");
  for (const std::string& d : {out, again}) {
    for (const auto& e : std::filesystem::directory_iterator(d)) std::filesystem::remove(e.path());
  }
  CmdResult e = RunCli({"quantize", "--model", src, "--format", "gguf", "--quant", "q8", "-o", out});
  ASSERT_EQ(e.code, 0) << e.err;
  auto lm = mineru::GgufFile::Open(ExportedLm(out));
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  EXPECT_EQ((*lm)->GetString("tokenizer.chat_template", "").value(), tmpl);
  CmdResult e2 = RunCli({"quantize", "--model", out, "--format", "gguf", "--quant", "q8", "-o", again});
  ASSERT_EQ(e2.code, 0) << e2.err;
  auto lm2 = mineru::GgufFile::Open(ExportedLm(again));
  ASSERT_TRUE(lm2.ok()) << lm2.status().ToString();
  EXPECT_EQ((*lm2)->GetString("tokenizer.chat_template", "").value(), tmpl);
}

// Hostile or mismatched GGUF input: one error line, no crash.
TEST(CliTest, BadGgufInputsGiveOneLineErrors) {
  const std::string g = kFx + "/gguf/tinyvocab/";
  const std::string d = TestDir("cli_badgguf");
  ExpectCleanFailure(RunCli({"generate", "--model", g + "model-f32.gguf", "--raw-ids", "1 2", "--print-ids"}),
                     "LM without its mmproj");
  ExpectCleanFailure(RunCli({"generate", "--model", g + "model-f32.gguf", "--mmproj", g + "model-f16.gguf",
                             "--raw-ids", "1 2", "--print-ids"}),
                     "two LM files");
  std::string lm = mineru::ReadFileToString(g + "model-q8_0.gguf").value();
  EXPECT_TRUE(mineru::WriteStringToFile(d + "/cut.gguf", lm.substr(0, lm.size() / 2)).ok());
  ExpectCleanFailure(RunCli({"generate", "--model", d + "/cut.gguf", "--mmproj", g + "mmproj-q8_0.gguf",
                             "--raw-ids", "1 2", "--print-ids"}),
                     "truncated GGUF");
  ExpectCleanFailure(RunCli({"generate", "--model", g + "model-f32.gguf", "--mmproj", g + "mmproj-f32.gguf",
                             "--min-pixels", "0", "--raw-ids", "1 2", "--print-ids"}),
                     "min pixels 0");
  ExpectCleanFailure(RunCli({"quantize", "--model", g + "model-f32.gguf", "--mmproj", g + "mmproj-f32.gguf",
                             "--format", "safetensors", "-o", d + "/st"}),
                     "GGUF to safetensors");
}

TEST(CliTest, GenModelTinyPresetThenGenerate) {
  const std::string d = TestDir("cli_gen");
  CmdResult g = RunCli({"gen-model", "--preset", "tiny", "-o", d});
  ASSERT_EQ(g.code, 0) << g.err;
  CmdResult r = RunCli({"generate", "--model", d, "--image", kFx + "/image2.png", "--prompt", "Hi",
                        "--max-new-tokens", "3", "--ignore-eos", "--print-ids"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), ' '), 2);
}

}  // namespace
