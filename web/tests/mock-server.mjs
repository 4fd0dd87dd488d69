#!/usr/bin/env node
// A stand-in for `mineru-cpp serve` with the endpoints the web page uses, for UI work without the
// engine: `npm run mock` then `npm run dev` (Vite proxies the API here), or open
// http://127.0.0.1:8787/ after `npm run build` (this server also serves dist/ the way the real one
// should: exact files, MIME types, index.html for unknown non-API paths).
//
//   node tests/mock-server.mjs [--port 8787] [--host 127.0.0.1] [--dist DIR] [--api-key KEY]
//                              [--load-ms 0] [--load-until-released] [--page-ms 400] [--fail-tasks]
//                              [--hostile-md] [--mineru344]
//
// Endpoints: GET /health (503 for --load-ms, or until POST /__mock/ready with --load-until-released;
// then 200), GET /v1/models, POST /v1/chat/completions
// (stream or not; answers with a canned text), POST /tasks (multipart), GET /tasks/{id},
// GET /tasks/{id}/result, GET /tasks/{id}/pages/{n} (PNG), GET /tasks/{id}/files/{name}.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json',
};

// --- a tiny PNG encoder (RGB, no filter) ------------------------------------------------------------

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
// pixel(x, y) -> [r, g, b]
export function encodePng(width, height, pixel) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  let o = 0;
  for (let y = 0; y < height; y++) {
    raw[o++] = 0;
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y);
      raw[o++] = r;
      raw[o++] = g;
      raw[o++] = b;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

// --- canned document -------------------------------------------------------------------------------

const BLOCKS = [
  { type: 'title', bbox: [0.1, 0.05, 0.9, 0.09], angle: 0, content: 'Quarterly Report' },
  { type: 'text', bbox: [0.1, 0.1, 0.9, 0.3], angle: 0, content: 'Revenue grew with $x^2$ inline math.' },
  {
    type: 'table',
    bbox: [0.1, 0.32, 0.9, 0.5],
    angle: 0,
    content: '<table><tr><td>A</td><td>B</td></tr><tr><td>1</td><td>2</td></tr></table>',
  },
  { type: 'equation', bbox: [0.1, 0.52, 0.9, 0.6], angle: 0, content: '\\[E=mc^2\\]' },
  { type: 'image', bbox: [0.1, 0.62, 0.5, 0.85], angle: 0, content: '' },
  { type: 'page_number', bbox: [0.45, 0.95, 0.55, 0.98], angle: 0, content: '1' },
];
const PAGE_W = 612;
const PAGE_H = 792;

function pagePng(blocks) {
  // a white page, grey bars where the blocks are
  return encodePng(PAGE_W, PAGE_H, (x, y) => {
    for (const b of blocks) {
      const [x1, y1, x2, y2] = b.bbox;
      if (x >= x1 * PAGE_W && x < x2 * PAGE_W && y >= y1 * PAGE_H && y < y2 * PAGE_H) {
        return (y >> 3) % 2 ? [200, 200, 205] : [240, 240, 244];
      }
    }
    return [255, 255, 255];
  });
}

function figurePng() {
  return encodePng(120, 80, (x, y) => [(x * 2) & 255, (y * 3) & 255, 160]);
}

// Markdown a hostile document could produce: none of it may run in the page.
const HOSTILE_MD = [
  '<img src="x" onerror="window.__xss=1">',
  '<script>window.__xss=2</script>',
  '[click me](javascript:window.__xss=3)',
  '<a id="bad-link" href="javascript:window.__xss=4" onclick="window.__xss=5">bad link</a>',
  '<iframe src="javascript:window.__xss=6"></iframe>',
  '<svg><script>window.__xss=8</script></svg><math><mi>x</mi></math>',
  '<table><tr><td onmouseover="window.__xss=7" style="color:red">cell $a_1$</td></tr></table>',
  '<style>body{display:none}</style>',
  '$\\href{javascript:window.__xss=9}{x}$',
  // a chart from a hostile document: HTML in labels, a click binding, an init directive asking for
  // the 'loose' security level; strict mode must keep all of it inert
  '```mermaid\n%%{init: {"securityLevel": "loose"}}%%\nflowchart LR\n  A["<img src=x onerror=window.__xss=10>"] --> B["<a href=javascript:window.__xss=11>b</a>"]\n  click A call eval("window.__xss=12")\n  click B "javascript:window.__xss=13"\n```',
].join('\n\n');

// --mineru344: what `parse`/`serve` write for MinerU 3.4.4 / mineru-vl-utils 1.2.1 content (see
// notes/mineru344_outputs_spec.md §3-§5): an image with its Image Analysis in a <details> block, a
// chart whose content is Mermaid, a chart whose Mermaid does not parse, a chart given as a Markdown
// table, and a table continued on the next page, merged into the first one (its rows follow) while
// the continuation is emptied ("lines_deleted"). The real Markdown leaves nothing for the emptied
// table; here it is written as an empty <table></table>, as a server that kept the emptied html
// would, so the page's "no empty box" rule is exercised.
export const V344 = {
  analysis: 'A grey cat sits on a red sofa, looking at the camera.',
  mermaid: 'xychart-beta\n  title "Sales"\n  x-axis [2020, 2021, 2022]\n  y-axis "Units" 0 --> 10\n  bar [5, 7, 9]',
  brokenMermaid: 'xychart-beta\n  x-axis [2020, 2021\n  bar ((( not mermaid',
  mergedRows: [
    ['Quarter', 'Revenue'],
    ['Q1', '10'],
    ['Q2', '12'],
    ['Q3', '15'],
  ],
};

function details(summary, body) {
  return `<details>\n<summary>${summary}</summary>\n\n${body}\n</details>`;
}

// Markdown blocks, model blocks and content_list entries of the 3.4.4 part of page `p` (of `pages`).
function v344Page(p, pages, img) {
  const md = [];
  const model = [];
  const cl = [];
  const rows = (rs) => rs.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('');
  if (p === 0) {
    md.push(`![](images/${img.cat})`, details('natural_image', V344.analysis));
    md.push(`![](images/${img.chart})`, details('bar_chart', '```mermaid\n' + V344.mermaid + '\n```'), 'Figure 2: Sales.');
    md.push(`![](images/${img.chart2})`, details('line_chart', '```mermaid\n' + V344.brokenMermaid + '\n```'));
    md.push(`![](images/${img.chart3})`, details('chart content', '| Year | Sales |\n| --- | --- |\n| 2020 | 5 |'));
    model.push(
      { type: 'image', bbox: [0.1, 0.86, 0.3, 0.94], angle: 0, content: V344.analysis, sub_type: 'natural_image' },
      { type: 'chart', bbox: [0.32, 0.86, 0.52, 0.94], angle: 0, content: '```mermaid\n' + V344.mermaid + '\n```', sub_type: 'bar_chart' },
    );
    cl.push(
      { type: 'image', img_path: `images/${img.cat}`, image_caption: [], image_footnote: [], content: V344.analysis, sub_type: 'natural_image' },
      { type: 'chart', img_path: `images/${img.chart}`, content: '```mermaid\n' + V344.mermaid + '\n```', chart_caption: ['Figure 2: Sales.'], chart_footnote: [], sub_type: 'bar_chart' },
    );
  }
  if (pages >= 2 && p === pages - 2) {
    // the merged table: its own rows, then the rows of its continuation on the next page
    const html = `<table>${rows(V344.mergedRows)}</table>`;
    md.push(html);
    model.push({ type: 'table', bbox: [0.55, 0.86, 0.9, 0.94], angle: 0, content: `<table>${rows(V344.mergedRows.slice(0, 3))}</table>` });
    cl.push({ type: 'table', img_path: `images/${img.table}`, table_caption: [], table_footnote: [], table_body: html });
  }
  if (pages >= 2 && p === pages - 1) {
    md.push('<table></table>'); // the emptied continuation (see above)
    model.push({ type: 'table', bbox: [0.1, 0.02, 0.9, 0.045], angle: 0, content: `<table>${rows(V344.mergedRows.slice(3))}</table>`, cell_merge: [0, 0] });
    cl.push({ type: 'table', img_path: `images/${img.table2}`, table_caption: [], table_footnote: [] }); // no table_body: emptied
  }
  return { md, model, cl };
}

function makeResult(name, pages, flags) {
  const imageName = `${crypto.createHash('sha256').update(name).digest('hex').slice(0, 16)}.jpg`;
  const mdPages = [];
  const modelOutput = [];
  const contentList = [];
  const v344Images = Object.fromEntries(
    ['cat', 'chart', 'chart2', 'chart3', 'table', 'table2'].map((k) => [k, `${crypto.createHash('sha256').update(`${name}/${k}`).digest('hex')}.jpg`]),
  );
  for (let p = 0; p < pages; p++) {
    const title = p === 0 ? 'Quarterly Report' : `Section ${p + 1}`;
    const extra = flags.v344 ? v344Page(p, pages, v344Images) : { md: [], model: [], cl: [] };
    // an emptied continuation table is the first block of its page
    const lead = extra.md[0] === '<table></table>' ? [extra.md.shift()] : [];
    mdPages.push(
      [
        ...lead,
        `# ${title}`,
        'Revenue grew with $x^2$ inline math, costs were $5 and $10 (not math).',
        '<table><tr><td>A</td><td>B</td></tr><tr><td>1</td><td>2</td></tr></table>',
        '$$\nE=mc^2\n$$',
        `![](images/${imageName})`,
        ...extra.md,
      ].join('\n\n'),
    );
    modelOutput.push([...BLOCKS.map((b, i) => (i === 0 ? { ...b, content: title } : b)), ...extra.model]);
    contentList.push(
      { type: 'text', text: title, text_level: 1, page_idx: p },
      { type: 'text', text: 'Revenue grew with $x^2$ inline math.', page_idx: p },
      { type: 'table', table_body: BLOCKS[2].content, page_idx: p },
      { type: 'equation', text: '$$\nE=mc^2\n$$', text_format: 'latex', page_idx: p },
      { type: 'image', img_path: `images/${imageName}`, page_idx: p },
      ...extra.cl.map((e) => ({ ...e, page_idx: p })),
    );
  }
  let md = mdPages.join('\n\n');
  if (flags.hostile) md += `\n\n${HOSTILE_MD}`;
  const out = {};
  if (flags.return_md) out.md_content = md;
  // as mineru-api (and mineru-cpp serve) send them: the JSON outputs as JSON text
  if (flags.return_content_list) out.content_list = JSON.stringify(contentList);
  if (flags.return_middle_json) {
    out.middle_json = JSON.stringify({
      pdf_info: modelOutput.map((_, i) => ({ page_idx: i, page_size: [PAGE_W, PAGE_H] })),
      _backend: 'vlm',
    });
  }
  if (flags.return_model_output) out.model_output = JSON.stringify(modelOutput);
  if (flags.return_images) {
    const png = `data:image/png;base64,${figurePng().toString('base64')}`;
    out.images = { [imageName]: png };
    if (flags.v344) for (const f of Object.values(v344Images)) out.images[f] = png;
  }
  return { out, files: { md, contentList, modelOutput } };
}

// --- multipart -------------------------------------------------------------------------------------

function parseMultipart(body, contentType) {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType || '');
  if (!m) throw httpError(400, 'multipart/form-data with a boundary expected');
  const boundary = Buffer.from(`--${m[1] || m[2]}`);
  const parts = [];
  let pos = body.indexOf(boundary);
  while (pos >= 0) {
    pos += boundary.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break; // closing --
    pos += 2; // CRLF
    const headEnd = body.indexOf('\r\n\r\n', pos);
    if (headEnd < 0) break;
    const head = body.subarray(pos, headEnd).toString('utf8');
    const next = body.indexOf(boundary, headEnd + 4);
    if (next < 0) break;
    const data = body.subarray(headEnd + 4, next - 2);
    const name = /name="([^"]*)"/i.exec(head);
    const filename = /filename="([^"]*)"/i.exec(head);
    const ctype = /content-type:\s*([^\r\n]+)/i.exec(head);
    parts.push({ name: name ? name[1] : '', filename: filename ? filename[1] : null, type: ctype ? ctype[1] : '', data });
    pos = next;
  }
  return parts;
}

// --- server ----------------------------------------------------------------------------------------

function httpError(status, message, type = 'invalid_request_error') {
  const e = new Error(message);
  e.status = status;
  e.type = type;
  return e;
}

function readBody(req, limit = 200 << 20) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > limit) {
        reject(httpError(413, `request body over ${limit} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res, status, obj) {
  const body = Buffer.from(JSON.stringify(obj));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length, 'Cache-Control': 'no-store' });
  res.end(body);
}

function countPdfPages(buf) {
  const s = buf.toString('latin1');
  const n = (s.match(/\/Type\s*\/Page(?![a-zA-Z])/g) || []).length;
  return Math.max(1, n);
}

export function createMockServer(opts = {}) {
  const dist = path.resolve(opts.dist || path.join(here, '..', 'dist'));
  const apiKey = opts.apiKey || '';
  const loadUntil = Date.now() + (opts.loadMs || 0);
  // With loadUntilReleased the server stays loading until a test says so (no timing assumption).
  let released = !opts.loadUntilReleased;
  const loading = () => !released || Date.now() < loadUntil;
  const pageMs = opts.pageMs ?? 400;
  const tasks = new Map();
  const modelId = 'mineru-cpp-mock';

  async function handle(req, res) {
    const url = new URL(req.url, 'http://x');
    const p = url.pathname;
    const isApi = /^\/(v1|tasks|health|metrics|file_parse)(\/|$)/.test(p);

    if (p === '/__mock/ready' && req.method === 'POST') {
      released = true;
      return sendJson(res, 200, { released: true });
    }
    if (p === '/health') {
      if (loading()) return sendJson(res, 503, { status: 'loading' });
      return sendJson(res, 200, { status: 'ok', checkpoint: 'MinerU2.5-Pro-2605-1.2B', queue: { waiting: 0, running: 0 } });
    }
    if (isApi && apiKey && req.headers.authorization !== `Bearer ${apiKey}`) {
      throw httpError(401, 'missing or wrong API key', 'authentication_error');
    }

    if (p === '/v1/models' && req.method === 'GET') {
      return sendJson(res, 200, { object: 'list', data: [{ id: modelId, object: 'model', owned_by: 'mineru-cpp' }] });
    }

    if (p === '/v1/chat/completions') {
      if (req.method !== 'POST') throw httpError(405, 'use POST');
      let j;
      try {
        j = JSON.parse((await readBody(req, 50 << 20)).toString('utf8'));
      } catch (e) {
        if (e.status) throw e;
        throw httpError(400, 'body is not valid JSON');
      }
      if (!Array.isArray(j.messages) || !j.messages.length) throw httpError(400, "'messages' must be a non-empty list");
      if (j.model !== modelId) throw httpError(404, `model '${j.model}' not found`);
      let images = 0;
      for (const m of j.messages) {
        if (Array.isArray(m.content)) {
          for (const part of m.content) {
            if (part.type === 'image_url') {
              const u = part.image_url && part.image_url.url;
              if (!/^data:image\/[a-z]+;base64,[A-Za-z0-9+/=]+$/.test(u || '')) throw httpError(400, 'image_url must be a base64 data URL');
              images++;
            }
          }
        }
      }
      const last = j.messages[j.messages.length - 1];
      const q = typeof last.content === 'string' ? last.content : (last.content.find((c) => c.type === 'text') || {}).text || '';
      const turn = j.messages.filter((m) => m.role === 'user').length;
      const answer = `Mock answer #${turn} (${images} image${images === 1 ? '' : 's'} in the conversation) to: ${q}`;
      const words = answer.split(/(?<= )/);
      const maxTokens = j.max_tokens ?? j.max_completion_tokens ?? 512;
      const out = words.slice(0, maxTokens);
      const finish = out.length < words.length ? 'length' : 'stop';
      const id = `chatcmpl-${crypto.randomBytes(6).toString('hex')}`;
      const created = Math.floor(Date.now() / 1000);
      const usage = { prompt_tokens: 10 + images * 64, completion_tokens: out.length, total_tokens: 10 + images * 64 + out.length };
      if (!j.stream) {
        return sendJson(res, 200, {
          id,
          object: 'chat.completion',
          created,
          model: modelId,
          choices: [{ index: 0, message: { role: 'assistant', content: out.join('') }, finish_reason: finish }],
          usage,
        });
      }
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive' });
      let closed = false;
      res.on('close', () => (closed = true));
      const ev = (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
      const base = { id, object: 'chat.completion.chunk', created, model: modelId };
      ev({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
      await sleep(80);
      for (const w of out) {
        if (closed) return;
        ev({ ...base, choices: [{ index: 0, delta: { content: w }, finish_reason: null }] });
        await sleep(15);
      }
      ev({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }], usage });
      res.end('data: [DONE]\n\n');
      return;
    }

    if (p === '/tasks' && req.method === 'POST') {
      const parts = parseMultipart(await readBody(req), req.headers['content-type']);
      const files = parts.filter((x) => x.name === 'files' && x.filename != null);
      if (!files.length) throw httpError(400, "no file in the 'files' field");
      const field = (k) => {
        const f = parts.find((x) => x.name === k && x.filename == null);
        return f ? f.data.toString('utf8') : undefined;
      };
      const flag = (k, dflt) => {
        const v = field(k);
        if (v === undefined) return dflt;
        if (!/^(true|false)$/i.test(v)) throw httpError(400, `${k} must be true or false`);
        return /^true$/i.test(v);
      };
      const flags = {
        return_md: flag('return_md', true),
        return_content_list: flag('return_content_list', false),
        return_middle_json: flag('return_middle_json', false),
        return_model_output: flag('return_model_output', false),
        return_images: flag('return_images', false),
      };
      const f = files[0];
      const isPdf = f.data.subarray(0, 5).toString('latin1') === '%PDF-';
      const isImage = /^\x89PNG|^\xff\xd8/.test(f.data.subarray(0, 4).toString('latin1'));
      if (!isPdf && !isImage) throw httpError(400, `${f.filename}: not a PDF or an image`);
      const total = isPdf ? countPdfPages(f.data) : 1;
      const start = Math.max(0, parseInt(field('start_page_id') ?? '0', 10) || 0);
      const end = Math.min(total - 1, parseInt(field('end_page_id') ?? '99999', 10));
      if (start > end) throw httpError(400, 'start_page_id is after end_page_id');
      const id = crypto.randomUUID();
      const name = path.basename(f.filename).replace(/\.[^.]*$/, '') || 'document';
      flags.hostile = !!opts.hostileMd;
      flags.v344 = !!opts.mineru344;
      const task = { id, name, pages: end - start + 1, created: Date.now(), flags, fail: !!opts.failTasks };
      tasks.set(id, task);
      return sendJson(res, 202, { task_id: id, status: 'queued' });
    }

    let m = /^\/tasks\/([^/]+)(?:\/(result|pages|files)(?:\/(.+))?)?$/.exec(p);
    if (m && req.method === 'GET') {
      const task = tasks.get(decodeURIComponent(m[1]));
      if (!task) throw httpError(404, `no task ${m[1]}`, 'not_found_error');
      const elapsed = Date.now() - task.created - 300; // queued for 300 ms
      const done = Math.max(0, Math.min(task.pages, Math.floor(elapsed / pageMs)));
      const status = elapsed < 0 ? 'queued' : done >= task.pages ? (task.fail ? 'failed' : 'done') : 'running';
      if (!m[2]) {
        const body = { task_id: task.id, status, progress: { pages_done: done, pages_total: task.pages } };
        if (status === 'failed') body.error = 'mock failure (--fail-tasks)';
        return sendJson(res, 200, body);
      }
      if (status !== 'done') throw httpError(409, `task is ${status}`);
      const { out, files } = makeResult(task.name, task.pages, task.flags);
      if (m[2] === 'result') {
        return sendJson(res, 200, { task_id: task.id, backend: 'vlm', version: 'mock', results: { [task.name]: out } });
      }
      if (m[2] === 'pages') {
        const n = Number(m[3]);
        if (!Number.isInteger(n) || n < 0 || n >= task.pages) throw httpError(404, `no page ${m[3]}`);
        const png = pagePng(BLOCKS);
        res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': png.length });
        return res.end(png);
      }
      if (m[2] === 'files') {
        const fname = decodeURIComponent(m[3] || '');
        const map = {
          [`${task.name}.md`]: ['text/markdown; charset=utf-8', files.md],
          [`${task.name}_content_list.json`]: ['application/json', JSON.stringify(files.contentList, null, 2)],
          [`${task.name}_middle.json`]: ['application/json', JSON.stringify({ pdf_info: [] }, null, 2)],
          [`${task.name}_model.json`]: ['application/json', JSON.stringify(files.modelOutput, null, 2)],
        };
        if (!map[fname]) throw httpError(404, `no file ${fname}`);
        const body = Buffer.from(map[fname][1]);
        res.writeHead(200, {
          'Content-Type': map[fname][0],
          'Content-Length': body.length,
          'Content-Disposition': `attachment; filename="${fname}"`,
        });
        return res.end(body);
      }
    }

    if (isApi) throw httpError(404, `no route ${req.method} ${p}`, 'not_found_error');

    // static files of the page; unknown paths get index.html (a single-page app)
    if (req.method !== 'GET' && req.method !== 'HEAD') throw httpError(405, 'use GET');
    let rel = decodeURIComponent(p).replace(/^\/+/, '');
    if (rel === '' || rel.endsWith('/')) rel += 'index.html';
    let file = path.resolve(dist, rel);
    if (!file.startsWith(dist + path.sep)) throw httpError(404, 'not found');
    if (!fs.existsSync(file) || !fs.statSync(file).isFile()) {
      if (/\.[a-z0-9]+$/i.test(rel)) throw httpError(404, `no file ${rel}`);
      file = path.join(dist, 'index.html');
    }
    if (!fs.existsSync(file)) throw httpError(404, `${dist} has no index.html: run npm run build`);
    const body = fs.readFileSync(file);
    res.writeHead(200, {
      'Content-Type': MIME[path.extname(file)] || 'application/octet-stream',
      'Content-Length': body.length,
      'Cache-Control': file.endsWith('index.html') ? 'no-cache' : 'public, max-age=3600',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  return http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      const status = e.status || 500;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      sendJson(res, status, { error: { message: e.message || String(e), type: e.type || 'server_error', code: status } });
    });
  });
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// CLI
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
  };
  const port = Number(opt('--port', '8787'));
  const host = opt('--host', '127.0.0.1');
  const server = createMockServer({
    dist: opt('--dist'),
    apiKey: opt('--api-key', ''),
    loadMs: Number(opt('--load-ms', '0')),
    loadUntilReleased: args.includes('--load-until-released'),
    pageMs: Number(opt('--page-ms', '400')),
    failTasks: args.includes('--fail-tasks'),
    hostileMd: args.includes('--hostile-md'),
    mineru344: args.includes('--mineru344'),
  });
  server.listen(port, host, () => {
    const a = server.address();
    console.log(`mock mineru-cpp server on http://${a.address}:${a.port}/`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
