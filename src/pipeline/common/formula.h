// pipeline/common/formula.h — the equation post-processing of mineru-vl-utils (0.1.x, 2509 era).
//
// `_process_equation` applies, in order: left/right balancing, double-subscript removal,
// \eqqcolon/\coloneqq, \big{...} fixes, "<" -> "< ", unmatched-brace deletion. If any step raises, the
// reference keeps the block's original content (try/except around the whole chain). Afterwards
// equation_blocks may merge their equations into one array, and every equation is wrapped in \[ \].
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mineru::pipeline {

// The full chain. Returns the input unchanged when the reference would raise inside the chain
// (only the left/right step can, on \end{array} before its \begin{array}).
std::string FixEquation(std::string_view latex);

// try_match_equation_left_right. nullopt = the reference raises (IndexError on an unbalanced
// array stack). Counts use the reference's regexes: note "\right" followed by ANY character counts as
// a right delimiter (so "\rightarrow" does), while "\left)" and "\left/" do not count as lefts.
std::optional<std::string> MatchEquationLeftRight(std::string_view latex);

// 1.2.1's try_match_equation_left_right: where the array structure is broken (an \end{array} without
// its begin, or a begin left open) the input comes back unchanged instead of raising.
std::string MatchEquationLeftRightV12(std::string_view latex);

// 1.2.1's try_fix_equation_delimeters: strip; drop a leading "\[" and a trailing "\]"; strip again.
std::string FixEquationDelimiters(std::string_view latex);

// 1.2.1's _process_equation: delimiters, left/right (V12), then the same steps as FixEquation.
std::string FixEquationV12(std::string_view latex);

// Removes every `_ {..} _ {..}` pair (both subscripts, one brace nesting level), regex
// _\s*\{([^{}]|\{[^{}]*\})*\}\s*_\s*\{([^{}]|\{[^{}]*\})*\} replaced by "".
std::string FixEquationDoubleSubscript(std::string_view latex);

// \eqqcolon -> "=:" then \coloneqq -> ":=" (plain substring replacement).
std::string FixEquationEqqcolon(std::string_view latex);

// \big{)} -> \big) and friends (see formula_big.cc for the exact table).
std::string FixEquationBig(std::string_view latex);

// Every "<" becomes "< ".
std::string FixEquationLeq(std::string_view latex);

// Deletes '{' / '}' that cannot be paired (braces preceded by an odd number of backslashes are
// escaped and ignored).
std::string FixUnbalancedBraces(std::string_view latex);

// _add_equation_brackets: strip; prefix "\[\n" unless it starts with "\["; suffix "\n\]" unless it
// ends with "\]".
std::string AddEquationBrackets(std::string_view latex);

// _combined_equations of the equation_block merge: if the contents hold more than one \tag{...} in
// total, each `\tag\s*{x}` becomes "(x)"; then "\begin{array}{l} " + each content + " \\ " ... +
// "\end{array}".
std::string CombineEquations(const std::vector<std::string>& contents);

// Fraction of box b inside box a: intersection area / area of b (0 when b has no area).
double BboxCoverRatio(const double a[4], const double b[4]);

}  // namespace mineru::pipeline
