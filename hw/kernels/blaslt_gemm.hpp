// blaslt_gemm.hpp: one vendor-BLAS (cuBLASLt / hipBLASLt) matrix product, as the probes and
// calibrate/live/gemm_ar_live use it.
//
// Layout (row-major, as a PyTorch Linear layer stores it):
//   C[m, n] (bf16) = scale_x * scale_w * X[m, k] · W[n, k]^T
// X and W are both bf16, or both fp8 e4m3 with one fp32 scale per tensor (device pointers).
// In the library's column-major terms this is the "TN" product D'(n x m) = op_T(W')·X' with
// lda = ldb = k and ldd = n, the layout fp8 requires on Hopper. A row band [r0, r1) of C is the
// product of X's rows [r0, r1): pass x + r0*k and c + r0*n to a plan built with m = r1 - r0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_runtime.hpp"

namespace fusesim::gpu {

/// Input element type of a GEMM. The output is always bf16, the accumulation fp32.
enum class GemmDtype { bf16, fp8_e4m3 };

/// "bf16" or "fp8_e4m3".
const char* gemm_dtype_name(GemmDtype d);
/// Bytes per input element: 2 (bf16) or 1 (fp8).
size_t gemm_dtype_bytes(GemmDtype d);
/// Parses "bf16" / "fp8" / "fp8_e4m3"; returns false on anything else.
bool parse_gemm_dtype(const std::string& s, GemmDtype* out);

/// Workspace the plans are allowed to use (the size NVIDIA recommends for Hopper).
constexpr size_t kGemmWorkspaceBytes = 32u << 20;

/// One configured matmul on the current device. Construction never exits: when the library has no
/// algorithm for the shape/type (or a descriptor call fails), ok() is false and error() says which
/// call failed. Not copyable; destroy it on the device it was made on.
class GemmPlan {
 public:
  /// m, n, k: the product's dimensions (elements). scale_x_dev / scale_w_dev: device pointers to one
  /// fp32 each, used for fp8 only (may be null for bf16). workspace_bytes: the most workspace the
  /// chosen algorithm may need. sm_count_target > 0: the library plans the product for that many SMs
  /// (cuBLASLt's CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, set before the heuristic runs); on HIP, where
  /// hipBLASLt has no such attribute, ok() is false with an error saying so.
  GemmPlan(hipblasLtHandle_t handle, GemmDtype dtype, int64_t m, int64_t n, int64_t k,
           size_t workspace_bytes, const float* scale_x_dev = nullptr, const float* scale_w_dev = nullptr,
           int sm_count_target = 0);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  /// Workspace the chosen algorithm asked for in the heuristic's answer (bytes); run() passes the
  /// whole workspace_bytes given at construction, as PyTorch does.
  size_t workspace_needed_bytes() const { return ws_needed_; }
  /// Number of algorithms the heuristic offered; index of the one in use.
  int algo_count() const { return static_cast<int>(heur_.size()); }
  int algo_index() const { return algo_; }
  /// 16 hex digits: FNV-1a of the opaque algorithm descriptor in use (cublasLtMatmulAlgo_t /
  /// hipblasLtMatmulAlgo_t bytes), so two programs can tell whether the library gave them the same
  /// kernel configuration for a shape. Empty when the plan is not ok().
  std::string algo_fingerprint() const;
  /// 2*m*n*k.
  double flops() const { return 2.0 * static_cast<double>(m_) * static_cast<double>(n_) * static_cast<double>(k_); }

  /// Enqueues C = X·W^T on `stream` (x: m*k, w: n*k inputs, c: m*n bf16; workspace of at least
  /// the workspace_bytes given at construction). Exits 1 (naming the call) if the library call fails.
  void run(const void* x, const void* w, void* c, void* workspace, hipStream_t stream) const;

  /// Runs the product once with each algorithm the heuristic offered, in its order, until one is
  /// accepted by the library and completes without a GPU error; keeps that one for run(). Blocks
  /// on `stream`. Returns false (and sets error()) when none works; never exits on BLAS errors.
  bool select_working_algo(const void* x, const void* w, void* c, void* workspace, hipStream_t stream);

  /// Sets CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET on the plan's descriptor AFTER the heuristic chose its algorithm
  /// (0: none), so run() launches the same algorithm told to target `sms` SMs (issue 19: the same kernel with
  /// fewer CTAs, if the library sizes the grid from the descriptor at launch). Returns false (and sets
  /// error()) when the library refuses the attribute, and on HIP (hipBLASLt has no such attribute).
  bool set_sm_count_target(int sms);

  /// Runs the product once with the algorithm in use and blocks on `stream`; returns false (and sets error())
  /// when the library refuses the call, instead of exiting as run() does (a pinned SM-count target may make the
  /// chosen algorithm invalid).
  bool try_run(const void* x, const void* w, void* c, void* workspace, hipStream_t stream);

 private:
  /// One hipblasLtMatmul of C = X·W^T with the heuristic's algorithm i (run, try_run, select_working_algo).
  hipblasStatus_t matmul(size_t i, const void* x, const void* w, void* c, void* workspace, hipStream_t stream) const;

  hipblasLtHandle_t handle_;
  int64_t m_, n_, k_;
  bool ok_ = false;
  std::string error_;
  size_t ws_needed_ = 0, ws_bytes_ = 0;
  int algo_ = 0;
  hipblasLtMatmulDesc_t desc_ = nullptr;
  hipblasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  std::vector<hipblasLtMatmulHeuristicResult_t> heur_;
};

}  // namespace fusesim::gpu
