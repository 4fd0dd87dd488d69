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
#include "pipeline/assemble.h"
#include "pipeline/assemble_v34.h"
#include "pipeline/crop_geometry.h"
#include "pipeline/cross_page_table.h"
#include "pipeline/layout_picture.h"
#include "pipeline/layout_v12.h"
#include "pipeline/pdf_text.h"
#include "pipeline/post_process.h"
#include "pipeline/post_process_v12.h"
#include "pipeline/table_images.h"

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

// The layout of one page and the stage II requests it leads to, per extraction version.
struct PagePlan {
  std::vector<LayoutBlock> layout;
  std::vector<ExtractRequest> requests;  // layout order
  std::vector<bool> absorbed;            // 1.2: images absorbed by a table
  std::vector<std::optional<std::string>> recognised;
};

PagePlan PlanPage(const std::string& raw, const ParseOptions& opt, int page_w, int page_h) {
  PagePlan p;
  if (opt.vl_utils == VlUtilsVersion::k1_2) {
    p.layout = ParseLayoutOutputV12(raw);
    ExtractPlan e = PlanExtractV12(p.layout, page_w, page_h, opt.image_analysis);
    p.requests = std::move(e.requests);
    p.absorbed = std::move(e.absorbed);
    p.recognised.resize(p.layout.size());
    return p;
  }
  p.layout = ParseLayoutOutput(raw);
  p.recognised.resize(p.layout.size());
  for (size_t idx : RecognitionIndices(p.layout)) {
    const LayoutBlock& b = p.layout[idx];
    ExtractRequest r;
    r.index = idx;
    r.crop = PlanBlockCrop(b.x1, b.y1, b.x2, b.y2, b.angle, page_w, page_h);
    if (r.crop.empty) {  // 0.1.x: an empty crop gives an empty content, no request
      p.recognised[idx] = std::string();
      continue;
    }
    r.prompt = std::string(PromptForType(b.type));
    r.sampling = SamplingForType(b.type);
    p.requests.push_back(std::move(r));
  }
  return p;
}

// MinerU 2.5.4's assembly (assemble.cc) knows the 2509 types only. Until the 3.4.4 files are
// reproduced, 1.2 blocks are mapped onto those for middle.json, Markdown and content_list.json
// (model.json keeps the 1.2 types): titles -> title, index/formula_number -> text, chart -> image,
// caption/footnote -> image_caption/image_footnote, image_block -> dropped (its images stand alone).
std::vector<ContentBlock> BridgeTypesForAssembly(std::vector<ContentBlock> blocks) {
  std::vector<ContentBlock> out;
  for (auto& b : blocks) {
    if (b.type == "doc_title" || b.type == "paragraph_title")
      b.type = "title";
    else if (b.type == "index" || b.type == "formula_number")
      b.type = "text";
    else if (b.type == "chart")
      b.type = "image";
    else if (b.type == "caption")
      b.type = "image_caption";
    else if (b.type == "footnote")
      b.type = "image_footnote";
    else if (b.type == "image_block")
      continue;
    out.push_back(std::move(b));
  }
  return out;
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
  std::vector<ContentBlock> model_blocks;  // what NAME_model.json holds for the page
  std::string md5;
};

// MinerU 3.4.4 writes decoded inline table images once under images/.
InlineImageWriteFn InlineImageWriter(const std::string& images_dir) {
  return [images_dir](const std::string& name, const std::string& bytes) {
    const std::string path = images_dir + "/" + name;
    if (!FileExists(path)) (void)WriteStringToFile(path, bytes);
  };
}

// MinerU 3.4.4's files for the 1.2 extraction (model.json blocks as they are after all pages), in
// its write order: NAME.md, NAME_content_list.json, NAME_content_list_v2.json, NAME_middle.json
// (md and the content lists normalise middle.json's text spans in place).
Status WriteOutputsV34(const std::string& base, const std::vector<std::vector<ContentBlock>>& model_pages,
                       std::vector<PageInput> pages, const ImagePathFn& image_path,
                       const std::string& images_dir) {
  for (size_t i = 0; i < pages.size() && i < model_pages.size(); ++i) pages[i].blocks = model_pages[i];
  AssembleV34Options o;
  o.image_path = image_path;
  o.write_inline_image = InlineImageWriter(images_dir);
  Json middle = MiddleJsonV34(pages, o);
  const OutputsV34 out = MakeOutputsV34(middle, "images");
  Status s = WriteStringToFile(base + ".md", out.markdown);
  if (s.ok()) s = WriteStringToFile(base + "_content_list.json", DumpJson(out.content_list));
  if (s.ok()) s = WriteStringToFile(base + "_content_list_v2.json", DumpJson(out.content_list_v2));
  if (s.ok()) s = WriteStringToFile(base + "_middle.json", DumpJson(middle));
  return s;
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
template <typename BoxOf>
std::function<std::string(const CropRequest&)> CropWriter(const PageImage& pg, const std::string& md5,
                                                          const std::string& images_dir, BoxOf box_of) {
  return [&pg, md5, images_dir, box_of](const CropRequest& c) {
    std::string name = CropFileName(c.span_type, md5, c.page_idx, c.bbox);
    const std::string path = images_dir + "/" + name;
    if (!FileExists(path)) {
      PixelBox box = box_of(c.bbox, pg.scale);
      RgbImage crop = Crop(pg.image, box.x0, box.y0, box.x1, box.y1);
      if (crop.width > 0 && crop.height > 0) (void)WriteJpegFile(crop, path, 95);
    }
    return name;
  };
}

// Crops for images/ (image, table, equation spans; 3.4.4 also chart spans and image_block members
// with floor/ceil pixel boxes) are cut now, while the page image is here.
void SaveCrops(const PageResult& res, const PageImage& pg, const ParseOptions& opt,
               const std::string& images_dir) {
  if (opt.vl_utils == VlUtilsVersion::k1_2) {
    AssembleV34Options save34;
    save34.image_path = CropWriter(pg, res.md5, images_dir, AssemblyCropBoxV34);
    save34.write_inline_image = InlineImageWriter(images_dir);
    PageInput raw = res.input;
    raw.blocks = res.model_blocks;
    (void)MiddleJsonV34({raw}, save34);
  } else {
    AssembleOptions save;
    save.version_name = opt.version_name;
    save.image_path = CropWriter(pg, res.md5, images_dir, AssemblyCropBox);
    (void)PageInfoJson(res.input, save);
  }
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
  RgbImage layout_image = ResizeBicubic(pg.image, opt.layout_image_size, opt.layout_image_size);
  auto raw = backend.Layout(global_page, layout_image);
  if (!raw.ok()) {
    FailPage(&pr, raw.status().WithPrefix("layout"));
    return res;
  }
  PagePlan plan = PlanPage(*raw, opt, pg.image.width, pg.image.height);
  pr.blocks = static_cast<int>(plan.layout.size());
  const std::vector<const ExtractRequest*> model_reqs = TakeTextFromPdf(doc, page, pg, opt, &plan, &pr);
  std::vector<TableImageTokens> table_tokens(plan.layout.size());
  RecognizeBlocks(pg, model_reqs, global_page, backend, &plan, &table_tokens, &pr);
  if (opt.vl_utils == VlUtilsVersion::k1_2) {
    res.model_blocks = PostProcessPageV12(plan.layout, plan.recognised, plan.absorbed, table_tokens);
    pin.blocks = BridgeTypesForAssembly(res.model_blocks);
  } else {
    pin.blocks = PostProcessPage(plan.layout, plan.recognised);
    res.model_blocks = pin.blocks;
  }
  SaveCrops(res, pg, opt, images_dir);
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

// 1.2.1's cross-page table questions, asked together once every page is done (as the client does
// at the end of its batch). Pairs must be pages next to each other in the file. An answer becomes
// cell_merge on the second table, in model.json and in the assembly's input (where that table is
// still the page's first table); a failed or malformed answer leaves the tables as they were.
void AskCrossPageTables(const std::vector<PageResult>& results, int first_global, Backend& backend,
                        std::vector<std::vector<ContentBlock>>* model_pages, std::vector<PageInput>* inputs) {
  std::vector<CrossPageTask> tasks;
  for (CrossPageTask& t : CrossPageTableTasks(*model_pages)) {
    if (results[t.curr_page].report.page == results[t.prev_page].report.page + 1)
      tasks.push_back(std::move(t));
  }
  if (tasks.empty()) return;
  std::vector<Backend::TextRequest> requests;
  for (const CrossPageTask& t : tasks)
    requests.push_back({first_global + t.curr_page, t.prompt, CrossPageSampling()});
  const std::vector<StatusOr<std::string>> answers = backend.AskText(requests);
  for (size_t i = 0; i < tasks.size() && i < answers.size(); ++i) {
    if (!answers[i].ok()) continue;
    const CrossPageTask& t = tasks[i];
    const std::optional<std::vector<int>> cell_merge = CellMergeFromAnswer(t, *answers[i]);
    if (!cell_merge) continue;
    (*model_pages)[t.curr_page][t.curr_block].cell_merge = cell_merge;
    for (ContentBlock& b : (*inputs)[t.curr_page].blocks) {
      if (b.type != "table") continue;
      b.cell_merge = cell_merge;
      break;
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

// Assembly over all pages (cross-page steps) and the document's files; crop names are recomputed
// from the page digests.
Status WriteDocument(const DocumentReport& rep, const std::vector<PageResult>& results, int first_global,
                     const ParseOptions& opt, Backend& backend) {
  std::vector<std::vector<ContentBlock>> model_pages;
  std::vector<PageInput> page_inputs;
  for (const PageResult& r : results) {
    model_pages.push_back(r.model_blocks);
    page_inputs.push_back(r.input);
  }
  if (opt.vl_utils == VlUtilsVersion::k1_2)
    AskCrossPageTables(results, first_global, backend, &model_pages, &page_inputs);
  AssembleOptions names;
  names.version_name = opt.version_name;
  const int total = static_cast<int>(results.size());
  names.image_path = [&](const CropRequest& c) {
    const bool known = c.page_idx >= 0 && c.page_idx < total;
    return CropFileName(c.span_type, known ? results[c.page_idx].md5 : std::string(), c.page_idx, c.bbox);
  };
  const std::string base = rep.output_dir + "/" + rep.name;
  MINERU_RETURN_IF_ERROR(WriteStringToFile(base + "_model.json", DumpJson(ModelJson(model_pages))));
  if (opt.vl_utils == VlUtilsVersion::k1_2) {
    return WriteOutputsV34(base, model_pages, page_inputs, names.image_path, rep.output_dir + "/images");
  }
  Json middle = MiddleJson(page_inputs, names);
  MINERU_RETURN_IF_ERROR(WriteStringToFile(base + "_middle.json", DumpJson(middle)));
  MINERU_RETURN_IF_ERROR(
      WriteStringToFile(base + "_content_list.json", DumpJson(ContentListFromMiddle(middle, "images"))));
  return WriteStringToFile(base + ".md", MarkdownFromMiddle(middle));
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
