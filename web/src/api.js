// HTTP helpers for the mineru-cpp server: auth header, JSON errors, the SSE reader.
// URLs are relative (no leading slash) so the page works when served under a path prefix.

let apiKey = '';

export function setApiKey(key) {
  apiKey = (key || '').trim();
}

export function hasApiKey() {
  return apiKey !== '';
}

export function authHeaders(extra = {}) {
  const h = { ...extra };
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

// An error with the HTTP status and the server's message ({"error": {"message": ...}} or text).
export class ApiError extends Error {
  constructor(message, status = 0) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

async function errorFrom(res) {
  let detail = '';
  try {
    const text = await res.text();
    try {
      const j = JSON.parse(text);
      if (j && typeof j === 'object') {
        if (j.error && typeof j.error === 'object' && j.error.message) detail = String(j.error.message);
        else if (typeof j.error === 'string') detail = j.error;
        else if (typeof j.detail === 'string') detail = j.detail;
        else if (typeof j.message === 'string') detail = j.message;
      }
    } catch {
      detail = text.trim().slice(0, 300);
    }
  } catch {
    // body unreadable: the status line says enough
  }
  const what = `${res.status} ${res.statusText || ''}`.trim();
  return new ApiError(detail ? `${what}: ${detail}` : what, res.status);
}

export async function request(path, options = {}) {
  let res;
  try {
    res = await fetch(path, { ...options, headers: authHeaders(options.headers || {}) });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(`cannot reach the server (${e && e.message ? e.message : e})`);
  }
  if (!res.ok) throw await errorFrom(res);
  return res;
}

export async function getJson(path, options = {}) {
  const res = await request(path, options);
  try {
    return await res.json();
  } catch {
    throw new ApiError(`${path}: the server's answer is not JSON`, res.status);
  }
}

export async function getBlob(path, options = {}) {
  const res = await request(path, options);
  return res.blob();
}

export function blobToDataUrl(blob) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result));
    r.onerror = () => reject(r.error || new Error('cannot read the file'));
    r.readAsDataURL(blob);
  });
}

// Reads an OpenAI-style SSE stream: calls onDelta(text) for every content delta, returns
// {finishReason, usage} at `data: [DONE]` or at the end of the stream.
export async function readChatStream(res, onDelta) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let finishReason = null;
  let usage = null;
  let done = false;

  const handleEvent = (data) => {
    if (data === '[DONE]') {
      done = true;
      return;
    }
    let j;
    try {
      j = JSON.parse(data);
    } catch {
      return; // not JSON: ignore (comments, keep-alives)
    }
    if (j.error) {
      const msg = typeof j.error === 'string' ? j.error : j.error.message || JSON.stringify(j.error);
      throw new ApiError(msg);
    }
    if (j.usage) usage = j.usage;
    const choice = j.choices && j.choices[0];
    if (!choice) return;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    const piece = (choice.delta && choice.delta.content) || (choice.message && choice.message.content) || '';
    if (piece) onDelta(piece);
  };

  // An event is a group of lines ended by a blank line; its data is the `data:` lines joined by \n.
  let dataLines = [];
  const handleLine = (line) => {
    if (line === '') {
      if (dataLines.length) {
        const data = dataLines.join('\n');
        dataLines = [];
        handleEvent(data);
      }
      return;
    }
    if (line.startsWith(':')) return;
    if (line.startsWith('data:')) {
      let v = line.slice(5);
      if (v.startsWith(' ')) v = v.slice(1);
      dataLines.push(v);
    }
  };

  while (!done) {
    const { value, done: end } = await reader.read();
    if (end) break;
    buffer += decoder.decode(value, { stream: true });
    let nl;
    while (!done && (nl = buffer.indexOf('\n')) >= 0) {
      let line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      handleLine(line);
    }
  }
  if (!done) {
    buffer += decoder.decode();
    if (buffer) handleLine(buffer.replace(/\r$/, ''));
    handleLine('');
  } else {
    reader.cancel().catch(() => {});
  }
  return { finishReason, usage };
}
