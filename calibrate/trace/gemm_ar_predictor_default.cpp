// fusesim trace: weak default of the fused GEMM + all-reduce predictor hook (see whatif.hpp).
#include <stdexcept>

#include "calibrate/trace/whatif.hpp"

namespace fusesim::trace {

__attribute__((weak)) GemmArPredictor default_gemm_ar_predictor(const std::string& hw_path) {
  throw std::runtime_error("--fuse-gemm-ar: the fused GEMM+all-reduce predictor is not yet wired (hw file " +
                           hw_path + "); link a definition of fusesim::trace::default_gemm_ar_predictor");
}

}  // namespace fusesim::trace
