// model/decoder.h — the Qwen2 decoder with GQA, q/k/v biases and M-RoPE, over a KV cache.
//
// ForwardBatch() is the one forward path: it appends each sequence's new tokens (input embeddings
// [T, hidden] and their 3-D positions) to its paged cache and returns final-normed hidden states
// [T, hidden]. Forward() is the single-stream form: a batch of one over a KvCache. Logits()
// applies the LM head. Prefill and decode are the same call (n > 1 or n == 1).
//
// Names follow transformers' Qwen2 (modeling_qwen2.py): Hd hidden_size, D head_dim, NH/KV query/
// key-value heads, QD = NH*D and KD = KV*D the q and k/v row widths, I intermediate_size, T the
// packed rows of a batch.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/context.h"
#include "model/config.h"
#include "model/weights.h"

namespace mineru {

// Element type of a KV cache: fp32, or IEEE fp16 (half the memory; values rounded to nearest even
// and clamped to +-65504 as they are stored, widened exactly as attention reads them).
enum class KvType { kF32, kF16 };
size_t KvTypeBytes(KvType t);
const char* KvTypeName(KvType t);

// Paged KV storage (implemented by the engine's block pool and by KvCache): for a block and a
// layer, keys and values [block_size, kv_heads * head_dim] of kv_type() elements, keys stored
// after RoPE.
class KvStore {
 public:
  virtual ~KvStore() = default;
  virtual int block_size() const = 0;
  virtual KvType kv_type() const = 0;
  virtual void* Key(int32_t block, int layer) = 0;
  virtual void* Value(int32_t block, int layer) = 0;
};

// One sequence's KV cache for single-stream use (Generate, probes, tests): a KvStore that owns
// its blocks and numbers them 0, 1, 2, ... in token order, so Decoder::Forward runs it through
// ForwardBatch as a batch of one. Grows on demand; block memory never moves once allocated.
class KvCache : public KvStore {
 public:
  static constexpr int kBlockSize = 256;
  explicit KvCache(KvType type = KvType::kF32) : type_(type) {}
  int block_size() const override { return kBlockSize; }
  KvType kv_type() const override { return type_; }
  void* Key(int32_t block, int layer) override { return Slot(block, layer, 0); }
  void* Value(int32_t block, int layer) override { return Slot(block, layer, 1); }

  int64_t len() const { return len_; }  // tokens cached
  // Makes room for `tokens` tokens of `layers` layers of `kv_dim` elements per key/value row. A
  // call with another shape than the cached one starts over (an empty cache).
  void Reserve(int64_t tokens, int layers, int64_t kv_dim);
  void Advance(int64_t n) { len_ += n; }
  const std::vector<int32_t>& block_table() const { return table_; }
  void Reset() {
    blocks_.clear();
    table_.clear();
    len_ = 0;
  }

 private:
  void* Slot(int32_t block, int layer, int kv) {
    const size_t bytes =
        static_cast<size_t>((int64_t{layer} * 2 + kv) * kBlockSize * kv_dim_) * KvTypeBytes(type_);
    return reinterpret_cast<char*>(blocks_[static_cast<size_t>(block)].data()) + bytes;
  }
  std::vector<std::vector<float>> blocks_;  // each [layers][2][kBlockSize][kv_dim] of type_ (in floats' room)
  std::vector<int32_t> table_;              // 0, 1, ..., blocks_.size() - 1
  int layers_ = 0;
  int64_t kv_dim_ = 0;
  KvType type_;
  int64_t len_ = 0;
};

// One sequence's share of a packed batch: its n new tokens are consecutive rows of the batch.
struct BatchSegment {
  int64_t n = 0;                   // new tokens in this step
  int64_t past = 0;                // tokens already in this sequence's cache
  const int64_t* pos_t = nullptr;  // n entries each
  const int64_t* pos_h = nullptr;
  const int64_t* pos_w = nullptr;
  const int32_t* block_table = nullptr;  // blocks covering past + n tokens
};

struct DecoderTrace {
  std::vector<float> layer0;  // [n, hidden] output of layer 0
};

class Decoder {
 public:
  Decoder(const TextConfig& config, const TextWeights& weights);

  // out[n, hidden] = token embeddings of ids (errors are the caller's job: ids < vocab), widened by
  // the kernels of `config`.
  void Embed(const int32_t* ids, int64_t n, float* out, const kernels::KernelConfig& config) const;

  // Runs n tokens of one sequence (a batch of one); pos_t/h/w have n entries. hidden_out
  // [n, hidden] (final RMSNorm applied). trace, when given, receives layer 0's output. The
  // kernels run with ctx (as in every call below).
  void Forward(const float* embeds, int64_t n, const int64_t* pos_t, const int64_t* pos_h,
               const int64_t* pos_w, KvCache* cache, float* hidden_out, const kernels::KernelContext& ctx,
               DecoderTrace* trace = nullptr) const;

  // Runs a packed batch of several sequences over a paged cache: matrix products over all rows
  // at once, attention per sequence. Each row's result does not depend on the other rows.
  // hidden_out may be embeds itself: the layers then run in place over it (no copy of [T, hidden]).
  void ForwardBatch(const float* embeds, const std::vector<BatchSegment>& segments, KvStore* kv,
                    float* hidden_out, const kernels::KernelContext& ctx,
                    DecoderTrace* trace = nullptr) const;

  // logits[n, vocab] = hidden[n, hidden] · lm_head^T.
  void Logits(const float* hidden, int64_t n, float* logits, const kernels::KernelContext& ctx) const;

  const TextConfig& config() const { return c_; }

  // cos/sin [n, head_dim] from the three position components per mrope_section (M-RoPE; shared
  // with the CUDA decoder, model/cuda/decoder_cuda.h).
  void RopeTables(int64_t n, const int64_t* pt, const int64_t* ph, const int64_t* pw, std::vector<float>* cos,
                  std::vector<float>* sin) const;

 private:
  // Stores each segment's new keys and values, then attends its queries (rows of q) over its
  // whole context into attn (which may be q itself: kernels::Attention allows it).
  void AttendSegments(int layer, const std::vector<BatchSegment>& segments, const float* q, const float* k,
                      const float* v, KvStore* kv, float* attn, const kernels::KernelContext& ctx) const;

  const TextConfig& c_;
  const TextWeights& w_;
  std::vector<float> inv_freq_;     // [head_dim/2]
  std::vector<int> dim_component_;  // [head_dim/2]: 0 = t, 1 = h, 2 = w
};

}  // namespace mineru
