// Engine and scenario speed (Google Benchmark). Run: build/bench_engine
#include <benchmark/benchmark.h>

#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "sim/flow.hpp"
#include "sim/simulation.hpp"

using namespace fusesim;

// Flows started and finished per second: `flows` flows over a mesh of 8 nodes' links, each starting
// when the previous on its link ends (a chain per link), so every start and end re-solves.
static void BM_FlowNetwork(benchmark::State& state) {
  const int links = int(state.range(0)), per_link = 200;
  long flows = 0;
  for (auto _ : state) {
    sim::Simulation sim;
    sim::FlowNetwork net(sim);
    std::vector<sim::ResourceId> res;
    auto hbm = net.add_resource("hbm", 5e12);
    for (int l = 0; l < links; ++l) res.push_back(net.add_resource("link" + std::to_string(l), 64e9));
    std::vector<int> left(links, per_link);
    std::function<void(int)> next = [&](int l) {
      if (left[l]-- == 0) return;
      net.start({.name = "f", .bytes = 1e6 * (1 + l % 3), .path = {{hbm, 1.0}, {res[l], 1.0}}, .on_done = [&, l] { next(l); }});
    };
    for (int l = 0; l < links; ++l) next(l);
    sim.run();
    flows += net.completed();
  }
  state.counters["flows_per_s"] = benchmark::Counter(double(flows), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FlowNetwork)->Arg(7)->Arg(56)->Unit(benchmark::kMillisecond);

// One fused-sdma call at M=16384 on 8 ranks (the inner loop of a sweep).
static void BM_FusedSdmaCase(benchmark::State& state) {
  const auto hw = models::load_hardware(FUSESIM_SOURCE_DIR "/hw/mi355x-8gpu.yaml");
  models::GemmArConfig c;
  c.m = state.range(0);
  long events = 0;
  for (auto _ : state) events += models::simulate_gemm_ar(hw, c).engine_events;
  state.counters["cases_per_s"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["events_per_s"] = benchmark::Counter(double(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FusedSdmaCase)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);

// The whole default scenario (every case of scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml).
static void BM_Scenario(benchmark::State& state) {
  const auto sc = scenario::load(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml");
  const auto hw = scenario::load_hardware(sc);
  for (auto _ : state) benchmark::DoNotOptimize(scenario::run(sc, hw));
  state.counters["cases"] = double(sc.cases.size());
}
BENCHMARK(BM_Scenario)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
