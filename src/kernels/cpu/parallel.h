// kernels/cpu/parallel.h — how the SIMD kernels use the caller's ThreadPool: one call per
// worker slot, each pulling tasks from a shared atomic counter (dynamic balance, scratch
// allocated once per slot). Not a public header.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "base/thread_pool.h"

namespace mineru {
namespace kernels {
namespace cpu {

inline size_t NumWorkers(ThreadPool* pool) { return pool ? pool->num_threads() : 1; }

// The pool, or null when the op is too small to repay waking the workers: a ParallelFor
// round trip of base/thread_pool costs ~12 us here (kernels_bench BM_PoolRoundTrip), so an
// op must take > ~20 us on one core. Estimated from its multiply-adds (~100 per ns on one
// core) and the bytes it streams from memory (~25 per ns on one core).
inline ThreadPool* PoolFor(ThreadPool* pool, size_t macs, size_t stream_bytes = 0) {
  const size_t ns = std::max(macs / 100, stream_bytes / 25);
  return ns < 20000 ? nullptr : pool;
}

// Calls slot_fn(slot) once for each slot in [0, min(workers, max_slots)), concurrently on the
// pool. Each slot typically loops `while ((t = next.fetch_add(1)) < num_tasks)`.
template <class SlotFn>
void RunSlots(ThreadPool* pool, size_t max_slots, const SlotFn& slot_fn) {
  const size_t slots = std::max<size_t>(1, std::min(NumWorkers(pool), max_slots));
  if (slots == 1) {
    slot_fn(size_t{0});
    return;
  }
  pool->ParallelFor(
      slots,
      [&](size_t begin, size_t end, size_t) {
        for (size_t s = begin; s < end; ++s) slot_fn(s);
      },
      1);
}

// Runs task_fn(task, slot) for every task in [0, num_tasks), dynamically balanced.
// setup_fn(slot) runs once per slot before its first task (e.g. to size scratch).
template <class TaskFn>
void RunTasks(ThreadPool* pool, size_t num_tasks, const TaskFn& task_fn) {
  std::atomic<size_t> next{0};
  RunSlots(pool, num_tasks, [&](size_t slot) {
    for (size_t t = next.fetch_add(1, std::memory_order_relaxed); t < num_tasks;
         t = next.fetch_add(1, std::memory_order_relaxed)) {
      task_fn(t, slot);
    }
  });
}

// Splits [0, n) into chunks of at least min_chunk items, about `per_worker` chunks per worker.
inline size_t ChunkSize(size_t n, ThreadPool* pool, size_t min_chunk, size_t per_worker = 4) {
  const size_t target = NumWorkers(pool) * per_worker;
  return std::max(min_chunk, (n + target - 1) / target);
}

}  // namespace cpu
}  // namespace kernels
}  // namespace mineru
