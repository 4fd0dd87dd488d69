// OTSL -> HTML and the equation fix chain, against expectations derived by hand from
// mineru-vl-utils post_process (otsl2html.py, equation_*.py) at the 2509-era chain.
#include <gtest/gtest.h>

#include "pipeline/common/formula.h"
#include "pipeline/common/otsl.h"

namespace mineru::pipeline {
namespace {

TEST(Otsl, SimpleGrid) {
  EXPECT_EQ(OtslToHtml("<fcel>A<fcel>B<nl><fcel>C<fcel>D<nl>"),
            "<table><tr><td>A</td><td>B</td></tr><tr><td>C</td><td>D</td></tr></table>");
}

TEST(Otsl, RowAndColumnSpans) {
  // Row 0: Region | 2019 spans two columns | Total; row 1: (Region continues) Q1 Q2 (Total continues).
  const std::string otsl =
      "<fcel>Region<fcel>2019<lcel><fcel>Total<nl>"
      "<ucel><fcel>Q1<fcel>Q2<ucel><nl>"
      "<fcel>North<fcel>10<fcel>12<fcel>22<nl>";
  EXPECT_EQ(
      OtslToHtml(otsl),
      "<table><tr><td rowspan=\"2\">Region</td><td colspan=\"2\">2019</td><td rowspan=\"2\">Total</td></tr>"
      "<tr><td>Q1</td><td>Q2</td></tr>"
      "<tr><td>North</td><td>10</td><td>12</td><td>22</td></tr></table>");
}

TEST(Otsl, CrossCellSpansBothWays) {
  // A covers a 2x2 block: lcel to its right, ucel below, xcel diagonally; rowspan before colspan.
  EXPECT_EQ(OtslToHtml("<fcel>A<lcel><fcel>B<nl><ucel><xcel><fcel>C<nl>"),
            "<table><tr><td rowspan=\"2\" colspan=\"2\">A</td><td>B</td></tr><tr><td>C</td></tr></table>");
}

TEST(Otsl, ShortRowsArePaddedAndTextIsEscapedAndStripped) {
  // Row 1 has one cell: padded with <ecel> -> empty <td></td>. Text is stripped and html.escape'd.
  EXPECT_EQ(OtslToHtml("<fcel> a & b <fcel><x> \"q\" 'r'<nl><fcel>only<nl>"),
            "<table><tr><td>a &amp; b</td><td>&lt;x&gt; &quot;q&quot; &#x27;r&#x27;</td></tr>"
            "<tr><td>only</td><td></td></tr></table>");
}

TEST(Otsl, ExistingHtmlPassesThroughAndNonTablesVanish) {
  EXPECT_EQ(OtslToHtml("<table><tr><td>x</td></tr></table>"), "<table><tr><td>x</td></tr></table>");
  // Leading whitespace defeats the pass-through; without OTSL cells the result is "".
  EXPECT_EQ(OtslToHtml(" <table><tr><td>x</td></tr></table>"), "");
  EXPECT_EQ(OtslToHtml("plain words"), "");
  EXPECT_EQ(OtslToHtml("<nl><nl>"), "");
}

TEST(Otsl, QuirkTextsFallOutOfStep) {
  // Two <nl> in a row: the rebuilt token/text list consumes only one of them, so the next row's
  // tokens no longer line up and "b" is lost.
  EXPECT_EQ(OtslToHtml("<fcel>a<nl><nl><fcel>b<nl>"), "<table><tr><td>a</td></tr><tr><td></td></tr></table>");
  // Text before the first tag desynchronises everything: all cells come out empty.
  EXPECT_EQ(OtslToHtml("Table 1<fcel>x<nl>"), "<table><tr><td></td></tr></table>");
  // A continuation tag with no origin leaves the grid's default empty cell.
  EXPECT_EQ(OtslToHtml("<lcel><fcel>a<nl>"), "<table><tr><td></td><td>a</td></tr></table>");
  // Text after an <ecel> is kept in the list but belongs to no cell.
  EXPECT_EQ(OtslToHtml("<ecel>lost<fcel>b<nl>"), "<table><tr><td></td><td>b</td></tr></table>");
}

TEST(Formula, SimpleFixes) {
  EXPECT_EQ(FixEquationLeq("a<b<c"), "a< b< c");
  EXPECT_EQ(FixEquationEqqcolon("x \\coloneqq y \\eqqcolon z"), "x := y =: z");
  EXPECT_EQ(FixEquationDoubleSubscript("x_{1}_{2}+y"), "x+y");
  EXPECT_EQ(FixEquationDoubleSubscript("a_ {b{c}} _{d} = 1"), "a = 1");
  EXPECT_EQ(FixEquationDoubleSubscript("a_{i}^{2}"), "a_{i}^{2}");
  EXPECT_EQ(FixEquationDoubleSubscript("a_{b{c{d}}}_{e}"),
            "a_{b{c{d}}}_{e}");  // two nesting levels: no match
  EXPECT_EQ(FixUnbalancedBraces("\\frac{a}{b}}"), "\\frac{a}{b}");
  EXPECT_EQ(FixUnbalancedBraces("{x"), "x");
  EXPECT_EQ(FixUnbalancedBraces("\\{ a"), "\\{ a");      // escaped brace is ignored
  EXPECT_EQ(FixUnbalancedBraces("\\\\{a}"), "\\\\{a}");  // "\\" then a real brace pair
}

TEST(Formula, BigFamily) {
  EXPECT_EQ(FixEquationBig("\\big{(} x \\Big{)}"), "\\big( x \\Big)");
  EXPECT_EQ(FixEquationBig("\\bigl {[} x \\bigr{]}"), "\\bigl[ x \\bigr]");
  EXPECT_EQ(FixEquationBig("\\Bigg{\\{} y \\Bigg{\\}}"), "\\Bigg\\{ y \\Bigg\\}");
  EXPECT_EQ(FixEquationBig("\\biggm{|} \\Big{\\|}"), "\\biggm| \\Big\\|");
  EXPECT_EQ(FixEquationBig("\\biggm{[}"), "\\biggm\\[");                // template keeps "\["
  EXPECT_EQ(FixEquationBig("\\Big{\\langle}x"), "\\Big\\langle x");     // trailing space added
  EXPECT_EQ(FixEquationBig("\\Biggm{\\langle}"), "\\Biggm{\\langle}");  // no Biggm entry
  EXPECT_EQ(FixEquationBig("A \\bigtimes B"), "A \\times B");
}

TEST(Formula, LeftRightBalancing) {
  // One unmatched \left( outside arrays: closed in place with " \right.".
  EXPECT_EQ(MatchEquationLeftRight("\\left( x + y").value(), "\\left( \\right. x + y");
  // Quirk: "\rightarrow" counts as a right delimiter (unescaped '.'), so this is "balanced".
  EXPECT_EQ(MatchEquationLeftRight("a \\rightarrow \\left( b").value(), "a \\rightarrow \\left( b");
  // Only the first node is repaired when there is no array; nodes lose surrounding spaces.
  EXPECT_EQ(MatchEquationLeftRight("\\left( a & b \\\\ c").value(), "\\left( \\right. a&b\\\\c");
  // Inside an array the cell is repaired and the array is re-joined without spaces.
  EXPECT_EQ(MatchEquationLeftRight("\\begin{array}{l} \\left\\{ x \\\\ y \\end{array}").value(),
            "\\begin{array}{l}\\left\\{ \\right. x\\\\y\\end{array}");
  // Whitespace-only pieces between tokens are dropped when a span is repaired.
  EXPECT_EQ(MatchEquationLeftRight("\\left( \\left[ x \\right]").value(),
            "\\left( \\right.\\left[ x \\right]");
  // An unmatched \right gets "\left. " in front.
  EXPECT_EQ(MatchEquationLeftRight("x \\right)").value(), "x \\left. \\right)");
  // Balanced input is returned as is (not even stripped).
  EXPECT_EQ(MatchEquationLeftRight("  \\left( x \\right)  ").value(), "  \\left( x \\right)  ");
  // \end{array} before \begin{array}: the reference raises.
  EXPECT_FALSE(MatchEquationLeftRight("\\end{array} \\left( x \\begin{array}{c}").has_value());
}

TEST(Formula, ChainKeepsOriginalWhenAStepRaises) {
  // The whole chain is inside one try/except: even "<" is not spaced when left/right raises.
  const std::string bad = "\\end{array} \\left( x<y \\begin{array}{c}";
  EXPECT_EQ(FixEquation(bad), bad);
  EXPECT_EQ(FixEquation("E<mc^{2} \\tag{3}"), "E< mc^{2} \\tag{3}");
  EXPECT_EQ(FixEquation("x_{a}_{b} \\coloneqq \\big{(}y}"), "x := \\big(y");
}

TEST(Formula, BracketsAndEquationBlockCombination) {
  EXPECT_EQ(AddEquationBrackets("  E=mc^2 \n"), "\\[\nE=mc^2\n\\]");
  EXPECT_EQ(AddEquationBrackets("\\[x\\]"), "\\[x\\]");
  EXPECT_EQ(AddEquationBrackets("\\[x"), "\\[x\n\\]");
  // Two \tag in total -> each becomes "(n)".
  EXPECT_EQ(CombineEquations({"a=b \\tag{1}", "c=d \\tag {2}"}),
            "\\begin{array}{l} a=b (1) \\\\ c=d (2) \\\\ \\end{array}");
  // A single \tag is kept.
  EXPECT_EQ(CombineEquations({"a \\tag{1}", "b"}), "\\begin{array}{l} a \\tag{1} \\\\ b \\\\ \\end{array}");
  const double block[4] = {0.1, 0.31, 0.9, 0.42};
  const double inside[4] = {0.12, 0.315, 0.88, 0.36};
  const double half[4] = {0.1, 0.40, 0.9, 0.44};
  EXPECT_DOUBLE_EQ(BboxCoverRatio(block, inside), 1.0);
  EXPECT_NEAR(BboxCoverRatio(block, half), 0.5, 1e-9);
}

}  // namespace
}  // namespace mineru::pipeline
