// server/file_parse_v4.cc — MinerU 4.1's synchronous POST /v1/file_parse (see file_parse_v4.h).
#include "server/file_parse_v4.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <memory>
#include <set>

#include "base/mapped_file.h"
#include "base/version.h"
#include "pipeline/document.h"
#include "pipeline/page_source.h"
#include "server/document_parse.h"
#include "server/http_status.h"
#include "server/job_store.h"
#include "server/zip_writer.h"

namespace mineru::server {
namespace {

struct FormV4 {
  std::string file_name, content;
  std::string tier, ocr_mode = "auto", page_range, request_id;
  double wait_timeout_s = 3600;
};

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// One endpoint of a 4.x range: "N" or "rN", as a 1-based page; 0 when malformed.
int PageOf(const std::string& s, int num_pages) {
  if (s.size() > 1 && s[0] == 'r' && AllDigits(s.substr(1))) return num_pages + 1 - std::stoi(s.substr(1));
  return AllDigits(s) ? std::stoi(s) : 0;
}

std::optional<RefusalV4> CheckScalars(const httplib::Request& req) {
  static const std::set<std::string> kScalars = {"tier", "ocr_mode", "page_range", "wait_timeout",
                                                 "request_id"};
  std::set<std::string> seen;
  for (const auto& [name, item] : req.files) {
    if (name == "file" || name == "output_formats") continue;
    if (kScalars.count(name) == 0)
      return RefusalV4{400, "unsupported_parameter", "unknown field: " + name, name};
    if (!seen.insert(name).second) return RefusalV4{400, "invalid_request", "repeated field: " + name, name};
  }
  if (req.files.count("file") != 1)
    return RefusalV4{400, "invalid_request", "send exactly one 'file'", "file"};
  return std::nullopt;
}

std::optional<RefusalV4> CheckOutputFormats(const httplib::Request& req) {
  const auto range = req.files.equal_range("output_formats");
  for (auto it = range.first; it != range.second; ++it) {
    const std::string& f = it->second.content;
    if (f == "default") continue;
    if (f == "docx" || f == "html" || f == "latex") {
      return RefusalV4{400, "unsupported_output_format",
                       "output format '" + f + "' is not served here (only default, the ZIP)",
                       "output_formats"};
    }
    return RefusalV4{400, "invalid_request", "unknown output format '" + f + "'", "output_formats"};
  }
  return std::nullopt;
}

// The scalar fields' values, each checked.
std::optional<RefusalV4> ReadScalars(const httplib::Request& req, FormV4* form) {
  auto value = [&req](const char* name) {
    return req.has_file(name) ? req.get_file_value(name).content : "";
  };
  form->tier = value("tier");
  if (!form->tier.empty() && form->tier != "advanced") {
    return RefusalV4{
        400, "unsupported_parameter",
        "tier '" + form->tier + "' is not served here: this server runs 'advanced' (the full VLM extraction)",
        "tier"};
  }
  if (req.has_file("ocr_mode")) form->ocr_mode = value("ocr_mode");
  if (form->ocr_mode != "auto" && form->ocr_mode != "txt" && form->ocr_mode != "ocr") {
    return RefusalV4{400, "invalid_request", "ocr_mode must be auto, txt or ocr", "ocr_mode"};
  }
  form->page_range = value("page_range");
  if (req.has_file("wait_timeout")) {
    const std::string w = value("wait_timeout");
    if (!AllDigits(w) || std::stoi(w) > 3600)
      return RefusalV4{400, "invalid_request", "wait_timeout must be 0..3600", "wait_timeout"};
    form->wait_timeout_s = std::stoi(w);
  }
  form->request_id = value("request_id");
  const bool id_ok = form->request_id.size() <= 64 &&
                     std::all_of(form->request_id.begin(), form->request_id.end(),
                                 [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-'; });
  if (req.has_file("request_id") && (form->request_id.empty() || !id_ok)) {
    return RefusalV4{400, "invalid_request", "request_id must be 1-64 of [A-Za-z0-9_-]", "request_id"};
  }
  return std::nullopt;
}

std::optional<RefusalV4> ReadForm(const httplib::Request& req, FormV4* form) {
  if (!req.is_multipart_form_data()) return RefusalV4{400, "invalid_request", "send multipart/form-data", ""};
  if (!req.params.empty())
    return RefusalV4{400, "invalid_request", "no query parameters are taken", req.params.begin()->first};
  if (auto r = CheckScalars(req)) return r;
  if (auto r = CheckOutputFormats(req)) return r;
  const auto file = req.get_file_value("file");
  const size_t dot = file.filename.find_last_of('.');
  if (file.content.empty() || dot == std::string::npos || dot == 0 || dot + 1 == file.filename.size() ||
      file.filename.find('/') != std::string::npos) {
    return RefusalV4{400, "invalid_request", "'file' must be a non-empty file whose name keeps its extension",
                     "file"};
  }
  form->file_name = file.filename;
  form->content = file.content;
  return ReadScalars(req, form);
}

// 4.x error codes by status (the documented ones).
const char* CodeFor(int status) {
  switch (status) {
    case 413:
      return "file_too_large";
    case 429:
      return "rate_limit_exceeded";
    case 503:
      return "service_unavailable";
    case 507:
      return "quota_exceeded";
    default:
      return status >= 500 ? "internal_error" : "invalid_request";
  }
}

// The parse options of one upload: MinerU 4's files, no page pictures, ocr_mode as the text source,
// the pages of page_range, the earlier of wait_timeout and --file-parse-timeout-s.
StatusOr<pipeline::ParseOptions> OptionsV4(const Server::State& st, const FormV4& form,
                                           const std::string& input, const std::string& out_dir) {
  pipeline::ParseOptions o = OptionsFor(st, ParseRequest(), out_dir);
  StatusOr<pipeline::PipelineVersion> v4 = pipeline::PipelineVersionNamed("4");
  if (!v4.ok()) return v4.status();
  o.version = std::move(v4).value();
  o.page_images = false;
  o.layout_pictures = false;
  o.text_source = form.ocr_mode == "ocr"   ? pipeline::TextSource::kModel
                  : form.ocr_mode == "txt" ? pipeline::TextSource::kPdf
                                           : pipeline::TextSource::kAuto;
  double wait = st.opt.file_parse_timeout_s;
  if (form.wait_timeout_s > 0) wait = std::min(wait, form.wait_timeout_s);
  o.deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wait));
  if (form.page_range.empty()) return o;
  auto doc = pipeline::InputDocument::Open(input, o.limits);
  if (!doc.ok()) return AsRequestError(doc.status());
  auto pages = PageRangeV4(form.page_range, (*doc)->num_pages(), st.opt.max_pages);
  if (!pages.ok()) return pages.status();
  std::sort(pages->begin(), pages->end());
  o.pages.clear();
  for (int p : *pages) o.pages += (o.pages.empty() ? "" : ",") + std::to_string(p + 1);
  return o;
}

// Stores the upload under work/, parses it into MinerU 4's files and zips them into work/result.zip.
Status ParseToZip(Server::State& st, const FormV4& form, const std::string& work, std::string* stem) {
  const std::string input = work + "/" + form.file_name;
  MINERU_RETURN_IF_ERROR(AsStorageError(WriteStringToFile(input, form.content)));
  StatusOr<pipeline::ParseOptions> o = OptionsV4(st, form, input, work + "/out");
  if (!o.ok()) return o.status();
  std::unique_ptr<pipeline::Backend> owned;
  pipeline::Backend* backend = BackendFor(st, &owned);
  int global_page = 0;
  const pipeline::DocumentReport rep = pipeline::ParseDocument(input, *o, *backend, &global_page);
  if (!rep.status.ok()) {
    const Status& s = rep.status;
    return s.code() == StatusCode::kDeadlineExceeded || OutputsNotWritten(s) ? s : AsRequestError(s);
  }
  if (rep.failed_pages() > 0) return InternalError(JobError(rep));
  MINERU_RETURN_IF_ERROR(AsStorageError(ZipDirectory(rep.output_dir, work + "/result.zip")));
  *stem = rep.name;
  return Status::Ok();
}

void HandleFileParseV4(Server::State& st, const httplib::Request& req, httplib::Response& res) {
  if (!st.ready && !st.doc_backend)
    return SendErrorV4(res, 503, "service_unavailable", "the model is loading");
  if (st.draining) return SendErrorV4(res, 503, "service_unavailable", "the server is shutting down");
  FormV4 form;
  if (auto r = ReadForm(req, &form)) return SendErrorV4(res, r->status, r->code, r->message, r->param);
  if (!form.request_id.empty()) {
    res.headers.erase("X-Request-Id");
    res.set_header("X-Request-Id", form.request_id);
  }
  const SyncParseSlot slot(st);
  if (!slot.ok()) {
    return SendErrorV4(res, 429, "rate_limit_exceeded", "too many documents are being parsed synchronously");
  }
  // The upload counts against --max-store-mb while the parse runs (its outputs, removed with the
  // work folder at the end, are not charged).
  StoreCharge charge(st, static_cast<int64_t>(form.content.size()));
  if (Status room = charge.Take(); !room.ok()) {
    st.metrics.Inc("mineru_storage_errors_total", "kind=\"quota\"");
    return SendErrorV4(res, 507, "quota_exceeded", room.message());
  }
  const std::string work = st.opt.data_dir + "/sync-" + NewJobId();
  if (::mkdir(work.c_str(), 0755) != 0) {
    return SendErrorV4(res, 503, "service_unavailable", "cannot store the upload");
  }
  std::string stem;
  Status s = ParseToZip(st, form, work, &stem);
  // The archive is streamed from an open descriptor: the work folder can go at once.
  res.set_header("Content-Disposition", "attachment; filename=\"" + stem + ".zip\"");
  if (s.ok() && !SendFile(res, work + "/result.zip", "application/zip"))
    s = UnavailableError("the result cannot be read");
  RemoveTree(work);
  if (!s.ok()) {
    res.headers.erase("Content-Disposition");
    const int status = HttpStatusFor(s);
    return SendErrorV4(res, status, CodeFor(status), s.message(), status == 400 ? "file" : "");
  }
}

// The comma-separated items of a 4.x page range, whitespace removed (empty items kept).
std::vector<std::string> RangeItems(const std::string& spec) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    std::string item = spec.substr(start, end - start);
    item.erase(std::remove_if(item.begin(), item.end(), [](unsigned char c) { return std::isspace(c); }),
               item.end());
    items.push_back(std::move(item));
    start = end + 1;
  }
  return items;
}

}  // namespace

StatusOr<std::vector<int>> PageRangeV4(const std::string& spec, int num_pages, int max_pages) {
  std::vector<int> out;
  std::set<int> seen;
  for (const std::string& item : RangeItems(spec)) {
    if (item.empty()) return InvalidArgumentError("page_range: an empty item in \"" + spec + "\"");
    const size_t dash = item == "all" ? std::string::npos : item.find('-');
    const int a = item == "all" ? 1 : PageOf(item.substr(0, dash), num_pages);
    const int b = item == "all"               ? num_pages
                  : dash == std::string::npos ? a
                                              : PageOf(item.substr(dash + 1), num_pages);
    if (a < 1 || b < 1 || a > num_pages || b > num_pages) {
      return InvalidArgumentError("page_range: \"" + item + "\" is outside pages 1-" +
                                  std::to_string(num_pages));
    }
    if (b < a) return InvalidArgumentError("page_range: \"" + item + "\" runs backwards");
    if (b - a + 1 > max_pages) {
      return ResourceExhaustedError("page_range: \"" + item + "\" selects more than " +
                                    std::to_string(max_pages) + " pages (--max-pages)");
    }
    for (int p = a; p <= b; ++p) {
      if (seen.insert(p).second) out.push_back(p - 1);
    }
    if (static_cast<int>(out.size()) > max_pages) {
      return ResourceExhaustedError("page_range selects more than " + std::to_string(max_pages) +
                                    " pages (--max-pages)");
    }
  }
  return out;
}

bool PageRangeSyntaxV4(const std::string& spec) {
  if (spec.empty() || spec.size() > 1000) return false;
  auto endpoint = [](const std::string& e) {
    const std::string digits = !e.empty() && e[0] == 'r' ? e.substr(1) : e;
    return AllDigits(digits) && std::stoi(digits) > 0;
  };
  for (const std::string& item : RangeItems(spec)) {
    const size_t dash = item.find('-');
    const bool ok = item == "all" || (dash == std::string::npos ? endpoint(item)
                                                                : endpoint(item.substr(0, dash)) &&
                                                                      endpoint(item.substr(dash + 1)));
    if (!ok) return false;
  }
  return true;
}

void SendErrorV4(httplib::Response& res, int status, const std::string& code, const std::string& message,
                 const std::string& param) {
  const char* type = status == 401   ? "authentication_error"
                     : status == 403 ? "permission_error"
                     : status == 429 ? "rate_limit_error"
                     : status == 503 ? "engine_error"
                     : status >= 500 ? "api_error"
                                     : "invalid_request_error";
  SendJson(res, status,
           {{"error",
             {{"type", type},
              {"code", code},
              {"message", message},
              {"param", param.empty() ? Json() : Json(param)}}}});
}

// GET /v1/health in MinerU 4's shape: status, version, features (what this server serves of 4.x).
void HandleHealthV4(Server::State& st, httplib::Response& res) {
  if (const std::string err = st.LoadError(); !err.empty())
    return SendErrorV4(res, 503, "service_unavailable", err);
  if (st.draining) return SendErrorV4(res, 503, "service_unavailable", "the server is shutting down");
  if (!st.ready && !st.doc_backend)
    return SendErrorV4(res, 503, "service_unavailable", "the model is loading");
  SendJson(
      res, 200,
      {{"status", "ok"},
       {"version", kMineruCppVersion},
       {"features",
        {{"webhook", false},
         {"output_formats", {"default"}},
         {"sources", st.opt.allow_remote_sources ? Json{"upload", "url"} : Json{"upload"}},
         {"routes", {"/v1/tasks", "/v1/file_parse", "/v1/chat/completions", "/v1/models", "/v1/tiers"}}}}});
}

// GET /v1/tiers: the one tier this server runs, MinerU 4's "advanced" (two-step VLM extraction).
void HandleTiersV4(Server::State& st, httplib::Response& res) {
  SendJson(res, 200,
           {{"object", "list"},
            {"data",
             {{{"id", "advanced"},
               {"description",
                "the full two-step VLM extraction (layout, then each block), mineru-vl-utils 1.2.1"},
               {"current_model", st.opt.model_name}}}}});
}

void RegisterFileParseV4(httplib::Server& http, Server::State& st) {
  http.Get("/v1/health", [&st](const httplib::Request&, httplib::Response& res) { HandleHealthV4(st, res); });
  http.Get("/v1/tiers", [&st](const httplib::Request&, httplib::Response& res) { HandleTiersV4(st, res); });
  http.Post("/v1/file_parse",
            [&st](const httplib::Request& req, httplib::Response& res) { HandleFileParseV4(st, req, res); });
}

}  // namespace mineru::server
