// tests/kernels/kernels_bench.cc — micro-benchmarks of the main kernels at the real
// MinerU2.5 shapes (random weights; speed does not depend on values). Prints GFLOP/s (and
// GB/s of weights or KV read where memory-bound) as Google Benchmark counters.
//
//   kernels_bench [--benchmark_filter=REGEX]   threads: MINERU_THREADS (default: all cores)
//   MatMul/shape:S/w:W/m:M/tgt:T  S indexes kLinearShapes, W: 0 bf16 1 q8_0 2 q4_0 3 q4_g128,
//       T: 0 best SIMD target, 1 capped at AVX2 (+ AVX-VNNI where the CPU has it), 2 the scalar
//       reference twin, 3 capped at AVX3 (AVX-512 without VNNI), 4 the integer path
//       (cpu::MatMulQuantInt) at any m, 5 with the integer panels packed beforehand (as the
//       decoder's weights are at load), 6 capped at AVX2 without AVX-VNNI
//   Attention/...   vision (5476 patches; int8:1 = Q Kᵀ in int8), causal prefill (1369), decode (n_q = 1)
//   Elementwise, Quantize (load-time cost), QuantAccuracy (rel. RMS error of y per format),
//   PoolRoundTrip (ParallelFor overhead), FmaPeak/0|1 (AVX2 / AVX-512 FMA ceiling).
// Counters: GFLOPs, WGBs (weight bytes streamed per second), KVGBs, GBs, rel_rmse.

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/bf16.h"
#include "hwy/targets.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace mineru {
namespace kernels {
namespace {

ThreadPool& Pool() {
  static ThreadPool* pool = [] {
    const char* e = std::getenv("MINERU_THREADS");
    const size_t n = e ? static_cast<size_t>(std::atoi(e)) : ThreadPool::DefaultThreads();
    return new ThreadPool(n < 1 ? 1 : n);
  }();
  return *pool;
}

// Normally distributed values, N(0, scale) (weights and activations look like this; the tests'
// RandomVec is uniform).
std::vector<float> RandomNormalVec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct LinearShape {
  const char* name;
  int64_t n, k;  // W [n, k]
};
// Linear layers of the ViT (E=1280, MLP 5120), the merger and the Qwen2-0.5B decoder.
const LinearShape kLinearShapes[] = {
    {"vit_qkv", 3840, 1280},    {"vit_proj", 1280, 1280},  {"vit_fc1", 5120, 1280},  {"vit_fc2", 1280, 5120},
    {"merger_fc1", 5120, 5120}, {"merger_fc2", 896, 5120}, {"dec_q", 896, 896},      {"dec_kv", 128, 896},
    {"dec_gate", 4864, 896},    {"dec_down", 896, 4864},   {"lm_head", 151936, 896},
};
enum WType { kBf16, kQ8, kQ4, kQ4G128, kF32 };
const char* const kWTypeNames[] = {"bf16", "q8_0", "q4_0", "q4_g128", "f32"};

// Weights are created once per (shape, type) and kept for the whole run.
struct Weights {
  std::vector<uint16_t> bf16;
  std::vector<float> f32;
  QuantizedMatrix q;
  WeightView view;
  PackedPanels panels;  // packed on first use by tgt 5
};

Weights& GetWeights(int shape, int wtype) {
  static std::map<std::pair<int, int>, std::unique_ptr<Weights>> cache;
  auto& slot = cache[{shape, wtype}];
  if (!slot) {
    slot = std::make_unique<Weights>();
    const LinearShape& s = kLinearShapes[shape];
    std::vector<float> v =
        RandomNormalVec(static_cast<size_t>(s.n * s.k), static_cast<uint32_t>(shape), 0.02f);
    if (wtype == kF32) {
      slot->f32 = std::move(v);
      slot->view = WeightView{DType::kF32, slot->f32.data(), s.n, s.k};
    } else {
      slot->bf16.resize(v.size());
      for (size_t i = 0; i < v.size(); ++i) slot->bf16[i] = F32ToBf16(v[i]);
      slot->view = WeightView{DType::kBF16, slot->bf16.data(), s.n, s.k};
      if (wtype != kBf16) {
        const QuantType qt = wtype == kQ8   ? QuantType::kQ8_0
                             : wtype == kQ4 ? QuantType::kQ4_0
                                            : QuantType::kQ4_G128;
        slot->q = Quantize(slot->view, qt, &Pool());
        slot->view = slot->q.view();
        std::vector<uint16_t>().swap(slot->bf16);
      }
    }
  }
  return *slot;
}

// The kernels of one benchmark's "tgt" argument.
KernelConfig BenchConfig(int target) {
  KernelConfig c;
#if HWY_ARCH_X86
  if (target == 1 || target == 6) c.target = HWY_AVX2;
  if (target == 3) c.target = HWY_AVX3;
#endif  // elsewhere (ARM: NEON only) the x86 caps do not apply and the best target runs
  c.reference = target == 2;
  c.dot_extension = target != 6;  // 6: AVX2 without AVX-VNNI (vpmaddubsw)
  return c;
}

void BM_MatMul(benchmark::State& state) {
  const int shape = static_cast<int>(state.range(0)), wtype = static_cast<int>(state.range(1));
  const int64_t m = state.range(2);
  const KernelWorkspace ctx(BenchConfig(static_cast<int>(state.range(3))), &Pool());
  const LinearShape& s = kLinearShapes[shape];
  Weights& weights = GetWeights(shape, wtype);
  WeightView view = weights.view;
  if (state.range(3) == 5) {
    if (!IntegerPanelsAvailable(ctx.config()) || !view.quantized()) {
      state.SkipWithError("no integer panels on this CPU");
      return;
    }
    if (weights.panels.empty()) weights.panels = PackIntegerPanels(view, ctx);
    view.panels = weights.panels.data();
  }
  const Weights& w = weights;
  const std::vector<float> x = RandomNormalVec(static_cast<size_t>(m * s.k), 7);
  const std::vector<float> bias = RandomNormalVec(static_cast<size_t>(s.n), 8);
  std::vector<float> y(static_cast<size_t>(m * s.n));
  const bool int_path = state.range(3) == 4;
  for (auto _ : state) {
    if (int_path) {
      cpu::MatMulQuantInt(x.data(), m, w.view, bias.data(), y.data(), ctx);
    } else {
      MatMul(x.data(), m, view, bias.data(), y.data(), ctx);
    }
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double wbytes = w.view.quantized() ? static_cast<double>(w.q.size_bytes())
                                           : static_cast<double>(s.n * s.k) * (wtype == kF32 ? 4.0 : 2.0);
  state.counters["WGBs"] = benchmark::Counter(wbytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(s.name) + "/" + kWTypeNames[wtype] + "/" + TargetName(ctx.config()));
}

void MatMulArgs(benchmark::internal::Benchmark* b) {
  for (int shape = 0; shape < static_cast<int>(std::size(kLinearShapes)); ++shape) {
    for (int64_t m : {1, 16, 256, 1369}) {
      if (std::string(kLinearShapes[shape].name) == "lm_head" && m > 16) continue;
      for (int wt : {kBf16, kQ8, kQ4, kQ4G128}) b->Args({shape, wt, m, 0});
      b->Args({shape, kBf16, m, 1});  // the same on AVX2 (for machines with AVX-512)
      b->Args({shape, kQ8, m, 3});    // int8 without VNNI (for machines with it)
      if (m > 16) b->Args({shape, kBf16, m, 3});
      // Panels packed at load: batched decode, and the vision encoder's products.
      if (m == 16 || (m == 1369 && shape < 4)) b->Args({shape, kQ8, m, 5});
      if (m > 16) b->Args({shape, kQ8, m, 4});  // the integer path where MatMul dequantizes
      if (m >= 16) {  // AVX2 integer panels: with AVX-VNNI where the CPU has it (1), vpmaddubsw (6)
        for (int wt : {kQ8, kQ4}) {
          b->Args({shape, wt, m, 1});
          b->Args({shape, wt, m, 6});
        }
      }
    }
  }
  // The scalar reference for the A/B figure, on a few shapes.
  for (int shape : {0, 6}) {
    for (int64_t m : {1, 256}) b->Args({shape, kBf16, m, 2});
  }
}
BENCHMARK(BM_MatMul)
    ->Apply(MatMulArgs)
    ->ArgNames({"shape", "w", "m", "tgt"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Attention. Vision: one 1036x1036 layout image = 5476 patches, 16 heads of 80, q/k/v rows
// interleaved as in the ViT's qkv buffer. Prefill: causal, 14 heads / 2 KV heads of 64.
// Decode: n_q = 1 over n_kv cached keys.
void BM_Attention(benchmark::State& state) {
  const int64_t n_q = state.range(0), n_kv = state.range(1), heads = state.range(2),
                kv_heads = state.range(3), hd = state.range(4);
  const bool causal = state.range(5) != 0;
  const KernelWorkspace ctx(BenchConfig(static_cast<int>(state.range(6))), &Pool());
  AttentionShape s;
  s.int8_qk = state.range(7) != 0;  // Q Kᵀ in int8 (AVX-512 VNNI)
  s.int8_pv = state.range(7) == 2;  // and P V (the vision encoder with q8 weights)
  s.n_q = n_q;
  s.n_kv = n_kv;
  s.num_heads = heads;
  s.num_kv_heads = kv_heads;
  s.head_dim = hd;
  s.causal = causal;
  s.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> q, kv, out(static_cast<size_t>(n_q * heads * hd));
  const float *qp, *kp, *vp;
  if (!causal && n_q == n_kv && heads == kv_heads) {  // vision layout
    q = RandomNormalVec(static_cast<size_t>(n_q * 3 * heads * hd), 1);
    qp = q.data();
    kp = qp + heads * hd;
    vp = qp + 2 * heads * hd;
    s.q_stride = s.kv_stride = 3 * heads * hd;
  } else {
    q = RandomNormalVec(static_cast<size_t>(n_q * heads * hd), 1);
    kv = RandomNormalVec(static_cast<size_t>(2 * n_kv * kv_heads * hd), 2);
    qp = q.data();
    kp = kv.data();
    vp = kv.data() + n_kv * kv_heads * hd;
    s.q_stride = heads * hd;
    s.kv_stride = kv_heads * hd;
  }
  s.out_stride = heads * hd;
  for (auto _ : state) {
    Attention(qp, kp, vp, s, out.data(), ctx);
    benchmark::DoNotOptimize(out.data());
  }
  // Score and value products actually needed (causal: the lower triangle + prefix).
  double pairs = static_cast<double>(n_q) * static_cast<double>(n_kv);
  if (causal) pairs = static_cast<double>(n_q) * static_cast<double>(n_kv - n_q) + 0.5 * n_q * (n_q + 1.0);
  const double flops = 4.0 * pairs * static_cast<double>(hd * heads);
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double kv_bytes = 2.0 * static_cast<double>(n_kv * kv_heads * hd) * 4.0;
  state.counters["KVGBs"] =
      benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(TargetName(ctx.config())) +
                 (AttentionUsesInt8(s, ctx.config()) ? "/int8-qk" : "") +
                 (AttentionUsesInt8Pv(s, ctx.config()) ? "/int8-pv" : ""));
}
BENCHMARK(BM_Attention)
    ->ArgNames({"nq", "nkv", "H", "KV", "hd", "causal", "tgt", "int8"})
    ->Args({5476, 5476, 16, 16, 80, 0, 0, 0})
    ->Args({5476, 5476, 16, 16, 80, 0, 0, 1})
    ->Args({5476, 5476, 16, 16, 80, 0, 0, 2})
    ->Args({5476, 5476, 16, 16, 80, 0, 1, 0})
    ->Args({1369, 1369, 14, 2, 64, 1, 0, 0})
    ->Args({1, 512, 14, 2, 64, 1, 0, 0})
    ->Args({1, 2048, 14, 2, 64, 1, 0, 0})
    ->Args({1, 2048, 14, 2, 64, 1, 1, 0})
    ->Args({1, 2048, 14, 2, 64, 1, 2, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Elementwise(benchmark::State& state) {
  const int op = static_cast<int>(state.range(0));
  const int64_t m = 1369, n = op == 0 ? 1280 * 4 : 1280;
  const KernelWorkspace ctx(BenchConfig(static_cast<int>(state.range(1))), &Pool());
  std::vector<float> x = RandomNormalVec(static_cast<size_t>(m * n), 3), y(x.size());
  const std::vector<float> w = RandomNormalVec(static_cast<size_t>(n), 4),
                           b = RandomNormalVec(static_cast<size_t>(n), 5);
  const std::vector<float> x0 = x;
  for (auto _ : state) {
    if (op == 0) {
      // In place: restore the inputs (untimed) so repeated passes do not drift to denormals.
      state.PauseTiming();
      std::copy(x0.begin(), x0.end(), x.begin());
      state.ResumeTiming();
      QuickGelu(x.data(), m * n, ctx);
    } else if (op == 1) {
      LayerNorm(x.data(), m, n, w.data(), b.data(), 1e-6f, y.data(), ctx);
    } else {
      SiluMul(x.data(), x.data(), m * n, y.data(), ctx);
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GBs"] =
      benchmark::Counter(static_cast<double>(m * n) * 8e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(op == 0 ? "quick_gelu" : op == 1 ? "layer_norm" : "silu_mul");
}
BENCHMARK(BM_Elementwise)
    ->ArgNames({"op", "tgt"})
    ->ArgsProduct({{0, 1, 2}, {0, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Quantizing one decoder MLP matrix (4864 x 896, bf16) — the cost of --quant at load.
void BM_Quantize(benchmark::State& state) {
  const QuantType qt = static_cast<QuantType>(state.range(0));
  const int64_t n = 4864, k = 896;
  std::vector<uint16_t> wb(static_cast<size_t>(n * k));
  const std::vector<float> v = RandomNormalVec(wb.size(), 3, 0.02f);
  for (size_t i = 0; i < wb.size(); ++i) wb[i] = F32ToBf16(v[i]);
  const WeightView w{DType::kBF16, wb.data(), n, k};
  for (auto _ : state) benchmark::DoNotOptimize(Quantize(w, qt, &Pool()).data());
  state.counters["Mparams_s"] =
      benchmark::Counter(static_cast<double>(n * k) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(QuantTypeName(qt));
}
BENCHMARK(BM_Quantize)
    ->Arg(static_cast<int>(QuantType::kQ8_0))
    ->Arg(static_cast<int>(QuantType::kQ4_0))
    ->Arg(static_cast<int>(QuantType::kQ4_G128))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Accuracy of the quantized formats on one layer: relative RMS error of y against the
// fp64 product with the bf16 weights, for the integer path (m = 4) and the dequantized-panel
// path (m = 64). Weights ~ N(0, 0.02), activations ~ N(0, 1); with tails = 1, 0.5% of the
// weights x8 and 1% of the activation channels x20 (LLM-style outlier features).
void BM_QuantAccuracy(benchmark::State& state) {
  const int64_t n = 1024, k = state.range(1), m = state.range(2);
  const int wtype = static_cast<int>(state.range(0));
  const bool tails = state.range(3) != 0;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  std::vector<uint16_t> wb(static_cast<size_t>(n * k));
  std::vector<float> wf(wb.size());
  for (size_t i = 0; i < wb.size(); ++i) {
    wb[i] = F32ToBf16(0.02f * nd(rng) * (tails && ud(rng) < 0.005f ? 8.0f : 1.0f));
    wf[i] = Bf16ToF32(wb[i]);
  }
  std::vector<float> x(static_cast<size_t>(m * k));
  std::vector<float> chan(static_cast<size_t>(k));
  for (float& c : chan) c = tails && ud(rng) < 0.01f ? 20.0f : 1.0f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * chan[i % static_cast<size_t>(k)];
  const WeightView dense{DType::kBF16, wb.data(), n, k};
  const QuantType qt = wtype == kQ8   ? QuantType::kQ8_0
                       : wtype == kQ4 ? QuantType::kQ4_0
                                      : QuantType::kQ4_G128;
  const QuantizedMatrix q = Quantize(dense, qt);
  std::vector<float> y(static_cast<size_t>(m * n));
  const KernelWorkspace ctx(KernelConfig(), &Pool());
  for (auto _ : state) MatMul(x.data(), m, q.view(), nullptr, y.data(), ctx);
  double err = 0, ref = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t c = 0; c < k; ++c) s += static_cast<double>(x[i * k + c]) * wf[j * k + c];
      err += (y[i * n + j] - s) * (y[i * n + j] - s);
      ref += s * s;
    }
  }
  state.counters["rel_rmse"] = std::sqrt(err / ref);
  state.SetLabel(std::string(kWTypeNames[wtype]) +
                 (m < QuantDequantMinRows(ctx.config()) ? "/int8-acts" : "/dequant-panels") +
                 (tails ? "/outliers" : "/gaussian"));
}
BENCHMARK(BM_QuantAccuracy)
    ->ArgNames({"w", "k", "m", "tails"})
    ->ArgsProduct({{kQ8, kQ4, kQ4G128}, {896, 5120}, {4, 64}, {0, 1}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// The cost of one ParallelFor in which every worker must take part (each chunk busy-waits
// 5 us): time - 5 us is the floor under every parallel kernel call (a decode step makes
// ~200 of them per token).
void BM_PoolRoundTrip(benchmark::State& state) {
  const size_t threads = Pool().num_threads();
  std::atomic<size_t> started{0};
  for (auto _ : state) {
    started = 0;
    Pool().ParallelFor(
        threads,
        [&](size_t, size_t, size_t) {
          started.fetch_add(1);
          const auto t0 = std::chrono::steady_clock::now();
          while (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(5)) {
          }
        },
        1);
  }
  state.SetLabel(std::to_string(threads) + " workers, 5 us of work each");
}
BENCHMARK(BM_PoolRoundTrip)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The FMA ceiling: independent FMA chains on every pool worker (12 accumulators each).
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) float FmaLoopAvx2(int64_t iters) {
  __m256 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], m, c);
  }
  __m256 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, a[i]);
  return _mm256_cvtss_f32(s);
}
__attribute__((target("avx512f"))) float FmaLoopAvx512(int64_t iters) {
  __m512 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(a[i], m, c);
  }
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float sum = 0.0f;
  for (float f : lanes) sum += f;
  return sum;
}

void BM_FmaPeak(benchmark::State& state) {
  const bool avx512 = state.range(0) != 0;
  if (avx512 && !__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512");
    return;
  }
  constexpr int64_t kIters = 1 << 22;
  const size_t threads = Pool().num_threads();
  for (auto _ : state) {
    Pool().ParallelFor(threads, [&](size_t, size_t, size_t) {
      benchmark::DoNotOptimize(avx512 ? FmaLoopAvx512(kIters) : FmaLoopAvx2(kIters));
    });
  }
  const double flops = 2.0 * kIters * 12 * (avx512 ? 16 : 8) * static_cast<double>(threads);
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(avx512 ? "avx512" : "avx2");
}
BENCHMARK(BM_FmaPeak)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace
}  // namespace kernels
}  // namespace mineru

BENCHMARK_MAIN();
