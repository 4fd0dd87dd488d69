// server/tasks_v4.cc — MinerU 4.1's Tasks API: creation, status, cancel and the routes (see
// tasks_v4.h). Uploads, url sources and results: tasks_v4_files.cc.
#include "server/tasks_v4.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <regex>
#include <set>

#include "base/json_parse.h"
#include "server/document_parse.h"
#include "server/http_status.h"
#include "server/tasks_v4_internal.h"

namespace mineru::server {
namespace {

constexpr size_t kMaxFilesPerTask = 100;
constexpr size_t kMaxCreateBodyBytes = size_t(1) << 20;

std::optional<RefusalV4> Invalid(const std::string& message, const std::string& param) {
  return RefusalV4{400, "invalid_request", message, param};
}

// tier: absent or null (ours: advanced), "advanced", or a tier we do not run (refused, never
// served as another).
std::optional<RefusalV4> ReadTier(const Json& v, std::string* tier) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) return Invalid("tier must be a string", "tier");
  *tier = v.get<std::string>();
  if (*tier == "advanced") return std::nullopt;
  if (*tier == "flash" || *tier == "basic" || *tier == "standard") {
    return RefusalV4{
        400, "unsupported_parameter",
        "tier '" + *tier + "' is not served here: this server runs 'advanced' (the full VLM extraction)",
        "tier"};
  }
  return Invalid("tier must be flash, basic, standard or advanced", "tier");
}

std::optional<RefusalV4> ReadOutputFormats(const Json& v, std::vector<std::string>* out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_array() || v.size() > 8)
    return Invalid("output_formats must be a list of formats", "output_formats");
  out->clear();
  for (const Json& f : v) {
    if (!f.is_string()) return Invalid("output_formats must be a list of strings", "output_formats");
    const std::string s = f.get<std::string>();
    if (s == "docx" || s == "html" || s == "latex") {
      return RefusalV4{400, "unsupported_output_format",
                       "output format '" + s + "' is not served here (only default, the ZIP)",
                       "output_formats"};
    }
    if (s != "default") return Invalid("unknown output format '" + s + "'", "output_formats");
    if (std::find(out->begin(), out->end(), s) == out->end()) out->push_back(s);
  }
  if (out->empty()) out->push_back("default");
  return std::nullopt;
}

std::optional<RefusalV4> ReadPageRange(const Json& v, const std::string& param, std::string* out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string() || !PageRangeSyntaxV4(v.get<std::string>()))
    return Invalid("page_range must be like \"1-5,8,r3-r1,all\"", param);
  *out = v.get<std::string>();
  return std::nullopt;
}

std::optional<RefusalV4> ReadTaskOptions(const Json& body, TaskOptionsV4* o) {
  if (auto r = ReadTier(body.value("tier", Json()), &o->tier)) return r;
  const Json mode = body.value("ocr_mode", Json());
  if (!mode.is_null()) {
    if (!mode.is_string() || (mode != "auto" && mode != "txt" && mode != "ocr"))
      return Invalid("ocr_mode must be auto, txt or ocr", "ocr_mode");
    o->ocr_mode = mode.get<std::string>();
  }
  if (auto r = ReadPageRange(body.value("page_range", Json()), "page_range", &o->page_range)) return r;
  return ReadOutputFormats(body.value("output_formats", Json()), &o->output_formats);
}

bool SafeFileName(const std::string& n) {
  return !n.empty() && n.size() <= 255 && n != "." && n != ".." &&
         std::none_of(n.begin(), n.end(),
                      [](unsigned char c) { return c < 0x20 || c == 0x7f || c == '/' || c == '\\'; });
}

std::optional<RefusalV4> ReadFileSource(const Json& f, const std::string& at, const ServerOptions& opt,
                                        TaskFileV4* out) {
  const bool has_bytes = f.contains("bytes") && !f["bytes"].is_null();
  const bool has_url = f.contains("url") && !f["url"].is_null();
  if (has_bytes && has_url) return Invalid("send bytes or url, not both", at + ".url");
  if (!has_bytes && !has_url) return Invalid("bytes is required when url is not supplied", at + ".bytes");
  if (has_url) {
    const Json& u = f["url"];
    const std::string s = u.is_string() ? u.get<std::string>() : "";
    if (s.size() > 4096 || (s.rfind("http://", 0) != 0 && s.rfind("https://", 0) != 0))
      return Invalid("url must be an http(s) URL", at + ".url");
    if (!opt.allow_remote_sources) {
      return RefusalV4{400, "unsupported_source",
                       "url sources are off on this server (--allow-remote-sources)", at + ".url"};
    }
    out->url = s;
    return std::nullopt;
  }
  const int64_t cap = static_cast<int64_t>(std::min<size_t>(opt.max_body_mb, size_t(1) << 30) << 20);
  auto n = JsonIntegerIn(f["bytes"], 1, INT64_MAX, "bytes");
  if (!n.ok()) return Invalid("bytes must be a positive integer", at + ".bytes");
  if (*n > cap) {
    return RefusalV4{
        413, "file_too_large",
        "the file is larger than this server takes (" + std::to_string(cap >> 20) + " MB, --max-body-mb)",
        at + ".bytes"};
  }
  out->bytes = *n;
  return std::nullopt;
}

std::optional<RefusalV4> ReadTaskFile(const Json& f, size_t i, const ServerOptions& opt, TaskFileV4* out) {
  static const std::set<std::string> kKeys = {"file_name", "bytes", "url", "sha256sum", "page_range"};
  const std::string at = "files." + std::to_string(i);
  if (!f.is_object()) return Invalid("each file must be an object", at);
  for (const auto& [k, v] : f.items()) {
    if (!kKeys.count(k)) return Invalid("unknown field: " + k, at + "." + k);
  }
  const Json name = f.value("file_name", Json());
  if (!name.is_string() || !SafeFileName(name.get<std::string>()))
    return Invalid("file_name must be a file name (1-255 bytes, no directories)", at + ".file_name");
  out->file_name = name.get<std::string>();
  if (auto r = ReadFileSource(f, at, opt, out)) return r;
  const Json sha = f.value("sha256sum", Json());
  if (!sha.is_null()) {
    std::string s = sha.is_string() ? sha.get<std::string>() : "";
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s.size() != 64 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); }))
      return RefusalV4{400, "invalid_sha256sum", "sha256sum must be 64 hex digits", at + ".sha256sum"};
    out->sha256sum = s;
  }
  out->file_id = "file_" + NewJobId();
  return ReadPageRange(f.value("page_range", Json()), at + ".page_range", &out->page_range);
}

std::optional<RefusalV4> ReadCreateBody(const httplib::Request& req, const ServerOptions& opt, TaskV4* t) {
  if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0)
    return Invalid("send application/json", "");
  if (req.body.size() > kMaxCreateBodyBytes)
    return RefusalV4{413, "invalid_request", "the task body is over 1 MiB", ""};
  Json body;
  if (!ParseJson(req.body, RequestJsonLimits(req.body.size()), &body).ok() || !body.is_object())
    return Invalid("the body must be a JSON object", "");
  static const std::set<std::string> kKeys = {"files", "tier", "ocr_mode", "page_range", "output_formats"};
  for (const auto& [k, v] : body.items()) {
    if (!kKeys.count(k)) return Invalid("unknown field: " + k, k);
  }
  if (auto r = ReadTaskOptions(body, &t->options)) return r;
  const Json files = body.value("files", Json());
  if (!files.is_array() || files.empty() || files.size() > kMaxFilesPerTask)
    return Invalid("files must list 1 to " + std::to_string(kMaxFilesPerTask) + " files", "files");
  for (size_t i = 0; i < files.size(); ++i) {
    TaskFileV4 f;
    if (auto r = ReadTaskFile(files[i], i, opt, &f)) return r;
    t->files.push_back(std::move(f));
  }
  return std::nullopt;
}

Json CreatedResponse(Server::State& st, const std::string& base, const TaskV4& t) {
  Json files = Json::array();
  for (const TaskFileV4& f : t.files) {
    const std::string status = FileStatusNowV4(st, t, f, JobOfV4(st, f));
    files.push_back(
        {{"file_id", f.file_id},
         {"file_name", f.file_name},
         {"status", status},
         {"upload", status == "waiting-file" ? UploadLinkV4(base, t, f, st.opt.task_upload_ttl_s) : Json()}});
  }
  std::vector<std::string> statuses;
  for (const Json& f : files) statuses.push_back(f["status"]);
  return {{"task_id", t.task_id},
          {"object", "task"},
          {"status", TaskStatusV4(statuses, t.canceled)},
          {"created_at", TimeV4(t.created_at)},
          {"files", files}};
}

void HandleCreate(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  if (st.draining) return SendErrorV4(res, 503, "server_shutting_down", "the server is shutting down");
  const std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 200)
    return SendErrorV4(res, 400, "invalid_request", "Idempotency-Key is over 200 characters");
  TaskV4 t;
  if (auto r = ReadCreateBody(req, st.opt, &t)) return SendRefusalV4(res, *r);
  t.task_id = "task_" + NewJobId();
  t.created_at = t.updated_at = NowSeconds();
  t.caller = CallerScope(req, st.opt);
  t.client_key = key.empty() ? "" : t.caller + ":" + key;
  // Tasks past retention go, never before their upload links expire.
  // Tasks none of whose files arrived go once their links expired.
  const double keep_s =
      st.opt.retention_hours > 0 ? std::max(st.opt.retention_hours * 3600, st.opt.task_upload_ttl_s) : 1e18;
  st.tasks_v4->PruneCreatedBefore(t.created_at - keep_s, t.created_at - st.opt.task_upload_ttl_s);
  bool replayed = false;
  StatusOr<TaskV4> kept = st.tasks_v4->Create(t, st.opt.max_tasks, &replayed);
  if (!kept.ok()) {
    return kept.status().code() == StatusCode::kBusy
               ? SendErrorV4(res, 429, "rate_limit_exceeded", kept.status().message())
               : SendStatusV4(res, StorageFailure(st, "cannot store the task", kept.status()));
  }
  if (replayed) {
    res.set_header("Idempotent-Replayed", "true");
  } else {
    SubmitKnownSourcesV4(st, &*kept);
    st.metrics.Inc("mineru_tasks_v4_created_total");
  }
  SendJson(res, 202, CreatedResponse(st, BaseUrlV4(req, st.opt), *kept));
}

// A file's detail; *error: the job store's failure, if reading its job failed (the detail is then
// not to be shown: a store hiccup must not read as a failed file).
Json FileDetail(Server::State& st, const std::string& base, const TaskV4& t, const TaskFileV4& f,
                Status* error) {
  const std::optional<Job> job = JobOfV4(st, f, error);
  const std::string status = FileStatusNowV4(st, t, f, job);
  Json d = {
      {"file_id", f.file_id},
      {"file_name", f.file_name},
      {"status", status},
      {"bytes", f.bytes},
      {"sha256sum", f.sha256sum.empty() ? Json() : Json(f.sha256sum)},
      {"page_range", f.page_range.empty() ? Json() : Json(f.page_range)},
      {"progress", {{"pages_done", job ? job->pages_done : 0}, {"pages_total", job ? job->pages_total : 0}}}};
  if (!f.url.empty()) d["url"] = f.url;
  if (status == "waiting-file") d["upload"] = UploadLinkV4(base, t, f, st.opt.task_upload_ttl_s);
  if (job) d["parse"] = {{"tier", "advanced"}, {"pages", job->pages_total}};
  if (job && (job->status == "done" || job->status == "failed")) d["finished_at"] = TimeV4(job->updated);
  if (status == "completed") d["result_url"] = ResultUrlV4(base, t, f);
  if (status == "failed" || status == "canceled") {
    std::string code = f.error_code, message = f.error;
    if (status == "canceled") code = "canceled", message = "the task was canceled";
    if (code.empty() && f.state == "waiting-file")
      code = "upload_expired", message = "the file was never uploaded";
    if (code.empty() && !job) code = "result_expired", message = "the result is past the server's retention";
    if (code.empty()) code = "parse_failed", message = job->error;
    d["error"] = {{"code", code}, {"message", message}};
  }
  return d;
}

Json TaskDetail(Server::State& st, const std::string& base, const TaskV4& t, Status* error) {
  Json files = Json::array();
  std::vector<std::string> statuses;
  int pages_done = 0, pages_total = 0;
  std::map<std::string, int> count;
  for (const TaskFileV4& f : t.files) {
    Json d = FileDetail(st, base, t, f, error);
    statuses.push_back(d["status"]);
    ++count[statuses.back()];
    pages_done += d["progress"]["pages_done"].get<int>();
    pages_total += d["progress"]["pages_total"].get<int>();
    files.push_back(std::move(d));
  }
  return {{"task_id", t.task_id},
          {"object", "task"},
          {"status", TaskStatusV4(statuses, t.canceled)},
          {"created_at", TimeV4(t.created_at)},
          {"updated_at", TimeV4(t.updated_at)},
          {"options",
           {{"tier", t.options.tier.empty() ? Json() : Json(t.options.tier)},
            {"ocr_mode", t.options.ocr_mode},
            {"page_range", t.options.page_range.empty() ? Json() : Json(t.options.page_range)},
            {"output_formats", t.options.output_formats}}},
          {"progress",
           {{"files_total", t.files.size()},
            {"files_completed", count["completed"]},
            {"files_failed", count["failed"]},
            {"files_canceled", count["canceled"]},
            {"pages_done", pages_done},
            {"pages_total", pages_total}}},
          {"files", files}};
}

std::optional<TaskV4> FindTask(Server::State& st, const std::string& id, httplib::Response& res) {
  std::optional<TaskV4> t = st.tasks_v4->Get(id);
  if (!t) SendErrorV4(res, 404, "task_not_found", "no such task", "task_id");
  return t;
}

void HandleDetail(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  auto t = FindTask(st, req.matches[1], res);
  if (!t) return;
  Status error;
  Json detail = TaskDetail(st, BaseUrlV4(req, st.opt), *t, &error);
  if (!error.ok()) return SendErrorV4(res, 503, "service_unavailable", "the job store cannot be read; retry");
  SendJson(res, 200, detail);
}

// Files not yet queued are canceled here; queued and running jobs are canceled through the
// server's cancel set (a running one stops before its next page). Again on a canceled task: the
// same answer.
void HandleCancel(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  if (!FindTask(st, req.matches[1], res)) return;
  std::vector<std::string> jobs;
  StatusOr<TaskV4> now = st.tasks_v4->Update(req.matches[1], [&jobs](TaskV4& t) {
    if (!t.canceled) t.canceled_at = NowSeconds();
    t.canceled = true;
    for (TaskFileV4& f : t.files) {
      if (f.state == "waiting-file" || f.state == "uploading") f.state = "canceled";
      if (!f.job_id.empty()) jobs.push_back(f.job_id);
    }
    return Status::Ok();
  });
  for (const std::string& j : jobs) st.CancelJob(j);
  // A record the disk refused is canceled in memory all the same (Update keeps it): the cancel
  // holds while the process runs. Gone (pruned meanwhile): 404.
  const std::optional<TaskV4> kept =
      now.ok() ? std::optional<TaskV4>(*now) : st.tasks_v4->Get(req.matches[1]);
  if (!kept) return SendErrorV4(res, 404, "task_not_found", "no such task", "task_id");
  if (!now.ok()) (void)StorageFailure(st, "cannot store the task", now.status());  // logged and counted
  const TaskV4& t = *kept;
  const std::string base = BaseUrlV4(req, st.opt);
  Json files = Json::array();
  std::vector<std::string> statuses;
  for (const TaskFileV4& f : t.files) {
    const std::string status = FileStatusNowV4(st, t, f, JobOfV4(st, f));
    statuses.push_back(status);
    Json d = {{"file_id", f.file_id}, {"file_name", f.file_name}, {"status", status}};
    if (status == "completed") d["result_url"] = ResultUrlV4(base, t, f);
    files.push_back(std::move(d));
  }
  SendJson(res, 200,
           {{"task_id", t.task_id},
            {"object", "task"},
            {"status", TaskStatusV4(statuses, true)},
            {"files", files}});
}

}  // namespace

std::string TimeV4(double seconds_since_epoch) {
  const std::time_t s = static_cast<std::time_t>(seconds_since_epoch);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<Job> JobOfV4(Server::State& st, const TaskFileV4& f, Status* error) {
  if (f.job_id.empty()) return std::nullopt;
  auto j = st.jobs->Get(f.job_id);
  if (!j.ok()) {
    if (error && error->ok()) *error = j.status();
    return std::nullopt;
  }
  if (!j->has_value()) return std::nullopt;
  Job job = **j;
  if (job.status == "running") ShowUnrecordedFinish(st, &job);  // as /tasks shows it
  return job;
}

std::string FileStatusNowV4(Server::State& st, const TaskV4& t, const TaskFileV4& f,
                            const std::optional<Job>& job) {
  std::string s = FileStatusV4(f, job, t.created_at, st.opt.task_upload_ttl_s, NowSeconds());
  // A canceled task's jobs that had not finished when it was canceled stay canceled (the worker
  // stops them; one that finished its last page meanwhile is not offered either).
  const bool after_cancel = job && job->updated >= t.canceled_at;
  if (t.canceled && (s == "pending" || s == "running" || (s == "completed" && after_cancel))) s = "canceled";
  return s;
}

void SendStatusV4(httplib::Response& res, const Status& s, const std::string& param) {
  const int status = HttpStatusFor(s);
  const char* code = status == 404   ? "task_not_found"
                     : status == 413 ? "file_too_large"
                     : status == 429 ? "rate_limit_exceeded"
                     : status == 503 ? "service_unavailable"
                     : status == 507 ? "quota_exceeded"
                     : status >= 500 ? "internal_error"
                                     : "invalid_request";
  SendErrorV4(res, status, code, s.message(), param);
}

bool IsTaskUploadPathV4(const std::string& path) {
  static const std::regex kUpload(R"(/v1/tasks/task_[0-9a-f]{32}/uploads/file_[0-9a-f]{32})");
  return std::regex_match(path, kUpload);
}

void RegisterTasksV4(httplib::Server& http, Server::State& st) {
  auto route = [&st](void (*handler)(Server::State&, const httplib::Request&, httplib::Response&)) {
    return [&st, handler](const httplib::Request& req, httplib::Response& res) { handler(st, req, res); };
  };
  http.Post("/v1/tasks", route(HandleCreate));
  http.Get(R"(/v1/tasks/([^/]+))", route(HandleDetail));
  http.Post(R"(/v1/tasks/([^/]+)/cancel)", route(HandleCancel));
  http.Get(R"(/v1/tasks/([^/]+)/files/([^/]+)/result)", route(HandleResultV4));
  http.Put(R"(/v1/tasks/([^/]+)/uploads/([^/]+))",
           [&st](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
             HandleUploadV4(st, req, res, reader);
           });
  http.Delete(R"(/v1/tasks/([^/]+))", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Allow", "GET");
    SendErrorV4(res, 405, "method_not_allowed", "tasks are canceled with POST /v1/tasks/{task_id}/cancel");
  });
}

}  // namespace mineru::server
