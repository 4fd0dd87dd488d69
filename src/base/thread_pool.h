// base/thread_pool.h — a fixed pool of workers; the only place the engine creates threads.
//
// ParallelFor(n, fn) calls fn(begin, end, worker) over disjoint ranges covering [0, n) and
// returns when all are done. The calling thread takes part as worker 0. Not reentrant: a
// task must not call ParallelFor on the same pool. An exception thrown by fn (std::bad_alloc in
// a kernel's scratch buffer) does not end the process: the remaining chunks are skipped, and once
// every started chunk is done ParallelFor rethrows the first one to its caller.
//
// Waiting: a worker that finished a job, and a caller waiting for the last chunk, first spin for
// up to kSpinMicros on an atomic before sleeping on a condition variable. A decode step issues
// hundreds of short ParallelFor calls; waking a sleeping worker costs ~10 us each on this VM,
// a sixth of a single-stream decode step. An idle pool sleeps after kSpinMicros.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mineru {

class ThreadPool {
 public:
  using RangeFn = std::function<void(size_t begin, size_t end, size_t worker)>;

  explicit ThreadPool(size_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t num_threads() const { return workers_.size() + 1; }

  // Splits [0, n) into about num_threads() chunks of at least min_chunk items.
  void ParallelFor(size_t n, const RangeFn& fn, size_t min_chunk = 1);

  // Number of hardware threads (at least 1).
  static size_t DefaultThreads();

 private:
  void WorkerLoop(size_t index);
  // Runs one chunk; an exception is kept in error_ (the first one wins) and the rest skipped.
  void RunChunk(const RangeFn& fn, size_t b, size_t e, size_t worker);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  const RangeFn* fn_ = nullptr;
  size_t n_ = 0;
  size_t chunk_ = 0;
  size_t num_chunks_ = 0;
  size_t next_chunk_ = 0;
  size_t pending_ = 0;
  size_t generation_ = 0;
  std::exception_ptr error_;  // guarded by mu_
  bool stop_ = false;
  // Mirrors of generation_ and pending_ (written under mu_) for the lock-free spin phase.
  std::atomic<size_t> published_{0};
  std::atomic<size_t> pending_mirror_{0};
  std::atomic<bool> stopping_{false};

 public:
  static constexpr int kSpinMicros = 50;
};

// memcpy(dst, src, n) split over the pool's workers in pieces of at least min_piece bytes (one
// memcpy on the calling thread without a pool, or for fewer than two pieces' worth): one thread
// cannot fill a server's memory bandwidth (staging a page's 25.8 MB of pixels for a GPU). The
// ranges must not overlap. Not reentrant, as ParallelFor.
void ParallelCopy(void* dst, const void* src, size_t n, ThreadPool* pool,
                  size_t min_piece = size_t{256} << 10);

}  // namespace mineru
