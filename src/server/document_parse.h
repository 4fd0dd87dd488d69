// server/document_parse.h — what the document routes (document_api.cc) and the job runner
// (document_jobs.cc) share, internal to the server layer: a parse's request options (the form
// fields as a job keeps them), the pipeline options and backend it runs with, how its outcome reads
// (error text, storage kinds) and where its page images go. Not the routes nor the job runner.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "base/status.h"
#include "pipeline/document.h"
#include "server/state.h"

namespace mineru::server {

// Page ids are clamped here, so that end_page + 1 and page counts never overflow an int.
constexpr int kMaxPageId = 1 << 24;

struct ParseRequest {
  bool return_md = true, return_content_list = false, return_middle_json = false, return_model_output = false,
       return_images = false;
  int start_page = 0, end_page = 99999;  // 0-based, inclusive
  // Set by MinerU 4's Tasks API (defaults for the 3.x routes):
  std::string version;      // the job's pipeline version (PipelineVersionNamed); "" = the server's
  std::string pages;        // 1-based ascending page list ("1,2,5"); when set, start/end are unused
  std::string ocr_mode;     // auto | txt | ocr ("" = auto): where text comes from
  bool page_images = true;  // page pictures (and layout pictures) for the web page
};

// The job options kept for p (read back by JobParseRequest).
Json ParseRequestJson(const ParseRequest& p);

// Pages a parse of p covers in a document of num_pages pages (0 when none).
int PagesToParse(const ParseRequest& p, int num_pages);

// The error of a job its client canceled (Server::State::CancelJob).
inline constexpr const char* kJobCanceledError = "canceled by the client";

// A synchronous parse (/file_parse, /v1/file_parse) in flight. It holds an HTTP worker for whole
// documents, so at most a quarter of --http-threads hold a slot at once; ok() false: none was free
// (the caller answers 429). The slot is given back at destruction.
class SyncParseSlot {
 public:
  explicit SyncParseSlot(Server::State& st)
      : n_(st.sync_parses), ok_(n_.fetch_add(1) < std::max(1, st.opt.http_threads / 4)) {}
  ~SyncParseSlot() { --n_; }
  SyncParseSlot(const SyncParseSlot&) = delete;
  SyncParseSlot& operator=(const SyncParseSlot&) = delete;
  bool ok() const { return ok_; }

 private:
  std::atomic<int>& n_;
  bool ok_;
};

// A job's parse options (its stored JSON, read as the form fields were; defaults where missing).
ParseRequest JobParseRequest(const Job& j);

// The pipeline version of document jobs (validated when the server starts, as `parse` does).
pipeline::PipelineVersion VersionOf(const Server::State& st);

// The pipeline version a parse of p runs: p.version when set (and known), else the server's.
pipeline::PipelineVersion VersionFor(const Server::State& st, const ParseRequest& p);

// The server's replay backend when it has one, else a model backend made into *owned.
pipeline::Backend* BackendFor(Server::State& st, std::unique_ptr<pipeline::Backend>* owned);

// The pipeline options of a parse of p's pages into out_dir (page images on; cancelled by draining).
pipeline::ParseOptions OptionsFor(const Server::State& st, const ParseRequest& p, const std::string& out_dir);

// A parse whose outputs could not be written (an I/O failure, or no room for them).
bool OutputsNotWritten(const Status& s);

// The job's error text for a finished parse: "" on success, storage failures explained, else the
// first failed page.
std::string JobError(const pipeline::DocumentReport& r);

// A finished job whose outcome the store could not record yet (its disk full or read-only) is
// still "running" there: its outcome from memory (State::unrecorded) is put on *j.
void ShowUnrecordedFinish(Server::State& st, Job* j);

// The page image of a page (0-based index in the document), relative to the document's folder.
std::string PageFile(int page);

}  // namespace mineru::server
