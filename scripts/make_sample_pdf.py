#!/usr/bin/env python3
"""Writes samples/sample.pdf: a two-page paper-like document (title, two-column text, a ruled table,
a display formula, a figure, captions, header/footer, page numbers) with plain PDF operators, so the
repository ships a realistic input without depending on any PDF library."""
import os

W, H = 612, 792
LOREM = ("Document parsing turns page images into structured text. The layout stage finds blocks and "
         "their reading order; the recognition stage reads each block: text, tables as HTML and formulas "
         "as LaTeX. A native engine runs both stages on a laptop processor without Python.").split()


def esc(s):
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text(x, y, size, s, font="F1"):
    return f"BT /{font} {size} Tf {x:.1f} {H - y - size:.1f} Td ({esc(s)}) Tj ET\n"


def wrap(words, width_chars):
    lines, cur = [], ""
    for w in words:
        if len(cur) + len(w) + 1 > width_chars:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + " " + w).strip()
    if cur:
        lines.append(cur)
    return lines


def column(x, y, words, size=9.5, width_chars=52, lead=12.5):
    out = ""
    for i, line in enumerate(wrap(words, width_chars)):
        out += text(x, y + i * lead, size, line)
    return out


def page(n, title):
    c = text(72, 36, 8, "mineru.cpp sample document", "F1") + text(470, 36, 8, f"Page {n} of 2")
    c += "0.5 w 72 746 m 540 746 l S\n" if False else ""
    c += text(72, 70, 18, title, "F2")
    c += text(72, 96, 10, "A. Author, B. Writer  -  Example Institute", "F3")
    body = LOREM * 3
    c += column(72, 126, body[:90])
    c += column(318, 126, body[30:120])
    # Table with ruled lines.
    ty = 330
    c += text(72, ty - 18, 9, f"Table {n}. Measured throughput of the two stages.", "F3")
    rows = [["Stage", "Tokens", "Seconds", "Tokens/s"], ["Layout", "440", "29.4", "15.0"],
            ["Recognition", "1100", "57.8", "19.0"], ["Total", "1540", "87.2", "17.7"]]
    for r, row in enumerate(rows):
        for k, cell in enumerate(row):
            c += text(80 + k * 115, ty + 6 + r * 20, 9, cell, "F2" if r == 0 else "F1")
    for r in range(len(rows) + 1):
        yy = H - (ty + r * 20)
        c += f"0.6 w 72 {yy:.1f} m 540 {yy:.1f} l S\n"
    # Display formula (as text) with a tag.
    c += text(200, 440, 12, "E = m c^2 + \\int_0^1 f(x) dx", "F3") + text(500, 440, 11, f"({n})")
    # Figure: grey box with a caption.
    c += "0.82 g 150 {:.1f} 312 150 re f 0 g\n".format(H - 640)
    c += "0.35 g 190 {:.1f} 60 90 re f 260 {:.1f} 60 120 re f 330 {:.1f} 60 60 re f 0 g\n".format(
        H - 630, H - 630, H - 630)
    c += text(150, 650, 9, f"Figure {n}. Pages per minute by backend.", "F3")
    c += column(72, 680, body[:40], width_chars=105)
    c += text(300, 760, 9, str(n))
    return c


def write_pdf(path, pages):
    """Writes a PDF of the given page content streams (US Letter; fonts F1 Helvetica, F2 bold,
    F3 oblique), with its cross-reference table."""
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", None,
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Oblique /Encoding /WinAnsiEncoding >>"]
    kids = []
    for content in pages:
        kids.append(len(objs) + 1)
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {W} {H}] "
                    f"/Resources << /Font << /F1 3 0 R /F2 4 0 R /F3 5 0 R >> >> /Contents {len(objs) + 2} 0 R >>")
        objs.append(f"<< /Length {len(content.encode())} >>\nstream\n{content}endstream")
    objs[1] = "<< /Type /Pages /Kids [" + " ".join(f"{k} 0 R" for k in kids) + f"] /Count {len(kids)} >>"
    out = b"%PDF-1.4\n"
    offs = []
    for i, o in enumerate(objs):
        offs.append(len(out))
        out += f"{i + 1} 0 obj\n{o}\nendobj\n".encode()
    x = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for o in offs:
        out += f"{o:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{x}\n%%EOF\n".encode()
    with open(path, "wb") as f:
        f.write(out)


def build(path):
    write_pdf(path, [page(1, "Native Document Parsing"), page(2, "Results and Discussion")])

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    build(os.path.join(here, "..", "samples", "sample.pdf"))
