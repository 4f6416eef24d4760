// Calibration: fit a hardware file's parameters to measured points (Levenberg-Marquardt on
// relative error, bounded, with weak priors toward the starting values), cross-validate, write
// calibrated hardware files.
#pragma once

#include <functional>
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
};

/// Collect every measured total (weight 1) and phase (weight phase_weight) of the scenario files.
/// Errors: hw::FileError from the scenario loader.
std::vector<FitPoint> points_from_scenarios(const std::vector<std::string>& scenario_paths, double phase_weight = 0.5);

/// Predict every point with a hardware description (us). Errors: whatever the case runner raises.
std::vector<double> predict(const hw::Hardware& hw, const std::vector<FitPoint>& pts);

struct ParamFit {
  std::string key;
  double start_si = 0, value_si = 0, sigma_si = 0, lower_si = 0, upper_si = 0;
  bool at_bound = false;
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
  double median_abs_holdout_pct = 0, max_abs_holdout_pct = 0;
  double residual_sigma_pct = 0;       ///< RMS of fitted relative errors (for prediction intervals)
  int evaluations = 0;
  int lm_info = 0;
};

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
/// fitted_from (the measurement sources), fitted_on (date), commit, sigma; the original source text
/// is kept, prefixed with the residual statistics. Returns the YAML text.
std::string calibrated_yaml(const FitResult& r, const std::vector<std::string>& sources, const std::string& date,
                            const std::string& commit);

/// Select held-out points: "m=4096" (param equals), "table=pull-grid" (table equals), "kfold=K/I"
/// (the I-th of K interleaved folds, 0-based), "none". Errors: std::invalid_argument on a bad rule.
std::vector<bool> holdout_mask(const std::vector<FitPoint>& pts, const std::string& rule);

}  // namespace fusesim::calibrate
