#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace mineru {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kIoError:
      return "I/O error";
    case StatusCode::kDataLoss:
      return "corrupt data";
    case StatusCode::kUnimplemented:
      return "unsupported";
    case StatusCode::kResourceExhausted:
      return "limit exceeded";
    case StatusCode::kOutOfMemory:
      return "out of memory";
    case StatusCode::kCancelled:
      return "cancelled";
    case StatusCode::kDeadlineExceeded:
      return "deadline exceeded";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kInternal:
      return "internal error";
    // The later kinds refine an older one and print as it did (ToString below), so logs, reports
    // and job errors read as before; the message says the rest.
    case StatusCode::kBusy:
      return "limit exceeded";
    case StatusCode::kStorageFull:
      return "I/O error";
  }
  return "unknown";
}

bool IsStorageFullErrno(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }

Status IoErrorFromErrno(const std::string& what, int err) {
  std::string m = what + ": " + std::strerror(err);
  return IsStorageFullErrno(err) ? StorageFullError(std::move(m)) : IoError(std::move(m));
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  const std::string name = StatusCodeName(code_);
  if (message_.rfind(name, 0) == 0) return message_;  // "out of memory ..." says it already
  return name + ": " + message_;
}

Status Status::WithPrefix(const std::string& prefix) const {
  if (ok()) return *this;
  return Status(code_, prefix + ": " + message_);
}

}  // namespace mineru
