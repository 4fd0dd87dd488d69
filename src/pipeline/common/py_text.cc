// pipeline/common/py_text.cc — Python str semantics on UTF-8 bytes (see py_text.h).
#include "pipeline/common/py_text.h"

#include <cstdio>

namespace mineru::pipeline::py {

namespace {

// Decodes the UTF-8 sequence at s[i]; returns the code point and its length, or length 0 when the
// bytes are not a well-formed sequence.
struct Decoded {
  char32_t cp = 0;
  size_t len = 0;
};

Decoded DecodeAt(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  size_t len = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return {};
  }
  if (i + len > s.size()) return {};
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, len};
}

bool IsSpaceCodePoint(char32_t c) {
  if (c >= 0x09 && c <= 0x0D) return true;
  if (c >= 0x1C && c <= 0x20) return true;
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      break;
  }
  return c >= 0x2000 && c <= 0x200A;
}

// Format characters (Unicode category Cf) outside the ranges below are all in scripts where a
// document table is unlikely; these are the ones Python escapes in practice.
bool IsFormatCodePoint(char32_t c) {
  if (c == 0xAD || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x8E2 || c == 0x180E || c == 0xFEFF)
    return true;
  if (c >= 0x600 && c <= 0x605) return true;
  if (c >= 0x200B && c <= 0x200F) return true;
  if (c >= 0x202A && c <= 0x202E) return true;
  if (c >= 0x2060 && c <= 0x2064) return true;
  if (c >= 0x2066 && c <= 0x206F) return true;
  if (c >= 0xFFF9 && c <= 0xFFFB) return true;
  if (c == 0x110BD || c == 0x110CD || (c >= 0x13430 && c <= 0x1343F)) return true;
  if (c >= 0x1BCA0 && c <= 0x1BCA3) return true;
  if (c >= 0x1D173 && c <= 0x1D17A) return true;
  return c == 0xE0001 || (c >= 0xE0020 && c <= 0xE007F);
}

// str.isprintable() for one character: false for Cc, Cf, Cs, Co and Z* except U+0020.
bool IsPrintableCodePoint(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0x9F)) return false;  // Cc
  if (c == 0x20) return true;
  if (IsSpaceCodePoint(c)) return false;  // Zs, Zl, Zp (the Cc ones are out already)
  if (IsFormatCodePoint(c)) return false;
  if (c >= 0xD800 && c <= 0xDFFF) return false;  // Cs
  if ((c >= 0xE000 && c <= 0xF8FF) || (c >= 0xF0000 && c <= 0xFFFFD) || (c >= 0x100000 && c <= 0x10FFFD)) {
    return false;  // Co
  }
  return true;
}

}  // namespace

std::string Repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const Decoded d = DecodeAt(s, i);
    if (d.len == 0) {  // not UTF-8: copied as is
      out += s[i++];
      continue;
    }
    const char32_t c = d.cp;
    if (c == '\\' || c == static_cast<char32_t>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!IsPrintableCodePoint(c)) {
      char buf[16];
      if (c <= 0xFF)
        std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      else if (c <= 0xFFFF)
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.append(s.substr(i, d.len));
    }
    i += d.len;
  }
  out += quote;
  return out;
}

std::string ReprList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += Repr(items[i]);
  }
  return out + "]";
}

size_t SpaceLen(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  const Decoded d = DecodeAt(s, i);
  if (d.len == 0) return 0;
  return IsSpaceCodePoint(d.cp) ? d.len : 0;
}

size_t SpaceLenBefore(std::string_view s, size_t end) {
  // Whitespace characters are 1, 2 or 3 bytes long in UTF-8.
  for (size_t len = 1; len <= 3 && len <= end; ++len) {
    const size_t start = end - len;
    const Decoded d = DecodeAt(s, start);
    if (d.len == len && IsSpaceCodePoint(d.cp)) return len;
  }
  return 0;
}

std::string_view LStrip(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = SpaceLen(s, i);
    if (n == 0) break;
    i += n;
  }
  return s.substr(i);
}

std::string_view RStrip(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    const size_t n = SpaceLenBefore(s, end);
    if (n == 0) break;
    end -= n;
  }
  return s.substr(0, end);
}

std::string_view Strip(std::string_view s) { return RStrip(LStrip(s)); }

std::vector<std::string_view> SplitLines(std::string_view s) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t brk = 0;  // length of the line break at i
    if (c == '\n' || c == '\v' || c == '\f' || c == 0x1C || c == 0x1D || c == 0x1E) {
      brk = 1;
    } else if (c == '\r') {
      brk = (i + 1 < s.size() && s[i + 1] == '\n') ? 2 : 1;
    } else if (c >= 0x80) {
      const Decoded d = DecodeAt(s, i);
      if (d.len > 0 && (d.cp == 0x85 || d.cp == 0x2028 || d.cp == 0x2029)) brk = d.len;
    }
    if (brk > 0) {
      lines.push_back(s.substr(start, i - start));
      i += brk;
      start = i;
    } else {
      ++i;
    }
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  return lines;
}

size_t Count(std::string_view s, std::string_view sub) {
  size_t n = 0;
  size_t pos = 0;
  while ((pos = s.find(sub, pos)) != std::string_view::npos) {
    ++n;
    pos += sub.size();
  }
  return n;
}

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

std::string HtmlEscapeNoQuote(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#x27;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string LowerForTypeName(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c);
      ++i;
      continue;
    }
    const Decoded d = DecodeAt(s, i);
    if (d.len == 0) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (d.cp == 0x212A) {
      out += 'k';  // KELVIN SIGN lowercases to ASCII 'k' in Python.
    } else {
      out.append(s.substr(i, d.len));
    }
    i += d.len;
  }
  return out;
}

}  // namespace mineru::pipeline::py
