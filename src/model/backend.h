// model/backend.h — where the model's two computations run: the seam between the engine (its
// scheduler, block tables, prefix and image caches and samplers: one code path) and a device.
//
// A ModelBackend encodes packed images and runs one packed decoder pass plus the LM head for the
// rows that sample. The CPU backend (model/cpu_backend.h) runs the model's own VisionEncoder and
// Decoder over the engine's BlockPool; the CUDA backend (model/cuda/cuda_backend.h, CUDA builds)
// runs model/cuda's encoder and decoder over a KV cache in GPU memory whose block ids are the
// same BlockPool's (kept there for bookkeeping only).
// One thread at a time (the engine's loop).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/decoder.h"
#include "model/vision_encoder.h"

namespace mineru {

enum class ComputeDevice { kCpu, kCuda };

// The attention kernel of the ViT and of the decoder's prefill on the GPU
// (kernels/cuda/attention.h's VarlenKernel): auto (the mma tensor-core form where it fits), or one
// form forced (mma2: mma with 32 query rows a warp; wmma: the earlier tensor-core form; simt: no
// tensor cores).
enum class GpuAttention { kAuto, kMma, kMmaWide, kWmma, kSimt };

// What `--device`, `--gpu-precision`, `--gpu-memory`, `--gpu-graphs`, `--gpu-attention` and
// `--gpu-decode-split` ask for.
struct DeviceOptions {
  ComputeDevice device = ComputeDevice::kCpu;
  bool gpu_fp32 = false;        // fp32 weights and activations on the GPU (tests); bf16 otherwise
  double gpu_memory = 0.9;      // (0, 1]: that share of the GPU's memory; > 1: that many bytes
  int64_t gpu_max_patches = 0;  // patches per vision pass on the GPU (0: the backend's default)
  bool gpu_graphs = true;       // decode steps as CUDA graphs (model/cuda/decoder_cuda.h)
  GpuAttention gpu_attention = GpuAttention::kAuto;
  bool gpu_decode_split = true;  // decode steps of few sequences split their contexts (flash-decoding)
};

// What sampling needs of one row of logits: the whole row, or candidates (engine/sampler.h's
// CandidateQuery): the raw logits of the `touched` ids and of the top_k most likely other tokens.
struct LogitsRequest {
  int top_k = 0;                                  // 0: the whole row; > 0: candidates
  const std::vector<int32_t>* touched = nullptr;  // with top_k > 0: ascending, distinct, in [0, vocab)
  // *touched, or no ids where it is null.
  const std::vector<int32_t>& touched_ids() const {
    static const std::vector<int32_t> kNone;
    return touched ? *touched : kNone;
  }
};
// The answer to one LogitsRequest.
struct RowLogits {
  float* row = nullptr;  // top_k == 0: the row [vocab], mutable, valid until the next Forward
  // top_k > 0: the candidates, ids ascending with their raw logits: every touched id, and the
  // top_k most likely untouched ones whose logits are not NaN (the lower id first on ties; all of
  // them where fewer exist).
  std::vector<int32_t> ids;
  std::vector<float> logits;
};

// InvalidArgument unless there are at most `rows` requests and every touched list is ascending,
// distinct and inside [0, vocab) (what a backend checks before it reads a row).
Status CheckLogitsRequests(const std::vector<LogitsRequest>& requests, size_t rows, int64_t vocab);

// Fills out->ids / out->logits from the touched ids with their logits and the top ids with
// theirs (disjoint; any order), ids ascending.
void MergeCandidates(const std::vector<int32_t>& touched, const float* touched_logits, const int32_t* top_ids,
                     const float* top_logits, size_t n_top, RowLogits* out);

// OutOfMemory "encoding <patches> image patches" for a vision pass over `grids`.
Status PassOutOfMemory(const std::vector<ImageGrid>& grids);

class ModelBackend {
 public:
  virtual ~ModelBackend() = default;

  // Embeddings [P / merge_unit, hidden] of the images of `grids`, packed in one pass (pixels
  // [P, patch_dim], consumed). Errors fail this pass's requests only.
  virtual StatusOr<std::vector<float>> EncodeImages(std::vector<float>&& pixels,
                                                    const std::vector<ImageGrid>& grids) = 0;
  // Several passes in order; (*out)[i] is what EncodeImages would answer for passes[i] (each
  // pass's pixels consumed). A device may overlap passes (one pass's pixels go up while the one
  // before computes); the default encodes them one after the other.
  struct ImagePass {
    std::vector<float> pixels;  // [P, patch_dim]
    std::vector<ImageGrid> grids;
  };
  // A pass that runs out of memory answers PassOutOfMemory (std::bad_alloc should not escape;
  // the runner still catches it and fails the passes it sent).
  virtual void EncodeImagePasses(std::vector<ImagePass>* passes,
                                 std::vector<StatusOr<std::vector<float>>>* out);
  // One packed decoder pass over `segments` (embeds [T, hidden], which the backend may overwrite),
  // then the logits [rows.size(), vocab] of the given rows of the pass, kept in the backend's
  // memory for ReadLogits until the next Forward. A failure leaves the cache rows of this pass
  // undefined (the engine fails the pass's sequences).
  virtual Status Forward(std::vector<float>* embeds, const std::vector<BatchSegment>& segments,
                         const std::vector<int32_t>& rows) = 0;
  // What sampling needs of the last Forward's logits: requests[i] is about its row i (rows[i] of
  // the pass); (*out)[i] answers it (LogitsRequest). Waits for the pass: a device's fault inside
  // it is reported here at the latest.
  virtual Status ReadLogits(const std::vector<LogitsRequest>& requests, std::vector<RowLogits>* out) = 0;
  // True where the logits live in another memory (a GPU's): sampling then asks for candidates
  // rather than whole rows wherever its rules allow (engine/sampler.h, CandidateQuery).
  virtual bool logits_on_device() const = 0;
  // Most patches one EncodeImages call should get (the runner splits larger work into passes).
  virtual int64_t max_patches_per_pass() const = 0;
  // Frees the scratch kept between calls (an idle engine); it grows again on the next call.
  virtual void ReleaseScratch() = 0;
  // One line for logs: "cpu (AVX3, 16 threads)", "cuda:0 NVIDIA H100 ..., bf16".
  virtual std::string Describe() const = 0;
};

}  // namespace mineru
