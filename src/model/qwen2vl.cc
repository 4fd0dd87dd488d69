#include "model/qwen2vl.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "base/mapped_file.h"
#include "model/quantize.h"

namespace mineru {

namespace {

std::string BaseName(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// A string field of a small JSON file in `dir`; "" when absent or malformed.
std::string JsonString(const std::string& path, const char* key) {
  auto text = ReadFileToString(path, 16u << 20);
  if (!text.ok()) return "";
  nlohmann::json j;
  if (!ParseJson(*text, {}, &j).ok() || !j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// Which checkpoint a safetensors folder holds, as MinerU names it (no owner): the repository
// `mineru-cpp download` recorded (download/download.h, kDownloadRecord), else config.json's
// _name_or_path, else the folder's name.
std::string CheckpointName(const std::string& dir) {
  std::string name = JsonString(dir + "/mineru-cpp-download.json", "repo");
  if (name.empty()) name = JsonString(dir + "/config.json", "_name_or_path");
  // A local path in _name_or_path says nothing about the checkpoint.
  if (name.empty() || name[0] == '/' || name[0] == '.') return BaseName(dir);
  return BaseName(name);  // "opendatalab/MinerU2.5-Pro-2605-1.2B" -> the checkpoint's own name
}

}  // namespace

Status Qwen2VLModel::LoadSafetensors(const ModelLoadOptions& opt) {
  MINERU_ASSIGN_OR_RETURN(config_, LoadModelConfig(dir_ + "/config.json"));
  const std::string pp = dir_ + "/preprocessor_config.json";
  if (FileExists(pp)) {
    MINERU_ASSIGN_OR_RETURN(image_config_, LoadImageProcessorConfig(pp));
  }
  const auto& vc = config_.vision;
  if (image_config_.patch_size != vc.patch_size || image_config_.merge_size != vc.spatial_merge_size ||
      image_config_.temporal_patch_size != vc.temporal_patch_size) {
    return InvalidArgumentError(pp + ": patch/merge sizes disagree with config.json");
  }
  MINERU_ASSIGN_OR_RETURN(weights_, ModelWeights::Load(dir_, config_));
  name_ = CheckpointName(dir_);
  return Status::Ok();
}

Status Qwen2VLModel::LoadGguf(const ModelLoadOptions& opt) {
  MINERU_ASSIGN_OR_RETURN(auto lm, GgufFile::Open(files_.lm_gguf));
  MINERU_ASSIGN_OR_RETURN(auto mm, GgufFile::Open(files_.mmproj_gguf));
  MINERU_ASSIGN_OR_RETURN(config_, GgufModelConfig(*lm, *mm));
  MINERU_ASSIGN_OR_RETURN(image_config_, GgufImageConfig(*mm, dir_));
  image_config_.merge_size = config_.vision.spatial_merge_size;
  if (image_config_.patch_size != config_.vision.patch_size) {
    return InvalidArgumentError(files_.mmproj_gguf + ": patch size disagrees with preprocessor_config.json");
  }
  MINERU_ASSIGN_OR_RETURN(std::string gname, lm->GetString("general.name", ""));
  name_ = gname.empty() ? BaseName(files_.lm_gguf) : gname + " (GGUF)";
  MINERU_ASSIGN_OR_RETURN(weights_, ModelWeights::LoadGguf(std::move(lm), std::move(mm), config_));
  return Status::Ok();
}

StatusOr<std::unique_ptr<Qwen2VLModel>> Qwen2VLModel::Load(const std::string& path,
                                                           const ModelLoadOptions& opt, ThreadPool* pool) {
  MINERU_ASSIGN_OR_RETURN(QuantType qt, ParseQuantName(opt.quant));
  if (!FileExists(path)) return NotFoundError("model not found: " + path);
  std::unique_ptr<Qwen2VLModel> m(new Qwen2VLModel());
  MINERU_ASSIGN_OR_RETURN(m->files_, ResolveModelFiles(path, opt.mmproj));
  m->dir_ = m->files_.dir;
  MINERU_RETURN_IF_ERROR(m->files_.gguf() ? m->LoadGguf(opt) : m->LoadSafetensors(opt));
  if (opt.min_pixels > 0) m->image_config_.min_pixels = opt.min_pixels;
  if (opt.max_pixels > 0) m->image_config_.max_pixels = opt.max_pixels;
  if (m->image_config_.min_pixels > m->image_config_.max_pixels) {
    return InvalidArgumentError("the minimum pixel budget exceeds the maximum");
  }
  m->kernel_config_ = opt.kernels;
  const kernels::KernelWorkspace load(opt.kernels, pool);
  MINERU_RETURN_IF_ERROR(QuantizeWeights(m->weights_.get(), qt, load));
  m->vision_ = std::make_unique<VisionEncoder>(m->config_.vision, m->weights_->vision);
  m->decoder_ = std::make_unique<Decoder>(m->config_.text, m->weights_->text);
  return m;
}

StatusOr<std::vector<float>> Qwen2VLModel::BuildInputEmbeddings(
    const std::vector<int32_t>& ids, const std::vector<float>& image_embeds) const {
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
      if (next_image_row >= image_rows)
        return InvalidArgumentError("more image tokens than image embeddings");
      std::memcpy(&out[i * H], &image_embeds[next_image_row * H], sizeof(float) * H);
      ++next_image_row;
    } else {
      decoder_->Embed(&id, 1, &out[i * H], kernel_config_);
    }
  }
  if (next_image_row != image_rows) return InvalidArgumentError("fewer image tokens than image embeddings");
  return out;
}

}  // namespace mineru
