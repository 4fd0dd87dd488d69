// server/job_storage.h — what the document jobs keep on disk (and in a store that keeps files),
// bounded: a byte quota over uploads and results, with the oldest finished results expiring first
// when a new job needs room, and retention by age.
//
// Usage is counted, not walked per request: the bytes of data_dir/jobs (or, for a store that keeps
// the files, the store's own), measured at start and at every retention sweep, moved by each new
// job's upload (+; given back when the submission stores no new job), finished job (+ its results,
// before it can expire) and expired job (-) in between. A quota of 0 bounds nothing. The
// StoreCharge that makes room is declared in state.h (it needs the server's state).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace mineru::server {

// Bytes of the regular files under path (recursively; symlinks not followed). 0 when absent.
int64_t TreeBytes(const std::string& path);

}  // namespace mineru::server
