#include "models/afd/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"

namespace fusesim::afd {
using hw::FileError;

KernelRules kernel_rules(const models::Scenario& sc) {
  KernelRules out;
  const std::string& path = sc.path;
  struct KnownMissAt { std::string case_id, kernel, key; int line; };
  std::vector<KnownMissAt> known_miss_at;  // checked against the cases once they are read
  if (const YAML::Node kd = sc.section("kernel_durations")) {
    if (!kd.IsMap()) throw FileError(path, hw::yaml_line(kd), "kernel_durations", "expected a mapping {tolerance_pct, known_misses}");
    hw::check_keys(kd, {"tolerance_pct", "known_misses"}, path, "kernel_durations");
    if (kd["tolerance_pct"]) {
      out.tolerance_pct = hw::yaml_number(kd["tolerance_pct"], path, "kernel_durations.tolerance_pct");
      if (!(out.tolerance_pct > 0))
        throw FileError(path, hw::yaml_line(kd["tolerance_pct"]), "kernel_durations.tolerance_pct", "must be > 0");
    }
    if (const YAML::Node km = kd["known_misses"]) {
      if (!km.IsSequence())
        throw FileError(path, hw::yaml_line(km), "kernel_durations.known_misses", "expected a list of {case, kernel, reason}");
      for (size_t i = 0; i < km.size(); ++i) {
        const YAML::Node e = km[i];
        const std::string ekey = fmt::format("kernel_durations.known_misses[{}]", i);
        if (!e.IsMap()) throw FileError(path, hw::yaml_line(e), ekey, "expected {case, kernel, reason}");
        hw::check_keys(e, {"case", "kernel", "reason"}, path, ekey);
        if (!e["case"] || !e["kernel"] || !e["reason"]) throw FileError(path, hw::yaml_line(e), ekey, "each entry needs case, kernel and reason");
        const std::string cid = hw::yaml_field(e["case"], path, ekey + ".case", "a case id"),
                          kernel = hw::yaml_field(e["kernel"], path, ekey + ".kernel", "devN/KERNEL"), miss = cid + " " + kernel;
        if (out.known_misses.count(miss))
          throw FileError(path, hw::yaml_line(e), ekey, fmt::format("'{}' is listed twice", miss));
        out.known_misses[miss] = hw::yaml_reason(e["reason"], path, ekey + ".reason");
        known_miss_at.push_back({cid, kernel, ekey, hw::yaml_line(e)});
      }
    }
  }

  // A known miss names a measured kernel of one of the cases (a stale or mistyped entry could never fail).
  for (const auto& m : known_miss_at) {
    const auto c = std::find_if(sc.cases.begin(), sc.cases.end(), [&](const models::Case& x) { return x.id == m.case_id; });
    if (c == sc.cases.end())
      throw FileError(path, m.line, m.key + ".case", fmt::format("no case '{}' in this file", m.case_id));
    const bool listed = c->measured && std::any_of(c->measured->kernels.begin(), c->measured->kernels.end(),
                                                   [&](const auto& k) { return k.name() == m.kernel; });
    if (!listed)
      throw FileError(path, m.line, m.key + ".kernel",
                      fmt::format("case '{}' has no measured kernel '{}' (expected devN/KERNEL as in its measured.kernels)",
                                  m.case_id, m.kernel));
  }
  return out;
}

const std::vector<models::Measured::KernelSpan>& kernels_at_tokens(const models::Case& c, int min_tokens, int max_tokens) {
  static const std::vector<models::Measured::KernelSpan> none;
  const YAML::Node t = c.params["tokens"];
  if (!c.measured || !t || !t.IsScalar()) return none;
  const int tokens = t.as<int>();
  return tokens < min_tokens || tokens > max_tokens ? none : c.measured->kernels;
}

std::vector<models::ComparedPoint> kernel_duration_points(const models::Scenario& sc, const nlohmann::json& res, int min_tokens,
                                                  int max_tokens) {
  std::map<std::string, const models::Case*> by_id;
  for (const auto& c : sc.cases) by_id[c.id] = &c;
  std::vector<models::ComparedPoint> out;
  for (const auto& r : res["cases"]) {
    const auto it = by_id.find(r["id"].get<std::string>());
    if (it == by_id.end()) continue;
    const models::Case& c = *it->second;
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

nlohmann::json kernel_durations(const models::Scenario& sc, const nlohmann::json& res) {
  const KernelRules rules = kernel_rules(sc);
  const double tol = rules.tolerance_pct;
  std::vector<double> errs;
  nlohmann::json misses = nlohmann::json::array(), now_within = nlohmann::json::array();
  int new_misses = 0;
  for (const auto& p : kernel_duration_points(sc, res)) {
    const double e = p.err_pct();
    errs.push_back(std::fabs(e));
    const auto kn = rules.known_misses.find(p.case_id + " " + p.what);
    const bool known = kn != rules.known_misses.end();
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
                        {"median_abs_error_pct", models::median(errs)}, {"max_abs_error_pct", errs.back()},
                        {"misses", misses}, {"new_misses", new_misses}, {"known_now_within", now_within}};
  // The timelines below kKernelDurationMinTokens are not judged, but their errors are reported so
  // that nobody reads a T = 1 kernel split off the trace without knowing how well it is predicted.
  std::vector<double> small;
  for (const auto& p : kernel_duration_points(sc, res, 0, kKernelDurationMinTokens - 1)) small.push_back(std::fabs(p.err_pct()));
  out["below_min_tokens"] = nullptr;
  if (!small.empty()) {
    std::sort(small.begin(), small.end());
    out["below_min_tokens"] = {{"total", small.size()}, {"median_abs_error_pct", models::median(small)},
                               {"max_abs_error_pct", small.back()},
                               {"outside_tolerance", std::count_if(small.begin(), small.end(), [&](double e) { return e > tol; })}};
  }
  return out;
}


std::vector<std::string> kernel_duration_lines(const nlohmann::json& kd, bool list) {
  std::vector<std::string> out;
  if (kd.is_null()) return out;
  out.push_back(fmt::format(
      "kernel durations at T >= 128: {} of {} within {:.0f}% (median |error| {:.2f}%, max {:.2f}%); outside: {} known misses, {} new",
      kd["within"].get<size_t>(), kd["total"].get<size_t>(), kd["tolerance_pct"].get<double>(), kd["median_abs_error_pct"].get<double>(),
      kd["max_abs_error_pct"].get<double>(), kd["misses"].size() - kd["new_misses"].get<size_t>(), kd["new_misses"].get<int>()));
  if (const auto& b = kd["below_min_tokens"]; !b.is_null())
    out.push_back(fmt::format("kernel durations at T < 128 (not judged): {} kernels, median |error| {:.2f}%, max {:.2f}%, {} outside {:.0f}%",
                              b["total"].get<size_t>(), b["median_abs_error_pct"].get<double>(), b["max_abs_error_pct"].get<double>(),
                              b["outside_tolerance"].get<long>(), kd["tolerance_pct"].get<double>()));
  for (const auto& m : kd["misses"])
    if (list || !m["known"].get<bool>())
      out.push_back(fmt::format("  {} kernel duration {} {}: measured {:.2f} us, predicted {:.2f} us ({:+.1f}%){}",
                                m["known"].get<bool>() ? "known miss:" : "NEW MISS:", m["case"].get<std::string>(),
                                m["kernel"].get<std::string>(), m["measured_us"].get<double>(), m["predicted_us"].get<double>(),
                                m["error_pct"].get<double>(), list && m["known"].get<bool>() ? " -- " + m["reason"].get<std::string>() : ""));
  for (const auto& m : kd["known_now_within"])
    out.push_back(fmt::format("  KNOWN MISS NOW WITHIN: {} {} ({:+.1f}%): remove it from kernel_durations.known_misses",
                              m["case"].get<std::string>(), m["kernel"].get<std::string>(), m["error_pct"].get<double>()));
  return out;
}

}  // namespace fusesim::afd
