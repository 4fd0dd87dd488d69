// net/http.cc — libcurl wrapper: redirects, per-hop headers, error classification.
#include "net/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <curl/curl.h>

namespace mineru::net {
namespace {

std::once_flag g_curl_init;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::optional<uint64_t> ParseU64(const std::string& s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// Strips W/ and quotes from an ETag.
std::string Unquote(std::string s) {
  if (s.rfind("W/", 0) == 0) s = s.substr(2);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

struct Transfer {
  ResponseHead cur;
  bool cur_has_location = false;
  std::optional<uint64_t> linked_size;
  std::string linked_etag;
  ResponseHead final_head;
  bool head_done = false;
  bool aborted = false;
  const std::function<bool(const ResponseHead&)>* on_head = nullptr;
  const std::function<bool(const char*, size_t)>* on_data = nullptr;
  std::string* body = nullptr;
  size_t max_bytes = 0;

  // Returns false when the caller aborted.
  bool FinishHead() {
    if (head_done) return true;
    head_done = true;
    final_head = cur;
    final_head.linked_size = linked_size;
    final_head.linked_etag = linked_etag;
    if (on_head && *on_head && !(*on_head)(final_head)) {
      aborted = true;
      return false;
    }
    return true;
  }
};

size_t HeaderCallback(char* data, size_t size, size_t nitems, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nitems;
  std::string line(data, n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (first, after a 1xx, or after a redirect)
    t->cur = ResponseHead();
    t->cur_has_location = false;
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) t->cur.status = std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return n;
  }
  if (line.empty()) {  // end of this response's headers
    const long st = t->cur.status;
    if (st >= 100 && st < 200) return n;                                      // interim
    if (st >= 300 && st < 400 && st != 304 && t->cur_has_location) return n;  // curl follows it
    return t->FinishHead() ? n : 0;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return n;
  const std::string name = Lower(Trim(line.substr(0, colon)));
  const std::string value = Trim(line.substr(colon + 1));
  if (name == "content-length") {
    t->cur.content_length = ParseU64(value);
  } else if (name == "content-range") {
    // "bytes 100-199/200" or "bytes */200"
    std::string v = value;
    if (Lower(v.substr(0, 6)) == "bytes ") v = Trim(v.substr(6));
    const size_t slash = v.find('/');
    if (slash != std::string::npos) {
      t->cur.range_total = ParseU64(v.substr(slash + 1));
      const std::string span = v.substr(0, slash);
      const size_t dash = span.find('-');
      if (dash != std::string::npos) t->cur.range_start = ParseU64(span.substr(0, dash));
    }
  } else if (name == "x-linked-size") {
    t->linked_size = ParseU64(value);
  } else if (name == "x-linked-etag") {
    t->linked_etag = Unquote(value);
  } else if (name == "x-error-message") {
    t->cur.error_message = value;
  } else if (name == "location") {
    t->cur_has_location = !value.empty();
  }
  return n;
}

size_t WriteCallback(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  if (!t->head_done && !t->FinishHead()) return 0;
  if (t->aborted) return 0;
  if (t->body) {
    if (t->body->size() + n > t->max_bytes) {
      t->aborted = true;
      return 0;
    }
    t->body->append(data, n);
    return n;
  }
  if (t->on_data && *t->on_data && !(*t->on_data)(data, n)) {
    t->aborted = true;
    return 0;
  }
  return n;
}

}  // namespace

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

bool IsPublicV4(uint32_t ip) {
  struct Range {
    uint32_t net, bits;
  };
  static const Range kRefused[] = {{0x00000000, 8},  {0x0A000000, 8},  {0x64400000, 10}, {0x7F000000, 8},
                                   {0xA9FE0000, 16}, {0xAC100000, 12}, {0xC0000000, 24}, {0xC0A80000, 16},
                                   {0xC6120000, 15}, {0xE0000000, 3}};  // 224/4 .. 255/8
  for (const Range& r : kRefused) {
    if ((ip >> (32 - r.bits)) == (r.net >> (32 - r.bits))) return false;
  }
  return true;
}

bool IsPublicAddress(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    return IsPublicV4(ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr));
  }
  if (a->sa_family != AF_INET6) return false;
  const uint8_t* b = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr.s6_addr;
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b, kMapped, 12) == 0) {  // ::ffff:a.b.c.d
    return IsPublicV4(uint32_t(b[12]) << 24 | uint32_t(b[13]) << 16 | uint32_t(b[14]) << 8 | b[15]);
  }
  static const uint8_t kZero[15] = {0};
  if (std::memcmp(b, kZero, 15) == 0) return false;                                // :: and ::1
  if ((b[0] & 0xfe) == 0xfc) return false;                                         // fc00::/7 unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return false;                         // fe80::/10 link-local
  if (b[0] == 0xff) return false;                                                  // multicast
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return false;  // NAT64 64:ff9b::/96
  if (b[0] == 0x20 && b[1] == 0x02) return false;                                  // 6to4 (embeds any IPv4)
  return true;
}

namespace {

// CURLOPT_OPENSOCKETFUNCTION under public_addresses_only: runs for every connection curl opens.
curl_socket_t OpenPublicSocket(void*, curlsocktype purpose, curl_sockaddr* a) {
  if (purpose != CURLSOCKTYPE_IPCXN || !IsPublicAddress(&a->addr)) return CURL_SOCKET_BAD;
  return ::socket(a->family, a->socktype, a->protocol);
}

// Sets up c for one GET of url (after a reset): redirects, protocols, the public-address guard,
// timeouts, and the callbacks into t; curl's error text goes to errbuf.
void SetTransferOptions(CURL* c, const HttpOptions& o, const std::string& url, long timeout_s, char* errbuf,
                        Transfer* t) {
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
  if (o.public_addresses_only) {
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, &OpenPublicSocket);
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  }
  curl_easy_setopt(c, CURLOPT_USERAGENT, "mineru-cpp/0.1");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, o.low_speed_bytes_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o.low_speed_time_s);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  if (timeout_s > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &HeaderCallback);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &WriteCallback);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
}

// What a failed transfer (code, not aborted by a callback) counts as: the host unreachable, the
// transfer broken off after it started, or anything else.
HttpFailure FailureOf(CURLcode code, CURL* c, const Transfer* t) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return t->head_done ? HttpFailure::kTransfer : HttpFailure::kUnreachable;
    case CURLE_OPERATION_TIMEDOUT: {
      curl_off_t connect_us = 0;
      curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_us);
      return (!t->head_done && connect_us == 0) ? HttpFailure::kUnreachable : HttpFailure::kTransfer;
    }
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_SHUTDOWN_FAILED:
      return HttpFailure::kTransfer;
    default:
      return HttpFailure::kOther;
  }
}

HttpResult Perform(CURL* c, const HttpOptions& o, const std::string& url, uint64_t range_start,
                   long timeout_s, Transfer* t) {
  HttpResult r;
  char errbuf[CURL_ERROR_SIZE];
  errbuf[0] = '\0';
  SetTransferOptions(c, o, url, timeout_s, errbuf, t);
  std::string range;
  if (range_start > 0) {
    range = std::to_string(range_start) + "-";
    curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  }
  curl_slist* headers = nullptr;
  if (!o.bearer_token.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + o.bearer_token).c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  }
  const CURLcode code = curl_easy_perform(c);
  if (code == CURLE_OK && !t->head_done) t->FinishHead();  // e.g. an empty body
  curl_slist_free_all(headers);

  r.head_seen = t->head_done;
  r.head = t->final_head;
  if (code == CURLE_OK) {
    r.failure = t->aborted ? HttpFailure::kAborted : HttpFailure::kNone;
    return r;
  }
  r.error = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(code));
  while (!r.error.empty() && (r.error.back() == '\n' || r.error.back() == '\r')) r.error.pop_back();
  if (t->aborted) {
    r.failure = HttpFailure::kAborted;
    return r;
  }
  r.failure = FailureOf(code, c, t);
  return r;
}

}  // namespace

HttpResult HttpClient::GetSmall(const std::string& url, std::string* body, size_t max_bytes, long timeout_s) {
  body->clear();
  Transfer t;
  t.body = body;
  t.max_bytes = max_bytes;
  if (!curl_) return HttpResult{HttpFailure::kOther, "cannot initialise libcurl", {}, false};
  return Perform(static_cast<CURL*>(curl_), options_, url, 0, timeout_s, &t);
}

HttpResult HttpClient::Stream(const std::string& url, uint64_t range_start,
                              const std::function<bool(const ResponseHead&)>& on_head,
                              const std::function<bool(const char*, size_t)>& on_data) {
  Transfer t;
  t.on_head = &on_head;
  t.on_data = &on_data;
  if (!curl_) return HttpResult{HttpFailure::kOther, "cannot initialise libcurl", {}, false};
  return Perform(static_cast<CURL*>(curl_), options_, url, range_start, 0, &t);
}

std::string UrlHost(const std::string& url) {
  size_t b = url.find("://");
  b = (b == std::string::npos) ? 0 : b + 3;
  size_t e = url.find_first_of("/?#", b);
  std::string host = url.substr(b, e == std::string::npos ? std::string::npos : e - b);
  const size_t at = host.rfind('@');
  if (at != std::string::npos) host = host.substr(at + 1);
  return host;
}

}  // namespace mineru::net
