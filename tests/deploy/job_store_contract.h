// tests/deploy/job_store_contract.h — what every JobStore (SQLite, PostgreSQL) must do: claims in
// order, leases that only the owner renews, expired leases taken over, progress/finish only by the
// owner and a finish recorded once, release, idempotency keys, retention and counts.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server/job_store.h"

namespace mineru::testing {

inline server::Job ContractJob(const std::string& name, const std::string& key = "") {
  server::Job j;
  j.id = server::NewJobId();
  j.status = "queued";
  j.created = j.updated = server::NowSeconds();
  j.filename = name + ".pdf";
  j.options = "{}";
  j.client_key = key;
  return j;
}

inline server::Job MustGet(server::JobStore& s, const std::string& id) {
  auto j = s.Get(id);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_TRUE(j.ok() && j->has_value()) << id;
  return j.ok() && j->has_value() ? **j : server::Job{};
}

// shared: the store is shared by many servers (RequeueInterrupted only takes expired leases).
inline void CheckJobStoreContract(server::JobStore& s, bool shared) {
  using server::Job;
  const std::string upload = "%PDF-1.4 not really";
  auto insert = [&](const Job& j) {
    std::string existing;
    ASSERT_TRUE(s.Insert(j, s.stores_files() ? &upload : nullptr, &existing).ok());
    ASSERT_EQ(existing, "");
  };
  // Distinct creation times, a oldest: the order of claims. (A store that stamps creation times
  // itself, PostgreSQL, stamps them in the order of insertion: the same order.)
  Job a = ContractJob("a"), b = ContractJob("b"), c = ContractJob("c");
  b.created = a.created + 1;
  c.created = a.created + 2;
  insert(a);
  insert(b);
  insert(c);
  EXPECT_EQ(*s.CountByStatus("queued"), 3);

  // Oldest first, marked running for the claimer.
  auto ca = s.ClaimNext("w1", 30);
  ASSERT_TRUE(ca.ok() && ca->has_value()) << ca.status().ToString();
  EXPECT_EQ((*ca)->id, a.id);
  EXPECT_EQ((*ca)->status, "running");
  EXPECT_EQ((*ca)->attempts, 1);
  EXPECT_EQ((*ca)->worker_id, "w1");
  auto cb = s.ClaimNext("w2", 30);
  ASSERT_TRUE(cb.ok() && cb->has_value());
  EXPECT_EQ((*cb)->id, b.id);
  // A short lease that w3 will not renew, on the newest job: when it runs out there is no older
  // job it could be mistaken for.
  auto cc = s.ClaimNext("w3", 0.5);
  ASSERT_TRUE(cc.ok() && cc->has_value());
  EXPECT_EQ((*cc)->id, c.id);
  EXPECT_EQ(*s.CountByStatus("running"), 3);

  // Only the owner renews, reports progress and finishes.
  EXPECT_TRUE(*s.RenewLease(a.id, "w1", 30));
  EXPECT_FALSE(*s.RenewLease(a.id, "w2", 30));
  EXPECT_FALSE(*s.UpdateProgress(a.id, "w2", 2, 3, 30));
  EXPECT_TRUE(*s.UpdateProgress(a.id, "w1", 1, 3, 30));
  EXPECT_EQ(MustGet(s, a.id).pages_done, 1);
  EXPECT_FALSE(*s.Finish(a.id, "w2", true, "", "", {}));
  EXPECT_EQ(MustGet(s, a.id).status, "running");
  EXPECT_TRUE(*s.Finish(a.id, "w1", true, "", "", {}));
  EXPECT_FALSE(*s.Finish(a.id, "w1", true, "", "", {}));  // finished: a second finish changes nothing
  Job fa = MustGet(s, a.id);
  EXPECT_EQ(fa.status, "done");
  EXPECT_EQ(fa.finishes, 1);
  EXPECT_FALSE(*s.RenewLease(a.id, "w1", 30));

  // c's lease runs out: another worker takes it over; the old owner can no longer touch it.
  std::optional<Job> taken;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!taken && std::chrono::steady_clock::now() < end) {
    auto t = s.ClaimNext("w4", 30);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    if (t->has_value())
      taken = **t;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling, with a deadline
  }
  ASSERT_TRUE(taken.has_value()) << "an expired lease was never taken over";
  EXPECT_EQ(taken->id, c.id);
  EXPECT_EQ(taken->attempts, 2);
  EXPECT_EQ(taken->worker_id, "w4");
  EXPECT_FALSE(*s.RenewLease(c.id, "w3", 30));
  EXPECT_FALSE(*s.UpdateProgress(c.id, "w3", 3, 3, 30));
  EXPECT_FALSE(*s.Finish(c.id, "w3", true, "", "", {}));
  EXPECT_TRUE(*s.Finish(c.id, "w4", false, "broken page", "", {}));
  Job fc = MustGet(s, c.id);
  EXPECT_EQ(fc.status, "failed");
  EXPECT_EQ(fc.error, "broken page");
  EXPECT_EQ(fc.finishes, 1);

  // A released job is queued again and claimed again.
  EXPECT_FALSE(*s.Release(b.id, "w1"));
  EXPECT_TRUE(*s.Release(b.id, "w2"));
  EXPECT_EQ(MustGet(s, b.id).status, "queued");
  auto again = s.ClaimNext("w5", 30);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->id, b.id);
  EXPECT_EQ((*again)->attempts, 2);
  auto none = s.ClaimNext("w6", 30);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // At startup: one server per store requeues every running job; a shared store only expired ones.
  auto requeued = s.RequeueInterrupted();
  ASSERT_TRUE(requeued.ok());
  EXPECT_EQ(*requeued, shared ? 0 : 1);
  EXPECT_EQ(MustGet(s, b.id).status, shared ? "running" : "queued");

  // The same Idempotency-Key is the same job.
  const Job d = ContractJob("d", "key-" + server::NewJobId()), e = ContractJob("e", d.client_key);
  std::string existing;
  ASSERT_TRUE(s.Insert(d, s.stores_files() ? &upload : nullptr, &existing).ok());
  EXPECT_EQ(existing, "");
  ASSERT_TRUE(s.Insert(e, s.stores_files() ? &upload : nullptr, &existing).ok());
  EXPECT_EQ(existing, d.id);
  auto ge = s.Get(e.id);
  ASSERT_TRUE(ge.ok());
  EXPECT_FALSE(ge->has_value());

  // Retention removes finished jobs only.
  auto old = s.DeleteFinishedBefore(server::NowSeconds() + 60);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->size(), 2u);
  EXPECT_FALSE(s.Get(a.id)->has_value());
  EXPECT_FALSE(s.Get(c.id)->has_value());
  EXPECT_TRUE(s.Get(b.id)->has_value());
  EXPECT_TRUE(s.Get(d.id)->has_value());
}

}  // namespace mineru::testing
