#include "engine/model_tokenizer.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "base/gguf.h"
#include "base/json_parse.h"
#include "base/mapped_file.h"

namespace mineru {
namespace {

using json = nlohmann::json;

std::string DirOf(const std::string& path) {
  const size_t s = path.find_last_of('/');
  return s == std::string::npos ? "." : (s == 0 ? "/" : path.substr(0, s));
}

// Why LoadModelTokenizer(files) gave no tokenizer, as one line.
std::string NoVocabularyMessage(const ModelFiles& files) {
  if (files.gguf()) {
    return files.lm_gguf +
           " has no vocabulary (tokenizer.ggml.model is 'none'): it runs only on token ids "
           "(generate --raw-ids ... --print-ids)";
  }
  return "no tokenizer.json in " + files.dir + " (use --raw-ids for a model without one)";
}

StatusOr<json> ReadJsonFile(const std::string& path) {
  MINERU_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, 64u << 20));
  json j;
  if (Status s = ParseJson(text, {}, &j); !s.ok()) return s.WithPrefix(path);
  if (!j.is_object()) return InvalidArgumentError(path + ": the top level must be an object");
  return j;
}

// obj's "chat_template": nullopt when absent or null; a string as is; of a list of
// {name, template}, the "default" entry ("" when the list has none).
StatusOr<std::optional<std::string>> TemplateIn(const json& obj, const std::string& path) {
  auto it = obj.find("chat_template");
  if (it == obj.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (!it->is_array()) return InvalidArgumentError(path + ": chat_template must be a string or a list");
  for (const json& t : *it) {
    if (!t.is_object()) continue;
    auto name = t.find("name"), tmpl = t.find("template");
    if (name != t.end() && *name == "default" && tmpl != t.end() && tmpl->is_string()) {
      return std::optional<std::string>(tmpl->get<std::string>());
    }
  }
  return std::optional<std::string>(std::string());
}

StatusOr<std::string> FolderChatTemplate(const std::string& dir) {
  const std::string config = dir + "/tokenizer_config.json";
  if (FileExists(config)) {
    MINERU_ASSIGN_OR_RETURN(json j, ReadJsonFile(config));
    MINERU_ASSIGN_OR_RETURN(std::optional<std::string> t, TemplateIn(j, config));
    if (t) return *t;
  }
  const std::string jinja = dir + "/chat_template.jinja";
  if (FileExists(jinja)) return ReadFileToString(jinja, 16u << 20);
  const std::string tj = dir + "/chat_template.json";
  if (!FileExists(tj)) return std::string();
  MINERU_ASSIGN_OR_RETURN(json j, ReadJsonFile(tj));
  MINERU_ASSIGN_OR_RETURN(std::optional<std::string> t, TemplateIn(j, tj));
  return t.value_or(std::string());
}

// The bos / eos ids a GGUF LM records, from config.
void SetSpecialIds(const ModelConfig& config, GgufVocab* v) {
  v->bos_id = config.bos_token_id;
  v->eos_id = config.eos_token_ids.empty() ? -1 : config.eos_token_ids[0];
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const ModelFiles& files) {
  if (files.gguf()) {
    MINERU_ASSIGN_OR_RETURN(auto f, GgufFile::Open(files.lm_gguf));
    if (GgufHasNoVocabulary(*f)) return std::unique_ptr<Tokenizer>();
    return Tokenizer::LoadFromGguf(*f);
  }
  const std::string tj = files.dir + "/tokenizer.json";
  if (!FileExists(tj)) return std::unique_ptr<Tokenizer>();
  return Tokenizer::LoadFromFile(tj);
}

StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& model, const std::string& mmproj) {
  // An LM .gguf alone is enough for the tokenizer (no mmproj needed).
  ModelFiles files{DirOf(model), model, ""};
  if (!LooksLikeGguf(model)) {
    MINERU_ASSIGN_OR_RETURN(files, ResolveModelFiles(model, mmproj));
  }
  MINERU_ASSIGN_OR_RETURN(auto tok, LoadModelTokenizer(files));
  if (!tok) return NotFoundError(NoVocabularyMessage(files));
  return tok;
}

StatusOr<GgufVocab> GgufVocabOf(const Tokenizer& tok, const ModelConfig& config) {
  const int32_t V = config.text.vocab_size;
  if (tok.vocab_size() > V) {
    return InvalidArgumentError("the tokenizer has " + std::to_string(tok.vocab_size()) + " ids, the model " +
                                std::to_string(V));
  }
  GgufVocab v;
  v.tokens.reserve(V);
  v.types.reserve(V);
  for (int32_t id = 0; id < V; ++id) {
    std::string t = tok.IdToToken(id);
    if (t.empty()) {
      v.tokens.push_back("[PAD" + std::to_string(id) + "]");
      v.types.push_back(5);
    } else {
      v.types.push_back(tok.IsAdded(id) ? (tok.IsSpecial(id) ? 3 : 4) : 1);
      v.tokens.push_back(std::move(t));
    }
  }
  v.merges = tok.Merges();
  SetSpecialIds(config, &v);
  return v;
}

StatusOr<std::string> ModelChatTemplate(const ModelFiles& files) {
  if (!files.gguf()) return FolderChatTemplate(files.dir);
  MINERU_ASSIGN_OR_RETURN(auto f, GgufFile::Open(files.lm_gguf));
  return f->GetString("tokenizer.chat_template", "");
}

StatusOr<GgufVocab> ModelGgufVocab(const Qwen2VLModel& model) {
  MINERU_ASSIGN_OR_RETURN(auto tok, LoadModelTokenizer(model.files()));
  GgufVocab v;
  if (tok) {
    MINERU_ASSIGN_OR_RETURN(v, GgufVocabOf(*tok, model.config()));
  } else {
    SetSpecialIds(model.config(), &v);
  }
  MINERU_ASSIGN_OR_RETURN(v.chat_template, ModelChatTemplate(model.files()));
  return v;
}

}  // namespace mineru
