// engine/scheduler.h — per-step planning for continuous batching, as plain data.
//
// Each step the scheduler decides which sequences advance by how many tokens under a token budget:
// running sequences first (oldest first; a decode needs 1 token, an unfinished prompt takes a chunk),
// then waiting ones by priority (chunked prefill; a prompt's leading full blocks may come from
// the prefix cache). KV blocks are allocated as sequences grow; when the pool runs dry the running
// sequence with the worst priority (the newest among equals) is preempted (blocks released,
// recomputed later) — never a crash or a deadlock. A sequence that cannot fit even in an empty
// pool is reported as rejected.
//
// Priorities follow vLLM: a lower value goes first, 0 is the default, equal values keep arrival
// order (so with no priorities the order is exactly FIFO). Nobody starves: a waiting sequence that
// has been overtaken kMaxOvertakes times by later arrivals ages — it then ranks above every
// priority, for admission and for preemption, in arrival order among the aged.
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "engine/block_pool.h"

namespace mineru {

struct SchedulerConfig {
  int max_batch_tokens = 512;  // tokens computed per step, all sequences together
  int max_seqs = 64;           // sequences in the running set
  bool prefix_caching = true;
};

// How many later arrivals may be admitted before a waiting sequence (because of their better
// priority) until it ages and goes next. Bounds a low-priority request's extra wait to this many
// admissions (the default max_seqs: about one full batch's worth); an aged sequence also ranks
// first for keeping its KV cache, so repeated preemption cannot starve it either.
inline constexpr int kMaxOvertakes = 64;

struct ScheduledSeq {
  int64_t id = 0;
  int64_t start = 0;  // first token position computed in this step (== num_computed before)
  int64_t n = 0;      // tokens computed in this step
};

struct StepPlan {
  std::vector<ScheduledSeq> seqs;
  std::vector<int64_t> preempted;  // lost their KV this step (will be recomputed)
  std::vector<int64_t> rejected;   // can never fit the pool: the engine fails them
  int64_t tokens() const {
    int64_t t = 0;
    for (const auto& s : seqs) t += s.n;
    return t;
  }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, BlockPool* pool);

  // A new sequence whose known tokens have these content keys (text: the token id; image pads:
  // a hash of the image and the pad's index). It waits until admitted; `priority`: lower first.
  void Add(int64_t id, const std::vector<uint64_t>& keys, int priority = 0);
  // A token appended to a sequence (a sampled token), to be computed in a later step.
  void Append(int64_t id, uint64_t key);
  // Forget a sequence; its blocks go back to the pool (full ones stay in the prefix cache).
  void Remove(int64_t id);

  StepPlan Schedule();
  // After a step ran: the planned tokens' KV is in the cache.
  void Commit(const StepPlan& plan);

  const std::vector<int32_t>& BlockTable(int64_t id) const { return seqs_.at(id).blocks; }
  int64_t NumComputed(int64_t id) const { return seqs_.at(id).num_computed; }
  int64_t NumTokens(int64_t id) const { return static_cast<int64_t>(seqs_.at(id).keys.size()); }
  int64_t CachedPrefixTokens(int64_t id) const { return seqs_.at(id).cached_tokens; }
  // Times later arrivals were admitted before this waiting sequence (see kMaxOvertakes).
  int Overtaken(int64_t id) const { return seqs_.at(id).overtaken; }
  bool Running(int64_t id) const { return seqs_.at(id).running; }
  bool Contains(int64_t id) const { return seqs_.count(id) != 0; }
  // When a step could schedule nothing: the sequence to give up on so the rest can go on. The
  // waiting sequence next in line (it is what cannot be admitted); with none waiting, the running
  // sequence ranked last (the one preemption would take first). -1 when there are no sequences.
  int64_t StalledVictim() const;
  size_t num_running() const { return running_.size(); }
  size_t num_waiting() const { return waiting_.size(); }

 private:
  struct Seq {
    std::vector<uint64_t> keys;
    std::vector<int32_t> blocks;
    std::vector<BlockHash> hashes;  // of the leading full computed blocks
    int64_t num_computed = 0;
    int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache at admission
    bool running = false;
    int priority = 0;
    int64_t arrival = 0;  // Add() order
    int overtaken = 0;    // see kMaxOvertakes
    // Admission/preemption rank: aged sequences first, then by priority (arrival breaks ties).
    int64_t rank() const { return overtaken >= kMaxOvertakes ? INT64_MIN : priority; }
  };
  BlockHash HashBlock(const BlockHash& parent, const uint64_t* keys) const;
  bool EnsureBlocks(Seq& s, int64_t tokens);
  void ReleaseBlocks(Seq& s);
  void Preempt(int64_t id);
  // The waiting sequence to admit next (best rank, then earliest arrival); waiting_ is not empty.
  std::deque<int64_t>::iterator NextWaiting();
  std::deque<int64_t>::const_iterator NextWaiting() const;
  // `id` leaves the waiting queue for the running set: earlier arrivals still waiting were overtaken.
  void Admit(const std::deque<int64_t>::iterator& it);
  void ScheduleRunning(StepPlan* plan, int64_t* budget);
  void ScheduleWaiting(StepPlan* plan, int64_t* budget);
  void TakeCachedPrefix(Seq& s);

  SchedulerConfig c_;
  BlockPool* pool_;
  std::unordered_map<int64_t, Seq> seqs_;
  std::vector<int64_t> running_;  // by rank, then admission order (oldest first)
  std::deque<int64_t> waiting_;   // unordered; NextWaiting() picks
  int64_t next_arrival_ = 0;
};

}  // namespace mineru
