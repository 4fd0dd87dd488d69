// model/decoder.h — the Qwen2 decoder with GQA, q/k/v biases and M-RoPE, over a KV cache.
//
// Forward() appends n new tokens (given as input embeddings [n, hidden] and their 3-D
// positions) to one sequence's cache and returns their final-normed hidden states [n, hidden].
// Logits() applies the LM head. Prefill and decode are the same call (n > 1 or n == 1).
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "model/config.h"
#include "model/weights.h"

namespace mineru {

// Contiguous per-sequence cache: per layer, keys (after RoPE) and values [len, kv_heads*head_dim].
struct KvCache {
  std::vector<std::vector<float>> k, v;
  int64_t len = 0;
  void Reset(int num_layers) {
    k.assign(num_layers, {});
    v.assign(num_layers, {});
    len = 0;
  }
};

// Paged KV storage (implemented by the engine's block pool): for a block and a layer, keys and
// values [block_size, kv_heads * head_dim], keys stored after RoPE.
class KvStore {
 public:
  virtual ~KvStore() = default;
  virtual int block_size() const = 0;
  virtual float* Key(int32_t block, int layer) = 0;
  virtual float* Value(int32_t block, int layer) = 0;
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

  // out[n, hidden] = token embeddings of ids (errors are the caller's job: ids < vocab).
  void Embed(const int32_t* ids, int64_t n, float* out) const;

  // Runs n tokens; pos_t/h/w have n entries. hidden_out [n, hidden] (final RMSNorm applied).
  void Forward(const float* embeds, int64_t n, const int64_t* pos_t, const int64_t* pos_h,
               const int64_t* pos_w, KvCache* cache, float* hidden_out, ThreadPool* pool,
               DecoderTrace* trace = nullptr) const;

  // Runs a packed batch of several sequences over a paged cache: matrix products over all rows
  // at once, attention per sequence. Each row's result does not depend on the other rows.
  void ForwardBatch(const float* embeds, const std::vector<BatchSegment>& segments, KvStore* kv,
                    float* hidden_out, ThreadPool* pool) const;

  // logits[n, vocab] = hidden[n, hidden] · lm_head^T.
  void Logits(const float* hidden, int64_t n, float* logits, ThreadPool* pool) const;

  const TextConfig& config() const { return c_; }

 private:
  // cos/sin [n, head_dim] from the three position components per mrope_section.
  void RopeTables(int64_t n, const int64_t* pt, const int64_t* ph, const int64_t* pw, std::vector<float>* cos,
                  std::vector<float>* sin) const;

  const TextConfig& c_;
  const TextWeights& w_;
  std::vector<float> inv_freq_;     // [head_dim/2]
  std::vector<int> dim_component_;  // [head_dim/2]: 0 = t, 1 = h, 2 = w
};

}  // namespace mineru
