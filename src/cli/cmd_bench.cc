// cli/cmd_bench.cc — `mineru-cpp bench`: fixed workloads on a model (usually the random real-shape
// one from gen-model) printing one JSON object of figures. Output lengths are fixed (ignore EOS).

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "cli/common.h"
#include "cli/commands.h"
#include "engine/chat.h"
#include "engine/engine.h"
#include "engine/generate.h"
#include "image/preprocess.h"
#include "model/mrope.h"

#ifndef MINERU_SOURCE_DIR
#define MINERU_SOURCE_DIR "."
#endif

namespace mineru::cli {
namespace {

using Json = nlohmann::json;

struct BenchFlags {
  std::string model, workload = "decode", quant = "bf16", workload_file;
  int threads = 0, concurrency = 1;
  int prompt_tokens = 0, new_tokens = 0;
  int batch_tokens = 2048;
  bool json = false;
};

double PeakRssMb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
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
      for (int c = 0; c < 3; ++c) im.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>(std::min(255, std::max(0, v + n)));
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
    if (c.finish_reason == "error") return InternalError(c.error);
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

int RunBench(const BenchFlags& f) {
  if (f.concurrency < 1 || f.concurrency > 256) return Fail("--concurrency must be 1..256");
  const std::string dir = ResolveModelDir(f.model);
  const double t_load = Now();
  ThreadPool load_pool(ResolveThreads(f.threads));
  auto model = Qwen2VLModel::Load(dir, f.quant, &load_pool);
  if (!model.ok()) return Fail(model.status().ToString());
  const double load_s = Now() - t_load;
  const Qwen2VLModel& m = **model;
  std::unique_ptr<Tokenizer> tok;
  if (FileExists(dir + "/tokenizer.json")) {
    auto t = LoadTokenizer(dir);
    if (!t.ok()) return Fail(t.status().ToString());
    tok = std::move(t).value();
  }
  EngineConfig ec;
  ec.threads = static_cast<int>(ResolveThreads(f.threads));
  ec.max_batch_tokens = f.batch_tokens;
  auto engine = Engine::Create(m, tok.get(), ec);
  if (!engine.ok()) return Fail(engine.status().ToString());
  Engine& e = **engine;
  Json out = {{"workload", f.workload}, {"threads", ec.threads}, {"quant", f.quant},
              {"concurrency", f.concurrency}, {"load_s", load_s}, {"batch_tokens", f.batch_tokens}};
  auto need_tok = [&]() -> bool { return tok != nullptr; };

  if (f.workload == "decode" || f.workload == "prefill") {
    const int prompt = f.prompt_tokens > 0 ? f.prompt_tokens : (f.workload == "decode" ? 128 : 1369);
    const int gen = f.new_tokens > 0 ? f.new_tokens : (f.workload == "decode" ? 64 : 1);
    std::vector<EngineRequest> reqs;
    for (int i = 0; i < f.concurrency; ++i) reqs.push_back(TextRequest(prompt, gen, static_cast<uint32_t>(i)));
    auto b = RunAll(e, std::move(reqs));
    if (!b.ok()) return Fail(b.status().ToString());
    double last_first = 0;
    for (const auto& c : b->done) last_first = std::max(last_first, c.ttft_s);
    out["prompt_tokens"] = prompt;
    out["new_tokens"] = gen;
    out["wall_s"] = b->wall_s;
    out["prefill_tok_s"] = static_cast<double>(prompt) * f.concurrency / last_first;
    if (gen > 1) out["decode_tok_s"] = DecodeRate(*b);
  } else if (f.workload == "vision") {
    RgbImage img = SyntheticImage(1036, 1036, 1);
    auto in = PreprocessForModel(m, img);
    if (!in.ok()) return Fail(in.status().ToString());
    const double t0 = Now();
    auto enc = m.vision().Encode(in->pixel_values.data(), in->grid.num_patches(), {in->grid}, e.pool());
    if (!enc.ok()) return Fail(enc.status().ToString());
    const double dt = Now() - t0;
    out["vision_s"] = dt;
    out["patches"] = in->grid.num_patches();
    out["vision_patches_s"] = in->grid.num_patches() / dt;
  } else if (f.workload == "page" || f.workload == "chat") {
    if (!need_tok()) return Fail("the page and chat workloads need tokenizer.json in the model dir");
    const std::string wf =
        f.workload_file.empty() ? std::string(MINERU_SOURCE_DIR) + "/bench/page_workload.json" : f.workload_file;
    auto text = ReadFileToString(wf);
    if (!text.ok()) return Fail(text.status().ToString());
    Json w = Json::parse(*text, nullptr, false);
    if (w.is_discarded() || !w.contains("prompts")) return Fail(wf + ": not a workload file");
    try {
      if (f.workload == "page") {
        // As the pipeline runs a page: the layout request, then every crop at once.
        const double t0 = Now();
        const Json& L = w["layout"];
        auto lb = RunAll(e, {ImageRequest(SyntheticImage(L["w"], L["h"], 2), w["prompts"][L["prompt"].get<std::string>()],
                                          L["out"])});
        if (!lb.ok()) return Fail(lb.status().ToString());
        std::vector<EngineRequest> crops;
        uint32_t seed = 10;
        int64_t block_tokens = 0;
        for (const Json& b : w["blocks"]) {
          crops.push_back(ImageRequest(SyntheticImage(b["w"], b["h"], seed++), w["prompts"][b["prompt"].get<std::string>()],
                                       b["out"]));
          block_tokens += b["out"].get<int64_t>();
        }
        auto bb = RunAll(e, std::move(crops));
        if (!bb.ok()) return Fail(bb.status().ToString());
        const Completion& lc = lb->done[0];
        out["layout"] = {{"wall_s", lb->wall_s}, {"vision_s", lc.vision_s}, {"ttft_s", lc.ttft_s},
                         {"prompt_tokens", lc.prompt_tokens}, {"decode_tok_s", DecodeRate(*lb)}};
        double vision_blocks = 0;
        for (const auto& c : bb->done) vision_blocks = std::max(vision_blocks, c.vision_s);
        out["blocks"] = {{"wall_s", bb->wall_s}, {"requests", bb->done.size()}, {"vision_s", vision_blocks},
                         {"new_tokens", block_tokens}, {"decode_tok_s", DecodeRate(*bb)}};
        out["page_s"] = Now() - t0;
        out["vision_s"] = lc.vision_s + vision_blocks;
        out["stage2_tok_s"] = block_tokens / bb->wall_s;
        // Patches the workload's images occupy (as the processor resizes them).
        int64_t patches = 0;
        auto count = [&](int64_t w, int64_t h) {
          auto hw = SmartResize(h, w, 28, m.image_config().min_pixels, m.image_config().max_pixels);
          if (hw.ok()) patches += static_cast<int64_t>(hw->first) * hw->second / (14 * 14);
        };
        count(L["w"], L["h"]);
        for (const Json& b : w["blocks"]) count(b["w"], b["h"]);
        out["patches"] = patches;
        out["vision_patches_s"] = patches / out["vision_s"].get<double>();
        out["decode_tok_s"] = DecodeRate(*bb);
        out["kv_peak_mb"] = e.Stats().kv_bytes_peak / 1048576.0;
      } else {
        const Json& c = w["chat"];
        RgbImage img = SyntheticImage(c["image"]["w"], c["image"]["h"], 3);
        std::vector<ChatMessage> conv = {{"system", {{ChatPart::kText, kDefaultSystemPrompt, -1}}}};
        Json lat = Json::array(), cached = Json::array();
        bool first = true;
        for (const Json& t : c["turns"]) {
          ChatMessage user{"user", {}};
          if (first) user.parts.push_back({ChatPart::kImage, "", 0});
          user.parts.push_back({ChatPart::kText, t["prompt"].get<std::string>(), -1});
          conv.push_back(user);
          EngineRequest r;
          r.messages = conv;
          r.images.push_back(img);
          r.max_new_tokens = t["out"];
          r.ignore_eos = true;
          auto b = RunAll(e, {r});
          if (!b.ok()) return Fail(b.status().ToString());
          lat.push_back(b->wall_s);
          cached.push_back(b->done[0].cached_prompt_tokens);
          conv.push_back({"assistant", {{ChatPart::kText, b->done[0].text, -1}}});
          first = false;
        }
        out["turn_latency_s"] = lat;
        out["cached_prompt_tokens"] = cached;
      }
    } catch (const Json::exception& ex) {
      return Fail(wf + ": malformed workload: " + ex.what());
    }
  } else if (f.workload == "accuracy") {
    // Final hidden states of the quantized model against the as-stored (bf16 weights, fp32
    // activations) model on the same image + prompt.
    auto ref = Qwen2VLModel::Load(dir, "", e.pool());
    if (!ref.ok()) return Fail(ref.status().ToString());
    RgbImage img = SyntheticImage(448, 448, 4);
    auto hidden = [&](const Qwen2VLModel& mm) -> StatusOr<std::vector<float>> {
      MINERU_ASSIGN_OR_RETURN(ImageInput in, PreprocessForModel(mm, img));
      MINERU_ASSIGN_OR_RETURN(std::vector<float> emb,
                              mm.vision().Encode(in.pixel_values.data(), in.grid.num_patches(), {in.grid}, e.pool()));
      std::vector<int32_t> ids = TextIds(24, 9);
      ids.insert(ids.begin() + 12, mm.config().image_token_id);
      MINERU_ASSIGN_OR_RETURN(ids, ExpandImageTokens(mm, ids, {in.grid}));
      MINERU_ASSIGN_OR_RETURN(MropePositions pos, ComputeMropePositions(ids, {in.grid}, mm.config().vision.spatial_merge_size,
                                                                        mm.config().image_token_id));
      MINERU_ASSIGN_OR_RETURN(std::vector<float> x, mm.BuildInputEmbeddings(ids, emb));
      KvCache cache;
      std::vector<float> h(x.size());
      mm.decoder().Forward(x.data(), static_cast<int64_t>(ids.size()), pos.t.data(), pos.h.data(), pos.w.data(), &cache,
                           h.data(), e.pool());
      return h;
    };
    auto a = hidden(**ref);
    auto b = hidden(m);
    if (!a.ok()) return Fail(a.status().ToString());
    if (!b.ok()) return Fail(b.status().ToString());
    const int64_t H = m.config().text.hidden_size, n = static_cast<int64_t>(a->size()) / H;
    double mean = 0, worst = 1;
    for (int64_t i = 0; i < n; ++i) {
      double dot = 0, na = 0, nb = 0;
      for (int64_t j = 0; j < H; ++j) {
        const double x = (*a)[i * H + j], y = (*b)[i * H + j];
        dot += x * y;
        na += x * x;
        nb += y * y;
      }
      const double c = dot / std::sqrt(na * nb + 1e-30);
      mean += c / n;
      worst = std::min(worst, c);
    }
    out["tokens"] = n;
    out["cosine_mean"] = mean;
    out["cosine_min"] = worst;
  } else {
    return Fail("--workload must be decode, prefill, vision, page, chat or accuracy");
  }
  EngineStats st = e.Stats();
  out["kv_peak_mb"] = st.kv_bytes_peak / 1048576.0;
  out["peak_rss_mb"] = PeakRssMb();
  std::printf("%s\n", out.dump(f.json ? -1 : 2).c_str());
  return 0;
}

}  // namespace

void AddBench(CLI::App& app, Action* run) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* c = app.add_subcommand("bench", "Measure vision/prefill/decode/page speed on fixed workloads");
  c->add_option("--model", f->model, "Model directory (e.g. from gen-model --preset mineru2.5)");
  c->add_option("--workload", f->workload, "decode | prefill | vision | page | chat")->capture_default_str();
  c->add_option("--workload-file", f->workload_file, "Page workload JSON (default: bench/page_workload.json)");
  c->add_option("--quant", f->quant, "Weight format")->capture_default_str();
  c->add_option("--threads", f->threads, "Worker threads (default: all cores)");
  c->add_option("--concurrency", f->concurrency, "Concurrent sequences")->capture_default_str();
  c->add_option("--prompt-tokens", f->prompt_tokens, "Prompt length for decode/prefill");
  c->add_option("--new-tokens", f->new_tokens, "Generated tokens for decode/prefill");
  c->add_option("--batch-tokens", f->batch_tokens, "Engine token budget per step")->capture_default_str();
  c->add_flag("--json", f->json, "One-line JSON");
  c->callback([f, run] { *run = [f] { return RunBench(*f); }; });
}

}  // namespace mineru::cli
