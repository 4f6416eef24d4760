// One fitter, two methods: the objective's residual vector derived by hand (relative and log
// errors, hinges, kernel weights, the median cap, the prior), Nelder-Mead's --iters 0 evaluation of
// the NVLink file reproducing fusesim_afd_fit's recorded objective and per-scenario errors, both
// methods lowering the objective and reporting a sigma per parameter, and the command's --out
// writing a Nelder-Mead fit through the one hardware writer with its provenance.
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calibrate/fit.hpp"
#include "calibrate/measurements.hpp"
#include "models/afd/timeline.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"
#include "scenario/run.hpp"
#include "test_util.hpp"

namespace fusesim::calibrate {
namespace {

using namespace test;  // tests/calibrate/test_util.hpp

std::vector<std::string> nvlink_scenarios() {
  std::vector<std::string> v;
  for (const char* s : {"2a2f-sm-sweep", "3a1f-combine-grid", "3a1f-role-path", "timelines"})
    v.push_back(src(std::string("scenarios/h200x4-afd-") + s + ".yaml"));
  return v;
}

FitPoint point(const std::string& id, PointKind kind, double measured, double weight, const std::string& file) {
  FitPoint p;
  p.id = id;
  p.kind = kind;
  p.phase = kind == PointKind::Total ? "" : kind == PointKind::Phase ? "gemm" : "dev0/k";
  p.measured_us = measured;
  p.weight = weight;
  p.file = file;
  return p;
}

// ---- the objective, by hand --------------------------------------------------------------------

// Six points: three totals (files a, a, b), a phase, a kernel duration at T >= 128 and one below.
// Predictions: t1 120 / 100 (+20%), t2 180 / 200 (-10%), t3 50 / 50, phase 11 / 10, kernel 30 / 20,
// small-T kernel 0.01 / 4 (its log error takes the 0.05 us floor: log(0.05 / 4)).
struct Fixture {
  std::vector<FitPoint> pts{point("t1", PointKind::Total, 100, 1, "a"), point("t2", PointKind::Total, 200, 1, "a"),
                            point("t3", PointKind::Total, 50, 1, "b"),  point("ph", PointKind::Phase, 10, 0.5, "a"),
                            point("k1", PointKind::KernelDuration, 20, 0.5, "a"),
                            point("s1", PointKind::SmallTKernelDuration, 4, 0.5, "a")};
  std::vector<double> pred{120, 180, 50, 11, 30, 0.01};
};

TEST(FitObjective, DefaultIsTheWeightedRelativeErrorsAndThePrior) {
  const Fixture fx;
  FitOptions o;  // calibrate fit's objective: weight x (pred - meas) / meas, prior 0.01 x log(p / p0)
  ASSERT_TRUE(default_objective(o));
  EXPECT_EQ(describe_objective(o), "");
  const Objective obj(fx.pts, o);
  ASSERT_EQ(obj.data_size(), 6u);  // no hinge, kernel-hinge or median-cap residual
  ASSERT_EQ(obj.size(1), 7u);
  std::vector<double> r(obj.size(1));
  obj.residuals(fx.pred, {2.0}, {1.0}, r.data());
  EXPECT_DOUBLE_EQ(r[0], 0.2);
  EXPECT_DOUBLE_EQ(r[1], -0.1);
  EXPECT_DOUBLE_EQ(r[2], 0.0);
  EXPECT_DOUBLE_EQ(r[3], 0.5 * 0.1);   // a phase: --phase-weight x its error
  EXPECT_DOUBLE_EQ(r[4], 0.5 * 0.5);   // a kernel duration without --kernel-weight: weighted as a phase
  EXPECT_DOUBLE_EQ(r[5], 0.0);         // below T = 128: sqrt(--small-t-kernel-weight 0)
  EXPECT_DOUBLE_EQ(r[6], 0.01 * std::log(2.0));
  const ObjectiveTerms t = obj.terms(r.data(), 1);
  EXPECT_DOUBLE_EQ(t.totals, 0.04 + 0.01);
  EXPECT_DOUBLE_EQ(t.phases, 0.0025);
  EXPECT_DOUBLE_EQ(t.kernel_durations, 0.0625);
  EXPECT_DOUBLE_EQ(t.prior, r[6] * r[6]);
  EXPECT_DOUBLE_EQ(t.sum(), 0.04 + 0.01 + 0.0025 + 0.0625 + r[6] * r[6]);
}

TEST(FitObjective, AfdTermsAreExtraResidualsOfTheLogErrors) {
  const Fixture fx;
  FitOptions o;
  o.method = FitMethod::NelderMead;
  o.iterations = 7;
  o.residuals = ResidualForm::Log;
  o.prior_weight = 0;
  o.hinge = 4;                    // threshold 0.10
  o.kernel_weight = 0.3;
  o.kernel_hinge = 30;            // threshold 0.13
  o.small_t_kernel_weight = 0.25;
  o.median_cap = 0.05;
  EXPECT_FALSE(default_objective(o));
  EXPECT_EQ(describe_objective(o), "nelder-mead, 7 iterations; log residuals; hinge 4 over 0.1; kernel weight 0.3; kernel hinge 30 "
                                   "over 0.13; small-T kernel weight 0.25; median cap 0.05; prior weight 0");
  const Objective obj(fx.pts, o);
  // 6 points + 3 hinges (one per total) + 1 kernel hinge + 2 median caps (files a and b), then 1 prior.
  ASSERT_EQ(obj.data_size(), 12u);
  ASSERT_EQ(obj.size(1), 13u);
  std::vector<double> r(obj.size(1));
  obj.residuals(fx.pred, {1.0}, {1.0}, r.data());
  const double e1 = std::log(1.2), e2 = std::log(0.9), ek = std::log(1.5);
  EXPECT_DOUBLE_EQ(r[0], e1);
  EXPECT_DOUBLE_EQ(r[1], e2);
  EXPECT_DOUBLE_EQ(r[2], 0.0);
  EXPECT_DOUBLE_EQ(r[3], 0.5 * std::log(1.1));               // a phase keeps its weight
  EXPECT_DOUBLE_EQ(r[4], std::sqrt(0.3) * ek);                // kernel weight 0.3 on the squared error
  EXPECT_DOUBLE_EQ(r[5], std::sqrt(0.25) * std::log(0.05 / 4));  // the 0.05 us floor
  EXPECT_DOUBLE_EQ(r[6], 2.0 * (e1 - 0.10));                  // sqrt(4) x the excess over 0.10
  EXPECT_DOUBLE_EQ(r[7], 2.0 * (-e2 - 0.10));                 // |log 0.9| = 0.105 > 0.10
  EXPECT_DOUBLE_EQ(r[8], 0.0);
  EXPECT_DOUBLE_EQ(r[9], std::sqrt(30.0) * (ek - 0.13));
  // File a: totals' |relative error| 0.2 and 0.1, median 0.15, over the cap by 0.10, n = 2.
  EXPECT_NEAR(r[10], std::sqrt(200.0) * 0.10, 1e-15);
  EXPECT_DOUBLE_EQ(r[11], 0.0);  // file b: median 0
  EXPECT_DOUBLE_EQ(r[12], 0.0);  // prior weight 0
  const ObjectiveTerms t = obj.terms(r.data(), 1);
  EXPECT_DOUBLE_EQ(t.totals, e1 * e1 + e2 * e2);
  EXPECT_DOUBLE_EQ(t.kernel_durations, r[4] * r[4]);
  EXPECT_DOUBLE_EQ(t.small_t_kernel_durations, r[5] * r[5]);
  EXPECT_DOUBLE_EQ(t.hinge, r[6] * r[6] + r[7] * r[7]);
  EXPECT_DOUBLE_EQ(t.kernel_hinge, r[9] * r[9]);
  EXPECT_DOUBLE_EQ(t.median_cap, r[10] * r[10]);
  // The sum written out as fusesim_afd_fit wrote its objective (weights on squared terms), plus the
  // phase it did not have.
  const double old = e1 * e1 + 4 * (e1 - 0.1) * (e1 - 0.1) + e2 * e2 + 4 * (-e2 - 0.1) * (-e2 - 0.1) + 0.25 * std::log(1.1) * std::log(1.1) +
                     100.0 * 0.1 * 0.1 * 2 + 0.3 * ek * ek + 30 * (ek - 0.13) * (ek - 0.13) +
                     0.25 * std::log(0.05 / 4) * std::log(0.05 / 4);
  EXPECT_NEAR(t.sum(), old, 1e-12);
}

TEST(FitObjective, BadWeightsAreRefused) {
  const Fixture fx;
  for (auto set : std::vector<void (*)(FitOptions&)>{[](FitOptions& o) { o.hinge = -1; }, [](FitOptions& o) { o.kernel_weight = NAN; },
                                                      [](FitOptions& o) { o.median_cap = INFINITY; },
                                                      [](FitOptions& o) { o.prior_weight = -0.1; }}) {
    FitOptions o;
    set(o);
    EXPECT_THROW(Objective(fx.pts, o), std::invalid_argument);
  }
}

// ---- points and their kinds --------------------------------------------------------------------

TEST(FitPoints, KindsFromPhaseAndTokens) {
  FitPoint p;
  p.model = "afd";  // the afd spec says which kernel durations lie below its judged range (T < 128)
  p.params = YAML::Load("{tokens: 512}");
  EXPECT_EQ(kind_of(p), PointKind::Total);
  p.phase = "gemm";
  EXPECT_EQ(kind_of(p), PointKind::Phase);
  p.phase = "dev2/combine_impl";
  EXPECT_EQ(kind_of(p), PointKind::KernelDuration);
  p.params = YAML::Load("{tokens: 1}");
  EXPECT_EQ(kind_of(p), PointKind::SmallTKernelDuration);
  EXPECT_STREQ(point_kind_name(PointKind::SmallTKernelDuration), "kernel duration at T < 128");
}

// points_from_scenarios gives what calibrate fit reads from the same scenario files (load_fit_points):
// the same ids, values, weights, metrics and kinds; with a small-T weight, the 84 T = 1 kernels too.
TEST(FitPoints, ScenarioPointsAreTheFittersOwn) {
  auto loaded = load_fit_points(nvlink_scenarios(), 0.5);
  for (auto& p : loaded) p.kind = kind_of(p);
  const auto direct = points_from_scenarios(nvlink_scenarios(), 0.5);
  ASSERT_EQ(direct.size(), loaded.size());
  std::map<std::string, const FitPoint*> by_id;
  for (const auto& p : loaded) by_id[p.id] = &p;
  for (const auto& p : direct) {
    ASSERT_TRUE(by_id.count(p.id)) << p.id;
    const FitPoint& q = *by_id[p.id];
    EXPECT_EQ(p.kind, q.kind) << p.id;
    EXPECT_EQ(p.metric, q.metric) << p.id;
    EXPECT_EQ(p.phase, q.phase) << p.id;
    EXPECT_EQ(p.file, q.file) << p.id;
    EXPECT_DOUBLE_EQ(p.measured_us, q.measured_us) << p.id;
    EXPECT_DOUBLE_EQ(p.weight, q.weight) << p.id;
  }
  const auto with_small = points_from_scenarios(nvlink_scenarios(), 0.5, 0.3);
  size_t small = 0;
  for (const auto& p : with_small)
    if (p.kind == PointKind::SmallTKernelDuration) {
      ++small;
      EXPECT_DOUBLE_EQ(p.weight, std::sqrt(0.3)) << p.id;
      EXPECT_EQ(p.params["tokens"].as<int>(), 1) << p.id;
    }
  EXPECT_EQ(small, 84u);
  EXPECT_EQ(with_small.size(), direct.size() + 84u);
}

// ---- Nelder-Mead --iters 0: fusesim_afd_fit's recorded evaluation ---------------------------------

// hw/h200-4gpu-nvlink.yaml's description records fusesim_afd_fit's objective at the committed values
// with --kernel-weight 1.0 --hinge 100 --kernel-hinge 30: 6.684 (6.68449 printed). The same objective
// is --residuals log --prior-weight 0 with those options; the per-file errors are `fusesim check`'s.
TEST(FitNelderMead, ItersZeroReproducesTheRecordedAfdObjective) {
  const auto hw = models::load_hardware(src("hw/h200-4gpu-nvlink.yaml"));
  auto pts = load_fit_points(nvlink_scenarios(), 0.5);
  for (auto& p : pts) p.kind = kind_of(p);
  FitOptions o;
  o.method = FitMethod::NelderMead;
  o.iterations = 0;
  o.residuals = ResidualForm::Log;
  o.prior_weight = 0;
  o.kernel_weight = 1.0;
  o.hinge = 100;
  o.kernel_hinge = 30;
  const auto r = fit(hw, pts, {}, o);
  EXPECT_TRUE(r.evaluated_only);
  EXPECT_NEAR(r.objective, 6.68449, 5e-6);
  EXPECT_DOUBLE_EQ(r.objective_start, r.objective);
  ASSERT_EQ(r.params.size(), 29u);  // every fitted value, each with its sigma (or +inf: nothing depends on it)
  for (const auto& p : r.params) {
    EXPECT_EQ(p.value_si, p.start_si) << p.key;  // evaluated at the file's own values
    EXPECT_FALSE(std::isnan(p.sigma_si)) << p.key;
  }
  // Per file: the totals' median and max |error| are run_scenario's summary, the kernel durations'
  // kernel_durations()'s.
  for (const auto& path : nvlink_scenarios()) {
    const auto sc = scenario::load(path);
    const auto res = scenario::run(sc, hw);
    std::vector<double> tot, ker;
    for (const auto& p : r.points)
      if (p.file == path) (p.kind == PointKind::Total ? tot : ker).push_back(std::fabs(p.error_pct));
    ASSERT_EQ(tot.size(), res["summary"]["compared"].get<size_t>()) << path;
    EXPECT_NEAR(models::median(tot), res["summary"]["median_abs_error_pct"].get<double>(), 1e-9) << path;
    EXPECT_NEAR(*std::max_element(tot.begin(), tot.end()), res["summary"]["max_abs_error_pct"].get<double>(), 1e-9) << path;
    const auto kd = afd::kernel_durations(sc, res);
    if (kd.is_null()) {
      EXPECT_TRUE(ker.empty()) << path;
      continue;
    }
    ASSERT_EQ(ker.size(), kd["total"].get<size_t>()) << path;
    EXPECT_NEAR(models::median(ker), kd["median_abs_error_pct"].get<double>(), 1e-9) << path;
  }
}

// ---- both methods minimise the same objective -----------------------------------------------------

FitOptions small_fit(FitMethod m) {
  FitOptions o;
  o.method = m;
  o.iterations = 25;
  o.max_evaluations = 60;
  o.free_keys = {"masked.per_source", "afd.combine_per_dest"};  // both move the role path's totals
  o.residuals = ResidualForm::Log;
  o.hinge = 100;
  return o;
}

TEST(FitMethods, BothLowerTheObjectiveAndGiveASigmaPerParameter) {
  const auto hw = models::load_hardware(src("hw/h200-4gpu-nvlink.yaml"));
  auto pts = load_fit_points({src("scenarios/h200x4-afd-3a1f-role-path.yaml")}, 0.5);
  for (auto& p : pts) p.kind = kind_of(p);
  for (const FitMethod m : {FitMethod::NelderMead, FitMethod::LevenbergMarquardt}) {
    const auto r = fit(hw, pts, {}, small_fit(m));
    EXPECT_FALSE(r.evaluated_only);
    EXPECT_GT(r.objective_start, 0) << fit_method_name(m);
    EXPECT_LE(r.objective, r.objective_start) << fit_method_name(m);
    EXPECT_EQ(r.iterations, m == FitMethod::NelderMead ? 25 : 0);
    ASSERT_EQ(r.params.size(), 2u);
    for (const auto& p : r.params) {
      EXPECT_TRUE(std::isfinite(p.sigma_si) && p.sigma_si > 0) << fit_method_name(m) << " " << p.key << " " << p.sigma_si;
      EXPECT_GE(p.value_si, p.lower_si);
      EXPECT_LE(p.value_si, p.upper_si);
      EXPECT_EQ(p.identified, p.sigma_si <= std::fabs(p.value_si));
    }
    // The fitted hardware holds the reported values.
    for (const auto& p : r.params) EXPECT_DOUBLE_EQ(r.fitted.get(p.key), p.value_si) << p.key;
  }
}

// A refit keeps the first estimate once: the hardware file's gemm_request_share had "first estimate
// 0.91: ..." as its first estimate, which the writer had prefixed again ("first estimate: first
// estimate 0.91: ...", issue 17).
TEST(FitProvenance, FirstEstimateIsKeptOnceWhateverItsForm) {
  using fusesim::calibrate::first_estimate_of;
  EXPECT_EQ(first_estimate_of("hand-set from seed 000"), "first estimate: hand-set from seed 000");
  EXPECT_EQ(first_estimate_of("first estimate 0.91: seed 000 drain"), "first estimate 0.91: seed 000 drain");
  EXPECT_EQ(first_estimate_of("calibrate fit: 52 points; totals: median |error| 2.11% | first estimate 0.91: seed 000"),
            "first estimate 0.91: seed 000");
  EXPECT_EQ(first_estimate_of("calibrate fit (nelder-mead): 3 points | first estimate: hand-set"), "first estimate: hand-set");
  EXPECT_EQ(first_estimate_of("calibrate fit: 3 points | hand-set"), "first estimate: hand-set");
  EXPECT_EQ(first_estimate_of("calibrate fit: 3 points"), "");
  EXPECT_EQ(first_estimate_of(""), "");
  // Applied to its own output it changes nothing (a second refit writes the same tail).
  const std::string once = first_estimate_of("first estimate 0.91: x");
  EXPECT_EQ(first_estimate_of("calibrate fit: 2 points | " + once), once);
}

// ---- the command: Nelder-Mead through the one hardware writer ---------------------------------------

TEST(FitMethods, NelderMeadOutWritesTheHardwareFileWithProvenance) {
  const std::string d = temp_dir("nm_out");
  const std::string base = std::string(FUSESIM_BIN) +
                           " calibrate fit --method nelder-mead --hw hw/h200-4gpu-nvlink.yaml --measurements "
                           "scenarios/h200x4-afd-3a1f-role-path.yaml --free masked.per_source,afd.combine_per_dest "
                           "--residuals log --prior-weight 0 --hinge 100";
  std::string out;
  ASSERT_EQ(run_shell(base + " --iters 12 --date 2026-12-02 --commit abc --out " + d + "/hw.yaml --report " + d + "/r.json", &out), 0)
      << out;
  EXPECT_NE(out.find("fitted 2 parameters on 16 points (16 totals); Nelder-Mead, 12 iterations;"), std::string::npos) << out;
  EXPECT_NE(out.find("\nh200x4-afd-3a1f-role-path: 16 points, median |err| "), std::string::npos) << out;
  const auto rep = nlohmann::json::parse(slurp(d + "/r.json"));
  EXPECT_EQ(rep["nelder_mead"]["iterations"], 12);
  EXPECT_FALSE(rep.contains("lm"));
  EXPECT_EQ(rep["objective"]["method"], "nelder-mead");
  EXPECT_LE(rep["objective"]["value"].get<double>(), rep["objective"]["start"].get<double>());
  ASSERT_EQ(rep["files"].size(), 1u);
  EXPECT_EQ(rep["files"][0]["totals"]["count"], 16);
  // The written file: each fitted value with its provenance and sigma, every other line as it was.
  const std::string text = slurp(d + "/hw.yaml"), orig = slurp(src("hw/h200-4gpu-nvlink.yaml"));
  int fitted = 0;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("  per_source:", 0) != 0 && l.rfind("  combine_per_dest:", 0) != 0) {
      if (l.rfind("  ", 0) == 0 && l.find("kind:") != std::string::npos) {
        EXPECT_NE(orig.find(l), std::string::npos) << l;
      }
      continue;
    }
    ++fitted;
    EXPECT_NE(l.find("kind: fitted, source: \"calibrate fit (nelder-mead, 12 iterations; log residuals; hinge 100 over 0.1; "
                     "prior weight 0): 16 points (16 totals); totals: median |error| "),
              std::string::npos) << l;
    EXPECT_NE(l.find("fitted_from: [scenarios/h200x4-afd-3a1f-role-path.yaml], fitted_on: 2026-12-02, commit: abc, sigma: \""),
              std::string::npos) << l;
    EXPECT_NE(l.find("| first estimate: "), std::string::npos) << l;
  }
  EXPECT_EQ(fitted, 2);
  // It loads, and holds the reported values (to the 6 digits a hardware file writes).
  const auto hw = models::load_hardware(d + "/hw.yaml");
  for (const auto& p : rep["params"]) {
    const std::string key = p["key"].get<std::string>();
    ASSERT_TRUE(p["sigma_si"].is_number()) << key;
    EXPECT_NEAR(hw.get(key), p["value_si"].get<double>(), 1e-5 * p["value_si"].get<double>()) << key;
    EXPECT_NEAR(hw.value(key).fit_sigma_si, p["sigma_si"].get<double>(), 1e-5 * p["sigma_si"].get<double>()) << key;
  }
  // --iters 0 on the written file evaluates it: the fitted objective, to those digits.
  ASSERT_EQ(run_shell(std::string(FUSESIM_BIN) +
                          " calibrate fit --method nelder-mead --iters 0 --hw " + d + "/hw.yaml --measurements "
                          "scenarios/h200x4-afd-3a1f-role-path.yaml --free masked.per_source,afd.combine_per_dest "
                          "--residuals log --prior-weight 0 --hinge 100 --report " + d + "/r0.json",
                      &out),
            0)
      << out;
  const auto rep0 = nlohmann::json::parse(slurp(d + "/r0.json"));
  EXPECT_TRUE(rep0["evaluated_only"].get<bool>());
  EXPECT_NEAR(rep0["objective"]["value"].get<double>(), rep["objective"]["value"].get<double>(),
              1e-4 * rep["objective"]["value"].get<double>());
}

}  // namespace
}  // namespace fusesim::calibrate
