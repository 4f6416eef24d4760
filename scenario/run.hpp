// Running a scenario: every case through its model's spec, compared with the measured values.
// Generic: what a model adds (a layer fit, an interval of its own, a judgement of timelines) comes
// from the spec's hooks (models/model.hpp).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/hardware.hpp"
#include "models/model.hpp"
#include "sim/trace.hpp"

namespace fusesim::scenario {

/// Options for running a scenario.
struct RunOptions {
  sim::TraceSink* trace = nullptr;  ///< where to record the trace of every case (may be null)
  std::string only;                 ///< if non-empty, only cases whose id contains this text
};

/**
 * Run every selected case and compare with the measured values. Output layout:
 * {"scenario", "hardware", "hardware_file", "model", "cases":[{"id", "params", "predicted_us",
 *  "measured_us"|null, "error_pct"|null, "tolerance_pct", "within_tolerance"|null, "known_miss"?,
 *  "interval_us"? (95%, from the hardware file's calibration residuals), "phases":[{"name",
 *  "start_us", "end_us", "measured_us"?, "error_pct"?}], "source"?, "compared_metric"? (with the
 *  model's own prediction under its primary_metric key), ...model extras}],
 *  "summary":{"compared", "median_abs_error_pct", "max_abs_error_pct", "outside_tolerance",
 *  "known_misses", "unexpected_passes", "runtime_ms", "warnings":[text], ...model extras}}.
 * Known misses count in the error statistics but not in outside_tolerance; a known miss within
 * tolerance counts in unexpected_passes. A measured timeline's kernels are set beside the phases of
 * the same "devN/KERNEL" name. Errors: hw::FileError for an unknown model (at `model`), hardware that
 * lacks a parameter the model requires or that the model refuses (at `hardware:`, naming the
 * hardware file and the missing keys), a case the model refuses (at the line of the parameter a
 * models::ParamError names, else the case's), a measured phase or metric the model does not report;
 * std::invalid_argument when --only selects no case.
 */
nlohmann::json run(const models::Scenario& sc, const hw::Hardware& hw, const RunOptions& opt = {});

/// Every case of a run() result that has a measured value: {id, compared_metric, measured_us,
/// predicted_us}. Known misses are included (callers that exclude them read `known_miss`).
std::vector<models::ComparedPoint> compared_points(const nlohmann::json& res);

}  // namespace fusesim::scenario
