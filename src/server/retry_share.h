// server/retry_share.h — a client's retry costs no page.
//
// MinerU's http client (mineru-vl-utils 1.2.x, httpx-retries) resends a POST after a read timeout,
// a dropped connection or a 429/502/503/504. The resent body is byte-identical. For deterministic
// requests (greedy, top_k 1 or a fixed seed) the answer is too, so an identical request that
// arrives while the first one runs, or within `grace_s` after it finished, waits on the first
// one's handle instead of running again. Keys are a 128-bit hash of the endpoint and the raw body.
//
// Ownership of the shared run: every caller that got a handle from Acquire() calls Release() once
// when it stops waiting. A caller whose client went away and who was the last one waiting keeps
// the run alive for up to grace_s (OrphanWait) so a retry can still pick it up; then it cancels.
// A run that ended cancelled or with an error is never shared.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "engine/engine.h"

namespace mineru::server {

class RetryShare {
 public:
  struct Key {
    uint64_t lo = 0, hi = 0;
    bool operator==(const Key& o) const { return lo == o.lo && hi == o.hi; }
  };
  using Submit = std::function<StatusOr<std::shared_ptr<RequestHandle>>()>;

  // grace_s <= 0 turns sharing off (Acquire always submits).
  explicit RetryShare(double grace_s, size_t max_entries = 4096)
      : grace_s_(grace_s), max_entries_(max_entries) {}
  bool enabled() const { return grace_s_ > 0; }
  double grace_s() const { return grace_s_; }

  static Key KeyOf(const std::string& endpoint, const std::string& body);

  // The handle of a running (or finished within grace_s, successfully) request with this key, with
  // *shared = true; else runs `submit` and records its handle under the key. `submit` runs without
  // the lock held (it may wait for engine capacity); identical requests arriving meanwhile wait
  // for its outcome rather than submitting too.
  StatusOr<std::shared_ptr<RequestHandle>> Acquire(const Key& key, const Submit& submit, bool* shared);
  // The caller stops waiting on `h` (answered, or its client went away). Returns how many callers
  // still wait on it.
  int Release(const Key& key, const std::shared_ptr<RequestHandle>& h);
  // After Release() returned 0 because the client went away: waits up to grace_s for a retry to
  // pick the run up (returns then) or for it to finish; else cancels it and forgets it.
  void OrphanWait(const Key& key, const std::shared_ptr<RequestHandle>& h);

  size_t size() const;

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return static_cast<size_t>(k.lo ^ (k.hi * 0x9E3779B97F4A7C15ull));
    }
  };
  struct Entry {
    std::shared_ptr<RequestHandle> handle;  // null while the first caller is submitting
    int waiters = 0;
    double finished_at = 0;  // 0 while running
  };
  void SweepLocked(double now);

  const double grace_s_;
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a pending entry got its handle or went away; a waiter joined
  std::unordered_map<Key, Entry, KeyHash> entries_;
};

// True when identical requests give identical answers (greedy, top_k 1, or an explicit seed).
bool DeterministicRequest(const EngineRequest& r, bool has_seed);

}  // namespace mineru::server
