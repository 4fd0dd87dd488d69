#include "pipeline/document.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <new>
#include <optional>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "image/decode.h"
#include "image/resize.h"
#include "pipeline/common/crop_geometry.h"
#include "pipeline/layout_picture.h"
#include "pipeline/pdf_text.h"
#include "pipeline/table_images.h"

namespace mineru::pipeline {
namespace {

Status MakeDirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
        return IoErrorFromErrno("cannot create directory " + cur, errno);  // no room: StorageFull
      }
    }
    if (i < path.size()) cur += path[i];
  }
  return Status::Ok();
}

// Applies a crop plan to the page: crop, rotate (counter-clockwise, expand), then FinishCrop.
RgbImage CropAndRotate(const RgbImage& page, const CropPlan& plan) {
  RgbImage im = Crop(page, plan.box.x0, plan.box.y0, plan.box.x1, plan.box.y1);
  if (plan.rotate_ccw % 360 != 0) im = Rotate90s(im, plan.rotate_ccw);
  return im;
}

// Pads to aspect <= 50 with white, upscales a short edge below 28 px (Pillow bicubic).
RgbImage FinishCrop(RgbImage im, const CropPlan& plan) {
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

RgbImage PrepareCrop(const RgbImage& page, const CropPlan& plan) {
  return FinishCrop(CropAndRotate(page, plan), plan);
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
  PageInput input;  // blocks: what NAME_model.json holds for the page
  Json assembled;   // the writer's assembled page (null: not assembled, e.g. a failed page)
  std::string md5;
};

// MinerU 3.4.4 writes decoded inline table images once under images/.
InlineImageWriteFn InlineImageWriter(const std::string& images_dir) {
  return [images_dir](const std::string& name, const std::string& bytes) {
    const std::string path = images_dir + "/" + name;
    if (!FileExists(path)) (void)WriteStringToFile(path, bytes);
  };
}

// A page's first error is the one reported.
void FailPage(PageReport* pr, const Status& s) {
  if (!pr->ok) return;
  pr->ok = false;
  pr->error = s.ToString();
}

// Hybrid text source: text/title blocks read from the PDF text layer when it is usable (their
// `recognised` set here); returns the requests the model still has to answer.
std::vector<const ExtractRequest*> TakeTextFromPdf(const InputDocument& doc, int page, const PageImage& pg,
                                                   const ParseOptions& opt, PagePlan* plan, PageReport* pr) {
  bool use_pdf = false;
  std::vector<PdfTextBox> words;
  if (opt.text_source != TextSource::kModel && doc.is_pdf()) {
    auto w = doc.PageText(page);
    if (w.ok()) words = std::move(w).value();
    use_pdf = opt.text_source == TextSource::kPdf ||
              PageTextLayerUsable(words, plan->layout, pg.width_pt, pg.height_pt);
  }
  std::vector<const ExtractRequest*> model_reqs;
  for (const ExtractRequest& r : plan->requests) {
    if (use_pdf && TextFromPdfAllowed(plan->layout[r.index].type)) {
      if (auto t = TextInBlock(words, plan->layout[r.index], pg.width_pt, pg.height_pt)) {
        plan->recognised[r.index] = *t;
        ++pr->from_pdf_text;
        continue;
      }
    }
    model_reqs.push_back(&r);
  }
  return model_reqs;
}

// Stage II: every crop of the page in one submission, in layout order; answers go to
// plan->recognised (a failed block: empty text, and the page reports the error). table_tokens: per
// block, the tokens that masked images inside a table (1.2).
void RecognizeBlocks(const PageImage& pg, const std::vector<const ExtractRequest*>& model_reqs,
                     int global_page, Backend& backend, PagePlan* plan,
                     std::vector<TableImageTokens>* table_tokens, PageReport* pr) {
  const std::vector<LayoutBlock>& layout = plan->layout;
  std::vector<RgbImage> crops;
  crops.reserve(model_reqs.size());
  for (const ExtractRequest* r : model_reqs) {
    if (r->table_images.empty()) {
      crops.push_back(PrepareCrop(pg.image, r->crop));
      continue;
    }
    // 1.2: images inside a table are masked with tokens in the rotated crop (table_images.h).
    RgbImage im = CropAndRotate(pg.image, r->crop);
    std::vector<const LayoutBlock*> images;
    for (size_t k : r->table_images) images.push_back(&layout[k]);
    (*table_tokens)[r->index] = MaskTableImages(pg.image, layout[r->index], r->index, images,
                                                r->crop.box.width(), r->crop.box.height(), &im);
    crops.push_back(FinishCrop(std::move(im), r->crop));
  }
  std::vector<RecognitionTask> tasks;
  for (size_t k = 0; k < model_reqs.size(); ++k) {
    const ExtractRequest& r = *model_reqs[k];
    tasks.push_back({&crops[k], layout[r.index].type, r.prompt, r.sampling});
  }
  auto outs = backend.Recognize(global_page, tasks);
  for (size_t k = 0; k < model_reqs.size(); ++k) {
    const size_t idx = model_reqs[k]->index;
    if (k < outs.size() && outs[k].ok()) {
      plan->recognised[idx] = outs[k].value();
      ++pr->recognised;
    } else {
      plan->recognised[idx] = std::string();
      FailPage(pr, (k < outs.size() ? outs[k].status() : InternalError("no output"))
                       .WithPrefix("block " + std::to_string(idx + 1)));
    }
  }
}

// A crop writer for images/: cuts the span's box (pixel box from box_of) once per file name.
ImagePathFn CropWriter(const PageImage& pg, const std::string& md5, const std::string& images_dir) {
  return [&pg, md5, images_dir](const CropRequest& c) {
    std::string name = CropFileName(c.span_type, md5, c.page_idx, c.bbox);
    const std::string path = images_dir + "/" + name;
    if (!FileExists(path)) {
      const PixelBox box =
          c.round_out ? AssemblyCropBoxV34(c.bbox, pg.scale) : AssemblyCropBox(c.bbox, pg.scale);
      RgbImage crop = Crop(pg.image, box.x0, box.y0, box.x1, box.y1);
      if (crop.width > 0 && crop.height > 0) (void)WriteJpegFile(crop, path, 95);
    }
    return name;
  };
}

// The page's assembly by the output writer, while the page image is here: the crops it asks for
// (its spans' boxes in points, cut from the page image with the writer's pixel rounding) are saved
// under images/ now.
Json AssemblePage(const PageResult& res, const PageImage& pg, const ParseOptions& opt,
                  const std::string& images_dir) {
  PageMedia media;
  media.image_path = CropWriter(pg, res.md5, images_dir);
  media.write_inline_image = InlineImageWriter(images_dir);
  return opt.version.writer->AssemblePage(res.input, media);
}

PageResult ProcessPageOrThrow(const InputDocument& doc, int page, int page_idx, int global_page,
                              const ParseOptions& opt, Backend& backend, const std::string& images_dir,
                              const std::string& layout_dir) {
  PageResult res;
  PageReport& pr = res.report;
  pr.page = page;
  PageInput& pin = res.input;
  pin.page_idx = page_idx;
  auto img = doc.LoadPage(page);
  if (!img.ok()) {
    FailPage(&pr, img.status());
    return res;
  }
  const PageImage& pg = *img;
  pin.width_pt = pg.width_pt;
  pin.height_pt = pg.height_pt;
  res.md5 = Md5Hex(pg.image.pixels.data(), pg.image.pixels.size());
  const ExtractionPolicy& policy = *opt.version.extract;
  RgbImage layout_image = ResizeBicubic(pg.image, opt.layout_image_size, opt.layout_image_size);
  auto raw = backend.Layout(global_page,
                            {&layout_image, "", std::string(policy.LayoutPrompt()), policy.LayoutSampling()});
  if (!raw.ok()) {
    FailPage(&pr, raw.status().WithPrefix("layout"));
    return res;
  }
  PagePlan plan = policy.PlanPage(*raw, pg.image.width, pg.image.height);
  pr.blocks = static_cast<int>(plan.layout.size());
  const std::vector<const ExtractRequest*> model_reqs = TakeTextFromPdf(doc, page, pg, opt, &plan, &pr);
  std::vector<TableImageTokens> table_tokens(plan.layout.size());
  RecognizeBlocks(pg, model_reqs, global_page, backend, &plan, &table_tokens, &pr);
  pin.blocks = policy.PostProcess(plan, table_tokens);
  res.assembled = AssemblePage(res, pg, opt, images_dir);
  char name[64];
  std::snprintf(name, sizeof(name), "/page_%04d.png", page + 1);
  if (opt.layout_pictures) {
    Status s = WritePngFile(DrawLayout(pg.image, plan.layout), layout_dir + name);
    if (!s.ok()) FailPage(&pr, s);
  }
  if (opt.page_images) {
    Status s = WritePngFile(DrawLayout(pg.image, {}), layout_dir + "/../pages" + name);
    if (!s.ok()) FailPage(&pr, s);
  }
  return res;
}

// One page; running out of memory (page image, crops, layout pictures) fails this page only.
PageResult ProcessPage(const InputDocument& doc, int page, int page_idx, int global_page,
                       const ParseOptions& opt, Backend& backend, const std::string& images_dir,
                       const std::string& layout_dir) {
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

// The extraction version's questions about the whole document (1.2.1: cross-page tables), asked
// together once every page is done (as the client does at the end of its batch). A page whose
// blocks an answer changed is assembled again by the writer (its part dropped).
void AskDocumentQuestions(const ExtractionPolicy& policy, int first_global, Backend& backend,
                          std::vector<PageResult>* results) {
  std::vector<std::vector<ContentBlock>> pages;
  std::vector<int> numbers;
  for (const PageResult& r : *results) {
    pages.push_back(r.input.blocks);
    numbers.push_back(r.report.page);
  }
  const std::vector<DocumentQuestion> questions = policy.DocumentQuestions(pages, numbers);
  if (questions.empty()) return;
  std::vector<Backend::TextRequest> requests;
  for (const DocumentQuestion& q : questions)
    requests.push_back({first_global + q.page, q.prompt, q.sampling});
  const std::vector<StatusOr<std::string>> answers = backend.AskText(requests);
  for (size_t i = 0; i < questions.size() && i < answers.size(); ++i) {
    if (answers[i].ok()) questions[i].apply(*answers[i], &pages);
  }
  for (size_t p = 0; p < results->size(); ++p) {
    PageResult& r = (*results)[p];
    if (r.input.blocks != pages[p]) {
      r.input.blocks = std::move(pages[p]);
      r.assembled = Json();
    }
  }
}

// The pages of one document, processed by a sliding window of pages in flight (results in page
// order, each page's report added to rep->pages, progress after each). Stops launching pages when
// cancelled or past the deadline; then waits for those in flight and returns the reason.
Status RunPages(const InputDocument& doc, const std::vector<int>& pages, int first_global,
                const ParseOptions& opt, Backend& backend, const ProgressFn& progress, DocumentReport* rep,
                std::vector<PageResult>* results) {
  const int total = static_cast<int>(pages.size());
  const std::string images_dir = rep->output_dir + "/images";
  const std::string layout_dir = rep->output_dir + "/layout";
  results->assign(static_cast<size_t>(total), PageResult());
  std::vector<std::future<PageResult>> running(static_cast<size_t>(total));
  const int window = std::max(1, opt.pages_in_flight);
  int next = 0;
  auto launch = [&](int i) {
    running[i] = std::async(std::launch::async, [&, i] {
      return ProcessPage(doc, pages[i], i, first_global + i, opt, backend, images_dir, layout_dir);
    });
  };
  for (; next < total && next < window; ++next) launch(next);
  bool past_deadline = false;
  for (int i = 0; i < total; ++i) {
    if (!running[i].valid()) {  // never launched: cancelled before it started
      for (auto& f : running) {
        if (f.valid()) f.wait();
      }
      return past_deadline
                 ? DeadlineExceededError("the time for this document ran out before all pages were processed")
                 : CancelledError("cancelled before all pages were processed");
    }
    (*results)[i] = running[i].get();
    past_deadline = past_deadline || std::chrono::steady_clock::now() >= opt.deadline;
    if (next < total && !(opt.cancel && opt.cancel->load()) && !past_deadline) launch(next++);
    const PageResult& r = (*results)[i];
    rep->pages.push_back(r.report);
    if (progress) {
      ProgressEvent e;
      e.kind = ProgressEvent::kPageDone;
      e.input = rep->input;
      e.page = r.report.page;
      e.pages_done = i + 1;
      e.pages_total = total;
      e.blocks = r.report.blocks;
      e.page_ok = r.report.ok;
      e.error = r.report.error;
      progress(e);
    }
  }
  return Status::Ok();
}

// The document's files from its pages (the writer's assembled parts, kept since each page was done);
// crop names are recomputed from the page digests for pages assembled again.
Status WriteDocument(const DocumentReport& rep, std::vector<PageResult>& results, int first_global,
                     const ParseOptions& opt, Backend& backend) {
  AskDocumentQuestions(*opt.version.extract, first_global, backend, &results);
  std::vector<PageInput> pages;
  std::vector<Json> parts;
  std::vector<std::string> md5s;
  for (PageResult& r : results) {
    pages.push_back(std::move(r.input));
    parts.push_back(std::move(r.assembled));
    md5s.push_back(r.md5);
  }
  DocumentFiles files;
  files.dir = rep.output_dir;
  files.name = rep.name;
  files.full_document = opt.pages.empty();
  const int total = static_cast<int>(md5s.size());
  files.media.image_path = [&md5s, total](const CropRequest& c) {
    const bool known = c.page_idx >= 0 && c.page_idx < total;
    return CropFileName(c.span_type, known ? md5s[c.page_idx] : std::string(), c.page_idx, c.bbox);
  };
  files.media.write_inline_image = InlineImageWriter(rep.output_dir + "/images");
  return opt.version.writer->WriteDocument(pages, std::move(parts), files);
}

void ReportDocument(const ProgressFn& progress, ProgressEvent::Kind kind, const std::string& input,
                    int total) {
  if (!progress) return;
  ProgressEvent e;
  e.kind = kind;
  e.input = input;
  e.pages_total = total;
  if (kind == ProgressEvent::kDocumentDone) e.pages_done = total;
  progress(e);
}

DocumentReport ParseDocumentOrThrow(const std::string& input_path, const ParseOptions& opt, Backend& backend,
                                    int* global_page, const ProgressFn& progress) {
  DocumentReport rep;
  rep.input = input_path;
  rep.name = DocumentName(input_path);
  rep.output_dir = opt.output_dir + "/" + rep.name;
  if (!opt.version.extract || !opt.version.writer) {
    rep.status = InvalidArgumentError("no extraction policy or output writer chosen");
    return rep;
  }
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
  for (const char* sub : {"", "/images", "/layout", "/pages"}) {
    if (!opt.page_images && std::string(sub) == "/pages") continue;
    Status s = MakeDirs(rep.output_dir + sub);
    if (!s.ok()) {
      rep.status = s;
      return rep;
    }
  }
  const int total = static_cast<int>(pages->size());
  ReportDocument(progress, ProgressEvent::kDocumentStart, input_path, total);
  std::vector<PageResult> results;
  rep.status = RunPages(**doc, *pages, first_global, opt, backend, progress, &rep, &results);
  if (!rep.status.ok()) return rep;
  rep.status = WriteDocument(rep, results, first_global, opt, backend);
  ReportDocument(progress, ProgressEvent::kDocumentDone, input_path, total);
  return rep;
}
}  // namespace

}  // namespace mineru::pipeline
