// pipeline/common/otsl.h — OTSL table markup to HTML, as mineru-vl-utils post_process/otsl2html.py does it.
#pragma once

#include <string>
#include <string_view>

namespace mineru::pipeline {

// Converts the table model's OTSL output (<fcel>, <ecel>, <lcel>, <ucel>, <xcel>, <nl>) to
// `<table><tr><td rowspan=".." colspan="..">escaped text</td>...</tr></table>`.
// Behaviour, quirks included:
// - input that starts with "<table" and ends with "</table>" is returned unchanged;
// - rows are the runs of cell tags between <nl>s; short rows are padded with <ecel> to the widest row;
// - the text after a tag is attached to it only while the tag/text sequence stays in step with the
//   padded rows (leading text, or two <nl> in a row, desynchronise it and later texts are dropped);
// - <fcel>/<ecel> start cells; colspan = 1 + run of <lcel>/<xcel> to the right, rowspan = 1 + run of
//   <ucel>/<xcel> below; grid positions covered by no cell become empty <td></td>;
// - cell text is stripped (Python whitespace) and html.escape'd (quotes too);
// - no cell at all gives "".
std::string OtslToHtml(std::string_view otsl);

}  // namespace mineru::pipeline
