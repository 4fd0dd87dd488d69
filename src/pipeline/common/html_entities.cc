// pipeline/common/html_entities.cc — see html_entities.h.
#include "pipeline/common/html_entities.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <utility>

#include "base/utf8.h"

namespace mineru::pipeline::html {

namespace {

struct Entity {
  const char* name;
  const char* value;
};

// Sorted by name (byte order == Python's sorted() for these ASCII names).
constexpr Entity kEntities[] = {
#include "pipeline/common/html_entities_table.inc"
};

const char* Lookup(std::string_view name) {
  const auto* end = std::end(kEntities);
  const auto* it =
      std::lower_bound(std::begin(kEntities), end, name,
                       [](const Entity& e, std::string_view n) { return std::string_view(e.name) < n; });
  return (it != end && std::string_view(it->name) == name) ? it->value : nullptr;
}

// windows-1252 for 0x80-0x9F (0x81, 0x8D, 0x8F, 0x90, 0x9D map to themselves).
uint32_t Cp1252(uint32_t cp) {
  static const uint16_t k[32] = {0x20AC, 0x81,   0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
                                 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D,   0x017D, 0x8F,
                                 0x90,   0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
                                 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D,   0x017E, 0x0178};
  return (cp >= 0x80 && cp <= 0x9F) ? k[cp - 0x80] : cp;
}

bool IsDigitIn(char c, bool hex) {
  return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0
             : std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// Digits [b, e) as a number, saturated just above 0x10FFFF.
uint32_t ParseNumber(std::string_view s, size_t b, size_t e, bool hex) {
  uint64_t v = 0;
  for (size_t i = b; i < e; ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    v = v * (hex ? 16 : 10) + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    if (v > 0x110000) v = 0x110000;
  }
  return static_cast<uint32_t>(v);
}

// bs4 UnicodeDammit.numeric_character_reference.
void AppendBs4Numeric(uint32_t cp, std::string* out) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  utf8::AppendCodepoint(Cp1252(cp), out);
}

// html.unescape's _replace_charref for a numeric reference.
void AppendPyNumeric(uint32_t cp, std::string* out) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return utf8::AppendCodepoint(0xFFFD, out);
  if (cp >= 0x80 && cp <= 0x9F) return utf8::AppendCodepoint(Cp1252(cp), out);
  const bool invalid = (cp >= 0x1 && cp <= 0x8) || cp == 0xB || (cp >= 0xE && cp <= 0x1F) || cp == 0x7F ||
                       (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE;
  if (!invalid) utf8::AppendCodepoint(cp, out);
}

}  // namespace

std::string UnescapeText(std::string_view s) {
  std::string out;
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    if (s[i] != '&') {
      out += s[i++];
      continue;
    }
    if (i + 1 < n && s[i + 1] == '#') {  // charref: &#(?:[0-9]+|[xX][0-9a-fA-F]+)[^0-9a-fA-F]
      const bool hex = i + 2 < n && (s[i + 2] == 'x' || s[i + 2] == 'X');
      const size_t b = i + 2 + (hex ? 1 : 0);
      size_t e = b;
      while (e < n && IsDigitIn(s[e], hex)) ++e;
      if (e == b || (e < n && std::isxdigit(static_cast<unsigned char>(s[e])))) {
        out += "&#";  // no match: html.parser emits "&#" and goes on
        i += 2;
        continue;
      }
      AppendBs4Numeric(ParseNumber(s, b, e, hex), &out);
      i = (e < n && s[e] == ';') ? e + 1 : e;
      continue;
    }
    if (i + 1 < n && std::isalpha(static_cast<unsigned char>(s[i + 1]))) {  // &([a-zA-Z][-.a-zA-Z0-9]*)
      size_t e = i + 2;
      while (e < n && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '-' || s[e] == '.')) ++e;
      const std::string_view name = s.substr(i + 1, e - i - 1);
      const char* v = Lookup(std::string(name) + ";");
      if (!v) v = Lookup(name);
      if (v)
        out += v;
      else
        out += "&" + std::string(name);
      i = (e < n && s[e] == ';') ? e + 1 : e;
      continue;
    }
    out += s[i++];
  }
  return out;
}

std::string UnescapeAttr(std::string_view s) {
  std::string out;
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    if (s[i] != '&') {
      out += s[i++];
      continue;
    }
    if (i + 1 < n && s[i + 1] == '#') {
      const bool hex = i + 2 < n && (s[i + 2] == 'x' || s[i + 2] == 'X');
      const size_t b = i + 2 + (hex ? 1 : 0);
      size_t e = b;
      while (e < n && IsDigitIn(s[e], hex)) ++e;
      if (e > b) {
        AppendPyNumeric(ParseNumber(s, b, e, hex), &out);
        i = (e < n && s[e] == ';') ? e + 1 : e;
        continue;
      }
      out += s[i++];  // "&#" alone: literal
      continue;
    }
    size_t e = i + 1;  // [^\t\n\f <&#;]{1,32};?
    while (e < n && e - i - 1 < 32 && std::string_view("\t\n\f <&#;").find(s[e]) == std::string_view::npos)
      ++e;
    if (e == i + 1) {
      out += s[i++];
      continue;
    }
    if (e < n && s[e] == ';') ++e;
    const std::string_view ref = s.substr(i + 1, e - i - 1);
    if (const char* v = Lookup(ref)) {
      out += v;
    } else {
      size_t x = ref.size() - 1;
      for (; x >= 2; --x) {
        if (const char* p = Lookup(ref.substr(0, x))) {
          out += std::string(p) + std::string(ref.substr(x));
          break;
        }
      }
      if (x < 2) out += "&" + std::string(ref);
    }
    i = e;
  }
  return out;
}

}  // namespace mineru::pipeline::html
