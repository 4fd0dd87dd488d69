// pipeline/extract/policy.h — what an extraction version is: how the model is asked about a page and
// how its answers become blocks (mineru-vl-utils' prompts, sampling, layout parsing, which blocks
// are recognised, post-processing, document-level questions).
//
// Each version is a folder beside this header (extract/vlu_0_1/, extract/vlu_1_2/) implementing
// ExtractionPolicy; a version folder may include this header, pipeline/doc/ and pipeline/common/,
// never another version's folder (the build's layer check enforces it). The driver
// (pipeline/document.cc) walks a page through these calls without knowing which version runs.
// Plain data: no image, no model.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/common/crop_geometry.h"
#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

// One stage II request of a page.
struct ExtractRequest {
  size_t index = 0;    // into the (caption-filtered) layout
  std::string prompt;  // "\nTable Recognition:", "\nFormula Recognition:", "\nImage Analysis:", text
  MinerUSampling sampling;
  CropPlan crop;  // rotation applies to tables too (1.2.1 rotates the masked table crop)
  // Tables: the absorbed images inside (indices into the layout), sorted by (y1, x1). Their areas are
  // masked in the crop with a token each (table_images.h).
  std::vector<size_t> table_images;
};

struct ExtractPlan {
  std::vector<ExtractRequest> requests;  // layout order, as 1.2.1 issues them
  std::vector<bool> absorbed;            // per block: an image that a recognised table absorbs
};

// One page on its way through extraction: the layout, the requests it leads to and (filled by the
// driver) the answers.
struct PagePlan {
  std::vector<LayoutBlock> layout;
  std::vector<ExtractRequest> requests;                // layout order
  std::vector<bool> absorbed;                          // per block, or empty
  std::vector<std::optional<std::string>> recognised;  // per block; nullopt = not requested
};

// A text-only question about the finished document (1.2.1: does this table continue the one on the
// previous page?), asked once every page is done. `apply` takes the raw answer and updates the
// document's pages (model blocks); a malformed answer changes nothing.
struct DocumentQuestion {
  int page = 0;  // index into the document's pages: the page the answer may change
  std::string prompt;
  MinerUSampling sampling;
  std::function<void(std::string_view answer, std::vector<std::vector<ContentBlock>>* pages)> apply;
};

class ExtractionPolicy {
 public:
  virtual ~ExtractionPolicy() = default;
  // The mineru-vl-utils version reproduced, e.g. "0.1.17".
  virtual std::string_view name() const = 0;
  // The layout request (stage I) of every page.
  virtual std::string_view LayoutPrompt() const = 0;
  virtual MinerUSampling LayoutSampling() const = 0;
  // Stage I's raw answer -> the page's layout and its stage II requests. page_w/page_h: the page
  // image in pixels. Blocks answered without a request (an empty crop) have `recognised` set.
  virtual PagePlan PlanPage(std::string_view raw_layout, int page_w, int page_h) const = 0;
  // After stage II: the page's blocks as NAME_model.json holds them. table_tokens: per layout
  // block, the tokens the driver masked into a table's crop (empty where none).
  virtual std::vector<ContentBlock> PostProcess(const PagePlan& plan,
                                                const std::vector<TableImageTokens>& table_tokens) const = 0;
  // Questions about the whole document. pages: each page's model blocks; page_numbers: each page's
  // 0-based number in the file (pages of a selection need not be adjacent). Default: none.
  virtual std::vector<DocumentQuestion> DocumentQuestions(const std::vector<std::vector<ContentBlock>>& pages,
                                                          const std::vector<int>& page_numbers) const;
};

}  // namespace mineru::pipeline
