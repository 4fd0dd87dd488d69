// Overload and retries on the real server (loopback): a full engine queues requests instead of
// failing them; a client that gives up and resends an identical deterministic request gets the
// first run's answer without the engine running it again (counted by the engine itself,
// mineru_engine_requests_total, not by timing); `priority` reaches the engine request.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "model/qwen2vl.h"
#include "server/server.h"
#include "server_harness.h"

namespace mineru::testing {
namespace {

using Json = nlohmann::json;

std::string Deterministic(int max_tokens) {
  return Json{{"messages", {{{"role", "user"}, {"content", "Count to many."}}}},
              {"temperature", 0.0},
              {"max_tokens", max_tokens},
              {"ignore_eos", true},
              {"skip_special_tokens", false}}
      .dump();
}

// The first attempt: the client stops waiting after `give_up_s` and closes its connection, as
// httpx does on its read timeout before retrying.
void SendAndGiveUp(ServerProcess& srv, const std::string& body, int give_up_s) {
  httplib::Client cli("127.0.0.1", srv.port());
  cli.set_read_timeout(give_up_s, 0);
  (void)cli.Post("/v1/chat/completions", body, "application/json");
}

class OverloadTest : public ::testing::Test {
 protected:
  void StartServer(const std::vector<std::string>& extra) {
    dir_ = TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::vector<std::string> args = {"--data-dir", dir_ + "/data"};
    if (std::find(extra.begin(), extra.end(), "--model") == extra.end()) {
      args.insert(args.end(), {"--model", kFx + "/tinyvocab"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(srv_.Start(args, dir_ + "/log")) << srv_.log();
  }
  std::string dir_;
  ServerProcess srv_;
};

TEST_F(OverloadTest, RetriedRequestRunsOnce) {
  StartServer({"--max-tokens", "100000", "--retry-grace-s", "600"});
  const std::string body = Deterministic(3000);
  SendAndGiveUp(srv_, body, 1);  // gives up (or, on a fast machine, is answered): either way...
  auto cli = srv_.Client();
  auto r1 = cli.Post("/v1/chat/completions", body, "application/json");  // ...the retry shares it
  ASSERT_TRUE(r1);
  ASSERT_EQ(r1->status, 200) << r1->body;
  auto r2 = cli.Post("/v1/chat/completions", body, "application/json");  // after it finished
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  const Json j1 = Json::parse(r1->body), j2 = Json::parse(r2->body);
  EXPECT_EQ(j1["choices"][0]["message"]["content"], j2["choices"][0]["message"]["content"]);
  EXPECT_EQ(j1["usage"]["completion_tokens"], 3000);
  EXPECT_EQ(Metric(srv_, "mineru_engine_requests_total"), 1);
  EXPECT_EQ(Metric(srv_, "mineru_retries_shared_total"), 2);

  // Sampled requests (temperature > 0, no seed) are never shared: each one runs.
  Json sampled = Json::parse(Deterministic(4));
  sampled["temperature"] = 1.0;
  for (int i = 0; i < 2; ++i) {
    auto r = cli.Post("/v1/chat/completions", sampled.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(Metric(srv_, "mineru_engine_requests_total"), 3);
  // With a seed they are reproducible, so shared again.
  sampled["seed"] = 7;
  for (int i = 0; i < 2; ++i) {
    auto r = cli.Post("/v1/chat/completions", sampled.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(Metric(srv_, "mineru_engine_requests_total"), 4);
}

TEST_F(OverloadTest, RetrySharingOffRunsAgain) {
  StartServer({"--max-tokens", "100000", "--retry-grace-s", "0"});
  const std::string body = Deterministic(300);
  SendAndGiveUp(srv_, body, 60);
  auto r = srv_.Client().Post("/v1/chat/completions", body, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Metric(srv_, "mineru_engine_requests_total"), 2);
  EXPECT_EQ(Metric(srv_, "mineru_retries_shared_total"), 0);
}

// With room for one request in flight, a burst waits its turn: every request is answered 200.
TEST_F(OverloadTest, FullEngineQueuesInsteadOfFailing) {
  StartServer({"--max-queued-requests", "1", "--max-tokens", "40"});
  constexpr int kClients = 6;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto cli = srv_.Client();
      Json req = Json::parse(Deterministic(40));
      req["messages"][0]["content"] = "Client " + std::to_string(c);  // distinct: nothing shared
      auto r = cli.Post("/v1/chat/completions", req.dump(), "application/json");
      if (r && r->status == 200)
        ++ok;
      else
        ADD_FAILURE() << (r ? std::to_string(r->status) + " " + r->body : std::string("no response"));
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), kClients);
  EXPECT_EQ(Metric(srv_, "mineru_engine_requests_total"), kClients);
}

// Once the admission wait is spent the answer is 429 with Retry-After (MinerU's client honours it).
TEST_F(OverloadTest, AdmissionWaitSpentGives429WithRetryAfter) {
  StartServer({"--max-queued-requests", "1", "--max-tokens", "10000", "--admission-wait-s", "0"});
  // A streamed request holds the only place until the test lets its client hang up.
  std::atomic<bool> release{false};
  std::thread hog([&] {
    Json busy = Json::parse(Deterministic(10000));
    busy["stream"] = true;
    httplib::Client cli("127.0.0.1", srv_.port());
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.body = busy.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return !release.load(); };
    (void)cli.send(req);
  });
  // Wait (bounded) until the hog is in the engine, then ask once more.
  for (int i = 0; i < 600 && Metric(srv_, "mineru_engine_requests_total") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Json other = Json::parse(Deterministic(4));
  other["messages"][0]["content"] = "Another question.";
  auto r = srv_.Client().Post("/v1/chat/completions", other.dump(), "application/json");
  release = true;
  hog.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(r->get_header_value("Retry-After"), "5");
}

// A model folder like the one `mineru-cpp download` leaves (symlinks to the fixture's files) plus
// `extra` files; returns the folder.
std::string ModelFolder(const std::string& dir, const std::map<std::string, std::string>& extra) {
  ::mkdir(dir.c_str(), 0755);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "preprocessor_config.json"}) {
    if (extra.count(f)) continue;
    (void)::symlink((kFx + "/tinyvocab/" + f).c_str(), (dir + "/" + f).c_str());
  }
  for (const auto& [name, text] : extra) {
    std::ofstream(dir + "/" + name) << text;
  }
  return dir;
}

// parse, serve and the web page say which checkpoint runs: the downloaded repository's name.
TEST_F(OverloadTest, ServerNamesTheCheckpoint) {
  const std::string base = TempDir("checkpoint_name");
  const std::string model = ModelFolder(
      base + "/weights", {{"mineru-cpp-download.json", R"({"repo":"opendatalab/MinerU2.5-Pro-2605-1.2B"})"}});
  ASSERT_TRUE(srv_.Start({"--model", model, "--data-dir", base + "/data"}, base + "/log")) << srv_.log();
  auto cli = srv_.Client();
  auto h = cli.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(Json::parse(h->body)["checkpoint"], "MinerU2.5-Pro-2605-1.2B");
  // Where the model runs (the engine's device line): the CPU here.
  EXPECT_EQ(Json::parse(h->body)["device"].get<std::string>().rfind("cpu (", 0), 0u) << h->body;
  auto m = cli.Get("/v1/models");
  ASSERT_TRUE(m);
  const Json models = Json::parse(m->body);
  EXPECT_EQ(models["data"][0]["checkpoint"], "MinerU2.5-Pro-2605-1.2B");
  EXPECT_EQ(models["data"][0]["id"], "weights");  // the id stays the folder's name (--model-name)
  EXPECT_NE(srv_.log().find("model ready: MinerU2.5-Pro-2605-1.2B ("), std::string::npos) << srv_.log();
}

TEST(CheckpointNameTest, FromConfigNameOrPathElseTheFolder) {
  const std::string base = TempDir("checkpoint_config");
  std::string config = ReadFileToString(kFx + "/tinyvocab/config.json").value();
  Json c = Json::parse(config);
  c["_name_or_path"] = "opendatalab/MinerU2.5-Pro-2604-1.2B";
  const std::string named = ModelFolder(base + "/a", {{"config.json", c.dump()}});
  auto m = Qwen2VLModel::Load(named, ModelLoadOptions{}, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->name(), "MinerU2.5-Pro-2604-1.2B");
  c["_name_or_path"] = "/home/someone/ckpt";  // a local path names nothing: the folder's name
  const std::string local = ModelFolder(base + "/b", {{"config.json", c.dump()}});
  m = Qwen2VLModel::Load(local, ModelLoadOptions{}, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->name(), "b");
}

// The Pro checkpoint's added tokens come out verbatim in SSE deltas and in the whole answer when
// the request keeps special tokens (tinyvocab_pro; logit_bias puts the tokens in reach).
TEST_F(OverloadTest, ProTokensSurviveStreaming) {
  StartServer({"--model", kFx + "/tinyvocab_pro"});
  const Json tokens = Json::parse(ReadFileToString(kFx + "/tinyvocab_pro/pro_tokens.json").value());
  std::map<int64_t, std::string> content;
  Json bias = Json::object();
  for (const auto& t : tokens) {
    content[t["id"].get<int64_t>()] = t["content"].get<std::string>();
    bias[std::to_string(t["id"].get<int64_t>())] = 100;
  }
  Json req = {{"messages", {{{"role", "user"}, {"content", "Image Analysis:"}}}},
              {"temperature", 0.0},
              {"max_tokens", 24},
              {"ignore_eos", true},
              {"skip_special_tokens", false},
              {"logit_bias", bias},
              {"return_token_ids", true},
              {"stream", true}};
  auto cli = srv_.Client();
  auto r = cli.Post("/v1/chat/completions", req.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string text;
  std::vector<int64_t> ids;
  size_t pos = 0;
  while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    const std::string data = r->body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") break;
    const Json ev = Json::parse(data);
    const Json& ch = ev["choices"][0];
    if (ch.contains("delta") && ch["delta"].contains("content"))
      text += ch["delta"]["content"].get<std::string>();
    if (ch.contains("token_ids")) {
      for (const auto& id : ch["token_ids"]) ids.push_back(id.get<int64_t>());
    }
  }
  ASSERT_EQ(ids.size(), 24u);
  std::string want;
  for (int64_t id : ids) {
    ASSERT_TRUE(content.count(id)) << "generated " << id << ", not a Pro token";
    want += content[id];
  }
  EXPECT_EQ(text, want);
  // The same request unstreamed: the same text in one message.
  req["stream"] = false;
  auto whole = cli.Post("/v1/chat/completions", req.dump(), "application/json");
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  EXPECT_EQ(Json::parse(whole->body)["choices"][0]["message"]["content"], want);
}

TEST(ChatBodyTest, PriorityReachesTheEngineRequest) {
  server::ServerOptions opt;
  EngineRequest er;
  bool stream = false;
  const std::string base = R"({"messages":[{"role":"user","content":"x"}])";
  ASSERT_TRUE(server::ParseChatCompletionBody(base + R"(,"priority":-3})", opt, &er, &stream).ok());
  EXPECT_EQ(er.priority, -3);
  EngineRequest none;
  ASSERT_TRUE(server::ParseChatCompletionBody(base + "}", opt, &none, &stream).ok());
  EXPECT_EQ(none.priority, 0);
  EngineRequest bad;
  EXPECT_FALSE(server::ParseChatCompletionBody(base + R"(,"priority":"high"})", opt, &bad, &stream).ok());
  EngineRequest biased;
  ASSERT_TRUE(server::ParseChatCompletionBody(base + R"(,"logit_bias":{"151669":100,"7":-2.5}})", opt,
                                              &biased, &stream)
                  .ok());
  EXPECT_EQ(biased.sampling.logit_bias.size(), 2u);
  EXPECT_FALSE(server::ParseChatCompletionBody(base + R"(,"logit_bias":{"x":1}})", opt, &bad, &stream).ok());
  EXPECT_FALSE(
      server::ParseChatCompletionBody(base + R"(,"logit_bias":{"5":101}})", opt, &bad, &stream).ok());
  EXPECT_FALSE(server::ParseChatCompletionBody(base + R"(,"priority":1.5})", opt, &bad, &stream).ok());
}

}  // namespace
}  // namespace mineru::testing
