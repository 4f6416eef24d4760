// The fused GEMM + all-reduce prediction used by `fusesim trace whatif --fuse-gemm-ar --hw FILE`:
// a strong definition replacing the trace module's weak "not yet wired" default.
#include <memory>

#include "calibrate/trace/whatif.hpp"
#include "models/gemm_ar.hpp"
#include "models/params.hpp"

namespace fusesim::trace {

/// Predictor over the gemm_ar model on the given hardware file: fused-sdma, bf16 wire, the file's
/// defaults otherwise; returns the whole call's time in microseconds (M padded as the kernel does).
/// Errors: hw::FileError for a bad hardware file; std::invalid_argument for an impossible shape.
GemmArPredictor default_gemm_ar_predictor(const std::string& hw_path) {
  auto hw = std::make_shared<hw::Hardware>(models::load_hardware(hw_path));
  return [hw](int64_t m, int64_t n, int64_t k, int world_size) {
    models::GemmArConfig c;
    c.mode = "fused-sdma";
    c.m = m;
    c.n = n;
    c.k = k;
    c.world_size = world_size;
    return models::simulate_gemm_ar(*hw, c).total_us;
  };
}

}  // namespace fusesim::trace
