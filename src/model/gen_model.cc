#include "model/gen_model.h"

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/bf16.h"
#include "base/mapped_file.h"
#include "model/config.h"

namespace mineru {
namespace {

using Json = nlohmann::json;

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
  enum Kind { kMatrix, kNormWeight, kBias, kEmbedding } kind;
};

// Names and shapes of every tensor, in the on-disk naming scheme.
std::vector<Spec> TensorSpecs(const ModelConfig& c) {
  std::vector<Spec> s;
  const auto& v = c.vision;
  const auto& t = c.text;
  const int64_t E = v.embed_dim, M = v.mlp_dim, ME = E * v.merge_unit();
  s.push_back({"visual.patch_embed.proj.weight",
               {E, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size},
               Spec::kMatrix});
  for (int i = 0; i < v.depth; ++i) {
    const std::string p = "visual.blocks." + std::to_string(i) + ".";
    s.push_back({p + "norm1.weight", {E}, Spec::kNormWeight});
    s.push_back({p + "norm1.bias", {E}, Spec::kBias});
    s.push_back({p + "norm2.weight", {E}, Spec::kNormWeight});
    s.push_back({p + "norm2.bias", {E}, Spec::kBias});
    s.push_back({p + "attn.qkv.weight", {3 * E, E}, Spec::kMatrix});
    s.push_back({p + "attn.qkv.bias", {3 * E}, Spec::kBias});
    s.push_back({p + "attn.proj.weight", {E, E}, Spec::kMatrix});
    s.push_back({p + "attn.proj.bias", {E}, Spec::kBias});
    s.push_back({p + "mlp.fc1.weight", {M, E}, Spec::kMatrix});
    s.push_back({p + "mlp.fc1.bias", {M}, Spec::kBias});
    s.push_back({p + "mlp.fc2.weight", {E, M}, Spec::kMatrix});
    s.push_back({p + "mlp.fc2.bias", {E}, Spec::kBias});
  }
  s.push_back({"visual.merger.ln_q.weight", {E}, Spec::kNormWeight});
  s.push_back({"visual.merger.ln_q.bias", {E}, Spec::kBias});
  s.push_back({"visual.merger.mlp.0.weight", {ME, ME}, Spec::kMatrix});
  s.push_back({"visual.merger.mlp.0.bias", {ME}, Spec::kBias});
  s.push_back({"visual.merger.mlp.2.weight", {v.out_hidden_size, ME}, Spec::kMatrix});
  s.push_back({"visual.merger.mlp.2.bias", {v.out_hidden_size}, Spec::kBias});
  const int64_t H = t.hidden_size, QD = int64_t(t.num_heads) * t.head_dim,
                KD = int64_t(t.num_kv_heads) * t.head_dim;
  s.push_back({"model.embed_tokens.weight", {t.vocab_size, H}, Spec::kEmbedding});
  for (int i = 0; i < t.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    s.push_back({p + "input_layernorm.weight", {H}, Spec::kNormWeight});
    s.push_back({p + "post_attention_layernorm.weight", {H}, Spec::kNormWeight});
    s.push_back({p + "self_attn.q_proj.weight", {QD, H}, Spec::kMatrix});
    s.push_back({p + "self_attn.q_proj.bias", {QD}, Spec::kBias});
    s.push_back({p + "self_attn.k_proj.weight", {KD, H}, Spec::kMatrix});
    s.push_back({p + "self_attn.k_proj.bias", {KD}, Spec::kBias});
    s.push_back({p + "self_attn.v_proj.weight", {KD, H}, Spec::kMatrix});
    s.push_back({p + "self_attn.v_proj.bias", {KD}, Spec::kBias});
    s.push_back({p + "self_attn.o_proj.weight", {H, QD}, Spec::kMatrix});
    s.push_back({p + "mlp.gate_proj.weight", {t.intermediate_size, H}, Spec::kMatrix});
    s.push_back({p + "mlp.up_proj.weight", {t.intermediate_size, H}, Spec::kMatrix});
    s.push_back({p + "mlp.down_proj.weight", {H, t.intermediate_size}, Spec::kMatrix});
  }
  s.push_back({"model.norm.weight", {H}, Spec::kNormWeight});
  if (!t.tie_word_embeddings) s.push_back({"lm_head.weight", {t.vocab_size, H}, Spec::kEmbedding});
  return s;
}

// splitmix64 -> approximately normal values (sum of 4 uniforms, variance-corrected).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float Normal() {
    uint64_t r = Next();
    float s = 0;
    for (int i = 0; i < 4; ++i) s += static_cast<float>((r >> (16 * i)) & 0xffff) / 65535.0f;
    return (s - 2.0f) * 1.7320508f;  // var of the sum of 4 U(0,1) is 1/3
  }

 private:
  uint64_t s_;
};

void AppendValue(float x, DType dtype, std::string* out) {
  if (dtype == DType::kF32) {
    out->append(reinterpret_cast<const char*>(&x), 4);
  } else {
    uint16_t h = F32ToBf16(x);  // kF16 is written through bf16 rounding then narrowed below
    if (dtype == DType::kF16) {
      // f32 -> f16 (values here are small and finite): round to nearest.
      uint32_t u;
      std::memcpy(&u, &x, 4);
      uint32_t sign = (u >> 16) & 0x8000u;
      int32_t exp = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
      uint32_t mant = u & 0x7fffffu;
      if (exp <= 0) {
        h = static_cast<uint16_t>(sign);
      } else if (exp >= 31) {
        h = static_cast<uint16_t>(sign | 0x7bff);
      } else {
        uint32_t v = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
        if ((mant & 0x1fff) > 0x1000 || ((mant & 0x1fff) == 0x1000 && (v & 1))) ++v;
        h = static_cast<uint16_t>(sign | v);
      }
    }
    out->append(reinterpret_cast<const char*>(&h), 2);
  }
}

uint64_t NumElements(const Spec& s) {
  uint64_t n = 1;
  for (int64_t d : s.shape) n *= static_cast<uint64_t>(d);
  return n;
}

// config.json, preprocessor_config.json (Qwen2-VL's defaults) and, when given, a copy of the
// tokenizer file, into out_dir (created).
Status WriteConfigFiles(const std::string& out_dir, const std::string& cfg_text,
                        const std::string& tokenizer_path) {
  MINERU_RETURN_IF_ERROR(MakeDirs(out_dir));
  MINERU_RETURN_IF_ERROR(WriteStringToFile(out_dir + "/config.json", cfg_text));
  Json pp = {{"min_pixels", 3136},
             {"max_pixels", 1605632},
             {"patch_size", 14},
             {"merge_size", 2},
             {"temporal_patch_size", 2},
             {"image_mean", {0.48145466, 0.4578275, 0.40821073}},
             {"image_std", {0.26862954, 0.26130258, 0.27577711}},
             {"resample", 3},
             {"do_rescale", true},
             {"rescale_factor", 1.0 / 255},
             {"do_normalize", true},
             {"do_convert_rgb", true},
             {"image_processor_type", "Qwen2VLImageProcessor"}};
  MINERU_RETURN_IF_ERROR(WriteStringToFile(out_dir + "/preprocessor_config.json", pp.dump(2)));
  if (!tokenizer_path.empty()) {
    MINERU_ASSIGN_OR_RETURN(std::string tok, ReadFileToString(tokenizer_path, 256u << 20));
    MINERU_RETURN_IF_ERROR(WriteStringToFile(out_dir + "/tokenizer.json", tok));
  }
  return Status::Ok();
}

// The safetensors JSON header for `specs` laid out back to back, space-padded to a multiple of 8.
std::string SafetensorsHeader(const std::vector<Spec>& specs, DType dtype, const std::string& preset) {
  const size_t es = DTypeSize(dtype);
  Json header = Json::object();
  header["__metadata__"] = {{"format", "pt"}, {"generator", "mineru-cpp gen-model"}, {"preset", preset}};
  uint64_t off = 0;
  for (const Spec& s : specs) {
    const uint64_t n = NumElements(s);
    header[s.name] = {{"dtype", DTypeName(dtype)}, {"shape", s.shape}, {"data_offsets", {off, off + n * es}}};
    off += n * es;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h += ' ';
  return h;
}

// Streams one tensor's random values to `out` in chunks of 1M values (buf is scratch): norm
// weights ~ 1 + 0.1 N, biases ~ 0.05 N, embeddings ~ 0.5 N, matrices ~ N / sqrt(fan_in).
void WriteRandomTensor(const Spec& s, DType dtype, Rng& rng, std::string& buf, std::ofstream& out) {
  const uint64_t n = NumElements(s);
  const int64_t fan_in = s.shape.size() > 1 ? static_cast<int64_t>(n / static_cast<uint64_t>(s.shape[0])) : 1;
  const float std_dev = s.kind == Spec::kEmbedding ? 0.5f : 1.0f / std::sqrt(static_cast<float>(fan_in));
  uint64_t done = 0;
  while (done < n) {
    const uint64_t chunk = std::min<uint64_t>(n - done, 1u << 20);
    buf.clear();
    for (uint64_t i = 0; i < chunk; ++i) {
      float x;
      switch (s.kind) {
        case Spec::kNormWeight:
          x = 1.0f + 0.1f * rng.Normal();
          break;
        case Spec::kBias:
          x = 0.05f * rng.Normal();
          break;
        default:
          x = std_dev * rng.Normal();
      }
      AppendValue(x, dtype, &buf);
    }
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    done += chunk;
  }
}

// model.safetensors with every tensor of `cfg`, random from o.seed: written to a .tmp file, then
// renamed into place.
Status WriteRandomSafetensors(const std::string& out_dir, const ModelConfig& cfg, const GenModelOptions& o) {
  const std::vector<Spec> specs = TensorSpecs(cfg);
  const std::string h = SafetensorsHeader(specs, o.dtype, o.preset);
  const std::string path = out_dir + "/model.safetensors";
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot write " + tmp);
  uint64_t hn = h.size();
  out.write(reinterpret_cast<const char*>(&hn), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  Rng rng(o.seed);
  std::string buf;
  for (const Spec& s : specs) WriteRandomTensor(s, o.dtype, rng, buf, out);
  out.close();
  if (!out) return IoError("write failed: " + tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return IoError("cannot rename " + tmp);
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> PresetConfigJson(const std::string& preset) {
  Json vision, text;
  if (preset == "mineru2.5") {
    vision = {{"depth", 32}, {"embed_dim", 1280}, {"hidden_size", 896}, {"num_heads", 16}, {"mlp_ratio", 4}};
    text = {{"vocab_size", 151936},
            {"hidden_size", 896},
            {"intermediate_size", 4864},
            {"num_hidden_layers", 24},
            {"num_attention_heads", 14},
            {"num_key_value_heads", 2},
            {"max_position_embeddings", 32768},
            {"tie_word_embeddings", true},
            {"mrope", {8, 12, 12}}};
  } else if (preset == "tiny") {
    vision = {{"depth", 2}, {"embed_dim", 64}, {"hidden_size", 64}, {"num_heads", 4}, {"mlp_ratio", 4}};
    text = {{"vocab_size", 151936},
            {"hidden_size", 64},
            {"intermediate_size", 128},
            {"num_hidden_layers", 2},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"max_position_embeddings", 4096},
            {"tie_word_embeddings", true},
            {"mrope", {2, 3, 3}}};
  } else {
    return InvalidArgumentError("unknown preset '" + preset + "' (known: mineru2.5, tiny)");
  }
  vision.update({{"hidden_act", "quick_gelu"},
                 {"in_chans", 3},
                 {"in_channels", 3},
                 {"patch_size", 14},
                 {"spatial_patch_size", 14},
                 {"spatial_merge_size", 2},
                 {"temporal_patch_size", 2},
                 {"model_type", "qwen2_vl"}});
  Json c = {{"architectures", {"Qwen2VLForConditionalGeneration"}},
            {"model_type", "qwen2_vl"},
            {"bos_token_id", 151643},
            {"eos_token_id", 151645},
            {"image_token_id", 151655},
            {"video_token_id", 151656},
            {"vision_start_token_id", 151652},
            {"vision_end_token_id", 151653},
            {"hidden_act", "silu"},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 1000000.0},
            {"torch_dtype", "bfloat16"},
            {"use_sliding_window", false},
            {"vision_config", vision}};
  for (const char* k :
       {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "max_position_embeddings", "tie_word_embeddings"}) {
    c[k] = text[k];
  }
  c["rope_scaling"] = {{"type", "mrope"}, {"rope_type", "default"}, {"mrope_section", text["mrope"]}};
  return c.dump(2);
}

Status GenerateRandomModel(const std::string& out_dir, const GenModelOptions& o) {
  if (o.dtype != DType::kBF16 && o.dtype != DType::kF16 && o.dtype != DType::kF32) {
    return InvalidArgumentError("gen-model dtype must be bf16, f16 or f32");
  }
  MINERU_ASSIGN_OR_RETURN(std::string cfg_text, PresetConfigJson(o.preset));
  {
    Json j = Json::parse(cfg_text);
    j["torch_dtype"] = o.dtype == DType::kF32 ? "float32" : o.dtype == DType::kF16 ? "float16" : "bfloat16";
    cfg_text = j.dump(2);
  }
  MINERU_ASSIGN_OR_RETURN(ModelConfig cfg, ParseModelConfig(cfg_text));
  MINERU_RETURN_IF_ERROR(WriteConfigFiles(out_dir, cfg_text, o.tokenizer_path));
  return WriteRandomSafetensors(out_dir, cfg, o);
}

}  // namespace mineru
