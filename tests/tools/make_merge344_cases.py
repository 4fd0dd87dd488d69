#!/usr/bin/env python3
"""Writes the cross-page table merge cases ("merge_*", "table_merge": true) into
tests/tools/mineru344_cases.json (replacing earlier merge_* cases, keeping the others). Inputs only;
record_mineru_344.py --bs4 ... then runs MinerU 3.4.4's merge_table on them with real bs4."""
import json, os, random

HERE = os.path.dirname(os.path.abspath(__file__))
A4 = [612, 792]


def b(type_, y0, y1, content, x0=0.1, x1=0.9, **kw):
    d = {"type": type_, "bbox": [x0, y0, x1, y1], "angle": 0, "content": content}
    d.update(kw)
    return d


def t(html, y0=0.1, y1=0.9, cm=None, **kw):
    if cm is not None:
        kw["cell_merge"] = cm
    return b("table", y0, y1, html, **kw)


def case(name, *pages):
    return {"name": name, "table_merge": True, "sizes": [A4] * len(pages), "pages": list(pages)}


def random_table(rng, cols, rows, header):
    """A grid of cols x rows with random colspan/rowspan cells, some blank; header = first row."""
    occ = set()
    out = []
    for r in range(rows):
        tr = []
        c = 0
        while c < cols:
            if (r, c) in occ:
                c += 1
                continue
            cs = rng.choice([1, 1, 1, 2]) if c + 1 < cols else 1
            while any((r, c + k) in occ for k in range(cs)):
                cs -= 1
            rs = rng.choice([1, 1, 1, 1, 2, 3])
            for dr in range(rs):
                for k in range(cs):
                    occ.add((r + dr, c + k))
            attrs = (f' colspan="{cs}"' if cs > 1 else "") + (f' rowspan="{rs}"' if rs > 1 else "")
            txt = rng.choice(["", "", f"v{r}{c}", f"x&amp;{r}", f"t {r}<br>{c}", "&nbsp;", f"<eq>a_{c}</eq>"])
            tag = "th" if header and r == 0 else "td"
            tr.append(f"<{tag}{attrs}>{txt}</{tag}>")
            c += cs
        out.append("<tr>" + "".join(tr) + "</tr>")
    return out


def random_cases(n, seed=344):
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        cols = rng.randint(2, 5)
        cols2 = cols if rng.random() < 0.7 else rng.randint(2, 5)
        prev_rows = random_table(rng, cols, rng.randint(2, 4), header=True)
        cur_rows = random_table(rng, cols2, rng.randint(1, 4), header=False)
        if rng.random() < 0.5:
            cur_rows = [prev_rows[0]] + cur_rows  # repeated header
        cm = None if rng.random() < 0.2 else [rng.randint(0, 1) for _ in range(max(cols, cols2))]
        cases.append(case(f"merge_random_{i:02d}",
                          [t("<table>" + "".join(prev_rows) + "</table>", 0.5, 0.95)],
                          [t("<table>" + "".join(cur_rows) + "</table>", 0.05, 0.4, cm=cm)]))
    return cases


# Markup-heavy variants: cell text from MARKUP (entities, whitespace, nested and stray tags, comments,
# quotes in attributes), 2-3 pages, continuation rows sometimes repeating the first page's first row.
MARKUP = ["", " ", "\n", "&nbsp;", "a&amp;b", "&lt;x&gt;", "&copy;&#8212;&#x41;", "&bogus; &amp", "<b>B</b> <i>i</i>",
          "<span class='c' id=\"d\">s</span>", "<!-- c -->k", "<p>p1</p><p>p2", "x<br>y<br/>z", "<eq>\\alpha &lt; 1</eq>",
          "<img src=\"a.png\" alt='q\"'>", "<sup>1</sup>", "Ｆｕｌｌ　ｗｉｄｔｈ", "\u3000", "  pad  ", "<u>u</u>\t", "1 < 2",
          "<td>nested</td>", "&quot;q&quot;", "it's", "<a href=\"x?a=1&b=2\">l</a>"]


def random_markup_cases(n, seed=3441):
    rng = random.Random(seed)

    def rows_of(cols, nrows, header):
        out = []
        for r in random_table(rng, cols, nrows, header):
            parts = r.split("</td>")
            out.append("</td>".join(p if not p.endswith(">") or rng.random() < 0.5 else p + rng.choice(MARKUP)
                                    for p in parts))
        return out

    cases = []
    for i in range(n):
        pages, cols = [], rng.randint(1, 4)
        for p in range(rng.choice([2, 2, 3])):
            c = cols if rng.random() < 0.7 else rng.randint(1, 5)
            rows = rows_of(c, rng.randint(1, 4), header=(p == 0 or rng.random() < 0.3))
            if p > 0 and rng.random() < 0.4:
                rows = [pages[0][-1]["content"][7:].split("</tr>")[0] + "</tr>"] + rows
            cm = None if (p == 0 or rng.random() < 0.2) else [rng.randint(0, 1) for _ in range(rng.randint(1, 6))]
            pages.append([t("<table>" + "".join(rows) + "</table>", 0.06 if p else 0.5, 0.9, cm=cm)])
        cases.append(case(f"merge_random_markup_{i:02d}", *pages))
    return cases


RANDOM_CASES = random_cases(30) + random_markup_cases(15)

H3 = "<tr><th>Name</th><th>Desc</th><th>Qty</th></tr>"
CASES = [
    case("merge_header_repeat_mixed",
         [b("text", 0.05, 0.08, "Intro text."), b("table_caption", 0.09, 0.1, "Table 1: Items"),
          t("<table>" + H3 + "<tr><td>A</td><td>first</td><td>1</td></tr><tr><td>B</td><td>second part</td>"
            "<td>2</td></tr></table>", 0.11, 0.95)],
         [t("<table>" + H3 + "<tr><td></td><td>continues here</td><td></td></tr><tr><td>C</td><td>third</td>"
            "<td>3</td></tr></table>", 0.05, 0.4, cm=[0, 1, 0]), b("text", 0.45, 0.5, "After the table.")]),
    case("merge_all_zero_blank_row_footnotes",
         [t("<table><tr><td>p</td><td>q</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td></td><td> </td></tr><tr><td>r</td><td>s</td></tr></table>", 0.05, 0.4, cm=[0, 0]),
          b("table_footnote", 0.41, 0.43, "* first note"), b("table_footnote", 0.44, 0.46, "** second note")]),
    case("merge_no_cell_merge_blank_row_kept",
         [t("<table><tr><td>B</td><td>x</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td></td><td></td></tr><tr><td></td><td>y</td></tr></table>", 0.05, 0.4)]),
    case("merge_flags_on_rowspan_and_colspan",
         [t("<table><tr><td>Group</td><td>Item</td><td>Val</td></tr><tr><td rowspan=\"2\">G1</td><td>a</td>"
            "<td>1</td></tr><tr><td>b is</td><td>2</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td>G1 cont</td><td>long</td><td></td></tr><tr><td>G2</td><td>c</td><td>3</td></tr>"
            "</table>", 0.05, 0.4, cm=[1, 1, 0])]),
    case("merge_flags_colspan_cell",
         [t("<table><tr><td>A</td><td>B</td><td>C</td></tr><tr><td colspan=\"2\">note text</td><td>x</td></tr>"
            "</table>", 0.5, 0.95)],
         [t("<table><tr><td>more</td><td>y</td></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>", 0.05, 0.4,
            cm=[1, 1, 0])]),
    case("merge_flags_cur_colspan",
         [t("<table><tr><td>a</td><td>b</td><td>c</td></tr><tr><td>x1</td><td>x2</td><td>x3</td></tr></table>",
            0.5, 0.95)],
         [t("<table><tr><td colspan=\"2\">tail</td><td>z</td></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>",
            0.05, 0.4, cm=[0, 1, 1])]),
    case("merge_tail_rowspan_clip",
         [t("<table><tr><td>h1</td><td>h2</td></tr><tr><td rowspan=\"3\">G</td><td>a</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td rowspan=\"2\"></td><td>b</td></tr><tr><td>c</td></tr><tr><td>d</td><td>e</td></tr>"
            "</table>", 0.05, 0.4, cm=[0, 1])]),
    case("merge_tail_rowspan_clip_beyond",
         [t("<table><tr><td>h1</td><td>h2</td><td>h3</td></tr><tr><td rowspan=\"2\">G</td><td>a</td><td>1</td>"
            "</tr></table>", 0.5, 0.95)],
         [t("<table><tr><td rowspan=\"4\"></td><td>b</td><td>2</td></tr><tr><td>c</td><td>3</td></tr></table>",
            0.05, 0.4, cm=[0, 0, 0])]),
    case("merge_blank_rowspan_carried_down",
         [t("<table><tr><td>k</td><td>v</td><td>w</td></tr><tr><td>a</td><td>b</td><td>c</td></tr></table>",
            0.5, 0.95)],
         [t("<table><tr><td rowspan=\"3\"></td><td>more b</td><td></td></tr><tr><td>d</td><td>e</td></tr>"
            "<tr><td>f</td><td>g</td></tr></table>", 0.05, 0.4, cm=[0, 1, 0])]),
    case("merge_prev_wider_adjust_cur",
         [t("<table><tr>" + "".join(f"<td>c{i}</td>" for i in range(11)) + "</tr><tr><td>分项目说明(含</td>"
            "<td colspan=\"10\">不适用</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td>“是否”的原因)</td><td></td></tr><tr><td>项目可行性</td><td>无</td></tr></table>",
            0.05, 0.4, cm=[1] + [0] * 10)]),
    case("merge_cur_wider_adjust_prev",
         [t("<table><tr><td>k</td><td>v</td></tr><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td>c</td><td colspan=\"2\">d</td></tr><tr><td>e</td><td>f</td><td>g</td></tr></table>",
            0.05, 0.4)]),
    case("merge_caption_cn_continuation",
         [b("table_caption", 0.45, 0.48, "表1 主要数据"),
          t("<table><tr><td>年份</td><td>收入</td></tr><tr><td>2020</td><td>5</td></tr></table>", 0.5, 0.95)],
         [b("table_caption", 0.03, 0.05, "表1 主要数据（续表）"),
          t("<table><tr><td>年份</td><td>收入</td></tr><tr><td>2021</td><td>6</td></tr></table>", 0.06, 0.4)]),
    case("merge_caption_continued_and_post_caption",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95)],
         [b("table_caption", 0.03, 0.05, "Table 1 (continued)"),
          t("<table><tr><td>c</td><td>d</td></tr></table>", 0.06, 0.3),
          b("table_caption", 0.31, 0.33, "Table 2: Next things")]),
    case("merge_caption_cont_three_pages",
         [t("<table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>one</td></tr></table>", 0.5, 0.95)],
         [b("table_caption", 0.03, 0.05, "Table 1 (cont.)"),
          t("<table><tr><th>k</th><th>v</th></tr><tr><td>2</td><td>two</td></tr></table>", 0.06, 0.95)],
         [t("<table><tr><th>k</th><th>v</th></tr><tr><td></td><td>more two</td></tr><tr><td>3</td><td>three</td>"
            "</tr></table>", 0.05, 0.4, cm=[0, 1]),
          b("table_footnote", 0.41, 0.43, "Source: tests.")]),
    case("merge_caption_not_continuation",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95)],
         [b("table_caption", 0.03, 0.05, "Table 2: Other"),
          t("<table><tr><td>c</td><td>d</td></tr></table>", 0.06, 0.3)]),
    case("merge_footnote_veto",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.9),
          b("table_footnote", 0.91, 0.93, "* prev note")],
         [t("<table><tr><td>c</td><td>d</td></tr></table>", 0.06, 0.3)]),
    case("merge_footnote_with_cont_caption",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.9),
          b("table_footnote", 0.91, 0.93, "* prev note")],
         [b("table_caption", 0.03, 0.05, "续表"),
          t("<table><tr><td>c</td><td>d</td></tr></table>", 0.06, 0.3),
          b("table_footnote", 0.31, 0.33, "* cur note")]),
    case("merge_two_footnotes_veto",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.88),
          b("table_footnote", 0.89, 0.91, "* n1"), b("table_footnote", 0.92, 0.94, "* n2")],
         [b("table_caption", 0.03, 0.05, "Table 1 (continued)"),
          t("<table><tr><td>c</td><td>d</td></tr></table>", 0.06, 0.3)]),
    case("merge_width_mismatch",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td>c</td><td>d</td></tr></table>", 0.05, 0.3, x0=0.1, x1=0.7)]),
    case("merge_text_between",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.9), b("text", 0.91, 0.94, "Tail text.")],
         [t("<table><tr><td>c</td><td>d</td></tr></table>", 0.05, 0.3)]),
    case("merge_header_footer_ignored",
         [b("header", 0.01, 0.03, "Running head"), t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.9),
          b("page_number", 0.95, 0.97, "1")],
         [b("header", 0.01, 0.03, "Running head"), t("<table><tr><td>c</td><td>d</td></tr></table>", 0.05, 0.3)]),
    case("merge_markup_serialisation",
         [t("<table><thead><tr><th class=\"h\" colspan=\"1\">Sym</th><th>Value</th></tr></thead><tbody>"
            "<tr><td>α</td><td><eq>x&lt;1</eq> &amp; more</td></tr>"
            "<tr><td rowspan=\"1\" class=\"z\" data-x='q\"t'>line1<br>line2</td><td>A&nbsp;B &quot;q&quot; &#169;</td>"
            "</tr></tbody></table>", 0.5, 0.95)],
         [t("<table><thead><tr><th class=\"h\" colspan=\"1\">Sym</th><th>Value</th></tr></thead><tbody>"
            "<tr><td><b>bold <i>it</i></b></td><td>img <img src=\"data:image/jpeg;base64,QUJD\" alt=\"i\"> end</td></tr>"
            "<tr><td>β</td><td><eq>\\frac{a}{b}</eq><br/>x &gt; y</td></tr></tbody></table>", 0.05, 0.4,
            cm=[1, 1])]),
    case("merge_markup_header_rowspan",
         [t("<table><tr><td rowspan=\"2\">Item</td><td colspan=\"2\">Year</td></tr><tr><td>2020</td><td>2021</td>"
            "</tr><tr><td>x</td><td>1</td><td>2</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td rowspan=\"2\">Item</td><td colspan=\"2\">Year</td></tr><tr><td>2020</td><td>2021</td>"
            "</tr><tr><td>y</td><td>3</td><td>4</td></tr></table>", 0.05, 0.4, cm=[0, 0, 0])]),
    case("merge_markup_entities_attrs",
         [t("<TABLE border=1><TR><TD Class=\"a\" class=\"b\" title='it&apos;s \"x\"'>k&copy;&mdash;&times;</TD>"
            "<td nowrap>v &hellip; &lt;tag&gt; &amp</td></TR></TABLE>", 0.5, 0.95)],
         [t("<table border=\"1\"><tr><td align=center>k2 &euro; &#x4e2d;</td><td><span style=\"color:red\">red</span>"
            "<sup>2</sup><hr></td></tr><tr><td>&deg;C</td><td>&ndash;</td></tr></table>", 0.05, 0.4, cm=[1, 0])]),
    case("merge_unicode_blank_row",
         [t("<table><tr><td>p</td><td>q</td><td>r</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td>&nbsp;</td><td>\u3000</td><td> \u2003</td></tr><tr><td>s</td><td>t</td><td>u</td></tr>"
            "</table>", 0.05, 0.4, cm=[0, 0, 0])]),
    case("merge_img_only_row_kept",
         [t("<table><tr><td>p</td><td>q</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td><img src=\"x.png\"></td><td></td></tr><tr><td>s</td><td>t</td></tr></table>",
            0.05, 0.4, cm=[0, 0])]),
    case("merge_header_normalised_text",
         [t("<table><tr><th>Name</th><th>Unit Qty</th></tr><tr><td>a</td><td>1</td></tr></table>", 0.5, 0.95)],
         [b("table_caption", 0.03, 0.05, "TABLE 1 — CONTINUED"),
          t("<table><tr><th>Na me</th><th>Ｕｎｉｔ&nbsp;Qty</th></tr><tr><td>b</td><td>2</td></tr></table>", 0.06, 0.4)]),
    case("merge_caption_discontinued",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95)],
         [b("table_caption", 0.03, 0.05, "Table 3: Discontinued"),
          t("<table><tr><td>c</td><td>d</td></tr></table>", 0.06, 0.4)]),
    case("merge_header_only_continuation",
         [t("<table><thead><tr><th>k</th><th>v</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>",
            0.5, 0.95)],
         [t("<table><thead><tr><th>k</th><th>v</th></tr></thead></table>", 0.05, 0.2, cm=[0, 1])]),
    case("merge_tbody_into_plain",
         [t("<table><tr><td>1</td><td>2</td></tr></table>", 0.5, 0.95)],
         [t("<table><tbody><tr><td>3</td><td>4</td></tr></tbody></table>", 0.05, 0.2)]),
    case("merge_plain_into_tbody",
         [t("<table><tbody><tr><td>1</td><td>2</td></tr></tbody></table>", 0.5, 0.95)],
         [t("<table><tr><td>3</td><td>4</td></tr><tr><td>5</td><td>6</td></tr></table>", 0.05, 0.2, cm=[1, 1])]),
    case("merge_nested_table",
         [t("<table><tr><td>a</td><td><table><tr><td>in1</td></tr></table></td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td>b</td><td>c</td></tr></table>", 0.05, 0.2, cm=[1, 1])]),
    case("merge_cell_merge_length_mismatch",
         [t("<table><tr><td>a</td><td>b</td><td>c</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td>x</td><td>y</td><td>z</td></tr></table>", 0.05, 0.2, cm=[0, 0, 1, 1, 1])],
         [t("<table><tr><td>p</td><td>q</td><td>r</td></tr></table>", 0.05, 0.2, cm=[1])]),
    case("merge_bad_spans",
         [t("<table><tr><td colspan=\"1\">a</td><td rowspan=\"0\">b</td><td colspan=\"0\">c</td></tr></table>",
            0.5, 0.95)],
         [t("<table><tr><td colspan=\" 2 \">x</td><td>y</td></tr></table>", 0.05, 0.2, cm=[1, 1, 1])]),
    case("merge_multirow_header_rowspan",
         [t("<table><tr><th rowspan=\"2\">Item</th><th colspan=\"2\">Q</th></tr><tr><th>Q1</th><th>Q2</th></tr>"
            "<tr><td>a</td><td>1</td><td>2</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><th rowspan=\"2\">Item</th><th colspan=\"2\">Q</th></tr><tr><th>Q1</th><th>Q2</th></tr>"
            "<tr><td>a cont</td><td></td><td></td></tr><tr><td>b</td><td>3</td><td>4</td></tr></table>", 0.05, 0.3,
            cm=[1, 0, 0])]),
    case("merge_nonblank_rowspan_first_row",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95)],
         [t("<table><tr><td rowspan=\"2\">r</td><td>c</td></tr><tr><td>d</td></tr></table>", 0.05, 0.3, cm=[0, 1])]),
    case("merge_image_between",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.3, 0.7), b("image", 0.72, 0.9, "")],
         [t("<table><tr><td>c</td><td>d</td></tr></table>", 0.05, 0.3)]),
    case("merge_width_just_under_10pct",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95, x0=0.1, x1=0.9)],
         [t("<table><tr><td>c</td><td>d</td></tr></table>", 0.05, 0.3, x0=0.1, x1=0.83)]),
    case("merge_width_just_over_10pct",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95, x0=0.1, x1=0.9)],
         [t("<table><tr><td>c</td><td>d</td></tr></table>", 0.05, 0.3, x0=0.1, x1=0.82)]),
    case("merge_empty_table_content",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95)],
         [t("", 0.05, 0.3)]),
    case("merge_caption_variants",
         [t("<table><tr><td>a</td><td>b</td></tr></table>", 0.5, 0.95)],
         [b("table_caption", 0.03, 0.05, "表２（续）"),
          t("<table><tr><td>c</td><td>d</td></tr></table>", 0.06, 0.95),
          b("table_caption", 0.955, 0.97, "Table 2 (cont’d)")],
         [b("table_caption", 0.03, 0.05, "Continued"),
          t("<table><tr><td>e</td><td>f</td></tr></table>", 0.06, 0.3),
          b("table_caption", 0.31, 0.33, "Table 2 (…continued)")]),
] + RANDOM_CASES


def main():
    p = os.path.join(HERE, "mineru344_cases.json")
    d = json.load(open(p))
    d["cases"] = [c for c in d["cases"] if not c["name"].startswith("merge_")] + CASES
    with open(p, "w") as f:
        json.dump(d, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
