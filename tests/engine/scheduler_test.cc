// Scheduler and block pool, with no model: budgets, fairness, chunked prefill, preemption, prefix
// cache hits, and every block returned.

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/block_pool.h"
#include "engine/scheduler.h"

namespace mineru {
namespace {

std::vector<uint64_t> Keys(int n, uint64_t base) {
  std::vector<uint64_t> k(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) k[i] = base + static_cast<uint64_t>(i);
  return k;
}

TEST(BlockPoolTest, AllocateReleaseAndStorageFollowsUse) {
  BlockPool pool(4, 16, 2, 8);
  EXPECT_EQ(pool.free_blocks(), 4);
  EXPECT_EQ(pool.allocated_bytes(), 0u);  // nothing allocated up front
  auto a = pool.Allocate(), b = pool.Allocate();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(pool.allocated_bytes(), 2 * pool.bytes_per_block());
  static_cast<float*>(pool.Key(*a, 1))[0] = 1.0f;
  pool.Release(*a);
  EXPECT_EQ(pool.allocated_bytes(), pool.bytes_per_block());  // freed storage is returned
  EXPECT_EQ(pool.used_blocks(), 1);
  pool.Release(*b);
  EXPECT_EQ(pool.used_blocks(), 0);
  EXPECT_EQ(pool.allocated_bytes(), 0u);
}

TEST(BlockPoolTest, PrefixCacheLruEviction) {
  BlockPool pool(2, 4, 1, 2);
  auto a = pool.Allocate();
  pool.Register(*a, {1, 1});
  pool.Release(*a);  // cached, evictable
  EXPECT_EQ(pool.cached_blocks(), 1);
  auto hit = pool.Lookup({1, 1});
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, *a);
  EXPECT_EQ(pool.used_blocks(), 1);
  pool.Release(*hit);
  EXPECT_FALSE(pool.Lookup({2, 2}));
  // Two allocations: the free block, then the cached one is evicted.
  auto x = pool.Allocate(), y = pool.Allocate();
  ASSERT_TRUE(x && y);
  EXPECT_FALSE(pool.Lookup({1, 1}));  // evicted
  EXPECT_FALSE(pool.Allocate());
  pool.Release(*x);
  pool.Release(*y);
  EXPECT_EQ(pool.free_blocks(), 2);
}

TEST(SchedulerTest, BudgetChunkedPrefillAndFifo) {
  BlockPool pool(64, 16, 1, 1);
  SchedulerConfig c;
  c.max_batch_tokens = 40;
  Scheduler s(c, &pool);
  s.Add(1, Keys(100, 0));
  s.Add(2, Keys(10, 1000));
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.seqs.size(), 1u);  // the first prompt takes the whole budget
  EXPECT_EQ(p.seqs[0].id, 1);
  EXPECT_EQ(p.seqs[0].n, 40);
  s.Commit(p);
  p = s.Schedule();
  EXPECT_EQ(p.tokens(), 40);
  s.Commit(p);
  p = s.Schedule();  // 20 left of seq 1, then 10 of seq 2 fit too
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[0].n, 20);
  EXPECT_EQ(p.seqs[1].id, 2);
  EXPECT_EQ(p.seqs[1].n, 10);
  s.Commit(p);
  // Both decode now: one token each.
  s.Append(1, 7);
  s.Append(2, 7);
  p = s.Schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[0].n, 1);
  EXPECT_EQ(p.seqs[1].n, 1);
  s.Remove(1);
  s.Remove(2);
  EXPECT_EQ(pool.used_blocks(), 0);
}

// The sequence given up on when a step can schedule nothing: the waiting one next in line (not
// whichever the engine's hash map lists first, which may be running), else the last running one.
TEST(SchedulerTest, StalledVictimIsTheWaitingSequenceNextInLine) {
  BlockPool pool(4, 4, 1, 1);  // 16 tokens of KV
  SchedulerConfig c;
  c.max_batch_tokens = 64;
  Scheduler s(c, &pool);
  EXPECT_EQ(s.StalledVictim(), -1);
  s.Add(10, Keys(8, 0));
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  s.Commit(p);
  EXPECT_EQ(s.StalledVictim(), 10);         // none waiting: the running one
  s.Add(5, Keys(12, 100), /*priority=*/1);  // needs 3 more blocks, 2 are free
  s.Add(7, Keys(12, 200), /*priority=*/0);  // the better rank: next in line
  EXPECT_TRUE(s.Running(10));
  EXPECT_EQ(s.StalledVictim(), 7);
  s.Remove(7);
  EXPECT_EQ(s.StalledVictim(), 5);
  s.Remove(5);
  s.Remove(10);
}

// Randomised: budgets always respected, every sequence finishes, every block returned, no
// sequence starves (each running sequence advances every step it is scheduled in order).
TEST(SchedulerTest, RandomWorkloadWithPreemptionReturnsEveryBlock) {
  for (int seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    BlockPool pool(12, 4, 1, 1);  // 48 tokens of KV: forces preemption
    SchedulerConfig c;
    c.max_batch_tokens = 1 + static_cast<int>(rng() % 16);
    c.max_seqs = 1 + static_cast<int>(rng() % 6);
    Scheduler s(c, &pool);
    std::map<int64_t, int> remaining;  // tokens still to generate
    for (int64_t id = 1; id <= 10; ++id) {
      s.Add(id, Keys(1 + static_cast<int>(rng() % 20), static_cast<uint64_t>(id) * 100));
      remaining[id] = 1 + static_cast<int>(rng() % 10);
    }
    int steps = 0, preemptions = 0;
    while (!remaining.empty() && steps < 10000) {
      ++steps;
      StepPlan p = s.Schedule();
      preemptions += static_cast<int>(p.preempted.size());
      for (int64_t id : p.rejected) remaining.erase(id), s.Remove(id);
      EXPECT_LE(p.tokens(), c.max_batch_tokens);
      EXPECT_LE(static_cast<int>(s.num_running()), c.max_seqs);
      EXPECT_LE(pool.used_blocks(), pool.num_blocks());
      s.Commit(p);
      for (const ScheduledSeq& q : p.seqs) {
        if (q.start + q.n != s.NumTokens(q.id)) continue;
        if (--remaining[q.id] == 0) {
          remaining.erase(q.id);
          s.Remove(q.id);
        } else {
          s.Append(q.id, 5);
        }
      }
    }
    EXPECT_TRUE(remaining.empty()) << "seed " << seed << " did not finish";
    EXPECT_EQ(pool.used_blocks(), 0) << "seed " << seed;
    (void)preemptions;
  }
}

TEST(SchedulerTest, PreemptsNewestWhenPoolRunsDry) {
  BlockPool pool(4, 4, 1, 1);  // 16 tokens
  SchedulerConfig c;
  c.max_batch_tokens = 64;
  c.prefix_caching = false;
  Scheduler s(c, &pool);
  s.Add(1, Keys(6, 0));
  s.Add(2, Keys(6, 100));
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.seqs.size(), 2u);  // 2 + 2 blocks
  s.Commit(p);
  // Both grow past 8 tokens: the pool (4 blocks) cannot hold 3 + 3 blocks.
  for (int i = 0; i < 3; ++i) {
    s.Append(1, 1);
    s.Append(2, 1);
    p = s.Schedule();
    s.Commit(p);
    if (!p.preempted.empty()) {
      EXPECT_EQ(p.preempted[0], 2);  // the newer one
      break;
    }
  }
  EXPECT_EQ(s.NumComputed(2), 0);
  s.Remove(1);
  s.Remove(2);
  EXPECT_EQ(pool.used_blocks(), 0);
}

TEST(SchedulerTest, PrefixCacheServesSharedPrompt) {
  BlockPool pool(32, 4, 1, 1);
  SchedulerConfig c;
  Scheduler s(c, &pool);
  std::vector<uint64_t> prompt = Keys(13, 0);  // 3 full blocks + 1 token
  s.Add(1, prompt);
  s.Commit(s.Schedule());
  s.Remove(1);  // its full blocks stay cached
  auto longer = prompt;
  longer.push_back(99);
  longer.push_back(98);
  s.Add(2, longer);  // 15 tokens: 3 full blocks can come from the cache
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].start, 12);
  EXPECT_EQ(p.seqs[0].n, 3);
  EXPECT_EQ(s.CachedPrefixTokens(2), 12);
  // A prompt differing in its first token shares nothing.
  auto other = prompt;
  other[0] = 12345;
  s.Add(3, other);
  p = s.Schedule();
  for (const auto& q : p.seqs) {
    if (q.id == 3) {
      EXPECT_EQ(q.start, 0);
    }
  }
  s.Remove(2);
  s.Remove(3);
  EXPECT_EQ(pool.used_blocks(), 0);
}

TEST(SchedulerTest, TooLargeIsRejectedNotDeadlocked) {
  BlockPool pool(2, 4, 1, 1);
  Scheduler s(SchedulerConfig{}, &pool);
  s.Add(1, Keys(20, 0));  // needs 5 blocks
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.rejected.size(), 1u);
  EXPECT_EQ(p.rejected[0], 1);
}

// Admits one waiting sequence per step (each prompt takes the whole budget, and an admitted
// sequence with nothing appended takes none afterwards); returns the admitted id.
int64_t AdmitOne(Scheduler& s) {
  StepPlan p = s.Schedule();
  EXPECT_EQ(p.seqs.size(), 1u);
  s.Commit(p);
  return p.seqs.empty() ? -1 : p.seqs[0].id;
}

TEST(SchedulerPriorityTest, LowerPriorityFirstArrivalBreaksTies) {
  BlockPool pool(64, 16, 1, 1);
  SchedulerConfig c;
  c.max_batch_tokens = 10;
  Scheduler s(c, &pool);
  s.Add(1, Keys(10, 0), 5);
  s.Add(2, Keys(10, 100), 0);
  s.Add(3, Keys(10, 200), 5);
  s.Add(4, Keys(10, 300), -1);
  s.Add(5, Keys(10, 400), 0);
  std::vector<int64_t> order;
  for (int i = 0; i < 5; ++i) order.push_back(AdmitOne(s));
  EXPECT_EQ(order, (std::vector<int64_t>{4, 2, 5, 1, 3}));
}

TEST(SchedulerPriorityTest, NoStarvationAfterMaxOvertakes) {
  BlockPool pool(1024, 16, 1, 1);
  SchedulerConfig c;
  c.max_batch_tokens = 10;
  c.max_seqs = 1000;
  Scheduler s(c, &pool);
  s.Add(1, Keys(10, 0), 100);  // the worst priority, first to arrive
  // A stream of better-priority requests, one arriving per step.
  int admitted_at = -1;
  for (int step = 0; step < 3 * kMaxOvertakes && admitted_at < 0; ++step) {
    s.Add(1000 + step, Keys(10, 1000 * (step + 1)), 0);
    const int64_t id = AdmitOne(s);
    if (id == 1)
      admitted_at = step;
    else
      EXPECT_EQ(s.Overtaken(1), std::min(step + 1, kMaxOvertakes));
  }
  // Overtaken exactly kMaxOvertakes times, then it goes next.
  EXPECT_EQ(admitted_at, kMaxOvertakes);
  EXPECT_TRUE(s.Running(1));
}

TEST(SchedulerPriorityTest, PreemptsWorstPriorityNotNewest) {
  BlockPool pool(4, 4, 1, 1);  // 16 tokens
  SchedulerConfig c;
  c.max_batch_tokens = 64;
  c.prefix_caching = false;
  Scheduler s(c, &pool);
  s.Add(1, Keys(6, 0), 7);  // older, worse priority, admitted first
  StepPlan p = s.Schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  s.Commit(p);
  s.Add(2, Keys(6, 100), 0);  // newer, better priority
  p = s.Schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  s.Commit(p);
  bool preempted = false;
  for (int i = 0; i < 3 && !preempted; ++i) {
    s.Append(1, 1);
    s.Append(2, 1);
    p = s.Schedule();
    s.Commit(p);
    if (!p.preempted.empty()) {
      EXPECT_EQ(p.preempted[0], 1);  // the worse priority, although older
      preempted = true;
    }
  }
  ASSERT_TRUE(preempted);
  EXPECT_EQ(s.NumComputed(1), 0);
  EXPECT_GT(s.NumComputed(2), 8);
  s.Remove(1);
  s.Remove(2);
  EXPECT_EQ(pool.used_blocks(), 0);
}

TEST(SchedulerPriorityTest, RandomPrioritiesFinishAndReturnEveryBlock) {
  for (int seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    BlockPool pool(12, 4, 1, 1);  // forces preemption
    SchedulerConfig c;
    c.max_batch_tokens = 1 + static_cast<int>(rng() % 16);
    c.max_seqs = 1 + static_cast<int>(rng() % 6);
    Scheduler s(c, &pool);
    std::map<int64_t, int> remaining;
    for (int64_t id = 1; id <= 12; ++id) {
      s.Add(id, Keys(1 + static_cast<int>(rng() % 20), static_cast<uint64_t>(id) * 100),
            static_cast<int>(rng() % 5) - 2);
      remaining[id] = 1 + static_cast<int>(rng() % 10);
    }
    for (int steps = 0; !remaining.empty() && steps < 10000; ++steps) {
      StepPlan p = s.Schedule();
      for (int64_t id : p.rejected) remaining.erase(id), s.Remove(id);
      EXPECT_LE(p.tokens(), c.max_batch_tokens);
      s.Commit(p);
      for (const ScheduledSeq& q : p.seqs) {
        if (q.start + q.n != s.NumTokens(q.id)) continue;
        if (--remaining[q.id] == 0) {
          remaining.erase(q.id);
          s.Remove(q.id);
        } else {
          s.Append(q.id, 5);
        }
      }
    }
    EXPECT_TRUE(remaining.empty()) << "seed " << seed;
    EXPECT_EQ(pool.used_blocks(), 0) << "seed " << seed;
  }
}

}  // namespace
}  // namespace mineru
