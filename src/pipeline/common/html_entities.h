// pipeline/common/html_entities.h — character references as BeautifulSoup 4 + Python's html.parser decode
// them (MinerU 3.4.4's table merge parses with BeautifulSoup(html, "html.parser")).
#pragma once

#include <string>
#include <string_view>

namespace mineru::pipeline::html {

// Text between tags. bs4 runs html.parser with convert_charrefs=False and decodes itself:
//   &name + a char that is not [A-Za-z0-9]: name ([A-Za-z][-.A-Za-z0-9]*) looked up exactly, without the
//     ';', in the HTML5 table; unknown names stay "&name". A terminating ';' is consumed in both cases
//     ("&bogus;" gives "&bogus").
//   &#digits / &#xhex + a char that is not a hex digit: the code point (0 / surrogates / > 0x10FFFF ->
//     U+FFFD, 0x80-0x9F via windows-1252); ';' consumed. "&#12a" does not match: "&#" stays literal.
//   any other '&' stays literal.
// The chunk end counts as a terminator (chunks end at a tag's "<"). The document-level cases (a failing
// "&#", a reference running into the end of the document) are handled by html_dom's Parse.
std::string UnescapeText(std::string_view s);

// Attribute values: html.unescape (html.parser always applies it to attribute values): names with or
// without ';' from the HTML5 table, else the longest known prefix of up to 32 chars; numeric
// references as html.unescape (invalid code points such as U+0001 or U+FFFE are dropped).
std::string UnescapeAttr(std::string_view s);

}  // namespace mineru::pipeline::html
