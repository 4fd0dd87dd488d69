// cli/bench_decode_cuda.cc — BenchDecodeStepCuda (bench_cuda.h): the decoder's step on the GPU,
// kernel by kernel and as graphs, with the share of its matrix products.

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "cli/bench_cuda.h"

#if MINERU_HAVE_CUDA
#include "cli/bench_cuda_util.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/gemm.h"
#include "model/cuda/decoder_cuda.h"
#endif

namespace mineru::cli {

#if MINERU_HAVE_CUDA

namespace cu = kernels::cuda;

namespace {

constexpr int kBlockSize = 16;

using bench_cuda::Now;

struct StepTimes {
  double best = 1e30, mean = 0;
};

// `steps` timed decode steps (after two untimed ones: the first of a graph shape runs eagerly and
// is recorded) of every sequence over `context` cached tokens: ForwardBatch, the LM head on the
// device, a wait for the stream.
StatusOr<StepTimes> TimeSteps(CudaDecoder& dec, CudaKvCache& kv,
                              const std::vector<std::vector<int32_t>>& tables,
                              const std::vector<float>& embeds, int64_t context, int steps) {
  const size_t seqs = tables.size();
  std::vector<int32_t> rows(seqs);
  for (size_t i = 0; i < seqs; ++i) rows[i] = static_cast<int32_t>(i);
  StepTimes t;
  for (int s = -2; s < steps; ++s) {
    const int64_t past = context + std::max(s, 0);
    std::vector<int64_t> pos(seqs, past);
    std::vector<BatchSegment> segs(seqs);
    for (size_t i = 0; i < seqs; ++i) {
      segs[i].n = 1;
      segs[i].past = past;
      segs[i].pos_t = segs[i].pos_h = segs[i].pos_w = &pos[i];
      segs[i].block_table = tables[i].data();
    }
    const double t0 = Now();
    MINERU_RETURN_IF_ERROR(dec.ForwardBatch(embeds.data(), segs, &kv));
    MINERU_RETURN_IF_ERROR(dec.LogitsOnDevice(rows));
    MINERU_RETURN_IF_ERROR(dec.stream().Synchronize());
    const double dt = Now() - t0;
    if (s < 0) continue;
    t.best = std::min(t.best, dt);
    t.mean += dt / steps;
  }
  return t;
}

// One layer's products at `rows` rows, every layer's queued back to back, then the LM head; the
// best of three, in seconds. Weights of the real shapes, one set per layer (as many bytes stream
// from memory as in the decoder's step), values as the device memory held them.
template <typename T>
StatusOr<double> TimeProducts(const TextConfig& t, int64_t rows) {
  const int64_t Hd = t.hidden_size, QKV = int64_t{t.num_heads + 2 * t.num_kv_heads} * t.head_dim;
  const int64_t QD = int64_t{t.num_heads} * t.head_dim, I = t.intermediate_size, V = t.vocab_size;
  const size_t e = sizeof(T);
  struct Shape {
    int64_t k, n;
  };
  const Shape layer[] = {{Hd, QKV}, {QD, Hd}, {Hd, I}, {Hd, I}, {I, Hd}};
  std::vector<cu::DeviceBuffer> weights;
  for (int l = 0; l < t.num_layers; ++l) {
    for (const Shape& s : layer) {
      MINERU_ASSIGN_OR_RETURN(cu::DeviceBuffer w,
                              cu::DeviceBuffer::Allocate(static_cast<size_t>(s.k * s.n) * e));
      weights.push_back(std::move(w));
    }
  }
  MINERU_ASSIGN_OR_RETURN(cu::DeviceBuffer head, cu::DeviceBuffer::Allocate(static_cast<size_t>(V * Hd) * e));
  MINERU_ASSIGN_OR_RETURN(cu::DeviceBuffer x, cu::DeviceBuffer::Allocate(static_cast<size_t>(rows * I) * e));
  MINERU_ASSIGN_OR_RETURN(cu::DeviceBuffer y, cu::DeviceBuffer::Allocate(static_cast<size_t>(rows * V) * 4));
  MINERU_RETURN_IF_ERROR(x.Zero());
  MINERU_ASSIGN_OR_RETURN(cu::CudaStream stream, cu::CudaStream::Create());
  MINERU_ASSIGN_OR_RETURN(cu::GemmHandle gemm, cu::GemmHandle::Create());
  double best = 1e30;
  for (int rep = 0; rep < 4; ++rep) {  // the first is a warm-up
    const double t0 = Now();
    for (size_t w = 0; w < weights.size(); ++w) {
      const Shape& s = layer[w % 5];
      MINERU_RETURN_IF_ERROR(cu::MatMul(gemm, x.as<T>(), rows, s.k, weights[w].as<T>(), s.n, nullptr,
                                        y.as<T>(), stream.handle()));
    }
    MINERU_RETURN_IF_ERROR(
        cu::MatMul(gemm, x.as<T>(), rows, Hd, head.as<T>(), V, nullptr, y.as<float>(), stream.handle()));
    MINERU_RETURN_IF_ERROR(stream.Synchronize());
    if (rep > 0) best = std::min(best, Now() - t0);
  }
  return best;
}

}  // namespace

StatusOr<nlohmann::json> BenchDecodeStepCuda(const Qwen2VLModel& m, const CudaDecodeStepBench& o) {
  if (o.seqs < 1 || o.context < 16 || o.steps < 1)
    return InvalidArgumentError("decode_step: --concurrency >= 1, --prompt-tokens >= 16, --new-tokens >= 1");
  MINERU_ASSIGN_OR_RETURN(cu::CudaDeviceInfo dev, cu::ProbeUsableCudaDevice(0));
  MINERU_ASSIGN_OR_RETURN(CudaPrecision p, ParseCudaPrecision(o.precision));
  const TextConfig& t = m.config().text;
  MINERU_ASSIGN_OR_RETURN(std::unique_ptr<CudaDecoder> dec,
                          CudaDecoder::Create(t, m.weights().text, m.kernel_config(), p));
  const int per_seq = (o.context + o.steps + 2 + kBlockSize - 1) / kBlockSize;
  MINERU_ASSIGN_OR_RETURN(CudaKvCache kv, CudaKvCache::Allocate(o.seqs * per_seq, kBlockSize, t.num_layers,
                                                                int64_t{t.num_kv_heads} * t.head_dim, p));
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(o.seqs), std::vector<int32_t>(per_seq));
  for (int i = 0; i < o.seqs; ++i) {
    for (int b = 0; b < per_seq; ++b) tables[i][b] = i * per_seq + b;
  }
  std::vector<float> embeds(static_cast<size_t>(o.seqs) * t.hidden_size);
  for (size_t i = 0; i < embeds.size(); ++i)
    embeds[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.0f - 1;
  MINERU_ASSIGN_OR_RETURN(StepTimes eager, TimeSteps(*dec, kv, tables, embeds, o.context, o.steps));
  dec->EnableGraphs(o.seqs);
  MINERU_ASSIGN_OR_RETURN(StepTimes graph, TimeSteps(*dec, kv, tables, embeds, o.context, o.steps));
  MINERU_ASSIGN_OR_RETURN(StepTimes short_ctx, TimeSteps(*dec, kv, tables, embeds, 16, o.steps));
  const std::string graph_error = dec->graph_error();
  dec.reset();  // its activations and weights out of the way of the products' own
  StatusOr<double> products =
      p == CudaPrecision::kF32 ? TimeProducts<float>(t, o.seqs) : TimeProducts<cu::Bf16>(t, o.seqs);
  const double flops_per_token =
      2.0 * static_cast<double>(m.weights().text.lm_head.rows) * t.hidden_size +
      2.0 * t.num_layers *
          (static_cast<double>(t.hidden_size) *
               ((t.num_heads + 2 * t.num_kv_heads) * t.head_dim + t.num_heads * t.head_dim) +
           3.0 * t.hidden_size * t.intermediate_size);
  nlohmann::json out = {{"device", cu::DescribeCudaDevice(dev)},
                        {"precision", CudaPrecisionName(p)},
                        {"seqs", o.seqs},
                        {"context", o.context},
                        {"step_ms_eager_best", 1e3 * eager.best},
                        {"step_ms_eager_mean", 1e3 * eager.mean},
                        {"step_ms_graph_best", 1e3 * graph.best},
                        {"step_ms_graph_mean", 1e3 * graph.mean},
                        {"step_ms_graph_context16", 1e3 * short_ctx.best},
                        {"decode_tok_s_graph", o.seqs / graph.best},
                        {"decode_tok_s_eager", o.seqs / eager.best},
                        {"products_tflops_graph_step", flops_per_token * o.seqs / graph.best / 1e12},
                        {"graph_error", graph_error}};
  if (products.ok()) {
    out["products_ms"] = 1e3 * *products;
    out["products_share_of_graph_step"] = *products / graph.best;
  } else {
    out["products_error"] = products.status().ToString();
  }
  return out;
}

#endif  // MINERU_HAVE_CUDA

}  // namespace mineru::cli
