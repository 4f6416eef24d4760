// blaslt_gemm.hip.cpp: implementation of blaslt_gemm.hpp.
#include "blaslt_gemm.hpp"

#include <cstdio>
#include <cstring>

namespace fusesim::gpu {

const char* gemm_dtype_name(GemmDtype d) { return d == GemmDtype::bf16 ? "bf16" : "fp8_e4m3"; }
size_t gemm_dtype_bytes(GemmDtype d) { return d == GemmDtype::bf16 ? 2 : 1; }
bool parse_gemm_dtype(const std::string& s, GemmDtype* out) {
  if (s == "bf16") {
    *out = GemmDtype::bf16;
    return true;
  }
  if (s == "fp8" || s == "fp8_e4m3" || s == "e4m3") {
    *out = GemmDtype::fp8_e4m3;
    return true;
  }
  return false;
}

namespace {
hipDataType input_type(GemmDtype d) {
  if (d == GemmDtype::bf16) return HIP_R_16BF;
#if defined(FUSESIM_GPU_HIP)
  // MI300 (gfx94x) uses the FNUZ variant of e4m3; MI350 (gfx950) and later the OCP one.
  int dev = 0;
  hipDeviceProp_t p{};
  if (hipGetDevice(&dev) == hipSuccess && hipGetDeviceProperties(&p, dev) == hipSuccess &&
      std::strncmp(p.gcnArchName, "gfx94", 5) == 0)
    return HIP_R_8F_E4M3_FNUZ;
#endif
  return HIP_R_8F_E4M3;
}
}  // namespace

#define PLAN_TRY(call)                                                                  \
  do {                                                                                  \
    hipblasStatus_t st_ = (call);                                                       \
    if (st_ != HIPBLAS_STATUS_SUCCESS) {                                                \
      error_ = std::string(#call) + " failed: status " + std::to_string(static_cast<int>(st_)) + \
               " (" + fusesim_blas_status_string(st_) + ")";                            \
      return;                                                                           \
    }                                                                                   \
  } while (0)

GemmPlan::GemmPlan(hipblasLtHandle_t handle, GemmDtype dtype, int64_t m, int64_t n, int64_t k,
                   size_t workspace_bytes, const float* scale_x_dev, const float* scale_w_dev,
                   int sm_count_target)
    : handle_(handle), m_(m), n_(n), k_(k), ws_bytes_(workspace_bytes) {
  const hipDataType in = input_type(dtype);
  PLAN_TRY(hipblasLtMatmulDescCreate(&desc_, HIPBLAS_COMPUTE_32F, HIP_R_32F));
  hipblasOperation_t ta = HIPBLAS_OP_T, tb = HIPBLAS_OP_N;
  PLAN_TRY(hipblasLtMatmulDescSetAttribute(desc_, HIPBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  PLAN_TRY(hipblasLtMatmulDescSetAttribute(desc_, HIPBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (dtype == GemmDtype::fp8_e4m3) {
    if (!scale_x_dev || !scale_w_dev) {
      error_ = "fp8 GEMM needs per-tensor scale pointers";
      return;
    }
    // The library's A is W, its B is X.
    PLAN_TRY(hipblasLtMatmulDescSetAttribute(desc_, HIPBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_w_dev,
                                             sizeof scale_w_dev));
    PLAN_TRY(hipblasLtMatmulDescSetAttribute(desc_, HIPBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_x_dev,
                                             sizeof scale_x_dev));
  }
  if (sm_count_target > 0 && !set_sm_count_target(sm_count_target)) return;
  // Column-major: A' = W stored k x n (ld k), B' = X stored k x m (ld k), C' = C stored n x m (ld n).
  PLAN_TRY(hipblasLtMatrixLayoutCreate(&a_, in, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k));
  PLAN_TRY(hipblasLtMatrixLayoutCreate(&b_, in, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k));
  PLAN_TRY(hipblasLtMatrixLayoutCreate(&c_, HIP_R_16BF, static_cast<uint64_t>(n), static_cast<uint64_t>(m), n));
  hipblasLtMatmulPreference_t pref = nullptr;
  PLAN_TRY(hipblasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = workspace_bytes;
  hipblasStatus_t st = hipblasLtMatmulPreferenceSetAttribute(pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &ws, sizeof ws);
  int returned = 0;
  hipblasLtMatmulHeuristicResult_t results[8];
  std::memset(results, 0, sizeof results);
  if (st == HIPBLAS_STATUS_SUCCESS)
    st = hipblasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, c_, pref, 8, results, &returned);
  (void)hipblasLtMatmulPreferenceDestroy(pref);
  if (st != HIPBLAS_STATUS_SUCCESS) {
    error_ = "hipblasLtMatmulAlgoGetHeuristic failed: status " + std::to_string(static_cast<int>(st)) +
             " (" + fusesim_blas_status_string(st) + ")";
    return;
  }
  for (int i = 0; i < returned; ++i)
    if (results[i].state == HIPBLAS_STATUS_SUCCESS && results[i].workspaceSize <= workspace_bytes)
      heur_.push_back(results[i]);
  if (!heur_.empty()) {
    ws_needed_ = heur_[0].workspaceSize;
    ok_ = true;
    return;
  }
  error_ = "no algorithm from the heuristic for " + std::string(gemm_dtype_name(dtype)) + " m=" +
           std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
}
#undef PLAN_TRY

GemmPlan::~GemmPlan() {
  if (c_) (void)hipblasLtMatrixLayoutDestroy(c_);
  if (b_) (void)hipblasLtMatrixLayoutDestroy(b_);
  if (a_) (void)hipblasLtMatrixLayoutDestroy(a_);
  if (desc_) (void)hipblasLtMatmulDescDestroy(desc_);
}

void GemmPlan::run(const void* x, const void* w, void* c, void* workspace, hipStream_t stream) const {
  if (!ok_) {
    std::fprintf(stderr, "fusesim: GemmPlan::run on a plan that failed: %s\n", error_.c_str());
    std::exit(1);
  }
  BLAS_CHECK(matmul(algo_, x, w, c, workspace, stream));
}

hipblasStatus_t GemmPlan::matmul(size_t i, const void* x, const void* w, void* c, void* workspace, hipStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  return hipblasLtMatmul(handle_, desc_, &alpha, w, a_, x, b_, &beta, c, c_, c, c_, &heur_[i].algo, workspace, ws_bytes_,
                         stream);
}

bool GemmPlan::set_sm_count_target(int sms) {
#if defined(FUSESIM_GPU_HIP)
  (void)sms;
  error_ = "sm_count_target: hipBLASLt has no SM-count target attribute";
  return false;
#else
  const int32_t v = sms;
  const hipblasStatus_t st = cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &v, sizeof v);
  if (st != HIPBLAS_STATUS_SUCCESS) {
    error_ = "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = " + std::to_string(sms) +
             ") failed: status " + std::to_string(static_cast<int>(st)) + " (" + fusesim_blas_status_string(st) + ")";
    return false;
  }
  return true;
#endif
}

bool GemmPlan::try_run(const void* x, const void* w, void* c, void* workspace, hipStream_t stream) {
  if (!ok_) return false;
  const hipblasStatus_t st = matmul(algo_, x, w, c, workspace, stream);
  if (st != HIPBLAS_STATUS_SUCCESS) {
    error_ = "hipblasLtMatmul refused the algorithm in use: status " + std::to_string(static_cast<int>(st)) + " (" +
             fusesim_blas_status_string(st) + ")";
    return false;
  }
  GPU_CHECK(hipStreamSynchronize(stream));
  GPU_CHECK(hipGetLastError());
  return true;
}

std::string GemmPlan::algo_fingerprint() const {
  if (!ok_ || heur_.empty()) return "";
  const auto* b = reinterpret_cast<const unsigned char*>(&heur_[algo_].algo);
  unsigned long long h = 1469598103934665603ULL;  // FNV-1a 64-bit offset basis
  for (size_t i = 0; i < sizeof(heur_[algo_].algo); ++i) h = (h ^ b[i]) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", h);
  return buf;
}

bool GemmPlan::select_working_algo(const void* x, const void* w, void* c, void* workspace, hipStream_t stream) {
  if (!ok_) return false;
  std::string tried;
  for (size_t i = 0; i < heur_.size(); ++i) {
    hipblasStatus_t st = matmul(i, x, w, c, workspace, stream);
    if (st == HIPBLAS_STATUS_SUCCESS) {
      GPU_CHECK(hipStreamSynchronize(stream));
      GPU_CHECK(hipGetLastError());
      algo_ = static_cast<int>(i);
      ws_needed_ = heur_[i].workspaceSize;
      return true;
    }
    tried += " " + std::to_string(static_cast<int>(st));
  }
  ok_ = false;
  error_ = "hipblasLtMatmul refused all " + std::to_string(heur_.size()) +
           " heuristic algorithms (statuses" + tried + ") for m=" + std::to_string(m_) + " n=" +
           std::to_string(n_) + " k=" + std::to_string(k_);
  return false;
}

}  // namespace fusesim::gpu
