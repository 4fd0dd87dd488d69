// Browser tests of MinerU 3.4.4 content (mineru-vl-utils 1.2.1) on the page, against
// tests/mock-server.mjs --mineru344: Mermaid charts drawn as SVG (lazily loaded, strict), a broken
// Mermaid shown as its source, image analyses in collapsible <details> beside their image, chart
// content given as a Markdown table, and a table merged across pages shown once with no empty box
// for its emptied continuation.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DIST, launchBrowser, startMock, stopServer, waitHealthy } from './helpers.mjs';
import { V344 } from './mock-server.mjs';

let tmpRoot;
let pdfPath;

before(() => {
  assert.ok(fs.existsSync(path.join(DIST, 'index.html')), `${DIST}/index.html is missing: run \`npm run build\` first`);
  tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'mineru-web-v344-'));
  pdfPath = path.join(tmpRoot, 'report.pdf');
  // The mock only reads the header and counts the page objects: two pages, so the table can be
  // continued on the second one.
  fs.writeFileSync(pdfPath, '%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n2 0 obj << /Type /Page >> endobj\n%%EOF\n');
});
after(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

async function setup(t, mockArgs) {
  const server = await startMock(mockArgs, tmpRoot);
  const profile = fs.mkdtempSync(path.join(tmpRoot, 'profile-'));
  let context = null;
  t.after(async () => {
    if (context) await context.close().catch(() => {});
    await stopServer(server.proc);
  });
  await waitHealthy(server.base, server.proc, server.log, 30000);
  context = await launchBrowser(profile);
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(30000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const mermaidRequests = [];
  page.on('request', (r) => {
    if (/mermaid/i.test(r.url())) mermaidRequests.push(r.url());
  });
  return { page, base: server.base, errors, mermaidRequests };
}

async function openDocument(t) {
  const s = await setup(t, ['--mineru344', '--page-ms', '50']);
  await s.page.goto(`${s.base}/`);
  await s.page.waitForFunction(() => document.querySelector('#health').classList.contains('ok'));
  s.requestsBeforeUpload = s.mermaidRequests.length;
  await s.page.setInputFiles('#file-input', pdfPath);
  await s.page.waitForSelector('#markdown');
  // the charts are drawn after the text; a page without chart support never says "done", and
  // then the assertions below say what is missing
  await s.page.waitForSelector('#markdown[data-diagrams="done"]', { timeout: 20000 }).catch(() => {});
  return s;
}

test('a Mermaid chart is drawn as an SVG (mermaid loaded only then); a broken one shows its source', async (t) => {
  const { page, errors, mermaidRequests, requestsBeforeUpload } = await openDocument(t);
  assert.equal(requestsBeforeUpload, 0, 'the page does not load mermaid before a document needs it');
  assert.ok(mermaidRequests.length > 0, 'mermaid is loaded for the document');
  const r = await page.evaluate(() => {
    const md = document.querySelector('#markdown');
    const charts = [...md.querySelectorAll('.mermaid-chart')];
    const failed = [...md.querySelectorAll('pre.mermaid-failed')];
    return {
      charts: charts.length,
      svgs: charts.map((c) => c.querySelectorAll(':scope > svg').length),
      svgBox: charts.map((c) => {
        const b = c.querySelector('svg').getBoundingClientRect();
        return b.width > 50 && b.height > 50;
      }),
      chartInOpenDetails: charts.map((c) => !!c.closest('details.chart-content[open]')),
      chartText: charts.map((c) => c.textContent),
      mermaidCodeLeft: md.querySelectorAll('code.language-mermaid:not(.mermaid-failed code)').length,
      failed: failed.map((p) => p.textContent),
      notes: md.querySelectorAll('.mermaid-note').length,
      // strict mode: nothing that runs, no error picture left in the page
      handlers: [...md.querySelectorAll('.mermaid-chart *')].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length,
      scripts: md.querySelectorAll('.mermaid-chart script').length,
      strays: [...document.body.children].filter((e) => /mermaid/.test(e.id)).length,
      syntaxErrorText: document.body.textContent.includes('Syntax error in text'),
      errorBanner: !document.querySelector('#error').hidden,
    };
  });
  assert.equal(r.charts, 1, JSON.stringify(r));
  assert.deepEqual(r.svgs, [1]);
  assert.deepEqual(r.svgBox, [true], 'the SVG has a size');
  assert.deepEqual(r.chartInOpenDetails, [true], 'the chart is shown in its open <details>');
  assert.ok(r.chartText[0].includes('Sales'), `the chart title is drawn: ${r.chartText[0].slice(0, 200)}`);
  assert.equal(r.mermaidCodeLeft, 0, 'the drawn chart replaces its source block');
  assert.deepEqual(r.failed, [`${V344.brokenMermaid}\n`], 'the broken chart keeps its source text');
  assert.equal(r.notes, 1, 'a note says the chart was not drawn');
  assert.equal(r.handlers, 0);
  assert.equal(r.scripts, 0);
  assert.equal(r.strays, 0, 'no temporary mermaid element left under <body>');
  assert.equal(r.syntaxErrorText, false);
  assert.equal(r.errorBanner, false);
  assert.deepEqual(errors, []);
});

test('an image analysis is a collapsible <details> beside its image; chart tables render', async (t) => {
  const { page, errors } = await openDocument(t);
  const fig = await page.evaluate((analysis) => {
    const md = document.querySelector('#markdown');
    const figs = [...md.querySelectorAll('figure.visual')].filter((f) => f.textContent.includes(analysis));
    const f = figs[0];
    if (!f) return { found: 0 };
    const img = f.querySelector('img');
    const d = f.querySelector('details.analysis');
    return {
      found: figs.length,
      imgLoaded: !!img && img.src.startsWith('data:image/') && !img.classList.contains('missing-image'),
      imgBeforeDetails: !!img && !!d && !!(img.compareDocumentPosition(d) & Node.DOCUMENT_POSITION_FOLLOWING),
      summary: d && d.querySelector(':scope > summary').textContent,
      open: d && d.open,
    };
  }, V344.analysis);
  assert.deepEqual(fig, { found: 1, imgLoaded: true, imgBeforeDetails: true, summary: 'natural_image', open: false });

  const analysisVisible = () =>
    page.evaluate((analysis) => {
      const p = [...document.querySelectorAll('#markdown details.analysis p')].find((e) => e.textContent === analysis);
      return !!p && p.checkVisibility();
    }, V344.analysis);
  assert.equal(await analysisVisible(), false, 'closed at first');
  await page.click('#markdown figure.visual details.analysis:not(.chart-content) > summary');
  assert.equal(await analysisVisible(), true, 'opens on a click');
  await page.click('#markdown figure.visual details.analysis:not(.chart-content) > summary');
  assert.equal(await analysisVisible(), false, 'closes again');

  const chartTable = await page.evaluate(() => {
    const d = [...document.querySelectorAll('#markdown details.chart-content')].find((e) => e.querySelector('table'));
    return d ? { open: d.open, inFigure: !!d.closest('figure.visual'), cells: [...d.querySelectorAll('th, td')].map((c) => c.textContent) } : null;
  });
  assert.deepEqual(chartTable, { open: true, inFigure: true, cells: ['Year', 'Sales', '2020', '5'] });
  assert.deepEqual(errors, []);
});

test('a table merged across pages shows once; its emptied continuation leaves no empty table', async (t) => {
  const { page, errors } = await openDocument(t);
  const r = await page.evaluate(() => {
    const md = document.querySelector('#markdown');
    const tables = [...md.querySelectorAll('table')];
    return {
      empty: tables.filter((x) => !x.textContent.trim()).length,
      emptyWraps: [...md.querySelectorAll('.table-wrap')].filter((w) => !w.textContent.trim()).length,
      merged: tables
        .filter((x) => x.textContent.includes('Quarter'))
        .map((x) => [...x.querySelectorAll('tr')].map((tr) => [...tr.cells].map((c) => c.textContent))),
    };
  });
  assert.equal(r.empty, 0, 'no empty <table>');
  assert.equal(r.emptyWraps, 0, 'no empty table box');
  assert.deepEqual(r.merged, [V344.mergedRows], 'the merged table, once, with the rows of both pages');
  assert.deepEqual(errors, []);
});
