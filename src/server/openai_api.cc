// server/openai_api.cc — GET /v1/models and POST /v1/chat/completions (streaming and not), with
// the fields MinerU's http client sends (see spec/HTTP_CLIENT_CONTRACT.md). Requests go through
// the engine's scheduler, so concurrent users batch together.

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <new>
#include <optional>
#include <thread>

#include "base/json_parse.h"
#include "image/decode.h"
#include "server/base64.h"
#include "server/http_front.h"
#include "server/image_budget.h"
#include "server/remote_images.h"
#include "server/state.h"

namespace mineru::server {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Status ParseSampling(const Json& body, const ServerOptions& opt, EngineRequest* out, bool* stream);

// Tokenizing costs far more than reading (a long word: ~28 bytes of work per byte), so text is
// bounded by bytes before it is tokenized: no prompt within --max-prompt-tokens needs more than
// kMaxTextBytesPerToken bytes per token (Qwen2's longest tokens are far shorter).
constexpr int64_t kMaxTextBytesPerToken = 32;

Status CheckTextBytes(size_t bytes, const ServerOptions& opt) {
  const int64_t limit = opt.engine.max_prompt_tokens * kMaxTextBytesPerToken;
  if (static_cast<int64_t>(bytes) <= limit) return Status::Ok();
  return ResourceExhaustedError(
      "the prompt's text has " + std::to_string(bytes) + " bytes, over the limit of " +
      std::to_string(limit) + " bytes (--max-prompt-tokens x " + std::to_string(kMaxTextBytesPerToken) + ")");
}

ImageBudgetLimits RequestImageLimits(const ServerOptions& opt) {
  return {opt.max_request_images, opt.max_request_pixels, opt.max_image_pixels};
}

StatusOr<RgbImage> DecodeDataUrlWithin(const std::string& url, const ServerOptions& opt,
                                       const RemoteBodies& remote, int64_t max_pixels);

// Decodes a data URL (or a remote URL fetched beforehand) into an image, within the request's and
// the server's image budgets (image_budget.h): the decoder refuses a header over what is left
// before allocating.
StatusOr<RgbImage> DecodeDataUrl(const std::string& url, const ServerOptions& opt, const RemoteBodies& remote,
                                 ImageBudget* budget) {
  MINERU_ASSIGN_OR_RETURN(const int64_t limit, budget->Reserve());
  auto img = DecodeDataUrlWithin(url, opt, remote, limit);
  budget->Settle(img.ok() ? int64_t(img->width) * img->height : 0);
  if (!img.ok()) return budget->Explain(img.status());
  return img;
}

// The image URL of a chat content part ("" when it has none).
std::string ImageUrlOf(const Json& p) {
  if (!p.is_object() || !p.contains("image_url")) return "";
  const Json& u = p["image_url"];
  if (u.is_object() && u.contains("url") && u["url"].is_string()) return u["url"].get<std::string>();
  return u.is_string() ? u.get<std::string>() : "";
}

// With --allow-remote-images: the http(s) image URLs of the request (a chat's image_url parts, or
// a completion's "images"), fetched together under one deadline (remote_images.h) before any is
// decoded. Only public addresses unless --allow-private-image-hosts, at most 32 MB per URL and
// the body limit in all. More URLs than --max-request-images: 413 before anything is fetched.
StatusOr<RemoteBodies> FetchRequestImages(const Json& body, const ServerOptions& opt, bool chat) {
  if (!opt.allow_remote_images) return RemoteBodies{};
  std::vector<std::string> urls;
  auto add = [&](std::string u) {
    if (u.rfind("http://", 0) == 0 || u.rfind("https://", 0) == 0) urls.push_back(std::move(u));
  };
  if (chat && body.contains("messages") && body["messages"].is_array()) {
    for (const Json& m : body["messages"]) {
      if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
      for (const Json& p : m["content"]) {
        if (p.is_object() && p.contains("type") && p["type"] == "image_url") add(ImageUrlOf(p));
      }
    }
  }
  if (!chat && body.contains("images") && body["images"].is_array()) {
    for (const Json& u : body["images"]) add(u.is_string() ? u.get<std::string>() : "");
  }
  if (urls.size() > static_cast<size_t>(std::max(0, opt.max_request_images))) {
    return ResourceExhaustedError("the request names " + std::to_string(urls.size()) +
                                  " remote images, over --max-request-images (" +
                                  std::to_string(opt.max_request_images) + ")");
  }
  RemoteFetchOptions fo;
  fo.deadline_s = opt.remote_image_timeout_s;
  fo.public_addresses_only = !opt.allow_private_image_hosts;
  fo.max_bytes_per_url = std::min<size_t>(opt.max_body_mb << 20, size_t(32) << 20);
  fo.max_total_bytes = opt.max_body_mb << 20;
  return FetchRemoteImages(urls, fo);
}

// An image file's bytes (from a data URL or a fetched URL), decoded within limits.
StatusOr<RgbImage> DecodeImageBytes(const std::string& bytes, const DecodeLimits& limits) {
  auto img = DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), limits);
  if (!img.ok()) return img.status().WithPrefix("image");
  return img;
}

StatusOr<RgbImage> DecodeDataUrlWithin(const std::string& url, const ServerOptions& opt,
                                       const RemoteBodies& remote, int64_t max_pixels) {
  DecodeLimits limits;
  limits.max_pixels = max_pixels;
  if (url.rfind("data:", 0) != 0) {
    if (!opt.allow_remote_images) {
      return InvalidArgumentError(
          "remote image URLs are refused; send a data URL (or start the server with "
          "--allow-remote-images)");
    }
    const auto fetched = remote.find(url);
    if (fetched == remote.end()) return InvalidArgumentError("image URLs must be data:, http:// or https://");
    if (!fetched->second.ok()) return fetched->second.status();
    return DecodeImageBytes(*fetched->second, limits);
  }
  const size_t comma = url.find(',');
  if (comma == std::string::npos || url.substr(0, comma).find(";base64") == std::string::npos) {
    return InvalidArgumentError("image data URLs must be base64 (data:image/...;base64,...)");
  }
  std::optional<std::string> bytes;
  try {  // about 3/4 of the URL's size
    bytes = Base64Decode(std::string_view(url).substr(comma + 1));
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("decoding a base64 image of " + std::to_string(url.size() - comma - 1) +
                            " characters");
  }
  if (!bytes) return InvalidArgumentError("invalid base64 in an image data URL");
  return DecodeImageBytes(*bytes, limits);
}

// Parses a chat-completion body into an engine request. Errors are the client's (400/413), or the
// server's image memory in use (Busy: 429).
Status ParseChatRequest(const Json& body, const ServerOptions& opt, EngineRequest* out, bool* stream,
                        ImageBudget* budget) {
  if (!body.is_object()) return InvalidArgumentError("the body must be a JSON object");
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
    return InvalidArgumentError("'messages' must be a non-empty array");
  }
  MINERU_ASSIGN_OR_RETURN(const RemoteBodies remote, FetchRequestImages(body, opt, /*chat=*/true));
  for (const Json& m : body["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return InvalidArgumentError("each message needs a string 'role'");
    }
    ChatMessage cm;
    cm.role = m["role"].get<std::string>();
    if (cm.role != "system" && cm.role != "user" && cm.role != "assistant") {
      return InvalidArgumentError("unsupported role '" + cm.role + "'");
    }
    const Json& content = m.contains("content") ? m["content"] : Json();
    if (content.is_string()) {
      cm.parts.push_back({ChatPart::kText, content.get<std::string>(), -1});
    } else if (content.is_array()) {
      for (const Json& p : content) {
        const std::string type =
            p.is_object() && p.contains("type") && p["type"].is_string() ? p["type"].get<std::string>() : "";
        if (type == "text") {
          if (!p.contains("text") || !p["text"].is_string())
            return InvalidArgumentError("a text part needs 'text'");
          cm.parts.push_back({ChatPart::kText, p["text"].get<std::string>(), -1});
        } else if (type == "image_url") {
          const std::string url = ImageUrlOf(p);
          if (url.empty()) return InvalidArgumentError("an image_url part needs image_url.url");
          MINERU_ASSIGN_OR_RETURN(RgbImage img, DecodeDataUrl(url, opt, remote, budget));
          cm.parts.push_back({ChatPart::kImage, "", static_cast<int>(out->images.size())});
          out->images.push_back(std::move(img));
        } else {
          return InvalidArgumentError("unsupported content part type '" + type + "'");
        }
      }
    } else if (!content.is_null()) {
      return InvalidArgumentError("'content' must be a string or an array of parts");
    }
    out->messages.push_back(std::move(cm));
  }
  size_t text_bytes = 0;
  for (const ChatMessage& m : out->messages) {
    for (const ChatPart& p : m.parts) text_bytes += p.text.size();
  }
  MINERU_RETURN_IF_ERROR(CheckTextBytes(text_bytes, opt));
  return ParseSampling(body, opt, out, stream);
}

// The seed: an integer in [0, 2^64-1].
Status ParseSeed(const Json& body, uint64_t* seed) {
  if (!body.contains("seed") || body["seed"].is_null()) return Status::Ok();
  const Json& v = body["seed"];
  if (v.is_number_unsigned()) {
    *seed = v.get<uint64_t>();
    return Status::Ok();
  }
  return InvalidArgumentError("'seed' must be an integer in [0, 2^64-1]");
}

// The sampling/limit fields shared by chat and text completions.
Status ParseSampling(const Json& body, const ServerOptions& opt, EngineRequest* out, bool* stream) {
  // Each number is checked in its JSON type against its range before it is narrowed
  // (base/json_parse.h): an integer field takes JSON integers only, 2^64-1 is not -1.
  auto present = [&](const char* key) { return body.contains(key) && !body[key].is_null(); };
  auto real = [&](const char* key, double lo, double hi, float* dst) -> Status {
    if (!present(key)) return Status::Ok();
    MINERU_ASSIGN_OR_RETURN(const double v, JsonNumberIn(body[key], lo, hi, key));
    *dst = static_cast<float>(v);
    return Status::Ok();
  };
  auto integer = [&](const Json& o, const char* key, int64_t lo, int64_t hi, int* dst) -> Status {
    if (!o.contains(key) || o[key].is_null()) return Status::Ok();
    MINERU_ASSIGN_OR_RETURN(const int64_t v, JsonIntegerIn(o[key], lo, hi, key));
    *dst = static_cast<int>(v);
    return Status::Ok();
  };
  SamplingParams& s = out->sampling;
  s.temperature = 1.0f;  // OpenAI's default
  s.top_p = 1.0f;
  MINERU_RETURN_IF_ERROR(real("temperature", 0, 100, &s.temperature));
  MINERU_RETURN_IF_ERROR(real("top_p", 0, 1, &s.top_p));
  MINERU_RETURN_IF_ERROR(integer(body, "top_k", -1, 1000000000, &s.top_k));
  MINERU_RETURN_IF_ERROR(real("presence_penalty", -2, 2, &s.presence_penalty));
  MINERU_RETURN_IF_ERROR(real("frequency_penalty", -2, 2, &s.frequency_penalty));
  MINERU_RETURN_IF_ERROR(real("repetition_penalty", 0.01, 100, &s.repetition_penalty));
  MINERU_RETURN_IF_ERROR(ParseSeed(body, &s.seed));
  MINERU_RETURN_IF_ERROR(integer(body, "no_repeat_ngram_size", 0, 100000, &s.no_repeat_ngram_size));
  if (body.contains("vllm_xargs") && body["vllm_xargs"].is_object()) {
    MINERU_RETURN_IF_ERROR(
        integer(body["vllm_xargs"], "no_repeat_ngram_size", 0, 100000, &s.no_repeat_ngram_size));
  }
  int max_tokens = opt.default_max_tokens;
  MINERU_RETURN_IF_ERROR(integer(body, "max_tokens", 1, 1000000000, &max_tokens));
  MINERU_RETURN_IF_ERROR(integer(body, "max_completion_tokens", 1, 1000000000, &max_tokens));
  out->max_new_tokens = max_tokens;
  out->skip_special_tokens = true;  // vLLM's default; MinerU sends false
  if (body.contains("skip_special_tokens")) {
    if (!body["skip_special_tokens"].is_boolean())
      return InvalidArgumentError("'skip_special_tokens' must be a boolean");
    out->skip_special_tokens = body["skip_special_tokens"].get<bool>();
  }
  // OpenAI's logit_bias: {"token id": bias in [-100, 100]}.
  if (body.contains("logit_bias") && !body["logit_bias"].is_null()) {
    const Json& lb = body["logit_bias"];
    if (!lb.is_object() || lb.size() > 1024)
      return InvalidArgumentError("'logit_bias' must map at most 1024 token ids to numbers");
    for (const auto& [key, v] : lb.items()) {
      char* end = nullptr;
      const long id = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || id > INT32_MAX || !v.is_number()) {
        return InvalidArgumentError("'logit_bias' keys are token ids and values numbers");
      }
      const double b = v.get<double>();
      if (!(b >= -100 && b <= 100)) return InvalidArgumentError("'logit_bias' values are in [-100, 100]");
      s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
    }
  }
  // vLLM's `priority` (mineru-vl-utils 1.2.x sends it): lower is admitted first; see scheduler.h.
  MINERU_RETURN_IF_ERROR(integer(body, "priority", -(1 << 30), 1 << 30, &out->priority));
  if (body.contains("ignore_eos")) {
    if (!body["ignore_eos"].is_boolean()) return InvalidArgumentError("'ignore_eos' must be a boolean");
    out->ignore_eos = body["ignore_eos"].get<bool>();
  }
  *stream = body.contains("stream") && body["stream"].is_boolean() && body["stream"].get<bool>();
  if (body.contains("n") && !body["n"].is_null() && !JsonIntegerIn(body["n"], 1, 1, "n").ok()) {
    return InvalidArgumentError("only n = 1 is supported");
  }
  out->timeout_s = opt.request_timeout_s;
  return Status::Ok();
}

std::string CompletionId() { return NewJobId().substr(0, 24); }

Json Usage(const Completion& c) {
  const int64_t gen = static_cast<int64_t>(c.ids.size());
  return {{"prompt_tokens", c.prompt_tokens},
          {"completion_tokens", gen},
          {"total_tokens", c.prompt_tokens + gen},
          {"prompt_tokens_details", {{"cached_tokens", c.cached_prompt_tokens}}}};
}

// Parses a text-completion body: "prompt" is text (tokenized without a template) or token ids; the
// non-standard "images" (data URLs) fill the prompt's image tokens in order, one token per image.
Status ParseCompletionRequest(const Json& body, const Server::State& st, EngineRequest* out, bool* stream,
                              ImageBudget* budget) {
  if (!body.is_object() || !body.contains("prompt")) return InvalidArgumentError("'prompt' is required");
  const Json& p = body["prompt"];
  if (p.is_string()) {
    if (!st.tokenizer) return InvalidArgumentError("this model has no tokenizer: send token ids");
    MINERU_RETURN_IF_ERROR(CheckTextBytes(p.get_ref<const std::string&>().size(), st.opt));
    MINERU_ASSIGN_OR_RETURN(out->prompt_ids, st.tokenizer->Encode(p.get<std::string>()));
  } else if (p.is_array()) {
    for (const Json& id : p) {
      if (!id.is_number_integer())
        return InvalidArgumentError("'prompt' must be a string or an array of token ids");
      MINERU_ASSIGN_OR_RETURN(const int64_t v, JsonIntegerIn(id, 0, INT32_MAX, "prompt"));
      out->prompt_ids.push_back(static_cast<int32_t>(v));
    }
  } else {
    return InvalidArgumentError("'prompt' must be a string or an array of token ids");
  }
  if (out->prompt_ids.empty()) return InvalidArgumentError("empty prompt");
  if (body.contains("images")) {
    if (!body["images"].is_array()) return InvalidArgumentError("'images' must be an array of data URLs");
    MINERU_ASSIGN_OR_RETURN(const RemoteBodies remote, FetchRequestImages(body, st.opt, /*chat=*/false));
    for (const Json& u : body["images"]) {
      if (!u.is_string()) return InvalidArgumentError("'images' must be an array of data URLs");
      MINERU_ASSIGN_OR_RETURN(RgbImage img, DecodeDataUrl(u.get<std::string>(), st.opt, remote, budget));
      out->images.push_back(std::move(img));
    }
  }
  return ParseSampling(body, st.opt, out, stream);
}

enum class Kind { kChat, kText };

// A non-streamed answer's hold on its run: with retry sharing (`share` set) the run may be shared
// with a client's retries, so a departed client releases it (RetryShare::OrphanWait) instead of
// cancelling it. Also releases when httplib drops the response without asking for the body.
struct RunGuard {
  RetryShare* share = nullptr;
  RetryShare::Key key;
  std::shared_ptr<RequestHandle> handle;
  bool released = false;
  RunGuard(RetryShare* s, RetryShare::Key k, std::shared_ptr<RequestHandle> h)
      : share(s), key(k), handle(std::move(h)) {}
  ~RunGuard() {
    if (released || !share) return;
    if (share->Release(key, handle) == 0 && !handle->WaitFor(0, nullptr)) handle->Cancel();
  }
  void Answered() {
    released = true;
    if (share) share->Release(key, handle);
  }
  void ClientGone() {
    released = true;
    if (!share) return handle->Cancel();
    if (share->Release(key, handle) == 0) share->OrphanWait(key, handle);
  }
};

// One admitted request's answer: what the streaming and the whole-response writers share.
struct Reply {
  Server::State& st;
  std::shared_ptr<RequestHandle> handle;
  std::string id, model;
  int64_t created;
  double t0;  // when the request was submitted
  Kind kind;
  bool return_ids;
  const char* labels;  // metric labels of the endpoint

  void Finished(const Completion& c) const {
    st.metrics.Observe("mineru_request_latency_seconds", Now() - t0, labels);
    st.metrics.Inc("mineru_http_generated_tokens_total", labels, double(c.ids.size()));
  }

  Json Base(const char* chat_object, const char* text_object) const {
    return {{"id", id},
            {"object", kind == Kind::kChat ? chat_object : text_object},
            {"created", created},
            {"model", model}};
  }

  Json StreamChoice(const std::string& text, const std::vector<int32_t>& ids, const Json& reason) const {
    Json c = {{"index", 0}, {"finish_reason", reason}};
    if (kind == Kind::kChat)
      c["delta"] = {{"content", text}};
    else
      c["text"] = text;
    if (return_ids) c["token_ids"] = ids;
    return c;
  }

  // Server-sent events: the role first (chat), a chunk per piece of text, the finish with usage,
  // [DONE]. false (generation cancelled) when the client went away.
  bool Stream(httplib::DataSink& sink) const {
    auto send = [&](const Json& j) {
      const std::string line = "data: " + j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
      return sink.write(line.data(), line.size());
    };
    const Json base = Base("chat.completion.chunk", "text_completion");
    if (kind == Kind::kChat) {
      Json first = base;
      first["choices"] = Json::array({Json{
          {"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", nullptr}}});
      if (!send(first)) {  // the client went away before the first token
        st.metrics.Inc("mineru_client_disconnects_total");
        handle->Cancel();
        return false;
      }
    }
    std::string text;
    std::vector<int32_t> ids;
    while (handle->Next(&text, &ids)) {
      if (text.empty() && (ids.empty() || !return_ids)) continue;
      Json chunk = base;
      chunk["choices"] = Json::array({StreamChoice(text, ids, nullptr)});
      text.clear();
      ids.clear();
      if (!send(chunk)) {  // the client went away: stop generating for it
        st.metrics.Inc("mineru_client_disconnects_total");
        handle->Cancel();
        return false;
      }
    }
    Completion c = handle->Wait();
    Json last = base;
    last["choices"] = Json::array({StreamChoice("", {}, OpenAiFinishReason(c.finish_reason))});
    last["usage"] = Usage(c);
    if (c.finish_reason == FinishReason::kError) last["error"] = {{"message", c.error}};
    send(last);
    const std::string done = "data: [DONE]\n\n";
    sink.write(done.data(), done.size());
    sink.done();
    Finished(c);
    return true;
  }

  // One JSON answer; a space every 2 s while it is generated tells whether the client is still
  // there (a client gone: guard hands the running request to a retry or cancels it).
  bool Whole(httplib::DataSink& sink, RunGuard& guard) const {
    Completion c;
    double last_ping = Now();
    while (!handle->WaitFor(0.5, &c)) {
      if (Now() - last_ping >= 2.0) {
        if (!sink.write(" ", 1)) {
          st.metrics.Inc("mineru_client_disconnects_total");
          guard.ClientGone();
          return false;
        }
        last_ping = Now();
      }
    }
    Json out;
    if (c.finish_reason == FinishReason::kError) {
      out = {{"object", "error"}, {"error", {{"message", c.error}, {"type", "server_error"}, {"code", 500}}}};
    } else {
      Json choice = {{"index", 0}, {"finish_reason", OpenAiFinishReason(c.finish_reason)}};
      if (kind == Kind::kChat)
        choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      else
        choice["text"] = c.text;
      if (return_ids) choice["token_ids"] = c.ids;
      out = Base("chat.completion", "text_completion");
      out["choices"] = Json::array({choice});
      out["usage"] = Usage(c);
    }
    guard.Answered();
    const std::string text = out.dump(-1, ' ', false, Json::error_handler_t::replace);
    sink.write(text.data(), text.size());
    sink.done();
    Finished(c);
    return true;
  }
};

// Submits and answers: SSE when streaming, else one JSON object (with keep-alive spaces while it
// is generated, so a client that disconnects cancels its request).
// `share`: the retry-sharing key when this request may share its run (non-streamed, deterministic).
void Answer(Server::State& st, httplib::Response& res, EngineRequest er, bool stream, Kind kind,
            bool return_ids, const std::optional<RetryShare::Key>& share) {
  const double t0 = Now();
  er.admission_wait_s = st.opt.admission_wait_s;  // a full engine is a queue first
  auto submit = [&] { return st.engine->Submit(std::move(er)); };
  bool shared = false;
  auto h = share ? st.retry->Acquire(*share, submit, &shared) : submit();
  if (!h.ok()) {
    // A prompt over the engine's limits can never run: the client's problem, a bad request as
    // OpenAI answers it (not 413). A full engine is ours: Busy (429).
    const Status refused = h.status();
    const int code = HttpStatusFor(
        refused.code() == StatusCode::kResourceExhausted ? InvalidArgumentError(refused.message()) : refused);
    st.metrics.Inc("mineru_requests_rejected_total", "code=\"" + std::to_string(code) + "\"");
    SendError(res, code, h.status().message());
    // Still full after the admission wait: MinerU's client (httpx-retries) honours Retry-After.
    if (code == 429) res.set_header("Retry-After", "5");
    return;
  }
  if (shared) st.metrics.Inc("mineru_retries_shared_total");
  auto reply = std::make_shared<const Reply>(
      Reply{st, *h, (kind == Kind::kChat ? "chatcmpl-" : "cmpl-") + CompletionId(), st.opt.model_name,
            static_cast<int64_t>(NowSeconds()), t0, kind, return_ids,
            kind == Kind::kChat ? "endpoint=\"chat\"" : "endpoint=\"completions\""});
  if (stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [reply](size_t, httplib::DataSink& sink) { return reply->Stream(sink); });
    return;
  }
  auto guard =
      std::make_shared<RunGuard>(share ? st.retry.get() : nullptr, share.value_or(RetryShare::Key{}), *h);
  res.set_chunked_content_provider("application/json", [reply, guard](size_t, httplib::DataSink& sink) {
    return reply->Whole(sink, *guard);
  });
}
}  // namespace

const char* OpenAiFinishReason(FinishReason r) {
  return FinishReasonName(r == FinishReason::kStop || r == FinishReason::kError ? r : FinishReason::kLength);
}

Status ParseChatCompletionBody(const std::string& body, const ServerOptions& opt, EngineRequest* out,
                               bool* stream) {
  Json j;
  MINERU_RETURN_IF_ERROR(ParseJson(body, RequestJsonLimits(body.size()), &j));
  ImageBudget budget(RequestImageLimits(opt), nullptr, 0);
  return ParseChatRequest(j, opt, out, stream, &budget);
}

namespace {

// The routes under one prefix (see ApiPathPrefixes).
// The one model this server answers as: "checkpoint" says which weights (the id is --model-name,
// for clients' checks).
Json ModelObject(const Server::State& st) {
  return {{"id", st.opt.model_name},
          {"object", "model"},
          {"created", 0},
          {"owned_by", "mineru.cpp"},
          {"checkpoint", st.ready && st.model ? st.model->name() : ""},
          {"max_model_len", st.opt.engine.max_prompt_tokens + st.opt.default_max_tokens}};
}

void RegisterUnder(httplib::Server& http, Server::State& st, const std::string& prefix) {
  http.Get(prefix + "/models", [&st](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, {{"object", "list"}, {"data", {ModelObject(st)}}});
  });
  // OpenAI's (and MinerU 4's) GET /models/{model}: 404 model_not_found for another id.
  http.Get(prefix + "/models/([^/]+)", [&st](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] == st.opt.model_name) return SendJson(res, 200, ModelObject(st));
    SendJson(res, 404,
             {{"error",
               {{"type", "invalid_request_error"},
                {"code", "model_not_found"},
                {"message", "no model named '" + req.matches[1].str() + "' (this server answers as '" +
                                st.opt.model_name + "')"},
                {"param", "model"}}}});
  });

  auto route = [&st](Kind kind) {
    return [&st, kind](const httplib::Request& req, httplib::Response& res,
                       const httplib::ContentReader& reader) {
      if (!st.ready) {
        const std::string err = st.LoadError();
        return SendError(res, 503, err.empty() ? "the model is loading" : err);
      }
      if (st.draining) return SendError(res, 503, "the server is shutting down");
      // The parsed body and the decoded images grow with what the client sent.
      std::string text;
      Json body;
      EngineRequest er;
      bool stream = false;
      Status ps;
      ImageBudget images(RequestImageLimits(st.opt), &st.decoded_image_bytes,
                         static_cast<int64_t>(st.opt.max_image_memory_mb) << 20);
      try {
        text = HttpFront::ReadBody(reader);
        // Depth and memory bounded while parsing (base/json_parse.h): 400 / 413.
        ps = ParseJson(text, RequestJsonLimits(text.size()), &body);
        if (ps.ok())
          ps = kind == Kind::kChat ? ParseChatRequest(body, st.opt, &er, &stream, &images)
                                   : ParseCompletionRequest(body, st, &er, &stream, &images);
      } catch (const std::bad_alloc&) {
        ps = OutOfMemoryError("reading the request (" + std::to_string(text.size()) + " bytes)");
      }
      // Too large: 413; the server's image memory in use: 429; out of memory: 507; else 400.
      if (!ps.ok()) return SendError(res, HttpStatusFor(AsRequestError(ps)), ps.message());
      const bool return_ids = body.contains("return_token_ids") && body["return_token_ids"].is_boolean() &&
                              body["return_token_ids"].get<bool>();
      std::optional<RetryShare::Key> share;
      const bool has_seed = body.contains("seed") && !body["seed"].is_null();
      if (!stream && st.retry->enabled() && DeterministicRequest(er, has_seed)) {
        share = RetryShare::KeyOf(CanonicalApiPath(req.path), text);
      }
      // Generation needs neither the text nor its JSON (the images are decoded into er).
      std::string().swap(text);
      body = Json();
      Answer(st, res, std::move(er), stream, kind, return_ids, share);
    };
  };
  http.Post(prefix + "/chat/completions", route(Kind::kChat));
  http.Post(prefix + "/completions", route(Kind::kText));
}

}  // namespace

void RegisterOpenAiRoutes(httplib::Server& http, Server::State& st) {
  for (const std::string& prefix : ApiPathPrefixes()) RegisterUnder(http, st, prefix);
}

}  // namespace mineru::server
