// Calibration: fit a hardware file's parameters to measured points (Levenberg-Marquardt on
// relative error, bounded, with weak priors toward the starting values), cross-validate, write
// calibrated hardware files.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"

namespace fusesim::calibrate {

/// One measured value to fit or check: a case's total time, or one of its phases.
struct FitPoint {
  std::string id;        ///< unique id, e.g. "mi355x-dsv4-pro-wo_b-tp8:pull-grid/pull_blocks=24"
  std::string model;     ///< case runner name ("gemm_ar", ...)
  std::string table;     ///< group for hold-out rules and plots (case id up to the first '/')
  YAML::Node params;     ///< the case's parameters
  std::string phase;     ///< empty: the total; else a phase name
  double measured_us = 0;
  double weight = 1.0;   ///< residual weight (phases get less than totals)
  std::string source;
  /// The total compared (phase empty): "" = the runner's predicted_us; "period_us" = its
  /// extra.period_us (an AFD timeline's exchange period).
  std::string metric;
  std::string file;  ///< the measurement file and line it came from (for error messages; may be empty)
  int line = 0;
};

/// Collect every measured total (weight 1) and phase (weight phase_weight) of the scenario files.
/// Errors: hw::FileError from the scenario loader, and for a scenario with layer_fits (its TTFT rows
/// fit their own layer counts, which would absorb any hardware value).
std::vector<FitPoint> points_from_scenarios(const std::vector<std::string>& scenario_paths, double phase_weight = 0.5);

/// Predict every point with a hardware description (us). Errors: whatever the case runner raises.
std::vector<double> predict(const hw::Hardware& hw, const std::vector<FitPoint>& pts);

struct ParamFit {
  std::string key;
  double start_si = 0, value_si = 0, sigma_si = 0, lower_si = 0, upper_si = 0;
  bool at_bound = false;
  /// False when the points do not pin the value down: sigma exceeds |value|, is not finite, or the
  /// points do not depend on the parameter at all (then sigma_si is +infinity).
  bool identified = true;
};

struct PointResult {
  std::string id, table, phase;
  double measured_us = 0, predicted_us = 0, error_pct = 0;
  bool held_out = false;
};

struct FitOptions {
  std::vector<std::string> free_keys;  ///< parameters to fit (default: those of kind "fitted")
  double prior_weight = 0.01;          ///< weight of log(p/p0) residuals (weak prior)
  int max_evaluations = 4000;
};

struct FitResult {
  hw::Hardware fitted;
  std::vector<ParamFit> params;
  std::vector<PointResult> points;     ///< fitted points then held-out points
  double median_abs_fit_pct = 0, max_abs_fit_pct = 0;
  /// Over the held-out totals; empty when no total is held out (`--holdout none`).
  std::optional<double> median_abs_holdout_pct, max_abs_holdout_pct;
  double residual_sigma_pct = 0;       ///< RMS of fitted relative errors (for prediction intervals)
  int evaluations = 0;
  int lm_info = 0;                     ///< Eigen::LevenbergMarquardtSpace::Status (lm_status_name)
};

/// The fitted (not held-out) points of a fit by kind: totals, phases (a phase name), kernel durations
/// (an AFD timeline's "devN/kernel").
struct PointCounts {
  int totals = 0, phases = 0, kernel_durations = 0;
  int all() const { return totals + phases + kernel_durations; }
};
PointCounts fitted_point_counts(const FitResult& r);
/// "356 points (104 totals, 252 kernel durations)"; kinds with no point are left out.
std::string describe_points(const PointCounts& c);
/// True for a kernel-duration phase of an AFD timeline ("dev3/combine_impl").
bool is_kernel_duration(const std::string& phase);

/// Name of an Eigen LevenbergMarquardt status (e.g. 2 -> "RelativeErrorTooSmall") and what it means
/// for the fit (converged, or stopped and why).
std::string lm_status_name(int status);
std::string lm_status_meaning(int status);

/// The warning for a fit on fewer than 3 fitted points per parameter, naming both counts; empty when
/// there are enough. (Which parameters the points leave undetermined: ParamFit::identified.)
std::optional<std::string> few_points_warning(const FitResult& r);

/**
 * Fit `free_keys` of `start` to `train` by bounded Levenberg-Marquardt (Eigen's unsupported
 * LevenbergMarquardt with forward-difference Jacobian). Residuals: weight * (pred - meas) / meas per
 * point, plus prior_weight * log(p / p0) per parameter. Bounds: each parameter is mapped through
 * p = lo * (hi/lo)^((1 + tanh z) / 2) (positive bounds) or a linear tanh map (lo == 0), so every
 * trial stays inside the declared bounds. Deterministic: same inputs, same result.
 * Uncertainty: sigma from (J^T J)^-1 * s^2 in the transformed space, mapped back by the derivative.
 * `test` points are predicted with the fitted parameters and reported as held out.
 * Errors: std::invalid_argument for an unknown or non-fittable key, or no training points.
 */
FitResult fit(const hw::Hardware& start, const std::vector<FitPoint>& train, const std::vector<FitPoint>& test,
              const FitOptions& opt);

/// Write the fitted values into a copy of the hardware description with provenance: kind fitted,
/// fitted_from (the measurement sources), fitted_on (date), commit, sigma (none where it is not
/// finite); the original source text is kept, prefixed with the fitted points by kind ("356 points (104
/// totals, 252 kernel durations)"), the totals' residual statistics and "(not identified by these
/// points)" where that applies. Returns the YAML text (Hardware::to_yaml's layout; see keep_input_layout).
std::string calibrated_yaml(const FitResult& r, const std::vector<std::string>& sources, const std::string& date,
                            const std::string& commit);

/**
 * `written` (a hardware file's YAML as Hardware::to_yaml writes it: sections and keys sorted, the
 * description as one line) laid out as `input`, the text of the file it was loaded from: input's
 * leading comments, its order of top-level blocks and of the keys inside a section, and input's own
 * text (comments, folded description, flow or block style) for every block and key whose content is
 * unchanged. What is not in the input (a new block or key) follows what precedes it in `written`.
 * The result parses to the same content as `written`; if the rearrangement cannot ensure that, it
 * returns input's leading comments followed by `written`, and sets *fell_back (when given) to why.
 */
std::string keep_input_layout(const std::string& input, const std::string& written, std::string* fell_back = nullptr);

/// True for the LM statuses that mean the fit converged (1-4); false for 0 (not run), 5 (stopped at
/// --max-evaluations) and 6-9 (stopped short of the tolerances).
bool lm_converged(int status);

/// Select held-out points: "m=4096" (param equals), "table=pull-grid" (table equals), "kfold=K/I"
/// (the I-th of K interleaved folds, 0-based), "none". Errors: std::invalid_argument on a bad rule.
std::vector<bool> holdout_mask(const std::vector<FitPoint>& pts, const std::string& rule);

}  // namespace fusesim::calibrate
