// The page: upload a document (POST tasks), follow its progress, show pages with layout boxes and
// the Markdown beside them, offer the outputs for download; and a chat about an image
// (POST v1/chat/completions, streamed).
import 'katex/dist/katex.min.css';
import './style.css';
import { ApiError, blobToDataUrl, getBlob, getJson, hasApiKey, readChatStream, request, setApiKey } from './api.js';
import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);

// --- errors: always visible, never a blank page -------------------------------------------------------

function showError(message) {
  $('error-text').textContent = String(message);
  $('error').hidden = false;
}
function clearError() {
  $('error').hidden = true;
  $('error-text').textContent = '';
}
function messageOf(e) {
  if (e instanceof ApiError) return e.message;
  if (e && e.message) return e.message;
  return String(e);
}
$('error-close').addEventListener('click', clearError);
window.addEventListener('error', (ev) => showError(`Unexpected error: ${ev.message || ev.error}`));
window.addEventListener('unhandledrejection', (ev) => showError(`Unexpected error: ${messageOf(ev.reason)}`));

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

// --- API key ---------------------------------------------------------------------------------------

const KEY_STORE = 'mineru.apiKey';
try {
  $('api-key').value = sessionStorage.getItem(KEY_STORE) || '';
} catch {
  // storage disabled
}
setApiKey($('api-key').value);
$('api-key').addEventListener('change', () => {
  setApiKey($('api-key').value);
  try {
    sessionStorage.setItem(KEY_STORE, $('api-key').value);
  } catch {
    // storage disabled
  }
  clearError();
  loadModel();
  if (state.taskId && !state.polling && !state.result) startPolling(state.taskId);
});

// --- server health ---------------------------------------------------------------------------------

async function checkHealth() {
  const h = $('health');
  let next = 10000;
  try {
    const res = await fetch('health', { cache: 'no-store' });
    if (res.ok) {
      // Which checkpoint answers (2509, Pro-2605, a GGUF file): the server names it in /health.
      let checkpoint = '';
      try {
        checkpoint = (await res.json()).checkpoint || '';
      } catch {
        // an older server: no name
      }
      h.textContent = checkpoint ? `ready · ${checkpoint}` : 'server ready';
      h.title = checkpoint ? `GET /health: model ${checkpoint}` : 'GET /health';
      h.className = 'health ok';
    } else if (res.status === 503) {
      h.textContent = 'server loading…';
      h.className = 'health busy';
      next = 1500;
    } else {
      h.textContent = `server: ${res.status}`;
      h.className = 'health bad';
    }
  } catch {
    h.textContent = 'server unreachable';
    h.className = 'health bad';
    next = 3000;
  }
  setTimeout(checkHealth, next);
}

// --- documents -------------------------------------------------------------------------------------

const state = {
  taskId: null,
  fileName: '',
  polling: false,
  pollTimer: 0,
  pollFailures: 0,
  result: null,
  objectUrls: [],
  observer: null,
  generation: 0, // bumps on every new task: late answers of an old one are ignored
};

const dropzone = $('dropzone');
const fileInput = $('file-input');
dropzone.addEventListener('click', () => fileInput.click());
dropzone.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' || ev.key === ' ') {
    ev.preventDefault();
    fileInput.click();
  }
});
fileInput.addEventListener('change', () => {
  const f = fileInput.files && fileInput.files[0];
  if (f) upload(f);
  fileInput.value = '';
});
for (const ev of ['dragenter', 'dragover']) {
  dropzone.addEventListener(ev, (e) => {
    e.preventDefault();
    dropzone.classList.add('over');
  });
}
for (const ev of ['dragleave', 'drop']) {
  dropzone.addEventListener(ev, (e) => {
    e.preventDefault();
    dropzone.classList.remove('over');
  });
}
dropzone.addEventListener('drop', (e) => {
  const f = e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files[0];
  if (f) upload(f);
});
// A file dropped anywhere else must not navigate away from the page.
window.addEventListener('dragover', (e) => e.preventDefault());
window.addEventListener('drop', (e) => e.preventDefault());

function looksSupported(file) {
  if (/^image\//.test(file.type) || file.type === 'application/pdf') return true;
  return /\.(pdf|png|jpe?g|webp|gif|bmp|tiff?|jp2)$/i.test(file.name);
}

function resetDocument() {
  state.generation++;
  clearTimeout(state.pollTimer);
  state.polling = false;
  state.pollFailures = 0;
  state.result = null;
  if (state.observer) state.observer.disconnect();
  state.observer = null;
  for (const u of state.objectUrls) URL.revokeObjectURL(u);
  state.objectUrls = [];
  $('results').replaceChildren();
}

async function upload(file) {
  clearError();
  if (!looksSupported(file)) {
    showError(`${file.name}: not a PDF or an image`);
    return;
  }
  resetDocument();
  const gen = state.generation;
  state.taskId = null;
  state.fileName = file.name;
  $('chat-use-page').disabled = true;
  showTask(file.name, 'uploading…');
  setProgress(null);

  const form = new FormData();
  form.append('files', file, file.name);
  const start = parseInt($('opt-start').value, 10);
  const end = parseInt($('opt-end').value, 10);
  if (start >= 1) form.append('start_page_id', String(start - 1));
  if (end >= 1) form.append('end_page_id', String(end - 1));
  for (const k of ['return_md', 'return_content_list', 'return_middle_json', 'return_model_output', 'return_images']) {
    form.append(k, $(`opt-${k}`).checked ? 'true' : 'false');
  }
  try {
    const j = await getJson('tasks', { method: 'POST', body: form });
    if (gen !== state.generation) return;
    if (!j || !j.task_id) throw new ApiError('the server did not return a task id');
    state.taskId = String(j.task_id);
    history.replaceState(null, '', `#task=${encodeURIComponent(state.taskId)}`);
    $('chat-use-page').disabled = false;
    startPolling(state.taskId);
  } catch (e) {
    if (gen !== state.generation) return;
    setStatus('failed', 'failed');
    showError(`Upload failed: ${messageOf(e)}`);
  }
}

function showTask(name, status) {
  $('task').hidden = false;
  $('task-file').textContent = name;
  setStatus(status, 'queued');
}
function setStatus(text, kind) {
  const s = $('task-status');
  s.textContent = text;
  s.dataset.status = kind;
}
function setProgress(done, total) {
  const bar = $('progress');
  const label = $('progress-text');
  if (total > 0) {
    bar.max = total;
    bar.value = Math.min(done, total);
    label.textContent = `page ${Math.min(done, total)} of ${total}`;
  } else {
    bar.removeAttribute('value'); // indeterminate
    label.textContent = '';
  }
}

function taskPath(id, rest = '') {
  return `tasks/${encodeURIComponent(id)}${rest}`;
}

function startPolling(id) {
  const gen = state.generation;
  state.polling = true;
  state.pollFailures = 0;
  let delay = 300;
  const tick = async () => {
    if (gen !== state.generation) return;
    let t;
    try {
      t = await getJson(taskPath(id), { cache: 'no-store' });
    } catch (e) {
      if (gen !== state.generation) return;
      const fatal = e instanceof ApiError && [400, 401, 403, 404, 410].includes(e.status);
      state.pollFailures++;
      if (fatal || state.pollFailures >= 20) {
        state.polling = false;
        setStatus('error', 'failed');
        showError(`Cannot follow the task: ${messageOf(e)}`);
        return;
      }
      state.pollTimer = setTimeout(tick, Math.min(5000, 500 * state.pollFailures));
      return;
    }
    if (gen !== state.generation) return;
    state.pollFailures = 0;
    const p = t.progress || {};
    const total = Number(p.pages_total) || 0;
    const done = Number(p.pages_done) || 0;
    if (!$('task-file').textContent) $('task-file').textContent = t.file_name || t.filename || `task ${id}`;
    if (t.status === 'done') {
      setProgress(total || done, total || done);
      setStatus('done', 'done');
      state.polling = false;
      await loadResult(id, gen);
      return;
    }
    if (t.status === 'failed') {
      setProgress(done, total);
      setStatus('failed', 'failed');
      state.polling = false;
      showError(`The task failed: ${t.error || 'no reason given'}`);
      return;
    }
    setProgress(done, total);
    setStatus(t.status === 'running' ? 'running' : t.status || 'queued', t.status || 'queued');
    delay = Math.min(1500, delay + 100);
    state.pollTimer = setTimeout(tick, delay);
  };
  tick();
}

async function loadResult(id, gen) {
  try {
    const r = await getJson(taskPath(id, '/result'), { cache: 'no-store' });
    if (gen !== state.generation) return;
    if (r && r.status === 'failed') {
      setStatus('failed', 'failed');
      showError(`The task failed: ${r.error || 'no reason given'}`);
      return;
    }
    if (r && (r.status === 'queued' || r.status === 'running') && !r.results) {
      startPolling(id); // not finished after all (202): keep following it
      return;
    }
    state.result = r;
    renderResults(id, r, gen);
  } catch (e) {
    if (gen !== state.generation) return;
    showError(`Cannot load the result: ${messageOf(e)}`);
  }
}

// --- results -----------------------------------------------------------------------------------------

const TYPE_COLORS = {
  title: '#d62728',
  doc_title: '#d62728',
  paragraph_title: '#e377c2',
  text: '#1f77b4',
  list: '#17becf',
  ref_text: '#9edae5',
  table: '#2ca02c',
  table_caption: '#98df8a',
  table_footnote: '#bcbd22',
  image: '#ff7f0e',
  image_caption: '#ffbb78',
  image_footnote: '#c49c94',
  chart: '#ff9896',
  equation: '#9467bd',
  interline_equation: '#9467bd',
  equation_block: '#c5b0d5',
  code: '#8c564b',
  code_caption: '#c49c94',
  algorithm: '#8c564b',
  header: '#7f7f7f',
  footer: '#7f7f7f',
  page_number: '#aaaaaa',
  page_footnote: '#bcbd22',
  aside_text: '#c7c7c7',
  phonetic: '#dbdb8d',
};
function colorFor(type) {
  if (TYPE_COLORS[type]) return TYPE_COLORS[type];
  let h = 0;
  for (const ch of String(type)) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return `hsl(${h % 360} 70% 45%)`;
}

function clamp01(v) {
  const x = Number(v);
  return Number.isFinite(x) ? Math.max(0, Math.min(1, x)) : 0;
}

// One page: the page image fetched lazily (with the API key when set), the layout boxes over it.
function pageFigure(id, index, blocks, gen) {
  const frame = el('div', { class: 'page-frame' });
  const img = el('img', { class: 'page-image', alt: `page ${index + 1}`, 'data-page': index });
  frame.append(img);
  const types = new Set();
  (blocks || []).forEach((b, k) => {
    if (!b || !Array.isArray(b.bbox) || b.bbox.length < 4) return;
    let [x1, y1, x2, y2] = b.bbox.map(clamp01);
    if (x2 < x1) [x1, x2] = [x2, x1];
    if (y2 < y1) [y1, y2] = [y2, y1];
    const type = String(b.type || 'unknown');
    types.add(type);
    const color = colorFor(type);
    const tip = `${k + 1}. ${type}${b.angle ? ` (rotated ${b.angle}°)` : ''}${
      b.content ? `\n${String(b.content).slice(0, 300)}` : ''
    }`;
    const box = el(
      'div',
      {
        class: 'layout-box',
        title: tip,
        'data-type': type,
        'data-order': k + 1,
        style: `left:${x1 * 100}%;top:${y1 * 100}%;width:${(x2 - x1) * 100}%;height:${(y2 - y1) * 100}%;--box:${color}`,
      },
      el('span', { class: 'layout-num', text: String(k + 1) }),
    );
    frame.append(box);
  });
  const fig = el('figure', { class: 'page', 'data-page': index }, frame, el('figcaption', { text: `Page ${index + 1}` }));
  fig._load = async () => {
    try {
      const blob = await getBlob(taskPath(id, `/pages/${index}`));
      if (gen !== state.generation) return;
      const url = URL.createObjectURL(blob);
      state.objectUrls.push(url);
      img.src = url;
      frame.classList.add('loaded');
    } catch (e) {
      if (gen !== state.generation) return;
      frame.classList.add('failed');
      frame.append(el('div', { class: 'page-error', text: `Page image unavailable: ${messageOf(e)}` }));
    }
  };
  return { fig, types };
}

function legend(types) {
  const items = [...types].sort().map((t) =>
    el('span', { class: 'legend-item', style: `--box:${colorFor(t)}` }, el('i'), document.createTextNode(t)),
  );
  return el('div', { class: 'legend' }, ...items);
}

function downloadLink(id, filename, label) {
  const href = taskPath(id, `/files/${encodeURIComponent(filename)}`);
  const a = el('a', { class: 'download', href, download: filename, text: label, 'data-file': filename });
  a.addEventListener('click', async (ev) => {
    if (!hasApiKey()) return; // the browser fetches it itself
    ev.preventDefault();
    try {
      const blob = await getBlob(href);
      const url = URL.createObjectURL(blob);
      const tmp = el('a', { href: url, download: filename });
      document.body.append(tmp);
      tmp.click();
      tmp.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      showError(`Download failed: ${messageOf(e)}`);
    }
  });
  return a;
}

// mineru-api sends model_output, middle_json and content_list as JSON text; accept objects too.
function normalizeResult(raw) {
  const res = { ...(raw || {}) };
  for (const k of ['model_output', 'middle_json', 'content_list']) {
    if (typeof res[k] === 'string') {
      try {
        res[k] = res[k] ? JSON.parse(res[k]) : null;
      } catch {
        res[k] = null;
      }
    }
  }
  return res;
}

// MinerU 4's files (the server's default) have a Middle JSON 2.0 (`pages`) and no model output;
// MinerU 3.x/2.5's have both (`pdf_info`).
function pageCount(res) {
  if (Array.isArray(res.model_output)) return res.model_output.length;
  const mj = res.middle_json;
  if (mj && Array.isArray(mj.pdf_info)) return mj.pdf_info.length;
  if (mj && Array.isArray(mj.pages)) return mj.pages.length;
  return 0;
}

// A block's text for its tooltip: a string, or the text of Middle JSON 2.0 spans and nested blocks.
function blockText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((c) => (c && typeof c === 'object' ? blockText(c.content !== undefined ? c.content : c.text) : ''))
    .filter(Boolean)
    .join(' ');
}

// The layout boxes of page i, in reading order: the model's (model output, bbox 0-1), or the top
// blocks of a Middle JSON 2.0 page (bbox 0-1 of the page too).
function pageBlocks(res, i) {
  if (Array.isArray(res.model_output)) return res.model_output[i];
  const page = res.middle_json && Array.isArray(res.middle_json.pages) ? res.middle_json.pages[i] : null;
  if (!page || !Array.isArray(page.blocks)) return null;
  return page.blocks.map((b) => ({ type: b && b.type, bbox: b && b.bbox, content: blockText(b && b.content) }));
}

// The result files a task offers for download: MinerU 4's names, or MinerU 3.x/2.5's NAME_* files.
function resultFiles(version, name) {
  if (String(version || '').startsWith('4')) {
    return [
      ['markdown.md', 'Markdown'],
      ['content_list.json', 'content list'],
      ['middle_json.json', 'middle JSON'],
      ['structured_content.json', 'structured content'],
    ];
  }
  return [
    [`${name}.md`, 'Markdown'],
    [`${name}_content_list.json`, 'content list'],
    [`${name}_middle.json`, 'middle JSON'],
    [`${name}_model.json`, 'model output'],
  ];
}

function renderResults(id, r, gen) {
  const root = $('results');
  root.replaceChildren();
  const results = (r && r.results) || {};
  const names = Object.keys(results);
  if (!names.length) {
    root.append(el('p', { class: 'dim', text: 'The task finished without results.' }));
    return;
  }
  const observer = new IntersectionObserver(
    (entries) => {
      for (const en of entries) {
        if (!en.isIntersecting) continue;
        observer.unobserve(en.target);
        if (en.target._load) en.target._load();
      }
    },
    { rootMargin: '1200px 0px' },
  );
  state.observer = observer;

  names.forEach((name, ri) => {
    const res = normalizeResult(results[name]);
    const files = resultFiles(r.version, name);
    const downloads = el(
      'div',
      { class: 'downloads' },
      el('span', { class: 'dim', text: 'Download:' }),
      ...files.map(([f, label]) => downloadLink(id, f, label)),
    );

    // pages with their boxes (the page images are per task: only for its first document)
    const pagesCol = el('div', { class: 'pages' });
    const n = ri === 0 ? pageCount(res) : 0;
    const allTypes = new Set();
    const figs = [];
    for (let i = 0; i < n; i++) {
      const blocks = pageBlocks(res, i);
      const { fig, types } = pageFigure(id, i, blocks, gen);
      types.forEach((t) => allTypes.add(t));
      figs.push(fig);
      pagesCol.append(fig);
    }
    const boxesToggle = el('input', { type: 'checkbox', checked: true, id: ri === 0 ? 'show-boxes' : null });
    boxesToggle.addEventListener('change', () => pagesCol.classList.toggle('hide-boxes', !boxesToggle.checked));
    const pagesHead = el(
      'div',
      { class: 'col-head' },
      el('h3', { text: n ? `Pages (${n})` : 'Pages' }),
      el('label', { class: 'small' }, boxesToggle, document.createTextNode(' layout boxes')),
    );

    // the Markdown, rendered or as source
    const md = typeof res.md_content === 'string' ? res.md_content : '';
    const mdBox = el('div', { class: 'markdown', id: ri === 0 ? 'markdown' : `markdown-${ri + 1}` });
    const mdSource = el('pre', { class: 'markdown-source', hidden: true });
    mdSource.textContent = md;
    try {
      if (md) renderMarkdown(mdBox, md, res.images || {});
      else mdBox.append(el('p', { class: 'dim', text: 'No Markdown in the result (return_md off?).' }));
    } catch (e) {
      mdBox.append(el('p', { class: 'error', text: `Cannot render the Markdown: ${messageOf(e)}` }));
      mdSource.hidden = false;
    }
    const srcToggle = el('input', { type: 'checkbox' });
    srcToggle.addEventListener('change', () => {
      mdSource.hidden = !srcToggle.checked;
      mdBox.hidden = srcToggle.checked;
    });
    const mdHead = el(
      'div',
      { class: 'col-head' },
      el('h3', { text: 'Markdown' }),
      el('label', { class: 'small' }, srcToggle, document.createTextNode(' source')),
    );

    const section = el(
      'section',
      { class: 'result', 'data-name': name },
      el('h2', { text: name }),
      downloads,
      n && allTypes.size ? legend(allTypes) : null,
      el(
        'div',
        { class: 'result-cols' },
        el('div', { class: 'col pages-col' }, pagesHead, pagesCol),
        el('div', { class: 'col md-col' }, mdHead, mdBox, mdSource),
      ),
    );
    root.append(section);
    for (const f of figs) observer.observe(f);
  });
}

// Reopen a task from the address (#task=ID): jobs outlive the page.
function resumeFromHash() {
  const m = /(?:^#|&)task=([^&]+)/.exec(location.hash);
  if (!m) return;
  resetDocument();
  state.taskId = decodeURIComponent(m[1]);
  showTask(`task ${state.taskId}`, 'checking…');
  $('task-file').textContent = '';
  $('chat-use-page').disabled = false;
  startPolling(state.taskId);
}

// --- chat --------------------------------------------------------------------------------------------

const chat = {
  model: null,
  image: null, // {url: data URL, label}
  messages: [], // the conversation sent back on every turn
  busy: false,
  abort: null,
};

async function loadModel() {
  const label = $('chat-model');
  try {
    const j = await getJson('v1/models', { cache: 'no-store' });
    const first = j && Array.isArray(j.data) && j.data[0];
    if (!first || !first.id) throw new ApiError('the server lists no model');
    chat.model = String(first.id);
    label.textContent = chat.model;
    label.classList.remove('error');
  } catch (e) {
    chat.model = null;
    label.textContent = `unavailable (${messageOf(e)})`;
    label.classList.add('error');
  }
}

function setChatImage(url, label) {
  chat.image = { url, label };
  newConversation();
  const prev = $('chat-image-preview');
  prev.replaceChildren(
    el('img', { src: url, alt: label, id: 'chat-image-thumb' }),
    el('span', { text: label }),
    el('button', {
      type: 'button',
      class: 'link-button',
      text: 'remove',
      onclick: () => {
        chat.image = null;
        newConversation();
        prev.replaceChildren(document.createTextNode('No image: questions go without one.'));
      },
    }),
  );
}

function newConversation() {
  if (chat.abort) chat.abort.abort();
  chat.messages = [];
  $('chat-log').replaceChildren();
}

$('chat-image-input').addEventListener('change', async () => {
  const input = $('chat-image-input');
  const f = input.files && input.files[0];
  input.value = '';
  if (!f) return;
  if (!/^image\//.test(f.type)) {
    showError(`${f.name}: not an image`);
    return;
  }
  try {
    setChatImage(await blobToDataUrl(f), f.name);
  } catch (e) {
    showError(`Cannot read ${f.name}: ${messageOf(e)}`);
  }
});

$('chat-use-page').addEventListener('click', async () => {
  if (!state.taskId) return;
  try {
    const blob = await getBlob(taskPath(state.taskId, '/pages/0'));
    setChatImage(await blobToDataUrl(blob), `${state.fileName || 'document'}, page 1`);
  } catch (e) {
    showError(`Cannot get page 1: ${messageOf(e)}`);
  }
});

$('chat-new').addEventListener('click', newConversation);
$('chat-stop').addEventListener('click', () => chat.abort && chat.abort.abort());

$('chat-input').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    $('chat-form').requestSubmit();
  }
});

$('chat-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const q = $('chat-input').value.trim();
  if (!q || chat.busy) return;
  $('chat-input').value = '';
  ask(q);
});

function fmtMs(ms) {
  return ms == null ? '–' : `${Math.round(ms)} ms`;
}

async function ask(question) {
  clearError();
  if (!chat.model) await loadModel();
  if (!chat.model) {
    showError('No model to ask: GET /v1/models failed.');
    return;
  }
  const conversation = chat.messages; // replaced (not emptied) by newConversation()
  const first = conversation.length === 0;
  const content =
    first && chat.image
      ? [
          { type: 'image_url', image_url: { url: chat.image.url } },
          { type: 'text', text: question },
        ]
      : question;
  const userMsg = { role: 'user', content };
  const log = $('chat-log');
  const userBubble = el('div', { class: 'msg user' });
  if (first && chat.image) userBubble.append(el('img', { class: 'msg-image', src: chat.image.url, alt: chat.image.label }));
  userBubble.append(el('div', { class: 'msg-text', text: question }));
  const answerText = el('div', { class: 'msg-text' });
  const latency = el('div', { class: 'latency small dim', text: 'waiting…' });
  const answer = el('div', { class: 'msg assistant streaming' }, answerText, latency);
  log.append(userBubble, answer);
  log.scrollTop = log.scrollHeight;

  chat.busy = true;
  chat.abort = new AbortController();
  $('chat-send').disabled = true;
  $('chat-stop').hidden = false;
  const t0 = performance.now();
  let tFirst = null;
  let text = '';
  let pieces = 0;
  let finish = null;
  let usage = null;
  let stopped = false;
  const onDelta = (piece) => {
    if (tFirst == null) tFirst = performance.now() - t0;
    pieces++;
    text += piece;
    answerText.textContent = text;
    latency.textContent = `first token ${fmtMs(tFirst)} · streaming…`;
    log.scrollTop = log.scrollHeight;
  };
  try {
    const res = await request('v1/chat/completions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({
        model: chat.model,
        messages: [...conversation, userMsg],
        stream: true,
        max_tokens: 512,
      }),
      signal: chat.abort.signal,
    });
    if ((res.headers.get('content-type') || '').includes('text/event-stream')) {
      ({ finishReason: finish, usage } = await readChatStream(res, onDelta));
    } else {
      const j = await res.json();
      const c = j.choices && j.choices[0];
      if (c && c.message && c.message.content) onDelta(String(c.message.content));
      finish = c && c.finish_reason;
      usage = j.usage || null;
    }
  } catch (e) {
    if (e && e.name === 'AbortError') {
      stopped = true;
    } else {
      answer.classList.add('error');
      answerText.textContent = text ? `${text}\n\n` : '';
      answerText.append(el('strong', { text: `Error: ${messageOf(e)}` }));
    }
  } finally {
    const total = performance.now() - t0;
    answer.classList.remove('streaming');
    const tokens = usage && usage.completion_tokens != null ? usage.completion_tokens : pieces;
    const failed = answer.classList.contains('error');
    const parts = failed && tFirst == null
      ? [`failed after ${fmtMs(total)}`]
      : [`first token ${fmtMs(tFirst)}`, `total ${fmtMs(total)}`, `${tokens} tokens`];
    if (finish === 'length') parts.push('cut at max_tokens');
    if (stopped) parts.push('stopped');
    latency.textContent = parts.join(' · ');
    latency.dataset.firstMs = tFirst == null ? '' : String(Math.round(tFirst));
    latency.dataset.totalMs = String(Math.round(total));
    if (!failed) {
      if (!text && !stopped) answerText.append(el('em', { class: 'dim', text: '(empty answer)' }));
      if (chat.messages === conversation) conversation.push(userMsg, { role: 'assistant', content: text });
    }
    chat.busy = false;
    chat.abort = null;
    $('chat-send').disabled = false;
    $('chat-stop').hidden = true;
    log.scrollTop = log.scrollHeight;
  }
}

// --- start ---------------------------------------------------------------------------------------------

checkHealth();
loadModel();
resumeFromHash();
window.addEventListener('hashchange', () => {
  const m = /(?:^#|&)task=([^&]+)/.exec(location.hash);
  if (m && decodeURIComponent(m[1]) !== state.taskId) resumeFromHash();
});
