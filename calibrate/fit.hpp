// Calibration: fit a hardware file's parameters to measured points, cross-validate, write
// calibrated hardware files. One objective (a residual vector: each point's weighted relative or log
// error, optional hinge and median-cap terms, weak priors toward the starting values) and two
// minimisers of it: bounded Levenberg-Marquardt (the default) and Nelder-Mead on log-parameters
// (the method that set the AFD hardware files' values).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"

namespace fusesim::calibrate {

/// What a measured point is; it decides which objective terms the point enters (see FitOptions).
enum class PointKind {
  Total,     ///< a case's value: its value_us (or an AFD timeline's period_us)
  Phase,     ///< one phase's duration (a scenario's measured_phases)
  /// One kernel's duration in a measured AFD timeline at T >= models::kKernelDurationMinTokens (the
  /// durations `fusesim check` judges); phase "devN/kernel".
  KernelDuration,
  /// The same below T = 128 (not judged); loaded only when --small-t-kernel-weight is above 0.
  SmallTKernelDuration,
};
/// "total", "phase", "kernel duration", "kernel duration at T < 128".
const char* point_kind_name(PointKind k);

/// One measured value to fit or check: a case's total time, one of its phases, or one kernel of a
/// measured AFD timeline.
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
  /// Which objective terms it enters. points_from_scenarios sets it; load_fit_points leaves Total
  /// (its caller sets it with kind_of).
  PointKind kind = PointKind::Total;
};

/**
 * The fit points of scenario files alone, with their kinds: every measured total (weight 1; an AFD
 * timeline's `period_us` with metric "period_us"), AFD timeline kernel duration at T >= 128 (kind
 * KernelDuration, weight phase_weight), the kernel durations below T = 128 (kind
 * SmallTKernelDuration, weight sqrt(small_t_kernel_weight)) when small_t_kernel_weight > 0, and phase
 * (weight phase_weight); ids "SCENARIO:CASE" and "SCENARIO:CASE#PHASE", as load_fit_points gives
 * them. Errors: hw::FileError from the scenario loader, and for a scenario with layer_fits (its TTFT
 * rows fit their own layer counts, which would absorb any hardware value).
 */
std::vector<FitPoint> points_from_scenarios(const std::vector<std::string>& scenario_paths, double phase_weight = 0.5,
                                            double small_t_kernel_weight = 0);

/// A point's kind from its phase and parameters, for points read without one (load_fit_points): no
/// phase: Total; a phase "devN/kernel" (is_kernel_duration): KernelDuration, or SmallTKernelDuration
/// when the case's `tokens` is below models::kKernelDurationMinTokens; any other phase: Phase.
PointKind kind_of(const FitPoint& p);

/// Predict every point with a hardware description (us). Errors: whatever the case runner raises.
std::vector<double> predict(const hw::Hardware& hw, const std::vector<FitPoint>& pts);

/// One free parameter after a fit (SI units): start, fitted value, 1-sigma, declared bounds.
struct ParamFit {
  std::string key;
  double start_si = 0, value_si = 0, sigma_si = 0, lower_si = 0, upper_si = 0;
  bool at_bound = false;
  /// False when the points do not pin the value down: sigma exceeds |value|, is not finite, or the
  /// points do not depend on the parameter at all (then sigma_si is +infinity).
  bool identified = true;
};

/// One point after a fit: measured and predicted (us) at the fitted values; error_pct is
/// 100 x (predicted - measured) / measured whatever the fit's residual form.
struct PointResult {
  std::string id, table, phase;
  double measured_us = 0, predicted_us = 0, error_pct = 0;
  bool held_out = false;
  PointKind kind = PointKind::Total;
  std::string file;  ///< the measurement file the point came from (FitPoint::file)
};

/// The minimiser of the objective.
enum class FitMethod {
  LevenbergMarquardt,  ///< Eigen's bounded LM on the residual vector (tanh-mapped coordinates)
  NelderMead,          ///< Nelder-Mead on log(parameter), clamped to the bounds, on the sum of squares
};
/// "lm", "nelder-mead".
const char* fit_method_name(FitMethod m);

/// How a point's error enters its residual.
enum class ResidualForm {
  Relative,  ///< (predicted - measured) / measured
  Log,       ///< log(max(predicted, kLogFloorUs) / measured)
};
/// "relative", "log".
const char* residual_form_name(ResidualForm r);

/// Predictions below this (us) count as this in log errors (a kernel the model predicts as empty
/// would give log(0)); the value fusesim_afd_fit used for its kernel durations.
inline constexpr double kLogFloorUs = 0.05;

/**
 * What is fitted and how: the free parameters, the minimiser, and the objective's terms. The
 * objective is one residual vector r, in this order (Objective lays it out; both methods share it):
 *  - one per fitted point: w x error, error as `residuals` says; w = the point's weight for a total
 *    and a phase (1 and --phase-weight), for a kernel duration at T >= 128 sqrt(kernel_weight) when
 *    it is set (else its weight, --phase-weight), for a kernel duration at T < 128
 *    sqrt(small_t_kernel_weight);
 *  - with hinge > 0, one per total: sqrt(hinge) x max(0, |log error| - hinge_threshold);
 *  - with kernel_hinge > 0, one per kernel duration at T >= 128: sqrt(kernel_hinge) x
 *    max(0, |log error| - kernel_hinge_threshold);
 *  - with median_cap > 0, one per measurement file with totals: sqrt(100 x n) x max(0, m - median_cap),
 *    m the median |relative error| of its n totals (fusesim_afd_fit's per-scenario median penalty);
 *  - one per free parameter: prior_weight x log(p / p0).
 * Levenberg-Marquardt minimises |r|^2 through the vector; Nelder-Mead minimises the same sum
 * (plus 1e3 per coordinate outside its bounds). Weights on squared terms (kernel_weight, hinge,
 * kernel_hinge, small_t_kernel_weight) multiply the squared error, as fusesim_afd_fit's did;
 * phase_weight (at load time) and prior_weight multiply the residual, as calibrate fit's did. With
 * the defaults the vector is the one calibrate fit has always minimised.
 */
struct FitOptions {
  std::vector<std::string> free_keys;  ///< parameters to fit (default: those of kind "fitted")
  bool no_free_keys = false;           ///< `--free none`: fit nothing, evaluate the start
  double prior_weight = 0.01;          ///< weight of log(p/p0) residuals (weak prior)
  int max_evaluations = 4000;          ///< LM: Eigen's maxfev
  FitMethod method = FitMethod::LevenbergMarquardt;
  int iterations = 400;                ///< Nelder-Mead iterations; 0 evaluates the start
  ResidualForm residuals = ResidualForm::Relative;
  double hinge = 0;                    ///< weight on a total's squared excess of |log error| over hinge_threshold
  double hinge_threshold = 0.10;       ///< |log error| (0.10: about 10.5% high or 9.5% low)
  std::optional<double> kernel_weight; ///< weight on a kernel duration's (T >= 128) squared error
  double kernel_hinge = 0;             ///< weight on its squared excess of |log error| over kernel_hinge_threshold
  double kernel_hinge_threshold = 0.13;
  double small_t_kernel_weight = 0;    ///< weight on a T < 128 kernel duration's squared error
  double median_cap = 0;               ///< per-file median |relative error| above which a penalty applies (0: off)
};

/// True when `opt` minimises the objective calibrate fit always had (Levenberg-Marquardt, relative
/// residuals, no hinge, kernel weight or median cap): its output then carries nothing new.
bool default_objective(const FitOptions& opt);

/// The objective's options as one line for reports and written files, e.g. "nelder-mead, 400
/// iterations; log residuals; hinge 100 over 0.1; kernel weight 1; kernel hinge 30 over 0.13; prior
/// weight 0"; empty for default_objective.
std::string describe_objective(const FitOptions& opt);

/// The objective split by term: each is the sum of the squares of its residuals (FitOptions);
/// `sum()` is the objective.
struct ObjectiveTerms {
  double totals = 0, phases = 0, kernel_durations = 0, small_t_kernel_durations = 0;
  double hinge = 0, kernel_hinge = 0, median_cap = 0, prior = 0;
  double sum() const;
};

/**
 * The residual vector of FitOptions over a fixed set of fitted points (its layout is fixed by the
 * points and options, so Levenberg-Marquardt sees a constant size). The median-cap groups are the
 * points' `file`s. It keeps a pointer to `points`, which must outlive it. Errors:
 * std::invalid_argument for a weight or threshold that is negative or not finite.
 */
class Objective {
 public:
  Objective(const std::vector<FitPoint>& points, const FitOptions& opt);
  /// Residuals for `n_params` free parameters: the data's (data_size()) then one prior per parameter.
  size_t size(size_t n_params) const { return data_size_ + n_params; }
  /// Residuals before the priors: points, hinges, median caps.
  size_t data_size() const { return data_size_; }
  /**
   * Fill r[0 .. size(p.size())) from `pred` (us, one per point, in the points' order) and the free
   * parameters' values `p` and anchors `p0` (SI; same length). A non-finite residual is left as it is
   * (a caller that cannot use it replaces the vector, as the fit does for a failed trial).
   */
  void residuals(const std::vector<double>& pred, const std::vector<double>& p, const std::vector<double>& p0, double* r) const;
  /// The squares of r (as residuals() laid it out) summed by term.
  ObjectiveTerms terms(const double* r, size_t n_params) const;

 private:
  const std::vector<FitPoint>* pts_;
  FitOptions opt_;
  std::vector<double> weight_;                  ///< per point: the residual's factor
  std::vector<size_t> totals_, kernels_;        ///< indices of the hinged points
  std::vector<std::vector<size_t>> groups_;     ///< per file with totals: its totals (median cap)
  size_t data_size_ = 0;
};

/// What fit() returns: the hardware with the fitted values set, each parameter's fit, every point at
/// the fitted values (fitted, then held out), the totals' error statistics, and how the fit went.
struct FitResult {
  hw::Hardware fitted;
  std::vector<ParamFit> params;
  std::vector<PointResult> points;     ///< fitted points then held-out points
  double median_abs_fit_pct = 0, max_abs_fit_pct = 0;
  /// Over the held-out totals; empty when no total is held out (`--holdout none`).
  std::optional<double> median_abs_holdout_pct, max_abs_holdout_pct;
  double residual_sigma_pct = 0;       ///< RMS of fitted relative errors (for prediction intervals)
  int evaluations = 0;
  int lm_info = 0;                     ///< Eigen::LevenbergMarquardtSpace::Status (lm_status_name); LM only
  FitMethod method = FitMethod::LevenbergMarquardt;
  bool evaluated_only = false;         ///< nothing was minimised (--free none, or Nelder-Mead --iters 0)
  int iterations = 0;                  ///< Nelder-Mead iterations run
  /// The objective (FitOptions) at the start and at the fitted values, and the latter by term.
  /// objective_start is 0 for an LM fit of default_objective (not evaluated: an extra simulation
  /// would move later fits in the process in their last bits; see fit()).
  double objective_start = 0, objective = 0;
  ObjectiveTerms terms;
  /// Nelder-Mead: objective of the worst vertex less the best's at the end (0 when it did not run).
  double simplex_spread = 0;
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

/// The Nelder-Mead warning: the simplex has not contracted (spread above 1e-6 of the objective, or
/// of 1), so more --iters may lower the objective; empty when it has or when Nelder-Mead did not run.
std::optional<std::string> nelder_mead_warning(const FitResult& r);

/**
 * Fit `free_keys` of `start` to `train`: minimise the objective of FitOptions (the residual vector
 * of Objective over `train`). Deterministic: same inputs, same result (in a process that simulated
 * the same before the fit: see FitResult::objective_start).
 * - Levenberg-Marquardt (Eigen's unsupported LevenbergMarquardt, forward-difference Jacobian, step
 *   1e-6): each parameter is mapped through p = lo * (hi/lo)^((1 + tanh z) / 2) (positive bounds) or
 *   a linear tanh map (lo == 0), so every trial stays inside the declared bounds; at most
 *   max_evaluations evaluations.
 * - Nelder-Mead (fusesim_afd_fit's, unchanged): on x = log(max(p, 1e-15)), each coordinate clamped to
 *   [log(max(lo, 1e-15)), log(hi)] when applied and 1e3 added per coordinate outside; initial simplex
 *   x0 and x0 + 0.3 along each axis; reflection -1, expansion -2, contraction -0.5 (outside) or 0.5
 *   (inside), shrink 0.5 toward the best vertex; `iterations` iterations, no other stop; the best
 *   vertex is the fit (iterations 0: the start). Progress every 50 iterations on stderr.
 * A trial the model cannot run has every residual 1e3. Uncertainty, for both methods: the Jacobian of
 * the residuals at the fitted values in the LM coordinates z; sigma from (J^T J)^+ * s^2 (s^2 = the
 * squared data residuals over points - parameters), mapped back by dp/dz; a parameter no data
 * residual depends on (none moves by 1e-5 per unit of z) gets sigma +infinity; identified when sigma
 * is finite and <= |value|. `test` points are predicted with the fitted parameters and reported as
 * held out. With no free parameter (no_free_keys, or a file with no fitted value) the start is
 * evaluated (evaluated_only), as is Nelder-Mead's with iterations 0 (then at the file's own values).
 * Errors: std::invalid_argument for an unknown or non-fittable key, or no training points.
 */
FitResult fit(const hw::Hardware& start, const std::vector<FitPoint>& train, const std::vector<FitPoint>& test,
              const FitOptions& opt);

/// The part of a value's source that a fit keeps, from `previous` (the source before the fit): the
/// first estimate, where the starting value came from. A source an earlier fit wrote ("calibrate
/// fit: ... | X" or "calibrate fit (...): ... | X") keeps its X, and one without " | " keeps nothing;
/// any other source is X itself. X is returned prefixed "first estimate: " unless it already starts
/// with "first estimate" (so "first estimate 0.91: ..." or "first estimate: ..." is not prefixed
/// twice). Empty when there is nothing to keep. No errors.
std::string first_estimate_of(const std::string& previous);

/// Write the fitted values into a copy of the hardware description with provenance: kind fitted,
/// fitted_from (the measurement sources), fitted_on (date), commit, sigma (none where it is not
/// finite); the original source text is kept, prefixed with the fitted points by kind ("356 points (104
/// totals, 252 kernel durations)"), the totals' residual statistics and "(not identified by these
/// points)" where that applies. `objective` (describe_objective; empty for the default) goes after
/// "calibrate fit" in parentheses: "calibrate fit (nelder-mead, ...): 356 points ...". Returns the
/// YAML text (Hardware::to_yaml's layout; see keep_input_layout). Errors: std::runtime_error when a
/// fitted value or the residual statistics are not finite (no hardware file may carry inf or NaN).
std::string calibrated_yaml(const FitResult& r, const std::vector<std::string>& sources, const std::string& date,
                            const std::string& commit, const std::string& objective = "");

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
