// Loading: a scenario file to its cases (sweeps expanded, parameters merged) and their measured
// values. Model-specific sections are kept for the scenario's model, which checks them.
#include "scenario/load.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"

namespace fusesim::scenario {
namespace fs = std::filesystem;
using hw::FileError;

namespace {
// Keys of a measured entry: `measured: {...}`, each entry of the list form (which adds `at`), and
// `measured_phases: {...}`.
const std::set<std::string> kMeasuredKeys{"value_us", "period_us", "phases_us", "kernels", "source", "known_miss"};
const std::set<std::string> kMeasuredPointKeys{"at", "value_us", "period_us", "phases_us", "kernels", "source", "known_miss"};
const std::set<std::string> kMeasuredPhasesKeys{"phases_us", "source"};

models::Measured parse_measured_one(const YAML::Node& m, const std::string& file, const std::string& key, const std::set<std::string>& allowed) {
  models::Measured out;
  if (!m.IsMap()) throw FileError(file, hw::yaml_line(m), key, fmt::format("expected a mapping of {}", fmt::join(allowed, ", ")));
  hw::check_keys(m, allowed, file, key);
  if (!m["source"]) throw FileError(file, hw::yaml_line(m), key + ".source", "every measured value needs a source (table and row)");
  out.source = hw::yaml_field(m["source"], file, key + ".source", "the table and row the value comes from");
  if (m["known_miss"]) out.known_miss = hw::yaml_reason(m["known_miss"], file, key + ".known_miss");
  if (m["value_us"] && m["period_us"])
    throw FileError(file, hw::yaml_line(m["period_us"]), key + ".period_us",
                    "give value_us (compared with the prediction) or period_us (compared with the period), not both");
  for (const char* f : {"value_us", "period_us"})
    if (m[f]) {
      out.value_us = hw::yaml_number(m[f], file, key + "." + f);
      if (!(*out.value_us > 0)) throw FileError(file, hw::yaml_line(m[f]), key + "." + f, "a measured time must be > 0 us");
      if (std::string(f) == "period_us") out.metric = "period_us";
    }
  if (m["phases_us"]) {
    if (!m["phases_us"].IsMap()) throw FileError(file, hw::yaml_line(m["phases_us"]), key + ".phases_us", "expected {phase: us, ...}");
    for (auto p = m["phases_us"].begin(); p != m["phases_us"].end(); ++p)
    {
      const std::string ph = p->first.as<std::string>();
      const double v = hw::yaml_number(p->second, file, key + ".phases_us." + ph);
      if (!(v > 0)) throw FileError(file, hw::yaml_line(p->second), key + ".phases_us." + ph, "a measured phase time must be > 0 us");
      out.phases_us[ph] = v;
    }
  }
  if (const YAML::Node ks = m["kernels"]) {
    if (!ks.IsSequence()) throw FileError(file, hw::yaml_line(ks), key + ".kernels", "expected a list of {device, kernel, start_us, end_us}");
    for (const auto& k : ks) {
      if (!k.IsMap()) throw FileError(file, hw::yaml_line(k), key + ".kernels", "expected {device, kernel, start_us, end_us}");
      hw::check_keys(k, {"device", "kernel", "start_us", "end_us"}, file, key + ".kernels");
      for (const char* f : {"device", "kernel", "start_us", "end_us"})
        if (!k[f]) throw FileError(file, hw::yaml_line(k), key + ".kernels", fmt::format("an entry lacks '{}'", f));
      const double dev = hw::yaml_number(k["device"], file, key + ".kernels.device");
      if (!(dev >= 0) || dev != std::floor(dev) || dev > 1e6)
        throw FileError(file, hw::yaml_line(k["device"]), key + ".kernels.device", fmt::format("expected a device index 0, 1, ..., got {}", dev));
      const std::string name = hw::yaml_field(k["kernel"], file, key + ".kernels.kernel", "a kernel name");
      const double start = hw::yaml_number(k["start_us"], file, key + ".kernels.start_us"), end = hw::yaml_number(k["end_us"], file, key + ".kernels.end_us");
      if (!(end > start))
        throw FileError(file, hw::yaml_line(k["end_us"]), key + ".kernels.end_us",
                        fmt::format("a kernel must end after it starts (start_us {}, end_us {})", start, end));
      for (const auto& prev : out.kernels)
        if (prev.device == int(dev) && prev.kernel == name)
          throw FileError(file, hw::yaml_line(k), key + ".kernels",
                          fmt::format("device {} kernel '{}' is listed twice (first at line {})", int(dev), name, prev.line));
      out.kernels.push_back({int(dev), name, end - start, hw::yaml_line(k), start, end});
    }
  }
  if (!out.value_us && out.phases_us.empty()) throw FileError(file, hw::yaml_line(m), key, "needs value_us or phases_us");
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

/// Every model's scenario sections: key -> (owning spec, what it does).
const std::map<std::string, std::pair<const models::ModelSpec*, std::string>>& section_owners() {
  static const auto owners = [] {
    std::map<std::string, std::pair<const models::ModelSpec*, std::string>> m;
    for (const models::ModelSpec* s : models::specs())
      for (const auto& sec : s->scenario_sections) m[sec.key] = {s, sec.what};
    return m;
  }();
  return owners;
}
}  // namespace

// A function-try-block: a yaml-cpp conversion error this loader does not check for itself still names the file and line.
models::Scenario load(const std::string& path, const LoadOptions& opt) try {
  models::Scenario sc;
  sc.path = path;
  const YAML::Node root = load_scenario_root(path);
  hw::reject_extra_documents(path, "scenario file");
  std::set<std::string> top{"scenario", "description", "hardware", "model", "tolerance_pct", "defaults", "cases", "notes"};
  for (const auto& [key, owner] : section_owners()) top.insert(key);
  hw::check_keys(root, top, path, "");
  for (const char* k : {"scenario", "hardware", "model", "cases"})
    if (!root[k]) throw FileError(path, 1, k, "missing");
  std::map<std::string, int> key_line;  // top-level key -> its line
  for (auto it = root.begin(); it != root.end(); ++it) key_line[it->first.as<std::string>()] = hw::yaml_line(it->first);
  sc.name = hw::yaml_field(root["scenario"], path, "scenario", "a name (text)", false, key_line["scenario"]);
  sc.description = hw::yaml_field(root["description"], path, "description", "a text", true);
  sc.model = hw::yaml_field(root["model"], path, "model", "a model name (text)", false, key_line["model"]);
  // hardware: relative to the scenario's folder, else to the repository root (its parent), else CWD
  const std::string hwp = hw::yaml_field(root["hardware"], path, "hardware", "the path of a hardware file (text)", false, key_line["hardware"]);
  sc.hardware_line = hw::yaml_line(root["hardware"]);
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
        throw FileError(path, hw::yaml_line(root["hardware"]), "hardware",
                        fmt::format("'{}' is a directory ({}), expected a hardware file (e.g. hw/mi355x-8gpu.yaml)", hwp, t));
  if (sc.hardware_path.empty())
    throw FileError(path, hw::yaml_line(root["hardware"]), "hardware",
                    fmt::format("no hardware file '{}' (tried {})", hwp, fmt::join(tries, ", ")));
  const double tol = root["tolerance_pct"] ? hw::yaml_number(root["tolerance_pct"], path, "tolerance_pct") : 10.0;
  if (!(tol > 0)) throw FileError(path, hw::yaml_line(root["tolerance_pct"]), "tolerance_pct", "must be > 0");
  const YAML::Node defaults = root["defaults"];
  if (defaults && !defaults.IsMap()) throw FileError(path, hw::yaml_line(defaults), "defaults", "expected a mapping of params");
  if (!root["cases"].IsSequence()) throw FileError(path, hw::yaml_line(root["cases"]), "cases", "expected a list of cases");
  if (root["cases"].size() == 0) throw FileError(path, hw::yaml_line(root["cases"]), "cases", "is empty (expected at least one case)");
  // Count the cases every sweep expands to before expanding any (a few lists can multiply to
  // millions of points, each a copy of the parameters): refused over opt.max_cases, with the count.
  {
    uint64_t total = 0;
    int first_line = 0;
    std::string first_key;
    for (size_t ci = 0; ci < root["cases"].size(); ++ci) {
      const YAML::Node cnode = root["cases"][ci];
      uint64_t n = 1;
      if (cnode.IsMap() && cnode["sweep"] && cnode["sweep"].IsMap())
        for (auto it = cnode["sweep"].begin(); it != cnode["sweep"].end(); ++it) {
          const uint64_t k = it->second.IsSequence() ? std::max<uint64_t>(it->second.size(), 1) : 1;
          n = n > UINT64_C(1) << 62 || k > UINT64_C(1) << 62 || n * k > UINT64_C(1) << 62 ? UINT64_C(1) << 62 : n * k;
        }
      if (n > 1 && first_key.empty()) {
        first_line = hw::yaml_line(cnode["sweep"]);
        first_key = cnode["id"] && cnode["id"].IsScalar() ? "cases[" + cnode["id"].Scalar() + "].sweep" : fmt::format("cases[{}].sweep", ci);
      }
      total = std::min<uint64_t>(total + n, UINT64_C(1) << 62);
    }
    if (total > opt.max_cases)
      throw FileError(path, first_line, first_key,
                      fmt::format("the cases and sweeps expand to {}{} cases, more than the limit of {} (nothing was run; pass "
                                  "--max-cases N to allow more)",
                                  total >= UINT64_C(1) << 62 ? "over " : "", total, opt.max_cases));
  }
  std::set<std::string> ids;
  // Keys in messages: cases[ID].field, or cases[INDEX].field (0-based) while the case has no usable id.
  for (size_t ci = 0; ci < root["cases"].size(); ++ci) {
    const YAML::Node cnode = root["cases"][ci];
    const std::string at_index = fmt::format("cases[{}]", ci);
    if (!cnode.IsMap()) throw FileError(path, hw::yaml_line(cnode), at_index, "each case must be a mapping {id, params, ...}");
    const YAML::Node idn = cnode["id"];
    const bool id_ok = idn && idn.IsScalar() && idn.Scalar().find_first_not_of(" \t") != std::string::npos;
    const std::string key = id_ok ? "cases[" + idn.Scalar() + "]" : at_index;
    hw::check_keys(cnode, {"id", "params", "sweep", "measured", "measured_phases", "tolerance_pct", "note"}, path, key);
    if (!idn || idn.IsNull()) throw FileError(path, hw::yaml_line(cnode), at_index + ".id", "missing (expected a name for the case)");
    if (!idn.IsScalar()) throw FileError(path, hw::yaml_line(idn), at_index + ".id", "expected a name, not a list or mapping");
    if (!id_ok) throw FileError(path, hw::yaml_line(idn), at_index + ".id", "is empty (expected a name for the case)");
    const std::string id = idn.Scalar();
    if (cnode["params"] && !cnode["params"].IsMap()) throw FileError(path, hw::yaml_line(cnode["params"]), key + ".params", "expected a mapping");
    const double ctol = cnode["tolerance_pct"] ? hw::yaml_number(cnode["tolerance_pct"], path, key + ".tolerance_pct") : tol;
    if (!(ctol > 0)) throw FileError(path, hw::yaml_line(cnode["tolerance_pct"]), key + ".tolerance_pct", "must be > 0");
    // Expand the sweep (cartesian product in file order).
    std::vector<std::pair<std::string, YAML::Node>> points{{id, hw::yaml_merged(defaults, cnode["params"])}};
    std::vector<std::string> swept;  // the swept parameters, in file order
    if (const auto sw = cnode["sweep"]) {
      if (!sw.IsMap()) throw FileError(path, hw::yaml_line(sw), key + ".sweep", "expected {param: [values]}");
      for (auto it = sw.begin(); it != sw.end(); ++it) {
        const std::string p = it->first.as<std::string>();
        swept.push_back(p);

        if (!it->second.IsSequence() || it->second.size() == 0)
          throw FileError(path, hw::yaml_line(it->second), key + ".sweep." + p, "expected a non-empty list of values");
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
        for (auto it = map.begin(); it != map.end(); ++it) plines[it->first.as<std::string>()] = {hw::yaml_line(it->first), where};
    };
    note_lines(defaults, "defaults");
    note_lines(cnode["params"], "params");
    note_lines(cnode["sweep"], "sweep");
    std::vector<std::optional<models::Measured>> meas(points.size());
    std::vector<int> meas_line(points.size(), 0);  // line of the entry that gave each point's value
    if (const auto m = cnode["measured"]) {
      if (m.IsMap()) {
        if (points.size() != 1) throw FileError(path, hw::yaml_line(m), key + ".measured", "a swept case needs a list of {at: {...}, value_us, source}");
        meas[0] = parse_measured_one(m, path, key + ".measured", kMeasuredKeys);
      } else if (m.IsSequence()) {
        for (size_t ei = 0; ei < m.size(); ++ei) {
          const YAML::Node e = m[ei];
          const std::string ekey = fmt::format("{}.measured[{}]", key, ei);
          const models::Measured one = parse_measured_one(e, path, ekey, kMeasuredPointKeys);
          const YAML::Node at = e["at"];
          if (!at || !at.IsMap() || at.size() == 0)
            throw FileError(path, hw::yaml_line(at ? at : e), ekey + ".at", "missing {param: value} of the sweep point");
          // `at` names one sweep point: only swept parameters, enough of them to single one point out.
          for (auto a = at.begin(); a != at.end(); ++a) {
            const std::string k = a->first.as<std::string>();
            if (std::find(swept.begin(), swept.end(), k) == swept.end())
              throw FileError(path, hw::yaml_line(a->first), ekey + ".at." + k,
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
            throw FileError(path, hw::yaml_line(e), ekey + ".at",
                            fmt::format("'{}' matches no sweep point (swept: {})", hw::yaml_text(at), fmt::join(lists, "; ")));
          }
          if (hits.size() > 1)
            throw FileError(path, hw::yaml_line(e), ekey + ".at",
                            fmt::format("'{}' matches {} sweep points ({}, ...); give a value for each swept parameter ({})",
                                        hw::yaml_text(at), hits.size(), points[hits[0]].first, fmt::join(swept, ", ")));
          if (meas_line[hits[0]])
            throw FileError(path, hw::yaml_line(e), ekey + ".at",
                            fmt::format("sweep point '{}' given twice (also on line {})", hw::yaml_text(at), meas_line[hits[0]]));
          meas[hits[0]] = one;
          meas_line[hits[0]] = hw::yaml_line(e);
        }
      } else {
        throw FileError(path, hw::yaml_line(m), key + ".measured", "expected {value_us, source} or a list of them");
      }
    }
    if (const auto mp = cnode["measured_phases"]) {
      if (points.size() != 1) throw FileError(path, hw::yaml_line(mp), key + ".measured_phases", "only for a case without sweep");
      if (mp.IsMap() && !mp["phases_us"])
        throw FileError(path, hw::yaml_line(mp), key + ".measured_phases", "needs phases_us: {phase: us, ...}");
      models::Measured ph = parse_measured_one(mp, path, key + ".measured_phases", kMeasuredPhasesKeys);
      if (meas[0]) {
        meas[0]->phases_us = ph.phases_us;
        meas[0]->source += "; phases: " + ph.source;
      } else {
        meas[0] = ph;
      }
    }
    for (size_t i = 0; i < points.size(); ++i) {
      if (!ids.insert(points[i].first).second) throw FileError(path, hw::yaml_line(cnode), key, "duplicate case id '" + points[i].first + "'");
      sc.cases.push_back(models::Case{points[i].first, points[i].second, meas[i], ctol, hw::yaml_line(cnode), plines});
    }
  }
  // Sections of a model (kernel_durations, layer_fits): kept for it, refused in another model's file,
  // and checked by the scenario's own model once the cases are read.
  for (const auto& [key, owner] : section_owners()) {
    if (!root[key]) continue;
    if (owner.first->name != sc.model)
      throw FileError(path, key_line[key], key,
                      fmt::format("only the {} model {} (this scenario's model is '{}')", owner.first->name, owner.second, sc.model));
    sc.sections[key] = root[key];
    sc.section_lines[key] = key_line[key];
  }
  if (const models::ModelSpec* spec = models::find_spec(sc.model); spec && spec->check_scenario) spec->check_scenario(sc);
  return sc;
} catch (const YAML::Exception& e) {
  throw FileError(path, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", "unexpected value (yaml-cpp: " + e.msg + ")");
}

hw::Hardware load_hardware(const models::Scenario& sc) { return models::load_hardware(sc.hardware_path); }

}  // namespace fusesim::scenario
