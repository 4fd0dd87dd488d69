// The connection layer in process (no model): complete requests wait in a bounded queue when every
// worker is busy, one more is refused at once with 503, and GET /health still answers on its own
// threads. The handler blocks on a latch the test opens, so "busy" and "full" are states the test
// observes, not moments it waits for.

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "../util/eventually.h"
#include "server/http_front.h"
#include "server/listen.h"

namespace mineru::server {
namespace {

using ::mineru::testing::Eventually;

class Latch {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// httplib loses a stop() that comes before its listener thread has marked the server running, and
// the join then waits forever. Stopping at once after ListenInBackground must always end it (with
// a bare std::thread around listen_after_bind the first rounds hang: starting a thread takes
// longer than the call to stop()).
TEST(ListenInBackground, StopRightAfterStartAlwaysEndsTheListener) {
  for (int round = 0; round < 200; ++round) {
    httplib::Server srv;
    ASSERT_GT(srv.bind_to_any_port("127.0.0.1"), 0);
    std::thread listener = ListenInBackground(srv);
    srv.stop();
    listener.join();
    EXPECT_FALSE(srv.is_running());
  }
}

TEST(HttpFrontQueue, FullQueueIsRefusedAtOnceAndHealthStillAnswers) {
  HttpFront http;
  Latch release;
  std::atomic<int> entered{0};
  http.Get("/work", [&](const httplib::Request&, httplib::Response& res) {
    ++entered;
    release.Wait();
    res.set_content("done", "text/plain");
  });
  http.Get("/health",
           [](const httplib::Request&, httplib::Response& res) { res.set_content("ok", "text/plain"); });
  HttpFrontOptions opt;
  opt.workers = 1;
  opt.max_queued = 2;
  ASSERT_TRUE(http.StartFront(opt, nullptr));
  const int port = http.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread listener = ListenInBackground(http);

  auto get = [port](const std::string& path) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    auto r = c.Get(path.c_str());
    return r ? r->status : -1;
  };
  std::vector<int> status(3, 0);
  std::vector<std::thread> clients;
  clients.emplace_back([&] { status[0] = get("/work"); });
  ASSERT_TRUE(Eventually([&] { return entered.load() == 1; })) << "the worker never took the first request";
  clients.emplace_back([&] { status[1] = get("/work"); });
  clients.emplace_back([&] { status[2] = get("/work"); });
  ASSERT_TRUE(Eventually([&] { return http.waiting_requests() == 2; })) << "the queue never filled";

  EXPECT_EQ(get("/work"), 503) << "a request past the queue must be refused, not queued";
  EXPECT_EQ(http.waiting_requests(), 2u);
  EXPECT_EQ(get("/health"), 200) << "/health answers while every worker is busy and the queue is full";

  release.Open();
  for (auto& t : clients) t.join();
  EXPECT_EQ(status, (std::vector<int>{200, 200, 200}));
  EXPECT_EQ(entered.load(), 3);
  http.stop();
  listener.join();
  http.StopFront();
}

}  // namespace
}  // namespace mineru::server
