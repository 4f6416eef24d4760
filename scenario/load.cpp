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
#include "hw/numbers.hpp"
#include "hw/printable.hpp"
#include "models/model.hpp"

namespace fusesim::scenario {
namespace fs = std::filesystem;
using hw::FileError;

namespace {
// Keys of a measured entry: `measured: {...}`, each entry of the list form (which adds `at`), and
// `measured_phases: {...}`.
const std::set<std::string> kMeasuredKeys{"value_us", "period_us", "phases_us", "kernels", "source", "known_miss"};
const std::set<std::string> kMeasuredPointKeys{"at", "value_us", "period_us", "phases_us", "kernels", "source", "known_miss"};
const std::set<std::string> kMeasuredPhasesKeys{"phases_us", "source"};

// A measured time (us): hw::kMinMeasuredUs .. hw::kMaxMeasuredUs (hw/numbers.hpp, shared with
// every measurement format calibrate reads).
using hw::kMaxMeasuredUs;
using hw::kMinMeasuredUs;
// A tolerance is a percentage of the measured value: above 100% a check can no longer fail for a
// prediction too fast by any amount (1e308 made every check pass).
constexpr double kMaxTolerancePct = 100.0;

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
      out.value_us = hw::check_measured_us(hw::yaml_number(m[f], file, key + "." + f), {file, hw::yaml_line(m[f]), key + "." + f});
      if (std::string(f) == "period_us") out.metric = "period_us";
    }
  if (m["phases_us"]) {
    if (!m["phases_us"].IsMap()) throw FileError(file, hw::yaml_line(m["phases_us"]), key + ".phases_us", "expected {phase: us, ...}");
    for (auto p = m["phases_us"].begin(); p != m["phases_us"].end(); ++p)
    {
      const std::string ph = p->first.as<std::string>();
      out.phases_us[ph] = hw::check_measured_us(hw::yaml_number(p->second, file, key + ".phases_us." + ph),
                                                {file, hw::yaml_line(p->second), key + ".phases_us." + ph}, "a measured phase time");
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
      // Offsets from the timeline's anchor, bounded as every format's timelines are (an end of 1e300 printed
      // 300-digit times and passed); the duration is a measured time.
      for (const auto& [f, t] : {std::pair<const char*, double>{"start_us", start}, {"end_us", end}})
        hw::check_timeline_us(t, {file, hw::yaml_line(k[f]), key + ".kernels." + f});
      if (end > start && end - start < kMinMeasuredUs)
        throw FileError(file, hw::yaml_line(k["end_us"]), key + ".kernels.end_us",
                        fmt::format("a kernel's duration must be at least {:g} us, got {:g}", kMinMeasuredUs, end - start));
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

/// The first id of group `g` (in point order) that a group before it in `sc` also has, else the
/// first id `g` has twice (a sweep list with a value given twice); empty when none. Without
/// expanding: a point's id is its case's id or starts with it and "/", so only groups whose ids are
/// equal or one is the other's "/"-prefix can share an id (`ids`: the earlier groups' ids); those
/// few are compared point by point.
std::string duplicate_id(const models::Scenario& sc, const models::CaseGroup& g, const std::set<std::string>& ids) {
  auto related = [&](const std::string& a, const std::string& b) {  // a == b, or one is the other's "/"-prefix
    const std::string& s = a.size() <= b.size() ? a : b;
    const std::string& l = a.size() <= b.size() ? b : a;
    return l.compare(0, s.size(), s) == 0 && (l.size() == s.size() || l[s.size()] == '/');
  };
  bool any = ids.count(g.id) > 0;
  for (size_t p = g.id.find('/'); p != std::string::npos && !any; p = g.id.find('/', p + 1)) any = ids.count(g.id.substr(0, p)) > 0;
  if (const auto it = ids.lower_bound(g.id + "/"); !any && it != ids.end()) any = related(*it, g.id);
  if (any) {
    std::set<std::string> before;
    for (const auto& e : sc.groups)
      if (related(e.id, g.id))
        for (uint64_t i = 0; i < e.size(); ++i) before.insert(e.point_id(i));
    for (uint64_t i = 0; i < g.size(); ++i)
      if (const std::string id = g.point_id(i); before.count(id)) return id;
  }
  // Inside the group: the first point with a value equal to an earlier one of its list. The
  // smallest such point in point order changes only the fastest-varying list that has a repeat.
  for (size_t k = g.sweep.size(); k-- > 0;) {
    const auto& t = g.sweep[k].texts;
    for (size_t j = 1; j < t.size(); ++j)
      if (std::find(t.begin(), t.begin() + j, t[j]) != t.begin() + j) {
        uint64_t stride = 1;
        for (size_t q = k + 1; q < g.sweep.size(); ++q) stride *= g.sweep[q].values.size();
        return g.point_id(j * stride);
      }
  }
  return "";
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
  if (!models::find_spec(sc.model)) {
    std::vector<std::string> names;
    for (const models::ModelSpec* s : models::specs()) names.push_back(s->name);
    std::sort(names.begin(), names.end());
    throw FileError(path, key_line["model"], "model", fmt::format("unknown model '{}' (expected one of: {})", hw::printable(sc.model), fmt::join(names, ", ")));
  }
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
    for (const auto& t : tries) {
      std::error_code ec;
      if (fs::exists(t, ec))
        throw FileError(path, hw::yaml_line(root["hardware"]), "hardware",
                        fmt::format("'{}' ({}) is not a regular file (a device, FIFO or socket), expected a hardware file", hwp, t));
    }
  if (sc.hardware_path.empty())
    throw FileError(path, hw::yaml_line(root["hardware"]), "hardware",
                    fmt::format("no hardware file '{}' (tried {})", hwp, fmt::join(tries, ", ")));
  const double tol = root["tolerance_pct"] ? hw::yaml_number(root["tolerance_pct"], path, "tolerance_pct") : 10.0;
  if (!(tol > 0 && tol <= kMaxTolerancePct))
    throw FileError(path, hw::yaml_line(root["tolerance_pct"]), "tolerance_pct", fmt::format("must be > 0 and at most {:g} (a percentage), got {:g}", kMaxTolerancePct, tol));
  const YAML::Node defaults = root["defaults"];
  if (defaults && !defaults.IsMap()) throw FileError(path, hw::yaml_line(defaults), "defaults", "expected a mapping of params");
  if (!root["cases"].IsSequence()) throw FileError(path, hw::yaml_line(root["cases"]), "cases", "expected a list of cases");
  if (root["cases"].size() == 0) throw FileError(path, hw::yaml_line(root["cases"]), "cases", "is empty (expected at least one case)");
  // Count the cases every sweep expands to before expanding any (a few lists can multiply to
  // millions of points, each a copy of the parameters): refused over opt.max_cases, with the count.
  {
    // Counted exactly while the count fits 64 bits (a product or sum that would wrap is flagged
    // instead: 8 lists of 256 wrapped to 0 and a 2^64-point group was silently skipped); `approx`
    // gives the size of a count past 2^64 for the message.
    struct Count {
      uint64_t n = 0;
      bool over = false;  // more than 2^64 - 1
      long double approx = 0;
      std::string text() const {
        return over ? fmt::format("more than 2^64 (about {:.3g})", double(approx)) : fmt::format("{}", n);
      }
    };
    Count total;
    int first_line = 0, big_line = 0;
    std::string first_key, big_key;
    for (size_t ci = 0; ci < root["cases"].size(); ++ci) {
      const YAML::Node cnode = root["cases"][ci];
      Count g{1, false, 1};
      if (cnode.IsMap() && cnode["sweep"] && cnode["sweep"].IsMap())
        for (auto it = cnode["sweep"].begin(); it != cnode["sweep"].end(); ++it) {
          const uint64_t k = it->second.IsSequence() ? std::max<uint64_t>(it->second.size(), 1) : 1;
          g.approx *= (long double)k;
          if (!g.over && __builtin_mul_overflow(g.n, k, &g.n)) g.over = true;
        }
      const std::string gkey = cnode.IsMap() && cnode["id"] && cnode["id"].IsScalar() ? "cases[" + hw::printable(cnode["id"].Scalar()) + "].sweep"
                                                                                     : fmt::format("cases[{}].sweep", ci);
      const int gline = cnode.IsMap() && cnode["sweep"] ? hw::yaml_line(cnode["sweep"]) : hw::yaml_line(cnode);
      if ((g.over || g.n > 1) && first_key.empty()) first_line = gline, first_key = gkey;
      if ((g.over || g.n > opt.max_cases) && big_key.empty()) big_line = gline, big_key = gkey;
      total.approx += g.approx;
      if (!total.over && (g.over || __builtin_add_overflow(total.n, g.n, &total.n))) total.over = true;
    }
    if (total.over || total.n > opt.max_cases) {
      if (big_key.empty()) big_line = first_line, big_key = first_key;
      throw FileError(path, big_line, big_key,
                      fmt::format("the cases and sweeps expand to {} cases, more than the limit of {} (nothing was run; pass "
                                  "--max-cases N to allow more)",
                                  total.text(), opt.max_cases));
    }
  }
  std::set<std::string> ids;  // the groups' ids so far (duplicate_id)
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
    if (!(ctol > 0 && ctol <= kMaxTolerancePct))
      throw FileError(path, hw::yaml_line(cnode["tolerance_pct"]), key + ".tolerance_pct",
                      fmt::format("must be > 0 and at most {:g} (a percentage), got {:g}", kMaxTolerancePct, ctol));
    // The sweep, not expanded: its lists (cloned), the cases made from an index when needed.
    models::CaseGroup g;
    g.id = id;
    g.params = YAML::Clone(hw::yaml_merged(defaults, cnode["params"]));
    g.tolerance_pct = ctol;
    g.line = hw::yaml_line(cnode);
    std::vector<std::string> swept;  // the swept parameters, in file order
    if (const auto sw = cnode["sweep"]) {
      if (!sw.IsMap()) throw FileError(path, hw::yaml_line(sw), key + ".sweep", "expected {param: [values]}");
      for (auto it = sw.begin(); it != sw.end(); ++it) {
        const std::string p = it->first.as<std::string>();
        swept.push_back(p);
        if (!it->second.IsSequence() || it->second.size() == 0)
          throw FileError(path, hw::yaml_line(it->second), key + ".sweep." + p, "expected a non-empty list of values");
        models::CaseGroup::Swept one{p, {}, {}};
        for (YAML::const_iterator vi = it->second.begin(); vi != it->second.end(); ++vi) {
          one.values.push_back(YAML::Clone(*vi));
          one.texts.push_back(hw::yaml_text(*vi));
        }
        g.sweep.push_back(std::move(one));
      }
    }
    const uint64_t npoints = g.size();
    auto note_lines = [&](const YAML::Node& map, const char* where) {
      if (map && map.IsMap())
        for (auto it = map.begin(); it != map.end(); ++it) g.param_lines[it->first.as<std::string>()] = {hw::yaml_line(it->first), where};
    };
    note_lines(defaults, "defaults");
    note_lines(cnode["params"], "params");
    note_lines(cnode["sweep"], "sweep");
    std::map<uint64_t, int> meas_line;  // point -> line of the entry that gave its value
    if (const auto m = cnode["measured"]) {
      if (m.IsMap()) {
        if (npoints != 1) throw FileError(path, hw::yaml_line(m), key + ".measured", "a swept case needs a list of {at: {...}, value_us, source}");
        g.measured[0] = parse_measured_one(m, path, key + ".measured", kMeasuredKeys);
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
          // The points it matches, per swept parameter (a parameter `at` leaves out: every value),
          // without expanding: their count is the product, the first is each list's first match.
          uint64_t nhits = 1, first = 0;
          for (const auto& sw : g.sweep) {
            std::vector<size_t> idx;
            if (const YAML::Node v = at[sw.key]) {
              const std::string t = hw::yaml_text(v);
              for (size_t j = 0; j < sw.texts.size(); ++j)
                if (sw.texts[j] == t) idx.push_back(j);
            } else {
              for (size_t j = 0; j < sw.texts.size(); ++j) idx.push_back(j);
            }
            nhits *= idx.size();
            first = first * sw.values.size() + (idx.empty() ? 0 : idx[0]);
          }
          if (nhits == 0) {
            // Name the swept values: a mistyped one in the sweep list otherwise shows up only here.
            std::vector<std::string> lists;
            for (const auto& k : swept) lists.push_back(k + ": " + hw::yaml_text(cnode["sweep"][k]));
            throw FileError(path, hw::yaml_line(e), ekey + ".at",
                            fmt::format("'{}' matches no sweep point (swept: {})", hw::yaml_text(at), fmt::join(lists, "; ")));
          }
          if (nhits > 1)
            throw FileError(path, hw::yaml_line(e), ekey + ".at",
                            fmt::format("'{}' matches {} sweep points ({}, ...); give a value for each swept parameter ({})",
                                        hw::yaml_text(at), nhits, g.point_id(first), fmt::join(swept, ", ")));
          if (meas_line.count(first))
            throw FileError(path, hw::yaml_line(e), ekey + ".at",
                            fmt::format("sweep point '{}' given twice (also on line {})", hw::yaml_text(at), meas_line[first]));
          g.measured[first] = one;
          meas_line[first] = hw::yaml_line(e);
        }
      } else {
        throw FileError(path, hw::yaml_line(m), key + ".measured", "expected {value_us, source} or a list of them");
      }
    }
    if (const auto mp = cnode["measured_phases"]) {
      if (npoints != 1) throw FileError(path, hw::yaml_line(mp), key + ".measured_phases", "only for a case without sweep");
      if (mp.IsMap() && !mp["phases_us"])
        throw FileError(path, hw::yaml_line(mp), key + ".measured_phases", "needs phases_us: {phase: us, ...}");
      models::Measured ph = parse_measured_one(mp, path, key + ".measured_phases", kMeasuredPhasesKeys);
      if (g.measured.count(0)) {
        g.measured[0].phases_us = ph.phases_us;
        g.measured[0].source += "; phases: " + ph.source;
      } else {
        g.measured[0] = ph;
      }
    }
    if (const std::string dup = duplicate_id(sc, g, ids); !dup.empty())
      throw FileError(path, hw::yaml_line(cnode), key, "duplicate case id '" + dup + "'");
    ids.insert(g.id);
    sc.add_group(std::move(g));
  }
  // Expanded: every case made once and kept (what a model's whole-scenario hooks read).
  const models::ModelSpec* model_spec = models::find_spec(sc.model);
  const bool hooks_read_cases =
      model_spec && (model_spec->check_scenario || model_spec->begin_run || model_spec->judge || model_spec->fitted_kernels);
  if (opt.expand || hooks_read_cases) {
    const uint64_t n = sc.case_count();
    sc.cases.reserve(size_t(n));
    for (const auto& g : sc.groups)
      for (uint64_t j = 0; j < g.size(); ++j) sc.cases.push_back(g.point(j));
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
  if (model_spec && model_spec->check_scenario) model_spec->check_scenario(sc);
  return sc;
} catch (const YAML::Exception& e) {
  throw FileError(path, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", "unexpected value (yaml-cpp: " + e.msg + ")");
}

hw::Hardware load_hardware(const models::Scenario& sc) { return models::load_hardware(sc.hardware_path); }

std::vector<InputFile> input_files(const models::Scenario* sc, const hw::Hardware* hw) {
  std::vector<InputFile> in;
  if (sc) {
    in.push_back({sc->path, "scenario file", ""});
    if (!sc->hardware_path.empty()) in.push_back({sc->hardware_path, fmt::format("hardware file of {}", sc->path), ""});
    if (const models::ModelSpec* spec = models::find_spec(sc->model); spec && spec->input_files)
      for (const auto& [path, what] : spec->input_files(*sc, sc->hardware_path)) in.push_back({path, what, ""});
  }
  if (hw) {
    if (!sc || hw->path() != sc->hardware_path) in.push_back({hw->path(), "hardware file", ""});
    for (const auto& [name, t] : hw->tables())
      in.push_back({t.file, fmt::format("measured table '{}' of the hardware file {}", name, hw->path()), ""});
  }
  return in;
}

void refuse_outputs_over_inputs(const std::vector<hw::OutputFile>& outputs, const std::vector<InputFile>& inputs) {
  for (const auto& o : outputs)
    for (const auto& i : inputs)
      if (!i.path.empty() && o.option != i.replaceable_by && hw::same_existing_file(o.path, i.path))
        throw std::invalid_argument(fmt::format("{} '{}' is the {} '{}': writing there would overwrite it; give another file",
                                                o.option.empty() ? "output" : o.option, hw::printable(o.path), i.what,
                                                hw::printable(i.path)));
}

void refuse_outputs_over_inputs(const std::vector<hw::OutputFile>& outputs, const models::Scenario* sc, const hw::Hardware* hw,
                                const std::vector<InputFile>& more) {
  auto in = input_files(sc, hw);
  in.insert(in.end(), more.begin(), more.end());
  refuse_outputs_over_inputs(outputs, in);
}

}  // namespace fusesim::scenario
