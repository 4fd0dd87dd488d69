#include "base/thread_pool.h"

#include <algorithm>

#include <chrono>
#include <cstring>

namespace mineru {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() or kSpinMicros pass; true if done() became true.
template <class Done>
bool SpinUntil(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
  for (int i = 0;; ++i) {
    if (done()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return false;
    CpuRelax();
  }
}

}  // namespace

ThreadPool::ThreadPool(size_t num_threads) {
  if (num_threads < 1) num_threads = 1;
  for (size_t i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    stopping_.store(true, std::memory_order_release);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

size_t ThreadPool::DefaultThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

void ThreadPool::RunChunk(const RangeFn& fn, size_t b, size_t e, size_t worker) {
  try {
    fn(b, e, worker);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = std::current_exception();
    pending_ -= num_chunks_ - next_chunk_;  // the chunks nobody will start now (this one still counts)
    pending_mirror_.store(pending_, std::memory_order_release);
    next_chunk_ = num_chunks_;
  }
}

void ThreadPool::ParallelFor(size_t n, const RangeFn& fn, size_t min_chunk) {
  if (n == 0) return;
  min_chunk = std::max<size_t>(min_chunk, 1);
  size_t threads = num_threads();
  if (threads == 1 || n <= min_chunk) {
    fn(0, n, 0);
    return;
  }
  size_t chunks = std::min(threads, (n + min_chunk - 1) / min_chunk);
  size_t chunk = (n + chunks - 1) / chunks;
  chunks = (n + chunk - 1) / chunk;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk;
    num_chunks_ = chunks;
    next_chunk_ = 0;
    pending_ = chunks;
    pending_mirror_.store(chunks, std::memory_order_release);
    error_ = nullptr;
    ++generation_;
    published_.store(generation_, std::memory_order_release);
  }
  cv_start_.notify_all();
  // The caller works too.
  for (;;) {
    size_t c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_chunk_ >= num_chunks_) break;
      c = next_chunk_++;
    }
    size_t b = c * chunk, e = std::min(n, b + chunk);
    RunChunk(fn, b, e, 0);
    std::lock_guard<std::mutex> lock(mu_);
    pending_mirror_.store(--pending_, std::memory_order_release);
    if (pending_ == 0) cv_done_.notify_all();
  }
  SpinUntil([this] { return pending_mirror_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mu_);
  cv_done_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    lock.unlock();
    std::rethrow_exception(e);
  }
}

void ThreadPool::WorkerLoop(size_t index) {
  size_t seen = 0;
  for (;;) {
    SpinUntil([&] {
      return published_.load(std::memory_order_acquire) != seen || stopping_.load(std::memory_order_acquire);
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_start_.wait(lock, [&] { return stop_ || (generation_ != seen && next_chunk_ < num_chunks_); });
    if (stop_) return;
    seen = generation_;
    while (next_chunk_ < num_chunks_) {
      size_t c = next_chunk_++;
      const RangeFn* fn = fn_;
      size_t n = n_, chunk = chunk_;
      lock.unlock();
      size_t b = c * chunk, e = std::min(n, b + chunk);
      RunChunk(*fn, b, e, index);
      lock.lock();
      pending_mirror_.store(--pending_, std::memory_order_release);
      if (pending_ == 0) cv_done_.notify_all();
    }
  }
}

void ParallelCopy(void* dst, const void* src, size_t n, ThreadPool* pool, size_t min_piece) {
  min_piece = std::max<size_t>(1, min_piece);
  if (n == 0) return;
  if (pool == nullptr || pool->num_threads() < 2 || n < 2 * min_piece) {
    std::memcpy(dst, src, n);
    return;
  }
  const size_t pieces = (n + min_piece - 1) / min_piece;
  pool->ParallelFor(pieces, [&](size_t b, size_t e, size_t) {
    const size_t from = b * min_piece, to = std::min(n, e * min_piece);
    std::memcpy(static_cast<char*>(dst) + from, static_cast<const char*>(src) + from, to - from);
  });
}

}  // namespace mineru
