// pipeline/write/mineru_4/middle2.h — MinerU 4's middle_json.json: the DocVortex Middle JSON 2.0
// envelope (schema "docvortex.middle", schema_version "2.0"), built from the document model.
//
// The shape is DocVortex's published schema (tests/fixtures/docvortex/middle-2.0.json, checked by
// the tests with a JSON Schema validator). What the public record does not settle and we chose
// (docs/OUTPUTS.md, "MinerU 4"): bbox in 0..1 of the page (the model's own unit, as the DocVortex
// examples show), titles doc_title / title -> level 1 and paragraph_title -> level 2, captions and
// footnotes attached to their image / table / chart / code by MinerU's distance matcher (a caption
// nothing claims stays as a text block), text blocks inside a list become its items, and every
// other type the model found stays a block (formula_number, phonetic, unknown -> text): no block
// is dropped except the image_block container (its images stand alone) and empty equations.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pipeline/doc/blocks.h"
#include "pipeline/doc/json.h"

namespace mineru::pipeline::mineru4 {

// One page: {"page_idx", "blocks": [...]} in reading order. Crops of image / table / chart /
// equation bodies are named (and saved) through image_path.
Json MiddlePage(const PageInput& page, const ImagePathFn& image_path);

struct EnvelopeInfo {
  std::string file_suffix = "pdf";  // DocVortex's enum has no image suffix: images are "pdf" too
  std::string producer_version;     // mineru-cpp's version
  std::string tier = "advanced";    // what ran: MinerU 4's full two-step VLM extraction
  std::string parse_mode = "ocr";   // the page images were read by the model
  bool full_document = true;        // every page of the file (no page selection)
};

// The document: the envelope around the pages, in order.
Json MiddleEnvelope(std::vector<Json> pages, const EnvelopeInfo& info);

// Spans of natural-language content: text and equation_inline (\( \) split as MinerU does), no
// empty text span (the schema wants at least one character).
Json Spans(const std::optional<std::string>& content);

}  // namespace mineru::pipeline::mineru4
