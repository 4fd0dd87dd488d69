// Browser tests of the page's edge cases against tests/mock-server.mjs (no engine needed): API key,
// failed tasks, hostile Markdown, a server that is still loading, reopening a task, bad uploads.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DIST, TITLE, launchBrowser, makePdf, sleep, startMock, stopServer, waitHealthy } from './helpers.mjs';

let tmpRoot;
let pdfPath;

before(() => {
  assert.ok(fs.existsSync(path.join(DIST, 'index.html')), `${DIST}/index.html is missing: run \`npm run build\` first`);
  tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'mineru-web-ui-'));
  pdfPath = path.join(tmpRoot, 'report.pdf');
  fs.writeFileSync(pdfPath, makePdf([TITLE, 'Some text.']));
});
after(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

// A mock server and a browser page for one test; both closed after it.
async function setup(t, mockArgs = [], { waitReady = true } = {}) {
  const server = await startMock(mockArgs, tmpRoot);
  const profile = fs.mkdtempSync(path.join(tmpRoot, 'profile-'));
  let context = null;
  t.after(async () => {
    if (context) await context.close().catch(() => {});
    await stopServer(server.proc);
  });
  if (waitReady) await waitHealthy(server.base, server.proc, server.log, 30000);
  else await waitListening(server.base);
  context = await launchBrowser(profile);
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(30000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, base: server.base, errors };
}

// Until the server answers anything (a 503 included).
async function waitListening(base) {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    try {
      await fetch(`${base}/health`);
      return;
    } catch {
      await sleep(50);
    }
  }
  throw new Error(`${base} does not answer`);
}

async function uploadAndWait(page, file = pdfPath) {
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('#markdown');
}

test('API key: 401 is shown, then the key is sent everywhere (task, page images, downloads)', async (t) => {
  const { page, base, errors } = await setup(t, ['--api-key', 'sesame']);
  await page.goto(`${base}/`);
  await page.waitForFunction(() => /401/.test(document.querySelector('#chat-model').textContent));
  assert.ok(await page.$eval('#chat-model', (e) => e.classList.contains('error')));

  // without the key the upload fails visibly
  await page.setInputFiles('#file-input', pdfPath);
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await page.textContent('#error-text'), /Upload failed: 401.*API key/);

  await page.fill('#api-key', 'sesame');
  await page.dispatchEvent('#api-key', 'change');
  await page.waitForFunction(() => document.querySelector('#chat-model').textContent === 'mineru-cpp-mock');
  assert.ok(await page.isHidden('#error'), 'the error goes away');

  await uploadAndWait(page);
  await page.waitForFunction(() => {
    const img = document.querySelector('.page-image');
    return img && img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0;
  });
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('a.download[data-file="report.md"]')]);
  assert.equal(download.suggestedFilename(), 'report.md');
  assert.ok(fs.readFileSync(await download.path(), 'utf8').includes(TITLE));

  await page.fill('#chat-input', 'hello');
  await page.click('#chat-send');
  await page.waitForSelector('.msg.assistant .latency[data-total-ms]');
  assert.match(await page.textContent('.msg.assistant .msg-text'), /Mock answer #1 \(0 images/);
  assert.deepEqual(errors, []);
});

test('a failed task shows its error', async (t) => {
  const { page, base } = await setup(t, ['--fail-tasks', '--page-ms', '50']);
  await page.goto(`${base}/`);
  await page.setInputFiles('#file-input', pdfPath);
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await page.textContent('#error-text'), /The task failed: mock failure/);
  assert.equal(await page.textContent('#task-status'), 'failed');
  assert.equal(await page.$('#markdown'), null);
});

test('hostile Markdown is rendered inert', async (t) => {
  const { page, base, errors } = await setup(t, ['--hostile-md', '--page-ms', '50']);
  await page.goto(`${base}/`);
  await uploadAndWait(page);
  await page.waitForSelector('#markdown[data-diagrams="done"]');
  await page.click('#markdown .mermaid-chart .node').catch(() => {});
  await page.hover('#markdown td');
  await page.click('#markdown >> text=click me').catch(() => {});
  await page.waitForTimeout(300);
  const r = await page.evaluate(() => {
    const md = document.querySelector('#markdown');
    return {
      xss: window.__xss,
      // the only SVG allowed is the chart mermaid drew (its <style> included)
      scripts: [...md.querySelectorAll('script, iframe, style, svg')].filter((e) => !e.closest('.mermaid-chart')).length,
      chartScripts: md.querySelectorAll('.mermaid-chart script, .mermaid-chart iframe').length,
      chartJsLinks: [...md.querySelectorAll('.mermaid-chart a')].filter((a) => /javascript:/i.test(a.getAttribute('href') || a.getAttribute('xlink:href') || '')).length,
      handlers: [...md.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length,
      styled: [...md.querySelectorAll('td[style]')].length,
      jsLinks: [...md.querySelectorAll('a[href]')].filter((a) => /^\s*javascript:/i.test(a.getAttribute('href'))).length,
      bodyVisible: getComputedStyle(document.body).display !== 'none',
      cellMath: !!md.querySelector('td .katex'),
      title: md.textContent.includes('Quarterly Report'),
    };
  });
  assert.deepEqual(r, {
    xss: undefined,
    scripts: 0,
    chartScripts: 0,
    chartJsLinks: 0,
    handlers: 0,
    styled: 0,
    jsLinks: 0,
    bodyVisible: true,
    cellMath: true,
    title: true,
  });
  assert.deepEqual(errors, []);
});

test('a loading server shows as loading, then ready', async (t) => {
  // The mock stays loading until released, so the page is sure to see it loading first.
  const { page, base } = await setup(t, ['--load-until-released'], { waitReady: false });
  await page.goto(`${base}/`);
  await page.waitForFunction(() => document.querySelector('#health').classList.contains('busy'));
  const r = await fetch(`${base}/__mock/ready`, { method: 'POST' });
  assert.equal(r.status, 200);
  await page.waitForFunction(() => document.querySelector('#health').classList.contains('ok'), null, { timeout: 15000 });
  // The page names the checkpoint the server runs.
  assert.equal(await page.textContent('#health'), 'ready · MinerU2.5-Pro-2605-1.2B');
});

test('a task reopens from the address after a reload; bad files are refused with a message', async (t) => {
  const { page, base, errors } = await setup(t, ['--page-ms', '50']);
  await page.goto(`${base}/`);
  await uploadAndWait(page);
  assert.match(page.url(), /#task=[0-9a-f-]+$/);
  await page.reload();
  await page.waitForSelector('#markdown');
  assert.ok((await page.textContent('#markdown')).includes(TITLE));
  assert.ok((await page.$$('.layout-box')).length >= 4);

  // refused by the page itself
  const txt = path.join(tmpRoot, 'notes.txt');
  fs.writeFileSync(txt, 'hello');
  await page.setInputFiles('#file-input', txt);
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await page.textContent('#error-text'), /notes\.txt: not a PDF or an image/);

  // refused by the server: the message comes through
  const fake = path.join(tmpRoot, 'fake.pdf');
  fs.writeFileSync(fake, 'not a pdf at all');
  await page.setInputFiles('#file-input', fake);
  await page.waitForFunction(() => /Upload failed: 400/.test(document.querySelector('#error-text').textContent));
  assert.match(await page.textContent('#error-text'), /fake\.pdf: not a PDF or an image/);
  assert.deepEqual(errors, []);
});
