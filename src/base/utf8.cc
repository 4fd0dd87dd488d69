#include "base/utf8.h"

namespace mineru {
namespace utf8 {
namespace {

// For a lead byte, the number of continuation bytes and the allowed range of the first one
// (Unicode Table 3-7, well-formed UTF-8 byte sequences). need < 0: not a valid lead byte.
struct LeadInfo {
  int need;
  uint8_t lo;
  uint8_t hi;
};

inline LeadInfo Lead(uint8_t b) {
  if (b < 0x80) return {0, 0, 0};
  if (b < 0xC2) return {-1, 0, 0};
  if (b < 0xE0) return {1, 0x80, 0xBF};
  if (b == 0xE0) return {2, 0xA0, 0xBF};
  if (b == 0xED) return {2, 0x80, 0x9F};
  if (b < 0xF0) return {2, 0x80, 0xBF};
  if (b == 0xF0) return {3, 0x90, 0xBF};
  if (b < 0xF4) return {3, 0x80, 0xBF};
  if (b == 0xF4) return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

enum class Step { kValid, kInvalid, kTruncated };

// Examines the sequence at s[i]. kValid: *len bytes form a character. kInvalid: the maximal
// ill-formed subpart is *len bytes (>= 1). kTruncated: the remaining *len bytes are a valid prefix.
inline Step Examine(std::string_view s, size_t i, size_t* len) {
  const uint8_t b = static_cast<uint8_t>(s[i]);
  const LeadInfo li = Lead(b);
  if (li.need == 0) {
    *len = 1;
    return Step::kValid;
  }
  if (li.need < 0) {
    *len = 1;
    return Step::kInvalid;
  }
  size_t k = 1;
  for (int c = 0; c < li.need; ++c, ++k) {
    if (i + k >= s.size()) {
      *len = k;
      return Step::kTruncated;
    }
    const uint8_t cb = static_cast<uint8_t>(s[i + k]);
    const uint8_t lo = c == 0 ? li.lo : 0x80;
    const uint8_t hi = c == 0 ? li.hi : 0xBF;
    if (cb < lo || cb > hi) {
      *len = k;
      return Step::kInvalid;
    }
  }
  *len = k;
  return Step::kValid;
}

}  // namespace

size_t FindInvalid(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    size_t len;
    if (Examine(s, i, &len) != Step::kValid) return i;
    i += len;
  }
  return std::string_view::npos;
}

size_t AppendLossy(std::string_view bytes, bool final, std::string* out) {
  size_t i = 0;
  const size_t n = bytes.size();
  out->reserve(out->size() + n);
  size_t run = 0;  // start of the current run of valid bytes not yet appended
  while (i < n) {
    size_t len;
    const Step st = Examine(bytes, i, &len);
    if (st == Step::kValid) {
      i += len;
      continue;
    }
    out->append(bytes.data() + run, i - run);
    if (st == Step::kTruncated && !final) return i;
    out->append("\xEF\xBF\xBD");  // U+FFFD
    i += len;
    run = i;
  }
  out->append(bytes.data() + run, n - run);
  return n;
}

void AppendCodepoint(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t DecodeAt(std::string_view s, size_t i, int* len) {
  const uint8_t b = static_cast<uint8_t>(s[i]);
  if (b < 0x80) {
    *len = 1;
    return b;
  }
  int n;
  uint32_t cp;
  if (b < 0xE0) {
    n = 2;
    cp = b & 0x1F;
  } else if (b < 0xF0) {
    n = 3;
    cp = b & 0x0F;
  } else {
    n = 4;
    cp = b & 0x07;
  }
  for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  *len = n;
  return cp;
}

uint32_t DecodeBefore(std::string_view s, size_t end, int* len) {
  size_t start = end;
  while (start > 0) {
    --start;
    if ((static_cast<uint8_t>(s[start]) & 0xC0) != 0x80) break;
  }
  return DecodeAt(s, start, len);
}

bool IsWhitespace(uint32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  switch (cp) {
    case 0x20:
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
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace utf8
}  // namespace mineru
