// tokenizer/tokenizer_load.cc — loading a Tokenizer: from a tokenizer.json file or text, or from
// the tokenizer.json a GGUF file's vocabulary converts to; its model (BPE vocab, merges, options),
// normalizer and decoder sections, checked without exceptions; and the id tables built once all is
// read (Finish). The pre_tokenizer and added_tokens sections are pretokenizer.cc's and
// added_tokens.cc's; encoding and decoding are tokenizer.cc's.
#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include <utf8proc.h>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "base/mapped_file.h"
#include "base/utf8.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer_internal.h"

namespace mineru {
namespace tokenizer_internal {

Status Expect(bool cond, const std::string& what) {
  return cond ? Status::Ok() : InvalidArgumentError("tokenizer.json: " + what);
}

StatusOr<bool> GetBool(const json& obj, const char* key, bool dflt) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return dflt;
  if (!it->is_boolean())
    return InvalidArgumentError(std::string("tokenizer.json: '") + key + "' must be a boolean");
  return it->get<bool>();
}

StatusOr<std::string> GetType(const json& obj, const std::string& where) {
  if (!obj.is_object()) return InvalidArgumentError("tokenizer.json: " + where + " must be an object");
  auto it = obj.find("type");
  if (it == obj.end() || !it->is_string())
    return InvalidArgumentError("tokenizer.json: " + where + " has no string 'type'");
  return it->get<std::string>();
}

}  // namespace tokenizer_internal

using tokenizer_internal::Alphabet;
using tokenizer_internal::ByteLevelAlphabet;
using tokenizer_internal::ByteLevelDecodeToken;
using tokenizer_internal::Expect;
using tokenizer_internal::GetBool;
using tokenizer_internal::GetType;
using tokenizer_internal::json;
using tokenizer_internal::kMaxTokenId;

namespace {

// The BPE options HF accepts but this tokenizer does not implement (a continuing-subword prefix, an
// end-of-word suffix, dropout, byte fallback): an error when any is set.
Status CheckUnsupportedBpeOptions(const json& model) {
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null()) {
      MINERU_RETURN_IF_ERROR(Expect(it->is_string(), std::string("model.") + key + " must be a string"));
      if (!it->get_ref<const std::string&>().empty())
        return UnimplementedError(std::string("tokenizer.json: model.") + key + " is not supported");
    }
  }
  auto dropout_it = model.find("dropout");
  if (dropout_it != model.end() && !dropout_it->is_null()) {
    MINERU_RETURN_IF_ERROR(Expect(dropout_it->is_number(), "model.dropout must be a number"));
    if (dropout_it->get<double>() != 0.0)
      return UnimplementedError("tokenizer.json: BPE dropout is not supported");
  }
  MINERU_ASSIGN_OR_RETURN(bool byte_fallback, GetBool(model, "byte_fallback", false));
  if (byte_fallback) return UnimplementedError("tokenizer.json: BPE byte_fallback is not supported");
  return Status::Ok();
}

// One entry of model.merges ("a b" or ["a", "b"]) as its two halves, viewing into `e`.
Status SplitMerge(const json& e, size_t rank, std::string_view* a, std::string_view* b) {
  if (e.is_string()) {
    const std::string& s = e.get_ref<const std::string&>();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos)
      return InvalidArgumentError("tokenizer.json: merge #" + std::to_string(rank) + " '" + s +
                                  "' has no space");
    *a = std::string_view(s).substr(0, sp);
    *b = std::string_view(s).substr(sp + 1);
    return Status::Ok();
  }
  if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
    *a = e[0].get_ref<const std::string&>();
    *b = e[1].get_ref<const std::string&>();
    return Status::Ok();
  }
  return InvalidArgumentError("tokenizer.json: merge #" + std::to_string(rank) +
                              " is neither \"a b\" nor [\"a\", \"b\"]");
}

}  // namespace

Status Tokenizer::Impl::LoadModel(const json& model) {
  if (!model.is_object()) return InvalidArgumentError("tokenizer.json: 'model' must be an object");
  auto type_it = model.find("type");
  if (type_it != model.end()) {
    MINERU_RETURN_IF_ERROR(Expect(type_it->is_string(), "model.type must be a string"));
    const std::string type = type_it->get<std::string>();
    if (type != "BPE") return UnimplementedError("tokenizer.json: model type '" + type + "' (only BPE)");
  }
  auto vocab_it = model.find("vocab");
  MINERU_RETURN_IF_ERROR(Expect(vocab_it != model.end(), "model has no 'vocab'"));
  MINERU_RETURN_IF_ERROR(Expect(vocab_it->is_object(), "model.vocab must be an object"));
  auto merges_it = model.find("merges");
  MINERU_RETURN_IF_ERROR(Expect(merges_it != model.end(), "model has no 'merges'"));
  MINERU_RETURN_IF_ERROR(Expect(merges_it->is_array(), "model.merges must be an array"));
  MINERU_RETURN_IF_ERROR(CheckUnsupportedBpeOptions(model));
  MINERU_ASSIGN_OR_RETURN(ignore_merges, GetBool(model, "ignore_merges", false));

  MINERU_RETURN_IF_ERROR(LoadVocab(*vocab_it));
  MINERU_RETURN_IF_ERROR(LoadMerges(*merges_it));

  auto unk_it = model.find("unk_token");
  if (unk_it != model.end() && !unk_it->is_null()) {
    MINERU_RETURN_IF_ERROR(Expect(unk_it->is_string(), "model.unk_token must be a string"));
    unk_id = vocab.Find(unk_it->get<std::string>());
    if (unk_id < 0) return InvalidArgumentError("tokenizer.json: model.unk_token is not in the vocab");
  }

  const ByteLevelAlphabet& alpha = Alphabet();
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    utf8::AppendCodepoint(alpha.byte_to_cp[b], &ch);
    byte_ids[b] = vocab.Find(ch);
  }
  return Status::Ok();
}

// model.vocab (token -> id) into vocab and id_flags (ids may leave gaps).
Status Tokenizer::Impl::LoadVocab(const json& v) {
  std::vector<std::pair<std::string_view, int32_t>> entries;
  entries.reserve(v.size());
  size_t text_bytes = 0;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_number_integer())
      return InvalidArgumentError("tokenizer.json: vocab id of '" + it.key() + "' is not an integer");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > kMaxTokenId)
      return InvalidArgumentError("tokenizer.json: vocab id " + std::to_string(id) + " out of range");
    entries.emplace_back(it.key(), static_cast<int32_t>(id));  // the key lives as long as v
    text_bytes += it.key().size();
  }
  // The tables address the texts (and their decoded bytes) with 32-bit offsets.
  if (text_bytes >= (size_t{1} << 31))
    return InvalidArgumentError("tokenizer.json: the vocab's texts exceed 2 GiB");
  vocab.Build(entries);
  id_flags.assign(static_cast<size_t>(vocab.id_limit()), 0);
  for (int32_t id = 0; id < vocab.id_limit(); ++id) {
    if (vocab.Has(id)) id_flags[id] = kPresent;
  }
  return Status::Ok();
}

// model.merges into merges: (left id, right id) -> (rank, merged id). Needs the vocab loaded.
Status Tokenizer::Impl::LoadMerges(const json& m) {
  merges.Reserve(m.size());
  std::string joined;
  for (size_t rank = 0; rank < m.size(); ++rank) {
    std::string_view a, b;
    MINERU_RETURN_IF_ERROR(SplitMerge(m[rank], rank, &a, &b));
    joined.assign(a.data(), a.size());
    joined.append(b.data(), b.size());
    const int32_t ia = vocab.Find(a), ib = vocab.Find(b), inew = vocab.Find(joined);
    if (ia < 0 || ib < 0 || inew < 0)
      return InvalidArgumentError("tokenizer.json: merge #" + std::to_string(rank) +
                                  " uses a token not in the vocab");
    // Later duplicates win, as in HF (its merge map is built by inserting in order).
    merges.Put(ia, ib, MergeTable::Merge{static_cast<int32_t>(rank), inew});
  }
  return Status::Ok();
}

Status Tokenizer::Impl::LoadNormalizer(const json& n) {
  if (n.is_null()) return Status::Ok();
  MINERU_ASSIGN_OR_RETURN(std::string type, GetType(n, "normalizer"));
  if (type == "Sequence") {
    auto it = n.find("normalizers");
    MINERU_RETURN_IF_ERROR(
        Expect(it != n.end() && it->is_array(), "normalizer Sequence without 'normalizers'"));
    for (const json& sub : *it) MINERU_RETURN_IF_ERROR(LoadNormalizer(sub));
    return Status::Ok();
  }
  if (type == "NFC") {
    normalizers.push_back(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  } else if (type == "NFD") {
    normalizers.push_back(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  } else if (type == "NFKC") {
    normalizers.push_back(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  } else if (type == "NFKD") {
    normalizers.push_back(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  } else {
    return UnimplementedError("tokenizer.json: normalizer '" + type + "' is not supported");
  }
  return Status::Ok();
}

Status Tokenizer::Impl::LoadDecoder(const json& d) {
  if (d.is_null()) return UnimplementedError("tokenizer.json: a ByteLevel decoder is required");
  MINERU_ASSIGN_OR_RETURN(std::string type, GetType(d, "decoder"));
  if (type == "ByteLevel") return Status::Ok();
  if (type == "Sequence") {
    auto it = d.find("decoders");
    MINERU_RETURN_IF_ERROR(
        Expect(it != d.end() && it->is_array(), "decoder Sequence without 'decoders' array"));
    bool any = false;
    for (const json& sub : *it) {
      MINERU_ASSIGN_OR_RETURN(std::string t, GetType(sub, "decoder step"));
      if (t != "ByteLevel") return UnimplementedError("tokenizer.json: decoder '" + t + "' is not supported");
      any = true;
    }
    if (any) return Status::Ok();
  }
  return UnimplementedError("tokenizer.json: decoder '" + type + "' is not supported (only ByteLevel)");
}

Status Tokenizer::Impl::Finish() {
  // Added tokens extend the id tables and take precedence over the vocab for the same id (the
  // last one listed for an id wins).
  int64_t max_id = static_cast<int64_t>(id_flags.size()) - 1;
  for (const AddedToken& a : added) max_id = std::max<int64_t>(max_id, a.id);
  id_flags.resize(static_cast<size_t>(max_id + 1), 0);
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken& a = added[i];
    added_by_id[a.id] = i;
    id_flags[a.id] = kPresent | kAdded | (a.special ? kSpecial : 0);
    added_by_content[a.content] = a.id;
  }
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedToken& a = added[i];
    if (!a.normalized) {
      raw_trie.Add(a.content, static_cast<int32_t>(i));
    } else {
      std::string norm;
      bool changed;
      MINERU_RETURN_IF_ERROR(Normalize(a.content, &norm, &changed));
      norm_trie.Add(changed ? std::string_view(norm) : std::string_view(a.content), static_cast<int32_t>(i));
    }
  }
  // Decoded bytes of every id.
  size_t total = 0;
  for (size_t id = 0; id < id_flags.size(); ++id) total += TokenText(static_cast<int32_t>(id)).size();
  token_bytes.clear();
  token_bytes.reserve(total);
  token_bytes_off.assign(id_flags.size() + 1, 0);
  for (size_t id = 0; id < id_flags.size(); ++id) {
    token_bytes_off[id] = static_cast<uint32_t>(token_bytes.size());
    if (id_flags[id] & kPresent) token_bytes += ByteLevelDecodeToken(TokenText(static_cast<int32_t>(id)));
  }
  token_bytes_off[id_flags.size()] = static_cast<uint32_t>(token_bytes.size());
  return Status::Ok();
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromFile(const std::string& tokenizer_json_path) {
  auto text = ReadFileToString(tokenizer_json_path);
  if (!text.ok()) return text.status();
  auto tok = LoadFromJson(*text);
  if (!tok.ok()) return tok.status().WithPrefix(tokenizer_json_path);
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromJson(std::string_view json_text) {
  json j;
  if (Status s = ParseJson(json_text, {}, &j); !s.ok()) return s.WithPrefix("tokenizer.json");
  if (!j.is_object()) return InvalidArgumentError("tokenizer.json: the top level must be an object");
  return LoadFromJsonObject(j);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromGguf(const std::string& gguf_path) {
  auto f = GgufFile::Open(gguf_path);
  if (!f.ok()) return f.status();
  return LoadFromGguf(**f);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromGguf(const GgufFile& gguf) {
  auto j = GgufTokenizerJson(gguf);
  if (!j.ok()) return j.status().WithPrefix(gguf.path());
  auto tok = LoadFromJsonObject(*j);
  if (!tok.ok()) return tok.status().WithPrefix(gguf.path());
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromJsonObject(const nlohmann::json& j) {
  try {
    auto impl = std::make_unique<Impl>();
    auto model_it = j.find("model");
    if (model_it == j.end()) return InvalidArgumentError("tokenizer.json: no 'model'");
    MINERU_RETURN_IF_ERROR(impl->LoadModel(*model_it));
    auto get = [&](const char* key) -> const json& {
      static const json kNull;
      auto it = j.find(key);
      return it == j.end() ? kNull : *it;
    };
    MINERU_RETURN_IF_ERROR(impl->LoadAddedTokens(get("added_tokens")));
    MINERU_RETURN_IF_ERROR(impl->LoadNormalizer(get("normalizer")));
    MINERU_RETURN_IF_ERROR(impl->LoadPreTokenizer(get("pre_tokenizer")));
    MINERU_RETURN_IF_ERROR(impl->LoadDecoder(get("decoder")));
    MINERU_RETURN_IF_ERROR(impl->Finish());
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("tokenizer.json: ") + e.what());
  }
}

}  // namespace mineru
