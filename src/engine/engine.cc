#include "engine/engine.h"

#include <malloc.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>

#include "model/mrope.h"

namespace mineru {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Content key of an image pad token: never equal to a text token id (top bit set).
uint64_t ImageTokenKey(const BlockHash& image, int64_t index) {
  const uint64_t buf[3] = {image.lo, image.hi, static_cast<uint64_t>(index)};
  return XXH3_64bits(buf, sizeof(buf)) | (1ull << 63);
}

}  // namespace

struct Engine::Seq {
  int64_t id = 0;
  std::shared_ptr<RequestHandle> handle;
  std::vector<int32_t> prompt;
  MropePositions pos;
  std::vector<int64_t> image_row;  // per prompt token: row of `embeds`, or -1
  std::vector<ImageInput> inputs;
  std::vector<BlockHash> image_hashes;
  std::vector<float> embeds;  // image embeddings of this request, in prompt order
  std::vector<uint64_t> keys;
  std::vector<int32_t> generated;
  std::unique_ptr<SequenceSampler> sampler;
  std::unique_ptr<IncrementalDecoder> detok;
  int max_new = 0;
  int priority = 0;
  bool ignore_eos = false;
  std::vector<int32_t> stops;
  double t_submit = 0, t_first = 0, deadline = 0;
  Completion comp;
};

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
    : model_(model), tok_(tok), cfg_(config), image_cache_(config.image_cache_mb << 20) {}

StatusOr<std::unique_ptr<Engine>> Engine::Create(const Qwen2VLModel& model, const Tokenizer* tokenizer,
                                                 const EngineConfig& config) {
  if (config.block_size <= 0 || config.max_batch_tokens <= 0 || config.max_seqs <= 0) {
    return InvalidArgumentError("engine: block size, batch tokens and sequences must be positive");
  }
  std::unique_ptr<Engine> e(new Engine(model, tokenizer, config));
  const TextConfig& t = model.config().text;
  const int kv_dim = t.num_kv_heads * t.head_dim;
  const size_t per_block = static_cast<size_t>(t.num_layers) * 2 * config.block_size * kv_dim * sizeof(float);
  const int num_blocks = config.kv_blocks > 0
                             ? config.kv_blocks
                             : static_cast<int>(std::max<size_t>(1, (config.kv_cache_mb << 20) / per_block));
  e->blocks_ = std::make_unique<BlockPool>(num_blocks, config.block_size, t.num_layers, kv_dim);
  SchedulerConfig sc;
  sc.max_batch_tokens = config.max_batch_tokens;
  sc.max_seqs = config.max_seqs;
  sc.prefix_caching = config.prefix_caching;
  e->sched_ = std::make_unique<Scheduler>(sc, e->blocks_.get());
  e->pool_ = std::make_unique<ThreadPool>(config.threads > 0 ? config.threads : ThreadPool::DefaultThreads());
  e->eos_ids_ = model.config().eos_token_ids;
  if (tokenizer) {
    for (const char* s : {"<|im_end|>", "<|endoftext|>"}) {
      if (auto id = tokenizer->TokenToId(s)) e->eos_ids_.push_back(*id);
    }
  }
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

Status Engine::Health() {
  if (!degraded_) {
    Status w = model_.weights().CheckFiles();
    if (!w.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!degraded_) {
        degraded_reason_ = w.message();
        degraded_ = true;
        std::fprintf(stderr, "error: %s (until then every request fails)\n", degraded_reason_.c_str());
      }
    }
  }
  if (!degraded_) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  return Status(StatusCode::kUnavailable, degraded_reason_);
}

StatusOr<std::shared_ptr<RequestHandle>> Engine::Submit(EngineRequest req) {
  MINERU_RETURN_IF_ERROR(Health());
  // Tokens, preprocessed images and positions are allocated in proportion to what the caller sent.
  try {
    return Prepare(std::move(req));
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("preparing the request (tokenizing, image preprocessing)");
  }
}

StatusOr<std::shared_ptr<RequestHandle>> Engine::Prepare(EngineRequest req) {
  const double t0 = Now();
  const ModelConfig& mc = model_.config();
  if (req.max_new_tokens <= 0 || req.max_new_tokens > cfg_.max_new_tokens) {
    return InvalidArgumentError("max_new_tokens must be between 1 and " +
                                std::to_string(cfg_.max_new_tokens));
  }
  auto s = std::make_unique<Seq>();
  // Prompt ids and preprocessed images.
  if (!req.messages.empty()) {
    if (!tok_) return InvalidArgumentError("this model has no tokenizer: send token ids");
    std::vector<const RgbImage*> ptrs;
    for (const auto& im : req.images) ptrs.push_back(&im);
    MINERU_ASSIGN_OR_RETURN(PreparedPrompt p, PreparePrompt(model_, *tok_, req.messages, ptrs));
    s->prompt = std::move(p.ids);
    s->inputs = std::move(p.images);
  } else {
    if (req.prompt_ids.empty()) return InvalidArgumentError("empty prompt");
    std::vector<ImageGrid> grids;
    for (const auto& im : req.images) {
      MINERU_ASSIGN_OR_RETURN(ImageInput in, PreprocessForModel(model_, im));
      grids.push_back(in.grid);
      s->inputs.push_back(std::move(in));
    }
    MINERU_ASSIGN_OR_RETURN(s->prompt, ExpandImageTokens(model_, req.prompt_ids, grids));
  }
  const int64_t n = static_cast<int64_t>(s->prompt.size());
  if (n > cfg_.max_prompt_tokens) {
    return ResourceExhaustedError("prompt of " + std::to_string(n) + " tokens exceeds the limit of " +
                                  std::to_string(cfg_.max_prompt_tokens));
  }
  const int64_t capacity = static_cast<int64_t>(blocks_->num_blocks()) * cfg_.block_size;
  if (n + req.max_new_tokens > capacity) {
    return ResourceExhaustedError("prompt + max_new_tokens (" + std::to_string(n + req.max_new_tokens) +
                                  ") exceeds the KV cache capacity of " + std::to_string(capacity) +
                                  " tokens");
  }
  for (int32_t id : s->prompt) {
    if (id < 0 || id >= mc.text.vocab_size)
      return InvalidArgumentError("token id " + std::to_string(id) + " out of range");
  }
  std::vector<ImageGrid> grids;
  for (const auto& in : s->inputs) grids.push_back(in.grid);
  MINERU_ASSIGN_OR_RETURN(
      s->pos, ComputeMropePositions(s->prompt, grids, mc.vision.spatial_merge_size, mc.image_token_id));
  for (const auto& im : req.images) s->image_hashes.push_back(HashImage(im, model_.image_config()));

  // Content keys and image rows.
  s->keys.resize(static_cast<size_t>(n));
  s->image_row.assign(static_cast<size_t>(n), -1);
  int64_t row = 0;
  size_t image = 0;
  int64_t in_image = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (s->prompt[i] == mc.image_token_id && image < s->inputs.size()) {
      s->keys[i] = ImageTokenKey(s->image_hashes[image], in_image);
      s->image_row[i] = row++;
      if (++in_image == model_.ImageTokens(s->inputs[image].grid)) {
        ++image;
        in_image = 0;
      }
    } else {
      s->keys[i] = static_cast<uint64_t>(s->prompt[i]);
    }
  }
  s->sampler = std::make_unique<SequenceSampler>(req.sampling, s->prompt);
  if (tok_) s->detok = std::make_unique<IncrementalDecoder>(*tok_, req.skip_special_tokens);
  s->max_new = req.max_new_tokens;
  s->priority = req.priority;
  s->ignore_eos = req.ignore_eos;
  s->stops = eos_ids_;
  s->stops.insert(s->stops.end(), req.stop_ids.begin(), req.stop_ids.end());
  s->t_submit = t0;
  s->deadline = req.timeout_s > 0 ? t0 + req.timeout_s : 0;
  s->comp.prompt_tokens = n;
  s->handle = std::make_shared<RequestHandle>();
  s->id = next_id_++;
  s->handle->id_ = s->id;
  auto handle = s->handle;
  const double wait_s = req.admission_wait_s;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (live_ >= cfg_.max_queued && wait_s > 0) {
      capacity_cv_.wait_for(lock, std::chrono::duration<double>(wait_s),
                            [&] { return stop_ || live_ < cfg_.max_queued; });
    }
    if (stop_) return Status(StatusCode::kUnavailable, "engine is shutting down");
    if (live_ >= cfg_.max_queued) {
      return ResourceExhaustedError("too many requests in flight (" + std::to_string(live_) + ")");
    }
    ++live_;
    ++stats_.submitted;
    incoming_.push_back(std::move(s));
  }
  cv_.notify_all();
  return handle;
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Engine::Finish(Seq& s, const std::string& reason, const std::string& error) {
  const double now = Now();
  if (s.detok) {
    std::string tail = s.detok->Flush();
    s.comp.text += tail;
    if (!tail.empty()) {
      std::lock_guard<std::mutex> lock(s.handle->mu_);
      s.handle->pending_text_ += tail;
    }
  }
  s.comp.ids = s.generated;
  s.comp.finish_reason = reason;
  s.comp.error = error;
  s.comp.total_s = now - s.t_submit;
  s.comp.ttft_s = s.t_first > 0 ? s.t_first - s.t_submit : 0;
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
  {
    std::lock_guard<std::mutex> lock(s.handle->mu_);
    s.handle->completion_ = s.comp;
    s.handle->done_ = true;
  }
  s.handle->cv_.notify_all();
}

void Engine::FailAll(const std::string& error) {
  for (auto& [id, s] : seqs_) Finish(*s, "error", error);
  seqs_.clear();
}

void Engine::AdmitNew(std::vector<std::unique_ptr<Seq>>* fresh) {
  const int64_t H = model_.config().text.hidden_size;
  if (Status h = Health(); !h.ok()) {
    for (auto& s : *fresh) Finish(*s, "error", h.message());
    fresh->clear();
    return;
  }
  // Images not in the cache are encoded together in packed passes (attention stays per image).
  struct Pending {
    Seq* seq;
    size_t image;
  };
  std::vector<Pending> todo;
  std::vector<std::shared_ptr<const CachedImage>> done_images;
  std::vector<std::vector<std::shared_ptr<const CachedImage>>> per_seq(fresh->size());
  for (size_t si = 0; si < fresh->size(); ++si) {
    Seq* s = (*fresh)[si].get();
    per_seq[si].resize(s->inputs.size());
    for (size_t i = 0; i < s->inputs.size(); ++i) {
      auto hit = image_cache_.Get(s->image_hashes[i]);
      if (hit) {
        per_seq[si][i] = hit;
        s->comp.image_cache_hit = true;
      } else {
        todo.push_back({s, i});
      }
    }
  }
  const double tv = Now();
  constexpr int64_t kMaxPatchesPerPass = 65536;
  std::unordered_map<const Seq*, size_t> seq_index;
  for (size_t si = 0; si < fresh->size(); ++si) seq_index[(*fresh)[si].get()] = si;
  std::vector<std::string> errors(fresh->size());  // why a sequence's images are missing
  for (size_t start = 0; start < todo.size();) {
    size_t end = start;
    int64_t patches = 0;
    while (end < todo.size() &&
           (end == start ||
            patches + todo[end].seq->inputs[todo[end].image].grid.num_patches() <= kMaxPatchesPerPass)) {
      patches += todo[end].seq->inputs[todo[end].image].grid.num_patches();
      ++end;
    }
    // The activations grow with the images' patches: out of memory fails this pass's requests only.
    std::string error;
    try {
      std::vector<ImageGrid> grids;
      std::vector<float> packed;
      for (size_t k = start; k < end; ++k) {
        const ImageInput& in = todo[k].seq->inputs[todo[k].image];
        grids.push_back(in.grid);
        packed.insert(packed.end(), in.pixel_values.begin(), in.pixel_values.end());
      }
      auto out = model_.vision().Encode(packed.data(), patches, grids, pool_.get());
      // Weights that changed under the pass make garbage embeddings: never cache them.
      Status h = Health();
      if (!out.ok())
        error = "vision encoding failed: " + out.status().message();
      else if (!h.ok())
        error = h.message();
      int64_t row = 0;
      for (size_t k = start; k < end && error.empty(); ++k) {
        Seq* s = todo[k].seq;
        const ImageInput& in = s->inputs[todo[k].image];
        const int64_t rows = model_.ImageTokens(in.grid);
        auto c = std::make_shared<CachedImage>();
        c->grid = in.grid;
        c->embeddings.assign(out->begin() + row * H, out->begin() + (row + rows) * H);
        image_cache_.Put(s->image_hashes[todo[k].image], c);
        per_seq[seq_index[s]][todo[k].image] = c;
        row += rows;
      }
    } catch (const std::bad_alloc&) {
      error = OutOfMemoryError("encoding " + std::to_string(patches) + " image patches").message();
    }
    if (!error.empty()) {
      for (size_t k = start; k < end; ++k) errors[seq_index[todo[k].seq]] = error;
    }
    start = end;
  }
  const double vision_s = Now() - tv;
  for (size_t si = 0; si < fresh->size(); ++si) {
    std::unique_ptr<Seq>& s = (*fresh)[si];
    bool ok = true;
    try {
      for (const auto& c : per_seq[si]) {
        if (!c)
          ok = false;
        else
          s->embeds.insert(s->embeds.end(), c->embeddings.begin(), c->embeddings.end());
      }
    } catch (const std::bad_alloc&) {
      ok = false;
      errors[si] = OutOfMemoryError("holding the image embeddings").message();
    }
    s->inputs.clear();  // pixel values are no longer needed
    s->comp.vision_s = vision_s;
    s->comp.queue_s = Now() - s->t_submit;
    const int64_t id = s->id;
    if (!ok) {
      Finish(*s, "error", errors[si].empty() ? "vision encoding failed" : errors[si]);
      s.reset();
      continue;
    }
    sched_->Add(id, s->keys, s->priority);
    seqs_[id] = std::move(s);
  }
  fresh->clear();
}

// One packed decoder pass over the plan; fills logits_scratch_ for the sequences that sample now.
void Engine::Forward(const StepPlan& plan, std::vector<int64_t>* sample_ids) {
  const ModelConfig& mc = model_.config();
  const int64_t H = mc.text.hidden_size, V = mc.text.vocab_size;
  const int64_t T = plan.tokens();
  std::vector<float> embeds(static_cast<size_t>(T * H));
  std::vector<std::vector<int64_t>> pt(plan.seqs.size()), ph(plan.seqs.size()), pw(plan.seqs.size());
  std::vector<BatchSegment> segs;
  int64_t row = 0;
  for (size_t k = 0; k < plan.seqs.size(); ++k) {
    const ScheduledSeq& p = plan.seqs[k];
    Seq& s = *seqs_.at(p.id);
    const int64_t plen = static_cast<int64_t>(s.prompt.size());
    for (int64_t j = p.start; j < p.start + p.n; ++j, ++row) {
      float* dst = embeds.data() + row * H;
      if (j < plen) {
        if (s.image_row[j] >= 0) {
          std::memcpy(dst, s.embeds.data() + s.image_row[j] * H, sizeof(float) * H);
        } else {
          model_.decoder().Embed(&s.prompt[j], 1, dst);
        }
        pt[k].push_back(s.pos.t[j]);
        ph[k].push_back(s.pos.h[j]);
        pw[k].push_back(s.pos.w[j]);
      } else {
        model_.decoder().Embed(&s.generated[j - plen], 1, dst);
        const int64_t q = s.pos.next_position + (j - plen);
        pt[k].push_back(q);
        ph[k].push_back(q);
        pw[k].push_back(q);
      }
    }
    BatchSegment seg;
    seg.n = p.n;
    seg.past = p.start;
    seg.pos_t = pt[k].data();
    seg.pos_h = ph[k].data();
    seg.pos_w = pw[k].data();
    seg.block_table = sched_->BlockTable(p.id).data();
    segs.push_back(seg);
  }
  std::vector<float> hidden(static_cast<size_t>(T * H));
  model_.decoder().ForwardBatch(embeds.data(), segs, blocks_.get(), hidden.data(), pool_.get());
  sched_->Commit(plan);

  // Sequences whose known tokens are all computed now sample their next token (one batched head).
  std::vector<float> last;
  row = 0;
  for (const ScheduledSeq& p : plan.seqs) {
    row += p.n;
    if (p.start + p.n == sched_->NumTokens(p.id)) {
      sample_ids->push_back(p.id);
      last.insert(last.end(), hidden.begin() + (row - 1) * H, hidden.begin() + row * H);
    }
  }
  std::vector<float>& logits = logits_scratch_;
  // Reused across steps: [sequences, vocab] is ~10 MB at 16 sequences, and a fresh zeroed buffer
  // each step costs page faults and a memset.
  if (logits.size() < sample_ids->size() * static_cast<size_t>(V))
    logits.resize(sample_ids->size() * static_cast<size_t>(V));
  if (!sample_ids->empty()) {
    model_.decoder().Logits(last.data(), static_cast<int64_t>(sample_ids->size()), logits.data(),
                            pool_.get());
  }
}

bool Engine::RunStep() {
  const int64_t V = model_.config().text.vocab_size;
  StepPlan plan = sched_->Schedule();
  for (int64_t id : plan.rejected) {
    auto it = seqs_.find(id);
    if (it != seqs_.end()) {
      Finish(*it->second, "error", "request does not fit in the KV cache");
      seqs_.erase(it);
    }
  }
  if (plan.seqs.empty()) return false;

  const int64_t T = plan.tokens();
  // Activations are bounded by the batch budget, but memory can still run out (other requests,
  // other processes): the sequences of this step fail, the others go on.
  std::vector<int64_t> sample_ids;
  try {
    Forward(plan, &sample_ids);
  } catch (const std::bad_alloc&) {
    const std::string error =
        OutOfMemoryError("running a batch of " + std::to_string(T) + " tokens").message();
    for (const ScheduledSeq& p : plan.seqs) {
      auto it = seqs_.find(p.id);
      if (it == seqs_.end()) continue;
      Finish(*it->second, "error", error);
      seqs_.erase(it);
    }
    return true;
  }
  // Weights that changed on disk during the step (a truncation reads as zeros): nothing computed
  // from them may reach a client.
  if (Status h = Health(); !h.ok()) {
    FailAll(h.message());
    return true;
  }
  std::vector<float>& logits = logits_scratch_;
  const double now = Now();
  int64_t new_tokens = 0;
  // Sampling reads only each sequence's own logits row and sampler state: the rows are
  // sampled in parallel, then applied in order.
  std::vector<int32_t> sampled(sample_ids.size());
  std::vector<Seq*> sampling(sample_ids.size());
  for (size_t k = 0; k < sample_ids.size(); ++k) sampling[k] = seqs_.at(sample_ids[k]).get();
  auto sample_rows = [&](size_t b, size_t e, size_t) {
    for (size_t k = b; k < e; ++k)
      sampled[k] = sampling[k]->sampler->Sample(logits.data() + k * V, static_cast<int32_t>(V));
  };
  if (pool_ && sample_ids.size() > 1) {
    pool_->ParallelFor(sample_ids.size(), sample_rows);
  } else {
    sample_rows(0, sample_ids.size(), 0);
  }
  for (size_t k = 0; k < sample_ids.size(); ++k) {
    Seq& s = *sampling[k];
    if (s.comp.cached_prompt_tokens == 0) s.comp.cached_prompt_tokens = sched_->CachedPrefixTokens(s.id);
    const int32_t tok = sampled[k];
    s.sampler->Accept(tok);
    s.generated.push_back(tok);
    ++new_tokens;
    if (s.t_first == 0) s.t_first = now;
    const bool is_stop = !s.ignore_eos && std::find(s.stops.begin(), s.stops.end(), tok) != s.stops.end();
    std::string piece;
    if (s.detok && !is_stop) piece = s.detok->Push(tok);
    s.comp.text += piece;
    {
      std::lock_guard<std::mutex> lock(s.handle->mu_);
      s.handle->pending_text_ += piece;
      s.handle->pending_ids_.push_back(tok);
    }
    s.handle->cv_.notify_all();
    if (is_stop) {
      Finish(s, "stop");
      seqs_.erase(sample_ids[k]);
    } else if (static_cast<int>(s.generated.size()) >= s.max_new) {
      Finish(s, "length");
      seqs_.erase(sample_ids[k]);
    } else {
      sched_->Append(s.id, static_cast<uint64_t>(tok));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  stats_.steps++;
  stats_.generated_tokens += new_tokens;
  stats_.computed_tokens += T;
  return true;
}

void Engine::Loop() {
  bool trimmed = false;
  for (;;) {
    std::vector<std::unique_ptr<Seq>> fresh;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (incoming_.empty() && seqs_.empty() && !trimmed) {
        // Idle: give freed memory (KV blocks, activations) back to the OS.
        lock.unlock();
        malloc_trim(0);
        lock.lock();
        trimmed = true;
      }
      cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !seqs_.empty(); });
      trimmed = false;
      if (stop_) break;
      while (!incoming_.empty()) {
        fresh.push_back(std::move(incoming_.front()));
        incoming_.pop_front();
      }
    }
    // Last line of defence: an exception escaping the loop thread would end the process.
    try {
      if (!fresh.empty()) AdmitNew(&fresh);
    } catch (const std::exception& e) {
      for (auto& s : fresh) {
        if (s) Finish(*s, "error", std::string("internal error: ") + e.what());
      }
    }
    // Cancellations and deadlines.
    const double now = Now();
    for (auto it = seqs_.begin(); it != seqs_.end();) {
      Seq& s = *it->second;
      if (s.handle->cancelled()) {
        Finish(s, "cancelled");
        it = seqs_.erase(it);
      } else if (s.deadline > 0 && now > s.deadline) {
        Finish(s, "cancelled", "deadline exceeded");
        it = seqs_.erase(it);
      } else {
        ++it;
      }
    }
    bool progressed = true;
    try {
      progressed = RunStep();
    } catch (const std::exception& e) {
      FailAll(std::string("internal error: ") + e.what());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.running = static_cast<int>(sched_->num_running());
      stats_.waiting = static_cast<int>(sched_->num_waiting() + incoming_.size());
      stats_.kv_blocks_used = blocks_->used_blocks();
      stats_.kv_blocks_cached = blocks_->cached_blocks();
      stats_.kv_bytes_allocated = blocks_->allocated_bytes();
      stats_.kv_bytes_peak = std::max(stats_.kv_bytes_peak, stats_.kv_bytes_allocated);
      stats_.prefix_lookups = blocks_->lookups();
      stats_.prefix_hits = blocks_->hits();
      stats_.image_cache_hits = image_cache_.hits();
      stats_.image_cache_misses = image_cache_.misses();
    }
    if (!progressed && !seqs_.empty()) {
      // Nothing could be scheduled (all sequences waiting for memory that cannot free up): fail
      // the one the scheduler could not place rather than spin.
      auto it = seqs_.find(sched_->StalledVictim());
      if (it == seqs_.end()) it = seqs_.begin();  // known to the engine, not yet to the scheduler
      const bool oom = blocks_->alloc_failures() != kv_alloc_failures_seen_;
      Finish(*it->second, "error",
             oom ? OutOfMemoryError("allocating KV cache blocks").message()
                 : std::string("could not be scheduled (KV cache exhausted)"));
      seqs_.erase(it);
    }
    kv_alloc_failures_seen_ = blocks_->alloc_failures();
  }
  // Shutdown: everything still pending is cancelled.
  std::vector<std::unique_ptr<Seq>> rest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!incoming_.empty()) {
      rest.push_back(std::move(incoming_.front()));
      incoming_.pop_front();
    }
  }
  for (auto& s : rest) Finish(*s, "cancelled", "engine shut down");
  for (auto& [id, s] : seqs_) Finish(*s, "cancelled", "engine shut down");
  seqs_.clear();
}

}  // namespace mineru
