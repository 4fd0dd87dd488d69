#include "model/config.h"

#include <initializer_list>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "base/mapped_file.h"

namespace mineru {
namespace {

using Json = nlohmann::json;

// Reads an integer field; `required` fields that are absent are an error.
Status GetInt(const Json& j, const char* key, int* out, bool required, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) return InvalidArgumentError(where + " is missing the field '" + key + "'");
    return Status::Ok();
  }
  const Json& v = j[key];
  if (!v.is_number_integer()) return InvalidArgumentError(where + ": '" + key + "' must be an integer");
  int64_t x = v.get<int64_t>();
  if (x < 0 || x > (int64_t(1) << 31) - 1)
    return InvalidArgumentError(where + ": '" + key + "' out of range");
  *out = static_cast<int>(x);
  return Status::Ok();
}

Status GetFloat(const Json& j, const char* key, double* out, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return Status::Ok();
  if (!j[key].is_number()) return InvalidArgumentError(where + ": '" + key + "' must be a number");
  *out = j[key].get<double>();
  return Status::Ok();
}

Status ParseVision(const Json& v, VisionConfig* c) {
  const std::string w = "config.json vision_config";
  MINERU_RETURN_IF_ERROR(GetInt(v, "depth", &c->depth, true, w));
  c->embed_dim = 0;
  MINERU_RETURN_IF_ERROR(GetInt(v, "embed_dim", &c->embed_dim, true, w));
  MINERU_RETURN_IF_ERROR(GetInt(v, "num_heads", &c->num_heads, true, w));
  int ratio = 4;
  if (v.contains("mlp_ratio") && v["mlp_ratio"].is_number()) {
    double r = v["mlp_ratio"].get<double>();
    if (r <= 0 || r > 64) return InvalidArgumentError(w + ": bad mlp_ratio");
    c->mlp_dim = static_cast<int>(c->embed_dim * r);
  } else {
    c->mlp_dim = c->embed_dim * ratio;
  }
  if (v.contains("in_channels")) {
    MINERU_RETURN_IF_ERROR(GetInt(v, "in_channels", &c->in_channels, true, w));
  } else {
    MINERU_RETURN_IF_ERROR(GetInt(v, "in_chans", &c->in_channels, false, w));
  }
  MINERU_RETURN_IF_ERROR(GetInt(v, "patch_size", &c->patch_size, false, w));
  MINERU_RETURN_IF_ERROR(GetInt(v, "spatial_merge_size", &c->spatial_merge_size, false, w));
  MINERU_RETURN_IF_ERROR(GetInt(v, "temporal_patch_size", &c->temporal_patch_size, false, w));
  MINERU_RETURN_IF_ERROR(GetInt(v, "hidden_size", &c->out_hidden_size, false, w));
  if (v.contains("hidden_act") && v["hidden_act"].is_string())
    c->hidden_act = v["hidden_act"].get<std::string>();
  return Status::Ok();
}

// The text model's sizes and rms_norm_eps. `text` is the nested text_config, or `root` itself (the
// on-disk v4 form); a field in `text` wins over the same field in `root`.
Status ParseTextSizes(const Json& root, const Json* text, TextConfig* t) {
  const std::string w = "config.json";
  auto get_text_int = [&](const char* key, int* out, bool required) -> Status {
    if (text->contains(key)) return GetInt(*text, key, out, required, w);
    return GetInt(root, key, out, required, w);
  };
  MINERU_RETURN_IF_ERROR(get_text_int("vocab_size", &t->vocab_size, true));
  MINERU_RETURN_IF_ERROR(get_text_int("hidden_size", &t->hidden_size, true));
  MINERU_RETURN_IF_ERROR(get_text_int("intermediate_size", &t->intermediate_size, true));
  MINERU_RETURN_IF_ERROR(get_text_int("num_hidden_layers", &t->num_layers, true));
  MINERU_RETURN_IF_ERROR(get_text_int("num_attention_heads", &t->num_heads, true));
  t->num_kv_heads = t->num_heads;
  MINERU_RETURN_IF_ERROR(get_text_int("num_key_value_heads", &t->num_kv_heads, false));
  MINERU_RETURN_IF_ERROR(get_text_int("max_position_embeddings", &t->max_position_embeddings, false));
  if (t->num_heads > 0) t->head_dim = t->hidden_size / t->num_heads;
  double eps = t->rms_norm_eps;
  MINERU_RETURN_IF_ERROR(GetFloat(root, "rms_norm_eps", &eps, w));
  if (text != &root) MINERU_RETURN_IF_ERROR(GetFloat(*text, "rms_norm_eps", &eps, w));
  t->rms_norm_eps = static_cast<float>(eps);
  return Status::Ok();
}

// rope_theta and mrope_section, which live in several places depending on the writer: the root,
// the text config, and its first rope_scaling / rope_parameters object (later places win).
Status ParseRope(const Json& root, const Json* text, TextConfig* t) {
  const std::string w = "config.json";
  const Json* rope = nullptr;
  for (const Json* holder : std::initializer_list<const Json*>{text, &root}) {
    for (const char* key : {"rope_scaling", "rope_parameters"}) {
      if (!rope && holder->contains(key) && (*holder)[key].is_object()) rope = &(*holder)[key];
    }
  }
  MINERU_RETURN_IF_ERROR(GetFloat(root, "rope_theta", &t->rope_theta, w));
  if (text != &root) MINERU_RETURN_IF_ERROR(GetFloat(*text, "rope_theta", &t->rope_theta, w));
  if (rope) {
    MINERU_RETURN_IF_ERROR(GetFloat(*rope, "rope_theta", &t->rope_theta, w));
    if (rope->contains("mrope_section") && (*rope)["mrope_section"].is_array()) {
      for (const auto& s : (*rope)["mrope_section"]) {
        if (!s.is_number_integer())
          return InvalidArgumentError("config.json: mrope_section must hold integers");
        t->mrope_section.push_back(s.get<int>());
      }
    }
  }
  if (t->mrope_section.empty())
    return InvalidArgumentError("config.json is missing rope_scaling.mrope_section");
  return Status::Ok();
}

// The special token ids (root level; absent ones keep their defaults) and eos_token_id (one or a list).
Status ParseTokenIds(const Json& root, ModelConfig* c) {
  const std::string w = "config.json";
  auto get_id = [&](const char* key, int32_t* out) -> Status {
    int v = *out;
    MINERU_RETURN_IF_ERROR(GetInt(root, key, &v, false, w));
    *out = v;
    return Status::Ok();
  };
  MINERU_RETURN_IF_ERROR(get_id("image_token_id", &c->image_token_id));
  MINERU_RETURN_IF_ERROR(get_id("video_token_id", &c->video_token_id));
  MINERU_RETURN_IF_ERROR(get_id("vision_start_token_id", &c->vision_start_token_id));
  MINERU_RETURN_IF_ERROR(get_id("vision_end_token_id", &c->vision_end_token_id));
  MINERU_RETURN_IF_ERROR(get_id("bos_token_id", &c->bos_token_id));
  if (root.contains("eos_token_id")) {
    const Json& e = root["eos_token_id"];
    if (e.is_number_integer()) c->eos_token_ids.push_back(e.get<int32_t>());
    if (e.is_array()) {
      for (const auto& x : e) {
        if (x.is_number_integer()) c->eos_token_ids.push_back(x.get<int32_t>());
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status ModelConfig::Validate() const {
  const VisionConfig& v = vision;
  const TextConfig& t = text;
  if (v.depth <= 0 || v.embed_dim <= 0 || v.num_heads <= 0 || v.embed_dim % v.num_heads != 0) {
    return InvalidArgumentError("config.json: bad vision depth/embed_dim/num_heads");
  }
  if (v.head_dim() % 4 != 0)
    return InvalidArgumentError("config.json: vision head_dim must be a multiple of 4");
  if (v.patch_size <= 0 || v.spatial_merge_size <= 0 || v.temporal_patch_size <= 0 || v.in_channels != 3) {
    return InvalidArgumentError("config.json: bad vision patch/merge sizes or channels");
  }
  if (v.hidden_act != "quick_gelu") {
    return UnimplementedError("config.json: vision hidden_act '" + v.hidden_act + "' (only quick_gelu)");
  }
  if (t.vocab_size <= 0 || t.hidden_size <= 0 || t.intermediate_size <= 0 || t.num_layers <= 0 ||
      t.num_heads <= 0 || t.num_kv_heads <= 0) {
    return InvalidArgumentError("config.json: text sizes must be positive");
  }
  if (t.hidden_size % t.num_heads != 0 || t.num_heads % t.num_kv_heads != 0 || t.head_dim % 2 != 0) {
    return InvalidArgumentError("config.json: hidden_size/num_heads/num_key_value_heads are inconsistent");
  }
  int sum = 0;
  for (int s : t.mrope_section) {
    if (s < 0) return InvalidArgumentError("config.json: negative mrope_section entry");
    sum += s;
  }
  if (t.mrope_section.size() != 3 || sum != t.head_dim / 2) {
    return InvalidArgumentError(
        "config.json: rope_scaling.mrope_section must have 3 entries summing to head_dim/2");
  }
  if (!(t.rope_theta > 0)) return InvalidArgumentError("config.json: rope_theta must be positive");
  if (v.out_hidden_size != t.hidden_size) {
    return InvalidArgumentError("config.json: vision hidden_size must equal the text hidden_size");
  }
  for (int32_t id : {image_token_id, vision_start_token_id, vision_end_token_id}) {
    if (id < 0 || id >= t.vocab_size)
      return InvalidArgumentError("config.json: a special token id is outside the vocabulary");
  }
  return Status::Ok();
}

StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text) {
  Json root;
  if (Status s = ParseJson(json_text, {}, &root); !s.ok()) return s.WithPrefix("config.json");
  if (!root.is_object()) return InvalidArgumentError("config.json is not a JSON object");
  ModelConfig c;
  if (root.contains("model_type") && root["model_type"].is_string()) {
    const std::string mt = root["model_type"].get<std::string>();
    if (mt != "qwen2_vl")
      return UnimplementedError("config.json: model_type '" + mt + "' (expected qwen2_vl)");
  }
  if (!root.contains("vision_config") || !root["vision_config"].is_object()) {
    return InvalidArgumentError("config.json is missing the object 'vision_config'");
  }
  MINERU_RETURN_IF_ERROR(ParseVision(root["vision_config"], &c.vision));

  // Text fields: nested text_config (newer) or the root (on-disk v4 form). Nested wins.
  const Json* text = &root;
  if (root.contains("text_config") && root["text_config"].is_object()) text = &root["text_config"];
  TextConfig& t = c.text;
  MINERU_RETURN_IF_ERROR(ParseTextSizes(root, text, &t));
  MINERU_RETURN_IF_ERROR(ParseRope(root, text, &t));

  bool tie = false;
  for (const Json* holder : std::initializer_list<const Json*>{&root, text}) {
    if (holder->contains("tie_word_embeddings") && (*holder)["tie_word_embeddings"].is_boolean()) {
      tie = (*holder)["tie_word_embeddings"].get<bool>();
    }
  }
  t.tie_word_embeddings = tie;

  MINERU_RETURN_IF_ERROR(ParseTokenIds(root, &c));
  if (root.contains("torch_dtype") && root["torch_dtype"].is_string()) c.torch_dtype = root["torch_dtype"];
  if (c.vision.out_hidden_size == 0) c.vision.out_hidden_size = t.hidden_size;
  MINERU_RETURN_IF_ERROR(c.Validate());
  return c;
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  MINERU_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, 16u << 20));
  auto c = ParseModelConfig(text);
  if (!c.ok()) return c.status().WithPrefix(path);
  return c;
}

StatusOr<ImageProcessorConfig> ParseImageProcessorConfig(const std::string& json_text) {
  Json j;
  if (Status s = ParseJson(json_text, {}, &j); !s.ok()) return s.WithPrefix("preprocessor_config.json");
  if (!j.is_object()) return InvalidArgumentError("preprocessor_config.json is not a JSON object");
  ImageProcessorConfig c;
  const std::string w = "preprocessor_config.json";
  auto get_i64 = [&](const Json& o, const char* key, int64_t* out) -> Status {
    if (!o.contains(key) || o[key].is_null()) return Status::Ok();
    if (!o[key].is_number_integer() || o[key].get<int64_t>() <= 0) {
      return InvalidArgumentError(w + ": '" + key + "' must be a positive integer");
    }
    *out = o[key].get<int64_t>();
    return Status::Ok();
  };
  MINERU_RETURN_IF_ERROR(get_i64(j, "min_pixels", &c.min_pixels));
  MINERU_RETURN_IF_ERROR(get_i64(j, "max_pixels", &c.max_pixels));
  if (j.contains("size") && j["size"].is_object()) {
    const Json& s = j["size"];
    MINERU_RETURN_IF_ERROR(get_i64(s, "shortest_edge", &c.min_pixels));
    MINERU_RETURN_IF_ERROR(get_i64(s, "longest_edge", &c.max_pixels));
    MINERU_RETURN_IF_ERROR(get_i64(s, "min_pixels", &c.min_pixels));
    MINERU_RETURN_IF_ERROR(get_i64(s, "max_pixels", &c.max_pixels));
  }
  MINERU_RETURN_IF_ERROR(GetInt(j, "patch_size", &c.patch_size, false, w));
  MINERU_RETURN_IF_ERROR(GetInt(j, "merge_size", &c.merge_size, false, w));
  MINERU_RETURN_IF_ERROR(GetInt(j, "temporal_patch_size", &c.temporal_patch_size, false, w));
  for (const char* key : {"image_mean", "image_std"}) {
    if (!j.contains(key)) continue;
    const Json& a = j[key];
    if (!a.is_array() || a.size() != 3) return InvalidArgumentError(w + ": '" + key + "' must be 3 numbers");
    float* dst = std::string(key) == "image_mean" ? c.image_mean : c.image_std;
    for (int i = 0; i < 3; ++i) {
      if (!a[i].is_number()) return InvalidArgumentError(w + ": '" + key + "' must be 3 numbers");
      dst[i] = a[i].get<float>();
    }
  }
  for (float s : c.image_std) {
    if (!(s > 0)) return InvalidArgumentError(w + ": image_std must be positive");
  }
  double rf = c.rescale_factor;
  MINERU_RETURN_IF_ERROR(GetFloat(j, "rescale_factor", &rf, w));
  c.rescale_factor = static_cast<float>(rf);
  if (c.min_pixels > c.max_pixels) return InvalidArgumentError(w + ": min_pixels > max_pixels");
  if (c.patch_size <= 0 || c.merge_size <= 0 || c.temporal_patch_size <= 0) {
    return InvalidArgumentError(w + ": patch sizes must be positive");
  }
  return c;
}

StatusOr<ImageProcessorConfig> LoadImageProcessorConfig(const std::string& path) {
  MINERU_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, 1u << 20));
  auto c = ParseImageProcessorConfig(text);
  if (!c.ok()) return c.status().WithPrefix(path);
  return c;
}

}  // namespace mineru
