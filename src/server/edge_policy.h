// server/edge_policy.h — who may talk to a server that listens on a user's machine: checks every
// request passes before routing, pure functions of the request and the options (tested without
// sockets).
//
// A server on localhost is reachable by every web page its user opens: a page can send "simple"
// cross-site requests (text/plain or form POSTs, no preflight) and, after rebinding its own DNS
// name to 127.0.0.1, read the answers. So:
//  - Host: only the bound address, any IP literal, `localhost`, and --allowed-host names (a
//    rebinding page's requests carry its own name): otherwise 421;
//  - state-changing requests (anything but GET/HEAD/OPTIONS) whose Origin is not the server's own
//    (same host and port as the Host header) or a --cors-origin, or that a browser marks
//    Sec-Fetch-Site: cross-site / same-site, are refused 403; requests without those headers
//    (non-browser clients) pass;
//  - JSON endpoints refuse a body declared as anything but JSON, or with no type from a browser
//    (415), so a form, text/plain or untyped Blob post can never be read as a request;
//  - X-Forwarded-For is believed only from --trusted-proxy peers.
#pragma once

#include <string>
#include <vector>

namespace mineru::server {

struct EdgePolicyOptions {
  std::string bound_host;                    // --host
  std::vector<std::string> allowed_hosts;    // --allowed-host (host names, no port; "*": any)
  std::vector<std::string> cors_origins;     // --cors-origin (scheme://host[:port]; "*": any)
  std::vector<std::string> trusted_proxies;  // --trusted-proxy (peer IP addresses)
};

// What a request looks like to the checks (headers as sent; empty when absent).
struct EdgeRequest {
  std::string method, path;
  std::string host, origin, sec_fetch_site, content_type;
  std::string peer;  // the TCP peer's address
};

struct EdgeVerdict {
  int status = 0;  // 0: pass; else the status to answer
  std::string message;
};

// Host, Origin / Sec-Fetch-Site and Content-Type checks, in that order.
EdgeVerdict CheckEdge(const EdgeRequest& r, const EdgePolicyOptions& o);

// The client's address: the last X-Forwarded-For entry (forwarded_for: every such header line
// joined with commas) when the peer is a trusted proxy (that is the address the proxy saw), else
// the peer itself. Addresses compare as addresses (::ffff:10.0.0.5 is 10.0.0.5).
std::string ClientAddress(const std::string& peer, const std::string& forwarded_for,
                          const EdgePolicyOptions& o);

// The Access-Control-Allow-Origin value for a request's Origin ("" when none is allowed).
std::string AllowedCorsOrigin(const std::string& origin, const EdgePolicyOptions& o);

// True for a POST body route that takes JSON (chat and text completions).
bool IsJsonRoute(const std::string& path);

// The OpenAI-style routes answer under three prefixes, so that every way a client joins its base URL
// reaches them: "/v1/x" (the base URL without /v1, as mineru-vl-utils cuts it), "/x" (an OpenAI
// client given ".../v1") and "/v1/v1/x" (mineru-vl-utils 1.2.1 given ".../v1/": it keeps the path
// and appends /v1/x). Returns the canonical "/v1/x" for any of them, else the path unchanged.
std::string CanonicalApiPath(const std::string& path);

// The prefixes CanonicalApiPath folds, for registering the routes.
const std::vector<std::string>& ApiPathPrefixes();

// A GET for a file under the web root: true when `path` (decoded, as routed) names nothing there or
// a file whose real path (symlinks resolved) is inside web_root_real (itself a real path). A
// symlink out of the root is as good as absent.
bool StaticPathInsideRoot(const std::string& web_root_real, const std::string& path);

// True when a decoded path holds a NUL or another control byte (a name that the file system
// would cut short, or a header injection): such requests are refused 400.
bool HasControlBytes(const std::string& path);

// The host part of a Host header or URL authority, lowercase, without its port or one trailing
// dot: "[::1]:80" -> "::1", "Example.COM.:8" -> "example.com".
std::string HostPart(const std::string& authority);

}  // namespace mineru::server
