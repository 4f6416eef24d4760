// e4m3 wire numerics: rounding, saturation and the seed's granularity table.
#include <gtest/gtest.h>

#include "models/gemm_ar/gemm_ar.hpp"

using namespace fusesim::models;

TEST(E4M3, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(round_to_e4m3(1.0f), 1.0f);
  EXPECT_EQ(round_to_e4m3(1.0625f), 1.0f);    // halfway between 1 and 1.125: ties to even (1.0)
  EXPECT_EQ(round_to_e4m3(1.1875f), 1.25f);   // halfway between 1.125 and 1.25: ties to even (1.25)
  EXPECT_EQ(round_to_e4m3(500.0f), 448.0f);   // saturates at the largest finite value
  EXPECT_EQ(round_to_e4m3(-1e6f), -448.0f);
  EXPECT_EQ(round_to_e4m3(0.001953125f), 0.001953125f);  // 2^-9, the smallest subnormal
  EXPECT_EQ(round_to_e4m3(240.0f), 240.0f);
  EXPECT_EQ(round_to_e4m3(250.0f), 256.0f);   // [128, 256) has a step of 16: 240, 256 -> 250 rounds to 256
  EXPECT_EQ(round_to_e4m3(300.0f), 288.0f);   // [256, 448] has a step of 32: 288, 320 -> 300 rounds to 288
}

TEST(E4M3, GranularityTableOfSeed000) {
  // seed 000, "What fp8 costs, numerically": [2048, 7168] standard normal payload.
  const int64_t rows = 2048, cols = 7168;
  const auto x = standard_normal(rows, cols);
  const struct { int64_t group; double rel_l2; double scale_pct; } table[] = {
      {7168, 2.646e-2, 0.06}, {512, 2.631e-2, 0.78}, {256, 2.609e-2, 1.56}, {128, 2.572e-2, 3.12}, {32, 2.399e-2, 12.5}};
  for (const auto& row : table) {
    const auto q = quantize_e4m3(x, rows, cols, row.group);
    EXPECT_NEAR(q.rel_l2, row.rel_l2, row.rel_l2 * 0.03) << "group " << row.group;
    // scale bytes as a share of the e4m3 payload (4 bytes per group); the seed prints two decimals
    EXPECT_NEAR(q.scale_bytes_frac * 100, row.scale_pct, 0.0051) << "group " << row.group;
  }
}

TEST(E4M3, RejectsBadGroups) {
  std::vector<float> x(12, 1.0f);
  EXPECT_THROW(quantize_e4m3(x, 3, 4, 3), std::invalid_argument);
  EXPECT_THROW(quantize_e4m3(x, 2, 4, 4), std::invalid_argument);
}
