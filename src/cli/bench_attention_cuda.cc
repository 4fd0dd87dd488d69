// cli/bench_attention_cuda.cc — BenchAttentionCuda (bench_cuda.h): VarlenAttention's kernel forms
// side by side at the model's shapes, on random bf16 data.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/bench_cuda.h"

#if MINERU_HAVE_CUDA
#include "base/bf16.h"
#include "cli/bench_cuda_util.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#endif

namespace mineru::cli {

#if MINERU_HAVE_CUDA

namespace cu = kernels::cuda;

namespace {

// One packed pass: every sequence n tokens, queries and keys alike.
struct AttentionCase {
  const char* name;
  int seqs;
  int n;
  int heads, kv_heads, head_dim;
  bool causal;
};

// The pass's multiply-adds counted as 2 flops each: Q K^T and P V over the keys each query sees.
double CaseFlops(const AttentionCase& c) {
  const double pairs = c.causal ? 0.5 * c.n * (c.n + 1.0) : static_cast<double>(c.n) * c.n;
  return 4.0 * pairs * c.head_dim * c.heads * c.seqs;
}

// The buffers of one case: q [T, heads * D], k and v [T, kv_heads * D], out like q.
struct CaseBuffers {
  cu::DeviceBuffer q, k, v, out, cu_seqlens;
  cu::VarlenAttentionShape shape;
};

StatusOr<CaseBuffers> MakeCase(const AttentionCase& c) {
  CaseBuffers b;
  const int64_t t = static_cast<int64_t>(c.seqs) * c.n;
  const int64_t qd = static_cast<int64_t>(c.heads) * c.head_dim,
                kd = static_cast<int64_t>(c.kv_heads) * c.head_dim;
  MINERU_ASSIGN_OR_RETURN(b.q, cu::DeviceBuffer::Allocate(t * qd * 2));
  MINERU_ASSIGN_OR_RETURN(b.k, cu::DeviceBuffer::Allocate(t * kd * 2));
  MINERU_ASSIGN_OR_RETURN(b.v, cu::DeviceBuffer::Allocate(t * kd * 2));
  MINERU_ASSIGN_OR_RETURN(b.out, cu::DeviceBuffer::Allocate(t * qd * 2));
  MINERU_RETURN_IF_ERROR(bench_cuda::FillRandom<cu::Bf16>(&b.q, t * qd, 1));
  MINERU_RETURN_IF_ERROR(bench_cuda::FillRandom<cu::Bf16>(&b.k, t * kd, 2));
  MINERU_RETURN_IF_ERROR(bench_cuda::FillRandom<cu::Bf16>(&b.v, t * kd, 3));
  std::vector<int32_t> cu_seqlens(static_cast<size_t>(c.seqs) + 1);
  for (int s = 0; s <= c.seqs; ++s) cu_seqlens[static_cast<size_t>(s)] = s * c.n;
  MINERU_ASSIGN_OR_RETURN(b.cu_seqlens, cu::DeviceBuffer::Allocate(cu_seqlens.size() * sizeof(int32_t)));
  MINERU_RETURN_IF_ERROR(b.cu_seqlens.CopyFromHost(cu_seqlens.data(), cu_seqlens.size() * sizeof(int32_t)));
  cu::VarlenAttentionShape& s = b.shape;
  s.num_seqs = c.seqs;
  s.cu_seqlens_q = s.cu_seqlens_k = b.cu_seqlens.as<int32_t>();
  s.max_seqlen_q = c.n;
  s.num_heads = c.heads;
  s.num_kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.q_stride = s.out_stride = qd;
  s.k_stride = s.v_stride = kd;
  s.causal = c.causal;
  s.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return b;
}

// out as floats.
StatusOr<std::vector<float>> Download(const CaseBuffers& b, int64_t n) {
  std::vector<uint16_t> raw(static_cast<size_t>(n));
  MINERU_RETURN_IF_ERROR(b.out.CopyToHost(raw.data(), raw.size() * sizeof(uint16_t)));
  std::vector<float> f(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) f[i] = Bf16ToF32(raw[i]);
  return f;
}

// Times every form on one case; each tensor-core form's largest difference from SIMT's output.
StatusOr<nlohmann::json> RunCase(const AttentionCase& c, int repeats, const cu::CudaStream& stream) {
  MINERU_ASSIGN_OR_RETURN(CaseBuffers b, MakeCase(c));
  const int64_t n_out = static_cast<int64_t>(c.seqs) * c.n * c.heads * c.head_dim;
  const double flops = CaseFlops(c);
  nlohmann::json row = {{"case", c.name},     {"seqs", c.seqs},         {"tokens", c.n},
                        {"heads", c.heads},   {"kv_heads", c.kv_heads}, {"head_dim", c.head_dim},
                        {"causal", c.causal}, {"tflop", flops / 1e12}};
  std::vector<float> simt;
  for (cu::VarlenKernel k : {cu::VarlenKernel::kSimt, cu::VarlenKernel::kTensorCoreWmma,
                             cu::VarlenKernel::kTensorCoreMma, cu::VarlenKernel::kTensorCoreMmaWide}) {
    cu::VarlenAttentionShape s = b.shape;
    s.kernel = k;
    auto once = [&]() -> Status {
      MINERU_RETURN_IF_ERROR(cu::VarlenAttention(b.q.as<cu::Bf16>(), b.k.as<cu::Bf16>(), b.v.as<cu::Bf16>(),
                                                 s, b.out.as<cu::Bf16>(), stream.handle()));
      return stream.Synchronize();
    };
    const std::string name = cu::VarlenKernelName(k);
    StatusOr<double> best = bench_cuda::BestOf(repeats, once);
    if (!best.ok()) {  // e.g. a form this device's shared memory cannot hold: say so, go on
      row[name] = {{"error", best.status().ToString()}};
      continue;
    }
    MINERU_ASSIGN_OR_RETURN(std::vector<float> got, Download(b, n_out));
    nlohmann::json f = {{"ms", 1e3 * *best}, {"tflops", flops / *best / 1e12}};
    if (k == cu::VarlenKernel::kSimt) {
      simt = std::move(got);
    } else if (!simt.empty()) {
      float worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - simt[i]));
      f["max_abs_diff_vs_simt"] = worst;
    }
    row[name] = f;
  }
  return row;
}

}  // namespace

StatusOr<nlohmann::json> BenchAttentionCuda(int repeats) {
  if (repeats < 1) return InvalidArgumentError("--repeats must be at least 1");
  MINERU_ASSIGN_OR_RETURN(cu::CudaDeviceInfo dev, cu::ProbeUsableCudaDevice(0));
  MINERU_ASSIGN_OR_RETURN(cu::CudaStream stream, cu::CudaStream::Create());
  // The ViT over one 1036x1036 page (74 x 74 patches) and the decoder's prefill of four prompts
  // the size of a page's image tokens and instructions.
  const AttentionCase cases[] = {
      {"vit_1036", 1, 74 * 74, 16, 16, 80, false},
      {"prefill_4x1400", 4, 1400, 14, 2, 64, true},
  };
  nlohmann::json out = {
      {"workload", "attention"}, {"device", bench_cuda::DeviceJson(dev)}, {"precision", "bf16"}};
  out["cases"] = nlohmann::json::array();
  for (const AttentionCase& c : cases) {
    MINERU_ASSIGN_OR_RETURN(nlohmann::json row, RunCase(c, repeats, stream));
    out["cases"].push_back(row);
  }
  return out;
}

#endif  // MINERU_HAVE_CUDA

}  // namespace mineru::cli
