// tokenizer/byte_level.cc — the GPT-2 byte <-> unicode alphabet of byte-level BPE: the token text a
// byte string is spelled with (what the BPE works on) and the bytes a token's text stands for (the
// ByteLevel decoder). Not the BPE itself (tokenizer.cc) nor the lossy UTF-8 repair of decoded
// bytes (base/utf8.h).
#include <string>
#include <string_view>

#include "base/utf8.h"
#include "tokenizer/tokenizer_internal.h"

namespace mineru {
namespace tokenizer_internal {

const ByteLevelAlphabet& Alphabet() {
  static const ByteLevelAlphabet kAlphabet;
  return kAlphabet;
}

// Bytes a token contributes to the decoded text under the ByteLevel decoder: every character mapped
// back through the alphabet, or (if any character is outside it) the token's own UTF-8 bytes.
std::string ByteLevelDecodeToken(std::string_view token) {
  const ByteLevelAlphabet& a = Alphabet();
  std::string out;
  out.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    int len;
    const uint32_t cp = utf8::DecodeAt(token, i, &len);
    if (cp >= 324 || a.cp_to_byte[cp] < 0) return std::string(token);
    out.push_back(static_cast<char>(a.cp_to_byte[cp]));
    i += static_cast<size_t>(len);
  }
  return out;
}

std::string ByteLevelEncode(std::string_view bytes) {
  const ByteLevelAlphabet& a = Alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) utf8::AppendCodepoint(a.byte_to_cp[c], &out);
  return out;
}

}  // namespace tokenizer_internal
}  // namespace mineru
