#include "model/cuda/cuda_backend.h"

#include <algorithm>
#include <new>
#include <utility>

namespace mineru {

namespace cu = kernels::cuda;

namespace {

// Patches per vision pass by default: ~25 KB of activations each in bf16, so 32,768 patches (six
// 1036x1036 images) hold ~0.8 GB, and one pass fills the GPU's SMs many times over.
constexpr int64_t kDefaultMaxPatches = 32768;
// Kept free beyond the estimate: cuBLASLt workspaces, the CUDA context's own allocations,
// fragmentation.
constexpr size_t kSlackBytes = size_t{768} << 20;
// Decode steps of up to this many sequences run as CUDA graphs when the engine does not say.
constexpr int64_t kDefaultGraphRows = 256;

}  // namespace

size_t CudaBackend::ActivationReserve(const ModelConfig& config, int64_t max_batch_tokens, int64_t max_seqs,
                                      int64_t max_patches, int block_size, CudaPrecision p) {
  const TextConfig& t = config.text;
  const VisionConfig& v = config.vision;
  const size_t e = CudaElementBytes(p);
  const int64_t QD = int64_t{t.num_heads} * t.head_dim, KD = int64_t{t.num_kv_heads} * t.head_dim;
  // Decoder, per row: fp32 embeds, x, normed, qkv, attn, gate, up, hidden; the RoPE tables; the
  // logits of up to max_seqs rows; the gathered contexts of a step's prefill chunks (bounded here
  // by 4 blocks of context per row of the step plus one block per sequence; a step of chunks over
  // longer contexts takes more, from the slack).
  const int64_t T = std::max<int64_t>(1, max_batch_tokens);
  const size_t per_row = static_cast<size_t>(t.hidden_size) * (4 + 3 * e) +
                         static_cast<size_t>(QD + 2 * KD) * e + static_cast<size_t>(QD) * e +
                         static_cast<size_t>(t.intermediate_size) * 2 * e +
                         static_cast<size_t>(t.head_dim) * 8;
  const int64_t ctx_rows = T * 4 * block_size + std::max<int64_t>(1, max_seqs) * block_size;
  const size_t decoder = static_cast<size_t>(T) * per_row + static_cast<size_t>(ctx_rows * KD) * 2 * e +
                         static_cast<size_t>(std::max<int64_t>(1, max_seqs)) * t.vocab_size * (4 + e);
  // Vision, per patch: two passes' fp32 pixels and positions (one pass computes while the next
  // one's go up: CudaVisionEncoder::Submit), the pixels as T, the RoPE tables, x, ln, qkv, a
  // quarter of an fp32 output row; and the MLP chunk.
  const int64_t P = std::max<int64_t>(1, max_patches);
  const size_t per_patch = static_cast<size_t>(v.patch_dim()) * (8 + e) +
                           static_cast<size_t>(v.embed_dim) * 5 * e + static_cast<size_t>(v.head_dim()) * 8 +
                           16 + static_cast<size_t>(v.out_hidden_size);
  const size_t vision = static_cast<size_t>(P) * per_patch +
                        static_cast<size_t>(std::min<int64_t>(P, 8192)) * static_cast<size_t>(v.mlp_dim) * e;
  return decoder + vision + kSlackBytes;
}

cu::VarlenKernel VarlenKernelFor(GpuAttention a) {
  switch (a) {
    case GpuAttention::kMma:
      return cu::VarlenKernel::kTensorCoreMma;
    case GpuAttention::kMmaWide:
      return cu::VarlenKernel::kTensorCoreMmaWide;
    case GpuAttention::kWmma:
      return cu::VarlenKernel::kTensorCoreWmma;
    case GpuAttention::kSimt:
      return cu::VarlenKernel::kSimt;
    case GpuAttention::kAuto:
      break;
  }
  return cu::VarlenKernel::kAuto;
}

StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(const Qwen2VLModel& model,
                                                           const CudaBackendConfig& c) {
  if (c.block_size <= 0) return InvalidArgumentError("CudaBackend: block size must be positive");
  if (!(c.device.gpu_memory > 0)) return InvalidArgumentError("--gpu-memory must be positive");
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  MINERU_ASSIGN_OR_RETURN(b->device_, cu::ProbeUsableCudaDevice(0));
  b->precision_ = c.device.gpu_fp32 ? CudaPrecision::kF32 : CudaPrecision::kBf16;
  b->max_patches_ = c.device.gpu_max_patches > 0 ? c.device.gpu_max_patches : kDefaultMaxPatches;
  const int64_t total = b->device_.total_bytes, free_at_start = b->device_.free_bytes;
  const int64_t budget = c.device.gpu_memory <= 1.0 ? static_cast<int64_t>(c.device.gpu_memory * total)
                                                    : static_cast<int64_t>(c.device.gpu_memory);
  // Ours to use: the budget, less what other processes already hold of it.
  const int64_t ours = std::min(budget - (total - free_at_start), free_at_start);
  CudaVisionOptions vo;
  vo.precision = b->precision_;
  vo.attention = VarlenKernelFor(c.device.gpu_attention);
  vo.host_pool = c.host_pool;
  MINERU_ASSIGN_OR_RETURN(b->vision_, CudaVisionEncoder::Create(model.config().vision, model.weights().vision,
                                                                model.kernel_config(), vo));
  MINERU_ASSIGN_OR_RETURN(b->decoder_, CudaDecoder::Create(model.config().text, model.weights().text,
                                                           model.kernel_config(), b->precision_));
  const TextConfig& t = model.config().text;
  const int64_t kv_dim = int64_t{t.num_kv_heads} * t.head_dim;
  const size_t block_bytes = CudaKvCache::BlockBytes(c.block_size, t.num_layers, kv_dim, b->precision_);
  const size_t reserve = ActivationReserve(model.config(), c.max_batch_tokens, c.max_seqs, b->max_patches_,
                                           c.block_size, b->precision_);
  const int64_t left = ours - static_cast<int64_t>(b->weight_bytes() + reserve);
  // The cache allocates one block more than the engine's (its sink: CudaKvCache::sink_block()).
  int64_t blocks = c.kv_blocks > 0 ? c.kv_blocks : left / static_cast<int64_t>(block_bytes) - 1;
  blocks = std::min<int64_t>(blocks, INT32_MAX / std::max(1, c.block_size));
  if (blocks < 1 || (c.kv_blocks > 0 && static_cast<int64_t>((c.kv_blocks + 1) * block_bytes) > left)) {
    const auto mib = [](int64_t n) { return std::to_string(std::max<int64_t>(0, n) >> 20) + " MiB"; };
    const int64_t want = c.kv_blocks > 0 ? c.kv_blocks : 1;
    return ResourceExhaustedError(
        "GPU memory: the weights take " + mib(static_cast<int64_t>(b->weight_bytes())) +
        " and the activations need " + mib(static_cast<int64_t>(reserve)) + ", leaving " + mib(left) +
        " of the " + mib(ours) + " this process may use, for a KV cache of " + std::to_string(want) +
        " block(s) of " + mib(static_cast<int64_t>(block_bytes)) +
        " (raise --gpu-memory, lower --batch-tokens or use a larger GPU)");
  }
  b->attention_ = c.device.gpu_attention;
  b->split_ = c.device.gpu_decode_split;
  // The split decode attention's workspace is a few hundred KiB (it splits only steps whose blocks
  // leave SMs idle, into about two blocks an SM): within the reserve's slack.
  b->decoder_->EnableDecodeSplit(c.device.gpu_decode_split ? b->device_.sm_count : 0);
  b->decoder_->SetAttentionKernel(VarlenKernelFor(c.device.gpu_attention));
  b->graphs_ = c.device.gpu_graphs;
  if (c.device.gpu_graphs) b->decoder_->EnableGraphs(c.max_seqs > 0 ? c.max_seqs : kDefaultGraphRows);
  MINERU_ASSIGN_OR_RETURN(b->kv_, CudaKvCache::Allocate(static_cast<int>(blocks), c.block_size, t.num_layers,
                                                        kv_dim, b->precision_));
  return b;
}

StatusOr<std::vector<float>> CudaBackend::EncodeImages(std::vector<float>&& pixels,
                                                       const std::vector<ImageGrid>& grids) {
  const std::vector<float> owned = std::move(pixels);
  const int64_t pd = vision_->config().patch_dim();
  if (pd <= 0 || owned.size() % static_cast<size_t>(pd) != 0) {
    return InvalidArgumentError("pixel_values is not whole patches");
  }
  return vision_->Encode(owned.data(), static_cast<int64_t>(owned.size()) / pd, grids);
}

void CudaBackend::EncodeImagePasses(std::vector<ImagePass>* passes,
                                    std::vector<StatusOr<std::vector<float>>>* out) {
  const size_t pd = static_cast<size_t>(std::max<int64_t>(1, vision_->config().patch_dim()));
  const size_t n = passes->size();
  std::vector<int64_t> tickets;
  size_t collected = 0, next = 0;  // passes collected, and the next pass to submit
  const auto collect_before = [&](size_t end) {
    for (; collected < end; ++collected) {
      if (tickets[collected] >= 0)
        (*out)[collected] = vision_->Collect(std::exchange(tickets[collected], -1));
    }
  };
  try {
    out->assign(n, StatusOr<std::vector<float>>(std::vector<float>()));
    tickets.assign(n, -1);
    for (; next < n; ++next) {
      // Pass `next` takes the slot of pass next - kSlots: collected first (the pass before still
      // computes, so the GPU stays busy while the host stages this one).
      if (next >= CudaVisionEncoder::kSlots) collect_before(next + 1 - CudaVisionEncoder::kSlots);
      const std::vector<float> pixels = std::move((*passes)[next].pixels);  // freed once staged
      if (pixels.size() % pd != 0) {
        (*out)[next] = InvalidArgumentError("pixel_values is not whole patches");
        continue;
      }
      auto ticket =
          vision_->Submit(pixels.data(), static_cast<int64_t>(pixels.size() / pd), (*passes)[next].grids);
      if (ticket.ok()) {
        tickets[next] = *ticket;
      } else {
        (*out)[next] = ticket.status();
      }
    }
    collect_before(n);
  } catch (const std::bad_alloc&) {
    if (out->size() != n) throw;  // nothing answered yet: the runner fails the passes sent
    // No pass may stay outstanding (its slot would refuse every later Submit): those submitted
    // keep their answers; the one that ran out and those after it are out of memory.
    for (size_t i = collected; i < n; ++i) {
      if (i < tickets.size() && tickets[i] >= 0) {
        (*out)[i] = vision_->Collect(std::exchange(tickets[i], -1));
      } else if (i >= next) {
        (*out)[i] = PassOutOfMemory((*passes)[i].grids);
      }
    }
  }
}

Status CudaBackend::Forward(std::vector<float>* embeds, const std::vector<BatchSegment>& segments,
                            const std::vector<int32_t>& rows) {
  MINERU_RETURN_IF_ERROR(decoder_->ForwardBatch(embeds->data(), segments, &kv_));
  return decoder_->LogitsOnDevice(rows);
}

Status CudaBackend::ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) {
  const int64_t V = decoder_->config().vocab_size;
  Status st = CheckLogitsRequests(requests, static_cast<size_t>(decoder_->device_logits_rows()), V);
  // Waits for the pass whatever the answer (a step of prefill chunks samples nothing, and a fault
  // inside it is reported by its own step).
  if (st.ok())
    st = logits_.Read(decoder_->device_logits(), static_cast<int32_t>(V), requests, decoder_->stream(), out);
  Status done = decoder_->stream().Synchronize();
  MINERU_RETURN_IF_ERROR(st);
  return done;
}

std::string CudaBackend::Describe() const {
  return cu::DescribeCudaDevice(device_) + ", " + CudaPrecisionName(precision_) + ", KV cache " +
         std::to_string(kv_.num_blocks()) + " blocks (" + std::to_string(kv_.bytes() >> 20) +
         " MiB), weights " + std::to_string(weight_bytes() >> 20) + " MiB, attention " +
         cu::VarlenKernelName(VarlenKernelFor(attention_)) + ", decode split " + (split_ ? "on" : "off") +
         ", decode graphs " +
         (decoder_->graph_error().empty() ? (graphs_ ? "on" : "off")
                                          : "off (" + decoder_->graph_error() + ")");
}

}  // namespace mineru
