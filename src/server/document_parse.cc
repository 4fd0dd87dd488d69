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
  return p;
}

}  // namespace

ParseRequest JobParseRequest(const Job& j) {
  Json o;
  return ParseRequestFrom(ParseJson(j.options, {}, &o).ok() && o.is_object() ? o : Json::object());
}

pipeline::PipelineVersion VersionOf(const Server::State& st) {
  StatusOr<pipeline::PipelineVersion> v = pipeline::PipelineVersionNamed(st.opt.vl_utils);
  return v.ok() ? std::move(v).value() : pipeline::DefaultPipelineVersion();
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
  o.page_images = true;
  o.version = VersionOf(st);
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
