#include "pipeline/document.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <new>
#include <optional>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "image/decode.h"
#include "image/resize.h"
#include "pipeline/assemble.h"
#include "pipeline/crop_geometry.h"
#include "pipeline/layout_picture.h"
#include "pipeline/pdf_text.h"
#include "pipeline/post_process.h"

namespace mineru::pipeline {
namespace {

Status MakeDirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
        return IoError("cannot create directory " + cur + ": " + std::strerror(errno));
      }
    }
    if (i < path.size()) cur += path[i];
  }
  return Status::Ok();
}

// Applies a crop plan to the page: crop, rotate (counter-clockwise, expand), pad to aspect <= 50
// with white, upscale a short edge below 28 px (Pillow bicubic).
RgbImage PrepareCrop(const RgbImage& page, const CropPlan& plan) {
  RgbImage im = Crop(page, plan.box.x0, plan.box.y0, plan.box.x1, plan.box.y1);
  if (plan.rotate_ccw % 360 != 0) im = Rotate90s(im, plan.rotate_ccw);
  const ResizePlan& r = plan.resize;
  if (r.pad) {
    RgbImage padded;
    padded.width = r.pad_w;
    padded.height = r.pad_h;
    padded.pixels.assign(static_cast<size_t>(r.pad_w) * r.pad_h * 3, 255);
    for (int y = 0; y < im.height; ++y) {
      const int dy = y + r.paste_y;
      if (dy < 0 || dy >= padded.height) continue;
      for (int x = 0; x < im.width; ++x) {
        const int dx = x + r.paste_x;
        if (dx < 0 || dx >= padded.width) continue;
        std::copy_n(&im.pixels[(static_cast<size_t>(y) * im.width + x) * 3], 3,
                    &padded.pixels[(static_cast<size_t>(dy) * padded.width + dx) * 3]);
      }
    }
    im = std::move(padded);
  }
  if (r.upscale) im = ResizeBicubic(im, r.out_w, r.out_h);
  return im;
}

std::string CropFileName(const std::string& span_type, const std::string& page_md5, int page_idx,
                         const int bbox[4]) {
  return Sha256Hex(AssemblyCropHashInput(span_type, page_md5, page_idx, bbox)) + ".jpg";
}

}  // namespace

int DocumentReport::failed_pages() const {
  int n = 0;
  for (const auto& p : pages) n += p.ok ? 0 : 1;
  return n;
}

std::string DocumentName(const std::string& input_path) {
  std::string base = input_path;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const size_t slash = base.find_last_of('/');
  if (slash != std::string::npos) base = base.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  return base.empty() ? "document" : base;
}

namespace {

// Everything one page produces; the page image itself is dropped before this is kept.
struct PageResult {
  PageReport report;
  PageInput input;
  std::string md5;
};

PageResult ProcessPageOrThrow(const InputDocument& doc, int page, int page_idx, int global_page,
                              const ParseOptions& opt, Backend& backend, const std::string& images_dir,
                              const std::string& layout_dir) {
  PageResult res;
  PageReport& pr = res.report;
  pr.page = page;
  PageInput& pin = res.input;
  pin.page_idx = page_idx;
  auto fail = [&](const Status& s) {
    if (!pr.ok) return;
    pr.ok = false;
    pr.error = s.ToString();
  };
  auto img = doc.LoadPage(page);
  if (!img.ok()) {
    fail(img.status());
    return res;
  }
  const PageImage& pg = *img;
  pin.width_pt = pg.width_pt;
  pin.height_pt = pg.height_pt;
  res.md5 = Md5Hex(pg.image.pixels.data(), pg.image.pixels.size());
  RgbImage layout_image = ResizeBicubic(pg.image, opt.layout_image_size, opt.layout_image_size);
  auto raw = backend.Layout(global_page, layout_image);
  if (!raw.ok()) {
    fail(raw.status().WithPrefix("layout"));
    return res;
  }
  std::vector<LayoutBlock> layout = ParseLayoutOutput(*raw);
  pr.blocks = static_cast<int>(layout.size());
  std::vector<std::optional<std::string>> recognised(layout.size());
  std::vector<size_t> todo = RecognitionIndices(layout);

  // Hybrid text source: text/title blocks from the PDF text layer.
  bool use_pdf = false;
  std::vector<PdfTextBox> words;
  if (opt.text_source != TextSource::kModel && doc.is_pdf()) {
    auto w = doc.PageText(page);
    if (w.ok()) words = std::move(w).value();
    use_pdf = opt.text_source == TextSource::kPdf || PageTextLayerUsable(words, layout, pg.width_pt, pg.height_pt);
  }
  std::vector<size_t> model_idx;
  for (size_t idx : todo) {
    if (use_pdf && TextFromPdfAllowed(layout[idx].type)) {
      if (auto t = TextInBlock(words, layout[idx], pg.width_pt, pg.height_pt)) {
        recognised[idx] = *t;
        ++pr.from_pdf_text;
        continue;
      }
    }
    model_idx.push_back(idx);
  }

  // Stage II: every crop of the page in one submission.
  std::vector<RgbImage> crops;
  std::vector<size_t> task_idx;
  crops.reserve(model_idx.size());
  for (size_t idx : model_idx) {
    const LayoutBlock& b = layout[idx];
    CropPlan plan = PlanBlockCrop(b.x1, b.y1, b.x2, b.y2, b.angle, pg.image.width, pg.image.height);
    if (plan.empty) {
      recognised[idx] = std::string();
      continue;
    }
    crops.push_back(PrepareCrop(pg.image, plan));
    task_idx.push_back(idx);
  }
  std::vector<RecognitionTask> tasks;
  for (size_t k = 0; k < task_idx.size(); ++k) {
    const LayoutBlock& b = layout[task_idx[k]];
    tasks.push_back({&crops[k], b.type, std::string(PromptForType(b.type)), SamplingForType(b.type)});
  }
  auto outs = backend.Recognize(global_page, tasks);
  for (size_t k = 0; k < task_idx.size(); ++k) {
    if (k < outs.size() && outs[k].ok()) {
      recognised[task_idx[k]] = outs[k].value();
      ++pr.recognised;
    } else {
      recognised[task_idx[k]] = std::string();
      fail((k < outs.size() ? outs[k].status() : InternalError("no output"))
               .WithPrefix("block " + std::to_string(task_idx[k] + 1)));
    }
  }
  pin.blocks = PostProcessPage(layout, recognised);

  // Crops for images/ (image, table, equation spans) are cut now, while the page is here.
  AssembleOptions save;
  save.version_name = opt.version_name;
  save.image_path = [&](const CropRequest& c) {
    const std::string name = CropFileName(c.span_type, res.md5, c.page_idx, c.bbox);
    const std::string path = images_dir + "/" + name;
    if (!FileExists(path)) {
      PixelBox box = AssemblyCropBox(c.bbox, pg.scale);
      RgbImage crop = Crop(pg.image, box.x0, box.y0, box.x1, box.y1);
      if (crop.width > 0 && crop.height > 0) (void)WriteJpegFile(crop, path, 95);
    }
    return name;
  };
  (void)PageInfoJson(pin, save);
  char name[64];
  std::snprintf(name, sizeof(name), "/page_%04d.png", page + 1);
  if (opt.layout_pictures) {
    Status s = WritePngFile(DrawLayout(pg.image, layout), layout_dir + name);
    if (!s.ok()) fail(s);
  }
  if (opt.page_images) {
    Status s = WritePngFile(DrawLayout(pg.image, {}), layout_dir + "/../pages" + name);
    if (!s.ok()) fail(s);
  }
  return res;
}

// One page; running out of memory (page image, crops, layout pictures) fails this page only.
PageResult ProcessPage(const InputDocument& doc, int page, int page_idx, int global_page, const ParseOptions& opt,
                       Backend& backend, const std::string& images_dir, const std::string& layout_dir) {
  try {
    return ProcessPageOrThrow(doc, page, page_idx, global_page, opt, backend, images_dir, layout_dir);
  } catch (const std::bad_alloc&) {
    PageResult res;
    res.report.page = page;
    res.report.ok = false;
    res.report.error = OutOfMemoryError("processing page " + std::to_string(page + 1)).ToString();
    res.input.page_idx = page_idx;
    return res;
  }
}

DocumentReport ParseDocumentOrThrow(const std::string& input_path, const ParseOptions& opt, Backend& backend,
                                    int* global_page, const ProgressFn& progress);

}  // namespace

DocumentReport ParseDocument(const std::string& input_path, const ParseOptions& opt, Backend& backend,
                             int* global_page, const ProgressFn& progress) {
  // Assembly (JSON, Markdown) grows with the document: out of memory fails the document, never the
  // process (a server runs this on its job workers).
  try {
    return ParseDocumentOrThrow(input_path, opt, backend, global_page, progress);
  } catch (const std::bad_alloc&) {
    DocumentReport rep;
    rep.input = input_path;
    rep.name = DocumentName(input_path);
    rep.output_dir = opt.output_dir + "/" + rep.name;
    rep.status = OutOfMemoryError("parsing " + input_path);
    return rep;
  }
}

namespace {

DocumentReport ParseDocumentOrThrow(const std::string& input_path, const ParseOptions& opt, Backend& backend,
                                    int* global_page, const ProgressFn& progress) {
  DocumentReport rep;
  rep.input = input_path;
  rep.name = DocumentName(input_path);
  rep.output_dir = opt.output_dir + "/" + rep.name;

  auto doc = InputDocument::Open(input_path, opt.limits);
  if (!doc.ok()) {
    rep.status = doc.status();
    return rep;
  }
  auto pages = ParsePageRanges(opt.pages, (*doc)->num_pages());
  if (!pages.ok()) {
    rep.status = pages.status();
    return rep;
  }
  const int first_global = *global_page;
  *global_page += static_cast<int>(pages->size());
  const std::string images_dir = rep.output_dir + "/images";
  const std::string layout_dir = rep.output_dir + "/layout";
  for (const std::string& d : {rep.output_dir, images_dir, layout_dir, rep.output_dir + "/pages"}) {
    if (!opt.page_images && d == rep.output_dir + "/pages") continue;
    Status s = MakeDirs(d);
    if (!s.ok()) {
      rep.status = s;
      return rep;
    }
  }
  const int total = static_cast<int>(pages->size());
  if (progress) {
    ProgressEvent e;
    e.kind = ProgressEvent::kDocumentStart;
    e.input = input_path;
    e.pages_total = total;
    progress(e);
  }

  // A sliding window of pages in flight; results are collected in page order.
  std::vector<PageResult> results(static_cast<size_t>(total));
  std::vector<std::future<PageResult>> running(static_cast<size_t>(total));
  const int window = std::max(1, opt.pages_in_flight);
  int next = 0;
  auto launch = [&](int i) {
    running[i] = std::async(std::launch::async, [&, i] {
      return ProcessPage(**doc, (*pages)[i], i, first_global + i, opt, backend, images_dir, layout_dir);
    });
  };
  for (; next < total && next < window; ++next) launch(next);
  bool cancelled = false;
  for (int i = 0; i < total; ++i) {
    if (!running[i].valid()) {  // never launched: cancelled before it started
      cancelled = true;
      break;
    }
    results[i] = running[i].get();
    if (next < total && !(opt.cancel && opt.cancel->load())) launch(next++);
    const PageResult& r = results[i];
    rep.pages.push_back(r.report);
    if (progress) {
      ProgressEvent e;
      e.kind = ProgressEvent::kPageDone;
      e.input = input_path;
      e.page = r.report.page;
      e.pages_done = i + 1;
      e.pages_total = total;
      e.blocks = r.report.blocks;
      e.page_ok = r.report.ok;
      e.error = r.report.error;
      progress(e);
    }
  }

  if (cancelled) {
    for (auto& f : running) {
      if (f.valid()) f.wait();
    }
    rep.status = CancelledError("cancelled before all pages were processed");
    return rep;
  }

  // Assembly over all pages (cross-page steps); crop names are recomputed from the page digests.
  std::vector<std::vector<ContentBlock>> model_pages;
  std::vector<PageInput> page_inputs;
  for (const PageResult& r : results) {
    model_pages.push_back(r.input.blocks);
    page_inputs.push_back(r.input);
  }
  AssembleOptions names;
  names.version_name = opt.version_name;
  names.image_path = [&](const CropRequest& c) {
    const bool known = c.page_idx >= 0 && c.page_idx < total;
    return CropFileName(c.span_type, known ? results[c.page_idx].md5 : std::string(), c.page_idx, c.bbox);
  };
  Json middle = MiddleJson(page_inputs, names);
  const std::string base = rep.output_dir + "/" + rep.name;
  Status s = WriteStringToFile(base + "_model.json", DumpJson(ModelJson(model_pages)));
  if (s.ok()) s = WriteStringToFile(base + "_middle.json", DumpJson(middle));
  if (s.ok()) s = WriteStringToFile(base + "_content_list.json", DumpJson(ContentListFromMiddle(middle, "images")));
  if (s.ok()) s = WriteStringToFile(base + ".md", MarkdownFromMiddle(middle));
  if (!s.ok()) rep.status = s;
  if (progress) {
    ProgressEvent e;
    e.kind = ProgressEvent::kDocumentDone;
    e.input = input_path;
    e.pages_done = e.pages_total = total;
    progress(e);
  }
  return rep;
}

}  // namespace

}  // namespace mineru::pipeline
