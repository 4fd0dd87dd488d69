#include "model/cuda/vision_encoder_cuda.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <iterator>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_ops.h"

namespace mineru {

namespace cu = kernels::cuda;

namespace {

// Runs `launch` (which queues work on `stream` and returns its Status) as one op of `profile`:
// with a profile, the timer spans the launch and a wait for the stream, so it measures the op's
// GPU time (the stream is idle when it starts: the op before waited too). Without one, it only
// launches.
template <typename F>
Status Timed(OpProfile* profile, VisionOp op, double flops, const cu::CudaStream& stream, F&& launch) {
  if (profile == nullptr) return launch();
  OpTimer t(profile, op, flops);
  MINERU_RETURN_IF_ERROR(launch());
  return stream.Synchronize();
}

Status UploadBlock(const VisionBlockWeights& b, CudaPrecision p, const kernels::KernelConfig& k,
                   CudaVisionBlock* out) {
  MINERU_ASSIGN_OR_RETURN(out->norm1_w, UploadFloats(b.norm1_w));
  MINERU_ASSIGN_OR_RETURN(out->norm1_b, UploadFloats(b.norm1_b));
  MINERU_ASSIGN_OR_RETURN(out->norm2_w, UploadFloats(b.norm2_w));
  MINERU_ASSIGN_OR_RETURN(out->norm2_b, UploadFloats(b.norm2_b));
  MINERU_ASSIGN_OR_RETURN(out->qkv, UploadMatrix(b.qkv, p, k));
  MINERU_ASSIGN_OR_RETURN(out->qkv_b, UploadFloats(b.qkv_b));
  MINERU_ASSIGN_OR_RETURN(out->proj, UploadMatrix(b.proj, p, k));
  MINERU_ASSIGN_OR_RETURN(out->proj_b, UploadFloats(b.proj_b));
  MINERU_ASSIGN_OR_RETURN(out->fc1, UploadMatrix(b.fc1, p, k));
  MINERU_ASSIGN_OR_RETURN(out->fc1_b, UploadFloats(b.fc1_b));
  MINERU_ASSIGN_OR_RETURN(out->fc2, UploadMatrix(b.fc2, p, k));
  MINERU_ASSIGN_OR_RETURN(out->fc2_b, UploadFloats(b.fc2_b));
  return Status::Ok();
}

size_t BlockBytes(const CudaVisionBlock& b) {
  size_t n = 0;
  for (const cu::DeviceBuffer* v :
       {&b.norm1_w, &b.norm1_b, &b.norm2_w, &b.norm2_b, &b.qkv_b, &b.proj_b, &b.fc1_b, &b.fc2_b}) {
    n += v->size();
  }
  for (const DeviceMatrix* m : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) n += m->buf.size();
  return n;
}

// The weights' shapes against the config (a mismatch would read past a device buffer).
Status CheckShapes(const VisionConfig& c, const VisionWeights& w) {
  const int64_t E = c.embed_dim, M = c.mlp_dim, ME = E * c.merge_unit();
  auto is = [](const WeightView& v, int64_t rows, int64_t cols) { return v.rows == rows && v.cols == cols; };
  bool ok = is(w.patch_embed, E, c.patch_dim()) && is(w.merger_fc1, ME, ME) &&
            is(w.merger_fc2, c.out_hidden_size, ME) && static_cast<int>(w.blocks.size()) == c.depth;
  for (const VisionBlockWeights& b : w.blocks) {
    ok = ok && is(b.qkv, 3 * E, E) && is(b.proj, E, E) && is(b.fc1, M, E) && is(b.fc2, E, M);
  }
  auto len = [](const std::vector<float>& v, int64_t n) { return static_cast<int64_t>(v.size()) == n; };
  ok = ok && len(w.merger_ln_w, E) && len(w.merger_ln_b, E) && len(w.merger_fc1_b, ME) &&
       len(w.merger_fc2_b, c.out_hidden_size);
  for (const VisionBlockWeights& b : w.blocks) {
    ok = ok && len(b.norm1_w, E) && len(b.norm1_b, E) && len(b.norm2_w, E) && len(b.norm2_b, E) &&
         len(b.qkv_b, 3 * E) && len(b.proj_b, E) && len(b.fc1_b, M) && len(b.fc2_b, E);
  }
  if (!ok)
    return InvalidArgumentError("CudaVisionEncoder: the vision weights do not have the config's shapes");
  if (c.spatial_merge_size <= 0)
    return InvalidArgumentError("CudaVisionEncoder: spatial_merge_size must be positive");
  if (E <= 0 || c.num_heads <= 0 || E % c.num_heads != 0 || c.head_dim() % 4 != 0) {
    return InvalidArgumentError("CudaVisionEncoder: embed_dim must split into heads of a multiple of 4");
  }
  return Status::Ok();
}

}  // namespace

// One pass: its shape, and where its inputs are on the device.
struct CudaVisionEncoder::Pass {
  int64_t P = 0, frames = 0, max_frame = 0;
  int64_t positions = 0;            // rows of the RoPE frequency tables (the longest side)
  std::vector<int32_t> cu_seqlens;  // [frames + 1] patch offsets of the frames (host)
  const Slot* in = nullptr;         // the pass's inputs on the device
};

StatusOr<std::unique_ptr<CudaVisionEncoder>> CudaVisionEncoder::Create(const VisionConfig& config,
                                                                       const VisionWeights& weights,
                                                                       const kernels::KernelConfig& kernels,
                                                                       CudaVisionOptions options) {
  MINERU_RETURN_IF_ERROR(CheckShapes(config, weights));
  if (options.mlp_chunk_rows < 1)
    return InvalidArgumentError("CudaVisionEncoder: mlp_chunk_rows must be >= 1");
  std::unique_ptr<CudaVisionEncoder> e(new CudaVisionEncoder(config, options));
  MINERU_ASSIGN_OR_RETURN(e->stream_, cu::CudaStream::Create());
  MINERU_ASSIGN_OR_RETURN(e->gemm_, cu::GemmHandle::Create());
  MINERU_ASSIGN_OR_RETURN(e->upload_, cu::StagedUpload::Create(size_t{8} << 20, 4, options.host_pool));
  for (Slot& slot : e->slots_) {
    MINERU_ASSIGN_OR_RETURN(slot.done, cu::CudaEvent::Create());
  }
  const CudaPrecision p = options.precision;
  CudaVisionWeights& w = e->w_;
  MINERU_ASSIGN_OR_RETURN(w.patch_embed, UploadMatrix(weights.patch_embed, p, kernels));
  w.blocks.resize(weights.blocks.size());
  for (size_t i = 0; i < weights.blocks.size(); ++i) {
    MINERU_RETURN_IF_ERROR(UploadBlock(weights.blocks[i], p, kernels, &w.blocks[i]));
    w.bytes += BlockBytes(w.blocks[i]);
  }
  MINERU_ASSIGN_OR_RETURN(w.merger_ln_w, UploadFloats(weights.merger_ln_w));
  MINERU_ASSIGN_OR_RETURN(w.merger_ln_b, UploadFloats(weights.merger_ln_b));
  MINERU_ASSIGN_OR_RETURN(w.merger_fc1, UploadMatrix(weights.merger_fc1, p, kernels));
  MINERU_ASSIGN_OR_RETURN(w.merger_fc1_b, UploadFloats(weights.merger_fc1_b));
  MINERU_ASSIGN_OR_RETURN(w.merger_fc2, UploadMatrix(weights.merger_fc2, p, kernels));
  MINERU_ASSIGN_OR_RETURN(w.merger_fc2_b, UploadFloats(weights.merger_fc2_b));
  w.bytes += w.patch_embed.buf.size() + w.merger_ln_w.size() + w.merger_ln_b.size() +
             w.merger_fc1.buf.size() + w.merger_fc1_b.size() + w.merger_fc2.buf.size() +
             w.merger_fc2_b.size();
  return e;
}

size_t CudaVisionEncoder::activation_bytes() const {
  size_t n = 0;
  for (const GrowingBuffer* b : {&pix_, &cos_, &sin_, &x_, &ln_, &qkv_, &hidden_, &out_}) n += b->size();
  for (const Slot& slot : slots_) {
    for (const GrowingBuffer* b : {&slot.pixels, &slot.freq, &slot.hw, &slot.cu_seqlens}) n += b->size();
  }
  return n;
}

CudaVisionEncoder::~CudaVisionEncoder() { Drain(); }

void CudaVisionEncoder::Drain() {
  // An encoder that failed in Create may lack either stream (a null handle would wait for the
  // legacy default stream instead).
  if (upload_.stream() != nullptr) (void)upload_.Synchronize();
  if (stream_.handle() != nullptr) (void)stream_.Synchronize();
}

void CudaVisionEncoder::ReleaseActivations() {
  Drain();
  for (GrowingBuffer* b : {&pix_, &cos_, &sin_, &x_, &ln_, &qkv_, &hidden_, &out_}) b->Release();
  for (Slot& slot : slots_) {
    for (GrowingBuffer* b : {&slot.pixels, &slot.freq, &slot.hw, &slot.cu_seqlens}) b->Release();
    slot.out = cu::PinnedBuffer();
    slot.ticket = -1;
  }
}

template <typename T>
Status CudaVisionEncoder::Block(const CudaVisionBlock& b, Pass& pass, OpProfile* profile) {
  const int64_t P = pass.P, E = c_.embed_dim, M = c_.mlp_dim, H = c_.num_heads, D = c_.head_dim();
  const cu::StreamHandle s = stream_.handle();
  T* x = x_.as<T>();
  T* ln = ln_.as<T>();
  T* qkv = qkv_.as<T>();
  const double rows = static_cast<double>(P);
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kNorm, 0, stream_, [&] {
    return cu::LayerNorm(x, P, E, b.norm1_w.as<float>(), b.norm1_b.as<float>(), c_.layer_norm_eps, ln, s);
  }));
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kQkv, 2.0 * rows * E * 3 * E, stream_, [&] {
    return cu::MatMul(gemm_, ln, P, E, b.qkv.as<T>(), 3 * E, b.qkv_b.as<float>(), qkv, s);
  }));
  // q and k are adjacent in each [q | k | v] row: 2H heads of D values from the row's start.
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kRope, 0, stream_, [&] {
    return cu::RopeRotateHalfRows(qkv, P, 3 * E, 2 * H, D, cos_.as<float>(), sin_.as<float>(), s);
  }));
  cu::VarlenAttentionShape a;
  a.num_seqs = pass.frames;
  a.cu_seqlens_q = a.cu_seqlens_k = pass.in->cu_seqlens.as<int32_t>();
  a.max_seqlen_q = pass.max_frame;
  a.num_heads = a.num_kv_heads = H;
  a.head_dim = D;
  a.q_stride = a.k_stride = a.v_stride = 3 * E;
  a.out_stride = E;
  a.scale = 1.0f / std::sqrt(static_cast<float>(D));
  a.kernel = o_.attention;
  double attn_flops = 0;
  for (size_t f = 0; f + 1 < pass.cu_seqlens.size(); ++f) {
    const double n = pass.cu_seqlens[f + 1] - pass.cu_seqlens[f];
    attn_flops += 4.0 * n * n * E;
  }
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kAttention, attn_flops, stream_,
                               [&] { return cu::VarlenAttention(qkv, qkv + E, qkv + 2 * E, a, ln, s); }));
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kOut, 2.0 * rows * E * E, stream_, [&] {
    return cu::MatMul(gemm_, ln, P, E, b.proj.as<T>(), E, b.proj_b.as<float>(), qkv, s);
  }));
  MINERU_RETURN_IF_ERROR(
      Timed(profile, VisionOp::kResidual, 0, stream_, [&] { return cu::AddInPlace(x, qkv, P * E, s); }));
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kNorm, 0, stream_, [&] {
    return cu::LayerNorm(x, P, E, b.norm2_w.as<float>(), b.norm2_b.as<float>(), c_.layer_norm_eps, ln, s);
  }));
  T* hidden = hidden_.as<T>();
  for (int64_t r0 = 0; r0 < P; r0 += o_.mlp_chunk_rows) {
    const int64_t n = std::min(o_.mlp_chunk_rows, P - r0);
    MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kFc1, 2.0 * n * E * M, stream_, [&] {
      return cu::MatMul(gemm_, ln + r0 * E, n, E, b.fc1.as<T>(), M, b.fc1_b.as<float>(), hidden, s);
    }));
    MINERU_RETURN_IF_ERROR(
        Timed(profile, VisionOp::kGelu, 0, stream_, [&] { return cu::QuickGelu(hidden, n * M, s); }));
    MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kFc2, 2.0 * n * M * E, stream_, [&] {
      return cu::MatMul(gemm_, hidden, n, M, b.fc2.as<T>(), E, b.fc2_b.as<float>(), qkv + r0 * E, s);
    }));
  }
  return Timed(profile, VisionOp::kResidual, 0, stream_, [&] { return cu::AddInPlace(x, qkv, P * E, s); });
}

// LayerNorm per patch, then 4 consecutive patches (one 2x2 group) as one row of the merger's MLP.
template <typename T>
Status CudaVisionEncoder::Merge(Pass& pass, OpProfile* profile) {
  const int64_t E = c_.embed_dim, ME = E * c_.merge_unit(), H = c_.out_hidden_size;
  const int64_t n = pass.P / c_.merge_unit();
  const cu::StreamHandle s = stream_.handle();
  T* ln = ln_.as<T>();
  T* mid = qkv_.as<T>();  // [n, ME] = [P, E] elements
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kNorm, 0, stream_, [&] {
    return cu::LayerNorm(x_.as<T>(), pass.P, E, w_.merger_ln_w.as<float>(), w_.merger_ln_b.as<float>(), 1e-6f,
                         ln, s);
  }));
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kMerger, 2.0 * n * ME * ME, stream_, [&] {
    return cu::MatMul(gemm_, ln, n, ME, w_.merger_fc1.as<T>(), ME, w_.merger_fc1_b.as<float>(), mid, s);
  }));
  MINERU_RETURN_IF_ERROR(
      Timed(profile, VisionOp::kGelu, 0, stream_, [&] { return cu::GeluErf(mid, n * ME, s); }));
  return Timed(profile, VisionOp::kMerger, 2.0 * n * ME * H, stream_, [&] {
    return cu::MatMul(gemm_, mid, n, ME, w_.merger_fc2.as<T>(), H, w_.merger_fc2_b.as<float>(),
                      out_.as<float>(), s);
  });
}

template <typename T>
Status CudaVisionEncoder::Run(Pass& pass, OpProfile* profile) {
  const int64_t P = pass.P, E = c_.embed_dim, pd = c_.patch_dim();
  const cu::StreamHandle s = stream_.handle();
  // fp32 reads the uploaded pixels; bf16 casts them first.
  const T* pixels = std::is_same_v<T, float> ? pass.in->pixels.as<T>() : pix_.as<T>();
  if constexpr (!std::is_same_v<T, float>) {
    MINERU_RETURN_IF_ERROR(cu::CastF32ToBf16(pass.in->pixels.as<float>(), P * pd, pix_.as<T>(), s));
    if (profile != nullptr) MINERU_RETURN_IF_ERROR(stream_.Synchronize());  // the first timer starts idle
  }
  // The pass's RoPE tables, gathered from its frequencies and positions (counted with the RoPE).
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kRope, 0, stream_, [&] {
    const int64_t F = pass.positions * (c_.head_dim() / 4);
    const float* freq = pass.in->freq.as<float>();
    return cu::RopeTables2D(freq, freq + F, pass.positions, pass.in->hw.as<int32_t>(), P, c_.head_dim(),
                            cos_.as<float>(), sin_.as<float>(), s);
  }));
  MINERU_RETURN_IF_ERROR(Timed(profile, VisionOp::kPatchEmbed, 2.0 * P * pd * E, stream_, [&] {
    return cu::MatMul(gemm_, pixels, P, pd, w_.patch_embed.as<T>(), E, nullptr, x_.as<T>(), s);
  }));
  for (const CudaVisionBlock& b : w_.blocks) MINERU_RETURN_IF_ERROR(Block<T>(b, pass, profile));
  return Merge<T>(pass, profile);
}

Status CudaVisionEncoder::Plan(const std::vector<ImageGrid>& grids, int64_t num_patches, Pass* pass) const {
  const int merge = c_.spatial_merge_size;
  pass->cu_seqlens.assign(1, 0);
  int64_t total = 0;
  for (const ImageGrid& g : grids) {
    if (g.t <= 0 || g.h <= 0 || g.w <= 0 || g.h % merge || g.w % merge) {
      return InvalidArgumentError("image grid must be positive and divisible by the merge size");
    }
    total += g.num_patches();
    if (total > INT32_MAX) return InvalidArgumentError("too many patches for one GPU pass");
    pass->max_frame = std::max(pass->max_frame, g.h * g.w);
    pass->positions = std::max({pass->positions, g.h, g.w});
    for (int64_t t = 0; t < g.t; ++t) pass->cu_seqlens.push_back(pass->cu_seqlens.back() + g.h * g.w);
  }
  if (total != num_patches) return InvalidArgumentError("pixel_values rows do not match the image grids");
  pass->P = num_patches;
  pass->frames = static_cast<int64_t>(pass->cu_seqlens.size()) - 1;
  return Status::Ok();
}

Status CudaVisionEncoder::ReserveFor(const Pass& pass, Slot& slot) {
  const int64_t P = pass.P, E = c_.embed_dim, D = c_.head_dim(), pd = c_.patch_dim();
  const int64_t out_floats = P / c_.merge_unit() * c_.out_hidden_size;
  const size_t eb = CudaElementBytes(o_.precision);
  const auto bytes = [](int64_t n, size_t each) { return static_cast<size_t>(n) * each; };
  const std::pair<GrowingBuffer*, size_t> shared[] = {
      {&pix_, o_.precision == CudaPrecision::kBf16 ? bytes(P * pd, eb) : 0},
      {&x_, bytes(P * E, eb)},
      {&ln_, bytes(P * E, eb)},
      {&qkv_, bytes(P * 3 * E, eb)},
      {&hidden_, bytes(std::min(P, o_.mlp_chunk_rows) * c_.mlp_dim, eb)},
      {&out_, bytes(out_floats, 4)},
      {&cos_, bytes(P * D, 4)},
      {&sin_, bytes(P * D, 4)}};
  // The other slot's pass may still be queued on the stream, reading these: growing one frees
  // its old allocation, so the stream is first waited for (the runtime does not promise that
  // cudaFree waits for queued work).
  const bool grows = std::any_of(std::begin(shared), std::end(shared),
                                 [](const auto& b) { return b.first->size() < b.second; });
  if (grows) MINERU_RETURN_IF_ERROR(stream_.Synchronize());
  for (const auto& [buf, n] : shared) MINERU_RETURN_IF_ERROR(buf->Reserve(n));
  MINERU_RETURN_IF_ERROR(slot.pixels.Reserve(bytes(P * pd, 4)));
  MINERU_RETURN_IF_ERROR(slot.freq.Reserve(bytes(2 * pass.positions * (D / 4), 4)));
  MINERU_RETURN_IF_ERROR(slot.hw.Reserve(bytes(2 * P, 4)));
  MINERU_RETURN_IF_ERROR(slot.cu_seqlens.Reserve(bytes(pass.frames + 1, 4)));
  if (slot.out.size() < bytes(out_floats, 4)) {
    slot.out = cu::PinnedBuffer();  // the old one first: pinned memory is scarce
    MINERU_ASSIGN_OR_RETURN(slot.out, cu::PinnedBuffer::Allocate(bytes(out_floats, 4)));
  }
  slot.out_floats = out_floats;
  return Status::Ok();
}

Status CudaVisionEncoder::Queue(const float* pixel_values, const std::vector<ImageGrid>& grids, Pass& pass,
                                Slot& slot, OpProfile* profile) {
  const int64_t P = pass.P, pd = c_.patch_dim();
  // The RoPE tables go up as what they are gathered from: a few KiB instead of [P, D] twice.
  std::vector<float> freq_cos, freq_sin;
  std::vector<int32_t> hw;
  VisionRopeFrequencies(grids, static_cast<int>(c_.head_dim()), &freq_cos, &freq_sin);
  VisionRopePositions(grids, c_.spatial_merge_size, &hw);
  const cu::StreamHandle s = stream_.handle();
  const auto bytes = [](int64_t n) { return static_cast<size_t>(n) * 4; };
  // The slot's inputs were last read by the pass Collect waited for; ordering the copies after
  // that pass's end on the device as well costs nothing.
  MINERU_RETURN_IF_ERROR(slot.done.MakeWait(upload_.stream()));
  MINERU_RETURN_IF_ERROR(upload_.Copy(slot.pixels.data(), pixel_values, bytes(P * pd)));
  const int64_t F = static_cast<int64_t>(freq_cos.size());  // positions * D / 4
  MINERU_RETURN_IF_ERROR(upload_.Copy(slot.freq.data(), freq_cos.data(), bytes(F)));
  MINERU_RETURN_IF_ERROR(upload_.Copy(slot.freq.as<float>() + F, freq_sin.data(), bytes(F)));
  MINERU_RETURN_IF_ERROR(upload_.Copy(slot.hw.data(), hw.data(), bytes(2 * P)));
  MINERU_RETURN_IF_ERROR(
      upload_.Copy(slot.cu_seqlens.data(), pass.cu_seqlens.data(), bytes(pass.frames + 1)));
  MINERU_RETURN_IF_ERROR(upload_.OrderBefore(s));
  if (profile != nullptr) MINERU_RETURN_IF_ERROR(stream_.Synchronize());  // the first op's timer starts idle
  pass.in = &slot;
  MINERU_RETURN_IF_ERROR(o_.precision == CudaPrecision::kBf16 ? Run<cu::Bf16>(pass, profile)
                                                              : Run<float>(pass, profile));
  MINERU_RETURN_IF_ERROR(out_.buffer().CopyToHostAsync(slot.out.data(), bytes(slot.out_floats), 0, s));
  return slot.done.Record(s);
}

StatusOr<int64_t> CudaVisionEncoder::SubmitPass(const float* pixel_values, int64_t num_patches,
                                                const std::vector<ImageGrid>& grids, OpProfile* profile) {
  Pass pass;
  MINERU_RETURN_IF_ERROR(Plan(grids, num_patches, &pass));
  if (num_patches > 0 && pixel_values == nullptr) return InvalidArgumentError("pixel_values is null");
  Slot& slot = slots_[next_ticket_ % kSlots];
  if (slot.ticket >= 0) {
    return InvalidArgumentError("CudaVisionEncoder: " + std::to_string(kSlots) +
                                " passes are outstanding; collect one first");
  }
  if (num_patches > 0) {
    Status st;
    try {
      st = ReserveFor(pass, slot);
      if (st.ok()) st = Queue(pixel_values, grids, pass, slot, profile);
    } catch (const std::bad_alloc&) {  // the host's tables
      st = OutOfMemoryError("staging " + std::to_string(num_patches) + " image patches");
    }
    if (!st.ok()) {
      Drain();  // nothing queued outlives a failed call (or reads a buffer a later call regrows)
      return st;
    }
  } else {
    slot.out_floats = 0;
  }
  slot.ticket = next_ticket_++;
  return slot.ticket;
}

StatusOr<int64_t> CudaVisionEncoder::Submit(const float* pixel_values, int64_t num_patches,
                                            const std::vector<ImageGrid>& grids) {
  return SubmitPass(pixel_values, num_patches, grids, nullptr);
}

StatusOr<std::vector<float>> CudaVisionEncoder::Collect(int64_t ticket) {
  if (ticket < 0) return InvalidArgumentError("CudaVisionEncoder: no such pass");
  Slot& slot = slots_[ticket % kSlots];
  if (slot.ticket != ticket) return InvalidArgumentError("CudaVisionEncoder: no such pass outstanding");
  slot.ticket = -1;
  if (slot.out_floats == 0) return std::vector<float>();
  // A fault in any op of the pass (or of the pass before it on the stream) is reported here.
  MINERU_RETURN_IF_ERROR(slot.done.Synchronize());
  const float* out = slot.out.as<float>();
  try {
    return std::vector<float>(out, out + slot.out_floats);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("holding the output of " + std::to_string(slot.out_floats) + " floats");
  }
}

StatusOr<std::vector<float>> CudaVisionEncoder::Encode(const float* pixel_values, int64_t num_patches,
                                                       const std::vector<ImageGrid>& grids,
                                                       OpProfile* profile) {
  MINERU_ASSIGN_OR_RETURN(const int64_t ticket, SubmitPass(pixel_values, num_patches, grids, profile));
  return Collect(ticket);
}

}  // namespace mineru
