// GGUF models: the reader against hostile bytes, the tokenizer from GGUF metadata against
// tokenizer.json, quantized blocks against our quantizer, in-place use (no conversion) and the
// quantized pairs against `--quant`. Fixtures: tests/fixtures/gguf (llama.cpp's converter and
// llama-quantize on the tinyvocab checkpoint; see its README).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hwy/targets.h>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../util/files.h"
#include "../util/sanitizers.h"
#include "base/gguf.h"
#include "base/mapped_file.h"
#include "engine/generate.h"
#include "engine/model_tokenizer.h"
#include "golden_util.h"
#include "kernels/quant.h"
#include "model/gguf_model.h"
#include "model/mrope.h"
#include "model/qwen2vl.h"
#include "tokenizer/tokenizer.h"

namespace mineru {
namespace {

using testing::FixturePath;
using testing::Golden;
using testing::ReadAll;

std::string Gguf(const std::string& name) { return FixturePath("gguf/tinyvocab/" + name); }

// A file holding bytes, removed when the object goes (a temporary: at the end of the full
// expression; a file opened from it keeps its mapping). Converts to its path.
class TempFile {
 public:
  explicit TempFile(const std::string& bytes) {
    static int n = 0;
    path_ = ::testing::TempDir() + "/gguf_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++) +
            ".gguf";
    EXPECT_TRUE(WriteStringToFile(path_, bytes).ok());
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  operator const std::string&() const { return path_; }

 private:
  std::string path_;
};

// --- reader ------------------------------------------------------------------------------------

TEST(GgufReaderTest, ReadsTheConvertersMetadataAndTensors) {
  auto f = GgufFile::Open(Gguf("mmproj-f16.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ((*f)->GetString("general.architecture").value(), "clip");
  EXPECT_EQ((*f)->GetString("clip.projector_type").value(), "qwen2vl_merger");
  EXPECT_EQ((*f)->GetInt("clip.vision.patch_size").value(), 14);
  const GgufTensor* pe = (*f)->FindTensor("v.patch_embd.weight");
  ASSERT_NE(pe, nullptr);
  EXPECT_EQ(pe->ne, (std::vector<int64_t>{14, 14, 3, 32}));
  EXPECT_EQ(GgmlTypeName(pe->type), "F16");
  EXPECT_EQ(pe->nbytes, size_t{14 * 14 * 3 * 32 * 2});
  EXPECT_FALSE((*f)->GetInt("clip.projector_type").ok());  // a string, not an integer
  EXPECT_FALSE((*f)->GetInt("no.such.key").ok());
}

// Every prefix of a valid file is refused with one line, never read past its end (ASan in CI).
TEST(GgufReaderTest, EveryTruncationIsOneLineError) {
  const std::string bytes = ReadAll(Gguf("mmproj-f16.gguf"));
  for (size_t n = 0; n < bytes.size(); n += (n < 4096 ? 1 : 997)) {
    auto f = GgufFile::Open(TempFile(bytes.substr(0, n)));
    ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes";
    EXPECT_EQ(f.status().message().find('\n'), std::string::npos);
  }
}

// Header fields a hostile file could lie about, patched into a valid file.
TEST(GgufReaderTest, LiesInTheHeaderAreRefused) {
  const std::string good = ReadAll(Gguf("mmproj-f16.gguf"));
  auto patched = [&](size_t off, uint64_t v, size_t width) {
    std::string b = good;
    std::memcpy(&b[off], &v, width);
    return GgufFile::Open(TempFile(b));
  };
  EXPECT_FALSE(patched(0, 0x12345678, 4).ok());          // magic
  EXPECT_FALSE(patched(4, 1, 4).ok());                   // version 1 (32-bit counts)
  EXPECT_FALSE(patched(4, 99, 4).ok());                  // unknown version
  EXPECT_FALSE(patched(8, uint64_t{1} << 62, 8).ok());   // tensor count
  EXPECT_FALSE(patched(16, uint64_t{1} << 62, 8).ok());  // key count
  EXPECT_FALSE(patched(24, uint64_t{1} << 62, 8).ok());  // first key's length
  // The first tensor info follows the metadata; find it by its name and corrupt its fields.
  const std::string name = "v.blk.0.attn_out.weight";
  const size_t at = good.find(name);
  ASSERT_NE(at, std::string::npos);
  const size_t dims = at + name.size();
  EXPECT_FALSE(patched(dims, 9, 4).ok());                           // 9 dimensions
  EXPECT_FALSE(patched(dims + 4, 0, 8).ok());                       // a zero dimension
  EXPECT_FALSE(patched(dims + 4, uint64_t{1} << 63, 8).ok());       // overflowing dimension
  EXPECT_FALSE(patched(dims + 4 + 16, 77, 4).ok());                 // unknown ggml type
  EXPECT_FALSE(patched(dims + 4 + 20, 3, 8).ok());                  // misaligned offset
  EXPECT_FALSE(patched(dims + 4 + 20, uint64_t{1} << 40, 8).ok());  // offset past the end
}

TEST(GgufReaderTest, OverlappingAndDuplicateTensorsAreRefused) {
  const std::string good = ReadAll(Gguf("mmproj-f32.gguf"));
  const std::string a = "v.blk.0.attn_q.weight", b = "v.blk.0.attn_k.weight";
  std::string dup = good;
  const size_t at = dup.find(b);
  ASSERT_NE(at, std::string::npos);
  dup.replace(at, b.size(), a);  // same length: a duplicate name
  EXPECT_FALSE(GgufFile::Open(TempFile(dup)).ok());
  // attn_k's offset set to attn_q's: the two overlap.
  std::string over = good;
  const size_t qa = over.find(a) + a.size(), ka = over.find(b) + b.size();
  uint64_t q_off;
  std::memcpy(&q_off, &over[qa + 4 + 16 + 4], 8);
  std::memcpy(&over[ka + 4 + 16 + 4], &q_off, 8);
  auto f = GgufFile::Open(TempFile(over));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("overlap"), std::string::npos) << f.status().message();
}

TEST(GgufModelTest, WrongFilesGiveClearErrors) {
  // The mmproj named as the model, the LM with itself as mmproj, a non-GGUF file.
  auto a = Qwen2VLModel::Load(Gguf("mmproj-f32.gguf"));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("--mmproj"), std::string::npos) << a.status().message();
  ModelLoadOptions o;
  o.mmproj = Gguf("model-f32.gguf");
  auto b = Qwen2VLModel::Load(Gguf("model-f32.gguf"), o);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("not an mmproj"), std::string::npos) << b.status().message();
  auto c = Qwen2VLModel::Load(FixturePath("image0.png"));
  EXPECT_FALSE(c.ok());
  // The fixture folder holds several LMs: the folder alone is ambiguous, and says how to choose.
  auto d = Qwen2VLModel::Load(FixturePath("gguf/tinyvocab"));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("name one with --model"), std::string::npos) << d.status().message();
}

// A folder as MinerU 4 downloads it (one LM, one mmproj) loads without --mmproj.
TEST(GgufModelTest, FolderWithOnePairLoads) {
  const std::string dir = ::testing::TempDir() + "/gguf_pair_" + std::to_string(::getpid());
  ASSERT_EQ(
      ::system(("mkdir -p " + dir + " && cp " + Gguf("model-q8_0.gguf") + " " + dir +
                "/Pro-Q8_0.gguf && cp " + Gguf("mmproj-q8_0.gguf") + " " + dir + "/mmproj-Pro-Q8_0.gguf")
                   .c_str()),
      0);
  auto m = Qwen2VLModel::Load(dir);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->files().gguf());
  EXPECT_EQ((*m)->image_config().min_pixels, 3136);  // MinerU's budget (no preprocessor_config.json)
  EXPECT_EQ((*m)->image_config().max_pixels, 1605632);
  EXPECT_TRUE((*m)->weights().text.layers[0].q.quantized());
  auto tok = LoadModelTokenizer((*m)->files());
  ASSERT_TRUE(tok.ok() && *tok) << tok.status().ToString();
  // A preprocessor_config.json beside the files wins over the defaults.
  ASSERT_TRUE(
      WriteStringToFile(dir + "/preprocessor_config.json", R"({"min_pixels": 3136, "max_pixels": 50176})")
          .ok());
  auto m2 = Qwen2VLModel::Load(dir);
  ASSERT_TRUE(m2.ok()) << m2.status().ToString();
  EXPECT_EQ((*m2)->image_config().max_pixels, 50176);
  std::system(("rm -rf " + dir).c_str());
}

// --- config and tokenizer ------------------------------------------------------------------------

TEST(GgufModelTest, ConfigEqualsTheCheckpointsConfig) {
  auto st = Qwen2VLModel::Load(FixturePath("tinyvocab"));
  ModelLoadOptions o;
  o.mmproj = Gguf("mmproj-f32.gguf");
  auto gg = Qwen2VLModel::Load(Gguf("model-f32.gguf"), o);
  ASSERT_TRUE(st.ok() && gg.ok()) << gg.status().ToString();
  const ModelConfig &a = (*st)->config(), &b = (*gg)->config();
  EXPECT_EQ(a.text.vocab_size, b.text.vocab_size);
  EXPECT_EQ(a.text.hidden_size, b.text.hidden_size);
  EXPECT_EQ(a.text.intermediate_size, b.text.intermediate_size);
  EXPECT_EQ(a.text.num_layers, b.text.num_layers);
  EXPECT_EQ(a.text.num_heads, b.text.num_heads);
  EXPECT_EQ(a.text.num_kv_heads, b.text.num_kv_heads);
  EXPECT_EQ(a.text.head_dim, b.text.head_dim);
  EXPECT_EQ(a.text.mrope_section, b.text.mrope_section);
  EXPECT_EQ(a.text.rope_theta, b.text.rope_theta);
  EXPECT_FLOAT_EQ(a.text.rms_norm_eps, b.text.rms_norm_eps);
  EXPECT_EQ(a.text.tie_word_embeddings, b.text.tie_word_embeddings);
  EXPECT_EQ(a.vision.depth, b.vision.depth);
  EXPECT_EQ(a.vision.embed_dim, b.vision.embed_dim);
  EXPECT_EQ(a.vision.mlp_dim, b.vision.mlp_dim);
  EXPECT_EQ(a.vision.num_heads, b.vision.num_heads);
  EXPECT_EQ(a.image_token_id, b.image_token_id);
  EXPECT_EQ(a.vision_start_token_id, b.vision_start_token_id);
  EXPECT_EQ(a.vision_end_token_id, b.vision_end_token_id);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ((*st)->image_config().image_mean[i], (*gg)->image_config().image_mean[i]);
    EXPECT_FLOAT_EQ((*st)->image_config().image_std[i], (*gg)->image_config().image_std[i]);
  }
}

TEST(GgufTokenizerTest, EncodesAndDecodesAsTokenizerJson) {
  auto hf = Tokenizer::LoadFromFile(FixturePath("tinyvocab/tokenizer.json"));
  auto gg = Tokenizer::LoadFromGguf(Gguf("model-q8_0.gguf"));
  ASSERT_TRUE(hf.ok() && gg.ok()) << gg.status().ToString();
  auto cases = nlohmann::json::parse(ReadAll(FixturePath("tokenizer_golden.json")));
  ASSERT_GE(cases.size(), 40u);
  for (const auto& c : cases) {
    const std::string text = c["text"];
    auto ids = (*gg)->Encode(text);
    ASSERT_TRUE(ids.ok()) << text;
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>()) << text;  // incl. the NFC case
    EXPECT_EQ((*gg)->Decode(*ids).value(), c["decoded"].get<std::string>()) << text;
    EXPECT_EQ((*gg)->Decode(*ids, true).value(), c["decoded_skip"].get<std::string>()) << text;
  }
  // Every added token: same id and text; special as in tokenizer.json except the six tokens the
  // converter marks control because they look special (gguf_vocab.h).
  auto want = (*hf)->AddedTokens();
  EXPECT_EQ((*gg)->AddedTokens(), want);
  int special_diffs = 0;
  for (const auto& [id, text] : want) {
    if ((*hf)->IsSpecial(id) != (*gg)->IsSpecial(id)) {
      ++special_diffs;
      EXPECT_TRUE(text.rfind("<|fim_", 0) == 0 || text == "<|repo_name|>" || text == "<|file_sep|>") << text;
    }
  }
  EXPECT_LE(special_diffs, 6);
}

// --- quantized files ------------------------------------------------------------------------------

// llama-quantize's blocks and ours share one layout (so GGUF tensors run in place) but not one
// rounding rule. Q8_0: the same f16 scale amax/127; ggml rounds x * (1/d) with d before the f16
// rounding, half away from zero, we round x / d_f16 to nearest even: values differ by at most 1.
// Q4_0: ggml takes d = max / -8; we try a few scales and refit by least squares: our blocks
// reconstruct every tensor with no more squared error than llama-quantize's.
double SquaredError(const WeightView& q, const float* ref) {
  std::vector<float> row(q.cols);
  double e = 0;
  for (int64_t r = 0; r < q.rows; ++r) {
    kernels::DequantizeRow(q, r, row.data());
    for (int64_t c = 0; c < q.cols; ++c) e += std::pow(double(row[c]) - ref[r * q.cols + c], 2);
  }
  return e;
}

void CompareQ8Blocks(const GgufTensor& t, const kernels::QuantizedMatrix& ours) {
  int64_t differ = 0;
  for (size_t b = 0; b < t.nbytes; b += 34) {
    ASSERT_EQ(std::memcmp(ours.data() + b, t.data + b, 2), 0) << t.name << ": scale of block " << b / 34;
    for (int i = 2; i < 34; ++i) {
      const int d = int(int8_t(ours.data()[b + i])) - int(int8_t(t.data[b + i]));
      ASSERT_LE(std::abs(d), 1) << t.name;
      differ += d != 0;
    }
  }
  EXPECT_LE(differ, int64_t(t.nbytes / 34 * 32 / 50)) << t.name << ": more than 2% of the values differ";
}

TEST(GgufQuantTest, LlamaQuantizeBlocksAgainstOurs) {
  auto f32 = GgufFile::Open(Gguf("model-f32.gguf"));
  ASSERT_TRUE(f32.ok());
  for (const char* file : {"model-q8_0.gguf", "model-q4_0.gguf"}) {
    auto q = GgufFile::Open(Gguf(file));
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    int compared = 0;
    for (const GgufTensor& t : (*q)->tensors()) {
      const QuantType qt = t.type == uint32_t(GgmlType::kQ8_0)   ? QuantType::kQ8_0
                           : t.type == uint32_t(GgmlType::kQ4_0) ? QuantType::kQ4_0
                                                                 : QuantType::kNone;
      if (qt == QuantType::kNone) continue;
      const GgufTensor* src = (*f32)->FindTensor(t.name);
      ASSERT_NE(src, nullptr) << t.name;
      WeightView dense{DType::kF32, src->data, src->rows(), src->cols()};
      kernels::QuantizedMatrix ours = kernels::Quantize(dense, qt);
      ASSERT_EQ(ours.size_bytes(), t.nbytes) << t.name;
      if (qt == QuantType::kQ8_0) {
        CompareQ8Blocks(t, ours);
      } else {
        const auto* ref = reinterpret_cast<const float*>(src->data);
        const WeightView theirs = kernels::QuantizedView(qt, t.data, t.rows(), t.cols());
        EXPECT_LE(SquaredError(ours.view(), ref), SquaredError(theirs, ref)) << t.name;
      }
      ++compared;
    }
    EXPECT_GE(compared, 14) << file;
  }
}

// Runs the golden case's prompt; returns the last position's logits and 16 greedy ids.
struct CaseRun {
  std::vector<float> logits;
  std::vector<int32_t> ids;
};
std::vector<float> LastLogits(const Qwen2VLModel& m, const std::vector<int32_t>& ids,
                              const std::vector<float>& image_embeds, const MropePositions& pos,
                              const kernels::KernelContext& ctx) {
  const int64_t H = m.config().text.hidden_size, V = m.config().text.vocab_size, n = ids.size();
  auto embeds = m.BuildInputEmbeddings(ids, image_embeds);
  EXPECT_TRUE(embeds.ok());
  if (!embeds.ok()) return {};
  KvCache cache;
  std::vector<float> hidden(n * H), logits(V);
  m.decoder().Forward(embeds->data(), n, pos.t.data(), pos.h.data(), pos.w.data(), &cache, hidden.data(), ctx,
                      nullptr);
  m.decoder().Logits(hidden.data() + (n - 1) * H, 1, logits.data(), ctx);
  return logits;
}

CaseRun RunGoldenCase(const Qwen2VLModel& m, const std::string& golden_case) {
  Golden g("tinyvocab", golden_case);
  std::vector<int32_t> ids;
  for (int64_t id : g.I64("input_ids")) ids.push_back(static_cast<int32_t>(id));
  std::vector<ImageInput> images;
  if (g.Has("image_grid_thw")) {
    std::vector<int64_t> thw = g.I64("image_grid_thw");
    std::vector<float> px = g.F32("pixel_values");
    size_t off = 0;
    for (size_t i = 0; i + 2 < thw.size(); i += 3) {
      ImageInput in;
      in.grid = {thw[i], thw[i + 1], thw[i + 2]};
      const size_t n = in.grid.num_patches() * m.config().vision.patch_dim();
      in.pixel_values.assign(px.begin() + off, px.begin() + off + n);
      off += n;
      images.push_back(std::move(in));
    }
  }
  ThreadPool pool(2);
  const kernels::KernelWorkspace ctx(m.kernel_config(), &pool);
  CaseRun r;
  // Last prompt position's logits, computed the way the golden test does.
  std::vector<float> image_embeds;
  if (!images.empty()) {
    std::vector<float> px;
    std::vector<ImageGrid> grids;
    for (const auto& im : images) {
      px.insert(px.end(), im.pixel_values.begin(), im.pixel_values.end());
      grids.push_back(im.grid);
    }
    auto e = m.vision().Encode(px.data(), static_cast<int64_t>(px.size()) / m.config().vision.patch_dim(),
                               grids, ctx, nullptr);
    EXPECT_TRUE(e.ok());
    if (e.ok()) image_embeds = std::move(e).value();
    auto pos =
        ComputeMropePositions(ids, grids, m.config().vision.spatial_merge_size, m.config().image_token_id);
    r.logits = LastLogits(m, ids, image_embeds, *pos, ctx);
  } else {
    auto pos =
        ComputeMropePositions(ids, {}, m.config().vision.spatial_merge_size, m.config().image_token_id);
    r.logits = LastLogits(m, ids, image_embeds, *pos, ctx);
  }
  GenerateOptions opt;
  opt.max_new_tokens = 16;
  opt.ignore_eos = true;
  auto out = Generate(m, ids, images, opt, &pool);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (out.ok()) r.ids = out->ids;
  return r;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return a.size() == b.size() ? d : INFINITY;
}

// Logits of the pair against those of the checkpoint as stored (bf16), next to the same distance
// for the checkpoint loaded with --quant `quant`, over the three golden cases.
struct Distances {
  double gguf = 0, ours = 0, between = 0;
};
Distances QuantDistances(const std::string& lm, const std::string& mmproj, const std::string& quant) {
  auto ref = Qwen2VLModel::Load(FixturePath("tinyvocab"));
  auto st = Qwen2VLModel::Load(FixturePath("tinyvocab"), quant);
  ModelLoadOptions o;
  o.mmproj = Gguf(mmproj);
  auto gg = Qwen2VLModel::Load(Gguf(lm), o);
  EXPECT_TRUE(ref.ok() && st.ok() && gg.ok()) << gg.status().ToString();
  Distances d;
  if (!ref.ok() || !st.ok() || !gg.ok()) return d;
  for (const char* c : {"one_image", "two_images", "text_only"}) {
    CaseRun r = RunGoldenCase(**ref, c), a = RunGoldenCase(**st, c), b = RunGoldenCase(**gg, c);
    d.ours = std::max(d.ours, MaxAbsDiff(a.logits, r.logits));
    d.gguf = std::max(d.gguf, MaxAbsDiff(b.logits, r.logits));
    d.between = std::max(d.between, MaxAbsDiff(a.logits, b.logits));
  }
  std::printf("%s: max |logit - bf16|: gguf %.4f, --quant %s %.4f; between %.4f\n", lm.c_str(), d.gguf,
              quant.c_str(), d.ours, d.between);
  return d;
}

// Q8_0 pair vs --quant q8. The formats differ in two ways: llama.cpp also stores the token
// embeddings as Q8_0 (we keep them as stored) and rounds Q8_0 values slightly differently (above).
// Bound: the pair is as close to the unquantized model as --quant q8 is (within 1.5x), so what
// separates the two is of the size of q8 rounding itself (this tiny random model's logits reach
// ~13 and its greedy ids sit on near-ties, so ids are not compared).
TEST(GgufQuantTest, Q8PairIsAsAccurateAsQuantQ8) {
  Distances d = QuantDistances("model-q8_0.gguf", "mmproj-q8_0.gguf", "q8");
  EXPECT_GT(d.ours, 0.0);
  EXPECT_LE(d.gguf, 1.5 * d.ours);
  EXPECT_LE(d.between, 2.0 * d.ours);
}

// Q4_0 pair vs --quant q4: llama-quantize makes every LM matrix Q4_0 with its d = max / -8 rule
// (we keep attention and the head in q8 and search the 4-bit scale) and token_embd Q8_0. Bound:
// the pair's error is within 1.5x of --quant q4's.
TEST(GgufQuantTest, Q4PairStaysNearQuantQ4) {
  Distances d = QuantDistances("model-q4_0.gguf", "mmproj-f16.gguf", "q4");
  EXPECT_GT(d.ours, 0.0);
  EXPECT_LE(d.gguf, 1.5 * d.ours);
}

// --- in place -------------------------------------------------------------------------------------

size_t ViewBytes(const WeightView& v) {
  if (v.quantized()) return v.rows * kernels::QuantizedRowBytes(v.quant, v.cols);
  return v.rows * v.cols * DTypeSize(v.dtype);
}

// A Q8_0 pair is mapped, not converted: every quantized matrix of the language model and of the
// vision tower reads the file in place (the view's bytes lie inside the file's mapping). The only
// copies allowed are the two the layout forces (model/gguf_weights.cc): the patch kernel rebuilt
// as f32 and a qkv that is not stored as three adjacent tensors. Structural, so the result does not
// depend on what else the process allocates.
TEST(GgufModelTest, Q8LoadsByMapping) {
  ModelLoadOptions o;
  o.mmproj = Gguf("mmproj-q8_0.gguf");
  auto gg = Qwen2VLModel::Load(Gguf("model-q8_0.gguf"), o);
  ASSERT_TRUE(gg.ok()) << gg.status().ToString();
  const ModelWeights& w = (*gg)->weights();
  int checked = 0;
  auto in_place = [&](const WeightView& v, const std::string& what) {
    EXPECT_EQ(v.quant, QuantType::kQ8_0) << what;
    EXPECT_TRUE(w.InMappedFile(v.data, ViewBytes(v))) << what << " was copied at load";
    ++checked;
  };
  for (size_t i = 0; i < w.text.layers.size(); ++i) {
    const DecoderLayerWeights& l = w.text.layers[i];
    const std::string n = "layer " + std::to_string(i) + " ";
    in_place(l.q, n + "q"), in_place(l.k, n + "k"), in_place(l.v, n + "v"), in_place(l.o, n + "o");
    in_place(l.gate, n + "gate"), in_place(l.up, n + "up"), in_place(l.down, n + "down");
  }
  in_place(w.text.embed_tokens, "token embeddings");
  EXPECT_TRUE(w.InMappedFile(w.text.lm_head.data, ViewBytes(w.text.lm_head))) << "lm head was copied";
  for (size_t i = 0; i < w.vision.blocks.size(); ++i) {
    const VisionBlockWeights& b = w.vision.blocks[i];
    const std::string n = "vision block " + std::to_string(i) + " ";
    in_place(b.proj, n + "proj"), in_place(b.fc1, n + "fc1"), in_place(b.fc2, n + "fc2");
    EXPECT_EQ(b.qkv.quant, QuantType::kQ8_0) << n << "qkv";
  }
  in_place(w.vision.merger_fc1, "merger fc1");
  in_place(w.vision.merger_fc2, "merger fc2");
  EXPECT_GT(checked, 10);
  // The checks above can fail: a view into a copy is not inside any mapping.
  std::vector<uint8_t> copy(ViewBytes(w.text.layers[0].q));
  EXPECT_FALSE(w.InMappedFile(copy.data(), copy.size()));
}

// --- vocabulary-less files and the chat template -------------------------------------------------

// A fresh folder holding the tinyvocab checkpoint (links to its files), with tokenizer.json only
// when with_tokenizer.
std::string CheckpointFolder(const std::string& name, bool with_tokenizer) {
  const std::string dir = ::testing::TempDir() + "/gguf_" + name + "_" + std::to_string(::getpid());
  std::string cmd = "rm -rf " + dir + " && mkdir -p " + dir;
  for (const char* f : {"config.json", "model.safetensors", "preprocessor_config.json", "tokenizer.json"}) {
    if (std::string(f) == "tokenizer.json" && !with_tokenizer) continue;
    cmd += " && ln -s " + FixturePath(std::string("tinyvocab/") + f) + " " + dir + "/" + f;
  }
  EXPECT_EQ(::system(cmd.c_str()), 0);
  return dir;
}

// Exports the model as a GGUF pair into dir/out (lm.gguf, mmproj.gguf); returns the LM's path.
std::string ExportPair(const Qwen2VLModel& m, const std::string& dir) {
  EXPECT_EQ(::system(("mkdir -p " + dir + "/out").c_str()), 0);
  auto vocab = ModelGgufVocab(m);
  EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
  if (!vocab.ok()) return "";
  Status s = WriteGgufPair(m, *vocab, "t", dir + "/out/lm.gguf", dir + "/out/mmproj.gguf");
  EXPECT_TRUE(s.ok()) << s.ToString();
  return dir + "/out/lm.gguf";
}

// A checkpoint without a tokenizer exports as llama.cpp's vocabulary-less LM (tokenizer.ggml.model
// "none", no arrays), which loads with no tokenizer and the checkpoint's config; a command that
// needs text is told the model has no vocabulary. The same file claiming gpt2 is corrupt.
TEST(GgufModelTest, VocabularyLessLmLoadsWithoutTokenizer) {
  const std::string dir = CheckpointFolder("novocab", false);
  auto st = Qwen2VLModel::Load(dir);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  const std::string lm = ExportPair(**st, dir);
  auto f = GgufFile::Open(lm);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->GetString("tokenizer.ggml.model").value(), "none");
  EXPECT_EQ((*f)->Find("tokenizer.ggml.tokens"), nullptr);
  EXPECT_TRUE(GgufHasNoVocabulary(**f));
  ModelLoadOptions o;
  o.mmproj = dir + "/out/mmproj.gguf";
  auto gg = Qwen2VLModel::Load(lm, o);
  ASSERT_TRUE(gg.ok()) << gg.status().ToString();
  const ModelConfig &a = (*st)->config(), &b = (*gg)->config();
  EXPECT_EQ(a.image_token_id, b.image_token_id);
  EXPECT_EQ(a.vision_start_token_id, b.vision_start_token_id);
  EXPECT_EQ(a.vision_end_token_id, b.vision_end_token_id);
  EXPECT_EQ(a.eos_token_ids, b.eos_token_ids);
  auto none = LoadModelTokenizer((*gg)->files());
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, nullptr);
  auto refused = LoadModelTokenizer(lm, "");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("has no vocabulary"), std::string::npos)
      << refused.status().message();
  // "none" -> "gpt2" (same length): a file naming a tokenizer without its tokens is refused.
  std::string bytes = ReadAll(lm);
  const size_t key = bytes.find("tokenizer.ggml.model");
  ASSERT_NE(key, std::string::npos);
  const size_t val = bytes.find("none", key);
  ASSERT_NE(val, std::string::npos);
  bytes.replace(val, 4, "gpt2");
  TempFile corrupt(bytes);
  auto c = Qwen2VLModel::Load(corrupt, o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no tokenizer.ggml.tokens"), std::string::npos) << c.status().message();
  ModelFiles cf{dir, corrupt, o.mmproj};
  auto ct = LoadModelTokenizer(cf);
  ASSERT_FALSE(ct.ok());
  EXPECT_EQ(ct.status().code(), StatusCode::kInvalidArgument) << ct.status().ToString();
  std::system(("rm -rf " + dir).c_str());
}

// The chat template is found where llama.cpp's converter looks (tokenizer_config.json, then
// chat_template.jinja, then chat_template.json), written into the exported LM and kept when a GGUF
// is exported again.
TEST(GgufModelTest, ExportWritesTheCheckpointsChatTemplate) {
  const std::string dir = CheckpointFolder("template", true);
  const ModelFiles files{dir, "", ""};
  auto put = [&](const std::string& name, const nlohmann::json& j) {
    ASSERT_TRUE(WriteStringToFile(dir + "/" + name, j.dump()).ok());
  };
  EXPECT_EQ(ModelChatTemplate(files).value(), "");
  const std::string from_json = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% endfor %}";
  put("chat_template.json", {{"chat_template", from_json}});
  EXPECT_EQ(ModelChatTemplate(files).value(), from_json);
  ASSERT_TRUE(WriteStringToFile(dir + "/chat_template.jinja", "jinja \"t\"\n").ok());
  EXPECT_EQ(ModelChatTemplate(files).value(), "jinja \"t\"\n");
  put("tokenizer_config.json", {{"model_max_length", 32768}});
  EXPECT_EQ(ModelChatTemplate(files).value(), "jinja \"t\"\n");
  put("tokenizer_config.json",
      {{"chat_template", nlohmann::json::array({{{"name", "tool_use"}, {"template", "x"}},
                                                {{"name", "default"}, {"template", "d"}}})}});
  EXPECT_EQ(ModelChatTemplate(files).value(), "d");
  put("tokenizer_config.json", {{"chat_template", 7}});
  EXPECT_FALSE(ModelChatTemplate(files).ok());
  const std::string tmpl = "<|im_start|>{{ messages[0]['content'] }}<|im_end|>\n";
  put("tokenizer_config.json", {{"chat_template", tmpl}});
  EXPECT_EQ(ModelChatTemplate(files).value(), tmpl);

  auto st = Qwen2VLModel::Load(dir);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  const std::string lm = ExportPair(**st, dir);
  auto f = GgufFile::Open(lm);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->GetString("tokenizer.chat_template").value(), tmpl);
  // From the GGUF pair: its template is kept.
  ModelLoadOptions o;
  o.mmproj = dir + "/out/mmproj.gguf";
  auto gg = Qwen2VLModel::Load(lm, o);
  ASSERT_TRUE(gg.ok()) << gg.status().ToString();
  auto again = ModelGgufVocab(**gg);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->chat_template, tmpl);
  // llama.cpp's converter wrote no template for the fixture folder (it has no tokenizer_config.json).
  EXPECT_EQ(ModelChatTemplate(ModelFiles{"", Gguf("model-f32.gguf"), ""}).value(), "");
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace mineru
