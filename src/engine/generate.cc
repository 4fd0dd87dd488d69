#include "engine/generate.h"

#include <algorithm>
#include <chrono>

#include "kernels/context.h"
#include "model/mrope.h"

namespace mineru {
namespace {
double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

StatusOr<std::vector<int32_t>> ExpandImageTokens(const Qwen2VLModel& model, const std::vector<int32_t>& ids,
                                                 const std::vector<ImageGrid>& grids) {
  const int32_t img = model.config().image_token_id;
  std::vector<int32_t> out;
  size_t next = 0;
  for (int32_t id : ids) {
    if (id != img) {
      out.push_back(id);
      continue;
    }
    if (next >= grids.size()) return InvalidArgumentError("more image tokens than images");
    out.insert(out.end(), static_cast<size_t>(model.ImageTokens(grids[next++])), img);
  }
  if (next != grids.size()) return InvalidArgumentError("more images than image tokens in the prompt");
  return out;
}

StatusOr<GenerateResult> Generate(const Qwen2VLModel& model, const std::vector<int32_t>& prompt_ids,
                                  const std::vector<ImageInput>& images, const GenerateOptions& options,
                                  ThreadPool* pool, const TokenCallback& on_token) {
  const ModelConfig& cfg = model.config();
  const int64_t H = cfg.text.hidden_size, V = cfg.text.vocab_size;
  // The model's kernels on pool, their scratch kept across the steps of this generation.
  const kernels::KernelWorkspace ctx(model.kernel_config(), pool);
  if (prompt_ids.empty()) return InvalidArgumentError("empty prompt");
  if (static_cast<int64_t>(prompt_ids.size()) > options.max_prompt_tokens) {
    return ResourceExhaustedError("prompt of " + std::to_string(prompt_ids.size()) +
                                  " tokens exceeds the limit of " +
                                  std::to_string(options.max_prompt_tokens));
  }
  if (options.max_new_tokens < 0) return InvalidArgumentError("max_new_tokens must be >= 0");
  GenerateResult res;
  res.prompt_tokens = static_cast<int64_t>(prompt_ids.size());

  // Vision: all images of the request in one packed pass.
  double t0 = Now();
  std::vector<ImageGrid> grids;
  std::vector<float> packed;
  int64_t patches = 0;
  for (const ImageInput& im : images) {
    const int64_t pd = cfg.vision.patch_dim();
    if (static_cast<int64_t>(im.pixel_values.size()) != im.grid.num_patches() * pd) {
      return InvalidArgumentError("pixel_values size does not match the image grid");
    }
    grids.push_back(im.grid);
    packed.insert(packed.end(), im.pixel_values.begin(), im.pixel_values.end());
    patches += im.grid.num_patches();
  }
  std::vector<float> image_embeds;
  if (!images.empty()) {
    MINERU_ASSIGN_OR_RETURN(image_embeds, model.vision().Encode(packed.data(), patches, grids, ctx));
  }
  res.vision_s = Now() - t0;

  MINERU_ASSIGN_OR_RETURN(
      MropePositions pos,
      ComputeMropePositions(prompt_ids, grids, cfg.vision.spatial_merge_size, cfg.image_token_id));
  MINERU_ASSIGN_OR_RETURN(std::vector<float> embeds, model.BuildInputEmbeddings(prompt_ids, image_embeds));

  t0 = Now();
  const Decoder& dec = model.decoder();
  KvCache cache(model.default_kv_type());
  const int64_t n = static_cast<int64_t>(prompt_ids.size());
  std::vector<float> hidden(n * H);
  dec.Forward(embeds.data(), n, pos.t.data(), pos.h.data(), pos.w.data(), &cache, hidden.data(), ctx);
  std::vector<float> logits(V);
  dec.Logits(hidden.data() + (n - 1) * H, 1, logits.data(), ctx);
  res.prefill_s = Now() - t0;

  t0 = Now();
  const std::vector<int32_t>& stops = options.stop_ids.empty() ? cfg.eos_token_ids : options.stop_ids;
  SequenceSampler sampler(options.sampling, prompt_ids);
  int64_t next_pos = pos.next_position;
  std::vector<float> emb(H), h1(H);
  res.finish_reason = FinishReason::kLength;
  for (int step = 0; step < options.max_new_tokens; ++step) {
    const int32_t tok = sampler.Sample(logits.data(), static_cast<int32_t>(V));
    sampler.Accept(tok);
    res.ids.push_back(tok);
    if (on_token && !on_token(tok)) {
      res.finish_reason = FinishReason::kCancelled;
      break;
    }
    if (!options.ignore_eos && std::find(stops.begin(), stops.end(), tok) != stops.end()) {
      res.finish_reason = FinishReason::kStop;
      break;
    }
    if (step + 1 == options.max_new_tokens) break;
    dec.Embed(&tok, 1, emb.data(), ctx.config());
    const int64_t p = next_pos++;
    dec.Forward(emb.data(), 1, &p, &p, &p, &cache, h1.data(), ctx);
    dec.Logits(h1.data(), 1, logits.data(), ctx);
  }
  res.decode_s = Now() - t0;
  return res;
}

}  // namespace mineru
