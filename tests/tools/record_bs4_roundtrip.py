#!/usr/bin/env python3
"""Records str(BeautifulSoup(html, "html.parser")) for table HTML snippets into
tests/fixtures/bs4_roundtrip_v34.json (read by tests/pipeline/outputs_v34_test.cc, OutputsV34Html):
the parse + re-serialisation MinerU 3.4.4's table merge applies to a merged table.

  python3 tests/tools/record_bs4_roundtrip.py --bs4 BS4.git [--bs4-rev HEAD] -o tests/fixtures/bs4_roundtrip_v34.json

--bs4: a bare git mirror of beautifulsoup4 (package at bs4/); recorded from qundao/mirror-beautifulsoup4
HEAD 3bc904f with Python 3.11 (html.parser differs between Python versions)."""
import argparse, json, os, random, sys, tempfile, warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_mineru_344 import materialise_bs4  # noqa: E402

CASES = [
    "<table><tr><td>a<td>b</tr></table>",
    "<table><tr><td>x</b></td><br></br></tr></table>",
    "<table><tr><td title=\"a>b\">v</td></tr></table>",
    "<table><tr><td/><td>v</td></tr></table>",
    "<table><tr><td><eq>x < 1</eq></td><td><eq>a<1</eq></td></tr></table>",
    "<table><!-- c --><tr><td>x</td></tr></table>",
    "<table>\n <tr>\n  <td>x</td>\n </tr>\n</table>",
    "<table><tr><td> </td><td>\t</td><td>a </td><td>\u00a0</td></tr></table>",
    "<TABLE><Tr><TD COLSPAN=2>x</TD></tR></TABLE>",
    "<table><tr><td>x</td></tr>",
    "<table><tr><td>a &lt;b&gt; \"q\" 's'</td></tr></table>",
    "<table><tr><td class=a  id = \"b\" >x</td></tr></table>",
    "<table><tr><td><p>para</p><ul><li>one<li>two</ul></td></tr></table>",
    "<table><tr><td>a</ td></tr></table>",
    "<table><tr><td>1 < 2 and 3 <4</td></tr></table>",
    "<table><tr><td>a<?pi?>b</td></tr></table>",
    "<table><caption>Cap</caption><colgroup><col width=\"1\"><col></colgroup><tr><td>x</td></tr></table>",
    "<table><tr><td>&bogus; &amp &ampx; &copy &#169 &#x41; &#128; &#0; &#1; a&b &- &#12a;</td></tr></table>",
    "<table><tr><td title=\"&copyx &bogus; &#1; &#128; &amp\">x</td></tr></table>",
    "<table><tr><td>&notin; &notit; &lt3 &NotEqualTilde; &fjlig;</td></tr></table>",
    "<table><tr><td a='1' A=\"2\" b='x\"y' c=\"x'y\" d='x\"&apos;'>v</td></tr></table>",
    "<table><thead><tr><th>h</th></tr></thead><tbody><tr><td>x</td></tr></tbody><tfoot><tr><td>f</td></tr></tfoot></table>",
    "<table><tr><td><math><mi>x</mi></math><svg><path d=\"M0 0\"/></svg></td></tr></table>",
    "<table border=\"1\" ><tr><td colspan=\"2\"rowspan=\"3\">x</td><td colspan=2/>y<br/ ></td></tr></table>",
    "<table><tr><td>&AMP; &#X41; &#65 &#x41x; &notin &notx; &amp;amp;</td><td title=\"&notin; &notx &AMP &#65x\">t</td></tr></table>",
    "<table><tr><td>a\r\nb</td><td>\r\n</td><td>&#32;&#10;</td></tr></table>",
    "<table><tr><td>x</td></tr></table>\n",
    "<table><tr><td><pre>  keep  </pre><textarea> \n </textarea></td></tr></table>",
    "<table><tr><td>&lt;eq&gt;x&lt;/eq&gt;</td><td><eq></eq></td></tr></table>",
]

# Seeded random snippets from these atoms (well- and ill-formed markup, references, whitespace).
ATOMS = ["<table>", "</table>", "<tr>", "</tr>", "<td>", "</td>", "<th colspan=2>", "<td rowspan='3' class=\"a b\">",
         "</td >", "<br>", "<br/>", "</br>", "<img src=x alt=\"a'b\">", "<b>", "</b>", "<eq>", "</eq>", "x", " ", "\n", "\t",
         "&amp;", "&lt;", "&gt;", "&nbsp;", "&quot;", "&apos;", "&copy", "&#169;", "&#xA9;", "&#128;", "&#0;", "&bad;", "&",
         "<", ">", "\"", "'", "=", "/", "<!-- c -->", "<!DOCTYPE html>", "<p>", "</p>", "中文", "\u00a0", "\u3000",
         "<td/>", "<TD>", "</TD>", "<span style=\"a:b\">", "</span>", "<sup>", "</sup>", "<tbody>", "</tbody>", "<thead>",
         "</thead>", "a=b", "<td title=&amp;x>", "<td x=\"1\" x=\"2\">", "&lt;/td&gt;", "<td\n colspan=\"2\">", "&AElig;",
         "&ampx", "<a href='?a=1&b=2'>", "</a>", "<hr>", "<col>", "<div>", "</div>", "<?x?>", "</ td>", "&#x;", "&#;",
         "&#12a;", "</>", "</ <x>"]


def random_snippets(n, seed=4):
    rng = random.Random(seed)
    return ["".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 25))) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bs4", required=True)
    ap.add_argument("--bs4-rev", default="HEAD")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bs4_")
    materialise_bs4(os.path.abspath(a.bs4), a.bs4_rev, root)
    sys.path.insert(0, root)
    warnings.simplefilter("ignore")
    from bs4 import BeautifulSoup
    res = [{"html": h, "bs4": str(BeautifulSoup(h, "html.parser"))} for h in CASES + random_snippets(400)]
    with open(a.out, "w") as f:
        json.dump({"python": sys.version.split()[0], "cases": res}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
