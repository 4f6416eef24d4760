// The ttft model on the gemm_ar minimal machine (tests/models/gemm_ar/minimal-hw.yaml, whose times
// tests/models/gemm_ar/test_gemm_ar_minimal.cpp derives): a layer of N = K = 256 at world size 2
// that runs as gemm-only (43 us per call at M = 256) and is replaced by the RCCL baseline
// (69.1072 us): the layer costs 26.1072 us more per call.
#include <gtest/gtest.h>

#include "models/model.hpp"
#include "models/ttft/ttft.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;

TEST(TtftMinimal, TheLayersChangeOverThePromptsChunksMovesTheBaseTtft) {
  // 512 tokens in chunks of 256: two calls (M = 256 each) per layer: +52.2144 us per layer, the base
  // arm 2 x 43 = 86 us. Two layers on a 1 ms base: 1000 + 2 x 52.2144 = 1104.4288 us (+10.44288%);
  // the base arm's layers are 2 x 86 / 1000 = 17.2% of the base TTFT.
  const hw::Hardware hw = models::load_hardware(test::kRoot + "/tests/models/gemm_ar/minimal-hw.yaml");
  const auto r = models::run_ttft_case(
      hw, YAML::Load("{base: {mode: gemm-only, n: 256, k: 256, world_size: 2}, fused: {mode: rccl, n: 256, k: 256, world_size: 2},"
                     " prompt_tokens: 512, batch: 1, chunk_tokens: 256, layers: 2, ttft_base_ms: 1}"),
      nullptr);
  EXPECT_NEAR(r["predicted_us"].get<double>(), 1104.4288, 1e-9);
  EXPECT_NEAR(r["saving_per_layer_forward_us"].get<double>(), -52.2144, 1e-9);
  EXPECT_NEAR(r["base_layer_forward_us"].get<double>(), 86.0, 1e-9);
  EXPECT_NEAR(r["ttft_change_pct"].get<double>(), 10.44288, 1e-9);
  EXPECT_NEAR(r["layer_share_of_ttft_pct"].get<double>(), 17.2, 1e-9);
  EXPECT_EQ(r["chunks"].size(), 2u);
}
