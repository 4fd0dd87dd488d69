#include "tokenizer/gguf_vocab.h"

#include <string>

namespace mineru {
namespace {

using json = nlohmann::json;

// Qwen2's pre-tokenizer split (tokenizer.json of Qwen2 / Qwen2-VL / MinerU2.5).
constexpr const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

enum TokenType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

json ByteLevel() {
  return json{
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
}

json AddedToken(int64_t id, std::string_view content, bool special) {
  return json{{"id", id},
              {"content", std::string(content)},
              {"single_word", false},
              {"lstrip", false},
              {"rstrip", false},
              {"normalized", false},
              {"special", special}};
}

}  // namespace

StatusOr<json> GgufTokenizerJson(const GgufFile& f) {
  MINERU_ASSIGN_OR_RETURN(std::string model, f.GetString("tokenizer.ggml.model"));
  if (GgufHasNoVocabulary(f)) {
    return NotFoundError("the model has no vocabulary (tokenizer.ggml.model is '" + model + "')");
  }
  MINERU_ASSIGN_OR_RETURN(std::string pre, f.GetString("tokenizer.ggml.pre", ""));
  if (model != "gpt2" || pre != "qwen2") {
    return InvalidArgumentError("tokenizer '" + model + "' with pre-tokenizer '" + pre +
                                "' is not supported (gpt2 / qwen2, the Qwen2-VL tokenizer)");
  }
  const GgufValue* tokens = f.Find("tokenizer.ggml.tokens");
  const GgufValue* types = f.Find("tokenizer.ggml.token_type");
  const GgufValue* merges = f.Find("tokenizer.ggml.merges");
  if (!tokens || tokens->type != GgufValueType::kArray || tokens->strings.empty() ||
      tokens->strings.size() != tokens->array_size()) {
    return InvalidArgumentError("tokenizer.ggml.tokens must be a non-empty array of strings");
  }
  if (!types || types->ints.size() != tokens->strings.size() || types->array_size() != types->ints.size()) {
    return InvalidArgumentError("tokenizer.ggml.token_type must hold one integer per token");
  }
  if (!merges || merges->strings.size() != merges->array_size()) {
    return InvalidArgumentError("tokenizer.ggml.merges must be an array of strings");
  }
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < tokens->strings.size(); ++id) {
    const std::string_view tok = tokens->strings[id];
    switch (types->ints[id]) {
      case kNormal:
        vocab[std::string(tok)] = id;
        break;
      case kControl:
        added.push_back(AddedToken(static_cast<int64_t>(id), tok, true));
        break;
      case kUserDefined:
        added.push_back(AddedToken(static_cast<int64_t>(id), tok, false));
        break;
      case kUnused:
        break;
      default:
        return InvalidArgumentError("token " + std::to_string(id) + " has type " +
                                    std::to_string(types->ints[id]) +
                                    ", which a gpt2 tokenizer does not use");
    }
  }
  json merge_list = json::array();
  for (std::string_view m : merges->strings) merge_list.push_back(std::string(m));
  json j;
  j["normalizer"] = json{{"type", "NFC"}};
  j["pre_tokenizer"] = json{{"type", "Sequence"},
                            {"pretokenizers", json::array({json{{"type", "Split"},
                                                                {"pattern", json{{"Regex", kQwen2Regex}}},
                                                                {"behavior", "Isolated"},
                                                                {"invert", false}},
                                                           ByteLevel()})}};
  j["decoder"] = ByteLevel();
  j["added_tokens"] = std::move(added);
  j["model"] = json{{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merge_list)}};
  return j;
}

}  // namespace mineru
