// Regenerates hf_cases.json: random strings and id sequences run through Hugging Face `tokenizers`
// (the npm binding of the Rust library) on tests/fixtures/tinyvocab/tokenizer.json and on variants of it
// that exercise the rarer tokenizer.json options (added-token lstrip/rstrip/single_word/normalized,
// GPT-2 style ByteLevel with prefix space, NFKC/NFD, every Split behaviour, [a, b] merges).
//
//   cd /tmp && npm install tokenizers@0.23.2 && \
//   NODE_PATH=/tmp/node_modules node tests/tokenizer/make_hf_cases.js \
//       tests/fixtures/tinyvocab/tokenizer.json tests/tokenizer/hf_cases.json
//
// Each variant stores the tokenizer.json sections it replaces, so the C++ test rebuilds it from the
// fixture. Added-token ids are read back from the library (it assigns them itself on load).
const { Tokenizer } = require('tokenizers');
const fs = require('fs');
const os = require('os');
const path = require('path');

const [fixturePath, outPath] = process.argv.slice(2);
const base = JSON.parse(fs.readFileSync(fixturePath, 'utf8'));

let seed = 20250926;
const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x80000000; };
const ri = (n) => Math.floor(rnd() * n);

const pools = [
  'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ', '0123456789', '     ', '\n\n\r\t',
  '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', "'s'S't're'VE'm'll'd'LL",
  '中文文档解析表格公式和版面分析。、，：；！？（）【】', '日本語のテキストとカタカナ、ひらがな', '한국어텍스트',
  'Ελληνικάирусскийтекст', 'العربيةहिन्दीไทย', 'éèêëüöäßçñÅØÆ', '\u0301\u0308\u0327\u200d\u200b\u200c\ufe0f',
  '👍🏽🇨🇳👨👩👧👦✅😀🦩𠀀𪚥', '\u00a0\u3000\u2028\u2029\u0085\u2009\u202f\u1680\u000b\u000c',
  'ﬁ①２ｆｕｌｌ㎡ⅷ', '\u0000\u0001\u007f\ufeff\uffff',
];
const specials = ['<|im_start|>', '<|im_end|>', '<|image_pad|>', '<|vision_start|>', '<|endoftext|>', '<think>',
                  '</tool_call>', '<|im_start', '|>', '<|'];
const randomText = () => {
  let s = '';
  const n = 1 + ri(12);
  for (let i = 0; i < n; i++) {
    if (rnd() < 0.08) { s += specials[ri(specials.length)]; continue; }
    const p = Array.from(pools[ri(pools.length)]);
    const k = 1 + ri(8);
    for (let j = 0; j < k; j++) s += p[ri(p.length)];
  }
  return s;
};
const words = ['a', 'bad', 'bad ', ' bad', '[L]', '[R]', '[LR]', 'é', 'e\u0301', '<s>', '<ss>', '<|im_end|>', '  ', ' ',
               '\n', '\t ', 'x_', '_', '1', '中', 'word', 'abc', 'c', 'cd', 'Hello', 'ﬁ', 'Ｘ'];
const wordText = () => {
  let s = '';
  const n = 1 + ri(8);
  for (let i = 0; i < n; i++) s += words[ri(words.length)];
  return s;
};

const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
const qwenSplit = base.pre_tokenizer.pretokenizers[0];
const variants = {
  base: { edit: {}, texts: randomText, nEnc: 800, nDec: 400 },
  added: {
    edit: {
      added_tokens: base.added_tokens.concat([
        { content: '[L]', lstrip: true, rstrip: false, special: false },
        { content: '[R]', lstrip: false, rstrip: true, special: true },
        { content: '[LR]', lstrip: true, rstrip: true, special: false },
        { content: 'bad', single_word: true, special: false },
        { content: 'é', normalized: true, special: false },
        { content: '<s>', special: true },
        { content: '<ss>', special: true },
        { content: 'ﬁ', normalized: true, special: false },
      ].map((t) => Object.assign({ id: 0, single_word: false, lstrip: false, rstrip: false, normalized: false }, t))),
    },
    texts: wordText, nEnc: 300, nDec: 100,
  },
  gpt2_nfkc: {
    edit: { normalizer: { type: 'NFKC' },
            pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true } },
    texts: randomText, nEnc: 200, nDec: 0,
  },
  prefix_nfd: {
    edit: { normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }] },
            pre_tokenizer: { type: 'Sequence', pretokenizers: [qwenSplit, Object.assign({}, byteLevel, { add_prefix_space: true })] } },
    texts: randomText, nEnc: 200, nDec: 0,
  },
  split_prev: {
    edit: { pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { String: 'c' }, behavior: 'MergedWithPrevious', invert: false }, qwenSplit, byteLevel] } },
    texts: wordText, nEnc: 150, nDec: 0,
  },
  split_next: {
    edit: { pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'MergedWithNext', invert: false }, qwenSplit, byteLevel] } },
    texts: wordText, nEnc: 150, nDec: 0,
  },
  split_contiguous: {
    edit: { pre_tokenizer: { type: 'Sequence', pretokenizers: [Object.assign({}, qwenSplit, { behavior: 'Contiguous' }), byteLevel] } },
    texts: randomText, nEnc: 150, nDec: 0,
  },
  split_removed_inverted: {
    edit: { pre_tokenizer: { type: 'Sequence', pretokenizers: [
      Object.assign({}, qwenSplit, { behavior: 'Removed', invert: true }), byteLevel] } },
    texts: randomText, nEnc: 150, nDec: 0,
  },
};

(async () => {
  const out = {};
  const tmp = path.join(os.tmpdir(), 'make_hf_cases_tokenizer.json');
  for (const [name, v] of Object.entries(variants)) {
    const j = Object.assign(JSON.parse(JSON.stringify(base)), JSON.parse(JSON.stringify(v.edit)));
    fs.writeFileSync(tmp, JSON.stringify(j));
    let tok = Tokenizer.fromFile(tmp);
    if (v.edit.added_tokens) {
      for (const a of j.added_tokens) a.id = tok.tokenToId(a.content);
      v.edit.added_tokens = j.added_tokens;
      fs.writeFileSync(tmp, JSON.stringify(j));
      tok = Tokenizer.fromFile(tmp);
    }
    const V = tok.getVocabSize(true);
    const enc = [];
    for (let t = 0; t < v.nEnc; t++) {
      const text = v.texts();
      enc.push({ text, ids: (await tok.encode(text, null, { addSpecialTokens: false })).getIds() });
    }
    const dec = [];
    for (let t = 0; t < v.nDec; t++) {
      const ids = [];
      const n = 1 + ri(10);
      for (let i = 0; i < n; i++) {
        const r = rnd();
        ids.push(r < 0.5 ? ri(256) : r < 0.85 ? ri(151643) : 151643 + ri(V - 151643));
      }
      dec.push({ ids, decoded: await tok.decode(ids, false), decoded_skip: await tok.decode(ids, true) });
    }
    out[name] = { edit: v.edit, vocab_size: V, enc, dec };
  }
  fs.unlinkSync(tmp);
  fs.writeFileSync(outPath, JSON.stringify(out));
})();
