#include "server/remote_images.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_set>

#include "net/http.h"

namespace mineru::server {
namespace {

using Clock = std::chrono::steady_clock;

// The fetches' shared state: the next URL to take, the bytes left, the results.
struct Fetches {
  std::vector<std::string> urls;
  Clock::time_point deadline;
  const RemoteFetchOptions* o = nullptr;
  std::atomic<size_t> next{0};
  std::mutex mu;  // results, total
  size_t total = 0;
  RemoteBodies results;
};

StatusOr<std::string> FetchOne(net::HttpClient& client, const std::string& url, Fetches& f) {
  const double left = std::chrono::duration<double>(f.deadline - Clock::now()).count();
  // libcurl's limit is whole seconds; below one second left there is no time for a fetch.
  if (left < 1) {
    return DeadlineExceededError("cannot fetch image " + url.substr(0, 200) +
                                 ": the request's fetch deadline passed");
  }
  std::string body;
  const auto r = client.GetSmall(url, &body, f.o->max_bytes_per_url, static_cast<long>(std::floor(left)));
  if (r.failure != net::HttpFailure::kNone) return InvalidArgumentError("cannot fetch image: " + r.error);
  if (r.head.status != 200) {
    return InvalidArgumentError("cannot fetch image: HTTP " + std::to_string(r.head.status) + " from " +
                                net::UrlHost(url));
  }
  std::lock_guard<std::mutex> lock(f.mu);
  if (f.total + body.size() > f.o->max_total_bytes) {
    return ResourceExhaustedError("the request's remote images pass " +
                                  std::to_string(f.o->max_total_bytes >> 20) + " MB together");
  }
  f.total += body.size();
  return body;
}

void Worker(Fetches& f) {
  net::HttpOptions ho;
  ho.public_addresses_only = f.o->public_addresses_only;
  ho.connect_timeout_s = std::max<long>(1, std::min<long>(10, static_cast<long>(f.o->deadline_s)));
  net::HttpClient client(ho);
  for (size_t i = f.next++; i < f.urls.size(); i = f.next++) {
    // Nothing may escape a thread (std::terminate): out of memory is that URL's failure.
    // No client (libcurl could not allocate one): the server's condition for now, as 429 says.
    StatusOr<std::string> got = BusyError("no HTTP client");
    try {
      if (client.ok()) got = FetchOne(client, f.urls[i], f);
    } catch (const std::bad_alloc&) {
      got = OutOfMemoryError("fetching a remote image");
    }
    try {
      std::lock_guard<std::mutex> lock(f.mu);
      f.results.insert_or_assign(f.urls[i], std::move(got));
    } catch (const std::bad_alloc&) {
      // The URL stays without a result: its decode reports it as not fetched.
    }
  }
}

}  // namespace

RemoteBodies FetchRemoteImages(const std::vector<std::string>& urls, const RemoteFetchOptions& o) {
  Fetches f;
  f.o = &o;
  f.deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.deadline_s));
  std::unordered_set<std::string> seen;
  for (const std::string& u : urls) {
    const bool remote = u.rfind("http://", 0) == 0 || u.rfind("https://", 0) == 0;
    if (remote && seen.insert(u).second) f.urls.push_back(u);
  }
  const size_t n = std::min<size_t>(f.urls.size(), static_cast<size_t>(std::max(1, o.parallel)));
  std::vector<std::thread> threads;
  try {
    for (size_t i = 1; i < n; ++i) threads.emplace_back([&f] { Worker(f); });
  } catch (const std::system_error&) {
    // Fewer threads than asked: the ones running (and this one) take every URL.
  }
  if (!f.urls.empty()) Worker(f);
  for (auto& t : threads) t.join();
  return std::move(f.results);
}

}  // namespace mineru::server
