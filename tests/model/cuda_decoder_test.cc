// The CUDA decoder (model/cuda/decoder_cuda.h) against the Hugging Face goldens and against the
// CPU decoder, its twin: in fp32 the goldens' final hidden states and logits within the CPU golden
// tests' tolerance and exactly their greedy ids (prefill, then one-token decode steps through the
// paged decode attention over a shuffled block table); in bf16 the logits within cosine 0.999 of
// the CPU's; a mixed batch (a chunked prefill whose second chunk reads its first from the cache,
// beside a sequence decoding) equal to the CPU's ForwardBatch over the same blocks.
//
// Tests that need a device skip, saying why, where there is none; scripts/gpu_check.sh runs them
// on a GPU and fails if any skips there. The argument tests run everywhere.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "../util/cuda_skip.h"
#include "engine/block_pool.h"
#include "golden_util.h"
#include "kernels/cuda/device.h"
#include "model/config.h"
#include "model/cuda/cuda_backend.h"
#include "model/cuda/decoder_cuda.h"
#include "model/gen_model.h"
#include "model/mrope.h"
#include "model/qwen2vl.h"

namespace mineru {
namespace {

using testing::Cosines;
using testing::ExpectClose;
using testing::FixturePath;
using testing::Golden;
using testing::RowCosines;

constexpr int kBlockSize = 16;
constexpr int kBlocks = 128;

// One golden prompt ready for the decoder: embeddings (images encoded by the CPU encoder, exact)
// and M-RoPE positions.
struct Prompt {
  std::vector<float> embeds;
  MropePositions pos;
  int64_t n = 0;
};

class CudaDecoderTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (const std::string why = testing::CudaSkipReason(); !why.empty()) GTEST_SKIP() << why;
  }

  void Load(const std::string& model, CudaPrecision p) {
    auto m = Qwen2VLModel::Load(FixturePath(model), ModelLoadOptions());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    model_name_ = model;
    ASSERT_NO_FATAL_FAILURE(MakeDecoder(p, &gpu_, &kv_));
  }
  // A decoder of the loaded model with its own cache of kBlocks blocks (Load's, and the reference
  // the graph and split tests check their steps against).
  void MakeDecoder(CudaPrecision p, std::unique_ptr<CudaDecoder>* dec, std::unique_ptr<CudaKvCache>* kv) {
    const TextConfig& t = model_->config().text;
    auto d = CudaDecoder::Create(t, model_->weights().text, model_->kernel_config(), p);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    *dec = std::move(d).value();
    auto k =
        CudaKvCache::Allocate(kBlocks, kBlockSize, t.num_layers, int64_t{t.num_kv_heads} * t.head_dim, p);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    *kv = std::make_unique<CudaKvCache>(std::move(k).value());
  }

  Prompt MakePrompt(const Golden& golden) {
    const ModelConfig& cfg = model_->config();
    std::vector<int32_t> ids;
    for (int64_t id : golden.I64("input_ids")) ids.push_back(static_cast<int32_t>(id));
    std::vector<ImageGrid> grids;
    std::vector<float> image_embeds;
    if (golden.Has("image_grid_thw")) {
      const std::vector<int64_t> thw = golden.I64("image_grid_thw");
      for (size_t i = 0; i + 2 < thw.size(); i += 3) grids.push_back({thw[i], thw[i + 1], thw[i + 2]});
      const std::vector<float> pixels = golden.F32("pixel_values");
      image_embeds = model_->vision()
                         .Encode(pixels.data(), static_cast<int64_t>(pixels.size()) / cfg.vision.patch_dim(),
                                 grids, ctx_)
                         .value();
    }
    Prompt p;
    p.pos = ComputeMropePositions(ids, grids, cfg.vision.spatial_merge_size, cfg.image_token_id).value();
    p.embeds = model_->BuildInputEmbeddings(ids, image_embeds).value();
    p.n = static_cast<int64_t>(ids.size());
    return p;
  }

  // Rows [from, from + n) of p as a segment after `past` cached tokens.
  static BatchSegment Segment(const Prompt& p, int64_t from, int64_t n, int64_t past, const int32_t* table) {
    BatchSegment s;
    s.n = n;
    s.past = past;
    s.pos_t = p.pos.t.data() + from;
    s.pos_h = p.pos.h.data() + from;
    s.pos_w = p.pos.w.data() + from;
    s.block_table = table;
    return s;
  }

  std::vector<float> GpuLogits(const std::vector<int32_t>& rows) {
    std::vector<float> out(rows.size() * static_cast<size_t>(model_->config().text.vocab_size));
    const Status st = gpu_->Logits(rows, out.data());
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  }

  std::unique_ptr<Qwen2VLModel> model_;
  std::string model_name_;
  std::unique_ptr<CudaDecoder> gpu_;
  std::unique_ptr<CudaKvCache> kv_;
  ThreadPool pool_{2};
  kernels::KernelWorkspace ctx_{kernels::KernelConfig(), &pool_};
};

// Blocks in reverse order: a block table that is not the identity, ending at the pool's last block.
std::vector<int32_t> ReversedTable() {
  std::vector<int32_t> t(kBlocks);
  std::iota(t.rbegin(), t.rend(), 0);
  return t;
}

int32_t ArgMax(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

struct GoldenCase {
  const char* model;
  const char* name;
};
const GoldenCase kGoldenCases[] = {{"tiny", "one_image"},       {"tiny", "two_images"},
                                   {"tiny", "text_only"},       {"tinyvocab", "one_image"},
                                   {"tinyvocab", "two_images"}, {"tinyvocab", "text_only"}};

// fp32: final hidden states and last-row logits as the goldens, then 16 greedy tokens (decode
// steps) exactly the goldens' generated ids.
TEST_F(CudaDecoderTest, Fp32MatchesTheGoldensAndTheirGreedyIds) {
  for (const GoldenCase& c : kGoldenCases) {
    SCOPED_TRACE(std::string(c.model) + "/" + c.name);
    ASSERT_NO_FATAL_FAILURE(Load(c.model, CudaPrecision::kF32));
    const Golden golden(c.model, c.name);
    const Prompt p = MakePrompt(golden);
    const std::vector<int32_t> table = ReversedTable();
    ASSERT_LE(p.n + 16, int64_t{kBlocks} * kBlockSize);
    ASSERT_TRUE(gpu_->ForwardBatch(p.embeds.data(), {Segment(p, 0, p.n, 0, table.data())}, kv_.get()).ok());
    auto hidden = gpu_->Hidden();
    ASSERT_TRUE(hidden.ok()) << hidden.status().ToString();
    ExpectClose(*hidden, golden.F32("act.lm.final_norm"), 1e-4f, 1e-4f, "final norm");
    const int64_t V = model_->config().text.vocab_size, Hd = model_->config().text.hidden_size;
    std::vector<float> logits = GpuLogits({static_cast<int32_t>(p.n - 1)});
    if (golden.Has("logits")) {
      const std::vector<float> all = golden.F32("logits");
      ExpectClose(logits, std::vector<float>(all.end() - V, all.end()), 1e-4f, 1e-4f, "last logits");
    } else {
      EXPECT_EQ(ArgMax(logits.data(), V), golden.I64("logits_argmax").back());
    }
    // Greedy decode: each token embedded on the host, one row through the paged decode path.
    std::vector<int64_t> got{ArgMax(logits.data(), V)};
    std::vector<float> e(static_cast<size_t>(Hd));
    for (int64_t i = 1; i < 16; ++i) {
      const int32_t tok = static_cast<int32_t>(got.back());
      model_->decoder().Embed(&tok, 1, e.data(), model_->kernel_config());
      const int64_t at = p.pos.next_position + i - 1;
      BatchSegment s;
      s.n = 1;
      s.past = p.n + i - 1;
      s.pos_t = s.pos_h = s.pos_w = &at;
      s.block_table = table.data();
      ASSERT_TRUE(gpu_->ForwardBatch(e.data(), {s}, kv_.get()).ok());
      logits = GpuLogits({0});
      got.push_back(ArgMax(logits.data(), V));
    }
    EXPECT_EQ(got, golden.I64("generated_ids"));
  }
}

// bf16: every prompt row's logits within cosine 0.999 of the CPU decoder's fp32 logits.
TEST_F(CudaDecoderTest, Bf16LogitsStayWithinCosineOfTheCpu) {
  for (const GoldenCase& c : kGoldenCases) {
    SCOPED_TRACE(std::string(c.model) + "/" + c.name);
    ASSERT_NO_FATAL_FAILURE(Load(c.model, CudaPrecision::kBf16));
    const Golden golden(c.model, c.name);
    const Prompt p = MakePrompt(golden);
    const std::vector<int32_t> table = ReversedTable();
    ASSERT_TRUE(gpu_->ForwardBatch(p.embeds.data(), {Segment(p, 0, p.n, 0, table.data())}, kv_.get()).ok());
    std::vector<int32_t> rows(static_cast<size_t>(p.n));
    std::iota(rows.begin(), rows.end(), 0);
    const std::vector<float> got = GpuLogits(rows);
    const int64_t H = model_->config().text.hidden_size, V = model_->config().text.vocab_size;
    KvCache cache;
    std::vector<float> hidden(static_cast<size_t>(p.n * H)), want(static_cast<size_t>(p.n * V));
    model_->decoder().Forward(p.embeds.data(), p.n, p.pos.t.data(), p.pos.h.data(), p.pos.w.data(), &cache,
                              hidden.data(), ctx_);
    model_->decoder().Logits(hidden.data(), p.n, want.data(), ctx_);
    const Cosines cos = RowCosines(got, want, V);
    EXPECT_GE(cos.worst, 0.999);
    EXPECT_GE(cos.mean, 0.999);
  }
}

// One sequence of a mixed-batch test: its prompt, its blocks, how far it is.
struct MixedSeq {
  Prompt p;
  std::vector<int32_t> table;
  int64_t cached = 0;     // tokens in the cache
  int64_t generated = 0;  // decode tokens fed so far
};

// Mixed batches over blocks four sequences share a pool of (interleaved ids, never shared):
//   1. A's first half and all of B, prefilled;
//   2. the rest of A (reading its first half from the cache) beside B's first decode token;
//   3. C's first chunk, A decoding, all of D, B decoding: the decoder runs A and B first (their
//      block tables of different lengths padded to one stride), then C and D (two prefills after
//      the decode rows), and maps the rows back;
//   4. the rest of C, D decoding, A decoding.
// Every step's hidden states and every segment's last-row logits match the CPU decoder's over a
// CPU pool with the same block ids: within 1e-4 in fp32, cosine 0.999 per row in bf16.
void RunMixedBatches(CudaDecoderTest* t, const Qwen2VLModel& model, CudaDecoder* gpu, CudaKvCache* kv,
                     const kernels::KernelContext& ctx, bool fp32) {
  const TextConfig& tc = model.config().text;
  const int64_t H = tc.hidden_size, V = tc.vocab_size;
  BlockPool cpu_pool(kBlocks, kBlockSize, tc.num_layers, tc.num_kv_heads * tc.head_dim, KvType::kF32);
  for (int i = 0; i < kBlocks; ++i) ASSERT_TRUE(cpu_pool.Allocate().has_value());
  std::vector<MixedSeq> seqs(4);
  const char* cases[] = {"one_image", "text_only", "two_images", "text_only"};
  for (int k = 0; k < 4; ++k) {
    seqs[k].p = t->MakePrompt(Golden("tinyvocab", cases[k]));
    // A: odd ids from the top; B: even ids from 0; C: even ids from the middle; D: odd ids from 1.
    for (int i = 0; i < kBlocks / 4; ++i) {
      const int id = k == 0 ? kBlocks - 1 - 2 * i : k == 1 ? 2 * i : k == 2 ? kBlocks / 2 + 2 * i : 1 + 2 * i;
      seqs[k].table.push_back(id);
    }
    ASSERT_LE(seqs[k].p.n + 4, int64_t{kBlocks / 4} * kBlockSize);
  }
  std::vector<float> tok(static_cast<size_t>(H));
  const int32_t five = 5;
  model.decoder().Embed(&five, 1, tok.data(), model.kernel_config());
  // One step: per entry a sequence and how many prompt rows to prefill (0: one decode token).
  auto step = [&](const std::vector<std::pair<int, int64_t>>& plan) {
    std::vector<float> embeds;
    std::vector<BatchSegment> segs;
    std::vector<int64_t> decode_pos(plan.size());  // stays put: segments point into it
    std::vector<int32_t> last_rows;
    int64_t row = 0;
    for (size_t k = 0; k < plan.size(); ++k) {
      MixedSeq& s = seqs[plan[k].first];
      BatchSegment seg;
      seg.past = s.cached;
      seg.block_table = s.table.data();
      if (plan[k].second > 0) {
        seg = CudaDecoderTest::Segment(s.p, s.cached, plan[k].second, s.cached, s.table.data());
        embeds.insert(embeds.end(), s.p.embeds.begin() + s.cached * H,
                      s.p.embeds.begin() + (s.cached + plan[k].second) * H);
      } else {
        decode_pos[k] = s.p.pos.next_position + s.generated++;
        seg.n = 1;
        seg.pos_t = seg.pos_h = seg.pos_w = &decode_pos[k];
        embeds.insert(embeds.end(), tok.begin(), tok.end());
      }
      s.cached += seg.n;
      row += seg.n;
      last_rows.push_back(static_cast<int32_t>(row - 1));
      segs.push_back(seg);
    }
    ASSERT_TRUE(gpu->ForwardBatch(embeds.data(), segs, kv).ok());
    auto got = gpu->Hidden();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::vector<float> want(embeds.size());
    model.decoder().ForwardBatch(embeds.data(), segs, &cpu_pool, want.data(), ctx);
    std::vector<float> got_logits(last_rows.size() * static_cast<size_t>(V)), picked,
        want_logits(got_logits.size());
    ASSERT_TRUE(gpu->Logits(last_rows, got_logits.data()).ok());
    for (int32_t r : last_rows) picked.insert(picked.end(), want.begin() + r * H, want.begin() + (r + 1) * H);
    model.decoder().Logits(picked.data(), static_cast<int64_t>(last_rows.size()), want_logits.data(), ctx);
    if (fp32) {
      ExpectClose(*got, want, 1e-4f, 1e-4f, "hidden states");
      ExpectClose(got_logits, want_logits, 1e-4f, 1e-4f, "logits");
    } else {
      EXPECT_GE(RowCosines(*got, want, H).worst, 0.999);
      EXPECT_GE(RowCosines(got_logits, want_logits, V).worst, 0.999);
    }
  };
  const int64_t half_a = seqs[0].p.n / 2 + 3, half_c = seqs[2].p.n / 2 + 1;  // off block boundaries
  ASSERT_NO_FATAL_FAILURE(step({{0, half_a}, {1, seqs[1].p.n}}));
  ASSERT_NO_FATAL_FAILURE(step({{0, seqs[0].p.n - half_a}, {1, 0}}));
  ASSERT_NO_FATAL_FAILURE(step({{2, half_c}, {0, 0}, {3, seqs[3].p.n}, {1, 0}}));
  ASSERT_NO_FATAL_FAILURE(step({{2, seqs[2].p.n - half_c}, {3, 0}, {0, 0}}));
}

TEST_F(CudaDecoderTest, MixedBatchesMatchTheCpuF32) {
  ASSERT_NO_FATAL_FAILURE(Load("tinyvocab", CudaPrecision::kF32));
  RunMixedBatches(this, *model_, gpu_.get(), kv_.get(), ctx_, true);
}

TEST_F(CudaDecoderTest, MixedBatchesStayCloseToTheCpuBf16) {
  ASSERT_NO_FATAL_FAILURE(Load("tinyvocab", CudaPrecision::kBf16));
  RunMixedBatches(this, *model_, gpu_.get(), kv_.get(), ctx_, false);
}

// Decode steps as CUDA graphs (model/cuda/decoder_cuda.h, EnableGraphs: padding rows over the
// sink block, block tables of a rounded stride, recordings redone when the activations move) give
// the eager steps' logits in fp32: three sequences of different lengths decoding together for 20
// steps (padded to 4 rows; a block boundary crossed), then a long prefill that grows every buffer,
// the same three again (a recorded shape whose buffers moved), then one sequence alone.
TEST_F(CudaDecoderTest, GraphStepsMatchEagerSteps) {
  ASSERT_NO_FATAL_FAILURE(Load("tiny", CudaPrecision::kF32));
  const TextConfig& t = model_->config().text;
  std::unique_ptr<CudaDecoder> eager;
  std::unique_ptr<CudaKvCache> eager_kv;
  ASSERT_NO_FATAL_FAILURE(MakeDecoder(CudaPrecision::kF32, &eager, &eager_kv));
  gpu_->EnableGraphs(16);
  const Prompt p = MakePrompt(Golden("tiny", "text_only"));
  const int64_t V = t.vocab_size, Hd = t.hidden_size;
  std::vector<std::vector<int32_t>> tables(4, std::vector<int32_t>(kBlocks / 4));
  for (int q = 0; q < 4; ++q) std::iota(tables[q].begin(), tables[q].end(), q * (kBlocks / 4));
  std::vector<int64_t> len = {p.n, p.n - 3, p.n - 5};
  std::vector<BatchSegment> prefill;
  std::vector<float> embeds;
  for (int q = 0; q < 3; ++q) {
    prefill.push_back(Segment(p, 0, len[q], 0, tables[q].data()));
    embeds.insert(embeds.end(), p.embeds.begin(), p.embeds.begin() + len[q] * Hd);
  }
  auto both = [&](const std::vector<float>& e, const std::vector<BatchSegment>& segs) {
    ASSERT_TRUE(gpu_->ForwardBatch(e.data(), segs, kv_.get()).ok());
    ASSERT_TRUE(eager->ForwardBatch(e.data(), segs, eager_kv.get()).ok());
  };
  ASSERT_NO_FATAL_FAILURE(both(embeds, prefill));
  std::vector<int32_t> last = {static_cast<int32_t>(len[0] - 1), static_cast<int32_t>(len[0] + len[1] - 1),
                               static_cast<int32_t>(len[0] + len[1] + len[2] - 1)};
  std::vector<float> want(3 * static_cast<size_t>(V));
  ASSERT_TRUE(eager->Logits(last, want.data()).ok());
  // Each step: every sequence's greedy token (from the eager logits), through both decoders.
  auto step = [&](const std::vector<int>& seqs) {
    std::vector<float> e(seqs.size() * static_cast<size_t>(Hd));
    std::vector<int64_t> at(seqs.size());
    std::vector<BatchSegment> segs;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const int32_t tok = ArgMax(want.data() + i * V, V);
      model_->decoder().Embed(&tok, 1, e.data() + i * Hd, model_->kernel_config());
      at[i] = len[seqs[i]] + 100;  // any position, the same for both
      BatchSegment s;
      s.n = 1;
      s.past = len[seqs[i]]++;
      s.pos_t = s.pos_h = s.pos_w = &at[i];
      s.block_table = tables[seqs[i]].data();
      segs.push_back(s);
    }
    ASSERT_NO_FATAL_FAILURE(both(e, segs));
    std::vector<int32_t> rows(seqs.size());
    std::iota(rows.begin(), rows.end(), 0);
    const std::vector<float> got = GpuLogits(rows);
    want.assign(got.size(), 0.0f);
    ASSERT_TRUE(eager->Logits(rows, want.data()).ok());
    // The products of a padded step may take another cuBLASLt algorithm than the eager step's.
    ExpectClose(got, want, 1e-4f, 1e-4f, "graph step");
    for (size_t i = 0; i < seqs.size(); ++i)
      EXPECT_EQ(ArgMax(got.data() + i * V, V), ArgMax(want.data() + i * V, V));
  };
  for (int i = 0; i < 20; ++i) ASSERT_NO_FATAL_FAILURE(step({0, 1, 2}));
  EXPECT_GE(gpu_->graphs_recorded(), 1u);
  // A prefill of more rows than any step so far: every activation buffer grows (and moves).
  std::vector<float> big;
  for (int r = 0; r < 6; ++r) big.insert(big.end(), p.embeds.begin(), p.embeds.end());
  std::vector<int64_t> pos(static_cast<size_t>(6 * p.n));
  std::iota(pos.begin(), pos.end(), 0);
  BatchSegment s;
  s.n = 6 * p.n;
  s.pos_t = s.pos_h = s.pos_w = pos.data();
  s.block_table = tables[3].data();
  ASSERT_NO_FATAL_FAILURE(both(big, {s}));
  want.assign(3 * static_cast<size_t>(V), 0.0f);  // the next tokens: any (token 0)
  ASSERT_NO_FATAL_FAILURE(step({0, 1, 2}));       // a recorded shape whose buffers moved: run afresh
  ASSERT_NO_FATAL_FAILURE(step({0, 1, 2}));       // and recorded again
  ASSERT_NO_FATAL_FAILURE(step({0}));
  ASSERT_NO_FATAL_FAILURE(step({0}));
  EXPECT_EQ(gpu_->graph_error(), "");
}

// Decode steps whose contexts are split over chunks (flash-decoding, EnableDecodeSplit), recorded
// as CUDA graphs (as the backend runs them: three sequences padded to four rows, the padding row's
// chunks in the workspace too), give the logits of unsplit eager steps: contexts past one chunk.
TEST_F(CudaDecoderTest, SplitDecodeStepsMatchUnsplitSteps) {
  ASSERT_NO_FATAL_FAILURE(Load("tiny", CudaPrecision::kF32));
  const TextConfig& t = model_->config().text;
  std::unique_ptr<CudaDecoder> plain;
  std::unique_ptr<CudaKvCache> plain_kv;
  ASSERT_NO_FATAL_FAILURE(MakeDecoder(CudaPrecision::kF32, &plain, &plain_kv));
  constexpr int kSms = 1000;  // as if the GPU had 1,000 SMs: these steps always split
  gpu_->EnableDecodeSplit(kSms);
  gpu_->EnableGraphs(16);
  const Prompt p = MakePrompt(Golden("tiny", "text_only"));
  const int64_t V = t.vocab_size, Hd = t.hidden_size;
  constexpr int kSeqs = 3;
  const int64_t per = kBlocks / kSeqs, room = per * kBlockSize;
  std::vector<std::vector<int32_t>> tables(kSeqs, std::vector<int32_t>(static_cast<size_t>(per)));
  for (int q = 0; q < kSeqs; ++q)
    std::iota(tables[q].begin(), tables[q].end(), static_cast<int32_t>(q * per));
  // Prompts of about 300, 200 and 100 tokens: the tiny prompt's embeddings repeated, positions
  // counted on.
  std::vector<int64_t> len;
  for (int64_t want_len : {300, 200, 100}) len.push_back(std::max<int64_t>(1, want_len / p.n) * p.n);
  constexpr int kSteps = 40;
  ASSERT_LE(len[0] + kSteps, room);
  ASSERT_LE(len[0] + kSteps, 512);  // the graphs' power-of-two stride stays within a table row
  std::vector<std::vector<int64_t>> pos(kSeqs);
  std::vector<float> embeds;
  std::vector<BatchSegment> prefill;
  for (int q = 0; q < kSeqs; ++q) {
    pos[q].resize(static_cast<size_t>(len[q]));
    std::iota(pos[q].begin(), pos[q].end(), 0);
    for (int64_t r = 0; r < len[q] / p.n; ++r) embeds.insert(embeds.end(), p.embeds.begin(), p.embeds.end());
  }
  for (int q = 0; q < kSeqs; ++q) {
    BatchSegment s;
    s.n = len[q];
    s.pos_t = s.pos_h = s.pos_w = pos[q].data();
    s.block_table = tables[q].data();
    prefill.push_back(s);
  }
  auto both = [&](const std::vector<float>& e, const std::vector<BatchSegment>& segs) {
    ASSERT_TRUE(gpu_->ForwardBatch(e.data(), segs, kv_.get()).ok());
    ASSERT_TRUE(plain->ForwardBatch(e.data(), segs, plain_kv.get()).ok());
  };
  ASSERT_NO_FATAL_FAILURE(both(embeds, prefill));
  // Each sequence's last prompt row: the first step's tokens.
  std::vector<int32_t> last;
  int64_t end = 0;
  for (int q = 0; q < kSeqs; ++q) last.push_back(static_cast<int32_t>((end += len[q]) - 1));
  std::vector<float> want(kSeqs * static_cast<size_t>(V));
  ASSERT_TRUE(plain->Logits(last, want.data()).ok());
  for (int step = 0; step < kSteps; ++step) {
    std::vector<float> e(kSeqs * static_cast<size_t>(Hd));
    std::vector<int64_t> at(kSeqs);
    std::vector<BatchSegment> segs;
    for (int q = 0; q < kSeqs; ++q) {
      const int32_t tok = ArgMax(want.data() + q * V, V);
      model_->decoder().Embed(&tok, 1, e.data() + q * Hd, model_->kernel_config());
      at[q] = len[q];
      BatchSegment s;
      s.n = 1;
      s.past = len[q]++;
      s.pos_t = s.pos_h = s.pos_w = &at[q];
      s.block_table = tables[q].data();
      segs.push_back(s);
    }
    ASSERT_NO_FATAL_FAILURE(both(e, segs));
    const std::vector<float> got = GpuLogits({0, 1, 2});
    ASSERT_TRUE(plain->Logits({0, 1, 2}, want.data()).ok());
    // The products of a padded graph step may take another cuBLASLt algorithm than the eager step's.
    ExpectClose(got, want, 1e-4f, 1e-4f, "split step " + std::to_string(step));
    for (int q = 0; q < kSeqs; ++q) EXPECT_EQ(ArgMax(got.data() + q * V, V), ArgMax(want.data() + q * V, V));
  }
  EXPECT_GE(gpu_->graphs_recorded(), 1u);
  EXPECT_EQ(gpu_->graph_error(), "");
  // The steps did split: a graph step's 4 rows over the power-of-two table stride past the longest
  // context have a chunk below that stride's keys.
  int64_t stride = 1;
  while (stride * kBlockSize < len[0]) stride *= 2;
  EXPECT_GT(
      CudaDecoder::DecodeSplitKeys(CudaDecoder::GraphRows(kSeqs), t.num_kv_heads, stride, kBlockSize, kSms),
      0);
}

// Malformed batches are refused before anything is queued, and the decoder stays usable.
TEST_F(CudaDecoderTest, RefusesMalformedBatches) {
  ASSERT_NO_FATAL_FAILURE(Load("tiny", CudaPrecision::kBf16));
  const Prompt p = MakePrompt(Golden("tiny", "text_only"));
  std::vector<int32_t> table = ReversedTable();
  table[0] = kBlocks;  // past the cache
  EXPECT_EQ(gpu_->ForwardBatch(p.embeds.data(), {Segment(p, 0, p.n, 0, table.data())}, kv_.get()).code(),
            StatusCode::kInvalidArgument);
  const TextConfig& t = model_->config().text;
  auto f32 = CudaKvCache::Allocate(2, kBlockSize, t.num_layers, int64_t{t.num_kv_heads} * t.head_dim,
                                   CudaPrecision::kF32);
  ASSERT_TRUE(f32.ok());
  table = ReversedTable();
  EXPECT_EQ(gpu_->ForwardBatch(p.embeds.data(), {Segment(p, 0, p.n, 0, table.data())}, &*f32).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu_->ForwardBatch(nullptr, {Segment(p, 0, p.n, 0, table.data())}, kv_.get()).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(gpu_->ForwardBatch(p.embeds.data(), {Segment(p, 0, p.n, 0, table.data())}, kv_.get()).ok());
  EXPECT_EQ(gpu_->Logits({static_cast<int32_t>(p.n)}, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(GpuLogits({static_cast<int32_t>(p.n - 1)}).size(), static_cast<size_t>(t.vocab_size));
}

// Runs everywhere: the GPU memory budget's activation reserve for the real model (gen_model's
// mineru2.5 preset) grows with the step's tokens, the vision pass's patches and the precision, and
// stays in a sane range (the slack plus at most a few GiB at the GPU defaults), so the KV cache
// gets most of an 80 GB card.
TEST(CudaBackendReserveTest, GrowsWithTheStepAndStaysSane) {
  auto json = PresetConfigJson("mineru2.5");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  auto cfg = ParseModelConfig(*json);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const size_t gpu = CudaBackend::ActivationReserve(*cfg, 8192, 256, 32768, 16, CudaPrecision::kBf16);
  const size_t small = CudaBackend::ActivationReserve(*cfg, 512, 64, 4096, 16, CudaPrecision::kBf16);
  const size_t fp32 = CudaBackend::ActivationReserve(*cfg, 8192, 256, 32768, 16, CudaPrecision::kF32);
  EXPECT_LT(small, gpu);
  EXPECT_LT(gpu, fp32);
  EXPECT_GT(gpu, size_t{1} << 30);
  EXPECT_LT(gpu, size_t{8} << 30);
}

// Runs everywhere. The split policy: only steps whose (sequence, KV head) blocks leave SMs idle, in
// chunks of a multiple of 128 keys making about two blocks an SM, never one chunk for the whole
// context.
TEST(CudaDecoderArgsTest, DecodeSplitKeysSplitOnlyWhatLeavesTheGpuIdle) {
  EXPECT_EQ(CudaDecoder::DecodeSplitKeys(1, 2, 128, 16, 0), 0);       // off
  EXPECT_EQ(CudaDecoder::DecodeSplitKeys(256, 2, 128, 16, 132), 0);   // 512 blocks fill 132 SMs
  EXPECT_EQ(CudaDecoder::DecodeSplitKeys(1, 2, 128, 16, 132), 128);   // 2 blocks: the smallest chunk
  EXPECT_EQ(CudaDecoder::DecodeSplitKeys(21, 2, 128, 16, 132), 384);  // 42 blocks: 2,048 keys in 6 chunks
  EXPECT_EQ(CudaDecoder::DecodeSplitKeys(1, 2, 8, 16, 132), 0);       // 128 keys: one chunk, no split
  EXPECT_EQ(CudaDecoder::DecodeSplitKeys(0, 2, 8, 16, 132), 0);
  for (int64_t seqs : {1, 5, 21, 65}) {
    const int64_t chunk = CudaDecoder::DecodeSplitKeys(seqs, 2, 256, 16, 132);
    EXPECT_EQ(chunk % 128, 0) << seqs;
    EXPECT_LT(chunk, 256 * 16) << seqs;
  }
}

// Runs everywhere: a graph step's rows (powers of two up to 8, then multiples of 16).
TEST(CudaDecoderArgsTest, GraphRowsRoundUp) {
  const std::vector<std::pair<int64_t, int64_t>> cases = {
      {1, 1}, {2, 2}, {3, 4}, {5, 8}, {8, 8}, {9, 16}, {16, 16}, {17, 32}, {250, 256}, {256, 256}};
  for (const auto& [rows, want] : cases) EXPECT_EQ(CudaDecoder::GraphRows(rows), want) << rows;
}

// Runs everywhere: shapes are checked before the device is touched; without a device Create says
// Unavailable.
TEST(CudaDecoderArgsTest, CreateChecksTheShapesAndTheDevice) {
  auto m = Qwen2VLModel::Load(FixturePath("tiny"), ModelLoadOptions());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  TextConfig wrong = (*m)->config().text;
  wrong.intermediate_size += 2;
  EXPECT_EQ(CudaDecoder::Create(wrong, (*m)->weights().text, (*m)->kernel_config(), CudaPrecision::kBf16)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaKvCache::Allocate(0, 16, 2, 64, CudaPrecision::kBf16).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaKvCache::BlockBytes(16, 24, 128, CudaPrecision::kBf16), size_t{24} * 2 * 16 * 128 * 2);
  auto d = CudaDecoder::Create((*m)->config().text, (*m)->weights().text, (*m)->kernel_config(),
                               CudaPrecision::kBf16);
  if (kernels::cuda::ProbeUsableCudaDevice(0).ok()) {
    EXPECT_TRUE(d.ok()) << d.status().ToString();
  } else {
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kUnavailable) << d.status().ToString();
  }
}

}  // namespace
}  // namespace mineru
