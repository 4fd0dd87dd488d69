// pipeline/backend.h — what the document pipeline asks of a model: a layout pass on the 1036x1036
// page image and the recognition of a page's block crops (submitted together so an engine can
// batch them). Implementations: the engine (model_backend.cc) and recorded outputs (replay).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "image/image.h"
#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

struct RecognitionTask {
  const RgbImage* image = nullptr;  // the prepared crop (rotated, padded, upscaled)
  std::string type;                 // layout block type
  std::string prompt;               // e.g. "\nText Recognition:"
  MinerUSampling sampling;
};

struct BackendStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Raw layout output (special tokens kept) for the page's layout image. global_page numbers the
  // pages of one run in document order across all inputs. Must be thread-safe: several pages are
  // in flight at once.
  // task: the layout image with the extraction version's layout prompt and sampling (type "").
  virtual StatusOr<std::string> Layout(int global_page, const RecognitionTask& task) = 0;
  // One raw output per task, in order; a failed task fails only itself. All tasks of a page are
  // submitted together so an engine can batch them.
  virtual std::vector<StatusOr<std::string>> Recognize(int global_page,
                                                       const std::vector<RecognitionTask>& tasks) = 0;
  // Text-only requests (1.2.1's cross-page table questions), all submitted together; one raw
  // answer per request, in order. global_page: the page of the request's second table. The default
  // answers none (the tables keep no cell_merge).
  struct TextRequest {
    int global_page = 0;
    std::string prompt;
    MinerUSampling sampling;
  };
  virtual std::vector<StatusOr<std::string>> AskText(const std::vector<TextRequest>& requests) {
    return std::vector<StatusOr<std::string>>(requests.size(), UnimplementedError("no text requests"));
  }
  virtual BackendStats stats() const { return {}; }
};

// Replays recorded raw outputs: a JSON list of pages, each {"layout": "...", "blocks": ["...", ...]}
// with one entry per stage II request in the order the pipeline issues them (layout order; with
// --vl-utils 1.2 this includes the Image Analysis requests). An optional "merges" list holds the
// answers to the 1.2 cross-page table requests whose second table is on that page, in request order.
// Pages are consumed in document order.
// delay_ms: each request takes at least this long (simulates model latency in tests).
StatusOr<std::unique_ptr<Backend>> MakeReplayBackend(const std::string& replay_json_path, int delay_ms = 0);

}  // namespace mineru::pipeline
