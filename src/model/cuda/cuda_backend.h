// model/cuda/cuda_backend.h — the CUDA ModelBackend (model/backend.h): the ViT and the decoder of
// model/cuda on GPU 0, with the paged KV cache in GPU memory.
//
// GPU memory is budgeted once, at creation: the weights are uploaded, a reserve is kept for the
// activations of the largest step and vision pass the engine will run, and the KV cache takes
// what the budget (DeviceOptions::gpu_memory) leaves, allocated whole. Its block ids are the
// engine's BlockPool's, which the engine creates with num_blocks() blocks of bookkeeping only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/cuda/device.h"
#include "model/backend.h"
#include "model/cuda/decoder_cuda.h"
#include "model/cuda/logits_reader.h"
#include "model/cuda/vision_encoder_cuda.h"
#include "model/qwen2vl.h"

namespace mineru {

// DeviceOptions' --gpu-attention as the kernels' VarlenKernel.
kernels::cuda::VarlenKernel VarlenKernelFor(GpuAttention a);

struct CudaBackendConfig {
  DeviceOptions device;             // gpu_fp32, gpu_memory, gpu_max_patches
  int block_size = 16;              // tokens per KV block (the engine's)
  int kv_blocks = 0;                // > 0: exactly this many blocks (an error if they do not fit)
  int64_t max_batch_tokens = 0;     // the engine's step budget (sizes the activation reserve)
  ThreadPool* host_pool = nullptr;  // borrowed (the engine's): host-side copies (CudaVisionOptions)
  int64_t max_seqs = 0;             // the engine's sequences per step
};

class CudaBackend : public ModelBackend {
 public:
  // Unavailable without a usable GPU; ResourceExhausted when the weights and the reserve leave no
  // room for a KV cache under the budget (the message says how much was needed and available).
  static StatusOr<std::unique_ptr<CudaBackend>> Create(const Qwen2VLModel& model,
                                                       const CudaBackendConfig& config);

  StatusOr<std::vector<float>> EncodeImages(std::vector<float>&& pixels,
                                            const std::vector<ImageGrid>& grids) override;
  // Pipelined: pass i + 1's pixels go up (CudaVisionEncoder::Submit) while pass i computes.
  void EncodeImagePasses(std::vector<ImagePass>* passes,
                         std::vector<StatusOr<std::vector<float>>>* out) override;
  // Leaves the logits on the device (queued, not waited for).
  Status Forward(std::vector<float>* embeds, const std::vector<BatchSegment>& segments,
                 const std::vector<int32_t>& rows) override;
  // Candidates are picked on the device; whole rows are copied (CudaLogitsReader).
  Status ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) override;
  bool logits_on_device() const override { return true; }
  int64_t max_patches_per_pass() const override { return max_patches_; }
  void ReleaseScratch() override { vision_->ReleaseActivations(); }
  std::string Describe() const override;

  int num_blocks() const { return kv_.num_blocks(); }
  size_t weight_bytes() const { return vision_->weight_bytes() + decoder_->weight_bytes(); }
  size_t kv_bytes() const { return kv_.bytes(); }

  // The activation reserve of a step of max_batch_tokens rows and a vision pass of max_patches
  // patches, in bytes (what Create keeps out of the KV cache's share). Pure: needs no device.
  static size_t ActivationReserve(const ModelConfig& config, int64_t max_batch_tokens, int64_t max_seqs,
                                  int64_t max_patches, int block_size, CudaPrecision p);

 private:
  CudaBackend() = default;

  kernels::cuda::CudaDeviceInfo device_;
  CudaPrecision precision_ = CudaPrecision::kBf16;
  int64_t max_patches_ = 0;
  bool graphs_ = false;                           // decode steps as CUDA graphs (DeviceOptions::gpu_graphs)
  GpuAttention attention_ = GpuAttention::kAuto;  // DeviceOptions::gpu_attention
  bool split_ = false;                            // DeviceOptions::gpu_decode_split
  std::unique_ptr<CudaVisionEncoder> vision_;
  std::unique_ptr<CudaDecoder> decoder_;
  CudaKvCache kv_;
  CudaLogitsReader logits_;
};

}  // namespace mineru
