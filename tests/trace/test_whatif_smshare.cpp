// `trace whatif --comm-stream` with the SM-sharing charge (issue 19) on the hand-written fixtures
// tests/trace/fixtures/smshare/gemm_allreduce_one_stream*.json (their README derives the figures): a GEMM
// (264 CTAs, 100 us), an all-reduce (16 blocks, 50 us; in the _bytes one 2 x 12.5 M bf16 elements) and a
// GEMM (264 CTAs, 100 us) on one stream. The charge is models::gemm_beside, the mechanism the sm_sharing
// model predicts a GEMM beside a kernel with: the tests check the what-if against that model's own
// prediction for the same GEMM beside the same kernel, and against the mechanism worked by hand.
#include <algorithm>
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include "calibrate/trace/whatif.hpp"
#include "models/model.hpp"
#include "models/sm_sharing/sm_sharing.hpp"

#ifndef FUSESIM_SMSHARE_FIXTURE
#error "FUSESIM_SMSHARE_FIXTURE must name tests/trace/fixtures/smshare/gemm_allreduce_one_stream.json"
#endif

namespace fusesim::trace {
namespace {

const std::string kH200 = std::string(FUSESIM_SOURCE_DIR) + "/hw/h200-1gpu.yaml";
const std::string kBytesFixture = std::string(FUSESIM_SOURCE_DIR) + "/tests/trace/fixtures/smshare/gemm_allreduce_one_stream_bytes.json";

std::shared_ptr<const models::SmShareMachine> h200() {
  static const auto m = std::make_shared<const models::SmShareMachine>(models::sm_share_machine(models::load_hardware(kH200)));
  return m;
}

WhatIfReport run(int sms, const std::string& fixture = FUSESIM_SMSHARE_FIXTURE,
                 std::shared_ptr<const models::SmShareMachine> m = h200()) {
  auto files = read_trace(fixture);
  WhatIfOptions opt;
  opt.window = "all";
  opt.comm_stream = true;
  opt.sms = sms;
  opt.sm_machine = std::move(m);
  return whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, fixture);
}

/// The sm_sharing model's prediction (us) for the fixture's GEMM (264 tiles of 128 x 128 on 264 CTAs of
/// 384 threads, one tile each, clusters of 1, 100 us alone) beside `neighbour` (16 blocks of 640 threads).
double model_us(const std::string& neighbour) {
  const hw::Hardware hwf = models::load_hardware(kH200);
  return models::run_sm_sharing_case(
             hwf,
             YAML::Load("{m: 2816, n: 1536, k: 4096, tile_m: 128, tile_n: 128, grid: 264, cluster: 1, gemm_threads: 384, "
                        "alone_time_us: 100, blocks: 16, neighbour_threads: 640, " + neighbour + "}"),
             nullptr)["predicted_us"]
      .get<double>();
}

TEST(TraceWhatIfSmSharing, TheChargeIsTheInterferenceTheSmSharingModelPredicts) {
  const auto r = run(132);
  EXPECT_NEAR(r.replay_us, 250.0, 1e-6);
  // Without the charge the all-reduce hides entirely beside the second GEMM: 200 us, saving 50 us.
  EXPECT_NEAR(r.whatif_us, 200.0, 1e-6);
  EXPECT_NEAR(r.saving_us(), 50.0, 1e-6);
  ASSERT_TRUE(r.charged);
  EXPECT_EQ(r.charged_kernels, 1);
  EXPECT_EQ(r.uncharged_no_grid, 0);
  EXPECT_EQ(r.charged_without_bytes, 1);  // the fixture's all-reduce has no message size: SMs only
  // The model: the GEMM beside a compute kernel of 16 blocks (no bytes) takes model_us; the what-if charges
  // the half of the GEMM that overlaps the all-reduce with that slowdown.
  const double beside = model_us("neighbour: compute");
  const double interference = (beside - 100.0) * 0.5;
  EXPECT_NEAR(r.interference_us, interference, 1e-6);
  EXPECT_NEAR(r.saving_us() - r.saving_charged_us(), interference, 1e-6);  // the charged GEMM is on the critical path
  // The mechanism by hand: the 16 blocks hold 16 SMs (dispatch order), 116 left; alone the 264 CTAs run
  // two waves of 132 at r(132); beside, two of 116 at r(116) and the last 32 at r(32), r(n) = r0 - beta n.
  const hw::Hardware hwf = models::load_hardware(kH200);
  const double r0 = hwf.get("smshare.tile_rate_at_zero"), beta = hwf.get("smshare.tile_rate_slope");
  const double cap = hwf.get("smshare.tile_rate_max");  // r(32) runs at the cap (round 5)
  auto rate = [&](int n) { return std::min(r0 - beta * n, cap); };
  const double f = (2 / rate(116) + 1 / rate(32)) / (2 / rate(132));
  EXPECT_NEAR(beside, 100.0 * f, 1e-6);
  EXPECT_NEAR(r.interference_us, 50.0 * (f - 1), 1e-6);
  EXPECT_NEAR(r.whatif_charged_us, 200.0 + 50.0 * (f - 1), 1e-6);
}

TEST(TraceWhatIfSmSharing, ACollectiveThatMovesBytesAddsTheModelsHbmQueue) {
  // The _bytes fixture's all-reduce reads and writes 2 x 12.5 M bf16 elements in 50 us: 1000 GB/s, the
  // model's copy neighbour of 1000 GB/s alone.
  const auto r = run(132, kBytesFixture);
  EXPECT_EQ(r.charged_kernels, 1);
  EXPECT_EQ(r.charged_without_bytes, 0);
  const double beside = model_us("neighbour: copy, neighbour_alone_GBps: 1000");
  EXPECT_GT(beside, model_us("neighbour: compute"));  // the HBM queue adds to the SM pool's cost
  EXPECT_NEAR(r.interference_us, (beside - 100.0) * 0.5, 1e-6);
  EXPECT_NEAR(r.saving_us() - r.saving_charged_us(), (beside - 100.0) * 0.5, 1e-6);
}

TEST(TraceWhatIfSmSharing, TheChargeIsOffWithSmsZeroAndSmsMustBeTheMachines) {
  const auto none = run(0);
  EXPECT_FALSE(none.charged);
  EXPECT_NEAR(none.whatif_us, 200.0, 1e-6);
  try {
    run(264);
    FAIL() << "--sms 264 on a machine of 132 SMs was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("--sms 264 differs from the 132 SMs"), std::string::npos) << w;
  }
  EXPECT_THROW(run(132, FUSESIM_SMSHARE_FIXTURE, nullptr), std::invalid_argument);  // no machine
}

TEST(TraceWhatIfSmSharing, ACollectiveHoldingEverySmIsRefused) {
  // The all-reduce's grid is 16 blocks: on a GPU of 16 SMs or fewer it would hold every SM; refused,
  // naming the kernel, its grid and --sms.
  auto small = std::make_shared<models::SmShareMachine>(*h200());
  small->limits.sms = 16;
  try {
    run(16, FUSESIM_SMSHARE_FIXTURE, small);
    FAIL() << "--sms 16 with a 16-block collective was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("--sms 16"), std::string::npos) << w;
    EXPECT_NE(w.find("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), std::string::npos) << w;
    EXPECT_NE(w.find("grid of 16 blocks"), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace fusesim::trace
