// pipeline/doc/blocks.cc — the document model's one conversion (see blocks.h).
#include "pipeline/doc/blocks.h"

#include <algorithm>
#include <iterator>

namespace mineru::pipeline {

bool operator==(const ContentBlock& a, const ContentBlock& b) {
  return a.type == b.type && std::equal(std::begin(a.bbox), std::end(a.bbox), std::begin(b.bbox)) &&
         a.angle == b.angle && a.content == b.content && a.merge_prev == b.merge_prev &&
         a.sub_type == b.sub_type && a.cell_merge == b.cell_merge && a.absorbed == b.absorbed;
}

ContentBlock BlockFromLayout(const LayoutBlock& layout, std::optional<std::string> content) {
  ContentBlock b;
  b.type = layout.type;
  b.bbox[0] = layout.x1;
  b.bbox[1] = layout.y1;
  b.bbox[2] = layout.x2;
  b.bbox[3] = layout.y2;
  b.angle = layout.angle;
  b.content = std::move(content);
  return b;
}

}  // namespace mineru::pipeline
