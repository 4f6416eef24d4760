// Scenarios: YAML files of cases (with sweeps) and the measured values to compare with.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
#include "sim/trace.hpp"

namespace fusesim::models {

/// A measured value of a case (one number, or per-phase numbers), with its source.
struct Measured {
  std::optional<double> value_us;
  std::map<std::string, double> phases_us;  ///< phase name -> measured duration (us)
  /// Which prediction value_us compares with: "predicted_us" (default), or "period_us" when the
  /// entry gives `period_us:` (compared with the runner's extra.period_us; e.g. AFD timelines,
  /// whose per-kernel `kernels:` lists are checked by the AFD tests, not here).
  std::string metric = "predicted_us";
  std::string source;
  /// Non-empty: the model is known to miss this point, and why. `fusesim check` reports it as a
  /// known miss instead of a failure, and fails if it unexpectedly falls within tolerance (strict),
  /// so the flag is removed once the model improves.
  std::string known_miss;
  /// A measured timeline (AFD `kernels: [{device, kernel, start_us, end_us}]`): each kernel's
  /// duration, compared with the runner's phase "devN/kernel".
  struct KernelSpan {
    int device = 0;
    std::string kernel;
    double duration_us = 0;
    int line = 0;  ///< line of the entry in the scenario file
    double start_us = 0, end_us = 0;  ///< on the timeline's clock (duration_us = end_us - start_us)
    /// "devN/KERNEL": the run's phase name for this kernel, and the key known misses use.
    std::string name() const { return "dev" + std::to_string(device) + "/" + kernel; }
  };
  std::vector<KernelSpan> kernels;
};

/// One expanded case of a scenario (a sweep expands into one case per combination).
struct Case {
  std::string id;
  YAML::Node params;          ///< defaults merged with the case's params and this sweep point
  std::optional<Measured> measured;
  double tolerance_pct = 10;  ///< |error| allowed by `fusesim check`
  int line = 0;               ///< line of the case in the scenario file
  /// Line of each parameter's key (defaults, the case's params, its sweep), for error messages.
  std::map<std::string, std::pair<int, std::string>> param_lines;  ///< key -> (line, "defaults" | "params" | "sweep")
  std::string layer_fit;  ///< ttft: the layer fit its `layers: {fit: NAME}` takes ("" when it states a number)
  bool fitted_on = false;  ///< ttft: listed by that fit's `cases` (else held out)
};

/**
 * A scenario file:
 *   scenario: NAME
 *   description: TEXT
 *   hardware: hw/FILE.yaml          # relative to the scenario's folder or the repository root
 *   model: gemm_ar | afd | ttft
 *   tolerance_pct: 10               # default for every case
 *   defaults: {param: value, ...}   # merged under every case's params
 *   cases:
 *     - id: NAME
 *       params: {param: value, ...}
 *       sweep: {param: [v1, v2, ...], ...}    # optional: cartesian product, ids get "/param=v"
 *       measured: {value_us: X, source: "table, row"}             # single case
 *       measured: [{at: {param: v}, value_us: X, source: "..."}]  # per sweep point
 *       (any measured entry may add known_miss: "why the model misses it")
 *       measured_phases: {phases_us: {gemm: X, ...}, source: "..."}
 *       tolerance_pct: 5
 *   kernel_durations: {tolerance_pct: 15, known_misses: [{case, kernel, reason}]}  # timelines (AFD)
 *   layer_fits: [{name, cases: [ID, ...], source,     # ttft only: a fused-layer count fitted on the listed
 *                 nominal?, nominal_source?, max_layers?}]  # rows; a case takes it with `layers: {fit: NAME}`
 * Errors (hw::FileError naming file, line and key): unreadable file, YAML syntax, a second YAML
 * document (`---`), unknown keys (also inside measured values), a field of the wrong type, missing
 * `scenario`/`hardware`/`model`/`cases`, a measured value without source, a known_miss that is not a
 * reason (text), a sweep that is not a list, a measured `at:` naming a parameter that is not swept,
 * matching no sweep point or several, or a point given twice, duplicate case ids; `layer_fits` outside
 * the ttft model, a fit named twice, a fit row that is not a case, has no measured value or does not
 * take that fit's layers, a case whose `layers: {fit: NAME}` names no fit, a fit no case uses. Keys are written
 * cases[ID].field (cases[INDEX].field, from 0, for a case without a usable id).
 */
struct Scenario {
  std::string path, name, description, hardware_path, model;
  int hardware_line = 0;  ///< line of `hardware:` in the scenario file
  std::vector<Case> cases;
  /// Per-kernel durations of measured timelines: `kernel_durations: {tolerance_pct: 15, known_misses:
  /// [{case, kernel: devN/NAME, reason}]}` (tolerance 15% when not given).
  double kernel_tolerance_pct = 15.0;
  std::map<std::string, std::string> kernel_known_misses;  ///< "case devN/kernel" -> reason
  /// ttft scenarios: a count of fused layers (wo_b calls per chunk) that no seed states, fitted by
  /// run_scenario on the measured rows listed (least squares on the TTFT change in points); every case
  /// with `layers: {fit: NAME}` uses it, and the rows not listed are held out (predictions).
  struct LayerFit {
    std::string name;
    std::vector<std::string> cases;  ///< ids of the rows it is fitted on
    std::string source;              ///< why the count is fitted and not stated
    double nominal = 0;              ///< the count one would assume (0: none given), reported beside the fit
    std::string nominal_source;      ///< where the nominal count comes from
    double max_layers = 0;           ///< a fitted count above this is warned about (0: no bound)
    int line = 0;
  };
  std::vector<LayerFit> layer_fits;
  static Scenario load(const std::string& path);
};

/// Options for running a scenario.
struct RunOptions {
  sim::TraceSink* trace = nullptr;  ///< where to record the trace of every case (may be null)
  std::string only;                 ///< if non-empty, only cases whose id contains this text
};

/// A model's case runner: (hardware, case params, trace) -> {"predicted_us", "phases":[...], ...}.
/// Unknown parameters must raise std::invalid_argument naming the key.
using CaseRunner = std::function<nlohmann::json(const hw::Hardware&, const YAML::Node&, sim::TraceSink*)>;

/// Registered case runners by model name ("gemm_ar", ...).
std::map<std::string, CaseRunner>& case_runners();

/**
 * Run every case and compare with the measured values. Output layout:
 * {"scenario", "hardware", "model", "cases":[{"id","params","predicted_us","measured_us"|null,
 *  "error_pct"|null, "tolerance_pct", "within_tolerance"|null, "known_miss"?, "interval_us"? (95%, from
 *  the hardware file's calibration residuals), "phases":[{"name","start_us","end_us",
 *  "measured_us"?, "error_pct"?}], "source"?, ...model extras}],
 *  "summary":{"compared","median_abs_error_pct","max_abs_error_pct","outside_tolerance","known_misses",
 *  "unexpected_passes","runtime_ms","warnings":[text], "held_out"?, "fitted_on"?, "layer_fits"?}}. Known misses count in the error statistics but not in
 *  outside_tolerance; a known miss within tolerance counts in unexpected_passes. With `layer_fits`
 *  (ttft) each fit's count is solved first, over its rows with layers = 1: L = sum(a*y) / sum(a*a),
 *  a = the layer's change per forward / base TTFT, y = the measured change / base TTFT; a case using
 *  it carries "layers_fit": {name, layers, fitted_on, rms_points, row: "fitted" | "held out"}, and the
 *  summary's "held_out" and "fitted_on" give {compared, median_abs_error_pct, max_abs_error_pct} over
 *  each kind of row. A fit whose rows give no layer dependence, a count <= 0, or a count whose base
 *  layers exceed a row's base TTFT is a hw::FileError at its line; a fit on one row, one that holds
 *  out no row, or one above its max_layers adds a warning.
 * Errors: hw::FileError for a bad case (file, line, key) and for hardware that lacks a parameter the
 * model's declarations mark required (naming the scenario's `hardware:` line, the hardware file and
 * the missing keys), std::runtime_error for an unknown model.
 */
nlohmann::json run_scenario(const Scenario& sc, const hw::Hardware& hw, const RunOptions& opt = {});

/// Load the scenario's hardware file (resolved like Scenario::load documents).
hw::Hardware load_scenario_hardware(const Scenario& sc);

/// One measured value beside its prediction (us): a case's compared metric, or one kernel's duration.
struct ComparedPoint {
  std::string case_id;
  std::string what;  ///< the compared metric ("predicted_us", "period_us") or "devN/kernel"
  double measured = 0, predicted = 0;
  double err_pct() const { return 100.0 * (predicted - measured) / measured; }
};

/// Every case of a run_scenario result that has a measured value: {id, compared_metric, measured_us,
/// predicted_us}. Known misses are included (callers that exclude them read `known_miss`).
std::vector<ComparedPoint> compared_points(const nlohmann::json& res);

/// Median of `v` (any order; the mean of the two middle values for an even count), the one every
/// error summary uses. Errors: std::invalid_argument when `v` is empty.
double median(std::vector<double> v);

/// Per-kernel durations are judged (and fitted) from this many tokens per Attention rank up (issue 6:
/// "per-kernel durations within 15% at T >= 128"). Below, a kernel lasts a few us of fixed launch and
/// signalling costs; fusesim_afd_fit adds those kernels only with --small-t-kernel-weight.
inline constexpr int kKernelDurationMinTokens = 128;

/// The measured kernel spans of `c` when its `tokens` lie in [min_tokens, max_tokens], else none.
const std::vector<Measured::KernelSpan>& kernels_at_tokens(const Case& c, int min_tokens, int max_tokens);

/// The measured kernel spans of `c` that are judged: its timeline's when the case runs
/// T >= kKernelDurationMinTokens, else none.
inline const std::vector<Measured::KernelSpan>& judged_kernels(const Case& c) {
  return kernels_at_tokens(c, kKernelDurationMinTokens, std::numeric_limits<int>::max());
}

/// Per-kernel durations of the scenario's measured timelines (AFD `measured.kernels`) of the cases
/// whose `tokens` lie in [min_tokens, max_tokens] (by default the judged ones, T >= 128), each against
/// the run's own phase "devN/kernel" (end - start); kernels the model does not run on that device are
/// skipped. fusesim_afd_fit also fits the T < 128 ones (--small-t-kernel-weight).
std::vector<ComparedPoint> kernel_duration_points(const Scenario& sc, const nlohmann::json& res,
                                                  int min_tokens = kKernelDurationMinTokens,
                                                  int max_tokens = std::numeric_limits<int>::max());

/**
 * kernel_duration_points judged against the scenario's `kernel_durations` (tolerance, known misses):
 * {total, within, tolerance_pct, median_abs_error_pct, max_abs_error_pct, misses: [{case, kernel,
 * measured_us, predicted_us, error_pct, known, reason}], new_misses, known_now_within: [{case, kernel,
 * error_pct}], below_min_tokens: {total, median_abs_error_pct, max_abs_error_pct, outside_tolerance} of
 * the unjudged T < 128 kernels, or null}; null when no case has a timeline at T >= 128.
 */
nlohmann::json kernel_durations(const Scenario& sc, const nlohmann::json& res);

/// The summary line of a run with layer fits (ttft): the held-out rows' statistics first, then the
/// fitted-on rows'. `summary` is run_scenario's "summary" (with "held_out", "fitted_on", "layer_fits").
std::string layer_fit_summary(const nlohmann::json& summary);

/// Render the result as an aligned text table, or CSV (one row per case; columns id, predicted_us,
/// measured_us, error_pct, params (JSON), phases (name=duration_us;...), window_MiB, wire_rel_l2,
/// nic_ops (AFD on pods: devN=atomics_in/atomics_out/inline_writes_out/payload_writes/polls;...),
/// whatif_without_us, layers and layers_row (ttft: "fitted" or "held out"); empty where not reported).
std::string format_table(const nlohmann::json& result);
std::string format_csv(const nlohmann::json& result);

/// The gemm_ar case runner (registered under "gemm_ar").
nlohmann::json run_gemm_ar_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

}  // namespace fusesim::models
