// model/weights.h — the MinerU2.5 (Qwen2-VL) parameters, mapped from safetensors.
//
// Large matrices stay in the mapped files as WeightView (f32/bf16/f16, widened on use).
// Vectors (norms, biases) are small and copied to f32 at load. Every tensor's shape and dtype
// is checked against the config before anything uses it. Both naming schemes are accepted:
//   on-disk:  visual.*, model.*, lm_head.*
//   newer:    model.visual.*, model.language_model.*, lm_head.*
// A missing lm_head.weight means tied embeddings (the real checkpoint ships none).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/gguf.h"
#include "base/safetensors.h"
#include "base/status.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "model/config.h"

namespace mineru {

struct VisionBlockWeights {
  std::vector<float> norm1_w, norm1_b, norm2_w, norm2_b;
  WeightView qkv;  // [3E, E]
  std::vector<float> qkv_b;
  WeightView proj;  // [E, E]
  std::vector<float> proj_b;
  WeightView fc1;  // [mlp, E]
  std::vector<float> fc1_b;
  WeightView fc2;  // [E, mlp]
  std::vector<float> fc2_b;
};

struct VisionWeights {
  WeightView patch_embed;  // [E, C*T*P*P] (Conv3d kernel flattened)
  std::vector<VisionBlockWeights> blocks;
  std::vector<float> merger_ln_w, merger_ln_b;
  WeightView merger_fc1;  // [4E, 4E]
  std::vector<float> merger_fc1_b;
  WeightView merger_fc2;  // [hidden, 4E]
  std::vector<float> merger_fc2_b;
};

struct DecoderLayerWeights {
  std::vector<float> input_norm, post_attn_norm;
  WeightView q, k, v, o;  // q [H*D, hidden], k/v [KV*D, hidden], o [hidden, H*D]
  std::vector<float> q_b, k_b, v_b;
  WeightView gate, up, down;  // gate/up [inter, hidden], down [hidden, inter]
};

struct TextWeights {
  WeightView embed_tokens;  // [vocab, hidden]
  std::vector<DecoderLayerWeights> layers;
  std::vector<float> final_norm;
  WeightView lm_head;  // [vocab, hidden]; == embed_tokens when tied
};

// Owns the mapped files; the views point into them.
class ModelWeights {
 public:
  ModelWeights() = default;
  // dir holds model.safetensors or model.safetensors.index.json + shards.
  static StatusOr<std::unique_ptr<ModelWeights>> Load(const std::string& dir, const ModelConfig& config);
  // A GGUF pair (model/gguf_model.h): the language model and the mmproj vision file.
  static StatusOr<std::unique_ptr<ModelWeights>> LoadGguf(std::unique_ptr<GgufFile> lm,
                                                          std::unique_ptr<GgufFile> mmproj,
                                                          const ModelConfig& config);

  // Keeps a quantized copy alive for the views that point into it (model/quantize.cc).
  void AdoptQuantized(kernels::QuantizedMatrix m) { owned_.push_back(std::move(m)); }
  // The same for packed integer panels (WeightView::panels).
  void AdoptPanels(kernels::PackedPanels p) { owned_panels_.push_back(std::move(p)); }
  // Keeps bytes alive that views point into (a GGUF tensor rebuilt in another layout).
  void AdoptBytes(std::unique_ptr<uint8_t[]> b) { owned_bytes_.push_back(std::move(b)); }
  // Every tensor of a safetensors checkpoint, in file order (for writers); empty for GGUF.
  std::vector<const TensorInfo*> tensors() const;
  // Ok while every mapped weight file is as it was loaded (MappedFile::CheckUnchanged: no page lost
  // to a truncation, same size and mtime). Otherwise Unavailable "model file X changed on disk while
  // mapped (...); restart or reload": what the mapped views read since then is garbage. Cheap (one
  // fstat per file), so the engine calls it at admission and after each step.
  Status CheckFiles() const;
  // True when [p, p + n) lies inside one of the mapped weight files (a view that reads the file in
  // place rather than a copy made at load).
  bool InMappedFile(const void* p, size_t n) const;
  // Drops the resident pages of [p, p + n) when it lies inside a mapped weight file (a dense
  // tensor just replaced by a quantized copy); bytes elsewhere are left alone. Returns the bytes
  // released.
  size_t ReleaseMapped(const void* p, size_t n) const;

  VisionWeights vision;
  TextWeights text;
  bool tied_lm_head = false;
  DType stored_dtype = DType::kF32;  // dtype of the embedding table (for reports)

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::unique_ptr<GgufFile>> gguf_files_;
  std::vector<std::unique_ptr<uint8_t[]>> owned_bytes_;
  std::vector<kernels::QuantizedMatrix> owned_;
  std::vector<kernels::PackedPanels> owned_panels_;
};

}  // namespace mineru
