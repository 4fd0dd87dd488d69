// Browser test of the web page: starts `mineru-cpp serve` (replayed model outputs for documents,
// the fixture model for chat), opens the page in headless Chromium, uploads a PDF, waits for the
// result, checks the Markdown and the layout overlay, downloads an output, and chats about an image.
//
// Environment:
//   MINERU_BIN        the server binary (default ../build/src/cli/mineru-cpp, from web/)
//   MINERU_MODEL      model folder for chat (default ../tests/fixtures/tinyvocab)
//   MINERU_SERVE_ARGS extra arguments for `serve`, split on spaces
//   MINERU_MOCK=1     run against tests/mock-server.mjs instead (UI development)
//   CHROMIUM          browser executable (default /usr/bin/chromium)
//   KEEP_ARTIFACTS=1  keep the temporary folder (screenshot, server log) and print its path
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CHROMIUM,
  DIST,
  TITLE,
  capture,
  freePort,
  launchBrowser,
  makePdf,
  makeReplay,
  repoDir,
  stopServer,
  waitHealthy,
  webDir,
  webDirArgs,
} from './helpers.mjs';

const fromWeb = (p) => path.resolve(webDir, p);
const MOCK = process.env.MINERU_MOCK === '1';
const BIN = fromWeb(process.env.MINERU_BIN || '../build/src/cli/mineru-cpp');
const MODEL = fromWeb(process.env.MINERU_MODEL || '../tests/fixtures/tinyvocab');

// --- the test ------------------------------------------------------------------------------------------

test('web page: upload a PDF, see Markdown and layout boxes, chat about an image', { timeout: 300000 }, async (t) => {
  assert.ok(
    fs.existsSync(path.join(DIST, 'index.html')),
    `${DIST}/index.html is missing: run \`npm run build\` first`,
  );
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
  if (!MOCK) {
    assert.ok(fs.existsSync(BIN), `${BIN} is missing: build the project first (or set MINERU_BIN, or MINERU_MOCK=1)`);
  }

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mineru-web-test-'));
  const pdfPath = path.join(tmp, 'report.pdf');
  const pngPath = path.join(tmp, 'question.png');
  const replayPath = path.join(tmp, 'replay.json');
  fs.writeFileSync(
    pdfPath,
    makePdf([TITLE, 'Revenue grew as x squared over the quarter.', 'A B', '1 2', 'E = mc2']),
  );
  fs.copyFileSync(path.join(repoDir, 'tests/fixtures/image0.png'), pngPath);
  fs.writeFileSync(replayPath, JSON.stringify(makeReplay()));

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const extra = (process.env.MINERU_SERVE_ARGS || '').split(/\s+/).filter(Boolean);
  const cmd = MOCK
    ? [process.execPath, [path.join(webDir, 'tests/mock-server.mjs'), '--port', String(port), '--dist', DIST, '--page-ms', '150']]
    : [BIN, ['serve', '--model', MODEL, '--port', String(port), '--replay', replayPath, ...webDirArgs(BIN, DIST), ...extra]];
  const server = spawn(cmd[0], cmd[1], { cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = capture(server);
  let context = null;
  let ok = false;
  t.after(async () => {
    if (context) await context.close().catch(() => {});
    await stopServer(server);
    fs.writeFileSync(path.join(tmp, 'server.log'), log.text());
    if (ok && process.env.KEEP_ARTIFACTS !== '1') fs.rmSync(tmp, { recursive: true, force: true });
    else console.log(`# artifacts (screenshot, server log) in ${tmp}`);
  });

  await waitHealthy(base, server, log, 120000);

  // the page itself is served at /
  const index = await fetch(`${base}/`);
  assert.equal(index.status, 200, 'GET / must serve the page');
  assert.match(index.headers.get('content-type') || '', /text\/html/);

  context = await launchBrowser(path.join(tmp, 'profile'));
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(120000);
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(`console: ${m.text()}`);
  });
  const chatRequests = [];
  page.on('request', (r) => {
    if (r.url().endsWith('/v1/chat/completions') && r.method() === 'POST') chatRequests.push(r.postDataJSON());
  });

  try {
    await page.goto(`${base}/`);
    await page.waitForSelector('#dropzone');
    await page.waitForFunction(() => document.querySelector('#health').classList.contains('ok'));
    // The page names the checkpoint (the fixture folder has no recorded repository: its name).
    assert.equal(await page.textContent('#health'), `ready · ${MOCK ? 'MinerU2.5-Pro-2605-1.2B' : path.basename(MODEL)}`);

    // --- document ---
    await page.setInputFiles('#file-input', pdfPath);
    await page.waitForSelector('#progress-text:has-text("of")');
    await page.waitForSelector('#markdown', { timeout: 120000 });
    assert.equal(await page.textContent('#task-status'), 'done');
    assert.match(await page.textContent('#progress-text'), /page 1 of 1/);

    const md = await page.$eval('#markdown', (e) => ({
      html: e.innerHTML,
      text: e.textContent,
      heading: (e.querySelector('h1,h2,h3') || {}).textContent || '',
      tables: e.querySelectorAll('table').length,
      cells: [...e.querySelectorAll('table td, table th')].map((c) => c.textContent.trim()),
      katex: e.querySelectorAll('.katex').length,
      display: e.querySelectorAll('.katex-display').length,
      images: e.querySelectorAll('img[src^="data:image/"]').length,
      missingImages: e.querySelectorAll('.missing-image').length,
    }));
    assert.ok(md.text.includes(TITLE), `the Markdown shows the title: ${md.html.slice(0, 500)}`);
    assert.ok(md.heading.includes(TITLE), `the title is a heading: ${md.html.slice(0, 500)}`);
    assert.ok(md.tables >= 1, `the Markdown has a <table>: ${md.html.slice(0, 800)}`);
    assert.deepEqual(md.cells.slice(0, 4), ['A', 'B', '1', '2'], 'the table cells');
    assert.ok(md.katex >= 2, `inline and display math rendered by KaTeX (${md.katex} found)`);
    assert.ok(md.display >= 1, 'display math rendered as a block');
    assert.ok(md.images >= 1 && md.missingImages === 0, `images/… replaced by the result's data URLs (${JSON.stringify(md)})`);

    // layout boxes over the page image
    await page.waitForFunction(() => {
      const img = document.querySelector('.page-image');
      return img && img.complete && img.naturalWidth > 0;
    });
    const overlay = await page.evaluate(() => {
      const img = document.querySelector('.page-image').getBoundingClientRect();
      const boxes = [...document.querySelectorAll('.page[data-page="0"] .layout-box')].map((b) => {
        const r = b.getBoundingClientRect();
        return {
          type: b.dataset.type,
          title: b.getAttribute('title'),
          num: b.textContent.trim(),
          inside: r.left >= img.left - 1 && r.right <= img.right + 1 && r.top >= img.top - 1 && r.bottom <= img.bottom + 1,
          area: r.width * r.height,
        };
      });
      return { img: { w: img.width, h: img.height }, boxes };
    });
    assert.ok(overlay.img.w > 100 && overlay.img.h > 100, `the page image is shown (${JSON.stringify(overlay.img)})`);
    assert.ok(overlay.boxes.length >= 4, `layout boxes drawn: ${JSON.stringify(overlay.boxes)}`);
    assert.ok(overlay.boxes.every((b) => b.inside && b.area > 0), `boxes lie over the image: ${JSON.stringify(overlay.boxes)}`);
    const types = overlay.boxes.map((b) => b.type);
    // a title box (MinerU 4's middle JSON names the page's first title doc_title), a table box
    assert.ok(types.some((t) => /title$/.test(t)), `a title box: ${types}`);
    assert.ok(types.includes('table'), `a table box: ${types}`);
    assert.ok(overlay.boxes.every((b) => b.title && b.title.includes(b.type)), 'each box has its type as tooltip');
    assert.deepEqual(
      overlay.boxes.map((b) => b.num),
      overlay.boxes.map((_, i) => String(i + 1)),
      'boxes carry their reading order',
    );

    // downloads
    const links = await page.$$eval('a.download', (as) => as.map((a) => ({ file: a.dataset.file, href: a.href })));
    assert.deepEqual(
      links.map((l) => l.file),
      // MinerU 4's files: the server's default, titles kept (the mock answers as MinerU 3.4.4)
      MOCK
        ? ['report.md', 'report_content_list.json', 'report_middle.json', 'report_model.json']
        : ['markdown.md', 'content_list.json', 'middle_json.json', 'structured_content.json'],
    );
    const mdLink = links[0].href;
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(`a.download[data-file="${links[0].file}"]`)]);
    const dlPath = await download.path();
    const dlText = fs.readFileSync(dlPath, 'utf8');
    assert.ok(dlText.includes(TITLE), `the downloaded Markdown has the title (${mdLink})`);
    for (const l of links.slice(1)) {
      const res = await fetch(l.href);
      assert.equal(res.status, 200, `GET ${l.href}`);
      JSON.parse(await res.text());
    }

    // --- chat: an image and two turns ---
    await page.waitForFunction(() => !/…/.test(document.querySelector('#chat-model').textContent));
    assert.ok(!(await page.$eval('#chat-model', (e) => e.classList.contains('error'))), 'GET /v1/models works');
    await page.setInputFiles('#chat-image-input', pngPath);
    await page.waitForSelector('#chat-image-thumb');
    await page.fill('#chat-input', 'What is in this image?');
    await page.click('#chat-send');
    const first = await waitAnswer(page, 1);
    assert.ok(first.text.length > 0, 'a non-empty answer');
    assert.match(first.latency, /first token \d+ ms/);
    assert.match(first.latency, /total \d+ ms/);

    await page.fill('#chat-input', 'And what colour is it?');
    await page.press('#chat-input', 'Enter');
    const second = await waitAnswer(page, 2);
    assert.ok(second.text.length > 0, 'a non-empty second answer');
    assert.match(second.latency, /total \d+ ms/);

    t.diagnostic(`chat answer 1: ${first.latency}; answer 2: ${second.latency}`);
    assert.equal(chatRequests.length, 2, 'two chat requests');
    const [r1, r2] = chatRequests;
    for (const r of [r1, r2]) {
      assert.equal(r.stream, true);
      assert.equal(r.max_tokens, 512);
      assert.ok(typeof r.model === 'string' && r.model.length > 0);
    }
    assert.equal(r1.messages.length, 1);
    assert.equal(r1.messages[0].content[0].type, 'image_url');
    assert.match(r1.messages[0].content[0].image_url.url, /^data:image\/png;base64,/);
    assert.deepEqual(r1.messages[0].content[1], { type: 'text', text: 'What is in this image?' });
    assert.deepEqual(
      r2.messages.map((m) => m.role),
      ['user', 'assistant', 'user'],
      'the second turn carries the conversation',
    );
    assert.equal(r2.messages[1].content, first.text, 'the first answer goes back as the assistant turn');
    assert.equal(r2.messages[2].content, 'And what colour is it?', 'later turns are text only');

    // the page of the uploaded document as the chat image
    await page.click('#chat-use-page');
    await page.waitForFunction(() => /page 1/.test(document.querySelector('#chat-image-preview').textContent));

    // an error from the server is shown, not swallowed
    await page.route('**/v1/chat/completions', (route) =>
      route.fulfill({
        status: 429,
        contentType: 'application/json',
        body: JSON.stringify({ error: { message: 'queue is full', type: 'rate_limit_error' } }),
      }),
    );
    await page.fill('#chat-input', 'Anything?');
    await page.click('#chat-send');
    await page.waitForSelector('.msg.assistant.error');
    assert.match(await page.textContent('.msg.assistant.error'), /429.*queue is full/);
    await page.unroute('**/v1/chat/completions');

    assert.ok(await page.isHidden('#error'), `no error banner: ${await page.textContent('#error-text')}`);
    assert.deepEqual(
      pageErrors.filter((e) => !/\b429\b/.test(e)),
      [],
      'no errors in the page',
    );
    ok = true;
  } finally {
    await page.screenshot({ path: path.join(tmp, 'page.png'), fullPage: true }).catch(() => {});
  }
});

async function waitAnswer(page, n) {
  await page.waitForFunction(
    (k) => {
      const a = document.querySelectorAll('.msg.assistant')[k - 1];
      return a && !a.classList.contains('streaming') && a.querySelector('.latency').dataset.totalMs;
    },
    n,
    { timeout: 120000 },
  );
  return page.evaluate((k) => {
    const a = document.querySelectorAll('.msg.assistant')[k - 1];
    if (a.classList.contains('error')) throw new Error(`chat answer ${k} failed: ${a.textContent}`);
    return { text: a.querySelector('.msg-text').textContent, latency: a.querySelector('.latency').textContent };
  }, n);
}

// The two-page sample of 1.2 extraction (samples/report.pdf + report_replay.json: a chart read as a
// Markdown table, a flowchart analysed as Mermaid, a table continued on page 2) through the real
// server: the page draws the Mermaid chart, keeps the <details> beside their images, and shows the
// merged table once with no empty box for its emptied continuation.
const SAMPLE_PDF = path.join(repoDir, 'samples/report.pdf');
const SAMPLE_REPLAY = path.join(repoDir, 'samples/report_replay.json');
const sampleSkip = MOCK
  ? 'MINERU_MOCK=1: see content-v344.test.mjs'
  : !fs.existsSync(SAMPLE_PDF) || !fs.existsSync(SAMPLE_REPLAY)
    ? 'no samples/report.pdf and report_replay.json in this checkout'
    : false;

test('web page: MinerU 3.4.4 content of the real server (Mermaid, details, merged table)', { timeout: 300000, skip: sampleSkip }, async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mineru-web-sample-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const extra = (process.env.MINERU_SERVE_ARGS || '').split(/\s+/).filter(Boolean);
  const args = ['serve', '--model', MODEL, '--port', String(port), '--vl-utils', '1.2', '--replay', SAMPLE_REPLAY];
  const server = spawn(BIN, [...args, ...webDirArgs(BIN, DIST), ...extra], { cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = capture(server);
  let context = null;
  t.after(async () => {
    if (context) await context.close().catch(() => {});
    await stopServer(server);
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  await waitHealthy(base, server, log, 120000);
  context = await launchBrowser(path.join(tmp, 'profile'));
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(120000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/`);
  await page.setInputFiles('#file-input', SAMPLE_PDF);
  await page.waitForSelector('#markdown');
  await page.waitForSelector('#markdown[data-diagrams="done"]', { timeout: 60000 }).catch(() => {});
  const r = await page.evaluate(() => {
    const md = document.querySelector('#markdown');
    const tables = [...md.querySelectorAll('table')];
    return {
      svgs: md.querySelectorAll('details .mermaid-chart > svg').length,
      failed: md.querySelectorAll('.mermaid-failed').length,
      details: [...md.querySelectorAll('details.analysis')].map((d) => ({
        summary: d.querySelector(':scope > summary').textContent,
        withImage: !!(d.closest('figure.visual') && d.closest('figure.visual').querySelector('img:not(.missing-image)')),
      })),
      chartTable: tables.some((x) => x.closest('details') && x.textContent.includes('Pages per minute')),
      merged: tables.filter((x) => x.textContent.includes('January')).map((x) => x.rows.length),
      empty: tables.filter((x) => !x.textContent.trim()).length,
      error: !document.querySelector('#error').hidden,
    };
  });
  assert.equal(r.svgs, 1, `the flowchart is drawn: ${JSON.stringify(r)}`);
  assert.equal(r.failed, 0);
  assert.deepEqual(r.details, [
    { summary: 'bar_chart', withImage: true },
    { summary: 'flowchart', withImage: true },
  ]);
  assert.ok(r.chartTable, 'the chart read as a table is shown');
  assert.deepEqual(r.merged, [7], 'the merged table once, with the rows of page 2');
  assert.equal(r.empty, 0, 'no empty table');
  assert.equal(r.error, false);
  assert.deepEqual(errors, []);
});
