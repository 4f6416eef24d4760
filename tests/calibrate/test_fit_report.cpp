// What `calibrate fit` reports about its own fit, from a new-user trial: the LM status by name, a
// warning when there are fewer than 3 points per parameter, the parameters the points do not
// identify (sigma > |value|, or no point depends on them), null held-out statistics when nothing is
// held out, the fitted points counted by kind in the written source text, and the written hardware
// file laid out as the starting file (so a diff shows what the fit changed).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calibrate/fit.hpp"
#include "calibrate/measurements.hpp"
#include "models/model.hpp"
#include "test_util.hpp"

namespace fusesim::calibrate {
namespace {

using namespace test;  // tests/calibrate/test_util.hpp

const std::string kBin = FUSESIM_BIN;

std::vector<std::string> nvlink_scenarios() {
  std::vector<std::string> v;
  for (const char* s : {"2a2f-sm-sweep", "3a1f-combine-grid", "3a1f-role-path", "timelines"})
    v.push_back(src(std::string("scenarios/h200x4-afd-") + s + ".yaml"));
  return v;
}

const ParamFit& param(const FitResult& r, const std::string& key) {
  for (const auto& p : r.params)
    if (p.key == key) return p;
  throw std::runtime_error("no parameter " + key);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// ---- LM status ---------------------------------------------------------------------------------

TEST(FitReport, LmStatusHasItsEigenNameAndMeaning) {
  EXPECT_EQ(lm_status_name(1), "RelativeReductionTooSmall");
  EXPECT_EQ(lm_status_name(2), "RelativeErrorTooSmall");
  EXPECT_EQ(lm_status_name(3), "RelativeErrorAndReductionTooSmall");
  EXPECT_EQ(lm_status_name(4), "CosinusTooSmall");
  EXPECT_EQ(lm_status_name(5), "TooManyFunctionEvaluation");
  EXPECT_EQ(lm_status_name(0), "ImproperInputParameters");
  EXPECT_EQ(lm_status_name(42), "Unknown");
  EXPECT_EQ(lm_status_meaning(2).rfind("converged", 0), 0u) << lm_status_meaning(2);
  EXPECT_EQ(lm_status_meaning(5).rfind("NOT converged", 0), 0u) << lm_status_meaning(5);
  EXPECT_NE(lm_status_meaning(5).find("--max-evaluations"), std::string::npos);
}

// ---- point counts and the few-points warning --------------------------------------------------

TEST(FitReport, PointsAreCountedByKind) {
  EXPECT_TRUE(is_kernel_duration("dev3/combine_impl"));
  EXPECT_TRUE(is_kernel_duration("dev12/k"));
  EXPECT_FALSE(is_kernel_duration("gemm"));
  EXPECT_FALSE(is_kernel_duration("dev/x"));
  EXPECT_FALSE(is_kernel_duration("device3/x"));
  EXPECT_FALSE(is_kernel_duration("dev3/"));
  EXPECT_EQ(describe_points({104, 0, 252}), "356 points (104 totals, 252 kernel durations)");
  EXPECT_EQ(describe_points({36, 16, 0}), "52 points (36 totals, 16 phases)");
  EXPECT_EQ(describe_points({20, 0, 0}), "20 points (20 totals)");
  EXPECT_EQ(describe_points({1, 1, 1}), "3 points (1 total, 1 phase, 1 kernel duration)");
  FitResult r{hw::Hardware{}};
  r.points = {{"a", "t", "", 1, 1, 0, false}, {"a#dev0/k", "t", "dev0/k", 1, 1, 0, false}, {"a#gemm", "t", "gemm", 1, 1, 0, false},
              {"b", "t", "", 1, 1, 0, true}};  // the held-out point is not counted
  const PointCounts c = fitted_point_counts(r);
  EXPECT_EQ(c.totals, 1);
  EXPECT_EQ(c.phases, 1);
  EXPECT_EQ(c.kernel_durations, 1);
}

TEST(FitReport, FewerThanThreePointsPerParameterIsWarnedWithBothCounts) {
  FitResult r{hw::Hardware{}};
  for (int i = 0; i < 20; ++i) r.points.push_back({"p" + std::to_string(i), "t", "", 1, 1, 0, false});
  r.params.resize(17);
  const auto w = few_points_warning(r);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("17 parameters fitted on 20 points (20 totals): fewer than 3 points per parameter (51 wanted)"), std::string::npos) << *w;
  r.params.resize(7);  // 21 wanted: still one short
  EXPECT_TRUE(few_points_warning(r).has_value());
  r.params.resize(6);  // 18 wanted, 20 given
  EXPECT_FALSE(few_points_warning(r).has_value());
}

// ---- identification, held-out statistics, source text (a real fit) ----------------------------

TEST(FitReport, NvlinkCombineLatencyIsNotIdentifiedAndNothingHeldOutIsEmpty) {
  // The README's NVLink example: the per-destination cost is pinned down, the per-token latency not.
  const auto hw = models::load_hardware(src("hw/h200-4gpu-nvlink.yaml"));
  const auto pts = load_fit_points(nvlink_scenarios(), 1.0);
  FitOptions opt;
  opt.free_keys = {"afd.combine_token_latency", "afd.combine_per_dest"};
  const auto r = fit(hw, pts, {}, opt);
  const auto& lat = param(r, "afd.combine_token_latency");
  const auto& per_dest = param(r, "afd.combine_per_dest");
  EXPECT_GT(lat.sigma_si, std::fabs(lat.value_si));
  EXPECT_FALSE(lat.identified);
  EXPECT_LT(per_dest.sigma_si, 0.2 * std::fabs(per_dest.value_si));
  EXPECT_TRUE(per_dest.identified);
  EXPECT_FALSE(r.median_abs_holdout_pct.has_value());
  EXPECT_FALSE(r.max_abs_holdout_pct.has_value());
  EXPECT_FALSE(few_points_warning(r).has_value());  // 356 points for 2 parameters
  // The written source text counts the kernel durations too, and flags the unidentified value.
  const std::string text = calibrated_yaml(r, {"x.yaml"}, "2026-12-01", "abc");
  for (const auto& l : lines(text)) {
    if (l.rfind("  combine_token_latency:", 0) == 0) {
      EXPECT_NE(l.find("\"calibrate fit: 356 points (104 totals, 252 kernel durations); totals: median |error| "), std::string::npos) << l;
      EXPECT_NE(l.find("(not identified by these points)"), std::string::npos) << l;
    }
    if (l.rfind("  combine_per_dest:", 0) == 0) {
      EXPECT_NE(l.find("\"calibrate fit: 356 points (104 totals, 252 kernel durations)"), std::string::npos) << l;
      EXPECT_EQ(l.find("not identified"), std::string::npos) << l;
    }
  }
  EXPECT_NE(text.find("  points: 104\n"), std::string::npos);  // the calibration block: totals (its RMS is over them)
}

TEST(FitReport, AParameterNoPointDependsOnHasNoSigmaAndIsNotIdentified) {
  // pcie.window_write_rate only matters for a window in host memory, which no headline point has:
  // with the prior off, the pseudo-inverse would give it sigma 0, as if known exactly.
  const auto hw = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  const auto pts = load_fit_points({src("calibrate/data/mi355x/01-headline.jsonl")}, 0.3);
  ASSERT_FALSE(pts.empty());
  FitOptions opt;
  opt.free_keys = {"pcie.window_write_rate", "rccl.bus_bandwidth_per_link"};
  opt.prior_weight = 0;
  const auto r = fit(hw, pts, {}, opt);
  const auto& p = param(r, "pcie.window_write_rate");
  EXPECT_TRUE(std::isinf(p.sigma_si)) << p.sigma_si;
  EXPECT_FALSE(p.identified);
  EXPECT_NEAR(p.value_si, p.start_si, 1e-6 * p.start_si);
  // No sigma is written into the hardware file for it (the other parameter has one).
  int seen = 0;
  for (const auto& l : lines(calibrated_yaml(r, {"x.yaml"}, "2026-12-01", "abc"))) {
    if (l.rfind("  window_write_rate:", 0) == 0) {
      ++seen;
      EXPECT_EQ(l.find("sigma:"), std::string::npos) << l;
      EXPECT_NE(l.find("(not identified by these points)"), std::string::npos) << l;
    }
    if (l.rfind("  bus_bandwidth_per_link:", 0) == 0) {
      ++seen;
      EXPECT_NE(l.find("sigma:"), std::string::npos) << l;
    }
  }
  EXPECT_EQ(seen, 2);
}

// ---- the command's output and report ----------------------------------------------------------

TEST(FitReport, CommandPrintsStatusNameWarningUnidentifiedAndNullHoldout) {
  const std::string d = temp_dir("fit_report");
  std::string out;
  // The user's case: 17 parameters on 20 points.
  const std::string ib = kBin + " calibrate fit --hw hw/h100-ib-pods.yaml --measurements scenarios/h100-ib-afd-channel-sweep.yaml "
                                "--holdout none --max-evaluations 40 --date 2026-12-01 --commit abc --report " + d + "/ib.json";
  ASSERT_EQ(run_shell(ib, &out), 0) << out;
  EXPECT_NE(out.find("warning: 17 parameters fitted on 20 points (20 totals): fewer than 3 points per parameter (51 wanted)"),
            std::string::npos) << out;
  EXPECT_NE(out.find("LM status 5 (TooManyFunctionEvaluation): NOT converged"), std::string::npos) << out;
  const size_t list_at = out.find("\nnot identified by these points (sigma > |value|, or no point depends on the value):\n");
  ASSERT_NE(list_at, std::string::npos) << out;
  const auto rep = nlohmann::json::parse(slurp(d + "/ib.json"));
  EXPECT_TRUE(rep["summary"]["median_abs_holdout_pct"].is_null());
  EXPECT_TRUE(rep["summary"]["max_abs_holdout_pct"].is_null());
  EXPECT_EQ(rep["summary"]["fitted_points"]["all"], 20);
  EXPECT_EQ(rep["summary"]["parameters"], 17);
  EXPECT_EQ(rep["lm"]["status"], 5);
  EXPECT_EQ(rep["lm"]["name"], "TooManyFunctionEvaluation");
  ASSERT_EQ(rep["warnings"].size(), 2u);  // few points, and the fit stopped at --max-evaluations
  EXPECT_NE(rep["warnings"][0].get<std::string>().find("51 wanted"), std::string::npos);
  EXPECT_NE(rep["warnings"][1].get<std::string>().find("the fit did not converge (LM status 5, TooManyFunctionEvaluation)"),
            std::string::npos);
  EXPECT_NE(out.find("warning: the fit did not converge (LM status 5"), std::string::npos) << out;
  size_t unidentified = 0;
  for (const auto& p : rep["params"]) {
    ASSERT_TRUE(p["identified"].is_boolean()) << p.dump();
    const double v = p["value_si"], s = p["sigma_si"].is_null() ? INFINITY : p["sigma_si"].get<double>();
    EXPECT_EQ(p["identified"].get<bool>(), s <= std::fabs(v)) << p.dump();
    if (!p["identified"].get<bool>()) {
      ++unidentified;
      EXPECT_NE(std::find(rep["summary"]["not_identified"].begin(), rep["summary"]["not_identified"].end(), p["key"]),
                rep["summary"]["not_identified"].end()) << p.dump();
      EXPECT_NE(out.find("\n  " + p["key"].get<std::string>() + " ", list_at), std::string::npos) << p["key"] << " not listed";
    }
  }
  EXPECT_GT(unidentified, 0u);
  EXPECT_EQ(rep["summary"]["not_identified"].size(), unidentified);
  // With points held out, the held-out statistics are numbers again.
  ASSERT_EQ(run_shell(kBin + " calibrate fit --hw hw/h200-2gpu.yaml --measurements scenarios/h200x2-probes.yaml --holdout kfold=2/1 "
                             "--max-evaluations 1 --commit test --report " + d + "/h.json", &out), 0) << out;
  const auto rep2 = nlohmann::json::parse(slurp(d + "/h.json"));
  EXPECT_TRUE(rep2["summary"]["median_abs_holdout_pct"].is_number());
  EXPECT_GT(rep2["summary"]["max_abs_holdout_pct"].get<double>(), 0.0);
}

// ---- the written file keeps the starting file's layout ----------------------------------------

TEST(KeepInputLayout, OrderCommentsAndFoldedDescriptionAreKept) {
  // The input's head (comment, folded description) and its gpu section (comments between keys)
  // stand again, unchanged, in what is wanted.
  const std::string head =
      "# what this file is\n"
      "name: x\n"
      "description: >-\n"
      "  a long text\n"
      "  folded over lines\n"
      "topology: {gpus: 4, kind: full_mesh}\n";
  const std::string gpu =
      "# the GPU\n"
      "gpu:\n"
      "  sm_count: {value: \"132\", kind: measured, source: \"s\"}\n"
      "  # the copy rate\n"
      "  hbm: {value: 4.2TBps, kind: measured, source: s}\n";
  const std::string input = head + gpu +
      "afd:\n"
      "  zeta: {value: \"1us\", kind: fitted, source: \"old\"}\n"
      "  alpha: {value: \"2us\", kind: derived, source: \"d\"}\n";
  // As Hardware::to_yaml writes it: description on one line, a calibration block, sorted sections and keys.
  const std::string written =
      "name: x\n"
      "description: a long text folded over lines\n"
      "topology: {kind: full_mesh, gpus: 4}\n"
      "calibration:\n"
      "  points: 3\n"
      "afd:\n"
      "  alpha: {value: \"2us\", kind: derived, source: \"d\"}\n"
      "  beta: {value: \"3us\", kind: derived, source: \"new\"}\n"
      "  zeta: {value: \"1.5us\", kind: fitted, source: \"new\", sigma: \"0.1us\"}\n"
      "gpu:\n"
      "  hbm: {value: \"4.2TBps\", kind: measured, source: \"s\"}\n"
      "  sm_count: {value: \"132\", kind: measured, source: \"s\"}\n";
  const std::string want = head +
      "calibration:\n"
      "  points: 3\n" + gpu +
      "afd:\n"
      "  zeta: {value: \"1.5us\", kind: fitted, source: \"new\", sigma: \"0.1us\"}\n"
      "  alpha: {value: \"2us\", kind: derived, source: \"d\"}\n"
      "  beta: {value: \"3us\", kind: derived, source: \"new\"}\n";
  EXPECT_EQ(keep_input_layout(input, written), want);
  // A changed description is written as to_yaml writes it (at its place).
  const std::string w2 = "name: x\ndescription: another\ntopology: {kind: full_mesh, gpus: 4}\n";
  EXPECT_EQ(keep_input_layout("name: x\ndescription: >-\n  a\n  b\ntopology: {gpus: 4, kind: full_mesh}\n", w2),
            "name: x\ndescription: another\ntopology: {gpus: 4, kind: full_mesh}\n");
}

TEST(KeepInputLayout, AnInputItCannotSplitGivesTheWrittenTextAfterTheComments) {
  const std::string written = "name: x\ngpu:\n  a: {value: \"1\", kind: measured, source: s}\n";
  EXPECT_EQ(keep_input_layout("# c\n  name: x\n", written), "# c\n" + written);
  EXPECT_EQ(keep_input_layout("", written), written);
  // The caller learns why (and warns the user): CRLF line ends are not followed.
  std::string why;
  EXPECT_EQ(keep_input_layout("name: x\r\ntopology: {gpus: 4, kind: full_mesh}\r\n", written, &why), written);
  EXPECT_NE(why.find("CRLF"), std::string::npos) << why;
  why.clear();
  (void)keep_input_layout("# c\n  name: x\n", written, &why);
  EXPECT_FALSE(why.empty());
}

TEST(KeepInputLayout, FitOfTheReadmeNvlinkExampleChangesOnlyTheFittedKeysAndAddsTheCalibration) {
  const std::string d = temp_dir("fit_layout");
  std::string out;
  ASSERT_EQ(run_shell(kBin + " calibrate fit --hw hw/h200-4gpu-nvlink.yaml --measurements scenarios/h200x4-afd-2a2f-sm-sweep.yaml "
                             "scenarios/h200x4-afd-3a1f-combine-grid.yaml scenarios/h200x4-afd-3a1f-role-path.yaml "
                             "scenarios/h200x4-afd-timelines.yaml --free afd.combine_token_latency,afd.combine_per_dest "
                             "--phase-weight 1 --holdout none --date 2026-12-01 --commit abc --out " + d + "/nv.yaml", &out), 0)
      << out;
  const auto in = lines(slurp(src("hw/h200-4gpu-nvlink.yaml"))), got = lines(slurp(d + "/nv.yaml"));
  // Drop the fitted keys from both and the new calibration block from the output: the rest is the
  // input, line for line (order, folded description, every unchanged value's text).
  auto fitted = [](const std::string& l) { return l.rfind("  combine_token_latency:", 0) == 0 || l.rfind("  combine_per_dest:", 0) == 0; };
  std::vector<std::string> a, b;
  for (const auto& l : in)
    if (!fitted(l)) a.push_back(l);
  bool in_cal = false;
  int n_fitted = 0;
  for (const auto& l : got) {
    if (l == "calibration:") { in_cal = true; continue; }
    if (in_cal && l.rfind("  ", 0) == 0) continue;
    in_cal = false;
    if (fitted(l)) {
      ++n_fitted;
      EXPECT_NE(l.find("calibrate fit: 356 points (104 totals, 252 kernel durations)"), std::string::npos) << l;
      continue;
    }
    b.push_back(l);
  }
  EXPECT_EQ(n_fitted, 2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(got[1], "description: >-");
  // and it loads as a hardware file with the fitted values
  const auto hw = models::load_hardware(d + "/nv.yaml");
  EXPECT_EQ(hw.value("afd.combine_per_dest").fitted_on, "2026-12-01");
}

}  // namespace
}  // namespace fusesim::calibrate
