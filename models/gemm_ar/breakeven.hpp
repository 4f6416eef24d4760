// Break-even M of the fused path (fused-sdma) against the split path and the RCCL baseline, for one
// shape and wire, on the gemm_ar model (`fusesim breakeven`).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "hw/hardware.hpp"
#include "models/gemm_ar/gemm_ar.hpp"

namespace fusesim::models {

/// Result of a break-even search.
struct BreakEven {
  int64_t m_vs_split = -1;  ///< smallest M (<= max_m) from which fused < split at every larger M; -1 if none
  int64_t m_vs_rccl = -1;   ///< ... from which fused < the RCCL ring baseline (1: at every M)
  /// The same over M that are multiples of ws*BLOCK_M only (no padding rows; serving declines
  /// ragged M anyway): the smallest such M from which fused wins at every such M above; -1 if none.
  int64_t m_vs_split_aligned = -1, m_vs_rccl_aligned = -1;
  nlohmann::json curve;     ///< [{m, fused_us, split_us, rccl_us}] at the points evaluated
};

/**
 * One point of a break-even curve: {m, fused_us, split_us, rccl_us} for the shape of `fused` at M=m,
 * fused-sdma on its wire against split-sdma and the RCCL baseline, both on the bf16 SDMA wire (the
 * split and baseline paths have no other). Errors: those of simulate_gemm_ar.
 */
nlohmann::json break_even_point(const hw::Hardware& hw, const GemmArConfig& fused, int64_t m);

/**
 * Smallest M from which the fused path (fused-sdma on the given wire) beats the split path
 * (split-sdma) and the RCCL baseline, for the shape and wire of `fused`. The fused and split kernels
 * pad M to a multiple of ws*BLOCK_M and the baseline does not, so both ends of every padding step up
 * to max_m are evaluated (a step's first M is the fused path's worst case), and the step where the
 * fused path starts to win for good is bisected over whole M. "From which" means it wins there and
 * at every M above, up to max_m.
 */
BreakEven break_even(const hw::Hardware& hw, const GemmArConfig& fused, int64_t max_m = 65536);

}  // namespace fusesim::models
