// pipeline/document.h — the driver: MinerU's two-stage parse of one input file into its output folder,
//   DIR/NAME/ with the output version's files (NAME.md, NAME_middle.json, NAME_model.json, ...),
//   images/ (the crops the writer asks for), layout/page_NNNN.png (one per page).
// It walks each page through the options' ExtractionPolicy and the document through its
// OutputWriter (versions.h) without knowing which versions they are.
// Pages are processed one at a time: only the page in flight is held in memory. A page that fails
// (render, layout, recognition) is reported and left empty; the rest of the document completes.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "pipeline/backend.h"
#include "pipeline/page_source.h"
#include "pipeline/versions.h"

namespace mineru::pipeline {

enum class TextSource { kModel, kPdf, kAuto };

struct ParseOptions {
  std::string output_dir = "output";
  std::string pages;  // "3-7,10" (1-based); empty = all
  TextSource text_source = TextSource::kModel;
  bool layout_pictures = true;
  bool page_images = false;  // also write pages/page_NNNN.png (the page, long side <= 1600 px)
  int layout_image_size = 1036;
  InputLimits limits;
  // Which extraction runs and which MinerU files are written (versions.h); the default is
  // kDefaultPipelineVersion, the same for every command and API.
  PipelineVersion version = DefaultPipelineVersion();

  // Pages processed concurrently (their requests batch together in the engine). Memory holds at
  // most this many page images at once.
  int pages_in_flight = 2;
  // When set (e.g. the server is draining), no new page starts; the report's status is Cancelled.
  const std::atomic<bool>* cancel = nullptr;
  // No page starts after this time; the report's status is then DeadlineExceeded (pages already
  // running finish first). The default: no deadline.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct ProgressEvent {
  enum Kind { kDocumentStart, kPageDone, kDocumentDone } kind = kPageDone;
  std::string input;
  int page = 0;         // 0-based page index within the document (kPageDone)
  int pages_done = 0;   // pages finished in this document so far
  int pages_total = 0;  // pages selected in this document
  int blocks = 0;       // blocks on the page (kPageDone)
  bool page_ok = true;
  std::string error;  // why the page failed
};
using ProgressFn = std::function<void(const ProgressEvent&)>;

struct PageReport {
  int page = 0;  // 0-based
  bool ok = true;
  std::string error;
  int blocks = 0;
  int recognised = 0;
  int from_pdf_text = 0;
};

struct DocumentReport {
  std::string input, name, output_dir;
  Status status;  // file-level failure (unreadable, encrypted, bad page range, cannot write)
  std::vector<PageReport> pages;
  int failed_pages() const;
  bool ok() const { return status.ok() && failed_pages() == 0; }
};

// global_page: running page counter across all inputs of one run (replay pages follow it);
// advanced by the number of selected pages even when the document fails part way.
// progress is called from the calling thread only.
DocumentReport ParseDocument(const std::string& input_path, const ParseOptions& options, Backend& backend,
                             int* global_page, const ProgressFn& progress = {});

// NAME of an input path: the file name without its last extension.
std::string DocumentName(const std::string& input_path);

}  // namespace mineru::pipeline
