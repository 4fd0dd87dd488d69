#include "model/gguf_export.h"

#include <cstring>

#include "base/gguf_writer.h"
#include "kernels/quant.h"

namespace mineru {
namespace {

// The ggml type and byte size of a view's rows [row0, row0 + rows).
struct Slice {
  GgmlType type;
  const void* data;
  size_t nbytes;
};

StatusOr<Slice> SliceOf(const WeightView& v, int64_t row0, int64_t rows) {
  GgmlType t;
  size_t row_bytes;
  if (v.quantized()) {
    if (v.quant == QuantType::kQ8_0)
      t = GgmlType::kQ8_0;
    else if (v.quant == QuantType::kQ4_0)
      t = GgmlType::kQ4_0;
    else
      return InvalidArgumentError(std::string(kernels::QuantTypeName(v.quant)) +
                                  " has no GGUF type (use q8 or q4)");
    row_bytes = kernels::QuantizedRowBytes(v.quant, v.cols);
  } else {
    if (v.dtype == DType::kF32)
      t = GgmlType::kF32;
    else if (v.dtype == DType::kF16)
      t = GgmlType::kF16;
    else if (v.dtype == DType::kBF16)
      t = GgmlType::kBF16;
    else
      return InvalidArgumentError(std::string("weights of type ") + DTypeName(v.dtype) +
                                  " cannot be written");
    row_bytes = DTypeSize(v.dtype) * v.cols;
  }
  return Slice{t, static_cast<const uint8_t*>(v.data) + row0 * row_bytes, row_bytes * rows};
}

Status AddMatrix(GgufWriter* w, const std::string& name, const WeightView& v, int64_t row0 = 0,
                 int64_t rows = -1) {
  if (rows < 0) rows = v.rows;
  MINERU_ASSIGN_OR_RETURN(Slice s, SliceOf(v, row0, rows));
  w->AddTensor(name, s.type, {v.cols, rows}, s.data, s.nbytes);
  return Status::Ok();
}

void AddVector(GgufWriter* w, const std::string& name, const std::vector<float>& v) {
  w->AddTensor(name, GgmlType::kF32, {static_cast<int64_t>(v.size())}, v.data(), v.size() * sizeof(float));
}

uint32_t FileType(const WeightView& v) {
  if (v.quant == QuantType::kQ8_0) return 7;
  if (v.quant == QuantType::kQ4_0) return 2;
  if (v.dtype == DType::kF16) return 1;
  if (v.dtype == DType::kBF16) return 32;
  return 0;
}

// The tokenizer.* keys in the order gguf-py writes them (SpecialVocab last: ids, then template).
void AddTokenizer(GgufWriter* w, const GgufVocab& v) {
  if (v.tokens.empty()) {
    w->AddString("tokenizer.ggml.model", "none");
  } else {
    w->AddString("tokenizer.ggml.model", "gpt2");
    w->AddString("tokenizer.ggml.pre", "qwen2");
    w->AddStringArray("tokenizer.ggml.tokens", v.tokens);
    w->AddI32Array("tokenizer.ggml.token_type", v.types);
    w->AddStringArray("tokenizer.ggml.merges", v.merges);
  }
  if (v.bos_id >= 0) w->AddU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  if (v.eos_id >= 0) w->AddU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  if (!v.chat_template.empty()) w->AddString("tokenizer.chat_template", v.chat_template);
}

Status WriteLm(const Qwen2VLModel& m, const GgufVocab& vocab, const std::string& name,
               const std::string& path) {
  const TextConfig& t = m.config().text;
  const TextWeights& tw = m.weights().text;
  GgufWriter w;
  w.AddString("general.architecture", "qwen2vl");
  w.AddString("general.type", "model");
  w.AddString("general.name", name);
  w.AddU32("qwen2vl.block_count", t.num_layers);
  w.AddU32("qwen2vl.context_length", t.max_position_embeddings);
  w.AddU32("qwen2vl.embedding_length", t.hidden_size);
  w.AddU32("qwen2vl.feed_forward_length", t.intermediate_size);
  w.AddU32("qwen2vl.attention.head_count", t.num_heads);
  w.AddU32("qwen2vl.attention.head_count_kv", t.num_kv_heads);
  std::vector<int32_t> sections(t.mrope_section.begin(), t.mrope_section.end());
  sections.resize(4, 0);
  w.AddI32Array("qwen2vl.rope.dimension_sections", sections);
  w.AddF32("qwen2vl.rope.freq_base", static_cast<float>(t.rope_theta));
  w.AddF32("qwen2vl.attention.layer_norm_rms_epsilon", t.rms_norm_eps);
  w.AddU32("general.file_type", tw.layers.empty() ? 0 : FileType(tw.layers[0].gate));
  w.AddU32("general.quantization_version", 2);
  AddTokenizer(&w, vocab);
  MINERU_RETURN_IF_ERROR(AddMatrix(&w, "token_embd.weight", tw.embed_tokens));
  for (size_t i = 0; i < tw.layers.size(); ++i) {
    const DecoderLayerWeights& l = tw.layers[i];
    const std::string p = "blk." + std::to_string(i) + ".";
    AddVector(&w, p + "attn_norm.weight", l.input_norm);
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "attn_q.weight", l.q));
    AddVector(&w, p + "attn_q.bias", l.q_b);
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "attn_k.weight", l.k));
    AddVector(&w, p + "attn_k.bias", l.k_b);
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "attn_v.weight", l.v));
    AddVector(&w, p + "attn_v.bias", l.v_b);
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "attn_output.weight", l.o));
    AddVector(&w, p + "ffn_norm.weight", l.post_attn_norm);
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "ffn_gate.weight", l.gate));
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "ffn_up.weight", l.up));
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "ffn_down.weight", l.down));
  }
  AddVector(&w, "output_norm.weight", tw.final_norm);
  // A tied head is written as output.weight too when it no longer reads the embedding table's bytes
  // (quantized at load while the embeddings stay as stored); otherwise the file's head would be the
  // unquantized table and every decode step would stream it.
  if (!m.weights().tied_lm_head || tw.lm_head.data != tw.embed_tokens.data) {
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, "output.weight", tw.lm_head));
  }
  return w.Write(path);
}

// The two frames of the Conv3d kernel [E, C, T=2, P, P] as F32 tensors [E, C, P, P].
void AddPatchKernel(GgufWriter* w, const VisionConfig& vc, const WeightView& pe,
                    const kernels::KernelConfig& config) {
  const int64_t E = vc.embed_dim, C = vc.in_channels, T = vc.temporal_patch_size, P = vc.patch_size;
  std::vector<float> row(pe.cols);
  std::string halves[2];
  for (auto& h : halves) h.resize(sizeof(float) * E * C * P * P);
  for (int64_t e = 0; e < E; ++e) {
    kernels::WeightRowToF32(pe, e, row.data(), config);
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t t = 0; t < T && t < 2; ++t) {
        std::memcpy(&halves[t][sizeof(float) * ((e * C + c) * P * P)], &row[((c * T) + t) * P * P],
                    sizeof(float) * P * P);
      }
    }
  }
  w->AddOwnedTensor("v.patch_embd.weight", GgmlType::kF32, {P, P, C, E}, std::move(halves[0]));
  w->AddOwnedTensor("v.patch_embd.weight.1", GgmlType::kF32, {P, P, C, E}, std::move(halves[1]));
}

void AddVisionKeys(GgufWriter* w, const Qwen2VLModel& m, const std::string& name) {
  const VisionConfig& vc = m.config().vision;
  w->AddString("general.architecture", "clip");
  w->AddString("general.type", "mmproj");
  w->AddString("general.name", name);
  w->AddBool("clip.has_vision_encoder", true);
  w->AddString("clip.projector_type", "qwen2vl_merger");
  w->AddU32("clip.vision.projection_dim", vc.out_hidden_size);
  w->AddU32("clip.vision.image_size", 560);
  w->AddU32("clip.vision.patch_size", vc.patch_size);
  w->AddU32("clip.vision.embedding_length", vc.embed_dim);
  w->AddU32("clip.vision.feed_forward_length", vc.mlp_dim);
  w->AddU32("clip.vision.block_count", vc.depth);
  w->AddU32("clip.vision.attention.head_count", vc.num_heads);
  w->AddF32("clip.vision.attention.layer_norm_epsilon", vc.layer_norm_eps);
  const ImageProcessorConfig& ic = m.image_config();
  w->AddF32Array("clip.vision.image_mean", {ic.image_mean[0], ic.image_mean[1], ic.image_mean[2]});
  w->AddF32Array("clip.vision.image_std", {ic.image_std[0], ic.image_std[1], ic.image_std[2]});
  const auto& blocks = m.weights().vision.blocks;
  w->AddU32("general.file_type", blocks.empty() ? 0 : FileType(blocks[0].fc1));
}

Status WriteMmproj(const Qwen2VLModel& m, const std::string& name, const std::string& path) {
  const VisionConfig& vc = m.config().vision;
  const VisionWeights& vw = m.weights().vision;
  const int64_t E = vc.embed_dim;
  GgufWriter w;
  AddVisionKeys(&w, m, name);
  AddPatchKernel(&w, vc, vw.patch_embed, m.kernel_config());
  static const char* kParts[] = {"attn_q", "attn_k", "attn_v"};
  for (size_t i = 0; i < vw.blocks.size(); ++i) {
    const VisionBlockWeights& b = vw.blocks[i];
    const std::string p = "v.blk." + std::to_string(i) + ".";
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "attn_out.weight", b.proj));
    AddVector(&w, p + "attn_out.bias", b.proj_b);
    for (int k = 0; k < 3; ++k) {
      MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + kParts[k] + ".weight", b.qkv, k * E, E));
      w.AddTensor(p + kParts[k] + ".bias", GgmlType::kF32, {E}, b.qkv_b.data() + k * E, sizeof(float) * E);
    }
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "ffn_up.weight", b.fc1));
    AddVector(&w, p + "ffn_up.bias", b.fc1_b);
    MINERU_RETURN_IF_ERROR(AddMatrix(&w, p + "ffn_down.weight", b.fc2));
    AddVector(&w, p + "ffn_down.bias", b.fc2_b);
    AddVector(&w, p + "ln1.weight", b.norm1_w);
    AddVector(&w, p + "ln1.bias", b.norm1_b);
    AddVector(&w, p + "ln2.weight", b.norm2_w);
    AddVector(&w, p + "ln2.bias", b.norm2_b);
  }
  AddVector(&w, "v.post_ln.weight", vw.merger_ln_w);
  AddVector(&w, "v.post_ln.bias", vw.merger_ln_b);
  MINERU_RETURN_IF_ERROR(AddMatrix(&w, "mm.0.weight", vw.merger_fc1));
  AddVector(&w, "mm.0.bias", vw.merger_fc1_b);
  MINERU_RETURN_IF_ERROR(AddMatrix(&w, "mm.2.weight", vw.merger_fc2));
  AddVector(&w, "mm.2.bias", vw.merger_fc2_b);
  return w.Write(path);
}

}  // namespace

Status WriteGgufPair(const Qwen2VLModel& model, const GgufVocab& vocab, const std::string& name,
                     const std::string& lm_path, const std::string& mmproj_path) {
  const bool vocabulary_less = vocab.tokens.empty() && vocab.types.empty() && vocab.merges.empty();
  if (!vocabulary_less && (static_cast<int64_t>(vocab.tokens.size()) != model.config().text.vocab_size ||
                           vocab.types.size() != vocab.tokens.size())) {
    return InvalidArgumentError("the tokenizer's " + std::to_string(vocab.tokens.size()) +
                                " entries do not cover the embedding table's " +
                                std::to_string(model.config().text.vocab_size) + " rows");
  }
  if (model.config().vision.temporal_patch_size != 2) {
    return InvalidArgumentError("GGUF stores the patch kernel as two frames; this model has " +
                                std::to_string(model.config().vision.temporal_patch_size));
  }
  MINERU_RETURN_IF_ERROR(WriteLm(model, vocab, name, lm_path));
  return WriteMmproj(model, name, mmproj_path);
}

}  // namespace mineru
