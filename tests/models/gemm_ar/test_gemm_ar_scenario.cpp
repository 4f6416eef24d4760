// The committed MI355X scenario (seed 000) against its measured values, and a traced call's lanes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "models/gemm_ar/gemm_ar.hpp"
#include "scenario/load.hpp"
#include "scenario/run.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using fusesim::test::kRoot;

class Mi355xScenario : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sc_ = new models::Scenario(scenario::load(kRoot + "/scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml"));
    hw_ = new hw::Hardware(scenario::load_hardware(*sc_));
    res_ = new nlohmann::json(scenario::run(*sc_, *hw_));
  }
  static models::Scenario* sc_;
  static hw::Hardware* hw_;
  static nlohmann::json* res_;
};
models::Scenario* Mi355xScenario::sc_ = nullptr;
hw::Hardware* Mi355xScenario::hw_ = nullptr;
nlohmann::json* Mi355xScenario::res_ = nullptr;

TEST_F(Mi355xScenario, EveryMeasuredCaseWithinTenPercent) {
  int compared = 0;
  for (const auto& c : (*res_)["cases"]) {
    if (c["error_pct"].is_null()) continue;
    ++compared;
    EXPECT_LE(std::fabs(c["error_pct"].get<double>()), 10.0) << c["id"];
  }
  EXPECT_GE(compared, 30);
}

TEST_F(Mi355xScenario, MedianAndMaxErrorOverSeed000) {
  const auto& s = (*res_)["summary"];
  EXPECT_LE(s["median_abs_error_pct"].get<double>(), 3.0);
  EXPECT_LE(s["max_abs_error_pct"].get<double>(), 8.0);
}

TEST_F(Mi355xScenario, PerPhaseTableFromComponents) {
  // Seed 000's per-phase table ('Where the time goes', 16 phases) predicted with the GEMM keys fitted
  // on gemm-only points, the collective keys on standalone all-reduce points, the launch sum, HBM
  // read rate and write cost on the reduce, quantize and dequantize kernels' own phases, and four
  // keys on composite totals and phases (two interaction keys and the pull kernel's round trip and
  // congestion, measured only inside composites: README, Calibration). Issue 17 asks for every phase
  // within 10%; 13 are. These three are not, and no model consistent with the components can put
  // them within 10% (calibrate/data/mi355x/phase_table_bounds.py prints each bound; each must stay
  // outside 10%, so that a fix shows as an unexpected pass):
  //  - gather (bf16): +14.8% (502.7 against 437.8 us). At the standalone SDMA all-reduce's put rate
  //    (60.7 GB/s per queue: its 6 later-build points lie on one line, 61.3 +- 0.05 ns/row, from
  //    M=512 to 16384) the 28 MiB per queue alone take 484.0 us, +10.6% with no launch, command or
  //    barrier at all; within 10% needs >= 63.4 GB/s. Every hypothesis for a faster gather put is
  //    refuted by the standalone points: legs sharing links or overlapping (the intercept, 42.4 us, is
  //    two sequential legs' fixed parts, 42.2), a copy-in (the split-sdma all-reduce, 1472.9 - 369.4
  //    = 1103.5 us, is 56 us slower than the standalone 1047, not faster), the source in the MALL or
  //    the put size (no change of slope from 0.9 MiB to 28 MiB puts, from 8 MiB to 420 MiB of input
  //    and receive slots). The benchmark's own totals of this configuration (1145.8..1150.7 us, four
  //    sessions) less the capture's other three phases leave 482..487 us of gather, +10.1..+11.2%:
  //    the capture's total (1101.6) is 4.3% below every benchmark session of the same configuration.
  //    (The benchmark's totals do favour a faster gather put: as a fifth composite key,
  //    sdma.gather_put_share fits 1.077 +- 0.018 on the totals alone; not adopted, README.)
  //  - pull (fp8/lsa): +11.6% (257.3 against 230.5 us). 98 MiB in 230.5 us less the launch is 456
  //    GB/s; the standalone ar_2stage reads at 407..413 GB/s, and within 10% needs >= 413.5. That rate
  //    is a link cap, not a latency bound: the pull grid's 48-block point holds exactly ar_2stage's
  //    bytes in flight (24 x 512 x 7 x 16 B = 48 x 256 x 7 x 16 B) and 64 and 80 blocks (1.33x,
  //    1.67x in flight) are no faster (962 / 959 / 963 us); the benchmark's fp8/lsa sessions less
  //    the capture's other phases leave 241..271 us of pull (median 250.4, 419 GB/s), and the
  //    composite totals alone put links.read_efficiency at 0.724 +- 0.012 (a slower pull, not faster);
  //  - drain (fp8/lsa): -10.9%. The three drains are one component (the same GEMM, bf16 scatter,
  //    chunks and tile order; fp8/sdma and fp8/lsa also the same 812 MiB window) measured 180.2 /
  //    170.9 / 204.8 us; one value is within 10% of all three only in 186.2..188.0 us, and the
  //    least-squares fit of sdma.gemm_request_share puts it at 182.4 (+1.2%, +6.7%, -10.9%); the
  //    33.9 us spread is 3.6% of a layer, beyond the seed's 2% run-to-run spread.
  const std::set<std::string> misses{"phases/fp8-lsa#drain", "phases/bf16#gather", "phases/fp8-lsa#pull"};
  int n = 0;
  for (const auto& c : (*res_)["cases"]) {
    if (c["id"].get<std::string>().rfind("phases/", 0) != 0) continue;
    double gemm = 0, drain = 0, gemm_m = 0, drain_m = 0;
    for (const auto& p : c["phases"]) {
      if (!p.contains("measured_us")) continue;
      ++n;
      const std::string id = c["id"].get<std::string>() + "#" + p["name"].get<std::string>();
      const double e = std::fabs(p["error_pct"].get<double>());
      if (misses.count(id)) EXPECT_GT(e, 10.0) << id << ": a known miss now within 10%";
      else EXPECT_LE(e, 10.0) << id;
      const double us = p["end_us"].get<double>() - p["start_us"].get<double>();
      if (p["name"] == "gemm") gemm = us, gemm_m = p["measured_us"].get<double>();
      if (p["name"] == "drain") drain = us, drain_m = p["measured_us"].get<double>();
    }
    EXPECT_NEAR(gemm + drain, gemm_m + drain_m, 0.05 * (gemm_m + drain_m)) << c["id"];
  }
  EXPECT_EQ(n, 16);
}

TEST_F(Mi355xScenario, CasesReportWindowAndWireError) {
  for (const auto& c : (*res_)["cases"]) {
    // Every mori mode allocates the window; the GEMM + RCCL baseline has none.
    if (c["params"]["mode"] == "rccl") EXPECT_EQ(c["window_MiB"].get<double>(), 0.0) << c["id"];
    else EXPECT_GT(c["window_MiB"].get<double>(), 0) << c["id"];
    const bool fp8 = c["params"]["gather_dtype"] == "fp8";
    if (fp8) EXPECT_NEAR(c["wire_rel_l2"].get<double>(), 2.6e-2, 0.3e-2) << c["id"];
    else EXPECT_EQ(c["wire_rel_l2"].get<double>(), 0.0) << c["id"];
  }
}

TEST(Trace, FusedCaseHasOneLanePerResourceAndScatterOverlapsGemm) {
  auto hw = models::load_hardware(kRoot + "/hw/mi355x-8gpu.yaml");
  sim::TraceSink trace;
  models::GemmArConfig c;
  models::simulate_gemm_ar(hw, c, &trace);
  const auto j = trace.to_json();
  ASSERT_TRUE(j.contains("traceEvents"));
  std::set<std::string> threads;
  double gemm_end = 0, first_put = 1e18;
  std::map<int, std::string> tid_name;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") tid_name[e["tid"].get<int>()] = e["args"]["name"];
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid"));
    if (e["ph"] != "X") continue;
    ASSERT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("tid"));
    const std::string lane = tid_name[e["tid"].get<int>()];
    threads.insert(lane);
    const std::string name = e["name"];
    if (name.rfind("gemm wave", 0) == 0) gemm_end = std::max(gemm_end, e["ts"].get<double>() + e["dur"].get<double>());
    if (name.rfind("scatter chunk", 0) == 0) first_put = std::min(first_put, e["ts"].get<double>());
  }
  // Slices on the CUs and on each copy-engine queue; every resource (CUs, HBM, each link direction,
  // each queue) has its lane, the HBM and the links with their utilisation counter.
  for (const std::string lane : {"cu", "sdma->1"})
    EXPECT_TRUE(std::any_of(threads.begin(), threads.end(), [&](const std::string& t) { return t.rfind(lane, 0) == 0; })) << lane;
  const auto lanes = trace.lanes();
  for (const std::string lane : {"gpu0/cu", "gpu0/hbm", "gpu0/fabric-requests", "gpu0/xgmi->1", "gpu1/xgmi->0",
                                 "gpu0/sdma->1", "gpu0/barrier", "gpu7/barrier"})
    EXPECT_NE(std::find(lanes.begin(), lanes.end(), lane), lanes.end()) << lane;
  int counters = 0;
  for (const auto& e : j["traceEvents"]) counters += e["ph"] == "C";
  EXPECT_GT(counters, 0);
  EXPECT_LT(first_put, 0.5 * gemm_end);  // the scatter's puts start while the GEMM still runs
}
