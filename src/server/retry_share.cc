#include "server/retry_share.h"

#include <xxhash.h>

#include <chrono>

namespace mineru::server {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool Failed(const Completion& c) {
  return c.finish_reason == FinishReason::kCancelled || c.finish_reason == FinishReason::kError;
}

}  // namespace

bool DeterministicRequest(const EngineRequest& r, bool has_seed) {
  return has_seed || r.sampling.temperature == 0.0f || r.sampling.top_k == 1;
}

RetryShare::Key RetryShare::KeyOf(const std::string& endpoint, const std::string& body) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, endpoint.data(), endpoint.size() + 1);  // with the NUL: a separator
  XXH3_128bits_update(st, body.data(), body.size());
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return {h.low64, h.high64};
}

void RetryShare::SweepLocked(double now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    // A run nobody waits on that ended unobserved (its caller went away) counts as finished now.
    if (e.waiters == 0 && e.handle && e.finished_at == 0 && e.handle->WaitFor(0, nullptr))
      e.finished_at = now;
    if (e.waiters == 0 && e.finished_at > 0 && now - e.finished_at > grace_s_)
      it = entries_.erase(it);
    else
      ++it;
  }
}

StatusOr<std::shared_ptr<RequestHandle>> RetryShare::Acquire(const Key& key, const Submit& submit,
                                                             bool* shared) {
  *shared = false;
  if (!enabled()) return submit();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    SweepLocked(Now());
    auto it = entries_.find(key);
    if (it == entries_.end()) break;
    Entry& e = it->second;
    if (!e.handle) {  // the first one is still submitting (maybe waiting for capacity)
      cv_.wait(lock);
      continue;
    }
    Completion c;
    if (e.handle->cancelled() || (e.handle->WaitFor(0, &c) && Failed(c))) {
      entries_.erase(it);
      break;
    }
    ++e.waiters;
    *shared = true;
    return e.handle;
  }
  if (entries_.size() >= max_entries_) {  // not recorded: behaves as without sharing
    lock.unlock();
    return submit();
  }
  entries_[key] = Entry{nullptr, 1, 0};
  lock.unlock();
  StatusOr<std::shared_ptr<RequestHandle>> h = InternalError("not submitted");
  try {
    h = submit();
  } catch (...) {  // never leave the pending entry behind: identical requests wait on it
    lock.lock();
    entries_.erase(key);
    cv_.notify_all();
    throw;
  }
  lock.lock();
  if (h.ok())
    entries_[key].handle = *h;
  else
    entries_.erase(key);
  cv_.notify_all();
  return h;
}

int RetryShare::Release(const Key& key, const std::shared_ptr<RequestHandle>& h) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.handle != h) return 0;
  Entry& e = it->second;
  const int left = --e.waiters;
  Completion c;
  if (h->WaitFor(0, &c)) {
    if (Failed(c))
      entries_.erase(it);
    else if (e.finished_at == 0)
      e.finished_at = Now();
  }
  return left;
}

void RetryShare::OrphanWait(const Key& key, const std::shared_ptr<RequestHandle>& h) {
  const double deadline = Now() + grace_s_;
  for (;;) {
    Completion c;
    const bool done = h->WaitFor(0.2, &c);
    std::unique_lock<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.handle != h) {  // not shared (or forgotten): stop it
      lock.unlock();
      if (!done) h->Cancel();
      return;
    }
    if (done) {
      if (Failed(c))
        entries_.erase(it);
      else if (it->second.finished_at == 0)
        it->second.finished_at = Now();
      return;
    }
    if (it->second.waiters > 0) return;  // a retry picked it up: it owns the run now
    if (Now() >= deadline) {
      entries_.erase(it);
      lock.unlock();
      h->Cancel();
      return;
    }
  }
}

size_t RetryShare::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace mineru::server
