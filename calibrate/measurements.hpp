// Measurements in, one table out: parsers for the real benchmark's RESULT_JSON lines, the AFD
// transport's JSON lines and seed-004 record layout, our probes' JSON lines and the scenario files'
// measured values. Every parser yields `Record`s that keep their file and line; records a model can
// predict convert to calibrate::FitPoint. Rows that are not valid measurements (validated: false,
// a collective that moved nothing, a failed run) are kept as rejected records with a reason and are
// never fitted.
#pragma once

#include <istream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "calibrate/fit.hpp"
#include "models/model.hpp"

namespace fusesim::calibrate {

/// One measured value with its parameters and provenance.
struct Record {
  std::string kind;       ///< "gemm_ar" (RESULT_JSON), "afd" (AFD transport), "probe", "scenario", "failure"
  std::string model;      ///< case-runner name that predicts it ("gemm_ar", "afd"); empty: no model
  std::string table;      ///< group for hold-out rules and plots
  std::string id;         ///< id of the case (unique together with the table); phases add "#phase"
  YAML::Node params;      ///< model parameters under the model's names (a map; may be empty)
  std::string quantity;   ///< what `value` is: "max_rank_time_us", "median_us", "period_us", a probe field
  std::string phase;      ///< empty: the total; else the phase's name (scenario phases)
  double value = std::numeric_limits<double>::quiet_NaN();  ///< the measured number, in `unit`
  std::string unit;       ///< "us" for times; the probe's unit otherwise ("GBps", "TFLOPs", ...)
  double weight = 1.0;    ///< residual weight when fitted
  bool rejected = false;  ///< true: reported, never fitted
  std::string reason;     ///< why it was rejected
  std::string file;       ///< file it was read from
  int line = 0;           ///< 1-based line in that file (0: not line-oriented)
  std::string source;     ///< provenance text (table and row of a seed, or "file:line")
  nlohmann::json extra = nlohmann::json::object();  ///< the other fields of the original record
};

/// What a parser produced: the records (accepted and rejected) and warnings (skipped noise lines).
struct ParseResult {
  std::vector<Record> records;
  std::vector<std::string> warnings;
  /// Append another result (records then warnings, in order).
  void append(ParseResult&& other);
};

/// rel_l2 above this means the collective moved (almost) nothing: the output is mostly the local
/// slice or zeros (GEMM_AR.md failure modes: a build without the SDMA path). Correct runs are at
/// ~2.4e-3 (bf16 wire) and ~2.5e-2 (fp8 wire).
inline constexpr double kMovedNothingRelL2 = 0.5;

/**
 * Turn one benchmark result object (the JSON after `RESULT_JSON`, or one line of our JSONL files)
 * into a gemm_ar record. Parameters copied under the same names when present: mode, world_size, m,
 * n, k, quant, chunks, gather_dtype, gather_transport, fuse_quantize, fuse_reduce_push,
 * gather_bands, publish, sdma_queues, pull_blocks (the last from the record or its "env"
 * MORI_GEMM_AR_PULL_BLOCKS). value = max_rank_time_us (us). On the bf16 wire gather_transport is
 * set to "sdma" (the bf16 gather always goes over SDMA; the benchmark may print its default "lsa").
 * Rejected (kept, with a reason): validated false, rel_l2 > kMovedNothingRelL2, missing or
 * non-positive max_rank_time_us, a "failure" field (a failed run recorded by `calibrate mori`).
 * table: the object's "table" field, else "<mode>" ; id: the "id" field, else built from the
 * parameters. Errors: hw::FileError(file, line) when `obj` is not an object or a field has the
 * wrong type (e.g. m is a string).
 */
Record record_from_result_json(const nlohmann::json& obj, const std::string& file, int line);

/**
 * Parse a log or a process's output: every line containing `RESULT_JSON` is parsed from the first
 * '{' after the marker (prefixes such as "[rank0]: " are allowed). Lines without the marker are
 * noise and skipped silently (their count is reported as one warning). Errors: hw::FileError naming
 * file and line for a RESULT_JSON line whose JSON is malformed.
 */
ParseResult parse_result_json_stream(std::istream& in, const std::string& file);

/**
 * Parse a JSON-lines measurement file. Per line: blank lines and lines starting with '#' are
 * skipped ("#### 4F:4A num-sms 8" style headers set the AFD context: ranks, transport SMs,
 * hybrid); `RESULT_JSON {...}` or an object with max_rank_time_us or "failure" -> gemm_ar record;
 * an object with "probe" -> probe record; an object with "tokens" and "afd"/"masked" arrays ->
 * one AFD record per path. Other lines not starting with '{' are skipped with a warning naming
 * file and line. Errors: hw::FileError(file, line) for a line that starts with '{' (or follows
 * RESULT_JSON) and is not valid JSON, or an object of no known layout.
 */
ParseResult parse_jsonl_stream(std::istream& in, const std::string& file);

/**
 * AFD transport line `{"tokens": T, "afd": [median_us, change_pct, repeats_faster], "masked": [...]}`
 * -> one record per path present (model "afd", quantity "median_us", params path, tokens and what
 * `context` adds: attention_ranks, ffn_ranks, transport_sms, hybrid). change_pct and repeats_faster
 * go to `extra`. Errors: hw::FileError(file, line) when tokens is missing or a path is not an array
 * of a positive number first.
 */
std::vector<Record> records_from_afd_line(const nlohmann::json& obj, const YAML::Node& context, const std::string& table,
                                          const std::string& file, int line);

/**
 * Parse a header such as "#### 4F:8A num-sms 16", "#### 4f4a hybrid off", "## 1a3f T=1 afd" into
 * params: ffn_ranks/attention_ranks (from "<F>F:<A>A", "<F>f<A>a" or "<A>a<F>f"), transport_sms
 * ("num-sms N"), hybrid ("hybrid on|off"), tokens ("T=N"), path ("afd"/"masked" as a word).
 * Returns an empty map when nothing is recognised. Errors: hw::FileError at `file`:`line` for a
 * header longer than 1024 bytes or a count that is not a whole number from 0 to 2^30.
 */
YAML::Node afd_context_from_header(const std::string& header, const std::string& file = "", int line = 0);

/**
 * Parse a seed-004 style JSON document (one object, any nesting) generically into AFD records:
 *  - objects with "passthrough" (the benchmark's argv) and "table" ([{tokens, <arm>: {median_us,...}}]):
 *    one record per (row, arm); ranks, transport SMs (--num-sms), hybrid from the argv; an arm whose
 *    definition says role_aware false or whose name starts with "masked" is path masked, else afd;
 *    the arm's _env goes to extra;
 *  - arrays of strings mixing "#### header" lines and AFD JSON lines (see records_from_afd_line);
 *  - "kernel_timelines.traces": per trace, a period record (quantity "period_us", compared with the
 *    afd runner's extra.period_us) and one record per device kernel (quantity "kernel_dur_us", phase
 *    "devN/kernel", weight `phase_weight`, device/kernel/start/end in extra; model "afd", so fitted,
 *    only at T >= 128);
 *  - objects keyed "<A>a<F>f" -> {tokens -> {transport_sms -> us}} (the transport-SM sweep).
 * Defaults from the document's "setup" text: transport_sms ("24 transport SMs unless noted") and
 * experts ("top-k 8 of 128 experts (96 for 1A:3F)": 128, and 96 for 1 Attention : 3 FFN ranks).
 * Every record's source is the JSON path ("per_source_cost.direct_vs_hybrid[3]"); line is the
 * line of the document where that path's value starts when it can be found, else 0.
 * Errors: hw::FileError(file, line) for malformed JSON.
 */
ParseResult parse_afd_document(const std::string& text, const std::string& file, double phase_weight = 0.5);

/**
 * Probe JSON line -> record (kind "probe", no model): probe name (quantity = "<probe>.<value key>"),
 * value from the first of time_us, us, GBps, TFLOPs, value present (unit = that key, "us" for
 * time_us), params = the other scalar fields (machine, command, commit, date go to extra).
 * Rejected when validated is false or rel_l2 > kMovedNothingRelL2. Errors: hw::FileError when no
 * value field is present.
 */
Record record_from_probe(const nlohmann::json& obj, const std::string& file, int line);

/// Scenario files' measured values (totals and phases) as records (kind "scenario"), in file
/// order; phase records get weight `phase_weight`. Errors: hw::FileError from the scenario loader.
ParseResult parse_scenario_file(const std::string& path, double phase_weight);

/// Refuse a scenario its model refuses as hardware-fit input (ModelSpec::check_fit_input: e.g. TTFT rows
/// whose layer counts are fitted on their own measured values). Errors: hw::FileError naming the file and line.
void refuse_layer_fits(const models::Scenario& sc);

/**
 * Parse any measurement file, dispatching on extension and content: .yaml/.yml -> scenario;
 * a file whose first non-blank character starts a multi-line JSON document -> parse_afd_document;
 * .log/.txt/.out -> parse_result_json_stream unless lines start with '{' (then JSON lines);
 * anything else (.jsonl, .json) -> parse_jsonl_stream.
 * Errors: hw::FileError (unreadable file, malformed lines with file and line).
 */
ParseResult parse_measurement_file(const std::string& path, double phase_weight = 0.5);

/**
 * Accepted records with a registered model -> FitPoints (id "<table>/<id>" made unique, measured
 * in us). Records without a model or rejected are skipped. `models` restricts conversion to the
 * listed model names when non-empty.
 */
std::vector<FitPoint> to_fit_points(const std::vector<Record>& records, const std::vector<std::string>& models = {});

/**
 * Build the fit set from measurement files (any mix of scenario YAML and JSONL/log files).
 * De-duplication: a scenario total that repeats a measurement-file record (same source text, or
 * same model, parameters and value) is dropped in favour of the measurement-file record, and the
 * scenario's phases of that case take the record's id (so k-fold keeps a case's total and phases
 * together). Order: measurement-file records in file order, each followed by the phases that join
 * it; then the remaining scenario points in file order.
 * `rejected` (if not null) receives every rejected record; `warnings` the parsers' warnings.
 * Errors: hw::FileError from the parsers.
 */
std::vector<FitPoint> load_fit_points(const std::vector<std::string>& paths, double phase_weight,
                                      std::vector<Record>* rejected = nullptr, std::vector<std::string>* warnings = nullptr);

/// Parameters as canonical text (sorted keys, flow YAML) for comparing cases.
std::string canonical_params(const YAML::Node& params);

}  // namespace fusesim::calibrate
