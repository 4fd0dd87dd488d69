// tests/server/edge_socket.h — raw loopback sockets for attack tests: send exact bytes, read what
// comes back until the server closes (or a generous deadline passes).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

namespace mineru::testing {

class RawConn {
 public:
  // rcvbuf > 0: a receive buffer that small (set before connect), for clients that read slowly.
  explicit RawConn(int port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;
  bool ok() const { return fd_ >= 0; }
  bool Send(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes; *closed tells whether it did before deadline_s.
  std::string ReadToClose(double deadline_s, bool* closed = nullptr) {
    return ReadUntil(
        deadline_s, [](const std::string&) { return false; }, closed);
  }
  // Reads until done(received) or the peer closes or deadline_s passes.
  template <typename Done>
  std::string ReadUntil(double deadline_s, Done done, bool* closed = nullptr) {
    std::string got;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
    if (closed) *closed = false;
    while (!done(got)) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now())
              .count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        if (closed) *closed = true;
        break;
      }
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  // Reads what arrives within timeout_s; false once the server has closed the connection.
  bool Poll(double timeout_s, std::string* got) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout_s * 1000)) <= 0) return true;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) got->append(buf, static_cast<size_t>(n));
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
  }
  // Reads until the server closes the connection; false when it is still open after deadline_s.
  bool ReadUntilClosed(double deadline_s, std::string* got) {
    bool closed = false;
    *got += ReadToClose(deadline_s, &closed);
    return closed;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// How many responses a byte stream holds (status lines "HTTP/1.1 NNN").
inline int CountResponses(const std::string& s) {
  int n = 0;
  for (size_t at = s.find("HTTP/1.1 "); at != std::string::npos; at = s.find("HTTP/1.1 ", at + 1)) {
    if (at + 9 < s.size() && s[at + 9] >= '1' && s[at + 9] <= '5') ++n;
  }
  return n;
}

inline int FirstStatus(const std::string& s) {
  return s.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(s.c_str() + 9) : -1;
}

}  // namespace mineru::testing
