#!/usr/bin/env python3
"""Writes samples/report.pdf: the two-page sample of the 1.2 extraction (mineru-vl-utils 1.2.1 / MinerU
3.4.4 outputs): a bar chart, a flowchart figure (an image whose analysis is Mermaid), a table that
continues on the next page (its last row's first cell runs over the page break), a paragraph that
continues in the next column, and a list. Plain PDF operators, no PDF library.

samples/report_replay.json holds the model's answers for it (layout boxes in the same places), so
`parse samples/report.pdf --replay samples/report_replay.json` runs without the model."""
import os

from make_sample_pdf import H, text, write_pdf  # the same page size, text operator and PDF writer


def lines(x, y, rows, size=10, lead=13):
    return "".join(text(x, y + i * lead, size, r) for i, r in enumerate(rows))


def rect(x, y, w, h, gray):
    return f"{gray} g {x:.1f} {H - y - h:.1f} {w:.1f} {h:.1f} re f 0 g\n"


def box(x, y, w, h):
    return f"0.8 w {x:.1f} {H - y - h:.1f} {w:.1f} {h:.1f} re S\n"


def arrow(x0, y, x1):
    return f"0.8 w {x0:.1f} {H - y:.1f} m {x1:.1f} {H - y:.1f} l S {x1 - 5:.1f} {H - y + 3:.1f} m {x1:.1f} {H - y:.1f} l " \
           f"{x1 - 5:.1f} {H - y - 3:.1f} l S\n"


def table(y, rows, widths=(200, 130, 138), x=72, row_h=20):
    c = ""
    for r, row in enumerate(rows):
        xx = x
        for k, cell in enumerate(row):
            c += text(xx + 6, y + 5 + r * row_h, 9.5, cell, "F2" if r == 0 else "F1")
            xx += widths[k]
    for r in range(len(rows) + 1):
        c += f"0.6 w {x} {H - y - r * row_h:.1f} m {x + sum(widths)} {H - y - r * row_h:.1f} l S\n"
    return c


def page1():
    c = text(72, 56, 20, "Parsing Report", "F2")
    c += lines(72, 96, ["This report shows what the 1.2 extraction produces: a chart read as a table, an image with",
                        "its analysis, a table that continues on the next page, a list and a paragraph that",
                        "continues in the next column."])
    # Bar chart (y 150..300).
    c += "0.6 w 150 {0:.1f} m 150 {1:.1f} l 460 {1:.1f} l S\n".format(H - 150, H - 300)
    for i, (label, v) in enumerate([("CPU q8", 0.5), ("CPU q4", 0.7), ("GPU", 12)]):
        h = 10 + v * 11
        c += rect(185 + i * 95, 300 - h, 50, h, 0.35)
        c += text(185 + i * 95, 304, 8, label)
    c += text(150, 316, 9, "Figure 1. Pages per minute by backend.", "F3")
    # Flowchart figure (y 345..425).
    for i, label in enumerate(["Page image", "Layout", "Recognition", "Markdown"]):
        c += box(110 + i * 110, 365, 85, 36) + text(118 + i * 110, 378, 9, label)
        if i:
            c += arrow(110 + i * 110 - 25, 383, 110 + i * 110)
    c += text(150, 436, 9, "Figure 2. The two-stage pipeline.", "F3")
    c += text(72, 476, 9, "Table 1. Pages parsed per backend and month.", "F3")
    c += table(492, [["Backend", "Month", "Pages"], ["CPU q8", "January", "1200"], ["CPU q4", "January", "1500"],
                     ["GPU, batched decoding", "January", "24000"], ["CPU q8, multi-", "February", "1300"]])
    c += text(300, 760, 9, "1")
    return c


def page2():
    c = table(48, [["Backend", "Month", "Pages"], ["threaded", "", ""], ["CPU q4", "February", "1650"],
                   ["GPU", "February", "25100"]])
    c += lines(72, 160, ["Throughput grows with batching: the", "engine decodes many blocks of a page", "together, so the"])
    c += lines(318, 160, ["cost of a page falls as its block count", "rises, up to the memory of the machine."])
    c += lines(84, 230, ["- Layout: one request per page at 1036 x 1036 pixels.",
                         "- Recognition: one request per block, batched.",
                         "- Cross-page tables: one text request per table pair."], lead=16)
    c += text(300, 760, 9, "2")
    return c


def build(path):
    write_pdf(path, [page1(), page2()])

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    build(os.path.join(here, "..", "samples", "report.pdf"))
