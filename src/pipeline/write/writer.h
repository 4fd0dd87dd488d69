// pipeline/write/writer.h — what an output version is: the files MinerU of that version writes for a
// document, made from the document model (pipeline/doc/).
//
// Each version is a folder beside this header (write/mineru_2_5/, write/mineru_3_4/) implementing
// OutputWriter; a version folder may include this header, pipeline/doc/ and pipeline/common/, never
// another version's folder (the build's layer check enforces it). The driver calls AssemblePage once
// per page while the page image is held (crops are cut then) and WriteDocument once at the end;
// a page is assembled once unless a document-level answer changed its blocks afterwards.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "pipeline/doc/blocks.h"
#include "pipeline/doc/json.h"

namespace mineru::pipeline {

// How a writer saves a page's media. image_path cuts and saves a crop (the page image is held) and
// returns its file name; at WriteDocument time it only names the file (the crop was saved before).
struct PageMedia {
  ImagePathFn image_path;
  InlineImageWriteFn write_inline_image;
};

// Where a document's files go: DIR/NAME.md, DIR/NAME_middle.json, ... and DIR/images/.
struct DocumentFiles {
  std::string dir;
  std::string name;
  PageMedia media;            // names only (see PageMedia)
  bool full_document = true;  // every page of the file was parsed (no page selection)
};

class OutputWriter {
 public:
  virtual ~OutputWriter() = default;
  // The MinerU version whose files this writes, e.g. "3.4.4" (also middle.json's _version_name).
  virtual std::string_view version() const = 0;
  // The files a client asks for by kind, relative to the document's folder (name: the document's
  // name): its Markdown, content list, middle JSON and model output ("" where this version writes
  // none). What the document APIs read back; the full set of files is WriteDocument's.
  struct KindFiles {
    std::string markdown, content_list, middle_json, model_output;
  };
  virtual KindFiles Files(const std::string& name) const = 0;
  // One page, while its image is held: the writer's own assembled form of the page (opaque to the
  // driver), its crops and inline images saved through media.
  virtual Json AssemblePage(const PageInput& page, const PageMedia& media) const = 0;
  // The document. pages[i].blocks are final (NAME_model.json's page i); parts[i] is AssemblePage's
  // result for that page, or null where the page was never assembled or its blocks changed after
  // (the writer assembles it again, with files.media naming crops only).
  virtual Status WriteDocument(const std::vector<PageInput>& pages, std::vector<Json> parts,
                               const DocumentFiles& files) const = 0;
};

}  // namespace mineru::pipeline
