#!/usr/bin/env python3
"""Writes a small GGUF language model (llama.cpp's qwen2vl layout, 2 layers, width 32, a 300-token
byte-level vocabulary) as a fuzz seed: tests/fuzz/corpus/gguf/lm_small.gguf. Standard library only."""
import struct, sys

def s(x): b = x.encode(); return struct.pack('<Q', len(b)) + b
def kv(key, t, payload): return s(key) + struct.pack('<I', t) + payload
U32, I32, F32, BOOL, STR, ARR = 4, 5, 6, 7, 8, 9
def arr(t, items, pack): return struct.pack('<IQ', t, len(items)) + b''.join(pack(i) for i in items)

tokens = [chr(0x21 + i) if i < 94 else 'tok%d' % i for i in range(287)] + ['!"', '#$', '%&'] + ['<|im_start|>', '<|im_end|>', '<|vision_start|>', '<|vision_end|>', '<|image_pad|>', '<|video_pad|>', '<|endoftext|>', '<tool_call>', '[PAD0]', '[PAD1]']
types = [1] * 290 + [3, 3, 3, 3, 3, 3, 3, 4, 5, 5]
merges = ['! "', '# $', '% &']
H, V, I, L = 32, len(tokens), 64, 2
meta = [kv('general.architecture', STR, s('qwen2vl')), kv('general.name', STR, s('seed')),
        kv('qwen2vl.block_count', U32, struct.pack('<I', L)), kv('qwen2vl.context_length', U32, struct.pack('<I', 4096)),
        kv('qwen2vl.embedding_length', U32, struct.pack('<I', H)), kv('qwen2vl.feed_forward_length', U32, struct.pack('<I', I)),
        kv('qwen2vl.attention.head_count', U32, struct.pack('<I', 2)), kv('qwen2vl.attention.head_count_kv', U32, struct.pack('<I', 1)),
        kv('qwen2vl.rope.dimension_sections', ARR, arr(I32, [2, 3, 3, 0], lambda v: struct.pack('<i', v))),
        kv('qwen2vl.rope.freq_base', F32, struct.pack('<f', 1e6)),
        kv('qwen2vl.attention.layer_norm_rms_epsilon', F32, struct.pack('<f', 1e-6)),
        kv('tokenizer.ggml.model', STR, s('gpt2')), kv('tokenizer.ggml.pre', STR, s('qwen2')),
        kv('tokenizer.ggml.tokens', ARR, arr(STR, tokens, s)),
        kv('tokenizer.ggml.token_type', ARR, arr(I32, types, lambda v: struct.pack('<i', v))),
        kv('tokenizer.ggml.merges', ARR, arr(STR, merges, s)),
        kv('tokenizer.ggml.eos_token_id', U32, struct.pack('<I', 291))]
tensors = [('token_embd.weight', [H, V])]
for l in range(L):
    p = 'blk.%d.' % l
    tensors += [(p + 'attn_norm.weight', [H]), (p + 'attn_q.weight', [H, H]), (p + 'attn_q.bias', [H]),
                (p + 'attn_k.weight', [H, 16]), (p + 'attn_k.bias', [16]), (p + 'attn_v.weight', [H, 16]),
                (p + 'attn_v.bias', [16]), (p + 'attn_output.weight', [H, H]), (p + 'ffn_norm.weight', [H]),
                (p + 'ffn_gate.weight', [H, I]), (p + 'ffn_up.weight', [H, I]), (p + 'ffn_down.weight', [I, H])]
tensors.append(('output_norm.weight', [H]))
infos, data, off = b'', b'', 0
for name, ne in tensors:
    n = 1
    for d in ne: n *= d
    infos += s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne) + struct.pack('<IQ', 0, off)
    blob = struct.pack('<%df' % n, *[((i * 7919) % 97 - 48) / 480.0 for i in range(n)])
    blob += b'\0' * ((32 - len(blob) % 32) % 32)
    data += blob; off += len(blob)
head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(meta)) + b''.join(meta) + infos
head += b'\0' * ((32 - len(head) % 32) % 32)
out = sys.argv[1] if len(sys.argv) > 1 else 'tests/fuzz/corpus/gguf/lm_small.gguf'
open(out, 'wb').write(head + data)
