#include "model/weights.h"

#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "base/mapped_file.h"

namespace mineru {
namespace {

// Resolves logical names ("visual.blocks.0.norm1.weight", "model.layers.0...") to tensors in
// whichever scheme the checkpoint uses.
class TensorSource {
 public:
  void Add(const SafetensorsFile* f) {
    for (const auto& t : f->tensors()) by_name_[t.name] = &t;
    for (const auto& [k, v] : f->metadata()) meta_[k] = v;
  }
  // Detects the naming scheme from the embedding table's name.
  Status DetectScheme() {
    if (by_name_.count("model.language_model.embed_tokens.weight")) {
      text_prefix_ = "model.language_model.";
      vision_prefix_ = "model.visual.";
    } else if (by_name_.count("model.embed_tokens.weight")) {
      text_prefix_ = "model.";
      vision_prefix_ = "visual.";
    } else {
      return NotFoundError("no embed_tokens.weight in the checkpoint (is this a Qwen2-VL model?)");
    }
    return Status::Ok();
  }
  const TensorInfo* FindRaw(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  // kind: 'v' vision, 't' text, 'h' head (lm_head.*).
  StatusOr<const TensorInfo*> Get(char kind, const std::string& suffix,
                                  const std::vector<int64_t>& shape) const {
    std::string name = kind == 'v' ? vision_prefix_ + suffix : kind == 't' ? text_prefix_ + suffix : suffix;
    const TensorInfo* t = FindRaw(name);
    if (!t) return NotFoundError("missing tensor '" + name + "'");
    if (t->dtype != DType::kF32 && t->dtype != DType::kBF16 && t->dtype != DType::kF16) {
      return InvalidArgumentError("tensor '" + name + "' has unsupported dtype " + DTypeName(t->dtype));
    }
    if (t->shape != shape) {
      TensorInfo want;
      want.shape = shape;
      return InvalidArgumentError("tensor '" + name + "' has shape " + t->ShapeString() + ", config says " +
                                  want.ShapeString());
    }
    return t;
  }
  StatusOr<WeightView> Matrix(char kind, const std::string& suffix, int64_t rows, int64_t cols) const {
    // A pre-quantized matrix: U8 [rows, row_bytes] with metadata quant.<name> (model/quantize.h).
    const std::string name = kind == 'v'   ? vision_prefix_ + suffix
                             : kind == 't' ? text_prefix_ + suffix
                                           : suffix;
    auto q = meta_.find("quant." + name);
    if (q != meta_.end()) {
      const TensorInfo* t = FindRaw(name);
      if (!t) return NotFoundError("missing tensor '" + name + "'");
      QuantType qt = QuantType::kNone;
      for (QuantType c : {QuantType::kQ8_0, QuantType::kQ4_0, QuantType::kQ4_G128}) {
        if (q->second == kernels::QuantTypeName(c)) qt = c;
      }
      if (qt == QuantType::kNone)
        return InvalidArgumentError("tensor '" + name + "' has unknown format " + q->second);
      const int64_t row_bytes = static_cast<int64_t>(kernels::QuantizedRowBytes(qt, cols));
      if (t->dtype != DType::kU8 || t->shape != std::vector<int64_t>{rows, row_bytes}) {
        return InvalidArgumentError("quantized tensor '" + name + "' has shape " + t->ShapeString() +
                                    ", config says " + std::to_string(rows) + " rows of " +
                                    std::to_string(row_bytes) + " bytes");
      }
      return kernels::QuantizedView(qt, t->data, rows, cols);
    }
    MINERU_ASSIGN_OR_RETURN(const TensorInfo* t, Get(kind, suffix, {rows, cols}));
    return WeightView{t->dtype, t->data, rows, cols};
  }
  StatusOr<std::vector<float>> Vector(char kind, const std::string& suffix, int64_t n) const {
    MINERU_ASSIGN_OR_RETURN(const TensorInfo* t, Get(kind, suffix, {n}));
    return ReadAsF32(*t);
  }

 private:
  std::unordered_map<std::string, const TensorInfo*> by_name_;
  std::map<std::string, std::string> meta_;
  std::string text_prefix_, vision_prefix_;
};

StatusOr<std::vector<std::string>> ShardFiles(const std::string& dir) {
  const std::string single = dir + "/model.safetensors";
  const std::string index = dir + "/model.safetensors.index.json";
  if (FileExists(index)) {
    MINERU_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index, 64u << 20));
    nlohmann::json j;
    if (!ParseJson(text, {}, &j).ok() || !j.is_object() || !j.contains("weight_map") ||
        !j["weight_map"].is_object()) {
      return InvalidArgumentError(index + ": expected an object with 'weight_map'");
    }
    std::map<std::string, int> files;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        return InvalidArgumentError(index + ": weight_map values must be file names");
      std::string f = it.value().get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f.find("..") != std::string::npos) {
        return InvalidArgumentError(index + ": bad shard name '" + f + "'");
      }
      files[f] = 1;
    }
    std::vector<std::string> out;
    for (const auto& [f, _] : files) out.push_back(dir + "/" + f);
    if (out.empty()) return InvalidArgumentError(index + ": empty weight_map");
    return out;
  }
  if (FileExists(single)) return std::vector<std::string>{single};
  return NotFoundError("no model.safetensors or model.safetensors.index.json in " + dir);
}

}  // namespace

std::vector<const TensorInfo*> ModelWeights::tensors() const {
  std::vector<const TensorInfo*> out;
  for (const auto& f : files_) {
    for (const auto& t : f->tensors()) out.push_back(&t);
  }
  return out;
}

Status ModelWeights::CheckFiles() const {
  std::vector<const MappedFile*> mapped;
  for (const auto& f : files_) mapped.push_back(&f->file());
  for (const auto& f : gguf_files_) mapped.push_back(&f->file());
  for (const MappedFile* f : mapped) {
    Status s = f->CheckUnchanged();
    if (!s.ok()) {
      return Status(StatusCode::kUnavailable, "model file " + f->path() + " changed on disk while mapped (" +
                                                  s.message() + "); restart or reload");
    }
  }
  return Status::Ok();
}

namespace {

// The mapping of `files` (safetensors or GGUF files, each with file()) that holds all of
// [p, p + n), or null.
template <class Files>
const MappedFile* MappingHolding(const Files& files, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (const auto& f : files) {
    const MappedFile& m = f->file();
    if (b >= m.data() && n <= m.size() && b - m.data() <= static_cast<ptrdiff_t>(m.size() - n)) return &m;
  }
  return nullptr;
}

}  // namespace

bool ModelWeights::InMappedFile(const void* p, size_t n) const {
  return MappingHolding(files_, p, n) != nullptr || MappingHolding(gguf_files_, p, n) != nullptr;
}

size_t ModelWeights::ReleaseMapped(const void* p, size_t n) const {
  const MappedFile* m = MappingHolding(files_, p, n);
  if (m == nullptr) m = MappingHolding(gguf_files_, p, n);
  return m != nullptr ? m->Release(p, n) : 0;
}

StatusOr<std::unique_ptr<ModelWeights>> ModelWeights::Load(const std::string& dir, const ModelConfig& cfg) {
  auto w = std::make_unique<ModelWeights>();
  MINERU_ASSIGN_OR_RETURN(std::vector<std::string> paths, ShardFiles(dir));
  TensorSource src;
  for (const auto& p : paths) {
    MINERU_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(p));
    src.Add(f.get());
    w->files_.push_back(std::move(f));
  }
  MINERU_RETURN_IF_ERROR(src.DetectScheme());

  const VisionConfig& vc = cfg.vision;
  const TextConfig& tc = cfg.text;
  const int64_t E = vc.embed_dim, M = vc.mlp_dim, PD = vc.patch_dim(), ME = E * vc.merge_unit();
  {
    MINERU_ASSIGN_OR_RETURN(const TensorInfo* pe, src.Get('v', "patch_embed.proj.weight",
                                                          {E, vc.in_channels, vc.temporal_patch_size,
                                                           vc.patch_size, vc.patch_size}));
    w->vision.patch_embed = WeightView{pe->dtype, pe->data, E, PD};
  }
  for (int i = 0; i < vc.depth; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    VisionBlockWeights b;
    MINERU_ASSIGN_OR_RETURN(b.norm1_w, src.Vector('v', p + "norm1.weight", E));
    MINERU_ASSIGN_OR_RETURN(b.norm1_b, src.Vector('v', p + "norm1.bias", E));
    MINERU_ASSIGN_OR_RETURN(b.norm2_w, src.Vector('v', p + "norm2.weight", E));
    MINERU_ASSIGN_OR_RETURN(b.norm2_b, src.Vector('v', p + "norm2.bias", E));
    MINERU_ASSIGN_OR_RETURN(b.qkv, src.Matrix('v', p + "attn.qkv.weight", 3 * E, E));
    MINERU_ASSIGN_OR_RETURN(b.qkv_b, src.Vector('v', p + "attn.qkv.bias", 3 * E));
    MINERU_ASSIGN_OR_RETURN(b.proj, src.Matrix('v', p + "attn.proj.weight", E, E));
    MINERU_ASSIGN_OR_RETURN(b.proj_b, src.Vector('v', p + "attn.proj.bias", E));
    MINERU_ASSIGN_OR_RETURN(b.fc1, src.Matrix('v', p + "mlp.fc1.weight", M, E));
    MINERU_ASSIGN_OR_RETURN(b.fc1_b, src.Vector('v', p + "mlp.fc1.bias", M));
    MINERU_ASSIGN_OR_RETURN(b.fc2, src.Matrix('v', p + "mlp.fc2.weight", E, M));
    MINERU_ASSIGN_OR_RETURN(b.fc2_b, src.Vector('v', p + "mlp.fc2.bias", E));
    w->vision.blocks.push_back(std::move(b));
  }
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_ln_w, src.Vector('v', "merger.ln_q.weight", E));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_ln_b, src.Vector('v', "merger.ln_q.bias", E));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_fc1, src.Matrix('v', "merger.mlp.0.weight", ME, ME));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_fc1_b, src.Vector('v', "merger.mlp.0.bias", ME));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_fc2,
                          src.Matrix('v', "merger.mlp.2.weight", vc.out_hidden_size, ME));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_fc2_b, src.Vector('v', "merger.mlp.2.bias", vc.out_hidden_size));

  const int64_t Hd = tc.hidden_size, V = tc.vocab_size, I = tc.intermediate_size;
  const int64_t QD = int64_t(tc.num_heads) * tc.head_dim, KD = int64_t(tc.num_kv_heads) * tc.head_dim;
  MINERU_ASSIGN_OR_RETURN(w->text.embed_tokens, src.Matrix('t', "embed_tokens.weight", V, Hd));
  w->stored_dtype = w->text.embed_tokens.dtype;
  for (int i = 0; i < tc.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    DecoderLayerWeights l;
    MINERU_ASSIGN_OR_RETURN(l.input_norm, src.Vector('t', p + "input_layernorm.weight", Hd));
    MINERU_ASSIGN_OR_RETURN(l.post_attn_norm, src.Vector('t', p + "post_attention_layernorm.weight", Hd));
    MINERU_ASSIGN_OR_RETURN(l.q, src.Matrix('t', p + "self_attn.q_proj.weight", QD, Hd));
    MINERU_ASSIGN_OR_RETURN(l.k, src.Matrix('t', p + "self_attn.k_proj.weight", KD, Hd));
    MINERU_ASSIGN_OR_RETURN(l.v, src.Matrix('t', p + "self_attn.v_proj.weight", KD, Hd));
    MINERU_ASSIGN_OR_RETURN(l.o, src.Matrix('t', p + "self_attn.o_proj.weight", Hd, QD));
    MINERU_ASSIGN_OR_RETURN(l.q_b, src.Vector('t', p + "self_attn.q_proj.bias", QD));
    MINERU_ASSIGN_OR_RETURN(l.k_b, src.Vector('t', p + "self_attn.k_proj.bias", KD));
    MINERU_ASSIGN_OR_RETURN(l.v_b, src.Vector('t', p + "self_attn.v_proj.bias", KD));
    MINERU_ASSIGN_OR_RETURN(l.gate, src.Matrix('t', p + "mlp.gate_proj.weight", I, Hd));
    MINERU_ASSIGN_OR_RETURN(l.up, src.Matrix('t', p + "mlp.up_proj.weight", I, Hd));
    MINERU_ASSIGN_OR_RETURN(l.down, src.Matrix('t', p + "mlp.down_proj.weight", Hd, I));
    w->text.layers.push_back(std::move(l));
  }
  MINERU_ASSIGN_OR_RETURN(w->text.final_norm, src.Vector('t', "norm.weight", Hd));
  if (src.FindRaw("lm_head.weight")) {
    MINERU_ASSIGN_OR_RETURN(w->text.lm_head, src.Matrix('h', "lm_head.weight", V, Hd));
  } else {
    w->text.lm_head = w->text.embed_tokens;
    w->tied_lm_head = true;
  }
  return w;
}

}  // namespace mineru
