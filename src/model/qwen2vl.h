// model/qwen2vl.h — a loaded MinerU2.5 checkpoint: configs, mapped weights, the vision encoder
// and the decoder. Stateless after Load(): many requests may use one instance concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/context.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/gguf_model.h"
#include "model/vision_encoder.h"
#include "model/weights.h"

namespace mineru {

struct ModelLoadOptions {
  // "" or "bf16" (as stored), "q8", "q4", "q4_0" (model/quantize.h); a pre-quantized checkpoint
  // (or a quantized GGUF) loads in its own format.
  std::string quant;
  // The vision .gguf when the model is named as an LM .gguf file (model/gguf_model.h).
  std::string mmproj;
  // Pixel budget overrides (0 = the checkpoint's preprocessor_config.json, else MinerU's).
  int64_t min_pixels = 0, max_pixels = 0;
  // The kernels the model is prepared for (load-time panel packing follows their target) and that
  // its users run it with (kernel_config()).
  kernels::KernelConfig kernels;
};

class Qwen2VLModel {
 public:
  // path: a checkpoint folder (config.json, preprocessor_config.json (optional: defaults),
  // model.safetensors[.index.json]) or a GGUF pair (a folder holding it, or the LM .gguf file;
  // model/gguf_model.h). pool speeds up load-time quantization (may be null); the kernels are
  // opt.kernels.
  static StatusOr<std::unique_ptr<Qwen2VLModel>> Load(const std::string& path, const ModelLoadOptions& opt,
                                                      ThreadPool* pool = nullptr);
  static StatusOr<std::unique_ptr<Qwen2VLModel>> Load(const std::string& path, const std::string& quant = "",
                                                      ThreadPool* pool = nullptr) {
    ModelLoadOptions o;
    o.quant = quant;
    return Load(path, o, pool);
  }

  const ModelConfig& config() const { return config_; }
  const ImageProcessorConfig& image_config() const { return image_config_; }
  const VisionEncoder& vision() const { return *vision_; }
  const Decoder& decoder() const { return *decoder_; }
  const ModelWeights& weights() const { return *weights_; }
  // The KV cache type to run with unless asked otherwise: fp16 when the decoder's weights are
  // quantized (their products round far more than fp16 keys and values; half the cache's memory),
  // fp32 otherwise (a bf16/fp32 model stays exact against the reference).
  KvType default_kv_type() const {
    const TextWeights& t = weights_->text;
    return !t.layers.empty() && t.layers[0].gate.quantized() ? KvType::kF16 : KvType::kF32;
  }
  // The checkpoint folder (for GGUF: the folder of the LM file).
  const std::string& dir() const { return dir_; }
  // Where the weights came from (model/gguf_model.h).
  const ModelFiles& files() const { return files_; }
  // A short name of the checkpoint for reports: GGUF general.name, else the folder's name.
  const std::string& name() const { return name_; }
  // The kernels it was loaded for (ModelLoadOptions::kernels): what its callers' KernelContexts
  // should carry (another configuration computes the same values, more slowly where the weights'
  // load-time panels do not fit it).
  const kernels::KernelConfig& kernel_config() const { return kernel_config_; }

  // Image tokens an image of this patch grid occupies in the prompt.
  int64_t ImageTokens(const ImageGrid& g) const { return g.num_patches() / config_.vision.merge_unit(); }

  // Text embeddings of ids with the image-pad rows replaced, in order, by image_embeds
  // [num_image_tokens, hidden]. Errors on ids outside the vocabulary or a count mismatch.
  StatusOr<std::vector<float>> BuildInputEmbeddings(const std::vector<int32_t>& ids,
                                                    const std::vector<float>& image_embeds) const;

 private:
  Status LoadSafetensors(const ModelLoadOptions& opt);
  Status LoadGguf(const ModelLoadOptions& opt);

  std::string dir_;
  ModelFiles files_;
  std::string name_;
  kernels::KernelConfig kernel_config_;
  ModelConfig config_;
  ImageProcessorConfig image_config_;
  std::unique_ptr<ModelWeights> weights_;
  std::unique_ptr<VisionEncoder> vision_;
  std::unique_ptr<Decoder> decoder_;
};

}  // namespace mineru
