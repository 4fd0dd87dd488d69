#include "server/base64.h"

namespace mineru::server {

static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  int8_t map[256];
  for (int c = 0; c < 256; ++c) map[c] = -1;
  for (int c = 0; c < 64; ++c) map[static_cast<uint8_t>(kAlphabet[c])] = static_cast<int8_t>(c);
  // Also accept the URL-safe alphabet.
  map[static_cast<uint8_t>('-')] = 62;
  map[static_cast<uint8_t>('_')] = 63;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char ch : in) {
    const uint8_t c = static_cast<uint8_t>(ch);
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad > 0 || map[c] < 0) return std::nullopt;  // data after padding, or a bad character
    acc = (acc << 6) | static_cast<uint32_t>(map[c]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (pad > 2 || bits >= 6) return std::nullopt;
  return out;
}

}  // namespace mineru::server
