#include "hw/hardware.hpp"
#include "hw/json_limits.hpp"

#include <cctype>

#include "hw/io.hpp"
#include "hw/printable.hpp"
#include "hw/numbers.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <cerrno>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

namespace fusesim::hw {

const char* quantity_name(Quantity q) {
  switch (q) {
    case Quantity::Count: return "count";
    case Quantity::Ratio: return "ratio";
    case Quantity::Time: return "time";
    case Quantity::Bandwidth: return "bandwidth";
    case Quantity::Bytes: return "bytes";
    case Quantity::Frequency: return "frequency";
    case Quantity::FlopRate: return "flop rate";
  }
  return "?";
}

const char* display_unit(Quantity q) {
  switch (q) {
    case Quantity::Time: return "us";
    case Quantity::Bandwidth: return "GBps";
    case Quantity::Bytes: return "MiB";
    case Quantity::Frequency: return "MHz";
    case Quantity::FlopRate: return "TFLOPs";
    default: return "";
  }
}

double to_display(Quantity q, double si) {
  switch (q) {
    case Quantity::Time: return si * 1e6;
    case Quantity::Bandwidth: return si / 1e9;
    case Quantity::Bytes: return si / (1024.0 * 1024.0);
    case Quantity::Frequency: return si / 1e6;
    case Quantity::FlopRate: return si / 1e12;
    default: return si;
  }
}

const char* provenance_name(Provenance p) {
  switch (p) {
    case Provenance::Spec: return "spec";
    case Provenance::Measured: return "measured";
    case Provenance::Library: return "library";
    case Provenance::Derived: return "derived";
    case Provenance::Fitted: return "fitted";
  }
  return "?";
}

std::optional<Provenance> parse_provenance(const std::string& s) {
  if (s == "spec") return Provenance::Spec;
  if (s == "measured") return Provenance::Measured;
  if (s == "library") return Provenance::Library;
  if (s == "derived") return Provenance::Derived;
  if (s == "fitted") return Provenance::Fitted;
  return std::nullopt;
}

void ParamRegistry::add(const std::vector<ParamDecl>& decls) {
  for (const auto& d : decls) {
    if (index_.count(d.key)) throw std::logic_error("parameter declared twice: " + d.key);
    index_[d.key] = decls_.size();
    decls_.push_back(d);
  }
}

void ParamRegistry::add_table(const TableDecl& t) {
  if (const TableDecl* had = find_table(t.name)) {
    if (had->description != t.description) throw std::logic_error("table declared twice with different descriptions: " + t.name);
    return;
  }
  tables_.push_back(t);
}

const TableDecl* ParamRegistry::find_table(const std::string& name) const {
  for (const auto& t : tables_)
    if (t.name == name) return &t;
  return nullptr;
}

const ParamDecl* ParamRegistry::find(const std::string& key) const {
  auto it = index_.find(key);
  if (it != index_.end()) return &decls_[it->second];
  // "section@BUILD.name": a build's own value of the declared "section.name".
  const size_t at = key.find('@'), dot = key.find('.', at == std::string::npos ? 0 : at);
  if (at == std::string::npos || dot == std::string::npos || at == 0 || dot == at + 1) return nullptr;
  for (size_t i = at + 1; i < dot; ++i)
    if (!(std::isalnum(static_cast<unsigned char>(key[i])) || key[i] == '_' || key[i] == '-')) return nullptr;
  auto base = index_.find(key.substr(0, at) + key.substr(dot));
  if (base == index_.end()) return nullptr;
  auto [s, inserted] = scoped_.try_emplace(key, decls_[base->second]);
  if (inserted) s->second.key = key;
  return &s->second;
}

FileError::FileError(const std::string& file, int line, const std::string& key, const std::string& what)
    // The file name, key and message quote input (a file name may hold a newline or an ESC, a
    // yaml-cpp message the NUL it met, which had cut what() short): escaped (hw::printable) so that
    // an error stays one whole line (issue 22's second trial; a new user's binary scenario file).
    : std::runtime_error(fmt::format("{}{}: {}{}", printable(file), line > 0 ? ":" + std::to_string(line) : "",
                                     key.empty() ? "" : "'" + printable(key) + "': ", printable(what))) {}

void reject_extra_documents(const std::string& path, const std::string& what) {
  // A line scan, not YAML::LoadAllFromFile: Debian's yaml-cpp 0.7 loops until memory runs out on a
  // 3-byte file `{},` there (issue 22). A document marker (`---` at the start of a line, alone or
  // followed by a blank) after content, or content after a `...` end marker, opens a second
  // document; one holding only blanks and comments is empty and ignored, as before.
  std::istringstream in(read_input_file(path, what, kMaxYamlFileBytes));  // bounded (hw/io.hpp)
  std::string text;
  auto marker = [](const std::string& t, const char* m) {
    return t.rfind(m, 0) == 0 && (t.size() == 3 || t[3] == ' ' || t[3] == '\t' || t[3] == '\r');
  };
  auto has_content = [](const std::string& t, size_t from) {
    const size_t i = t.find_first_not_of(" \t\r", from);
    return i != std::string::npos && t[i] != '#';
  };
  auto refuse = [&](int line) {
    throw FileError(path, line, "",
                    fmt::format("a second YAML document starts here: a {} holds one document (the rest would be ignored)", what));
  };
  bool content = false;  // the first document has content
  bool ended = false;    // a `...` end marker closed the first document
  int later = 0;         // line of the last `---` that opened a later document (0: none yet)
  for (int n = 1; std::getline(in, text); ++n) {
    if (marker(text, "---")) {
      if (later == 0 && !content && !ended) {  // the first document's own (optional) start marker
        content = has_content(text, 3);
        continue;
      }
      later = n;
      if (has_content(text, 3)) refuse(n);
      continue;
    }
    if (marker(text, "...")) { ended = true; continue; }
    if (!has_content(text, 0)) continue;                        // blank or comment
    if (text[0] == '%' && (ended || later || !content)) continue;  // a directive before a document
    if (later) refuse(later);
    if (ended) refuse(n);
    content = true;
  }
}

namespace {
struct UnitDef { const char* unit; double factor; };

const std::vector<UnitDef>& units_for(Quantity q) {
  static const std::vector<UnitDef> time{{"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
  static const std::vector<UnitDef> bw{{"Bps", 1},        {"KBps", 1e3},        {"MBps", 1e6},
                                       {"GBps", 1e9},     {"TBps", 1e12},       {"KiBps", 1024.0},
                                       {"MiBps", 1048576.0}, {"GiBps", 1073741824.0}, {"bps", 0.125},
                                       {"Kbps", 125.0},   {"Mbps", 125e3},      {"Gbps", 125e6},
                                       {"Tbps", 125e9}};
  static const std::vector<UnitDef> bytes{{"B", 1},   {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
                                          {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
                                          {"TiB", 1099511627776.0}};
  static const std::vector<UnitDef> freq{{"Hz", 1}, {"KHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}};
  static const std::vector<UnitDef> flops{{"FLOPs", 1}, {"GFLOPs", 1e9}, {"TFLOPs", 1e12}, {"PFLOPs", 1e15}};
  static const std::vector<UnitDef> none{};
  switch (q) {
    case Quantity::Time: return time;
    case Quantity::Bandwidth: return bw;
    case Quantity::Bytes: return bytes;
    case Quantity::Frequency: return freq;
    case Quantity::FlopRate: return flops;
    default: return none;
  }
}

std::string expected_units(Quantity q) {
  std::string s;
  for (const auto& u : units_for(q)) s += (s.empty() ? "" : ", ") + std::string(u.unit);
  return s.empty() ? "a plain number" : "a number with one of: " + s;
}
}  // namespace

double parse_quantity(Quantity q, const std::string& text) {
  // A hand scanner of `[ws] [+-] (D+[.D*] | .D+) [(e|E)[+-]D+] [ws] [letters] [ws]`, not std::regex
  // (whose recursive matcher overflowed the stack on a 40 KB quantity, issue 22); 256 bytes at most.
  constexpr size_t kMaxQuantityBytes = 256;
  if (text.size() > kMaxQuantityBytes)
    throw std::invalid_argument(fmt::format("a quantity of {} bytes (starting '{}...') is longer than the {} bytes allowed", text.size(),
                                            text.substr(0, 32), kMaxQuantityBytes));
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  size_t i = 0;
  const size_t n = text.size();
  while (i < n && space(text[i])) ++i;
  const size_t num_begin = i;
  if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < n && digit(text[i])) ++i, ++int_digits;
  if (i < n && text[i] == '.') {
    ++i;
    while (i < n && digit(text[i])) ++i, ++frac_digits;
  }
  bool ok = int_digits > 0 || frac_digits > 0;
  if (ok && i < n && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    if (j < n && (text[j] == '+' || text[j] == '-')) ++j;
    size_t exp_digits = 0;
    while (j < n && digit(text[j])) ++j, ++exp_digits;
    if (exp_digits > 0) i = j;  // else the 'e' starts the unit (as the pattern read it)
  }
  const size_t num_end = i;
  while (i < n && space(text[i])) ++i;
  const size_t unit_begin = i;
  while (i < n && alpha(text[i])) ++i;
  const size_t unit_end = i;
  while (i < n && space(text[i])) ++i;
  ok = ok && i == n;
  if (!ok) throw std::invalid_argument(fmt::format("'{}' is not a {} (expected {})", text, quantity_name(q), expected_units(q)));
  errno = 0;
  const std::string digits = text.substr(num_begin, num_end - num_begin);
  const double num = std::strtod(digits.c_str(), nullptr);
  if (errno == ERANGE)
    throw std::invalid_argument(fmt::format("'{}': the number is out of the range of a double", text));
  const std::string unit = text.substr(unit_begin, unit_end - unit_begin);
  const auto& units = units_for(q);
  if (units.empty()) {
    if (!unit.empty())
      throw std::invalid_argument(fmt::format("'{}': a {} takes no unit", text, quantity_name(q)));
    if (q == Quantity::Count && num != std::floor(num))
      throw std::invalid_argument(fmt::format("'{}': a count must be an integer", text));
    return num;
  }
  if (unit.empty())
    throw std::invalid_argument(fmt::format("'{}' has no unit (expected {})", text, expected_units(q)));
  for (const auto& u : units)
    if (unit == u.unit) return num * u.factor;
  throw std::invalid_argument(fmt::format("'{}': unknown unit '{}' for a {} (expected {})", text, unit, quantity_name(q), expected_units(q)));
}

std::string format_quantity(Quantity q, double si) {
  const char* u = display_unit(q);
  return fmt::format("{:.6g}{}", to_display(q, si), u);
}

namespace {

std::string scalar(const YAML::Node& n, const std::string& file, const std::string& key) {
  if (!n || !n.IsScalar()) throw FileError(file, yaml_line(n), key, "expected a scalar value");
  return n.as<std::string>();
}
}  // namespace

// A function-try-block: a yaml-cpp conversion error not checked for below still names the file and line.
Hardware Hardware::load(const std::string& path, const ParamRegistry& registry) try {
  Hardware hw;
  hw.path_ = path;
  hw.registry_ = &registry;
  const YAML::Node root = load_yaml_map(path, "hardware file");
  reject_extra_documents(path, "hardware file");
  for (const char* k : {"scenario", "cases"})  // the keys a scenario file must have (models::Scenario::load)
    if (root[k])
      throw FileError(path, yaml_line(root[k]), "",
                      fmt::format("this is a scenario file (it has a top-level '{}:'), not a hardware file (e.g. hw/mi355x-8gpu.yaml)", k));
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string top = it->first.as<std::string>();
    const YAML::Node node = it->second;  // a copy: it->second is a temporary proxy
    if (top == "name") { hw.name_ = scalar(node, path, top); continue; }
    if (top == "description") { hw.description_ = scalar(node, path, top); continue; }
    if (top == "calibration") {
      if (!node.IsMap() || !node["residual_rms_pct"])
        throw FileError(path, yaml_line(node), top, "expected {residual_rms_pct: X, points: N, fitted_on: DATE, commit: SHA, measurements: [...]}");
      Calibration c;
      try {
        c.residual_rms_pct = node["residual_rms_pct"].as<double>();
        if (node["points"]) c.points = node["points"].as<int>();
      } catch (const YAML::Exception&) {
        throw FileError(path, yaml_line(node), top, "residual_rms_pct must be a number and points an integer");
      }
      // The residuals set every prediction's 95% band: a negative or non-finite RMS would drop it silently.
      if (!std::isfinite(c.residual_rms_pct) || c.residual_rms_pct < 0)
        throw FileError(path, yaml_line(node["residual_rms_pct"]), "calibration.residual_rms_pct",
                        fmt::format("must be a finite number >= 0 (percent), got {}", node["residual_rms_pct"].Scalar()));
      if (c.points < 0)
        throw FileError(path, yaml_line(node["points"]), "calibration.points", fmt::format("must be >= 0, got {}", c.points));
      if (node["fitted_on"]) c.fitted_on = node["fitted_on"].as<std::string>();
      if (node["commit"]) c.commit = node["commit"].as<std::string>();
      if (node["measurements"] && node["measurements"].IsSequence())
        for (const auto& m : node["measurements"]) c.measurements.push_back(m.as<std::string>());
      hw.calibration_ = c;
      continue;
    }
    if (top == "tables") {
      if (!node.IsMap()) throw FileError(path, yaml_line(node), top, "expected {name: {file, kind, source}, ...}");
      for (auto t = node.begin(); t != node.end(); ++t) {
        const std::string tn = t->first.as<std::string>();
        const YAML::Node tv = t->second;
        const std::string key = "tables." + tn;
        if (!registry.tables().empty() && !registry.find_table(tn)) {
          std::vector<std::string> names;
          for (const auto& d : registry.tables()) names.push_back(d.name);
          throw FileError(path, yaml_line(t->first), key, fmt::format("unknown table (declared: {})", fmt::join(names, ", ")));
        }
        if (!tv.IsMap() || !tv["file"] || !tv["kind"] || !tv["source"])
          throw FileError(path, yaml_line(tv), key, "expected {file: PATH, kind: measured, source: TEXT}");
        Table tab;
        tab.name = tn;
        tab.line = yaml_line(tv);
        tab.source = scalar(tv["source"], path, key + ".source");
        auto kind = parse_provenance(scalar(tv["kind"], path, key + ".kind"));
        if (!kind) throw FileError(path, yaml_line(tv["kind"]), key, "kind must be spec, measured, library, derived or fitted");
        tab.kind = *kind;
        namespace fs = std::filesystem;
        tab.file = (fs::path(path).parent_path() / scalar(tv["file"], path, key + ".file")).lexically_normal().string();
        // Bounded (hw/io.hpp): a table that is /dev/zero, a FIFO, a directory or hundreds of MB is
        // refused before it is read, naming the hardware file's line and the table.
        std::string table_text;
        try {
          table_text = read_input_file(tab.file, fmt::format("measured table (JSON lines) of {}", key), kMaxTableFileBytes);
        } catch (const FileError& e) {
          throw FileError(path, yaml_line(tv["file"]), key, e.what());
        }
        std::istringstream tf(table_text);
        std::string ln;
        int no = 0;
        while (std::getline(tf, ln)) {
          ++no;
          if (ln.find_first_not_of(" \t\r") == std::string::npos) continue;
          tab.rows.push_back(parse_json_bounded(ln, {tab.file, no, key}));  // nesting and size bounded
        }
        hw.tables_[tn] = std::move(tab);
      }
      continue;
    }
    if (top == "topology") {
      if (!node.IsMap()) throw FileError(path, yaml_line(node), top, "expected a mapping {gpus: N, kind: ...}");
      for (auto t = node.begin(); t != node.end(); ++t) {
        const std::string k = t->first.as<std::string>();
        if (k == "kind") {
          // The kinds the models know: full_mesh (every GPU linked to every other), pair (two GPUs),
          // pods (NVLink pods joined by InfiniBand NICs: the AFD model's NIC path).
          static const std::vector<std::string> kinds{"full_mesh", "pair", "pods"};
          hw.topology_kind_ = scalar(t->second, path, "topology.kind");
          if (std::find(kinds.begin(), kinds.end(), hw.topology_kind_) == kinds.end())
            throw FileError(path, yaml_line(t->second), "topology.kind",
                            fmt::format("unknown topology kind '{}' (expected one of: {})", hw.topology_kind_, fmt::join(kinds, ", ")));
        } else {
          // The integer fields some model reads (gpus; the pods model's gpus_per_pod, gpus_per_node,
          // nics_per_node): a misspelt one would silently fall back to its default.
          static const std::vector<std::string> ints{"gpus", "gpus_per_pod", "gpus_per_node", "nics_per_node"};
          if (std::find(ints.begin(), ints.end(), k) == ints.end())
            throw FileError(path, yaml_line(t->first), "topology." + k,
                            fmt::format("unknown topology key (expected kind, {})", fmt::join(ints, ", ")));
          if (t->second.IsScalar() && leading_zero_integer(t->second.Scalar()))
            throw FileError(path, yaml_line(t->second), "topology." + k,
                            fmt::format("'{}': a whole number with a leading zero (read as octal); write it without the zero", t->second.Scalar()));
          try {
            hw.topology_ints_[k] = t->second.as<int>();
          } catch (const YAML::Exception&) {
            throw FileError(path, yaml_line(t->second), "topology." + k, "expected an integer");
          }
        }
      }
      if (hw.topology_kind_.empty()) throw FileError(path, yaml_line(node), "topology.kind", "missing (expected one of: full_mesh, pair, pods)");
      if (!hw.topology_ints_.count("gpus")) throw FileError(path, yaml_line(node), "topology.gpus", "missing");
      hw.gpus_ = hw.topology_ints_["gpus"];
      if (hw.gpus_ < 1) throw FileError(path, yaml_line(node), "topology.gpus", "must be >= 1");
      continue;
    }
    if (!node.IsMap())
      throw FileError(path, yaml_line(node), top, "unknown top-level key (expected name, description, topology, or a parameter section)");
    for (auto p = node.begin(); p != node.end(); ++p) {
      const std::string key = top + "." + p->first.as<std::string>();
      const YAML::Node v = p->second;
      const ParamDecl* decl = registry.find(key);
      if (!decl) throw FileError(path, yaml_line(p->first), key, "unknown parameter (see `fusesim params` for the declared ones)");
      if (!v.IsMap()) throw FileError(path, yaml_line(v), key, "expected {value: ..., kind: ..., source: ...}");
      static const std::set<std::string> allowed{"value", "kind", "source", "fitted_from", "fitted_on", "commit", "sigma", "note"};
      for (auto f = v.begin(); f != v.end(); ++f)
        if (!allowed.count(f->first.as<std::string>()))
          throw FileError(path, yaml_line(f->first), key + "." + f->first.as<std::string>(),
                          "unknown field (expected value, kind, source, fitted_from, fitted_on, commit, sigma, note)");
      if (!v["value"]) throw FileError(path, yaml_line(v), key, "missing 'value'");
      if (!v["kind"]) throw FileError(path, yaml_line(v), key, "missing 'kind' (spec, measured, library, derived or fitted)");
      if (!v["source"]) throw FileError(path, yaml_line(v), key, "missing 'source'");
      Value val;
      val.line = yaml_line(v["value"]);
      val.text = scalar(v["value"], path, key + ".value");
      try {
        val.si = parse_quantity(decl->quantity, val.text);
      } catch (const std::invalid_argument& e) {
        throw FileError(path, val.line, key, e.what());
      }
      if (!(val.si >= decl->lower && val.si <= decl->upper))
        throw FileError(path, val.line, key,
                        fmt::format("value {} is outside [{}, {}]", val.text, format_quantity(decl->quantity, decl->lower),
                                    format_quantity(decl->quantity, decl->upper)));
      auto kind = parse_provenance(scalar(v["kind"], path, key + ".kind"));
      if (!kind) throw FileError(path, yaml_line(v["kind"]), key, "kind must be spec, measured, library, derived or fitted");
      val.kind = *kind;
      val.source = scalar(v["source"], path, key + ".source");
      if (v["fitted_from"]) {
        if (!v["fitted_from"].IsSequence()) throw FileError(path, yaml_line(v["fitted_from"]), key, "fitted_from must be a list");
        for (const auto& s : v["fitted_from"]) val.fitted_from.push_back(s.as<std::string>());
      }
      if (v["fitted_on"]) val.fitted_on = scalar(v["fitted_on"], path, key + ".fitted_on");
      if (v["commit"]) val.fitted_commit = scalar(v["commit"], path, key + ".commit");
      // A fitted value says which measurements, when and at which commit (what `calibrate fit` writes).
      if (val.kind == Provenance::Fitted) {
        if (val.fitted_from.empty())
          throw FileError(path, yaml_line(v["kind"]), key + ".fitted_from",
                          "missing: a value of kind fitted names the measurement files it was fitted to (fitted_from: [FILE, ...])");
        if (val.fitted_on.empty())
          throw FileError(path, yaml_line(v["kind"]), key + ".fitted_on", "missing: a value of kind fitted gives the date of its fit (fitted_on: YYYY-MM-DD)");
        if (val.fitted_commit.empty())
          throw FileError(path, yaml_line(v["kind"]), key + ".commit", "missing: a value of kind fitted gives the commit of its fit (commit: SHA)");
      }
      if (v["sigma"]) {
        try {
          val.fit_sigma_si = parse_quantity(decl->quantity, scalar(v["sigma"], path, key + ".sigma"));
        } catch (const std::invalid_argument& e) {
          throw FileError(path, yaml_line(v["sigma"]), key + ".sigma", e.what());
        }
      }
      if (hw.values_.count(key)) throw FileError(path, val.line, key, "set twice");
      hw.values_[key] = std::move(val);
    }
  }
  if (hw.name_.empty()) throw FileError(path, 1, "name", "missing");
  if (hw.gpus_ == 0) throw FileError(path, 1, "topology", "missing (expected {gpus: N, kind: ...})");
  return hw;
} catch (const YAML::Exception& e) {
  throw FileError(path, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", "unexpected value (yaml-cpp: " + e.msg + ")");
}

double Hardware::get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end())
    throw std::out_of_range(fmt::format("{}: parameter '{}' is not set in this hardware file", path_, key));
  return it->second.si;
}

double Hardware::get_or(const std::string& key, double fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second.si;
}

const Value& Hardware::value(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end())
    throw std::out_of_range(fmt::format("{}: parameter '{}' is not set in this hardware file", path_, key));
  return it->second;
}

void Hardware::set(const std::string& key, Value v) { values_[key] = std::move(v); }

void Hardware::set_si(const std::string& key, double si) {
  auto it = values_.find(key);
  if (it == values_.end()) {
    Value v;
    v.si = si;
    v.kind = Provenance::Derived;
    v.source = "set programmatically";
    values_[key] = v;
  } else {
    it->second.si = si;
  }
  if (const ParamDecl* d = registry_ ? registry_->find(key) : nullptr) values_[key].text = format_quantity(d->quantity, si);
}

void Hardware::require(const std::vector<std::string>& keys) const {
  for (const auto& k : keys)
    if (!values_.count(k)) throw FileError(path_, 0, k, "required by the model but not set in this hardware file");
}

const Table& Hardware::table(const std::string& name) const {
  auto it = tables_.find(name);
  if (it == tables_.end()) throw std::out_of_range(fmt::format("{}: no table '{}' under tables:", path_, name));
  return it->second;
}

int Hardware::topology_int(const std::string& key, int fallback) const {
  auto it = topology_ints_.find(key);
  return it == topology_ints_.end() ? fallback : it->second;
}

std::string Hardware::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << name_;
  if (!description_.empty()) out << YAML::Key << "description" << YAML::Value << description_;
  out << YAML::Key << "topology" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "kind" << YAML::Value << topology_kind_;
  for (const auto& [k, v] : topology_ints_) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
  if (calibration_) {
    out << YAML::Key << "calibration" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "residual_rms_pct" << YAML::Value << fmt::format("{:.3f}", calibration_->residual_rms_pct);
    out << YAML::Key << "points" << YAML::Value << calibration_->points;
    out << YAML::Key << "fitted_on" << YAML::Value << calibration_->fitted_on;
    out << YAML::Key << "commit" << YAML::Value << calibration_->commit;
    out << YAML::Key << "measurements" << YAML::Value << YAML::Flow << calibration_->measurements;
    out << YAML::EndMap;
  }
  if (!tables_.empty()) {
    out << YAML::Key << "tables" << YAML::Value << YAML::BeginMap;
    namespace fs = std::filesystem;
    for (const auto& [n, t] : tables_) {
      out << YAML::Key << n << YAML::Value << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "file" << YAML::Value << fs::path(t.file).lexically_relative(fs::path(path_).parent_path()).string();
      out << YAML::Key << "kind" << YAML::Value << provenance_name(t.kind);
      out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << t.source;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  // Group by section, keeping key order stable (std::map is sorted).
  std::string section;
  bool open = false;
  for (const auto& [key, v] : values_) {
    const auto dot = key.find('.');
    const std::string sec = key.substr(0, dot), name = key.substr(dot + 1);
    if (sec != section) {
      if (open) out << YAML::EndMap;
      out << YAML::Key << sec << YAML::Value << YAML::BeginMap;
      section = sec;
      open = true;
    }
    out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
    const ParamDecl* d = registry_ ? registry_->find(key) : nullptr;
    std::string text = v.text;
    if (v.kind == Provenance::Fitted && d) text = format_quantity(d->quantity, v.si);
    out << YAML::Key << "value" << YAML::Value << YAML::DoubleQuoted << text;
    out << YAML::Key << "kind" << YAML::Value << provenance_name(v.kind);
    out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << v.source;
    if (!v.fitted_from.empty()) {
      out << YAML::Key << "fitted_from" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& s : v.fitted_from) out << s;
      out << YAML::EndSeq;
    }
    if (!v.fitted_on.empty()) out << YAML::Key << "fitted_on" << YAML::Value << v.fitted_on;
    if (!v.fitted_commit.empty()) out << YAML::Key << "commit" << YAML::Value << v.fitted_commit;
    if (v.fit_sigma_si > 0 && d) out << YAML::Key << "sigma" << YAML::Value << YAML::DoubleQuoted << format_quantity(d->quantity, v.fit_sigma_si);
    out << YAML::EndMap;
  }
  if (open) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace fusesim::hw
