#include "server/edge_policy.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>

namespace mineru::server {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

bool IsIpLiteral(const std::string& h) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, h.c_str(), buf) == 1 || ::inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

// True when v (a host name, lowercase, no port) is on the list (entries are written as a user
// would: any case, perhaps with a port or a trailing dot).
bool Contains(const std::vector<std::string>& list, const std::string& v) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& x) { return x == "*" || HostPart(x) == v; });
}

// An IP address in one spelling (inet_ntop's), IPv4-mapped IPv6 as IPv4; "" when not an address.
std::string CanonicalIp(const std::string& a) {
  unsigned char b[16];
  char out[INET6_ADDRSTRLEN];
  const std::string t = Trim(a);
  if (::inet_pton(AF_INET, t.c_str(), b) == 1) return ::inet_ntop(AF_INET, b, out, sizeof(out)) ? out : "";
  if (::inet_pton(AF_INET6, t.c_str(), b) != 1) return "";
  static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(kMapped, kMapped + 12, b)) return ::inet_ntop(AF_INET, b + 12, out, sizeof(out)) ? out : "";
  return ::inet_ntop(AF_INET6, b, out, sizeof(out)) ? out : "";
}

// An origin as browsers send it: lowercase scheme://host[:port], no default port, no path.
std::string NormalOrigin(const std::string& origin) {
  std::string o = Lower(Trim(origin));
  while (!o.empty() && o.back() == '/') o.pop_back();
  for (const auto& [scheme, port] :
       {std::pair<std::string, std::string>{"http://", ":80"}, {"https://", ":443"}}) {
    if (o.rfind(scheme, 0) == 0 && o.size() > port.size() &&
        o.compare(o.size() - port.size(), port.size(), port) == 0) {
      o.resize(o.size() - port.size());
    }
  }
  return o;
}

// "host:port" of an authority with the scheme's default port filled in (lowercase).
std::string HostAndPort(const std::string& authority, bool https) {
  const std::string a = Lower(Trim(authority));
  const size_t close = a.rfind(']');
  const size_t colon = a.rfind(':');
  const bool has_port = colon != std::string::npos && (close == std::string::npos || colon > close);
  return has_port ? a : a + (https ? ":443" : ":80");
}

EdgeVerdict CheckHost(const EdgeRequest& r, const EdgePolicyOptions& o) {
  if (r.host.empty()) return {};  // HTTP/1.0 clients; browsers always send Host
  const std::string h = HostPart(r.host);
  if (h == "localhost" || IsIpLiteral(h) || h == Lower(o.bound_host) || Contains(o.allowed_hosts, h))
    return {};
  return {421, "this server does not answer to the host name '" + h +
                   "' (a page that rebinds its name to this address must not reach it); start it with "
                   "--allowed-host " +
                   h + " if that name is yours"};
}

EdgeVerdict CheckOrigin(const EdgeRequest& r, const EdgePolicyOptions& o) {
  if (r.method == "GET" || r.method == "HEAD" || r.method == "OPTIONS") return {};
  EdgeVerdict refused{403, "cross-origin requests that change state are refused (Origin '" + r.origin +
                               "'); start the server with --cors-origin ORIGIN to allow a site"};
  if (!r.origin.empty()) {
    if (!AllowedCorsOrigin(r.origin, o).empty()) return {};
    const std::string origin = Lower(Trim(r.origin));
    const size_t sep = origin.find("://");
    if (sep == std::string::npos || r.host.empty()) return refused;  // "null", opaque origins
    const bool https = origin.compare(0, sep, "https") == 0;
    if (HostAndPort(origin.substr(sep + 3), https) == HostAndPort(r.host, https)) return {};
    return refused;
  }
  const std::string site = Lower(Trim(r.sec_fetch_site));
  if (site == "cross-site" || site == "same-site") return refused;
  return {};
}

EdgeVerdict CheckContentType(const EdgeRequest& r) {
  if (r.method != "POST" || !IsJsonRoute(r.path)) return {};
  // No type at all: a non-browser client (accepted); from a browser (it sends Origin or
  // Sec-Fetch-*), an untyped Blob body, which needs no preflight: refused.
  if (r.content_type.empty()) {
    if (r.origin.empty() && r.sec_fetch_site.empty()) return {};
    return {415, "this endpoint takes a JSON body: send Content-Type: application/json"};
  }
  std::string media = r.content_type.substr(0, r.content_type.find(';'));
  media = Lower(Trim(media));
  if (media == "application/json" || (media.size() > 5 && media.compare(media.size() - 5, 5, "+json") == 0 &&
                                      media.rfind("application/", 0) == 0)) {
    return {};
  }
  return {415, "this endpoint takes a JSON body (Content-Type: application/json), not '" + media + "'"};
}

}  // namespace

std::string HostPart(const std::string& authority) {
  const std::string a = Lower(Trim(authority));
  if (!a.empty() && a[0] == '[') {
    const size_t close = a.find(']');
    return close == std::string::npos ? a : a.substr(1, close - 1);
  }
  const size_t colon = a.find(':');
  // More than one colon without brackets: an IPv6 literal with no port.
  std::string h =
      colon != std::string::npos && a.find(':', colon + 1) == std::string::npos ? a.substr(0, colon) : a;
  if (h.size() > 1 && h.back() == '.') h.pop_back();  // "localhost." is "localhost"
  return h;
}

bool IsJsonRoute(const std::string& path) {
  const std::string p = CanonicalApiPath(path);
  return p == "/v1/chat/completions" || p == "/v1/completions";
}

const std::vector<std::string>& ApiPathPrefixes() {
  static const std::vector<std::string> kPrefixes = {"/v1", "", "/v1/v1"};
  return kPrefixes;
}

std::string CanonicalApiPath(const std::string& path) {
  for (const char* route : {"/chat/completions", "/completions", "/models"}) {
    for (const std::string& prefix : ApiPathPrefixes()) {
      if (path == prefix + route) return std::string("/v1") + route;
    }
  }
  return path;
}

EdgeVerdict CheckEdge(const EdgeRequest& r, const EdgePolicyOptions& o) {
  if (EdgeVerdict v = CheckHost(r, o); v.status) return v;
  if (EdgeVerdict v = CheckOrigin(r, o); v.status) return v;
  return CheckContentType(r);
}

std::string ClientAddress(const std::string& peer, const std::string& forwarded_for,
                          const EdgePolicyOptions& o) {
  const std::string p = CanonicalIp(peer);
  const bool trusted = !p.empty() && std::any_of(o.trusted_proxies.begin(), o.trusted_proxies.end(),
                                                 [&](const std::string& t) { return CanonicalIp(t) == p; });
  if (!trusted || forwarded_for.empty()) return peer;
  const size_t comma = forwarded_for.find_last_of(',');
  const std::string last = Trim(comma == std::string::npos ? forwarded_for : forwarded_for.substr(comma + 1));
  return last.empty() ? peer : last;
}

bool StaticPathInsideRoot(const std::string& web_root_real, const std::string& path) {
  std::string file = web_root_real + path;
  if (!file.empty() && file.back() == '/') file += "index.html";  // what the mount point serves
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return true;  // nothing there: the router answers 404
  char real[PATH_MAX];
  if (::realpath(file.c_str(), real) == nullptr) return false;  // a dangling or looping link
  const std::string r(real);
  return r.size() > web_root_real.size() && r.compare(0, web_root_real.size(), web_root_real) == 0 &&
         r[web_root_real.size()] == '/';
}

bool HasControlBytes(const std::string& path) {
  return std::any_of(path.begin(), path.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

std::string AllowedCorsOrigin(const std::string& origin, const EdgePolicyOptions& o) {
  if (origin.empty()) return "";
  const std::string want = NormalOrigin(origin);
  for (const std::string& x : o.cors_origins) {
    if (x == "*" || NormalOrigin(x) == want) return Trim(origin);
  }
  return "";
}

}  // namespace mineru::server
