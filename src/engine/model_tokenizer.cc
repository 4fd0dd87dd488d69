#include "engine/model_tokenizer.h"

#include "base/gguf.h"
#include "base/mapped_file.h"

namespace mineru {

StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const ModelFiles& files) {
  if (files.gguf()) return Tokenizer::LoadFromGguf(files.lm_gguf);
  const std::string tj = files.dir + "/tokenizer.json";
  if (!FileExists(tj)) return std::unique_ptr<Tokenizer>();
  return Tokenizer::LoadFromFile(tj);
}

StatusOr<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& model, const std::string& mmproj) {
  // An LM .gguf alone is enough for the tokenizer (no mmproj needed).
  if (LooksLikeGguf(model)) return Tokenizer::LoadFromGguf(model);
  MINERU_ASSIGN_OR_RETURN(ModelFiles files, ResolveModelFiles(model, mmproj));
  MINERU_ASSIGN_OR_RETURN(auto tok, LoadModelTokenizer(files));
  if (!tok)
    return NotFoundError("no tokenizer.json in " + files.dir + " (use --raw-ids for a model without one)");
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
  v.bos_id = config.bos_token_id;
  v.eos_id = config.eos_token_ids.empty() ? -1 : config.eos_token_ids[0];
  return v;
}

}  // namespace mineru
