// server/job_submit.cc — an upload queued as a document job (see job_submit.h).
#include "server/job_submit.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "pipeline/document.h"
#include "pipeline/page_source.h"
#include "server/job_storage.h"

namespace mineru::server {

std::string CallerScope(const httplib::Request& req, const ServerOptions& opt) {
  if (!opt.api_key.empty()) return Sha256Hex("key\n" + req.get_header_value("Authorization")).substr(0, 32);
  std::string forwarded;  // every X-Forwarded-For line, in order (a proxy may append its own line)
  for (size_t i = 0; i < req.get_header_value_count("X-Forwarded-For"); ++i) {
    forwarded += (i ? "," : "") + req.get_header_value("X-Forwarded-For", i);
  }
  const std::string addr = ClientAddress(req.remote_addr, forwarded, opt.edge);
  return Sha256Hex("addr\n" + addr).substr(0, 32);
}

std::string SafeName(const std::string& name) {
  std::string base = name;
  const size_t slash = base.find_last_of("/\\");
  if (slash != std::string::npos) base = base.substr(slash + 1);
  std::string out;
  for (char c : base)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  while (!out.empty() && out[0] == '.') out.erase(0, 1);
  return out.empty() ? "document" : out.substr(0, 120);
}

Status CheckPageLimit(const Server::State& st, const std::string& path, const ParseRequest& p) {
  pipeline::InputLimits limits;  // the limits the parse will use (OptionsFor)
  limits.pdf.max_pages = 1 << 24;
  limits.image.max_pixels = st.opt.max_image_pixels;
  auto doc = pipeline::InputDocument::Open(path, limits);
  if (!doc.ok()) return doc.status();
  const int pages = PagesToParse(p, (*doc)->num_pages());
  if (pages <= 0) return InvalidArgumentError("start_page_id is past the end of the document");
  if (pages > st.opt.max_pages) {
    return ResourceExhaustedError("the document has " + std::to_string(pages) +
                                  " pages to parse, over the limit of " + std::to_string(st.opt.max_pages));
  }
  return Status::Ok();
}

Status StorageFailure(Server::State& st, const std::string& what, const Status& s) {
  const Status kind = AsStorageError(s);
  const bool full = kind.code() == StatusCode::kStorageFull;
  st.metrics.Inc("mineru_storage_errors_total", full ? "kind=\"full\"" : "kind=\"unavailable\"");
  // The detail names server paths: it goes to the log, the client gets the kind of failure.
  std::fprintf(stderr, "storage error: %s: %s\n", what.c_str(), s.message().c_str());
  const std::string msg =
      what + (full ? ": the server's storage is full" : ": the server cannot write its storage");
  return full ? StorageFullError(msg) : UnavailableError(msg);
}

namespace {

// The job's folder under data_dir/jobs with the upload in it, checked against the page limit.
// *dir is set as soon as the folder exists (the caller removes it on failure).
// *request: s.request, completed by s.prepare.
Status StageJobFolder(Server::State& st, const JobSubmission& s, const Job& j, std::string* dir,
                      ParseRequest* request) {
  const std::string d = st.opt.data_dir + "/jobs/" + j.id;
  if (::mkdir(d.c_str(), 0755) != 0)
    return StorageFailure(st, "cannot store the job", IoErrorFromErrno("cannot create " + d, errno));
  *dir = d;
  Status w = WriteStringToFile(d + "/" + j.filename, *s.content);
  if (!w.ok()) return StorageFailure(st, "cannot store the upload", w);
  *request = s.request;
  if (s.prepare) MINERU_RETURN_IF_ERROR(AsRequestError(s.prepare(d + "/" + j.filename, request)));
  Status lim = CheckPageLimit(st, d + "/" + j.filename, *request);
  return lim.ok() ? lim : AsRequestError(lim);  // 413, 507 or 400
}

}  // namespace

StatusOr<SubmittedJob> SubmitJob(Server::State& st, const JobSubmission& s) {
  auto queued = st.jobs->CountByStatus("queued");
  if (!queued.ok()) return UnavailableError(queued.status().message());
  if (static_cast<size_t>(*queued) >= st.opt.max_queued_jobs) {
    return BusyError("the job queue is full (" + std::to_string(*queued) + " queued)");
  }
  // Charged now, given back on every path that does not store a new job (a refused upload, an
  // idempotent replay, a store error).
  StoreCharge charge(st, static_cast<int64_t>(s.content->size()));
  if (Status room = charge.Take(); !room.ok()) {
    st.metrics.Inc("mineru_storage_errors_total", "kind=\"quota\"");
    return AsStorageError(room);
  }
  const bool stored = st.jobs->stores_files();
  Job j;
  j.id = NewJobId();
  j.status = "queued";
  j.created = j.updated = NowSeconds();
  j.filename = s.filename;
  j.client_key = s.client_key;
  // The upload goes to the job's directory (with a store that keeps files: only long enough to
  // check it, the store keeps it from then on).
  std::string dir;
  ParseRequest request;
  if (Status staged = StageJobFolder(st, s, j, &dir, &request); !staged.ok()) {
    RemoveTree(dir);
    return staged;
  }
  j.options = ParseRequestJson(request).dump();
  if (!stored) {
    j.input_path = dir + "/" + j.filename;
    j.result_dir = dir + "/out";
  }
  std::string existing;
  Status ins = st.jobs->Insert(j, stored ? s.content : nullptr, &existing);
  if (stored || !ins.ok() || !existing.empty()) RemoveTree(dir);
  if (!ins.ok()) return StorageFailure(st, "cannot store the job", ins);
  if (!existing.empty()) {
    auto e = st.jobs->Get(existing);
    return SubmittedJob{existing, e.ok() && e->has_value() ? (*e)->status : "queued", true};
  }
  charge.Keep();
  st.jobs_cv.notify_one();
  st.metrics.Inc("mineru_jobs_submitted_total");
  return SubmittedJob{j.id, "queued", false};
}

}  // namespace mineru::server
