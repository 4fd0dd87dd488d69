// server/http_framing.cc — see http_framing.h.
#include "server/http_framing.h"

#include <algorithm>

namespace mineru::server::framing {
namespace {

bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return IsTokenChar(static_cast<unsigned char>(c)); });
}

std::string Lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "METHOD SP target SP HTTP/1.x", single spaces, printable target.
int ParseRequestLine(std::string_view line, Head* h) {
  const size_t a = line.find(' ');
  if (a == std::string_view::npos) return 400;
  const size_t b = line.find(' ', a + 1);
  if (b == std::string_view::npos || line.find(' ', b + 1) != std::string_view::npos) return 400;
  const std::string_view method = line.substr(0, a), target = line.substr(a + 1, b - a - 1),
                         version = line.substr(b + 1);
  if (!IsToken(method) || target.empty()) return 400;
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return 400;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return version.size() == 8 && version.substr(0, 5) == "HTTP/" ? 505 : 400;
  }
  h->method = method;
  h->target = target;
  h->version = version;
  return 0;
}

// Splits the head into lines (without their CRLF/LF), up to the empty line. false: malformed.
bool SplitLines(std::string_view head, std::vector<std::string_view>* lines) {
  size_t pos = 0;
  while (pos < head.size()) {
    const size_t eol = head.find('\n', pos);
    if (eol == std::string_view::npos) return false;
    std::string_view line = head.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = eol + 1;
    if (line.empty()) return pos == head.size();
    lines->push_back(line);
  }
  return false;
}

struct Framing {
  bool length = false, chunked = false;
};

// One header line: checked, framing headers interpreted, the rest kept. 0 or a status.
int TakeHeader(std::string_view line, const Limits& lim, Head* h, Framing* f, bool* host) {
  if (line.front() == ' ' || line.front() == '\t') return 400;  // obs-fold
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) return 400;
  const std::string_view name = line.substr(0, colon), value = Trim(line.substr(colon + 1));
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return 400;
  }
  const std::string n = Lower(name);
  if (n == "content-length") {
    if (f->length || value.empty() || value.size() > 19 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return 400;
    }
    f->length = true;
    h->length = std::stoull(std::string(value));
    return h->length > lim.max_body_bytes ? 413 : 0;
  }
  if (n == "transfer-encoding") {
    if (f->chunked || Lower(value) != "chunked") return 501;
    f->chunked = true;
    return 0;
  }
  if (n == "content-encoding") return Lower(value) == "identity" ? 0 : 415;
  if (n == "expect") {
    if (Lower(value) != "100-continue") return 417;
    h->expect_continue = true;
    return 0;
  }
  if (n == "host") {
    if (*host) return 400;
    *host = true;
  }
  h->headers.emplace_back(std::string(name), std::string(value));
  return 0;
}

}  // namespace

size_t FindHeadEnd(std::string_view b, size_t from) {
  for (size_t i = from; i < b.size(); ++i) {
    if (b[i] != '\n') continue;
    size_t j = i + 1;
    if (j < b.size() && b[j] == '\r') ++j;
    if (j < b.size() && b[j] == '\n') return j + 1;
  }
  return std::string_view::npos;
}

int ParseHead(std::string_view head, const Limits& lim, Head* h) {
  *h = Head();
  std::vector<std::string_view> lines;
  if (!SplitLines(head, &lines) || lines.empty()) return 400;
  if (lines.size() - 1 > lim.max_headers) return 431;
  if (const int s = ParseRequestLine(lines[0], h)) return s;
  Framing f;
  bool host = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (const int s = TakeHeader(lines[i], lim, h, &f, &host)) return s;
  }
  if (f.length && f.chunked) return 400;  // the classic smuggling ambiguity: refuse, never pick one
  if (f.chunked && h->version == "HTTP/1.0") return 400;
  h->body = f.chunked ? Head::Body::kChunked : f.length ? Head::Body::kLength : Head::Body::kNone;
  if (h->body == Head::Body::kNone) h->expect_continue = false;
  return 0;
}

std::string CanonicalHead(const Head& h, uint64_t body_length) {
  std::string s = h.method + " " + h.target + " " + h.version + "\r\n";
  for (const auto& [k, v] : h.headers) {
    if (v.find(',') != std::string::npos && Lower(k) == "range") continue;  // several ranges: ignored
    s += k + ": " + v + "\r\n";
  }
  if (h.body != Head::Body::kNone) s += "Content-Length: " + std::to_string(body_length) + "\r\n";
  s += "\r\n";
  return s;
}

bool ChunkedDecoder::EndSizeLine() {
  if (line_.empty() || line_.back() != '\r') return false;  // CRLF only
  line_.pop_back();
  uint64_t size = 0;
  size_t i = 0;
  for (; i < line_.size(); ++i) {
    const char c = line_[i];
    const int d = c >= '0' && c <= '9'                     ? c - '0'
                  : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
                                                           : -1;
    if (d < 0) break;
    if (i >= 16) return false;
    size = size * 16 + static_cast<uint64_t>(d);
  }
  if (i == 0 || (i < line_.size() && line_[i] != ';')) return false;  // an extension is skipped
  if (size > max_body_ - decoded_) {
    state_ = State::kTooLarge;
    return true;
  }
  decoded_ += size;
  left_ = size;
  part_ = size == 0 ? Part::kTrailer : Part::kData;
  return true;
}

bool ChunkedDecoder::EndTrailerLine() {
  if (line_.empty() || line_.back() != '\r') return false;
  line_.pop_back();
  if (line_.empty()) {
    state_ = State::kDone;
    return true;
  }
  trailer_bytes_ += line_.size();
  return trailer_bytes_ <= max_line_ && line_.find(':') != std::string::npos;  // dropped
}

size_t ChunkedDecoder::Feed(std::string_view in, std::string* out) {
  size_t i = 0;
  while (i < in.size() && state_ == State::kMore) {
    if (part_ == Part::kData) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left_, in.size() - i));
      out->append(in.substr(i, take));
      i += take;
      left_ -= take;
      if (left_ == 0) part_ = Part::kDataEnd;
    } else if (part_ == Part::kDataEnd) {
      line_ += in[i++];
      if (line_ == "\r\n") {
        line_.clear();
        part_ = Part::kSize;
      } else if (line_ != "\r") {
        state_ = State::kBad;
      }
    } else {  // a size or trailer line, up to its LF
      const size_t nl = in.find('\n', i);
      const size_t take = (nl == std::string_view::npos ? in.size() : nl) - i;
      if (line_.size() + take > max_line_) {
        state_ = State::kBad;
        break;
      }
      line_.append(in.substr(i, take));
      if (nl == std::string_view::npos) return in.size();
      i = nl + 1;
      const bool ok = part_ == Part::kSize ? EndSizeLine() : EndTrailerLine();
      line_.clear();
      if (!ok) state_ = State::kBad;
    }
  }
  return i;
}

bool RequestReader::TakeContinue() {
  const bool r = continue_pending_;
  continue_pending_ = false;
  return r;
}

RequestReader::Step RequestReader::Next() {
  if (!have_head_) {
    // A stray CRLF between requests (RFC 9112 2.2) is skipped.
    while (!buf_.empty()) {
      const size_t n = buf_[0] == '\n' ? 1 : buf_.compare(0, 2, "\r\n") == 0 ? 2 : 0;
      if (n == 0) break;
      buf_.erase(0, n);
      scanned_ = 0;
    }
    const size_t end = FindHeadEnd(buf_, scanned_);
    if (end == std::string::npos || end > lim_.max_head_bytes) {
      if (buf_.size() > lim_.max_head_bytes) {
        status_ = 431;
        return Step::kReject;
      }
      scanned_ = buf_.size() > 2 ? buf_.size() - 2 : 0;
      return Step::kNeedMore;
    }
    if ((status_ = ParseHead(std::string_view(buf_).substr(0, end), lim_, &head_)) != 0) return Step::kReject;
    buf_.erase(0, end);
    scanned_ = 0;
    have_head_ = true;
    continue_pending_ = head_.expect_continue;
    body_.clear();
    chunks_ = ChunkedDecoder(lim_.max_body_bytes, lim_.max_head_bytes);
    // The declared body (within the limit, checked above) arrives into room made once, not into
    // a buffer that doubles as it grows.
    if (head_.body == Head::Body::kLength) buf_.reserve(static_cast<size_t>(head_.length));
  }
  switch (head_.body) {
    case Head::Body::kNone:
      request_ = {CanonicalHead(head_, 0), std::string()};
      return Finish(0);
    case Head::Body::kLength: {
      if (buf_.size() < head_.length) return Step::kNeedMore;
      const size_t n = static_cast<size_t>(head_.length);
      request_.head = CanonicalHead(head_, head_.length);
      if (buf_.size() == n) {  // nothing pipelined behind it: the buffer becomes the body
        request_.body = std::move(buf_);
        buf_ = std::string();
        return Finish(0);
      }
      request_.body.assign(buf_, 0, n);
      return Finish(n);
    }
    case Head::Body::kChunked:
      break;
  }
  buf_.erase(0, chunks_.Feed(buf_, &body_));
  switch (chunks_.state()) {
    case ChunkedDecoder::State::kMore:
      return Step::kNeedMore;
    case ChunkedDecoder::State::kBad:
      status_ = 400;
      return Step::kReject;
    case ChunkedDecoder::State::kTooLarge:
      status_ = 413;
      return Step::kReject;
    case ChunkedDecoder::State::kDone:
      break;
  }
  request_ = {CanonicalHead(head_, body_.size()), std::move(body_)};
  body_ = std::string();
  return Finish(0);
}

RequestReader::Step RequestReader::Finish(size_t consumed) {
  buf_.erase(0, consumed);
  // What is left is pipelined bytes: the room a large body needed is given back.
  if (buf_.capacity() > (size_t(64) << 10) && buf_.size() < buf_.capacity() / 4) buf_.shrink_to_fit();
  have_head_ = false;
  continue_pending_ = false;
  return Step::kRequest;
}

}  // namespace mineru::server::framing
