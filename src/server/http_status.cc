// server/http_status.cc — see http_status.h.
#include "server/http_status.h"

namespace mineru::server {

int HttpStatusFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kDataLoss:
    case StatusCode::kUnimplemented:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
      return 413;
    case StatusCode::kBusy:
      return 429;
    case StatusCode::kOutOfMemory:
    case StatusCode::kStorageFull:
      return 507;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    case StatusCode::kIoError:
    case StatusCode::kCancelled:
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

Status AsRequestError(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
    case StatusCode::kInvalidArgument:
    case StatusCode::kResourceExhausted:
    case StatusCode::kBusy:
    case StatusCode::kOutOfMemory:
    case StatusCode::kStorageFull:
      return s;
    default:
      return InvalidArgumentError(s.message());
  }
}

Status AsStorageError(const Status& s) {
  if (s.ok() || s.code() == StatusCode::kStorageFull) return s;
  return UnavailableError(s.message());
}

}  // namespace mineru::server
