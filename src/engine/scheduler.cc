#include "engine/scheduler.h"

#include <utility>

#include <xxhash.h>

#include <algorithm>

namespace mineru {

Scheduler::Scheduler(const SchedulerConfig& config, BlockPool* pool) : c_(config), pool_(pool) {}

BlockHash Scheduler::HashBlock(const BlockHash& parent, const uint64_t* keys) const {
  const int bs = pool_->block_size();
  std::vector<uint64_t> buf(static_cast<size_t>(bs) + 2);
  buf[0] = parent.lo;
  buf[1] = parent.hi;
  std::copy(keys, keys + bs, buf.begin() + 2);
  XXH128_hash_t h = XXH3_128bits(buf.data(), buf.size() * sizeof(uint64_t));
  return {h.low64, h.high64};
}

void Scheduler::Add(int64_t id, const std::vector<uint64_t>& keys, int priority) {
  Seq s;
  s.keys = keys;
  s.priority = priority;
  s.arrival = next_arrival_++;
  seqs_[id] = std::move(s);
  waiting_.push_back(id);
}

void Scheduler::Append(int64_t id, uint64_t key) { seqs_.at(id).keys.push_back(key); }

void Scheduler::ReleaseBlocks(Seq& s) {
  for (int32_t b : s.blocks) pool_->Release(b);
  s.blocks.clear();
  s.hashes.clear();
  s.num_computed = 0;
}

void Scheduler::Remove(int64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  ReleaseBlocks(it->second);
  running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
  seqs_.erase(it);
}

bool Scheduler::EnsureBlocks(Seq& s, int64_t tokens) {
  const int64_t bs = pool_->block_size();
  const size_t need = static_cast<size_t>((tokens + bs - 1) / bs);
  while (s.blocks.size() < need) {
    auto b = pool_->Allocate();
    if (!b) return false;
    s.blocks.push_back(*b);
  }
  return true;
}

void Scheduler::Preempt(int64_t id) {
  Seq& s = seqs_.at(id);
  ReleaseBlocks(s);
  s.running = false;
  s.cached_tokens = 0;
  running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
  waiting_.push_front(id);
}

std::deque<int64_t>::const_iterator Scheduler::NextWaiting() const {
  auto best = waiting_.begin();
  for (auto it = std::next(best); it != waiting_.end(); ++it) {
    const Seq& a = seqs_.at(*it);
    const Seq& b = seqs_.at(*best);
    if (a.rank() < b.rank() || (a.rank() == b.rank() && a.arrival < b.arrival)) best = it;
  }
  return best;
}

std::deque<int64_t>::iterator Scheduler::NextWaiting() {
  const auto best = std::as_const(*this).NextWaiting();
  return waiting_.begin() + (best - waiting_.cbegin());
}

int64_t Scheduler::StalledVictim() const {
  if (!waiting_.empty()) return *NextWaiting();
  return running_.empty() ? -1 : running_.back();
}

void Scheduler::Admit(const std::deque<int64_t>::iterator& it) {
  const int64_t id = *it;
  waiting_.erase(it);
  Seq& s = seqs_.at(id);
  for (int64_t w : waiting_) {
    Seq& o = seqs_.at(w);
    if (o.arrival < s.arrival && o.overtaken < kMaxOvertakes) ++o.overtaken;
  }
  s.running = true;
  running_.push_back(id);
}

// 1. Running sequences, best first: each gets what it still needs within the budget, the worst
// running ones preempted for its blocks when the pool is full.
void Scheduler::ScheduleRunning(StepPlan* plan, int64_t* budget) {
  for (size_t i = 0; i < running_.size() && *budget > 0;) {
    const int64_t id = running_[i];
    Seq& s = seqs_.at(id);
    const int64_t need = static_cast<int64_t>(s.keys.size()) - s.num_computed;
    const int64_t n = std::min(need, *budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    bool ok = EnsureBlocks(s, s.num_computed + n);
    while (!ok) {
      // Preempt the worst running sequence that is not already planned (possibly this one).
      const int64_t victim = running_.back();
      plan->preempted.push_back(victim);
      Preempt(victim);
      if (victim == id) break;
      ok = EnsureBlocks(s, s.num_computed + n);
    }
    if (!ok) break;  // this sequence was preempted: everything after it ranks no better
    plan->seqs.push_back({id, s.num_computed, n});
    *budget -= n;
    ++i;
  }
}

// Prefix cache: a new sequence's leading full blocks that someone already computed, leaving at
// least one token to compute.
void Scheduler::TakeCachedPrefix(Seq& s) {
  const int64_t bs = pool_->block_size();
  const int64_t total = static_cast<int64_t>(s.keys.size());
  BlockHash h;
  const int64_t max_blocks = (total - 1) / bs;
  for (int64_t b = 0; b < max_blocks; ++b) {
    h = HashBlock(h, s.keys.data() + b * bs);
    auto hit = pool_->Lookup(h);
    if (!hit) break;
    s.blocks.push_back(*hit);
    s.hashes.push_back(h);
  }
  s.num_computed = static_cast<int64_t>(s.blocks.size()) * bs;
  s.cached_tokens = s.num_computed;
}

// 2. Waiting sequences by rank then arrival, unless this step had to preempt.
void Scheduler::ScheduleWaiting(StepPlan* plan, int64_t* budget) {
  const int64_t bs = pool_->block_size();
  while (plan->preempted.empty() && *budget > 0 && !waiting_.empty() &&
         static_cast<int>(running_.size()) < c_.max_seqs) {
    const auto next = NextWaiting();
    const int64_t id = *next;
    Seq& s = seqs_.at(id);
    const int64_t total = static_cast<int64_t>(s.keys.size());
    // A sequence longer than the whole pool can never run.
    if ((total + bs - 1) / bs > pool_->num_blocks()) {
      waiting_.erase(next);
      plan->rejected.push_back(id);
      continue;
    }
    if (c_.prefix_caching && s.blocks.empty()) TakeCachedPrefix(s);
    const int64_t n = std::min(total - s.num_computed, *budget);
    if (!EnsureBlocks(s, s.num_computed + n)) {
      ReleaseBlocks(s);  // give back the cache hits too; retry next step
      s.cached_tokens = 0;
      if (running_.empty() && plan->seqs.empty()) {
        // Nothing runs and it still does not fit: the pool is held by cached blocks only, which
        // Allocate() evicts — so this cannot happen unless the sequence is too large.
        waiting_.erase(next);
        plan->rejected.push_back(id);
        continue;
      }
      break;
    }
    Admit(next);
    plan->seqs.push_back({id, s.num_computed, n});
    *budget -= n;
  }
}

StepPlan Scheduler::Schedule() {
  StepPlan plan;
  int64_t budget = c_.max_batch_tokens;
  // Best rank first, admission order among equals: the budget goes to the best, the victim of a
  // preemption is the back (worst rank, newest).
  std::stable_sort(running_.begin(), running_.end(),
                   [&](int64_t a, int64_t b) { return seqs_.at(a).rank() < seqs_.at(b).rank(); });
  ScheduleRunning(&plan, &budget);
  ScheduleWaiting(&plan, &budget);
  return plan;
}

void Scheduler::Commit(const StepPlan& plan) {
  const int64_t bs = pool_->block_size();
  for (const ScheduledSeq& p : plan.seqs) {
    auto it = seqs_.find(p.id);
    if (it == seqs_.end()) continue;
    Seq& s = it->second;
    s.num_computed = p.start + p.n;
    if (!c_.prefix_caching) continue;
    // Register every block that is now full, chaining hashes from the first block.
    while (static_cast<int64_t>(s.hashes.size()) < s.num_computed / bs) {
      const size_t b = s.hashes.size();
      const BlockHash parent = b == 0 ? BlockHash{} : s.hashes[b - 1];
      const BlockHash h = HashBlock(parent, s.keys.data() + b * bs);
      pool_->Register(s.blocks[b], h);
      s.hashes.push_back(h);
    }
  }
}

}  // namespace mineru
