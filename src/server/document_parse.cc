// server/document_parse.cc — the parse pieces the document routes and the job runner share (see
// document_parse.h), and RemoveTree (state.h). Not the routes (document_api.cc) nor the job runner
// (document_jobs.cc).
#include "server/document_parse.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/json_parse.h"
#include "pipeline/model_backend.h"

namespace mineru::server {
namespace {

ParseRequest ParseRequestFrom(const Json& j) {
  ParseRequest p;
  p.return_md = j.value("return_md", true);
  p.return_content_list = j.value("return_content_list", false);
  p.return_middle_json = j.value("return_middle_json", false);
  p.return_model_output = j.value("return_model_output", false);
  p.return_images = j.value("return_images", false);
  p.start_page = std::clamp(j.value("start_page_id", 0), 0, kMaxPageId);
  p.end_page = std::clamp(j.value("end_page_id", 99999), p.start_page, kMaxPageId);
  p.version = j.value("version", "");
  p.pages = j.value("pages", "");
  p.ocr_mode = j.value("ocr_mode", "");
  p.page_images = j.value("page_images", true);
  return p;
}

// MinerU 4's ocr_mode as the pipeline's text source; "" (the 3.x routes): the model reads every page.
pipeline::TextSource TextSourceOf(const std::string& ocr_mode) {
  return ocr_mode == "auto"  ? pipeline::TextSource::kAuto
         : ocr_mode == "txt" ? pipeline::TextSource::kPdf
                             : pipeline::TextSource::kModel;
}

}  // namespace

ParseRequest JobParseRequest(const Job& j) {
  Json o;
  return ParseRequestFrom(ParseJson(j.options, {}, &o).ok() && o.is_object() ? o : Json::object());
}

Json ParseRequestJson(const ParseRequest& p) {
  Json j = {{"return_md", p.return_md},
            {"return_content_list", p.return_content_list},
            {"return_middle_json", p.return_middle_json},
            {"return_model_output", p.return_model_output},
            {"return_images", p.return_images},
            {"start_page_id", p.start_page},
            {"end_page_id", p.end_page}};
  if (!p.version.empty()) j["version"] = p.version;
  if (!p.pages.empty()) j["pages"] = p.pages;
  if (!p.ocr_mode.empty()) j["ocr_mode"] = p.ocr_mode;
  if (!p.page_images) j["page_images"] = false;
  return j;
}

int PagesToParse(const ParseRequest& p, int num_pages) {
  if (!p.pages.empty()) return static_cast<int>(std::count(p.pages.begin(), p.pages.end(), ',')) + 1;
  return std::max(0, std::min(num_pages, p.end_page + 1) - p.start_page);
}

pipeline::PipelineVersion VersionOf(const Server::State& st) {
  StatusOr<pipeline::PipelineVersion> v = pipeline::PipelineVersionNamed(st.opt.vl_utils);
  return v.ok() ? std::move(v).value() : pipeline::DefaultPipelineVersion();
}

pipeline::PipelineVersion VersionFor(const Server::State& st, const ParseRequest& p) {
  if (!p.version.empty()) {
    if (StatusOr<pipeline::PipelineVersion> v = pipeline::PipelineVersionNamed(p.version); v.ok())
      return std::move(v).value();
  }
  return VersionOf(st);
}

pipeline::Backend* BackendFor(Server::State& st, std::unique_ptr<pipeline::Backend>* owned) {
  if (st.doc_backend) return st.doc_backend.get();
  *owned = pipeline::MakeModelBackend(st.engine.get());
  return owned->get();
}

pipeline::ParseOptions OptionsFor(const Server::State& st, const ParseRequest& p,
                                  const std::string& out_dir) {
  pipeline::ParseOptions o;
  o.output_dir = out_dir;
  o.pages = std::to_string(p.start_page + 1) + "-" + std::to_string(std::min(p.end_page + 1, 1 << 24));
  o.limits.pdf.max_pages = 1 << 24;
  o.limits.pdf.render_timeout_s = st.opt.page_render_timeout_s;
  o.limits.image.max_pixels = st.opt.max_image_pixels;
  o.page_images = p.page_images;
  if (!p.page_images) o.layout_pictures = false;
  if (!p.pages.empty()) o.pages = p.pages;
  o.text_source = TextSourceOf(p.ocr_mode);
  o.version = VersionFor(st, p);
  o.cancel = &st.draining;
  return o;
}

bool OutputsNotWritten(const Status& s) {
  return s.code() == StatusCode::kIoError || s.code() == StatusCode::kStorageFull;
}

std::string JobError(const pipeline::DocumentReport& r) {
  std::string err = r.status.ok() ? "" : r.status.message();
  if (OutputsNotWritten(r.status)) {
    err = (r.status.code() == StatusCode::kStorageFull
               ? "cannot write the result, the server's storage is full: "
               : "cannot write the result: ") +
          err;
  }
  if (r.status.ok() && r.failed_pages() > 0) {
    for (const auto& pg : r.pages) {
      if (!pg.ok) {
        err = "page " + std::to_string(pg.page + 1) + ": " + pg.error;
        break;
      }
    }
  }
  return err;
}

void ShowUnrecordedFinish(Server::State& st, Job* j) {
  std::lock_guard<std::mutex> lock(st.unrecorded_mu);
  auto it = st.unrecorded.find(j->id);
  if (it == st.unrecorded.end()) return;
  j->status = it->second.status;
  j->error = it->second.error;
  j->updated = it->second.updated;
}

std::string PageFile(int page) {  // page: 0-based index in the document
  char file[64];
  std::snprintf(file, sizeof(file), "pages/page_%04d.png", page + 1);
  return file;
}

void RemoveTree(const std::string& path) {
  if (path.empty() || path == "/") return;
  std::string cmd = "rm -rf '" + path + "'";
  if (path.find('\'') == std::string::npos) (void)std::system(cmd.c_str());
}

}  // namespace mineru::server
