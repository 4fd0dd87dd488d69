// pipeline/common/formula_big.cc — try_fix_equation_big of mineru-vl-utils.
//
// The reference is a long list of re.sub calls whose patterns are all literal strings; it is
// re-expressed here as an ordered table of literal replacements built from the same families, in the
// same order. Version used: the one vendored next to the 6-step equation chain (the 2509-era chain of
// spec §4.5), which covers big/bigl/bigr/bigm/bigg/biggl/biggr/biggm and their capitalised forms, with
// and without a space before the brace, and ends with \bigtimes -> \times. Quirks kept:
//   - \biggm{[}, \biggl{[} (and ]) become "\biggm\[" etc.: the replacement template keeps "\[".
//   - the \rangle/\langle family has no \Biggm entry, and its replacements add a trailing space.
#include <string>
#include <utility>
#include <vector>

#include "pipeline/common/formula.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace {

using Rule = std::pair<std::string, std::string>;

std::vector<Rule> BuildBigRules() {
  const std::vector<std::string> all16 = {"big", "bigr", "bigm", "bigl", "bigg", "biggr", "biggm", "biggl",
                                          "Big", "Bigr", "Bigm", "Bigl", "Bigg", "Biggr", "Biggm", "Biggl"};
  const std::vector<std::pair<std::string, std::string>> pairs8 = {
      {"big", "Big"},   {"bigm", "Bigm"},   {"bigr", "Bigr"},   {"bigl", "Bigl"},
      {"bigg", "Bigg"}, {"biggr", "Biggr"}, {"biggm", "Biggm"}, {"biggl", "Biggl"}};
  std::vector<Rule> rules;
  auto add = [&](const std::string& cmd, const std::string& sep, const std::string& inner,
                 const std::string& out) {
    rules.emplace_back("\\" + cmd + sep + "{" + inner + "}", "\\" + cmd + out);
  };
  // \big{)} -> \big)
  for (const auto& c : all16) {
    add(c, "", ")", ")");
    add(c, "", "(", "(");
    add(c, " ", ")", ")");
    add(c, " ", "(", "(");
  }
  // \big{\}} -> \big\}
  for (const auto& c : all16) {
    add(c, "", "\\}", "\\}");
    add(c, "", "\\{", "\\{");
    add(c, " ", "\\}", "\\}");
    add(c, " ", "\\{", "\\{");
  }
  // \big{|} -> \big|
  for (const auto& [a, b] : pairs8) {
    add(a, "", "|", "|");
    add(b, "", "|", "|");
    add(a, " ", "|", "|");
    add(b, " ", "|", "|");
  }
  // \big{\|} -> \big\|
  for (const auto& [a, b] : pairs8) {
    add(a, "", "\\|", "\\|");
    add(b, "", "\\|", "\\|");
    add(a, " ", "\\|", "\\|");
    add(b, " ", "\\|", "\\|");
  }
  // \big{]} -> \big] then \big{[} -> \big[ (first six families); \biggm / \biggl do [ first and keep
  // the backslash of the replacement template ("\biggm\[").
  for (size_t k = 0; k < 6; ++k) {
    const auto& [a, b] = pairs8[k];
    add(a, "", "]", "]");
    add(b, "", "]", "]");
    add(a, " ", "]", "]");
    add(b, " ", "]", "]");
    add(a, "", "[", "[");
    add(b, "", "[", "[");
    add(a, " ", "[", "[");
    add(b, " ", "[", "[");
  }
  for (size_t k = 6; k < 8; ++k) {
    const auto& [a, b] = pairs8[k];
    add(a, "", "[", "\\[");
    add(b, "", "[", "\\[");
    add(a, " ", "[", "\\[");
    add(b, " ", "[", "\\[");
    add(a, "", "]", "\\]");
    add(b, "", "]", "\\]");
    add(a, " ", "]", "\\]");
    add(b, " ", "]", "\\]");
  }
  // \big{\rangle} -> "\big\rangle " (no \Biggm entry in the reference).
  for (const auto& c : all16) {
    if (c == "Biggm") continue;
    add(c, "", "\\rangle", "\\rangle ");
    add(c, "", "\\langle", "\\langle ");
    add(c, " ", "\\rangle", "\\rangle ");
    add(c, " ", "\\langle", "\\langle ");
  }
  rules.emplace_back("\\bigtimes", "\\times");
  return rules;
}

}  // namespace

std::string FixEquationBig(std::string_view latex) {
  static const std::vector<Rule> kRules = BuildBigRules();
  std::string out(latex);
  for (const auto& [from, to] : kRules) {
    if (out.find(from) != std::string::npos) out = py::ReplaceAll(out, from, to);
  }
  return out;
}

}  // namespace mineru::pipeline
