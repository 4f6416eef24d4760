// AFD kernel timelines judged against their measurements: which measured kernels are judged (from
// T >= 128 tokens per Attention rank), the scenario's `kernel_durations:` rules (tolerance and known
// misses), and the per-kernel duration report of `fusesim run` and `fusesim check`.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model.hpp"

namespace fusesim::afd {

/// Per-kernel durations are judged (and fitted) from this many tokens per Attention rank up (issue 6:
/// "per-kernel durations within 15% at T >= 128"). Below, a kernel lasts a few us of fixed launch and
/// signalling costs; fusesim_afd_fit adds those kernels only with --small-t-kernel-weight.
inline constexpr int kKernelDurationMinTokens = 128;

/// A scenario's `kernel_durations: {tolerance_pct: 15, known_misses: [{case, kernel: devN/NAME, reason}]}`.
struct KernelRules {
  double tolerance_pct = 15.0;                       ///< 15% when not given
  std::map<std::string, std::string> known_misses;  ///< "case devN/kernel" -> reason
};
/**
 * The scenario's kernel-duration rules, checked against its cases (each known miss names a case and
 * one of its measured kernels). Errors: hw::FileError naming the file, line and key for a section that
 * is not a mapping, an unknown key, a tolerance <= 0, a known miss that is not {case, kernel, reason},
 * is listed twice, names no case or no measured kernel of it, or whose reason is not a text.
 */
KernelRules kernel_rules(const models::Scenario& sc);

/// The measured kernel spans of `c` when its `tokens` lie in [min_tokens, max_tokens], else none.
const std::vector<models::Measured::KernelSpan>& kernels_at_tokens(const models::Case& c, int min_tokens, int max_tokens);

/// The measured kernel spans of `c` that are judged: its timeline's when the case runs
/// T >= kKernelDurationMinTokens, else none.
inline const std::vector<models::Measured::KernelSpan>& judged_kernels(const models::Case& c) {
  return kernels_at_tokens(c, kKernelDurationMinTokens, std::numeric_limits<int>::max());
}

/// Per-kernel durations of the scenario's measured timelines of the cases whose `tokens` lie in
/// [min_tokens, max_tokens] (by default the judged ones, T >= 128), each against the run's own phase
/// "devN/kernel" (end - start). Errors: hw::FileError at the measured entry's line for a kernel the
/// model does not run on that device in that case (naming the kernels it does run).
std::vector<models::ComparedPoint> kernel_duration_points(const models::Scenario& sc, const nlohmann::json& res,
                                                          int min_tokens = kKernelDurationMinTokens,
                                                          int max_tokens = std::numeric_limits<int>::max());

/**
 * kernel_duration_points judged against the scenario's rules: {total, within, tolerance_pct,
 * median_abs_error_pct, max_abs_error_pct, misses: [{case, kernel, measured_us, predicted_us,
 * error_pct, known, reason}], new_misses, known_now_within: [{case, kernel, error_pct}],
 * below_min_tokens: {total, median_abs_error_pct, max_abs_error_pct, outside_tolerance} of the unjudged
 * T < 128 kernels, or null}; null when no case has a timeline at T >= 128.
 */
nlohmann::json kernel_durations(const models::Scenario& sc, const nlohmann::json& res);

/// The kernel-duration report as lines: the judged totals, the unjudged T < 128 line, the misses
/// (known ones too with their reasons when `list_known`), and known misses now within tolerance.
std::vector<std::string> kernel_duration_lines(const nlohmann::json& kd, bool list_known);

}  // namespace fusesim::afd
