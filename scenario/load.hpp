// Scenario files to cases: YAML, sweeps, merged parameters and measured values (the data types are
// the model interface's, models/model.hpp). Knows no model: a model's own top-level sections are
// handed to it (ModelSpec::scenario_sections, check_scenario).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware.hpp"
#include "hw/io.hpp"
#include "models/model.hpp"

namespace fusesim::scenario {

/// Limits of load().
struct LoadOptions {
  /// Most cases the file may expand to (every case's sweep product, summed), counted before any
  /// sweep is expanded; more is a FileError with the count (the CLI's --max-cases). Default 10^6.
  uint64_t max_cases = 1000000;
  /// Whether to make every case up front into Scenario::cases (what code that reads `cases` needs).
  /// false: only Scenario::groups, each case made from its index when read (case_at), so memory does
  /// not grow with the sweep's product and a run reaches its first case at once; a model whose
  /// hooks read the whole scenario (check_scenario, begin_run, judge, fitted_kernels) is expanded
  /// anyway. `run`, `check` and `sweep` load unexpanded.
  bool expand = true;
};

/**
 * Load a scenario file:
 *   scenario: NAME
 *   description: TEXT
 *   hardware: hw/FILE.yaml          # tried relative to the scenario's folder, its parent, then the CWD
 *   model: gemm_ar | gemm_ar_live | h200_probe | afd | ttft   (models/registry.inc)
 *   tolerance_pct: 10               # default for every case
 *   defaults: {param: value, ...}   # merged under every case's params
 *   cases:
 *     - id: NAME
 *       params: {param: value, ...}
 *       sweep: {param: [v1, v2, ...], ...}    # optional: cartesian product, ids get "/param=v"
 *       measured: {value_us: X, source: "table, row"}             # single case
 *       measured: [{at: {param: v}, value_us: X, source: "..."}]  # per sweep point
 *       (any measured entry may add known_miss: "why the model misses it", period_us instead of
 *        value_us, phases_us, and a timeline kernels: [{device, kernel, start_us, end_us}])
 *       measured_phases: {phases_us: {gemm: X, ...}, source: "..."}
 *       tolerance_pct: 5
 *       note: TEXT
 *   notes: TEXT
 *   <a section of the scenario's model>: ...   # kernel_durations (afd), layer_fits (ttft)
 * Errors (hw::FileError naming file, line and key): unreadable file, YAML syntax, a second YAML
 * document (`---`), unknown keys (also inside measured values), a field of the wrong type, missing
 * `scenario`/`hardware`/`model`/`cases`, a measured value without source, a known_miss that is not a
 * reason (text), a sweep that is not a list, a measured `at:` naming a parameter that is not swept,
 * matching no sweep point or several, or a point given twice, duplicate case ids, a kernel timeline
 * entry that is not a device index, ends before it starts or is listed twice; a section of another
 * model ("only the ttft model fits a layer count"), and what the scenario's model refuses in its
 * sections (ModelSpec::check_scenario). Keys are written cases[ID].field (cases[INDEX].field, from 0,
 * for a case without a usable id); more cases than opt.max_cases (counted before expanding).
 */
models::Scenario load(const std::string& path, const LoadOptions& opt = {});

/// Load the scenario's hardware file (resolved by load()) against the builtin registry.
hw::Hardware load_hardware(const models::Scenario& sc);

/// A file a command reads: its path and what it is in messages ("scenario file", "--baseline
/// file"). `replaceable_by`: the one output option allowed to write over it (calibrate fit --out may
/// name its --hw file, to calibrate it in place); empty: none.
struct InputFile {
  std::string path, what, replaceable_by;
};

/// The files a loaded scenario and/or hardware file read (either may be null): the scenario file,
/// its hardware file, and every measured table of `hw` (hw::Hardware::tables()).
std::vector<InputFile> input_files(const models::Scenario* sc, const hw::Hardware* hw);

/// The one check that no output of a command overwrites one of its inputs (run, check, sweep, tune,
/// calibrate fit): an output naming an existing input (`F`, `./F`, a link to F: hw::same_existing_file)
/// is refused unless the input's replaceable_by is that output's option. Call it before any work and
/// before anything is written. Errors: std::invalid_argument naming the option, the path, what the
/// input is and its path ("--out 'x' is the scenario's hardware file 'hw/x.yaml': writing there would
/// overwrite it; give another file").
void refuse_outputs_over_inputs(const std::vector<hw::OutputFile>& outputs, const std::vector<InputFile>& inputs);

/// refuse_outputs_over_inputs over input_files(sc, hw) and `more`.
void refuse_outputs_over_inputs(const std::vector<hw::OutputFile>& outputs, const models::Scenario* sc, const hw::Hardware* hw,
                                const std::vector<InputFile>& more = {});

}  // namespace fusesim::scenario
