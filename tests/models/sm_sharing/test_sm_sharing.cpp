// The sm_sharing model and the SM pool (hw/sm_pool.hpp) on tests/models/sm_sharing/minimal-hw.yaml
// (8 SMs = 4 TPCs, r(n) = 10 - n TFLOP/s per SM, HBM 1 TB/s). Times derived by hand below.
#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include <limits>

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

// ---- Round 3: the GPC-aware engine (hw::SmMap, dispatch_placement, GpcPool, run_persistent) ----
namespace {
// 2 GPCs of 4 SMs (TPCs of 2): GPC 0 = SMs 0..3 (TPCs 0, 1), GPC 1 = SMs 4..7 (TPCs 2, 3); the dispatcher
// fills SM 5 first.
hw::SmMap tiny_map() {
  std::vector<nlohmann::json> rows;
  for (int s = 0; s < 8; ++s) {
    nlohmann::json r{{"sm", s}, {"gpc", s / 4}, {"tpc", s / 2}};
    if (s == 5) r["dispatch_first"] = 0;
    rows.push_back(r);
  }
  return hw::SmMap::from_rows(rows, "tiny");
}
double persistent_us(const hw::SmMap& map, const std::vector<int>& held, int tiles, int grid, int cluster,
                     bool whole_wave_wait = true, bool* whole_wave = nullptr,
                     std::function<double(int)> tile_time_s = [](int) { return 1e-6; }) {
  sim::Simulation sim;
  hw::GpcPool pool(sim, map);
  if (!held.empty()) pool.hold(held, "holder");
  hw::PersistentGemm k;
  k.tiles = tiles;
  k.grid = grid;
  k.cluster = cluster;
  k.label = "gemm";
  k.tile_time_s = std::move(tile_time_s);
  k.hand_out = hw::HandOut::reserve_one_after_drain;  // the rounds 3-6 rule these tests pin
  k.whole_wave_drain_wait = whole_wave_wait;
  double end = -1;
  hw::run_persistent(pool, k, [&](int, int, bool w) {
    end = sim.now();
    if (whole_wave) *whole_wave = w;
  });
  sim.run();
  return end * 1e6;
}
}  // namespace

TEST(SmMapRound3, DispatchFirstSmsThenRoundRobinOverGpcs) {
  const hw::SmMap m = tiny_map();
  EXPECT_EQ(m.gpcs(), 2);
  // SM 5 first; then each GPC's next TPC's first SM, GPC 0 then 1: 0, 4 (TPC 2's first SM; 5 is taken
  // but its TPC's first SM 4 is not), 2, 6; then the second SMs: 1, 3, 7.
  EXPECT_EQ(hw::dispatch_placement(m, 1), (std::vector<int>{5}));
  EXPECT_EQ(hw::dispatch_placement(m, 5), (std::vector<int>{5, 0, 4, 2, 6}));
  EXPECT_EQ(hw::dispatch_placement(m, 8).size(), 8u);
  EXPECT_EQ(hw::dispatch_placement(m, 20).size(), 8u);
  EXPECT_THROW(hw::dispatch_placement(m, -1), std::invalid_argument);
  // Clusters of 2 need two free SMs of one GPC: SM 5 held leaves 4 + 3 -> 4 + 2 slots.
  EXPECT_EQ(hw::cluster_slots(m, {5}, 2), 6);
  EXPECT_EQ(hw::cluster_slots(m, {5, 0}, 2), 4);
  EXPECT_EQ(hw::cluster_slots(m, {}, 4), 8);
  EXPECT_EQ(hw::cluster_slots(m, {5}, 4), 4);
}

TEST(SmMapRound3, H200MapReproducesTheMeasuredPlacements) {
  // hw/data/h200-sm-map.jsonl against the neighbour's alone %smid sets (calibrate/data/h200/
  // probe_smshare_alone*.jsonl): B = 4 on SMs 124, 126, 128, 130; B = 10 adds 125..131 (odd) and 0, 2.
  const hw::Hardware& h = models::load_hardware(test::kRoot + "/hw/h200-1gpu.yaml");
  const hw::SmMap m = hw::SmMap::from_rows(h.table("sm_map").rows, "sm_map");
  ASSERT_EQ(m.sms(), 132);
  EXPECT_EQ(m.gpcs(), 8);
  EXPECT_EQ(hw::dispatch_placement(m, 4), (std::vector<int>{124, 126, 128, 130}));
  auto b10 = hw::dispatch_placement(m, 10);
  std::sort(b10.begin(), b10.end());
  EXPECT_EQ(b10, (std::vector<int>{0, 2, 124, 125, 126, 127, 128, 129, 130, 131}));
  // 2-CTA cluster slots: 4 blocks on 4 GPCs leave 4 odd GPCs: 128 free SMs, 124 slots; 8 blocks: 124.
  EXPECT_EQ(hw::cluster_slots(m, hw::dispatch_placement(m, 4), 2), 124);
  EXPECT_EQ(hw::cluster_slots(m, hw::dispatch_placement(m, 8), 2), 124);
  EXPECT_EQ(hw::cluster_slots(m, hw::dispatch_placement(m, 10), 2), 120);
}

TEST(SmMapRound3, BadRowsAreNamed) {
  std::vector<nlohmann::json> rows{{{"sm", 0}, {"gpc", 0}, {"tpc", 0}}, {{"sm", 0}, {"gpc", 0}, {"tpc", 0}}};
  EXPECT_THROW(hw::SmMap::from_rows(rows, "f"), std::invalid_argument);  // SM 0 twice
  rows[1] = {{"sm", 1}, {"gpc", 1}, {"tpc", 0}};
  EXPECT_THROW(hw::SmMap::from_rows(rows, "f"), std::invalid_argument);  // TPC 0 in two GPCs
  rows[1] = {{"sm", 1}, {"tpc", 0}};
  try {
    hw::SmMap::from_rows(rows, "f.jsonl");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("f.jsonl line 2: 'gpc'"), std::string::npos) << e.what();
  }
}

TEST(SmMapRound3, PersistentGemmLateCtasKeepOneTileEach) {
  const hw::SmMap m = tiny_map();
  // Alone: 20 tiles over 8 CTAs, 1 us each: ceil(20 / 8) = 3 us.
  EXPECT_NEAR(persistent_us(m, {}, 20, 8, 2), 3.0, 1e-9);
  // SM 5 held: 6 slots, L = 2 late CTAs: the resident 6 drain 19 - 2 = 17 tiles in 3 us (6, 6, 5), the late
  // 2 run one tile each after: ceil(17 / 6) + ceil(2 / 6) = 4 us.
  EXPECT_NEAR(persistent_us(m, {5}, 19, 8, 2), 4.0, 1e-9);
  // 20 tiles: the drain of 18 is 3 whole waves of 6; without the round-6 wait 3 + 1 = 4 us (the round-3
  // rule), with it the late clusters start one tile later: 5 us (tests below).
  EXPECT_NEAR(persistent_us(m, {5}, 20, 8, 2, false), 4.0, 1e-9);
  // 8 tiles: 6 drained in 1 us, then the 2 late tiles: 2 us.
  EXPECT_NEAR(persistent_us(m, {5}, 8, 8, 2), 2.0, 1e-9);
  // Clusters of 4: SM 5 held leaves one whole GPC: 4 slots, L = 4: 18 - 4 = 14 tiles drained in
  // ceil(14 / 4) = 4 us (4, 4, 4, 2), + 1 = 5 us.
  EXPECT_NEAR(persistent_us(m, {5}, 18, 8, 4), 5.0, 1e-9);
  sim::Simulation sim;
  hw::GpcPool pool(sim, m);
  EXPECT_THROW(pool.hold({8}, "x"), std::invalid_argument);
  pool.hold({1}, "x");
  EXPECT_THROW(pool.hold({1}, "y"), std::invalid_argument);
  hw::PersistentGemm big;
  big.tiles = 1;
  big.grid = 8;
  big.cluster = 8;  // larger than every GPC (4 SMs)
  big.tile_time_s = [](int) { return 1e-6; };
  EXPECT_THROW(hw::run_persistent(pool, big, [](int, int, bool) {}), std::invalid_argument);
}

TEST(SmMapRound6, WholeWaveDrainOfAPersistentGridCostsOneMoreTileTime) {
  const hw::SmMap m = tiny_map();
  // SM 5 held: S = 6 slots (GPC 0: 4 free SMs, GPC 1: 3 -> one 2-CTA cluster), grid 8: L = 2 late CTAs.
  // 19 tiles: the drain of 17 ends on 6, 6, 5 (one slot idle in the last wave): no wait, 3 + 1 = 4 us.
  bool whole = true;
  EXPECT_NEAR(persistent_us(m, {5}, 19, 8, 2, true, &whole), 4.0, 1e-9);
  EXPECT_FALSE(whole);
  // 20 tiles: the drain of 18 is 3 whole waves ((20 - 8) mod 6 = 0): every resident CTA finds the hand-out
  // empty at 3 us; the late clusters start one tile later, at 4 us, and end at 5 us.
  EXPECT_NEAR(persistent_us(m, {5}, 20, 8, 2, true, &whole), 5.0, 1e-9);
  EXPECT_TRUE(whole);
  // 21 tiles: 19 drained in 6, 6, 6, 1 (4 us), + 1 = 5 us: 20 and 21 tiles take the same time.
  EXPECT_NEAR(persistent_us(m, {5}, 21, 8, 2, true, &whole), 5.0, 1e-9);
  EXPECT_FALSE(whole);
  // 26 tiles: (26 - 8) mod 6 = 0 again: 4 whole waves, the wait, the late tile: 6 us.
  EXPECT_NEAR(persistent_us(m, {5}, 26, 8, 2, true, &whole), 6.0, 1e-9);
  EXPECT_TRUE(whole);
  // Not persistent (tiles <= grid, one tile per CTA): 8 tiles on 8 CTAs drain one whole wave of 6 at 1 us
  // and the 2 late CTAs start at once: 2 us, no wait (as 2048x2048x8192 on the H200).
  EXPECT_NEAR(persistent_us(m, {5}, 8, 8, 2, true, &whole), 2.0, 1e-9);
  EXPECT_FALSE(whole);
  // Nothing late (alone): 16 tiles on 8 CTAs, 2 whole waves, 2 us: the wait is a delay of late clusters only.
  EXPECT_NEAR(persistent_us(m, {}, 16, 8, 2, true, &whole), 2.0, 1e-9);
  EXPECT_FALSE(whole);
  // The wait is one tile time as the whole grid runs it, tile_time_s(grid): tiles take 2 us with 8 CTAs
  // running, 1 us with fewer. 20 tiles: 3 waves at 6 CTAs (3 us), the wait tile_time_s(8) = 2 us, the late
  // tile at 2 CTAs (1 us): 6 us.
  auto t8 = [](int n) { return n >= 8 ? 2e-6 : 1e-6; };
  EXPECT_NEAR(persistent_us(m, {5}, 20, 8, 2, true, nullptr, t8), 6.0, 1e-9);
  // Charged once, at the first drain: grid 16 (L = 10 > S = 6), 22 tiles: the residents drain 12 = 2 whole
  // waves (2 us), the wait (1 us), 6 late CTAs run one tile (a whole wave too, no second wait: 1 us), the
  // last 4 one tile (1 us): 5 us.
  EXPECT_NEAR(persistent_us(m, {5}, 22, 16, 2, true, &whole), 5.0, 1e-9);
  EXPECT_TRUE(whole);
  EXPECT_NEAR(persistent_us(m, {5}, 22, 16, 2, false), 4.0, 1e-9);
}

TEST(SmSharingRound7, TheHandOutThroughTheModelOnAMinimalMachine) {
  // tests/models/sm_sharing/minimal-map-hw.yaml: the 8 SMs of tiny_map() (GPCs 0..3, 4..7; SM 5 first),
  // r(n) = 10 - n TFLOP/s per SM (no cap). A compute neighbour of 1 block holds SM 5: 3 cluster slots of the
  // grid's G = 4 clusters of 2; the late cluster is blockIdx 3, work id 3 (no late_cluster_work_ids row).
  // Round 7's hand-out (hw::HandOut::static_two_then_counter): cluster w runs units w, w + 4, then the counter.
  static const hw::Hardware h = models::load_hardware(test::kRoot + "/tests/models/sm_sharing/minimal-map-hw.yaml");
  auto run6 = [&](const std::string& shape) {
    return models::run_sm_sharing_case(h, YAML::Load("{" + shape + ", k: 1024, tile_m: 128, tile_n: 128, grid: 8, cluster: 2, "
                                                            "alone_time_us: 300, neighbour: compute, blocks: 1}"),
                                       nullptr);
  };
  // 20 tiles (m 640, n 512: 5 x 4) = 10 units, 3 rounds alone: a tile 100 us at r(8) = 2, 200 / (10 - n) us with
  // n CTAs running. Alone: units 0-3, 4-7 (100 us each), the counter's 8, 9 on 2 clusters (4 CTAs: 33.3 us):
  // 233.3 us, scaled to the measured 300 (x 9/7). Beside: units 0-2, 4-6 (6 CTAs: 50 us each), 8 and 9 on two
  // residents while the third exits and the late cluster starts unit 3 (50 us), then its unit 7 alone (2 CTAs:
  // 25 us): 175 us x 9/7 = 225 us.
  const auto w = run6("m: 640, n: 512");
  EXPECT_EQ(w["cta_slots"].get<int>(), 6);
  EXPECT_EQ(w["late_ctas"].get<int>(), 2);
  EXPECT_FALSE(w["whole_wave_drain"].get<bool>());
  EXPECT_NEAR(w["predicted_us"].get<double>(), 225.0, 1e-5);
  // 19 tiles (m 2432, n 128: 19 x 1) are 10 units of 2 as well (no cluster shape given): the same 225 us.
  const auto n = run6("m: 2432, n: 128");
  EXPECT_NEAR(n["predicted_us"].get<double>(), 225.0, 1e-5);
  // One tile per CTA (8 tiles, m 256, n 512), alone 100 us (one round): 3 units (50 us), the late one (25 us).
  const auto np = models::run_sm_sharing_case(
      h, YAML::Load("{m: 256, n: 512, k: 1024, tile_m: 128, tile_n: 128, grid: 8, cluster: 2, alone_time_us: 100, "
                    "neighbour: compute, blocks: 1}"),
      nullptr);
  EXPECT_FALSE(np["whole_wave_drain"].get<bool>());
  EXPECT_NEAR(np["predicted_us"].get<double>(), 75.0, 1e-5);
}

TEST(SmMapRound6, TileGridPaddedToWholeClusters) {
  // 2688x4608x8192 in nvjet 256x128 tiles with a 1x2 cluster: ceil(4608 / 256) x ceil(2688 / 128) = 18 x 21
  // = 378 tiles; the cluster pairs tiles along the 21: 18 x 22 = 396 tiles, 396 / 2 = 198 cluster units.
  const hw::ClusterTileGrid p = hw::pad_to_clusters(18, 21, 1, 2);
  EXPECT_EQ(p.padded_m, 18);
  EXPECT_EQ(p.padded_n, 22);
  EXPECT_EQ(p.real_tiles(), 378);
  EXPECT_EQ(p.tiles(), 396);
  EXPECT_EQ(p.units(), 198);
  // An even grid along the cluster is unchanged: 3072x4608x8192 in 192x192 tiles, 2x1: 24 x 16 = 384, 192 units;
  // 3456x3840x8192 in 192x192 tiles, 4x2: 20 x 18 = 360, 45 units.
  const hw::ClusterTileGrid e = hw::pad_to_clusters(24, 16, 2, 1);
  EXPECT_EQ(e.tiles(), 384);
  EXPECT_EQ(e.real_tiles(), 384);
  EXPECT_EQ(e.units(), 192);
  EXPECT_EQ(hw::pad_to_clusters(20, 18, 4, 2).tiles(), 360);
  EXPECT_EQ(hw::pad_to_clusters(20, 18, 4, 2).units(), 45);
  // A 2x1 cluster pads M (the first dimension, ceil(n / tile_m)): 23 x 17 -> 24 x 17 = 408 tiles, 204 units;
  // the same grid with 1x2 pads the other side: 23 x 18 = 414.
  const hw::ClusterTileGrid m = hw::pad_to_clusters(23, 17, 2, 1);
  EXPECT_EQ(m.padded_m, 24);
  EXPECT_EQ(m.padded_n, 17);
  EXPECT_EQ(m.tiles(), 408);
  EXPECT_EQ(m.units(), 204);
  EXPECT_EQ(hw::pad_to_clusters(23, 17, 1, 2).tiles(), 414);
  // A 1x1 cluster pads nothing.
  EXPECT_EQ(hw::pad_to_clusters(23, 17, 1, 1).tiles(), 391);
  EXPECT_THROW(hw::pad_to_clusters(0, 17, 1, 2), std::invalid_argument);
  EXPECT_THROW(hw::pad_to_clusters(23, 17, 0, 2), std::invalid_argument);
  // The padded tile costs a tile time on the engine (tiny_map, SM 5 held: S = 6, L = 2, 1 us tiles): a 3 x 5 grid
  // in 1x2 clusters is 3 x 6 = 18 tiles: the residents drain 16 (6, 6, 4: 3 us), the late tile: 4 us; the
  // unpadded 15 drain 13 (6, 6, 1: 3 us) and end at 4 us too, but alone 18 tiles take 3 rounds, 15 take 2.
  EXPECT_NEAR(persistent_us(tiny_map(), {5}, int(hw::pad_to_clusters(3, 5, 1, 2).tiles()), 8, 2), 4.0, 1e-9);
  EXPECT_NEAR(persistent_us(tiny_map(), {}, int(hw::pad_to_clusters(3, 5, 1, 2).tiles()), 8, 2), 3.0, 1e-9);
  EXPECT_NEAR(persistent_us(tiny_map(), {}, 15, 8, 2), 2.0, 1e-9);
}

TEST(SmSharingRound6, ClusterShapePadsTheTilesTheModelSchedules) {
  // tests/models/sm_sharing/minimal-map-hw.yaml as above: a compute neighbour of 1 block holds SM 5: S = 6, L = 2.
  static const hw::Hardware h = models::load_hardware(test::kRoot + "/tests/models/sm_sharing/minimal-map-hw.yaml");
  auto run6 = [&](const std::string& shape) {
    return models::run_sm_sharing_case(h, YAML::Load("{" + shape + ", k: 1024, tile_m: 128, tile_n: 128, grid: 8, cluster: 2, "
                                                            "alone_time_us: 300, neighbour: compute, blocks: 1}"),
                                       nullptr);
  };
  // m 640, n 384: 3 x 5 = 15 tiles. Without the cluster's shape: 8 units of 2, 2 rounds alone (300 us, scale 1), a
  // tile 150 us at r(8) = 2, 300 / (10 - n) us with n running: units 0-2, 4-6 at 6 CTAs (2 x 75 us), the counter
  // starts at 8 = U, so the residents exit and the late cluster runs units 3, 7 at 2 CTAs (2 x 37.5 us): 225 us.
  const auto u = run6("m: 640, n: 384");
  EXPECT_EQ(u["tiles"].get<int>(), 15);
  EXPECT_EQ(u["scheduled_tiles"].get<int>(), 15);
  EXPECT_FALSE(u.contains("cluster_units"));
  EXPECT_NEAR(u["predicted_us"].get<double>(), 225.0, 1e-5);
  // With cluster_m 1, cluster_n 2: 3 x 6 = 18 tiles, 9 units, 3 rounds alone: a tile 100 us at r(8), 200 / (10 - n)
  // with n CTAs. Alone: 100 + 100 + the counter's unit 8 at 2 CTAs (25 us) = 225 us, scaled to 300 (x 4/3). Beside:
  // units 0-2, 4-6 at 6 CTAs (2 x 50 us); unit 8 on one resident beside the late cluster's unit 3 (4 CTAs: 33.3 us);
  // its unit 7 at 2 CTAs (25 us): 158.3 us x 4/3 = 211.1 us.
  const auto p = run6("m: 640, n: 384, cluster_m: 1, cluster_n: 2");
  EXPECT_EQ(p["tiles"].get<int>(), 15);
  EXPECT_EQ(p["scheduled_tiles"].get<int>(), 18);
  EXPECT_EQ(p["cluster_units"].get<int>(), 9);
  EXPECT_FALSE(p["whole_wave_drain"].get<bool>());
  EXPECT_NEAR(p["predicted_us"].get<double>(), 633.3333333 / 3, 1e-5);
  // m 2432, n 128: 1 x 19 tiles; 1x2 pads it to 1 x 20 = 20 tiles, 10 units, 3 rounds alone: 225 us, as the
  // 20-tile case of the test above.
  const auto w = run6("m: 2432, n: 128, cluster_m: 1, cluster_n: 2");
  EXPECT_EQ(w["tiles"].get<int>(), 19);
  EXPECT_EQ(w["scheduled_tiles"].get<int>(), 20);
  EXPECT_EQ(w["cluster_units"].get<int>(), 10);
  EXPECT_FALSE(w["whole_wave_drain"].get<bool>());
  EXPECT_NEAR(w["predicted_us"].get<double>(), 225.0, 1e-5);
  // A 2x1 cluster pads M (ceil(n / tile_m)): 1 x 19 -> 2 x 19 = 38 tiles, 19 units.
  const auto m2 = run6("m: 2432, n: 128, cluster_m: 2, cluster_n: 1");
  EXPECT_EQ(m2["tiles"].get<int>(), 19);
  EXPECT_EQ(m2["scheduled_tiles"].get<int>(), 38);
  EXPECT_EQ(m2["cluster_units"].get<int>(), 19);
  // An even grid is unchanged: m 640, n 512 is 4 x 5 tiles (4 along n / tile_m); a 2x1 cluster pairs the 4:
  // 20 tiles, 225 us as without a shape (the round-7 test above).
  const auto e = run6("m: 640, n: 512, cluster_m: 2, cluster_n: 1");
  EXPECT_EQ(e["scheduled_tiles"].get<int>(), 20);
  EXPECT_NEAR(e["predicted_us"].get<double>(), 225.0, 1e-5);
  // The shape must be whole and match the cluster's CTAs.
  EXPECT_THROW(run6("m: 640, n: 384, cluster_m: 1"), models::ParamError);
  EXPECT_THROW(run6("m: 640, n: 384, cluster_m: 2, cluster_n: 2"), models::ParamError);
}

TEST(SmSharingRound3, TheH200FileDrivesEveryMechanismWithoutCaseKeys) {
  const hw::Hardware& h = models::load_hardware(test::kRoot + "/hw/h200-1gpu.yaml");
  auto run3 = [&](const std::string& extra) {
    return models::run_sm_sharing_case(
        h, YAML::Load("{m: 2048, n: 2048, k: 8192, tile_m: 256, tile_n: 128, grid: 128, cluster: 2, alone_time_us: 100, " + extra + "}"),
        nullptr);
  };
  // 128 tiles on grid 128: B = 4 leaves 124 slots, 4 late CTAs: two tile times, the first at r(124), the
  // late one at r(4) (r(n) = r0 - beta n of hw/h200-1gpu.yaml, tile 100 us at r(128)).
  const auto c = run3("neighbour: compute, blocks: 4");
  EXPECT_EQ(c["cta_slots"].get<int>(), 124);
  EXPECT_EQ(c["late_ctas"].get<int>(), 4);
  // r(n) = min(r0 - beta n, tile_rate_max): the late tile at r(4) runs at the cap (round 5).
  const double r0 = h.get("smshare.tile_rate_at_zero"), beta = h.get("smshare.tile_rate_slope");
  const double cap = h.get("smshare.tile_rate_max");
  ASSERT_LT(cap, r0 - beta * 4);  // the cap binds at 4 CTAs
  ASSERT_GT(cap, r0 - beta * 124);  // and not at 124
  auto r = [&](int n) { return std::min(r0 - beta * n, cap); };
  EXPECT_NEAR(c["predicted_us"].get<double>(), 100 * r(128) / r(124) + 100 * r(128) / cap, 1e-3);
  // A copy neighbour of the same B: the same SM time stretched by 1 + kappa u / (1 - u).
  const auto cp = run3("neighbour: copy, blocks: 4, neighbour_alone_GBps: 1981.595");
  const double u = 1981.595e9 / h.get("memory.fabric_bandwidth"), kappa = h.get("smshare.hbm_queue_kappa");
  EXPECT_NEAR(cp["predicted_us"].get<double>(), c["predicted_us"].get<double>() * (1 + kappa * u / (1 - u)), 1e-6);
  EXPECT_THROW(run3("neighbour: copy, blocks: 4, neighbour_alone_GBps: 4000"), models::ParamError);  // u >= 1
}

TEST(SmSharingRound3, GemmBesideIsNormalisedToTheAloneTimeAndNamesItsKeys) {
  const models::SmShareMachine m = models::sm_share_machine(models::load_hardware(test::kRoot + "/hw/h200-1gpu.yaml"));
  models::GemmOnSms g;
  g.tiles = g.grid = 264;  // more CTAs than SMs, one tile each: alone 2 waves of 132
  g.cluster = 1;
  g.block = {384, 168, 213188};
  models::SmNeighbour none;
  const auto alone = models::gemm_beside(m, g, none, 1e-4);
  EXPECT_NEAR(alone.slowdown(), 1.0, 1e-12);
  EXPECT_EQ(alone.held_sms, 0);
  models::SmNeighbour nb;
  nb.blocks = 16;
  nb.block = {640, 32, 0};
  const auto b = models::gemm_beside(m, g, nb, 1e-4);
  EXPECT_EQ(b.held_sms, 16);
  EXPECT_EQ(b.slots_at_launch, 116);
  EXPECT_EQ(b.late_ctas, 148);
  auto r = [&](int n) { return std::min(m.hw.tile_rate_at_zero - m.hw.tile_rate_slope * n, m.hw.tile_rate_max); };
  EXPECT_EQ(r(32), m.hw.tile_rate_max);  // 32 CTAs: the cap, not the line
  // 1e-7: the engine's clock is whole picoseconds, ~1e-8 of a 35 us tile.
  EXPECT_NEAR(b.slowdown(), (2 / r(116) + 1 / r(32)) / (2 / r(132)), 1e-7);
  EXPECT_NEAR(models::gemm_beside(m, g, nb, 3e-3).slowdown(), b.slowdown(), 1e-7);  // a ratio: any alone time
  // A neighbour block small enough to sit beside a GEMM block holds nothing.
  g.block = {128, 32, 1000};
  nb.block = {128, 32, 0};
  EXPECT_EQ(models::gemm_beside(m, g, nb, 1e-4).held_sms, 0);
  nb.hbm_Bps = 4000e9;  // above the HBM capacity
  try {
    models::gemm_beside(m, g, nb, 1e-4);
    FAIL() << "u >= 1 accepted";
  } catch (const models::ParamError& e) {
    EXPECT_EQ(e.key(), "neighbour_alone_GBps");
  }
  g.grid = 0;
  EXPECT_THROW(models::gemm_beside(m, g, nb, 1e-4), models::ParamError);
}

TEST(SmSharingRound5, TheTileRateCapIsOptionalAndOnlyBindsBelowTheLine) {
  models::SmSharingHw h;
  h.tile_rate_at_zero = 7.8e12;
  h.tile_rate_slope = 0.0124e12;
  EXPECT_DOUBLE_EQ(h.tile_rate(4), 7.8e12 - 4 * 0.0124e12);  // no cap: the line
  h.tile_rate_max = 7.06e12;
  EXPECT_DOUBLE_EQ(h.tile_rate(4), 7.06e12);
  EXPECT_DOUBLE_EQ(h.tile_rate(132), 7.8e12 - 132 * 0.0124e12);
}

TEST(SmSharingRound5, ClusterSlotsBesideANeighbourMatchRun9sResidencyProbe) {
  // probe_smshare --mode clusterres (run 9, calibrate/data/h200/probe_smshare_clusterres_r5.jsonl): a
  // 2-CTA-cluster kernel of 132 CTAs, one per SM, beside B neighbour blocks; CTAs resident at launch for
  // B = 2, 4, 6, 8, 12, 16, 20, 28, 32 (both neighbours, 3 launches each, all equal but one copy B = 2 launch).
  const models::SmShareMachine m = models::sm_share_machine(models::load_hardware(test::kRoot + "/hw/h200-1gpu.yaml"));
  const std::vector<std::pair<int, int>> measured{{2, 128}, {4, 124}, {6, 124}, {8, 124}, {12, 116},
                                                  {16, 108}, {20, 108}, {28, 100}, {32, 92}};
  for (auto [b, resident] : measured)
    EXPECT_EQ(hw::cluster_slots(m.map, hw::dispatch_placement(m.map, b), 2), resident) << "B = " << b;
}

TEST(SmMapRound7, TheHandOutReproducesTheMeasuredWaveCounts) {
  // hw/h100-1gpu.yaml's sm_map and late_cluster_work_ids; grid 132 in clusters of 2 (G = 66), 1 us per unit at
  // any occupancy. The unit times the H100 took beside B = 2, 3, 4 blocks (tile-time probe, runs 15-16:
  // calibrate/data/h100/tiletimes_r15_r16_waves.txt): U = 128 units: 3, 3, 4 (the late clusters 65, 56, 64, 55:
  // 56 and 55 have a second unit); U = 192: 4, 4, 5; U = 512: 9 (B = 2), 10 (B = 4).
  const hw::Hardware& h = models::load_hardware(test::kRoot + "/hw/h100-1gpu.yaml");
  const hw::SmMap m = hw::SmMap::from_rows(h.table("sm_map").rows, "sm_map");
  std::vector<int> ids;
  for (const auto& x : h.table("late_cluster_work_ids").rows.at(0)["late_work_ids"]) ids.push_back(x.get<int>());
  auto units = [&](int b, int u, bool measured_ids) {
    sim::Simulation sim;
    hw::GpcPool pool(sim, m);
    pool.hold(hw::dispatch_placement(m, b), "neighbour");
    hw::PersistentGemm k;
    k.tiles = 2 * u;
    k.grid = 132;
    k.cluster = 2;
    k.label = "gemm";
    k.tile_time_s = [](int) { return 1e-6; };
    if (measured_ids) k.late_work_ids = ids;
    double end = -1;
    hw::run_persistent(pool, k, [&](int, int, bool) { end = sim.now(); });
    sim.run();
    return end * 1e6;
  };
  EXPECT_NEAR(units(2, 128, true), 3.0, 1e-5);
  EXPECT_NEAR(units(3, 128, true), 3.0, 1e-5);
  EXPECT_NEAR(units(4, 128, true), 4.0, 1e-5);
  EXPECT_NEAR(units(4, 128, false), 3.0, 1e-5);  // late = the highest work ids, 1 unit each: not what the GPU did
  EXPECT_NEAR(units(2, 192, true), 4.0, 1e-5);
  EXPECT_NEAR(units(3, 192, true), 4.0, 1e-5);
  EXPECT_NEAR(units(4, 192, true), 5.0, 1e-5);
  EXPECT_NEAR(units(2, 512, true), 9.0, 1e-5);
  EXPECT_NEAR(units(4, 512, true), 10.0, 1e-5);
  // Bad work ids are refused.
  sim::Simulation sim;
  hw::GpcPool pool(sim, m);
  hw::PersistentGemm k;
  k.tiles = 256;
  k.grid = 132;
  k.cluster = 2;
  k.tile_time_s = [](int) { return 1e-6; };
  k.late_work_ids = {65, 65};
  EXPECT_THROW(hw::run_persistent(pool, k, [](int, int, bool) {}), std::invalid_argument);
  k.late_work_ids = {66};
  EXPECT_THROW(hw::run_persistent(pool, k, [](int, int, bool) {}), std::invalid_argument);
  k.late_work_ids = {};
  k.grid = 131;  // not a whole number of clusters
  EXPECT_THROW(hw::run_persistent(pool, k, [](int, int, bool) {}), std::invalid_argument);
}

TEST(SmMapRound7, ASlotFreedAtLaunchGoesToTheNextCluster) {
  // tiny_map, SM 5 held: 3 cluster slots for G = 4 clusters of 2; 4 tiles = U = 2 units < G. The late cluster
  // (blockIdx 3) has work id 1; blockIdx 0, 1, 2 take 0, 2, 3. Clusters 1 and 2 have no unit and exit as they
  // start, so the late cluster starts at once: everything ends after one unit (1 us), not two.
  sim::Simulation sim;
  hw::GpcPool pool(sim, tiny_map());
  pool.hold({5}, "neighbour");
  hw::PersistentGemm k;
  k.tiles = 4;
  k.grid = 8;
  k.cluster = 2;
  k.tile_time_s = [](int) { return 1e-6; };
  k.late_work_ids = {1};
  double end = -1;
  int late = -1;
  hw::run_persistent(pool, k, [&](int, int l, bool) {
    end = sim.now();
    late = l;
  });
  sim.run();
  EXPECT_NEAR(end * 1e6, 1.0, 1e-5);
  EXPECT_EQ(late, 2);
}

TEST(SmMapRound7, AUnitsRateFollowsTheCtasRunning) {
  // tiny_map, SM 5 held until 0.5 us: 3 clusters of 2 run units 0..2, the late cluster (unit 3) starts when SM 5
  // comes back; a unit lasts n / 6 us with n CTAs running. Fluid progress: the residents do half a unit by 0.5 us
  // (n = 6), then 8 CTAs run (0.75 unit/us): they end at 0.5 + 0.5 / 0.75 = 1.1667 us, when the late cluster has
  // done 0.5; alone (n = 2, 3 units/us) it finishes the rest by 1.3333 us. A rate kept from each unit's start
  // would end the late cluster at 0.5 + 8 / 6 = 1.8333 us.
  sim::Simulation sim;
  hw::GpcPool pool(sim, tiny_map());
  const int id = pool.hold({5}, "neighbour");
  sim.at(0.5e-6, [&pool, id] { pool.release(id); });
  hw::PersistentGemm k;
  k.tiles = 8;
  k.grid = 8;
  k.cluster = 2;
  k.tile_time_s = [](int n) { return n / 6.0 * 1e-6; };
  double end = -1;
  hw::run_persistent(pool, k, [&](int, int, bool) { end = sim.now(); });
  sim.run();
  EXPECT_NEAR(end * 1e6, 4.0 / 3.0, 1e-5);
}

TEST(SmSharingRound7, BadLateTablesAndGridsAreNamed) {
  const std::string map = test::kRoot + "/tests/models/sm_sharing/minimal-sm-map.jsonl";
  auto machine_with = [&](const std::string& table) {
    const std::string t = test::write_tmp("late.jsonl", table);
    std::string yaml = test::read_file(test::kRoot + "/tests/models/sm_sharing/minimal-map-hw.yaml");
    yaml.replace(yaml.find("file: minimal-sm-map.jsonl"), std::string("file: minimal-sm-map.jsonl").size(), "file: " + map);
    yaml += "  late_cluster_work_ids: {file: " + t + ", kind: derived, source: \"test value\"}\n";
    return models::load_hardware(test::write_tmp("hw.yaml", yaml));
  };
  auto error_of = [&](const std::string& table) {
    try {
      (void)models::sm_share_machine(machine_with(table));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{\"clusters\": 4, \"cluster_ctas\": 2, \"late_work_ids\": [3, 1], \"extra\": 1}\n").find("unknown key 'extra'"),
            std::string::npos);
  EXPECT_NE(error_of("{\"clusters\": 4, \"cluster_ctas\": 2, \"late_work_ids\": [4]}\n").find("distinct integers in 0..3"),
            std::string::npos);
  EXPECT_NE(error_of("{\"clusters\": 4, \"cluster_ctas\": 2, \"late_work_ids\": [1, 1]}\n").find("distinct"), std::string::npos);
  EXPECT_EQ(error_of("{\"clusters\": 4, \"cluster_ctas\": 2, \"late_work_ids\": [3, 1]}\n"), "no error");
  // A grid that is not a whole number of clusters, and a neighbour that never lets the GEMM start: named keys.
  const models::SmShareMachine m = models::sm_share_machine(machine_with("{\"clusters\": 4, \"cluster_ctas\": 2, \"late_work_ids\": [3]}\n"));
  models::GemmOnSms g;
  g.tiles = 8;
  g.grid = 7;
  g.cluster = 2;
  g.block = {384, 168, 213188};
  models::SmNeighbour none;
  try {
    (void)models::gemm_beside(m, g, none, 1e-4);
    ADD_FAILURE() << "no error";
  } catch (const models::ParamError& e) {
    EXPECT_EQ(e.key(), "grid") << e.what();
  }
  g.grid = 8;
  models::SmNeighbour all;
  all.blocks = 8;
  all.block = {640, 32, 0};
  try {
    (void)models::gemm_beside(m, g, all, 1e-4);
    ADD_FAILURE() << "no error";
  } catch (const models::ParamError& e) {
    EXPECT_EQ(e.key(), "blocks") << e.what();
    EXPECT_NE(std::string(e.what()).find("never finishes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(models::gemm_beside(m, g, none, 1e-4).late_work_ids_source.rfind("measured: ", 0), 0u);
}

TEST(SmSharingRound9, AKernelsOwnHbmCoefficientFromTheTable) {
  // hw/h100-1gpu.yaml's hbm_queue_kappa_by_kernel: a copy neighbour stretches a case naming a listed kernel by
  // 1 + kappa_kernel u / (1 - u), and any other case by the machine's smshare.hbm_queue_kappa.
  const hw::Hardware& h = models::load_hardware(test::kRoot + "/hw/h100-1gpu.yaml");
  const std::string base = "{m: 3328, n: 3072, k: 8192, tile_m: 320, tile_n: 128, grid: 132, cluster: 2, cluster_m: 1, cluster_n: 2, "
                           "alone_time_us: 209.792, neighbour: copy, blocks: 40, neighbour_alone_GBps: 2400";
  const auto with = models::run_sm_sharing_case(h, YAML::Load(base + ", kernel: nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT}"), nullptr);
  const auto without = models::run_sm_sharing_case(h, YAML::Load(base + "}"), nullptr);
  const auto other = models::run_sm_sharing_case(h, YAML::Load(base + ", kernel: nvjet_not_listed}"), nullptr);
  const double u = 2400.0 / (h.get("memory.fabric_bandwidth") / 1e9);
  double kappa = -1;
  for (const auto& r : h.table("hbm_queue_kappa_by_kernel").rows)
    if (r["kernel"] == "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT") kappa = r["kappa"].get<double>();
  ASSERT_GT(kappa, 0.1);
  EXPECT_NEAR(with["hbm_stretch"].get<double>(), 1 + kappa * u / (1 - u), 1e-9);
  EXPECT_NEAR(without["hbm_stretch"].get<double>(), 1 + h.get("smshare.hbm_queue_kappa") * u / (1 - u), 1e-9);
  EXPECT_NEAR(other["hbm_stretch"].get<double>(), without["hbm_stretch"].get<double>(), 1e-12);
  EXPECT_NEAR(with["predicted_us"].get<double>() / with["hbm_stretch"].get<double>(),
              without["predicted_us"].get<double>() / without["hbm_stretch"].get<double>(), 1e-6);
  EXPECT_NE(with["hbm_queue_kappa_source"].get<std::string>().find("h100-kappa-by-kernel.jsonl"), std::string::npos);
  // A kernel the table lacks falls back to the machine's value, and the source says so (a misspelt name is visible).
  EXPECT_NE(other["hbm_queue_kappa_source"].get<std::string>().find("nvjet_not_listed is not in"), std::string::npos);
  EXPECT_EQ(without["hbm_queue_kappa_source"].get<std::string>().find("is not in"), std::string::npos);
}

TEST(SmSharingHbm, TheCopyStretchesOnlyThePartOfTheGemmRunBesideIt) {
  // The HBM stretch 1 + kappa u / (1 - u) acts while the copy runs (BesideResult::time_s): a copy that outlasts the
  // GEMM stretches all of it; one that ends first only the part beside it; a GEMM that waits for a copy holding
  // every SM runs unstretched after it (it had been the wait and the run, both stretched).
  const hw::Hardware& h = models::load_hardware(test::kRoot + "/hw/h100-1gpu.yaml");
  const std::string base = "{m: 3328, n: 3072, k: 8192, tile_m: 320, tile_n: 128, grid: 132, cluster: 2, cluster_m: 1, cluster_n: 2, "
                           "alone_time_us: 209.792, neighbour: copy, neighbour_alone_GBps: 2400, kernel: nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT";
  auto run = [&](const std::string& extra) { return models::run_sm_sharing_case(h, YAML::Load(base + extra + "}"), nullptr); };
  const auto whole = run(", blocks: 40, cover: 20");
  const double s = whole["hbm_stretch"].get<double>();
  ASSERT_GT(s, 1.2);
  const auto same_sms = models::run_sm_sharing_case(
      h, YAML::Load(std::string("{m: 3328, n: 3072, k: 8192, tile_m: 320, tile_n: 128, grid: 132, cluster: 2, cluster_m: 1, "
                                "cluster_n: 2, alone_time_us: 209.792, neighbour: compute, blocks: 40, cover: 20}")), nullptr);
  const double pool_us = same_sms["predicted_us"].get<double>();  // the SM pool alone: the compute neighbour holds the same SMs
  EXPECT_NEAR(whole["predicted_us"].get<double>(), pool_us * s, 1e-6 * pool_us);
  // A copy lasting a quarter of the GEMM's alone time ends long before the GEMM: between the pool time and pool x stretch.
  const auto short_copy = run(", blocks: 40, cover: 0.25");
  const double l_us = 0.25 * 209.792;
  EXPECT_LT(short_copy["predicted_us"].get<double>(), pool_us * s - 1.0);
  EXPECT_GT(short_copy["predicted_us"].get<double>(), 209.792);
  // Its SM part is the pool beside a neighbour that leaves at l_us; the stretch adds at most (s - 1) x l_us.
  const auto short_compute = models::run_sm_sharing_case(
      h, YAML::Load(std::string("{m: 3328, n: 3072, k: 8192, tile_m: 320, tile_n: 128, grid: 132, cluster: 2, cluster_m: 1, "
                                "cluster_n: 2, alone_time_us: 209.792, neighbour: compute, blocks: 40, cover: 0.25}")), nullptr);
  EXPECT_GT(short_copy["predicted_us"].get<double>(), short_compute["predicted_us"].get<double>());
  // (during l_us the GEMM does l_us / s of work instead of l_us: at most l_us (1 - 1 / s) later)
  EXPECT_LE(short_copy["predicted_us"].get<double>(), short_compute["predicted_us"].get<double>() + (1 - 1 / s) * l_us + 1e-6);
  // A copy on every SM for one alone time: the GEMM waits for it, then runs alone, unstretched.
  const auto all_sms = run(", blocks: 264, cover: 1");
  EXPECT_NEAR(all_sms["predicted_us"].get<double>(), 2 * 209.792, 1e-6 * 209.792);
}

TEST(SmSharingHbm, ACopyWithoutItsBandwidthNamesTheKey) {
  const hw::Hardware& h = models::load_hardware(test::kRoot + "/hw/h100-1gpu.yaml");
  try {
    (void)models::run_sm_sharing_case(
        h, YAML::Load("{m: 3328, n: 3072, k: 8192, tile_m: 320, tile_n: 128, grid: 132, cluster: 2, alone_time_us: 209.792, "
                      "neighbour: copy, blocks: 40}"), nullptr);
    ADD_FAILURE() << "a copy neighbour without neighbour_alone_GBps ran";
  } catch (const models::ParamError& e) {
    EXPECT_EQ(e.key(), "neighbour_alone_GBps");
    EXPECT_NE(std::string(e.what()).find("needs neighbour_alone_GBps"), std::string::npos) << e.what();
  }
}

TEST(SmMapRound7, UnitsRunSlowFactorTimesSlowerUntilSlowUntil) {
  // The tiny map (8 SMs, 2 GPCs of 4), grid 8 in clusters of 2, 16 tiles (8 units: 2 per cluster, both static),
  // 1 us per unit: 2 us alone. Slowed x2 until 1 us: the first unit is half done at 1 us and ends at 1.5 us at full
  // speed, the second at 2.5 us.
  const hw::SmMap m = tiny_map();
  auto run = [&](double factor, double until_s, hw::HandOut hand_out = hw::HandOut::static_two_then_counter) {
    sim::Simulation sim;
    hw::GpcPool pool(sim, m);
    hw::PersistentGemm k;
    k.tiles = 16;
    k.grid = 8;
    k.cluster = 2;
    k.label = "gemm";
    k.tile_time_s = [](int) { return 1e-6; };
    k.hand_out = hand_out;
    k.slow_factor = factor;
    k.slow_until_s = until_s;
    double end = -1;
    hw::run_persistent(pool, k, [&](int, int, bool) { end = sim.now(); });
    sim.run();
    return end * 1e6;
  };
  EXPECT_NEAR(run(1, 0), 2.0, 1e-6);
  EXPECT_NEAR(run(2, 1e-6), 2.5, 1e-6);
  EXPECT_NEAR(run(2, 10e-6), 4.0, 1e-6);  // slowed for the whole run
  EXPECT_NEAR(run(2, std::numeric_limits<double>::infinity()), 4.0, 1e-6);
  EXPECT_THROW(run(0.5, 1e-6), std::invalid_argument);
  EXPECT_THROW(run(2, 1e-6, hw::HandOut::reserve_one_after_drain), std::invalid_argument);  // the default hand-out only
}

TEST(SmSharingHbm, AGemmWhoseBlocksFitBesideTheCopyIsStretchedOnlyWhileItRuns) {
  // A GEMM block small enough to share an SM with the copy's blocks (hw::can_share): no SM is held, the SM pool
  // leaves the GEMM its alone time, and the copy's stretch s acts for its length L only: L + (alone - L / s) when
  // the stretched GEMM outlasts it, alone x s when it does not.
  const hw::Hardware& h = models::load_hardware(test::kRoot + "/hw/h100-1gpu.yaml");
  auto run = [&](double cover) {
    return models::run_sm_sharing_case(
        h, YAML::Load("{m: 3328, n: 3072, k: 8192, tile_m: 320, tile_n: 128, grid: 132, cluster: 2, cluster_m: 1, "
                      "cluster_n: 2, gemm_regs: 100, gemm_smem_bytes: 1000, alone_time_us: 200, neighbour: copy, "
                      "blocks: 8, neighbour_alone_GBps: 2000, cover: " + std::to_string(cover) + "}"), nullptr);
  };
  const auto long_copy = run(20), short_copy = run(0.5);
  ASSERT_EQ(long_copy["neighbour_sms"].get<int>(), 8);
  const double s = long_copy["hbm_stretch"].get<double>();
  ASSERT_GT(s, 1.1);
  EXPECT_NEAR(long_copy["predicted_us"].get<double>(), 200 * s, 1e-6);
  EXPECT_NEAR(short_copy["predicted_us"].get<double>(), 100 + (200 - 100 / s), 1e-6);
}

TEST(SmSharingHbm, ACopyNeedsAMachineOrAKernelCoefficient) {
  // hw/h100-1gpu.yaml without smshare.hbm_queue_kappa: a copy neighbour runs for a kernel its per-kernel table lists
  // and is refused, naming both sources of a coefficient, for one it does not.
  std::string text = test::read_file(test::kRoot + "/hw/h100-1gpu.yaml");
  const size_t at = text.find("  hbm_queue_kappa: {");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);
  for (size_t p; (p = text.find("file: data/")) != std::string::npos;) text.replace(p, 11, "file: " + test::kRoot + "/hw/data/");
  const hw::Hardware h = models::load_hardware(test::write_tmp("h100-no-kappa.yaml", text));
  const std::string base = "{m: 3328, n: 3072, k: 8192, tile_m: 320, tile_n: 128, grid: 132, cluster: 2, alone_time_us: 209.792, "
                           "neighbour: copy, blocks: 40, neighbour_alone_GBps: 2400";
  EXPECT_GT(models::run_sm_sharing_case(h, YAML::Load(base + ", kernel: nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT}"), nullptr)
                ["hbm_stretch"].get<double>(), 1.2);
  try {
    (void)models::run_sm_sharing_case(h, YAML::Load(base + ", kernel: nvjet_not_listed}"), nullptr);
    ADD_FAILURE() << "a copy neighbour ran with no HBM coefficient";
  } catch (const models::ParamError& e) {
    EXPECT_EQ(e.key(), "neighbour_alone_GBps");
    EXPECT_NE(std::string(e.what()).find("needs smshare.hbm_queue_kappa"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hbm_queue_kappa_by_kernel"), std::string::npos) << e.what();
  }
}

TEST(SmSharingCase, ParamsAreReportedAndBadKernelNamesAndCoversAreRefusedWithTheirBounds) {
  const hw::Hardware& h = models::load_hardware(test::kRoot + "/hw/h100-1gpu.yaml");
  const std::string base = "{m: 3328, n: 3072, k: 8192, tile_m: 320, tile_n: 128, grid: 132, cluster: 2, alone_time_us: 209.792, "
                           "neighbour: compute, blocks: 40";
  const auto r = models::run_sm_sharing_case(h, YAML::Load(base + "}"), nullptr);
  ASSERT_TRUE(r.contains("params"));  // every case's "params", as the model ran them (README)
  EXPECT_EQ(r["params"]["blocks"].get<int>(), 40);
  EXPECT_EQ(r["params"]["cover"].get<double>(), 20.0);
  auto error = [&](const std::string& extra) -> std::pair<std::string, std::string> {
    try {
      (void)models::run_sm_sharing_case(h, YAML::Load(base + extra + "}"), nullptr);
    } catch (const models::ParamError& e) {
      return {e.key(), e.what()};
    }
    return {"", "no error"};
  };
  const auto [ck, cw] = error(", cover: 0");  // an exclusive lower bound is printed as one
  EXPECT_EQ(ck, "cover");
  EXPECT_NE(cw.find("must be > 0 and <= 1000000, got 0"), std::string::npos) << cw;
  const auto [kk, kw] = error(", kernel: " + std::string(5000, 'x'));
  EXPECT_EQ(kk, "kernel");
  EXPECT_NE(kw.find("5000 characters long: at most 4096"), std::string::npos) << kw;
}
