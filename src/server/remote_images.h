// server/remote_images.h — the http(s) image URLs of one chat request, fetched together under one
// deadline (--allow-remote-images only).
//
// Fetched one after the other with a limit each, 16 slow URLs held a worker for 16 x 30 s. Here
// every URL of a request is fetched at once, at most `parallel` at a time, and all of them share
// one deadline: a URL not fetched by then fails with DeadlineExceeded, and the fetches end within
// the deadline (libcurl's limits are whole seconds: each fetch gets the whole seconds left)
// whatever the URLs do. The caller bounds how many URLs it passes (--max-request-images).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace mineru::server {

struct RemoteFetchOptions {
  double deadline_s = 30;  // for all the request's URLs together
  int parallel = 4;        // fetches running at once
  size_t max_bytes_per_url = size_t(32) << 20;
  size_t max_total_bytes = size_t(200) << 20;  // all URLs of the request together
  bool public_addresses_only = true;           // net::HttpOptions::public_addresses_only
};

// url -> its bytes, or why it could not be fetched.
using RemoteBodies = std::map<std::string, StatusOr<std::string>>;

// Fetches each distinct URL of `urls` (http:// or https:// only; others are left out).
RemoteBodies FetchRemoteImages(const std::vector<std::string>& urls, const RemoteFetchOptions& o);

}  // namespace mineru::server
