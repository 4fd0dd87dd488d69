// server/http_front.cc — see http_front.h.
#include "server/http_front.h"

#include "server/http_framing.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace mineru::server {

using Clock = std::chrono::steady_clock;

struct HttpFront::Conn {
  explicit Conn(const framing::Limits& lim) : reader(lim) {}
  int fd = -1;
  framing::RequestReader reader;            // bytes received, parsed strictly
  framing::RequestReader::Request request;  // a whole request (canonical form) for a worker
  Clock::time_point deadline, body_deadline;
  bool idle = false;       // kept alive, nothing of the next request yet (closed quietly at the deadline)
  bool ops = false;        // GET /health or /metrics
  bool lingering = false;  // refused: what the client still sends is read and dropped until the deadline
  size_t reserved = 0;     // of the reader's body budget
  size_t served = 0;
};

namespace {

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Waits until fd is ready for events (POLLIN or POLLOUT); false after timeout_s.
bool WaitFor(int fd, short events, double timeout_s) {
  const auto end = Clock::now() + Seconds(timeout_s);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r > 0) return true;  // ready, or an error/hang-up the next call reports
    if (r < 0 && errno != EINTR) return true;
  }
}

// A best-effort answer from outside httplib (the socket is closed right after).
void SendCanned(int fd, int code, const char* reason, const char* message) {
  const std::string body = std::string("{\"object\":\"error\",\"error\":{\"message\":\"") + message +
                           "\",\"type\":\"" + (code >= 500 ? "server_error" : "invalid_request_error") +
                           "\",\"code\":" + std::to_string(code) + "}}";
  std::string r = "HTTP/1.1 " + std::to_string(code) + " " + reason +
                  "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                  "\r\nConnection: close\r\n" + (code == 503 ? "Retry-After: 1\r\n" : "") + "\r\n" + body;
  (void)::send(fd, r.data(), r.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

// What a refusal from the reader says (the connection is closed right after).
const char* Reason(int status, const char** message) {
  switch (status) {
    case 413:
      *message = "the request body is larger than --max-body-mb";
      return "Payload Too Large";
    case 415:
      *message = "request bodies must not have a Content-Encoding";
      return "Unsupported Media Type";
    case 417:
      *message = "only Expect: 100-continue is supported";
      return "Expectation Failed";
    case 431:
      *message = "the request head is too large";
      return "Request Header Fields Too Large";
    case 501:
      *message = "only Transfer-Encoding: chunked is supported";
      return "Not Implemented";
    case 503:
      *message = "the server is busy; retry shortly";
      return "Service Unavailable";
    case 505:
      *message = "only HTTP/1.0 and HTTP/1.1 are supported";
      return "HTTP Version Not Supported";
    default:
      *message = "malformed or ambiguous request framing";
      return "Bad Request";
  }
}

// One request for httplib: reads the whole request the reader collected (never the socket: its
// bytes past this request belong to the next one), writes to the socket. Waiting for the client
// to read is bounded by write_timeout_s in all, for the whole response.
class FrontStream final : public httplib::Stream {
 public:
  FrontStream(HttpFront::Conn& c, const HttpFrontOptions& o)
      : c_(c), size_(c.request.head.size() + c.request.body.size()), write_left_s_(o.write_timeout_s) {}

  bool is_readable() const override { return pos_ < size_; }
  bool is_writable() const override { return Wait(POLLOUT); }

  // The head, then the body; both are freed once read to the end (httplib holds its own copy).
  ssize_t read(char* ptr, size_t size) override {
    const std::string& head = c_.request.head;
    size_t n = 0;
    if (pos_ < head.size()) {
      n = std::min(size, head.size() - pos_);
      std::memcpy(ptr, head.data() + pos_, n);
    } else {
      const size_t at = pos_ - head.size();
      n = std::min(size, c_.request.body.size() - at);
      std::memcpy(ptr, c_.request.body.data() + at, n);
    }
    pos_ += n;
    if (pos_ == size_) c_.request = {};
    return static_cast<ssize_t>(n);
  }

  // The body, moved out unread (see HttpFront::TakeBody); nullopt once httplib began reading it.
  std::optional<std::string> TakeBody() {
    if (pos_ != c_.request.head.size()) return std::nullopt;
    std::string body = std::move(c_.request.body);
    c_.request = {};
    pos_ = size_;
    return body;
  }

  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      const ssize_t n = ::send(c_.fd, ptr, size, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!Wait(POLLOUT)) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Addr(true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Addr(false, ip, port); }
  socket_t socket() const override { return c_.fd; }

  // httplib left part of the request unread (a body it did not want).
  bool unread() const { return pos_ < size_; }
  mutable bool write_timed_out = false;

 private:
  bool Wait(short events) const {
    const auto t0 = Clock::now();
    const bool ok = write_left_s_ > 0 && WaitFor(c_.fd, events, write_left_s_);
    write_left_s_ -= std::chrono::duration<double>(Clock::now() - t0).count();
    if (!ok) write_timed_out = true;
    return ok;
  }
  void Addr(bool peer, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    const int r = peer ? ::getpeername(c_.fd, reinterpret_cast<sockaddr*>(&a), &len)
                       : ::getsockname(c_.fd, reinterpret_cast<sockaddr*>(&a), &len);
    if (r != 0) return;
    char text[INET6_ADDRSTRLEN] = {0};
    if (a.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  HttpFront::Conn& c_;
  const size_t size_;  // head + body
  mutable double write_left_s_;
  size_t pos_ = 0;
};

// The stream of the request this worker thread is processing (null outside process_request).
thread_local FrontStream* t_stream = nullptr;

bool IsOpsRequest(const framing::Head& h) {
  if (h.method != "GET") return false;
  const std::string path = h.target.substr(0, h.target.find('?'));
  return path == "/health" || path == "/metrics";
}

// httplib's accept loop hands each socket to the task queue: ours adopts it on the spot (cheap,
// never blocks), so the accept loop needs no threads of its own.
class InlineTaskQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// An in-memory request for httplib: reads `request`, discards what is written.
class MemoryStream final : public httplib::Stream {
 public:
  explicit MemoryStream(std::string request) : request_(std::move(request)) {}
  bool is_readable() const override { return pos_ < request_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - pos_);
    std::memcpy(ptr, request_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char*, size_t size) override { return static_cast<ssize_t>(size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 0; }
  void get_local_ip_and_port(std::string& ip, int& port) const override { ip = "127.0.0.1", port = 0; }
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  std::string request_;
  size_t pos_ = 0;
};

// Debian's cpp-httplib is a prebuilt library whose request parsing builds function-local statics
// on first use (the set of methods, the Range and multipart regexes). The C++ guard makes that
// safe, but its fast path is compiled into the library, out of ThreadSanitizer's sight, while the
// std::set/std::regex code reading the statics is our (instrumented) template instances: the first
// use by a second thread reads, to TSan, as a race with the thread that built them. One request
// through a throwaway server (no routes: it is answered 404), before any thread of the front
// exists, builds them all with a happens-before edge to every thread. Static files (the extension
// regex) are the one parser not covered.
class HttplibStatics final : public httplib::Server {
 public:
  void Build() {
    const std::string body =
        "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"w.txt\"\r\n"
        "Content-Type: text/plain\r\n\r\nx\r\n--b--\r\n";
    MemoryStream s(
        "POST /warm?q=1 HTTP/1.1\r\nHost: w\r\nRange: bytes=0-1, 2-3\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    bool closed = false;
    process_request(s, true, closed, nullptr);
  }
};

}  // namespace

HttpFront::HttpFront() {
  new_task_queue = [] { return new InlineTaskQueue(); };
}

HttpFront::~HttpFront() { StopFront(); }

bool HttpFront::StartFront(const HttpFrontOptions& opt, std::function<void(const char*)> on_event) {
  opt_ = opt;
  opt_.workers = std::max(1, opt_.workers);
  opt_.keep_alive_max_count = std::max<size_t>(1, opt_.keep_alive_max_count);
  opt_.max_queued = std::max<size_t>(1, opt_.max_queued);
  limits_.max_head_bytes = opt_.max_head_bytes;
  limits_.max_body_bytes = payload_max_length_;
  on_event_ = std::move(on_event);
  HttplibStatics().Build();  // before any thread of ours: see HttplibStatics
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  if (epoll_fd_ < 0 || wake_fd_ < 0 || ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    epoll_fd_ = wake_fd_ = -1;
    return false;
  }
  reader_ = std::thread([this] { ReaderLoop(); });
  for (int i = 0; i < opt_.workers; ++i) workers_.emplace_back([this] { WorkerLoop(false); });
  for (int i = 0; i < 2; ++i) workers_.emplace_back([this] { WorkerLoop(true); });
  started_ = true;
  return true;
}

void HttpFront::StopFront() {
  if (!started_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  ops_cv_.notify_all();
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  if (reader_.joinable()) reader_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
  ::close(epoll_fd_);
  ::close(wake_fd_);
  epoll_fd_ = wake_fd_ = -1;
  started_ = false;
}

size_t HttpFront::waiting_requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return work_.size();
}

void HttpFront::Event(const char* what) {
  if (on_event_) on_event_(what);
}

bool HttpFront::process_and_close_socket(socket_t sock) {
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = stopping_ || !started_;
  }
  if (stopping) {
    ::close(sock);
    return true;
  }
  if (open_.load() >= opt_.max_connections) {
    SendCanned(sock, 503, "Service Unavailable", "too many open connections; retry shortly");
    Event("over_capacity");
    ::shutdown(sock, SHUT_WR);
    ::close(sock);
    return true;
  }
  ++open_;
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  int one = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // SSE events go out as they come
  if (opt_.send_buffer_bytes > 0) {
    ::setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &opt_.send_buffer_bytes, sizeof(opt_.send_buffer_bytes));
  }
  auto c = std::make_unique<Conn>(limits_);
  c->fd = sock;
  c->deadline = Clock::now() + Seconds(opt_.read_timeout_s);
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {  // stopped meanwhile: the reader is gone
    lock.unlock();
    Close(std::move(c));
    return true;
  }
  incoming_.push_back(std::move(c));
  const uint64_t v = 1;
  (void)!::write(wake_fd_, &v, sizeof(v));
  return true;
}

bool HttpFront::Reserve(Conn& c) {
  size_t want = c.reader.held();
  if (c.reader.in_body() && c.reader.head().body == framing::Head::Body::kLength) {
    want = std::max<size_t>(want, static_cast<size_t>(c.reader.head().length));
  }
  if (want <= c.reserved) return true;
  const size_t more = want - c.reserved;
  if (buffered_.fetch_add(more) + more > opt_.max_buffered_body_bytes) {
    buffered_ -= more;
    return false;
  }
  c.reserved = want;
  return true;
}

bool HttpFront::Advance(Conn& c, Clock::time_point now, int* reject) {
  const bool had_head = c.reader.in_body();
  const auto step = c.reader.Next();
  if (step == framing::RequestReader::Step::kReject) {
    *reject = c.reader.status();
    return false;
  }
  if (step == framing::RequestReader::Step::kRequest) {
    c.request = c.reader.take();
    c.ops = IsOpsRequest(c.reader.head());
    return true;
  }
  if (c.reader.in_body() && !had_head) {  // the head just arrived: the body has body_timeout in all
    c.body_deadline = now + Seconds(opt_.body_timeout_s);
    c.deadline = std::min(c.body_deadline, now + Seconds(opt_.read_timeout_s));
  }
  if (!Reserve(c)) {
    *reject = 503;
    return false;
  }
  if (c.reader.TakeContinue()) {
    static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    (void)::send(c.fd, kContinue, sizeof(kContinue) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  return false;
}

void HttpFront::Release(Conn& c) {
  buffered_ -= c.reserved;
  c.reserved = 0;
}

void HttpFront::Close(std::unique_ptr<Conn> c) {
  if (!c || c->fd < 0) return;
  Release(*c);
  ::shutdown(c->fd, SHUT_RDWR);
  ::close(c->fd);
  c->fd = -1;
  --open_;
}

void HttpFront::Answer(Conn& c, int status) {
  const char* message = "";
  const char* reason = Reason(status, &message);
  SendCanned(c.fd, status, reason, message);
  Event(status == 431   ? "head_too_large"
        : status == 413 ? "body_too_large"
        : status == 503 ? "busy"
                        : "bad_framing");
}

void HttpFront::Reject(std::unique_ptr<Conn> c, int status) {
  Answer(*c, status);
  Close(std::move(c));
}

void HttpFront::Linger(Conn& c, int status, Clock::time_point now) {
  Answer(c, status);
  Release(c);
  c.reader = framing::RequestReader(limits_);  // frees what was buffered
  c.request = {};
  ::shutdown(c.fd, SHUT_WR);
  c.lingering = true;
  c.deadline = now + Seconds(std::min(5.0, opt_.read_timeout_s));
}

void HttpFront::Dispatch(std::unique_ptr<Conn> c) {
  Release(*c);
  std::unique_lock<std::mutex> lock(mu_);
  if (c->ops) {
    ops_.push_back(std::move(c));
    lock.unlock();
    ops_cv_.notify_one();
    return;
  }
  if (work_.size() >= opt_.max_queued) {  // every worker busy and the queue full: refuse, do not pile up
    lock.unlock();
    return Reject(std::move(c), 503);
  }
  work_.push_back(std::move(c));
  lock.unlock();
  work_cv_.notify_one();
}

void HttpFront::HandBack(std::unique_ptr<Conn> c) {
  int reject = 0;
  const auto now = Clock::now();
  if (Advance(*c, now, &reject)) return Dispatch(std::move(c));  // pipelined: the next request is here
  if (reject != 0) return Reject(std::move(c), reject);
  c->idle = c->reader.empty();
  if (!c->reader.in_body()) c->deadline = now + Seconds(c->idle ? opt_.keep_alive_s : opt_.read_timeout_s);
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    return Close(std::move(c));
  }
  incoming_.push_back(std::move(c));
  const uint64_t v = 1;
  (void)!::write(wake_fd_, &v, sizeof(v));
}

bool HttpFront::Collect(Conn& c, Clock::time_point now, bool* closed, int* reject) {
  static thread_local char tmp[65536];
  while (c.lingering) {  // refused: drop what arrives (the answer reaches a client still sending)
    const ssize_t r = ::recv(c.fd, tmp, sizeof(tmp), MSG_DONTWAIT);
    if (r > 0 || (r < 0 && errno == EINTR)) continue;
    *closed = r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    return false;
  }
  try {
    for (;;) {
      const ssize_t r = ::recv(c.fd, tmp, sizeof(tmp), MSG_DONTWAIT);
      if (r > 0) {
        if (c.idle) {  // the next request begins: its head has read_timeout to arrive
          c.idle = false;
          c.deadline = now + Seconds(opt_.read_timeout_s);
        }
        // A body may take long, but not pause longer than read_timeout nor end after body_timeout.
        if (c.reader.in_body()) c.deadline = std::min(c.body_deadline, now + Seconds(opt_.read_timeout_s));
        c.reader.Feed(tmp, static_cast<size_t>(r));
        if (Advance(c, now, reject)) return true;
        if (*reject != 0) return false;
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      *closed = r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      return false;
    }
  } catch (const std::exception&) {  // no memory for this body: drop the connection, not the server
    *closed = true;
  }
  return false;
}

// The connections waiting for (the rest of) a request, by fd, each registered with epoll. Owned
// and touched by the reader thread only.
struct HttpFront::Waiting {
  using Map = std::unordered_map<int, std::unique_ptr<Conn>>;
  int epoll_fd;
  Map conns;
  // Unregisters the connection and hands it over.
  std::unique_ptr<Conn> Drop(Map::iterator it) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, it->first, nullptr);
    std::unique_ptr<Conn> c = std::move(it->second);
    conns.erase(it);
    return c;
  }
};

void HttpFront::ReaderLoop() {
  Waiting waiting{epoll_fd_, {}};
  epoll_event evs[64];
  auto next_sweep = Clock::now();
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_, evs, 64, 100);
    std::vector<std::unique_ptr<Conn>> in;
    bool stop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      in.swap(incoming_);
      stop = stopping_;
    }
    if (stop) {  // connections waiting for a request are closed; requests that arrived are served
      for (auto& c : in) Close(std::move(c));
      while (!waiting.conns.empty()) Close(waiting.Drop(waiting.conns.begin()));
      return;
    }
    Watch(waiting, std::move(in));
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) OnReadable(waiting, evs[i].data.fd, now);
    if (now >= next_sweep) {  // deadlines, checked ten times a second
      next_sweep = now + std::chrono::milliseconds(100);
      SweepDeadlines(waiting, now);
    }
  }
}

void HttpFront::Watch(Waiting& w, std::vector<std::unique_ptr<Conn>> in) {
  for (auto& c : in) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
      Close(std::move(c));
      continue;
    }
    const int fd = c->fd;
    w.conns[fd] = std::move(c);
  }
}

// fd is readable: the wake-up eventfd is drained; a waiting connection reads what arrived and is
// dispatched (a whole request), answered and left to linger (refused), or closed (peer gone).
void HttpFront::OnReadable(Waiting& w, int fd, Clock::time_point now) {
  if (fd == wake_fd_) {
    uint64_t v;
    while (::read(wake_fd_, &v, sizeof(v)) > 0) {
    }
    return;
  }
  auto it = w.conns.find(fd);
  if (it == w.conns.end()) return;
  bool closed = false;
  int reject = 0;
  const bool ready = Collect(*it->second, now, &closed, &reject);
  if (ready) {
    Dispatch(w.Drop(it));
  } else if (reject != 0) {
    // Answered now; closed once the client stops sending (or after a few seconds), so that a
    // client still sending its refused body reads the answer instead of a reset.
    Linger(*it->second, reject, now);
  } else if (closed) {
    Close(w.Drop(it));
  }
}

void HttpFront::SweepDeadlines(Waiting& w, Clock::time_point now) {
  for (auto it = w.conns.begin(); it != w.conns.end();) {
    if (now < it->second->deadline) {
      ++it;
      continue;
    }
    auto next = std::next(it);
    if (it->second->lingering) {
      // refused already: closed quietly
    } else if (it->second->reader.in_body()) {
      SendCanned(it->first, 408, "Request Timeout", "the request body did not arrive in time");
      Event("read_timeout");
    } else if (!it->second->idle) {
      SendCanned(it->first, 408, "Request Timeout", "the request head did not arrive in time");
      Event("head_timeout");
    }
    Close(w.Drop(it));
    it = next;
  }
}

std::string HttpFront::ReadBody(const httplib::ContentReader& reader) {
  if (std::optional<std::string> body = TakeBody()) return std::move(*body);
  std::string body;
  reader([&](const char* data, size_t n) {
    body.append(data, n);
    return true;
  });
  return body;
}

std::optional<std::string> HttpFront::TakeBody() { return t_stream ? t_stream->TakeBody() : std::nullopt; }

void HttpFront::WorkerLoop(bool ops) {
  auto& queue = ops ? ops_ : work_;
  auto& cv = ops ? ops_cv_ : work_cv_;
  for (;;) {
    std::unique_ptr<Conn> c;
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv.wait(lock, [&] { return !queue.empty() || stopping_; });
      if (queue.empty()) return;
      c = std::move(queue.front());
      queue.pop_front();
      stopping = stopping_;
    }
    // The last request on a connection says "Connection: close": the keep-alive limit, or the
    // server is stopping (the listener was closed).
    const bool close_after =
        stopping || svr_sock_ == INVALID_SOCKET || ++c->served >= opt_.keep_alive_max_count;
    bool closed_by_client = false, ok = false;
    FrontStream s(*c, opt_);
    try {  // handlers' exceptions are httplib's to answer; anything else only ends this connection
      t_stream = &s;
      ok = process_request(s, close_after, closed_by_client, nullptr);
    } catch (...) {
      ok = false;
    }
    const bool unread = s.unread();  // a body nobody read: never parse it as the next request
    t_stream = nullptr;
    c->request = {};
    if (unread) Event("body_unread");
    if (s.write_timed_out) {
      Event("write_timeout");
      linger l{1, 0};  // the client stopped reading: drop what is queued for it (RST) at close
      ::setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    if (!ok || closed_by_client || close_after || s.write_timed_out || unread) {
      Close(std::move(c));
    } else {
      HandBack(std::move(c));
    }
  }
}

}  // namespace mineru::server
