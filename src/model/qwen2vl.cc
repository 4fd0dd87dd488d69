#include "model/qwen2vl.h"

#include <cstring>

#include "base/mapped_file.h"
#include "model/quantize.h"

namespace mineru {

StatusOr<std::unique_ptr<Qwen2VLModel>> Qwen2VLModel::Load(const std::string& dir, const std::string& quant,
                                                           ThreadPool* pool) {
  MINERU_ASSIGN_OR_RETURN(QuantType qt, ParseQuantName(quant));
  if (!FileExists(dir)) return NotFoundError("model directory not found: " + dir);
  std::unique_ptr<Qwen2VLModel> m(new Qwen2VLModel());
  m->dir_ = dir;
  MINERU_ASSIGN_OR_RETURN(m->config_, LoadModelConfig(dir + "/config.json"));
  const std::string pp = dir + "/preprocessor_config.json";
  if (FileExists(pp)) {
    MINERU_ASSIGN_OR_RETURN(m->image_config_, LoadImageProcessorConfig(pp));
  }
  const auto& vc = m->config_.vision;
  if (m->image_config_.patch_size != vc.patch_size || m->image_config_.merge_size != vc.spatial_merge_size ||
      m->image_config_.temporal_patch_size != vc.temporal_patch_size) {
    return InvalidArgumentError(pp + ": patch/merge sizes disagree with config.json");
  }
  MINERU_ASSIGN_OR_RETURN(m->weights_, ModelWeights::Load(dir, m->config_));
  MINERU_RETURN_IF_ERROR(QuantizeWeights(m->weights_.get(), qt, pool));
  m->vision_ = std::make_unique<VisionEncoder>(m->config_.vision, m->weights_->vision);
  m->decoder_ = std::make_unique<Decoder>(m->config_.text, m->weights_->text);
  return m;
}

StatusOr<std::vector<float>> Qwen2VLModel::BuildInputEmbeddings(const std::vector<int32_t>& ids,
                                                                const std::vector<float>& image_embeds) const {
  const int64_t H = config_.text.hidden_size;
  std::vector<float> out(ids.size() * H);
  int64_t next_image_row = 0;
  const int64_t image_rows = static_cast<int64_t>(image_embeds.size()) / H;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= config_.text.vocab_size) {
      return InvalidArgumentError("token id " + std::to_string(id) + " is outside the vocabulary");
    }
    if (id == config_.image_token_id) {
      if (next_image_row >= image_rows) return InvalidArgumentError("more image tokens than image embeddings");
      std::memcpy(&out[i * H], &image_embeds[next_image_row * H], sizeof(float) * H);
      ++next_image_row;
    } else {
      decoder_->Embed(&id, 1, &out[i * H]);
    }
  }
  if (next_image_row != image_rows) return InvalidArgumentError("fewer image tokens than image embeddings");
  return out;
}

}  // namespace mineru
