// libFuzzer target: the HTTP front-end's request framing (server/http_framing.h) — heads, chunked
// bodies, pipelining. The input is fed in pieces (the first byte picks the piece size) as a socket
// would deliver it; every request that comes out must be canonical (one Content-Length, CRLF, the
// declared body length) and the reader must never hold more than its limits allow.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/http_framing.h"

namespace fr = mineru::server::framing;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  fr::Limits lim;
  lim.max_head_bytes = 4096;
  lim.max_headers = 32;
  lim.max_body_bytes = 8192;
  fr::RequestReader r(lim);
  const size_t piece = 1 + data[0] % 64;
  const char* p = reinterpret_cast<const char*>(data + 1);
  size_t left = size - 1;
  while (left > 0) {
    const size_t n = left < piece ? left : piece;
    r.Feed(p, n);
    p += n;
    left -= n;
    for (;;) {
      const auto step = r.Next();
      if (step == fr::RequestReader::Step::kReject) {
        if (r.status() < 400 || r.status() > 505) std::abort();
        return 0;  // the connection is closed
      }
      if (step == fr::RequestReader::Step::kNeedMore) break;
      const std::string req = r.take_request();
      const size_t end = fr::FindHeadEnd(req, 0);
      if (end == std::string::npos) std::abort();
      fr::Head h;
      if (fr::ParseHead(std::string_view(req).substr(0, end), lim, &h) != 0)
        std::abort();  // canonical re-parses
      if (h.body == fr::Head::Body::kChunked) std::abort();
      const uint64_t body = req.size() - end;
      if (h.body == fr::Head::Body::kNone ? body != 0 : h.length != body) std::abort();
      if (body > lim.max_body_bytes) std::abort();
    }
    // Buffered bytes stay within a head and a body (plus what one piece added).
    if (r.held() > lim.max_head_bytes + lim.max_body_bytes + piece + 2) std::abort();
  }
  return 0;
}
