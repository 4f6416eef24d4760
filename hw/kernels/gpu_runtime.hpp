// gpu_runtime.hpp: the thin portability layer for fusesim's GPU probes.
//
// The probe sources in hw/kernels/ and calibrate/live/ are written against the HIP runtime API
// (hipMalloc, hipMemcpyPeerAsync, hipEventRecord, ...) and hipBLASLt. On ROCm they are compiled by
// hipcc against the real HIP headers. On CUDA they are compiled by nvcc (`-x cu`) and this header
// maps each HIP name used to its CUDA / cuBLASLt equivalent. Only the calls the probes use are
// mapped; add a line here when a probe needs another one.
//
// Debian's HIP headers for the NVIDIA platform are deliberately not used: they do not compile
// against CUDA 13 (cudaDeviceProp fields and prefetch signatures changed).
//
// Platform selection: FUSESIM_GPU_HIP or FUSESIM_GPU_CUDA is defined by hw/kernels/CMakeLists.txt;
// without either, __HIP_PLATFORM_AMD__ selects HIP and __CUDACC__ selects CUDA.
//
// Error handling: every runtime call goes through GPU_CHECK(call), which on failure prints
//   fusesim: GPU call failed: <call text> at <file>:<line>: <error name>: <error string>
// to stderr and exits the process with status 1. BLAS calls go through BLAS_CHECK likewise.
#pragma once

#include <cstdio>
#include <string>
#include <cstdlib>

#if !defined(FUSESIM_GPU_HIP) && !defined(FUSESIM_GPU_CUDA)
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#define FUSESIM_GPU_HIP 1
#elif defined(__CUDACC__)
#define FUSESIM_GPU_CUDA 1
#else
#error "gpu_runtime.hpp: compile with hipcc (HIP) or nvcc -x cu (CUDA)"
#endif
#endif

#if defined(FUSESIM_GPU_HIP)
// ------------------------------------------------------------------------------------------------
// ROCm: the real HIP runtime and hipBLASLt.
#include <hip/hip_bf16.h>
#include <hip/hip_runtime.h>
#include <hipblaslt/hipblaslt.h>
#define FUSESIM_PLATFORM "hip"
/// Flags for the host-mapped flag word used by the start gate (coherent so the GPU sees stores).
#define FUSESIM_HOST_MAPPED_FLAGS (hipHostMallocMapped | hipHostMallocPortable | hipHostMallocCoherent)
/// hipBLASLt has no portable status-to-string call across ROCm releases; the number is printed too.
inline const char* fusesim_blas_status_string(hipblasStatus_t) { return "hipblasStatus_t (see hipblas-common.h)"; }

#else
// ------------------------------------------------------------------------------------------------
// CUDA: map the HIP names used by the probes onto the CUDA runtime and cuBLASLt.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#define FUSESIM_PLATFORM "cuda"

// Types.
using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipGraph_t = cudaGraph_t;
using hipGraphExec_t = cudaGraphExec_t;
using hipDeviceProp_t = cudaDeviceProp;
using hipDeviceAttribute_t = cudaDeviceAttr;
using hipMemcpyKind = cudaMemcpyKind;

// Constants.
#define hipSuccess cudaSuccess
#define hipErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipEventDefault cudaEventDefault
#define hipEventDisableTiming cudaEventDisableTiming
#define hipStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#define hipStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define hipHostMallocMapped cudaHostAllocMapped
#define hipHostMallocPortable cudaHostAllocPortable
#define hipDeviceAttributeClockRate cudaDevAttrClockRate
#define hipDeviceAttributeMemoryClockRate cudaDevAttrMemoryClockRate
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeL2CacheSize cudaDevAttrL2CacheSize
#define hipDeviceAttributeMemoryBusWidth cudaDevAttrGlobalMemoryBusWidth
#define FUSESIM_HOST_MAPPED_FLAGS (cudaHostAllocMapped | cudaHostAllocPortable)

// Device management.
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDriverGetVersion cudaDriverGetVersion
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define hipDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define hipMemGetInfo cudaMemGetInfo

// Kernel attributes and residency.
using hipFuncAttributes = cudaFuncAttributes;
#define hipFuncGetAttributes cudaFuncGetAttributes
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor

// Errors.
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName

// Memory.
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc cudaHostAlloc
#define hipHostFree cudaFreeHost
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpyPeerAsync cudaMemcpyPeerAsync

// Streams and events.
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipEventCreate cudaEventCreate
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime

// Graphs.
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipGraphDestroy cudaGraphDestroy

// hipBLASLt -> cuBLASLt (the signatures of the calls used are the same).
using hipblasStatus_t = cublasStatus_t;
using hipblasLtHandle_t = cublasLtHandle_t;
using hipblasLtMatmulDesc_t = cublasLtMatmulDesc_t;
using hipblasLtMatrixLayout_t = cublasLtMatrixLayout_t;
using hipblasLtMatmulPreference_t = cublasLtMatmulPreference_t;
using hipblasLtMatmulHeuristicResult_t = cublasLtMatmulHeuristicResult_t;
using hipblasOperation_t = cublasOperation_t;
using hipblasComputeType_t = cublasComputeType_t;
using hipDataType = cudaDataType_t;
#define HIPBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define HIPBLAS_OP_N CUBLAS_OP_N
#define HIPBLAS_OP_T CUBLAS_OP_T
#define HIPBLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define HIP_R_32F CUDA_R_32F
#define HIP_R_16BF CUDA_R_16BF
#define HIP_R_8F_E4M3 CUDA_R_8F_E4M3
#define HIPBLASLT_MATMUL_DESC_TRANSA CUBLASLT_MATMUL_DESC_TRANSA
#define HIPBLASLT_MATMUL_DESC_TRANSB CUBLASLT_MATMUL_DESC_TRANSB
#define HIPBLASLT_MATMUL_DESC_A_SCALE_POINTER CUBLASLT_MATMUL_DESC_A_SCALE_POINTER
#define HIPBLASLT_MATMUL_DESC_B_SCALE_POINTER CUBLASLT_MATMUL_DESC_B_SCALE_POINTER
#define HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define hipblasLtCreate cublasLtCreate
#define hipblasLtDestroy cublasLtDestroy
#define hipblasLtMatmulDescCreate cublasLtMatmulDescCreate
#define hipblasLtMatmulDescDestroy cublasLtMatmulDescDestroy
#define hipblasLtMatmulDescSetAttribute cublasLtMatmulDescSetAttribute
#define hipblasLtMatrixLayoutCreate cublasLtMatrixLayoutCreate
#define hipblasLtMatrixLayoutDestroy cublasLtMatrixLayoutDestroy
#define hipblasLtMatmulPreferenceCreate cublasLtMatmulPreferenceCreate
#define hipblasLtMatmulPreferenceDestroy cublasLtMatmulPreferenceDestroy
#define hipblasLtMatmulPreferenceSetAttribute cublasLtMatmulPreferenceSetAttribute
#define hipblasLtMatmulAlgoGetHeuristic cublasLtMatmulAlgoGetHeuristic
#define hipblasLtMatmul cublasLtMatmul
inline const char* fusesim_blas_status_string(cublasStatus_t s) { return cublasLtGetStatusString(s); }
#endif

/// Aborts the process with a message naming the failed call and its source location.
/// `err` is the runtime's return code, `call` the call's source text.
[[noreturn]] inline void fusesim_gpu_fail(hipError_t err, const char* call, const char* file, int line) {
  std::fprintf(stderr, "fusesim: GPU call failed: %s at %s:%d: %s: %s\n", call, file, line,
               hipGetErrorName(err), hipGetErrorString(err));
  // No device, or no driver (a machine without a GPU reports an "insufficient" driver): say so plainly.
  const std::string name = hipGetErrorName(err);
  if (name.find("NoDevice") != std::string::npos || name.find("InsufficientDriver") != std::string::npos)
    std::fprintf(stderr, "fusesim: no usable GPU here (no device or no GPU driver): the probes run on a GPU node; "
                         "see hw/kernels/README.md (on the lent H200s: hw/kernels/run_all_probes.sh through device)\n");
  std::fflush(stdout);
  std::exit(1);
}

/// Checks a HIP/CUDA runtime call; on any status other than hipSuccess, exits with status 1 after
/// printing the call text, file:line and the runtime's error name and string.
#define GPU_CHECK(call)                                                      \
  do {                                                                       \
    hipError_t fusesim_err_ = (call);                                        \
    if (fusesim_err_ != hipSuccess) fusesim_gpu_fail(fusesim_err_, #call, __FILE__, __LINE__); \
  } while (0)

/// Checks the last kernel launch (launch-configuration errors) without synchronizing.
#define GPU_CHECK_LAUNCH() GPU_CHECK(hipGetLastError())

/// Checks a hipBLASLt/cuBLASLt call; on failure exits with status 1 naming the call and file:line.
#define BLAS_CHECK(call)                                                                     \
  do {                                                                                       \
    hipblasStatus_t fusesim_bs_ = (call);                                                    \
    if (fusesim_bs_ != HIPBLAS_STATUS_SUCCESS) {                                             \
      std::fprintf(stderr, "fusesim: BLAS call failed: %s at %s:%d: status %d (%s)\n", #call, \
                   __FILE__, __LINE__, static_cast<int>(fusesim_bs_),                        \
                   fusesim_blas_status_string(fusesim_bs_));                                 \
      std::fflush(stdout);                                                                   \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)
