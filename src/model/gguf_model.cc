#include "model/gguf_model.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/bf16.h"
#include "base/mapped_file.h"
#include "kernels/quant.h"
#include "model/weights.h"

namespace mineru {
namespace {

bool IsDir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string DirOf(const std::string& path) {
  const size_t s = path.find_last_of('/');
  return s == std::string::npos ? "." : (s == 0 ? "/" : path.substr(0, s));
}

// "qwen2vl" (language model), "clip" (mmproj) or whatever general.architecture says.
StatusOr<std::string> GgufArchitecture(const std::string& path) {
  MINERU_ASSIGN_OR_RETURN(auto f, GgufFile::Open(path));
  return f->GetString("general.architecture");
}

StatusOr<std::vector<std::string>> GgufFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return NotFoundError("cannot list " + dir + ": " + std::strerror(errno));
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".gguf") == 0) out.push_back(dir + "/" + n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Splits the .gguf files of dir into language models and mmproj files by their architecture.
Status ClassifyGgufFiles(const std::string& dir, std::vector<std::string>* lms,
                         std::vector<std::string>* projs) {
  MINERU_ASSIGN_OR_RETURN(std::vector<std::string> files, GgufFilesIn(dir));
  for (const std::string& f : files) {
    MINERU_ASSIGN_OR_RETURN(std::string arch, GgufArchitecture(f));
    if (arch == "clip") {
      projs->push_back(f);
    } else {
      lms->push_back(f);
    }
  }
  return Status::Ok();
}

std::string JoinNames(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x.substr(x.find_last_of('/') + 1);
  return s;
}

StatusOr<ModelFiles> ResolveGgufDir(const std::string& dir, const std::string& mmproj) {
  std::vector<std::string> lms, projs;
  MINERU_RETURN_IF_ERROR(ClassifyGgufFiles(dir, &lms, &projs));
  if (lms.empty()) return NotFoundError("no config.json and no language-model .gguf in " + dir);
  if (lms.size() > 1) {
    return InvalidArgumentError("several language-model .gguf files in " + dir + " (" + JoinNames(lms) +
                                "): name one with --model DIR/FILE.gguf");
  }
  ModelFiles m{dir, lms[0], mmproj};
  if (m.mmproj_gguf.empty()) {
    if (projs.empty()) return NotFoundError("no mmproj (vision) .gguf in " + dir + ": pass --mmproj FILE");
    if (projs.size() > 1) {
      return InvalidArgumentError("several mmproj .gguf files in " + dir + " (" + JoinNames(projs) +
                                  "): pick one with --mmproj");
    }
    m.mmproj_gguf = projs[0];
  }
  return m;
}

}  // namespace

StatusOr<ModelFiles> ResolveModelFiles(const std::string& model, const std::string& mmproj) {
  if (!mmproj.empty()) {
    if (!FileExists(mmproj)) return NotFoundError("--mmproj file not found: " + mmproj);
    MINERU_ASSIGN_OR_RETURN(std::string arch, GgufArchitecture(mmproj));
    if (arch != "clip")
      return InvalidArgumentError(mmproj + " is not an mmproj file (architecture '" + arch + "')");
  }
  if (IsDir(model)) {
    if (FileExists(model + "/config.json") && mmproj.empty()) return ModelFiles{model, "", ""};
    return ResolveGgufDir(model, mmproj);
  }
  if (!FileExists(model)) return NotFoundError("model not found: " + model);
  if (!LooksLikeGguf(model)) {
    return InvalidArgumentError(model + " is neither a checkpoint folder nor a GGUF file");
  }
  MINERU_ASSIGN_OR_RETURN(std::string arch, GgufArchitecture(model));
  if (arch == "clip") {
    return InvalidArgumentError(
        model + " is the vision (mmproj) file: pass the language model as --model and this as --mmproj");
  }
  const std::string dir = DirOf(model);
  if (!mmproj.empty()) return ModelFiles{dir, model, mmproj};
  std::vector<std::string> lms, projs;
  MINERU_RETURN_IF_ERROR(ClassifyGgufFiles(dir, &lms, &projs));
  if (projs.size() != 1) {
    return NotFoundError(std::string(projs.empty() ? "no" : "more than one") + " mmproj .gguf beside " +
                         model + ": pass --mmproj FILE");
  }
  return ModelFiles{dir, model, projs[0]};
}

namespace {

// Reads an integer key that must lie in [lo, hi].
StatusOr<int> GetSize(const GgufFile& f, const std::string& key, int64_t lo, int64_t hi) {
  MINERU_ASSIGN_OR_RETURN(int64_t v, f.GetInt(key));
  if (v < lo || v > hi) {
    return InvalidArgumentError(f.path() + ": '" + key + "' = " + std::to_string(v) + " is out of range");
  }
  return static_cast<int>(v);
}

StatusOr<int32_t> TokenId(const GgufValue& tokens, std::string_view text) {
  for (size_t i = 0; i < tokens.strings.size(); ++i) {
    if (tokens.strings[i] == text) return static_cast<int32_t>(i);
  }
  return NotFoundError("the tokenizer has no '" + std::string(text) + "' token");
}

// The image and vision-boundary ids, found by name in the tokenizer's tokens. A file that
// declares no vocabulary (GgufHasNoVocabulary) keeps Qwen2-VL's ids (ModelConfig's defaults); one
// that names a tokenizer but lacks its tokens is corrupt.
Status FillVisionTokenIds(const GgufFile& lm, ModelConfig* c) {
  if (GgufHasNoVocabulary(lm)) return Status::Ok();
  const GgufValue* tokens = lm.Find("tokenizer.ggml.tokens");
  if (!tokens || tokens->strings.empty())
    return InvalidArgumentError(lm.path() + ": no tokenizer.ggml.tokens");
  MINERU_ASSIGN_OR_RETURN(c->image_token_id, TokenId(*tokens, "<|image_pad|>"));
  MINERU_ASSIGN_OR_RETURN(c->video_token_id, TokenId(*tokens, "<|video_pad|>"));
  MINERU_ASSIGN_OR_RETURN(c->vision_start_token_id, TokenId(*tokens, "<|vision_start|>"));
  MINERU_ASSIGN_OR_RETURN(c->vision_end_token_id, TokenId(*tokens, "<|vision_end|>"));
  return Status::Ok();
}

Status FillTextConfig(const GgufFile& lm, TextConfig* t) {
  MINERU_ASSIGN_OR_RETURN(std::string arch, lm.GetString("general.architecture"));
  if (arch != "qwen2vl") {
    return InvalidArgumentError(lm.path() + ": architecture '" + arch + "' is not supported (qwen2vl)");
  }
  const std::string p = "qwen2vl.";
  MINERU_ASSIGN_OR_RETURN(t->num_layers, GetSize(lm, p + "block_count", 1, 1024));
  MINERU_ASSIGN_OR_RETURN(t->hidden_size, GetSize(lm, p + "embedding_length", 1, 1 << 16));
  MINERU_ASSIGN_OR_RETURN(t->intermediate_size, GetSize(lm, p + "feed_forward_length", 1, 1 << 18));
  MINERU_ASSIGN_OR_RETURN(t->num_heads, GetSize(lm, p + "attention.head_count", 1, 1024));
  MINERU_ASSIGN_OR_RETURN(t->num_kv_heads, GetSize(lm, p + "attention.head_count_kv", 1, 1024));
  MINERU_ASSIGN_OR_RETURN(int64_t ctx, lm.GetInt(p + "context_length", 32768));
  t->max_position_embeddings = static_cast<int>(std::clamp<int64_t>(ctx, 1, 1 << 24));
  if (t->hidden_size % t->num_heads != 0)
    return InvalidArgumentError(lm.path() + ": heads do not divide the width");
  t->head_dim = t->hidden_size / t->num_heads;
  MINERU_ASSIGN_OR_RETURN(double eps, lm.GetFloat(p + "attention.layer_norm_rms_epsilon", 1e-6));
  t->rms_norm_eps = static_cast<float>(eps);
  MINERU_ASSIGN_OR_RETURN(t->rope_theta, lm.GetFloat(p + "rope.freq_base", 1000000.0));
  const GgufValue* sec = lm.Find(p + "rope.dimension_sections");
  if (!sec || sec->ints.empty() || sec->ints.size() > 4) {
    return InvalidArgumentError(lm.path() + ": '" + p +
                                "rope.dimension_sections' must hold up to 4 integers");
  }
  for (size_t i = 0; i < sec->ints.size(); ++i) {
    if (sec->ints[i] < 0 || sec->ints[i] > 4096)
      return InvalidArgumentError(lm.path() + ": bad rope section");
    // The 4th section is the converter's padding (always 0 for Qwen2-VL).
    if (i < 3 || sec->ints[i] != 0) t->mrope_section.push_back(static_cast<int>(sec->ints[i]));
  }
  const GgufTensor* emb = lm.FindTensor("token_embd.weight");
  if (!emb || emb->ne.size() != 2) return InvalidArgumentError(lm.path() + ": no 2-D token_embd.weight");
  if (emb->ne[1] > (int64_t{1} << 24)) return InvalidArgumentError(lm.path() + ": vocabulary too large");
  t->vocab_size = static_cast<int>(emb->ne[1]);
  t->tie_word_embeddings = lm.FindTensor("output.weight") == nullptr;
  return Status::Ok();
}

Status FillVisionConfig(const GgufFile& mm, int text_hidden, VisionConfig* v) {
  MINERU_ASSIGN_OR_RETURN(std::string arch, mm.GetString("general.architecture"));
  MINERU_ASSIGN_OR_RETURN(std::string proj, mm.GetString("clip.projector_type", ""));
  if (arch != "clip" || (proj != "qwen2vl_merger" && !proj.empty())) {
    return InvalidArgumentError(mm.path() + ": not a Qwen2-VL mmproj (architecture '" + arch +
                                "', projector '" + proj + "')");
  }
  const std::string p = "clip.vision.";
  MINERU_ASSIGN_OR_RETURN(v->depth, GetSize(mm, p + "block_count", 1, 1024));
  MINERU_ASSIGN_OR_RETURN(v->embed_dim, GetSize(mm, p + "embedding_length", 1, 1 << 16));
  MINERU_ASSIGN_OR_RETURN(v->num_heads, GetSize(mm, p + "attention.head_count", 1, 1024));
  MINERU_ASSIGN_OR_RETURN(v->patch_size, GetSize(mm, p + "patch_size", 1, 1024));
  MINERU_ASSIGN_OR_RETURN(int64_t merge, mm.GetInt(p + "spatial_merge_size", 2));
  if (merge < 1 || merge > 16) return InvalidArgumentError(mm.path() + ": bad spatial_merge_size");
  v->spatial_merge_size = static_cast<int>(merge);
  MINERU_ASSIGN_OR_RETURN(double eps, mm.GetFloat(p + "attention.layer_norm_epsilon", 1e-6));
  v->layer_norm_eps = static_cast<float>(eps);
  const GgufTensor* fc1 = mm.FindTensor("v.blk.0.ffn_up.weight");
  if (!fc1 || fc1->ne.size() != 2) return InvalidArgumentError(mm.path() + ": no 2-D v.blk.0.ffn_up.weight");
  if (fc1->ne[1] > (1 << 20)) return InvalidArgumentError(mm.path() + ": MLP too wide");
  v->mlp_dim = static_cast<int>(fc1->ne[1]);
  v->out_hidden_size = text_hidden;
  MINERU_ASSIGN_OR_RETURN(int64_t pd, mm.GetInt(p + "projection_dim", text_hidden));
  if (pd != text_hidden) {
    return InvalidArgumentError(mm.path() + ": projects to " + std::to_string(pd) +
                                " but the language model is " + std::to_string(text_hidden) +
                                " wide (mismatched pair?)");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ModelConfig> GgufModelConfig(const GgufFile& lm, const GgufFile& mmproj) {
  ModelConfig c;
  MINERU_RETURN_IF_ERROR(FillTextConfig(lm, &c.text));
  MINERU_RETURN_IF_ERROR(FillVisionConfig(mmproj, c.text.hidden_size, &c.vision));
  MINERU_RETURN_IF_ERROR(FillVisionTokenIds(lm, &c));
  MINERU_ASSIGN_OR_RETURN(int64_t bos, lm.GetInt("tokenizer.ggml.bos_token_id", c.bos_token_id));
  c.bos_token_id = static_cast<int32_t>(bos);
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    if (!lm.Find(key)) continue;
    MINERU_ASSIGN_OR_RETURN(int64_t id, lm.GetInt(key));
    if (id < 0 || id >= c.text.vocab_size)
      return InvalidArgumentError(lm.path() + ": '" + key + "' is out of range");
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) == c.eos_token_ids.end()) {
      c.eos_token_ids.push_back(static_cast<int32_t>(id));
    }
  }
  c.torch_dtype = "gguf";
  MINERU_RETURN_IF_ERROR(c.Validate());
  return c;
}

StatusOr<ImageProcessorConfig> GgufImageConfig(const GgufFile& mmproj, const std::string& dir) {
  const std::string pp = dir + "/preprocessor_config.json";
  if (FileExists(pp)) return LoadImageProcessorConfig(pp);
  ImageProcessorConfig c;  // MinerU's budget: 3,136 .. 1,605,632 pixels
  for (const char* key : {"clip.vision.image_mean", "clip.vision.image_std"}) {
    const GgufValue* v = mmproj.Find(key);
    if (!v) continue;
    if (v->floats.size() != 3)
      return InvalidArgumentError(mmproj.path() + ": '" + key + "' must hold 3 numbers");
    float* dst = std::strstr(key, "mean") ? c.image_mean : c.image_std;
    for (int i = 0; i < 3; ++i) dst[i] = static_cast<float>(v->floats[i]);
  }
  for (float s : c.image_std) {
    if (!(s > 0)) return InvalidArgumentError(mmproj.path() + ": image_std must be positive");
  }
  MINERU_ASSIGN_OR_RETURN(int64_t ps, mmproj.GetInt("clip.vision.patch_size", c.patch_size));
  c.patch_size = static_cast<int>(ps);
  return c;
}

}  // namespace mineru
