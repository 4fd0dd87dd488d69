// server/http_front.h — the connection layer under cpp-httplib's request handling.
//
// Debian's cpp-httplib (0.11) gives every accepted connection a pool thread for its whole life:
// while a client sends its request head (or idles between keep-alive requests) the thread waits on
// the socket, and every byte restarts the read timeout. A few dozen clients that dribble their
// headers (slowloris) or just hold connections open therefore occupy all --http-threads and nobody
// else is served. HttpFront keeps httplib's parsing, routing and response writing
// (Server::process_request) but owns the sockets:
//  - one reader thread (epoll) reads every request whole — head and body, Content-Length or
//    chunked — with strict framing (http_framing.h): ambiguous framing, unsupported codings and
//    bodies over the limit (counted in decoded bytes) are answered at once and the connection
//    closed. A connection costs no thread until its whole request has arrived. A head that is not
//    complete read_timeout after the connection opened (or after the next request's first byte) is
//    answered 408 and closed; a body may pause at most read_timeout and must be complete within
//    body_timeout of its head. Bodies being collected share a memory budget; past it: 503;
//  - worker threads (--http-threads) run complete requests from a bounded queue (full: 503), with
//    the canonical request in memory: a worker never reads the socket. A request whose body the
//    handler left unread (a GET with a body, a 401 before routing) closes the connection, so those
//    bytes can never be taken for the next request. A response may wait for the client write_timeout
//    in all (a client that stops reading is dropped, and a streaming response's generation is
//    cancelled by its handler);
//  - GET /health and /metrics run on their own two threads, so they answer while every worker is
//    busy;
//  - idle keep-alive connections go back to the reader (closed after keep_alive_s);
//  - at most max_connections are open; one more is answered 503 at once and closed.
#pragma once

#include <httplib.h>

#include "server/http_framing.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace mineru::server {

struct HttpFrontOptions {
  double read_timeout_s = 60;     // a request head must arrive within it; the body may pause this long
  double body_timeout_s = 300;    // a body must be complete this long after its head
  double write_timeout_s = 600;   // a response may wait this long in all for the client to read
  double keep_alive_s = 5;        // an idle keep-alive connection is closed after this
  int workers = 128;              // requests processed at once
  size_t max_queued = 1024;       // complete requests waiting for a worker; more are answered 503
  size_t max_connections = 1024;  // open connections; more are answered 503 and closed
  size_t max_head_bytes = 64 << 10;
  size_t keep_alive_max_count = 1000;
  size_t max_buffered_body_bytes = size_t(512) << 20;  // bodies being collected by the reader
  int send_buffer_bytes = 0;                           // SO_SNDBUF of each connection; 0: the kernel sizes it
};

class HttpFront : public httplib::Server {
 public:
  HttpFront();
  ~HttpFront() override;

  // Before listen_after_bind(). on_event (optional) counts connection events: "head_timeout",
  // "read_timeout", "write_timeout", "over_capacity", "head_too_large", "bad_framing",
  // "body_too_large", "busy", "body_unread".
  // false: no epoll instance (out of file descriptors).
  bool StartFront(const HttpFrontOptions& opt, std::function<void(const char*)> on_event);
  // After stop(): closes connections waiting for a request, lets requests in flight (and those
  // whose head has arrived) finish, and joins the threads.
  void StopFront();
  size_t open_connections() const { return open_.load(); }
  // Complete requests waiting for a worker (not counting GET /health and /metrics).
  size_t waiting_requests();

  // In a handler run by a front worker, before anything read the body (a route registered with
  // a ContentReader): the request's whole body, moved out of the front without a copy; the
  // connection then counts it as read. nullopt elsewhere (no front, or the body was read).
  static std::optional<std::string> TakeBody();
  // For a route registered with a ContentReader: the whole body, moved out of the front when the
  // request came through one (TakeBody), else read from reader.
  static std::string ReadBody(const httplib::ContentReader& reader);

  struct Conn;

 private:
  // Called by httplib for every accepted socket (runs inline on the accept thread).
  bool process_and_close_socket(socket_t sock) override;

  void ReaderLoop();
  // The reader thread's state, defined in http_front.cc.
  struct Waiting;
  void Watch(Waiting& w, std::vector<std::unique_ptr<Conn>> in);  // registers new connections
  void OnReadable(Waiting& w, int fd, std::chrono::steady_clock::time_point now);
  void SweepDeadlines(Waiting& w, std::chrono::steady_clock::time_point now);  // 408s, lingering ends
  void WorkerLoop(bool ops);
  // Moves c's request forward after bytes arrived: true when a whole request is in c.request;
  // *reject: a status to answer before closing.
  bool Advance(Conn& c, std::chrono::steady_clock::time_point now, int* reject);
  bool Reserve(Conn& c);  // charges c's buffered bytes to the body budget; false: over it
  // Reads what c's socket has; true when c is ready for a worker, *closed when the peer is gone.
  bool Collect(Conn& c, std::chrono::steady_clock::time_point now, bool* closed, int* reject);
  void Release(Conn& c);  // gives back c's share of the body budget
  void Dispatch(std::unique_ptr<Conn> c);
  void HandBack(std::unique_ptr<Conn> c);  // a kept-alive connection waits for its next request
  void Answer(Conn& c, int status);        // a refusal from the front-end (status, reason, JSON error)
  void Reject(std::unique_ptr<Conn> c, int status);  // answers status and closes
  // Answers status, stops writing and drops what the client still sends until a short deadline.
  void Linger(Conn& c, int status, std::chrono::steady_clock::time_point now);
  void Close(std::unique_ptr<Conn> c);
  void Event(const char* what);

  HttpFrontOptions opt_;
  framing::Limits limits_;
  std::function<void(const char*)> on_event_;
  int epoll_fd_ = -1, wake_fd_ = -1;
  std::atomic<size_t> open_{0};
  std::atomic<size_t> buffered_{0};
  std::atomic<bool> started_{false};

  std::mutex mu_;  // incoming_, work_, stopping_
  std::condition_variable work_cv_, ops_cv_;
  std::vector<std::unique_ptr<Conn>> incoming_;  // for the reader
  std::deque<std::unique_ptr<Conn>> work_;       // complete requests, for the workers
  std::deque<std::unique_ptr<Conn>> ops_;        // GET /health, /metrics: for the ops threads
  bool stopping_ = false;

  std::thread reader_;
  std::vector<std::thread> workers_;
};

}  // namespace mineru::server
