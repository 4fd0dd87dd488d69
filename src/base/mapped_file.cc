#include "base/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <new>

namespace mineru {
namespace {

// ---------------------------------------------------------------------------------------------
// The fault registry: fixed slots of [begin, end) address ranges, written under a mutex by
// Open/~MappedFile and read lock-free by the signal handler (only atomics, no allocation).

constexpr int kSlots = 1024;

struct Slot {
  std::atomic<uintptr_t> begin{0};  // 0: free
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> corrupted{false};
};

Slot g_slots[kSlots];
std::mutex g_registry_mu;
std::atomic<uint64_t> g_faults{0};
uintptr_t g_page = 4096;
struct sigaction g_previous {};  // written once, before our handler can run

int Register(uintptr_t begin, uintptr_t end) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].begin.load(std::memory_order_relaxed) != 0) continue;
    g_slots[i].corrupted.store(false, std::memory_order_relaxed);
    g_slots[i].end.store(end, std::memory_order_release);
    g_slots[i].begin.store(begin, std::memory_order_release);  // published last
    return i;
  }
  return -1;  // full: the mapping works, unprotected (a fault in it ends the process as before)
}

void Unregister(int slot) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_slots[slot].begin.store(0, std::memory_order_release);
  g_slots[slot].end.store(0, std::memory_order_release);
}

// For a signal we do not handle: what the previous disposition would have done.
void Chain(int sig, siginfo_t* info, void* context) {
  const bool fault = info != nullptr && info->si_code > 0;  // raised by the kernel for an access
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler == SIG_IGN && !fault) return;
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // The default action (an ignored fault cannot be ignored either): restore it; a fault then
  // recurs when the instruction is retried and ends the process with the usual core dump, a sent
  // signal is raised again and delivered when this handler returns.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, nullptr);
  if (!fault) raise(SIGBUS);
}

// Runs on the faulting thread. Only async-signal-safe work: atomic loads/stores on static memory
// and one mmap system call. mmap is not on POSIX's async-signal-safe list, but on Linux it is a
// single system call that takes no user-space lock and allocates no user-space memory; it is made
// with syscall(2) so no libc wrapper state is involved, and errno is restored. MAP_FIXED replaces
// the lost file pages atomically (under the kernel's mmap lock) with private zero pages; the
// faulting read is retried on return and sees zeros. The replacement runs from the faulting page
// to the end of the mapping: truncation removes a suffix, so the later pages are gone too, and one
// call per mapping (instead of one fault and one extra VMA per page) keeps this cheap. The range
// stays inside the mapping, which ~MappedFile unmaps as a whole (anonymous parts included).
void OnSigbus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (info != nullptr && info->si_code > 0) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (int i = 0; i < kSlots; ++i) {
      const uintptr_t b = g_slots[i].begin.load(std::memory_order_acquire);
      if (b == 0 || addr < b) continue;
      const uintptr_t e = g_slots[i].end.load(std::memory_order_acquire);
      if (addr >= e) continue;
      const uintptr_t page = addr & ~(g_page - 1);
      const long r =
          ::syscall(SYS_mmap, page, e - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (r == static_cast<long>(page)) {
        g_slots[i].corrupted.store(true, std::memory_order_release);
        g_faults.fetch_add(1, std::memory_order_relaxed);
        errno = saved_errno;
        return;
      }
      break;  // could not patch it: behave as if we were not here
    }
  }
  errno = saved_errno;
  Chain(sig, info, context);
}

}  // namespace

void InstallMappedFileFaultHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    const long page = ::sysconf(_SC_PAGESIZE);
    if (page > 0) g_page = static_cast<uintptr_t>(page);
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, nullptr, &g_previous);  // g_previous is complete before ours is live
    sigaction(SIGBUS, &sa, nullptr);
  });
}

uint64_t MappedFileFaultCount() { return g_faults.load(std::memory_order_relaxed); }

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  InstallMappedFileFaultHandler();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("no such file: " + path);
    return IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("not a regular file: " + path);
  }
  std::unique_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->fd_ = fd;
  f->size_ = static_cast<size_t>(st.st_size);
  f->mtime_ = st.st_mtim;
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return IoError("cannot map " + path + ": " + std::strerror(errno));
    f->data_ = static_cast<const uint8_t*>(p);
    const uintptr_t b = reinterpret_cast<uintptr_t>(p);
    f->slot_ = Register(b, b + ((f->size_ + g_page - 1) & ~(g_page - 1)));
  }
  return f;
}

MappedFile::~MappedFile() {
  if (slot_ >= 0) Unregister(slot_);  // before the range can be reused by another mapping
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

size_t MappedFile::Release(const void* p, size_t n) const {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  const auto base = reinterpret_cast<uintptr_t>(data_);
  if (data_ == nullptr || begin < base || end > base + size_ || end < begin) return 0;
  const uintptr_t b = (begin + page - 1) / page * page, e = end / page * page;
  if (e <= b) return 0;
  // MADV_DONTNEED on a read-only private file mapping: the pages are dropped from this process,
  // never their contents (nothing was written to them), and refault from the file.
  if (::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED) != 0) return 0;
  return e - b;
}

bool MappedFile::corrupted() const {
  return slot_ >= 0 && g_slots[slot_].corrupted.load(std::memory_order_acquire);
}

Status MappedFile::CheckUnchanged() const {
  const bool lost = corrupted();
  const char* zeros = lost ? "; pages were lost and now read as zeros" : "";
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) return IoError("cannot stat " + path_ + ": " + std::strerror(errno));
  if (static_cast<size_t>(st.st_size) != size_) {
    return DataLossError("size " + std::to_string(size_) + " -> " + std::to_string(st.st_size) + " bytes" +
                         zeros);
  }
  if (st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec) {
    return DataLossError(std::string("modified in place") + zeros);
  }
  if (lost) return DataLossError("pages were lost (the file shrank); they now read as zeros");
  return Status::Ok();
}

StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return NotFoundError("no such file: " + path);
  if (!S_ISREG(st.st_mode)) return IoError("not a regular file: " + path);
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    return ResourceExhaustedError("file too large: " + path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot open " + path);
  std::string out;
  try {  // the size is the file's: uploads can be large
    out.resize(static_cast<size_t>(st.st_size));
    in.read(out.data(), static_cast<std::streamsize>(out.size()));
    out.resize(static_cast<size_t>(in.gcount()));
    // A file that grew since the stat: the rest, still bounded.
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      out.append(buf, static_cast<size_t>(in.gcount()));
      if (out.size() > max_bytes) return ResourceExhaustedError("file too large: " + path);
    }
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("reading " + path + " (" + std::to_string(st.st_size) + " bytes)");
  }
  return out;
}

Status WriteStringToFile(const std::string& path, const std::string& data) {
  // POSIX writes, checked to the end (close included): a full disk or a file size limit must be an
  // error here, not a silently truncated file (std::ofstream reports a failed final flush nowhere).
  // A full disk, quota or file size limit is StorageFull (IoErrorFromErrno), other failures IoError.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    return IoErrorFromErrno("cannot write " + path, err);
  }
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(path.c_str());  // no truncated file left behind
      return IoErrorFromErrno("cannot write " + path, err);
    }
    off += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    return IoErrorFromErrno("cannot write " + path, err);
  }
  return Status::Ok();
}

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status(StatusCode::kUnavailable, "cannot create directory " + path + ": " + ec.message());
  if (!std::filesystem::is_directory(path, ec))
    return InvalidArgumentError(path + " exists and is not a directory");
  return Status::Ok();
}

}  // namespace mineru
