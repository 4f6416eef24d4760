// The gemm_ar model on a minimal hand-written machine (minimal-hw.yaml): every expected time is
// derived by hand in the comments, as the engine's tests are.
//
// The shape: M = N = K = 256, world size 2, blockscale (BLOCK_M 128): M is already a multiple of
// ws x BLOCK_M = 256; row tiles 256 / 128 = 2, column tiles 256 / 256 = 1: 2 tiles, one per wave
// (1 CU x 1 workgroup). A wave of one tile takes K/128 = 2 blocks x wave_per_kblock 5 + 1 tile x
// tile_fixed 10 = 20 us; the GEMM's latency is 3 us (before its first wave);
// a wave moves its A/B loads (128 + 256) x 256 x 1 B x (1 - 0.5 L2 hit) = 49152 B and its C stores
// 128 x 256 x 2 B = 65536 B, capped at bytes / 20 us (1 TB/s of HBM never binds): 20 us per wave.
// Any other kernel's launch costs launch_gap 2 + fixed_cost 1 = 3 us. T = M x N x 2 B = 131072 B, a slice T/2.
#include <gtest/gtest.h>

#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;

namespace {
const hw::Hardware& minimal() {
  static const hw::Hardware h = models::load_hardware(test::kRoot + "/tests/models/gemm_ar/minimal-hw.yaml");
  return h;
}
nlohmann::json run(const std::string& mode) {
  return models::run_gemm_ar_case(minimal(), YAML::Load("{mode: " + mode + ", m: 256, n: 256, k: 256, world_size: 2}"), nullptr);
}
double phase(const nlohmann::json& r, const std::string& name) {
  for (const auto& p : r["phases"])
    if (p["name"] == name) return p["end_us"].get<double>() - p["start_us"].get<double>();
  return -1;
}
}  // namespace

TEST(GemmArMinimal, GemmOnlyIsTheLaunchThenTwoWaves) {
  // 3 us GEMM latency + 2 waves x 20 us = 43 us; the gemm phase is all of it (from the call's start).
  const auto r = run("gemm-only");
  EXPECT_NEAR(r["predicted_us"].get<double>(), 43.0, 1e-9);
  EXPECT_NEAR(phase(r, "gemm"), 43.0, 1e-9);
}

TEST(GemmArMinimal, TheRcclBaselineIsTheGemmThenTheAlphaBetaRing) {
  // After the GEMM (43 us): a 3 us launch, then 2 (ws - 1) x step 5 = 10 us plus 2 (ws - 1) / ws x
  // T / (bus bandwidth (ws - 1) x 10 GB/s) = 131072 / 10e9 = 13.1072 us: 43 + 3 + 23.1072 = 69.1072 us.
  const auto r = run("rccl");
  EXPECT_NEAR(r["predicted_us"].get<double>(), 69.1072, 1e-9);
  EXPECT_NEAR(phase(r, "all-reduce"), 26.1072, 1e-9);
}

TEST(GemmArMinimal, SplitSdmaScattersReducesAndGathersOverTheCopyEngines) {
  // GEMM ends at 43 us. Scatter: a 3 us launch, then each rank's put of its peer's slice (65536 B):
  // 1 us command latency, then at queue peak 10 GB/s x hbm_source_efficiency 0.5 (no MALL) = 5 GB/s:
  // 13.1072 us, so the queues are idle at 43 + 3 + 1 + 13.1072 = 60.1072 us; the flag barrier adds
  // 4 us: scatter 43 -> 64.1072 (21.1072 us). Reduce: 3 us launch + 3 slices (196608 B) at 1 TB/s =
  // 0.196608 us: 3.196608 us, to 67.303808. Gather: 3 us launch, 1 us command, 65536 B at 10 GB/s =
  // 6.5536 us, the barrier's 4 us: 14.5536 us, to 81.857408 us.
  const auto r = run("split-sdma");
  EXPECT_NEAR(r["predicted_us"].get<double>(), 81.857408, 1e-9);
  EXPECT_NEAR(phase(r, "scatter"), 21.1072, 1e-9);
  EXPECT_NEAR(phase(r, "reduce"), 3.196608, 1e-9);
  EXPECT_NEAR(phase(r, "gather"), 14.5536, 1e-9);
  EXPECT_EQ(r["per_rank_us"], (nlohmann::json{r["predicted_us"], r["predicted_us"]}));
}

TEST(GemmArMinimal, WrittenBytesWeighTheWriteCostOnTheHbm) {
  // memory.write_cost 3 (absent from minimal-hw.yaml: 1): split-sdma's reduce reads 2 slices and
  // writes 1 (196608 B, 65536 written): (131072 + 3 x 65536) B = 327680 B at 1 TB/s = 0.32768 us after
  // its 3 us launch, 0.131072 us more than with write_cost 1; nothing else moves: 81.988480 us.
  hw::Hardware h = minimal();
  h.set_si("memory.write_cost", 3.0);
  const auto r = models::run_gemm_ar_case(h, YAML::Load("{mode: split-sdma, m: 256, n: 256, k: 256, world_size: 2}"), nullptr);
  EXPECT_NEAR(phase(r, "reduce"), 3.32768, 1e-9);
  EXPECT_NEAR(r["predicted_us"].get<double>(), 81.98848, 1e-9);
}
