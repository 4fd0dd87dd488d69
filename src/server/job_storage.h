// server/job_storage.h — what the document jobs keep on disk (and in a store that keeps files),
// bounded: a byte quota over uploads and results, with the oldest finished results expiring first
// when a new job needs room, and retention by age.
//
// Usage is counted, not walked per request: the bytes of data_dir/jobs plus the store's own files,
// measured at start and at every retention sweep, moved by each upload (+), finished job (+ its
// results) and expired job (-) in between. A quota of 0 bounds nothing.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace mineru::server {

// Bytes of the regular files under path (recursively; symlinks not followed). 0 when absent.
int64_t TreeBytes(const std::string& path);

}  // namespace mineru::server
