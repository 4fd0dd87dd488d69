#!/usr/bin/env python3
"""Records goldens of mineru-vl-utils 1.2.1's cross-page table detection for
tests/fixtures/cross_page_121.json (read by tests/pipeline/cross_page_table_test.cc).

The reference runs for real: vl-utils' post_process/cross_page_table.py and the MinerU 3.4.4 helpers it
imports at run time (mineru/utils/table_merge.py, char_utils.py, enum_class.py,
table_continuation.py), with BeautifulSoup 4 from its source. Only loguru, PIL and MinerU's
merge_para_with_text (used for caption text, never by the detection) are stubbed.

Sources (bare git mirrors; e.g. `git clone --mirror https://github.com/<repo>`):
  --vl-utils  opendatalab/mineru-vl-utils  at tag mineru_vl_utils-1.2.1-released (ce182066)
  --mineru    opendatalab/MinerU           at tag mineru-3.4.4-released (0dfc9460)
  --bs4       a mirror of beautifulsoup4 holding the package at bs4/ (any 4.12+ works)

  python3 tests/tools/record_cross_page_121.py --vl-utils VL.git --mineru MINERU.git --bs4 BS4.git \
      -o tests/fixtures/cross_page_121.json

Each case: two pages of blocks (the previous page's, the current page's) and a model answer. The
golden holds every task the reference builds (prompt, segment count, expanded column count, segment
column ranges, the pair's block indices), the prompts sent, and the cell_merge it writes on each page's
blocks.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

VL_COMMIT = "mineru_vl_utils-1.2.1-released"
MINERU_COMMIT = "mineru-3.4.4-released"


def git_show(git_dir, rev, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{path}"], check=True,
                          capture_output=True).stdout


def git_tree(git_dir, rev, prefix):
    out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", rev, prefix], check=True,
                         capture_output=True, text=True).stdout
    return [p for p in out.splitlines() if p]


def write(root, rel, data):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def materialise(args, root):
    for rel in ["mineru_vl_utils/post_process/cross_page_table.py", "mineru_vl_utils/structs.py",
                "mineru_vl_utils/vlm_client/base_client.py"]:
        write(root, rel, git_show(args.vl_utils, VL_COMMIT, rel))
    for rel in ["mineru/utils/table_merge.py", "mineru/utils/char_utils.py", "mineru/utils/enum_class.py",
                "mineru/utils/table_continuation.py"]:
        write(root, rel, git_show(args.mineru, MINERU_COMMIT, rel))
    bs4_rev = args.bs4_rev
    for rel in git_tree(args.bs4, bs4_rev, "bs4"):
        if "/tests/" not in rel:
            write(root, rel, git_show(args.bs4, bs4_rev, rel))
    for pkg in ["mineru_vl_utils", "mineru_vl_utils/post_process", "mineru_vl_utils/vlm_client", "mineru", "mineru/utils", "mineru/backend",
                "mineru/backend/vlm"]:
        write(root, pkg + "/__init__.py", "")
    # Stubs: logging, PIL (imported by structs), caption text (unused by the detection).
    write(root, "loguru/__init__.py",
          "class _L:\n    def __getattr__(self, n):\n        return lambda *a, **k: None\nlogger = _L()\n")
    write(root, "PIL/__init__.py", "class _I:\n    class Image: pass\nImage = _I\n")
    write(root, "PIL/Image.py", "class Image: pass\n")
    write(root, "mineru/backend/vlm/vlm_middle_json_mkcontent.py",
          "def merge_para_with_text(block, **kw):\n    return ''\n")


def table(html, bbox=(0.1, 0.1, 0.9, 0.9)):
    return {"type": "table", "bbox": list(bbox), "content": html}


def block(type_, content="x", bbox=(0.1, 0.05, 0.9, 0.08)):
    return {"type": type_, "bbox": list(bbox), "content": content}


H3 = "<table><tr><th>Name</th><th>Desc</th><th>Qty</th></tr>"
CASES = [
    # Header repeated, middle cell continues (the spec's example A).
    ("header_repeated", [table(H3 + "<tr><td>A</td><td>first</td><td>1</td></tr><tr><td>B</td><td>second part</td>"
                               "<td>2</td></tr></table>")],
     [table(H3 + "<tr><td></td><td>continues here</td><td></td></tr><tr><td>C</td><td>third</td><td>3</td></tr>"
                 "</table>")], "The answer is [0, 1, 0]."),
    # vl-utils' own unit test: 11 columns vs 2, boundary rows of 2 segments.
    ("colspan_boundary",
     [table("<table><tr>" + "".join(f"<td>h{i}</td>" for i in range(11)) + "</tr><tr><td>分项目说明未达到计划进度、预计收益的情况和原因(含"
            "</td><td colspan=\"10\">不适用</td></tr></table>")],
     [table("<table><tr><td>“是否达到预计效益”选择“不适用”的原因)</td><td></td></tr><tr><td>项目可行性发生重大变化的情况说明"
            "</td><td>无</td></tr></table>")], "[1, 0]"),
    ("wrong_length", [table("<table><tr><td>a</td><td colspan=\"3\">b</td></tr></table>")],
     [table("<table><tr><td>c</td><td>d</td></tr></table>")], "[1, 0, 1]"),
    ("rowspan_prev", [table("<table><tr><td>Group</td><td>Item</td><td>Val</td></tr><tr><td rowspan=\"2\">G1</td>"
                            "<td>a</td><td>1</td></tr><tr><td>b is</td><td>2</td></tr></table>")],
     [table("<table><tr><td>G1 cont</td><td>long</td><td></td></tr><tr><td>G2</td><td>c</td><td>3</td></tr>"
            "</table>")], "```json\n[1, 1, 0]\n```"),
    ("colspan_prev_cells_curr", [table("<table><tr><td>A</td><td>B</td><td>C</td></tr><tr><td colspan=\"2\">note "
                                       "text</td><td>x</td></tr></table>")],
     [table("<table><tr><td>more</td><td>y</td></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>")], "[1, 0]"),
    ("captions_and_footer_between",
     [block("text"), table("<table><tr><td>a</td><td>b</td></tr></table>"), block("table_footnote"), block("footer")],
     [block("header"), block("table_caption"), table("<table><tr><td>c</td><td>d</td></tr></table>"), block("text")],
     "[[1, 0]]"),
    ("aside_text_blocks_the_pair", [table("<table><tr><td>a</td></tr></table>"), block("aside_text")],
     [table("<table><tr><td>c</td></tr></table>")], "[1]"),
    ("text_after_table", [table("<table><tr><td>a</td></tr></table>"), block("text")],
     [table("<table><tr><td>c</td></tr></table>")], "[1]"),
    ("widths_differ", [table("<table><tr><td>a</td></tr></table>", (0.1, 0.1, 0.9, 0.9))],
     [table("<table><tr><td>c</td></tr></table>", (0.1, 0.1, 0.5, 0.9))], "[1]"),
    ("empty_content", [table("")], [table("<table><tr><td>c</td></tr></table>")], "[1]"),
    ("no_rows", [table("<table></table>")], [table("<table><tr><td>c</td></tr></table>")], "[1]"),
    ("quotes_and_escapes", [table("<table><tr><td>it's</td><td>say \"hi\"</td><td>back\\slash</td><td>tab\there"
                                  "</td><td>a&amp;b &lt;c&gt;</td></tr></table>")],
     [table("<table><tr><td>x</td><td>y</td><td>z</td><td>ｗｉｄｅ　ｆｕｌｌ</td><td>\u00a0nb\u200bsp</td></tr></table>")],
     "answer: [0,0,1,0,1]"),
    ("both_quotes", [table("<table><tr><td>it's \"both\"</td></tr></table>")],
     [table("<table><tr><td>next</td></tr></table>")], "[1]"),
    ("malformed_answers_1", [table("<table><tr><td>a</td><td>b</td></tr></table>")],
     [table("<table><tr><td>c</td><td>d</td></tr></table>")], "[0,1,]"),
    ("malformed_answers_2", [table("<table><tr><td>a</td><td>b</td></tr></table>")],
     [table("<table><tr><td>c</td><td>d</td></tr></table>")], "x [1] then [0, 0]"),
    ("malformed_answers_3", [table("<table><tr><td>a</td><td>b</td></tr></table>")],
     [table("<table><tr><td>c</td><td>d</td></tr></table>")], "[2, 0]"),
    ("malformed_answers_4", [table("<table><tr><td>a</td><td>b</td></tr></table>")],
     [table("<table><tr><td>c</td><td>d</td></tr></table>")], "[01, 1]"),
    ("malformed_answers_5", [table("<table><tr><td>a</td><td>b</td></tr></table>")],
     [table("<table><tr><td>c</td><td>d</td></tr></table>")], "no list here"),
    ("all_zero", [table("<table><tr><td>a</td><td>b</td></tr></table>")],
     [table("<table><tr><td></td><td></td></tr><tr><td>c</td><td>d</td></tr></table>")], "[0, 0]"),
    ("header_rows_visual_fallback",
     [table("<table><tr><th colspan=\"2\">Title</th></tr><tr><td>k</td><td>v</td></tr></table>")],
     [table("<table><tr><th colspan=\"2\">Title</th><th></th></tr><tr><td>k2</td><td>v2</td></tr></table>")],
     "[0, 1]"),
    ("header_visual_fallback_colspan_lost",
     [table("<table><tr><th colspan=\"2\">Title</th></tr><tr><td>k</td><td>v</td></tr></table>")],
     [table("<table><tr><th>Ｔｉｔｌｅ </th></tr><tr><td>k2</td><td>v2</td></tr></table>")], "[1, 1]"),
    ("segment_count_mismatch", [table("<table><tr><td>a</td><td>b</td><td>c</td></tr></table>")],
     [table("<table><tr><td colspan=\"2\">c</td><td>d</td></tr><tr><td>e</td></tr></table>")], "[1, 0, 0]"),
    ("nested_markup", [table("<table><tr><td>x<br>y</td><td><eq>a^2</eq> and <b>bold</b></td></tr></table>")],
     [table("<table><tbody><tr><td>z<img src=\"data:1\"></td><td>w</td></tr></tbody></table>")], "[1, 1]"),
    ("rowspan_header_expanded",
     [table("<table><tr><td rowspan=\"2\">H</td><td>a</td></tr><tr><td>b</td></tr><tr><td>1</td><td>2</td></tr>"
            "</table>")],
     [table("<table><tr><td rowspan=\"2\">H</td><td>a</td></tr><tr><td>b</td></tr><tr><td>3</td><td>4</td></tr>"
            "</table>")], "[1, 0]"),
    ("three_pages_chain", [table("<table><tr><td>a</td><td>b</td></tr></table>")],
     [table("<table><tr><td>c</td><td>d</td></tr></table>")], "[0, 1]",
     [table("<table><tr><td>e</td><td>f</td></tr></table>")]),
]


def run_case(cpt, ContentBlock, ExtractResult, case):
    name, prev, curr, answer = case[:4]
    pages = [prev, curr] + ([case[4]] if len(case) > 4 else [])
    results = [ExtractResult([ContentBlock(type=b["type"], bbox=b["bbox"], content=b["content"]) for b in page])
               for page in pages]
    pairs = cpt.find_cross_page_table_pairs(results)
    tasks = cpt._prepare_merge_tasks(results, pairs)
    sent = []

    def predict(prompts):
        sent.extend(prompts)
        return [answer] * len(prompts)

    cpt.detect_cross_page_cell_merge(results, predict)
    cell_merge = [[blk.get("cell_merge") for blk in page] for page in results]
    return {
        "name": name,
        "pages": pages,
        "answer": answer,
        "tasks": [{"prompt": t.prompt, "prev_page": t.prev_page_idx, "prev_block": t.prev_block_idx,
                   "curr_page": t.curr_page_idx, "curr_block": t.curr_block_idx,
                   "segments": t.expected_segment_count, "expanded_cols": t.expected_expanded_col_count,
                   "ranges": [list(r) for r in t.previous_segment_col_ranges]} for t in tasks],
        "sent": sent,
        "cell_merge": cell_merge,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vl-utils", required=True)
    ap.add_argument("--mineru", required=True)
    ap.add_argument("--bs4", required=True)
    ap.add_argument("--bs4-rev", default="HEAD")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        materialise(args, root)
        sys.path.insert(0, root)
        from mineru_vl_utils.post_process import cross_page_table as cpt
        from mineru_vl_utils.structs import ContentBlock, ExtractResult
        assert cpt._HAS_TABLE_MERGE, cpt._TABLE_MERGE_IMPORT_ERROR
        out = {"source": {"mineru_vl_utils": VL_COMMIT, "mineru": MINERU_COMMIT},
               "cases": [run_case(cpt, ContentBlock, ExtractResult, c) for c in CASES]}
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(out['cases'])} cases -> {args.output}")


if __name__ == "__main__":
    main()
