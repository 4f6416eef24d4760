// The model interface: what a model is (its spec), the cases it is handed, and the registry of every
// model. Each model lives in its own folder (models/<name>/) as one ModelSpec; models/registry.inc
// lists the specs, one line per model (implemented in models/model.cpp with the case reader). The
// scenario layer (scenario/) loads cases, runs them through a spec and reports the results; it
// knows no model, and every model-specific behaviour it has comes from a hook below.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
#include "hw/params.hpp"
#include "models/case_params.hpp"
#include "sim/trace.hpp"

namespace fusesim::models {

/// A measured value of a case (one number, per-phase numbers, a kernel timeline), with its source.
struct Measured {
  std::optional<double> value_us;
  std::map<std::string, double> phases_us;  ///< phase name -> measured duration (us)
  /// Which prediction value_us compares with: "predicted_us" (default), or "period_us" when the
  /// entry gives `period_us:` (compared with the result's extra.period_us).
  std::string metric = "predicted_us";
  std::string source;
  /// Non-empty: the model is known to miss this point, and why. `fusesim check` reports it as a
  /// known miss instead of a failure, and fails if it unexpectedly falls within tolerance (strict),
  /// so the flag is removed once the model improves.
  std::string known_miss;
  /// A measured timeline (`kernels: [{device, kernel, start_us, end_us}]`): each kernel's duration,
  /// compared with the result's phase "devN/kernel".
  struct KernelSpan {
    int device = 0;
    std::string kernel;
    double duration_us = 0;
    int line = 0;                     ///< line of the entry in the scenario file
    double start_us = 0, end_us = 0;  ///< on the timeline's clock (duration_us = end_us - start_us)
    /// "devN/KERNEL": the run's phase name for this kernel, and the key known misses use.
    std::string name() const { return "dev" + std::to_string(device) + "/" + kernel; }
  };
  std::vector<KernelSpan> kernels;
};

/// One expanded case of a scenario (a sweep expands into one case per combination).
struct Case {
  std::string id;
  YAML::Node params;          ///< defaults merged with the case's params and this sweep point
  std::optional<Measured> measured;
  double tolerance_pct = 10;  ///< |error| allowed by `fusesim check`
  int line = 0;               ///< line of the case in the scenario file
  /// Line of each parameter's key (defaults, the case's params, its sweep), for error messages.
  std::map<std::string, std::pair<int, std::string>> param_lines;  ///< key -> (line, "defaults" | "params" | "sweep")
  /// Where parameter `k` is written, for error messages: its line and key (defaults.K or
  /// cases[ID].params|sweep.K); the case's own line and cases[ID].params.K when it is not written.
  std::pair<int, std::string> param_location(const std::string& k) const;
};

/// One case of a scenario file with its sweep not expanded (scenario/load.cpp fills it): the cases it
/// stands for are made one at a time from their index (point()), so that a sweep's memory does not
/// grow with its product. Point order is the cartesian product in file order, the last swept
/// parameter varying fastest; a point's id is the case's id plus "/PARAM=VALUE" per swept parameter.
struct CaseGroup {
  /// One swept parameter: its values (clones of the file's nodes) and their text (hw::yaml_text).
  struct Swept {
    std::string key;
    std::vector<YAML::Node> values;
    std::vector<std::string> texts;
  };
  std::string id;                       ///< the case's id
  YAML::Node params;                    ///< defaults merged with the case's params (a clone; read only)
  std::vector<Swept> sweep;             ///< the swept parameters in file order (empty: one case)
  std::map<uint64_t, Measured> measured;  ///< measured values by point index (sparse)
  double tolerance_pct = 10;
  int line = 0;                         ///< line of the case in the scenario file
  std::map<std::string, std::pair<int, std::string>> param_lines;  ///< as Case::param_lines
  /// How many cases the group stands for: the product of its sweep lists' lengths (1 without sweep).
  /// Errors: std::overflow_error when the product passes 2^64 - 1 (scenario::load refuses such a file first).
  uint64_t size() const;
  /// The value index of each swept parameter at point `i` (< size(); std::out_of_range otherwise).
  std::vector<size_t> coordinates(uint64_t i) const;
  /// The id of point `i`. Errors: std::out_of_range for i >= size().
  std::string point_id(uint64_t i) const;
  /// The parameters of point `i`: a clone of `params` with each swept value set (a swept key that
  /// `params` has keeps its place, a new one is appended in sweep order). Errors: std::out_of_range.
  YAML::Node point_params(uint64_t i) const;
  /// Point `i` as a Case (id, parameters, its measured value, tolerance, lines). Errors: std::out_of_range.
  Case point(uint64_t i) const;
};

/// A loaded scenario file (scenario/load.hpp reads it): its cases and the top-level sections the
/// scenario's model reads (ModelSpec::scenario_sections), kept as YAML for that model to parse.
/// The cases are `groups` (a case of the file each, sweeps not expanded: what case_count() and
/// case_at() read, made one at a time) and, when expanded (scenario::LoadOptions::expand, and for
/// a model whose hooks read the whole scenario), also `cases`. A scenario built by hand may set only
/// `cases`; case_count()/case_at() read `cases` whenever it is non-empty.
struct Scenario {
  std::string path, name, description, hardware_path, model;
  int hardware_line = 0;  ///< line of `hardware:` in the scenario file
  std::vector<Case> cases;          ///< every case, expanded (empty when loaded unexpanded)
  std::vector<CaseGroup> groups;    ///< the file's cases, sweeps not expanded (add_group())
  /// Append a group (keeps the index of its first case for case_at()).
  void add_group(CaseGroup g);
  /// How many cases the scenario has: cases.size() when `cases` is set, else the groups' sizes summed.
  uint64_t case_count() const;
  /// Case `i` in file order (a copy: from `cases` when set, else made from its group). Errors:
  /// std::out_of_range for i >= case_count().
  Case case_at(uint64_t i) const;
  /// The group of case `i` and the point's index inside it (groups only). Errors: std::out_of_range.
  std::pair<const CaseGroup*, uint64_t> group_of(uint64_t i) const;
  std::map<std::string, YAML::Node> sections;   ///< model-owned top-level key -> its node
  std::map<std::string, int> section_lines;     ///< model-owned top-level key -> the line of the key
  std::vector<uint64_t> group_first;  ///< index of each group's first case (add_group() keeps it)
  /// The section `key` (an undefined node when the file has none) and the line of its key (0: none).
  YAML::Node section(const std::string& key) const;
  int section_line(const std::string& key) const;
};

/// One measured value beside its prediction (us): a case's compared metric, or one kernel's duration.
struct ComparedPoint {
  std::string case_id;
  std::string what;  ///< the compared metric ("predicted_us", "period_us") or "devN/kernel"
  double measured = 0, predicted = 0;
  double err_pct() const { return 100.0 * (predicted - measured) / measured; }
};

/// Median of `v` (any order; the mean of the two middle values for an even count), the one every
/// error summary uses. Errors: std::invalid_argument when `v` is empty.
double median(std::vector<double> v);

/// Runs one case through the scenario layer (its errors named at the case's lines): what a hook that
/// runs cases itself (a layer fit) calls.
using CaseRunner = std::function<nlohmann::json(const Case& c, const YAML::Node& params, sim::TraceSink* trace)>;

/// A model's state across one scenario run (e.g. the TTFT layer counts fitted before the cases run).
/// The generic runner calls it for every selected case, in file order.
class ScenarioRun {
 public:
  virtual ~ScenarioRun() = default;
  /// The case's result when the run provides it (a result recomposed at a fitted count); nullopt:
  /// the runner runs the case.
  virtual std::optional<nlohmann::json> result(const Case& c) = 0;
  /// Add the model's fields to the case's output (before it is compared).
  virtual void annotate(const Case& c, nlohmann::json& out) {}
  /// A compared case's |error| (percent).
  virtual void compared(const Case& c, double abs_err_pct) {}
  /// Add the model's fields to the run's summary.
  virtual void summarize(nlohmann::json& summary) {}
};

/// `fusesim check`'s additions for one scenario (e.g. per-kernel durations): lines printed under the
/// file's line, failures counted apart from the cases and described as `failure_text`.
struct CheckExtras {
  std::vector<std::string> lines;
  int failures = 0;
  std::string file_failure_text;  ///< "FAIL FILE: N <this>" under the file's lines when failures > 0
  std::string failure_text;       ///< "N <this>" in the closing line over every file
};

/// A CSV text field: hw::csv_cell (control characters and invalid UTF-8 written as escapes, so a
/// field is one line; a field beginning with '=', '+', '-', '@', tab or CR prefixed with "'", so a
/// spreadsheet does not evaluate it; RFC 4180 quoting).
std::string csv_quoted(std::string text);

/// A CSV column a model adds: its name and its cell for a case ("" where the case has none).
struct CsvColumn {
  std::string name;
  std::function<std::string(const nlohmann::json& c)> cell;
};

/// A top-level scenario key a model reads (kernel_durations, layer_fits); `what` completes the
/// refusal in another model's scenario: "only the <model> model <what>".
struct ScenarioSection {
  std::string key, what;
};

/**
 * A model: its name, description and source; the hardware it reads (derived lists of required and
 * unread keys come from here); its case-parameter schema; how it runs a case; what it adds to the
 * table, CSV and JSON. Hooks left empty do nothing. A hook that rejects input throws hw::FileError
 * (naming the scenario's file, line and key) or, for a case, models::ParamError (carrying the key).
 */
struct ModelSpec {
  using HardwareFn = std::function<std::vector<hw::HwRead>(const hw::Hardware* on)>;
  using RunFn = std::function<nlohmann::json(const hw::Hardware&, const YAML::Node&, sim::TraceSink*)>;
  ModelSpec() = default;
  /// What every model has: its name, description and source, its hardware, its case parameters and
  /// its run function (the hooks below are set one by one).
  ModelSpec(std::string name_, std::string description_, std::string source_, HardwareFn hardware_,
            std::function<std::vector<std::string>()> case_parameters_, RunFn run_)
      : name(std::move(name_)), description(std::move(description_)), source(std::move(source_)),
        hardware(std::move(hardware_)), case_parameters(std::move(case_parameters_)), run(std::move(run_)) {}

  std::string name;         ///< the `model:` of a scenario file
  std::string description;  ///< one line, for listings
  std::string source;       ///< where the model comes from (document, benchmark, seed)
  /// The hardware parameters the model reads on `on` (its topology may choose the set); with
  /// nullptr, every parameter it may read on any hardware (for the registry and `fusesim params`).
  HardwareFn hardware;
  /// Declared keys the model's files set to describe the machine but that the model does not read.
  std::vector<hw::ParamDecl> documented;
  /// The hardware file's tables the model reads (`tables:` names; the registry refuses any other).
  std::vector<hw::TableDecl> tables;
  /// The accepted case parameters with their meaning (README and error listings).
  std::function<std::vector<std::string>()> case_parameters;
  /// Run one case: (hardware, params after defaults and sweep, trace or null) -> {"predicted_us",
  /// "phases": [...], "params"?, model extras}. Errors: models::ParamError naming the parameter,
  /// std::invalid_argument for the case as a whole, std::out_of_range for a lookup the hardware
  /// file cannot serve.
  RunFn run;
  /// The case schema behind case_parameters (null: none declared); `fusesim tune` derives the knob
  /// space from its knobs (CaseParam::knob: choices and ranges).
  const CaseSchema* schema = nullptr;
  /// Expected run time of a case relative to others of the same model (any unit; null: every case
  /// costs 1): `fusesim sweep` splits cases among MPI ranks by it. Must not throw.
  std::function<double(const YAML::Node& params)> expected_cost;

  // ---- scenario hooks (the generic loader and runner call them for this model's scenarios) ----
  std::vector<ScenarioSection> scenario_sections;
  /// After loading, check the sections against the cases. Errors: hw::FileError.
  std::function<void(const Scenario&)> check_scenario;
  /// Before any case runs, beyond the required keys (std::invalid_argument: named at `hardware:`).
  std::function<void(const hw::Hardware&)> check_hardware;
  /// Files the scenario's cases read beyond the scenario and its hardware file (e.g. afd's
  /// `gemm_machine` hardware file and that file's measured tables), as paths with what each is:
  /// every command refuses to write an output over them (scenario::input_files). `hardware_path` is
  /// the scenario's hardware file (paths a case names are resolved against its folder). Must not
  /// throw: a file that cannot be resolved or loaded is simply not listed (the case reports it).
  std::function<std::vector<std::pair<std::string, std::string>>(const Scenario&, const std::string& hardware_path)> input_files;
  /// A state across the run (nullptr: none); may run cases through `run_case` and add warnings.
  std::function<std::unique_ptr<ScenarioRun>(const Scenario&, const CaseRunner& run_case,
                                             const std::function<bool(const Case&)>& selected,
                                             std::vector<std::string>& warnings)>
      begin_run;
  /// The 95% interval of a result, s = 1.96 x the calibration's RMS relative error (default
  /// {p (1 - s), p (1 + s)} on predicted_us): writes "interval_us" (and what it is of) into `out`.
  std::function<void(const nlohmann::json& res, double s, nlohmann::json& out)> interval;
  /// After a case's measured value was compared (`measured` us): the model's diagnostics into `out`.
  std::function<void(const nlohmann::json& res, double measured, nlohmann::json& out)> on_measured;
  /// The key under which the result's own predicted_us is kept when another metric (period_us) is
  /// compared ("exchange_us").
  std::string primary_metric = "predicted_us";
  /// After every case ran: judge what the cases alone do not (per-kernel durations) into the result's
  /// "summary". Errors: hw::FileError.
  std::function<void(const Scenario&, nlohmann::json& result)> judge;
  /// The measured kernel spans of a case that calibration fits: with unjudged false those that are
  /// judged (AFD: T >= 128), with true those below the judged range (fitted only on request).
  std::function<std::vector<Measured::KernelSpan>(const Case&, bool unjudged)> fitted_kernels;
  /// Whether a case with these parameters has its kernel durations below the judged range (AFD:
  /// tokens < 128); calibration classifies a kernel-duration point by it.
  std::function<bool(const YAML::Node& params)> kernels_unjudged;
  /// Refuse a scenario as input to a hardware fit (hw::FileError), e.g. one that fits its own counts.
  std::function<void(const Scenario&)> check_fit_input;

  // ---- report extras ----------------------------------------------------------------------
  /// Text put before a table row's flags.
  std::function<std::string(const nlohmann::json& c)> row_note;
  /// Appended to a row's phases line ("; " between).
  std::function<std::string(const nlohmann::json& c)> phases_note;
  /// Lines under a row.
  std::function<std::vector<std::string>(const nlohmann::json& c)> row_lines;
  /// The table's line about the prediction interval, when the model's interval is not the default.
  std::function<std::optional<std::string>(const nlohmann::json& first_case)> interval_line;
  /// Lines after the table's summary line (`run`), from the result's summary.
  std::function<std::vector<std::string>(const nlohmann::json& summary)> summary_lines;
  /// `fusesim check`'s lines and failures from the result's summary.
  std::function<CheckExtras(const nlohmann::json& summary)> check_extras;
  /// CSV columns after `phases` (every CSV carries every model's columns, in registry order).
  std::vector<CsvColumn> csv_columns;
};

/// A ModelSpec::hardware reading `schema` on any hardware (the schema must outlive the spec).
template <class S>
ModelSpec::HardwareFn reads_of(const hw::HwSchema<S>& schema) {
  return [&schema](const hw::Hardware*) { return schema.reads(); };
}
/// A ModelSpec::case_parameters listing `schema` (which must outlive the spec).
inline std::function<std::vector<std::string>()> listing_of(const CaseSchema& schema) {
  return [&schema] { return schema.describe(); };
}

// ---- the registry (models/registry.inc lists the specs) -----------------------------------

/// Every model, in registry order (the order of the CSV's model columns).
const std::vector<const ModelSpec*>& specs();
/// The model named `name`, or nullptr.
const ModelSpec* find_spec(const std::string& name);
/// "gemm_ar, gemm_ar_live, ..." (registry order), for messages.
std::string model_names();
/// Every hardware parameter a file may set: each model's declarations (a concept shared by several
/// models is declared once, hw/params.hpp) and the machine description no model reads. Built once
/// from the specs; immutable afterwards.
const hw::ParamRegistry& builtin_registry();
/// Load a hardware file against the builtin registry (see hw::Hardware::load for errors).
hw::Hardware load_hardware(const std::string& path);
/// Every hardware key model `model` requires on `hw` (its schema's required bindings for that
/// hardware); empty for an unknown name.
std::vector<std::string> required_hardware_keys(const std::string& model, const hw::Hardware& hw);
/// Declared keys that no model reads (derived: the registry's keys no spec binds). A hardware file
/// may set them to describe the machine; changing them changes no prediction.
const std::vector<std::string>& unread_hardware_keys();
bool is_unread_hardware_key(const std::string& key);

}  // namespace fusesim::models
