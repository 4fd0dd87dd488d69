// Shared pieces of the browser tests: inputs (PDF, replay), ports, server start/stop, Chromium.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const repoDir = path.resolve(webDir, '..');
export const DIST = path.join(webDir, 'dist');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const TITLE = 'Quarterly Report';

// --- inputs ------------------------------------------------------------------------------------------

// A minimal valid PDF: one Letter page of Helvetica text, with a correct xref table.
export function makePdf(lines) {
  const esc = (s) => s.replace(/[\\()]/g, (c) => `\\${c}`);
  let content = 'BT /F1 24 Tf 72 720 Td (' + esc(lines[0]) + ') Tj ET\n';
  lines.slice(1).forEach((l, i) => {
    content += `BT /F1 12 Tf 72 ${680 - i * 18} Td (${esc(l)}) Tj ET\n`;
  });
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
    `<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}endstream`,
  ];
  let pdf = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(pdf, 'latin1'));
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(pdf, 'latin1');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) pdf += `${String(o).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

// Recorded model outputs for one page: the layout answer, then the answer for each block that goes
// to the model, in layout order (the image block is cropped, not recognised).
export function makeReplay() {
  const line = (box, type) => `<|box_start|>${box}<|box_end|><|ref_start|>${type}<|ref_end|><|rotate_up|>`;
  const layout = [
    line('100 050 900 090', 'title'),
    line('100 110 900 250', 'text'),
    line('100 280 900 450', 'table'),
    line('100 480 900 560', 'equation'),
    line('100 600 500 850', 'image'),
  ].join('\n');
  return [
    {
      layout,
      blocks: [
        TITLE,
        'Revenue grew as \\(x^2\\) over the quarter.',
        '<fcel>A<fcel>B<nl><fcel>1<fcel>2<nl>',
        '\\[E=mc^2\\]',
        // The image's "\nImage Analysis:" answer (mineru-vl-utils 1.2.1, the extraction of every
        // version `serve` and `parse` default to): empty, so the block stays a plain image with its crop.
        '',
      ],
    },
  ];
}

// --- helpers -----------------------------------------------------------------------------------------

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls GET /health until 200; fails early when the server process exits.
export async function waitHealthy(base, proc, log, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`the server exited (${proc.exitCode ?? proc.signalCode}) before it was healthy:\n${log.text()}`);
    }
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
      last = `status ${res.status}`;
    } catch (e) {
      last = e.cause ? e.cause.code || e.message : e.message;
    }
    await sleep(100);
  }
  throw new Error(`GET /health did not answer 200 within ${timeoutMs} ms (last: ${last}):\n${log.text()}`);
}

export function capture(proc) {
  let buf = '';
  const add = (d) => {
    buf += d.toString();
    if (buf.length > 200000) buf = buf.slice(-100000);
  };
  proc.stdout.on('data', add);
  proc.stderr.on('data', add);
  return { text: () => buf.slice(-6000) };
}

// The flag that points the server at web/dist, when it has one (otherwise it must find dist itself).
export function webDirArgs(bin, dist) {
  const help = spawnSync(bin, ['serve', '--help'], { encoding: 'utf8', timeout: 20000 });
  const text = `${help.stdout || ''}${help.stderr || ''}`;
  for (const flag of ['--web-dir', '--web-root', '--static-dir', '--www']) {
    if (new RegExp(`${flag}\\b`).test(text)) return [flag, dist];
  }
  return [];
}

export async function stopServer(proc) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  let timer;
  const late = new Promise((r) => (timer = setTimeout(() => r(false), 10000)));
  const done = await Promise.race([exited.then(() => true), late]);
  clearTimeout(timer);
  if (!done) {
    proc.kill('SIGKILL');
    await exited;
  }
}

// Headless Chromium with a fresh profile in `profileDir`.
export function launchBrowser(profileDir) {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1600, height: 1000 },
  });
}

// Starts tests/mock-server.mjs on a free port; returns {proc, log, base}.
export async function startMock(extraArgs = [], cwd = undefined) {
  const port = await freePort();
  const proc = spawn(
    process.execPath,
    [path.join(webDir, 'tests/mock-server.mjs'), '--port', String(port), '--dist', DIST, ...extraArgs],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const log = capture(proc);
  const base = `http://127.0.0.1:${port}`;
  return { proc, log, base };
}
