// Fault tests of the real server (issue #7): the model file truncated while `serve` runs (the
// request in flight ends with an error, /health reports the degraded state, the process lives), a
// model already truncated at load (a clear one-line error, from the server and the CLI), and an
// image too big for the memory the process may use (RLIMIT_AS): a clear 507, and the next request
// is answered normally.

#include <sys/resource.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "../util/files.h"
#include "../util/process.h"
#include "../util/run_cli.h"
#include "../util/sanitizers.h"
#include "server/base64.h"
#include "server_harness.h"

namespace mineru::testing {
namespace {

using Json = nlohmann::json;

Json ChatBody(const std::string& image_url, int max_tokens, bool stream) {
  Json content = Json::array();
  if (!image_url.empty()) content.push_back({{"type", "image_url"}, {"image_url", {{"url", image_url}}}});
  content.push_back({{"type", "text"}, {"text", "Tell a long story."}});
  return {{"messages", {{{"role", "user"}, {"content", content}}}},
          {"max_tokens", max_tokens},
          {"ignore_eos", true},
          {"stream", stream}};
}

// [[maybe_unused]]: its test is compiled out of sanitizer builds (see below).
[[maybe_unused]] std::string PngDataUrl(const std::string& png) {
  return "data:image/png;base64," + server::Base64Encode(png);
}

// Polls /health until pred(status, body) holds or the deadline passes.
template <typename Pred>
bool PollHealth(const ServerProcess& srv, double seconds, Pred pred) {
  auto cli = srv.Client();
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    auto h = cli.Get("/health");
    if (h && pred(h->status, h->body)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a condition, with a deadline
  }
  return false;
}

TEST(ServerFaultTest, ModelTruncatedWhileServing) {
  const std::string dir = TempDir("truncated_serving");
  const std::string model = CopyModel("tinyvocab", dir);
  const std::string weights = model + "/model.safetensors";
  ServerProcess srv;
  ASSERT_TRUE(srv.Start({"--model", model, "--data-dir", dir + "/data", "--threads", "2"}, dir + "/log"))
      << srv.log();

  // A long streamed generation is running when the file is cut.
  int status = 0;
  std::string body;
  std::thread client([&] {
    auto cli = srv.Client();
    auto r = cli.Post("/v1/chat/completions", ChatBody("", 16000, true).dump(), "application/json");
    if (r) {
      status = r->status;
      body = r->body;
    }
  });
  const bool running = PollHealth(srv, 30, [](int code, const std::string& b) {
    return code == 200 && Json::parse(b)["queue"]["running"].get<int>() > 0;
  });
  ASSERT_EQ(::truncate(weights.c_str(), 0), 0);
  client.join();
  ASSERT_TRUE(running) << "the request never ran";
  ASSERT_TRUE(Alive(srv.pid())) << "the server died: " << srv.log();

  // The stream ends with finish_reason "error" and the reason.
  EXPECT_EQ(status, 200);
  Json last;
  for (size_t pos = 0; (pos = body.find("data: {", pos)) != std::string::npos; pos += 6) {
    last = Json::parse(body.substr(pos + 6, body.find("\n\n", pos) - pos - 6));
  }
  ASSERT_TRUE(last.is_object()) << body.substr(0, 500);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "error") << last.dump();
  const std::string reason = last.value("error", Json::object()).value("message", "");
  EXPECT_NE(reason.find("model file " + weights + " changed on disk while mapped"), std::string::npos)
      << last.dump();
  EXPECT_NE(reason.find("restart or reload"), std::string::npos) << reason;

  // Degraded, not dead: /health says why, new requests are refused with the reason.
  auto cli = srv.Client();
  auto h = cli.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  Json hj = Json::parse(h->body);
  EXPECT_EQ(hj["status"], "degraded");
  EXPECT_NE(hj["error"].get<std::string>().find("changed on disk while mapped"), std::string::npos)
      << h->body;
  auto r = cli.Post("/v1/chat/completions", ChatBody("", 4, false).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(Json::parse(r->body)["error"]["message"].get<std::string>().find("restart or reload"),
            std::string::npos)
      << r->body;
  auto fp = cli.Post("/file_parse",
                     httplib::MultipartFormDataItems{
                         {"files", ReadFileToString(kFx + "/image0.png").value(), "p.png", "image/png"}});
  ASSERT_TRUE(fp);
  EXPECT_EQ(fp->status, 503);
  EXPECT_NE(fp->body.find("changed on disk while mapped"), std::string::npos) << fp->body;
  auto m = cli.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("mineru_model_degraded 1"), std::string::npos);
  EXPECT_NE(srv.log().find("changed on disk while mapped"), std::string::npos) << srv.log();
  ASSERT_TRUE(Alive(srv.pid()));
  const int exit_status = srv.Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0) << exit_status;
}

TEST(ServerFaultTest, ModelTruncatedBeforeLoadIsAClearError) {
  const std::string dir = TempDir("truncated_load");
  const std::string model = CopyModel("tinyvocab", dir);
  const std::string weights = model + "/model.safetensors";
  struct stat st {};
  ASSERT_EQ(::stat(weights.c_str(), &st), 0);
  ASSERT_EQ(::truncate(weights.c_str(), st.st_size / 2), 0);

  ServerProcess srv;
  ASSERT_TRUE(srv.Start({"--model", model, "--data-dir", dir + "/data"}, dir + "/log", 60, 503)) << srv.log();
  Json hj = Json::parse(srv.health_body());
  EXPECT_EQ(hj["status"], "error");
  EXPECT_NE(hj["error"].get<std::string>().find(weights + ": truncated"), std::string::npos)
      << srv.health_body();
  auto r = srv.Client().Post("/v1/chat/completions", ChatBody("", 4, false).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("truncated"), std::string::npos) << r->body;
  EXPECT_TRUE(Alive(srv.pid()));

  // The CLI: one line, no crash.
  CmdResult c = RunCli({"generate", "--model", model, "--raw-ids", "1 2 3", "--max-new-tokens", "2"});
  EXPECT_FALSE(c.signaled);
  EXPECT_EQ(c.code, 1);
  EXPECT_EQ(c.err.rfind("error: ", 0), 0u) << c.err;
  EXPECT_NE(c.err.find(weights + ": truncated"), std::string::npos) << c.err;
  EXPECT_EQ(std::count(c.err.begin(), c.err.end(), '\n'), 1) << c.err;
}

// An 8-bit grayscale PNG of zeros, deflated row by row (the test never holds the pixels).
[[maybe_unused]] std::string BlankPng(uint32_t w, uint32_t h) {
  auto be32 = [](std::string* s, uint32_t v) {
    for (int sh = 24; sh >= 0; sh -= 8) s->push_back(static_cast<char>((v >> sh) & 0xff));
  };
  auto chunk = [&](std::string* out, const char* type, const std::string& data) {
    be32(out, static_cast<uint32_t>(data.size()));
    const std::string td = std::string(type, 4) + data;
    out->append(td);
    be32(out, static_cast<uint32_t>(
                  crc32(0, reinterpret_cast<const Bytef*>(td.data()), static_cast<uInt>(td.size()))));
  };
  std::string ihdr;
  be32(&ihdr, w);
  be32(&ihdr, h);
  ihdr += std::string("\x08\x00\x00\x00\x00", 5);  // depth 8, gray, deflate, no filter method, no interlace
  std::string idat;
  z_stream zs{};
  deflateInit(&zs, 6);
  std::vector<unsigned char> row(w + 1, 0), buf(1 << 16);
  for (uint32_t y = 0; y <= h; ++y) {
    zs.next_in = row.data();
    zs.avail_in = y < h ? static_cast<uInt>(row.size()) : 0;
    do {
      zs.next_out = buf.data();
      zs.avail_out = static_cast<uInt>(buf.size());
      deflate(&zs, y < h ? Z_NO_FLUSH : Z_FINISH);
      idat.append(reinterpret_cast<char*>(buf.data()), buf.size() - zs.avail_out);
    } while (zs.avail_out == 0);
  }
  deflateEnd(&zs);
  std::string png("\x89PNG\r\n\x1a\n", 8);
  chunk(&png, "IHDR", ihdr);
  chunk(&png, "IDAT", idat);
  chunk(&png, "IEND", "");
  return png;
}

TEST(ServerFaultTest, OversizedImageUnderAMemoryLimitIsAClearErrorAndTheServerGoesOn) {
#ifdef MINERU_TEST_SANITIZED
  GTEST_SKIP() << "sanitizer build: ASan/TSan reserve terabytes of address space, RLIMIT_AS cannot be used";
#else
  const std::string dir = TempDir("oom");
  const std::string replay = dir + "/replay.json";
  ASSERT_TRUE(
      WriteStringToFile(
          replay,
          R"([{"layout": "<|box_start|>100 100 900 300<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>", "blocks": ["Hello."]}])")
          .ok());
  ServerProcess srv;
  ASSERT_TRUE(srv.Start({"--model", kFx + "/tinyvocab", "--data-dir", dir + "/data", "--replay", replay,
                         "--max-image-pixels", "250000000", "--max-request-pixels", "250000000", "--threads",
                         "2", "--http-threads", "8", "--job-workers", "1"},
                        dir + "/log"))
      << srv.log();
  auto cli = srv.Client();
  const std::string small_png = ReadFileToString(kFx + "/image0.png").value();
  auto small_chat = [&] {
    return cli.Post("/v1/chat/completions", ChatBody(PngDataUrl(small_png), 4, false).dump(),
                    "application/json");
  };
  auto parse = [&](const std::string& png) {
    return cli.Post("/file_parse", httplib::MultipartFormDataItems{{"files", png, "page.png", "image/png"}});
  };
  // Warm up (threads, arenas, caches), then allow a fixed amount of address space above this.
  for (int i = 0; i < 2; ++i) {
    auto a = small_chat();
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 200) << a->body;
    auto b = parse(small_png);
    ASSERT_TRUE(b);
    ASSERT_EQ(b->status, 200) << b->body;
  }
  const long baseline_kb = ProcStatusKb(srv.pid(), "VmSize");
  ASSERT_GT(baseline_kb, 0);
  constexpr long kHeadroomMb = 256;
  struct rlimit rl {};
  rl.rlim_cur = rl.rlim_max = static_cast<rlim_t>(baseline_kb + kHeadroomMb * 1024) * 1024;
  ASSERT_EQ(::prlimit(srv.pid(), RLIMIT_AS, &rl, nullptr), 0) << std::strerror(errno);

  // 15000 x 15000: 225 M pixels, under the pixel limit, but 675 MB as RGB, over the headroom.
  const std::string big = BlankPng(15000, 15000);
  ASSERT_LT(big.size(), 2u << 20);
  auto r = cli.Post("/v1/chat/completions", ChatBody(PngDataUrl(big), 4, false).dump(), "application/json");
  ASSERT_TRUE(r) << "no answer: " << srv.log();
  EXPECT_EQ(r->status, 507) << r->body;
  const std::string msg = Json::parse(r->body)["error"]["message"];
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("15000x15000"), std::string::npos) << msg;
  auto p = parse(big);
  ASSERT_TRUE(p) << "no answer: " << srv.log();
  EXPECT_EQ(p->status, 507) << p->body;
  EXPECT_NE(p->body.find("out of memory"), std::string::npos) << p->body;

  // Still serving, still under the same limit.
  ASSERT_TRUE(Alive(srv.pid())) << srv.log();
  auto after = small_chat();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << after->body;
  auto again = parse(small_png);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(cli.Get("/health")->status, 200);
  const int exit_status = srv.Stop(SIGTERM);
  EXPECT_TRUE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0) << exit_status;
#endif
}

}  // namespace
}  // namespace mineru::testing
