// model/config.h — the Qwen2-VL / MinerU2.5 configuration (config.json + preprocessor_config.json).
//
// Accepts the flat on-disk form (text fields at the root, vision_config nested) and the newer
// nested form (text fields under text_config); in_chans or in_channels; rope_scaling with
// mrope_section; rope_theta at the root, in rope_scaling or in rope_parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace mineru {

struct VisionConfig {
  int depth = 0;
  int embed_dim = 0;
  int num_heads = 0;
  int mlp_dim = 0;  // embed_dim * mlp_ratio
  int in_channels = 3;
  int patch_size = 14;
  int spatial_merge_size = 2;
  int temporal_patch_size = 2;
  int out_hidden_size = 0;  // merger output = text hidden size
  float layer_norm_eps = 1e-6f;
  std::string hidden_act = "quick_gelu";

  int head_dim() const { return embed_dim / num_heads; }
  int patch_dim() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
  int merge_unit() const { return spatial_merge_size * spatial_merge_size; }
};

struct TextConfig {
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 1000000.0;
  std::vector<int> mrope_section;  // sums to head_dim / 2
  bool tie_word_embeddings = false;
  int max_position_embeddings = 32768;
};

struct ModelConfig {
  VisionConfig vision;
  TextConfig text;
  int32_t image_token_id = 151655;
  int32_t video_token_id = 151656;
  int32_t vision_start_token_id = 151652;
  int32_t vision_end_token_id = 151653;
  int32_t bos_token_id = 151643;
  std::vector<int32_t> eos_token_ids;  // generation stops on any of these
  std::string torch_dtype;

  // Checks internal consistency (divisibility, section sums, positive sizes).
  Status Validate() const;
};

StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text);
StatusOr<ModelConfig> LoadModelConfig(const std::string& path);

struct ImageProcessorConfig {
  int64_t min_pixels = 3136;
  int64_t max_pixels = 1605632;
  int patch_size = 14;
  int merge_size = 2;
  int temporal_patch_size = 2;
  float image_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
  float image_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
  float rescale_factor = 1.0f / 255.0f;
};

StatusOr<ImageProcessorConfig> ParseImageProcessorConfig(const std::string& json_text);
StatusOr<ImageProcessorConfig> LoadImageProcessorConfig(const std::string& path);

}  // namespace mineru
