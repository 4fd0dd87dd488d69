#!/usr/bin/env python3
"""MinerU 4's files as `parse --vl-utils 4` writes them, checked end to end (ctest: mineru4_files).

For every sample PDF with a recording of the 1.2 extraction's answers (samples/*_replay*.json that
the 1.2 extraction accepts), parse it twice from the same answers: once for MinerU 3.4.4's files
(whose NAME_model.json lists every block the model found) and once for MinerU 4's. Then:
  - middle_json.json validates against DocVortex's published schema (tests/fixtures/docvortex/
    middle-2.0.json) with a real JSON Schema validator (python3-jsonschema, Draft 2020-12);
  - no block is lost: every model block but the image_block container is a block of the middle
    JSON (top level, a caption/footnote inside its visual, or a list item);
  - every title the model found is a Markdown heading (3.4.4's assembly drops doc_title and
    paragraph_title; MinerU 4 keeps them as levels 1 and 2);
  - markdown.md, content_list.json and structured_content.json exist and agree on the pages;
  - extensions.mineru.tier says what ran ("advanced": the full two-step VLM extraction).
Exits non-zero with the reasons on any failure.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import jsonschema


def parse(binary, pdf, replay, version, out):
    r = subprocess.run([binary, "parse", "--quiet", "--no-layout-pictures", "--vl-utils", version,
                        "--replay", replay, "-o", out, pdf], capture_output=True, text=True)
    return r.returncode, r.stderr


def count_blocks(middle):
    n = 0
    for page in middle["pages"]:
        for block in page["blocks"]:
            n += 1
            if block["type"] in ("image", "table", "chart", "code"):
                n += sum(1 for c in block["content"] if c["type"].endswith(("_caption", "_footnote")))
            if block["type"] in ("list", "index"):
                n += len(block["content"])
    return n


def span_text(spans):
    return "".join(s.get("content", "") if isinstance(s.get("content"), str) else "" for s in spans)


def check_document(name, model, middle, files, validator):
    errors = [f"{name}: schema: {'/'.join(map(str, e.path))}: {e.message[:300]}"
              for e in validator.iter_errors(middle)]
    found = sum(1 for page in model for b in page if b["type"] != "image_block")
    kept = count_blocks(middle)
    # An index block carries its own text as an item: it counts once as a block, once as an item.
    kept -= sum(1 for p in middle["pages"] for b in p["blocks"] if b["type"] == "index" and b["content"])
    if kept != found:
        errors.append(f"{name}: the model found {found} blocks, middle_json.json holds {kept}")
    md = files["markdown.md"]
    for page in middle["pages"]:
        for b in page["blocks"]:
            if b["type"] in ("doc_title", "paragraph_title"):
                heading = "#" * b["level"] + " " + span_text(b["content"])
                if heading not in md:
                    errors.append(f"{name}: title {heading!r} is not a heading of markdown.md")
    titles = sum(1 for page in model for b in page if b["type"] in ("doc_title", "paragraph_title", "title"))
    if titles == 0:
        errors.append(f"{name}: the recording has no title: the check would prove nothing")
    if middle["extensions"]["mineru"]["tier"] != "advanced":
        errors.append(f"{name}: extensions.mineru.tier is {middle['extensions']['mineru']['tier']!r}")
    structured = json.loads(files["structured_content.json"])
    if [p["page_idx"] for p in structured["pages"]] != [p["page_idx"] for p in middle["pages"]]:
        errors.append(f"{name}: structured_content.json pages differ from middle_json.json's")
    content_list = json.loads(files["content_list.json"])
    if not isinstance(content_list, list) or len(content_list) != sum(len(p["blocks"]) for p in middle["pages"]):
        errors.append(f"{name}: content_list.json is not one item per top-level block")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--repo", required=True)
    a = ap.parse_args()
    with open(os.path.join(a.repo, "tests/fixtures/docvortex/middle-2.0.json")) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors, checked = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for replay in sorted(glob.glob(os.path.join(a.repo, "samples/*_replay*.json"))):
            stem = os.path.basename(replay).split("_replay")[0]
            pdf = os.path.join(a.repo, "samples", stem + ".pdf")
            out34, out4 = os.path.join(tmp, "v34-" + os.path.basename(replay)), os.path.join(tmp, "v4-" + os.path.basename(replay))
            rc, _ = parse(a.bin, pdf, replay, "1.2", out34)
            if rc != 0:
                continue  # a recording of the 0.1 extraction's answers
            rc, err = parse(a.bin, pdf, replay, "4", out4)
            if rc != 0:
                errors.append(f"{replay}: parse --vl-utils 4 failed: {err}")
                continue
            with open(os.path.join(out34, stem, stem + "_model.json")) as f:
                model = json.load(f)
            files = {}
            for name in ("middle_json.json", "markdown.md", "content_list.json", "structured_content.json"):
                with open(os.path.join(out4, stem, name), encoding="utf-8") as f:
                    files[name] = f.read()
            middle = json.loads(files["middle_json.json"])
            errors += check_document(os.path.basename(replay), model, middle, files, validator)
            checked += 1
    if checked == 0:
        errors.append("no sample recording fits the 1.2 extraction: nothing was checked")
    for e in errors:
        print("FAIL", e)
    print(f"{checked} document(s) checked")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
