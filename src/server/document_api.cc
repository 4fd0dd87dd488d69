// server/document_api.cc — mineru-api's document endpoints: POST /file_parse (synchronous) and the
// durable job API: POST /tasks (202 + id), GET /tasks/{id}, GET /tasks/{id}/result, plus the
// files the web page needs (/tasks/{id}/pages/{n}, /tasks/{id}/files/{name}).

#include <dirent.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "base/mapped_file.h"
#include "pipeline/document.h"
#include "pipeline/model_backend.h"
#include "server/base64.h"
#include "server/state.h"

namespace mineru::server {
namespace {

bool IsTrue(const httplib::Request& req, const char* key, bool def) {
  if (!req.has_file(key)) return def;
  std::string v = req.get_file_value(key).content;
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1" || v == "yes" || v == "on";
}

int IntField(const httplib::Request& req, const char* key, int def) {
  if (!req.has_file(key)) return def;
  try {
    return std::stoi(req.get_file_value(key).content);
  } catch (...) {
    return def;
  }
}

// A safe file name for an upload (no directories, no leading dots).
std::string SafeName(const std::string& name) {
  std::string base = name;
  const size_t slash = base.find_last_of("/\\");
  if (slash != std::string::npos) base = base.substr(slash + 1);
  std::string out;
  for (char c : base) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  while (!out.empty() && out[0] == '.') out.erase(0, 1);
  return out.empty() ? "document" : out.substr(0, 120);
}

struct ParseRequest {
  bool return_md = true, return_content_list = false, return_middle_json = false, return_model_output = false,
       return_images = false;
  int start_page = 0, end_page = 99999;  // 0-based, inclusive
};

ParseRequest ReadParseRequest(const httplib::Request& req) {
  ParseRequest p;
  p.return_md = IsTrue(req, "return_md", true);
  p.return_content_list = IsTrue(req, "return_content_list", false);
  p.return_middle_json = IsTrue(req, "return_middle_json", false);
  p.return_model_output = IsTrue(req, "return_model_output", false);
  p.return_images = IsTrue(req, "return_images", false);
  p.start_page = std::max(0, IntField(req, "start_page_id", 0));
  p.end_page = std::max(p.start_page, IntField(req, "end_page_id", 99999));
  return p;
}

Json ParseRequestJson(const ParseRequest& p) {
  return {{"return_md", p.return_md}, {"return_content_list", p.return_content_list},
          {"return_middle_json", p.return_middle_json}, {"return_model_output", p.return_model_output},
          {"return_images", p.return_images}, {"start_page_id", p.start_page}, {"end_page_id", p.end_page}};
}

ParseRequest ParseRequestFrom(const Json& j) {
  ParseRequest p;
  p.return_md = j.value("return_md", true);
  p.return_content_list = j.value("return_content_list", false);
  p.return_middle_json = j.value("return_middle_json", false);
  p.return_model_output = j.value("return_model_output", false);
  p.return_images = j.value("return_images", false);
  p.start_page = j.value("start_page_id", 0);
  p.end_page = j.value("end_page_id", 99999);
  return p;
}

std::string Slurp(const std::string& p) {
  auto s = ReadFileToString(p, size_t(1) << 30);
  return s.ok() ? *s : std::string();
}

// mineru-api's per-document result: file contents as strings (as MinerU's API returns them).
Json DocumentResult(const std::string& out_dir, const std::string& name, const ParseRequest& p) {
  const std::string base = out_dir + "/" + name + "/" + name;
  Json r = Json::object();
  if (p.return_md) r["md_content"] = Slurp(base + ".md");
  if (p.return_middle_json) r["middle_json"] = Slurp(base + "_middle.json");
  if (p.return_model_output) r["model_output"] = Slurp(base + "_model.json");
  if (p.return_content_list) r["content_list"] = Slurp(base + "_content_list.json");
  if (p.return_images) {
    Json images = Json::object();
    const std::string dir = out_dir + "/" + name + "/images";
    if (DIR* d = ::opendir(dir.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string f = e->d_name;
        if (f.size() > 4 && f.compare(f.size() - 4, 4, ".jpg") == 0) {
          images[f] = "data:image/jpeg;base64," + Base64Encode(Slurp(dir + "/" + f));
        }
      }
      ::closedir(d);
    }
    r["images"] = images;
  }
  return r;
}

pipeline::Backend* BackendFor(Server::State& st, std::unique_ptr<pipeline::Backend>* owned) {
  if (st.doc_backend) return st.doc_backend.get();
  *owned = pipeline::MakeModelBackend(st.engine.get());
  return owned->get();
}

pipeline::ParseOptions OptionsFor(const Server::State& st, const ParseRequest& p, const std::string& out_dir) {
  pipeline::ParseOptions o;
  o.output_dir = out_dir;
  o.pages = std::to_string(p.start_page + 1) + "-" + std::to_string(std::min(p.end_page + 1, 1 << 24));
  o.limits.pdf.max_pages = 1 << 24;
  o.limits.image.max_pixels = st.opt.max_image_pixels;
  o.page_images = true;
  o.cancel = &st.draining;
  return o;
}

Status CheckPageLimit(const Server::State& st, const std::string& path, const ParseRequest& p) {
  auto doc = pipeline::InputDocument::Open(path);
  if (!doc.ok()) return doc.status();
  const int pages = std::min((*doc)->num_pages(), p.end_page + 1) - p.start_page;
  if (pages <= 0) return InvalidArgumentError("start_page_id is past the end of the document");
  if (pages > st.opt.max_pages) {
    return ResourceExhaustedError("the document has " + std::to_string(pages) + " pages to parse, over the limit of " +
                                  std::to_string(st.opt.max_pages));
  }
  return Status::Ok();
}

void RemoveTree(const std::string& path) {
  if (path.empty() || path == "/") return;
  std::string cmd = "rm -rf '" + path + "'";
  if (path.find('\'') == std::string::npos) (void)std::system(cmd.c_str());
}

}  // namespace

void RegisterDocumentRoutes(httplib::Server& http, Server::State& st) {
  http.Post("/file_parse", [&st](const httplib::Request& req, httplib::Response& res) {
    if (!st.ready && !st.doc_backend) return SendError(res, 503, "the model is loading");
    if (st.draining) return SendError(res, 503, "the server is shutting down");
    if (!req.is_multipart_form_data() || !req.has_file("files")) {
      return SendError(res, 400, "send multipart/form-data with one or more 'files'");
    }
    const ParseRequest p = ReadParseRequest(req);
    const std::string work = st.opt.data_dir + "/sync-" + NewJobId();
    ::mkdir(work.c_str(), 0755);
    Json results = Json::object();
    std::unique_ptr<pipeline::Backend> owned;
    pipeline::Backend* backend = nullptr;
    int ok_files = 0;
    std::string last_error;
    auto range = req.files.equal_range("files");
    for (auto it = range.first; it != range.second; ++it) {
      const httplib::MultipartFormData& f = it->second;
      const std::string name = SafeName(f.filename);
      const std::string path = work + "/" + name;
      if (!WriteStringToFile(path, f.content).ok()) return SendError(res, 500, "cannot store the upload");
      Status lim = CheckPageLimit(st, path, p);
      if (!lim.ok()) {
        last_error = name + ": " + lim.message();
        if (lim.code() == StatusCode::kResourceExhausted) {
          RemoveTree(work);
          return SendError(res, 413, last_error);
        }
        continue;
      }
      if (!backend) backend = BackendFor(st, &owned);
      int global_page = 0;
      pipeline::DocumentReport r = pipeline::ParseDocument(path, OptionsFor(st, p, work + "/out"), *backend, &global_page);
      if (!r.status.ok()) {
        last_error = name + ": " + r.status.message();
        continue;
      }
      ++ok_files;
      results[r.name] = DocumentResult(work + "/out", r.name, p);
    }
    RemoveTree(work);
    malloc_trim(0);
    if (ok_files == 0) return SendError(res, 400, last_error.empty() ? "no document could be parsed" : last_error);
    SendJson(res, 200, {{"backend", "vlm"}, {"version", "2.5.4"}, {"results", results}});
  });

  http.Post("/tasks", [&st](const httplib::Request& req, httplib::Response& res) {
    if (st.draining) return SendError(res, 503, "the server is shutting down");
    if (!req.is_multipart_form_data() || !req.has_file("files")) {
      return SendError(res, 400, "send multipart/form-data with a 'files' field");
    }
    auto queued = st.jobs->CountByStatus("queued");
    if (!queued.ok()) return SendError(res, 503, queued.status().message());
    if (static_cast<size_t>(*queued) >= st.opt.max_queued_jobs) {
      return SendError(res, 429, "the job queue is full (" + std::to_string(*queued) + " queued)");
    }
    const auto f = req.get_file_value("files");
    const ParseRequest p = ReadParseRequest(req);
    Job j;
    j.id = NewJobId();
    j.status = "queued";
    j.created = j.updated = NowSeconds();
    j.filename = SafeName(f.filename);
    const std::string dir = st.opt.data_dir + "/jobs/" + j.id;
    if (::mkdir(dir.c_str(), 0755) != 0) return SendError(res, 500, "cannot create the job directory");
    j.input_path = dir + "/" + j.filename;
    Status w = WriteStringToFile(j.input_path, f.content);
    if (!w.ok()) {
      RemoveTree(dir);
      return SendError(res, 507, "cannot store the upload: " + w.message());
    }
    Status lim = CheckPageLimit(st, j.input_path, p);
    if (!lim.ok()) {
      RemoveTree(dir);
      return SendError(res, lim.code() == StatusCode::kResourceExhausted ? 413 : 400, lim.message());
    }
    j.options = ParseRequestJson(p).dump();
    j.result_dir = dir + "/out";
    Status ins = st.jobs->Insert(j);
    if (!ins.ok()) {
      RemoveTree(dir);
      return SendError(res, 503, ins.message());
    }
    st.jobs_cv.notify_one();
    st.metrics.Inc("mineru_jobs_submitted_total");
    SendJson(res, 202, {{"task_id", j.id}, {"status", "queued"}});
  });

  auto get_job = [&st](const httplib::Request& req, httplib::Response& res) -> std::optional<Job> {
    auto j = st.jobs->Get(req.matches[1]);
    if (!j.ok()) {
      SendError(res, 503, j.status().message());
      return std::nullopt;
    }
    if (!j->has_value()) {
      SendError(res, 404, "no such task");
      return std::nullopt;
    }
    return **j;
  };

  http.Get(R"(/tasks/([0-9a-f]{32}))", [get_job](const httplib::Request& req, httplib::Response& res) {
    auto j = get_job(req, res);
    if (!j) return;
    Json body = {{"task_id", j->id}, {"status", j->status}, {"filename", j->filename},
                 {"created", j->created}, {"updated", j->updated},
                 {"progress", {{"pages_done", j->pages_done}, {"pages_total", j->pages_total}}}};
    if (!j->error.empty()) body["error"] = j->error;
    SendJson(res, 200, body);
  });

  http.Get(R"(/tasks/([0-9a-f]{32})/result)", [get_job](const httplib::Request& req, httplib::Response& res) {
    auto j = get_job(req, res);
    if (!j) return;
    if (j->status == "queued" || j->status == "running") {
      return SendJson(res, 202, {{"task_id", j->id}, {"status", j->status}});
    }
    if (j->status == "failed") {
      return SendJson(res, 200, {{"task_id", j->id}, {"status", "failed"}, {"error", j->error}});
    }
    ParseRequest p = ParseRequestFrom(Json::parse(j->options, nullptr, false).is_object()
                                          ? Json::parse(j->options)
                                          : Json::object());
    p.return_md = p.return_content_list = p.return_middle_json = p.return_model_output = p.return_images = true;
    const std::string name = pipeline::DocumentName(j->filename);
    SendJson(res, 200, {{"task_id", j->id}, {"status", "done"}, {"backend", "vlm"}, {"version", "2.5.4"},
                        {"results", {{name, DocumentResult(j->result_dir, name, p)}}}});
  });

  http.Get(R"(/tasks/([0-9a-f]{32})/pages/(\d+))", [get_job](const httplib::Request& req, httplib::Response& res) {
    auto j = get_job(req, res);
    if (!j) return;
    const int n = std::atoi(std::string(req.matches[2]).c_str());
    ParseRequest p = ParseRequestFrom(Json::parse(j->options, nullptr, false).is_object() ? Json::parse(j->options)
                                                                                            : Json::object());
    char file[64];
    std::snprintf(file, sizeof(file), "/pages/page_%04d.png", p.start_page + n + 1);
    const std::string name = pipeline::DocumentName(j->filename);
    auto png = ReadFileToString(j->result_dir + "/" + name + file, 64u << 20);
    if (!png.ok()) return SendError(res, 404, "no such page (yet)");
    res.set_content(*png, "image/png");
  });

  http.Get(R"(/tasks/([0-9a-f]{32})/files/([A-Za-z0-9._-]+))", [get_job](const httplib::Request& req, httplib::Response& res) {
    auto j = get_job(req, res);
    if (!j) return;
    const std::string name = pipeline::DocumentName(j->filename);
    const std::string want = req.matches[2];
    const char* kinds[] = {".md", "_content_list.json", "_middle.json", "_model.json"};
    for (const char* k : kinds) {
      if (want == name + k) {
        auto data = ReadFileToString(j->result_dir + "/" + name + "/" + want, size_t(1) << 30);
        if (!data.ok()) return SendError(res, 404, "not available (yet)");
        res.set_header("Content-Disposition", "attachment; filename=\"" + want + "\"");
        res.set_content(*data, std::string(k) == ".md" ? "text/markdown; charset=utf-8" : "application/json");
        return;
      }
    }
    SendError(res, 404, "no such file");
  });
}

void JobWorker(Server::State& st) {
  while (!st.draining) {
    {
      std::unique_lock<std::mutex> lock(st.jobs_mu);
      st.jobs_cv.wait_for(lock, std::chrono::seconds(2),
                          [&] { return st.draining.load() || st.ready.load() || st.doc_backend != nullptr; });
    }
    if (st.draining) break;
    if (!st.ready && !st.doc_backend) continue;
    auto claimed = st.jobs->ClaimNext();
    if (!claimed.ok() || !claimed->has_value()) {
      std::unique_lock<std::mutex> lock(st.jobs_mu);
      st.jobs_cv.wait_for(lock, std::chrono::milliseconds(500));
      continue;
    }
    Job j = **claimed;
    ++st.jobs_running;
    ParseRequest p = ParseRequestFrom(Json::parse(j.options, nullptr, false).is_object() ? Json::parse(j.options)
                                                                                          : Json::object());
    std::unique_ptr<pipeline::Backend> owned;
    pipeline::Backend* backend = BackendFor(st, &owned);
    int global_page = 0;
    auto progress = [&](const pipeline::ProgressEvent& e) {
      if (e.kind != pipeline::ProgressEvent::kDocumentDone) (void)st.jobs->UpdateProgress(j.id, e.pages_done, e.pages_total);
    };
    pipeline::DocumentReport r = pipeline::ParseDocument(j.input_path, OptionsFor(st, p, j.result_dir), *backend,
                                                         &global_page, progress);
    if (r.status.code() == StatusCode::kCancelled) {
      // Draining: leave the job for the next start (it is requeued then).
      --st.jobs_running;
      st.jobs_cv.notify_all();
      break;
    }
    std::string err = r.status.ok() ? "" : r.status.message();
    if (r.status.ok() && r.failed_pages() > 0) {
      for (const auto& pg : r.pages) {
        if (!pg.ok) {
          err = "page " + std::to_string(pg.page + 1) + ": " + pg.error;
          break;
        }
      }
    }
    (void)st.jobs->Finish(j.id, r.status.ok(), err, j.result_dir);
    malloc_trim(0);
    st.metrics.Inc("mineru_jobs_finished_total", r.status.ok() ? "status=\"done\"" : "status=\"failed\"");
    --st.jobs_running;
    st.jobs_cv.notify_all();
  }
}

void RetentionSweep(Server::State& st) {
  if (st.opt.retention_hours <= 0) return;
  auto old = st.jobs->DeleteFinishedBefore(NowSeconds() - st.opt.retention_hours * 3600);
  if (!old.ok()) return;
  for (const Job& j : *old) RemoveTree(st.opt.data_dir + "/jobs/" + j.id);
}

}  // namespace mineru::server
