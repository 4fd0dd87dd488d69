// server/zip_writer.h — writes a ZIP archive (PKWARE APPNOTE 6.3.x) to a file, one member at a time:
// MinerU 4's result bundle (middle_json.json, markdown.md, ..., images/) as its clients unzip it.
//
// Members are deflated (raw deflate, zlib) or stored when deflate does not make them smaller; no
// ZIP64, so a member or the archive past 4 GiB - 1, or more than 65535 members, is refused with an
// error rather than written wrong. Names are relative paths with '/' separators; an absolute name,
// a ".." component, a backslash or a control byte is refused. Times are fixed (1980-01-01 00:00), so
// the same members give the same bytes. Not thread-safe; one writer per archive.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace mineru::server {

class ZipWriter {
 public:
  ZipWriter() = default;
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;
  ~ZipWriter();

  // Creates (truncates) the archive file.
  Status Open(const std::string& path);
  // Appends one member.
  Status Add(const std::string& name, std::string_view data);
  // Writes the central directory and closes the file; the archive is complete only after this.
  Status Finish();

 private:
  struct Entry {
    std::string name;
    uint32_t crc = 0, compressed = 0, size = 0, offset = 0;
    uint16_t method = 0;
  };
  Status Write(const std::string& bytes);

  std::FILE* file_ = nullptr;
  std::string path_;
  uint64_t offset_ = 0;
  std::vector<Entry> entries_;
};

// Every regular file under dir (recursively, sorted), as members named by their path under dir.
Status ZipDirectory(const std::string& dir, const std::string& zip_path);

}  // namespace mineru::server
