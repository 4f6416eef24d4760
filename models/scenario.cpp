#include "models/scenario.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"
#include "models/afd/afd.hpp"
#include "models/afd/params.hpp"
#include "models/afd/scenario.hpp"
#include "models/gemm_ar.hpp"
#include "models/gemm_ar_live.hpp"
#include "models/serving.hpp"
#include "models/params.hpp"

namespace fusesim::models {
namespace fs = std::filesystem;
using hw::FileError;

namespace {
int line_of(const YAML::Node& n) { return n && n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

void check_keys(const YAML::Node& map, const std::set<std::string>& allowed, const std::string& file, const std::string& where) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!allowed.count(k)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw FileError(file, line_of(it->first), where.empty() ? k : where + "." + k, "unknown key (expected one of: " + list + ")");
    }
  }
}

double number(const YAML::Node& n, const std::string& file, const std::string& key) {
  double v;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    // A numeric literal yaml-cpp cannot hold (1e999) is out of range, not a word.
    const std::string t = n.IsScalar() ? n.Scalar() : "";
    char* end = nullptr;
    const double d = t.empty() ? 0.0 : std::strtod(t.c_str(), &end);
    if (!t.empty() && end && *end == '\0' && std::isinf(d))
      throw FileError(file, line_of(n), key, fmt::format("'{}' is out of the range of a double", t));
    throw FileError(file, line_of(n), key, fmt::format("expected a number, got '{}'", hw::yaml_text(n)));
  }
  if (!std::isfinite(v)) throw FileError(file, line_of(n), key, fmt::format("expected a finite number, got '{}'", hw::yaml_text(n)));
  return v;
}

// The reason of a known miss: a non-empty text. A plain true/false/number is a flag, not a reason.
std::string reason_text(const YAML::Node& n, const std::string& file, const std::string& key) {
  bool flag = false;
  if (n.IsScalar() && n.Tag() != "!") {  // "!": quoted, so meant as text
    bool b;
    double d;
    flag = YAML::convert<bool>::decode(n, b) || YAML::convert<double>::decode(n, d);
  }
  if (!n.IsScalar() || flag || n.Scalar().find_first_not_of(" \t") == std::string::npos)
    throw FileError(file, line_of(n), key,
                    fmt::format("expected the reason the model misses this point (a non-empty text), got '{}'", hw::yaml_text(n)));
  return n.Scalar();
}

// A text field (a name, a path, a source): a scalar, not a list or mapping, and not empty unless `may_be_empty`.
// `null_line`: the line to name for an empty value (yaml-cpp marks a null value where the next token starts).
std::string text(const YAML::Node& n, const std::string& file, const std::string& key, const std::string& expected,
                 bool may_be_empty = false, int null_line = 0) {
  if (!n || n.IsNull()) {
    if (may_be_empty) return "";
    throw FileError(file, null_line ? null_line : line_of(n), key, "is empty (expected " + expected + ")");
  }
  if (!n.IsScalar())
    throw FileError(file, line_of(n), key,
                    fmt::format("expected {}, got a {} '{}'", expected, n.IsSequence() ? "list" : "mapping", hw::yaml_text(n)));
  if (!may_be_empty && n.Scalar().find_first_not_of(" \t") == std::string::npos)
    throw FileError(file, line_of(n), key, "is empty (expected " + expected + ")");
  return n.Scalar();
}

// Keys of a measured entry: `measured: {...}`, each entry of the list form (which adds `at`), and
// `measured_phases: {...}`.
const std::set<std::string> kMeasuredKeys{"value_us", "period_us", "phases_us", "kernels", "source", "known_miss"};
const std::set<std::string> kMeasuredPointKeys{"at", "value_us", "period_us", "phases_us", "kernels", "source", "known_miss"};
const std::set<std::string> kMeasuredPhasesKeys{"phases_us", "source"};

Measured parse_measured_one(const YAML::Node& m, const std::string& file, const std::string& key, const std::set<std::string>& allowed) {
  Measured out;
  if (!m.IsMap()) throw FileError(file, line_of(m), key, fmt::format("expected a mapping of {}", fmt::join(allowed, ", ")));
  check_keys(m, allowed, file, key);
  if (!m["source"]) throw FileError(file, line_of(m), key + ".source", "every measured value needs a source (table and row)");
  out.source = text(m["source"], file, key + ".source", "the table and row the value comes from");
  if (m["known_miss"]) out.known_miss = reason_text(m["known_miss"], file, key + ".known_miss");
  if (m["value_us"] && m["period_us"])
    throw FileError(file, line_of(m["period_us"]), key + ".period_us",
                    "give value_us (compared with the prediction) or period_us (compared with the period), not both");
  for (const char* f : {"value_us", "period_us"})
    if (m[f]) {
      out.value_us = number(m[f], file, key + "." + f);
      if (!(*out.value_us > 0)) throw FileError(file, line_of(m[f]), key + "." + f, "a measured time must be > 0 us");
      if (std::string(f) == "period_us") out.metric = "period_us";
    }
  if (m["phases_us"]) {
    if (!m["phases_us"].IsMap()) throw FileError(file, line_of(m["phases_us"]), key + ".phases_us", "expected {phase: us, ...}");
    for (auto p = m["phases_us"].begin(); p != m["phases_us"].end(); ++p)
    {
      const std::string ph = p->first.as<std::string>();
      const double v = number(p->second, file, key + ".phases_us." + ph);
      if (!(v > 0)) throw FileError(file, line_of(p->second), key + ".phases_us." + ph, "a measured phase time must be > 0 us");
      out.phases_us[ph] = v;
    }
  }
  if (const YAML::Node ks = m["kernels"]) {
    if (!ks.IsSequence()) throw FileError(file, line_of(ks), key + ".kernels", "expected a list of {device, kernel, start_us, end_us}");
    for (const auto& k : ks) {
      if (!k.IsMap()) throw FileError(file, line_of(k), key + ".kernels", "expected {device, kernel, start_us, end_us}");
      check_keys(k, {"device", "kernel", "start_us", "end_us"}, file, key + ".kernels");
      for (const char* f : {"device", "kernel", "start_us", "end_us"})
        if (!k[f]) throw FileError(file, line_of(k), key + ".kernels", fmt::format("an entry lacks '{}'", f));
      const double dev = number(k["device"], file, key + ".kernels.device");
      if (!(dev >= 0) || dev != std::floor(dev) || dev > 1e6)
        throw FileError(file, line_of(k["device"]), key + ".kernels.device", fmt::format("expected a device index 0, 1, ..., got {}", dev));
      const std::string name = text(k["kernel"], file, key + ".kernels.kernel", "a kernel name");
      const double start = number(k["start_us"], file, key + ".kernels.start_us"), end = number(k["end_us"], file, key + ".kernels.end_us");
      if (!(end > start))
        throw FileError(file, line_of(k["end_us"]), key + ".kernels.end_us",
                        fmt::format("a kernel must end after it starts (start_us {}, end_us {})", start, end));
      for (const auto& prev : out.kernels)
        if (prev.device == int(dev) && prev.kernel == name)
          throw FileError(file, line_of(k), key + ".kernels",
                          fmt::format("device {} kernel '{}' is listed twice (first at line {})", int(dev), name, prev.line));
      out.kernels.push_back({int(dev), name, end - start, line_of(k), start, end});
    }
  }
  if (!out.value_us && out.phases_us.empty()) throw FileError(file, line_of(m), key, "needs value_us or phases_us");
  return out;
}

/// How messages name case `i` of `cases`: `cases[ID]` when the case is a mapping with exactly one
/// `id` key holding a non-empty name, else `cases[INDEX]` (0-based), as Scenario::load does.
std::string case_key(const YAML::Node& cnode, size_t i) {
  if (cnode.IsMap()) {
    int n = 0;
    YAML::Node idn;
    for (auto it = cnode.begin(); it != cnode.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == "id") {
        ++n;
        idn = it->second;
      }
    if (n == 1 && idn.IsScalar() && idn.Scalar().find_first_not_of(" \t") != std::string::npos) return "cases[" + idn.Scalar() + "]";
  }
  return fmt::format("cases[{}]", i);
}

/// The scenario file's top-level mapping (hw::load_yaml_map), a key given twice inside a case being
/// named `cases[ID]...` like every other error of a case with an id.
YAML::Node load_scenario_root(const std::string& path) {
  return hw::load_yaml_map(path, "scenario file", [](const std::string& where, const YAML::Node& element, size_t i) {
    return where == "cases" ? case_key(element, i) : where + "[" + std::to_string(i) + "]";
  });
}

bool matches(const YAML::Node& params, const YAML::Node& at) {
  for (auto it = at.begin(); it != at.end(); ++it) {
    const auto p = params[it->first.as<std::string>()];
    if (!p || hw::yaml_text(p) != hw::yaml_text(it->second)) return false;
  }
  return true;
}
}  // namespace

// Where a case's parameter `k` is written, for error messages: its line and key (defaults.K or
// cases[ID].params|sweep.K); the case's own line and cases[ID].params.K when it is not written.
static std::pair<int, std::string> param_location(const Case& c, const std::string& k) {
  const auto pl = c.param_lines.find(k);
  if (pl == c.param_lines.end() || pl->second.first <= 0) return {c.line, "cases[" + c.id + "].params." + k};
  const auto& [line, where] = pl->second;
  return {line, where == "defaults" ? "defaults." + k : "cases[" + c.id + "]." + where + "." + k};
}

// `layer_fits:` of a ttft scenario (lf: the node, undefined when the file has none; key_line: the line
// of its key), checked against the cases (loaded first): each fit's rows exist, have a measured value
// that is not a known miss and take that fit's count; every `layers: {fit: NAME}` names a fit. Sets
// each case's layer_fit and fitted_on.
static void check_layer_fits(Scenario& sc, const YAML::Node& lf, int key_line) {
  const std::string& path = sc.path;
  auto layers_at = [](const Case& c) { return param_location(c, "layers"); };
  auto fit_of = [&](const Case& c) -> std::string {
    const YAML::Node l = c.params["layers"];
    if (!l || !l.IsMap()) return "";
    if (l.size() != 1 || !l["fit"] || !l["fit"].IsScalar()) {
      const auto [line, key] = layers_at(c);
      throw FileError(path, line, key, "expected a number or {fit: NAME} (a name of layer_fits)");
    }
    return l["fit"].Scalar();
  };
  if (lf) {
    if (sc.model != "ttft")
      throw FileError(path, key_line, "layer_fits", fmt::format("only the ttft model fits a layer count (this scenario's model is '{}')", sc.model));
    if (!lf.IsSequence() || lf.size() == 0)
      throw FileError(path, key_line, "layer_fits", "expected a non-empty list of {name, cases: [ID, ...], source}");
  }
  std::map<std::string, Case*> by_id;
  for (auto& c : sc.cases) by_id[c.id] = &c;
  // First the fits' names, so a case naming no fit is reported as such before any fit's rows are read.
  for (size_t i = 0; lf && i < lf.size(); ++i) {
    const YAML::Node e = lf[i];
    const std::string key = fmt::format("layer_fits[{}]", i);
    if (!e.IsMap()) throw FileError(path, line_of(e), key, "expected {name, cases: [ID, ...], source}");
    check_keys(e, {"name", "cases", "source", "nominal", "nominal_source", "max_layers"}, path, key);
    for (const char* k : {"name", "cases", "source"})
      if (!e[k]) throw FileError(path, line_of(e), key + "." + k, "missing");
    Scenario::LayerFit f;
    f.name = text(e["name"], path, key + ".name", "a name");
    f.source = text(e["source"], path, key + ".source", "why the count is fitted (text)");
    f.line = line_of(e);
    if (e["nominal"]) {
      f.nominal = number(e["nominal"], path, key + ".nominal");
      if (!(f.nominal > 0)) throw FileError(path, line_of(e["nominal"]), key + ".nominal", "must be > 0 (the count one would assume)");
      if (!e["nominal_source"])
        throw FileError(path, line_of(e["nominal"]), key + ".nominal_source", "missing (where the nominal count comes from)");
      f.nominal_source = text(e["nominal_source"], path, key + ".nominal_source", "a source (text)");
    } else if (e["nominal_source"]) {
      throw FileError(path, line_of(e["nominal_source"]), key + ".nominal", "missing (nominal_source without a nominal count)");
    }
    if (e["max_layers"]) {
      f.max_layers = number(e["max_layers"], path, key + ".max_layers");
      if (!(f.max_layers > 0)) throw FileError(path, line_of(e["max_layers"]), key + ".max_layers", "must be > 0");
    }
    for (const auto& g : sc.layer_fits)
      if (g.name == f.name) throw FileError(path, f.line, key + ".name", fmt::format("fit '{}' is named twice (also on line {})", f.name, g.line));
    sc.layer_fits.push_back(f);
  }
  std::set<std::string> used;
  for (auto& c : sc.cases) {
    const std::string name = fit_of(c);
    c.layer_fit = name;
    if (name.empty()) continue;
    if (std::none_of(sc.layer_fits.begin(), sc.layer_fits.end(), [&](const auto& f) { return f.name == name; })) {
      std::vector<std::string> names;
      for (const auto& f : sc.layer_fits) names.push_back(f.name);
      const auto [line, key] = layers_at(c);
      throw FileError(path, line, key,
                      names.empty() ? fmt::format("no layer fit named '{}': this scenario has no layer_fits", name)
                                    : fmt::format("no layer fit named '{}' (layer_fits names: {})", name, fmt::join(names, ", ")));
    }
    used.insert(name);
  }
  for (size_t i = 0; lf && i < lf.size(); ++i) {
    const YAML::Node e = lf[i];
    const std::string key = fmt::format("layer_fits[{}]", i);
    Scenario::LayerFit& f = sc.layer_fits[i];
    if (!used.count(f.name)) throw FileError(path, f.line, key, fmt::format("fit '{}' is used by no case", f.name));
    if (!e["cases"].IsSequence() || e["cases"].size() == 0)
      throw FileError(path, line_of(e["cases"]), key + ".cases", "expected a non-empty list of case ids");
    for (size_t j = 0; j < e["cases"].size(); ++j) {
      const std::string ckey = fmt::format("{}.cases[{}]", key, j);
      const std::string id = text(e["cases"][j], path, ckey, "a case id");
      const auto c = by_id.find(id);
      if (c == by_id.end()) throw FileError(path, line_of(e["cases"][j]), ckey, fmt::format("no case '{}' in this scenario", id));
      if (!c->second->measured || !c->second->measured->value_us)
        throw FileError(path, line_of(e["cases"][j]), ckey, fmt::format("case '{}' has no measured value to fit on", id));
      if (!c->second->measured->known_miss.empty())
        throw FileError(path, line_of(e["cases"][j]), ckey,
                        fmt::format("case '{}' is a known miss: a point the model is known not to reach cannot be fitted on", id));
      if (c->second->layer_fit != f.name) {
        const auto [line, lkey] = layers_at(*c->second);
        const YAML::Node l = c->second->params["layers"];
        throw FileError(path, line, lkey,
                        fmt::format("row '{}' is listed by {} (fit '{}'), so it must take that count: layers: {{fit: {}}} (it has {})", id,
                                    ckey, f.name, f.name, l ? "'" + hw::yaml_text(l) + "'" : "none"));
      }
      if (c->second->fitted_on)
        throw FileError(path, line_of(e["cases"][j]), ckey, fmt::format("case '{}' is listed twice", id));
      c->second->fitted_on = true;
      f.cases.push_back(id);
    }
  }
}

// A function-try-block: a yaml-cpp conversion error this loader does not check for itself still names the file and line.
Scenario Scenario::load(const std::string& path) try {
  Scenario sc;
  sc.path = path;
  const YAML::Node root = load_scenario_root(path);
  hw::reject_extra_documents(path, "scenario file");
  check_keys(root, {"scenario", "description", "hardware", "model", "tolerance_pct", "defaults", "cases", "notes",
                    "kernel_durations", "layer_fits"}, path, "");
  for (const char* k : {"scenario", "hardware", "model", "cases"})
    if (!root[k]) throw FileError(path, 1, k, "missing");
  std::map<std::string, int> key_line;  // top-level key -> its line
  for (auto it = root.begin(); it != root.end(); ++it) key_line[it->first.as<std::string>()] = line_of(it->first);
  sc.name = text(root["scenario"], path, "scenario", "a name (text)", false, key_line["scenario"]);
  sc.description = text(root["description"], path, "description", "a text", true);
  sc.model = text(root["model"], path, "model", "a model name (text)", false, key_line["model"]);
  // hardware: relative to the scenario's folder, else to the repository root (its parent), else CWD
  const std::string hwp = text(root["hardware"], path, "hardware", "the path of a hardware file (text)", false, key_line["hardware"]);
  sc.hardware_line = line_of(root["hardware"]);
  fs::path dir = fs::path(path).parent_path().lexically_normal();
  if (dir.empty()) dir = ".";  // a scenario named without its folder: the folder is the CWD
  std::vector<std::string> tries;
  for (const fs::path& t : {dir / hwp, (dir / "..").lexically_normal() / hwp, fs::path(hwp)})
    if (std::find(tries.begin(), tries.end(), t.lexically_normal().string()) == tries.end()) tries.push_back(t.lexically_normal().string());
  sc.hardware_path.clear();
  for (const auto& t : tries)
    if (fs::is_regular_file(t)) { sc.hardware_path = t; break; }
  if (sc.hardware_path.empty())
    for (const auto& t : tries)
      if (fs::is_directory(t))
        throw FileError(path, line_of(root["hardware"]), "hardware",
                        fmt::format("'{}' is a directory ({}), expected a hardware file (e.g. hw/mi355x-8gpu.yaml)", hwp, t));
  if (sc.hardware_path.empty())
    throw FileError(path, line_of(root["hardware"]), "hardware",
                    fmt::format("no hardware file '{}' (tried {})", hwp, fmt::join(tries, ", ")));
  struct KnownMissAt { std::string case_id, kernel, key; int line; };
  std::vector<KnownMissAt> known_miss_at;  // checked against the cases once they are read
  if (const YAML::Node kd = root["kernel_durations"]) {
    if (!kd.IsMap()) throw FileError(path, line_of(kd), "kernel_durations", "expected a mapping {tolerance_pct, known_misses}");
    check_keys(kd, {"tolerance_pct", "known_misses"}, path, "kernel_durations");
    if (kd["tolerance_pct"]) {
      sc.kernel_tolerance_pct = number(kd["tolerance_pct"], path, "kernel_durations.tolerance_pct");
      if (!(sc.kernel_tolerance_pct > 0))
        throw FileError(path, line_of(kd["tolerance_pct"]), "kernel_durations.tolerance_pct", "must be > 0");
    }
    if (const YAML::Node km = kd["known_misses"]) {
      if (!km.IsSequence())
        throw FileError(path, line_of(km), "kernel_durations.known_misses", "expected a list of {case, kernel, reason}");
      for (size_t i = 0; i < km.size(); ++i) {
        const YAML::Node e = km[i];
        const std::string ekey = fmt::format("kernel_durations.known_misses[{}]", i);
        if (!e.IsMap()) throw FileError(path, line_of(e), ekey, "expected {case, kernel, reason}");
        check_keys(e, {"case", "kernel", "reason"}, path, ekey);
        if (!e["case"] || !e["kernel"] || !e["reason"]) throw FileError(path, line_of(e), ekey, "each entry needs case, kernel and reason");
        const std::string cid = text(e["case"], path, ekey + ".case", "a case id"),
                          kernel = text(e["kernel"], path, ekey + ".kernel", "devN/KERNEL"), miss = cid + " " + kernel;
        if (sc.kernel_known_misses.count(miss))
          throw FileError(path, line_of(e), ekey, fmt::format("'{}' is listed twice", miss));
        sc.kernel_known_misses[miss] = reason_text(e["reason"], path, ekey + ".reason");
        known_miss_at.push_back({cid, kernel, ekey, line_of(e)});
      }
    }
  }
  const double tol = root["tolerance_pct"] ? number(root["tolerance_pct"], path, "tolerance_pct") : 10.0;
  if (!(tol > 0)) throw FileError(path, line_of(root["tolerance_pct"]), "tolerance_pct", "must be > 0");
  const YAML::Node defaults = root["defaults"];
  if (defaults && !defaults.IsMap()) throw FileError(path, line_of(defaults), "defaults", "expected a mapping of params");
  if (!root["cases"].IsSequence()) throw FileError(path, line_of(root["cases"]), "cases", "expected a list of cases");
  if (root["cases"].size() == 0) throw FileError(path, line_of(root["cases"]), "cases", "is empty (expected at least one case)");
  std::set<std::string> ids;
  // Keys in messages: cases[ID].field, or cases[INDEX].field (0-based) while the case has no usable id.
  for (size_t ci = 0; ci < root["cases"].size(); ++ci) {
    const YAML::Node cnode = root["cases"][ci];
    const std::string at_index = fmt::format("cases[{}]", ci);
    if (!cnode.IsMap()) throw FileError(path, line_of(cnode), at_index, "each case must be a mapping {id, params, ...}");
    const YAML::Node idn = cnode["id"];
    const bool id_ok = idn && idn.IsScalar() && idn.Scalar().find_first_not_of(" \t") != std::string::npos;
    const std::string key = id_ok ? "cases[" + idn.Scalar() + "]" : at_index;
    check_keys(cnode, {"id", "params", "sweep", "measured", "measured_phases", "tolerance_pct", "note"}, path, key);
    if (!idn || idn.IsNull()) throw FileError(path, line_of(cnode), at_index + ".id", "missing (expected a name for the case)");
    if (!idn.IsScalar()) throw FileError(path, line_of(idn), at_index + ".id", "expected a name, not a list or mapping");
    if (!id_ok) throw FileError(path, line_of(idn), at_index + ".id", "is empty (expected a name for the case)");
    const std::string id = idn.Scalar();
    if (cnode["params"] && !cnode["params"].IsMap()) throw FileError(path, line_of(cnode["params"]), key + ".params", "expected a mapping");
    const double ctol = cnode["tolerance_pct"] ? number(cnode["tolerance_pct"], path, key + ".tolerance_pct") : tol;
    if (!(ctol > 0)) throw FileError(path, line_of(cnode["tolerance_pct"]), key + ".tolerance_pct", "must be > 0");
    // Expand the sweep (cartesian product in file order).
    std::vector<std::pair<std::string, YAML::Node>> points{{id, hw::yaml_merged(defaults, cnode["params"])}};
    std::vector<std::string> swept;  // the swept parameters, in file order
    if (const auto sw = cnode["sweep"]) {
      if (!sw.IsMap()) throw FileError(path, line_of(sw), key + ".sweep", "expected {param: [values]}");
      for (auto it = sw.begin(); it != sw.end(); ++it) {
        const std::string p = it->first.as<std::string>();
        swept.push_back(p);

        if (!it->second.IsSequence() || it->second.size() == 0)
          throw FileError(path, line_of(it->second), key + ".sweep." + p, "expected a non-empty list of values");
        std::vector<std::pair<std::string, YAML::Node>> next;
        for (const auto& [pid, prm] : points)
          for (YAML::const_iterator vi = it->second.begin(); vi != it->second.end(); ++vi) {
            const YAML::Node v = *vi;
            // Clone the value too: assigning a node of the file's document would merge that whole
            // document's node memory into every point (memory grew faster than the point count).
            YAML::Node copy = YAML::Clone(prm);
            copy[p] = YAML::Clone(v);
            next.push_back({pid + "/" + p + "=" + hw::yaml_text(v), copy});
          }
        points.swap(next);
      }
    }
    std::map<std::string, std::pair<int, std::string>> plines;
    auto note_lines = [&](const YAML::Node& map, const char* where) {
      if (map && map.IsMap())
        for (auto it = map.begin(); it != map.end(); ++it) plines[it->first.as<std::string>()] = {line_of(it->first), where};
    };
    note_lines(defaults, "defaults");
    note_lines(cnode["params"], "params");
    note_lines(cnode["sweep"], "sweep");
    std::vector<std::optional<Measured>> meas(points.size());
    std::vector<int> meas_line(points.size(), 0);  // line of the entry that gave each point's value
    if (const auto m = cnode["measured"]) {
      if (m.IsMap()) {
        if (points.size() != 1) throw FileError(path, line_of(m), key + ".measured", "a swept case needs a list of {at: {...}, value_us, source}");
        meas[0] = parse_measured_one(m, path, key + ".measured", kMeasuredKeys);
      } else if (m.IsSequence()) {
        for (size_t ei = 0; ei < m.size(); ++ei) {
          const YAML::Node e = m[ei];
          const std::string ekey = fmt::format("{}.measured[{}]", key, ei);
          const Measured one = parse_measured_one(e, path, ekey, kMeasuredPointKeys);
          const YAML::Node at = e["at"];
          if (!at || !at.IsMap() || at.size() == 0)
            throw FileError(path, line_of(at ? at : e), ekey + ".at", "missing {param: value} of the sweep point");
          // `at` names one sweep point: only swept parameters, enough of them to single one point out.
          for (auto a = at.begin(); a != at.end(); ++a) {
            const std::string k = a->first.as<std::string>();
            if (std::find(swept.begin(), swept.end(), k) == swept.end())
              throw FileError(path, line_of(a->first), ekey + ".at." + k,
                              swept.empty() ? "this case has no sweep (give measured: {value_us, source} instead of a list)"
                                            : fmt::format("'{}' is not a swept parameter of this case (swept: {})", k, fmt::join(swept, ", ")));
          }
          std::vector<size_t> hits;
          for (size_t i = 0; i < points.size(); ++i)
            if (matches(points[i].second, at)) hits.push_back(i);
          if (hits.empty()) {
            // Name the swept values: a mistyped one in the sweep list otherwise shows up only here.
            std::vector<std::string> lists;
            for (const auto& k : swept) lists.push_back(k + ": " + hw::yaml_text(cnode["sweep"][k]));
            throw FileError(path, line_of(e), ekey + ".at",
                            fmt::format("'{}' matches no sweep point (swept: {})", hw::yaml_text(at), fmt::join(lists, "; ")));
          }
          if (hits.size() > 1)
            throw FileError(path, line_of(e), ekey + ".at",
                            fmt::format("'{}' matches {} sweep points ({}, ...); give a value for each swept parameter ({})",
                                        hw::yaml_text(at), hits.size(), points[hits[0]].first, fmt::join(swept, ", ")));
          if (meas_line[hits[0]])
            throw FileError(path, line_of(e), ekey + ".at",
                            fmt::format("sweep point '{}' given twice (also on line {})", hw::yaml_text(at), meas_line[hits[0]]));
          meas[hits[0]] = one;
          meas_line[hits[0]] = line_of(e);
        }
      } else {
        throw FileError(path, line_of(m), key + ".measured", "expected {value_us, source} or a list of them");
      }
    }
    if (const auto mp = cnode["measured_phases"]) {
      if (points.size() != 1) throw FileError(path, line_of(mp), key + ".measured_phases", "only for a case without sweep");
      if (mp.IsMap() && !mp["phases_us"])
        throw FileError(path, line_of(mp), key + ".measured_phases", "needs phases_us: {phase: us, ...}");
      Measured ph = parse_measured_one(mp, path, key + ".measured_phases", kMeasuredPhasesKeys);
      if (meas[0]) {
        meas[0]->phases_us = ph.phases_us;
        meas[0]->source += "; phases: " + ph.source;
      } else {
        meas[0] = ph;
      }
    }
    for (size_t i = 0; i < points.size(); ++i) {
      if (!ids.insert(points[i].first).second) throw FileError(path, line_of(cnode), key, "duplicate case id '" + points[i].first + "'");
      sc.cases.push_back(Case{points[i].first, points[i].second, meas[i], ctol, line_of(cnode), plines});
    }
  }
  if (sc.model == "ttft" || root["layer_fits"]) check_layer_fits(sc, root["layer_fits"], key_line["layer_fits"]);
  // A known miss names a measured kernel of one of the cases (a stale or mistyped entry could never fail).
  for (const auto& m : known_miss_at) {
    const auto c = std::find_if(sc.cases.begin(), sc.cases.end(), [&](const Case& x) { return x.id == m.case_id; });
    if (c == sc.cases.end())
      throw FileError(path, m.line, m.key + ".case", fmt::format("no case '{}' in this file", m.case_id));
    const bool listed = c->measured && std::any_of(c->measured->kernels.begin(), c->measured->kernels.end(),
                                                   [&](const auto& k) { return k.name() == m.kernel; });
    if (!listed)
      throw FileError(path, m.line, m.key + ".kernel",
                      fmt::format("case '{}' has no measured kernel '{}' (expected devN/KERNEL as in its measured.kernels)",
                                  m.case_id, m.kernel));
  }
  return sc;
} catch (const YAML::Exception& e) {
  throw FileError(path, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", "unexpected value (yaml-cpp: " + e.msg + ")");
}

hw::Hardware load_scenario_hardware(const Scenario& sc) { return load_hardware(sc.hardware_path); }

std::map<std::string, CaseRunner>& case_runners() {
  static std::map<std::string, CaseRunner> runners{{"gemm_ar", run_gemm_ar_case}, {"afd", afd::run_afd_case},
                                                       {"gemm_ar_live", run_gemm_ar_live_case},
                                                       {"h200_probe", run_probe_case},
                                                       {"ttft", run_ttft_case}};
  return runners;
}

nlohmann::json run_gemm_ar_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  GemmArConfig c;
  static const std::set<std::string> known{"mode", "m", "n", "k", "world_size", "quant", "chunks", "sdma_queues",
                                           "tile_order", "gather_dtype", "gather_transport", "pull_blocks", "fuse_quantize",
                                           "fuse_reduce_push", "gather_bands", "publish", "window_in_host_memory",
                                           "sdma_moves_nothing"};
  for (auto it = p.begin(); it != p.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!known.count(k))
      throw std::invalid_argument(fmt::format("unknown gemm_ar parameter '{}' (accepted: {})", k, fmt::join(known, ", ")));
    try {
      const YAML::Node v = it->second;
      // A quoted number or flag ("16384", 'true') is text in YAML; yaml-cpp would convert it.
      static const std::set<std::string> text_keys{"mode", "quant", "tile_order", "gather_dtype", "gather_transport", "publish"};
      if (!text_keys.count(k) && v.IsScalar() && v.Tag() == "!") throw YAML::TypedBadConversion<int>(v.Mark());
      if (k == "mode") c.mode = v.as<std::string>();
      else if (k == "m") c.m = v.as<int64_t>();
      else if (k == "n") c.n = v.as<int64_t>();
      else if (k == "k") c.k = v.as<int64_t>();
      else if (k == "world_size") c.world_size = v.as<int>();
      else if (k == "quant") c.quant = v.as<std::string>();
      else if (k == "chunks") c.chunks = v.as<int>();
      else if (k == "sdma_queues") c.sdma_queues = v.as<int>();
      else if (k == "tile_order") c.tile_order = v.as<std::string>();
      else if (k == "gather_dtype") c.gather_dtype = v.as<std::string>();
      else if (k == "gather_transport") c.gather_transport = v.as<std::string>();
      else if (k == "pull_blocks") c.pull_blocks = v.as<int>();
      else if (k == "fuse_quantize") c.fuse_quantize = v.as<bool>();
      else if (k == "fuse_reduce_push") c.fuse_reduce_push = v.as<bool>();
      else if (k == "gather_bands") c.gather_bands = v.as<int>();
      else if (k == "publish") c.publish = v.as<std::string>();
      else if (k == "window_in_host_memory") c.window_in_host_memory = v.as<bool>();
      else if (k == "sdma_moves_nothing") c.sdma_moves_nothing = v.as<bool>();
    } catch (const YAML::Exception&) {
      static const std::set<std::string> names{"mode", "quant", "tile_order", "gather_dtype", "gather_transport", "publish"};
      static const std::set<std::string> flags{"fuse_quantize", "fuse_reduce_push", "window_in_host_memory", "sdma_moves_nothing"};
      const char* expected = names.count(k) ? "a name" : flags.count(k) ? "true or false, unquoted" : "a whole number, unquoted";
      throw std::invalid_argument(
          fmt::format("parameter '{}': value '{}' has the wrong type (expected {})", k, hw::yaml_text(it->second), expected));
    }
  }
  // The path and the row count say which layer call this is; no silent default for either (checked
  // after the values given, so a bad value is reported first).
  validate(c, hw);
  if (!p["mode"])
    throw std::invalid_argument("parameter 'mode' is missing (one of gemm-only, split-sdma, fused-sdma, split-lsa, fused-lsa, rccl)");
  if (!p["m"]) throw std::invalid_argument("parameter 'm' is missing (rows of C, the tokens of the call)");
  const GemmArResult r = simulate_gemm_ar(hw, c, trace);
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& ph : r.phases) phases.push_back({{"name", ph.name}, {"start_us", ph.start_us}, {"end_us", ph.end_us}});
  nlohmann::json params = to_json(c);
  params["m_padded"] = padded_m(c);              // the kernel pads M to world_size x BLOCK_M
  params["chunks_effective"] = effective_chunks(c);  // largest divisor of the bands per destination <= chunks
  nlohmann::json out{{"params", params},
                     {"predicted_us", r.total_us},
                     {"phases", phases},
                     {"window_MiB", r.window_bytes / (1024.0 * 1024.0)},
                     {"wire_rel_l2", r.wire_rel_l2},
                     {"per_rank_us", r.per_rank_us}};
  // What ran differs from what was asked: said on the case's line, not only in the JSON params.
  if (effective_chunks(c) != c.chunks)
    out["note"] = fmt::format("chunks {} runs as {} (the largest divisor of the {} row bands per destination that is <= {}, as mori does)",
                              c.chunks, effective_chunks(c), padded_m(c) / c.world_size / block_m(c.quant), c.chunks);
  return out;
}

nlohmann::json run_scenario(const Scenario& sc, const hw::Hardware& hw, const RunOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  auto it = case_runners().find(sc.model);
  if (it == case_runners().end()) {
    std::string known;
    for (const auto& [k, v] : case_runners()) known += (known.empty() ? "" : ", ") + k;
    throw FileError(sc.path, 1, "model", fmt::format("unknown model '{}' (expected one of: {})", sc.model, known));
  }
  // The hardware must set every parameter the model requires: found here, before any case runs,
  // rather than mid-simulation.
  {
    std::vector<std::string> missing;
    for (const auto& k : required_hardware_keys(sc.model, hw))
      if (!hw.has(k)) missing.push_back(k);
    if (!missing.empty()) {
      constexpr size_t kShown = 10;
      std::string list = fmt::format("{}", fmt::join(missing.begin(), missing.begin() + std::min(missing.size(), kShown), ", "));
      const std::string file = hw.path().empty() ? hw.name() : hw.path();
      std::string more;
      if (missing.size() > kShown) {
        list += fmt::format(" and {} more", missing.size() - kShown);
        more = fmt::format("; `fusesim params {}` lists them all", file);
      }
      throw FileError(sc.path, sc.hardware_line, "hardware",
                      fmt::format("{} lacks {} (required by the {} model{}; is this the right hardware file?)", file, list, sc.model, more));
    }
    // The pods model's NIC placement is a property of the hardware: refused at the hardware line.
    if (sc.model == "afd" && hw.topology_kind() == "pods") {
      try {
        (void)afd::gpus_per_nic(hw);
      } catch (const std::invalid_argument& e) {
        throw FileError(sc.path, sc.hardware_line, "hardware", e.what());
      }
    }
  }
  // Layer fits (ttft): every case that takes a fitted count runs once with one layer (ttft_at_layers
  // recomposes it at the fitted count); each count is the least-squares solution on the TTFT change
  // (as a fraction of the base TTFT) of its listed rows.
  struct FitResult {
    double layers = 0, rms_points = 0;
    const Scenario::LayerFit* fit = nullptr;
  };
  std::map<std::string, FitResult> fits;
  std::vector<std::string> warnings;
  auto run_case = [&](const Case& c, const YAML::Node& params, sim::TraceSink* trace) {
    try {
      return it->second(hw, params, trace);
    } catch (const std::invalid_argument& e) {
      // Point at the parameter the message names (its first quoted or leading word that is a key).
      const std::string what = e.what();
      int line = c.line;
      std::string where = "cases[" + c.id + "]";
      auto is_key = [&](const std::string& k) {
        auto pl = c.param_lines.find(k);
        return pl != c.param_lines.end() && pl->second.first > 0;
      };
      std::string k = hw::first_quoted_key(what, is_key);
      if (k.empty()) {
        const size_t colon = what.find(':');
        if (colon != std::string::npos && is_key(what.substr(0, colon))) k = what.substr(0, colon);
      }
      if (!k.empty()) std::tie(line, where) = param_location(c, k);
      throw FileError(sc.path, line, where, what);
    } catch (const std::out_of_range& e) {
      // A lookup the hardware file cannot serve for this case (e.g. a GEMM shape its measured table
      // lacks): named at the case, with the table's own message.
      throw FileError(sc.path, c.line, "cases[" + c.id + "]", std::string("cannot run this case: ") + e.what());
    }
  };
  auto selected = [&](const Case& c) { return opt.only.empty() || c.id.find(opt.only) != std::string::npos; };
  auto fit_key = [&](const Scenario::LayerFit& f) { return fmt::format("layer_fits[{}]", &f - sc.layer_fits.data()); };
  // Each fit's rows, as (a, y) pairs, and the largest |saving| among them.
  struct FitRows {
    std::vector<std::pair<double, double>> ay;
    double max_saving = 0;
  };
  std::map<std::string, FitRows> rows;
  std::map<std::string, nlohmann::json> one_layer;  // case id -> its result at one layer
  for (const auto& c : sc.cases) {
    if (c.layer_fit.empty() || (!c.fitted_on && !selected(c))) continue;
    YAML::Node one = YAML::Clone(c.params);
    one["layers"] = 1;
    const nlohmann::json& r = one_layer[c.id] = run_case(c, one, nullptr);
    if (!c.fitted_on) continue;
    const double base_us = r["params"]["ttft_base_ms"].get<double>() * 1e3;
    const double saving = r["saving_per_layer_forward_us"].get<double>();
    FitRows& fr = rows[c.layer_fit];
    fr.ay.push_back({-saving / base_us, (*c.measured->value_us - base_us) / base_us});
    fr.max_saving = std::max(fr.max_saving, std::fabs(saving));
  }
  for (const auto& f : sc.layer_fits) {
    const std::string key = fit_key(f);
    const auto& [ay, max_saving] = rows.at(f.name);
    double sum_ay = 0, sum_aa = 0;
    for (const auto& [a, y] : ay) {
      sum_ay += a * y;
      sum_aa += a * a;
    }
    // A layer whose two arms differ by less than a picosecond per forward changes nothing: the
    // quotient would only scale floating-point noise.
    if (max_saving < 1e-6)
      throw FileError(sc.path, f.line, key, fmt::format("fit '{}': the model's layer changes nothing on its rows (base and fused arms "
                                                        "predict the same time), so no layer count can be fitted", f.name));
    const double layers = sum_ay / sum_aa;
    if (layers == 0)
      throw FileError(sc.path, f.line, key, fmt::format("fit '{}': its measured rows show no TTFT change, so the fitted count is 0", f.name));
    if (!(layers > 0))
      throw FileError(sc.path, f.line, key,
                      fmt::format("fit '{}' gives {:.3g} layers: the measured rows move TTFT the other way from the model's "
                                  "layer change", f.name, layers));
    double ss = 0;
    for (const auto& [a, y] : ay) ss += (layers * a - y) * (layers * a - y);
    fits[f.name] = {layers, std::sqrt(ss / double(ay.size())) * 100, &f};
    if (f.cases.size() < 2)
      warnings.push_back(fmt::format("layer fit '{}' is fitted on 1 row: that row matches by construction", f.name));
    if (std::none_of(sc.cases.begin(), sc.cases.end(), [&](const Case& c) { return c.layer_fit == f.name && !c.fitted_on; }))
      warnings.push_back(fmt::format("layer fit '{}' holds out no row: every row that uses it is fitted on", f.name));
    if (f.max_layers > 0 && layers > f.max_layers)
      warnings.push_back(fmt::format("layer fit '{}' gives {:.1f} layers, above its max_layers {:.4g}", f.name, layers, f.max_layers));
  }
  nlohmann::json cases = nlohmann::json::array();
  std::vector<double> errs, held_errs, fitted_errs;
  int outside = 0, known = 0, unexpected = 0;
  for (const auto& c : sc.cases) {
    if (!selected(c)) continue;
    if (opt.trace) opt.trace->set_prefix(c.id + ":");
    const std::string& fname = c.layer_fit;
    const FitResult* fit = fname.empty() ? nullptr : &fits.at(fname);
    nlohmann::json res;
    if (fit) {
      try {
        res = ttft_at_layers(one_layer.at(c.id), fit->layers);
      } catch (const std::invalid_argument& e) {
        throw FileError(sc.path, fit->fit->line, fit_key(*fit->fit),
                        fmt::format("fit '{}' gives {:.1f} layers, too many for row '{}': {}", fname, fit->layers, c.id, e.what()));
      }
    } else {
      res = run_case(c, c.params, opt.trace);
    }
    nlohmann::json out{{"id", c.id}};
    for (auto& [k, v] : res.items()) out[k] = v;
    const bool fitted_row = fit && c.fitted_on;
    if (fit) {
      out["layers_fit"] = {{"name", fname}, {"layers", fit->layers}, {"fitted_on", fit->fit->cases},
                           {"rms_points", fit->rms_points}, {"source", fit->fit->source},
                           {"row", fitted_row ? "fitted" : "held out"}};
      if (fit->fit->nominal > 0)
        out["layers_fit"]["nominal"] = {{"layers", fit->fit->nominal}, {"source", fit->fit->nominal_source},
                                        {"scale", fit->layers / fit->fit->nominal}};
    }
    if (hw.calibration() && hw.calibration()->residual_rms_pct > 0) {
      // 95% interval from the calibration's residuals: +-1.96 x the RMS relative error of its fit.
      // A TTFT row predicts only the change of its layers (the base TTFT is measured): the band
      // applies to that change.
      const double p = res["predicted_us"].get<double>(), s = 1.96 * hw.calibration()->residual_rms_pct / 100.0;
      if (res.contains("saving_per_layer_forward_us") && res["params"].contains("ttft_base_ms")) {
        const double delta = p - res["params"]["ttft_base_ms"].get<double>() * 1e3;
        out["interval_us"] = {p - std::fabs(delta) * s, p + std::fabs(delta) * s};
        out["interval_of"] = "the predicted TTFT change";
      } else {
        out["interval_us"] = {p * (1 - s), p * (1 + s)};
      }
    }
    out["measured_us"] = nullptr;
    out["error_pct"] = nullptr;
    out["within_tolerance"] = nullptr;
    out["tolerance_pct"] = c.tolerance_pct;
    if (c.measured) {
      out["source"] = c.measured->source;
      if (c.measured->value_us) {
        const double meas = *c.measured->value_us;
        double pred = res["predicted_us"].get<double>();
        if (c.measured->metric == "period_us") {
          if (!res.contains("extra") || !res["extra"].contains("period_us"))
            throw FileError(sc.path, c.line, "cases[" + c.id + "].measured.period_us", "this model reports no period");
          pred = res["extra"]["period_us"].get<double>();
          out["compared_metric"] = "period_us";
          // predicted_us is what was compared, in every output format; the exchange time stays alongside.
          out["exchange_us"] = res["predicted_us"];
          out["predicted_us"] = pred;
        }
        const double err = (pred - meas) / meas * 100.0;
        out["measured_us"] = meas;
        out["error_pct"] = err;
        const bool ok = std::fabs(err) <= c.tolerance_pct;
        out["within_tolerance"] = ok;
        if (c.measured->known_miss.empty()) {
          outside += !ok;
        } else {
          out["known_miss"] = c.measured->known_miss;
          known += !ok;
          unexpected += ok;
        }
        errs.push_back(std::fabs(err));
        if (fit) (fitted_row ? fitted_errs : held_errs).push_back(std::fabs(err));
        // Serving rows: how many layers (fused calls per chunk) the measured change would take at the
        // model's per-layer saving -- a diagnostic next to the scenario's stated layer count, not a fit.
        if (res.contains("saving_per_layer_forward_us") && res["saving_per_layer_forward_us"].get<double>() > 0 &&
            res["params"].contains("ttft_base_ms"))
          out["measured_implies_layers"] = (res["params"]["ttft_base_ms"].get<double>() * 1e3 - meas) /
                                           res["saving_per_layer_forward_us"].get<double>();
      }
      for (const auto& [name, v] : c.measured->phases_us) {
        bool known = false;
        for (const auto& ph : out["phases"]) known = known || ph["name"] == name;
        if (!known) {
          std::string have;
          for (const auto& ph : out["phases"]) have += (have.empty() ? "" : ", ") + ph["name"].get<std::string>();
          throw FileError(sc.path, c.line, "cases[" + c.id + "].measured_phases." + name,
                          fmt::format("the model reports no phase '{}' for this case (it reports: {})", name, have));
        }
      }
      for (auto& ph : out["phases"]) {
        auto m = c.measured->phases_us.find(ph["name"].get<std::string>());
        if (m == c.measured->phases_us.end()) continue;
        const double d = ph["end_us"].get<double>() - ph["start_us"].get<double>();
        ph["measured_us"] = m->second;
        ph["error_pct"] = (d - m->second) / m->second * 100.0;
      }
    }
    // A measured timeline (AFD): each kernel's measured duration beside the predicted one, at any T
    // (only T >= kKernelDurationMinTokens is judged, by kernel_durations).
    if (c.measured)
      for (const auto& k : c.measured->kernels)
        for (auto& ph : out["phases"])
          if (ph["name"].get<std::string>() == k.name()) {
            const double d = ph["end_us"].get<double>() - ph["start_us"].get<double>();
            ph["measured_us"] = k.duration_us;
            ph["error_pct"] = (d - k.duration_us) / k.duration_us * 100.0;
          }
    cases.push_back(std::move(out));
  }
  if (!opt.only.empty() && cases.empty())
    throw std::invalid_argument(fmt::format("--only '{}': no case id of '{}' contains it", opt.only, sc.path));
  std::sort(errs.begin(), errs.end());
  nlohmann::json summary{{"compared", errs.size()}, {"outside_tolerance", outside}, {"known_misses", known},
                         {"unexpected_passes", unexpected}};
  if (errs.empty()) {
    summary["median_abs_error_pct"] = nullptr;
    summary["max_abs_error_pct"] = nullptr;
  } else {
    summary["median_abs_error_pct"] = median(errs);
    summary["max_abs_error_pct"] = errs.back();
  }
  if (!sc.layer_fits.empty()) {
    auto stats = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      const size_t n = v.size();
      nlohmann::json h{{"compared", n}, {"median_abs_error_pct", nullptr}, {"max_abs_error_pct", nullptr}};
      if (n) {
        h["median_abs_error_pct"] = median(v);
        h["max_abs_error_pct"] = v.back();
      }
      return h;
    };
    summary["held_out"] = stats(held_errs);
    summary["fitted_on"] = stats(fitted_errs);
    summary["layer_fits"] = sc.layer_fits.size();
  }
  summary["warnings"] = warnings;
  summary["runtime_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return {{"scenario", sc.name}, {"hardware", hw.name()}, {"hardware_file", sc.hardware_path}, {"model", sc.model},
          {"cases", cases}, {"summary", summary}};
}

std::string layer_fit_summary(const nlohmann::json& s) {
  auto part = [](const nlohmann::json& h) {
    return h["compared"].get<int>() == 0 ? std::string("none compared")
                                         : fmt::format("{} compared, median |error| {:.2f}%, max {:.2f}%", h["compared"].get<int>(),
                                                       h["median_abs_error_pct"].get<double>(), h["max_abs_error_pct"].get<double>());
  };
  const int fits = s["layer_fits"].get<int>();
  return fmt::format("held out by the {} layer fit{} (the test): {}; fitted on (match partly by construction): {}", fits,
                     fits == 1 ? "" : "s", part(s["held_out"]), part(s["fitted_on"]));
}

std::string format_table(const nlohmann::json& r) {
  std::ostringstream o;
  o << fmt::format("scenario {}  (hardware {}, model {})\n", r["scenario"].get<std::string>(), r["hardware"].get<std::string>(),
                   r["model"].get<std::string>());
  size_t w = 4;
  for (const auto& c : r["cases"]) w = std::max(w, c["id"].get<std::string>().size());
  o << fmt::format("{:<{}}  {:>12}  {:>12}  {:>8}\n", "case", w, "predicted_us", "measured_us", "error%");
  if (!r["cases"].empty() && r["cases"][0].contains("interval_us")) {
    const auto& c0 = r["cases"][0];
    if (c0.contains("interval_of"))  // TTFT: the band is on the predicted change, not the measured base
      o << fmt::format("(95% interval: +-{:.1f}% of each row's predicted TTFT change, from the hardware file's calibration "
                       "residuals over the points it was fitted on, which do not cover other shapes or world sizes; the base "
                       "TTFT is measured)\n",
                       (c0["interval_us"][1].get<double>() - c0["predicted_us"].get<double>()) /
                           std::fabs(c0["predicted_us"].get<double>() - c0["params"]["ttft_base_ms"].get<double>() * 1e3) * 100);
    else
      o << fmt::format("(95% interval of every prediction: +-{:.1f}%, from the hardware file's calibration residuals over the "
                       "points it was fitted on; it does not cover extrapolation to other shapes or world sizes)\n",
                       (c0["interval_us"][1].get<double>() / c0["predicted_us"].get<double>() - 1) * 100);
  }
  for (const auto& c : r["cases"]) {
    const std::string meas = c["measured_us"].is_null() ? "-" : fmt::format("{:.1f}", c["measured_us"].get<double>());
    const std::string err = c["error_pct"].is_null() ? "-" : fmt::format("{:+.1f}", c["error_pct"].get<double>());
    const bool miss = c["within_tolerance"].is_boolean() && !c["within_tolerance"].get<bool>();
    std::string flag = c.contains("known_miss") ? (miss ? "  known miss: " + c["known_miss"].get<std::string>() : "  UNEXPECTED PASS of a known miss")
                       : miss ? "  OUTSIDE TOLERANCE" : "";
    const auto& cp = c["params"];
    if (cp.is_object() && cp.contains("m") && cp.contains("m_padded") && cp["m"] != cp["m_padded"])
      flag = fmt::format("  (M padded to {}, as the kernel does)", cp["m_padded"].get<int64_t>()) + flag;
    // A case compared on another metric (an AFD timeline's exchange period) carries that metric as
    // predicted_us (run_scenario); the row also names it and gives the exchange time.
    if (c.contains("compared_metric") && c.contains("exchange_us"))
      flag = fmt::format("  ({}; exchange time on the slowest Attention rank {:.1f} us)", c["compared_metric"].get<std::string>(),
                         c["exchange_us"].get<double>()) + flag;
    // A row a layer count was fitted on matches partly by construction: said on the row itself.
    if (c.contains("layers_fit"))
      flag = (c["layers_fit"]["row"] == "fitted" ? fmt::format("  fitted on (layer fit '{}')", c["layers_fit"]["name"].get<std::string>())
                                                 : std::string("  held out")) + flag;
    o << fmt::format("{:<{}}  {:>12.1f}  {:>12}  {:>8}{}\n", c["id"].get<std::string>(), w, c["predicted_us"].get<double>(), meas, err, flag);
    std::string ph;
    std::string device;  // AFD kernels ("devN/kernel" with a role): grouped per device, role named once
    for (const auto& p : c["phases"]) {
      const double d = p["end_us"].get<double>() - p["start_us"].get<double>();
      std::string name = p["name"].get<std::string>();
      const auto slash = name.find('/');
      if (p.contains("role") && slash != std::string::npos) {
        const std::string dev = name.substr(0, slash);
        name = name.substr(slash + 1);
        if (dev != device) {
          ph += fmt::format("{}{} ({}): ", ph.empty() ? "" : "; ", dev, p["role"].get<std::string>());
          device = dev;
        } else {
          ph += ", ";
        }
        ph += fmt::format("{} {:.1f}", name, d);
      } else {
        ph += fmt::format("{}{} {:.1f}", ph.empty() ? "" : ", ", name, d);
      }
      if (p.contains("measured_us")) ph += fmt::format(" (meas {:.1f}, {:+.1f}%)", p["measured_us"].get<double>(), p["error_pct"].get<double>());
    }
    if (c.contains("window_MiB")) {
      ph += fmt::format("{}symmetric window {:.0f} MiB per GPU", ph.empty() ? "" : "; ", c["window_MiB"].get<double>());
      if (c.contains("wire_rel_l2") && c["wire_rel_l2"].get<double>() > 0)
        ph += fmt::format(", fp8 wire relL2 {:.2e} (e4m3, a scale per row, on standard-normal data)", c["wire_rel_l2"].get<double>());
    }
    if (!ph.empty()) o << fmt::format("{:<{}}    phases (us): {}\n", "", w, ph);
    if (c.contains("note") && c["note"].is_string()) o << fmt::format("{:<{}}    note: {}\n", "", w, c["note"].get<std::string>());
    if (c.contains("whatif")) {
      const auto& wi = c["whatif"];
      std::string sw;
      for (const auto& x : wi["switches"]) sw += (sw.empty() ? "" : " + ") + x.get<std::string>();
      o << fmt::format("{:<{}}    what-if: {} {:.1f} us against {:.1f} us without ({:+.1f} us, {:+.1f}%)\n", "", w, sw,
                       c["predicted_us"].get<double>(), wi["without_us"].get<double>(), wi["change_us"].get<double>(),
                       wi["change_pct"].get<double>());
    }
    if (c.contains("extra") && c["extra"].contains("nic_ops_per_round_trip")) {
      // NIC operations per round trip, devices with the same counts on one entry.
      std::vector<std::pair<std::string, std::vector<int>>> groups;
      for (const auto& n : c["extra"]["nic_ops_per_round_trip"]) {
        const std::string k = fmt::format("{} NIC: atomics in {}, out {}, inline writes out {}, payload writes {}, polls {}",
                                          n["role"].get<std::string>(), n["atomics_in"].get<long>(), n["atomics_out"].get<long>(),
                                          n["inline_writes_out"].get<long>(), n["payload_writes"].get<long>(), n["polls"].get<long>());
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == k; });
        if (it == groups.end()) groups.push_back({k, {n["device"].get<int>()}});
        else it->second.push_back(n["device"].get<int>());
      }
      std::string t;
      for (const auto& [k, devs] : groups) {
        std::string d;
        for (int x : devs) d += (d.empty() ? "" : ",") + std::to_string(x);
        t += fmt::format("{}dev {}: {}", t.empty() ? "" : "; ", d, k);
      }
      const auto& ex = c["extra"];
      const int share = ex.contains("gpus_per_nic") ? int(ex["gpus_per_nic"].get<double>()) : 1;
      o << fmt::format("{:<{}}    NIC ops per round trip{}: {}\n", "", w,
                       share > 1 ? fmt::format(" (per GPU; {} GPUs share each NIC, which serves their sum)", share) : "", t);
    }
    if (c.contains("saving_per_layer_forward_us")) {
      const double saving = c["saving_per_layer_forward_us"].get<double>();
      std::string layers = fmt::format("{:.0f} layers", cp["layers"].get<double>());
      if (c.contains("layers_fit")) {
        const auto& f = c["layers_fit"];
        const size_t n = f["fitted_on"].size();
        layers = fmt::format("{:.1f} layers fitted (fit '{}' on {} row{}, rms {:.2f} points{})", f["layers"].get<double>(),
                             f["name"].get<std::string>(), n, n == 1 ? "" : "s", f["rms_points"].get<double>(),
                             f.contains("nominal") ? fmt::format("; {:.2f} x the nominal {:.4g}", f["nominal"]["scale"].get<double>(),
                                                                 f["nominal"]["layers"].get<double>())
                                                   : "");
      }
      std::string s = fmt::format("the layer {} {:.1f} us over the prompt's {} chunk(s); {}; the base arm's layers over the "
                                  "prompt are {:.1f}% of the base TTFT", saving < 0 ? "costs" : "saves", std::fabs(saving) < 0.05 ? 0.0 : std::fabs(saving),
                                  c["chunks"].size(), layers, c["layer_share_of_ttft_pct"].get<double>());
      if (c.contains("measured_implies_layers"))
        s += fmt::format("; the measured change would take {:.1f} layers", c["measured_implies_layers"].get<double>());
      o << fmt::format("{:<{}}    serving: {}\n", "", w, s);
    }
  }
  const auto& s = r["summary"];
  o << fmt::format("compared {}  median |error| {}  max |error| {}  outside tolerance {}  known misses {}  ({:.1f} ms)\n", s["compared"].get<int>(),
                   s["median_abs_error_pct"].is_null() ? "-" : fmt::format("{:.2f}%", s["median_abs_error_pct"].get<double>()),
                   s["max_abs_error_pct"].is_null() ? "-" : fmt::format("{:.2f}%", s["max_abs_error_pct"].get<double>()),
                   s["outside_tolerance"].get<int>(), s["known_misses"].get<int>(), s["runtime_ms"].get<double>());
  if (s.contains("held_out")) o << layer_fit_summary(s) << "\n";
  if (s.contains("warnings"))
    for (const auto& w : s["warnings"]) o << "warning: " << w.get<std::string>() << "\n";
  return o.str();
}

std::string format_csv(const nlohmann::json& r) {
  std::ostringstream o;
  o << "id,predicted_us,measured_us,error_pct,params,phases,window_MiB,wire_rel_l2,nic_ops,whatif_without_us,layers,layers_row,"
       "tolerance_pct,source\n";
  for (const auto& c : r["cases"]) {
    std::string ph;
    for (const auto& p : c["phases"])
      ph += fmt::format("{}{}={:.3f}", ph.empty() ? "" : ";", p["name"].get<std::string>(), p["end_us"].get<double>() - p["start_us"].get<double>());
    // RFC 4180 quoting: every text field in quotes, a quote inside doubled (ids are free text).
    auto quoted = [](std::string t) {
      for (size_t pos = 0; (pos = t.find('"', pos)) != std::string::npos; pos += 2) t.insert(pos, 1, '"');
      return "\"" + t + "\"";
    };
    // AFD on pods: NIC operations per round trip, per device (atomics in/out, inline writes, payload writes, polls).
    std::string nic;
    if (c.contains("extra") && c["extra"].contains("nic_ops_per_round_trip"))
      for (const auto& d : c["extra"]["nic_ops_per_round_trip"])
        nic += fmt::format("{}dev{}={}/{}/{}/{}/{}", nic.empty() ? "" : ";", d["device"].get<int>(), d["atomics_in"].get<int64_t>(),
                           d["atomics_out"].get<int64_t>(), d["inline_writes_out"].get<int64_t>(),
                           d["payload_writes"].get<int64_t>(), d["polls"].get<int64_t>());
    const bool ttft = c.contains("saving_per_layer_forward_us") && c.contains("params") && c["params"].contains("layers");
    o << fmt::format("{},{:.3f},{},{},{},{},{},{},{},{},{},{},{},{}\n", quoted(c["id"].get<std::string>()), c["predicted_us"].get<double>(),
                     c["measured_us"].is_null() ? "" : fmt::format("{:.3f}", c["measured_us"].get<double>()),
                     c["error_pct"].is_null() ? "" : fmt::format("{:.3f}", c["error_pct"].get<double>()),
                     quoted(c.contains("params") ? c["params"].dump() : "{}"), quoted(ph),
                     c.contains("window_MiB") ? fmt::format("{:.3f}", c["window_MiB"].get<double>()) : "",
                     c.contains("wire_rel_l2") ? fmt::format("{:.4g}", c["wire_rel_l2"].get<double>()) : "",
                     nic.empty() ? "" : quoted(nic),
                     c.contains("whatif") ? fmt::format("{:.3f}", c["whatif"]["without_us"].get<double>()) : "",
                     ttft ? fmt::format("{:.3f}", c["params"]["layers"].get<double>()) : "",
                     c.contains("layers_fit") ? quoted(c["layers_fit"]["row"].get<std::string>()) : "",
                     c.contains("tolerance_pct") && c["tolerance_pct"].is_number() ? fmt::format("{:g}", c["tolerance_pct"].get<double>()) : "",
                     c.contains("source") && c["source"].is_string() ? quoted(c["source"].get<std::string>()) : "");
  }
  return o.str();
}

std::vector<ComparedPoint> compared_points(const nlohmann::json& res) {
  std::vector<ComparedPoint> out;
  for (const auto& c : res["cases"])
    if (c.contains("measured_us") && !c["measured_us"].is_null())
      out.push_back({c["id"].get<std::string>(), c.value("compared_metric", std::string("predicted_us")),
                     c["measured_us"].get<double>(), c["predicted_us"].get<double>()});
  return out;
}

const std::vector<Measured::KernelSpan>& kernels_at_tokens(const Case& c, int min_tokens, int max_tokens) {
  static const std::vector<Measured::KernelSpan> none;
  const YAML::Node t = c.params["tokens"];
  if (!c.measured || !t || !t.IsScalar()) return none;
  const int tokens = t.as<int>();
  return tokens < min_tokens || tokens > max_tokens ? none : c.measured->kernels;
}

std::vector<ComparedPoint> kernel_duration_points(const Scenario& sc, const nlohmann::json& res, int min_tokens,
                                                  int max_tokens) {
  std::map<std::string, const Case*> by_id;
  for (const auto& c : sc.cases) by_id[c.id] = &c;
  std::vector<ComparedPoint> out;
  for (const auto& r : res["cases"]) {
    const auto it = by_id.find(r["id"].get<std::string>());
    if (it == by_id.end()) continue;
    const Case& c = *it->second;
    for (const auto& k : kernels_at_tokens(c, min_tokens, max_tokens)) {
      const std::string kernel = k.name();
      const auto ph = std::find_if(r["phases"].begin(), r["phases"].end(),
                                   [&](const auto& p) { return p["name"].template get<std::string>() == kernel; });
      if (ph == r["phases"].end()) {
        // A measured kernel the model does not run on that device (a mistyped name, a device beyond
        // the case's ranks, a kernel of the other path) would otherwise never be compared.
        std::vector<std::string> runs;
        for (const auto& p : r["phases"]) runs.push_back(p["name"].get<std::string>());
        throw FileError(sc.path, k.line, fmt::format("cases[{}].measured.kernels", c.id),
                        fmt::format("the model runs no '{}' in this case; it runs {}", kernel, fmt::join(runs, ", ")));
      }
      out.push_back({c.id, kernel, k.duration_us, (*ph)["end_us"].get<double>() - (*ph)["start_us"].get<double>()});
    }
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("median of no values");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::json kernel_durations(const Scenario& sc, const nlohmann::json& res) {
  const double tol = sc.kernel_tolerance_pct;
  std::vector<double> errs;
  nlohmann::json misses = nlohmann::json::array(), now_within = nlohmann::json::array();
  int new_misses = 0;
  for (const auto& p : kernel_duration_points(sc, res)) {
    const double e = p.err_pct();
    errs.push_back(std::fabs(e));
    const auto kn = sc.kernel_known_misses.find(p.case_id + " " + p.what);
    const bool known = kn != sc.kernel_known_misses.end();
    if (std::fabs(e) > tol) {
      new_misses += !known;
      misses.push_back({{"case", p.case_id}, {"kernel", p.what}, {"measured_us", p.measured}, {"predicted_us", p.predicted},
                        {"error_pct", e}, {"known", known}, {"reason", known ? kn->second : ""}});
    } else if (known) {
      now_within.push_back({{"case", p.case_id}, {"kernel", p.what}, {"error_pct", e}});
    }
  }
  if (errs.empty()) return nullptr;
  std::sort(errs.begin(), errs.end());
  nlohmann::json out = {{"total", errs.size()}, {"within", errs.size() - misses.size()}, {"tolerance_pct", tol},
                        {"median_abs_error_pct", median(errs)}, {"max_abs_error_pct", errs.back()},
                        {"misses", misses}, {"new_misses", new_misses}, {"known_now_within", now_within}};
  // The timelines below kKernelDurationMinTokens are not judged, but their errors are reported so
  // that nobody reads a T = 1 kernel split off the trace without knowing how well it is predicted.
  std::vector<double> small;
  for (const auto& p : kernel_duration_points(sc, res, 0, kKernelDurationMinTokens - 1)) small.push_back(std::fabs(p.err_pct()));
  out["below_min_tokens"] = nullptr;
  if (!small.empty()) {
    std::sort(small.begin(), small.end());
    out["below_min_tokens"] = {{"total", small.size()}, {"median_abs_error_pct", median(small)},
                               {"max_abs_error_pct", small.back()},
                               {"outside_tolerance", std::count_if(small.begin(), small.end(), [&](double e) { return e > tol; })}};
  }
  return out;
}

}  // namespace fusesim::models
