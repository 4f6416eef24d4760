// Reporting a scenario run: the aligned table, the CSV, and `fusesim check`'s per-file extras.
// Generic: the lines and columns a model adds come from its spec (models/model.hpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/model.hpp"

namespace fusesim::scenario {

/**
 * The result of scenario::run as an aligned text table: a header, the interval line (the model's
 * own where it has one), per case a row (id, predicted, measured, signed error, flags, the model's
 * row note), its phases (AFD kernels grouped per device with their role; measured durations beside),
 * the model's phases note, the case's note and the model's lines; then the summary line, the model's
 * summary lines and the warnings.
 */
std::string format_table(const nlohmann::json& result);

/**
 * The result as CSV, one row per case: id, predicted_us, measured_us, error_pct, params (JSON),
 * phases (name=duration_us;...), then every model's columns in registry order (gemm_ar: window_MiB,
 * wire_rel_l2; afd: nic_ops as devN=atomics_in/atomics_out/inline_writes_out/payload_writes/polls;...,
 * whatif_without_us; ttft: layers, layers_row), empty where a case has none, then tolerance_pct and
 * the measured value's source. Text fields are quoted (RFC 4180).
 */
std::string format_csv(const nlohmann::json& result);

/// What `fusesim check` adds for this result's model (nothing for a model without check extras).
models::CheckExtras check_extras(const nlohmann::json& result);

}  // namespace fusesim::scenario
