// What-if tests: dependency inference, replay fidelity, and each change's effect.
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "calibrate/trace/whatif.hpp"
#include "test_util.hpp"
#include "trace_gen.hpp"

namespace fusesim::trace {
namespace {

using test::TempDir;
using test::write_text;

TEST(TraceWhatIf, ReplayReproducesEightRankStepTimes) {
  TempDir d;
  testgen::GenSpec spec;  // 8 ranks, two streams: cross-stream waits must be found
  auto truth = testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  for (const char* window : {"decode", "prefill"}) {
    WhatIfOptions opt;
    opt.window = window;
    auto rep = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str());
    double want = 0;
    for (double w : truth.ranks[7].at(window).step_wall_us) want += w;  // rank 7 has the longest all-reduce
    EXPECT_DOUBLE_EQ(rep.measured_us, want) << window;
    EXPECT_NEAR(rep.replay_us, rep.measured_us, 0.01 * rep.measured_us) << window;
    EXPECT_NEAR(rep.replay_us, rep.measured_us, 1e-3) << window;  // in fact exact up to ps rounding
    EXPECT_NEAR(rep.whatif_us, rep.replay_us, 1e-6);  // no change requested
    for (const auto& w : rep.windows)
      for (size_t r = 0; r < w.measured_by_rank.size(); ++r)
        EXPECT_NEAR(w.replay_by_rank[r], w.measured_by_rank[r], 1e-3) << w.window << " rank " << r;
  }
}

TEST(TraceWhatIf, DependencyInferenceFindsCrossStreamWaits) {
  TempDir d;
  testgen::GenSpec spec;
  spec.ranks = 1;
  spec.prefill_steps = 0;
  spec.decode_steps = 1;
  spec.layers = 1;
  auto truth = testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  auto table = CategoryTable::builtin();
  auto tl = build_timeline(files[0], table, AnalyzeOptions{});
  std::vector<uint32_t> all(tl.ops.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  auto g = infer_replay_graph(tl, all, 2.0);
  int deps = 0, released = 0;
  for (const auto& n : g.nodes) {
    const auto& name = files[0].strings.str(files[0].gpu_ops[tl.ops[n.op].gpu].name);
    if (n.bind == ReplayGraph::Bind::dep) {
      ++deps;
      const auto& on = files[0].strings.str(files[0].gpu_ops[tl.ops[g.nodes[static_cast<size_t>(n.bind_dep)].op].gpu].name);
      if (name.find("cross_device_reduce") != std::string::npos) EXPECT_EQ(on, "fused_moe_kernel");
      else if (name.find("Memcpy") != std::string::npos) EXPECT_NE(on.find("cross_device_reduce"), std::string::npos);
      else ADD_FAILURE() << "unexpected dependency of " << name << " on " << on;
    }
    if (n.bind == ReplayGraph::Bind::release) ++released;
  }
  EXPECT_EQ(deps, 2);      // all-reduce #2 waits for the MoE GEMM, the memcpy waits for the all-reduce
  EXPECT_EQ(released, 2);  // the first kernel, and the router GEMM after the host gap
}

testgen::GenSpec one_stream_spec() {
  testgen::GenSpec spec;
  spec.ranks = 4;
  spec.two_streams = false;
  spec.amd = true;  // like the seed's MI355X decode: everything on one HIP stream
  return spec;
}

TEST(TraceWhatIf, CommStreamSavingIsBoundedByCommTime) {
  TempDir d;
  auto spec = one_stream_spec();
  testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  WhatIfOptions opt;
  opt.comm_stream = true;
  auto rep = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str());
  EXPECT_NEAR(rep.replay_us, rep.measured_us, 1e-3);
  EXPECT_EQ(rep.changes.comm_moved, 4 * 2 * 2 * 4);  // 2 per layer, 4 layers, 2 decode steps, 4 ranks
  double comm_total = 0;  // the slowest rank's communication over both decode steps
  comm_total = 2 * 4 * ((12 + 3 * 0.5) + 10);
  EXPECT_GT(rep.saving_us(), 0.0);
  EXPECT_LE(rep.saving_us(), comm_total + 1e-6);
  // With each collective's output consumed by the very next kernel, nothing can overlap.
  opt.comm_consumer_after = 1;
  auto strict = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str());
  EXPECT_NEAR(strict.whatif_us, strict.replay_us, 1e-3);
}

TEST(TraceWhatIf, CommStreamHidesAllCommWhenGapsAreGpuSide) {
  TempDir d;
  auto spec = one_stream_spec();
  spec.gap_is_host_late = false;  // every kernel was queued early: gaps move with their predecessor
  testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  WhatIfOptions opt;
  opt.comm_stream = true;
  auto rep = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str());
  EXPECT_NEAR(rep.replay_us, rep.measured_us, 1e-3);
  // Each all-reduce overlaps the compute after it (the last one of a step hides behind the memcpy,
  // the residual add and the LM head), so the slowest rank (3) saves all its communication:
  // 4 layers x (12 + 3 x 0.5 + 10) us per step, 2 decode steps.
  EXPECT_NEAR(rep.saving_us(), 2 * 4 * (12 + 1.5 + 10), 1e-3);
  EXPECT_NEAR(rep.saving_us(), 2 * rep.comm_us, 1e-3);
}

TEST(TraceWhatIf, ScaleCollectiveAddsExactlyTheExtraTimeOnAChainedStream) {
  TempDir d;
  testgen::GenSpec spec;
  spec.ranks = 2;
  spec.two_streams = false;
  spec.layer_gap_us = 0;  // no host gap to absorb the change
  testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  WhatIfOptions opt;
  opt.scale.push_back(parse_collective_scale("ncclDevKernel_AllReduce=2"));
  auto rep = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str());
  EXPECT_EQ(rep.changes.scaled, 2 * 4 * 2);
  // Rank 1 is the slowest: each of its 8 decode all-reduces (12.5 us) now takes twice as long.
  EXPECT_NEAR(rep.whatif_us - rep.replay_us, 8 * 12.5, 1e-3);
  EXPECT_THROW(parse_collective_scale("nccl"), std::invalid_argument);
  EXPECT_THROW(parse_collective_scale("nccl=-1"), std::invalid_argument);
  EXPECT_THROW(parse_collective_scale("nccl=fast"), std::invalid_argument);
}

TEST(TraceWhatIf, FuseGemmAllReduceUsesThePredictor) {
  TempDir d;
  testgen::GenSpec spec;
  spec.ranks = 1;
  spec.two_streams = false;
  spec.layer_gap_us = 0;
  testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  std::vector<std::tuple<int64_t, int64_t, int64_t, int>> asked;
  WhatIfOptions opt;
  opt.fuse_gemm_ar = true;
  opt.world_size = 8;
  opt.gemm_ar_predictor = [&](int64_t m, int64_t n, int64_t k, int ws) {
    asked.emplace_back(m, n, k, ws);
    return 5.0;
  };
  auto rep = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str());
  // Per decode layer: o_proj (10 us) + all-reduce #1 (12 us) and shared-expert GEMM (6 us) +
  // all-reduce #2 (10 us) each become one 5 us fused op.
  EXPECT_EQ(rep.changes.fused, 2 * 4 * 2);
  EXPECT_NEAR(rep.replay_us - rep.whatif_us, 8 * ((10 + 12 - 5) + (6 + 10 - 5)), 1e-3);
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked[0], std::make_tuple(int64_t{64}, int64_t{7168}, int64_t{1024}, 8));
  EXPECT_EQ(asked[1], std::make_tuple(int64_t{64}, int64_t{4608}, int64_t{7168}, 8));
  opt.gemm_ar_predictor = nullptr;
  EXPECT_THROW(whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str()), std::runtime_error);
}

TEST(TraceWhatIf, FuseGemmAllReduceOnAOneRankTraceNeedsTheWorldSize) {
  TempDir d;
  testgen::GenSpec spec;
  spec.ranks = 1;
  testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  WhatIfOptions opt;
  opt.fuse_gemm_ar = true;
  opt.gemm_ar_predictor = [](int64_t, int64_t, int64_t, int) { return 5.0; };
  try {
    whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str());
    FAIL() << "expected an error asking for --world-size";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pass --world-size N"), std::string::npos) << e.what();
  }
}

/// Run the `trace` sub-commands as the fusesim binary would (with `gemm_ar` as the fused predictor's
/// factory; none by default); returns stdout.
std::string run_cli(std::vector<std::string> args, GemmArPredictorFactory gemm_ar = {}) {
  CLI::App app{"fusesim"};
  register_trace_commands(app, std::move(gemm_ar));
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  try {
    app.parse(args);
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return captured.str();
}

TEST(TraceCli, AnalyzeAndWhatIfCommands) {
  TempDir d;
  testgen::GenSpec spec;
  spec.ranks = 2;
  spec.gap_is_host_late = false;
  testgen::write_trace_dir(spec, d.str());
  auto table = run_cli({"trace", "analyze", d.str()});
  EXPECT_NE(table.find("GEMM shapes"), std::string::npos);
  EXPECT_NE(table.find("64x2112x7168"), std::string::npos);
  auto js = nlohmann::json::parse(run_cli({"trace", "analyze", d.str(), "--format", "json", "--window", "decode"}));
  EXPECT_EQ(js["ranks"].size(), 2u);
  EXPECT_EQ(js["ranks"][0]["phases"][0]["phase"], "decode");
  auto wi = nlohmann::json::parse(run_cli({"trace", "whatif", d.str(), "--comm-stream", "--scale-collective", "nccl=0.5", "--format", "json"}));
  EXPECT_TRUE(wi["changes"]["comm_stream"].get<bool>());
  EXPECT_LT(wi["whatif_us"].get<double>(), wi["replay_us"].get<double>());
  EXPECT_THROW(run_cli({"trace", "analyze", d.file("missing.json")}), CLI::Error);
  write_text(d.file("hw.yaml"), "gpu: x\n");
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--fuse-gemm-ar", "--hw", d.file("hw.yaml")}), CLI::RuntimeError);
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--fuse-gemm-ar"}), CLI::RuntimeError);
  // Options that only act together with another are refused alone instead of doing nothing.
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--comm-consumer-after", "2"}), CLI::RuntimeError);
  EXPECT_NO_THROW(run_cli({"trace", "whatif", d.str(), "--comm-stream", "--comm-consumer-after", "2"}));
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--hw", d.file("hw.yaml")}), CLI::RuntimeError);
}

// --fuse-gemm-ar predicts with what the program passes to register_trace_commands (the fusesim
// binary: the gemm_ar model), made from the --hw file; without one it is refused.
TEST(TraceCli, FuseGemmArPredictsWithTheFactoryTheProgramPasses) {
  TempDir d;
  testgen::GenSpec spec;
  spec.ranks = 2;
  testgen::write_trace_dir(spec, d.str());
  write_text(d.file("hw.yaml"), "name: x\n");
  std::string asked;
  int calls = 0;
  const GemmArPredictorFactory factory = [&](const std::string& hw) {
    asked = hw;
    return GemmArPredictor([&calls](int64_t, int64_t, int64_t, int) {
      ++calls;
      return 5.0;
    });
  };
  EXPECT_NO_THROW(run_cli({"trace", "whatif", d.str(), "--fuse-gemm-ar", "--hw", d.file("hw.yaml")}, factory));
  EXPECT_EQ(asked, d.file("hw.yaml"));
  EXPECT_GT(calls, 0);
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--fuse-gemm-ar", "--hw", d.file("hw.yaml")}), CLI::RuntimeError);
}

}  // namespace
}  // namespace fusesim::trace
