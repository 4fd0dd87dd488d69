// server/http_status.h — the one mapping from an error's kind (StatusCode) to the HTTP status a
// client sees. The routes never choose a status from an error's text: the code that fails says
// what went wrong with the kind it returns (base/status.h), and a route that must see a kind
// differently (a failure while reading a request is the request's) says so by kind, below.
#pragma once

#include "base/status.h"

namespace mineru::server {

// 200 ok; 400 invalid argument, corrupt data, unsupported; 404 not found; 413 resource exhausted
// (too large: a limit of one request or document); 429 busy (retry shortly); 503 unavailable;
// 504 deadline exceeded; 507 out of memory, storage full (the server's condition, not the
// request's form); 500 anything else.
int HttpStatusFor(const Status& s);

// A failure while reading what a client sent (its body, its images, its document): too large,
// busy, out of memory and storage full keep their kinds; any other kind is the request's own
// fault and becomes InvalidArgument (e.g. a remote image that did not arrive in time: 400, not 504).
Status AsRequestError(const Status& s);

// A failure of the storage the server keeps uploads, jobs and results in: never the client's.
// Storage full keeps its kind (507); any other kind becomes Unavailable (503: read-only, gone).
Status AsStorageError(const Status& s);

}  // namespace mineru::server
