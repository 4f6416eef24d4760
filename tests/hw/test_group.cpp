// The GPU-group substrate (hw/group.hpp): every expected time is derived by hand in the comment
// above its assertion, as the engine's tests are.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "hw/group.hpp"

using namespace fusesim;

namespace {
constexpr double GB = 1e9, us = 1e-6;

/// Two ranks, HBM 100 GB/s, one 50 GB/s link per direction, a copy queue per direction with a 2 us
/// command latency; then what `edit` changes.
hw::GroupConfig pair_config(const std::function<void(hw::GroupConfig&)>& edit = {}) {
  hw::GroupConfig g;
  g.ranks = 2;
  g.hbm_Bps = 100 * GB;
  g.link_Bps = 50 * GB;
  g.copy_queues = true;
  g.command_latency = 2 * us;
  if (edit) edit(g);
  return g;
}

/// One simulation, its flow network and a GpuGroup of `cfg` on them.
struct Rig {
  sim::Simulation sim;
  sim::FlowNetwork net{sim};
  hw::GpuGroup g;
  explicit Rig(const hw::GroupConfig& cfg) : g(sim, net, cfg) {}
};
}  // namespace

TEST(GpuGroup, PutsPayTheCommandLatencyThenMoveAtTheirCapInQueueOrder) {
  // 1 MB at a 25 GB/s cap: 2 us + 1e6 / 25e9 = 2 + 40 = 42 us. A second put on the same queue starts
  // its command when the first is done: 42 + 2 + 40 = 84 us. The queue is idle after both.
  Rig rig(pair_config());
  auto& [sim, net, g] = rig;
  std::vector<double> done;
  for (int i = 0; i < 2; ++i) g.put({.src = 0, .dst = 1, .bytes = 1e6, .rate_cap = 25 * GB, .label = "put", .on_done = [&] { done.push_back(sim.now()); }});
  double idle = -1;
  g.when_queues_idle(0, [&] { idle = sim.now(); });
  sim.run();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_NEAR(done[0], 42 * us, 1e-12);
  EXPECT_NEAR(done[1], 84 * us, 1e-12);
  EXPECT_NEAR(idle, 84 * us, 1e-12);
}

TEST(GpuGroup, APutWaitsLongerWhileTheOppositeQueueIsBusyAndItsRemoteReadyWaitsForTheEvent) {
  // Puts 0->1 and 1->0 together, 1 us opposite-direction latency: each command finds the other
  // queued or running, so each starts 2 + 1 = 3 us in and ends 3 + 40 = 43 us (separate links; each
  // HBM carries 2 x 25 of its 100 GB/s). remote_ready of the first: 5 us after its data started
  // (3 us) is 8 us, but not before the put is done: 43 us.
  Rig rig(pair_config([](hw::GroupConfig& c) { c.opposite_direction_latency = 1 * us; }));
  auto& [sim, net, g] = rig;
  double a = -1, b = -1, ready = -1;
  g.put({.src = 0, .dst = 1, .bytes = 1e6, .rate_cap = 25 * GB, .label = "a", .on_done = [&] { a = sim.now(); },
         .remote_ready = [&] { ready = sim.now(); }, .remote_wait = 5 * us});
  g.put({.src = 1, .dst = 0, .bytes = 1e6, .rate_cap = 25 * GB, .label = "b", .on_done = [&] { b = sim.now(); }});
  sim.run();
  EXPECT_NEAR(a, 43 * us, 1e-12);
  EXPECT_NEAR(b, 43 * us, 1e-12);
  EXPECT_NEAR(ready, 43 * us, 1e-12);
}

TEST(GpuGroup, TheRequestFabricChargesCopiedBytesAtItsCost) {
  // HBM and request fabric at 30 GB/s, a copy byte costing 2 on the request fabric at each end: the
  // put is held to 30 / 2 = 15 GB/s (below its 25 GB/s cap): 2 us + 1e6 / 15e9 = 68.667 us. While it
  // moves, its bytes cross both HBMs: copy_rate is 15 GB/s at each end.
  Rig rig(pair_config([](hw::GroupConfig& c) { c.hbm_Bps = 30 * GB; c.request_fabric = true; c.copy_request_cost = 2.0; }));
  auto& [sim, net, g] = rig;
  double done = -1, rate0 = -1, rate1 = -1;
  g.put({.src = 0, .dst = 1, .bytes = 1e6, .rate_cap = 25 * GB, .label = "p", .on_done = [&] { done = sim.now(); }});
  sim.at(10 * us, [&] { rate0 = g.copy_rate(0), rate1 = g.copy_rate(1); });
  sim.run();
  EXPECT_NEAR(done, 2 * us + 1e6 / 15e9, 1e-12);
  EXPECT_NEAR(rate0, 15 * GB, 1);
  EXPECT_NEAR(rate1, 15 * GB, 1);
}

TEST(GpuGroup, RemoteLoadsFollowLittlesLawAndCongestPastTheKnee) {
  // Round trip 1 us + 0.5 us per 16 B a lane holds; knee 1 MiB, 0.5 per MiB past it.
  // 1024 lanes x 64 B = 64 KiB in flight over 1 + 64/16 x 0.5 = 3 us: 65536 / 3e-6 = 21.85 GB/s.
  // 65536 lanes x 64 B = 4 MiB: 4 MiB / 3 us, over 1 + 0.5 x 3 MiB past the knee = 2.5.
  hw::RemoteLoadModel m;
  m.round_trip_s = 1 * us;
  m.issue_per_16B_s = 0.5 * us;
  m.congestion_knee_B = 1 << 20;
  m.congestion_per_MiB = 0.5;
  EXPECT_NEAR(m.rate(1024, 64), 65536 / 3e-6, 1e-3);
  EXPECT_NEAR(m.rate(65536, 64), 4194304 / 3e-6 / 2.5, 1e-3);
}

TEST(GpuGroup, ARemoteLoadCrossesTheLinkAtItsReadEfficiencyAndSendsRequestsBack) {
  // Rank 0 loads 1 MB from rank 1, read efficiency 0.5, request cost 0.25: the link 1->0 carries
  // 2 bytes per loaded byte (50 / 2 = 25 GB/s), the link 0->1 0.25 (200 GB/s), each HBM one (100):
  // 25 GB/s after a 1 us start: 1 + 40 = 41 us.
  Rig rig(pair_config([](hw::GroupConfig& c) { c.remote.read_efficiency = 0.5; c.remote.request_cost = 0.25; }));
  auto& [sim, net, g] = rig;
  double done = -1;
  g.remote_load({.reader = 0, .source = 1, .bytes = 1e6, .rate_cap = 1e15, .start_latency = 1 * us, .name = "pull",
                 .on_done = [&] { done = sim.now(); }});
  sim.run();
  EXPECT_NEAR(done, 41 * us, 1e-12);
}

TEST(GpuGroup, StoresIntoOneSwitchPortShareIt) {
  // Three ranks on 10 GB/s switch ports: ranks 0 and 1 store 1e5 B each into rank 2 (landing not
  // charged): rank 2's port in is shared, 5 GB/s each: 1e5 / 5e9 = 20 us.
  hw::GroupConfig cfg;
  cfg.ranks = 3;
  cfg.hbm_Bps = 100 * GB;
  cfg.links = hw::GroupConfig::Links::Ports;
  cfg.link_Bps = 10 * GB;
  Rig rig(cfg);
  auto& [sim, net, g] = rig;
  std::vector<double> done;
  for (int w : {0, 1})
    g.remote_store({.writer = w, .dest = 2, .bytes = 1e5, .name = "st", .land = false, .on_done = [&] { done.push_back(sim.now()); }});
  sim.run();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_NEAR(done[0], 20 * us, 1e-12);
  EXPECT_NEAR(done[1], 20 * us, 1e-12);
}

TEST(GpuGroup, AStreamingKernelReadsAndWritesItsHbm) {
  // 1 MB read and written (weight 2) through a 100 GB/s HBM after a 3 us launch: 3 + 2e6 / 100e9 = 23 us.
  Rig rig(pair_config());
  auto& [sim, net, g] = rig;
  double done = -1;
  g.stream({.rank = 1, .name = "reduce", .bytes = 1e6, .start_latency = 3 * us, .hbm_weight = 2.0, .on_done = [&] { done = sim.now(); }});
  sim.run();
  EXPECT_NEAR(done, 23 * us, 1e-12);
}

TEST(GpuGroup, ABarrierReleasesEveryRankItsLatencyAfterTheLastArrival) {
  // Ranks arrive at 1 and 4 us, latency 5 us: both go on at 9 us.
  Rig rig(pair_config([](hw::GroupConfig& c) { c.barrier_latency = 5 * us; }));
  auto& [sim, net, g] = rig;
  auto& b = g.barrier();
  std::vector<double> go(2, -1);
  sim.at(1 * us, [&] { b.arrive(0, [&] { go[0] = sim.now(); }); });
  sim.at(4 * us, [&] { b.arrive(1, [&] { go[1] = sim.now(); }); });
  sim.run();
  EXPECT_NEAR(go[0], 9 * us, 1e-12);
  EXPECT_NEAR(go[1], 9 * us, 1e-12);
}

TEST(Join, FiresOnceWhenItsArrivalsAreCountedEvenBeforeItIsArmed) {
  int fired = 0;
  hw::Join early;
  early.arrive();
  early.arrive();
  early.arm(2, [&] { ++fired; });  // both arrivals came first: fires at arm
  EXPECT_EQ(fired, 1);
  early.arrive();  // no second firing
  EXPECT_EQ(fired, 1);
  hw::Join none;
  none.arm(0, [&] { ++fired; });
  EXPECT_EQ(fired, 2);
  auto three = hw::Join::after(3, [&] { ++fired; });
  three();
  three();
  EXPECT_EQ(fired, 2);
  three();
  EXPECT_EQ(fired, 3);
}

TEST(Span, PhasesAndKernelsShareOneJsonForm) {
  const auto j = hw::spans_json({{"gemm", 0.0, 10.0}, {"combine_impl", 2.0, 5.0, 3, "ffn"}});
  EXPECT_EQ(j[0], (nlohmann::json{{"name", "gemm"}, {"start_us", 0.0}, {"end_us", 10.0}}));
  EXPECT_EQ(j[1], (nlohmann::json{{"name", "dev3/combine_impl"}, {"start_us", 2.0}, {"end_us", 5.0}, {"role", "ffn"}}));
}
