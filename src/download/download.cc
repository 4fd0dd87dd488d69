// download/download.cc — the download job: lists a repository's files on Hugging Face or
// ModelScope, plans what the engine needs, and fetches each file into the model directory,
// resumed with HTTP Range requests, retried, checked against the size and SHA-256 the hub
// advertises and renamed into place. Not the names and URLs of hubs, repos and files (hub.cc) nor
// the files on disk (.part files, hashes, the directory lock: local_files.cc).
#include "download/download.h"
#include "base/json_parse.h"

#include <sys/statvfs.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "download/download_internal.h"
#include "net/http.h"

namespace mineru {

using net::HttpClient;
using net::HttpFailure;
using net::HttpOptions;
using net::HttpResult;
using net::ResponseHead;
using net::UrlHost;

using download_internal::DirLock;
using download_internal::EndsWith;
using download_internal::FileSize;
using download_internal::HashFile;
using download_internal::kIndexName;
using download_internal::kRequiredSmall;
using download_internal::kSingleName;
using download_internal::kSmallFiles;
using download_internal::Lower;
using download_internal::PartFile;
using download_internal::ShardsOfIndex;

namespace {

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string HumanBytes(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.2f GB", n / double(uint64_t(1) << 30));
  else if (n >= (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f MB", n / double(uint64_t(1) << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
  return buf;
}

struct RemoteFile {
  std::string path;
  std::optional<uint64_t> size;
  std::string sha256;  // lower-case hex, empty when unknown
};

class Job {
 public:
  Job(const DownloadOptions& o, const ProgressFn& progress) : o_(o), progress_(progress) {
    if (o_.repo.empty()) o_.repo = DefaultRepo(o_.source);
    if (o_.revision.empty()) o_.revision = DefaultRevision(o_.source);
    if (o_.model_dir.empty()) o_.model_dir = DefaultModelDir();
    while (o_.model_dir.size() > 1 && o_.model_dir.back() == '/') o_.model_dir.pop_back();
    endpoint_ = ResolveEndpoint(o_);
    HttpOptions h;
    h.connect_timeout_s = o_.connect_timeout_s;
    h.low_speed_bytes_s = o_.low_speed_bytes_s;
    h.low_speed_time_s = o_.low_speed_time_s;
    if (o_.source == HubSource::kHuggingFace) {
      if (const char* t = std::getenv("HF_TOKEN"); t && *t)
        h.bearer_token = t;
      else if (const char* t2 = std::getenv("HUGGING_FACE_HUB_TOKEN"); t2 && *t2)
        h.bearer_token = t2;
    }
    http_ = std::make_unique<HttpClient>(h);
    if (o_.max_attempts < 1) o_.max_attempts = 1;
  }

  Status Run(DownloadSummary* summary) {
    Status s = RunInner();
    Emit(DownloadProgress::Event::kFinished, "", 0, 0);
    if (summary) {
      summary->model_dir = o_.model_dir;
      summary->endpoint = endpoint_;
      summary->files_fetched = fetched_;
      summary->files_skipped = skipped_;
      summary->bytes_fetched = net_bytes_;
    }
    return s;
  }

 private:
  Status RunInner() {
    if (!http_->ok()) return InternalError("cannot initialise libcurl");
    Emit(DownloadProgress::Event::kListing, "", 0, 0);
    MINERU_ASSIGN_OR_RETURN(std::vector<RemoteFile> listing, List());
    auto find = [&](const std::string& name) -> const RemoteFile* {
      for (const auto& f : listing) {
        if (f.path == name) return &f;
      }
      return nullptr;
    };
    const std::string where = o_.repo + "@" + o_.revision + " on " + UrlHost(endpoint_);
    if (!find(kSmallFiles[0])) {
      std::vector<std::string> names;
      for (const auto& f : listing) names.push_back(f.path);
      bool any_gguf = false;
      for (const auto& n : names) any_gguf |= EndsWith(n, ".gguf");
      if (any_gguf) {
        auto pair = PickGgufPair(names);
        if (!pair.ok()) return pair.status().WithPrefix(where);
        MINERU_RETURN_IF_ERROR(Prepare());
        // The GGUF pair, and the preprocessor's pixel limits when the repository has them.
        for (const std::string& n : {std::string("preprocessor_config.json"), pair->second, pair->first}) {
          if (const RemoteFile* f = find(n)) plan_.push_back(*f);
        }
        return FetchPlanAndRecord();
      }
    }
    for (int i = 0; i < kRequiredSmall; ++i) {
      if (!find(kSmallFiles[i]))
        return NotFoundError(where + " has no " + kSmallFiles[i] + "; is this a MinerU2.5 checkpoint?");
    }
    const RemoteFile* single = find(kSingleName);
    const RemoteFile* index = find(kIndexName);
    if (!single && !index)
      return NotFoundError(where + " has neither model.safetensors nor model.safetensors.index.json");

    MINERU_RETURN_IF_ERROR(Prepare());
    for (const char* name : kSmallFiles) {
      if (const RemoteFile* f = find(name)) plan_.push_back(*f);
    }
    if (single) {
      plan_.push_back(*single);
    } else {
      plan_.push_back(*index);
    }
    UpdateTotals();
    MINERU_RETURN_IF_ERROR(CheckDiskSpace(0));

    size_t next = 0;
    // With a sharded checkpoint, fetch the small files and the index first, then add the shards.
    for (; next < plan_.size(); ++next) MINERU_RETURN_IF_ERROR(Fetch(next));
    if (!single) {
      MINERU_ASSIGN_OR_RETURN(std::vector<std::string> shards,
                              ShardsOfIndex(o_.model_dir + "/" + kIndexName));
      for (const std::string& s : shards) {
        const RemoteFile* f = find(s);
        if (!f) return NotFoundError("the index names " + s + " but " + where + " does not have it");
        plan_.push_back(*f);
      }
      UpdateTotals();
      MINERU_RETURN_IF_ERROR(CheckDiskSpace(next));
      for (; next < plan_.size(); ++next) MINERU_RETURN_IF_ERROR(Fetch(next));
    }
    return WriteRecord();
  }

  // Creates and locks the model directory (held until the job ends).
  Status Prepare() {
    std::error_code ec;
    std::filesystem::create_directories(o_.model_dir, ec);
    if (ec) return IoError("cannot create " + o_.model_dir + ": " + ec.message());
    return lock_.Acquire(o_.model_dir);
  }

  Status FetchPlanAndRecord() {
    UpdateTotals();
    MINERU_RETURN_IF_ERROR(CheckDiskSpace(0));
    for (size_t i = 0; i < plan_.size(); ++i) MINERU_RETURN_IF_ERROR(Fetch(i));
    return WriteRecord();
  }

  // Names the checkpoint for the loader (kDownloadRecord), written only once every file is in place.
  Status WriteRecord() {
    const nlohmann::json j = {
        {"repo", o_.repo}, {"source", HubSourceName(o_.source)}, {"revision", o_.revision}};
    const std::string path = o_.model_dir + "/" + kDownloadRecord;
    std::ofstream out(path + ".tmp", std::ios::trunc);
    out << j.dump(2) << "\n";
    out.close();
    if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0)
      return IoError("cannot write " + path);
    return Status::Ok();
  }

  void UpdateTotals() {
    total_ = 0;
    for (const auto& f : plan_) total_ += f.size.value_or(0);
  }

  // Before the big files: is there room for what is still missing?
  Status CheckDiskSpace(size_t from) {
    uint64_t need = 0;
    for (size_t i = from; i < plan_.size(); ++i) {
      const auto& f = plan_[i];
      if (!f.size) continue;
      const std::string final_path = o_.model_dir + "/" + f.path;
      if (!o_.force && FileSize(final_path) == f.size) continue;
      const uint64_t have = FileSize(final_path + ".part").value_or(0);
      if (have < *f.size) need += *f.size - have;
    }
    struct statvfs vfs;
    if (need == 0 || ::statvfs(o_.model_dir.c_str(), &vfs) != 0) return Status::Ok();
    const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < need) {
      return ResourceExhaustedError("not enough disk space in " + o_.model_dir + ": the model needs " +
                                    HumanBytes(need) + " more, " + HumanBytes(avail) + " free");
    }
    return Status::Ok();
  }

  void Emit(DownloadProgress::Event ev, const std::string& file, uint64_t file_bytes, uint64_t file_total) {
    if (!progress_) return;
    DownloadProgress p;
    p.event = ev;
    p.file = file;
    p.file_index = static_cast<int>(current_) + 1;
    p.file_count = static_cast<int>(plan_.size());
    p.file_bytes = file_bytes;
    p.file_total = file_total;
    p.bytes_done = done_before_ + file_bytes;
    p.bytes_total = total_;
    p.bytes_received = net_bytes_;
    progress_(p);
  }

  Status Unreachable(const std::string& url, const std::string& err) const {
    const std::string host = UrlHost(url);
    const std::string& dir = o_.model_dir;
    std::string what;
    if (o_.source == HubSource::kHuggingFace) {
      what =
          "check the network (and proxy settings), set HF_ENDPOINT to a mirror (e.g. https://hf-mirror.com), "
          "use "
          "--source modelscope, or copy a snapshot into " +
          dir + " and pass --model " + dir;
    } else {
      what =
          "check the network (and proxy settings), set MODELSCOPE_ENDPOINT, use --source huggingface, or "
          "copy a "
          "snapshot into " +
          dir + " and pass --model " + dir;
    }
    return Status(StatusCode::kUnavailable, "cannot reach " + host + ": " + err + "; " + what);
  }

  static Status HttpError(const std::string& url, const ResponseHead& h, const std::string& what) {
    std::string m = what + ": HTTP " + std::to_string(h.status) + " from " + url;
    if (!h.error_message.empty()) m += " (" + h.error_message + ")";
    if (h.status == 401 || h.status == 403)
      m += "; the repo may be private or gated (set HF_TOKEN) or the name is wrong";
    if (h.status == 404) return NotFoundError(m);
    return Status(StatusCode::kUnavailable, m);
  }

  void Backoff(int attempt) const {
    if (o_.retry_delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(int64_t(attempt) * o_.retry_delay_ms));
  }

  static bool Transient(long status) { return status == 429 || status >= 500; }

  // GET a small JSON document, retrying broken transfers and 5xx/429 answers. *status gets the
  // HTTP status of the last answer (0 when none came).
  StatusOr<std::string> GetJson(const std::string& url, const std::string& what, long* status) {
    std::string body, last;
    *status = 0;
    for (int attempt = 1; attempt <= o_.max_attempts; ++attempt) {
      HttpResult r = http_->GetSmall(url, &body, size_t(64) << 20, o_.api_timeout_s);
      if (r.failure == HttpFailure::kUnreachable) return Unreachable(url, r.error);
      if (r.failure == HttpFailure::kNone) {
        *status = r.head.status;
        if (r.head.status < 400) return body;
        if (!Transient(r.head.status) || attempt == o_.max_attempts) return HttpError(url, r.head, what);
        last = "HTTP " + std::to_string(r.head.status);
      } else {
        last = r.error;
        if (r.failure != HttpFailure::kTransfer) break;
      }
      if (attempt < o_.max_attempts) Backoff(attempt);
    }
    return Status(StatusCode::kUnavailable, what + " failed: " + last + " (" + url + ")");
  }

  StatusOr<std::vector<RemoteFile>> List() {
    return o_.source == HubSource::kHuggingFace ? ListHuggingFace() : ListModelScope();
  }

  StatusOr<std::vector<RemoteFile>> ListHuggingFace() {
    const std::string base =
        endpoint_ + "/api/models/" + UrlEncode(o_.repo, true) + "/revision/" + UrlEncode(o_.revision, false);
    long status = 0;
    StatusOr<std::string> body = GetJson(base + "?blobs=true", "listing the files of " + o_.repo, &status);
    if (!body.ok() && status >= 400 && status != 401 && status != 403 && status != 404 &&
        !Transient(status)) {
      // Some mirrors do not implement ?blobs=true; the plain listing still names the files.
      body = GetJson(base, "listing the files of " + o_.repo, &status);
    }
    if (!body.ok()) return body.status();
    nlohmann::json j;
    if (!ParseJson(*body, {}, &j).ok() || !j.is_object() || !j.contains("siblings") ||
        !j["siblings"].is_array()) {
      return DataLossError("unexpected answer from " + base + " (no siblings list); is " + endpoint_ +
                           " a Hugging Face endpoint?");
    }
    std::vector<RemoteFile> out;
    for (const auto& s : j["siblings"]) {
      if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) continue;
      RemoteFile f;
      f.path = s["rfilename"].get<std::string>();
      if (s.contains("size") && s["size"].is_number_unsigned()) f.size = s["size"].get<uint64_t>();
      if (s.contains("lfs") && s["lfs"].is_object()) {
        const auto& lfs = s["lfs"];
        if (lfs.contains("sha256") && lfs["sha256"].is_string() &&
            IsHex64(lfs["sha256"].get<std::string>())) {
          f.sha256 = Lower(lfs["sha256"].get<std::string>());
        }
        if (lfs.contains("size") && lfs["size"].is_number_unsigned()) f.size = lfs["size"].get<uint64_t>();
      }
      out.push_back(std::move(f));
    }
    return out;
  }

  StatusOr<std::vector<RemoteFile>> ListModelScope() {
    const std::string url = endpoint_ + "/api/v1/models/" + UrlEncode(o_.repo, true) +
                            "/repo/files?Revision=" + UrlEncode(o_.revision, false) + "&Recursive=true";
    long status = 0;
    MINERU_ASSIGN_OR_RETURN(std::string body, GetJson(url, "listing the files of " + o_.repo, &status));
    nlohmann::json j;
    if (!ParseJson(body, {}, &j).ok() || !j.is_object())
      return DataLossError("unexpected answer from " + url + " (not a JSON object)");
    if (j.contains("Code") && j["Code"].is_number() && j["Code"].get<int64_t>() != 200) {
      std::string msg =
          j.contains("Message") && j["Message"].is_string() ? j["Message"].get<std::string>() : "";
      return NotFoundError("listing the files of " + o_.repo + "@" + o_.revision + " failed: " +
                           (msg.empty() ? "code " + std::to_string(j["Code"].get<int64_t>()) : msg));
    }
    if (!j.contains("Data") || !j["Data"].is_object() || !j["Data"].contains("Files") ||
        !j["Data"]["Files"].is_array()) {
      return DataLossError("unexpected answer from " + url + " (no Data.Files list); is " + endpoint_ +
                           " a ModelScope endpoint?");
    }
    std::vector<RemoteFile> out;
    for (const auto& e : j["Data"]["Files"]) {
      if (!e.is_object()) continue;
      if (e.contains("Type") && e["Type"].is_string() && e["Type"].get<std::string>() == "tree") continue;
      RemoteFile f;
      if (e.contains("Path") && e["Path"].is_string())
        f.path = e["Path"].get<std::string>();
      else if (e.contains("Name") && e["Name"].is_string())
        f.path = e["Name"].get<std::string>();
      else
        continue;
      if (e.contains("Size") && e["Size"].is_number_unsigned()) f.size = e["Size"].get<uint64_t>();
      if (e.contains("Sha256") && e["Sha256"].is_string() && IsHex64(e["Sha256"].get<std::string>())) {
        f.sha256 = Lower(e["Sha256"].get<std::string>());
      }
      out.push_back(std::move(f));
    }
    return out;
  }

  std::string FileUrl(const std::string& path) const {
    if (o_.source == HubSource::kHuggingFace) {
      return endpoint_ + "/" + UrlEncode(o_.repo, true) + "/resolve/" + UrlEncode(o_.revision, false) + "/" +
             UrlEncode(path, true);
    }
    return endpoint_ + "/api/v1/models/" + UrlEncode(o_.repo, true) +
           "/repo?Revision=" + UrlEncode(o_.revision, false) + "&FilePath=" + UrlEncode(path, false);
  }

  // Fetches plan_[i] into the model directory: skipped when already there (and matching), else
  // resumed from its .part, verified, and renamed into place.
  Status Fetch(size_t i) {
    current_ = i;
    done_before_ = 0;
    for (size_t k = 0; k < i; ++k) done_before_ += plan_[k].size.value_or(0);
    RemoteFile& f = plan_[i];
    const std::string final_path = o_.model_dir + "/" + f.path;
    const std::string part_path = final_path + ".part";

    if (!o_.force) {
      MINERU_ASSIGN_OR_RETURN(bool present, SkipIfPresent(f, final_path));
      if (present) return Status::Ok();
    }

    PartFile part;
    MINERU_RETURN_IF_ERROR(part.Open(part_path));
    if (f.size && part.size() > *f.size) MINERU_RETURN_IF_ERROR(part.Truncate());
    Emit(DownloadProgress::Event::kStart, f.path, part.size(), f.size.value_or(0));
    MINERU_RETURN_IF_ERROR(Transfer(f, part, part_path));
    return VerifyAndPlace(f, part, part_path, final_path);
  }

  // True when final_path already holds f (size and, when known, SHA-256 match); counted as skipped.
  StatusOr<bool> SkipIfPresent(const RemoteFile& f, const std::string& final_path) {
    std::optional<uint64_t> have = FileSize(final_path);
    if (!have || (f.size && *have != *f.size)) return false;
    if (!f.sha256.empty()) {
      Emit(DownloadProgress::Event::kVerifying, f.path, *have, f.size.value_or(*have));
      MINERU_ASSIGN_OR_RETURN(std::string digest, HashFile(final_path));
      if (digest != f.sha256) return false;
    }
    ++skipped_;
    Emit(DownloadProgress::Event::kSkipped, f.path, *have, f.size.value_or(*have));
    return true;
  }

  // What one ranged GET from the .part's end left behind; Transfer decides what comes next.
  struct Attempt {
    HttpResult result;
    std::optional<ResponseHead> bad_status;  // a non-2xx answer
    bool bad_range = false;                  // the server answered another range than asked
    bool range_done = false;                 // 416 with a total equal to the .part's size
    bool write_failed = false;               // appending to the .part failed (part.write_errno())
    Status local = Status::Ok();             // truncating the .part failed
  };

  // One GET of url from part.size() on, appending to part. Learns f's size and digest from the
  // answer's head when the listing lacked them.
  Attempt StreamOnce(const std::string& url, RemoteFile& f, PartFile& part) {
    Attempt a;
    const uint64_t start = part.size();
    auto on_head = [&](const ResponseHead& h) -> bool {
      if (h.status == 416 && start > 0) {
        // Nothing left after `start`: the .part is complete when the total says so.
        if (h.range_total && *h.range_total == start)
          a.range_done = true;
        else
          a.bad_range = true;
        return false;
      }
      if (h.status >= 300 || h.status < 200) {
        a.bad_status = h;
        return false;
      }
      std::optional<uint64_t> remote_total;
      if (h.status == 206) {
        if (!h.range_start || *h.range_start != start) {
          a.bad_range = true;
          return false;
        }
        remote_total = h.range_total;
      } else {
        if (start > 0) {  // the server ignored Range: start over
          a.local = part.Truncate();
          if (!a.local.ok()) return false;
        }
        remote_total = h.content_length;
      }
      if (!f.size) f.size = h.linked_size ? h.linked_size : remote_total;
      if (f.sha256.empty() && IsHex64(h.linked_etag)) f.sha256 = Lower(h.linked_etag);
      UpdateTotals();
      Emit(DownloadProgress::Event::kStart, f.path, part.size(), f.size.value_or(0));
      return true;
    };
    auto on_data = [&](const char* p, size_t n) -> bool {
      if (!part.Append(p, n)) {
        a.write_failed = true;
        return false;
      }
      net_bytes_ += n;
      Emit(DownloadProgress::Event::kBytes, f.path, part.size(), f.size.value_or(0));
      return true;
    };
    a.result = http_->Stream(url, start, on_head, on_data);
    return a;
  }

  // Resumes part until it holds all of f, retrying broken transfers and 5xx/429 answers up to
  // max_attempts; the .part is kept on failure so the next run resumes from it.
  Status Transfer(RemoteFile& f, PartFile& part, const std::string& part_path) {
    const std::string url = FileUrl(f.path);
    std::string last_error;
    int attempt = 0;
    while (attempt < o_.max_attempts) {
      ++attempt;
      if (f.size && part.size() == *f.size) return Status::Ok();
      const Attempt a = StreamOnce(url, f, part);
      if (!a.local.ok()) return a.local;
      if (a.write_failed) {
        return IoError("cannot write " + part_path + ": " + std::strerror(part.write_errno()) +
                       (part.write_errno() == ENOSPC ? " (the disk is full)" : ""));
      }
      if (a.bad_status) {
        if (!Transient(a.bad_status->status)) return HttpError(url, *a.bad_status, "downloading " + f.path);
        last_error = "HTTP " + std::to_string(a.bad_status->status) + " from " + UrlHost(url);
        if (attempt < o_.max_attempts) Backoff(attempt);
        continue;
      }
      if (a.range_done) return Status::Ok();
      if (a.bad_range) {  // the server answered a different range than asked: start over
        MINERU_RETURN_IF_ERROR(part.Truncate());
        last_error = "the server answered the Range request with another range";
        continue;
      }
      switch (a.result.failure) {
        case HttpFailure::kNone:
          return Status::Ok();
        case HttpFailure::kUnreachable:
          return Unreachable(url, a.result.error);
        case HttpFailure::kTransfer:
          last_error = a.result.error;
          if (attempt < o_.max_attempts) Backoff(attempt);
          break;
        case HttpFailure::kAborted:
        case HttpFailure::kOther:
          return Status(StatusCode::kUnavailable,
                        "downloading " + f.path + " failed: " + a.result.error + " (" + url + ")");
      }
    }
    return Status(StatusCode::kDeadlineExceeded,
                  "downloading " + f.path + " failed " + std::to_string(attempt) +
                      " times (last: " + last_error + "); the " + std::to_string(part.size()) +
                      " bytes received are kept in " + part_path + " and the next run resumes from there");
  }

  // Checks the complete .part against f's size and digest (deleting it on a mismatch), then syncs
  // it and renames it to final_path.
  Status VerifyAndPlace(const RemoteFile& f, PartFile& part, const std::string& part_path,
                        const std::string& final_path) {
    Emit(DownloadProgress::Event::kVerifying, f.path, part.size(), f.size.value_or(part.size()));
    if (f.size && part.size() != *f.size) {
      const uint64_t got = part.size();
      part.Remove();
      return DataLossError(
          "size mismatch for " + f.path + ": expected " + std::to_string(*f.size) + " bytes, received " +
          std::to_string(got) + "; deleted " + part_path +
          " (run again to retry; if it persists the server sends a different file than it lists)");
    }
    const std::string digest = part.Digest();
    if (!f.sha256.empty() && digest != f.sha256) {
      part.Remove();
      return DataLossError("sha256 mismatch for " + f.path + ": expected " + f.sha256 + ", got " + digest +
                           "; deleted " + part_path +
                           " (run again to retry; if it persists the file on the server is corrupt)");
    }
    MINERU_RETURN_IF_ERROR(part.Sync());
    part.Close();
    if (std::rename(part_path.c_str(), final_path.c_str()) != 0) {
      return IoError("cannot rename " + part_path + " to " + final_path + ": " + std::strerror(errno));
    }
    ++fetched_;
    Emit(DownloadProgress::Event::kFileDone, f.path, f.size.value_or(0), f.size.value_or(0));
    return Status::Ok();
  }

  DownloadOptions o_;
  const ProgressFn& progress_;
  std::string endpoint_;
  std::unique_ptr<HttpClient> http_;
  std::vector<RemoteFile> plan_;
  DirLock lock_;
  size_t current_ = 0;
  uint64_t done_before_ = 0, total_ = 0, net_bytes_ = 0;
  int fetched_ = 0, skipped_ = 0;
};

}  // namespace

Status DownloadModel(const DownloadOptions& options, const ProgressFn& progress, DownloadSummary* summary) {
  Job job(options, progress);
  return job.Run(summary);
}

}  // namespace mineru
