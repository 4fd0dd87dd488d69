// kernels/cuda/gemm.cc — GemmHandle and MatMul (gemm.h) over cuBLASLt (host code only).
//
// cuBLAS is column-major; the row-major product y [m, n] = x [m, k] W^T is, read column-major,
// y^T [n, m] = W x^T: A = W stored [k, n] column-major (ld k) and transposed, B = x stored [k, m]
// (ld k), C = D = y stored [n, m] (ld n). The epilogue's bias runs along D's rows: the n features.

#include "kernels/cuda/gemm.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/cuda/cuda_internal.h"

namespace mineru {
namespace kernels {
namespace cuda {
namespace {

Status LtStatus(cublasStatus_t st, const std::string& what) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  const std::string text =
      "cuBLASLt " + what + ": " + cublasLtGetStatusName(st) + " (" + cublasLtGetStatusString(st) + ")";
  switch (st) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return UnavailableError(text);
    case CUBLAS_STATUS_ALLOC_FAILED:
      return OutOfMemoryError(text);
    case CUBLAS_STATUS_INVALID_VALUE:
      return InvalidArgumentError(text);
    default:
      return InternalError(text);
  }
}

template <typename T, cublasStatus_t (*Destroy)(T)>
struct LtDeleter {
  void operator()(T p) const { (void)Destroy(p); }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>,
                                   LtDeleter<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>,
                               LtDeleter<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;
using Preference = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                                   LtDeleter<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>>;

// The element types of one product: A and B, C and D, and the arithmetic.
struct GemmTypes {
  cudaDataType_t ab, cd;
  size_t ab_bytes, cd_bytes;
  cublasComputeType_t compute;
};

// The descriptors of one call.
struct Plan {
  MatmulDesc op;
  Layout a, b, cd;
  Preference pref;
};

// The largest power of two (at most 256) dividing the address and the row pitch: what cuBLASLt
// may assume of a matrix (it assumes 256 unless told).
uint32_t Alignment(const void* p, int64_t ld, size_t elem) {
  uintptr_t bits =
      reinterpret_cast<uintptr_t>(p) | static_cast<uintptr_t>(ld * static_cast<int64_t>(elem)) | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

template <typename V>
Status SetDesc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const V& value) {
  return LtStatus(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value)), "matmul attribute");
}
template <typename V>
Status SetPref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const V& value) {
  return LtStatus(cublasLtMatmulPreferenceSetAttribute(p, attr, &value, sizeof(value)),
                  "preference attribute");
}

Status MakeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, Layout* out) {
  cublasLtMatrixLayout_t l = nullptr;
  MINERU_RETURN_IF_ERROR(LtStatus(
      cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
      "layout"));
  out->reset(l);
  return Status::Ok();
}

// The descriptors for y [m, n] = x [m, k] W^T, with the bias in the epilogue when `bias` is set.
Status MakePlan(const GemmTypes& t, const void* x, int64_t m, int64_t k, const void* w, int64_t n,
                const float* bias, const void* y, size_t workspace_bytes, Plan* plan) {
  cublasLtMatmulDesc_t op = nullptr;
  MINERU_RETURN_IF_ERROR(LtStatus(cublasLtMatmulDescCreate(&op, t.compute, CUDA_R_32F), "matmul descriptor"));
  plan->op.reset(op);
  MINERU_RETURN_IF_ERROR(SetDesc(op, CUBLASLT_MATMUL_DESC_TRANSA, int32_t{CUBLAS_OP_T}));
  MINERU_RETURN_IF_ERROR(SetDesc(op, CUBLASLT_MATMUL_DESC_TRANSB, int32_t{CUBLAS_OP_N}));
  if (bias != nullptr) {
    MINERU_RETURN_IF_ERROR(SetDesc(op, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t{CUBLASLT_EPILOGUE_BIAS}));
    MINERU_RETURN_IF_ERROR(SetDesc(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias)));
    MINERU_RETURN_IF_ERROR(SetDesc(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t{CUDA_R_32F}));
  }
  MINERU_RETURN_IF_ERROR(MakeLayout(t.ab, k, n, k, &plan->a));
  MINERU_RETURN_IF_ERROR(MakeLayout(t.ab, k, m, k, &plan->b));
  MINERU_RETURN_IF_ERROR(MakeLayout(t.cd, n, m, n, &plan->cd));
  cublasLtMatmulPreference_t pref = nullptr;
  MINERU_RETURN_IF_ERROR(LtStatus(cublasLtMatmulPreferenceCreate(&pref), "preference"));
  plan->pref.reset(pref);
  MINERU_RETURN_IF_ERROR(SetPref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{workspace_bytes}));
  MINERU_RETURN_IF_ERROR(
      SetPref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, Alignment(w, k, t.ab_bytes)));
  MINERU_RETURN_IF_ERROR(
      SetPref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, Alignment(x, k, t.ab_bytes)));
  MINERU_RETURN_IF_ERROR(
      SetPref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, Alignment(y, n, t.cd_bytes)));
  MINERU_RETURN_IF_ERROR(
      SetPref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, Alignment(y, n, t.cd_bytes)));
  return Status::Ok();
}

// The heuristic's first algorithm for the plan; *found is false when it offers none (or, with
// `quiet`, when it refuses the plan in any way: a bias epilogue it does not take).
Status FindAlgo(cublasLtHandle_t lt, const Plan& plan, bool quiet, cublasLtMatmulAlgo_t* algo, bool* found) {
  cublasLtMatmulHeuristicResult_t result = {};
  int count = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(lt, plan.op.get(), plan.a.get(), plan.b.get(), plan.cd.get(),
                                     plan.cd.get(), plan.pref.get(), 1, &result, &count);
  *found = st == CUBLAS_STATUS_SUCCESS && count > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED && !quiet)
    return LtStatus(st, "heuristic");
  if (*found) *algo = result.algo;
  return Status::Ok();
}

// Queues the product, with the bias in the epilogue where cuBLASLt has an algorithm for that
// (*bias_fused true), else without it (*bias_fused false: the caller adds the bias).
Status QueueProduct(GemmHandle& h, const GemmTypes& t, const void* x, int64_t m, int64_t k, const void* w,
                    int64_t n, const float* bias, void* y, StreamHandle stream, bool* bias_fused) {
  const size_t ws = h.workspace().size();
  Plan plan;
  cublasLtMatmulAlgo_t algo = {};
  bool found = false;
  *bias_fused = false;
  if (bias != nullptr && h.fuse_bias()) {
    // Any refusal of the epilogue (an fp32 bias beside a bf16 output, say) falls back to the plain product.
    found = MakePlan(t, x, m, k, w, n, bias, y, ws, &plan).ok() &&
            FindAlgo(static_cast<cublasLtHandle_t>(h.lt()), plan, true, &algo, &found).ok() && found;
    *bias_fused = found;
  }
  if (!found) {
    plan = Plan();
    MINERU_RETURN_IF_ERROR(MakePlan(t, x, m, k, w, n, nullptr, y, ws, &plan));
    MINERU_RETURN_IF_ERROR(FindAlgo(static_cast<cublasLtHandle_t>(h.lt()), plan, false, &algo, &found));
  }
  if (!found) {
    return UnimplementedError("cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                              std::to_string(k) + " by " + std::to_string(n) + "x" + std::to_string(k) +
                              " product of these types");
  }
  const float alpha = 1.0f, beta = 0.0f;
  return LtStatus(cublasLtMatmul(static_cast<cublasLtHandle_t>(h.lt()), plan.op.get(), &alpha, w,
                                 plan.a.get(), x, plan.b.get(), &beta, y, plan.cd.get(), y, plan.cd.get(),
                                 &algo, h.workspace().data(), ws, stream),
                  "matmul");
}

template <typename In, typename Out>
Status RunMatMul(GemmHandle& h, const GemmTypes& t, const In* x, int64_t m, int64_t k, const In* w, int64_t n,
                 const float* bias, Out* y, StreamHandle stream) {
  constexpr const char* kOp = "MatMul";
  MINERU_RETURN_IF_ERROR(CheckSizes(kOp, {m, k, n}));
  if (m == 0 || n == 0) return Status::Ok();
  if (!h.valid())
    return InvalidArgumentError("MatMul: the GemmHandle was never created (GemmHandle::Create)");
  MINERU_RETURN_IF_ERROR(CheckPointers(kOp, {y}));
  bool fused = false;
  if (k == 0) {  // an empty sum: y = 0 (+ bias)
    MINERU_RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(y, 0, sizeof(Out) * static_cast<size_t>(m * n), stream),
                                      "cudaMemsetAsync"));
  } else {
    MINERU_RETURN_IF_ERROR(CheckPointers(kOp, {x, w}));
    MINERU_RETURN_IF_ERROR(QueueProduct(h, t, x, m, k, w, n, bias, y, stream, &fused));
  }
  h.note_bias_fused(fused);
  if (bias != nullptr && !fused) return AddBiasRows(y, m, n, bias, stream);
  return Status::Ok();
}

constexpr GemmTypes kBf16ToBf16{CUDA_R_16BF, CUDA_R_16BF, 2, 2, CUBLAS_COMPUTE_32F};
constexpr GemmTypes kBf16ToF32{CUDA_R_16BF, CUDA_R_32F, 2, 4, CUBLAS_COMPUTE_32F};
// CUBLAS_COMPUTE_32F, not _FAST_TF32: fp32 products stay fp32 (the golden tests' precision).
constexpr GemmTypes kF32ToF32{CUDA_R_32F, CUDA_R_32F, 4, 4, CUBLAS_COMPUTE_32F};

}  // namespace

GemmHandle::~GemmHandle() { Release(); }

GemmHandle::GemmHandle(GemmHandle&& other) noexcept
    : lt_(std::exchange(other.lt_, nullptr)),
      workspace_(std::move(other.workspace_)),
      fuse_bias_(other.fuse_bias_),
      last_bias_fused_(other.last_bias_fused_) {}

GemmHandle& GemmHandle::operator=(GemmHandle&& other) noexcept {
  if (this != &other) {
    Release();
    lt_ = std::exchange(other.lt_, nullptr);
    workspace_ = std::move(other.workspace_);
    fuse_bias_ = other.fuse_bias_;
    last_bias_fused_ = other.last_bias_fused_;
  }
  return *this;
}

void GemmHandle::Release() {
  // As DeviceBuffer's cudaFree: an error here (a device lost meanwhile) has no one to go to.
  if (lt_ != nullptr) (void)cublasLtDestroy(static_cast<cublasLtHandle_t>(lt_));
  lt_ = nullptr;
}

StatusOr<GemmHandle> GemmHandle::Create(size_t workspace_bytes) {
  GemmHandle h;
  // The workspace first: without a usable device this is the call that says so, as Unavailable.
  MINERU_ASSIGN_OR_RETURN(h.workspace_, DeviceBuffer::Allocate(workspace_bytes));
  cublasLtHandle_t lt = nullptr;
  MINERU_RETURN_IF_ERROR(LtStatus(cublasLtCreate(&lt), "create"));
  h.lt_ = lt;
  return h;
}

Status MatMul(GemmHandle& h, const Bf16* x, int64_t m, int64_t k, const Bf16* w, int64_t n, const float* bias,
              Bf16* y, StreamHandle stream) {
  return RunMatMul(h, kBf16ToBf16, x, m, k, w, n, bias, y, stream);
}
Status MatMul(GemmHandle& h, const Bf16* x, int64_t m, int64_t k, const Bf16* w, int64_t n, const float* bias,
              float* y, StreamHandle stream) {
  return RunMatMul(h, kBf16ToF32, x, m, k, w, n, bias, y, stream);
}
Status MatMul(GemmHandle& h, const float* x, int64_t m, int64_t k, const float* w, int64_t n,
              const float* bias, float* y, StreamHandle stream) {
  return RunMatMul(h, kF32ToF32, x, m, k, w, n, bias, y, stream);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace mineru
