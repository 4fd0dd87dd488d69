// The error kinds callers decide by (issue 36): a full disk, quota or file size limit is
// StorageFull wherever a write fails, told by errno, never by the message's text; the later kinds
// print as the kinds they refine did.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/mapped_file.h"
#include "base/status.h"

namespace mineru {
namespace {

TEST(StatusKindsTest, HelpersMakeTheirKinds) {
  EXPECT_EQ(BusyError("queue full").code(), StatusCode::kBusy);
  EXPECT_EQ(StorageFullError("disk full").code(), StatusCode::kStorageFull);
  EXPECT_EQ(StorageFullError("disk full").message(), "disk full");
  // Printed as the kinds they refine, so logs and job errors read as before.
  EXPECT_EQ(BusyError("too many requests in flight (4)").ToString(),
            "limit exceeded: too many requests in flight (4)");
  EXPECT_EQ(StorageFullError("cannot write x: No space left on device").ToString(),
            "I/O error: cannot write x: No space left on device");
}

TEST(StatusKindsTest, ErrnoTellsAFullStorageFromOtherFailures) {
  for (int e : {ENOSPC, EDQUOT, EFBIG}) {
    EXPECT_TRUE(IsStorageFullErrno(e)) << e;
    const Status s = IoErrorFromErrno("cannot write /x", e);
    EXPECT_EQ(s.code(), StatusCode::kStorageFull) << e;
    EXPECT_EQ(s.message(), std::string("cannot write /x: ") + std::strerror(e));
  }
  for (int e : {EACCES, EROFS, EIO, ENOENT, 0}) {
    EXPECT_FALSE(IsStorageFullErrno(e)) << e;
    const Status s = IoErrorFromErrno("cannot write /x", e);
    EXPECT_EQ(s.code(), StatusCode::kIoError) << e;
    EXPECT_EQ(s.message(), std::string("cannot write /x: ") + std::strerror(e));
  }
}

// Lowers this process's file size limit (writes past it fail with EFBIG, SIGXFSZ ignored) until
// it goes out of scope.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_sig_ = ::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{bytes, old_.rlim_max};
    ok_ = ::setrlimit(RLIMIT_FSIZE, &lim) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_sig_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  sighandler_t old_sig_ = SIG_DFL;
  bool ok_ = false;
};

TEST(StatusKindsTest, AWriteWithNoRoomIsStorageFullAndLeavesNoFile) {
  const std::string path = ::testing::TempDir() + "/status_kinds_" + std::to_string(::getpid());
  Status s;
  {
    FileSizeLimit limit(4096);
    ASSERT_TRUE(limit.ok());
    s = WriteStringToFile(path, std::string(65536, 'x'));
  }
  EXPECT_EQ(s.code(), StatusCode::kStorageFull) << s.ToString();
  EXPECT_EQ(s.message(), "cannot write " + path + ": " + std::strerror(EFBIG));
  EXPECT_FALSE(FileExists(path));
  // Room again: the same write succeeds.
  ASSERT_TRUE(WriteStringToFile(path, std::string(65536, 'x')).ok());
  ::unlink(path.c_str());
}

TEST(StatusKindsTest, AWriteRefusedForOtherReasonsStaysAnIoError) {
  const Status s = WriteStringToFile(::testing::TempDir() + "/no/such/folder/file", "x");
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  EXPECT_NE(s.message().find(std::strerror(ENOENT)), std::string::npos) << s.message();
}

}  // namespace
}  // namespace mineru
