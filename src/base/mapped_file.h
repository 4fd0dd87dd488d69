// base/mapped_file.h — read-only memory map of a whole file (weights are mapped, never copied).
//
// A file that shrinks while it is mapped (truncated, or overwritten in place by `cp`) loses the
// pages past its new end: touching them raises SIGBUS, which would kill the process. Every
// MappedFile is therefore registered with a process-wide SIGBUS handler (installed once, on the
// first Open). When a fault lies inside a registered mapping, the handler maps anonymous zero pages
// over the rest of that mapping (from the faulting page to its end), flags the mapping as
// corrupted and returns: the faulting read is retried and sees zeros. Whatever was computed from
// the mapping is garbage from then on, so users of long-lived mappings check corrupted() /
// CheckUnchanged() after work that read them and discard the results (engine/engine.cc does). A
// SIGBUS outside every registered mapping goes to the handler that was installed before ours (by
// default: the process dies as it would have without us). Limits: at most 1024 mappings are
// protected at once (more still work, unprotected); a handler installed later by someone else
// without chaining replaces ours; and reading a MappedFile while another thread destroys it is a
// use-after-free as before (the handler could patch a range that was just unmapped and reused).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>

#include "base/status.h"

namespace mineru {

class MappedFile {
 public:
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops this process's resident pages of [p, p + n) (the whole pages inside it; p must lie in
  // the mapping): for bytes that will not be read again, e.g. a tensor quantized into a copy at
  // load. The bytes stay valid: a later read faults them back in from the file. Returns the bytes
  // released (0 when the range holds no whole page or the kernel refused).
  size_t Release(const void* p, size_t n) const;

  // True once a read of this mapping faulted because the file lost pages (see above).
  bool corrupted() const;
  // Ok while the mapped file is as it was at Open: no lost pages, and fstat of the mapped inode
  // shows the same size and modification time (an in-place rewrite changes what unread pages
  // hold without any fault). Otherwise DataLoss saying what changed (without the path), e.g.
  // "size 9907976 -> 0 bytes".
  // Cheap (one fstat); replacing the file by rename leaves the mapped inode intact and stays Ok.
  Status CheckUnchanged() const;

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  int fd_ = -1;    // kept open for CheckUnchanged (fstat of the inode that is mapped)
  int slot_ = -1;  // in the fault registry; -1: not protected (empty file, or the registry is full)
  struct timespec mtime_ {};
};

// Installs the SIGBUS handler described above (idempotent; MappedFile::Open calls it).
void InstallMappedFileFaultHandler();
// Faults absorbed so far in registered mappings, process-wide.
uint64_t MappedFileFaultCount();

// Reads a whole (small) file into a string; for configs and JSON.
StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes = size_t(1) << 30);
// Writes the whole file (no truncated file is left behind on failure). Errors: StorageFull when
// the disk, a quota or the file size limit has no room, else IoError.
Status WriteStringToFile(const std::string& path, const std::string& data);
bool FileExists(const std::string& path);
// Creates path and its missing parents (like mkdir -p). Ok if it exists as a directory; otherwise
// an error naming the path and the reason.
Status MakeDirs(const std::string& path);

}  // namespace mineru
