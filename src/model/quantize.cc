#include "model/quantize.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "model/config.h"

namespace mineru {

StatusOr<QuantType> ParseQuantName(const std::string& name) {
  if (name.empty() || name == "bf16" || name == "none" || name == "f32" || name == "f16")
    return QuantType::kNone;
  if (name == "q8" || name == "q8_0") return QuantType::kQ8_0;
  if (name == "q4" || name == "q4_0") return QuantType::kQ4_0;
  if (name == "q4_g128") return QuantType::kQ4_G128;
  return InvalidArgumentError("unknown --quant '" + name + "' (bf16, q8, q4, q4_g128)");
}

QuantType LmHeadQuant(QuantType t) { return t == QuantType::kNone ? t : QuantType::kQ8_0; }

QuantType VisionQuant(QuantType t) { return t == QuantType::kNone ? t : QuantType::kQ8_0; }

QuantType AttentionQuant(QuantType t) { return t == QuantType::kNone ? t : QuantType::kQ8_0; }

namespace {

// Calls fn(name, view) for every matrix that gets quantized, with the format for it.
void ForEachQuantizable(ModelWeights* w, QuantType t,
                        const std::function<void(const std::string&, WeightView*, QuantType)>& fn) {
  for (size_t i = 0; i < w->vision.blocks.size(); ++i) {
    VisionBlockWeights& b = w->vision.blocks[i];
    const std::string p = "visual.blocks." + std::to_string(i) + ".";
    fn(p + "attn.qkv.weight", &b.qkv, VisionQuant(t));
    fn(p + "attn.proj.weight", &b.proj, VisionQuant(t));
    fn(p + "mlp.fc1.weight", &b.fc1, VisionQuant(t));
    fn(p + "mlp.fc2.weight", &b.fc2, VisionQuant(t));
  }
  fn("visual.merger.mlp.0.weight", &w->vision.merger_fc1, VisionQuant(t));
  fn("visual.merger.mlp.2.weight", &w->vision.merger_fc2, VisionQuant(t));
  for (size_t i = 0; i < w->text.layers.size(); ++i) {
    DecoderLayerWeights& l = w->text.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    fn(p + "self_attn.q_proj.weight", &l.q, AttentionQuant(t));
    fn(p + "self_attn.k_proj.weight", &l.k, AttentionQuant(t));
    fn(p + "self_attn.v_proj.weight", &l.v, AttentionQuant(t));
    fn(p + "self_attn.o_proj.weight", &l.o, AttentionQuant(t));
    fn(p + "mlp.gate_proj.weight", &l.gate, t);
    fn(p + "mlp.up_proj.weight", &l.up, t);
    fn(p + "mlp.down_proj.weight", &l.down, t);
  }
  fn("lm_head.weight", &w->text.lm_head, LmHeadQuant(t));
}

// Gives quantized v panels packed once (kernels::PackIntegerPanels); false when it has none.
bool AttachPanels(ModelWeights* w, WeightView* v, const kernels::KernelContext& ctx) {
  if (!v->quantized() || v->panels != nullptr) return false;
  kernels::PackedPanels p = kernels::PackIntegerPanels(*v, ctx);
  if (p.empty()) return false;
  v->panels = p.data();
  w->AdoptPanels(std::move(p));
  return true;
}

// Gives v panels and, where its rows are a mapped file's pages (a pre-quantized file, a GGUF),
// gives those pages back: MatMul runs the panels at every m, and they take the rows' place in
// memory (same size; rows fault in again if anything reads them, e.g. a tied embedding's lookups).
void AttachPanelsInPlaceOfRows(ModelWeights* w, WeightView* v, const kernels::KernelContext& ctx) {
  const size_t bytes = static_cast<size_t>(v->rows) * kernels::QuantizedRowBytes(v->quant, v->cols);
  if (AttachPanels(w, v, ctx) && w->InMappedFile(v->data, bytes)) w->ReleaseMapped(v->data, bytes);
}

// The decoder's matrices run with a few rows per call (one per sequence in a decode step): on
// VNNI CPUs they get panels packed once, instead of repacked on every call (measured:
// repacking was a third of a 16-sequence decode step). Rows quantized at load (heap) stay: the
// panels double them, but other dispatch targets and the reference run on the rows.
void AttachDecoderPanels(ModelWeights* w, const kernels::KernelContext& ctx) {
  for (DecoderLayerWeights& l : w->text.layers) {
    for (WeightView* v : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
      AttachPanelsInPlaceOfRows(w, v, ctx);
  }
  AttachPanelsInPlaceOfRows(w, &w->text.lm_head, ctx);
}

// The vision encoder's matrices run with thousands of rows, always on the panels: where their
// rows are a mapped file's pages (a pre-quantized file), the panels are packed once here (the
// per-call repacking was ~5% of a 1036x1036 image) in place of the rows. Rows quantized at load
// are heap memory the panels would double: those are repacked per call.
void AttachVisionPanels(ModelWeights* w, const kernels::KernelContext& ctx) {
  std::vector<WeightView*> views = {&w->vision.merger_fc1, &w->vision.merger_fc2};
  for (VisionBlockWeights& b : w->vision.blocks) {
    for (WeightView* v : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) views.push_back(v);
  }
  for (WeightView* v : views) {
    if (!v->quantized()) continue;
    const size_t bytes = static_cast<size_t>(v->rows) * kernels::QuantizedRowBytes(v->quant, v->cols);
    if (w->InMappedFile(v->data, bytes)) AttachPanelsInPlaceOfRows(w, v, ctx);
  }
}

}  // namespace

Status QuantizeWeights(ModelWeights* w, QuantType t, const kernels::KernelContext& ctx) {
  if (t != QuantType::kNone) {
    ForEachQuantizable(w, t, [&](const std::string&, WeightView* v, QuantType q) {
      if (v->quantized() || q == QuantType::kNone) return;  // already (pre-quantized file, GGUF)
      kernels::QuantizedMatrix m = kernels::Quantize(*v, q, ctx.pool());
      // The dense bytes are not read again (a tied embedding table reads only its looked-up
      // rows, which fault back in): keep a quantized model's RSS at its quantized size.
      w->ReleaseMapped(v->data, static_cast<size_t>(v->rows * v->cols) * DTypeSize(v->dtype));
      *v = m.view();
      w->AdoptQuantized(std::move(m));
    });
  }
  if (kernels::IntegerPanelsAvailable(ctx.config())) {
    AttachDecoderPanels(w, ctx);
    AttachVisionPanels(w, ctx);
  }
  return Status::Ok();
}

namespace {

// The files of the model directory besides its weights (configuration, tokenizer, templates),
// copied as they are.
Status CopySideFiles(const std::string& src_dir, const std::string& out_dir) {
  for (const char* f : {"config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json",
                        "generation_config.json", "chat_template.json", "chat_template.jinja"}) {
    if (!FileExists(src_dir + "/" + f)) continue;
    MINERU_ASSIGN_OR_RETURN(std::string text, ReadFileToString(src_dir + "/" + f, 256u << 20));
    MINERU_RETURN_IF_ERROR(WriteStringToFile(out_dir + "/" + f, text));
  }
  return Status::Ok();
}

// One tensor of the written file: copied from the source (q == kNone) or quantized from `view`.
struct OutputTensor {
  std::string name;
  const TensorInfo* src;
  QuantType q;
  WeightView view;
  uint64_t bytes;
};

// Every tensor of the source is written; the quantizable matrices as U8 blocks. Matrices are
// recognised by their data pointer (unique per tensor). A tied head is written as its own
// quantized lm_head.weight, the dense embedding table stays.
std::vector<OutputTensor> PlanOutputTensors(ModelWeights* weights, QuantType t) {
  std::map<const void*, QuantType> quant_of;
  ForEachQuantizable(weights, t, [&](const std::string& name, WeightView* v, QuantType q) {
    if (name == "lm_head.weight" && weights->tied_lm_head) return;
    if (!v->quantized() && q != QuantType::kNone) quant_of[v->data] = q;
  });
  std::vector<OutputTensor> items;
  for (const TensorInfo* ti : weights->tensors()) {
    OutputTensor it{ti->name, ti, QuantType::kNone, {}, ti->nbytes};
    auto q = quant_of.find(ti->data);
    if (q != quant_of.end() && ti->shape.size() >= 2) {
      it.q = q->second;
      it.view = WeightView{ti->dtype, ti->data, ti->shape[0], ti->numel() / ti->shape[0]};
      it.bytes = static_cast<uint64_t>(it.view.rows) * kernels::QuantizedRowBytes(it.q, it.view.cols);
    }
    items.push_back(it);
  }
  if (weights->tied_lm_head) {
    const WeightView& e = weights->text.embed_tokens;
    const QuantType hq = LmHeadQuant(t);
    items.push_back({"lm_head.weight", nullptr, hq, e,
                     static_cast<uint64_t>(e.rows) * kernels::QuantizedRowBytes(hq, e.cols)});
  }
  return items;
}

// The safetensors header of the items (in order, with their quant formats in the metadata),
// padded with spaces to a multiple of 8 bytes.
std::string SafetensorsHeader(const std::vector<OutputTensor>& items, QuantType t) {
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json meta = {{"format", "pt"}, {"mineru.quant", kernels::QuantTypeName(t)}};
  uint64_t off = 0;
  for (const OutputTensor& it : items) {
    if (it.q == QuantType::kNone) {
      header[it.name] = {{"dtype", DTypeName(it.src->dtype)},
                         {"shape", it.src->shape},
                         {"data_offsets", {off, off + it.bytes}}};
    } else {
      const uint64_t row_bytes = kernels::QuantizedRowBytes(it.q, it.view.cols);
      header[it.name] = {{"dtype", "U8"},
                         {"shape", {it.view.rows, static_cast<int64_t>(row_bytes)}},
                         {"data_offsets", {off, off + it.bytes}}};
      meta["quant." + it.name] = kernels::QuantTypeName(it.q);
      meta["cols." + it.name] = std::to_string(it.view.cols);
    }
    off += it.bytes;
  }
  header["__metadata__"] = meta;
  std::string h = header.dump();
  while (h.size() % 8 != 0) h += ' ';
  return h;
}

// Writes the safetensors file `tmp`: the header, then each tensor's bytes (quantized 256 rows at
// a time).
Status WriteSafetensorsFile(const std::string& tmp, const std::string& h,
                            const std::vector<OutputTensor>& items) {
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot write " + tmp);
  const uint64_t hn = h.size();
  out.write(reinterpret_cast<const char*>(&hn), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  std::vector<uint8_t> buf;
  for (const OutputTensor& it : items) {
    if (it.q == QuantType::kNone) {
      out.write(reinterpret_cast<const char*>(it.src->data), static_cast<std::streamsize>(it.bytes));
      continue;
    }
    const int64_t rows_per_chunk = 256;
    const size_t row_bytes = kernels::QuantizedRowBytes(it.q, it.view.cols);
    for (int64_t r = 0; r < it.view.rows; r += rows_per_chunk) {
      const int64_t e = std::min(it.view.rows, r + rows_per_chunk);
      buf.resize(static_cast<size_t>(e - r) * row_bytes);
      kernels::QuantizeRows(it.view, it.q, r, e, buf.data());
      out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    }
  }
  out.close();
  if (!out) return IoError("write failed: " + tmp);
  return Status::Ok();
}

}  // namespace

Status WriteQuantizedModel(const std::string& src_dir, const std::string& out_dir, QuantType t,
                           ThreadPool* pool) {
  if (t == QuantType::kNone) return InvalidArgumentError("choose a quantized format (q8, q4, q4_0)");
  MINERU_ASSIGN_OR_RETURN(ModelConfig cfg, LoadModelConfig(src_dir + "/config.json"));
  MINERU_ASSIGN_OR_RETURN(auto weights, ModelWeights::Load(src_dir, cfg));
  MINERU_RETURN_IF_ERROR(MakeDirs(out_dir));
  MINERU_RETURN_IF_ERROR(CopySideFiles(src_dir, out_dir));
  const std::vector<OutputTensor> items = PlanOutputTensors(weights.get(), t);
  const std::string h = SafetensorsHeader(items, t);
  const std::string path = out_dir + "/model.safetensors", tmp = path + ".tmp";
  MINERU_RETURN_IF_ERROR(WriteSafetensorsFile(tmp, h, items));
  // A source that changed while it was read (lost pages read as zeros) must not become a model.
  if (Status same = weights->CheckFiles(); !same.ok()) {
    std::remove(tmp.c_str());
    return same;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return IoError("cannot rename " + tmp);
  (void)pool;
  return Status::Ok();
}

}  // namespace mineru
