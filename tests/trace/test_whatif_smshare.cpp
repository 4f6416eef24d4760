// `trace whatif --comm-stream` with the SM-sharing charge (issue 19) on the hand-written fixture
// tests/trace/fixtures/smshare/gemm_allreduce_one_stream.json (its README derives the figures): a
// GEMM (264 CTAs, 100 us), an all-reduce (16 blocks, 50 us) and a GEMM (264 CTAs, 100 us) on one stream.
#include <gtest/gtest.h>

#include "calibrate/trace/whatif.hpp"
#include "hw/sm_pool.hpp"

#ifndef FUSESIM_SMSHARE_FIXTURE
#error "FUSESIM_SMSHARE_FIXTURE must name tests/trace/fixtures/smshare/gemm_allreduce_one_stream.json"
#endif

namespace fusesim::trace {
namespace {

WhatIfReport run(int sms) {
  auto files = read_trace(FUSESIM_SMSHARE_FIXTURE);
  WhatIfOptions opt;
  opt.window = "all";
  opt.comm_stream = true;
  opt.sms = sms;
  return whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, FUSESIM_SMSHARE_FIXTURE);
}

TEST(TraceWhatIfSmSharing, ReportsTheSavingWithAndWithoutTheCharge) {
  const auto r = run(132);
  EXPECT_NEAR(r.replay_us, 250.0, 1e-6);
  // Without the charge the all-reduce hides entirely beside the second GEMM: 200 us, saving 50 us.
  EXPECT_NEAR(r.whatif_us, 200.0, 1e-6);
  EXPECT_NEAR(r.saving_us(), 50.0, 1e-6);
  ASSERT_TRUE(r.charged);
  EXPECT_EQ(r.charged_kernels, 1);
  EXPECT_EQ(r.uncharged_no_grid, 0);
  // The interference the SM pool predicts: 264 CTAs in ceil(264 / 116) = 3 waves beside the 16 blocks
  // instead of ceil(264 / 132) = 2, over the half of the GEMM that overlaps the all-reduce.
  const hw::SmLimits h200;
  const double f = hw::waves_beside(h200, 264, 16) / hw::waves_beside(h200, 264, 0);
  EXPECT_NEAR(f, 1.5, 1e-9);
  const double interference = 100.0 * (f - 1.0) * 0.5;
  EXPECT_NEAR(r.interference_us, interference, 1e-6);
  EXPECT_NEAR(r.whatif_charged_us, 225.0, 1e-6);
  // The two savings differ by exactly that interference (the charged GEMM is on the critical path).
  EXPECT_NEAR(r.saving_us() - r.saving_charged_us(), interference, 1e-6);
}

TEST(TraceWhatIfSmSharing, TheChargeFollowsTheSmCount) {
  // On a GPU of 264 SMs the GEMM is one wave alone and two beside the all-reduce (x2): +50 us, no saving left.
  const auto r = run(264);
  EXPECT_NEAR(r.interference_us, 50.0, 1e-6);
  EXPECT_NEAR(r.saving_charged_us(), 0.0, 1e-6);
  // sms = 0: no charge, the old report.
  const auto none = run(0);
  EXPECT_FALSE(none.charged);
  EXPECT_NEAR(none.whatif_us, 200.0, 1e-6);
}

TEST(TraceWhatIfSmSharing, ACollectiveHoldingEverySmIsRefused) {
  // The all-reduce's grid is 16 blocks: on a GPU of 16 SMs or fewer it would hold every SM (it was
  // clamped to sms - 1 free SMs before); refused, naming the kernel, its grid and --sms.
  try {
    run(16);
    FAIL() << "--sms 16 with a 16-block collective was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("--sms 16"), std::string::npos) << w;
    EXPECT_NE(w.find("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), std::string::npos) << w;
    EXPECT_NE(w.find("grid of 16 blocks"), std::string::npos) << w;
  }
  EXPECT_THROW(run(8), std::invalid_argument);
  EXPECT_NO_THROW(run(17));  // one SM left for the GEMM
}

TEST(TraceWhatIfSmSharing, WavesBesideIsTheSmPoolsWaveCount) {
  const hw::SmLimits h200;
  EXPECT_NEAR(hw::waves_beside(h200, 132, 0), 1.0, 1e-9);
  EXPECT_NEAR(hw::waves_beside(h200, 132, 1), 2.0, 1e-9);   // one CTA waits for a second wave
  EXPECT_NEAR(hw::waves_beside(h200, 512, 66), 8.0, 1e-9);  // ceil(512 / 66)
  EXPECT_THROW(hw::waves_beside(h200, 0, 0), std::invalid_argument);
  EXPECT_THROW(hw::waves_beside(h200, 10, 132), std::invalid_argument);
}

}  // namespace
}  // namespace fusesim::trace
