// server/document_api.cc — mineru-api's document endpoints: POST /file_parse (synchronous) and the
// durable job API: POST /tasks (202 + id), GET /tasks/{id}, GET /tasks/{id}/result, plus the
// files the web page needs (/tasks/{id}/pages/{n}, /tasks/{id}/files/{name}). Not the job runner
// that parses the queued jobs (document_jobs.cc) nor the parse pieces both share (document_parse.h).

#include <dirent.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "pipeline/document.h"
#include "server/base64.h"
#include "server/document_parse.h"
#include "server/job_storage.h"
#include "server/job_submit.h"
#include "server/state.h"

namespace mineru::server {
namespace {

bool IsTrue(const httplib::Request& req, const char* key, bool def) {
  if (!req.has_file(key)) return def;
  std::string v = req.get_file_value(key).content;
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1" || v == "yes" || v == "on";
}

constexpr size_t kMaxSyncFiles = 16;  // files per /file_parse request

// A page id form field as Python's int() reads it (whitespace, sign, digits), clamped to
// [0, kMaxPageId] whatever its size; absent: def. Anything else is the client's error (400), not
// silently the default.
StatusOr<int> PageIdField(const httplib::Request& req, const char* key, int def) {
  if (!req.has_file(key)) return def;
  const std::string v = req.get_file_value(key).content;
  size_t i = 0, e = v.size();
  while (i < e && std::isspace(static_cast<unsigned char>(v[i]))) ++i;
  while (e > i && std::isspace(static_cast<unsigned char>(v[e - 1]))) --e;
  const bool negative = i < e && v[i] == '-';
  if (i < e && (v[i] == '-' || v[i] == '+')) ++i;
  if (i == e) return InvalidArgumentError(std::string(key) + " must be an integer");
  int64_t n = 0;
  for (; i < e; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i])))
      return InvalidArgumentError(std::string(key) + " must be an integer");
    n = std::min<int64_t>(n * 10 + (v[i] - '0'), kMaxPageId);
  }
  return negative ? 0 : static_cast<int>(n);
}

StatusOr<ParseRequest> ReadParseRequest(const httplib::Request& req) {
  ParseRequest p;
  p.return_md = IsTrue(req, "return_md", true);
  p.return_content_list = IsTrue(req, "return_content_list", false);
  p.return_middle_json = IsTrue(req, "return_middle_json", false);
  p.return_model_output = IsTrue(req, "return_model_output", false);
  p.return_images = IsTrue(req, "return_images", false);
  MINERU_ASSIGN_OR_RETURN(p.start_page, PageIdField(req, "start_page_id", 0));
  MINERU_ASSIGN_OR_RETURN(const int end, PageIdField(req, "end_page_id", 99999));
  p.end_page = std::max(p.start_page, end);
  return p;
}

// Reads a document's output files (paths relative to the output directory: "DOC/DOC.md",
// "DOC/images/x.jpg"): from a local directory, or from the job store.
class OutputReader {
 public:
  virtual ~OutputReader() = default;
  virtual std::optional<std::string> Read(const std::string& rel) = 0;
  // Files directly in reldir whose names end with suffix: (file name, data).
  virtual std::vector<std::pair<std::string, std::string>> ReadDir(const std::string& reldir,
                                                                   const std::string& suffix) = 0;
  Status status;  // the first store error: a result read with one is incomplete
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class LocalOutputs final : public OutputReader {
 public:
  explicit LocalOutputs(std::string dir) : dir_(std::move(dir)) {}
  std::optional<std::string> Read(const std::string& rel) override {
    auto s = ReadFileToString(dir_ + "/" + rel, size_t(1) << 30);
    if (!s.ok()) return std::nullopt;
    return *s;
  }
  std::vector<std::pair<std::string, std::string>> ReadDir(const std::string& reldir,
                                                           const std::string& suffix) override {
    std::vector<std::pair<std::string, std::string>> out;
    const std::string dir = dir_ + "/" + reldir;
    if (DIR* d = ::opendir(dir.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string f = e->d_name;
        if (f.size() <= suffix.size() || !EndsWith(f, suffix)) continue;
        auto data = ReadFileToString(dir + "/" + f, size_t(1) << 30);
        if (data.ok()) {
          out.emplace_back(f, std::move(*data));
        } else if (status.ok()) {
          status = data.status();  // the result is incomplete: said so, not an empty file
        }
      }
      ::closedir(d);
    }
    return out;
  }

 private:
  std::string dir_;
};

class StoredOutputs final : public OutputReader {
 public:
  StoredOutputs(JobStore& store, std::string id) : store_(store), id_(std::move(id)) {}
  std::optional<std::string> Read(const std::string& rel) override {
    auto r = store_.ReadFile(id_, rel);
    if (!r.ok()) {
      if (status.ok()) status = r.status();
      return std::nullopt;
    }
    return *r;
  }
  std::vector<std::pair<std::string, std::string>> ReadDir(const std::string& reldir,
                                                           const std::string& suffix) override {
    std::vector<std::pair<std::string, std::string>> out;
    auto r = store_.ReadFiles(id_, reldir + "/", true);
    if (!r.ok()) {
      if (status.ok()) status = r.status();
      return out;
    }
    for (JobFile& f : *r) {
      const std::string base = f.name.substr(reldir.size() + 1);
      if (base.find('/') == std::string::npos && base.size() > suffix.size() && EndsWith(base, suffix)) {
        out.emplace_back(base, std::move(f.data));
      }
    }
    return out;
  }

 private:
  JobStore& store_;
  std::string id_;
};

// The MinerU version whose files a parse of p writes.
std::string MinerUVersion(const Server::State& st, const ParseRequest& p) {
  return std::string(VersionFor(st, p).writer->version());
}

// mineru-api's per-document result: file contents as strings (as MinerU's API returns them), read
// under the names the parse's version gives them (MinerU 4's files have no model output: "").
Json DocumentResult(const Server::State& st, OutputReader& out, const std::string& name,
                    const ParseRequest& p) {
  const pipeline::OutputWriter::KindFiles files = VersionFor(st, p).writer->Files(name);
  auto read = [&out, &name](const std::string& file) {
    return file.empty() ? std::string() : out.Read(name + "/" + file).value_or("");
  };
  Json r = Json::object();
  if (p.return_md) r["md_content"] = read(files.markdown);
  if (p.return_middle_json) r["middle_json"] = read(files.middle_json);
  if (p.return_model_output) r["model_output"] = read(files.model_output);
  if (p.return_content_list) r["content_list"] = read(files.content_list);
  if (p.return_images) {
    Json images = Json::object();
    for (const auto& [f, data] : out.ReadDir(name + "/images", ".jpg")) {
      images[f] = "data:image/jpeg;base64," + Base64Encode(data);
    }
    r["images"] = images;
  }
  return r;
}

// Failures to store something are the server's, never the client's (AsStorageError): 507 when the
// disk, a quota or a file size limit is full (StorageFull), 503 when the storage refuses writes
// otherwise (read-only, unreachable).
void SendStorageError(Server::State& st, httplib::Response& res, const std::string& what, const Status& s) {
  const Status failure = StorageFailure(st, what, s);
  SendError(res, HttpStatusFor(failure), failure.message());
}

Status ErrnoError(const std::string& what) { return IoErrorFromErrno(what, errno); }

// The outputs of a job: from the store when it keeps files, else from the job's directory.
std::unique_ptr<OutputReader> JobOutputs(Server::State& st, const Job& j) {
  if (st.jobs->stores_files()) return std::make_unique<StoredOutputs>(*st.jobs, j.id);
  return std::make_unique<LocalOutputs>(j.result_dir);
}

bool FailedPageOutOfMemory(const pipeline::DocumentReport& r) {
  for (const auto& pg : r.pages) {
    if (!pg.ok) return pg.error.find("out of memory") != std::string::npos;
  }
  return false;
}

// One synchronous /file_parse request: its uploads parsed one after the other into `work`.
struct SyncParse {
  SyncParse(Server::State& s, const ParseRequest& r, std::string dir,
            std::chrono::steady_clock::time_point end)
      : st(s), p(r), work(std::move(dir)), deadline(end) {}
  Server::State& st;
  const ParseRequest& p;
  std::string work;  // this request's scratch folder, removed when it ends
  std::chrono::steady_clock::time_point deadline;
  std::unique_ptr<pipeline::Backend> owned;
  pipeline::Backend* backend = nullptr;
  Json results = Json::object();
  int ok_files = 0;
  std::string last_error;
  bool out_of_memory = false;  // the last failure was the server's memory, not the document

  // Parses one upload into results; false when the whole request ends here (res holds the answer).
  bool File(const httplib::MultipartFormData& f, httplib::Response& res) {
    const std::string name = SafeName(f.filename);
    const std::string path = work + "/" + name;
    Status w = WriteStringToFile(path, f.content);
    if (!w.ok()) {
      SendStorageError(st, res, "cannot store the upload", w);
      return false;
    }
    Status lim = CheckPageLimit(st, path, p);
    if (!lim.ok()) {
      last_error = name + ": " + lim.message();
      out_of_memory = lim.code() == StatusCode::kOutOfMemory;
      if (lim.code() == StatusCode::kResourceExhausted) {  // too large: 413
        SendError(res, HttpStatusFor(lim), last_error);
        return false;
      }
      return true;
    }
    if (!backend) backend = BackendFor(st, &owned);
    int global_page = 0;
    pipeline::ParseOptions o = OptionsFor(st, p, work + "/out");
    o.deadline = deadline;
    pipeline::DocumentReport r = pipeline::ParseDocument(path, o, *backend, &global_page);
    if (r.status.code() == StatusCode::kDeadlineExceeded) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%g", st.opt.file_parse_timeout_s);
      SendError(res, 504,
                std::string("the documents took longer than --file-parse-timeout-s (") + secs +
                    " s) to parse; submit long documents with /tasks");
      return false;
    }
    if (OutputsNotWritten(r.status)) {
      SendStorageError(st, res, "cannot write the result of " + name, r.status);
      return false;
    }
    // A page that failed fails the file (as a job does): never a 200 with what was left.
    if (!r.ok()) {
      last_error = name + ": " + JobError(r);
      out_of_memory = r.status.code() == StatusCode::kOutOfMemory || FailedPageOutOfMemory(r);
      return true;
    }
    ++ok_files;
    LocalOutputs outputs(work + "/out");
    results[r.name] = DocumentResult(st, outputs, r.name, p);
    if (!outputs.status.ok()) {  // an output file that cannot be read back: not an empty result
      SendStorageError(st, res, "cannot read the result of " + name, outputs.status);
      return false;
    }
    return true;
  }
};

// POST /file_parse: parses the uploads while the client waits (a few files; /tasks for more).
void HandleFileParse(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  if (!st.ready && !st.doc_backend) return SendError(res, 503, "the model is loading");
  if (st.draining) return SendError(res, 503, "the server is shutting down");
  if (!st.doc_backend) {
    if (Status h = st.engine->Health(); !h.ok()) return SendError(res, 503, h.message());
  }
  if (!req.is_multipart_form_data() || !req.has_file("files")) {
    return SendError(res, 400, "send multipart/form-data with one or more 'files'");
  }
  // A synchronous parse holds an HTTP worker for whole documents: a few files per request, and
  // at most a quarter of the HTTP workers parse at once (the rest: 429, or use /tasks).
  if (req.files.count("files") > kMaxSyncFiles) {
    return SendError(res, 413,
                     "at most " + std::to_string(kMaxSyncFiles) +
                         " files per /file_parse request "
                         "(submit more with /tasks)");
  }
  const SyncParseSlot slot(st);
  if (!slot.ok()) {
    return SendError(res, 429,
                     "too many documents are being parsed synchronously; retry shortly or use /tasks");
  }
  const StatusOr<ParseRequest> parsed = ReadParseRequest(req);
  if (!parsed.ok()) return SendError(res, 400, parsed.status().message());
  // The whole request has --file-parse-timeout-s: past it no page starts and the answer is 504.
  SyncParse run(
      st, *parsed, st.opt.data_dir + "/sync-" + NewJobId(),
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(st.opt.file_parse_timeout_s)));
  if (::mkdir(run.work.c_str(), 0755) != 0) {
    return SendStorageError(st, res, "cannot store the upload", ErrnoError("cannot create " + run.work));
  }
  auto range = req.files.equal_range("files");
  bool answered = false;
  for (auto it = range.first; it != range.second && !answered; ++it) answered = !run.File(it->second, res);
  RemoveTree(run.work);
  malloc_trim(0);
  if (answered) return;
  if (run.ok_files == 0) {
    return SendError(res, run.out_of_memory ? 507 : 400,
                     run.last_error.empty() ? "no document could be parsed" : run.last_error);
  }
  SendJson(res, 200, {{"backend", "vlm"}, {"version", MinerUVersion(st, *parsed)}, {"results", run.results}});
}

// POST /tasks: stores the upload as a queued job (202 with its id).
void HandleSubmitTask(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  if (st.draining) return SendError(res, 503, "the server is shutting down");
  if (!req.is_multipart_form_data() || !req.has_file("files")) {
    return SendError(res, 400, "send multipart/form-data with a 'files' field");
  }
  // A client (or a proxy retrying for it) that sends the same Idempotency-Key gets the same task.
  const std::string key = req.get_header_value("Idempotency-Key");
  if (key.size() > 200) return SendError(res, 400, "Idempotency-Key is longer than 200 characters");
  const auto f = req.get_file_value("files");
  const StatusOr<ParseRequest> parsed = ReadParseRequest(req);
  if (!parsed.ok()) return SendError(res, 400, parsed.status().message());
  JobSubmission sub{SafeName(f.filename), &f.content, *parsed,
                    key.empty() ? "" : CallerScope(req, st.opt) + ":" + key, nullptr};
  // The job keeps the version it was submitted under: a restart with another --vl-utils finishes it
  // with the files its client expects.
  sub.request.version = VersionOf(st).name;
  const StatusOr<SubmittedJob> job = SubmitJob(st, sub);
  if (!job.ok()) return SendError(res, HttpStatusFor(job.status()), job.status().message());
  if (job->replayed) res.set_header("Idempotent-Replayed", "true");
  SendJson(res, 202, {{"task_id", job->id}, {"status", job->status}});
}

// The job named by the route's first group; nullopt when res already holds the answer (404, 503).
std::optional<Job> GetJob(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  auto j = st.jobs->Get(req.matches[1]);
  if (!j.ok()) {
    SendError(res, 503, j.status().message());
    return std::nullopt;
  }
  if (!j->has_value()) {
    SendError(res, 404, "no such task");
    return std::nullopt;
  }
  Job job = **j;
  if (job.status == "running") ShowUnrecordedFinish(st, &job);
  return job;
}

// GET /tasks/{id}: the job's status and progress.
void HandleTaskStatus(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  auto j = GetJob(st, req, res);
  if (!j) return;
  Json body = {{"task_id", j->id},
               {"status", j->status},
               {"filename", j->filename},
               {"created", j->created},
               {"updated", j->updated},
               {"attempts", j->attempts},
               {"progress", {{"pages_done", j->pages_done}, {"pages_total", j->pages_total}}}};
  if (!j->error.empty()) body["error"] = j->error;
  SendJson(res, 200, body);
}

// GET /tasks/{id}/result: every output of a finished job (202 while it runs).
void HandleTaskResult(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  auto j = GetJob(st, req, res);
  if (!j) return;
  if (j->status == "queued" || j->status == "running") {
    return SendJson(res, 202, {{"task_id", j->id}, {"status", j->status}});
  }
  if (j->status == "failed") {
    return SendJson(res, 200, {{"task_id", j->id}, {"status", "failed"}, {"error", j->error}});
  }
  ParseRequest p = JobParseRequest(*j);
  p.return_md = p.return_content_list = p.return_middle_json = p.return_model_output = p.return_images = true;
  const std::string name = pipeline::DocumentName(j->filename);
  auto outputs = JobOutputs(st, *j);
  Json doc = DocumentResult(st, *outputs, name, p);
  if (!outputs->status.ok()) return SendError(res, 503, outputs->status.message());
  SendJson(res, 200,
           {{"task_id", j->id},
            {"status", "done"},
            {"backend", "vlm"},
            {"version", MinerUVersion(st, p)},
            {"results", {{name, doc}}}});
}

// GET /tasks/{id}/pages/{n}: the rendered image of page n.
void HandleTaskPage(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  auto j = GetJob(st, req, res);
  if (!j) return;
  const std::string digits = req.matches[2];
  if (digits.size() > 7) return SendError(res, 404, "no such page");
  const int n = std::atoi(digits.c_str());
  const ParseRequest p = JobParseRequest(*j);
  const std::string name = pipeline::DocumentName(j->filename);
  auto outputs = JobOutputs(st, *j);
  auto png = outputs->Read(name + "/" + PageFile(p.start_page + n));
  if (!outputs->status.ok()) return SendError(res, 503, outputs->status.message());
  if (!png) return SendError(res, 404, "no such page (yet)");
  res.set_content(*png, "image/png");
}

// GET /tasks/{id}/files/{name}: one output file of a job (Markdown or JSON).
void HandleTaskFile(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  auto j = GetJob(st, req, res);
  if (!j) return;
  const std::string name = pipeline::DocumentName(j->filename);
  const std::string want = req.matches[2];
  const pipeline::OutputWriter::KindFiles files = VersionFor(st, JobParseRequest(*j)).writer->Files(name);
  // Besides the four kinds: MinerU 3.4.4's NAME_content_list_v2.json and MinerU 4's
  // structured_content.json (404 where the version writes none).
  const std::string known[] = {files.markdown,
                               files.content_list,
                               files.middle_json,
                               files.model_output,
                               name + "_content_list_v2.json",
                               "structured_content.json"};
  if (!want.empty() && std::find(std::begin(known), std::end(known), want) != std::end(known)) {
    auto outputs = JobOutputs(st, *j);
    auto data = outputs->Read(name + "/" + want);
    if (!outputs->status.ok()) return SendError(res, 503, outputs->status.message());
    if (!data) return SendError(res, 404, "not available (yet)");
    res.set_header("Content-Disposition", "attachment; filename=\"" + want + "\"");
    res.set_content(*data, EndsWith(want, ".md") ? "text/markdown; charset=utf-8" : "application/json");
    return;
  }
  SendError(res, 404, "no such file");
}

}  // namespace

void RegisterDocumentRoutes(httplib::Server& http, Server::State& st) {
  auto route = [&st](void (*handler)(Server::State&, const httplib::Request&, httplib::Response&)) {
    return [&st, handler](const httplib::Request& req, httplib::Response& res) { handler(st, req, res); };
  };
  http.Post("/file_parse", route(HandleFileParse));
  http.Post("/tasks", route(HandleSubmitTask));
  http.Get(R"(/tasks/([0-9a-f]{32}))", route(HandleTaskStatus));
  http.Get(R"(/tasks/([0-9a-f]{32})/result)", route(HandleTaskResult));
  http.Get(R"(/tasks/([0-9a-f]{32})/pages/(\d+))", route(HandleTaskPage));
  http.Get(R"(/tasks/([0-9a-f]{32})/files/([A-Za-z0-9._-]+))", route(HandleTaskFile));
}

void RemoveLeftoverUploads(const std::string& data_dir) {
  DIR* d = ::opendir(data_dir.c_str());
  if (!d) return;
  std::vector<std::string> old;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "sync-", 5) == 0) old.push_back(data_dir + "/" + e->d_name);
  }
  ::closedir(d);
  for (const std::string& p : old) RemoveTree(p);
  if (!old.empty()) std::fprintf(stderr, "removed %zu leftover upload folder(s)\n", old.size());
}

}  // namespace mineru::server
