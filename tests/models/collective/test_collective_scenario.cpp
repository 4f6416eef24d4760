// The standalone all-reduce against ROCm/mori's public tables (scenarios/mi355x-components-allreduce.yaml,
// records and sources in calibrate/data/mori-public/) on hw/mi355x-8gpu.yaml, whose collective keys
// were fitted on these 29 points (README, "The collective model"). What issue 17 asks of them:
// median |error| <= 4% and max <= 10% per backend from M=64 to 16384; the measured LSA < SDMA
// ordering at every M, predicted too; RCCL (the source's NCCL) the slowest at M=16384.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/collective/collective.hpp"
#include "scenario/load.hpp"
#include "scenario/run.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using fusesim::test::kRoot;

namespace {
struct Point {
  std::string backend, build;
  int64_t m = 0;
  double measured = 0, predicted = 0;
};
class ComponentsAllReduce : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto sc = scenario::load(kRoot + "/scenarios/mi355x-components-allreduce.yaml");
    hw_ = new hw::Hardware(scenario::load_hardware(sc));
    const auto res = scenario::run(sc, *hw_);
    points_ = new std::vector<Point>;
    for (const auto& c : res["cases"]) {
      if (c["measured_us"].is_null()) continue;
      const auto& p = c["params"];
      points_->push_back({p["backend"].get<std::string>(), p.value("build", std::string()), p["m"].get<int64_t>(),
                          c["measured_us"].get<double>(), c["predicted_us"].get<double>()});
    }
  }
  static double predict(const std::string& backend, int64_t m) {
    return models::run_collective_case(*hw_, YAML::Load("{backend: " + backend + ", m: " + std::to_string(m) + "}"), nullptr)["predicted_us"]
        .get<double>();
  }
  static hw::Hardware* hw_;
  static std::vector<Point>* points_;
};
hw::Hardware* ComponentsAllReduce::hw_ = nullptr;
std::vector<Point>* ComponentsAllReduce::points_ = nullptr;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

TEST_F(ComponentsAllReduce, EveryBackendWithinFourPercentMedianAndTenMax) {
  // Issue 17, "What it must show": the standalone all-reduce, median <= 4%, max <= 10% per backend.
  std::map<std::string, std::vector<double>> err;
  for (const auto& p : *points_) err[p.backend].push_back(std::fabs(100.0 * (p.predicted - p.measured) / p.measured));
  EXPECT_EQ(points_->size(), 29u);
  EXPECT_EQ(err.size(), 4u);  // lsa, sdma, aiter, rccl
  for (const auto& [backend, e] : err) {
    EXPECT_LE(median(e), 4.0) << backend;
    EXPECT_LE(*std::max_element(e.begin(), e.end()), 10.0) << backend;
  }
  EXPECT_EQ(err["sdma"].size(), 13u);  // both builds and the M=16384 row
}

TEST_F(ComponentsAllReduce, LsaBeatsSdmaAtEveryMeasuredM) {
  // The measured ordering (each SDMA row, either build, against the LSA row of its M), and the
  // predicted one.
  std::map<int64_t, Point> lsa;
  for (const auto& p : *points_)
    if (p.backend == "lsa") lsa[p.m] = p;
  int pairs = 0;
  for (const auto& p : *points_) {
    if (p.backend != "sdma") continue;
    ASSERT_TRUE(lsa.count(p.m)) << p.m;
    EXPECT_LT(lsa[p.m].measured, p.measured) << "measured, M=" << p.m << " build " << p.build;
    EXPECT_LT(lsa[p.m].predicted, p.predicted) << "predicted, M=" << p.m << " build " << p.build;
    ++pairs;
  }
  EXPECT_EQ(pairs, 13);
}

TEST_F(ComponentsAllReduce, RcclIsTheSlowestAtM16384) {
  // Measured at M=16384: LSA 1043, SDMA 1047, NCCL 1113 us (bench_gemm_ar.py's docstring); predicted
  // the same way, and slower than aiter's all-reduce there too (not measured at that M).
  std::map<std::string, Point> at;
  for (const auto& p : *points_)
    if (p.m == 16384) at[p.backend] = p;
  ASSERT_EQ(at.size(), 3u);
  for (const char* b : {"lsa", "sdma"}) {
    EXPECT_GT(at["rccl"].measured, at[b].measured) << b;
    EXPECT_GT(at["rccl"].predicted, at[b].predicted) << b;
  }
  EXPECT_GT(at["rccl"].predicted, predict("aiter", 16384));
}

TEST_F(ComponentsAllReduce, LsaRunsOneStageOnlyAtTheSmallestM) {
  // The size rule picks 1 stage at M=64 (896 KiB: two stages' extra synchronisation outweighs the
  // 1-stage kernel's (ws-1)/2 x more remote bytes) and 2 stages from M=128 on.
  auto stages = [](int64_t m) {
    return models::run_collective_case(*hw_, YAML::Load("{backend: lsa, m: " + std::to_string(m) + "}"), nullptr)["params"]["stages"].get<int>();
  };
  EXPECT_EQ(stages(64), 1);
  for (int64_t m : {128, 512, 16384}) EXPECT_EQ(stages(m), 2) << m;
}

TEST_F(ComponentsAllReduce, EveryConfigurationRunsAndTheLegsComposeTheAllReduce) {
  // Issue 17: unpadded M from 64, bf16 and fp8 wire, world sizes 2, 4, 8, the two legs alone.
  auto t = [](const std::string& params) {
    return models::run_collective_case(*hw_, YAML::Load("{" + params + "}"), nullptr)["predicted_us"].get<double>();
  };
  for (const char* b : {"sdma", "lsa", "aiter", "rccl"})
    for (int ws : {2, 4, 8})
      for (const char* dt : {"bf16", "fp8"})
        for (int64_t m : {64, 1000, 16384}) {
          const std::string p = fmt::format("backend: {}, world_size: {}, dtype: {}, m: {}", b, ws, dt, m);
          const double ar = t(p);
          EXPECT_TRUE(std::isfinite(ar) && ar > 0) << p;
          if (std::string(b) == "aiter") continue;  // all-reduce only
          const double rs = t(p + ", op: reduce-scatter"), ag = t(p + ", op: all-gather");
          EXPECT_LT(rs, ar) << p;
          EXPECT_LT(ag, ar) << p;
          // SDMA: the all-reduce is its scatter + reduce (the reduce-scatter) followed by its gather
          // (the all-gather), each alone on an idle node.
          if (std::string(b) == "sdma") {
            EXPECT_NEAR(rs + ag, ar, 1e-6 * ar) << p;
          }
        }
  // The fp8 wire moves about half the bytes: faster at M=16384 on every backend.
  for (const char* b : {"sdma", "lsa", "aiter", "rccl"})
    EXPECT_LT(t(fmt::format("backend: {}, m: 16384, dtype: fp8", b)), t(fmt::format("backend: {}, m: 16384", b))) << b;
}

TEST_F(ComponentsAllReduce, ATensorBeyondTheHbmIsRefusedNamingM) {
  // 288 GB per GPU: [10^8, 7168] bf16 is 1.4 TB.
  try {
    models::run_collective_case(*hw_, YAML::Load("{backend: sdma, m: 100000000}"), nullptr);
    FAIL() << "accepted";
  } catch (const models::ParamError& e) {
    EXPECT_EQ(e.key(), "m");
    EXPECT_NE(std::string(e.what()).find("GiB of HBM per GPU"), std::string::npos) << e.what();
  }
}
