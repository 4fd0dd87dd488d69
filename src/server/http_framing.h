// server/http_framing.h — strict HTTP/1.1 request framing for the connection front-end.
//
// The front-end (http_front.cc) reads every request whole before a worker sees it, and hands
// cpp-httplib a canonical copy: the request line, the client's headers minus the framing ones
// (Content-Length, Transfer-Encoding, Expect, TE, Connection-level hop headers stay), one
// Content-Length for the decoded body, CRLF line ends. httplib therefore never decodes chunks,
// never reads the socket and cannot disagree with us about where a request ends.
//
// Contract of RequestReader (one per connection):
//  - Feed() appends what the socket delivered; Next() then says whether a whole request is here,
//    more bytes are needed, or the connection must be answered `status` and closed;
//  - a request is refused (never guessed at) when its framing is ambiguous: duplicate or
//    non-numeric Content-Length, Content-Length with Transfer-Encoding, obs-fold, whitespace
//    before a colon, control bytes -> 400; Transfer-Encoding other than a single "chunked" -> 501;
//    Content-Encoding other than identity -> 415 (no endpoint needs one, and decoding it would
//    bypass the body limit); Expect other than 100-continue -> 417; a head over max_head_bytes or
//    max_headers -> 431; a declared or decoded body over max_body_bytes -> 413; HTTP/2 or
//    anything but HTTP/1.0 and 1.1 -> 505;
//  - bytes after a complete request (pipelining) stay buffered for the next Next().
// No I/O here: the fuzz target (tests/fuzz/fuzz_http_framing.cc) drives it with arbitrary bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mineru::server::framing {

struct Limits {
  size_t max_head_bytes = 64 << 10;
  size_t max_headers = 100;
  uint64_t max_body_bytes = uint64_t(200) << 20;  // decoded bytes, whatever the framing
};

// A request head that passed the strict checks.
struct Head {
  std::string method, target, version;                       // version: "HTTP/1.0" or "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // non-framing headers, as sent
  enum class Body { kNone, kLength, kChunked } body = Body::kNone;
  uint64_t length = 0;  // kLength: the declared length
  bool expect_continue = false;
};

// Offset just past the empty line that ends a head in buf (search resumes at `from`), or npos.
// Lines may end in CRLF or LF.
size_t FindHeadEnd(std::string_view buf, size_t from);

// Parses buf[0, end) (end from FindHeadEnd). 0: ok, else the HTTP status to answer before closing.
int ParseHead(std::string_view head, const Limits& lim, Head* out);

// The head httplib gets: request line, kept headers (a Range naming several ranges is dropped:
// cpp-httplib would build every range in memory), Content-Length of the decoded body.
std::string CanonicalHead(const Head& h, uint64_t body_length);

// Incremental decoder of a chunked body (RFC 9112 7.1). Chunk extensions are skipped (bounded),
// trailers are read and dropped.
class ChunkedDecoder {
 public:
  enum class State { kMore, kDone, kBad, kTooLarge };
  ChunkedDecoder(uint64_t max_body, size_t max_line) : max_body_(max_body), max_line_(max_line) {}
  // Decodes from in (appending data to *out); returns how many bytes of in it used. Stops at the
  // end of the body (the rest of `in` belongs to the next request) or at an error.
  size_t Feed(std::string_view in, std::string* out);
  State state() const { return state_; }

 private:
  enum class Part { kSize, kData, kDataEnd, kTrailer };
  bool EndSizeLine();
  bool EndTrailerLine();
  uint64_t max_body_, decoded_ = 0, left_ = 0;
  size_t max_line_, trailer_bytes_ = 0;
  Part part_ = Part::kSize;
  std::string line_;
  State state_ = State::kMore;
};

class RequestReader {
 public:
  enum class Step { kNeedMore, kRequest, kReject };
  explicit RequestReader(const Limits& lim) : lim_(lim) {}

  void Feed(const char* data, size_t n) { buf_.append(data, n); }
  // kRequest: take() is the canonical request; kReject: status() is the answer.
  Step Next();
  // The canonical head and the decoded body, apart: the body is moved out of the reader's
  // buffer when it is all that buffer holds (no copy), and never kept here afterwards.
  struct Request {
    std::string head, body;
  };
  Request take() { return std::move(request_); }
  // head + body in one string (tests and the fuzz target).
  std::string take_request() {
    Request r = take();
    return r.head + r.body;
  }
  int status() const { return status_; }
  // The head is here and has a body that is still arriving.
  bool in_body() const { return have_head_; }
  const Head& head() const { return head_; }
  // True once per head that asked "Expect: 100-continue" and whose body may come.
  bool TakeContinue();
  // Bytes held for this connection (buffer + body decoded so far): the memory it costs.
  size_t held() const { return buf_.size() + body_.size(); }
  bool empty() const { return buf_.empty() && !have_head_; }

 private:
  Step Finish(size_t consumed);
  Limits lim_;
  std::string buf_;     // raw bytes not consumed yet
  size_t scanned_ = 0;  // FindHeadEnd resumes here
  bool have_head_ = false, continue_pending_ = false;
  Head head_;
  std::string body_;  // decoded so far (chunked)
  ChunkedDecoder chunks_{0, 0};
  Request request_;
  int status_ = 0;
};

}  // namespace mineru::server::framing
