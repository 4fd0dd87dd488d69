// Attack tests of the HTTP edge (issue 14): what one hostile client can send, on loopback, against
// the real `mineru-cpp serve` (and nginx from deploy/nginx.conf in front of it for smuggling).
// Every test is bounded in connections and time; deadlines are generous ("answers within").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "../util/nginx_conf.h"
#include "../util/pdf_writer.h"
#include "../util/sanitizers.h"
#include "edge_socket.h"
#include "server/base64.h"
#include "server/http_framing.h"
#include "server/image_budget.h"
#include "server/job_store.h"
#include "server/listen.h"
#include "server_harness.h"

#include <zlib.h>

namespace mineru::testing {
namespace {

using Json = nlohmann::json;
namespace fr = server::framing;

const char kKey[] = "edge-secret";

// ---- the framing parser alone ---------------------------------------------------------------

std::vector<std::string> Requests(const std::string& bytes, int* reject, size_t max_body = 1 << 20) {
  fr::Limits lim;
  lim.max_body_bytes = max_body;
  fr::RequestReader r(lim);
  r.Feed(bytes.data(), bytes.size());
  std::vector<std::string> out;
  *reject = 0;
  for (;;) {
    const auto step = r.Next();
    if (step == fr::RequestReader::Step::kRequest) {
      out.push_back(r.take_request());
      continue;
    }
    if (step == fr::RequestReader::Step::kReject) *reject = r.status();
    return out;
  }
}

TEST(HttpFraming, AmbiguousFramingIsRefused) {
  int reject = 0;
  const std::string h = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  EXPECT_TRUE(Requests(h + "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", &reject).empty());
  EXPECT_EQ(reject, 400);
  Requests(h + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", &reject);
  EXPECT_EQ(reject, 400);
  Requests(h + "Content-Length: 3, 3\r\n\r\nabc", &reject);
  EXPECT_EQ(reject, 400);
  Requests(h + "Content-Length: +3\r\n\r\nabc", &reject);
  EXPECT_EQ(reject, 400);
  Requests(h + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", &reject);
  EXPECT_EQ(reject, 400);
  Requests(h + "Transfer-Encoding: gzip, chunked\r\n\r\n", &reject);
  EXPECT_EQ(reject, 501);
  Requests(h + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", &reject);
  EXPECT_EQ(reject, 501);
  Requests(h + "Content-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", &reject);
  EXPECT_EQ(reject, 415);
  Requests(h + "Content-Length : 3\r\n\r\nabc", &reject);
  EXPECT_EQ(reject, 400);
  Requests(h + "X: a\r\n b\r\nContent-Length: 3\r\n\r\nabc", &reject);  // obs-fold
  EXPECT_EQ(reject, 400);
  Requests("POST / HTTP/2.0\r\n\r\n", &reject);
  EXPECT_EQ(reject, 505);
}

TEST(HttpFraming, ChunkedBodiesAreDecodedAndLimitedInDecodedBytes) {
  int reject = 0;
  auto got = Requests(
      "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n"
      "GET /b HTTP/1.1\r\n\r\n",
      &reject);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(reject, 0);
  EXPECT_EQ(got[0], "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde");
  EXPECT_EQ(got[1], "GET /b HTTP/1.1\r\n\r\n");
  Requests("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n401\r\n", &reject, 1024);
  EXPECT_EQ(reject, 413);
  Requests("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", &reject);
  EXPECT_EQ(reject, 400);
  std::string many = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 1025; ++i) many += "1\r\na\r\n";
  Requests(many, &reject, 1024);
  EXPECT_EQ(reject, 413);
  Requests("POST / HTTP/1.1\r\nContent-Length: 1025\r\n\r\n", &reject, 1024);
  EXPECT_EQ(reject, 413);
}

TEST(HttpFraming, MultiRangeIsDropped) {
  int reject = 0;
  auto got = Requests("GET / HTTP/1.1\r\nRange: bytes=0-,0-\r\nX: y\r\n\r\n", &reject);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], "GET / HTTP/1.1\r\nX: y\r\n\r\n");
}

// ---- ids ------------------------------------------------------------------------------------

// Inverts mt19937_64's output tempering.
uint64_t UntemperExact(uint64_t out) {
  uint64_t y = out;
  // y4 = y3 ^ (y3 >> 43): two rounds recover y3.
  y ^= y >> 43;
  // y3 = y2 ^ ((y2 << 37) & C): one round suffices (shift 37 >= 32).
  y ^= (y << 37) & 0xFFF7EEE000000000ULL;
  // y2 = y1 ^ ((y1 << 17) & B): iterate.
  uint64_t x = y;
  for (int i = 0; i < 4; ++i) x = y ^ ((x << 17) & 0x71D67FFFEDA60000ULL);
  // y1 = y0 ^ ((y0 >> 29) & D): iterate.
  uint64_t z = x;
  for (int i = 0; i < 3; ++i) z = x ^ ((z >> 29) & 0x5555555555555555ULL);
  return z;
}

TEST(Ids, NextIdCannotBePredictedFromPreviousOnes) {
  // A client that saw 156 ids (312 generator outputs) rebuilds an mt19937_64 and predicts the next.
  std::ostringstream state;
  for (int i = 0; i < 156; ++i) {
    const std::string id = server::NewJobId();
    ASSERT_EQ(id.size(), 32u);
    state << UntemperExact(std::stoull(id.substr(0, 16), nullptr, 16)) << ' '
          << UntemperExact(std::stoull(id.substr(16, 16), nullptr, 16)) << ' ';
  }
  std::mt19937_64 clone;
  std::istringstream in(state.str() + "312");  // libstdc++ reads the position after the words
  in >> clone;
  ASSERT_FALSE(in.fail());
  char predicted[40];
  const unsigned long long a = clone(), b = clone();
  std::snprintf(predicted, sizeof(predicted), "%016llx%016llx", a, b);
  EXPECT_NE(server::NewJobId(), std::string(predicted)) << "ids are predictable from earlier ones";
}

TEST(Ids, NoCollisionsAndBalancedBits) {
  constexpr int kN = 20000;
  std::set<std::string> seen;
  std::vector<int> ones(128, 0);
  for (int i = 0; i < kN; ++i) {
    const std::string id = server::NewJobId();
    ASSERT_TRUE(seen.insert(id).second) << "collision";
    for (int d = 0; d < 32; ++d) {
      const int v = std::stoi(id.substr(d, 1), nullptr, 16);
      for (int b = 0; b < 4; ++b) ones[d * 4 + b] += (v >> b) & 1;
    }
  }
  for (int b = 0; b < 128; ++b) {  // 0.5 ± 5% is ~14 standard deviations at this count
    EXPECT_GT(ones[b], kN * 45 / 100) << b;
    EXPECT_LT(ones[b], kN * 55 / 100) << b;
  }
}

TEST(ImageBudget, ServerWideMemoryIsSharedAndGivenBack) {
  std::atomic<int64_t> held{0};
  const int64_t limit_bytes = 30 << 20;  // 10 M pixels of RGB (and a little)
  server::ImageBudgetLimits lim{16, 100000000, 50000000};
  auto a = std::make_unique<server::ImageBudget>(lim, &held, limit_bytes);
  auto r = a->Reserve();
  ASSERT_TRUE(r.ok());
  EXPECT_LE(*r * 3, limit_bytes);
  a->Settle(8000000);  // an 8 M pixel image stays decoded while a's request lives
  server::ImageBudget b(lim, &held, limit_bytes);
  auto rb = b.Reserve();
  ASSERT_TRUE(rb.ok());
  EXPECT_LE(*rb, (limit_bytes - 8000000 * 3) / 3);  // b may decode only what is left
  b.Settle(*rb);
  auto rc = server::ImageBudget(lim, &held, limit_bytes).Reserve();
  EXPECT_EQ(rc.status().code(), StatusCode::kBusy);
  a.reset();  // a's request ended: its pixels are free again
  server::ImageBudget d(lim, &held, limit_bytes);
  EXPECT_TRUE(d.Reserve().ok());
}

// ---- the live server ------------------------------------------------------------------------

class EdgeServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempDir("edge"));
    srv_ = new ServerProcess();
    ASSERT_TRUE(srv_->Start({"--model", kFx + "/tinyvocab", "--data-dir", *dir_ + "/data", "--api-key", kKey,
                             "--max-body-mb", "1", "--max-request-pixels", "20000000"},
                            *dir_ + "/log"))
        << srv_->log();
  }
  static void TearDownTestSuite() {
    delete srv_;
    srv_ = nullptr;
    delete dir_;
  }
  // Sends bytes on a fresh connection and reads until the server closes (at most 20 s).
  static std::string Exchange(const std::string& bytes, bool* closed) {
    RawConn c(srv_->port());
    EXPECT_TRUE(c.ok());
    c.Send(bytes);
    return c.ReadToClose(20, closed);
  }
  static std::string* dir_;
  static ServerProcess* srv_;
};
std::string* EdgeServer::dir_ = nullptr;
ServerProcess* EdgeServer::srv_ = nullptr;

const std::string kNext = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

TEST_F(EdgeServer, DuplicateContentLengthIsRefusedAndClosed) {
  bool closed = false;
  const std::string got = Exchange(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
      "Content-Length: 2\r\n\r\n{}" +
          kNext,
      &closed);
  EXPECT_EQ(FirstStatus(got), 400) << got;
  EXPECT_EQ(CountResponses(got), 1) << got;
  EXPECT_TRUE(closed);
}

TEST_F(EdgeServer, ContentLengthWithChunkedIsRefused) {
  bool closed = false;
  const std::string got = Exchange(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
          kNext,
      &closed);
  EXPECT_EQ(FirstStatus(got), 400) << got;
  EXPECT_EQ(CountResponses(got), 1) << got;
  EXPECT_TRUE(closed);
}

TEST_F(EdgeServer, CodingsAreRefused) {
  bool closed = false;
  std::string got =
      Exchange("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: identity\r\n\r\n",
               &closed);
  EXPECT_EQ(FirstStatus(got), 501) << got;
  got = Exchange(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: gzip\r\nContent-Length: "
      "4\r\n\r\n"
      "abcd",
      &closed);
  EXPECT_EQ(FirstStatus(got), 415) << got;
  EXPECT_TRUE(closed);
}

TEST_F(EdgeServer, ChunkedBodyIsLimitedInDecodedBytes) {
  // 1023 chunks of 1 KiB, then one more chunk header that passes --max-body-mb 1.
  std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                    std::string(kKey) + "\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk = "400\r\n" + std::string(1024, 'a') + "\r\n";
  for (int i = 0; i < 1023; ++i) req += chunk;
  req += "800\r\n";
  bool closed = false;
  const std::string got = Exchange(req, &closed);
  EXPECT_EQ(FirstStatus(got), 413) << got.substr(0, 300);
  EXPECT_TRUE(closed);
}

TEST_F(EdgeServer, ChunkedBodyReachesTheHandler) {
  const std::string body = Json{
      {"messages", {{{"role", "user"}, {"content", "hi"}}}},
      {"max_tokens", 2},
      {"temperature", 0}}.dump();
  std::string req =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kKey) +
      "\r\nContent-Type: application/json\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += 7) {
    const std::string part = body.substr(i, 7);
    char size[16];
    std::snprintf(size, sizeof(size), "%zx", part.size());
    req += std::string(size) + "\r\n" + part + "\r\n";
  }
  req += "0\r\n\r\n";
  bool closed = false;
  const std::string got = Exchange(req, &closed);
  EXPECT_EQ(FirstStatus(got), 200) << got;
  EXPECT_NE(got.find("chat.completion"), std::string::npos) << got;
}

TEST_F(EdgeServer, AnUnreadBodyIsNeverTheNextRequest) {
  // A GET with a body (httplib does not read it) and a request refused before routing (401): their
  // bodies hold a complete request that must not be answered.
  for (const std::string& head : {std::string("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
                                  std::string("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
                                  std::string("OPTIONS /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n")}) {
    const std::string smuggled = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                                 std::string(kKey) + "\r\n\r\n";
    bool closed = false;
    const std::string got = Exchange(
        head + "Content-Length: " + std::to_string(smuggled.size()) + "\r\n\r\n" + smuggled, &closed);
    EXPECT_EQ(CountResponses(got), 1) << head << got;
    EXPECT_EQ(got.find("\"object\":\"list\""), std::string::npos) << head << got;
    EXPECT_TRUE(closed) << head;
  }
}

TEST_F(EdgeServer, PipelinedRequestsAreAnsweredInOrder) {
  RawConn c(srv_->port());
  ASSERT_TRUE(c.ok());
  c.Send(kNext + kNext + "GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  bool closed = false;
  const std::string got = c.ReadToClose(20, &closed);
  EXPECT_EQ(CountResponses(got), 3) << got;
  EXPECT_EQ(FirstStatus(got), 200);
  EXPECT_TRUE(closed);
}

TEST_F(EdgeServer, ExpectContinueIsAnsweredByTheReader) {
  RawConn c(srv_->port());
  ASSERT_TRUE(c.ok());
  c.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
         std::string(kKey) + "\r\nExpect: 100-continue\r\nContent-Length: 1\r\nConnection: close\r\n\r\n");
  const std::string first =
      c.ReadUntil(20, [](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
  EXPECT_EQ(first, "HTTP/1.1 100 Continue\r\n\r\n");
  c.Send("{");
  const std::string got = c.ReadToClose(20);
  EXPECT_EQ(FirstStatus(got), 400) << got;
}

TEST_F(EdgeServer, MultiRangeIsIgnored) {
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 200; ++i) ranges += ",0-";
  bool closed = false;
  const std::string got = Exchange(
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: " + ranges + "\r\nConnection: close\r\n\r\n", &closed);
  EXPECT_EQ(FirstStatus(got), 200) << got.substr(0, 300);
}

// 128 connections hold slow bodies (chunked, and Expect: 100-continue with no body following);
// /health, /metrics and an ordinary request still answer within a generous deadline.
TEST_F(EdgeServer, SlowBodiesFreezeNothing) {
  std::vector<std::unique_ptr<RawConn>> slow;
  for (int i = 0; i < 128; ++i) {
    auto c = std::make_unique<RawConn>(srv_->port());
    ASSERT_TRUE(c->ok());
    const std::string head =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
        std::string(kKey) + "\r\n";
    c->Send(i % 2 ? head + "Transfer-Encoding: chunked\r\n\r\n10\r\nab"
                  : head + "Expect: 100-continue\r\nContent-Length: 1000\r\n\r\n");
    slow.push_back(std::move(c));
  }
  for (const std::string path : {"/health", "/metrics"}) {
    RawConn c(srv_->port());
    c.Send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kKey) +
           "\r\nConnection: close\r\n\r\n");
    bool closed = false;
    const std::string got = c.ReadToClose(5, &closed);
    EXPECT_EQ(FirstStatus(got), 200) << path << ": " << got;
    EXPECT_TRUE(closed) << path;
  }
  RawConn c(srv_->port());
  c.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
         std::string(kKey) + "\r\nContent-Length: 1\r\nConnection: close\r\n\r\n{");
  bool closed = false;
  const std::string got = c.ReadToClose(5, &closed);
  EXPECT_EQ(FirstStatus(got), 400) << got;
  EXPECT_TRUE(closed);
}

// ---- metrics ----------------------------------------------------------------------------------

// The route labels of a counter's series, one per series line.
std::vector<std::string> SeriesRoutes(const std::string& metrics, const std::string& name) {
  std::vector<std::string> routes;
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) != 0) continue;
    const size_t at = line.find("route=\"");
    const size_t end = at == std::string::npos ? at : line.find('"', at + 7);
    routes.push_back(end == std::string::npos ? line : line.substr(at + 7, end - at - 7));
  }
  return routes;
}

TEST_F(EdgeServer, PathsCannotForgeOrGrowMetricSeries) {
  httplib::Client c("127.0.0.1", srv_->port());
  c.set_keep_alive(true);
  const httplib::Headers auth = {{"Authorization", "Bearer " + std::string(kKey)}};
  // A decoded path with a quote and a newline would end the label and start a forged series.
  auto r = c.Get("/x%22%7D%201%0Aforged_series%7Ba%3D%22", auth);
  ASSERT_TRUE(r);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(c.Get("/v1/nope-" + std::to_string(i), auth)) << i;
  auto after = c.Get("/metrics", auth);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->body.find("forged_series"), std::string::npos) << after->body;
  // Route labels come from a fixed set (the server's routes, its task URL templates and "other"
  // for everything else), so 1,001 distinct unknown paths add at most one series per status code.
  // (Other tests of this suite share the server, so known routes may have series too; counting
  // series before and after would race with the counter, which is bumped after a response.)
  const std::set<std::string> known = {"/",
                                       "/health",
                                       "/metrics",
                                       "/v1/models",
                                       "/v1/chat/completions",
                                       "/v1/completions",
                                       "/file_parse",
                                       "/tasks",
                                       "/tasks/{id}",
                                       "/tasks/{id}/result",
                                       "/tasks/{id}/pages/{n}",
                                       "/tasks/{id}/files/{name}",
                                       "other"};
  const std::vector<std::string> routes = SeriesRoutes(after->body, "mineru_http_requests_total");
  int other = 0;
  for (const std::string& route : routes) {
    EXPECT_TRUE(known.count(route)) << route << "\n" << after->body;
    other += route == "other";
  }
  EXPECT_GE(other, 1) << after->body;
  EXPECT_LT(routes.size(), 60u) << after->body;  // 13 routes x a few status codes, not 1,001 paths
}

// ---- image bombs ------------------------------------------------------------------------------

// A 1-bit grayscale PNG of w x h zeros: a few KB that decode to w*h*3 bytes of RGB.
std::string BitPng(int w, int h) {
  auto be32 = [](uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
  auto chunk = [&](const std::string& type, const std::string& data) {
    std::string td = type + data;
    const uint32_t crc =
        static_cast<uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(td.data()), td.size()));
    return be32(static_cast<uint32_t>(data.size())) + td + be32(crc);
  };
  const std::string raw(static_cast<size_t>(h) * (1 + (w + 7) / 8), '\0');
  uLongf n = ::compressBound(raw.size());
  std::string z(n, '\0');
  ::compress2(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(raw.data()), raw.size(),
              9);
  z.resize(n);
  const std::string ihdr = be32(w) + be32(h) + std::string{1, 0, 0, 0, 0};
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", "");
}

std::string ChatWithImages(int count, const std::string& png) {
  Json parts = Json::array();
  const std::string url = "data:image/png;base64," + server::Base64Encode(png);
  for (int i = 0; i < count; ++i) parts.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
  parts.push_back({{"type", "text"}, {"text", "describe"}});
  return Json{{"messages", {{{"role", "user"}, {"content", parts}}}}, {"max_tokens", 1}}.dump();
}

TEST_F(EdgeServer, ManySmallImageBombsInOneBodyAreRefusedFromTheirHeaders) {
  // 30 images of 3000 x 3000 (27 MB of RGB each, 810 MB together) in a body of a few tens of KB;
  // the request budget is 20 M pixels.
  const std::string body = ChatWithImages(30, BitPng(3000, 3000));
  ASSERT_LT(body.size(), 1u << 20);
  const long before_kb = ProcStatusKb(srv_->pid(), "VmHWM");
  auto c = srv_->Client();
  auto r = c.Post("/v1/chat/completions", {{"Authorization", "Bearer " + std::string(kKey)}}, body,
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_NE(r->body.find("pixels together"), std::string::npos) << r->body;
  const long after_kb = ProcStatusKb(srv_->pid(), "VmHWM");
#ifndef MINERU_TEST_TSAN  // TSan's shadow memory grows with every heap page ever touched
  EXPECT_LT(after_kb - before_kb, 300 * 1024)
      << "peak RSS grew from " << before_kb << " kB to " << after_kb << " kB";
#endif
  // Count: 17 tiny images.
  r = c.Post("/v1/chat/completions", {{"Authorization", "Bearer " + std::string(kKey)}},
             ChatWithImages(17, BitPng(16, 16)), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_NE(r->body.find("too many images"), std::string::npos) << r->body;
}

// ---- small ones (item 10) -------------------------------------------------------------------

std::string SubmitTask(ServerProcess& srv, const httplib::Headers& h, const std::string& end_page,
                       int* status) {
  PdfPage page;
  page.texts.push_back({72, 72, 12, "x"});
  httplib::MultipartFormDataItems items = {{"files", MakePdf({page}), "a.pdf", "application/pdf"}};
  if (!end_page.empty()) items.push_back({"end_page_id", end_page, "", ""});
  auto r = srv.Client().Post("/tasks", h, items);
  *status = r ? r->status : -1;
  if (!r || r->status != 202) return r ? r->body : "";
  return Json::parse(r->body).value("task_id", "");
}

// With an API key the caller is its key (issue 35): X-Forwarded-For, which anyone can write, does
// not make another caller (tests/server/hostile_test.cc covers callers told apart by address).
TEST_F(EdgeServer, IdempotencyKeysAreScopedToTheCaller) {
  const std::string auth = "Bearer " + std::string(kKey);
  int st = 0;
  const std::string a = SubmitTask(
      *srv_, {{"Authorization", auth}, {"Idempotency-Key", "k1"}, {"X-Forwarded-For", "10.0.0.1"}}, "", &st);
  ASSERT_EQ(st, 202) << a;
  const std::string b = SubmitTask(
      *srv_, {{"Authorization", auth}, {"Idempotency-Key", "k1"}, {"X-Forwarded-For", "10.0.0.2"}}, "", &st);
  ASSERT_EQ(st, 202) << b;
  EXPECT_EQ(a, b) << "a forwarded-for header from an untrusted peer made another caller";
  const std::string other = SubmitTask(*srv_, {{"Authorization", auth}, {"Idempotency-Key", "k2"}}, "", &st);
  ASSERT_EQ(st, 202) << other;
  EXPECT_NE(other, a) << "another key is another task";
}

TEST_F(EdgeServer, EndPageIdAtIntMaxIsAccepted) {
  int st = 0;
  const std::string id =
      SubmitTask(*srv_, {{"Authorization", "Bearer " + std::string(kKey)}}, "2147483647", &st);
  EXPECT_EQ(st, 202) << id;
  const std::string huge =
      SubmitTask(*srv_, {{"Authorization", "Bearer " + std::string(kKey)}}, " 99999999999999999999999 ", &st);
  EXPECT_EQ(st, 202) << huge;  // Python's int() takes it; we clamp
}

TEST_F(EdgeServer, MalformedPageIdIsA400NotTheDefault) {
  for (const std::string bad : {"abc", "1.5", "", "12x", "-"}) {
    int st = 0;
    const std::string body =
        SubmitTask(*srv_, {{"Authorization", "Bearer " + std::string(kKey)}}, bad.empty() ? " " : bad, &st);
    EXPECT_EQ(st, 400) << "'" << bad << "': " << body;
    EXPECT_NE(body.find("end_page_id must be an integer"), std::string::npos) << body;
  }
}

TEST(EdgeStart, ApiKeyFromFileOrEnvironmentAndLeftoverUploadsRemoved) {
  const std::string dir = TempDir("edge_key");
  ASSERT_EQ(::mkdir((dir + "/data").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir + "/data/sync-0123456789abcdef0123456789abcdef").c_str(), 0755), 0);
  ASSERT_TRUE(WriteStringToFile(dir + "/data/sync-0123456789abcdef0123456789abcdef/a.pdf", "x").ok());
  ASSERT_TRUE(WriteStringToFile(dir + "/key", "file-key\n").ok());
  {
    ServerProcess srv;
    ASSERT_TRUE(srv.Start(
        {"--model", kFx + "/tinyvocab", "--data-dir", dir + "/data", "--api-key-file", dir + "/key"},
        dir + "/log"))
        << srv.log();
    EXPECT_FALSE(FileExists(dir + "/data/sync-0123456789abcdef0123456789abcdef"))
        << "leftover upload folder kept";
    auto c = srv.Client();
    EXPECT_EQ(c.Get("/metrics")->status, 401);
    EXPECT_EQ(c.Get("/metrics", {{"Authorization", "Bearer file-key"}})->status, 200);
  }
  ::setenv("MINERU_API_KEY", "env-key", 1);
  ServerProcess srv;
  const bool started =
      srv.Start({"--model", kFx + "/tinyvocab", "--data-dir", dir + "/data2"}, dir + "/log2");
  ::unsetenv("MINERU_API_KEY");
  ASSERT_TRUE(started) << srv.log();
  auto c = srv.Client();
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  EXPECT_EQ(c.Get("/metrics", {{"Authorization", "Bearer env-key"}})->status, 200);
}

// ---- work before limits (item 9) ---------------------------------------------------------------

// One 600 KB "word" (expensive to tokenize) in a chat message and in a text prompt: refused by its
// size before tokenizing (--max-prompt-tokens 16384 x 32 bytes), within a generous deadline.
TEST_F(EdgeServer, LongTextIsRefusedByBytesBeforeTokenizing) {
  const std::string word(600 << 10, 'q');
  auto c = srv_->Client();
  c.set_read_timeout(10, 0);
  const httplib::Headers auth = {{"Authorization", "Bearer " + std::string(kKey)}};
  auto r = c.Post("/v1/chat/completions", auth,
                  Json{{"messages", {{{"role", "user"}, {"content", word}}}}}.dump(), "application/json");
  ASSERT_TRUE(r) << "no answer within 10 s";
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_NE(r->body.find("bytes"), std::string::npos) << r->body;
  r = c.Post("/v1/completions", auth, Json{{"prompt", word}}.dump(), "application/json");
  ASSERT_TRUE(r) << "no answer within 10 s";
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_NE(r->body.find("bytes"), std::string::npos) << r->body;
}

// ---- request forgery with --allow-remote-images (item 8) -----------------------------------------

TEST(EdgeStart, RemoteImagesNeverReachLoopbackOrPrivateAddresses) {
  // A "private service" on loopback that must never be fetched from.
  httplib::Server inside;
  std::atomic<int> hits{0};
  const std::string png = BitPng(16, 16);
  inside.Get("/a.png", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.set_content(png, "image/png");
  });
  const int port = inside.bind_to_any_port("127.0.0.1");
  std::thread t = server::ListenInBackground(inside);
  const std::string dir = TempDir("edge_ssrf");
  ServerProcess srv;
  ASSERT_TRUE(srv.Start({"--model", kFx + "/tinyvocab", "--data-dir", dir + "/data", "--allow-remote-images"},
                        dir + "/log"))
      << srv.log();
  auto c = srv.Client();
  for (const std::string host : {"127.0.0.1", "localhost", "[::ffff:127.0.0.1]"}) {
    const std::string url = "http://" + host + ":" + std::to_string(port) + "/a.png";
    Json body = {
        {"messages",
         {{{"role", "user"},
           {"content",
            {{{"type", "image_url"}, {"image_url", {{"url", url}}}}, {{"type", "text"}, {"text", "x"}}}}}}},
        {"max_tokens", 1}};
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << host << ": " << r->body;
  }
  EXPECT_EQ(hits.load(), 0) << "the server fetched from a loopback address for a client";
  inside.stop();
  t.join();
}

TEST_F(EdgeServer, FileParseTakesAFewFilesPerRequest) {
  PdfPage page;
  page.texts.push_back({72, 72, 12, "x"});
  const std::string pdf = MakePdf({page});
  httplib::MultipartFormDataItems items;
  for (int i = 0; i < 17; ++i)
    items.push_back({"files", pdf, "a" + std::to_string(i) + ".pdf", "application/pdf"});
  auto r = srv_->Client().Post("/file_parse", {{"Authorization", "Bearer " + std::string(kKey)}}, items);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
}

// ---- smuggling through nginx (deploy/nginx.conf, upstream keepalive) ------------------------

// An attacker sends a GET with a body that begins another request's head; nginx forwards it on a
// kept-alive upstream connection. The next client's request (with its API key) must get its own
// answer, never complete the attacker's head (which would run /v1/models as that client).
TEST_F(EdgeServer, NoSmugglingThroughNginx) {
  Nginx nginx;
  std::string err;
  const std::string dir = TempDir("edge_nginx");
  ASSERT_TRUE(nginx.Start(dir, srv_->port(), &err)) << err;
  for (int round = 0; round < 5; ++round) {
    const std::string smuggled = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Smuggled: ";
    RawConn attacker(nginx.port());
    ASSERT_TRUE(attacker.ok());
    attacker.Send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: " +
                  std::to_string(smuggled.size()) + "\r\n\r\n" + smuggled);
    const std::string a = attacker.ReadToClose(20);
    EXPECT_EQ(FirstStatus(a), 200) << a;
    httplib::Client victim("127.0.0.1", nginx.port());
    victim.set_read_timeout(20, 0);
    auto r = victim.Get("/health", {{"Authorization", "Bearer " + std::string(kKey)}});
    ASSERT_TRUE(r) << "round " << round;
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_NE(r->body.find("\"status\""), std::string::npos) << "round " << round << ": " << r->body;
  }
}

}  // namespace
}  // namespace mineru::testing
