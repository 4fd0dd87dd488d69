#!/usr/bin/env python3
"""Records goldens of mineru-vl-utils 1.2.1's two-step extraction (layout parsing, request planning,
post-processing) for tests/pipeline/vl_utils_v12_test.cc.

Usage:
  git -C <mineru-vl-utils clone> archive mineru_vl_utils-1.2.1-released | tar -x -C /tmp/vlu121
  python3 tests/tools/record_vl_utils_121.py --src /tmp/vlu121 -o tests/pipeline/testdata/vl_utils_121.json

The reference's own modules are imported and run. Its heavy imports (Pillow, loguru, httpx, aiofiles,
tqdm) are replaced by stubs: images are stand-ins that carry only their size (crop rounds like Pillow,
rotate(expand=True) swaps sides, resize/new give the asked size), which is all the planning and the
post-processing look at. MinerU 3.4.4's client configuration is used (image_analysis=True,
enable_table_formula_eq_wrap=True, handle_equation_block=True). The cases are synthetic and seeded.
"""
import argparse
import math
import json
import random
import sys
import types


# ---- stubs ------------------------------------------------------------------------------------------
WARNINGS = []


class _Logger:
    def warning(self, msg, *a):
        WARNINGS.append(msg.split("{")[0].strip() if "{" in msg else msg)

    def debug(self, *a, **k):
        pass

    info = error = debug


def _install_stubs():
    loguru = types.ModuleType("loguru")
    loguru.logger = _Logger()
    sys.modules["loguru"] = loguru

    class FakeImage:
        def __init__(self, size, mode="RGB"):
            self.size = (max(0, int(size[0])), max(0, int(size[1])))
            self.mode = mode

        width = property(lambda s: s.size[0])
        height = property(lambda s: s.size[1])

        def crop(self, box):
            x0, y0, x1, y1 = map(int, map(round, box))  # Pillow Image._crop
            return FakeImage((x1 - x0, y1 - y0))

        def rotate(self, angle, expand=False):
            return FakeImage((self.size[1], self.size[0]) if angle % 180 == 90 else self.size)

        def resize(self, size, *a, **k):
            return FakeImage(size)

        def copy(self):
            return FakeImage(self.size)

        def convert(self, mode):
            return FakeImage(self.size, mode)

        def paste(self, *a, **k):
            pass

        def getpixel(self, xy):
            return (255, 255, 255)

        def save(self, buf, format=None):
            pass

    pil = types.ModuleType("PIL")
    image_mod = types.ModuleType("PIL.Image")
    image_mod.Image = FakeImage
    image_mod.new = lambda mode, size, color=None: FakeImage(size, mode)
    image_mod.Resampling = types.SimpleNamespace(BICUBIC=3)
    draw_mod = types.ModuleType("PIL.ImageDraw")
    draw_mod.Draw = lambda im: types.SimpleNamespace(rectangle=lambda *a, **k: None, text=lambda *a, **k: None)
    font_mod = types.ModuleType("PIL.ImageFont")

    class _Font:
        def __init__(self, size=10):
            self.size = size

        def getbbox(self, text):
            return (0, 0, len(text) * self.size // 2, self.size)

    font_mod.truetype = lambda path, size=10: _Font(size)
    font_mod.load_default = lambda size=10: _Font(size)
    font_mod.FreeTypeFont = font_mod.ImageFont = _Font
    pil.Image, pil.ImageDraw, pil.ImageFont = image_mod, draw_mod, font_mod
    for name, mod in {"PIL": pil, "PIL.Image": image_mod, "PIL.ImageDraw": draw_mod, "PIL.ImageFont": font_mod}.items():
        sys.modules[name] = mod
    for name in ("httpx", "aiofiles"):
        sys.modules[name] = types.ModuleType(name)
    tqdm = types.ModuleType("tqdm")
    tqdm.tqdm = lambda *a, **k: None
    sys.modules["tqdm"] = tqdm
    return FakeImage


# ---- synthetic inputs -------------------------------------------------------------------------------
TYPES = ["text", "title", "doc_title", "paragraph_title", "table", "equation", "formula_number", "code",
         "algorithm", "aside_text", "ref_text", "index", "phonetic", "list_item", "caption", "table_caption",
         "image_caption", "code_caption", "footnote", "table_footnote", "image_footnote", "header", "footer",
         "page_number", "page_footnote", "image", "chart", "list", "image_block", "equation_block", "unknown",
         "inline_formula", "Text", "TABLE", "bogus_type"]
ROT = ["<|rotate_up|>", "<|rotate_right|>", "<|rotate_down|>", "<|rotate_left|>", ""]
SEPS = ["\n", "", "\n", " ", "\njunk line\n", "\n\n"]

TEXTS = [
    "Plain text line.",
    "Inline \\[ a+b \\] and \\[ 1-2, 3 \\] numbers.",
    "Macro \\( A \\toB \\) and \\( x \\inX, \\int \\intY \\timesZ \\).",
    "Blank \\( x = ___ \\) here and \\( ____ \\) and \\(\\).",
    "[Non-Text]",
    "  [Non-Text]  ",
    "中文 \\[ x^2 \\] 文本",
    "\\( a \\subsetB \\) \\( b \\congC \\) unclosed \\( q",
    "Display \\[\\] empty and \\[ – 3 \\]",
    "",
]
TABLES = [
    "<fcel>A<fcel>B<nl><fcel>\\( x^2 \\)<fcel>\\[ y \\]<nl>",
    "<fcel>1<lcel><nl><fcel>2<fcel>3<nl>",
    "<table><tr><td>\\(a\\)</td></tr></table>",
    "[Non-Text]",
    "<fcel><eq>k</eq> and \\(z\\)<ecel><nl>",
]
EQUATIONS = [
    "\\[ a = b \\]",
    "x \\eqqcolon y < z",
    "\\left( a \\right. \\left( b",
    "\\begin{array}{l} \\left( a \\end{array} \\end{array}",
    "{ a } }",
    "[Non-Text]",
]
ANALYSES = [
    "<|class_start|>pure_table<|class_end|><|caption_start|>t<|caption_end|><|content_start|>| a | b |\n| --- | :---: |\n| 1 | x\\|y |<|content_end|>",
    "<|class_start|>pure_table<|class_end|><|content_start|><fcel>1<fcel>\\(q\\)<nl><|content_end|>",
    "<|class_start|>pure_table<|class_end|><|content_start|>not a table<|content_end|>",
    "<|class_start|>Pure_Formula<|class_end|><|content_start|>\\[ E = mc^2 \\]<|content_end|>",
    "<|class_start|>chart<|class_end|><|sub_class_start|>Bar_Chart<|sub_class_end|><|caption_start|>Sales<|caption_end|><|content_start|>| y | v |\n| --- | --- |\n| 2020 | 3 |<|content_end|>",
    "<|class_start|>chart<|class_end|><|sub_class_start|>line_chart<|sub_class_end|><|content_start|>| y | v |\n| a | b |\n| 1 | 2 | 3 |<|content_end|>",
    "<|class_start|>natural_image<|class_end|><|sub_class_start|>photo<|sub_class_end|><|caption_start|>A cat.<|caption_end|><|content_start|>ignored<|content_end|>",
    "<|class_start|>chemical<|class_end|><|caption_start|>Benzene<|caption_end|><|content_start|>C1=CC=CC=C1<|content_end|>",
    "<|class_start|>diagram<|class_end|><|caption_start|>Cap<|caption_end|><|content_start|>Some description<|content_end|>",
    "<|class_start|>diagram<|class_end|><|caption_start|>Only caption<|caption_end|>",
    "<|class_start|>screenshot<|class_end|><|content_start|>unclosed content",
    "no tags at all",
    "[Non-Text]",
]
CHART_BODIES = [
    "| a | b |\n| --- | --- |\n| 1 | 2 |",
    "| a | b |\n| --- | --- |\n| 1 \\| x | 2 |",
    "| a | b |\n| --- | --- |\n| | | | | | | | | |\n| 1 | 2 |",
    "| k | v |\n| --- | --- |\n" + "| same row repeated here again | 1 |\n" * 4,
    "| k | v |\n|---|---|\n| x; x; x; x; x; x; x; x; x | 1 |\n| y | 2 |\n| z | 3 |",
    "| k | v |\n| :---: | ---: |\n| aaaaaaaaaaaaaaaaaaaaaaaa | 1 |",
    "| k | v | w |\n| --- | --- | --- |\n| 1 | 2 | 3 |\n\n\n\n\n| 4 | 5 | 6 |",
    "text before\n| h1 | h2 |\n| --- | --- |\n| `a|b` | c |\n| d | e |\n" + "| h1 | h2 |\n" * 3,
    "| A | B |\n| C | D |\n| E | F |\n" + "token " * 9,
    ("| x | y |\n| --- | --- |\n| 1 | 2 |\n") * 5,
    "| ｜a｜b | c |\n| --- | --- |\n| \t1\t | 2 |\n| 3 | 4 |\n" + "::" * 25,
]
FLOWCHARTS = [
    "graph TD\n    A[formula] --> B[formula valid]\n    A --> C[formula valid]\n    B --> D[Formula Unifier]\n"
    "    C --> E[Formula Refiner (own effect)]\n    D --> F[后处理]\n    E --> F\n",
    "```mermaid\ngrap LR\n  Start Node --> Next Step\n  Next Step -->|yes| Done\n  Next Step - -> Other\n```",
    "flowchar TD\n  A -> B\n  B -- > C\n  C - - > D\n  D <--> E\n  E[\"quoted \"inner\" text\"] --> F[]\n",
    "graph TD\n  subgraph 1) Trigger\n    W[\"Webhook\"]\n  end\n  subgraph Engine\n    X[x]\n  end\n"
    "  subgraph 1) Trigger\n  end\n  subgraph id[\"T\"]\n  end\n  G -->node(DRAM)| H\n  A -->|ok| B\n",
    "graph LR\n  1st step --> 2nd step; 2nd step --> done;\n  %% comment --> x\n  a b c --> |label (x)  y| d-e\n"
    "  p --> q --> r\n  m[\"[1,2]\"] --> n[\nmulti\nline]\n",
    "mermaid\ngraph TD\nA[a] --> B{b}\nB -->|y| C(c)\nsubgraph S one\nC\nend",
    "graph TD\n  中文 节点 --> 下一步\n  x_y --> x y\n  -weird- --> ___\n",
]
REPETITIVE_FLOWCHARTS = [
    "graph TD\n" + "  A --> B\n" * 8,
    "graph TD\n" + "".join("  N%d --> M%d[\"same label\"]\n" % (i, i) for i in range(8)),
    "graph TD\n  A[\"" + "line\\n" * 9 + "\"] --> B\n",
    "graph TD\n  A[\"" + "x<br/>y<BR>" * 11 + "\"] --> B\n",
    "graph TD\n" + "  just some text\n" * 8,
    "graph TD\n" + "".join("  t%d\n  just some text\n" % i for i in range(20)),
    "graph TD\n  AnAnAnAnAnAnAnAn --> B\n",
    "graph TD\n  X --> abcdefghabcdefghabcdefghabcdefghab --> Y\n",
    "graph TD\n  A-->B\n" * 9,
    "graph TD\n  " + "Q" * 130 + " --> B\n",
    "graph TD\n  A[\"" + ("long line %d\n" % 1) * 3 + "\"] --> B\n  C --> D[\"lbl\"]\n  E --> F[\"lbl\"]\n",
]
ANALYSES += ["<|class_start|>flowchart<|class_end|><|content_start|>%s<|content_end|>" % body
             for body in REPETITIVE_FLOWCHARTS]
ANALYSES += ["<|class_start|>flowchart<|class_end|><|sub_class_start|>flowchart<|sub_class_end|>"
             "<|caption_start|>Flow<|caption_end|><|content_start|>%s<|content_end|>" % body for body in FLOWCHARTS]
ANALYSES += ["<|class_start|>chart<|class_end|><|sub_class_start|>table_chart<|sub_class_end|>"
             "<|content_start|>%s<|content_end|>" % body for body in CHART_BODIES]


def random_box(rng):
    r = rng.random()
    if r < 0.06:
        return [rng.randint(0, 1000), rng.randint(0, 1000), 1001 + rng.randint(0, 50), rng.randint(0, 1000)]
    if r < 0.1:
        v = rng.randint(0, 1000)
        return [v, rng.randint(0, 500), v, rng.randint(501, 1000)]
    x1, x2 = sorted(rng.sample(range(0, 1001), 2))
    y1, y2 = sorted(rng.sample(range(0, 1001), 2))
    if rng.random() < 0.1:
        x1, x2 = x2, x1
    if rng.random() < 0.05:  # tiny box
        x2, y2 = min(1000, x1 + rng.randint(1, 3)), min(1000, y1 + rng.randint(1, 3))
    return [x1, y1, x2, y2]


def nested_blocks(rng):
    """A container and blocks inside it (tables absorbing images/text, image_blocks with captions)."""
    cx1, cy1 = rng.randint(0, 400), rng.randint(0, 400)
    cx2, cy2 = cx1 + rng.randint(200, 590), cy1 + rng.randint(200, 590)
    container = rng.choice(["table", "image_block", "image", "chart", "equation_block"])
    out = [(container, [cx1, cy1, cx2, cy2])]
    for _ in range(rng.randint(1, 4)):
        ix1 = rng.randint(cx1, cx2 - 20)
        iy1 = rng.randint(cy1, cy2 - 20)
        ix2 = min(1000, ix1 + rng.randint(5, cx2 - ix1 + 10))
        iy2 = min(1000, iy1 + rng.randint(5, cy2 - iy1 + 10))
        t = rng.choice(["text", "equation", "image", "image_caption", "chart", "equation_block", "image"])
        out.append((t, [ix1, iy1, ix2, iy2]))
    return out


def random_layout(rng):
    items = []
    for _ in range(rng.randint(0, 9)):
        if rng.random() < 0.3:
            items.extend(nested_blocks(rng))
        else:
            items.append((rng.choice(TYPES), random_box(rng)))
    rng.shuffle(items)
    parts = []
    for t, b in items:
        sep = "\t" if rng.random() < 0.1 else " "
        tail = ""
        if rng.random() < 0.25:
            tail += "<|txt_contd_tgt|>"
        if rng.random() < 0.05:
            tail += "garbage"
        line = "<|box_start|>%d %d%s%d %d<|box_end|><|ref_start|>%s<|ref_end|>%s%s" % (
            b[0], b[1], sep, b[2], b[3], t, rng.choice(ROT), tail)
        if rng.random() < 0.04:
            line = line.replace("<|box_end|>", "")  # malformed
        parts.append(line)
        parts.append(rng.choice(SEPS))
    return "".join(parts)


FIXED_LAYOUTS = [
    "",
    "  \n",
    "no boxes here",
    "<|box_start|>1 2 3<|box_end|><|ref_start|>text<|ref_end|>",
    "<|box_start|>100 100 900 900<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>"
    "<|box_start|>120 120 300 300<|box_end|><|ref_start|>image<|ref_end|><|rotate_up|>"
    "<|box_start|>110 110 350 350<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>"
    "<|box_start|>500 500 800 800<|box_end|><|ref_start|>image<|ref_end|><|rotate_right|>\n",
    "<|box_start|>100 100 500 500<|box_end|><|ref_start|>image_block<|ref_end|><|rotate_up|>\n"
    "<|box_start|>110 110 300 300<|box_end|><|ref_start|>chart<|ref_end|><|rotate_up|>\n"
    "<|box_start|>110 310 480 340<|box_end|><|ref_start|>image_caption<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 600 900 700<|box_end|><|ref_start|>table<|ref_end|><|rotate_left|>\n"
    "<|box_start|>100 710 900 800<|box_end|><|ref_start|>list_item<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 810 900 900<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|><|txt_contd_tgt|>\n",
]


def output_for(prompt, rng):
    if "Table" in prompt:
        return rng.choice(TABLES)
    if "Formula" in prompt:
        return rng.choice(EQUATIONS)
    if "Image" in prompt:
        return rng.choice(ANALYSES)
    return rng.choice(TEXTS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True, help="directory holding mineru_vl_utils/ at 1.2.1")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=121)
    args = ap.parse_args()
    fake_image = _install_stubs()
    sys.path.insert(0, args.src)
    from mineru_vl_utils import mineru_client as mc
    from mineru_vl_utils.post_process import image_analysis_postprocess as iap
    from mineru_vl_utils.post_process import table_image_processor as tip
    from mineru_vl_utils.post_process import text_display2inline, text_inline_spacing, text_move_underscores_outside

    helper = mc.MinerUClientHelper(
        backend="transformers", prompts=mc.DEFAULT_PROMPTS, sampling_params=mc.DEFAULT_SAMPLING_PARAMS,
        layout_image_size=(1036, 1036), min_image_edge=28, max_image_edge_ratio=50, simple_post_process=False,
        handle_equation_block=True, abandon_list=False, abandon_paratext=False, image_analysis=True, debug=False,
        enable_table_formula_eq_wrap=True, enable_cross_page_table_merge=False)
    rng = random.Random(args.seed)
    pages = []
    # Input image sizes; the page image is what mineru-cpp makes of an image input (200 DPI with
    # 1 px = 1 pt, long side capped at 3500 px, sides rounded half away from zero).
    sizes = [(595, 842), (612, 792), (360, 280), (13, 1080), (1300, 15), (447, 631)]

    def page_size(iw, ih):
        scale = 200 / 72.0
        if max(iw, ih) * scale > 3500:
            scale = 3500 / max(iw, ih)
        return max(1, math.floor(iw * scale + 0.5)), max(1, math.floor(ih * scale + 0.5))

    for case in range(args.cases):
        layout = FIXED_LAYOUTS[case] if case < len(FIXED_LAYOUTS) else random_layout(rng)
        iw, ih = rng.choice(sizes)
        w, h = page_size(iw, ih)
        WARNINGS.clear()
        blocks = helper.parse_layout_output(layout)
        parse_warnings = list(WARNINGS)
        parsed = [dict(b) for b in blocks]
        images, prompts, params, indices = helper.prepare_for_extract(fake_image((w, h)), blocks)
        outputs = [output_for(p, rng) for p in prompts]
        requests = [{"index": i, "prompt": p, "presence_penalty": s.presence_penalty,
                     "frequency_penalty": s.frequency_penalty, "size": list(im.size)}
                    for i, p, s, im in zip(indices, prompts, params, images)]
        for i, o in zip(indices, outputs):
            blocks[i].content = o
        result = helper.post_process(blocks)
        pages.append({"layout": layout, "image_size": [iw, ih], "page_size": [w, h], "parsed": parsed, "requests": requests,
                      "outputs": outputs, "model": [dict(b) for b in result],
                      "parse_warnings": parse_warnings})

    funcs = {"display2inline": text_display2inline.try_convert_display_to_inline,
             "macro_spacing": text_inline_spacing.try_fix_macro_spacing_in_markdown,
             "underscores": text_move_underscores_outside.try_move_underscores_outside,
             "table_eq": lambda s: tip.replace_table_formula_delimiters(s, enabled=True),
             "malformed_md": iap.has_malformed_markdown_table,
             "md_to_html": iap.convert_markdown_table_to_html}
    inputs = TEXTS + TABLES + [
        "| a | b |\n|---|---|\n| 1 | 2 |", "| a | b |\n| - | - |", "a | b\n--- | ---\n1 | 2",
        "| a |\n| --- |", "|a|b|\n|:--|--:|\n|1|2|\n\n|x|y|z|", "x\n| --- | --- |", "| a | b |\n| c | d |",
        "\\(\\toX\\)", "\\(___\\)", "\\( a ___ b ___ \\)", "<eq>\\(a\\)</eq>\\(b\\)\\[c\\]", "\\[\\]\\(\\)"]
    checks = [{"fn": name, "input": s, "output": fn(s)} for name, fn in funcs.items() for s in inputs]
    from mineru_vl_utils.post_process import chart_invalid_repetition as cir
    from mineru_vl_utils.post_process import mermaid_invalid_edge_lines as mel
    from mineru_vl_utils.post_process import mermaid_invalid_subgraph_lines as msl
    from mineru_vl_utils.post_process import mermaid_node_id_legalize as mnl
    from mineru_vl_utils.post_process import mermaid_repetition as mrep
    token_map = {"[AC2K]": "data:image/jpeg;base64,QUJD", "[ZZ78]": "data:image/jpeg;base64,REVG"}
    token_inputs = ["<td>[AC2K]</td>", "<td>[ AC2K ]</td><td>[ZZ78] [ZZ78]</td>", "[AC2K", "[\tZZ78\n]", "none", ""]
    checks += [{"fn": "table_tokens", "input": s, "output": tip.replace_table_image_tokens(s, token_map)}
               for s in token_inputs]
    checks += [{"fn": "mermaid_repetition", "input": s, "output": bool(mrep.detect_mermaid_repetition_issues(s))}
               for s in FLOWCHARTS + REPETITIVE_FLOWCHARTS]
    checks += [{"fn": "mermaid_legalize", "input": s, "output": mnl.try_fix_mermaid_node_id_legalization(s)}
               for s in FLOWCHARTS]
    checks += [{"fn": "mermaid_edges", "input": s, "output": mel.try_fix_mermaid_invalid_edge_lines(s)}
               for s in FLOWCHARTS]
    checks += [{"fn": "mermaid_subgraphs", "input": s, "output": msl.try_fix_mermaid_invalid_subgraph_lines(s)}
               for s in FLOWCHARTS]
    checks += [{"fn": "mermaid_strict", "input": s, "output": iap.extract_and_validate_mermaid_strict(s)}
               for s in FLOWCHARTS]
    checks += [{"fn": "chart_repetition", "input": s, "output": cir.try_fix_chart_invalid_repetition(s)}
               for s in CHART_BODIES + inputs]
    checks += [{"fn": "image_analysis", "input": s, "output": iap.process_image_or_chart(s)} for s in ANALYSES]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"reference": "mineru-vl-utils 1.2.1", "pages": pages, "functions": checks}, f,
                  ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
