// Mermaid charts in the Markdown (MinerU 3.4 / vl-utils 1.2 write a chart's content as a ```mermaid
// fence inside a <details> block): each `pre > code.language-mermaid` becomes the rendered SVG.
//
// Contract: mermaid is imported only when a document has such a block (its own chunks, the page
// stays light); it runs with securityLevel 'strict' (labels are text, no click handlers, the SVG is
// passed through DOMPurify by mermaid); a diagram that does not parse, or a failed import, keeps its
// source text, marked `.mermaid-failed` with a short note, and never throws into the page.

let loading = null; // Promise<mermaid API>, shared by every render
let seq = 0;

function loadMermaid() {
  if (!loading) {
    loading = import('mermaid').then(({ default: mermaid }) => {
      mermaid.initialize({
        startOnLoad: false,
        securityLevel: 'strict',
        suppressErrorRendering: true, // no "syntax error" picture left in the page
        theme: 'default',
        fontFamily: 'inherit',
      });
      return mermaid;
    });
    loading.catch(() => {
      loading = null; // a later document may try again
    });
  }
  return loading;
}

function markFailed(pre, reason) {
  if (!pre.isConnected || pre.classList.contains('mermaid-failed')) return;
  pre.classList.add('mermaid-failed');
  const note = document.createElement('div');
  note.className = 'mermaid-note small';
  note.textContent = `Chart not drawn (${reason}); its Mermaid source:`;
  pre.before(note);
}

// mermaid.render works in a temporary element under <body>; take it away if an error left it.
function removeLeftovers(id) {
  for (const sel of [`#${id}`, `#d${id}`, `#i${id}`]) {
    const el = document.querySelector(sel);
    if (el && !el.closest('.markdown')) el.remove();
  }
}

async function renderOne(mermaid, pre) {
  const source = pre.textContent;
  const id = `mineru-mermaid-${++seq}`;
  let svg;
  try {
    // parse() first: it rejects bad input without touching the DOM
    await mermaid.parse(source);
    ({ svg } = await mermaid.render(id, source));
  } catch (e) {
    removeLeftovers(id);
    const msg = String((e && (e.message || e.str)) || e).split('\n')[0].slice(0, 160);
    markFailed(pre, msg || 'it does not parse');
    return;
  }
  removeLeftovers(id);
  if (!pre.isConnected) return; // the document was replaced meanwhile
  const fig = document.createElement('div');
  fig.className = 'mermaid-chart';
  fig.setAttribute('role', 'img');
  fig.setAttribute('aria-label', 'chart drawn from its Mermaid source');
  fig.innerHTML = svg;
  fig.dataset.source = source;
  pre.replaceWith(fig);
  const details = fig.closest('details');
  if (details) details.classList.add('has-chart');
}

// Renders the Mermaid blocks under `root`, one after the other (mermaid is not re-entrant).
// Resolves when every block is drawn or marked failed; never rejects.
export async function renderDiagrams(root) {
  const pres = Array.from(root.querySelectorAll('pre > code.language-mermaid')).map((c) => c.parentElement);
  if (!pres.length) return;
  for (const pre of pres) pre.classList.add('mermaid-pending');
  let mermaid;
  try {
    mermaid = await loadMermaid();
  } catch (e) {
    for (const pre of pres) {
      pre.classList.remove('mermaid-pending');
      markFailed(pre, 'the chart renderer did not load');
    }
    return;
  }
  for (const pre of pres) {
    pre.classList.remove('mermaid-pending');
    if (!pre.isConnected) continue;
    try {
      await renderOne(mermaid, pre);
    } catch (e) {
      markFailed(pre, 'unexpected error');
    }
  }
}
