// pipeline/write/mineru_4/render.h — the files MinerU 4 renders from its middle_json.json:
// markdown.md, structured_content.json (DocVortex's structured-content projection) and
// content_list.json (Content List V1, flat). Every block of the middle JSON reaches the Markdown
// except page furniture (header, footer, page_number, aside_text), which MinerU leaves out of it.
#pragma once

#include <string>

#include "pipeline/doc/json.h"

namespace mineru::pipeline::mineru4 {

// markdown.md: blocks joined by a blank line; titles as "#"/"##", inline equations as $..$,
// display equations as $$..$$, tables as HTML, images as ![](images/..), code fenced.
std::string Markdown(const Json& middle);

// structured_content.json: {"pages": [{"page_idx", "blocks": [{type, bbox, content: Markdown text,
// level?, sub_type?, captions?, footnotes?, image_source?}]}], "metadata", "extensions",
// "is_full_document"}.
Json StructuredContent(const Json& middle);

// content_list.json: one flat list over all pages, each {"type", ..., "bbox" (0..1000 ints),
// "page_idx"} as MinerU's Content List V1 writes them.
Json ContentList(const Json& middle);

}  // namespace mineru::pipeline::mineru4
