// Serving impact: a layer's predicted change composed into a prefill TTFT change; break-even M.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
#include "models/gemm_ar.hpp"
#include "sim/trace.hpp"

namespace fusesim::models {

/**
 * TTFT of a prefill with the layer replaced (model `ttft`). Params:
 *   base: {gemm_ar params of what the model runs today, e.g. mode: rccl}
 *   fused: {gemm_ar params of the fused layer}
 *   prompt_tokens, batch        tokens per request and requests in the batch
 *   chunk_tokens                chunked-prefill size (each chunk is one call with M = its tokens)
 *   layers                      layers that run the fused op per chunk (> 0; a count fitted by a
 *                               scenario's layer_fits may be fractional: an average over calls)
 *   ttft_base_ms                the measured baseline TTFT (a stated input, not predicted)
 * The prefill runs ceil(batch * prompt_tokens / chunk_tokens) chunks; per chunk and layer the call
 * changes by fused(M) - base(M) (both predicted by the gemm_ar model on the scenario's hardware).
 * predicted TTFT = ttft_base + layers * sum over chunks of the change. Reported in us, with
 * "ttft_change_pct", the layer's share of the baseline TTFT, "saving_per_layer_forward_us" (the
 * layer's saving summed over the prompt's chunks) and "base_layer_forward_us" (the base arm's layer
 * summed over them).
 * Errors: std::invalid_argument naming a missing or bad parameter: counts that are not whole numbers
 * >= 1 (layers: not > 0, or still {fit: NAME}, which only run_scenario resolves), 'base' and 'fused' that are not the same layer (n, k, world_size, quant) or that set 'm', a
 * ttft_base_ms shorter than the base arm's layers alone, or a trace sink (this model has no timeline).
 */
nlohmann::json run_ttft_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

/**
 * A run_ttft_case result recomposed at another layer count, without simulating again: predicted_us,
 * ttft_change_pct, layer_share_of_ttft_pct and params.layers follow `layers` (the per-layer
 * saving_per_layer_forward_us and base_layer_forward_us, in us over the prompt's chunks, stay).
 * Errors: std::invalid_argument when layers <= 0 or the base arm's layers alone reach the base TTFT.
 */
nlohmann::json ttft_at_layers(const nlohmann::json& result, double layers);

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
