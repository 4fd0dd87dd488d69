// Markdown from the parser -> safe HTML: math ($...$, $$...$$) through KaTeX, the rest through
// marked, then an allow-list sanitizer (the Markdown holds HTML tables and text from arbitrary
// documents), and `images/<file>` references replaced by the data URLs of the result.
// MinerU 3.4 content: `<details><summary>…</summary>…</details>` blocks (image analysis, chart
// content) stay collapsible sections beside their image, ```mermaid fences become charts
// (diagrams.js, loaded lazily), and tables with nothing in them (an emptied continuation of a
// table merged across pages) are dropped rather than shown as empty boxes.
import { Marked } from 'marked';
import katex from 'katex';
import { renderDiagrams } from './diagrams.js';

const marked = new Marked({ gfm: true, breaks: false });

const PH = 'MINERUMATH'; // placeholder: letters and digits only, so Markdown leaves it alone
const PH_RE = new RegExp(`${PH}(\\d+)X`, 'g');

// Splits math out of the Markdown. Skips code spans and fenced code; `\$` stays a literal dollar.
// Inline math follows pandoc's rule: `$` not followed by a space opens, `$` not preceded by a space
// and not followed by a digit closes, on the same paragraph ("$5 and $10" stays text).
export function extractMath(md) {
  const maths = [];
  let out = '';
  let i = 0;
  const n = md.length;
  const put = (tex, display) => {
    maths.push({ tex, display });
    return `${PH}${maths.length - 1}X`;
  };
  let atLineStart = true;
  while (i < n) {
    const c = md[i];
    // fenced code block: copy up to the closing fence
    if (atLineStart && (md.startsWith('```', i) || md.startsWith('~~~', i))) {
      const fence = md.slice(i, i + 3);
      const close = md.indexOf('\n' + fence, i + 3);
      const end = close < 0 ? n : md.indexOf('\n', close + 4) < 0 ? n : md.indexOf('\n', close + 4);
      out += md.slice(i, end);
      i = end;
      atLineStart = false;
      continue;
    }
    if (c === '\\' && i + 1 < n) {
      out += md.slice(i, i + 2);
      i += 2;
      atLineStart = false;
      continue;
    }
    if (c === '`') {
      let run = 1;
      while (md[i + run] === '`') run++;
      const ticks = '`'.repeat(run);
      const close = md.indexOf(ticks, i + run);
      if (close >= 0) {
        out += md.slice(i, close + run);
        i = close + run;
        atLineStart = false;
        continue;
      }
      out += ticks;
      i += run;
      atLineStart = false;
      continue;
    }
    if (c === '$') {
      if (md[i + 1] === '$') {
        const close = findClose(md, i + 2, '$$');
        if (close >= 0) {
          out += put(md.slice(i + 2, close).trim(), true);
          i = close + 2;
          atLineStart = false;
          continue;
        }
      } else if (i + 1 < n && !/\s/.test(md[i + 1])) {
        const close = findInlineClose(md, i + 1);
        if (close >= 0) {
          out += put(md.slice(i + 1, close), false);
          i = close + 1;
          atLineStart = false;
          continue;
        }
      }
    }
    out += c;
    atLineStart = c === '\n';
    i++;
  }
  return { text: out, maths };
}

function findClose(md, from, delim) {
  for (let j = from; j < md.length; j++) {
    if (md[j] === '\\') {
      j++;
      continue;
    }
    if (md.startsWith(delim, j)) return j;
  }
  return -1;
}

function findInlineClose(md, from) {
  for (let j = from; j < md.length; j++) {
    const ch = md[j];
    if (ch === '\\') {
      j++;
      continue;
    }
    if (ch === '\n' && md[j + 1] === '\n') return -1; // paragraphs end inline math
    if (ch === '$') {
      if (/\s/.test(md[j - 1])) continue;
      if (/\d/.test(md[j + 1] || '')) continue;
      if (md[j + 1] === '$') return -1;
      return j;
    }
  }
  return -1;
}

export function renderMath(tex, display) {
  try {
    return katex.renderToString(tex, {
      displayMode: display,
      throwOnError: false,
      output: 'htmlAndMathml',
      trust: false,
      strict: 'ignore',
      maxExpand: 1000,
    });
  } catch (e) {
    const span = document.createElement('span');
    span.className = 'math-error';
    span.title = String(e && e.message ? e.message : e);
    span.textContent = display ? `$$${tex}$$` : `$${tex}$`;
    return span.outerHTML;
  }
}

// --- sanitizer -------------------------------------------------------------------------------------

const ALLOWED = new Set(
  (
    'p br hr h1 h2 h3 h4 h5 h6 strong b em i u s del ins sub sup code pre kbd samp var blockquote ' +
    'ul ol li dl dt dd table thead tbody tfoot tr th td caption colgroup col img a span div ' +
    'details summary mark small abbr cite q figure figcaption center font'
  ).split(' '),
);
// removed together with their content
const DROPPED = new Set(
  (
    'script style iframe frame frameset object embed applet template noscript form input button ' +
    'textarea select option link meta base svg math audio video source track canvas dialog portal head title'
  ).split(' '),
);
const ATTRS = {
  '*': ['title', 'align', 'valign', 'dir', 'lang'],
  a: ['href'],
  img: ['src', 'alt', 'width', 'height'],
  td: ['colspan', 'rowspan', 'width'],
  th: ['colspan', 'rowspan', 'width', 'scope'],
  col: ['span', 'width'],
  colgroup: ['span', 'width'],
  ol: ['start', 'type'],
  li: ['value'],
  code: ['class'], // marked's language-xxx
};

function safeHref(v) {
  const s = v.trim();
  return /^(https?:|mailto:|#)/i.test(s) ? s : null;
}

function sanitize(root, images) {
  const walker = [];
  for (const child of Array.from(root.childNodes)) walker.push(child);
  while (walker.length) {
    const node = walker.pop();
    if (node.nodeType === Node.COMMENT_NODE || node.nodeType === Node.PROCESSING_INSTRUCTION_NODE) {
      node.remove();
      continue;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) continue;
    const tag = node.localName;
    if (DROPPED.has(tag) || node.namespaceURI !== 'http://www.w3.org/1999/xhtml') {
      node.remove();
      continue;
    }
    if (!ALLOWED.has(tag)) {
      // unknown element: keep its content, lose the element
      const kids = Array.from(node.childNodes);
      node.replaceWith(...kids);
      for (const k of kids) walker.push(k);
      continue;
    }
    const allowed = new Set([...(ATTRS['*'] || []), ...(ATTRS[tag] || [])]);
    for (const attr of Array.from(node.attributes)) {
      if (!allowed.has(attr.name)) node.removeAttribute(attr.name);
    }
    if (tag === 'a') {
      const href = node.getAttribute('href');
      const ok = href == null ? null : safeHref(href);
      if (ok == null) node.removeAttribute('href');
      else if (!ok.startsWith('#')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    }
    if (tag === 'img') {
      const src = (node.getAttribute('src') || '').trim();
      const resolved = resolveImage(src, images);
      if (resolved) node.setAttribute('src', resolved);
      else {
        node.removeAttribute('src');
        node.classList.add('missing-image');
        if (!node.getAttribute('alt')) node.setAttribute('alt', src ? `missing image ${src}` : 'missing image');
      }
      node.setAttribute('loading', 'lazy');
    }
    if (tag === 'code' && node.hasAttribute('class')) {
      const cls = node.getAttribute('class').split(/\s+/).filter((c) => /^language-[\w+#-]+$/.test(c));
      if (cls.length) node.setAttribute('class', cls.join(' '));
      else node.removeAttribute('class');
    }
    for (const child of Array.from(node.childNodes)) walker.push(child);
  }
}

// `images/abc.jpg` (or `./images/abc.jpg`, or a bare `abc.jpg`) -> the result's data URL.
function resolveImage(src, images) {
  if (!src) return null;
  if (/^data:image\/(png|jpe?g|gif|webp|bmp);base64,/i.test(src)) return src;
  if (!images) return null;
  let key = src.replace(/^\.\//, '');
  try {
    key = decodeURIComponent(key);
  } catch {
    // keep as is
  }
  const candidates = [key, key.replace(/^images\//, ''), key.split('/').pop()];
  for (const k of candidates) {
    const v = images[k] ?? images[`images/${k}`];
    if (typeof v === 'string' && /^data:image\//i.test(v)) return v;
    if (typeof v === 'string' && /^[A-Za-z0-9+/=\s]+$/.test(v) && v.length > 16) {
      const ext = k.split('.').pop().toLowerCase();
      const mime = ext === 'png' ? 'image/png' : ext === 'webp' ? 'image/webp' : 'image/jpeg';
      return `data:${mime};base64,${v.replace(/\s+/g, '')}`;
    }
  }
  return null;
}

// Replaces placeholders: in text nodes by the rendered math, in attributes by the TeX source.
function insertMath(root, maths) {
  const texts = [];
  const tw = document.createTreeWalker(root, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
  for (let node = tw.nextNode(); node; node = tw.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) {
      if (node.nodeValue.includes(PH)) texts.push(node);
    } else {
      for (const attr of Array.from(node.attributes)) {
        if (attr.value.includes(PH)) {
          attr.value = attr.value.replace(PH_RE, (m, k) => (maths[+k] ? maths[+k].tex : m));
        }
      }
    }
  }
  for (const node of texts) {
    const parts = node.nodeValue.split(PH_RE); // [text, index, text, index, ..., text]
    const frag = document.createDocumentFragment();
    for (let p = 0; p < parts.length; p++) {
      if (p % 2 === 0) {
        if (parts[p]) frag.appendChild(document.createTextNode(parts[p]));
        continue;
      }
      const m = maths[+parts[p]];
      if (!m) continue;
      const holder = document.createElement('template');
      holder.innerHTML = renderMath(m.tex, m.display);
      const el = holder.content.firstElementChild;
      if (el) {
        el.setAttribute('data-tex', m.tex);
        frag.appendChild(holder.content);
      }
    }
    node.replaceWith(frag);
  }
}

// Renders `md` into `container`.
export function renderMarkdown(container, md, images) {
  const { text, maths } = extractMath(md || '');
  let html;
  try {
    html = marked.parse(text, { async: false });
  } catch (e) {
    html = `<pre>${escapeHtml(text)}</pre>`;
  }
  const tpl = document.createElement('template');
  tpl.innerHTML = html;
  sanitize(tpl.content, images);
  insertMath(tpl.content, maths);
  // Math rendered alone in a paragraph is display math: drop the <p> around it.
  for (const p of Array.from(tpl.content.querySelectorAll('p'))) {
    if (p.childNodes.length === 1 && p.firstElementChild && p.firstElementChild.classList.contains('katex-display')) {
      p.replaceWith(p.firstElementChild);
    }
  }
  dropEmptyTables(tpl.content);
  groupVisuals(tpl.content);
  // Wide tables scroll on their own.
  for (const t of Array.from(tpl.content.querySelectorAll('table'))) {
    if (t.parentElement && t.parentElement.classList.contains('table-wrap')) continue;
    const wrap = document.createElement('div');
    wrap.className = 'table-wrap';
    t.replaceWith(wrap);
    wrap.appendChild(t);
  }
  container.replaceChildren(tpl.content);
  // Charts are drawn after the text is shown; `data-diagrams` says when they are done.
  if (container.querySelector('pre > code.language-mermaid')) {
    container.dataset.diagrams = 'pending';
    renderDiagrams(container).then(() => {
      container.dataset.diagrams = 'done';
    });
  } else {
    container.dataset.diagrams = 'none';
  }
}

// A table with no text and no image in it is an emptied table: MinerU 3.4 merges a table continued
// on the next page into the first one and empties the second ("lines_deleted"). Show nothing for
// it, never an empty box.
function dropEmptyTables(root) {
  for (const t of Array.from(root.querySelectorAll('table'))) {
    if (t.textContent.trim() || t.querySelector('img, .katex, [data-tex]')) continue;
    const parent = t.parentElement;
    t.remove();
    // a wrapper left with nothing in it goes too (e.g. <div><table></table></div>)
    if (parent && parent !== root && !parent.textContent.trim() && !parent.querySelector('img, table')) parent.remove();
  }
}

// `<details>` from MinerU 3.4's Markdown: the analysis of the image (or the content of the chart)
// just above it. The image and its details go into one <figure class="visual">, so the analysis is
// shown with its image. Image analyses start closed; chart content (a Mermaid chart or a table)
// starts open, since the chart is the content.
function groupVisuals(root) {
  for (const d of Array.from(root.querySelectorAll('details'))) {
    d.classList.add('analysis');
    const summary = d.querySelector(':scope > summary');
    if (summary) summary.classList.add('analysis-summary');
    const chart = d.querySelector('code.language-mermaid, table') || /chart/i.test(summary ? summary.textContent : '');
    if (chart) {
      d.classList.add('chart-content');
      d.setAttribute('open', '');
    }
    const prev = d.previousElementSibling;
    if (!prev || prev.localName !== 'p' || !endsWithImage(prev)) continue;
    const fig = document.createElement('figure');
    fig.className = 'visual';
    prev.replaceWith(fig);
    fig.append(prev, d);
  }
}

function endsWithImage(p) {
  for (let n = p.lastChild; n; n = n.previousSibling) {
    if (n.nodeType === Node.TEXT_NODE && !n.nodeValue.trim()) continue;
    return n.nodeType === Node.ELEMENT_NODE && n.localName === 'img';
  }
  return false;
}

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}
