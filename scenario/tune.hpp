// The knob search behind `fusesim tune`: for each shape and M, the setting of a model's knobs with
// the smallest predicted time, its 95% band, the gain over a named baseline, the settings the band
// cannot separate from it, the effect of each knob varied alone, and the serving threshold (the
// smallest M from which the best settings beat the baseline, by models::break_even_search). The
// knob space is derived from the model's case schema (CaseParam::knob: choices and ranges), never
// listed here. Model-generic: it runs cases through ModelSpec::run and ModelSpec::interval.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/hardware.hpp"
#include "models/model.hpp"

namespace fusesim::scenario {

/// One knob of the search: its key and candidate values (JSON scalars), its default (the schema's).
struct Knob {
  std::string key;
  std::vector<nlohmann::json> values;
  nlohmann::json fallback;  ///< the schema's default (null when it has none)
};

/// Options of tune().
struct TuneOptions {
  std::vector<nlohmann::json> shapes;           ///< each a mapping of fixed case parameters (n, k, world_size, ...)
  std::vector<int64_t> ms;                      ///< M of every shape (rows; each >= 1, ascending)
  nlohmann::json baseline = nlohmann::json::object();  ///< the baseline's parameters over a shape (e.g. {"mode": "rccl"})
  std::map<std::string, std::vector<nlohmann::json>> values;  ///< a knob's candidates restricted to these (each must be allowed)
  nlohmann::json fixed = nlohmann::json::object();  ///< parameters held for every setting (a knob given here is not searched)
  std::vector<std::string> only;    ///< non-empty: search only these knobs (the others keep their defaults unless fixed)
  int64_t exhaustive_limit = 4096;  ///< a space of at most this many settings is searched exhaustively
  int restarts = 4;                 ///< coordinate descent: random starts besides the defaults
  unsigned seed = 1;                ///< coordinate descent: the random starts' seed (same seed, same result)
  std::string m_key = "m";          ///< the case parameter that is M
  /// The most model evaluations the whole tune may need in the worst case (tune_evaluation_bound),
  /// checked before it starts; also the most settings one shape and M keeps in its cache.
  int64_t max_evaluations = kDefaultMaxTuneEvaluations;
  static constexpr int64_t kDefaultMaxTuneEvaluations = 2000000;
};

/// Coordinate descent's passes per start at most (a pass varies every knob once).
inline constexpr int kTuneMaxPasses = 50;

/// The worst-case model evaluations of tune() over `shapes` shapes x `ms` values of M, with knobs
/// `knobs` (space size and values each): per shape and M, the whole space when exhaustive (space <=
/// opt.exhaustive_limit), else at most min(space, (restarts + 1) x (1 + kTuneMaxPasses x the knobs'
/// values summed)), plus the baseline. `how` (when not null) says where the count comes from, naming
/// the options. Saturates at about 9e18.
double tune_evaluation_bound(const std::vector<Knob>& knobs, size_t shapes, size_t ms, const TuneOptions& opt, std::string* how = nullptr);

/**
 * The knobs of `schema` (CaseParam::knob), in declaration order: a Name's choices less its
 * not_searched ones, a Flag's false and true, an Integer's ladder 1, 2, 3, 4, 6, 8, 12, 16, ...
 * (powers of two and 1.5 x them) within its [min, max] (max absent: up to 4096). `values` restricts a
 * knob to the listed candidates, `fixed` removes it, a non-empty `only` keeps only the knobs it names, `baseline`'s value of a knob is left out (the
 * search looks for the best setting other than the baseline's). Errors: std::invalid_argument
 * naming the key of `values` that is not a knob of the model, or a value it does not allow.
 */
std::vector<Knob> knob_space(const models::CaseSchema& schema, const TuneOptions& opt);

/**
 * Search the knob space of model `spec` on `hw` for every shape of opt.shapes at every M of opt.ms.
 * Exhaustive when the space has at most opt.exhaustive_limit settings; otherwise coordinate descent
 * with restarts: from the schema's defaults and opt.restarts random settings (std::mt19937 seeded by
 * opt.seed), each pass varies one knob at a time over all its values with the others held, moving
 * only on a strictly smaller time, until a pass moves nothing; settings the model refuses are
 * skipped. The best setting's knobs are then put back to their defaults where that changes no
 * time. Output: {"model", "hardware", "hardware_file", "search": {...}, "knobs": [{key, values}],
 * "baseline", "shapes": [{"shape", "points": [{"m", "space_size", "method", "evaluations",
 * "refused", "best": {"setting", "predicted_us", "interval_us"|null}, "baseline": {...},
 * "gain_pct", "within_band": [{setting, predicted_us}] (sorted; at most 50), "within_band_count",
 * "knob_effects": [{key, best_value, min_us, max_us, spread_pct, values:[{value, predicted_us|null}]}]}],
 * "threshold": {"m_vs_baseline", "m_vs_baseline_aligned", "padding_step", "max_m", "settings"} or
 * {"none": why}}]}. Errors: std::invalid_argument for a model without a schema or knobs, a shape
 * or baseline the model refuses (its message), no M.
 */
nlohmann::json tune(const models::ModelSpec& spec, const hw::Hardware& hw, const std::string& hw_path, const TuneOptions& opt);

/// tune()'s result as a text table: per shape, per M the best setting (knobs off their default),
/// predicted time and band, the baseline, the gain, ties and evaluations; the knobs that matter;
/// the threshold.
std::string format_tune_table(const nlohmann::json& result);

/// tune()'s result as a scenario file (YAML) to feed back to `fusesim run`: per shape and M, a case
/// with the best setting and one with the baseline.
std::string format_tune_scenario(const nlohmann::json& result);

}  // namespace fusesim::scenario
