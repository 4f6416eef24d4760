// The sm_sharing model and the SM pool (hw/sm_pool.hpp) on tests/models/sm_sharing/minimal-hw.yaml
// (8 SMs = 4 TPCs, r(n) = 10 - n TFLOP/s per SM, HBM 1 TB/s). Times derived by hand below.
#include <gtest/gtest.h>

#include "hw/sm_pool.hpp"
#include "models/model.hpp"
#include "models/sm_sharing/sm_sharing.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;

namespace {
const hw::Hardware& minimal() {
  static const hw::Hardware hw = models::load_hardware(test::kRoot + "/tests/models/sm_sharing/minimal-hw.yaml");
  return hw;
}
// 256 x 256 x 1024 in 128 x 128 tiles: 4 tiles, grid 4 in clusters of 2, 100 us alone (one round).
double run(const std::string& extra) {
  return models::run_sm_sharing_case(
             minimal(), YAML::Load("{m: 256, n: 256, k: 1024, tile_m: 128, tile_n: 128, grid: 4, cluster: 2, " + extra + "}"),
             nullptr)["predicted_us"]
      .get<double>();
}
}  // namespace

TEST(SmPool, ResidencyFromThreadsRegistersAndSharedMemory) {
  const hw::SmLimits h200;  // Hopper defaults
  // cuBLASLt's nvjet GEMM block: 384 threads x 168 registers = 12 warps x 5376 = 64512 registers: one per SM.
  const hw::BlockShape gemm{384, 168, 213188};
  EXPECT_EQ(hw::residency(h200, gemm), 1);
  // The copy neighbour: 512 threads x 30 registers -> 16 warps x 1024 = 16384 registers: 4 per SM (the
  // occupancy API's 4 in calibrate/data/h200/probe_smshare_alone.jsonl).
  const hw::BlockShape copy{512, 30, 0};
  EXPECT_EQ(hw::residency(h200, copy), 4);
  EXPECT_FALSE(hw::can_share(h200, copy, 1, gemm));  // 16384 + 64512 > 65536 registers
  EXPECT_TRUE(hw::can_share(h200, copy, 1, hw::BlockShape{128, 32, 0}));
  EXPECT_THROW(hw::residency(h200, hw::BlockShape{0, 32, 0}), std::invalid_argument);
  EXPECT_THROW(hw::residency(h200, hw::BlockShape{128, 32, 300000}), std::invalid_argument);
}

TEST(SmPool, HoldsAndReleasesInSmsAndTpcs) {
  sim::Simulation sim;
  hw::SmPool pool(sim, hw::SmLimits{8, 2, 65536, 2048, 233472, 32});
  const int a = pool.hold(3, 3, "a");
  EXPECT_EQ(pool.free_sms(), 5);
  EXPECT_EQ(pool.free_tpcs(), 1);
  EXPECT_THROW(pool.hold(2, 2, "b"), std::invalid_argument);  // one whole TPC is free
  int woke = 0;
  pool.on_release([&] { ++woke; });
  pool.release(a);
  EXPECT_EQ(woke, 1);
  EXPECT_EQ(pool.free_tpcs(), 4);
  EXPECT_THROW(pool.release(a), std::invalid_argument);
}

TEST(SmSharingMinimal, AloneTimeIsRoundsOfTilesAtTheRateOfTheGrid) {
  // No alone_time_us: 1 round of 2 x 128 x 128 x 1024 = 33554432 FLOP at r(4) = 6 TFLOP/s = 5.592405333 us.
  // The engine keeps whole picoseconds: 5.592405 us (1e-6 us = 1 ps of rounding).
  EXPECT_NEAR(run("neighbour: none"), 33554432.0 / 6e12 * 1e6, 1e-6);
  EXPECT_NEAR(run("alone_time_us: 100"), 100.0, 1e-9);
}

TEST(SmSharingMinimal, TilesRunInWavesOverTheTpcsTheNeighbourLeaves) {
  // 2 compute blocks on 2 TPCs: 2 TPCs free = 4 slots, one round: 100 us (r(4)/r(4) = 1).
  EXPECT_NEAR(run("alone_time_us: 100, neighbour: compute, blocks: 2"), 100.0, 1e-9);
  // 3 blocks on 3 TPCs: 1 TPC = 2 slots: 2 rounds of 100 x r(4)/r(2) = 100 x 6/8 = 75 us: 150 us.
  EXPECT_NEAR(run("alone_time_us: 100, neighbour: compute, blocks: 3"), 150.0, 1e-9);
  // The same 3 blocks packed on 2 TPCs (measured placement): 2 TPCs free, one round: 100 us.
  EXPECT_NEAR(run("alone_time_us: 100, neighbour: compute, blocks: 3, neighbour_tpcs: 2"), 100.0, 1e-9);
  // The neighbour ends at cover x alone = 0.5 x 100 = 50 us: tiles 0, 1 run 0..75 on 2 slots; at 50 us
  // 2 more slots start tiles 2, 3 at r(4): 50 + 100 = 150 us.
  EXPECT_NEAR(run("alone_time_us: 100, neighbour: compute, blocks: 3, cover: 0.5"), 150.0, 1e-9);
  // cover 0.2: slots join at 20 us: 20 + 100 = 120 us.
  EXPECT_NEAR(run("alone_time_us: 100, neighbour: compute, blocks: 3, cover: 0.2"), 120.0, 1e-9);
}

TEST(SmSharingMinimal, ACopyNeighbourStretchesTheGemmWhenHbmIsOversubscribed) {
  // GEMM bytes 2 (256 x 1024 x 2 + 256 x 256) = 1179648 B in 100 us = 11.79648 GB/s; with 995 GB/s of
  // copies: (995 + 11.79648) / 1000 = 1.00679648 -> 100.679648 us. With 900 GB/s: no stretch.
  EXPECT_NEAR(run("alone_time_us: 100, neighbour: copy, blocks: 2, neighbour_alone_GBps: 995"), 100.679648, 1e-9);
  EXPECT_NEAR(run("alone_time_us: 100, neighbour: copy, blocks: 2, neighbour_alone_GBps: 900"), 100.0, 1e-9);
}

TEST(SmSharingMinimal, BadInputIsNamed) {
  EXPECT_THROW(run("alone_time_us: 100, neighbour: copy, blocks: 2"), models::ParamError);
  EXPECT_THROW(run("alone_time_us: 100, neighbour: compute"), models::ParamError);
  EXPECT_THROW(run("alone_time_us: 100, neighbour: compute, blocks: 3, neighbour_tpcs: 1"), models::ParamError);
}

TEST(SmSharingMinimal, RoundTwoLateCtasAndHbmQueue) {
  // 256 x 512 x 1024 in 128 x 128 tiles: 8 tiles, grid 4, 100 us alone (2 rounds: 50 us a tile).
  // cluster_slots 2: L = 2 late CTAs; the resident 2 drain 6 tiles in 3 waves, the late tiles 1 more:
  // 4 waves of 50 x r(4) / r(2) = 50 x 6 / 8 = 37.5 us = 150 us.
  auto r2 = [](const std::string& extra) {
    return models::run_sm_sharing_case(minimal(),
                                       YAML::Load("{m: 256, n: 512, k: 1024, tile_m: 128, tile_n: 128, grid: 4, cluster: 2, "
                                                  "alone_time_us: 100, blocks: 2, " + extra + "}"),
                                       nullptr);
  };
  const auto c = r2("neighbour: compute, cluster_slots: 2");
  EXPECT_NEAR(c["predicted_us"].get<double>(), 150.0, 1e-9);
  EXPECT_EQ(c["waves"].get<int>(), 4);
  // Enough slots: no late CTA, the alone rounds at r(4).
  EXPECT_NEAR(r2("neighbour: compute, cluster_slots: 4")["predicted_us"].get<double>(), 100.0, 1e-9);
  // Copy at u = 0.5 of 1 TB/s with kappa 0.1: x (1 + 0.1 x 1) = 165 us.
  EXPECT_NEAR(r2("neighbour: copy, cluster_slots: 2, neighbour_alone_GBps: 500, hbm_queue_kappa: 0.1")["predicted_us"].get<double>(),
              165.0, 1e-9);
  EXPECT_THROW(r2("neighbour: copy, cluster_slots: 2, neighbour_alone_GBps: 500"), models::ParamError);
  EXPECT_THROW(r2("neighbour: copy, cluster_slots: 2, neighbour_alone_GBps: 1000, hbm_queue_kappa: 0.1"), models::ParamError);
  EXPECT_THROW(r2("neighbour: compute, cluster_slots: 2, cover: 1"), models::ParamError);  // 150 us > 100 us
}
