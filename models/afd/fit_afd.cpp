// fusesim_afd_fit: bounded least-squares fit of the AFD model's `kind: fitted` parameters of one
// hardware file to the measured points of AFD scenario files (Nelder-Mead on log-parameters inside
// the registry's bounds; objective = sum of squared log errors, per-kernel durations at T >= 128
// weighted by --kernel-weight). Prints the fitted values ("section.key value", stdout) and the
// per-file errors (stderr); writes no file (models/afd/update_fitted.py writes the values back).
// Kept apart from the model; `fusesim calibrate fit` is the general fitter (it has no hinge).
//
// usage: fusesim_afd_fit REPO_ROOT HW_FILE SCENARIO... [--iters N] [--kernel-weight W] [--hinge H]
//          [--kernel-hinge H] [--median-cap M] [--small-t-kernel-weight W] [--keys k1,k2 | --keys none]
//          [--report]       (fusesim_afd_fit --help lists them with their defaults)
// HW_FILE and the scenarios are read relative to the current folder; REPO_ROOT must exist and is
// kept so that the commands recorded in the hardware files run unchanged.
// --hinge H: weight of the squared excess of a measured point's |log error| over 10% (default 4);
// --kernel-hinge H: the same for a per-kernel duration's |log error| over 13% (default 0, off);
// --median-cap M: add 100 x (median - M)^2 x points for a scenario whose median |error| exceeds M (e.g.
// 0.045; default off).
// --small-t-kernel-weight W: also fit the per-kernel durations of the timelines at T < 128 (weight W on
// their squared log errors, no hinge; default 0, off). They are not judged, but without them the
// fixed costs can move freely between the kernels of an exchange whose total is fitted.
// Errors (a bad option, a file that cannot be read, a non-AFD scenario, a key that is not fitted in
// HW_FILE) print "fusesim_afd_fit: error: ..." and exit 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "models/afd/hardware.hpp"
#include "models/afd/timeline.hpp"
#include "scenario/load.hpp"
#include "scenario/run.hpp"

using namespace fusesim;

namespace {
/// CLI11 check: a finite number >= 0 (weights and hinges; a negative weight would reward errors).
const auto kNonNegativeFinite = CLI::Validator(
    [](std::string& v) -> std::string {
      double x = 0;
      try {
        size_t used = 0;
        x = std::stod(v, &used);
        if (used != v.size()) return "expected a number, got '" + v + "'";
      } catch (const std::exception&) {
        return "expected a number, got '" + v + "'";
      }
      if (!std::isfinite(x) || x < 0) return "expected a finite number >= 0, got " + v;
      return {};
    },
    "FINITE >= 0");
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fusesim_afd_fit: bounded Nelder-Mead fit of an AFD hardware file's `kind: fitted` values to the measured "
      "points of AFD scenario files. Prints the fitted values on stdout (\"section.key value\"; "
      "models/afd/update_fitted.py writes them into a hardware file) and the per-scenario errors on stderr; it "
      "writes no file. HW_FILE and the scenarios are read relative to the current folder."};
  std::string root, hw_path;
  std::vector<std::string> scen;
  int iters = 400;
  double kw = 0.3;
  bool report = false;
  double hinge = 4.0;       // weight of the squared excess of a point's |log error| over 10%
  double kernel_hinge = 0;  // weight of the squared excess of a kernel duration's |log error| over 13%
  double median_cap = 0.0;  // per-scenario median |error| above which a penalty applies (0 = off)
  double small_t_kw = 0.0;  // weight of the per-kernel durations at T < 128 (0 = off)
  std::string keys_arg;
  app.add_option("REPO_ROOT", root,
                 "the repository's root folder (kept so that the commands recorded in the hardware files still "
                 "run; it must exist, and it does not prefix the other paths)")
      ->required()->check(CLI::ExistingDirectory);
  app.add_option("HW_FILE", hw_path, "hardware YAML whose fitted values are the start")->required()->check(CLI::ExistingFile);
  // Checked after parsing (below), so that a mistyped option is reported as such and not as a
  // scenario file that does not exist.
  app.add_option("SCENARIO", scen, "AFD scenario YAML files with measured points")->required();
  app.add_option("--iters", iters, "Nelder-Mead iterations; 0 evaluates the file as it stands")
      ->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_option("--kernel-weight", kw, "weight of the per-kernel durations at T >= 128")
      ->check(kNonNegativeFinite)->capture_default_str();
  app.add_option("--hinge", hinge, "weight of the squared excess of a measured point's |log error| over 10%")
      ->check(kNonNegativeFinite)->capture_default_str();
  app.add_option("--kernel-hinge", kernel_hinge, "the same for a kernel duration's |log error| over 13%")
      ->check(kNonNegativeFinite)->capture_default_str();
  app.add_option("--median-cap", median_cap,
                 "add 100 x (median - M)^2 x points for a scenario whose median |error| exceeds M (e.g. 0.045; 0 = off)")
      ->check(kNonNegativeFinite)->capture_default_str();
  app.add_option("--small-t-kernel-weight", small_t_kw,
                 "also fit the per-kernel durations at T < 128 (unjudged) with this weight (0 = off)")
      ->check(kNonNegativeFinite)->capture_default_str();
  app.add_option("--keys", keys_arg, "comma-separated fitted keys to move (default: every fitted key; none: evaluate only)");
  app.add_flag("--report", report, "print every point's measured, predicted and error");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "fusesim_afd_fit: error: %s (see fusesim_afd_fit --help)\n", e.what());
    return 1;
  }
  try {
  for (const auto& f : scen)
    if (!std::filesystem::is_regular_file(f)) throw std::invalid_argument("SCENARIO: no such file: " + f);
  std::vector<std::string> keys_only;
  if (!keys_arg.empty()) {
    std::stringstream ss(keys_arg);
    for (std::string k; std::getline(ss, k, ',');) keys_only.push_back(k);
  }
  if (std::isnan(kw) || std::isinf(kw)) throw std::invalid_argument("--kernel-weight must be finite");
  const auto reg = afd::afd_registry();
  hw::Hardware hw = hw::Hardware::load(hw_path, reg);
  {
    // --keys names fitted keys of this file (or is `none`).
    std::vector<std::string> fitted;
    for (const auto& [k, v] : hw.values())
      if (v.kind == hw::Provenance::Fitted) fitted.push_back(k);
    for (const auto& k : keys_only)
      if (!(k == "none" && keys_only.size() == 1) && std::find(fitted.begin(), fitted.end(), k) == fitted.end()) {
        std::string list;
        for (const auto& f : fitted) list += (list.empty() ? "" : ", ") + f;
        throw std::invalid_argument(fmt::format("--keys: '{}' is not a fitted key of {} (its fitted keys: {}; or none)",
                                                k, hw_path, list));
      }
  }
  // Each scenario is read once (models::Scenario, the loader `fusesim run` uses); the objective reruns
  // its cases on the trial hardware.
  std::vector<models::Scenario> scs;
  for (const auto& s : scen) {
    scs.push_back(scenario::load(s));
    if (scs.back().model != "afd")
      throw std::invalid_argument(fmt::format("{}: model '{}': fusesim_afd_fit fits AFD scenarios (model: afd) only", s,
                                              scs.back().model));
    // Fitting a copy of the scenario's hardware file is fine; fitting another hardware kind is not
    // caught here, so say which file the scenario names.
    std::error_code ec;
    if (!std::filesystem::equivalent(scs.back().hardware_path, hw_path, ec))
      std::fprintf(stderr, "fusesim_afd_fit: note: %s names hardware %s; fitting %s in its place\n", s.c_str(),
                   scs.back().hardware_path.c_str(), hw_path.c_str());
  }
  // The error statistics are run_scenario's own summary (what `fusesim check` prints).
  struct Eval {
    std::vector<models::ComparedPoint> points, kernel_points, small_t_kernel_points;
    nlohmann::json summary;
    double median_abs_err_pct() const { return summary["median_abs_error_pct"].is_null() ? 0.0 : summary["median_abs_error_pct"].get<double>(); }
    double max_abs_err_pct() const { return summary["max_abs_error_pct"].is_null() ? 0.0 : summary["max_abs_error_pct"].get<double>(); }
  };
  auto evaluate = [&](const models::Scenario& sc) {
    const auto res = scenario::run(sc, hw);
    return Eval{scenario::compared_points(res), afd::kernel_duration_points(sc, res),
                small_t_kw > 0 ? afd::kernel_duration_points(sc, res, 0, afd::kKernelDurationMinTokens - 1)
                               : std::vector<models::ComparedPoint>{},
                res["summary"]};
  };
  std::vector<std::string> keys;
  for (const auto& [k, v] : hw.values())
    if (v.kind == hw::Provenance::Fitted &&
        (keys_only.empty() || std::find(keys_only.begin(), keys_only.end(), k) != keys_only.end()))
      keys.push_back(k);
  const size_t n = keys.size();
  std::vector<double> lo(n), hi(n), x0(n);
  for (size_t i = 0; i < n; ++i) {
    const auto* d = reg.find(keys[i]);
    lo[i] = std::log(std::max(d->lower, 1e-15));
    hi[i] = std::log(d->upper);
    x0[i] = std::log(std::max(hw.get(keys[i]), 1e-15));
  }
  auto apply = [&](const std::vector<double>& x) {
    for (size_t i = 0; i < n; ++i) hw.set_si(keys[i], std::exp(std::clamp(x[i], lo[i], hi[i])));
  };
  auto objective = [&](const std::vector<double>& x) {
    apply(x);
    double f = 0;
    for (const auto& sc : scs) {
      const auto rep = evaluate(sc);
      for (const auto& p : rep.points) {
        const double e = std::log(p.predicted / p.measured);
        f += e * e + (std::fabs(e) > 0.10 ? hinge * (std::fabs(e) - 0.10) * (std::fabs(e) - 0.10) : 0.0);
      }
      // The acceptance rule is per scenario (median |error| <= 5%): penalise a median above
      // --median-cap (0 = off) so the kernel points cannot buy their fit with a scenario's median.
      if (median_cap > 0 && !rep.points.empty()) {
        const double m = rep.median_abs_err_pct() / 100.0;
        if (m > median_cap) f += 100.0 * (m - median_cap) * (m - median_cap) * double(rep.points.size());
      }
      for (const auto& p : rep.kernel_points) {
        const double e = std::log(std::max(p.predicted, 0.05) / p.measured);
        f += kw * e * e + (std::fabs(e) > 0.13 ? kernel_hinge * (std::fabs(e) - 0.13) * (std::fabs(e) - 0.13) : 0.0);
      }
      for (const auto& p : rep.small_t_kernel_points) {
        const double e = std::log(std::max(p.predicted, 0.05) / p.measured);
        f += small_t_kw * e * e;
      }
    }
    for (size_t i = 0; i < n; ++i) if (x[i] < lo[i] || x[i] > hi[i]) f += 1e3;
    return f;
  };
  // Nelder-Mead
  std::vector<std::vector<double>> simplex(n + 1, x0);
  std::vector<double> fv(n + 1);
  for (size_t i = 0; i < n; ++i) simplex[i + 1][i] += 0.3;
  for (size_t i = 0; i <= n; ++i) fv[i] = objective(simplex[i]);
  for (int it = 0; it < iters; ++it) {
    std::vector<size_t> idx(n + 1);
    for (size_t i = 0; i <= n; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return fv[a] < fv[b]; });
    auto S = simplex; auto F = fv;
    for (size_t i = 0; i <= n; ++i) { simplex[i] = S[idx[i]]; fv[i] = F[idx[i]]; }
    if (it % 50 == 0) std::fprintf(stderr, "iter %d best %.5f\n", it, fv[0]);
    std::vector<double> c(n, 0);
    for (size_t i = 0; i < n; ++i) for (size_t j = 0; j < n; ++j) c[j] += simplex[i][j] / n;
    auto lerp = [&](double t) { std::vector<double> p(n); for (size_t j = 0; j < n; ++j) p[j] = c[j] + t * (simplex[n][j] - c[j]); return p; };
    auto xr = lerp(-1); double fr = objective(xr);
    if (fr < fv[0]) {
      auto xe = lerp(-2); double fe = objective(xe);
      if (fe < fr) { simplex[n] = xe; fv[n] = fe; } else { simplex[n] = xr; fv[n] = fr; }
    } else if (fr < fv[n - 1]) { simplex[n] = xr; fv[n] = fr; }
    else {
      auto xc = lerp(fr < fv[n] ? -0.5 : 0.5); double fc = objective(xc);
      if (fc < std::min(fr, fv[n])) { simplex[n] = xc; fv[n] = fc; }
      else {
        for (size_t i = 1; i <= n; ++i) {
          for (size_t j = 0; j < n; ++j) simplex[i][j] = simplex[0][j] + 0.5 * (simplex[i][j] - simplex[0][j]);
          fv[i] = objective(simplex[i]);
        }
      }
    }
  }
  // --iters 0 evaluates the file as it stands (not the best vertex of the initial simplex).
  size_t best = std::min_element(fv.begin(), fv.end()) - fv.begin();
  const double f_end = iters == 0 ? objective(x0) : fv[best];
  apply(iters == 0 ? x0 : simplex[best]);
  std::fprintf(stderr, "final objective %.5f\n", f_end);
  for (size_t i = 0; i < n; ++i) {
    const auto* d = reg.find(keys[i]);
    std::cout << keys[i] << " " << hw::format_quantity(d->quantity, hw.get(keys[i])) << "\n";
  }
  for (const auto& sc : scs) {
    const auto rep = evaluate(sc);
    std::fprintf(stderr, "%s: %zu points, median |err| %.2f%%, max %.2f%%\n", sc.name.c_str(), rep.points.size(),
                 rep.median_abs_err_pct(), rep.max_abs_err_pct());
    const auto kernel_line = [&](const char* what, const std::vector<models::ComparedPoint>& pts) {
      if (pts.empty()) return;
      std::vector<double> a;
      for (const auto& p : pts) a.push_back(std::fabs(p.err_pct()));
      std::sort(a.begin(), a.end());
      const size_t over = size_t(std::count_if(a.begin(), a.end(), [](double e) { return e > 15.0; }));
      const double med = models::median(a);
      std::fprintf(stderr, "  kernel durations %s: %zu, median |err| %.2f%%, max %.2f%%, %zu outside 15%%\n", what,
                   a.size(), med, a.back(), over);
    };
    kernel_line("at T >= 128", rep.kernel_points);
    kernel_line("at T < 128 (fitted with --small-t-kernel-weight)", rep.small_t_kernel_points);
    if (report) {
      for (const auto& p : rep.points)
        std::fprintf(stderr, "  %-28s %-10s meas %8.2f pred %8.2f err %+6.1f%%\n", p.case_id.c_str(), p.what.c_str(), p.measured, p.predicted, p.err_pct());
      for (const auto& p : rep.kernel_points)
        std::fprintf(stderr, "  K %-26s %-32s meas %8.2f pred %8.2f err %+6.1f%%\n", p.case_id.c_str(), p.what.c_str(), p.measured, p.predicted, p.err_pct());
    }
  }
  return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fusesim_afd_fit: error: %s\n", e.what());
    return 1;
  }
}
