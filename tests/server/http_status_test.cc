// The server's one mapping from an error's kind to the HTTP status a client sees, and the kinds the
// code behind it returns (issue 36): no route reads an error's text to pick a status.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/status.h"
#include "server/http_status.h"
#include "server/image_budget.h"
#include "server/job_store.h"
#include "server/server.h"

namespace mineru::server {
namespace {

TEST(HttpStatusTest, EachKindHasItsStatus) {
  EXPECT_EQ(HttpStatusFor(Status::Ok()), 200);
  EXPECT_EQ(HttpStatusFor(InvalidArgumentError("bad input")), 400);
  EXPECT_EQ(HttpStatusFor(DataLossError("corrupt")), 400);
  EXPECT_EQ(HttpStatusFor(UnimplementedError("unsupported")), 400);
  EXPECT_EQ(HttpStatusFor(NotFoundError("no job")), 404);
  EXPECT_EQ(HttpStatusFor(ResourceExhaustedError("too large")), 413);
  EXPECT_EQ(HttpStatusFor(BusyError("too many requests in flight (4)")), 429);
  EXPECT_EQ(HttpStatusFor(UnavailableError("shutting down")), 503);
  EXPECT_EQ(HttpStatusFor(DeadlineExceededError("too slow")), 504);
  EXPECT_EQ(HttpStatusFor(OutOfMemoryError("decoding")), 507);
  EXPECT_EQ(HttpStatusFor(StorageFullError("disk full")), 507);
  EXPECT_EQ(HttpStatusFor(IoError("read failed")), 500);
  EXPECT_EQ(HttpStatusFor(CancelledError("gone")), 500);
  EXPECT_EQ(HttpStatusFor(InternalError("bug")), 500);
}

// The status depends on the kind only: the old text searches ("too many", "database or disk is
// full", strerror(ENOSPC)) no longer pick one.
TEST(HttpStatusTest, TheMessageDoesNotChooseTheStatus) {
  EXPECT_EQ(HttpStatusFor(ResourceExhaustedError("too many images in one request")), 413);
  EXPECT_EQ(HttpStatusFor(IoError("job store insert: database or disk is full")), 500);
  EXPECT_EQ(HttpStatusFor(AsStorageError(IoError(std::string("x: ") + std::strerror(ENOSPC)))), 503);
  EXPECT_EQ(HttpStatusFor(AsStorageError(StorageFullError("job store insert: disk I/O error"))), 507);
}

TEST(HttpStatusTest, ARequestsOwnFailuresAreBadRequestsUnlessSizeLoadOrMemory) {
  const auto code = [](const Status& s) { return HttpStatusFor(AsRequestError(s)); };
  EXPECT_EQ(code(InvalidArgumentError("x")), 400);
  EXPECT_EQ(code(DataLossError("x")), 400);
  EXPECT_EQ(code(NotFoundError("x")), 400);
  EXPECT_EQ(code(DeadlineExceededError("cannot fetch image: the request's fetch deadline passed")), 400);
  EXPECT_EQ(code(UnavailableError("x")), 400);
  EXPECT_EQ(code(IoError("x")), 400);
  EXPECT_EQ(code(ResourceExhaustedError("x")), 413);
  EXPECT_EQ(code(BusyError("the server is decoding too many images; retry shortly")), 429);
  EXPECT_EQ(code(OutOfMemoryError("x")), 507);
  EXPECT_EQ(code(StorageFullError("x")), 507);
  EXPECT_EQ(AsRequestError(DeadlineExceededError("kept")).message(), "kept");
  EXPECT_TRUE(AsRequestError(Status::Ok()).ok());
}

TEST(HttpStatusTest, StorageFailuresAreTheServersFullOrUnavailable) {
  EXPECT_EQ(AsStorageError(StorageFullError("m")).code(), StatusCode::kStorageFull);
  for (const Status& s :
       {IoError("m"), InternalError("m"), UnavailableError("m"), InvalidArgumentError("m")}) {
    const Status k = AsStorageError(s);
    EXPECT_EQ(k.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_EQ(k.message(), "m");
    EXPECT_EQ(HttpStatusFor(k), 503);
  }
  EXPECT_TRUE(AsStorageError(Status::Ok()).ok());
}

TEST(HttpStatusTest, OpenAiFinishReasons) {
  EXPECT_STREQ(OpenAiFinishReason(FinishReason::kStop), "stop");
  EXPECT_STREQ(OpenAiFinishReason(FinishReason::kLength), "length");
  EXPECT_STREQ(OpenAiFinishReason(FinishReason::kError), "error");
  // OpenAI has no "cancelled": a request cut short (deadline, shutdown) ends as "length".
  EXPECT_STREQ(OpenAiFinishReason(FinishReason::kCancelled), "length");
  EXPECT_STREQ(OpenAiFinishReason(FinishReason::kNone), "length");
}

// The server's decoded-image memory in use: Busy, 429 (a request's own images over its budget: 413).
TEST(HttpStatusTest, TheImageBudgetSaysBusyOrTooLarge) {
  std::atomic<int64_t> held{0};
  const ImageBudgetLimits lim{1, 100000000, 50000000};
  ImageBudget full(lim, &held, 0);
  EXPECT_EQ(HttpStatusFor(full.Reserve().status()), 429);
  ImageBudget one(lim, &held, int64_t(1) << 30);
  ASSERT_TRUE(one.Reserve().ok());
  one.Settle(10);
  EXPECT_EQ(HttpStatusFor(one.Reserve().status()), 413);  // one image per request
}

// The SQLite job store at the file size limit (as a full disk): StorageFull, 507 at the edge.
TEST(HttpStatusTest, AFullSqliteStoreIsStorageFull) {
  const std::string dir = ::testing::TempDir() + "/http_status_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0755);
  auto store = OpenSqliteJobStore(dir + "/jobs.sqlite3");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Job j;
  j.id = "during";
  j.status = "queued";
  j.created = j.updated = NowSeconds();
  j.filename = "doc.pdf";
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  const sighandler_t old_sig = ::signal(SIGXFSZ, SIG_IGN);
  const rlimit one{1, old.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &one), 0);
  const Status ins = (*store)->Insert(j, nullptr, nullptr);
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_sig);
  EXPECT_EQ(ins.code(), StatusCode::kStorageFull) << ins.ToString();
  EXPECT_EQ(HttpStatusFor(AsStorageError(ins)), 507);
  j.id = "after";  // room again
  EXPECT_TRUE((*store)->Insert(j, nullptr, nullptr).ok());
  store->reset();
  for (const char* f : {"/jobs.sqlite3", "/jobs.sqlite3-wal", "/jobs.sqlite3-shm"})
    ::unlink((dir + f).c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace mineru::server
