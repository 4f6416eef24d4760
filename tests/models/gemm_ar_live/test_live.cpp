// The H200 pair: probe model against the probe sweeps, and the live program's predictions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "models/gemm_ar_live/gemm_ar_live.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::test;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Case id prefix (mode) -> (predicted, measured) us, per "n=../m=.." point, without gemm-only.
using ByPoint = std::map<std::string, std::map<std::string, std::pair<double, double>>>;
ByPoint by_point(const nlohmann::json& res) {
  ByPoint at;
  for (const auto& c : res["cases"]) {
    const std::string id = c["id"];
    const std::string mode = id.substr(0, id.find('/'));
    if (mode == "gemm-only") continue;
    at[id.substr(id.find('/') + 1)][mode] = {c["predicted_us"].get<double>(), c["measured_us"].get<double>()};
  }
  return at;
}

/// The fastest mode of one point, by prediction or by measurement.
std::string winner(const std::map<std::string, std::pair<double, double>>& modes, bool measured) {
  std::string best;
  double t = 1e30;
  for (const auto& [mode, pm] : modes)
    if ((measured ? pm.second : pm.first) < t) t = measured ? pm.second : pm.first, best = mode;
  return best;
}
}  // namespace

TEST(H200Probes, CopyEngineAndPullSweepsWithinThreePercentMedian) {
  auto sc = scenario::load(FUSESIM_SOURCE_DIR "/scenarios/h200x2-probes.yaml");
  auto hw = scenario::load_hardware(sc);
  const auto res = scenario::run(sc, hw);
  std::map<std::string, std::vector<double>> sweeps;  // peer_copy/one, cu_pull/blocks/both, ...
  std::vector<double> interference;                    // gemm_with_copies/*: GEMM under copy traffic
  for (const auto& c : res["cases"]) {
    const std::string id = c["id"];
    if (id.find("gemm_with_copies/") == 0) {
      interference.push_back(std::fabs(c["error_pct"].get<double>()));
      continue;
    }
    const auto parts = id.find("cu_pull/") == 0 ? 3 : 2;
    size_t pos = 0;
    for (int i = 0; i < parts; ++i) pos = id.find('/', pos + 1);
    sweeps[id.substr(0, pos)].push_back(std::fabs(c["error_pct"].get<double>()));
  }
  EXPECT_GE(sweeps.size(), 5u);
  for (const auto& [name, errs] : sweeps) EXPECT_LE(median(errs), 3.0) << name;
  // The GEMM's slowdown under copy-engine traffic (one parameter, gemm.copy_interference, over
  // M 512..16384 and three traffic patterns): median within 5%, every point within 8%.
  ASSERT_EQ(interference.size(), 21u);  // N 7168: M 512..16384; N 5120: M 512..4096
  EXPECT_LE(median(interference), 5.0);
  EXPECT_LE(*std::max_element(interference.begin(), interference.end()), 8.0);
}

TEST(H200Live, OrderingAndBandRules) {
  const auto hw = models::load_hardware(FUSESIM_SOURCE_DIR "/hw/h200-2gpu.yaml");
  models::LiveConfig c;
  c.m = 16384;
  c.mode = "split";
  const double split = models::simulate_gemm_ar_live(hw, c).time_us;
  c.mode = "overlapped";
  const double over = models::simulate_gemm_ar_live(hw, c).time_us;
  c.mode = "gemm-only";
  const double gemm = models::simulate_gemm_ar_live(hw, c).time_us;
  EXPECT_LT(over, split);  // overlapping the scatter with the GEMM pays at large M
  EXPECT_GT(over, gemm);
  c.bands = 3;
  EXPECT_THROW(models::simulate_gemm_ar_live(hw, c), std::invalid_argument);  // bands must be a multiple of ws
  c.bands = 4;
  c.n = 1234;
  EXPECT_THROW(models::simulate_gemm_ar_live(hw, c), std::out_of_range);  // no measured GEMM sweep at that N
}

namespace {
/// Run scenarios/`file` and check issue 5's limits on its 40 compared points (median error <= 5%,
/// max <= 12%); returns the result.
nlohmann::json run_within_issue5_limits(const std::string& file) {
  const auto sc = scenario::load(FUSESIM_SOURCE_DIR "/scenarios/" + file);
  const auto res = scenario::run(sc, scenario::load_hardware(sc));
  EXPECT_EQ(res["summary"]["compared"].get<int>(), 40) << file;
  EXPECT_LE(res["summary"]["median_abs_error_pct"].get<double>(), 5.0) << file;
  EXPECT_LE(res["summary"]["max_abs_error_pct"].get<double>(), 12.0) << file;
  return res;
}
}  // namespace

TEST(H200Live, PredictionsCommittedBeforeMeasuringMeetTheLimitsAndPickTheWinner) {
  // scenarios/h200x2-gemm-ar.yaml: loop 3, predictions committed (0a3c2bb) before the measurement
  // (median of three runs per point). Issue 5 asks median <= 5%, max <= 12% and the right winner.
  const auto res = run_within_issue5_limits("h200x2-gemm-ar.yaml");
  EXPECT_EQ(res["summary"]["outside_tolerance"].get<int>(), 0);
  for (const auto& c : res["cases"]) EXPECT_FALSE(c.contains("known_miss")) << c["id"];
  // Winner among split, overlapped and LSA at every (N, M), predicted vs measured.
  const ByPoint at = by_point(res);
  ASSERT_EQ(at.size(), 10u);
  for (const auto& [point, modes] : at) EXPECT_EQ(winner(modes, false), winner(modes, true)) << point;
}

TEST(H200Live, HeldOutShapesPredictedBeforeAnyLiveRun) {
  // scenarios/h200x2-gemm-ar-heldout.yaml: N 4096 / 6144, M 3072..24576, 4 and 8 bands, predicted
  // (866847d) before any live run of these shapes; values of record = median of 3 runs.
  const auto res = run_within_issue5_limits("h200x2-gemm-ar-heldout.yaml");
  const ByPoint at = by_point(res);
  ASSERT_EQ(at.size(), 8u);
  for (const auto& [point, modes] : at) {
    EXPECT_EQ(winner(modes, false), winner(modes, true)) << point;
    // 8 bands never beat 4 here, predicted and measured.
    EXPECT_LT(modes.at("overlapped").first, modes.at("overlapped-8-bands").first) << point;
    EXPECT_LT(modes.at("overlapped").second, modes.at("overlapped-8-bands").second) << point;
  }
}
