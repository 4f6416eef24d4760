// Hardware descriptions: typed, unit-checked, provenance-carrying parameter values from YAML.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fusesim::hw {

/// Physical quantity of a parameter; fixes which units its YAML value may carry.
enum class Quantity {
  Count,      ///< plain integer-valued number, no unit (e.g. 256 CUs)
  Ratio,      ///< dimensionless real number, no unit (efficiencies, factors)
  Time,       ///< "2us", "350ns", "1.5ms", "1s"             -> seconds
  Bandwidth,  ///< "8TBps", "76.8GBps", "400Gbps", "64MBps"  -> bytes/s (decimal prefixes)
  Bytes,      ///< "288GB", "256MiB", "4KiB", "16B"           -> bytes (decimal and binary prefixes)
  Frequency,  ///< "2400MHz", "1.98GHz"                       -> Hz
  FlopRate,   ///< "5PFLOPs", "790TFLOPs"                     -> FLOP/s
};

const char* quantity_name(Quantity q);
/// Canonical unit shown for a quantity in listings ("us", "GBps", "MiB", ...).
const char* display_unit(Quantity q);
/// Convert an SI value to the display unit of its quantity (e.g. seconds -> us).
double to_display(Quantity q, double si);

/// Where a value comes from. Fitted values also say from which measurements and when.
enum class Provenance { Spec, Measured, Library, Derived, Fitted };
const char* provenance_name(Provenance p);
/// Parse "spec", "measured", "library", "derived", "fitted"; std::nullopt otherwise.
std::optional<Provenance> parse_provenance(const std::string& s);

/**
 * Declaration of one hardware parameter (a concept of the machine): declared once, where it is used
 * (a concept several models read in hw/params.hpp, the others in their model's file); whether a model
 * requires it or has a default is the model's binding (hw::HwRead), not the declaration's.
 * `key` is "section.name" (e.g. "sdma.queue_peak"); `lower`/`upper` bound it in SI units and are
 * used both to reject impossible hardware files and as the fitter's bounds.
 */
struct ParamDecl {
  std::string key;
  Quantity quantity;
  double lower;
  double upper;
  std::string description;
};

/// A measured table a model reads from a hardware file's `tables:` (its name there and what its rows are).
struct TableDecl {
  std::string name;
  std::string description;
};

/// The set of parameters a hardware file may contain. Built explicitly from the models'
/// declarations (see models/model.hpp: builtin_registry()); nothing global.
class ParamRegistry {
 public:
  /// Add declarations; std::logic_error if a key is declared twice.
  void add(const std::vector<ParamDecl>& decls);
  /// Declare a table some model reads; the same name twice with another description is a std::logic_error.
  /// A registry that declares any table refuses, in Hardware::load, a table it does not declare (a misspelt
  /// name would otherwise leave the model without it, unseen); one that declares none accepts any.
  void add_table(const TableDecl& t);
  const TableDecl* find_table(const std::string& name) const;
  const std::vector<TableDecl>& tables() const { return tables_; }
  /// The declaration of `key`, or nullptr. A build-scoped key "section@BUILD.name" (a kernel build's
  /// own value of a declared "section.name", e.g. "gemm@d5c0277d.mxfp8_tile_fixed": the costs of the
  /// mxfp8 GEMM as build d5c0277d was measured) has the declaration of "section.name", bounds and
  /// all, under its own key; BUILD is [A-Za-z0-9_-]+. The build is data of the file, not a declared key.
  const ParamDecl* find(const std::string& key) const;
  const std::vector<ParamDecl>& all() const { return decls_; }

 private:
  std::vector<ParamDecl> decls_;
  std::vector<TableDecl> tables_;
  std::map<std::string, size_t> index_;
  mutable std::map<std::string, ParamDecl> scoped_;  ///< build-scoped declarations handed out (stable addresses)
};

/// One value of a hardware file, in SI units, with its provenance.
struct Value {
  double si = 0;            ///< value in SI units (s, B/s, B, Hz, FLOP/s; plain number otherwise)
  std::string text;         ///< as written in the file, e.g. "76.8GBps"
  Provenance kind = Provenance::Spec;
  std::string source;       ///< citation or method
  int line = 0;             ///< 1-based line in the file (0 if set programmatically)
  // Fitted values only:
  std::vector<std::string> fitted_from;  ///< measurement files / tables used
  std::string fitted_on;                 ///< date
  std::string fitted_commit;
  double fit_sigma_si = 0;               ///< 1-sigma uncertainty from the fit (SI)
};

/// A measured table a hardware file points to (JSON lines, e.g. a probe's GEMM sweep): component
/// timings a model interpolates rather than derives (the vendor BLAS's per-call time, say).
struct Table {
  std::string name;
  std::string file;        ///< resolved path of the JSON-lines file
  Provenance kind = Provenance::Measured;
  std::string source;
  int line = 0;
  std::vector<nlohmann::json> rows;  ///< one object per line of the file
};

/// What the last calibration of a hardware file left: the residuals of its fitted points, from which
/// every prediction's interval is derived.
struct Calibration {
  double residual_rms_pct = 0;  ///< RMS of the relative errors of the fitted totals (percent)
  int points = 0;               ///< fitted totals
  std::string fitted_on, commit;
  std::vector<std::string> measurements;
};

/// Error in a hardware or scenario file; what() names file, line and key.
class FileError : public std::runtime_error {
 public:
  FileError(const std::string& file, int line, const std::string& key, const std::string& what);
};

/// Throw FileError (naming the file and the line of the `---`) when the YAML file at `path` holds a
/// second, non-empty document: the loaders read the first document only. `what` names the file's role.
void reject_extra_documents(const std::string& path, const std::string& what);

/**
 * Parse "76.8GBps" etc. into SI for a quantity. Accepted units:
 * Time: ps ns us ms s; Bandwidth: Bps KBps MBps GBps TBps (decimal), KiBps MiBps GiBps, and bit
 * rates bps Kbps Mbps Gbps Tbps (divided by 8); Bytes: B KB MB GB TB (decimal) KiB MiB GiB TiB;
 * Frequency: Hz KHz MHz GHz; FlopRate: FLOPs GFLOPs TFLOPs PFLOPs. Count and Ratio take plain
 * numbers. Throws std::invalid_argument with the expected units on a missing or wrong unit.
 */
double parse_quantity(Quantity q, const std::string& text);
/// Format an SI value back into the quantity's display unit, e.g. 7.68e10 -> "76.8GBps".
std::string format_quantity(Quantity q, double si);

/**
 * A loaded hardware description: metadata, topology and a map key -> Value, validated against a
 * ParamRegistry.
 *
 * File layout (YAML):
 *   name: mi355x-8gpu
 *   description: "..."
 *   topology: {gpus: 8, kind: full_mesh}        # or {gpus: 2, kind: pair}, {kind: pods, ...}
 *                                               # (kind: full_mesh, pair or pods; anything else is an error)
 *   <section>:
 *     <name>: {value: "76.8GBps", kind: spec, source: "where from"}
 *   ...
 * Fitted values add: {fitted_from: [files], fitted_on: date, commit: sha, sigma: "1.2GBps"}.
 *   tables:
 *     gemm: {file: "../calibrate/data/h200x2/gemm.jsonl", kind: measured, source: "..."}
 * (a table's file is relative to the hardware file's folder; unreadable or non-JSON lines are
 * errors naming the table's file and line).
 *
 * Errors (FileError, naming file, line and key): unreadable file, YAML syntax, a scenario file (a
 * top-level `scenario:` or `cases:`), unknown top-level key, unknown parameter key, missing
 * value/kind/source, unknown kind, a value of kind fitted without fitted_from, fitted_on or commit,
 * missing or wrong unit, wrong type, value outside the declared bounds (rates and capacities must be
 * positive), a calibration residual_rms_pct that is negative or not finite, a required parameter
 * missing (only when `require` lists the module's keys).
 */
class Hardware {
 public:
  static Hardware load(const std::string& path, const ParamRegistry& registry);
  /// Value of a parameter in SI units. std::out_of_range naming the key and file if absent.
  double get(const std::string& key) const;
  double get_or(const std::string& key, double fallback) const;
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const Value& value(const std::string& key) const;
  /// Replace a value (calibration, what-if). Keeps provenance unless `v` carries its own.
  void set(const std::string& key, Value v);
  void set_si(const std::string& key, double si);
  /// Throw FileError naming the first of `keys` that this file does not set.
  void require(const std::vector<std::string>& keys) const;

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::string& path() const { return path_; }
  int gpus() const { return gpus_; }
  const std::string& topology_kind() const { return topology_kind_; }
  /// Extra integer fields of `topology:` (e.g. gpus_per_pod, nics_per_node).
  int topology_int(const std::string& key, int fallback) const;
  const std::map<std::string, Value>& values() const { return values_; }
  /// A table declared under `tables:`; std::out_of_range naming the table and file if absent.
  const Table& table(const std::string& name) const;
  bool has_table(const std::string& name) const { return tables_.count(name) != 0; }
  /// Every table declared under `tables:` (name -> table), e.g. to list the files a run reads.
  const std::map<std::string, Table>& tables() const { return tables_; }
  /// The `calibration:` block written by `fusesim calibrate fit` (empty optional if never fitted).
  const std::optional<Calibration>& calibration() const { return calibration_; }
  void set_calibration(Calibration c) { calibration_ = std::move(c); }
  const ParamRegistry& registry() const { return *registry_; }

  /// Write back as YAML in the same layout (used by the calibration writer). Keeps every source.
  std::string to_yaml() const;

 private:
  std::string name_, description_, path_, topology_kind_;
  int gpus_ = 0;
  std::map<std::string, int> topology_ints_;
  std::map<std::string, Value> values_;
  std::map<std::string, Table> tables_;
  std::optional<Calibration> calibration_;
  const ParamRegistry* registry_ = nullptr;
};

}  // namespace fusesim::hw
