#include "model/cuda/decoder_cuda.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/graph.h"

namespace mineru {

namespace cu = kernels::cuda;

// ---- CudaKvCache ----

size_t CudaKvCache::BlockBytes(int block_size, int num_layers, int64_t kv_dim, CudaPrecision p) {
  return static_cast<size_t>(num_layers) * 2 * static_cast<size_t>(block_size) * static_cast<size_t>(kv_dim) *
         CudaElementBytes(p);
}

StatusOr<CudaKvCache> CudaKvCache::Allocate(int num_blocks, int block_size, int num_layers, int64_t kv_dim,
                                            CudaPrecision p) {
  if (num_blocks <= 0 || block_size <= 0 || num_layers <= 0 || kv_dim <= 0) {
    return InvalidArgumentError("CudaKvCache: blocks, block size, layers and kv_dim must be positive");
  }
  CudaKvCache c;
  c.num_blocks_ = num_blocks;
  c.block_size_ = block_size;
  c.num_layers_ = num_layers;
  c.kv_dim_ = kv_dim;
  c.precision_ = p;
  // One block more than asked for: the sink (sink_block()) that a graph's padding rows write.
  MINERU_ASSIGN_OR_RETURN(c.buf_, cu::DeviceBuffer::Allocate(static_cast<size_t>(num_blocks + 1) *
                                                             BlockBytes(block_size, num_layers, kv_dim, p)));
  return c;
}

cu::PagedKvLayout CudaKvCache::layout() const {
  cu::PagedKvLayout L;
  L.block_size = block_size_;
  L.block_stride = int64_t{num_layers_} * 2 * block_size_ * kv_dim_;
  L.row_stride = kv_dim_;
  L.kv_dim = kv_dim_;
  return L;
}

// ---- CudaDecoder ----

namespace {

Status UploadLayer(const DecoderLayerWeights& L, CudaPrecision p, const kernels::KernelConfig& k,
                   CudaDecoderLayer* out) {
  MINERU_ASSIGN_OR_RETURN(out->input_norm, UploadFloats(L.input_norm));
  MINERU_ASSIGN_OR_RETURN(out->post_attn_norm, UploadFloats(L.post_attn_norm));
  std::vector<float> bias = L.q_b;
  bias.insert(bias.end(), L.k_b.begin(), L.k_b.end());
  bias.insert(bias.end(), L.v_b.begin(), L.v_b.end());
  MINERU_ASSIGN_OR_RETURN(out->qkv_b, UploadFloats(bias));
  MINERU_ASSIGN_OR_RETURN(out->qkv, UploadStacked({&L.q, &L.k, &L.v}, p, k));
  MINERU_ASSIGN_OR_RETURN(out->o, UploadMatrix(L.o, p, k));
  MINERU_ASSIGN_OR_RETURN(out->gate, UploadMatrix(L.gate, p, k));
  MINERU_ASSIGN_OR_RETURN(out->up, UploadMatrix(L.up, p, k));
  MINERU_ASSIGN_OR_RETURN(out->down, UploadMatrix(L.down, p, k));
  return Status::Ok();
}

size_t LayerBytes(const CudaDecoderLayer& L) {
  return L.input_norm.size() + L.post_attn_norm.size() + L.qkv_b.size() + L.qkv.buf.size() + L.o.buf.size() +
         L.gate.buf.size() + L.up.buf.size() + L.down.buf.size();
}

Status CheckShapes(const TextConfig& c, const TextWeights& w) {
  const int64_t Hd = c.hidden_size, QD = int64_t{c.num_heads} * c.head_dim,
                KD = int64_t{c.num_kv_heads} * c.head_dim;
  const int64_t I = c.intermediate_size;
  auto is = [](const WeightView& v, int64_t rows, int64_t cols) { return v.rows == rows && v.cols == cols; };
  bool ok = static_cast<int>(w.layers.size()) == c.num_layers && is(w.lm_head, c.vocab_size, Hd) &&
            static_cast<int64_t>(w.final_norm.size()) == Hd && c.vocab_size > 0;
  for (const DecoderLayerWeights& L : w.layers) {
    ok = ok && is(L.q, QD, Hd) && is(L.k, KD, Hd) && is(L.v, KD, Hd) && is(L.o, Hd, QD) &&
         is(L.gate, I, Hd) && is(L.up, I, Hd) && is(L.down, Hd, I) &&
         static_cast<int64_t>(L.q_b.size()) == QD && static_cast<int64_t>(L.k_b.size()) == KD &&
         static_cast<int64_t>(L.v_b.size()) == KD && static_cast<int64_t>(L.input_norm.size()) == Hd &&
         static_cast<int64_t>(L.post_attn_norm.size()) == Hd;
  }
  if (!ok) return InvalidArgumentError("CudaDecoder: the decoder weights do not have the config's shapes");
  if (c.head_dim <= 0 || c.head_dim % 2 != 0 || c.head_dim > cu::kMaxAttentionHeadDim ||
      c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0) {
    return InvalidArgumentError("CudaDecoder: unsupported head layout");
  }
  return Status::Ok();
}

}  // namespace

// The host's plan of one batch. Its rows run in the decoder's own order: the segments decoding
// one token first (the paged decode attention reads them in place, one row per sequence), then the
// others (gathered contexts and varlen attention), each group in the caller's order; row_of maps a
// caller's row to the decoder's. The int32 metadata goes up in one copy (offsets into it, in
// elements).
struct CudaDecoder::Batch {
  int64_t T = 0;                    // the caller's rows
  int64_t run_rows = 0;             // rows computed: T, or a graph's count with padding rows after T
  bool graph = false;               // runs as a recorded graph (every segment decodes one token)
  int64_t decode_seqs = 0;          // segments with n == 1: rows [0, decode_seqs)
  int64_t prefill_seqs = 0;         // segments with n > 1: the rows after them
  int64_t max_q = 0, ctx_rows = 0;  // longest prefill n; context rows gathered for the prefills
  int64_t table_stride = 0;         // entries per block-table row of the decode segments
  int64_t split_keys = 0;           // the decode attention's chunk (DecodeSplitKeys); 0: unsplit
  int64_t block_size = 0;           // the KV cache's tokens per block
  std::vector<int32_t> meta;
  int64_t slots = 0, cu_q = 0, cu_k = 0, ctx_lens = 0, tables = 0, gather = 0;
  std::vector<float> cos, sin;
  std::vector<int32_t> row_of;  // [T]: caller's row -> decoder's row
  bool identity = true;         // row_of is the identity (no reordering needed)
};

StatusOr<std::unique_ptr<CudaDecoder>> CudaDecoder::Create(const TextConfig& config,
                                                           const TextWeights& weights,
                                                           const kernels::KernelConfig& kernels,
                                                           CudaPrecision precision) {
  MINERU_RETURN_IF_ERROR(CheckShapes(config, weights));
  std::unique_ptr<CudaDecoder> d(new CudaDecoder(config, weights, precision));
  MINERU_ASSIGN_OR_RETURN(d->stream_, cu::CudaStream::Create());
  MINERU_ASSIGN_OR_RETURN(d->gemm_, cu::GemmHandle::Create());
  d->w_.layers.resize(weights.layers.size());
  for (size_t l = 0; l < weights.layers.size(); ++l) {
    MINERU_RETURN_IF_ERROR(UploadLayer(weights.layers[l], precision, kernels, &d->w_.layers[l]));
    d->w_.bytes += LayerBytes(d->w_.layers[l]);
  }
  MINERU_ASSIGN_OR_RETURN(d->w_.final_norm, UploadFloats(weights.final_norm));
  MINERU_ASSIGN_OR_RETURN(d->w_.lm_head, UploadMatrix(weights.lm_head, precision, kernels));
  d->w_.bytes += d->w_.final_norm.size() + d->w_.lm_head.buf.size();
  return d;
}

size_t CudaDecoder::activation_bytes() const {
  size_t n = 0;
  for (const GrowingBuffer* b : {&embeds_, &x_, &normed_, &qkv_, &attn_, &gate_, &up_, &kctx_, &vctx_, &cos_,
                                 &sin_, &meta_, &hidden_, &rows_, &picked_, &logits_, &split_}) {
    n += b->size();
  }
  return n;
}

// InvalidArgument unless the cache is the decoder's and every segment is well formed, with a block
// table whose blocks are in the cache.
Status CudaDecoder::CheckSegments(const std::vector<BatchSegment>& segs, const CudaKvCache* kv) const {
  if (kv == nullptr || kv->precision() != precision_ || kv->num_layers() != c_.num_layers ||
      kv->kv_dim() != int64_t{c_.num_kv_heads} * c_.head_dim) {
    return InvalidArgumentError("CudaDecoder: the KV cache is missing or of another precision or shape");
  }
  const int64_t bs = kv->block_size();
  int64_t rows = 0;
  for (const BatchSegment& s : segs) {
    if (s.n < 0 || s.past < 0 || s.past + s.n > INT32_MAX)
      return InvalidArgumentError("CudaDecoder: bad segment");
    rows += s.n;
    if (s.n == 0) continue;
    if (s.block_table == nullptr || s.pos_t == nullptr || s.pos_h == nullptr || s.pos_w == nullptr) {
      return InvalidArgumentError("CudaDecoder: a segment without positions or block table");
    }
    for (int64_t i = 0; i < (s.past + s.n + bs - 1) / bs; ++i) {
      if (s.block_table[i] < 0 || s.block_table[i] >= kv->num_blocks()) {
        return InvalidArgumentError("CudaDecoder: block " + std::to_string(s.block_table[i]) +
                                    " is not in the cache");
      }
    }
  }
  if (rows > INT32_MAX / 2) return InvalidArgumentError("CudaDecoder: too many rows in one batch");
  return Status::Ok();
}

// The block tables of the decode rows (the first `real` of `order`, then padding rows over the
// sink block), each padded with zeros to `stride` entries.
void CudaDecoder::DecodeTables(const std::vector<const BatchSegment*>& order, int64_t real,
                               const CudaKvCache& kv, int64_t rows, int64_t stride,
                               std::vector<int32_t>* tables) {
  const int64_t bs = kv.block_size();
  for (int64_t k = 0; k < rows; ++k) {
    const BatchSegment* s = k < real ? order[static_cast<size_t>(k)] : nullptr;
    const int64_t used = s ? (s->past + s->n + bs - 1) / bs : 1;
    if (s) tables->insert(tables->end(), s->block_table, s->block_table + used);
    if (!s) tables->push_back(kv.sink_block());
    tables->insert(tables->end(), static_cast<size_t>(stride - used), 0);
  }
}

// Builds the batch's metadata in the decoder's row order (Batch): slots of the new rows, their
// positions; for the decode segments their context lengths and block tables, for the others their
// query and context offsets and the slots to gather. pad_rows > T (a graph's step, every segment
// decoding): rows T..pad_rows-1 are padding, one token each at position 0 over the cache's sink
// block, and the block tables' stride is rounded up to a power of two (a graph's shape).
Status CudaDecoder::Prepare(const std::vector<BatchSegment>& segs, CudaKvCache* kv, int64_t pad_rows,
                            Batch* b) {
  MINERU_RETURN_IF_ERROR(CheckSegments(segs, kv));
  const int64_t bs = kv->block_size();
  std::vector<const BatchSegment*> order;  // decode segments, then the others
  std::vector<int64_t> first_row;          // each segment's first row in the caller's order
  for (int pass = 0; pass < 2; ++pass) {
    int64_t rows = 0;
    for (const BatchSegment& s : segs) {
      if (s.n > 0 && (s.n == 1) == (pass == 0)) {
        order.push_back(&s);
        first_row.push_back(rows);
      }
      rows += s.n;
    }
    b->T = rows;
  }
  b->graph = pad_rows > 0;
  b->run_rows = std::max(b->T, pad_rows);
  b->row_of.resize(static_cast<size_t>(b->T));
  std::vector<int32_t> slots, cu_q{0}, cu_k{0}, ctx_lens, gather, tables;
  std::vector<int64_t> pt, ph, pw;
  int64_t at = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const BatchSegment& s = *order[k];
    const int64_t ctx = s.past + s.n, blocks = (ctx + bs - 1) / bs;
    for (int64_t i = 0; i < s.n; ++i, ++at) {
      b->row_of[first_row[k] + i] = static_cast<int32_t>(at);
      b->identity = b->identity && first_row[k] + i == at;
      const int64_t p = s.past + i;
      slots.push_back(static_cast<int32_t>(s.block_table[p / bs] * bs + p % bs));
    }
    pt.insert(pt.end(), s.pos_t, s.pos_t + s.n);
    ph.insert(ph.end(), s.pos_h, s.pos_h + s.n);
    pw.insert(pw.end(), s.pos_w, s.pos_w + s.n);
    if (s.n == 1) {
      ++b->decode_seqs;
      ctx_lens.push_back(static_cast<int32_t>(ctx));
      b->table_stride = std::max(b->table_stride, blocks);
    } else {
      ++b->prefill_seqs;
      b->max_q = std::max(b->max_q, s.n);
      cu_q.push_back(cu_q.back() + static_cast<int32_t>(s.n));
      for (int64_t p = 0; p < ctx; ++p)
        gather.push_back(static_cast<int32_t>(s.block_table[p / bs] * bs + p % bs));
      cu_k.push_back(static_cast<int32_t>(gather.size()));
    }
  }
  const int64_t real_decode = b->decode_seqs;
  if (b->graph) {  // a graph's shape; padding rows decode over the sink block (all write its slot 0)
    int64_t stride = 1;
    while (stride < b->table_stride) stride *= 2;
    b->table_stride = stride;
    for (int64_t r = b->T; r < b->run_rows; ++r, ++b->decode_seqs) {
      slots.push_back(static_cast<int32_t>(int64_t{kv->sink_block()} * bs));
      ctx_lens.push_back(1);
      pt.push_back(0);
      ph.push_back(0);
      pw.push_back(0);
    }
  }
  DecodeTables(order, real_decode, *kv, b->decode_seqs, b->table_stride, &tables);
  b->ctx_rows = static_cast<int64_t>(gather.size());
  auto append = [&](const std::vector<int32_t>& v, int64_t* where) {
    *where = static_cast<int64_t>(b->meta.size());
    b->meta.insert(b->meta.end(), v.begin(), v.end());
  };
  append(slots, &b->slots);
  append(cu_q, &b->cu_q);
  append(cu_k, &b->cu_k);
  append(ctx_lens, &b->ctx_lens);
  append(gather, &b->gather);
  append(tables, &b->tables);
  if (b->run_rows > 0) host_.RopeTables(b->run_rows, pt.data(), ph.data(), pw.data(), &b->cos, &b->sin);
  b->block_size = bs;
  b->split_keys = DecodeSplitKeys(b->decode_seqs, c_.num_kv_heads, b->table_stride, bs, split_sms_);
  return Status::Ok();
}

int64_t CudaDecoder::DecodeSplitKeys(int64_t seqs, int64_t kv_heads, int64_t table_stride, int64_t block_size,
                                     int sms) {
  const int64_t blocks = seqs * kv_heads, keys = table_stride * block_size;
  if (sms <= 0 || blocks <= 0 || blocks >= sms) return 0;
  const int64_t splits = (2 * int64_t{sms} + blocks - 1) / blocks, unit = cu::kPagedDecodeSplitUnit;
  const int64_t chunk = std::max(unit, ((keys + splits - 1) / splits + unit - 1) / unit * unit);
  return chunk >= keys ? 0 : chunk;
}

// Rows [0, decode_seqs): one query per sequence through the block tables (PagedDecodeAttention);
// the rows after them: their contexts gathered contiguous, then causal VarlenAttention.
template <typename T>
Status CudaDecoder::Attend(int layer, const Batch& b, CudaKvCache* kv) {
  const int64_t D = c_.head_dim, NH = c_.num_heads, KV = c_.num_kv_heads;
  const int64_t QD = NH * D, KD = KV * D, QKV = QD + 2 * KD;
  const cu::StreamHandle s = stream_.handle();
  const cu::PagedKvLayout L = kv->layout();
  T* cache = static_cast<T*>(kv->data());
  const T* kc = cache + kv->key_offset(layer);
  const T* vc = cache + kv->value_offset(layer);
  const int32_t* meta = meta_.as<int32_t>();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  if (b.decode_seqs > 0) {
    cu::PagedDecodeShape p;
    p.num_seqs = b.decode_seqs;
    p.num_heads = NH;
    p.num_kv_heads = KV;
    p.head_dim = D;
    p.q_stride = QKV;
    p.out_stride = QD;
    p.context_lens = meta + b.ctx_lens;
    p.block_tables = meta + b.tables;
    p.block_table_stride = b.table_stride;
    p.block_size = L.block_size;
    p.block_stride = L.block_stride;
    p.row_stride = L.row_stride;
    p.scale = scale;
    p.split_keys = b.split_keys;
    p.workspace = b.split_keys > 0 ? split_.as<float>() : nullptr;
    MINERU_RETURN_IF_ERROR(cu::PagedDecodeAttention(qkv_.as<T>(), kc, vc, p, attn_.as<T>(), s));
  }
  if (b.prefill_seqs == 0) return Status::Ok();
  MINERU_RETURN_IF_ERROR(
      cu::GatherKvRows(kc, vc, L, meta + b.gather, b.ctx_rows, kctx_.as<T>(), vctx_.as<T>(), s));
  cu::VarlenAttentionShape a;
  a.num_seqs = b.prefill_seqs;
  a.cu_seqlens_q = meta + b.cu_q;
  a.cu_seqlens_k = meta + b.cu_k;
  a.max_seqlen_q = b.max_q;
  a.num_heads = NH;
  a.num_kv_heads = KV;
  a.head_dim = D;
  a.q_stride = QKV;
  a.k_stride = a.v_stride = KD;
  a.out_stride = QD;
  a.causal = true;
  a.scale = scale;
  a.kernel = attention_;
  const int64_t first = b.decode_seqs;  // the prefill rows start after the decode rows
  return cu::VarlenAttention(qkv_.as<T>() + first * QKV, kctx_.as<T>(), vctx_.as<T>(), a,
                             attn_.as<T>() + first * QD, s);
}

// The caller's embeddings [T, hidden] fp32 (host) into x_ in T's element type (rows past T, a
// graph's padding, keep whatever they held: every op is row-wise, and their attention reads only
// the sink block).
template <typename T>
Status CudaDecoder::Upload(const float* embeds, int64_t rows) {
  const int64_t n = rows * c_.hidden_size;
  const cu::StreamHandle s = stream_.handle();
  if constexpr (std::is_same_v<T, float>) {
    return x_.buffer().CopyFromHostAsync(embeds, static_cast<size_t>(n) * sizeof(float), 0, s);
  } else {
    MINERU_RETURN_IF_ERROR(
        embeds_.buffer().CopyFromHostAsync(embeds, static_cast<size_t>(n) * sizeof(float), 0, s));
    return cu::CastF32ToBf16(embeds_.as<float>(), n, x_.as<T>(), s);
  }
}

// Every layer and the final norm over the batch's run_rows rows of x_, queued on the stream: only
// kernel launches and library products (what a graph can record).
template <typename T>
Status CudaDecoder::Layers(const Batch& b, CudaKvCache* kv) {
  const int64_t T_ = b.run_rows, Hd = c_.hidden_size, D = c_.head_dim, NH = c_.num_heads,
                KV = c_.num_kv_heads;
  const int64_t QD = NH * D, KD = KV * D, QKV = QD + 2 * KD, I = c_.intermediate_size;
  const float eps = c_.rms_norm_eps;
  const cu::StreamHandle s = stream_.handle();
  T* x = x_.as<T>();
  T* normed = normed_.as<T>();
  T* qkv = qkv_.as<T>();
  T* gate = gate_.as<T>();
  T* up = up_.as<T>();
  T* cache = static_cast<T*>(kv->data());
  const cu::PagedKvLayout L = kv->layout();
  const int32_t* slots = meta_.as<int32_t>() + b.slots;
  const float* cos = cos_.as<float>();
  const float* sin = sin_.as<float>();
  for (int l = 0; l < c_.num_layers; ++l) {
    const CudaDecoderLayer& W = w_.layers[l];
    MINERU_RETURN_IF_ERROR(cu::RmsNorm(x, T_, Hd, W.input_norm.as<float>(), eps, normed, s));
    MINERU_RETURN_IF_ERROR(
        cu::MatMul(gemm_, normed, T_, Hd, W.qkv.as<T>(), QKV, W.qkv_b.as<float>(), qkv, s));
    MINERU_RETURN_IF_ERROR(cu::RopeRotateHalfRows(qkv, T_, QKV, NH, D, cos, sin, s));
    MINERU_RETURN_IF_ERROR(cu::RopeRotateHalfRows(qkv + QD, T_, QKV, KV, D, cos, sin, s));
    MINERU_RETURN_IF_ERROR(cu::StoreKvRows(qkv + QD, QKV, qkv + QD + KD, QKV, T_, slots, L,
                                           cache + kv->key_offset(l), cache + kv->value_offset(l), s));
    MINERU_RETURN_IF_ERROR(Attend<T>(l, b, kv));
    MINERU_RETURN_IF_ERROR(cu::MatMul(gemm_, attn_.as<T>(), T_, QD, W.o.as<T>(), Hd, nullptr, normed, s));
    MINERU_RETURN_IF_ERROR(cu::AddInPlace(x, normed, T_ * Hd, s));
    MINERU_RETURN_IF_ERROR(cu::RmsNorm(x, T_, Hd, W.post_attn_norm.as<float>(), eps, normed, s));
    MINERU_RETURN_IF_ERROR(cu::MatMul(gemm_, normed, T_, Hd, W.gate.as<T>(), I, nullptr, gate, s));
    MINERU_RETURN_IF_ERROR(cu::MatMul(gemm_, normed, T_, Hd, W.up.as<T>(), I, nullptr, up, s));
    MINERU_RETURN_IF_ERROR(cu::SiluMul(gate, up, T_ * I, gate, s));
    MINERU_RETURN_IF_ERROR(cu::MatMul(gemm_, gate, T_, I, W.down.as<T>(), Hd, nullptr, normed, s));
    MINERU_RETURN_IF_ERROR(cu::AddInPlace(x, normed, T_ * Hd, s));
  }
  return cu::RmsNorm(x, T_, Hd, w_.final_norm.as<float>(), eps, hidden_.as<T>(), s);
}

int64_t CudaDecoder::GraphRows(int64_t rows) {
  if (rows <= 8) {
    int64_t r = 1;
    while (r < rows) r *= 2;
    return r;
  }
  return (rows + 15) / 16 * 16;
}

// What a recorded step's kernels point at: a replay is valid while all of it is unchanged.
std::vector<const void*> CudaDecoder::GraphBindings(const CudaKvCache& kv) const {
  return {kv.data(),  x_.data(),   embeds_.data(), normed_.data(), qkv_.data(),    attn_.data(), gate_.data(),
          up_.data(), cos_.data(), sin_.data(),    meta_.data(),   hidden_.data(), split_.data()};
}

// Layers() through the graph recorded for the batch's shape (rows, table stride). A shape without
// a valid recording (none yet, or the buffers it names have moved since) runs eagerly, which also
// loads every kernel the recording will name, and is then recorded for the next step of its
// shape. A recording that fails turns graphs off for this decoder (graph_error() says why); the
// step's own result stands.
template <typename T>
Status CudaDecoder::LayersByGraph(const Batch& b, CudaKvCache* kv) {
  const cu::StreamHandle s = stream_.handle();
  const std::pair<int64_t, int64_t> key(b.run_rows, b.table_stride);
  std::vector<const void*> bound = GraphBindings(*kv);
  auto it = graphs_.find(key);
  if (it != graphs_.end() && it->second.bound == bound) return it->second.graph.Launch(s);
  if (it != graphs_.end() || graphs_.size() >= kMaxGraphs) {  // stale, or too many shapes
    MINERU_RETURN_IF_ERROR(stream_.Synchronize());            // no replay still running is freed
    graphs_.clear();
  }
  MINERU_RETURN_IF_ERROR(Layers<T>(b, kv));
  Status st = cu::CudaGraph::BeginCapture(s);
  if (st.ok()) {
    // The recording ends whatever happens in between (an exception included).
    struct EndOnUnwind {
      cu::StreamHandle s;
      bool armed = true;
      ~EndOnUnwind() {
        if (armed) (void)cu::CudaGraph::EndCapture(s, InternalError("unwound"));
      }
    } guard{s};
    const Status queued = Layers<T>(b, kv);  // recorded, not run
    guard.armed = false;
    StatusOr<cu::CudaGraph> g = cu::CudaGraph::EndCapture(s, queued);
    st = g.status();
    if (st.ok()) graphs_.emplace(key, Recorded{std::move(g).value(), std::move(bound)});
  }
  if (!st.ok()) {
    graph_error_ = st.ToString();
    graph_rows_ = 0;
    graphs_.clear();
  }
  return Status::Ok();
}

template <typename T>
Status CudaDecoder::Run(const float* embeds, const Batch& b, CudaKvCache* kv) {
  MINERU_RETURN_IF_ERROR(Upload<T>(embeds, b.T));
  return b.graph ? LayersByGraph<T>(b, kv) : Layers<T>(b, kv);
}

void CudaDecoder::EnableDecodeSplit(int sms) {
  split_sms_ = std::max(0, sms);
  graphs_.clear();  // recordings made under the old setting would keep it
}

void CudaDecoder::EnableGraphs(int64_t max_rows) {
  graph_rows_ = std::max<int64_t>(0, max_rows);
  graphs_.clear();
}

// The rows a step runs: a step where every segment decodes one token runs as a graph, padded to
// GraphRows rows, when graphs are on and that is within their limit; 0 otherwise (as it is).
int64_t CudaDecoder::GraphPadding(const std::vector<BatchSegment>& segments) const {
  if (graph_rows_ <= 0) return 0;
  int64_t rows = 0;
  for (const BatchSegment& s : segments) {
    if (s.n > 1) return 0;
    rows += std::max<int64_t>(s.n, 0);
  }
  return rows > 0 && rows <= graph_rows_ ? GraphRows(rows) : 0;
}

Status CudaDecoder::ForwardBatch(const float* embeds, const std::vector<BatchSegment>& segments,
                                 CudaKvCache* kv) {
  Batch b;
  MINERU_RETURN_IF_ERROR(Prepare(segments, kv, GraphPadding(segments), &b));
  last_rows_ = 0;
  logits_rows_ = 0;
  if (b.T == 0) return Status::Ok();
  if (embeds == nullptr) return InvalidArgumentError("CudaDecoder: embeds is null");
  MINERU_RETURN_IF_ERROR(ReserveFor(b));
  const cu::StreamHandle s = stream_.handle();
  const int64_t T = b.T, Hd = c_.hidden_size, RD = b.run_rows * c_.head_dim;
  // Pageable host memory: cudaMemcpyAsync returns once the source is staged (the runtime API's
  // "API synchronization behavior"), so b (and the caller's embeds) may go when this returns.
  Status st = cos_.buffer().CopyFromHostAsync(b.cos.data(), static_cast<size_t>(RD) * 4, 0, s);
  if (st.ok()) st = sin_.buffer().CopyFromHostAsync(b.sin.data(), static_cast<size_t>(RD) * 4, 0, s);
  if (st.ok()) st = meta_.buffer().CopyFromHostAsync(b.meta.data(), b.meta.size() * 4, 0, s);
  // The caller's rows in the decoder's order (decode rows first), when that differs.
  std::vector<float> ordered;
  if (!b.identity) {
    ordered.resize(static_cast<size_t>(T * Hd));
    for (int64_t r = 0; r < T; ++r) {
      std::copy(embeds + r * Hd, embeds + (r + 1) * Hd, ordered.begin() + b.row_of[r] * Hd);
    }
    embeds = ordered.data();
  }
  if (st.ok())
    st = precision_ == CudaPrecision::kF32 ? Run<float>(embeds, b, kv) : Run<cu::Bf16>(embeds, b, kv);
  if (!st.ok()) {
    (void)stream_.Synchronize();  // nothing queued outlives the failed call
    return st;
  }
  last_rows_ = T;
  row_of_ = std::move(b.row_of);
  return Status::Ok();
}

// Everything the batch needs, reserved before anything is queued: a failure leaves nothing queued.
Status CudaDecoder::ReserveFor(const Batch& b) {
  const int64_t R = b.run_rows, Hd = c_.hidden_size, D = c_.head_dim;
  const int64_t QD = int64_t{c_.num_heads} * D, KD = int64_t{c_.num_kv_heads} * D, I = c_.intermediate_size;
  const size_t e = CudaElementBytes(precision_);
  const auto bytes = [](int64_t n, size_t each) { return static_cast<size_t>(n) * each; };
  MINERU_RETURN_IF_ERROR(embeds_.Reserve(bytes(R * Hd, 4)));
  MINERU_RETURN_IF_ERROR(x_.Reserve(bytes(R * Hd, e)));
  MINERU_RETURN_IF_ERROR(normed_.Reserve(bytes(R * Hd, e)));
  MINERU_RETURN_IF_ERROR(qkv_.Reserve(bytes(R * (QD + 2 * KD), e)));
  MINERU_RETURN_IF_ERROR(attn_.Reserve(bytes(R * QD, e)));
  MINERU_RETURN_IF_ERROR(gate_.Reserve(bytes(R * I, e)));
  MINERU_RETURN_IF_ERROR(up_.Reserve(bytes(R * I, e)));
  MINERU_RETURN_IF_ERROR(kctx_.Reserve(bytes(b.ctx_rows * KD, e)));
  MINERU_RETURN_IF_ERROR(vctx_.Reserve(bytes(b.ctx_rows * KD, e)));
  MINERU_RETURN_IF_ERROR(cos_.Reserve(bytes(R * D, 4)));
  MINERU_RETURN_IF_ERROR(sin_.Reserve(bytes(R * D, 4)));
  MINERU_RETURN_IF_ERROR(meta_.Reserve(bytes(static_cast<int64_t>(b.meta.size()), 4)));
  if (b.split_keys > 0) {
    cu::PagedDecodeShape p;
    p.num_seqs = b.decode_seqs;
    p.num_heads = c_.num_heads;
    p.head_dim = D;
    p.block_table_stride = b.table_stride;
    p.block_size = b.block_size;
    p.split_keys = b.split_keys;
    MINERU_RETURN_IF_ERROR(split_.Reserve(bytes(cu::PagedDecodeWorkspaceFloats(p), 4)));
  }
  return hidden_.Reserve(bytes(R * Hd, e));
}

StatusOr<std::vector<float>> CudaDecoder::Hidden() {
  const int64_t n = last_rows_ * c_.hidden_size;
  std::vector<float> out(static_cast<size_t>(n));
  if (n == 0) return out;
  const cu::StreamHandle s = stream_.handle();
  // bf16 is widened on the device into embeds_, which holds T * hidden fp32 (reserved by the
  // batch) and is dead once the batch ran.
  GrowingBuffer* from = &hidden_;
  if (precision_ == CudaPrecision::kBf16) {
    MINERU_RETURN_IF_ERROR(cu::CastBf16ToF32(hidden_.as<cu::Bf16>(), n, embeds_.as<float>(), s));
    from = &embeds_;
  }
  std::vector<float> ordered(static_cast<size_t>(n));
  MINERU_RETURN_IF_ERROR(from->buffer().CopyToHostAsync(ordered.data(), n * sizeof(float), 0, s));
  MINERU_RETURN_IF_ERROR(stream_.Synchronize());
  const int64_t Hd = c_.hidden_size;
  for (int64_t r = 0; r < last_rows_; ++r) {  // back to the caller's row order
    std::copy(ordered.begin() + row_of_[r] * Hd, ordered.begin() + (row_of_[r] + 1) * Hd,
              out.begin() + r * Hd);
  }
  return out;
}

template <typename T>
Status CudaDecoder::LmHead(int64_t n) {
  const int64_t Hd = c_.hidden_size, V = c_.vocab_size;
  const cu::StreamHandle s = stream_.handle();
  MINERU_RETURN_IF_ERROR(cu::GatherRows(hidden_.as<T>(), Hd, rows_.as<int32_t>(), n, Hd, picked_.as<T>(), s));
  return cu::MatMul(gemm_, picked_.as<T>(), n, Hd, w_.lm_head.as<T>(), V, nullptr, logits_.as<float>(), s);
}

Status CudaDecoder::LogitsOnDevice(const std::vector<int32_t>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size()), Hd = c_.hidden_size, V = c_.vocab_size;
  logits_rows_ = 0;
  if (n == 0) return Status::Ok();
  std::vector<int32_t> mapped(rows.size());  // the decoder's rows
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= last_rows_)
      return InvalidArgumentError("CudaDecoder::Logits: row outside the last batch");
    mapped[i] = row_of_[rows[i]];
  }
  const size_t e = CudaElementBytes(precision_);
  Status st = rows_.Reserve(static_cast<size_t>(n) * 4);
  if (st.ok()) st = picked_.Reserve(static_cast<size_t>(n * Hd) * e);
  if (st.ok()) st = logits_.Reserve(static_cast<size_t>(n * V) * 4);
  if (st.ok())
    st = rows_.buffer().CopyFromHostAsync(mapped.data(), static_cast<size_t>(n) * 4, 0, stream_.handle());
  if (st.ok()) st = precision_ == CudaPrecision::kF32 ? LmHead<float>(n) : LmHead<cu::Bf16>(n);
  if (!st.ok()) {
    (void)stream_.Synchronize();  // the batch's own fault, if any, is not left for the next step
    return st;
  }
  logits_rows_ = n;
  return Status::Ok();
}

Status CudaDecoder::Logits(const std::vector<int32_t>& rows, float* logits) {
  const int64_t n = static_cast<int64_t>(rows.size()), V = c_.vocab_size;
  if (n == 0) return stream_.Synchronize();
  if (logits == nullptr) return InvalidArgumentError("CudaDecoder::Logits: no output");
  Status st = LogitsOnDevice(rows);
  if (st.ok())
    st = logits_.buffer().CopyToHostAsync(logits, static_cast<size_t>(n * V) * sizeof(float), 0,
                                          stream_.handle());
  Status done = stream_.Synchronize();
  MINERU_RETURN_IF_ERROR(st);
  return done;
}

}  // namespace mineru
