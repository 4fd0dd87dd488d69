// cli/cmd_bench.cc — `mineru-cpp bench`: fixed workloads on a model (usually the random real-shape
// one from gen-model) printing one JSON object of figures. Output lengths are fixed (ignore EOS).

#include <sys/resource.h>

#include <chrono>
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
#include "engine/generate.h"

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

struct Stage {
  double vision_s = 0, prefill_s = 0, decode_s = 0, wall_s = 0;
  int64_t patches = 0, prompt_tokens = 0, new_tokens = 0;
  void Add(const GenerateResult& r, int64_t p) {
    vision_s += r.vision_s;
    prefill_s += r.prefill_s;
    decode_s += r.decode_s;
    patches += p;
    prompt_tokens += r.prompt_tokens;
    new_tokens += static_cast<int64_t>(r.ids.size());
  }
  Json ToJson() const {
    return {{"vision_s", vision_s},         {"prefill_s", prefill_s},
            {"decode_s", decode_s},         {"wall_s", wall_s},
            {"patches", patches},           {"prompt_tokens", prompt_tokens},
            {"new_tokens", new_tokens},     {"vision_patches_s", vision_s > 0 ? patches / vision_s : 0.0},
            {"prefill_tok_s", prefill_s > 0 ? prompt_tokens / prefill_s : 0.0},
            {"decode_tok_s", decode_s > 0 ? new_tokens / decode_s : 0.0}};
  }
};

StatusOr<GenerateResult> RunImageRequest(const Qwen2VLModel& m, const Tokenizer& tok, const RgbImage& image,
                                         const std::string& prompt, int out, ThreadPool* pool, int64_t* patches) {
  MINERU_ASSIGN_OR_RETURN(PreparedPrompt p, PreparePrompt(m, tok, SingleTurn(prompt, 1), {&image}));
  *patches = p.images[0].grid.num_patches();
  GenerateOptions g;
  g.max_new_tokens = out;
  g.ignore_eos = true;
  return Generate(m, p.ids, p.images, g, pool);
}

int RunBench(const BenchFlags& f) {
  if (f.quant != "bf16" && f.quant != "f32") return Fail("--quant " + f.quant + " is not available in this build");
  if (f.concurrency != 1) return Fail("--concurrency > 1 needs the batching engine (not in this build)");
  const std::string dir = ResolveModelDir(f.model);
  const double t_load = Now();
  auto model = Qwen2VLModel::Load(dir);
  if (!model.ok()) return Fail(model.status().ToString());
  const double load_s = Now() - t_load;
  ThreadPool pool(ResolveThreads(f.threads));
  Json out = {{"workload", f.workload}, {"threads", pool.num_threads()}, {"quant", f.quant},
              {"concurrency", f.concurrency}, {"load_s", load_s}};
  const Qwen2VLModel& m = **model;

  if (f.workload == "decode" || f.workload == "prefill") {
    const int prompt = f.prompt_tokens > 0 ? f.prompt_tokens : (f.workload == "decode" ? 128 : 1369);
    const int gen = f.new_tokens > 0 ? f.new_tokens : (f.workload == "decode" ? 64 : 1);
    GenerateOptions g;
    g.max_new_tokens = gen;
    g.ignore_eos = true;
    const double t0 = Now();
    auto r = Generate(m, TextIds(prompt, 1), {}, g, &pool);
    if (!r.ok()) return Fail(r.status().ToString());
    Stage s;
    s.Add(*r, 0);
    s.wall_s = Now() - t0;
    out.update(s.ToJson());
    // Decode timing includes the first sampled token's step only from the second token on.
    if (f.workload == "decode" && r->ids.size() > 1) out["decode_tok_s"] = (r->ids.size() - 1) / r->decode_s;
  } else if (f.workload == "vision") {
    RgbImage img = SyntheticImage(1036, 1036, 1);
    auto in = PreprocessForModel(m, img);
    if (!in.ok()) return Fail(in.status().ToString());
    const double t0 = Now();
    auto e = m.vision().Encode(in->pixel_values.data(), in->grid.num_patches(), {in->grid}, &pool);
    if (!e.ok()) return Fail(e.status().ToString());
    const double dt = Now() - t0;
    out["vision_s"] = dt;
    out["patches"] = in->grid.num_patches();
    out["vision_patches_s"] = in->grid.num_patches() / dt;
  } else if (f.workload == "page" || f.workload == "chat") {
    auto tok = LoadTokenizer(dir);
    if (!tok.ok()) return Fail(tok.status().ToString());
    const std::string wf =
        f.workload_file.empty() ? std::string(MINERU_SOURCE_DIR) + "/bench/page_workload.json" : f.workload_file;
    auto text = ReadFileToString(wf);
    if (!text.ok()) return Fail(text.status().ToString());
    Json w = Json::parse(*text, nullptr, false);
    if (w.is_discarded() || !w.contains("prompts")) return Fail(wf + ": not a workload file");
    try {
      if (f.workload == "page") {
        const double t0 = Now();
        Stage layout, blocks;
        const Json& L = w["layout"];
        RgbImage limg = SyntheticImage(L["w"], L["h"], 2);
        int64_t patches = 0;
        const double tl = Now();
        auto r = RunImageRequest(m, **tok, limg, w["prompts"][L["prompt"].get<std::string>()], L["out"], &pool, &patches);
        if (!r.ok()) return Fail(r.status().ToString());
        layout.Add(*r, patches);
        layout.wall_s = Now() - tl;
        const double tb = Now();
        uint32_t seed = 10;
        for (const Json& b : w["blocks"]) {
          RgbImage crop = SyntheticImage(b["w"], b["h"], seed++);
          auto rb = RunImageRequest(m, **tok, crop, w["prompts"][b["prompt"].get<std::string>()], b["out"], &pool,
                                    &patches);
          if (!rb.ok()) return Fail(rb.status().ToString());
          blocks.Add(*rb, patches);
        }
        blocks.wall_s = Now() - tb;
        out["layout"] = layout.ToJson();
        out["blocks"] = blocks.ToJson();
        out["page_s"] = Now() - t0;
        out["vision_s"] = layout.vision_s + blocks.vision_s;
        out["vision_patches_s"] = (layout.patches + blocks.patches) / out["vision_s"].get<double>();
        out["prefill_tok_s"] = (layout.prompt_tokens + blocks.prompt_tokens) / (layout.prefill_s + blocks.prefill_s);
        out["decode_tok_s"] = (layout.new_tokens + blocks.new_tokens) / (layout.decode_s + blocks.decode_s);
      } else {
        const Json& c = w["chat"];
        RgbImage img = SyntheticImage(c["image"]["w"], c["image"]["h"], 3);
        Json lat = Json::array();
        for (const Json& t : c["turns"]) {
          int64_t patches = 0;
          const double t0 = Now();
          auto r = RunImageRequest(m, **tok, img, t["prompt"], t["out"], &pool, &patches);
          if (!r.ok()) return Fail(r.status().ToString());
          lat.push_back(Now() - t0);
        }
        out["turn_latency_s"] = lat;
        out["note"] = "no prefix/image cache in this build: every turn re-encodes the image";
      }
    } catch (const Json::exception& e) {
      return Fail(wf + ": malformed workload: " + e.what());
    }
  } else {
    return Fail("--workload must be decode, prefill, vision, page or chat");
  }
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
  c->add_flag("--json", f->json, "One-line JSON");
  c->callback([f, run] { *run = [f] { return RunBench(*f); }; });
}

}  // namespace mineru::cli
