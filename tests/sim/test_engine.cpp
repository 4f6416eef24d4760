// Engine unit tests: every expected value is derived by hand in the comment above its assertion.
#include <gtest/gtest.h>

#include <stdexcept>

#include <set>

#include <cmath>

#include "sim/flow.hpp"
#include "sim/servers.hpp"
#include "sim/simulation.hpp"
#include "sim/trace.hpp"

using namespace fusesim::sim;

namespace {
constexpr double GB = 1e9;
}

TEST(Simulation, CallbacksRunInTimeThenSubmissionOrder) {
  Simulation sim;
  std::vector<int> order;
  sim.at(2e-6, [&] { order.push_back(3); });
  sim.at(1e-6, [&] { order.push_back(1); });
  sim.at(1e-6, [&] { order.push_back(2); });
  auto t = sim.at(1.5e-6, [&] { order.push_back(99); });
  sim.cancel(t);
  EXPECT_NEAR(sim.run(), 2e-6, 1e-12);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

namespace {
/// A fresh simulation (it must start at time 0) running one callback `delay` seconds in: the time
/// that callback sees.
double one_event_after(double delay) {
  Simulation sim;
  EXPECT_NEAR(sim.now(), 0.0, 1e-15);
  double seen = -1;
  sim.after(delay, [&] { seen = sim.now(); });
  sim.run();
  return seen;
}

/// Run `sim` to its end, sampling the rates (bytes/s) of `flows` at time `t`: the sampled rates, in
/// the order of `flows`.
std::vector<double> rates_at(Simulation& sim, FlowNetwork& net, double t, const std::vector<FlowId>& flows) {
  std::vector<double> r(flows.size(), 0.0);
  sim.at(t, [&] {
    for (size_t i = 0; i < flows.size(); ++i) r[i] = net.rate(flows[i]);
  });
  sim.run();
  return r;
}
}  // namespace

TEST(Simulation, ManyRunsBackToBackStartAtZero) {
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(one_event_after(3e-6), 3e-6, 1e-12);
}

// A callback that throws ends its run with that exception, and the next simulation runs normally
// (the exception used to reach the SystemC kernel, and every later run failed with E548).
TEST(Simulation, ACallbackExceptionIsRethrownAndTheNextRunWorks) {
  {
    Simulation sim;
    bool later_ran = false;
    sim.after(1e-6, [] { throw std::out_of_range("table 'gemm' has no row"); });
    sim.after(2e-6, [&] { later_ran = true; });
    try {
      sim.run();
      ADD_FAILURE() << "run() returned after a callback threw";
    } catch (const std::out_of_range& e) {
      EXPECT_STREQ(e.what(), "table 'gemm' has no row");
    }
    EXPECT_FALSE(later_ran);
  }
  EXPECT_NEAR(one_event_after(5e-6), 5e-6, 1e-12);
}

TEST(FlowNetwork, SingleFlowTakesBytesOverCapacity) {
  Simulation sim;
  FlowNetwork net(sim);
  auto l = net.add_resource("link", 10 * GB);
  double t_done = -1;
  net.start({.name = "f", .bytes = 1e9, .path = {{l}}, .on_done = [&] { t_done = sim.now(); }});
  sim.run();
  // 1e9 B / 10e9 B/s = 0.1 s
  EXPECT_NEAR(t_done, 0.1, 1e-9);
}

TEST(FlowNetwork, ThreeFlowsOverTwoLinks) {
  // Links A (10 GB/s) and B (20 GB/s). f1 crosses A, f2 crosses A and B, f3 crosses B.
  // Max-min: A is the bottleneck: f1 = f2 = 5 GB/s; B has 20-5 = 15 left for f3.
  Simulation sim;
  FlowNetwork net(sim);
  auto a = net.add_resource("A", 10 * GB), b = net.add_resource("B", 20 * GB);
  FlowId f1 = net.start({.name = "f1", .bytes = 1e9, .path = {{a}}});
  FlowId f2 = net.start({.name = "f2", .bytes = 1e9, .path = {{a}, {b}}});
  FlowId f3 = net.start({.name = "f3", .bytes = 3e9, .path = {{b}}});
  const auto r = rates_at(sim, net, 1e-3, {f1, f2, f3});
  EXPECT_NEAR(r[0], 5 * GB, 1);
  EXPECT_NEAR(r[1], 5 * GB, 1);
  EXPECT_NEAR(r[2], 15 * GB, 1);
}

TEST(FlowNetwork, CompletionTimesWithReSolve) {
  // Same network; f1 and f2 (1e9 B each) finish at 1e9/5e9 = 0.2 s. f3 has moved 15e9*0.2 = 3e9 B
  // by then: 6e9 total -> 3e9 left, now alone on B at 20 GB/s -> +0.15 s = 0.35 s.
  Simulation sim;
  FlowNetwork net(sim);
  auto a = net.add_resource("A", 10 * GB), b = net.add_resource("B", 20 * GB);
  double t1 = -1, t2 = -1, t3 = -1;
  net.start({.name = "f1", .bytes = 1e9, .path = {{a}}, .on_done = [&] { t1 = sim.now(); }});
  net.start({.name = "f2", .bytes = 1e9, .path = {{a}, {b}}, .on_done = [&] { t2 = sim.now(); }});
  net.start({.name = "f3", .bytes = 6e9, .path = {{b}}, .on_done = [&] { t3 = sim.now(); }});
  sim.run();
  EXPECT_NEAR(t1, 0.2, 1e-9);
  EXPECT_NEAR(t2, 0.2, 1e-9);
  EXPECT_NEAR(t3, 0.35, 1e-9);
}

TEST(FlowNetwork, CappedFlowReleasesBandwidthToOthers) {
  // Link 10 GB/s; f1 capped at 2 GB/s, f2 uncapped: f2 gets 8 GB/s.
  Simulation sim;
  FlowNetwork net(sim);
  auto l = net.add_resource("L", 10 * GB);
  FlowId f1 = net.start({.name = "f1", .bytes = 2e9, .path = {{l}}, .rate_cap_Bps = 2 * GB});
  double t2 = -1;
  FlowId f2 = net.start({.name = "f2", .bytes = 8e9, .path = {{l}}, .on_done = [&] { t2 = sim.now(); }});
  const auto r = rates_at(sim, net, 1e-3, {f1, f2});
  EXPECT_NEAR(r[0], 2 * GB, 1);
  EXPECT_NEAR(r[1], 8 * GB, 1);
  EXPECT_NEAR(t2, 1.0, 1e-9);  // 8e9 / 8e9
}

TEST(FlowNetwork, FlowStartingWhileOthersRun) {
  // f1 (10e9 B) alone on 10 GB/s for 0.5 s -> 5e9 left. f2 (1e9) starts at 0.5 s: both at 5 GB/s;
  // f2 ends at 0.7 s (f1 has 4e9 left), f1 then alone: +0.4 s -> 1.1 s.
  Simulation sim;
  FlowNetwork net(sim);
  auto l = net.add_resource("L", 10 * GB);
  double t1 = -1, t2 = -1;
  net.start({.name = "f1", .bytes = 10e9, .path = {{l}}, .on_done = [&] { t1 = sim.now(); }});
  sim.at(0.5, [&] { net.start({.name = "f2", .bytes = 1e9, .path = {{l}}, .on_done = [&] { t2 = sim.now(); }}); });
  sim.run();
  EXPECT_NEAR(t2, 0.7, 1e-9);
  EXPECT_NEAR(t1, 1.1, 1e-9);
}

TEST(FlowNetwork, StartLatencyAndWeights) {
  // A copy reading and writing one HBM (weight 2) of 10 GB/s moves 5 GB/s; 1e9 B -> 0.2 s, after a
  // 1 us start latency.
  Simulation sim;
  FlowNetwork net(sim);
  auto h = net.add_resource("hbm", 10 * GB);
  double t = -1;
  net.start({.name = "copy", .bytes = 1e9, .path = {{h, 2.0}}, .start_latency = 1e-6, .on_done = [&] { t = sim.now(); }});
  sim.run();
  EXPECT_NEAR(t, 0.2 + 1e-6, 1e-9);
}

TEST(FlowNetwork, ShareWeightsSplitSaturatedResource) {
  // Shares 3:1 on a 8 GB/s link: 6 and 2 GB/s.
  Simulation sim;
  FlowNetwork net(sim);
  auto l = net.add_resource("L", 8 * GB);
  FlowId a = net.start({.name = "a", .bytes = 1e9, .path = {{l}}, .share = 3});
  FlowId b = net.start({.name = "b", .bytes = 1e9, .path = {{l}}, .share = 1});
  const auto r = rates_at(sim, net, 1e-6, {a, b});
  EXPECT_NEAR(r[0], 6 * GB, 1);
  EXPECT_NEAR(r[1], 2 * GB, 1);
}

TEST(FlowNetwork, ByteConservation) {
  // Weighted bytes carried by each resource equal sum(bytes * weight) of the flows crossing it.
  Simulation sim;
  FlowNetwork net(sim);
  auto a = net.add_resource("A", 7 * GB), b = net.add_resource("B", 3 * GB);
  double expect_a = 0, expect_b = 0;
  for (int i = 0; i < 20; ++i) {
    const double bytes = 1e6 * (i + 1);
    const double wa = 1 + i % 3, wb = (i % 2) ? 1.0 : 0.5;
    sim.at(i * 1e-5, [&net, a, b, bytes, wa, wb] { net.start({.name = "f", .bytes = bytes, .path = {{a, wa}, {b, wb}}}); });
    expect_a += bytes * wa;
    expect_b += bytes * wb;
  }
  sim.run();
  EXPECT_EQ(net.completed(), 20);
  EXPECT_NEAR(net.stats()[a].bytes, expect_a, expect_a * 1e-9);
  EXPECT_NEAR(net.stats()[b].bytes, expect_b, expect_b * 1e-9);
}

TEST(FlowNetwork, ZeroBytesAndZeroCapacity) {
  Simulation sim;
  FlowNetwork net(sim);
  auto dead = net.add_resource("dead", 0);
  auto l = net.add_resource("L", GB);
  double t0 = -1;
  net.start({.name = "empty", .bytes = 0, .path = {{l}}, .start_latency = 2e-6, .on_done = [&] { t0 = sim.now(); }});
  bool never = false;
  net.start({.name = "blocked", .bytes = 1, .path = {{dead}}, .on_done = [&] { never = true; }});
  sim.run();
  EXPECT_NEAR(t0, 2e-6, 1e-12);
  EXPECT_FALSE(never);
  EXPECT_EQ(net.stalled(), std::vector<std::string>{"blocked"});
  EXPECT_THROW(net.add_resource("neg", -1), std::invalid_argument);
  EXPECT_THROW(net.start({.name = "bad", .bytes = -1}), std::invalid_argument);
}

TEST(CommandQueue, FifoOrderAndOverhead) {
  // Overhead 2 us per command; bodies of 3 us, 1 us: c1 ends at 5 us, c2 at 5+2+1 = 8 us.
  Simulation sim;
  CommandQueue q(sim, "sdma", 2e-6);
  std::vector<std::pair<int, double>> ends;
  q.submit("c1", [&](auto done) { sim.after(3e-6, done); }, [&] { ends.push_back({1, sim.now()}); });
  q.submit("c2", [&](auto done) { sim.after(1e-6, done); }, [&] { ends.push_back({2, sim.now()}); });
  double idle_at = -1;
  q.when_idle([&] { idle_at = sim.now(); });
  sim.run();
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].first, 1);
  EXPECT_NEAR(ends[0].second, 5e-6, 1e-12);
  EXPECT_EQ(ends[1].first, 2);
  EXPECT_NEAR(ends[1].second, 8e-6, 1e-12);
  EXPECT_NEAR(idle_at, 8e-6, 1e-12);
}

TEST(SlotPool, WavesOverSlots) {
  // 10 items of 1 us on 4 slots: waves of 4, 4, 2 -> last finishes at 3 us.
  Simulation sim;
  SlotPool cus(sim, "cu", 4);
  double last = 0;
  int n = 0;
  for (int i = 0; i < 10; ++i) cus.occupy(1, 1e-6, [&] { last = sim.now(); ++n; });
  sim.run();
  EXPECT_EQ(n, 10);
  EXPECT_NEAR(last, 3e-6, 1e-12);
  EXPECT_NEAR(cus.busy_slot_seconds(), 10e-6, 1e-12);
}

TEST(OpServer, FixedCostPerOperation) {
  // 5 atomics at 0.4 us each on one server: last done at 2 us. With 2 servers: ceil(5/2)*0.4 = 1.2 us.
  for (int servers : {1, 2}) {
    Simulation sim;
    OpServer nic(sim, "nic", 0.4e-6, servers);
    double last = 0;
    for (int i = 0; i < 5; ++i) nic.submit([&] { last = sim.now(); });
    sim.run();
    EXPECT_NEAR(last, servers == 1 ? 2e-6 : 1.2e-6, 1e-12);
    EXPECT_EQ(nic.ops_served(), 5);
  }
}

TEST(TraceSink, OneLanePerResourceAndStackedOverlaps) {
  Simulation sim;
  TraceSink tr;
  sim.set_trace(&tr);
  FlowNetwork net(sim);
  auto l = net.add_resource("gpu0/xgmi->1", GB);
  net.start({.name = "a", .bytes = 1e6, .path = {{l}}});
  net.start({.name = "b", .bytes = 2e6, .path = {{l}}});
  sim.run();
  auto j = tr.to_json();
  int slices = 0;
  std::set<int> tids;
  for (auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") { ++slices; tids.insert(e["tid"].get<int>()); }
  }
  EXPECT_EQ(slices, 2);
  EXPECT_EQ(tids.size(), 2u);  // overlapping slices on one lane are stacked on two rows
  EXPECT_EQ(tr.lanes(), std::vector<std::string>{"gpu0/xgmi->1"});
}

// Share weights, path weights and rate caps together, as every model uses them (a kernel reading and
// writing one HBM, a capped copy crossing HBM and a link, a stream on the link), solved by hand.
TEST(FlowNetwork, ShareWeightsPathWeightsAndRateCapsTogether) {
  // Resources H (12 GB/s) and L (8 GB/s). fa: H at weight 2 (it reads and writes H), share 1.
  // fb: H and L at weight 1, share 2, capped at 3 GB/s. fc: L at weight 1, share 1.
  // Progressive filling, rate = share x level until a resource saturates or a cap binds:
  //  level 1: H gives 12 / (1x2 + 2x1) = 3, L gives 8 / (2x1 + 1x1) = 2.67, fb's cap 3 / 2 = 1.5:
  //           fb freezes at 2 x 1.5 = 3 GB/s (its cap); H has 12 - 3 = 9 left, L 8 - 3 = 5.
  //  level 2: H gives 9 / 2 = 4.5, L gives 5 / 1 = 5: fa freezes at 4.5 GB/s (H saturated: 2 x 4.5 + 3).
  //  level 3: L gives 5: fc runs at 5 GB/s (L saturated: 3 + 5).
  // fb (3e9 B) ends at 3e9 / 3e9 = 1 s. Then fa is alone on H: 12 / 2 = 6 GB/s; it had moved 4.5e9 of
  // 9e9 B, so it ends 4.5e9 / 6e9 = 0.75 s later, at 1.75 s. fc is alone on L at 8 GB/s with
  // 20e9 - 5e9 = 15e9 B left: 15 / 8 = 1.875 s later, at 2.875 s.
  Simulation sim;
  FlowNetwork net(sim);
  const auto h = net.add_resource("H", 12 * GB), l = net.add_resource("L", 8 * GB);
  std::vector<double> done(3, -1);
  const FlowId fa = net.start({.name = "fa", .bytes = 9e9, .path = {{h, 2.0}}, .on_done = [&] { done[0] = sim.now(); }});
  const FlowId fb = net.start({.name = "fb", .bytes = 3e9, .path = {{h, 1.0}, {l, 1.0}}, .rate_cap_Bps = 3 * GB, .share = 2.0,
                               .on_done = [&] { done[1] = sim.now(); }});
  const FlowId fc = net.start({.name = "fc", .bytes = 20e9, .path = {{l, 1.0}}, .on_done = [&] { done[2] = sim.now(); }});
  const auto r = rates_at(sim, net, 0.5, {fa, fb, fc});
  EXPECT_NEAR(r[0], 4.5 * GB, 1);
  EXPECT_NEAR(r[1], 3.0 * GB, 1);
  EXPECT_NEAR(r[2], 5.0 * GB, 1);
  EXPECT_NEAR(done[1], 1.0, 1e-9);
  EXPECT_NEAR(done[0], 1.75, 1e-9);
  EXPECT_NEAR(done[2], 2.875, 1e-9);
}
