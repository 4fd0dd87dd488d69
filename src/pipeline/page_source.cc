#include "pipeline/page_source.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <sstream>

#include "base/mapped_file.h"
#include "image/resize.h"

namespace mineru::pipeline {

StatusOr<std::unique_ptr<InputDocument>> InputDocument::Open(const std::string& path,
                                                             const InputLimits& limits) {
  MINERU_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, size_t(2) << 30));
  if (bytes.empty()) return InvalidArgumentError("empty file");
  std::unique_ptr<InputDocument> d(new InputDocument());
  d->limits_ = limits;
  if (LooksLikePdf(bytes)) {
    MINERU_ASSIGN_OR_RETURN(d->pdf_, PdfDocument::OpenFromMemory(std::move(bytes), limits.pdf));
  } else {
    MINERU_ASSIGN_OR_RETURN(
        d->image_, DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), limits.image));
  }
  return d;
}

StatusOr<PageImage> InputDocument::LoadPage(int index) const {
  // The page image is as large as the page (or the input image) says.
  try {
    return LoadPageOrThrow(index);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("loading page " + std::to_string(index + 1));
  }
}

StatusOr<PageImage> InputDocument::LoadPageOrThrow(int index) const {
  if (index < 0 || index >= num_pages()) return InvalidArgumentError("page index out of range");
  PageImage p;
  if (pdf_) {
    MINERU_ASSIGN_OR_RETURN(RenderedPage r, pdf_->RenderPage(index, limits_.dpi, limits_.max_side));
    p.image = std::move(r.image);
    p.width_pt = r.width_pt;
    p.height_pt = r.height_pt;
    p.scale = r.scale;
    return p;
  }
  // MinerU wraps an image in a 1-page PDF at 72 dpi (1 px = 1 pt) and renders it at 200 DPI with
  // the long side capped; we resample the pixels the same way (Pillow bicubic).
  p.width_pt = image_.width;
  p.height_pt = image_.height;
  double scale = limits_.dpi / 72.0;
  const double long_side = std::max(image_.width, image_.height);
  if (long_side * scale > limits_.max_side) scale = limits_.max_side / long_side;
  p.scale = scale;
  const int w = std::max(1, static_cast<int>(std::lround(image_.width * scale)));
  const int h = std::max(1, static_cast<int>(std::lround(image_.height * scale)));
  p.image = (w == image_.width && h == image_.height) ? image_ : ResizeBicubic(image_, w, h);
  return p;
}

StatusOr<std::vector<PdfTextBox>> InputDocument::PageText(int index) const {
  if (!pdf_) return std::vector<PdfTextBox>{};
  return pdf_->PageText(index);
}

StatusOr<std::vector<int>> ParsePageRanges(const std::string& spec, int num_pages) {
  std::vector<int> out;
  if (spec.empty()) {
    for (int i = 0; i < num_pages; ++i) out.push_back(i);
    return out;
  }
  std::set<int> pages;
  std::stringstream ss(spec);
  std::string part;
  auto parse_int = [](const std::string& s, int* v) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *v = std::stoi(s);
    return *v >= 1;
  };
  while (std::getline(ss, part, ',')) {
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    const size_t dash = part.find('-');
    int a = 0, b = 0;
    if (dash == std::string::npos) {
      if (!parse_int(part, &a)) return InvalidArgumentError("bad page range '" + part + "'");
      b = a;
    } else {
      if (!parse_int(part.substr(0, dash), &a) || !parse_int(part.substr(dash + 1), &b) || b < a) {
        return InvalidArgumentError("bad page range '" + part + "'");
      }
    }
    for (int p = a; p <= b && p <= num_pages; ++p) pages.insert(p - 1);
  }
  if (pages.empty()) {
    return InvalidArgumentError("page range '" + spec + "' selects no page of " + std::to_string(num_pages));
  }
  return std::vector<int>(pages.begin(), pages.end());
}

}  // namespace mineru::pipeline
