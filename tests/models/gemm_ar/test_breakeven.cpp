// Break-even M of the fused path on the committed MI355X hardware file (models/gemm_ar/breakeven.hpp).
#include <gtest/gtest.h>

#include <string>

#include "models/gemm_ar/breakeven.hpp"
#include "models/model.hpp"

using namespace fusesim;

TEST(BreakEven, FusedWinsFromSomeMAndAtTheServingThresholds) {
  const auto hw = models::load_hardware(FUSESIM_SOURCE_DIR "/hw/mi355x-8gpu.yaml");
  models::GemmArConfig c;
  const auto bf16 = models::break_even(hw, c, 32768);
  ASSERT_GT(bf16.m_vs_split, 0);
  ASSERT_GT(bf16.m_vs_rccl, 0);
  // The thresholds SGLang chose by hand (8192 bf16, 2048 fp8) lie inside the winning range of the M it
  // fuses (multiples of ws x BLOCK_M: it declines ragged M).
  EXPECT_LE(bf16.m_vs_rccl_aligned, 8192);
  c.gather_dtype = "fp8";
  c.gather_transport = "lsa";
  const auto fp8 = models::break_even(hw, c, 32768);
  ASSERT_GT(fp8.m_vs_rccl, 0);
  EXPECT_LE(fp8.m_vs_rccl_aligned, 2048);
  EXPECT_LE(fp8.m_vs_rccl, bf16.m_vs_rccl);  // the fp8 wire pays from no larger an M
  // Over every M, padding costs the fused path: just past a multiple of 1024 the unpadded RCCL
  // baseline wins (M=1025 runs padded to 2048), so the all-M threshold lies above the aligned one,
  // and it is exact: the fused path wins at it and loses one row below.
  auto at = [&](int64_t m, const char* mode) {
    models::GemmArConfig x;
    x.m = m;
    x.mode = mode;
    return models::simulate_gemm_ar(hw, x).total_us;
  };
  EXPECT_GT(at(1025, "fused-sdma"), at(1025, "rccl"));
  EXPECT_GT(bf16.m_vs_rccl, bf16.m_vs_rccl_aligned);
  EXPECT_LT(at(bf16.m_vs_rccl, "fused-sdma"), at(bf16.m_vs_rccl, "rccl"));
  EXPECT_GE(at(bf16.m_vs_rccl - 1, "fused-sdma"), at(bf16.m_vs_rccl - 1, "rccl"));
  // At the returned M the fused path really is faster than the split path.
  bool checked = false;
  for (const auto& p : bf16.curve)
    if (p["m"].get<int64_t>() == bf16.m_vs_split) {
      EXPECT_LT(p["fused_us"].get<double>(), p["split_us"].get<double>());
      checked = true;
    }
  EXPECT_TRUE(checked);
}

// Whatever --max-m is (a padding step's end or not), the threshold holds over the whole searched
// range and the range reaches max_m: with max_m 2048, 3072, 4096 the fused path wins late in the last
// step (it was reported as "no M"); with 13000 the part of a step past 12288 was never evaluated.
TEST(BreakEven, TheThresholdHoldsUpToAnyMaxM) {
  const auto hw = models::load_hardware(FUSESIM_SOURCE_DIR "/hw/mi355x-8gpu.yaml");
  const models::GemmArConfig c;
  for (const int64_t max_m : {2048, 3072, 4096, 13000}) {
    const auto r = models::break_even(hw, c, max_m);
    bool reaches = false;
    for (const auto& p : r.curve) {
      const int64_t m = p["m"].get<int64_t>();
      EXPECT_LE(m, max_m);
      reaches = reaches || m == max_m;
      if (r.m_vs_rccl > 0 && m >= r.m_vs_rccl) {
        EXPECT_LT(p["fused_us"].get<double>(), p["rccl_us"].get<double>()) << "max_m " << max_m << " M " << m;
      }
    }
    EXPECT_TRUE(reaches) << "max_m " << max_m;
    if (max_m <= 4096) {
      ASSERT_GT(r.m_vs_rccl, 0) << "max_m " << max_m;
      // Exact: one row below it the RCCL baseline is at least as fast.
      const auto below = models::break_even_point(hw, c, r.m_vs_rccl - 1);
      EXPECT_GE(below["fused_us"].get<double>(), below["rccl_us"].get<double>()) << "max_m " << max_m;
    }
  }
}
