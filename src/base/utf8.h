// base/utf8.h — small UTF-8 helpers (validation, lossy decoding, code point access).
//
// Used by the tokenizer and by readers of outside text (the PDF text layer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mineru {
namespace utf8 {

// Returns the byte offset of the first byte that does not start a well-formed UTF-8 sequence
// (overlongs, surrogates, code points above U+10FFFF and truncated sequences are ill-formed), or
// std::string_view::npos when the whole string is valid.
size_t FindInvalid(std::string_view s);
inline bool IsValid(std::string_view s) { return FindInvalid(s) == std::string_view::npos; }

// Appends to `out` the decoding of `bytes` where every maximal ill-formed subpart becomes U+FFFD
// (the Unicode "substitution of maximal subparts" practice, which Rust's String::from_utf8_lossy and
// therefore Hugging Face tokenizers follow).
// If `final` is false, a trailing sequence that is incomplete but could still become valid is not
// consumed. Returns the number of bytes consumed (== bytes.size() when `final`).
size_t AppendLossy(std::string_view bytes, bool final, std::string* out);

// Appends the UTF-8 encoding of code point `cp` (must be a valid scalar value).
void AppendCodepoint(uint32_t cp, std::string* out);

// Decodes the code point starting at s[i] of a *valid* UTF-8 string; sets *len to its byte length.
uint32_t DecodeAt(std::string_view s, size_t i, int* len);

// Decodes the code point ending just before s[end] of a *valid* UTF-8 string; sets *len.
uint32_t DecodeBefore(std::string_view s, size_t end, int* len);

// Rust's char::is_whitespace (the Unicode White_Space property).
bool IsWhitespace(uint32_t cp);

}  // namespace utf8
}  // namespace mineru
