// ModelWeights::LoadGguf — the parameters of a GGUF pair as views into the two mappings
// (names and layouts: model/gguf_model.h).
#include <cstring>

#include "base/bf16.h"
#include "kernels/quant.h"
#include "model/weights.h"

namespace mineru {
namespace {

// Looks tensors up by their GGUF names and checks their shapes (given in torch order) and types.
class GgufSource {
 public:
  explicit GgufSource(const GgufFile& f) : f_(f) {}

  StatusOr<const GgufTensor*> Get(const std::string& name, std::vector<int64_t> torch_shape) const {
    const GgufTensor* t = f_.FindTensor(name);
    if (!t) return NotFoundError(f_.path() + ": missing tensor '" + name + "'");
    std::vector<int64_t> want(torch_shape.rbegin(), torch_shape.rend());
    if (t->ne != want) {
      GgufTensor w;
      w.ne = want;
      return InvalidArgumentError(f_.path() + ": tensor '" + name + "' has shape " + t->ShapeString() +
                                  ", the model's metadata says " + w.ShapeString());
    }
    return t;
  }

  // A [rows, cols] matrix used in place: F32/F16/BF16 as dense views, Q8_0/Q4_0 as quantized ones.
  StatusOr<WeightView> Matrix(const std::string& name, int64_t rows, int64_t cols) const {
    MINERU_ASSIGN_OR_RETURN(const GgufTensor* t, Get(name, {rows, cols}));
    switch (static_cast<GgmlType>(t->type)) {
      case GgmlType::kF32:
        return WeightView{DType::kF32, t->data, rows, cols};
      case GgmlType::kF16:
        return WeightView{DType::kF16, t->data, rows, cols};
      case GgmlType::kBF16:
        return WeightView{DType::kBF16, t->data, rows, cols};
      case GgmlType::kQ8_0:
        return kernels::QuantizedView(QuantType::kQ8_0, t->data, rows, cols);
      case GgmlType::kQ4_0:
        return kernels::QuantizedView(QuantType::kQ4_0, t->data, rows, cols);
      default:
        return Unsupported(*t);
    }
  }

  // A small tensor widened to f32 (norms, biases, the patch kernel).
  StatusOr<std::vector<float>> Floats(const std::string& name, std::vector<int64_t> torch_shape) const {
    MINERU_ASSIGN_OR_RETURN(const GgufTensor* t, Get(name, std::move(torch_shape)));
    const size_t n = static_cast<size_t>(t->rows() * t->cols());
    std::vector<float> out(n);
    switch (static_cast<GgmlType>(t->type)) {
      case GgmlType::kF32:
        std::memcpy(out.data(), t->data, n * 4);
        return out;
      case GgmlType::kF16:
      case GgmlType::kBF16: {
        const bool f16 = t->type == static_cast<uint32_t>(GgmlType::kF16);
        for (size_t i = 0; i < n; ++i) {
          uint16_t h;
          std::memcpy(&h, t->data + 2 * i, 2);
          out[i] = f16 ? F16ToF32(h) : Bf16ToF32(h);
        }
        return out;
      }
      default:
        return Unsupported(*t);
    }
  }
  StatusOr<std::vector<float>> Vector(const std::string& name, int64_t n) const { return Floats(name, {n}); }

 private:
  Status Unsupported(const GgufTensor& t) const {
    return InvalidArgumentError(f_.path() + ": tensor '" + t.name + "' is " + GgmlTypeName(t.type) +
                                ", which mineru-cpp does not run (F32, F16, BF16, Q8_0, Q4_0)");
  }
  const GgufFile& f_;
};

// The Conv3d kernel [E, C, T, P, P] (flattened to [E, C*T*P*P]) from its per-frame halves
// [E, C, P, P] (v.patch_embd.weight is frame 0, .weight.1 frame 1), as f32.
StatusOr<std::vector<float>> PatchKernel(const GgufSource& src, const VisionConfig& vc) {
  const int64_t E = vc.embed_dim, C = vc.in_channels, T = vc.temporal_patch_size, P = vc.patch_size;
  if (T != 2)
    return InvalidArgumentError("GGUF patch kernels are stored as 2 frames; temporal_patch_size is " +
                                std::to_string(T));
  std::vector<float> out(static_cast<size_t>(E * C * T * P * P));
  for (int64_t t = 0; t < T; ++t) {
    const std::string name = t == 0 ? "v.patch_embd.weight" : "v.patch_embd.weight.1";
    MINERU_ASSIGN_OR_RETURN(std::vector<float> half, src.Floats(name, {E, C, P, P}));
    for (int64_t e = 0; e < E; ++e) {
      for (int64_t c = 0; c < C; ++c) {
        const float* from = &half[static_cast<size_t>(((e * C) + c) * P * P)];
        float* to = &out[static_cast<size_t>((((e * C) + c) * T + t) * P * P)];
        std::memcpy(to, from, sizeof(float) * P * P);
      }
    }
  }
  return out;
}

size_t ViewBytes(const WeightView& v) {
  if (v.quantized()) return kernels::QuantizedRowBytes(v.quant, v.cols) * v.rows;
  return DTypeSize(v.dtype) * v.rows * v.cols;
}

// q, k, v (each [E, E], one type) as the fused qkv [3E, E] of the vision blocks: in place when the
// file stores them back to back (the converter writes them in that order), else copied once.
StatusOr<WeightView> FuseQkv(const WeightView& q, const WeightView& k, const WeightView& v, ModelWeights* w) {
  if (q.dtype != k.dtype || q.dtype != v.dtype || q.quant != k.quant || q.quant != v.quant) {
    return InvalidArgumentError("the vision attn_q/attn_k/attn_v tensors have different types");
  }
  WeightView fused = q;
  fused.rows = q.rows + k.rows + v.rows;
  const size_t bytes = ViewBytes(q);
  const auto* qp = static_cast<const uint8_t*>(q.data);
  if (static_cast<const uint8_t*>(k.data) == qp + bytes &&
      static_cast<const uint8_t*>(v.data) == qp + 2 * bytes) {
    return fused;
  }
  std::unique_ptr<uint8_t[]> copy(new uint8_t[3 * bytes]);
  std::memcpy(copy.get(), q.data, bytes);
  std::memcpy(copy.get() + bytes, k.data, bytes);
  std::memcpy(copy.get() + 2 * bytes, v.data, bytes);
  fused.data = copy.get();
  w->AdoptBytes(std::move(copy));
  return fused;
}

StatusOr<VisionBlockWeights> VisionBlock(const GgufSource& src, const VisionConfig& vc, int i,
                                         ModelWeights* w) {
  const std::string p = "v.blk." + std::to_string(i) + ".";
  const int64_t E = vc.embed_dim, M = vc.mlp_dim;
  VisionBlockWeights b;
  MINERU_ASSIGN_OR_RETURN(b.norm1_w, src.Vector(p + "ln1.weight", E));
  MINERU_ASSIGN_OR_RETURN(b.norm1_b, src.Vector(p + "ln1.bias", E));
  MINERU_ASSIGN_OR_RETURN(b.norm2_w, src.Vector(p + "ln2.weight", E));
  MINERU_ASSIGN_OR_RETURN(b.norm2_b, src.Vector(p + "ln2.bias", E));
  MINERU_ASSIGN_OR_RETURN(WeightView q, src.Matrix(p + "attn_q.weight", E, E));
  MINERU_ASSIGN_OR_RETURN(WeightView k, src.Matrix(p + "attn_k.weight", E, E));
  MINERU_ASSIGN_OR_RETURN(WeightView v, src.Matrix(p + "attn_v.weight", E, E));
  MINERU_ASSIGN_OR_RETURN(b.qkv, FuseQkv(q, k, v, w));
  for (const char* part : {"attn_q.bias", "attn_k.bias", "attn_v.bias"}) {
    MINERU_ASSIGN_OR_RETURN(std::vector<float> bias, src.Vector(p + part, E));
    b.qkv_b.insert(b.qkv_b.end(), bias.begin(), bias.end());
  }
  MINERU_ASSIGN_OR_RETURN(b.proj, src.Matrix(p + "attn_out.weight", E, E));
  MINERU_ASSIGN_OR_RETURN(b.proj_b, src.Vector(p + "attn_out.bias", E));
  MINERU_ASSIGN_OR_RETURN(b.fc1, src.Matrix(p + "ffn_up.weight", M, E));
  MINERU_ASSIGN_OR_RETURN(b.fc1_b, src.Vector(p + "ffn_up.bias", M));
  MINERU_ASSIGN_OR_RETURN(b.fc2, src.Matrix(p + "ffn_down.weight", E, M));
  MINERU_ASSIGN_OR_RETURN(b.fc2_b, src.Vector(p + "ffn_down.bias", E));
  return b;
}

Status LoadVision(const GgufSource& src, const VisionConfig& vc, ModelWeights* w) {
  const int64_t E = vc.embed_dim, ME = E * vc.merge_unit();
  MINERU_ASSIGN_OR_RETURN(std::vector<float> kernel, PatchKernel(src, vc));
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[kernel.size() * sizeof(float)]);
  std::memcpy(bytes.get(), kernel.data(), kernel.size() * sizeof(float));
  w->vision.patch_embed = WeightView{DType::kF32, bytes.get(), E, static_cast<int64_t>(vc.patch_dim())};
  w->AdoptBytes(std::move(bytes));
  for (int i = 0; i < vc.depth; ++i) {
    MINERU_ASSIGN_OR_RETURN(VisionBlockWeights b, VisionBlock(src, vc, i, w));
    w->vision.blocks.push_back(std::move(b));
  }
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_ln_w, src.Vector("v.post_ln.weight", E));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_ln_b, src.Vector("v.post_ln.bias", E));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_fc1, src.Matrix("mm.0.weight", ME, ME));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_fc1_b, src.Vector("mm.0.bias", ME));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_fc2, src.Matrix("mm.2.weight", vc.out_hidden_size, ME));
  MINERU_ASSIGN_OR_RETURN(w->vision.merger_fc2_b, src.Vector("mm.2.bias", vc.out_hidden_size));
  return Status::Ok();
}

StatusOr<DecoderLayerWeights> TextLayer(const GgufSource& src, const TextConfig& tc, int i) {
  // Hd: hidden width, QD/KD: query and key/value widths (heads * head_dim), I: MLP width.
  const int64_t Hd = tc.hidden_size, I = tc.intermediate_size;
  const int64_t QD = int64_t(tc.num_heads) * tc.head_dim, KD = int64_t(tc.num_kv_heads) * tc.head_dim;
  const std::string p = "blk." + std::to_string(i) + ".";
  DecoderLayerWeights l;
  MINERU_ASSIGN_OR_RETURN(l.input_norm, src.Vector(p + "attn_norm.weight", Hd));
  MINERU_ASSIGN_OR_RETURN(l.post_attn_norm, src.Vector(p + "ffn_norm.weight", Hd));
  MINERU_ASSIGN_OR_RETURN(l.q, src.Matrix(p + "attn_q.weight", QD, Hd));
  MINERU_ASSIGN_OR_RETURN(l.k, src.Matrix(p + "attn_k.weight", KD, Hd));
  MINERU_ASSIGN_OR_RETURN(l.v, src.Matrix(p + "attn_v.weight", KD, Hd));
  MINERU_ASSIGN_OR_RETURN(l.o, src.Matrix(p + "attn_output.weight", Hd, QD));
  MINERU_ASSIGN_OR_RETURN(l.q_b, src.Vector(p + "attn_q.bias", QD));
  MINERU_ASSIGN_OR_RETURN(l.k_b, src.Vector(p + "attn_k.bias", KD));
  MINERU_ASSIGN_OR_RETURN(l.v_b, src.Vector(p + "attn_v.bias", KD));
  MINERU_ASSIGN_OR_RETURN(l.gate, src.Matrix(p + "ffn_gate.weight", I, Hd));
  MINERU_ASSIGN_OR_RETURN(l.up, src.Matrix(p + "ffn_up.weight", I, Hd));
  MINERU_ASSIGN_OR_RETURN(l.down, src.Matrix(p + "ffn_down.weight", Hd, I));
  return l;
}

Status LoadText(const GgufSource& src, const TextConfig& tc, ModelWeights* w) {
  const int64_t Hd = tc.hidden_size, V = tc.vocab_size;
  MINERU_ASSIGN_OR_RETURN(w->text.embed_tokens, src.Matrix("token_embd.weight", V, Hd));
  w->stored_dtype = w->text.embed_tokens.dtype;
  for (int i = 0; i < tc.num_layers; ++i) {
    MINERU_ASSIGN_OR_RETURN(DecoderLayerWeights l, TextLayer(src, tc, i));
    w->text.layers.push_back(std::move(l));
  }
  MINERU_ASSIGN_OR_RETURN(w->text.final_norm, src.Vector("output_norm.weight", Hd));
  if (tc.tie_word_embeddings) {
    w->text.lm_head = w->text.embed_tokens;
    w->tied_lm_head = true;
  } else {
    MINERU_ASSIGN_OR_RETURN(w->text.lm_head, src.Matrix("output.weight", V, Hd));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<ModelWeights>> ModelWeights::LoadGguf(std::unique_ptr<GgufFile> lm,
                                                               std::unique_ptr<GgufFile> mmproj,
                                                               const ModelConfig& cfg) {
  auto w = std::make_unique<ModelWeights>();
  MINERU_RETURN_IF_ERROR(LoadVision(GgufSource(*mmproj), cfg.vision, w.get()));
  MINERU_RETURN_IF_ERROR(LoadText(GgufSource(*lm), cfg.text, w.get()));
  w->gguf_files_.push_back(std::move(lm));
  w->gguf_files_.push_back(std::move(mmproj));
  return w;
}

}  // namespace mineru
