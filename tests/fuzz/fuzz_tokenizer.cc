// libFuzzer target: encoding arbitrary text with the real Qwen2 tokenizer and decoding arbitrary
// ids (streaming too); also tokenizer.json parsing of small inputs.
#include <cstring>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto tok =
      mineru::Tokenizer::LoadFromFile(std::string(MINERU_FIXTURES_DIR) + "/tinyvocab/tokenizer.json");
  if (!tok.ok()) return 0;
  const std::string s(reinterpret_cast<const char*>(data), size);
  auto ids = (*tok)->Encode(s);
  if (ids.ok()) (void)(*tok)->Decode(*ids);
  std::vector<int32_t> raw;
  for (size_t i = 0; i + 3 < size; i += 4) {
    int32_t v;
    std::memcpy(&v, data + i, 4);
    raw.push_back(v % 160000);
  }
  (void)(*tok)->Decode(raw);
  mineru::IncrementalDecoder dec(**tok);
  for (int32_t id : raw) (void)dec.Push(id);
  (void)dec.Flush();
  if (size < 4096) (void)mineru::Tokenizer::LoadFromJson(s);
  return 0;
}
