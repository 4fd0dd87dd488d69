// server/zip_writer.cc — see zip_writer.h.
#include "server/zip_writer.h"

#include <dirent.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/mapped_file.h"

namespace mineru::server {
namespace {

constexpr uint64_t kMax32 = 0xFFFFFFFFull;

void Put16(std::string& s, uint32_t v) {
  s.push_back(static_cast<char>(v & 0xFF));
  s.push_back(static_cast<char>((v >> 8) & 0xFF));
}

void Put32(std::string& s, uint32_t v) {
  Put16(s, v & 0xFFFF);
  Put16(s, v >> 16);
}

bool NameOk(const std::string& name) {
  if (name.empty() || name.size() > 0xFFFF || name[0] == '/') return false;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7F || c == '\\') return false;
  }
  size_t start = 0;
  while (start <= name.size()) {
    const size_t end = std::min(name.find('/', start), name.size());
    const std::string part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

// Raw deflate of data; empty when it fails or is not smaller than the data.
std::string Deflate(std::string_view data) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END || n >= data.size()) return {};
  out.resize(n);
  return out;
}

// The local file header (sig, version 20, flags 0x0800 = UTF-8 names, method, fixed time/date).
std::string LocalHeader(const std::string& name, uint16_t method, uint32_t crc, uint32_t csize,
                        uint32_t size) {
  std::string h;
  Put32(h, 0x04034b50);
  Put16(h, 20);
  Put16(h, 0x0800);
  Put16(h, method);
  Put16(h, 0);                        // 00:00
  Put16(h, (0 << 9) | (1 << 5) | 1);  // 1980-01-01
  Put32(h, crc);
  Put32(h, csize);
  Put32(h, size);
  Put16(h, static_cast<uint32_t>(name.size()));
  Put16(h, 0);
  return h + name;
}

}  // namespace

ZipWriter::~ZipWriter() {
  if (file_) std::fclose(file_);
}

Status ZipWriter::Open(const std::string& path) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) return IoErrorFromErrno("cannot create " + path, errno);
  return Status::Ok();
}

Status ZipWriter::Write(const std::string& bytes) {
  if (!file_) return InternalError("the archive is not open");
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    return IoErrorFromErrno("cannot write " + path_, errno);
  }
  offset_ += bytes.size();
  return Status::Ok();
}

Status ZipWriter::Add(const std::string& name, std::string_view data) {
  if (!NameOk(name)) return InvalidArgumentError("not a safe archive member name: " + name);
  if (entries_.size() >= 0xFFFF) return ResourceExhaustedError("more than 65535 members in one archive");
  if (data.size() > kMax32 || offset_ > kMax32)
    return ResourceExhaustedError("archive past 4 GiB (no ZIP64)");
  Entry e;
  e.name = name;
  e.size = static_cast<uint32_t>(data.size());
  e.crc = static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
  e.offset = static_cast<uint32_t>(offset_);
  std::string deflated = Deflate(data);
  e.method = deflated.empty() ? 0 : 8;
  e.compressed = static_cast<uint32_t>(deflated.empty() ? data.size() : deflated.size());
  MINERU_RETURN_IF_ERROR(Write(LocalHeader(name, e.method, e.crc, e.compressed, e.size)));
  MINERU_RETURN_IF_ERROR(Write(deflated.empty() ? std::string(data) : deflated));
  entries_.push_back(std::move(e));
  return Status::Ok();
}

Status ZipWriter::Finish() {
  if (offset_ > kMax32) return ResourceExhaustedError("archive past 4 GiB (no ZIP64)");
  const uint32_t dir_offset = static_cast<uint32_t>(offset_);
  std::string dir;
  for (const Entry& e : entries_) {
    Put32(dir, 0x02014b50);
    Put16(dir, (3 << 8) | 20);  // made by Unix, spec 2.0
    Put16(dir, 20);
    Put16(dir, 0x0800);
    Put16(dir, e.method);
    Put16(dir, 0);
    Put16(dir, (0 << 9) | (1 << 5) | 1);
    Put32(dir, e.crc);
    Put32(dir, e.compressed);
    Put32(dir, e.size);
    Put16(dir, static_cast<uint32_t>(e.name.size()));
    Put16(dir, 0);               // extra
    Put16(dir, 0);               // comment
    Put16(dir, 0);               // disk
    Put16(dir, 0);               // internal attributes
    Put32(dir, 0100644u << 16);  // external: a regular file, rw-r--r--
    Put32(dir, e.offset);
    dir += e.name;
  }
  if (offset_ + dir.size() > kMax32) return ResourceExhaustedError("archive past 4 GiB (no ZIP64)");
  std::string end;
  Put32(end, 0x06054b50);
  Put16(end, 0);
  Put16(end, 0);
  Put16(end, static_cast<uint32_t>(entries_.size()));
  Put16(end, static_cast<uint32_t>(entries_.size()));
  Put32(end, static_cast<uint32_t>(dir.size()));
  Put32(end, dir_offset);
  Put16(end, 0);
  MINERU_RETURN_IF_ERROR(Write(dir + end));
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) return IoErrorFromErrno("cannot write " + path_, errno);
  return Status::Ok();
}

namespace {

// Regular files under root/rel, as paths relative to root, sorted.
void ListFiles(const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  DIR* d = ::opendir((rel.empty() ? root : root + "/" + rel).c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string r = rel.empty() ? n : rel + "/" + n;
    struct stat st {};
    if (::lstat((root + "/" + r).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) ListFiles(root, r, out);
    if (S_ISREG(st.st_mode)) out->push_back(r);
  }
}

}  // namespace

Status ZipDirectory(const std::string& dir, const std::string& zip_path) {
  std::vector<std::string> files;
  ListFiles(dir, "", &files);
  ZipWriter zip;
  MINERU_RETURN_IF_ERROR(zip.Open(zip_path));
  for (const std::string& f : files) {
    StatusOr<std::string> data = ReadFileToString(dir + "/" + f, size_t(1) << 32);
    if (!data.ok()) return data.status();
    MINERU_RETURN_IF_ERROR(zip.Add(f, *data));
  }
  return zip.Finish();
}

}  // namespace mineru::server
