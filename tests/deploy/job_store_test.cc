// The SQLite job store: the lease contract every store keeps (job_store_contract.h), and a store
// written by an older version (no lease columns) opened and used.

#include <sqlite3.h>

#include "../server/server_harness.h"
#include "job_store_contract.h"

namespace mineru::testing {
namespace {

TEST(SqliteJobStore, KeepsTheLeaseContract) {
  const std::string dir = TempDir("jobstore_contract");
  auto s = server::JobStore::Open(dir + "/jobs.sqlite3");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_STREQ((*s)->kind(), "sqlite");
  EXPECT_FALSE((*s)->stores_files());
  CheckJobStoreContract(**s, /*shared=*/false);
}

TEST(SqliteJobStore, OpensAStoreFromBeforeLeases) {
  const std::string dir = TempDir("jobstore_old");
  const std::string path = dir + "/jobs.sqlite3";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(
                db,
                "CREATE TABLE jobs (id TEXT PRIMARY KEY, status TEXT NOT NULL, created REAL, updated REAL, "
                "filename TEXT, input_path TEXT, options TEXT, pages_done INTEGER DEFAULT 0, pages_total "
                "INTEGER DEFAULT 0, error TEXT, result_dir TEXT, attempts INTEGER DEFAULT 0);"
                "INSERT INTO jobs (id, status, created, updated, filename, options, attempts) VALUES "
                "('0123456789abcdef0123456789abcdef', 'running', 1, 1, 'old.pdf', '{}', 1);",
                nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto s = server::JobStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*(*s)->RequeueInterrupted(), 1);
  auto j = (*s)->ClaimNext("w1", 30);
  ASSERT_TRUE(j.ok() && j->has_value()) << j.status().ToString();
  EXPECT_EQ((*j)->filename, "old.pdf");
  EXPECT_EQ((*j)->attempts, 2);
  EXPECT_TRUE(*(*s)->Finish((*j)->id, "w1", true, "", "", {}));
  EXPECT_EQ(MustGet(**s, (*j)->id).finishes, 1);
}

TEST(JobStore, PostgresUriWithoutServerIsAClearError) {
  // Nothing listens on port 1: the open fails with an error naming the store, not a crash.
  auto s = server::JobStore::Open("postgresql://nobody:x@127.0.0.1:1/none?connect_timeout=2");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("PostgreSQL"), std::string::npos) << s.status().ToString();
}

}  // namespace
}  // namespace mineru::testing
