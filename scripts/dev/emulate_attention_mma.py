# Lane-level emulation of src/kernels/cuda/attention_mma.cu (MmaFlashKernel<D, M, kVec>, M = 1 or 2),
# following the kernel's index expressions line by line, with mma.m16n8k16 and ldmatrix.x4.trans
# modelled from the PTX ISA fragment definitions (not from the kernel's comments), against a float64
# reference attention. A development check for machines without a GPU (not run by CI): it mirrors
# the kernel by hand, so rerun it, updated, after changing the kernel's indexing; the GPU tests
# (tests/kernels/cuda_attention_test.cc) are the authority where a GPU exists.
#
# Besides values it checks:
#   * every block of the launch grid (x = q tiles of kTileQ<M> rows, y = heads, z = sequences),
#     varlen packing (cu_q / cu_k), GQA (kvh = h / group), padded row strides;
#   * shared memory: layout offsets (kQ, kK, kV), every read hits data that has landed (cp.async group
#     waited on, or a synchronous store) AND been published by a __syncthreads; no copy is issued over
#     an address read since the last barrier or still pending (WAR); Pair 4-byte / ldmatrix 16-byte
#     alignment; no access outside the dynamic smem size;
#   * global memory: every load in bounds (cp.async of 0 bytes still needs a valid address), every
#     output element written exactly once, nothing outside the block's rows/head columns touched
#     (out is prefilled with NaN sentinels; with out == q the untouched entries must stay q).
# Values are float64; with --bf16 the kernel's roundings (P to bf16 before P V, output to bf16) are
# applied and the tolerance loosened.
#
# Usage: python3 scripts/dev/emulate_attention_mma.py [--quick] [--bf16] [--m 1|2] [--mutate NAME]
#        ... --mutants        (each deliberate bug in MUTATIONS must be caught)
#        ... --list-mutations
import math, random, struct, sys, operator, itertools, time

W = 32; kWarps = 4; kThreads = kWarps * W; kTileK = 64; kMaxWideHeadDim = 96
NEG = -math.inf
MUT = None        # a deliberate bug to show the checks catch it (see MUTATIONS)
BF16 = False

MUTATIONS = {
  'qload_m0':  "Q fragment load uses m-tile 0's rows for every m-tile",
  'store_m0':  "StoreRows row0 uses m-tile 0's rows for every m-tile",
  'limit_m0':  "causal row limits use m-tile 0's rows for every m-tile",
  'tileq_64':  "q0 = blockIdx.x * 64 (M=1 tile) whatever M",
  'kend_m1':   "causal k_end one short (offset + q0 + rows - 1)",
  'pv_b12':    "AccumulatePV feeds b[2] as the second B register of o[j]",
  'state_m0':  "Softmax always updates st[0] (RowState not per m-tile)",
  'kq_stride': "Q tile load with the k stride",
  'no_wait1':  "CpAsyncWait<2> instead of <1> (next tile may be read before it lands)",
  'kvh':       "kvh = h % num_kv_heads instead of h / group",
}

def bf16(x):
  if not BF16 or x != x or x in (math.inf, -math.inf): return x
  b = struct.unpack('<I', struct.pack('<f', x))[0]
  b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
  return struct.unpack('<f', struct.pack('<I', b))[0]

class Err(Exception): pass
def check(cond, msg):
  if not cond: raise Err(msg)

# ---------------------------------------------------------------- PTX fragment layouts (.bf16 m16n8k16)
# A: a_i, i = 0..7 (two per 32-bit register, i even in the low half)
def a_rc(lane, i):
  g, t = lane >> 2, lane % 4
  row = g if (i < 2 or 4 <= i < 6) else g + 8
  col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
  return row, col
def b_rc(lane, i):  # b_i, i = 0..3: (k, n)
  g, t = lane >> 2, lane % 4
  return t * 2 + (i & 1) + (8 if i >= 2 else 0), g
def c_rc(lane, i):  # c_i, i = 0..3
  g, t = lane >> 2, lane % 4
  return (g if i < 2 else g + 8), t * 2 + (i & 1)
A_MAP = [[a_rc(l, i) for i in range(8)] for l in range(W)]
B_MAP = [[b_rc(l, i) for i in range(4)] for l in range(W)]
C_MAP = [[c_rc(l, i) for i in range(4)] for l in range(W)]
assert sorted(rc for l in A_MAP for rc in l) == [(r, c) for r in range(16) for c in range(16)]
assert sorted(rc for l in B_MAP for rc in l) == [(r, c) for r in range(16) for c in range(8)]
assert sorted(rc for l in C_MAP for rc in l) == [(r, c) for r in range(16) for c in range(8)]

MMA_COUNT = 0
def mma(c, a, b0, b1):
  """c[lane] = [4 floats]; a[lane] = 4 registers (lo, hi); b0, b1[lane] = (lo, hi). Returns new c."""
  global MMA_COUNT; MMA_COUNT += 1
  A = [[None] * 16 for _ in range(16)]; Bt = [[None] * 16 for _ in range(8)]
  for l in range(W):
    al, am = a[l], A_MAP[l]
    for i in range(8):
      r, cc = am[i]; A[r][cc] = al[i >> 1][i & 1]
    bm = B_MAP[l]
    for i in range(4):
      k, n = bm[i]; Bt[n][k] = (b0 if i < 2 else b1)[l][i & 1]
  mul = operator.mul
  out = []
  for l in range(W):
    cl, cm = c[l], C_MAP[l]
    out.append([cl[i] + sum(map(mul, A[cm[i][0]], Bt[cm[i][1]])) for i in range(4)])
  return out

def shfl_xor(vals, mask):
  return [vals[l ^ mask] for l in range(W)]

# ---------------------------------------------------------------- shared memory with visibility tracking
SYNCED, LANDED, UNINIT = 'S', 'L', 'U'
class Smem:
  def __init__(self, n):
    self.val = [math.nan] * n; self.st = [UNINIT] * n; self.n = n
    self.groups = []; self.open = []; self.landed = []; self.read_phase = set()
  def read(self, a):
    check(0 <= a < self.n, 'smem read out of range %d' % a)
    check(self.st[a] == SYNCED, 'smem read of element %d in state %r (not landed+published)' % (a, self.st[a]))
    self.read_phase.add(a)
    return self.val[a]
  def write(self, a, v, asynchronous):
    check(0 <= a < self.n, 'smem write out of range %d' % a)
    check(a not in self.read_phase, 'smem write to %d read since the last barrier (WAR race)' % a)
    check(not isinstance(self.st[a], tuple), 'smem write to %d while a copy to it is pending' % a)
    self.val[a] = v
    if asynchronous: self.st[a] = ('pending',); self.open.append(a)
    else: self.st[a] = LANDED; self.landed.append(a)
  def commit(self):
    self.groups.append(self.open); self.open = []
  def wait(self, n):  # cp.async.wait_group n
    keep = self.groups[len(self.groups) - n:] if n else []
    for grp in self.groups[:len(self.groups) - n]:
      for a in grp: self.st[a] = LANDED; self.landed.append(a)
    self.groups = keep
  def barrier(self):
    for a in self.landed: self.st[a] = SYNCED
    self.landed = []; self.read_phase = set()

class Gmem:
  block = None   # the block now running (set by Launch)
  def __init__(self, vals, name): self.val = vals; self.name = name; self.writes = {}; self.readers = {}
  def read(self, a):
    check(0 <= a < len(self.val), '%s read out of range %d' % (self.name, a))
    self.readers.setdefault(a, set()).add(Gmem.block)
    return self.val[a]
  def write(self, a, v):
    check(0 <= a < len(self.val), '%s write out of range %d' % (self.name, a))
    check(a not in self.writes, '%s element %d written twice' % (self.name, a))
    # out == q: blocks run in any order, so no other block may read what this one writes
    check(not (self.readers.get(a, set()) - {Gmem.block}), '%s element %d written by block %s but read by %s'
          % (self.name, a, Gmem.block, self.readers.get(a)))
    self.writes[a] = (v, Gmem.block); self.val[a] = v

# ---------------------------------------------------------------- attention_tile.cuh
def LoadTileBf16Async(D, kVec, g, src, stride, rows, tile_rows, sm, dst, ld):
  if kVec:
    kChunks = D // 8
    for idx in range(tile_rows * kChunks):          # all threads' iterations together
      r, c = idx // kChunks, (idx % kChunks) * 8
      to = dst + r * ld + c
      frm = src + r * stride + c if r < rows else src
      nbytes = 16 if r < rows else 0
      check(to % 8 == 0 and frm % 8 == 0, 'cp.async 16 bytes unaligned')
      check(0 <= frm < len(g.val), '%s cp.async source address invalid' % g.name)
      for e in range(8):
        sm.write(to + e, bf16(g.read(frm + e)) if nbytes else 0.0, True)
  else:
    for idx in range(tile_rows * D):
      r, c = idx // D, idx % D
      sm.write(dst + r * ld + c, bf16(g.read(src + r * stride + c)) if r < rows else 0.0, False)

# ---------------------------------------------------------------- the kernel
def Pair(sm, p):
  check(p % 2 == 0, 'Pair address not 4-byte aligned')
  return (sm.read(p), sm.read(p + 1))

def LdMatrixX4Trans(sm, addr):  # addr[lane]: the row address lane gives
  for a in addr: check(a % 8 == 0, 'ldmatrix row not 16-byte aligned')
  regs = [[None] * 4 for _ in range(W)]
  for mi in range(4):
    Mx = [[sm.read(addr[8 * mi + r] + cc) for cc in range(8)] for r in range(8)]
    for T in range(W):   # .trans: thread T gets elements (2(T%4), T/4), (2(T%4)+1, T/4) of matrix mi
      regs[T][mi] = (Mx[2 * (T % 4)][T // 4], Mx[2 * (T % 4) + 1][T // 4])
  return regs

def PackRounded(lo, hi, acc, idx):
  lo, hi = bf16(lo), bf16(hi)
  acc[idx] += lo + hi
  return (lo, hi)

class RowState:
  def __init__(self):
    self.m = [[NEG, NEG] for _ in range(W)]; self.l = [[0.0, 0.0] for _ in range(W)]
    self.limit = [[None, None] for _ in range(W)]

def Scores(D, M, qa, sm, ks):
  kLd = D + 8
  s = [[None] * (kTileK // 8) for _ in range(M)]
  for j in range(kTileK // 8):
    for m in range(M): s[m][j] = [[0.0] * 4 for _ in range(W)]
    krow = [ks + (j * 8 + (l // 4)) * kLd + 2 * (l % 4) for l in range(W)]
    for kk in range(D // 16):
      b0 = [Pair(sm, krow[l] + kk * 16) for l in range(W)]
      b1 = [Pair(sm, krow[l] + kk * 16 + 8) for l in range(W)]
      for m in range(M): s[m][j] = mma(s[m][j], qa[m][kk], b0, b1)
  return s

def Softmax(D, s, k0, kn, scale, st, o):
  alpha = [[0.0, 0.0] for _ in range(W)]
  for h in range(2):
    tmax = [NEG] * W
    for l in range(W):
      t = l % 4
      for j in range(kTileK // 8):
        for e in range(2):
          col = j * 8 + 2 * t + e
          on = col < kn and k0 + col < st.limit[l][h]
          s[j][l][2 * h + e] = s[j][l][2 * h + e] * scale if on else NEG
          tmax[l] = max(tmax[l], s[j][l][2 * h + e])
    x1 = shfl_xor(tmax, 1); tmax = [max(tmax[l], x1[l]) for l in range(W)]
    x2 = shfl_xor(tmax, 2); tmax = [max(tmax[l], x2[l]) for l in range(W)]
    for l in range(W):
      m_new = max(st.m[l][h], tmax[l])
      alpha[l][h] = 0.0 if st.m[l][h] == NEG else math.exp(st.m[l][h] - m_new)
      st.m[l][h] = m_new
      for j in range(kTileK // 8):
        for e in range(2):
          x = s[j][l][2 * h + e]
          s[j][l][2 * h + e] = 0.0 if x == NEG else math.exp(x - m_new)
  psum = [[0.0, 0.0] for _ in range(W)]
  pa = [[None] * W for _ in range(kTileK // 16)]
  for l in range(W):
    for i in range(kTileK // 16):
      pa[i][l] = [PackRounded(s[2 * i][l][0], s[2 * i][l][1], psum[l], 0),
                  PackRounded(s[2 * i][l][2], s[2 * i][l][3], psum[l], 1),
                  PackRounded(s[2 * i + 1][l][0], s[2 * i + 1][l][1], psum[l], 0),
                  PackRounded(s[2 * i + 1][l][2], s[2 * i + 1][l][3], psum[l], 1)]
  for h in range(2):
    v = [psum[l][h] for l in range(W)]
    x1 = shfl_xor(v, 1); v = [v[l] + x1[l] for l in range(W)]
    x2 = shfl_xor(v, 2); v = [v[l] + x2[l] for l in range(W)]
    for l in range(W): st.l[l][h] = st.l[l][h] * alpha[l][h] + v[l]
  for j in range(D // 8):
    for l in range(W):
      o[j][l][0] *= alpha[l][0]; o[j][l][1] *= alpha[l][0]
      o[j][l][2] *= alpha[l][1]; o[j][l][3] *= alpha[l][1]
  return pa

def AccumulatePV(D, M, pa, sm, vs, o):
  kLd = D + 8
  key = [l & 15 for l in range(W)]; col = [(l >> 4) * 8 for l in range(W)]
  for i in range(kTileK // 16):
    for j in range(0, D // 8, 2):
      b = LdMatrixX4Trans(sm, [vs + (i * 16 + key[l]) * kLd + j * 8 + col[l] for l in range(W)])
      b0 = [b[l][0] for l in range(W)]; b1 = [b[l][1] for l in range(W)]
      b2 = [b[l][2] for l in range(W)]; b3 = [b[l][3] for l in range(W)]
      for m in range(M):
        o[m][j] = mma(o[m][j], pa[m][i], b0, b2 if MUT == 'pv_b12' else b1)
        o[m][j + 1] = mma(o[m][j + 1], pa[m][i], b2, b3)

def StoreRows(D, o, st, row0, rows, out, out_tile, stride):
  for l in range(W):
    t = l % 4
    for h in range(2):
      row = row0[l] + 8 * h
      if row >= rows: continue
      inv = 1.0 / st.l[l][h] if st.l[l][h] > 0.0 else 0.0
      dst = out_tile + row * stride + 2 * t
      for j in range(D // 8):
        out.write(dst + j * 8, bf16(o[j][l][2 * h] * inv))
        out.write(dst + j * 8 + 1, bf16(o[j][l][2 * h + 1] * inv))

def kTileQ(M): return kWarps * 16 * M

def MmaLayout(D, M):
  kLd = D + 8
  kTileBytes = 2 * kTileK * kLd
  kQ = 0
  kK = kQ + 2 * kTileQ(M) * kLd
  kV = kK + 2 * kTileBytes
  kBytes = kV + 2 * kTileBytes
  assert kLd % 8 == 0 and kK % 16 == 0 and kV % 16 == 0
  return kLd, kQ, kK, kV, kBytes

def MmaFlashKernel(D, M, kVec, blockIdx, q, k, v, out, p):
  kLd, kQ, kK, kV, kBytes = MmaLayout(D, M)
  kRows = kTileQ(M)
  sm = Smem(kBytes // 2)
  qs, kbuf, vbuf = kQ // 2, kK // 2, kV // 2          # element offsets of the bf16 pointers
  bx, by, bz = blockIdx
  seq, h, q0 = bz, by, bx * (64 if MUT == 'tileq_64' else kRows)
  q_begin = p['cu_q'][seq]; n_q = p['cu_q'][seq + 1] - q_begin
  k_begin = p['cu_k'][seq]; n_kv = p['cu_k'][seq + 1] - k_begin
  if q0 >= n_q: return
  kvh = h % p['num_kv_heads'] if MUT == 'kvh' else h // p['group']
  rows = min(kRows, n_q - q0)
  offset = n_kv - n_q
  k_end = max(0, min(n_kv, offset + q0 + rows - (1 if MUT == 'kend_m1' else 0))) if p['causal'] else n_kv
  tiles = (k_end + kTileK - 1) // kTileK
  kseq = k_begin * p['k_stride'] + kvh * D
  vseq = k_begin * p['v_stride'] + kvh * D
  def load_kv(tile):
    k0 = tile * kTileK; kn = min(kTileK, k_end - k0)
    at = (tile % 2) * kTileK * kLd
    LoadTileBf16Async(D, kVec, k, kseq + k0 * p['k_stride'], p['k_stride'], kn, kTileK, sm, kbuf + at, kLd)
    LoadTileBf16Async(D, kVec, v, vseq + k0 * p['v_stride'], p['v_stride'], kn, kTileK, sm, vbuf + at, kLd)
  if tiles > 0:
    qstride = p['k_stride'] if MUT == 'kq_stride' else p['q_stride']
    LoadTileBf16Async(D, kVec, q, (q_begin + q0) * p['q_stride'] + h * D, qstride, rows, kRows, sm, qs, kLd)
    load_kv(0)
  sm.commit()

  # per warp registers
  st = [[RowState() for m in range(M)] for warp in range(kWarps)]
  o = [[[[[0.0] * 4 for _ in range(W)] for j in range(D // 8)] for m in range(M)] for warp in range(kWarps)]
  qa = [[[None] * (D // 16) for m in range(M)] for warp in range(kWarps)]
  for warp in range(kWarps):
    for m in range(M):
      mm = 0 if MUT == 'limit_m0' else m
      for l in range(W):
        g = l // 4
        for hh in range(2):
          row = q0 + (warp * M + mm) * 16 + g + 8 * hh
          st[warp][m].limit[l][hh] = min(n_kv, offset + row + 1) if p['causal'] else n_kv

  for tile in range(tiles):
    if tile + 1 < tiles:
      load_kv(tile + 1); sm.commit(); sm.wait(2 if MUT == 'no_wait1' else 1)
    else:
      sm.wait(0)
    sm.barrier()
    for warp in range(kWarps):
      if tile == 0:
        for m in range(M):
          mm = 0 if MUT == 'qload_m0' else m
          qrow = [qs + ((warp * M + mm) * 16 + l // 4) * kLd + 2 * (l % 4) for l in range(W)]
          for kk in range(D // 16):
            qa[warp][m][kk] = [[Pair(sm, qrow[l] + kk * 16), Pair(sm, qrow[l] + 8 * kLd + kk * 16),
                                Pair(sm, qrow[l] + kk * 16 + 8), Pair(sm, qrow[l] + 8 * kLd + kk * 16 + 8)]
                               for l in range(W)]
      at = (tile % 2) * kTileK * kLd
      s = Scores(D, M, qa[warp], sm, kbuf + at)
      pa = [None] * M
      for m in range(M):
        pa[m] = Softmax(D, s[m], tile * kTileK, min(kTileK, k_end - tile * kTileK), p['scale'],
                        st[warp][0 if MUT == 'state_m0' else m], o[warp][m])
      AccumulatePV(D, M, pa, sm, vbuf + at, o[warp])
    sm.barrier()
  sm.wait(0)
  out_tile = (q_begin + q0) * p['out_stride'] + h * D
  for warp in range(kWarps):
    for m in range(M):
      mm = 0 if MUT == 'store_m0' else m
      StoreRows(D, o[warp][m], st[warp][m], [(warp * M + mm) * 16 + l // 4 for l in range(W)], rows, out,
                out_tile, p['out_stride'])

# ---------------------------------------------------------------- launch + reference
def Launch(D, M, q, k, v, out, shape):
  assert M == 1 or (M == 2 and D <= kMaxWideHeadDim), 'M=2 is built for D <= 96 only'
  p = dict(cu_q=shape['cu_q'], cu_k=shape['cu_k'], group=shape['H'] // shape['Hkv'], num_kv_heads=shape['Hkv'],
           q_stride=shape['q_stride'], k_stride=shape['k_stride'], v_stride=shape['v_stride'],
           out_stride=shape['out_stride'], causal=shape['causal'], scale=shape['scale'])
  kRows = kTileQ(M)
  grid = ((shape['max_seqlen_q'] + kRows - 1) // kRows, shape['H'], len(shape['cu_q']) - 1)
  kVec = shape['q_stride'] % 8 == 0 and shape['k_stride'] % 8 == 0 and shape['v_stride'] % 8 == 0
  if shape.get('kVec') is not None: kVec = kVec and shape['kVec']
  for bz in range(grid[2]):
    for by in range(grid[1]):
      for bx in range(grid[0]):
        Gmem.block = (bx, by, bz)
        MmaFlashKernel(D, M, kVec, (bx, by, bz), q, k, v, out, p)
  # a block's reads of out == q precede its own writes in program order; other blocks' reads were checked
  for a, (val, blk) in out.writes.items():
    check(not (out.readers.get(a, set()) - {blk}), '%s element %d read by another block than its writer' % (out.name, a))
  return kVec

def rnd_vals(rng, n):
  return [bf16(rng.uniform(-1, 1)) for _ in range(n)]

def run_case(D, M, seqs, H, Hkv, causal, pad=0, kVec=None, alias=False, seed=0):
  """seqs: list of (n_q, n_kv). Returns (max error, number of checked outputs, kVec)."""
  rng = random.Random(hash((D, M, tuple(seqs), H, Hkv, causal, pad, seed)) & 0xffffffff)
  cu_q = [0]; cu_k = [0]
  for nq, nk in seqs: cu_q.append(cu_q[-1] + nq); cu_k.append(cu_k[-1] + nk)
  TQ, TK = cu_q[-1], cu_k[-1]
  q_stride = H * D + pad; k_stride = Hkv * D + pad; v_stride = Hkv * D + 2 * pad
  out_stride = q_stride if alias else H * D + 3 * pad
  qv = rnd_vals(rng, TQ * q_stride); kv_ = rnd_vals(rng, TK * k_stride); vv = rnd_vals(rng, TK * v_stride)
  q = Gmem(list(qv), 'q'); k = Gmem(kv_, 'k'); v = Gmem(vv, 'v')
  out = q if alias else Gmem([math.nan] * (TQ * out_stride), 'out')
  if alias: q.name = 'q/out'
  scale = 1.0 / math.sqrt(D)
  shape = dict(cu_q=cu_q, cu_k=cu_k, max_seqlen_q=max([nq for nq, _ in seqs] + [0]), H=H, Hkv=Hkv,
               q_stride=q_stride, k_stride=k_stride, v_stride=v_stride, out_stride=out_stride, causal=causal,
               scale=scale, kVec=kVec)
  used_vec = Launch(D, M, q, k, v, out, shape)
  err = 0.0; cnt = 0; group = H // Hkv
  expect = set()
  for si, (nq, nk) in enumerate(seqs):
    qb, kb = cu_q[si], cu_k[si]; offset = nk - nq
    for hh in range(H):
      kvh = hh // group
      for i in range(nq):
        lim = min(nk, offset + i + 1) if causal else nk
        qi = [qv[(qb + i) * q_stride + hh * D + d] for d in range(D)]
        sc = [sum(qi[d] * kv_[(kb + j) * k_stride + kvh * D + d] for d in range(D)) * scale for j in range(max(0, lim))]
        if sc:
          mx = max(sc); pr = [math.exp(x - mx) for x in sc]; L = sum(pr)
          ref = [sum(pr[j] * vv[(kb + j) * v_stride + kvh * D + d] for j in range(len(pr))) / L for d in range(D)]
        else:
          ref = [0.0] * D
        for d in range(D):
          a = (qb + i) * out_stride + hh * D + d
          expect.add(a)
          check(a in out.writes, 'output seq %d head %d row %d col %d never written' % (si, hh, i, d))
          got = out.writes[a][0]
          check(got == got, 'output seq %d head %d row %d col %d is NaN' % (si, hh, i, d))
          err = max(err, abs(got - ref[d])); cnt += 1
  stray = set(out.writes) - expect
  check(not stray, '%d stray output writes, e.g. element %d' % (len(stray), min(stray) if stray else -1))
  if not alias:
    check(all(x != x for a, x in enumerate(out.val) if a not in expect), 'untouched out entries changed')
  else:
    check(all(out.val[a] == qv[a] for a in range(len(qv)) if a not in expect), 'untouched q entries changed')
  return err, cnt, used_vec

NQ_EQ = [1, 5, 64, 100, 130, 200]
def cases(quick):
  out = []
  Ds = [(16, (1, 2)), (64, (1, 2)), (80, (1, 2)), (96, (1, 2)), (128, (1,))]
  for D, Ms in Ds:
    for M in Ms:
      for causal in (False, True):
        if quick:
          seqs = [(5, 5), (130, 130), (31, 100)]
        else:
          # n_q = n_kv, causal with n_kv > n_q (31 over 100) and n_kv < n_q, a sequence with no keys
          seqs = [(n, n) for n in NQ_EQ] + [(31, 100), (70, 40), (4, 0)]
        out.append(dict(D=D, M=M, seqs=seqs, H=2, Hkv=1, causal=causal, pad=8))
  for M in (1, 2):   # GQA 14 over 2 at D=64, several q tiles; unaligned strides (element copies); out == q
    for causal in (False, True):
      out.append(dict(D=64, M=M, seqs=[(200, 200), (31, 100)] if not quick else [(70, 70)], H=14, Hkv=2, causal=causal, pad=8))
      out.append(dict(D=80, M=M, seqs=[(100, 100), (31, 100)], H=2, Hkv=2, causal=causal, pad=3))
      out.append(dict(D=64, M=M, seqs=[(130, 130), (9, 70)], H=3, Hkv=1, causal=causal, pad=0, alias=True))
  return out

def main():
  global MUT, BF16
  args = sys.argv[1:]
  if '--list-mutations' in args:
    for k_, v_ in MUTATIONS.items(): print('%-10s %s' % (k_, v_))
    return 0
  if '--mutants' in args:   # every mutation must be caught (this run is expected to print FAILs)
    missed = []
    for mu in MUTATIONS:
      MUT = mu; caught = []
      for pad in (8, 3):
        try:
          err, cnt, vec = run_case(16, 2, [(5, 5), (130, 130), (31, 100), (70, 40)], 4, 2, True, pad)
          if err > 1e-9: caught.append('pad=%d vec=%d max_err=%.2e' % (pad, vec, err))
        except Err as e:
          caught.append('pad=%d: %s' % (pad, e))
      print('%-10s %s -> %s' % (mu, 'CAUGHT' if caught else 'MISSED', '; '.join(caught) or '-'), flush=True)
      if not caught: missed.append(mu)
    MUT = None
    print('mutants: %d caught, %d missed %s' % (len(MUTATIONS) - len(missed), len(missed), missed))
    return 1 if missed else 0
  quick = '--quick' in args
  BF16 = '--bf16' in args
  if '--mutate' in args:
    MUT = args[args.index('--mutate') + 1]; assert MUT in MUTATIONS, MUT
  only_m = None
  if '--m' in args: only_m = int(args[args.index('--m') + 1])
  tol = 2e-2 if BF16 else 1e-9
  fails = 0; total = 0
  for c in cases(quick):
    if only_m and c['M'] != only_m: continue
    total += 1
    t0 = time.time()
    tag = 'D=%-3d M=%d %-6s H=%d/%d pad=%d%s seqs=%s' % (c['D'], c['M'], 'causal' if c['causal'] else 'full', c['H'],
          c['Hkv'], c['pad'], ' out==q' if c.get('alias') else '', c['seqs'])
    try:
      err, cnt, vec = run_case(c['D'], c['M'], c['seqs'], c['H'], c['Hkv'], c['causal'], c['pad'],
                               alias=c.get('alias', False))
      ok = err <= tol
      print('%s %s vec=%d outputs=%d max_err=%.2e (%.1fs)' % ('ok  ' if ok else 'FAIL', tag, vec, cnt, err,
            time.time() - t0), flush=True)
    except Err as e:
      ok = False
      print('FAIL %s: %s' % (tag, e), flush=True)
    fails += not ok
  print('mutation=%s bf16=%s: %d passed, %d failed (%d mma emulated)' % (MUT, BF16, total - fails, fails, MMA_COUNT))
  return 1 if fails else 0

if __name__ == '__main__':
  sys.exit(main())
