// Entry points for the scenario runner: one AFD case from YAML params, and evaluation of a whole
// AFD scenario file against its measured values.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
#include "models/afd/afd.hpp"
#include "sim/trace.hpp"

namespace fusesim::afd {

/// Case parameter names accepted by run_afd_case (any other key is an error naming it).
const std::vector<std::string>& afd_case_param_names();

/**
 * Build an AfdCase from a scenario case's `params` mapping (names as in afd_case_param_names();
 * `payload` takes bf16|fp16|fp8). Errors: std::invalid_argument naming the unknown key or the bad
 * value.
 */
AfdCase afd_case_from_yaml(const YAML::Node& params);

/**
 * Run one case: {"predicted_us": exchange (us), "phases": [{"name": "devN/kernel", "start_us",
 * "end_us"}], "extra": {"span_us", "period_us", "channels", "nic_ops": [...], ...}}.
 */
nlohmann::json run_afd_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

/// One measured point compared with its prediction.
struct AfdPoint {
  std::string case_id;
  std::string what;      ///< "value_us" or "devN/kernel duration"
  double measured = 0, predicted = 0;
  double err_pct() const { return 100.0 * (predicted - measured) / measured; }
};

/// Result of a scenario file: every measured point, the tolerance, predictions of unmeasured cases.
struct AfdScenarioReport {
  std::string scenario, hardware;
  double tolerance_pct = 12;           ///< the file's tolerance (max absolute error)
  std::vector<AfdPoint> points;        ///< exchange-time points
  std::vector<AfdPoint> kernel_points; ///< per-kernel durations of timelines (T >= 128 only)
  nlohmann::json predictions = nlohmann::json::array();  ///< every case (incl. sweeps)
  double median_abs_err_pct() const;
  double max_abs_err_pct() const;
};

/**
 * Load `scenario_path` (layout: scenario, hardware, description, model: afd, cases[] with id,
 * params, optional sweep {param: [values]}, optional measured {value_us, source} and/or
 * measured {kernels: [{device, kernel, start_us, end_us}], source}, tolerance_pct), resolve
 * `hardware` relative to `repo_root`, run every case. hw_override (optional) replaces the loaded
 * hardware (fitting). Errors: hw::FileError / std::invalid_argument naming file and key.
 */
AfdScenarioReport evaluate_afd_scenario(const std::string& scenario_path, const std::string& repo_root,
                                        const hw::ParamRegistry& registry,
                                        const hw::Hardware* hw_override = nullptr);

}  // namespace fusesim::afd
