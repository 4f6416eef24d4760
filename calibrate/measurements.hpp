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
  std::string kind;       ///< "gemm_ar" (RESULT_JSON), "collective" (bench_ar.py), "afd" (AFD transport), "probe", "scenario", "failure"
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
 * The RESULT_JSON layout of a bench_gemm_ar.py row, recognised by its key set (data README's table of
 * layouts by commit, calibrate/README.md "RESULT_JSON layouts"): any of gather_dtype,
 * gather_transport, gather_bands, publish -> "ad271d19" (today's, also 6022ecfa and 9aaef3e9);
 * quant but no gather key -> "103655f6"; neither -> "old" (16ddbb94 or 0b26ebf8: the key sets are
 * the same; only their --chunks defaults differ, 0 and 1, so a composite row without chunks needs
 * the layout stated).
 */
std::string detect_result_json_layout(const nlohmann::json& obj);

/**
 * Turn one benchmark result object (the JSON after `RESULT_JSON`, or one line of our JSONL files)
 * into a record: a gemm_ar record for bench_gemm_ar.py, a collective record (record_from_bench_ar)
 * for a bench_ar.py line (it has "backend" and no "mode").
 *
 * Parameters copied under the gemm_ar case keys when present (mode, world_size, m, n, k, quant,
 * chunks, sdma_queues, tile_order, gather_dtype, gather_transport, pull_blocks -- also from "env"
 * MORI_GEMM_AR_PULL_BLOCKS --, fuse_quantize, fuse_reduce_push, gather_bands, publish), then read as
 * the row's layout ran (`layout`: "auto" recognises it, see detect_result_json_layout; stating
 * 16ddbb94, 0b26ebf8, 103655f6, 6022ecfa or ad271d19 must agree with the key set):
 *  - 16ddbb94 / 0b26ebf8: no quant = ptpc (BLOCK_M 256), the bf16 wire over SDMA; chunks absent (or
 *    0) = one push per row band at 16ddbb94, 1 at 0b26ebf8 (a composite SDMA row without chunks and
 *    no stated layout is rejected saying so);
 *  - 103655f6: fuse_quantize absent = true (its default); a composite row prints no wire: with
 *    fuse_quantize on it is read as the fp8 wire over SDMA (a quantize exists only on that wire),
 *    with it off it is rejected (the wire is unknown);
 *  - ad271d19: fuse_reduce_push true without gather_bands = 8; chunks null = 8 (the defaults);
 *  - 103655f6 and ad271d19 halve chunks until they divide the row bands per destination: params hold
 *    the lowered chunks (what ran), extra.chunks_printed the printed value.
 * Keys that do not apply to the row's mode (gather_bands/publish without fuse_reduce_push, the wire
 * and chunks of gemm-only, pull_blocks outside the fp8 LSA pull, fuse_quantize off the fp8 wire) are
 * set to the model's default, the printed value kept in extra.ignored. On the bf16 wire
 * gather_transport is "sdma" (extra.gather_transport_printed keeps what was printed).
 * Keys that change what ran: tile_order is modelled (resolved_tile_order replaces a printed "auto";
 * "auto" alone is rejected); block_m must equal the route's BLOCK_M (128 blockscale, 256 ptpc and
 * mxfp8); fence null, swap_ab true, permlane true, lane_transpose true, atomic_order "acq_rel",
 * stop_after "all", timing "graph" (what gemm_ar describes: the values of the public sweep its GEMM
 * costs are fitted on); any other value rejects the row naming the key and why.
 * value = max_rank_time_us (us). Rejected (kept, with a reason): a "failure" field (a failed run
 * recorded by `calibrate mori`), validated false, rel_l2 > kMovedNothingRelL2, a NaN rel_l2 where
 * the run validates (accepted, extra.not_validated saying why, for gemm-only rows of 16ddbb94 and
 * 0b26ebf8 and runs with --skip-validation in their argv or skip_validation true), a missing, NaN or
 * non-positive max_rank_time_us. table: the object's "table" field, else the file's stem; id: the
 * "id" field, else "<file>:<line>". extra.layout names the layout read.
 * Errors: hw::FileError(file, line) when `obj` is not an object, a field has the wrong type (e.g. m
 * is a string), a field is one or two letters off a parameter's name (a typo), or the stated layout
 * is unknown or disagrees with the key set.
 */
Record record_from_result_json(const nlohmann::json& obj, const std::string& file, int line, const std::string& layout = "auto");

/**
 * A bench_ar.py line (benchmark/cco/flydsl/ar/bench_ar.py: backend, stage, gather, world_size, m,
 * n, dtype, payload_bytes, slice_bytes, blocks, threads, max_rank_time_ms, max_rank_time_us,
 * critical_rank, per_rank_time_us, remote_bytes_per_rank, aggregate_gbps, rel_l2, validated,
 * timing) -> a record of model "collective" (case schema: /work/helpers/COLLECTIVE_SCHEMA.md):
 * params op (default all-reduce), backend (nccl read as rccl, the library ring), m, n, world_size,
 * dtype, and for the CU backends (lsa, aiter) the stage and blocks that ran; the SDMA backend's
 * stage/blocks, gather and the byte counts go to extra. value = max_rank_time_us, else
 * 1000 x max_rank_time_ms. Rejected: a failure field, timing other than "graph", validated false,
 * rel_l2 > kMovedNothingRelL2, a NaN rel_l2 without --skip-validation, no time.
 * Errors: hw::FileError(file, line) naming a field of the wrong type or a missing m.
 */
Record record_from_bench_ar(const nlohmann::json& obj, const std::string& file, int line);

/**
 * Why a RESULT_JSON object printed by a run is not a usable measurement, as record_from_result_json
 * judges it (validated false, moved nothing, a NaN rel_l2 where the run validates, no or a bad time);
 * empty when it is one. A row refused only for a key the model does not describe is still a
 * measurement of the benchmark (empty). Used by `calibrate mori` to decide a run failed.
 * Errors: hw::FileError for a field of the wrong type.
 */
std::string run_validation_problem(const nlohmann::json& obj);

/**
 * Parse one JSON object as the benchmarks print it: bare NaN / Infinity literals (Python's
 * json.dumps) read as the strings "NaN", "Infinity", "-Infinity". Errors: hw::FileError(file, line,
 * "malformed JSON: ...").
 */
nlohmann::json parse_benchmark_json(const std::string& text, const std::string& file, int line);

/**
 * Parse a log or a process's output: every line containing `RESULT_JSON` is parsed from the first
 * '{' after the marker (prefixes such as "[rank0]: " are allowed). Lines without the marker are
 * noise and skipped silently (their count is reported as one warning); a "# layout: X" line states the
 * layout of the RESULT_JSON lines after it (else `layout`). Errors: hw::FileError naming
 * file and line for a RESULT_JSON line whose JSON is malformed.
 */
ParseResult parse_result_json_stream(std::istream& in, const std::string& file, const std::string& layout = "auto");

/**
 * Parse a JSON-lines measurement file. Per line: blank lines and lines starting with '#' are
 * skipped ("#### 4F:4A num-sms 8" style headers set the AFD context: ranks, transport SMs,
 * hybrid; "# layout: X" states the RESULT_JSON layout of the lines after it, else `layout`); an object
 * with "backend" and no "mode" -> collective record (bench_ar.py); `RESULT_JSON {...}` or an object with max_rank_time_us or "failure" -> gemm_ar record;
 * an object with "probe" -> probe record; an object with "tokens" and "afd"/"masked" arrays ->
 * one AFD record per path. Other lines not starting with '{' are skipped with a warning naming
 * file and line. Errors: hw::FileError(file, line) for a line that starts with '{' (or follows
 * RESULT_JSON) and is not valid JSON, or an object of no known layout.
 */
ParseResult parse_jsonl_stream(std::istream& in, const std::string& file, const std::string& layout = "auto");

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
ParseResult parse_measurement_file(const std::string& path, double phase_weight = 0.5, const std::string& layout = "auto");

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
                                      std::vector<Record>* rejected = nullptr, std::vector<std::string>* warnings = nullptr,
                                      const std::string& layout = "auto");

/// Parameters as canonical text (sorted keys, flow YAML) for comparing cases.
std::string canonical_params(const YAML::Node& params);

}  // namespace fusesim::calibrate
