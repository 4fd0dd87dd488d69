// Fault tests of the base layer's mappings (issue #7): a file truncated or rewritten while mapped
// must not kill the process (SIGBUS is absorbed and flagged), a SIGBUS that is not ours still
// reaches the handler installed before ours, and a safetensors file truncated before it is opened
// is a clear one-line error.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "base/mapped_file.h"
#include "base/safetensors.h"

namespace mineru {
namespace {

// A handler that is in place before MappedFile installs its own (static initialisation runs before
// main, so before any Open): our handler must pass the faults that are not ours on to it.
std::atomic<int> g_prev_calls{0};
std::atomic<int> g_prev_faults{0};
std::atomic<uintptr_t> g_prev_addr{0};

void PreviousHandler(int, siginfo_t* info, void*) {
  g_prev_calls.fetch_add(1);
  if (info->si_code > 0) {  // a real fault: patch the page so the read can complete
    g_prev_faults.fetch_add(1);
    const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
    g_prev_addr.store(a);
    const uintptr_t page = a & ~(static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)) - 1);
    ::mmap(reinterpret_cast<void*>(page), ::sysconf(_SC_PAGESIZE), PROT_READ,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  }
}

const bool g_prev_installed = [] {
  struct sigaction sa {};
  sa.sa_sigaction = PreviousHandler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  return sigaction(SIGBUS, &sa, nullptr) == 0;
}();

std::string TempPath(const std::string& name) {
  std::string d = std::string(MINERU_BINARY_DIR) + "/test_tmp";
  ::mkdir(d.c_str(), 0755);
  return d + "/mapped_" + name + "_" + std::to_string(::getpid());
}

std::string WriteBytes(const std::string& name, size_t n, char fill) {
  const std::string p = TempPath(name);
  EXPECT_TRUE(WriteStringToFile(p, std::string(n, fill)).ok());
  return p;
}

// Reads through a volatile pointer so the compiler keeps every load.
uint8_t ReadByte(const uint8_t* p) { return *static_cast<const volatile uint8_t*>(p); }

// Release drops whole pages inside the range only, refuses ranges outside the mapping, and never
// changes what the mapping reads.
TEST(MappedFileReleaseTest, DropsWholePagesAndKeepsTheBytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::string content(10 * page, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7 + i / 4096);
  const std::string p = TempPath("release");
  ASSERT_TRUE(WriteStringToFile(p, content).ok());
  auto f = MappedFile::Open(p);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const MappedFile& m = **f;
  uint32_t sum = 0;
  for (size_t i = 0; i < m.size(); i += 64) sum += ReadByte(m.data() + i);  // make it resident
  EXPECT_GT(sum, 0u);
  EXPECT_EQ(m.Release(m.data() + 1, page), 0u);  // no whole page inside
  EXPECT_EQ(m.Release(m.data() + 1, 3 * page), 2 * page);
  EXPECT_EQ(m.Release(m.data(), m.size()), m.size());
  EXPECT_EQ(m.Release(m.data() + page, m.size()), 0u);  // runs past the end
  EXPECT_EQ(m.Release(content.data(), page), 0u);       // not this mapping
  for (size_t i = 0; i < m.size(); ++i) {
    ASSERT_EQ(ReadByte(m.data() + i), static_cast<uint8_t>(content[i])) << i;
  }
  EXPECT_FALSE(m.corrupted());
  std::remove(p.c_str());
}

TEST(MappedFileFaultTest, TruncatedWhileMappedReadsZerosAndIsFlagged) {
  ASSERT_TRUE(g_prev_installed);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const std::string p = WriteBytes("trunc", 16 * page, '\xab');
  auto f = MappedFile::Open(p);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const uint8_t* d = (*f)->data();
  EXPECT_EQ(ReadByte(d + 10 * page), 0xab);  // resident now, and lost to the truncation below
  EXPECT_FALSE((*f)->corrupted());
  EXPECT_TRUE((*f)->CheckUnchanged().ok());

  const uint64_t faults = MappedFileFaultCount();
  const int prev = g_prev_calls.load();
  ASSERT_EQ(::truncate(p.c_str(), static_cast<off_t>(page)), 0);
  // Past the new end: this raised SIGBUS and ended the process before; now it reads zeros.
  EXPECT_EQ(ReadByte(d + 10 * page), 0);
  EXPECT_EQ(ReadByte(d + 16 * page - 1), 0);
  EXPECT_EQ(ReadByte(d + 100), 0xab);  // the first page is still the file's
  EXPECT_TRUE((*f)->corrupted());
  EXPECT_GT(MappedFileFaultCount(), faults);
  EXPECT_EQ(g_prev_calls.load(), prev) << "a fault inside our mapping must not reach the previous handler";
  Status s = (*f)->CheckUnchanged();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("size " + std::to_string(16 * page) + " -> " + std::to_string(page)),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("read as zeros"), std::string::npos) << s.message();
  f->reset();  // unmapping the patched range works as usual
  std::remove(p.c_str());
}

TEST(MappedFileFaultTest, ConcurrentReadersOfALostMappingAllSurvive) {
  const std::string p = WriteBytes("threads", 4 << 20, '\x01');
  auto f = MappedFile::Open(p);
  ASSERT_TRUE(f.ok());
  const uint8_t* d = (*f)->data();
  const size_t n = (*f)->size();
  ASSERT_EQ(::truncate(p.c_str(), 0), 0);
  std::vector<std::thread> readers;
  std::atomic<uint64_t> total{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      uint64_t sum = 0;
      for (size_t i = static_cast<size_t>(t) * 997; i < n; i += 509) sum += ReadByte(d + i);
      total += sum;
    });
  }
  for (auto& r : readers) r.join();
  EXPECT_EQ(total.load(), 0u);
  EXPECT_TRUE((*f)->corrupted());
  std::remove(p.c_str());
}

TEST(MappedFileFaultTest, RewrittenInPlaceIsDetectedWithoutAFault) {
  const std::string p = WriteBytes("rewrite", 8192, 'a');
  auto f = MappedFile::Open(p);
  ASSERT_TRUE(f.ok());
  const int fd = ::open(p.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "bbbb", 4, 0), 4);
  // A distinct modification time even on a filesystem with coarse timestamps.
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  ASSERT_EQ(::futimens(fd, times), 0);
  ::close(fd);
  EXPECT_FALSE((*f)->corrupted());
  Status s = (*f)->CheckUnchanged();
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("modified in place"), std::string::npos) << s.message();
  std::remove(p.c_str());
}

TEST(MappedFileFaultTest, ReplacedByRenameLeavesTheMappingIntact) {
  const std::string p = WriteBytes("rename", 8192, 'a');
  const std::string q = WriteBytes("rename_new", 100, 'z');
  auto f = MappedFile::Open(p);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(::rename(q.c_str(), p.c_str()), 0);  // the mapped inode lives on, unchanged
  EXPECT_TRUE((*f)->CheckUnchanged().ok());
  EXPECT_EQ(ReadByte((*f)->data() + 8000), 'a');
  std::remove(p.c_str());
}

TEST(MappedFileFaultTest, FaultsOutsideOurMappingsReachThePreviousHandler) {
  InstallMappedFileFaultHandler();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const std::string p = WriteBytes("foreign", 4 * page, 'x');
  auto ours = MappedFile::Open(p);  // a registered mapping of the same file, not the one that faults
  ASSERT_TRUE(ours.ok());
  const int fd = ::open(p.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  void* raw = ::mmap(nullptr, 4 * page, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(raw, MAP_FAILED);
  const uint8_t* r = static_cast<const uint8_t*>(raw);
  EXPECT_EQ(ReadByte(r + 3 * page), 'x');
  ASSERT_EQ(::truncate(p.c_str(), static_cast<off_t>(page)), 0);
  const int faults = g_prev_faults.load();
  EXPECT_EQ(ReadByte(r + 3 * page), 0);  // patched by the previous handler, not by ours
  EXPECT_EQ(g_prev_faults.load(), faults + 1);
  EXPECT_EQ(g_prev_addr.load(), reinterpret_cast<uintptr_t>(r + 3 * page));
  EXPECT_FALSE((*ours)->corrupted()) << "a fault elsewhere must not flag this mapping";
  // A SIGBUS sent to the process (not a fault) goes to the previous handler too.
  const int calls = g_prev_calls.load();
  ::raise(SIGBUS);
  EXPECT_EQ(g_prev_calls.load(), calls + 1);
  ::munmap(raw, 4 * page);
  std::remove(p.c_str());
}

TEST(SafetensorsFaultTest, TruncatedAtOpenIsAOneLineError) {
  const std::string p = TempPath("st");
  std::vector<TensorToWrite> t = {{"a", DType::kF32, {256}, std::string(1024, '\1')},
                                  {"b", DType::kF32, {256}, std::string(1024, '\2')}};
  ASSERT_TRUE(WriteSafetensors(p, t).ok());
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  ASSERT_TRUE(SafetensorsFile::Open(p).ok());
  for (off_t keep : {static_cast<off_t>(st.st_size - 100), off_t(20)}) {  // in the data, in the header
    ASSERT_EQ(::truncate(p.c_str(), keep), 0);
    auto f = SafetensorsFile::Open(p);
    ASSERT_FALSE(f.ok());
    const std::string m = f.status().ToString();
    EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find("the file has " + std::to_string(keep)), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  std::remove(p.c_str());
}

}  // namespace
}  // namespace mineru
