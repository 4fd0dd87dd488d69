// server/listen.h — starting an httplib listener on a thread so that a later stop() always holds.
//
// cpp-httplib 0.11's Server::stop() does nothing until listen_after_bind() has marked the server
// running (on the listener's own thread): a stop() in that window is lost and the listener, and
// whoever joins it, waits forever. ListenInBackground returns only once the listener runs (or has
// already returned, e.g. on an error), so stop() after it always ends the listener.
#pragma once

#include <httplib.h>

#include <atomic>
#include <memory>
#include <thread>

namespace mineru::server {

// srv must be bound (bind_to_port / bind_to_any_port) and outlive the returned thread.
inline std::thread ListenInBackground(httplib::Server& srv) {
  auto returned = std::make_shared<std::atomic<bool>>(false);
  std::thread t([&srv, returned] {
    srv.listen_after_bind();
    *returned = true;
  });
  // Waits for a state change on another thread, not for time: the first thing the listener does
  // is mark itself running.
  while (!srv.is_running() && !*returned) std::this_thread::yield();
  return t;
}

}  // namespace mineru::server
