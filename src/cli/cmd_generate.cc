// cli/cmd_generate.cc — `mineru-cpp generate`: one prompt (chat template or raw ids) with
// optional images, greedy by default; prints text or ids.

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/chat.h"
#include "engine/engine.h"
#include "engine/generate.h"
#include "image/decode.h"

namespace mineru::cli {
namespace {

struct GenerateFlags {
  std::string model;
  std::vector<std::string> images;
  std::string prompt;
  std::string raw_ids;
  std::string system = kDefaultSystemPrompt;
  int max_new_tokens = 256;
  bool ignore_eos = false;
  bool print_ids = false;
  bool skip_special = false;
  int threads = 0;
  std::string quant;
  ModelLoadOptions load;  // --mmproj, --min-pixels, --max-pixels
  SamplingParams sampling;
  DeviceFlags device;  // --device, --gpu-memory, --gpu-precision
};

// The request through an engine on a GPU (--device cuda, or auto finding one): the same prompt,
// images and sampling, the text streamed as it comes.
int GenerateOnEngine(const GenerateFlags& f, const Qwen2VLModel& m, const Tokenizer* tok,
                     std::vector<RgbImage> images, const DeviceOptions& device) {
  EngineConfig ec;
  ec.threads = static_cast<int>(ResolveThreads(f.threads));
  ApplyDevice(device, f.device, &ec);
  ec.max_new_tokens = std::max(ec.max_new_tokens, f.max_new_tokens);
  auto engine = Engine::Create(m, tok, ec);
  if (!engine.ok()) return Fail(engine.status().ToString());
  EngineRequest r;
  if (!f.raw_ids.empty()) {
    auto raw = ParseIdList(f.raw_ids);
    if (!raw.ok()) return Fail("--raw-ids: " + raw.status().message());
    r.prompt_ids = std::move(raw).value();
  } else {
    r.messages = SingleTurn(f.prompt, static_cast<int>(images.size()), f.system);
  }
  r.images = std::move(images);
  r.sampling = f.sampling;
  r.max_new_tokens = f.max_new_tokens;
  r.ignore_eos = f.ignore_eos;
  r.skip_special_tokens = f.skip_special;
  auto handle = (*engine)->Submit(std::move(r));
  if (!handle.ok()) return Fail(handle.status().ToString());
  std::string text;
  std::vector<int32_t> ids;
  while ((*handle)->Next(&text, &ids)) {
    if (!f.print_ids && tok != nullptr) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
    text.clear();
  }
  const Completion c = (*handle)->Wait();
  if (c.finish_reason == FinishReason::kError) return Fail(c.error);
  if (f.print_ids) {
    std::string line;
    for (size_t i = 0; i < c.ids.size(); ++i) line += (i ? " " : "") + std::to_string(c.ids[i]);
    std::printf("%s\n", line.c_str());
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::printf("\n");
  }
  std::fprintf(
      stderr,
      "[%lld prompt tokens, %zu generated, finish=%s; on %s; vision %.2fs, first token %.2fs, total %.2fs]\n",
      static_cast<long long>(c.prompt_tokens), c.ids.size(), FinishReasonName(c.finish_reason),
      (*engine)->device_description().c_str(), c.vision_s, c.ttft_s, c.total_s);
  return 0;
}

int RunGenerate(const GenerateFlags& f) {
  if (f.prompt.empty() == f.raw_ids.empty()) return Fail("give exactly one of --prompt or --raw-ids");
  if (f.max_new_tokens < 0 || f.max_new_tokens > 1000000) return Fail("--max-new-tokens out of range");
  const std::string dir = ResolveModelDir(f.model);
  ThreadPool pool(ResolveThreads(f.threads));
  auto model = Qwen2VLModel::Load(dir, WithQuant(f.load, f.quant), &pool);
  if (!model.ok()) return Fail(model.status().ToString());
  std::vector<RgbImage> decoded;
  for (const auto& path : f.images) {
    auto im = DecodeImageFile(path);
    if (!im.ok()) return Fail(path + ": " + im.status().ToString());
    decoded.push_back(std::move(im).value());
  }
  std::unique_ptr<Tokenizer> tok;
  if (!f.raw_ids.empty() && f.print_ids) {
    // The tokenizer is optional here (fixture model without a vocabulary file).
  } else {
    auto t = LoadTokenizer(dir, f.load.mmproj);
    if (!t.ok()) return Fail(t.status().ToString());
    tok = std::move(t).value();
  }
  auto device = ResolveDevice(f.device);
  if (!device.ok()) return Fail(device.status().ToString());
  if (device->device != ComputeDevice::kCpu)
    return GenerateOnEngine(f, **model, tok.get(), std::move(decoded), *device);

  std::vector<int32_t> ids;
  std::vector<ImageInput> images;
  if (!f.raw_ids.empty()) {
    auto raw = ParseIdList(f.raw_ids);
    if (!raw.ok()) return Fail("--raw-ids: " + raw.status().message());
    std::vector<ImageGrid> grids;
    for (const RgbImage& im : decoded) {
      auto in = PreprocessForModel(**model, im);
      if (!in.ok()) return Fail(in.status().ToString());
      grids.push_back(in->grid);
      images.push_back(std::move(in).value());
    }
    auto exp = ExpandImageTokens(**model, *raw, grids);
    if (!exp.ok()) return Fail(exp.status().ToString());
    ids = std::move(exp).value();
  } else {
    std::vector<const RgbImage*> ptrs;
    for (const auto& im : decoded) ptrs.push_back(&im);
    auto p =
        PreparePrompt(**model, *tok, SingleTurn(f.prompt, static_cast<int>(decoded.size()), f.system), ptrs);
    if (!p.ok()) return Fail(p.status().ToString());
    ids = std::move(p->ids);
    images = std::move(p->images);
  }

  GenerateOptions opt;
  opt.max_new_tokens = f.max_new_tokens;
  opt.ignore_eos = f.ignore_eos;
  opt.sampling = f.sampling;
  std::optional<IncrementalDecoder> stream;
  if (tok) stream.emplace(*tok, f.skip_special);
  auto on_token = [&](int32_t id) {
    if (!f.print_ids && tok) {
      std::string s = stream->Push(id);
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  auto r = Generate(**model, ids, images, opt, &pool, on_token);
  if (!r.ok()) return Fail(r.status().ToString());
  if (f.print_ids) {
    std::string line;
    for (size_t i = 0; i < r->ids.size(); ++i) line += (i ? " " : "") + std::to_string(r->ids[i]);
    std::printf("%s\n", line.c_str());
  } else {
    std::string s = stream ? stream->Flush() : std::string();
    std::printf("%s\n", s.c_str());
  }
  std::fprintf(stderr,
               "[%lld prompt tokens, %zu generated, finish=%s; vision %.2fs, prefill %.2fs, decode %.2fs]\n",
               static_cast<long long>(r->prompt_tokens), r->ids.size(), FinishReasonName(r->finish_reason),
               r->vision_s, r->prefill_s, r->decode_s);
  return 0;
}

}  // namespace

void AddGenerate(CLI::App& app, Action* run) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* c = app.add_subcommand("generate", "Run one prompt (with images) through the model");
  c->add_option("--model", f->model, "Model directory (default: $MINERU_MODEL or ~/.cache/mineru-cpp/...)");
  c->add_option("--image", f->images, "Image file (repeatable; in order)");
  c->add_option("--prompt", f->prompt, "User text, wrapped in the Qwen2-VL chat template");
  c->add_option("--raw-ids", f->raw_ids, "Prompt token ids used as given; each image token id is one image");
  c->add_option("--system", f->system, "System prompt");
  c->add_option("--max-new-tokens", f->max_new_tokens, "Generation limit")->capture_default_str();
  c->add_flag("--ignore-eos", f->ignore_eos, "Do not stop at end-of-sequence tokens");
  c->add_flag("--print-ids", f->print_ids, "Print generated token ids instead of text");
  c->add_flag("--skip-special-tokens", f->skip_special, "Drop special tokens from the printed text");
  c->add_option("--threads", f->threads, "Worker threads (default: all cores)");
  c->add_option("--quant", f->quant, "Weights: bf16 (as stored), q8, q4 (group 32), q4_g128");
  AddModelFileFlags(c, &f->load);
  AddSamplingFlags(c, &f->sampling);
  AddDeviceFlags(c, &f->device);
  c->callback([f, run] {
    *run = [f](const kernels::KernelConfig& k) {
      f->load.kernels = k;
      return RunGenerate(*f);
    };
  });
}

}  // namespace mineru::cli
