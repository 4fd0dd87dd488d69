// server/http_front.cc — see http_front.h.
#include "server/http_front.h"

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
#include <unordered_map>

namespace mineru::server {

using Clock = std::chrono::steady_clock;

struct HttpFront::Conn {
  int fd = -1;
  std::string buf;      // received, not consumed yet (the head, maybe the start of the body)
  size_t scanned = 0;   // the head-end search resumes here
  Clock::time_point deadline;
  bool idle = false;    // kept alive, nothing of the next request yet (closed quietly at the deadline)
  bool in_body = false; // the head is here; the reader collects the body (need bytes in buf)
  size_t need = 0;
  size_t reserved = 0;  // of the reader's body budget
  size_t served = 0;
};

namespace {

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Offset just past the blank line that ends a request head, or npos.
size_t HeadEnd(const std::string& b, size_t from) {
  for (size_t i = from; i < b.size(); ++i) {
    if (b[i] != '\n') continue;
    size_t j = i + 1;
    if (j < b.size() && b[j] == '\r') ++j;
    if (j < b.size() && b[j] == '\n') return j + 1;
  }
  return std::string::npos;
}

struct HeadInfo {
  uint64_t length = 0;
  bool chunked = false, expect_continue = false, bad_length = false;
};

// What the reader needs from a head to wait for its body: Content-Length, chunking, Expect.
HeadInfo ParseHead(const std::string& b, size_t end) {
  HeadInfo h;
  size_t pos = b.find('\n');
  while (pos != std::string::npos && pos + 1 < end) {
    const size_t start = pos + 1;
    size_t eol = b.find('\n', start);
    if (eol == std::string::npos || eol > end) eol = end;
    std::string line = b.substr(start, eol - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon), value = line.substr(colon + 1);
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      for (char& ch : value) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const size_t v0 = value.find_first_not_of(" \t");
      value = v0 == std::string::npos ? "" : value.substr(v0);
      if (name == "content-length") {
        char* stop = nullptr;
        errno = 0;
        h.length = std::strtoull(value.c_str(), &stop, 10);
        if (errno != 0 || stop == value.c_str()) h.bad_length = true;
      } else if (name == "transfer-encoding") {
        h.chunked = true;
      } else if (name == "expect") {
        h.expect_continue = true;
      }
    }
    pos = eol;
  }
  return h;
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

// The socket side of one request for httplib: reads the buffered head first, then the socket;
// every wait is bounded (read_timeout_s / write_timeout_s) and never blocks past it.
class FrontStream final : public httplib::Stream {
 public:
  FrontStream(HttpFront::Conn& c, const HttpFrontOptions& o) : c_(c), o_(o) {}

  bool is_readable() const override { return pos_ < c_.buf.size() || Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (size == 0) return 0;
    if (pos_ >= c_.buf.size() && size < 4096) {  // small reads (line by line) go through the buffer
      c_.buf.clear();
      pos_ = 0;
      char tmp[16384];
      const ssize_t n = Recv(tmp, sizeof(tmp));
      if (n <= 0) return n;
      c_.buf.assign(tmp, static_cast<size_t>(n));
    }
    if (pos_ < c_.buf.size()) {
      const size_t n = std::min(size, c_.buf.size() - pos_);
      std::memcpy(ptr, c_.buf.data() + pos_, n);
      pos_ += n;
      return static_cast<ssize_t>(n);
    }
    return Recv(ptr, size);
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

  // Keeps what was not consumed (a pipelined next request) in the connection's buffer.
  void Finish() {
    std::string rest = c_.buf.substr(std::min(pos_, c_.buf.size()));  // a large body's buffer is freed
    c_.buf.swap(rest);
    c_.scanned = 0;
    c_.in_body = false;
    c_.need = 0;
    pos_ = 0;
  }
  mutable bool read_timed_out = false, write_timed_out = false;

 private:
  ssize_t Recv(char* ptr, size_t size) {
    for (;;) {
      const ssize_t n = ::recv(c_.fd, ptr, size, MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!Wait(POLLIN)) return -1;
    }
  }
  bool Wait(short events) const {
    const bool in = events == POLLIN;
    if (WaitFor(c_.fd, events, in ? o_.read_timeout_s : o_.write_timeout_s)) return true;
    (in ? read_timed_out : write_timed_out) = true;
    return false;
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
  const HttpFrontOptions& o_;
  size_t pos_ = 0;
};

// httplib's accept loop hands each socket to the task queue: ours adopts it on the spot (cheap,
// never blocks), so the accept loop needs no threads of its own.
class InlineTaskQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
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
  on_event_ = std::move(on_event);
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
  for (int i = 0; i < opt_.workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
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
  auto c = std::make_unique<Conn>();
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

bool HttpFront::Ready(Conn& c) {
  if (!c.in_body) {
    const size_t end = HeadEnd(c.buf, c.scanned);
    if (end == std::string::npos) {
      c.scanned = c.buf.size() > 2 ? c.buf.size() - 2 : 0;
      return false;
    }
    // The body too is collected here, so that a client stalling in its body holds no worker
    // either; not when httplib must answer first (Expect: 100-continue, over the size limit), for
    // chunked bodies, or beyond the memory budget of bodies being collected.
    const HeadInfo h = ParseHead(c.buf, end);
    if (h.chunked || h.expect_continue || h.bad_length || h.length == 0 || h.length > payload_max_length_) return true;
    if (buffered_.fetch_add(h.length) + h.length > opt_.max_buffered_body_bytes) {
      buffered_ -= h.length;
      return true;
    }
    c.in_body = true;
    c.reserved = h.length;
    c.need = end + h.length;
    try {
      c.buf.reserve(c.need);
    } catch (const std::exception&) {  // grows as it arrives instead
    }
    c.deadline = Clock::now() + Seconds(opt_.read_timeout_s);
  }
  return c.buf.size() >= c.need;
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

void HttpFront::Dispatch(std::unique_ptr<Conn> c) {
  Release(*c);
  {
    std::lock_guard<std::mutex> lock(mu_);
    work_.push_back(std::move(c));
  }
  work_cv_.notify_one();
}

void HttpFront::HandBack(std::unique_ptr<Conn> c) {
  if (Ready(*c)) return Dispatch(std::move(c));  // pipelined: the next request is here already
  c->idle = c->buf.empty();
  if (!c->in_body) c->deadline = Clock::now() + Seconds(c->idle ? opt_.keep_alive_s : opt_.read_timeout_s);
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    return Close(std::move(c));
  }
  incoming_.push_back(std::move(c));
  const uint64_t v = 1;
  (void)!::write(wake_fd_, &v, sizeof(v));
}

bool HttpFront::Collect(Conn& c, Clock::time_point now, bool* closed) {
  static thread_local char tmp[65536];
  try {
    // Up to the end of the head, then of the body.
    while (c.in_body || c.buf.size() <= opt_.max_head_bytes) {
      const ssize_t r = ::recv(c.fd, tmp, sizeof(tmp), MSG_DONTWAIT);
      if (r > 0) {
        if (c.idle) {  // the next request begins: its head has read_timeout to arrive
          c.idle = false;
          c.deadline = now + Seconds(opt_.read_timeout_s);
        }
        // A body may take long, but not pause longer than read_timeout.
        if (c.in_body) c.deadline = now + Seconds(opt_.read_timeout_s);
        c.buf.append(tmp, static_cast<size_t>(r));
        if (Ready(c)) return true;
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

void HttpFront::ReaderLoop() {
  std::unordered_map<int, std::unique_ptr<Conn>> waiting;
  auto drop = [&](std::unordered_map<int, std::unique_ptr<Conn>>::iterator it) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->first, nullptr);
    std::unique_ptr<Conn> c = std::move(it->second);
    waiting.erase(it);
    return c;
  };
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
    if (stop) {  // connections waiting for a request are closed; heads that arrived are served
      for (auto& c : in) Close(std::move(c));
      while (!waiting.empty()) Close(drop(waiting.begin()));
      return;
    }
    for (auto& c : in) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = c->fd;
      if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        Close(std::move(c));
        continue;
      }
      const int fd = c->fd;
      waiting[fd] = std::move(c);
    }
    const auto now = Clock::now();
    for (int i = 0; i < n; ++i) {
      const int fd = evs[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t v;
        while (::read(wake_fd_, &v, sizeof(v)) > 0) {
        }
        continue;
      }
      auto it = waiting.find(fd);
      if (it == waiting.end()) continue;
      Conn& c = *it->second;
      bool closed = false;
      const bool ready = Collect(c, now, &closed);
      if (ready) {
        Dispatch(drop(it));
      } else if (closed) {
        Close(drop(it));
      } else if (!c.in_body && c.buf.size() > opt_.max_head_bytes) {
        SendCanned(fd, 431, "Request Header Fields Too Large", "the request head is too large");
        Event("head_too_large");
        Close(drop(it));
      }
    }
    if (now >= next_sweep) {  // deadlines, checked ten times a second
      next_sweep = now + std::chrono::milliseconds(100);
      for (auto it = waiting.begin(); it != waiting.end();) {
        if (now < it->second->deadline) {
          ++it;
          continue;
        }
        auto next = std::next(it);
        if (it->second->in_body) {
          SendCanned(it->first, 408, "Request Timeout", "the request body stalled");
          Event("read_timeout");
        } else if (!it->second->idle) {
          SendCanned(it->first, 408, "Request Timeout", "the request head did not arrive in time");
          Event("head_timeout");
        }
        Close(drop(it));
        it = next;
      }
    }
  }
}

void HttpFront::WorkerLoop() {
  for (;;) {
    std::unique_ptr<Conn> c;
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return !work_.empty() || stopping_; });
      if (work_.empty()) return;
      c = std::move(work_.front());
      work_.pop_front();
      stopping = stopping_;
    }
    // The last request on a connection says "Connection: close": the keep-alive limit, or the
    // server is stopping (the listener was closed).
    const bool close_after = stopping || svr_sock_ == INVALID_SOCKET || ++c->served >= opt_.keep_alive_max_count;
    bool closed_by_client = false, ok = false;
    FrontStream s(*c, opt_);
    try {  // handlers' exceptions are httplib's to answer; anything else only ends this connection
      ok = process_request(s, close_after, closed_by_client, nullptr);
      s.Finish();
    } catch (...) {
      ok = false;
    }
    if (s.read_timed_out) Event("read_timeout");
    if (s.write_timed_out) {
      Event("write_timeout");
      linger l{1, 0};  // the client stopped reading: drop what is queued for it (RST) at close
      ::setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    if (!ok || closed_by_client || close_after || s.write_timed_out || s.read_timed_out) {
      Close(std::move(c));
    } else {
      HandBack(std::move(c));
    }
  }
}

}  // namespace mineru::server
