// base/status.h — recoverable errors without exceptions.
//
// Every function that can fail on outside data (files, flags, requests) returns Status or
// StatusOr<T>. Programmer errors (broken invariants) use MINERU_CHECK in check.h instead.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace mineru {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller's input is malformed
  kNotFound,           // a file, tensor or key is missing
  kIoError,            // the OS refused a read or write
  kDataLoss,           // a file is truncated or its contents lie
  kUnimplemented,      // a valid input we do not support (yet)
  kResourceExhausted,  // too large: over a limit of one request or input (pixels, tokens, pages)
  kOutOfMemory,        // an allocation failed (std::bad_alloc); the request may succeed later or smaller
  kCancelled,
  kDeadlineExceeded,
  kUnavailable,  // the service cannot serve now (loading, shutting down, degraded, unreachable)
  kInternal,
  // Added later (at the end: the values are sent between processes, see pdf/render_child.cc).
  kBusy,         // at capacity now (a full queue, a shared budget in use): the same request may pass shortly
  kStorageFull,  // a write found no room: a full disk or quota (ENOSPC, EDQUOT), the file size limit (EFBIG)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "code: message", one line (just the message when it starts with the code's name).
  std::string ToString() const;
  // Returns a copy whose message is "prefix: message" (adds context while propagating).
  Status WithPrefix(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status UnimplementedError(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status ResourceExhaustedError(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status CancelledError(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
// "out of memory <what>": for a caught std::bad_alloc (callers turn it into a Status at the place that
// allocates in proportion to outside data; the HTTP layer answers 507).
inline Status OutOfMemoryError(const std::string& what) {
  return {StatusCode::kOutOfMemory, "out of memory " + what};
}
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status BusyError(std::string m) { return {StatusCode::kBusy, std::move(m)}; }
inline Status StorageFullError(std::string m) { return {StatusCode::kStorageFull, std::move(m)}; }

// True for the errno values that say a write found no room: ENOSPC, EDQUOT, EFBIG.
bool IsStorageFullErrno(int err);
// "what: strerror(err)": StorageFull when IsStorageFullErrno(err), else IoError. For every failed
// write or create, so that callers tell a full disk from other I/O failures by kind, not by text.
Status IoErrorFromErrno(const std::string& what, int err);

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // An OK status carries no value: it becomes an Internal error (a bug in the caller), in every
  // build type, so ok() never lies and value() never reads an empty variant.
  StatusOr(const Status& s) : v_(s.ok() ? OkMisuse() : s) {}        // NOLINT
  StatusOr(Status&& s) : v_(s.ok() ? OkMisuse() : std::move(s)) {}  // NOLINT
  StatusOr(const T& v) : v_(v) {}                                   // NOLINT
  StatusOr(T&& v) : v_(std::move(v)) {}                             // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  static Status OkMisuse() { return Status(StatusCode::kInternal, "StatusOr constructed from an OK status"); }
  std::variant<Status, T> v_;
};

#define MINERU_CONCAT_INNER(a, b) a##b
#define MINERU_CONCAT(a, b) MINERU_CONCAT_INNER(a, b)

#define MINERU_RETURN_IF_ERROR(expr) \
  do {                               \
    ::mineru::Status _st = (expr);   \
    if (!_st.ok()) return _st;       \
  } while (0)

#define MINERU_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define MINERU_ASSIGN_OR_RETURN(lhs, expr) \
  MINERU_ASSIGN_OR_RETURN_IMPL(MINERU_CONCAT(_statusor_, __LINE__), lhs, expr)

}  // namespace mineru
