// engine/engine.h — THE public entry point of the library: a thread-safe engine that runs many
// requests at once with continuous batching over a paged KV cache.
//
// Submit() validates and prepares a request on the caller's thread (the input processor:
// tokenize, preprocess images) and returns a handle; one background loop (the engine core) plans
// each step with the Scheduler, has the model runner encode new images in packed batches (cached
// by pixel hash) and run one packed decoder pass for all scheduled sequences, samples each
// sequence with its own sampler and hands the token to the output processor — so a request's
// output does not depend on what else is in the batch. Handles stream tokens/text, can be cancelled, and
// complete with a finish reason and timings.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/block_pool.h"
#include "engine/chat.h"
#include "engine/finish_reason.h"
#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "model/backend.h"
#include "model/qwen2vl.h"
#include "tokenizer/tokenizer.h"

namespace mineru {

struct Sequence;
class InputProcessor;
class ModelRunner;

// The KV cache's element type. kAuto: Qwen2VLModel::default_kv_type() (fp16 for a quantized
// decoder, fp32 otherwise).
enum class KvCacheType { kAuto, kF32, kF16 };

struct EngineConfig {
  int threads = 0;            // 0 = all cores
  int block_size = 16;        // tokens per KV block
  size_t kv_cache_mb = 2048;  // upper bound of KV memory (allocated as used)
  KvCacheType kv_type = KvCacheType::kAuto;
  int kv_blocks = 0;            // if > 0, the number of KV blocks (overrides kv_cache_mb)
  int max_batch_tokens = 512;   // tokens per step (chunked prefill budget)
  int max_seqs = 64;            // sequences decoding together
  size_t image_cache_mb = 256;  // vision embeddings cache
  bool prefix_caching = true;
  int64_t max_prompt_tokens = 16384;
  int max_new_tokens = 16384;  // per request
  size_t max_queued = 4096;    // requests waiting or running; more are refused
  // Where the model runs (model/backend.h). kCuda (CUDA builds): the weights, activations and KV
  // cache in GPU memory, the KV cache sized by device.gpu_memory (kv_cache_mb and kv_type do not
  // apply; kv_blocks still does); Create fails with Unimplemented in a build without CUDA and
  // Unavailable without a usable GPU.
  DeviceOptions device;
  // Tests: wraps the backend the device gives (fault injection), called once by Create. Empty:
  // the device's backend as it is.
  std::function<std::unique_ptr<ModelBackend>(std::unique_ptr<ModelBackend>)> wrap_backend;
  // Tests: sample from candidate logits (engine/sampler.h, CandidateQuery) on every backend, as a
  // GPU's does, rather than from whole rows where the logits are in host memory.
  bool sample_from_candidates = false;
};

struct EngineRequest {
  // Either chat messages (+ images referenced by index), rendered with the Qwen2-VL template...
  std::vector<ChatMessage> messages;
  std::vector<RgbImage> images;
  // ...or prompt token ids with one image token per image in `images` (expanded here).
  std::vector<int32_t> prompt_ids;
  SamplingParams sampling;
  int max_new_tokens = 256;
  bool ignore_eos = false;
  std::vector<int32_t> stop_ids;  // in addition to the model's eos ids (unless ignore_eos)
  bool skip_special_tokens = false;
  double timeout_s = 0;  // 0 = none
  int priority = 0;      // admission order: lower first (vLLM's convention; see scheduler.h)
  // When max_queued requests are already in flight, Submit waits up to this long for one to
  // finish before refusing with Busy (overload is a queue, not an error).
  double admission_wait_s = 0;
};

struct Completion {
  std::vector<int32_t> ids;  // generated ids (a final stop token included)
  std::string text;          // decoded generated text (stop token excluded)
  FinishReason finish_reason = FinishReason::kNone;
  std::string error;
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // served from the prefix cache
  bool image_cache_hit = false;
  double queue_s = 0, vision_s = 0, ttft_s = 0, total_s = 0;
};

class RequestHandle {
 public:
  // Waits for more output. Appends new text and ids; returns false once the request is done and
  // everything has been delivered.
  bool Next(std::string* text, std::vector<int32_t>* ids);
  Completion Wait();
  // Waits up to `seconds`; returns true with *out filled once the request is done.
  bool WaitFor(double seconds, Completion* out);
  void Cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  int64_t id() const { return id_; }

 private:
  friend class Engine;
  friend struct HandleWriter;  // engine/output_processor.cc: the engine's loop writes output here
  int64_t id_ = 0;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_text_;
  std::vector<int32_t> pending_ids_;
  bool done_ = false;
  Completion completion_;
};

struct EngineStats {
  int running = 0, waiting = 0;
  int kv_blocks_used = 0, kv_blocks_total = 0, kv_blocks_cached = 0;
  size_t kv_bytes_allocated = 0;
  size_t kv_bytes_peak = 0;
  int64_t prefix_lookups = 0, prefix_hits = 0;
  int64_t image_cache_hits = 0, image_cache_misses = 0;
  int64_t generated_tokens = 0, computed_tokens = 0, steps = 0;
  // Where the model's time went and its work there (model/flops.h): vision passes (the images
  // encoded, cache hits excluded) and decoder steps (each step's pass, LM head and logits read).
  double vision_s = 0, vision_flops = 0, decoder_s = 0, decoder_flops = 0;
  int64_t completed = 0;
  int64_t submitted = 0;  // requests accepted by Submit (each runs once)
};

class Engine {
 public:
  // The engine borrows model and tokenizer (null: raw ids only, no text): both must outlive it.
  static StatusOr<std::unique_ptr<Engine>> Create(const Qwen2VLModel& model, const Tokenizer* tokenizer,
                                                  const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Errors: the request's own (InvalidArgument, ResourceExhausted), OutOfMemory when preparing it
  // (tokens, image preprocessing) could not allocate, Busy when max_queued requests are still in
  // flight after admission_wait_s, Unavailable when the engine is degraded or shutting down.
  StatusOr<std::shared_ptr<RequestHandle>> Submit(EngineRequest request);
  // Ok while the engine can serve. Once a weight file changed on disk while mapped (checked here
  // with one fstat per file, at every Submit, and after every step of the loop; see
  // ModelWeights::CheckFiles), or the model's device failed (a backend error Internal or
  // Unavailable: a GPU fault or a lost device), the engine is degraded for good: the requests in
  // flight finish with
  // FinishReason::kError and the reason, new ones are refused with Unavailable and the reason
  // ("model file X changed on disk while mapped (...); restart or reload").
  Status Health();
  EngineStats Stats() const;
  const Qwen2VLModel& model() const { return model_; }
  const Tokenizer* tokenizer() const { return tok_; }
  KvType kv_type() const;  // the KV cache's element type (EngineConfig::kv_type resolved)
  // Where the model runs, in one line (for logs and reports): "cpu (AVX3, 16 threads)",
  // "cuda:0 NVIDIA H100 ..., bf16, KV cache N blocks (M MiB), ...".
  const std::string& device_description() const { return device_description_; }
  // The engine's worker pool, for work on the caller's thread between requests (bench, probes).
  // Not reentrant: its ParallelFor must not run while the loop runs a step, nor nested.
  ThreadPool* pool() { return pool_.get(); }

 private:
  Engine(const Qwen2VLModel& model, const Tokenizer* tok, const EngineConfig& config);
  // Makes the model backend for cfg_.device, the block pool and the runner; returns the number
  // of KV blocks.
  StatusOr<int> CreateBackend();
  // Queues a prepared sequence (waiting up to wait_s for room); the loop admits it.
  Status Enqueue(std::unique_ptr<Sequence> s, double wait_s);
  void Loop();
  // Loop steps: take the queue; encode the new sequences' images and hand them to the
  // scheduler; end cancelled and expired sequences; run one step; publish stats; fail a
  // sequence when nothing could be scheduled.
  std::vector<std::unique_ptr<Sequence>> TakeIncoming(bool* stop);
  void AdmitNew(std::vector<std::unique_ptr<Sequence>>* fresh);
  void ExpireSequences();
  bool RunStep();
  // What each sampling sequence's draw needs of its logits row (whole, or candidates), read from
  // the runner's last pass into *rows.
  Status ReadLogits(const std::vector<int64_t>& sample_ids, std::vector<RowLogits>* rows);
  void SampleAndEmit(const std::vector<int64_t>& sample_ids, std::vector<RowLogits>* rows);
  void PublishStats();
  void FailStalled();
  void Finish(Sequence& s, FinishReason reason, const std::string& error = "");
  // Finishes the sequences of `ids` (all admitted ones when null) with FinishReason::kError.
  void FailAll(const std::string& error);
  // Marks the engine degraded for good with `reason` (the first reason stays), logging it once.
  void Degrade(const std::string& reason);
  Sequence& Seq(int64_t id) { return *seqs_.at(id); }

  const Qwen2VLModel& model_;  // borrowed: must outlive the engine (see Create)
  const Tokenizer* tok_;       // borrowed, may be null
  EngineConfig cfg_;
  std::unique_ptr<ThreadPool> pool_;  // the loop's workers; handed out by pool() for callers
                                      // on other threads only while the engine is idle
  std::unique_ptr<BlockPool> blocks_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<InputProcessor> inputs_;
  std::unique_ptr<ModelRunner> runner_;
  std::string device_description_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable capacity_cv_;  // live_ went down (Submit's admission wait)
  std::deque<std::unique_ptr<Sequence>> incoming_;
  size_t live_ = 0;  // submitted and not finished
  bool stop_ = false;
  std::atomic<int64_t> next_id_{1};
  // Admitted sequences by id, i.e. in submission order (loop thread only).
  std::map<int64_t, std::unique_ptr<Sequence>> seqs_;
  EngineStats stats_;  // guarded by mu_
  std::atomic<bool> degraded_{false};
  std::string degraded_reason_;         // guarded by mu_; set once, with degraded_
  int64_t kv_alloc_failures_seen_ = 0;  // loop thread only
  std::thread loop_;
};

}  // namespace mineru
