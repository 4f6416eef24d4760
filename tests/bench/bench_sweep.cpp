// Sweep speed (Google Benchmark): cases per second per process for gemm_ar, afd and collective cases as
// `fusesim sweep` runs them (scenario::sweep_row: one case through the scenario layer, its row
// formatted), and a gemm_ar case's time against M (what ModelSpec::expected_cost models).
// Run: build/bench_sweep. The MPI ratio (mpirun -np 2 against 1 process, the same sweep) and the
// 10^5-case sweep are tests/bench/sweep_mpi_ratio.sh.
#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

#include "scenario/load.hpp"
#include "scenario/sweep.hpp"

using namespace fusesim;

namespace {
/// Rows of the cases of `file`, in turn, one per iteration.
void rows_of(benchmark::State& state, const char* file) {
  const auto sc = scenario::load(std::string(FUSESIM_SOURCE_DIR) + "/" + file);
  const auto hw = scenario::load_hardware(sc);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(scenario::sweep_row(sc, hw, i, "jsonl"));
    i = (i + 1) % sc.cases.size();
  }
  state.counters["cases_per_s"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["cases_in_file"] = double(sc.cases.size());
}
}  // namespace

// Every case of the default scenario (MI355X wo_b, TP8; modes, wires, M from 4096 to 16384).
static void BM_SweepGemmAr(benchmark::State& state) { rows_of(state, "scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml"); }
BENCHMARK(BM_SweepGemmAr)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// AFD on the H200 NVLink domain (3 Attention + 1 FFN ranks, the SM sweep) and on H100 pods over IB.
static void BM_SweepAfdNvlink(benchmark::State& state) { rows_of(state, "scenarios/h200x4-afd-3a1f-sm-sweep.yaml"); }
BENCHMARK(BM_SweepAfdNvlink)->Unit(benchmark::kMillisecond)->MinTime(2.0);
static void BM_SweepAfdPods(benchmark::State& state) { rows_of(state, "scenarios/h100-ib-afd-channel-sweep.yaml"); }
BENCHMARK(BM_SweepAfdPods)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The collective model: a standalone all-reduce per backend and M (a generated case list).
static void BM_SweepCollective(benchmark::State& state) {
  const auto hw = models::load_hardware(FUSESIM_SOURCE_DIR "/hw/mi355x-8gpu.yaml");
  const auto* spec = models::find_spec("collective");
  // aiter needs keys the hardware file may lack (the collective fit adds them): the other three.
  const char* backends[] = {"sdma", "lsa", "rccl"};
  size_t i = 0;
  for (auto _ : state) {
    YAML::Node p(YAML::NodeType::Map);
    p["backend"] = backends[i % 3];
    p["m"] = int64_t(64) << (i / 3 % 9);
    benchmark::DoNotOptimize(spec->run(hw, p, nullptr).dump());
    ++i;
  }
  state.counters["cases_per_s"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepCollective)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// What a sweep of a scenario loaded unexpanded (scenario::LoadOptions::expand false) adds per case:
// making case i from its index (Scenario::case_at) and its expected cost (CaseCosts::at, every rank
// computes it for every case), over a 10^5-case sweep of three lists.
namespace {
models::Scenario million_cases() {
  std::string m, c, t;
  for (int i = 1; i <= 100; ++i) m += (i > 1 ? "," : "") + std::to_string(128 * i);
  for (int i = 1; i <= 100; ++i) c += (i > 1 ? "," : "") + std::to_string(i);
  const std::string path = "/tmp/fusesim_bench_million.yaml";
  std::ofstream(path) << "scenario: million\nhardware: " FUSESIM_SOURCE_DIR "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n"
                      << "defaults: {n: 7168, k: 2048, world_size: 8, quant: blockscale, mode: fused-sdma}\ncases:\n  - id: a\n"
                      << "    sweep: {m: [" << m << "], chunks: [" << c << "], pull_blocks: [16, 24, 32, 48, 64, 80, 96, 112, 128, 256]}\n";
  scenario::LoadOptions o;
  o.expand = false;
  return scenario::load(path, o);
}
}  // namespace
static void BM_CaseFromIndex(benchmark::State& state) {
  const auto sc = million_cases();
  uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sc.case_at(i));
    i = (i + 7919) % sc.case_count();
  }
  state.counters["cases_in_file"] = double(sc.case_count());
}
BENCHMARK(BM_CaseFromIndex)->Unit(benchmark::kMicrosecond);
static void BM_CostFromIndex(benchmark::State& state) {
  const auto sc = million_cases();
  scenario::CaseCosts costs(sc);
  uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(costs.at(i));
    i = (i + 1) % sc.case_count();
  }
}
BENCHMARK(BM_CostFromIndex)->Unit(benchmark::kMicrosecond);

// One fused-sdma case (N=7168, K=2048, ws=8) against M: the cost model of the MPI split.
static void BM_GemmArCaseByM(benchmark::State& state) {
  const auto hw = models::load_hardware(FUSESIM_SOURCE_DIR "/hw/mi355x-8gpu.yaml");
  YAML::Node p = YAML::Load("{mode: fused-sdma, n: 7168, k: 2048, world_size: 8}");
  p["m"] = state.range(0);
  const auto* spec = models::find_spec("gemm_ar");
  for (auto _ : state) benchmark::DoNotOptimize(spec->run(hw, p, nullptr));
  state.counters["expected_cost"] = spec->expected_cost(p);
}
BENCHMARK(BM_GemmArCaseByM)->Arg(128)->Arg(1024)->Arg(4096)->Arg(16384)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
