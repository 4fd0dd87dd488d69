// server/tasks_v4_files.cc — the Tasks API's bytes: uploads (PUT to the upload link), url sources
// and sha256 hits at creation, and the result ZIP of a finished file (see tasks_v4.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "pipeline/document.h"
#include "pipeline/page_source.h"
#include "server/http_front.h"
#include "server/http_status.h"
#include "server/remote_images.h"
#include "server/tasks_v4_internal.h"
#include "server/zip_writer.h"

namespace mineru::server {
namespace {

const TaskFileV4* FileIn(const TaskV4& t, const std::string& file_id) {
  for (const TaskFileV4& f : t.files) {
    if (f.file_id == file_id) return &f;
  }
  return nullptr;
}

TaskFileV4* FileIn(TaskV4& t, const std::string& file_id) {
  return const_cast<TaskFileV4*>(FileIn(static_cast<const TaskV4&>(t), file_id));
}

// The 1-based pages of a 4.x page range over the stored upload at path.
Status PagesOfRange(const Server::State& st, const std::string& range, const std::string& path,
                    ParseRequest* r) {
  pipeline::InputLimits limits;  // as OptionsFor's
  limits.pdf.max_pages = 1 << 24;
  limits.image.max_pixels = st.opt.max_image_pixels;
  auto doc = pipeline::InputDocument::Open(path, limits);
  if (!doc.ok()) return doc.status();
  auto pages = PageRangeV4(range, (*doc)->num_pages(), st.opt.max_pages);
  if (!pages.ok()) return pages.status();
  std::sort(pages->begin(), pages->end());
  r->pages.clear();
  for (int p : *pages) r->pages += (r->pages.empty() ? "" : ",") + std::to_string(p + 1);
  return Status::Ok();
}

// Records a submission's outcome in file f of the task (see SubmitTaskFileV4).
StatusOr<TaskV4> RecordSubmission(Server::State& st, const TaskV4& t, const TaskFileV4& f,
                                  const StatusOr<SubmittedJob>& job, const std::string& sha) {
  const int http = job.ok() ? 200 : HttpStatusFor(job.status());
  const bool refused = http >= 400 && http < 500 && http != 429;
  std::string cancel;
  StatusOr<TaskV4> rec = st.tasks_v4->Update(t.task_id, [&](TaskV4& task) {
    TaskFileV4* x = FileIn(task, f.file_id);
    if (!x) return NotFoundError("no such file");
    if (job.ok()) {
      x->job_id = job->id;
      x->sha256sum = sha;
      if (x->state == "canceled" || task.canceled) {
        cancel = job->id;  // canceled while its bytes were being stored
      } else {
        x->state = "submitted";
      }
    } else if (refused) {
      x->state = "failed";
      x->error_code = http == 413 ? "file_too_large" : "invalid_request";
      x->error = job.status().message();
    } else if (!x->url.empty()) {
      x->state = "failed";  // fetched, but the server could not queue it: create the task again
      x->error_code = "source_not_queued";
      x->error = job.status().message();
    } else if (x->state == "uploading") {
      x->state = "waiting-file";  // the server's trouble: the client may send the bytes again
    }
    return Status::Ok();
  });
  if (!cancel.empty()) st.CancelJob(cancel);
  return rec;
}

}  // namespace

std::string BaseUrlV4(const httplib::Request& req, const ServerOptions& opt) {
  std::string host = req.get_header_value("Host");
  const bool ok =
      !host.empty() && host.size() <= 255 && std::all_of(host.begin(), host.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
      });
  if (!ok) host = opt.host + ":" + std::to_string(opt.port);
  return (req.get_header_value("X-Forwarded-Proto") == "https" ? "https://" : "http://") + host;
}

Json UploadLinkV4(const std::string& base, const TaskV4& t, const TaskFileV4& f, double ttl_s) {
  return {{"url", base + "/v1/tasks/" + t.task_id + "/uploads/" + f.file_id},
          {"method", "PUT"},
          {"headers", {{"Content-Type", "application/octet-stream"}}},
          {"expires_at", TimeV4(t.created_at + ttl_s)}};
}

std::string ResultUrlV4(const std::string& base, const TaskV4& t, const TaskFileV4& f) {
  return base + "/v1/tasks/" + t.task_id + "/files/" + f.file_id + "/result";
}

StatusOr<SubmittedJob> SubmitTaskFileV4(Server::State& st, const TaskV4& t, const TaskFileV4& f,
                                        const std::string& bytes) {
  ParseRequest p;
  p.version = "4";
  p.ocr_mode = t.options.ocr_mode;
  p.page_images = false;
  // One job per file, whatever happens: a second submission (a retry after a restart lost the
  // record, a PUT racing a sha256 hit) finds the first job by this key.
  JobSubmission sub{SafeName(f.file_name), &bytes, p, "v4:" + t.task_id + ":" + f.file_id, nullptr};
  const std::string range = f.page_range.empty() ? t.options.page_range : f.page_range;
  if (!range.empty()) {
    sub.prepare = [&st, range](const std::string& path, ParseRequest* r) {
      return PagesOfRange(st, range, path, r);
    };
  }
  StatusOr<SubmittedJob> job = SubmitJob(st, sub);
  StatusOr<TaskV4> rec = RecordSubmission(st, t, f, job, Sha256Hex(bytes));
  if (!rec.ok() && rec.status().code() == StatusCode::kNotFound) {
    if (job.ok()) st.CancelJob(job->id);  // the task is gone (pruned): its job must not run
    return NotFoundError("no such task");
  }
  // A record the disk refused is kept in memory (the file is queued): logged and counted only.
  if (!rec.ok()) (void)StorageFailure(st, "cannot store the task", rec.status());
  return job;
}

namespace {

// The bytes of an earlier job's upload when they are the declared file (size and sha256).
std::optional<std::string> StoredBytes(Server::State& st, const std::string& job_id, const TaskFileV4& f) {
  auto j = st.jobs->Get(job_id);
  if (!j.ok() || !j->has_value()) return std::nullopt;
  std::optional<std::string> bytes;
  if (st.jobs->stores_files()) {
    auto r = st.jobs->ReadFile(job_id, "upload/" + (*j)->filename);
    if (r.ok()) bytes = std::move(*r);
  } else {
    auto r = ReadFileToString((*j)->input_path, static_cast<size_t>(f.bytes) + 1);
    if (r.ok()) bytes = std::move(*r);
  }
  if (!bytes || static_cast<int64_t>(bytes->size()) != f.bytes || Sha256Hex(*bytes) != f.sha256sum)
    return std::nullopt;
  return bytes;
}

void FetchUrlSources(Server::State& st, const TaskV4& t) {
  std::vector<std::string> urls;
  for (const TaskFileV4& f : t.files) {
    if (!f.url.empty()) urls.push_back(f.url);
  }
  if (urls.empty()) return;
  RemoteFetchOptions fo;
  fo.deadline_s = st.opt.remote_image_timeout_s;
  fo.public_addresses_only = !st.opt.allow_private_source_hosts;
  fo.max_bytes_per_url = st.opt.max_body_mb << 20;
  fo.max_total_bytes = st.opt.max_body_mb << 20;
  const RemoteBodies bodies = FetchRemoteImages(urls, fo);
  for (const TaskFileV4& f : t.files) {
    if (f.url.empty()) continue;
    auto it = bodies.find(f.url);
    if (it != bodies.end() && it->second.ok()) {
      (void)SubmitTaskFileV4(st, t, f, *it->second);
      continue;
    }
    const std::string why = it == bodies.end() ? "not fetched" : it->second.status().message();
    (void)st.tasks_v4->Update(t.task_id, [&](TaskV4& task) {
      if (TaskFileV4* x = FileIn(task, f.file_id)) {
        x->state = "failed";
        x->error_code = "source_fetch_failed";
        x->error = "cannot fetch " + f.url + ": " + why;
      }
      return Status::Ok();
    });
  }
}

}  // namespace

void SubmitKnownSourcesV4(Server::State& st, TaskV4* t) {
  std::string last_sha;  // the bytes of the last hit, read once for files that repeat them
  std::optional<std::string> last_bytes;
  for (const TaskFileV4& f : t->files) {
    if (f.sha256sum.empty() || !f.url.empty()) continue;
    // Only the caller's own files: another caller's document is never handed out by its hash.
    const std::optional<std::string> job = st.tasks_v4->JobWithSha256(f.sha256sum, t->caller);
    if (!job) continue;
    if (f.sha256sum != last_sha || !last_bytes || static_cast<int64_t>(last_bytes->size()) != f.bytes) {
      last_sha = f.sha256sum;
      last_bytes = StoredBytes(st, *job, f);
    }
    if (last_bytes) {
      (void)SubmitTaskFileV4(st, *t, f, *last_bytes);
      st.metrics.Inc("mineru_tasks_v4_sha256_hits_total");
    }
  }
  FetchUrlSources(st, *t);
  if (std::optional<TaskV4> now = st.tasks_v4->Get(t->task_id)) *t = std::move(*now);
}

namespace {

// Marks the file as uploading when it waits for its bytes. *prior: its state before, or why it
// takes no bytes (canceled, expired, url-source); *current: the file's record now.
Status ClaimUpload(Server::State& st, const std::string& task_id, const std::string& file_id,
                   std::string* prior, TaskFileV4* current) {
  StatusOr<TaskV4> now = st.tasks_v4->Update(task_id, [&](TaskV4& task) {
    TaskFileV4* x = FileIn(task, file_id);
    if (!x) return NotFoundError("no such file");
    *prior = x->state;
    if (task.canceled) *prior = "canceled";
    if (!x->url.empty()) *prior = "url-source";
    if (*prior == "waiting-file" &&
        FileStatusV4(*x, std::nullopt, task.created_at, st.opt.task_upload_ttl_s, NowSeconds()) == "failed")
      *prior = "expired";
    if (*prior == "waiting-file") x->state = "uploading";
    *current = *x;
    return Status::Ok();
  });
  // The claim holds in memory even when the disk refused the record (Update keeps it).
  return now.ok() || now.status().code() != StatusCode::kNotFound ? Status::Ok() : now.status();
}

void ReleaseUpload(Server::State& st, const std::string& task_id, const std::string& file_id) {
  (void)st.tasks_v4->Update(task_id, [&](TaskV4& task) {
    TaskFileV4* x = FileIn(task, file_id);
    if (x && x->state == "uploading") x->state = "waiting-file";
    return Status::Ok();
  });
}

// Gives a claimed upload back unless its bytes were handed to SubmitTaskFileV4 (which records
// the outcome), on every return and on an exception.
struct UploadClaim {
  Server::State& st;
  std::string task_id, file_id;
  bool held = true;
  ~UploadClaim() {
    if (held) ReleaseUpload(st, task_id, file_id);
  }
};

Json UploadResponse(Server::State& st, const TaskV4& t, const TaskFileV4& f) {
  return {{"task_id", t.task_id},     {"file_id", f.file_id},
          {"file_name", f.file_name}, {"status", FileStatusNowV4(st, t, f, JobOfV4(st, f))},
          {"bytes", f.bytes},         {"sha256sum", f.sha256sum}};
}

// A second PUT of a file already stored: the same answer for the same bytes (a retry), else 409.
void AnswerRepeatedUpload(Server::State& st, const TaskV4& t, const TaskFileV4& f, const std::string& prior,
                          const std::string& body, httplib::Response& res) {
  if (prior == "submitted" && Sha256Hex(body) == f.sha256sum) {
    res.set_header("Idempotent-Replayed", "true");
    return SendJson(res, 200, UploadResponse(st, t, f));
  }
  const std::string why = prior == "uploading"    ? "the file is being uploaded by another request"
                          : prior == "expired"    ? "the upload link expired"
                          : prior == "canceled"   ? "the task was canceled"
                          : prior == "failed"     ? "the file failed"
                          : prior == "url-source" ? "the file is fetched from its url, not uploaded"
                                                  : "the file was uploaded already";
  SendErrorV4(res, 409, "upload_already_terminal", why, "file_id");
}

}  // namespace

void HandleUploadV4(Server::State& st, const httplib::Request& req, httplib::Response& res,
                    const httplib::ContentReader& reader) {
  if (st.draining) return SendErrorV4(res, 503, "server_shutting_down", "the server is shutting down");
  const std::string task_id = req.matches[1], file_id = req.matches[2];
  const std::string body = HttpFront::ReadBody(reader);
  std::optional<TaskV4> t = st.tasks_v4->Get(task_id);
  if (!t) return SendErrorV4(res, 404, "task_not_found", "no such task", "task_id");
  if (!FileIn(*t, file_id)) return SendErrorV4(res, 404, "upload_not_found", "no such upload", "file_id");
  std::string prior;
  TaskFileV4 f;
  if (!ClaimUpload(st, task_id, file_id, &prior, &f).ok())
    return SendErrorV4(res, 404, "task_not_found", "no such task", "task_id");
  if (prior != "waiting-file") return AnswerRepeatedUpload(st, *t, f, prior, body, res);
  UploadClaim claim{st, task_id, file_id};
  if (static_cast<int64_t>(body.size()) != f.bytes) {
    return SendErrorV4(res, 400, "bytes_mismatch",
                       "the body has " + std::to_string(body.size()) + " bytes; the task declared " +
                           std::to_string(f.bytes),
                       "bytes");
  }
  if (!f.sha256sum.empty() && Sha256Hex(body) != f.sha256sum) {
    return SendErrorV4(res, 400, "file_hash_mismatch", "the body's sha256 is not the declared sha256sum",
                       "sha256sum");
  }
  claim.held = false;  // from here the submission records the file's outcome
  StatusOr<SubmittedJob> job = SubmitTaskFileV4(st, *t, f, body);
  if (!job.ok()) return SendStatusV4(res, job.status(), "file");
  st.metrics.Inc("mineru_tasks_v4_uploads_total");
  const std::optional<TaskV4> now = st.tasks_v4->Get(task_id);
  const TaskFileV4* kept = now ? FileIn(*now, file_id) : nullptr;
  if (!kept) return SendErrorV4(res, 404, "task_not_found", "no such task", "task_id");
  SendJson(res, 200, UploadResponse(st, *now, *kept));
}

namespace {

// Zips the job's MinerU 4 folder into path (from the result directory, or from the store).
Status ZipJobResult(Server::State& st, const Job& j, const std::string& path) {
  const std::string name = pipeline::DocumentName(j.filename);
  if (!st.jobs->stores_files()) return ZipDirectory(j.result_dir + "/" + name, path);
  auto files = st.jobs->ReadFiles(j.id, name + "/", true);
  if (!files.ok()) return files.status();
  ZipWriter zip;
  MINERU_RETURN_IF_ERROR(zip.Open(path));
  for (const JobFile& f : *files) MINERU_RETURN_IF_ERROR(zip.Add(f.name.substr(name.size() + 1), f.data));
  return zip.Finish();
}

// The ZIP of a finished job, made once (data_dir/jobs/ID/mineru4.zip; expires with the job).
StatusOr<std::string> ResultZip(Server::State& st, const Job& j) {
  const std::string dir = st.opt.data_dir + "/jobs/" + j.id;
  std::string path = dir + "/mineru4.zip";
  struct stat sb;
  if (::stat(path.c_str(), &sb) == 0) return path;
  MINERU_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string tmp = path + "." + NewJobId().substr(0, 8) + ".tmp";
  Status z = ZipJobResult(st, j, tmp);
  if (z.ok() && std::rename(tmp.c_str(), path.c_str()) != 0)
    z = IoErrorFromErrno("cannot store " + path, errno);
  if (!z.ok()) {
    std::remove(tmp.c_str());
    return z;
  }
  if (::stat(path.c_str(), &sb) == 0) st.store_bytes += sb.st_size;
  return path;
}

}  // namespace

void HandleResultV4(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  std::optional<TaskV4> t = st.tasks_v4->Get(req.matches[1]);
  if (!t) return SendErrorV4(res, 404, "task_not_found", "no such task", "task_id");
  const TaskFileV4* f = FileIn(*t, req.matches[2]);
  if (!f) return SendErrorV4(res, 404, "file_not_found", "no such file", "file_id");
  const std::optional<Job> job = JobOfV4(st, *f);
  const std::string status = FileStatusNowV4(st, *t, *f, job);
  if (status != "completed")
    return SendErrorV4(res, 409, "result_not_ready", "the file is " + status, "file_id");
  StatusOr<std::string> path = ResultZip(st, *job);
  if (!path.ok()) return SendStatusV4(res, StorageFailure(st, "cannot make the result", path.status()));
  res.set_header("Content-Disposition",
                 "attachment; filename=\"" + pipeline::DocumentName(job->filename) + ".zip\"");
  if (!SendFile(res, *path, "application/zip")) {
    res.headers.erase("Content-Disposition");
    SendErrorV4(res, 503, "service_unavailable", "the result cannot be read");
  }
}

}  // namespace mineru::server
