// Break-even M of the fused path (fused-sdma) against the split path and the RCCL baseline, for one
// shape and wire, on the gemm_ar model (`fusesim breakeven`).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

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

/// A threshold of break_even_search: the smallest M from which a path wins at every larger M up to
/// max_m (-1: none; 1: at every M), and the same over multiples of the padding step only.
struct Threshold {
  int64_t every_m = -1, aligned = -1;
};

/**
 * The search behind break_even, for any pair of paths whose winner changes along M: `wins(m)` says,
 * per comparison (a fixed count), whether the path of interest wins at M=m. The padded path costs the
 * same over each padding step (k*step, (k+1)*step] while the other grows with M, so both ends of
 * every step up to max_m are evaluated (a step's first M is the padded path's worst case; a max_m
 * inside a step adds that step's part), and the step from which it wins for good is bisected over
 * whole M. Returns one Threshold per comparison. Calls `wins` in a fixed order: both ends of every
 * step, then each comparison's bisection in turn. Errors: whatever `wins` throws.
 */
std::vector<Threshold> break_even_search(int64_t step, int64_t max_m, int comparisons,
                                         const std::function<std::vector<bool>(int64_t m)>& wins);

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
