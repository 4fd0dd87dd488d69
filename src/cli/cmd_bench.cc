// cli/cmd_bench.cc — `mineru-cpp bench`: fixed workloads on a model (usually the random real-shape
// one from gen-model) printing one JSON object of figures. Output lengths are fixed (ignore EOS).

#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "cli/bench_cuda.h"
#include "cli/bench_host.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/chat.h"
#include "engine/engine.h"
#include "engine/generate.h"
#include "image/preprocess.h"
#include "kernels/kernels.h"
#include "model/mrope.h"
#include "model/op_profile.h"

#ifndef MINERU_SOURCE_DIR
#define MINERU_SOURCE_DIR "."
#endif

namespace mineru::cli {
namespace {

using Json = nlohmann::json;

struct BenchFlags {
  std::string model, workload = "decode", quant = "bf16", workload_file;
  ModelLoadOptions load;  // --mmproj, --min-pixels, --max-pixels; its kernels: MINERU_KERNELS
  int threads = 0, concurrency = 1;
  int prompt_tokens = 0, new_tokens = 0;
  int batch_tokens = 2048;
  bool json = false;
  bool profile = false;  // vision: time and GFLOP/s per op kind
  std::string target;    // SIMD tier cap (kernels::KernelConfigForTier); "" = MINERU_KERNELS's
  KvCacheType kv_type = KvCacheType::kAuto;
  DeviceFlags dev;       // --device, --gpu-memory, --gpu-precision
  CudaVisionBench cuda;  // vision and peak on cuda (cli/bench_cuda.h): --repeats, --profile
  int pages = 64;        // pages: copies of the page workload submitted together
  int max_seqs = 0;      // sequences decoding together (0: 64, or --concurrency when larger)
  int images = 1;        // vision on cuda: copies of the image packed in one pass
  bool check = false;    // vision on cuda: cosine of the output against the CPU's fp32 path
};

double PeakRssMb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

// A field of /proc/self/status in MB ("VmRSS", "RssAnon"), or -1 where there is none.
double StatusMb(const std::string& field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  double mb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, field.c_str(), field.size()) == 0 && line[field.size()] == ':') {
      mb = std::atol(line + field.size() + 1) / 1024.0;
      break;
    }
  }
  std::fclose(f);
  return mb;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A deterministic page-like test image: light background, dark "text" stripes, some noise.
RgbImage SyntheticImage(int w, int h, uint32_t seed) {
  RgbImage im;
  im.width = w;
  im.height = h;
  im.pixels.resize(static_cast<size_t>(w) * h * 3);
  uint32_t s = seed * 2654435761u + 1;
  for (int y = 0; y < h; ++y) {
    const bool line = (y / 6) % 3 == 0;
    for (int x = 0; x < w; ++x) {
      s = s * 1664525u + 1013904223u;
      const int v = line && (x / 4) % 5 != 0 ? 40 : 235;
      const int n = static_cast<int>(s >> 28) - 8;
      for (int c = 0; c < 3; ++c)
        im.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] =
            static_cast<uint8_t>(std::min(255, std::max(0, v + n)));
    }
  }
  return im;
}

// Prompt ids for a text-only request of exactly n tokens (ids from the ordinary vocabulary).
std::vector<int32_t> TextIds(int n, uint32_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint32_t s = seed + 7;
  for (auto& id : ids) {
    s = s * 1664525u + 1013904223u;
    id = static_cast<int32_t>(1000 + (s >> 8) % 100000);
  }
  return ids;
}

// Runs requests through one engine and reports per-request results.
struct Batch {
  std::vector<Completion> done;
  double wall_s = 0;
};

StatusOr<Batch> RunAll(Engine& e, std::vector<EngineRequest> reqs) {
  Batch b;
  const double t0 = Now();
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (auto& r : reqs) {
    MINERU_ASSIGN_OR_RETURN(auto h, e.Submit(std::move(r)));
    hs.push_back(h);
  }
  for (auto& h : hs) {
    Completion c = h->Wait();
    if (c.finish_reason == FinishReason::kError) return InternalError(c.error);
    b.done.push_back(std::move(c));
  }
  b.wall_s = Now() - t0;
  return b;
}

EngineRequest TextRequest(int prompt, int out, uint32_t seed) {
  EngineRequest r;
  r.prompt_ids = TextIds(prompt, seed);
  r.max_new_tokens = out;
  r.ignore_eos = true;
  return r;
}

EngineRequest ImageRequest(const RgbImage& image, const std::string& prompt, int out) {
  EngineRequest r;
  r.messages = SingleTurn(prompt, 1);
  r.images.push_back(image);
  r.max_new_tokens = out;
  r.ignore_eos = true;
  return r;
}

// Decode rate of a batch: tokens after each sequence's first, over the time after the last first
// token (all prefill done) until the end.
double DecodeRate(const Batch& b) {
  double last_first = 0;
  int64_t tokens = 0;
  for (const auto& c : b.done) {
    last_first = std::max(last_first, c.ttft_s);
    tokens += static_cast<int64_t>(c.ids.size()) - 1;
  }
  const double dt = b.wall_s - last_first;
  return dt > 0 ? tokens / dt : 0;
}

// What every workload runs against: the loaded model, its tokenizer (null when the folder has
// none), the engine, and the JSON line being filled. Borrowed from RunBench, which owns them.
struct BenchContext {
  const BenchFlags& f;
  const std::string& dir;
  const Qwen2VLModel& m;
  const Tokenizer* tok;
  Engine& e;
  Json& out;
};

// decode / prefill: --concurrency text-only requests of fixed length.
Status BenchTokens(BenchContext& c) {
  const bool decode = c.f.workload == "decode";
  const int prompt = c.f.prompt_tokens > 0 ? c.f.prompt_tokens : (decode ? 128 : 1369);
  const int gen = c.f.new_tokens > 0 ? c.f.new_tokens : (decode ? 64 : 1);
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < c.f.concurrency; ++i)
    reqs.push_back(TextRequest(prompt, gen, static_cast<uint32_t>(i)));
  MINERU_ASSIGN_OR_RETURN(Batch b, RunAll(c.e, std::move(reqs)));
  double last_first = 0;
  for (const auto& d : b.done) last_first = std::max(last_first, d.ttft_s);
  c.out["prompt_tokens"] = prompt;
  c.out["new_tokens"] = gen;
  c.out["wall_s"] = b.wall_s;
  c.out["prefill_tok_s"] = static_cast<double>(prompt) * c.f.concurrency / last_first;
  if (gen > 1) c.out["decode_tok_s"] = DecodeRate(b);
  return Status::Ok();
}

// host: the decode workload over a backend that computes nothing (cli/bench_host.h): the host's
// milliseconds a step, greedy and under MinerU's block rules (presence penalty 1.0, frequency
// 0.05, no_repeat_ngram_size 100), whose candidate lists grow with every distinct output token.
Status BenchHost(BenchContext& c) {
  const int prompt = c.f.prompt_tokens > 0 ? c.f.prompt_tokens : 128;
  const int gen = c.f.new_tokens > 0 ? c.f.new_tokens : 512;
  for (const bool rules : {false, true}) {
    std::vector<EngineRequest> reqs;
    for (int i = 0; i < c.f.concurrency; ++i) {
      reqs.push_back(TextRequest(prompt, gen, static_cast<uint32_t>(i)));
      if (rules) {
        reqs.back().sampling.presence_penalty = 1.0f;
        reqs.back().sampling.frequency_penalty = 0.05f;
        reqs.back().sampling.no_repeat_ngram_size = 100;
      }
    }
    const int64_t steps_before = c.e.Stats().steps;
    MINERU_ASSIGN_OR_RETURN(Batch b, RunAll(c.e, std::move(reqs)));
    const int64_t steps = c.e.Stats().steps - steps_before;
    const std::string name = rules ? "mineru_rules" : "greedy";
    c.out[name] = {
        {"host_ms_per_step", steps > 0 ? 1000 * b.wall_s / static_cast<double>(steps) : 0.0},
        {"steps", steps},
        {"host_tok_s", b.wall_s > 0 ? static_cast<double>(gen) * c.f.concurrency / b.wall_s : 0.0}};
  }
  c.out["prompt_tokens"] = prompt;
  c.out["new_tokens"] = gen;
  return Status::Ok();
}

// Per op kind: seconds, share of the encoder's wall time, calls, and GFLOP/s where it computes
// (products and attention; element-wise ops report time only).
Json ProfileJson(const OpProfile& p, double wall_s) {
  Json ops = Json::array();
  double timed = 0;
  for (int i = 0; i < static_cast<int>(VisionOp::kCount); ++i) {
    if (p.calls[i] == 0) continue;
    timed += p.seconds[i];
    Json op = {{"op", VisionOpName(static_cast<VisionOp>(i))},
               {"seconds", p.seconds[i]},
               {"share", p.seconds[i] / wall_s},
               {"calls", p.calls[i]}};
    if (p.flops[i] > 0) {
      op["gflop"] = p.flops[i] / 1e9;
      op["gflop_s"] = p.flops[i] / 1e9 / p.seconds[i];
    }
    ops.push_back(op);
  }
  // What no op timer covered: buffers, rope tables, the loop itself.
  ops.push_back({{"op", "untimed"}, {"seconds", wall_s - timed}, {"share", (wall_s - timed) / wall_s}});
  return ops;
}

// vision: the encoder alone on one 1036x1036 layout image.
Status BenchVision(BenchContext& c) {
  RgbImage img = SyntheticImage(1036, 1036, 1);
  MINERU_ASSIGN_OR_RETURN(ImageInput in, PreprocessForModel(c.m, img));
  OpProfile profile;
  const kernels::KernelWorkspace ctx(c.m.kernel_config(), c.e.pool());
  const double t0 = Now();
  MINERU_ASSIGN_OR_RETURN(std::vector<float> enc,
                          c.m.vision().Encode(in.pixel_values.data(), in.grid.num_patches(), {in.grid}, ctx,
                                              nullptr, c.f.profile ? &profile : nullptr));
  const double dt = Now() - t0;
  c.out["vision_s"] = dt;
  c.out["patches"] = in.grid.num_patches();
  c.out["vision_patches_s"] = in.grid.num_patches() / dt;
  if (c.f.profile) c.out["profile"] = ProfileJson(profile, dt);
  return Status::Ok();
}

// Patches a workload's images occupy, as the processor resizes them.
int64_t WorkloadPatches(const Qwen2VLModel& m, const Json& w) {
  int64_t patches = 0;
  auto count = [&](int64_t width, int64_t height) {
    auto hw = SmartResize(height, width, 28, m.image_config().min_pixels, m.image_config().max_pixels);
    if (hw.ok()) patches += static_cast<int64_t>(hw->first) * hw->second / (14 * 14);
  };
  count(w["layout"]["w"], w["layout"]["h"]);
  for (const Json& b : w["blocks"]) count(b["w"], b["h"]);
  return patches;
}

// page: as the pipeline runs a page, the layout request, then every crop at once.
Status BenchPage(BenchContext& c, const Json& w) {
  const double t0 = Now();
  const Json& L = w["layout"];
  MINERU_ASSIGN_OR_RETURN(
      Batch lb, RunAll(c.e, {ImageRequest(SyntheticImage(L["w"], L["h"], 2),
                                          w["prompts"][L["prompt"].get<std::string>()], L["out"])}));
  std::vector<EngineRequest> crops;
  uint32_t seed = 10;
  int64_t block_tokens = 0;
  for (const Json& b : w["blocks"]) {
    crops.push_back(ImageRequest(SyntheticImage(b["w"], b["h"], seed++),
                                 w["prompts"][b["prompt"].get<std::string>()], b["out"]));
    block_tokens += b["out"].get<int64_t>();
  }
  MINERU_ASSIGN_OR_RETURN(Batch bb, RunAll(c.e, std::move(crops)));
  const Completion& lc = lb.done[0];
  c.out["layout"] = {{"wall_s", lb.wall_s},
                     {"vision_s", lc.vision_s},
                     {"ttft_s", lc.ttft_s},
                     {"prompt_tokens", lc.prompt_tokens},
                     {"decode_tok_s", DecodeRate(lb)}};
  double vision_blocks = 0;
  for (const auto& d : bb.done) vision_blocks = std::max(vision_blocks, d.vision_s);
  c.out["blocks"] = {{"wall_s", bb.wall_s},
                     {"requests", bb.done.size()},
                     {"vision_s", vision_blocks},
                     {"new_tokens", block_tokens},
                     {"decode_tok_s", DecodeRate(bb)}};
  c.out["page_s"] = Now() - t0;
  const double vision_s = lc.vision_s + vision_blocks;
  c.out["vision_s"] = vision_s;
  c.out["stage2_tok_s"] = block_tokens / bb.wall_s;
  const int64_t patches = WorkloadPatches(c.m, w);
  c.out["patches"] = patches;
  c.out["vision_patches_s"] = patches / vision_s;
  c.out["decode_tok_s"] = DecodeRate(bb);
  return Status::Ok();
}

// pages: --pages copies of the page workload submitted together, as a server parsing many pages
// at once runs them: every layout request, then every crop of every page.
Status BenchPages(BenchContext& c, const Json& w) {
  if (c.f.pages < 1 || c.f.pages > 1024) return InvalidArgumentError("--pages must be 1..1024");
  const Json& L = w["layout"];
  const double t0 = Now();
  std::vector<EngineRequest> layouts, crops;
  int64_t tokens = 0;
  for (int p = 0; p < c.f.pages; ++p) {
    layouts.push_back(ImageRequest(SyntheticImage(L["w"], L["h"], 2 + 1000 * p),
                                   w["prompts"][L["prompt"].get<std::string>()], L["out"]));
    tokens += L["out"].get<int64_t>();
  }
  MINERU_ASSIGN_OR_RETURN(Batch lb, RunAll(c.e, std::move(layouts)));
  uint32_t seed = 10;
  for (int p = 0; p < c.f.pages; ++p) {
    for (const Json& b : w["blocks"]) {
      crops.push_back(ImageRequest(SyntheticImage(b["w"], b["h"], seed++ + 1000 * p),
                                   w["prompts"][b["prompt"].get<std::string>()], b["out"]));
      tokens += b["out"].get<int64_t>();
    }
  }
  MINERU_ASSIGN_OR_RETURN(Batch bb, RunAll(c.e, std::move(crops)));
  const double wall = Now() - t0;
  c.out["pages"] = c.f.pages;
  c.out["requests"] = lb.done.size() + bb.done.size();
  c.out["wall_s"] = wall;
  c.out["layout_wall_s"] = lb.wall_s;
  c.out["blocks_wall_s"] = bb.wall_s;
  c.out["pages_s"] = c.f.pages / wall;
  c.out["new_tokens"] = tokens;
  c.out["output_tok_s"] = tokens / wall;
  c.out["patches"] = WorkloadPatches(c.m, w) * c.f.pages;
  return Status::Ok();
}

// chat: the turns of one conversation about one image, each after the previous answer.
Status BenchChat(BenchContext& c, const Json& w) {
  const Json& chat = w["chat"];
  RgbImage img = SyntheticImage(chat["image"]["w"], chat["image"]["h"], 3);
  std::vector<ChatMessage> conv = {{"system", {{ChatPart::kText, kDefaultSystemPrompt, -1}}}};
  Json lat = Json::array(), cached = Json::array();
  bool first = true;
  for (const Json& t : chat["turns"]) {
    ChatMessage user{"user", {}};
    if (first) user.parts.push_back({ChatPart::kImage, "", 0});
    user.parts.push_back({ChatPart::kText, t["prompt"].get<std::string>(), -1});
    conv.push_back(user);
    EngineRequest r;
    r.messages = conv;
    r.images.push_back(img);
    r.max_new_tokens = t["out"];
    r.ignore_eos = true;
    MINERU_ASSIGN_OR_RETURN(Batch b, RunAll(c.e, {r}));
    lat.push_back(b.wall_s);
    cached.push_back(b.done[0].cached_prompt_tokens);
    conv.push_back({"assistant", {{ChatPart::kText, b.done[0].text, -1}}});
    first = false;
  }
  c.out["turn_latency_s"] = lat;
  c.out["cached_prompt_tokens"] = cached;
  return Status::Ok();
}

// page / chat: read the workload file, then run one of the two.
Status BenchWorkloadFile(BenchContext& c) {
  if (c.tok == nullptr)
    return InvalidArgumentError("the page and chat workloads need a tokenizer in the model");
  const std::string wf = c.f.workload_file.empty()
                             ? std::string(MINERU_SOURCE_DIR) + "/bench/page_workload.json"
                             : c.f.workload_file;
  MINERU_ASSIGN_OR_RETURN(std::string text, ReadFileToString(wf));
  Json w;
  if (!ParseJson(text, {}, &w).ok() || !w.is_object() || !w.contains("prompts"))
    return InvalidArgumentError(wf + ": not a workload file");
  try {
    if (c.f.workload == "pages") return BenchPages(c, w);
    return c.f.workload == "page" ? BenchPage(c, w) : BenchChat(c, w);
  } catch (const Json::exception& ex) {
    return InvalidArgumentError(wf + ": malformed workload: " + ex.what());
  }
}

// Final hidden states of one model on a fixed image + prompt (the accuracy workload's probe), over a
// KV cache of `kv` elements.
StatusOr<std::vector<float>> ProbeHidden(const Qwen2VLModel& mm, KvType kv, ThreadPool* pool) {
  RgbImage img = SyntheticImage(448, 448, 4);
  MINERU_ASSIGN_OR_RETURN(ImageInput in, PreprocessForModel(mm, img));
  const kernels::KernelWorkspace ctx(mm.kernel_config(), pool);
  MINERU_ASSIGN_OR_RETURN(std::vector<float> emb,
                          mm.vision().Encode(in.pixel_values.data(), in.grid.num_patches(), {in.grid}, ctx));
  std::vector<int32_t> ids = TextIds(24, 9);
  ids.insert(ids.begin() + 12, mm.config().image_token_id);
  MINERU_ASSIGN_OR_RETURN(ids, ExpandImageTokens(mm, ids, {in.grid}));
  MINERU_ASSIGN_OR_RETURN(MropePositions pos,
                          ComputeMropePositions(ids, {in.grid}, mm.config().vision.spatial_merge_size,
                                                mm.config().image_token_id));
  MINERU_ASSIGN_OR_RETURN(std::vector<float> x, mm.BuildInputEmbeddings(ids, emb));
  KvCache cache(kv);
  std::vector<float> h(x.size());
  mm.decoder().Forward(x.data(), static_cast<int64_t>(ids.size()), pos.t.data(), pos.h.data(), pos.w.data(),
                       &cache, h.data(), ctx);
  return h;
}

// Mean and smallest cosine between the rows (of `width` values) of a and b.
std::pair<double, double> RowCosines(const std::vector<float>& a, const std::vector<float>& b,
                                     int64_t width) {
  const int64_t n = static_cast<int64_t>(a.size()) / width;
  double mean = 0, worst = 1;
  for (int64_t i = 0; i < n; ++i) {
    double dot = 0, na = 0, nb = 0;
    for (int64_t j = 0; j < width; ++j) {
      const double x = a[i * width + j], y = b[i * width + j];
      dot += x * y;
      na += x * x;
      nb += y * y;
    }
    const double cs = dot / std::sqrt(na * nb + 1e-30);
    mean += cs / static_cast<double>(n);
    worst = std::min(worst, std::isnan(cs) ? -1.0 : cs);  // a NaN row is the worst, not skipped
  }
  return {mean, worst};
}

// The vision encoder's output for the accuracy probe's image, with the int8 Q Kᵀ allowed or not.
StatusOr<std::vector<float>> ProbeVision(const Qwen2VLModel& mm, bool int8_attention, ThreadPool* pool) {
  MINERU_ASSIGN_OR_RETURN(ImageInput in, PreprocessForModel(mm, SyntheticImage(448, 448, 4)));
  kernels::KernelConfig k = mm.kernel_config();
  k.attention_int8 = int8_attention;
  const kernels::KernelWorkspace ctx(k, pool);
  return mm.vision().Encode(in.pixel_values.data(), in.grid.num_patches(), {in.grid}, ctx);
}

// accuracy: cosine of the final hidden states of this model (over the engine's KV cache type)
// against the as-stored one (bf16 weights, fp32 activations and KV cache), per token; of this
// model with an fp16 KV cache against itself with an fp32 one; and of this model's vision output
// with the int8 Q Kᵀ against the same model with fp32 attention, per merged token (1 where no int8
// path runs).
Status BenchAccuracy(BenchContext& c) {
  ModelLoadOptions as_stored = WithQuant(c.f.load, "");
  as_stored.kernels = c.m.kernel_config();  // the same kernels (--target included)
  MINERU_ASSIGN_OR_RETURN(auto ref, Qwen2VLModel::Load(c.dir, as_stored, c.e.pool()));
  MINERU_ASSIGN_OR_RETURN(std::vector<float> a, ProbeHidden(*ref, KvType::kF32, c.e.pool()));
  MINERU_ASSIGN_OR_RETURN(std::vector<float> b, ProbeHidden(c.m, c.e.kv_type(), c.e.pool()));
  const int64_t H = c.m.config().text.hidden_size;
  const auto [mean, worst] = RowCosines(a, b, H);
  c.out["tokens"] = static_cast<int64_t>(a.size()) / H;
  c.out["cosine_mean"] = mean;
  c.out["cosine_min"] = worst;
  MINERU_ASSIGN_OR_RETURN(std::vector<float> h16, ProbeHidden(c.m, KvType::kF16, c.e.pool()));
  MINERU_ASSIGN_OR_RETURN(std::vector<float> h32, ProbeHidden(c.m, KvType::kF32, c.e.pool()));
  const auto [kmean, kworst] = RowCosines(h32, h16, H);
  c.out["kv_f16_cosine_mean"] = kmean;
  c.out["kv_f16_cosine_min"] = kworst;
  MINERU_ASSIGN_OR_RETURN(std::vector<float> v8, ProbeVision(c.m, true, c.e.pool()));
  MINERU_ASSIGN_OR_RETURN(std::vector<float> v32, ProbeVision(c.m, false, c.e.pool()));
  const auto [vmean, vworst] = RowCosines(v32, v8, H);
  c.out["vision_int8_attention_cosine_mean"] = vmean;
  c.out["vision_int8_attention_cosine_min"] = vworst;
  return Status::Ok();
}

using WorkloadFn = Status (*)(BenchContext&);

// The workloads that run on a loaded model (peak needs none and is dispatched before loading).
constexpr std::pair<std::string_view, WorkloadFn> kWorkloads[] = {
    {"decode", BenchTokens},      {"prefill", BenchTokens},    {"vision", BenchVision},
    {"page", BenchWorkloadFile},  {"chat", BenchWorkloadFile}, {"accuracy", BenchAccuracy},
    {"pages", BenchWorkloadFile}, {"host", BenchHost},
};

// The workload's function, or null for an unknown name.
WorkloadFn FindWorkload(const std::string& name) {
  for (const auto& [n, fn] : kWorkloads) {
    if (n == name) return fn;
  }
  return nullptr;
}

// peak: what this machine can do, to read the profile's GFLOP/s against: fp32 fused
// multiply-add, bf16 and int8 dot-product throughput and streaming-read bandwidth, on one thread
// and on all (no model).
int RunPeak(const BenchFlags& f, const kernels::KernelConfig& k) {
  ThreadPool pool(ResolveThreads(f.threads));
  const size_t threads = pool.num_threads();
  constexpr int64_t kIters = 100000000;  // 8 vector FMAs each: a few tenths of a second per thread
  auto fma = [&](size_t workers) {
    std::vector<double> flops(workers);
    const double t0 = Now();
    pool.ParallelFor(workers, [&](size_t b, size_t e, size_t) {
      for (size_t i = b; i < e; ++i) flops[i] = kernels::FmaProbe(kIters, 0.5f + 0.01f * i, k).flops;
    });
    const double dt = Now() - t0;
    double sum = 0;
    for (double x : flops) sum += x;
    return sum / dt / 1e9;
  };
  // The reduced-precision dot products (AVX512-BF16 vdpbf16ps, AVX512-VNNI vpdpbusd): G ops/s,
  // or null where the CPU lacks the instruction.
  auto dot = [&](kernels::DotKind kind, size_t workers) -> Json {
    std::vector<kernels::DotProbeResult> r(workers);
    const double t0 = Now();
    pool.ParallelFor(workers, [&](size_t b, size_t e, size_t) {
      for (size_t i = b; i < e; ++i) r[i] = kernels::DotProbe(kind, kIters / 4);
    });
    const double dt = Now() - t0;
    double ops = 0;
    for (const auto& x : r) ops += x.ops;
    return r[0].ok ? Json(ops / dt / 1e9) : Json(nullptr);
  };
  // 512 MB, touched first: larger than any cache, so the reads come from memory.
  std::vector<float> buf(size_t(128) << 20, 1.0f);
  auto read = [&](size_t workers) {
    const size_t n = buf.size(), chunk = (n + workers - 1) / workers;
    std::vector<double> sums(workers);
    const double t0 = Now();
    pool.ParallelFor(workers, [&](size_t b, size_t e, size_t) {
      for (size_t i = b; i < e; ++i) {
        const size_t lo = std::min(n, i * chunk), hi = std::min(n, lo + chunk);
        sums[i] = kernels::ReadProbe(buf.data() + lo, static_cast<int64_t>(hi - lo), k);
      }
    });
    const double dt = Now() - t0;
    return static_cast<double>(n) * sizeof(float) / dt / 1e9;
  };
  Json out = {{"workload", "peak"},
              {"threads", threads},
              {"target", kernels::TargetName(k)},
              {"fp32_fma_gflops_1t", fma(1)},
              {"fp32_fma_gflops", fma(threads)},
              {"bf16_dot_gflops_1t", dot(kernels::DotKind::kBf16, 1)},
              {"bf16_dot_gflops", dot(kernels::DotKind::kBf16, threads)},
              {"int8_dot_gops_1t", dot(kernels::DotKind::kInt8, 1)},
              {"int8_dot_gops", dot(kernels::DotKind::kInt8, threads)},
              {"read_gbs_1t", read(1)},
              {"read_gbs", read(threads)}};
  std::printf("%s\n", out.dump(f.json ? -1 : 2).c_str());
  return 0;
}

// vision on the GPU: f.images copies of the 1036x1036 image in one pass; with --check, the
// output's cosine against the CPU encoder's fp32 output (the CPU's pass takes seconds to minutes).
int RunVisionCuda(const BenchFlags& f, const ModelLoadOptions& load) {
  if (f.images < 1 || f.images > 256) return Fail("--images must be 1..256");
  const std::string dir = ResolveModelDir(f.model);
  ThreadPool pool(ResolveThreads(f.threads));
  auto model = Qwen2VLModel::Load(dir, load, &pool);
  if (!model.ok()) return Fail(model.status().ToString());
  const Qwen2VLModel& m = **model;
  auto in = PreprocessForModel(m, SyntheticImage(1036, 1036, 1));
  if (!in.ok()) return Fail(in.status().ToString());
  std::vector<float> pixels;
  std::vector<ImageGrid> grids;
  for (int i = 0; i < f.images; ++i) {
    pixels.insert(pixels.end(), in->pixel_values.begin(), in->pixel_values.end());
    grids.push_back(in->grid);
  }
  CudaVisionBench vb = f.cuda;
  vb.host_pool = &pool;  // as the engine stages pixels: with its workers
  auto r = BenchVisionCuda(m, pixels, grids, vb);
  if (!r.ok()) return Fail(r.status().ToString());
  Json out = r->figures;
  out["workload"] = "vision";
  out["model"] = m.name();
  out["quant"] = f.quant;
  if (f.cuda.profile) out["profile"] = ProfileJson(r->profile, r->profiled_s);
  if (f.check) {
    const kernels::KernelWorkspace ctx(m.kernel_config(), &pool);
    const double t0 = Now();
    auto cpu = m.vision().Encode(in->pixel_values.data(), in->grid.num_patches(), {in->grid}, ctx);
    if (!cpu.ok()) return Fail(cpu.status().ToString());
    // Every copy in the pass against the one CPU image.
    double mean = 0, worst = 1;
    for (int i = 0; i < f.images; ++i) {
      const std::vector<float> part(r->output.begin() + i * cpu->size(),
                                    r->output.begin() + (i + 1) * cpu->size());
      const auto [mi, wi] = RowCosines(part, *cpu, m.config().vision.out_hidden_size);
      mean += mi / f.images;
      worst = std::min(worst, wi);
    }
    out["cpu_check"] = {{"cpu_vision_s", Now() - t0},
                        {"cpu_target", kernels::TargetName(m.kernel_config())},
                        {"cosine_mean", mean},
                        {"cosine_worst_row", worst}};
  }
  std::printf("%s\n", out.dump(f.json ? -1 : 2).c_str());
  return 0;
}

// decode_step on cuda: the decoder's step alone (BenchDecodeStepCuda); --concurrency sequences over
// --prompt-tokens of context (default 1024), --new-tokens timed steps (default 32).
int RunDecodeStepCuda(const BenchFlags& f, const ModelLoadOptions& load) {
  const std::string dir = ResolveModelDir(f.model);
  ThreadPool pool(ResolveThreads(f.threads));
  auto model = Qwen2VLModel::Load(dir, load, &pool);
  if (!model.ok()) return Fail(model.status().ToString());
  CudaDecodeStepBench o;
  o.precision = f.dev.gpu_precision;
  o.seqs = f.concurrency;
  if (f.prompt_tokens > 0) o.context = f.prompt_tokens;
  if (f.new_tokens > 0) o.steps = f.new_tokens;
  auto r = BenchDecodeStepCuda(**model, o);
  if (!r.ok()) return Fail(r.status().ToString());
  Json out = *r;
  out["workload"] = "decode_step";
  out["model"] = (*model)->name();
  std::printf("%s\n", out.dump(f.json ? -1 : 2).c_str());
  return 0;
}

// --device cuda: the workloads the GPU runs so far.
int RunBenchCuda(const BenchFlags& f, const ModelLoadOptions& load) {
  if (f.workload == "peak") {
    auto peak = BenchPeakCuda();
    if (!peak.ok()) return Fail(peak.status().ToString());
    std::printf("%s\n", peak->dump(f.json ? -1 : 2).c_str());
    return 0;
  }
  if (f.workload == "attention") {
    auto r = BenchAttentionCuda(f.cuda.repeats);
    if (!r.ok()) return Fail(r.status().ToString());
    std::printf("%s\n", r->dump(f.json ? -1 : 2).c_str());
    return 0;
  }
  if (f.workload == "vision") return RunVisionCuda(f, load);
  if (f.workload == "decode_step") return RunDecodeStepCuda(f, load);
  return Fail("bench: " + f.workload + " is not a GPU microbenchmark");
}

int RunBench(const BenchFlags& f) {
  ConfigureAllocatorForModel();
  if (f.concurrency < 1 || f.concurrency > 256) return Fail("--concurrency must be 1..256");
  // --target caps the tier of MINERU_KERNELS's configuration (the rest of it stays).
  ModelLoadOptions load = WithQuant(f.load, f.quant);
  if (!f.target.empty()) {
    const StatusOr<kernels::KernelConfig> tier = kernels::KernelConfigForTier(f.target);
    if (!tier.ok()) return Fail(tier.status().message());
    load.kernels.reference = load.kernels.reference || tier->reference;
    load.kernels.target = tier->target;
    load.kernels.dot_extension = tier->dot_extension;
  }
  auto device = ResolveDevice(f.dev, f.json);
  if (!device.ok()) return Fail(device.status().ToString());
  // The GPU's own microbenchmarks: the ViT alone and the product peak; every other workload runs
  // through the engine on the chosen device.
  if (device->device == ComputeDevice::kCuda && (f.workload == "peak" || f.workload == "vision" ||
                                                 f.workload == "decode_step" || f.workload == "attention")) {
    return RunBenchCuda(f, load);
  }
  if (f.workload == "decode_step" || f.workload == "attention")
    return Fail("--workload " + f.workload + " measures the GPU's kernels: --device cuda");
  if (f.workload == "peak") return RunPeak(f, load.kernels);
  if (device->device == ComputeDevice::kCuda && f.workload == "accuracy") {
    return Fail("--workload accuracy compares the CPU's paths; it does not run on the GPU");
  }
  const WorkloadFn run = FindWorkload(f.workload);
  if (run == nullptr)
    return Fail("--workload must be decode, prefill, vision, page, pages, chat, accuracy, host or peak");
  const std::string dir = ResolveModelDir(f.model);
  const double t_load = Now();
  ThreadPool load_pool(ResolveThreads(f.threads));
  auto model = Qwen2VLModel::Load(dir, load, &load_pool);
  if (!model.ok()) return Fail(model.status().ToString());
  const double load_s = Now() - t_load;
  const Qwen2VLModel& m = **model;
  std::unique_ptr<Tokenizer> tok;
  if (m.files().gguf() || FileExists(dir + "/tokenizer.json")) {
    auto t = LoadTokenizer(dir, f.load.mmproj);
    if (!t.ok()) return Fail(t.status().ToString());
    tok = std::move(t).value();
  }
  EngineConfig ec;
  ec.threads = static_cast<int>(ResolveThreads(f.threads));
  ec.max_batch_tokens = f.batch_tokens;
  ec.kv_type = f.kv_type;
  ec.max_seqs = f.max_seqs > 0 ? f.max_seqs : std::max(ec.max_seqs, f.concurrency);
  ec.device = *device;
  if (f.workload == "host") {  // the engine around a model that computes nothing, on the CPU
    ec.device = DeviceOptions();
    const int64_t vocab = m.config().text.vocab_size;
    ec.wrap_backend = [vocab](std::unique_ptr<ModelBackend> inner) {
      return MakeNullBackend(std::move(inner), vocab);
    };
  }
  auto engine = Engine::Create(m, tok.get(), ec);
  if (!engine.ok()) return Fail(engine.status().ToString());
  Json out = {{"workload", f.workload}, {"threads", ec.threads},
              {"quant", f.quant},       {"concurrency", f.concurrency},
              {"load_s", load_s},       {"batch_tokens", f.batch_tokens},
              {"model", m.name()},      {"target", kernels::TargetName(m.kernel_config())}};
  // Memory right after load: mapped weights count in RSS once touched (panel packing reads the
  // decoder's); anonymous memory is what load copied or built.
  // On a GPU the cache holds the GPU's precision and lives in GPU memory (the device line says how
  // much); the CPU's type and peak do not apply.
  const bool gpu = ec.device.device == ComputeDevice::kCuda;  // the host workload runs on the CPU
  out["kv_type"] = gpu ? f.dev.gpu_precision : KvTypeName((*engine)->kv_type());
  out["device"] = (*engine)->device_description();
  out["max_seqs"] = ec.max_seqs;
  // Load's freed heap (the tokenizer's parsed JSON) given back first, as the engine does when it
  // goes idle: otherwise the figure depends on whether the engine's thread got there yet.
  malloc_trim(0);
  out["rss_after_load_mb"] = StatusMb("VmRSS");
  out["anon_after_load_mb"] = StatusMb("RssAnon");
  BenchContext c{f, dir, m, tok.get(), **engine, out};
  Status s = run(c);
  if (!s.ok()) return Fail(s.ToString());
  // Where the model's time went and what it achieved there (the engine's own accounting,
  // model/flops.h): against `bench --workload peak`'s products on the same device.
  const EngineStats st = (*engine)->Stats();
  if (f.workload != "host") {
    out["vision_s"] = st.vision_s;
    out["decoder_s"] = st.decoder_s;
    if (st.vision_s > 0) out["vision_tflops"] = st.vision_flops / st.vision_s / 1e12;
    if (st.decoder_s > 0) out["decoder_tflops"] = st.decoder_flops / st.decoder_s / 1e12;
  }
  if (!gpu) out["kv_peak_mb"] = (*engine)->Stats().kv_bytes_peak / 1048576.0;
  // On a GPU the memory is taken at start (weights, the whole KV cache) and grown to the largest
  // step's activations, so what is in use at the end is the run's peak (other processes' included).
  if (gpu) {
    if (auto used = GpuUsedBytes(); used.ok()) out["gpu_used_mib"] = *used / 1048576.0;
  }
  out["peak_rss_mb"] = PeakRssMb();
  out["anon_end_mb"] = StatusMb("RssAnon");
  std::printf("%s\n", out.dump(f.json ? -1 : 2).c_str());
  return 0;
}

}  // namespace

void AddBench(CLI::App& app, Action* run) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* c = app.add_subcommand("bench", "Measure vision/prefill/decode/page speed on fixed workloads");
  c->add_option("--model", f->model, "Model directory (e.g. from gen-model --preset mineru2.5)");
  c->add_option("--workload", f->workload,
                "decode | prefill | vision | page | pages | chat | accuracy | host | peak | decode_step, "
                "attention (GPU)")
      ->capture_default_str();
  c->add_option("--workload-file", f->workload_file,
                "Page workload JSON (default: bench/page_workload.json)");
  c->add_option("--quant", f->quant, "Weight format")->capture_default_str();
  AddKvCacheFlag(c, &f->kv_type);
  c->add_option("--target", f->target,
                "Cap the SIMD kernels at a tier: avx512_vnni | avx512 | avx2_vnni | avx2 | sse4 (default: "
                "the best here; "
                "MINERU_KERNELS=<tier> caps every command)");
  AddModelFileFlags(c, &f->load);
  c->add_option("--threads", f->threads, "Worker threads (default: all cores)");
  c->add_option("--concurrency", f->concurrency, "Concurrent sequences")->capture_default_str();
  c->add_option("--prompt-tokens", f->prompt_tokens, "Prompt length for decode/prefill");
  c->add_option("--new-tokens", f->new_tokens, "Generated tokens for decode/prefill");
  c->add_option("--batch-tokens", f->batch_tokens, "Engine token budget per step")->capture_default_str();
  c->add_flag("--json", f->json, "One-line JSON");
  c->add_flag("--profile", f->profile,
              "vision: time and GFLOP/s per op kind (patch embed, norms, products, ...)");
  AddDeviceFlags(c, &f->dev);
  c->add_option("--repeats", f->cuda.repeats, "cuda: timed passes after two warm-ups")->capture_default_str();
  c->add_option("--images", f->images, "vision on cuda: copies of the image encoded in one pass")
      ->capture_default_str();
  c->add_flag("--check", f->check, "vision on cuda: cosine of the output against the CPU's fp32 encoder");
  c->add_option("--pages", f->pages, "pages: copies of the page workload submitted together")
      ->capture_default_str();
  c->add_option("--max-seqs", f->max_seqs, "Sequences decoding together (default: 64, or --concurrency)");
  c->callback([f, run] {
    *run = [f](const kernels::KernelConfig& k) {
      f->load.kernels = k;
      f->cuda.profile = f->profile;
      f->cuda.precision = f->dev.gpu_precision;
      f->cuda.attention = ParseGpuAttention(f->dev.gpu_attention);
      return RunBench(*f);
    };
  });
}

}  // namespace mineru::cli
