// pipeline/pdf_text.h — the hybrid text source: the text of a layout block taken from the PDF's
// text layer instead of running recognition (MinerU's "hybrid" idea).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pdf/pdf.h"
#include "pipeline/doc/blocks.h"

namespace mineru::pipeline {

// Block types whose text may come from the PDF (titles and running text; 1.2: doc/paragraph titles,
// list items).
bool TextFromPdfAllowed(const std::string& type);

// Words whose centre lies in the block (bbox 0..1 of a page of width_pt x height_pt), grouped
// into lines top to bottom, words left to right; lines joined with a space (none between CJK
// characters, none after a hyphen). nullopt when the box holds no text.
std::optional<std::string> TextInBlock(const std::vector<PdfTextBox>& words, const LayoutBlock& block,
                                       double width_pt, double height_pt);

// The `auto` policy: use the PDF text on a page when its text layer is usable — it has text, is
// not mostly replacement/private-use characters, and covers most of the page's text blocks.
bool PageTextLayerUsable(const std::vector<PdfTextBox>& words, const std::vector<LayoutBlock>& blocks,
                         double width_pt, double height_pt);

}  // namespace mineru::pipeline
