// cli/cmd_chat.cc — `mineru-cpp chat`: a multi-turn conversation about one image, through the
// engine (the image is encoded once; later turns reuse the conversation's cached KV blocks).
// Questions come as arguments (non-interactive) or one per line on stdin.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/engine.h"
#include "image/decode.h"

namespace mineru::cli {
namespace {

struct ChatFlags {
  std::string model, image, system = kDefaultSystemPrompt;
  std::vector<std::string> questions;
  int max_new_tokens = 512, threads = 0;
  std::string quant;
  ModelLoadOptions load;  // --mmproj, --min-pixels, --max-pixels
  SamplingParams sampling;
  DeviceFlags device;  // --device, --gpu-memory, --gpu-precision
};

int RunChat(const ChatFlags& f) {
  const std::string dir = ResolveModelDir(f.model);
  ThreadPool load_pool(ResolveThreads(f.threads));
  auto model = Qwen2VLModel::Load(dir, WithQuant(f.load, f.quant), &load_pool);
  if (!model.ok()) return Fail(model.status().ToString());
  auto tok = LoadTokenizer(dir, f.load.mmproj);
  if (!tok.ok()) return Fail(tok.status().ToString());
  std::vector<RgbImage> images;
  if (!f.image.empty()) {
    auto im = DecodeImageFile(f.image);
    if (!im.ok()) return Fail(f.image + ": " + im.status().ToString());
    images.push_back(std::move(im).value());
  }
  EngineConfig ec;
  ec.threads = static_cast<int>(ResolveThreads(f.threads));
  auto device = ResolveDevice(f.device);
  if (!device.ok()) return Fail(device.status().ToString());
  ApplyDevice(*device, f.device, &ec);
  auto engine = Engine::Create(**model, tok->get(), ec);
  if (!engine.ok()) return Fail(engine.status().ToString());

  std::vector<ChatMessage> conv = {{"system", {{ChatPart::kText, f.system, -1}}}};
  const bool interactive = f.questions.empty();
  const bool tty = ::isatty(0) != 0;
  size_t turn = 0;
  int rc = 0;
  for (;;) {
    std::string q;
    if (interactive) {
      if (tty) std::fprintf(stderr, "> ");
      if (!std::getline(std::cin, q)) break;
      if (q.empty()) continue;
      if (q == "/quit" || q == "/exit") break;
    } else {
      if (turn >= f.questions.size()) break;
      q = f.questions[turn];
    }
    ChatMessage user{"user", {}};
    if (turn == 0 && !images.empty()) user.parts.push_back({ChatPart::kImage, "", 0});
    user.parts.push_back({ChatPart::kText, q, -1});
    conv.push_back(user);
    EngineRequest r;
    r.messages = conv;
    r.images = images;
    r.max_new_tokens = f.max_new_tokens;
    r.sampling = f.sampling;
    auto h = (*engine)->Submit(r);
    if (!h.ok()) {
      std::fprintf(stderr, "error: %s\n", h.status().ToString().c_str());
      conv.pop_back();
      rc = 1;
      if (!interactive) break;
      continue;
    }
    std::string piece;
    while ((*h)->Next(&piece, nullptr)) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      piece.clear();
    }
    Completion c = (*h)->Wait();
    std::printf("\n");
    std::fprintf(
        stderr,
        "[turn %zu: %.2f s, first token %.2f s, %lld prompt tokens (%lld cached), %zu generated, %s%s]\n",
        turn + 1, c.total_s, c.ttft_s, static_cast<long long>(c.prompt_tokens),
        static_cast<long long>(c.cached_prompt_tokens), c.ids.size(), FinishReasonName(c.finish_reason),
        c.image_cache_hit ? ", image cached" : "");
    if (c.finish_reason == FinishReason::kError) {
      rc = 1;
      break;
    }
    conv.push_back({"assistant", {{ChatPart::kText, c.text, -1}}});
    ++turn;
  }
  return rc;
}

}  // namespace

void AddChat(CLI::App& app, Action* run) {
  auto f = std::make_shared<ChatFlags>();
  CLI::App* c = app.add_subcommand("chat", "Ask questions about an image (multi-turn)");
  c->add_option("questions", f->questions, "Questions (omit for an interactive session on stdin)");
  c->add_option("--model", f->model, "Model directory");
  c->add_option("--image", f->image, "Image file the conversation is about");
  c->add_option("--system", f->system, "System prompt");
  c->add_option("--max-new-tokens", f->max_new_tokens, "Limit per answer")->capture_default_str();
  c->add_option("--threads", f->threads, "Worker threads (default: all cores)");
  c->add_option("--quant", f->quant, "Weights: bf16 (as stored), q8, q4 (group 32), q4_g128");
  AddModelFileFlags(c, &f->load);
  AddDeviceFlags(c, &f->device);
  AddBatchFlags(c, &f->device);
  AddSamplingFlags(c, &f->sampling);
  c->callback([f, run] {
    *run = [f](const kernels::KernelConfig& k) {
      f->load.kernels = k;
      return RunChat(*f);
    };
  });
}

}  // namespace mineru::cli
