// pipeline/common/py_text.h — small string helpers with Python `str` semantics.
//
// MinerU and mineru-vl-utils are Python; their post-processing leans on str.strip(), str.splitlines(),
// the `\s` class of `re`, str.count() and html.escape(). These helpers reproduce those semantics on
// UTF-8 bytes so the C++ port gives the same strings. Invalid UTF-8 is treated byte by byte (never
// whitespace), which is what a lossy decode followed by these operations would do for our purposes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mineru::pipeline::py {

// Byte length of the Python-whitespace character (str.isspace(), equal to `\s` of `re` on str)
// starting at s[i], or 0 if s[i] does not start one. The set is U+0009..U+000D, U+001C..U+001F,
// U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
size_t SpaceLen(std::string_view s, size_t i);

// Length of the whitespace character that ends exactly at s[end) (0 if none).
size_t SpaceLenBefore(std::string_view s, size_t end);

// str.strip() / lstrip() / rstrip() with no argument.
std::string_view Strip(std::string_view s);
std::string_view LStrip(std::string_view s);
std::string_view RStrip(std::string_view s);

// True when Strip(s) is empty (Python: `not s.strip()`).
inline bool IsBlank(std::string_view s) { return Strip(s).empty(); }

// str.splitlines() without keepends: splits on \n, \r\n, \r, \v, \f, \x1c, \x1d, \x1e, U+0085,
// U+2028, U+2029; a trailing line break does not add an empty last line.
std::vector<std::string_view> SplitLines(std::string_view s);

// str.count(sub): non-overlapping occurrences, scanning left to right. sub must be non-empty.
size_t Count(std::string_view s, std::string_view sub);

// str.replace(from, to): every non-overlapping occurrence, left to right. from must be non-empty.
std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to);

inline bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// html.escape(s, quote=True): & < > " ' become &amp; &lt; &gt; &quot; &#x27;.
std::string HtmlEscape(std::string_view s);
// html.escape(s, quote=False), also bs4's "minimal" formatter: & < > only.
std::string HtmlEscapeNoQuote(std::string_view s);

// repr(s) of a str: single quotes unless s holds ' and no ", escapes \\ \n \r \t and the active
// quote, other non-printable characters as \xHH / \uHHHH / \UHHHHHHHH. "Non-printable" is
// Python's str.isprintable() for controls, separators (Z*, except ' '), format characters (Cf) and
// private use; unassigned code points (Cn) print as they are (no Unicode database here).
// Invalid UTF-8 bytes are copied as they are.
std::string Repr(std::string_view s);

// repr(list_of_str): "[" + ", ".join(Repr(x)) + "]".
std::string ReprList(const std::vector<std::string>& items);

// str.lower() restricted to what matters for layout type names: ASCII letters, plus the few
// non-ASCII characters whose lowercase is ASCII (U+212A KELVIN SIGN -> 'k'). Other bytes are copied.
std::string LowerForTypeName(std::string_view s);

}  // namespace mineru::pipeline::py
