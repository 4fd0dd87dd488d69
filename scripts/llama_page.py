#!/usr/bin/env python3
"""The page workload (bench/page_workload.json) through llama.cpp's llama-mtmd-cli, for the README's
side-by-side page figure against `mineru-cpp bench --workload page`.

One process per request, as MinerU's llama.cpp engine runs one request at a time: each request's
image is a PNG of random pixels at the request's size (speed does not depend on pixel values), its
output length is fixed with --ignore-eos. Per request it prints the process's wall time, the model
load (the log's timestamp where image encoding starts) and the ViT time llama.cpp reports; the last
line sums the requests without their loads ("the model loaded once": add one load) and with them.

Usage: python3 scripts/llama_page.py LLAMA_MTMD_CLI MODEL.gguf MMPROJ.gguf [WORKDIR] [THREADS]
"""
import json
import os
import random
import re
import struct
import subprocess
import sys
import time
import zlib


def write_png(path, w, h, seed):
    rnd = random.Random(seed)
    rows = b"".join(b"\x00" + rnd.randbytes(w * 3) for _ in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))


def log_seconds(match):
    """llama.cpp's log timestamps read M.SS.mmm.uuu."""
    m, s, ms, us = (int(g) for g in match.groups())
    return m * 60 + s + ms / 1e3 + us / 1e6


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    cli, model, mmproj = sys.argv[1:4]
    work = sys.argv[4] if len(sys.argv) > 4 else "/tmp/llama-page"
    threads = sys.argv[5] if len(sys.argv) > 5 else "2"
    here = os.path.dirname(os.path.abspath(__file__))
    workload = json.load(open(os.path.join(here, "..", "bench", "page_workload.json")))
    os.makedirs(work, exist_ok=True)
    requests = [workload["layout"]] + workload["blocks"]
    compute = loads = vit = 0.0
    for i, r in enumerate(requests):
        img = os.path.join(work, f"{i}_{r['w']}x{r['h']}.png")
        if not os.path.exists(img):
            write_png(img, r["w"], r["h"], i)
        cmd = [cli, "-m", model, "--mmproj", mmproj, "--image", img, "-p", workload["prompts"][r["prompt"]].strip(),
               "--chat-template", "chatml", "-n", str(r["out"]), "--ignore-eos", "--temp", "0", "-t", threads,
               "--image-min-tokens", "4", "--image-max-tokens", "2048", "-c", "4096"]
        t0 = time.time()
        log = subprocess.run(cmd, capture_output=True, text=True).stderr
        wall = time.time() - t0
        start = re.search(r"(\d+)\.(\d+)\.(\d+)\.(\d+) I encoding mtmd batch", log)
        enc = re.search(r"batch encoding done in (\d+) ms", log)
        if not start or not enc:
            sys.exit(f"request {i}: llama-mtmd-cli did not encode the image:\n{log[-2000:]}")
        load = log_seconds(start)
        compute += wall - load
        loads += load
        vit += int(enc.group(1)) / 1e3
        print(f"{i} {r['w']}x{r['h']} out={r['out']} wall={wall:.1f} load={load:.1f} request={wall - load:.1f} "
              f"vit={int(enc.group(1)) / 1e3:.1f}", flush=True)
    print(f"llama.cpp page: {compute:.1f} s over {len(requests)} requests without loads (ViT {vit:.1f} s); "
          f"{compute + loads:.1f} s as one process per request", flush=True)


if __name__ == "__main__":
    main()
