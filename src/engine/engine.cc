#include "engine/engine.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>

#include "engine/input_processor.h"
#include "engine/model_runner.h"
#include "engine/output_processor.h"
#include "engine/sequence.h"
#include "model/cpu_backend.h"
#include "model/flops.h"
#if MINERU_HAVE_CUDA
#include "model/cuda/cuda_backend.h"
#endif

namespace mineru {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

bool RequestHandle::Next(std::string* text, std::vector<int32_t>* ids) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ || !pending_text_.empty() || !pending_ids_.empty(); });
  const bool had = !pending_text_.empty() || !pending_ids_.empty();
  if (text) text->append(pending_text_);
  if (ids) ids->insert(ids->end(), pending_ids_.begin(), pending_ids_.end());
  pending_text_.clear();
  pending_ids_.clear();
  return had || !done_;
}

Completion RequestHandle::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return completion_;
}

bool RequestHandle::WaitFor(double seconds, Completion* out) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done_; })) return false;
  if (out) *out = completion_;
  return true;
}

Engine::Engine(const Qwen2VLModel& model, const Tokenizer* tok, const EngineConfig& config)
    : model_(model), tok_(tok), cfg_(config) {}

namespace {

KvType ResolveKvType(KvCacheType want, const Qwen2VLModel& model) {
  if (want == KvCacheType::kF32) return KvType::kF32;
  if (want == KvCacheType::kF16) return KvType::kF16;
  return model.default_kv_type();
}

}  // namespace

KvType Engine::kv_type() const { return blocks_->kv_type(); }

// The backend, the block pool (its storage: the CPU's, or bookkeeping only beside a GPU cache)
// and the runner over them; returns the number of KV blocks.
StatusOr<int> Engine::CreateBackend() {
  const TextConfig& t = model_.config().text;
  const int kv_dim = t.num_kv_heads * t.head_dim;
  const KvType kv_type = ResolveKvType(cfg_.kv_type, model_);
  std::unique_ptr<ModelBackend> backend;
  int num_blocks = 0;
  if (cfg_.device.device == ComputeDevice::kCuda) {
#if MINERU_HAVE_CUDA
    CudaBackendConfig cc;
    cc.device = cfg_.device;
    cc.block_size = cfg_.block_size;
    cc.kv_blocks = cfg_.kv_blocks;
    cc.max_batch_tokens = cfg_.max_batch_tokens;
    cc.max_seqs = cfg_.max_seqs;
    cc.host_pool = pool_.get();  // idle while the GPU computes: it stages the vision passes' pixels
    MINERU_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> cuda, CudaBackend::Create(model_, cc));
    num_blocks = cuda->num_blocks();
    blocks_ = std::make_unique<BlockPool>(num_blocks, cfg_.block_size, t.num_layers, 0, kv_type);
    backend = std::move(cuda);
#else
    return UnimplementedError(
        "this build has no CUDA backend: build with -DMINERU_CUDA=ON where the CUDA 13 toolkit is installed");
#endif
  } else {
    const size_t per_block =
        static_cast<size_t>(t.num_layers) * 2 * cfg_.block_size * kv_dim * KvTypeBytes(kv_type);
    num_blocks = cfg_.kv_blocks > 0
                     ? cfg_.kv_blocks
                     : static_cast<int>(std::max<size_t>(1, (cfg_.kv_cache_mb << 20) / per_block));
    blocks_ = std::make_unique<BlockPool>(num_blocks, cfg_.block_size, t.num_layers, kv_dim, kv_type);
    backend = std::make_unique<CpuBackend>(model_, pool_.get(), blocks_.get());
  }
  if (cfg_.wrap_backend) backend = cfg_.wrap_backend(std::move(backend));
  device_description_ = backend->Describe();
  runner_ = std::make_unique<ModelRunner>(model_, std::move(backend), cfg_.image_cache_mb << 20);
  return num_blocks;
}

StatusOr<std::unique_ptr<Engine>> Engine::Create(const Qwen2VLModel& model, const Tokenizer* tokenizer,
                                                 const EngineConfig& config) {
  if (config.block_size <= 0 || config.max_batch_tokens <= 0 || config.max_seqs <= 0) {
    return InvalidArgumentError("engine: block size, batch tokens and sequences must be positive");
  }
  std::unique_ptr<Engine> e(new Engine(model, tokenizer, config));
  e->pool_ = std::make_unique<ThreadPool>(config.threads > 0 ? config.threads : ThreadPool::DefaultThreads());
  MINERU_ASSIGN_OR_RETURN(const int num_blocks, e->CreateBackend());
  SchedulerConfig sc;
  sc.max_batch_tokens = config.max_batch_tokens;
  sc.max_seqs = config.max_seqs;
  sc.prefix_caching = config.prefix_caching;
  e->sched_ = std::make_unique<Scheduler>(sc, e->blocks_.get());
  std::vector<int32_t> eos = model.config().eos_token_ids;
  if (tokenizer) {
    for (const char* s : {"<|im_end|>", "<|endoftext|>"}) {
      if (auto id = tokenizer->TokenToId(s)) eos.push_back(*id);
    }
  }
  InputLimits limits;
  limits.max_new_tokens = config.max_new_tokens;
  limits.max_prompt_tokens = config.max_prompt_tokens;
  limits.kv_capacity_tokens = int64_t{num_blocks} * config.block_size;
  e->inputs_ = std::make_unique<InputProcessor>(model, tokenizer, limits, std::move(eos));
  e->stats_.kv_blocks_total = num_blocks;
  e->loop_ = std::thread([p = e.get()] { p->Loop(); });
  return e;
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  capacity_cv_.notify_all();
  if (loop_.joinable()) loop_.join();
}

void Engine::Degrade(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (degraded_) return;
  degraded_reason_ = reason;
  degraded_ = true;
  std::fprintf(stderr, "error: %s (until then every request fails)\n", degraded_reason_.c_str());
}

Status Engine::Health() {
  if (!degraded_) {
    Status w = model_.weights().CheckFiles();
    if (!w.ok()) Degrade(w.message());
  }
  if (!degraded_) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  return Status(StatusCode::kUnavailable, degraded_reason_);
}

StatusOr<std::shared_ptr<RequestHandle>> Engine::Submit(EngineRequest req) {
  MINERU_RETURN_IF_ERROR(Health());
  // Tokens, preprocessed images and positions are allocated in proportion to what the caller sent.
  try {
    MINERU_ASSIGN_OR_RETURN(std::unique_ptr<Sequence> s, inputs_->Process(req, Now()));
    s->handle = std::make_shared<RequestHandle>();
    s->id = next_id_++;
    s->handle->id_ = s->id;
    std::shared_ptr<RequestHandle> handle = s->handle;
    MINERU_RETURN_IF_ERROR(Enqueue(std::move(s), req.admission_wait_s));
    return handle;
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("preparing the request (tokenizing, image preprocessing)");
  }
}

Status Engine::Enqueue(std::unique_ptr<Sequence> s, double wait_s) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (live_ >= cfg_.max_queued && wait_s > 0) {
      capacity_cv_.wait_for(lock, std::chrono::duration<double>(wait_s),
                            [&] { return stop_ || live_ < cfg_.max_queued; });
    }
    if (stop_) return Status(StatusCode::kUnavailable, "engine is shutting down");
    if (live_ >= cfg_.max_queued) {
      return BusyError("too many requests in flight (" + std::to_string(live_) + ")");
    }
    ++live_;
    ++stats_.submitted;
    incoming_.push_back(std::move(s));
  }
  cv_.notify_all();
  return Status::Ok();
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Engine::Finish(Sequence& s, FinishReason reason, const std::string& error) {
  SealCompletion(s, reason, error, Now());
  if (sched_->Contains(s.id)) {
    s.comp.cached_prompt_tokens = std::max(s.comp.cached_prompt_tokens, sched_->CachedPrefixTokens(s.id));
    sched_->Remove(s.id);
  }
  {
    // Before the handle completes, so a caller that waited sees its blocks returned in Stats().
    std::lock_guard<std::mutex> lock(mu_);
    --live_;
    ++stats_.completed;
    capacity_cv_.notify_one();
    stats_.kv_blocks_used = blocks_->used_blocks();
    stats_.kv_blocks_cached = blocks_->cached_blocks();
    stats_.kv_bytes_allocated = blocks_->allocated_bytes();
  }
  DeliverCompletion(s);
}

void Engine::FailAll(const std::string& error) {
  for (auto& [id, s] : seqs_) Finish(*s, FinishReason::kError, error);
  seqs_.clear();
}

void Engine::AdmitNew(std::vector<std::unique_ptr<Sequence>>* fresh) {
  if (Status h = Health(); !h.ok()) {
    for (auto& s : *fresh) Finish(*s, FinishReason::kError, h.message());
    fresh->clear();
    return;
  }
  std::vector<Sequence*> seqs;
  for (auto& s : *fresh) seqs.push_back(s.get());
  std::vector<std::string> errors;
  const double tv = Now();
  const double flops_before = runner_->vision_flops();
  runner_->EncodeImages(
      seqs, [this] { return Health(); }, &errors);
  const double vision_s = Now() - tv;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.vision_s += vision_s;
    stats_.vision_flops += runner_->vision_flops() - flops_before;
  }
  for (size_t si = 0; si < fresh->size(); ++si) {
    std::unique_ptr<Sequence>& s = (*fresh)[si];
    s->comp.vision_s = vision_s;
    s->comp.queue_s = Now() - s->t_submit;
    if (!errors[si].empty()) {
      Finish(*s, FinishReason::kError, errors[si]);
      continue;
    }
    sched_->Add(s->id, s->keys, s->priority);
    const int64_t id = s->id;
    seqs_[id] = std::move(s);
  }
  fresh->clear();
}

bool Engine::RunStep() {
  StepPlan plan = sched_->Schedule();
  for (int64_t id : plan.rejected) {
    auto it = seqs_.find(id);
    if (it != seqs_.end()) {
      Finish(*it->second, FinishReason::kError, "request does not fit in the KV cache");
      seqs_.erase(it);
    }
  }
  if (plan.seqs.empty()) return false;

  const int64_t T = plan.tokens();
  // Activations are bounded by the batch budget, but memory can still run out (other requests,
  // other processes): the sequences of this step fail, the others go on.
  std::vector<int64_t> sample_ids;
  std::vector<RowLogits> logits;
  Status pass;
  const double t_pass = Now();
  try {
    pass = runner_->Forward(
        plan, *sched_, [this](int64_t id) -> Sequence& { return Seq(id); }, &sample_ids);
    if (pass.ok()) pass = ReadLogits(sample_ids, &logits);
  } catch (const std::bad_alloc&) {
    pass = OutOfMemoryError("running a batch of " + std::to_string(T) + " tokens");
  }
  if (!pass.ok()) {
    const std::string& error = pass.message();
    // Internal or Unavailable is the device failing (kernels/cuda's class for a fault inside a
    // kernel, which is sticky: every later call fails too, and for a lost device): the engine is
    // degraded for good, as for a changed weight file, before any request learns of the failure
    // (so a client that sees its request fail finds the engine degraded), rather than failing
    // every later step one by one. Anything else (memory, a shape a library refused) fails only
    // this step's requests.
    const bool fatal = pass.code() == StatusCode::kInternal || pass.code() == StatusCode::kUnavailable;
    if (fatal) Degrade("the model's device failed: " + error + "; restart the process");
    for (const ScheduledSeq& p : plan.seqs) {
      auto it = seqs_.find(p.id);
      if (it == seqs_.end()) continue;
      Finish(*it->second, FinishReason::kError, error);
      seqs_.erase(it);
    }
    if (fatal) FailAll(Health().message());
    return true;
  }
  sched_->Commit(plan);
  // Weights that changed on disk during the step (a truncation reads as zeros): nothing computed
  // from them may reach a client.
  if (Status h = Health(); !h.ok()) {
    FailAll(h.message());
    return true;
  }
  const double pass_s = Now() - t_pass;
  double flops = static_cast<double>(sample_ids.size()) * LmHeadFlops(model_.config().text);
  for (const ScheduledSeq& p : plan.seqs) flops += DecoderFlops(model_.config().text, p.start, p.n);
  {
    // Before the step's sequences can finish: whoever sees a request complete sees its step counted.
    std::lock_guard<std::mutex> lock(mu_);
    stats_.decoder_s += pass_s;
    stats_.decoder_flops += flops;
    stats_.steps++;
    stats_.generated_tokens += static_cast<int64_t>(sample_ids.size());
    stats_.computed_tokens += T;
  }
  SampleAndEmit(sample_ids, &logits);
  return true;
}

Status Engine::ReadLogits(const std::vector<int64_t>& sample_ids, std::vector<RowLogits>* rows) {
  const int32_t V = static_cast<int32_t>(model_.config().text.vocab_size);
  const bool candidates = cfg_.sample_from_candidates || runner_->logits_on_device();
  std::vector<CandidateQuery> queries(sample_ids.size());
  std::vector<LogitsRequest> requests(sample_ids.size());
  std::vector<const SequenceSampler*> samplers(sample_ids.size());
  for (size_t k = 0; candidates && k < sample_ids.size(); ++k) samplers[k] = Seq(sample_ids[k]).sampler.get();
  // Each query reads only its own sequence's sampler: built in parallel.
  auto query = [&](size_t b, size_t e, size_t) {
    for (size_t k = b; k < e; ++k) {
      queries[k] = samplers[k]->Query(V);
      requests[k].top_k = queries[k].top_k;
      requests[k].touched = &queries[k].touched;
    }
  };
  if (candidates && pool_ && sample_ids.size() > 1) {
    pool_->ParallelFor(sample_ids.size(), query);
  } else if (candidates) {
    query(0, sample_ids.size(), 0);
  }
  MINERU_RETURN_IF_ERROR(runner_->ReadLogits(requests, rows));
  if (rows->size() != sample_ids.size()) return InternalError("ReadLogits answered the wrong number of rows");
  return Status::Ok();
}

// Samples one token for each sequence of sample_ids (from (*rows)[k]: its whole logits row or its
// candidates) and hands it to the output processor; ended sequences finish.
void Engine::SampleAndEmit(const std::vector<int64_t>& sample_ids, std::vector<RowLogits>* rows) {
  const int32_t V = static_cast<int32_t>(model_.config().text.vocab_size);
  // Sampling reads only each sequence's own logits and sampler state: the rows are sampled in
  // parallel, then applied in order.
  std::vector<int32_t> sampled(sample_ids.size());
  std::vector<Sequence*> sampling(sample_ids.size());
  for (size_t k = 0; k < sample_ids.size(); ++k) sampling[k] = &Seq(sample_ids[k]);
  auto sample_rows = [&](size_t b, size_t e, size_t) {
    for (size_t k = b; k < e; ++k) {
      RowLogits& r = (*rows)[k];
      sampled[k] =
          r.row ? sampling[k]->sampler->Sample(r.row, V)
                : sampling[k]->sampler->SampleCandidates(r.ids.data(), r.logits.data(), r.ids.size(), V);
    }
  };
  if (pool_ && sample_ids.size() > 1) {
    pool_->ParallelFor(sample_ids.size(), sample_rows);
  } else {
    sample_rows(0, sample_ids.size(), 0);
  }
  const double now = Now();
  for (size_t k = 0; k < sample_ids.size(); ++k) {
    Sequence& s = *sampling[k];
    if (s.comp.cached_prompt_tokens == 0) s.comp.cached_prompt_tokens = sched_->CachedPrefixTokens(s.id);
    switch (EmitToken(s, sampled[k], now)) {
      case TokenOutcome::kContinue:
        sched_->Append(s.id, static_cast<uint64_t>(sampled[k]));
        break;
      case TokenOutcome::kStop:
        Finish(s, FinishReason::kStop);
        seqs_.erase(sample_ids[k]);
        break;
      case TokenOutcome::kLength:
        Finish(s, FinishReason::kLength);
        seqs_.erase(sample_ids[k]);
        break;
    }
  }
}

std::vector<std::unique_ptr<Sequence>> Engine::TakeIncoming(bool* stop) {
  std::vector<std::unique_ptr<Sequence>> fresh;
  std::unique_lock<std::mutex> lock(mu_);
  if (incoming_.empty() && seqs_.empty()) {
    // Idle: give freed memory (KV blocks, activations, the kernels' scratch) back to the OS, then
    // wait.
    lock.unlock();
    runner_->ReleaseScratch();
    malloc_trim(0);
    lock.lock();
  }
  cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !seqs_.empty(); });
  *stop = stop_;
  if (stop_) return fresh;
  while (!incoming_.empty()) {
    fresh.push_back(std::move(incoming_.front()));
    incoming_.pop_front();
  }
  return fresh;
}

void Engine::ExpireSequences() {
  const double now = Now();
  for (auto it = seqs_.begin(); it != seqs_.end();) {
    Sequence& s = *it->second;
    if (s.handle->cancelled()) {
      Finish(s, FinishReason::kCancelled);
      it = seqs_.erase(it);
    } else if (s.deadline > 0 && now > s.deadline) {
      Finish(s, FinishReason::kCancelled, "deadline exceeded");
      it = seqs_.erase(it);
    } else {
      ++it;
    }
  }
}

void Engine::PublishStats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.running = static_cast<int>(sched_->num_running());
  stats_.waiting = static_cast<int>(sched_->num_waiting() + incoming_.size());
  stats_.kv_blocks_used = blocks_->used_blocks();
  stats_.kv_blocks_cached = blocks_->cached_blocks();
  stats_.kv_bytes_allocated = blocks_->allocated_bytes();
  stats_.kv_bytes_peak = std::max(stats_.kv_bytes_peak, stats_.kv_bytes_allocated);
  stats_.prefix_lookups = blocks_->lookups();
  stats_.prefix_hits = blocks_->hits();
  stats_.image_cache_hits = runner_->image_cache().hits();
  stats_.image_cache_misses = runner_->image_cache().misses();
}

// Nothing could be scheduled while sequences remain (all waiting for memory that cannot free
// up): fail the one the scheduler could not place rather than spin. Every admitted sequence is
// known to the scheduler, so its victim is one of seqs_; should it ever not be, the oldest
// admitted sequence (the lowest id) is failed.
void Engine::FailStalled() {
  auto it = seqs_.find(sched_->StalledVictim());
  if (it == seqs_.end()) it = seqs_.begin();
  const bool oom = blocks_->alloc_failures() != kv_alloc_failures_seen_;
  Finish(*it->second, FinishReason::kError,
         oom ? OutOfMemoryError("allocating KV cache blocks").message()
             : std::string("could not be scheduled (KV cache exhausted)"));
  seqs_.erase(it);
}

void Engine::Loop() {
  for (;;) {
    bool stop = false;
    std::vector<std::unique_ptr<Sequence>> fresh = TakeIncoming(&stop);
    if (stop) break;
    // Last line of defence: an exception escaping the loop thread would end the process.
    try {
      if (!fresh.empty()) AdmitNew(&fresh);
    } catch (const std::exception& e) {
      for (auto& s : fresh) {
        if (s) Finish(*s, FinishReason::kError, std::string("internal error: ") + e.what());
      }
    }
    ExpireSequences();
    bool progressed = true;
    try {
      progressed = RunStep();
    } catch (const std::exception& e) {
      FailAll(std::string("internal error: ") + e.what());
    }
    PublishStats();
    if (!progressed && !seqs_.empty()) FailStalled();
    kv_alloc_failures_seen_ = blocks_->alloc_failures();
  }
  // Shutdown: everything still pending is cancelled.
  std::vector<std::unique_ptr<Sequence>> rest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!incoming_.empty()) {
      rest.push_back(std::move(incoming_.front()));
      incoming_.pop_front();
    }
  }
  for (auto& s : rest) Finish(*s, FinishReason::kCancelled, "engine shut down");
  for (auto& [id, s] : seqs_) Finish(*s, FinishReason::kCancelled, "engine shut down");
  seqs_.clear();
}

}  // namespace mineru
