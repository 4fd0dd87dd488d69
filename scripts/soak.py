#!/usr/bin/env python3
"""Soak test of `mineru-cpp serve` and `parse` on recorded model outputs (--replay), loopback only,
bounded in count and time (issue 35, item 11). It answers two questions MinerU users ask:
does memory stay flat over many documents, and what does one very long document cost?

1. DOCS documents through /tasks and /file_parse, FOUR at a time: good PDFs (1-3 pages) and PNGs,
   broken files (truncated PDF, garbage, empty) and hostile ones (Form XObjects nested deep,
   rendered past --page-render-timeout-s). The server's RSS is sampled every 0.25 s.
2. One LONG-page PDF through `parse` (its RSS sampled likewise) and through /tasks.

Prints the figures as Markdown (start, peak, end, growth per document over the last part, growth
per page of the long document) and writes them, with the RSS series, under OUT.
Usage: scripts/soak.py BINARY MODEL_DIR OUT [--docs 1000] [--pages 3000] [--deadline-s 3600]
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

LAYOUT = ("<|box_start|>100 050 900 090<|box_end|><|ref_start|>title<|ref_end|><|rotate_up|>\n"
          "<|box_start|>100 100 900 300<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>")


def pdf(pages, nested_forms=0):
    """A PDF of `pages` text pages; with nested_forms > 0 each page draws a chain of Form XObjects,
    each drawing the next 8 times (8^depth operations: a render that never ends in time)."""
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    forms = []
    if nested_forms:
        first = len(objs) + 1
        for d in range(nested_forms):
            me = first + d
            if d + 1 < nested_forms:
                body = "".join(f"q 0.9 0 0 0.9 {i} {i} cm /X{d + 1} Do Q\n" for i in range(8))
                res = f"/Resources << /XObject << /X{d + 1} {me + 1} 0 R >> >>"
            else:
                body = "0 0 m 10 10 l S\n"
                res = ""
            objs.append(f"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] {res} /Length {len(body)} >>\n"
                        f"stream\n{body}endstream")
        forms = [first]
    for p in range(pages):
        content = f"BT /F1 20 Tf 72 720 Td (Page {p + 1}) Tj ET\nBT /F1 11 Tf 72 690 Td (Some text on it.) Tj ET\n"
        xres = ""
        if forms:
            content += "/X0 Do\n"
            xres = f"/XObject << /X0 {forms[0]} 0 R >>"
        objs.append(f"<< /Length {len(content)} >>\nstream\n{content}endstream")
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objs)} 0 R "
                    f"/Resources << /Font << /F1 3 0 R >> {xres} >> >>")
        kids.append(len(objs))
    objs[1] = "<< /Type /Pages /Kids [" + " ".join(f"{k} 0 R" for k in kids) + f"] /Count {pages} >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, o in enumerate(objs):
        offsets.append(len(out))
        out += f"{i + 1} 0 obj\n{o}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def png(path_fixture):
    with open(path_fixture, "rb") as f:
        return f.read()


class RssSampler:
    """Samples VmRSS (kB) of a pid every `every` seconds until stopped."""

    def __init__(self, pid, every=0.25):
        self.pid, self.every, self.samples = pid, every, []
        self.marks = []  # (time, label)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.monotonic()
        self._t.start()

    def rss(self):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def _run(self):
        while not self._stop.is_set():
            r = self.rss()
            if r is None:
                return
            self.samples.append((time.monotonic() - self.t0, r))
            self._stop.wait(self.every)

    def mark(self, label):
        self.marks.append((time.monotonic() - self.t0, label, self.rss()))

    def stop(self):
        self._stop.set()
        self._t.join()


def multipart(fields, files):
    boundary = uuid.uuid4().hex
    body = bytearray()
    for k, v in fields.items():
        body += f"--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n".encode()
    for name, data in files:
        body += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
                 "Content-Type: application/octet-stream\r\n\r\n").encode() + data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return bytes(body), f"multipart/form-data; boundary={boundary}"


def http(base, method, path, body=None, ctype=None, timeout=600):
    req = urllib.request.Request(base + path, data=body, method=method)
    if ctype:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def start_server(binary, model, replay, data, log, extra):
    args = [binary, "serve", "--model", model, "--replay", replay, "--data-dir", data, "--host", "127.0.0.1",
            "--port", "0", "--job-workers", "2", "--page-render-timeout-s", "2", "--retention-hours", "0",
            "--max-pages", "100000"] + extra
    proc = subprocess.Popen(args, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(log).read())
        if m:
            base = f"http://127.0.0.1:{m.group(1)}"
            try:
                if http(base, "GET", "/health", timeout=5)[0] == 200:
                    return proc, base
            except OSError:
                pass
        if proc.poll() is not None:
            sys.exit(f"the server exited: see {log}")
        time.sleep(0.1)  # polling the server's start, with a deadline
    proc.kill()
    sys.exit(f"the server did not start: see {log}")


def one_document(base, i, inputs, deadline):
    """Submits input i (by /tasks for even i, /file_parse for odd); returns (kind, outcome)."""
    kind, name, data = inputs[i % len(inputs)]
    body, ctype = multipart({}, [(name, data)])
    if i % 2:
        code, _ = http(base, "POST", "/file_parse", body, ctype)
        return kind, f"file_parse {code}"
    code, out = http(base, "POST", "/tasks", body, ctype)
    if code != 202:
        return kind, f"tasks {code}"
    task = json.loads(out)["task_id"]
    while time.monotonic() < deadline:
        code, out = http(base, "GET", f"/tasks/{task}")
        status = json.loads(out).get("status") if code == 200 else str(code)
        if status in ("done", "failed"):
            if status == "done":
                http(base, "GET", f"/tasks/{task}/result")
            return kind, f"tasks {status}"
        time.sleep(0.05)  # polling a job's status, with a deadline
    return kind, "tasks timeout"


def slope(xs, ys):
    """Least-squares slope of ys over xs (0 with fewer than two points)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def figures(samples, marks_from=None):
    rss = [r for _, r in samples]
    return {"start_kb": rss[0], "peak_kb": max(rss), "end_kb": rss[-1]}


def soak_server(a, replay, inputs, out):
    data = os.path.join(out, "data")
    proc, base = start_server(a.binary, a.model, replay, data, os.path.join(out, "serve.log"), [])
    sampler = RssSampler(proc.pid)
    outcomes = {}
    deadline = time.monotonic() + a.deadline_s
    done_rss = []
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(one_document, base, i, inputs, deadline) for i in range(a.docs)]
        for n, f in enumerate(futures):
            kind, outcome = f.result()
            outcomes[f"{kind}: {outcome}"] = outcomes.get(f"{kind}: {outcome}", 0) + 1
            done_rss.append(sampler.rss())
    health = http(base, "GET", "/health")[0]
    sampler.mark("documents done")
    # The long document through /tasks, on the same server.
    long_pdf = pdf(a.pages)
    long_in = [("long", "long.pdf", long_pdf)]
    t0 = time.monotonic()
    kind, outcome = one_document(base, 0, long_in, time.monotonic() + a.deadline_s)
    long_s = time.monotonic() - t0
    sampler.mark("long document done")
    sampler.stop()
    proc.terminate()
    proc.wait(timeout=60)
    # Growth per document: the slope of the RSS at each completion over the documents after the
    # first eighth (warm-up: allocator arenas, caches), robust to the swings of 4 in flight.
    first = len(done_rss) // 8
    tail = done_rss[first:]
    growth = slope(list(range(first, first + len(tail))), tail)
    return {"outcomes": outcomes, "health_after": health, "rss": figures(sampler.samples),
            "rss_after_docs_kb": done_rss[-1], "per_doc_growth_kb": growth, "rss_at_each_document_kb": done_rss,
            "rss_after_first_eighth_kb": tail[0], "long_tasks": {"outcome": outcome, "seconds": long_s},
            "marks": sampler.marks, "series": sampler.samples}


def soak_parse(a, replay, out):
    path = os.path.join(out, "long.pdf")
    with open(path, "wb") as f:
        f.write(pdf(a.pages))
    res = os.path.join(out, "parse-out")
    t0 = time.monotonic()
    proc = subprocess.Popen([a.binary, "parse", path, "-o", res, "--replay", replay, "--json"],
                            stdout=open(os.path.join(out, "parse.log"), "w"), stderr=subprocess.STDOUT)
    sampler = RssSampler(proc.pid)
    code = proc.wait(timeout=a.deadline_s)
    sampler.stop()
    pages_seen = sum(1 for line in open(os.path.join(out, "parse.log")) if '"page_done"' in line)
    # Growth per page: the RSS slope over time in the middle half of the run (pages done at a steady
    # rate there), times the seconds per page.
    n = len(sampler.samples)
    mid = sampler.samples[n // 4: 3 * n // 4] if n >= 8 else sampler.samples
    seconds = max(1e-9, sampler.samples[-1][0] - sampler.samples[0][0]) if n else 1
    per_page = slope([t for t, _ in mid], [r for _, r in mid]) * seconds / max(1, a.pages)
    return {"exit": code, "seconds": time.monotonic() - t0, "rss": figures(sampler.samples),
            "per_page_growth_kb": per_page, "progress_lines": pages_seen, "series": sampler.samples}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--pages", type=int, default=3000)
    ap.add_argument("--deadline-s", type=float, default=3600)
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    replay = os.path.join(a.out, "replay.json")
    with open(replay, "w") as f:
        json.dump([{"layout": LAYOUT, "blocks": [f"Title {i + 1}", "Some text."]} for i in range(a.pages)], f)
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
    good = pdf(2)
    rnd = random.Random(7)
    inputs = [("good", "one.pdf", pdf(1)), ("good", "two.pdf", good), ("good", "three.pdf", pdf(3)),
              ("good", "page.png", png(os.path.join(fixtures, "image0.png"))),
              ("broken", "cut.pdf", good[: len(good) // 2]), ("broken", "noise.pdf", bytes(rnd.randrange(256) for _ in range(4096))),
              ("broken", "empty.pdf", b""), ("hostile", "forms.pdf", pdf(1, nested_forms=12))]
    server = soak_server(a, replay, inputs, a.out)
    parse = soak_parse(a, replay, a.out)
    with open(os.path.join(a.out, "soak.json"), "w") as f:
        json.dump({"docs": a.docs, "pages": a.pages, "server": server, "parse": parse}, f)
    s, p = server, parse
    mb = lambda kb: f"{kb / 1024:.1f} MB"
    print(f"## Soak ({time.strftime('%Y-%m-%d')}; {a.docs} documents, one {a.pages}-page PDF; --replay)\n")
    print("| what | start | peak | end | growth |\n|---|---|---|---|---|")
    print(f"| serve, {a.docs} documents (/tasks + /file_parse, 4 at a time) | {mb(s['rss']['start_kb'])} | "
          f"{mb(s['rss']['peak_kb'])} | {mb(s['rss_after_docs_kb'])} | "
          f"{s['per_doc_growth_kb']:.2f} kB/document (slope after the first eighth) |")
    print(f"| serve, then the {a.pages}-page PDF through /tasks ({s['long_tasks']['outcome']}, "
          f"{s['long_tasks']['seconds']:.0f} s) | | | {mb(s['rss']['end_kb'])} | |")
    print(f"| parse, the {a.pages}-page PDF (exit {p['exit']}, {p['progress_lines']} pages, {p['seconds']:.0f} s) | {mb(p['rss']['start_kb'])} | "
          f"{mb(p['rss']['peak_kb'])} | {mb(p['rss']['end_kb'])} | {p['per_page_growth_kb']:.2f} kB/page (slope, middle half) |")
    print("\nOutcomes: " + ", ".join(f"{k} x{v}" for k, v in sorted(s["outcomes"].items())) +
          f"; /health after: {s['health_after']}")
    return 0 if s["health_after"] == 200 and p["exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
