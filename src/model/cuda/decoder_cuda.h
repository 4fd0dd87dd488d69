// model/cuda/decoder_cuda.h — the Qwen2 decoder on one CUDA GPU: Decoder::ForwardBatch's
// computation (model/decoder.h) with weights, activations and the paged KV cache in GPU memory.
//
// One call runs a packed batch of sequences (BatchSegment: n new tokens after `past` cached ones,
// their 3-D positions, the block table covering past + n tokens) over a CudaKvCache whose block
// ids are the engine's (engine/block_pool.h keeps the bookkeeping; the storage is here). Per
// layer, on one stream (Hd hidden, QD = NH * D, KD = KV * D, I intermediate, T rows):
//   normed = RMSNorm(x);  qkv [T, QD + 2 KD] = normed [Wq; Wk; Wv]^T + [bq; bk; bv] (one product);
//   q and k rotated (M-RoPE tables from Decoder::RopeTables);  k, v stored at their slots;
//   attention: the segments decoding one token -> PagedDecodeAttention over the block tables;
//     the others (prefill chunks) -> their contexts gathered contiguous -> causal VarlenAttention
//   (the decoder runs the decode rows first, whatever the caller's order, and maps rows back);
//   normed = attn Wo^T;  x += normed;  normed = RMSNorm(x);  gate = normed Wg^T, up = normed Wu^T;
//   gate = silu(gate) * up;  normed = gate Wd^T;  x += normed
// then hidden = RMSNorm(x) stays on the device; Logits() picks rows and applies the LM head.
// Numerics as the CUDA ViT's (vision_encoder_cuda.h): fp32 products and reductions; bf16 rounds
// activations and the cache between ops; fp32 is the exact path the golden tests run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kernels/context.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/graph.h"
#include "kernels/cuda/kv_cache.h"
#include "model/config.h"
#include "model/cuda/device_weights.h"
#include "model/decoder.h"
#include "model/weights.h"

namespace mineru {

// The paged KV cache in GPU memory: num_blocks blocks of BlockPool's layout (per block, per layer:
// keys [block_size, kv_dim], then values), elements in the decoder's precision. Allocated whole
// at creation (the GPU's memory is budgeted at start, not grown per block). Move-only.
class CudaKvCache {
 public:
  // Bytes one block takes: what a memory budget divides by (Allocate takes one more, the sink).
  static size_t BlockBytes(int block_size, int num_layers, int64_t kv_dim, CudaPrecision p);
  // OutOfMemory when the device cannot hold it; InvalidArgument for a non-positive shape.
  static StatusOr<CudaKvCache> Allocate(int num_blocks, int block_size, int num_layers, int64_t kv_dim,
                                        CudaPrecision p);

  int num_blocks() const { return num_blocks_; }
  // One more block past num_blocks(), never the engine's: where a graph's padding rows write.
  int sink_block() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  CudaPrecision precision() const { return precision_; }
  int num_layers() const { return num_layers_; }
  int64_t kv_dim() const { return kv_dim_; }
  size_t bytes() const { return buf_.size(); }
  // The layout kernels/cuda/kv_cache.h and attention.h address (row_stride = kv_dim).
  kernels::cuda::PagedKvLayout layout() const;
  // Element offsets of layer l's keys and values in block 0 (block b adds b * block_stride).
  int64_t key_offset(int layer) const { return int64_t{layer} * 2 * block_size_ * kv_dim_; }
  int64_t value_offset(int layer) const { return key_offset(layer) + int64_t{block_size_} * kv_dim_; }
  void* data() const { return buf_.data(); }

 private:
  kernels::cuda::DeviceBuffer buf_;
  int num_blocks_ = 0, block_size_ = 0, num_layers_ = 0;
  int64_t kv_dim_ = 0;
  CudaPrecision precision_ = CudaPrecision::kBf16;
};

struct CudaDecoderLayer {
  kernels::cuda::DeviceBuffer input_norm, post_attn_norm, qkv_b;
  DeviceMatrix qkv, o, gate, up, down;
};
struct CudaDecoderWeights {
  std::vector<CudaDecoderLayer> layers;
  kernels::cuda::DeviceBuffer final_norm;
  DeviceMatrix lm_head;  // [vocab, hidden]
  size_t bytes = 0;
};

class CudaDecoder {
 public:
  // Uploads the decoder's weights (not the token embeddings: the caller embeds on the host) to
  // the current device. The config is copied; `weights` is read only during the call.
  static StatusOr<std::unique_ptr<CudaDecoder>> Create(const TextConfig& config, const TextWeights& weights,
                                                       const kernels::KernelConfig& kernels,
                                                       CudaPrecision precision);

  // Runs the packed batch: embeds [T, hidden] fp32 on the host, T = the segments' n summed; each
  // segment's block table must cover past + n tokens with blocks of kv (whose precision must be
  // the decoder's), distinct from every other segment's blocks where they are written. Keys and
  // values of the new tokens are stored; the final-normed hidden states stay on the device for
  // Hidden() and Logits(). Returns when the work is queued (Logits and Hidden wait for it).
  // InvalidArgument for malformed segments (checked on the host first: nothing is queued then).
  Status ForwardBatch(const float* embeds, const std::vector<BatchSegment>& segments, CudaKvCache* kv);

  // The last batch's hidden states [T, hidden] as fp32 on the host (tests, probes).
  StatusOr<std::vector<float>> Hidden();
  // logits [rows.size(), vocab] fp32 into host memory: the LM head over the given rows of the
  // last batch (each in [0, T)). Waits for the batch, with no rows too (a step of prefill chunks
  // ends here, so a fault inside it is reported by its own step).
  Status Logits(const std::vector<int32_t>& rows, float* logits);
  // The same logits left on the device: the first device_logits_rows() rows [rows.size(), vocab]
  // fp32 of device_logits(), queued on stream() (not waited for), valid until the next
  // ForwardBatch or Logits call.
  Status LogitsOnDevice(const std::vector<int32_t>& rows);
  kernels::cuda::DeviceBuffer& device_logits() { return logits_.buffer(); }
  int64_t device_logits_rows() const { return logits_rows_; }
  const kernels::cuda::CudaStream& stream() const { return stream_; }

  // Decode steps (every segment one token) of up to max_rows rows (0: off, the default) run as
  // CUDA graphs: recorded once per shape (rows rounded up by GraphRows, the padding rows computing
  // over the cache's sink block; block tables' stride rounded up to a power of two) and replayed
  // with one launch (a step of max_rows rows may run up to 15 padding rows more: the activation
  // reserve's slack holds them). If a recording fails, graphs turn off and graph_error() says why.
  void EnableGraphs(int64_t max_rows);
  // Decode steps whose (sequence, KV head) blocks would leave SMs idle split each context into
  // chunks (flash-decoding, PagedDecodeShape::split_keys) so that about two blocks an SM run; sms:
  // the GPU's SM count (0: off, the default).
  void EnableDecodeSplit(int sms);
  // The chunk a decode step of `seqs` sequences over block tables of `table_stride` entries uses
  // (0: unsplit); a function of the step's shape only, so a recorded graph keeps its split.
  static int64_t DecodeSplitKeys(int64_t seqs, int64_t kv_heads, int64_t table_stride, int64_t block_size,
                                 int sms);
  // The prefill attention's kernel form (kernels/cuda/attention.h; --gpu-attention). Default kAuto.
  void SetAttentionKernel(kernels::cuda::VarlenKernel k) { attention_ = k; }
  const std::string& graph_error() const { return graph_error_; }
  size_t graphs_recorded() const { return graphs_.size(); }
  // The rows a graph step of `rows` rows runs: a power of two up to 8, then multiples of 16.
  static int64_t GraphRows(int64_t rows);

  const TextConfig& config() const { return c_; }
  CudaPrecision precision() const { return precision_; }
  size_t weight_bytes() const { return w_.bytes; }
  size_t activation_bytes() const;

 private:
  CudaDecoder(const TextConfig& config, const TextWeights& weights, CudaPrecision precision)
      : c_(config), host_(c_, weights), precision_(precision) {}
  struct Batch;
  Status CheckSegments(const std::vector<BatchSegment>& segs, const CudaKvCache* kv) const;
  Status Prepare(const std::vector<BatchSegment>& segs, CudaKvCache* kv, int64_t pad_rows, Batch* b);
  static void DecodeTables(const std::vector<const BatchSegment*>& order, int64_t real, const CudaKvCache& kv,
                           int64_t rows, int64_t stride, std::vector<int32_t>* tables);
  int64_t GraphPadding(const std::vector<BatchSegment>& segments) const;
  Status ReserveFor(const Batch& b);
  template <typename T>
  Status Run(const float* embeds, const Batch& b, CudaKvCache* kv);
  template <typename T>
  Status Upload(const float* embeds, int64_t rows);
  template <typename T>
  Status Layers(const Batch& b, CudaKvCache* kv);
  template <typename T>
  Status LayersByGraph(const Batch& b, CudaKvCache* kv);
  std::vector<const void*> GraphBindings(const CudaKvCache& kv) const;
  template <typename T>
  Status Attend(int layer, const Batch& b, CudaKvCache* kv);
  template <typename T>
  Status LmHead(int64_t n);  // rows_ [n] picked from hidden_, then the LM head into logits_

  TextConfig c_;
  // Only for the M-RoPE tables (RopeTables reads the config, never the weights it was given, which
  // need not outlive Create), computed on the host exactly as the CPU decoder computes them.
  Decoder host_;
  CudaPrecision precision_;
  CudaDecoderWeights w_;
  kernels::cuda::CudaStream stream_;
  kernels::cuda::GemmHandle gemm_;
  // Recorded decode steps by (rows, block-table stride), with the buffers they name.
  struct Recorded {
    kernels::cuda::CudaGraph graph;
    std::vector<const void*> bound;
  };
  static constexpr size_t kMaxGraphs = 64;  // more shapes than this: the recordings start over
  std::map<std::pair<int64_t, int64_t>, Recorded> graphs_;
  int64_t graph_rows_ = 0;  // EnableGraphs' limit; 0: off
  kernels::cuda::VarlenKernel attention_ = kernels::cuda::VarlenKernel::kAuto;
  int split_sms_ = 0;  // EnableDecodeSplit's SM count; 0: off
  std::string graph_error_;
  int64_t last_rows_ = 0;        // T of the last batch
  int64_t logits_rows_ = 0;      // rows of logits_ the last LogitsOnDevice queued
  std::vector<int32_t> row_of_;  // the last batch's caller row -> decoder row (Batch::row_of)
  // Activations and per-batch metadata, grown to the largest batch.
  GrowingBuffer embeds_, x_, normed_, qkv_, attn_, gate_, up_, kctx_, vctx_, cos_, sin_, meta_, hidden_,
      rows_, picked_, logits_;
  GrowingBuffer split_;  // the split decode attention's partial states (PagedDecodeWorkspaceFloats)
};

}  // namespace mineru
