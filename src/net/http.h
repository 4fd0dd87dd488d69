// net/http.h — a small libcurl HTTP(S) client, shared by download/ (model snapshots) and server/
// (remote image URLs, with public_addresses_only).
//
// One HttpClient keeps one curl handle, so consecutive requests to a host reuse the connection.
// Redirects are followed; headers of every hop are seen, so Hugging Face's X-Linked-* headers on
// the redirect survive. Errors come back classified, so the caller can tell "cannot reach the
// host" (fail fast) from "the transfer broke" (resume) from an HTTP status.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace mineru::net {

struct HttpOptions {
  long connect_timeout_s = 10;
  long low_speed_bytes_s = 1024;
  long low_speed_time_s = 30;
  std::string bearer_token;  // sent as Authorization (curl drops it on a redirect to another host)
  // Connect only to public addresses: every connection (the first and each redirect's) is checked
  // on the address actually connected to (after DNS), and loopback, private, link-local (e.g.
  // 169.254.169.254), CGNAT, multicast and reserved ranges are refused (kUnreachable). Proxies from
  // the environment are not used then. For URLs that clients choose (request forgery).
  bool public_addresses_only = false;
};

// True when a resolved address may be connected to under public_addresses_only.
bool IsPublicAddress(const sockaddr* a);

// Headers of the final response, plus the hub's X-Linked-* from any hop.
struct ResponseHead {
  long status = 0;
  std::optional<uint64_t> content_length;
  std::optional<uint64_t> range_start;  // from Content-Range: bytes START-END/TOTAL
  std::optional<uint64_t> range_total;  // TOTAL of Content-Range (also of "bytes */TOTAL")
  std::optional<uint64_t> linked_size;  // X-Linked-Size
  std::string linked_etag;              // X-Linked-Etag, unquoted
  std::string error_message;            // X-Error-Message (Hugging Face)
};

enum class HttpFailure {
  kNone,
  kUnreachable,  // DNS, connect or TLS handshake failed: nothing was received
  kTransfer,     // the connection broke, stalled or timed out after it was established
  kAborted,      // a callback asked to stop
  kOther,        // anything else curl reports (bad URL, too many redirects, ...)
};

struct HttpResult {
  HttpFailure failure = HttpFailure::kNone;
  std::string error;  // curl's message when failure != kNone
  ResponseHead head;  // valid when head_seen
  bool head_seen = false;
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  bool ok() const { return curl_ != nullptr; }

  // GET into *body (at most max_bytes; more is a kAborted failure); total time limit timeout_s.
  HttpResult GetSmall(const std::string& url, std::string* body, size_t max_bytes, long timeout_s);

  // GET with "Range: bytes=range_start-" when range_start > 0. on_head runs once, when the headers
  // of the final response are complete (before any body byte); on_data gets the body. Either may
  // return false to abort (kAborted). No total time limit: a stall is caught by the low-speed limit.
  HttpResult Stream(const std::string& url, uint64_t range_start,
                    const std::function<bool(const ResponseHead&)>& on_head,
                    const std::function<bool(const char*, size_t)>& on_data);

 private:
  void* curl_ = nullptr;
  HttpOptions options_;
};

// "host" of a URL such as https://host:443/x (for messages).
std::string UrlHost(const std::string& url);

}  // namespace mineru::net
