// The afd model's scenario side: its case parameters and case runner (registered in
// models/registry.inc through models/afd/spec.cpp); the model itself is models/afd/afd.hpp.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
#include "models/afd/afd.hpp"
#include "models/model.hpp"
#include "sim/trace.hpp"

namespace fusesim::afd {

/**
 * The case parameters of an afd scenario case. Required: attention_ranks (A >= 1), ffn_ranks
 * (F >= 1), tokens (T per Attention rank, 1..kMaxTokens = 1048576). Optional, with their defaults:
 * path afd (afd | afd_shared | masked), transport_sms 24, hidden 2048, topk 8, experts 128,
 * capacity 2048 (rows per expert per Attention rank; rows over it are dropped and the result says so
 * in "note"), payload bf16 (bf16 | fp16 | fp8 | fp32), seed 4. NVLink domain only: combine_sms 0
 * (= transport_sms), ffn_combine_sms 0 (off), grid_sync_exit false, view span (span | collect) (an
 * error on pods). Both paths: rotate_channels false. InfiniBand path only (topology kind pods; an
 * error elsewhere): hybrid on (on | off), skip_empty_finish false, inline_finish false.
 */
const models::CaseSchema& afd_case_schema();

/**
 * Build an AfdCase from a scenario case's `params` mapping (after the file's `defaults:` are merged
 * in; a value from there counts as given). Errors: models::ParamError carrying the key: an unknown
 * key (listing the accepted ones), a missing required key ("afd parameter 'tokens' is missing
 * (...)"), a value of the wrong type ("'tokens' must be an integer, got '1.5'"). Ranges are checked
 * by validate().
 */
AfdCase afd_case_from_yaml(const YAML::Node& params);

/**
 * Run one case: {"params": {the effective path, attention_ranks, ffn_ranks, tokens, transport_sms,
 * hidden, dtype_bytes, topk, experts, capacity, seed, the path's own settings and every what-if
 * switch set}, "predicted_us": exchange (us), "phases": [{"name": "devN/kernel", "role", "start_us",
 * "end_us"}], "extra": {"span_us", "period_us", "channels", "nic_ops_per_round_trip": [...],
 * "routing_dropped_rows", ...}, "note" (only when routing dropped rows: how many of how many),
 * "whatif"? (a case with protocol what-ifs: the same exchange without them)}.
 */
nlohmann::json run_afd_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

}  // namespace fusesim::afd
