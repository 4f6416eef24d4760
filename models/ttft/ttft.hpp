// The ttft model (serving impact): a layer's predicted change composed into a prefill's TTFT change,
// and the layer counts a scenario fits on its measured rows (`layer_fits`). Registered in
// models/registry.inc.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
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
 * Errors: models::ParamError naming a missing or bad parameter: counts that are not whole numbers
 * >= 1 (layers: not > 0, or still {fit: NAME}, which only a scenario run resolves), 'base' and 'fused'
 * that are not the same layer (n, k, world_size, quant) or that set 'm', an arm the gemm_ar model
 * refuses, a ttft_base_ms shorter than the base arm's layers alone; std::invalid_argument for a trace
 * sink (this model has no timeline).
 */
nlohmann::json run_ttft_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

/**
 * A run_ttft_case result recomposed at another layer count, without simulating again: predicted_us,
 * ttft_change_pct, layer_share_of_ttft_pct and params.layers follow `layers` (the per-layer
 * saving_per_layer_forward_us and base_layer_forward_us, in us over the prompt's chunks, stay).
 * Errors: models::ParamError when layers <= 0 or the base arm's layers alone reach the base TTFT.
 */
nlohmann::json ttft_at_layers(const nlohmann::json& result, double layers);

/// A count of fused layers (wo_b calls per chunk) that no seed states, fitted on the measured rows
/// `cases` of a ttft scenario (`layer_fits: [{name, cases: [ID, ...], source, nominal?,
/// nominal_source?, max_layers?}]`); a case takes it with `layers: {fit: NAME}`.
struct LayerFit {
  std::string name;
  std::vector<std::string> cases;  ///< ids of the rows it is fitted on
  std::string source;              ///< why the count is fitted and not stated
  double nominal = 0;              ///< the count one would assume (0: none given), reported beside the fit
  std::string nominal_source;      ///< where the nominal count comes from
  double max_layers = 0;           ///< a fitted count above this is warned about (0: no bound)
  int line = 0;
};
/// A scenario's layer fits and which case takes which.
struct LayerFits {
  std::vector<LayerFit> fits;
  std::map<std::string, std::string> fit_of;  ///< case id -> the fit its layers take
  std::set<std::string> fitted_on;            ///< case ids a fit lists (the others are held out)
  /// The fit case `case_id` takes ("" when it states a number).
  std::string fit_name(const std::string& case_id) const;
};
/**
 * The `layer_fits` of a ttft scenario checked against its cases: each fit's rows exist, have a
 * measured value that is not a known miss and take that fit's count; every `layers: {fit: NAME}`
 * names a fit; every fit is used. Errors: hw::FileError naming the file, line and key
 * (layer_fits[I].field, cases[ID].params.layers).
 */
LayerFits layer_fits(const Scenario& sc);

/// The summary line of a run with layer fits: the held-out rows' statistics first, then the
/// fitted-on rows'. `summary` is the run's "summary" (with "held_out", "fitted_on", "layer_fits").
std::string layer_fit_summary(const nlohmann::json& summary);

}  // namespace fusesim::models
