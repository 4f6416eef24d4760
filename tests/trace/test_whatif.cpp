// What-if tests: dependency inference, replay fidelity, and each change's effect.
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
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
  testgen::GenSpec spec{.ranks = 1, .layers = 1, .prefill_steps = 0, .decode_steps = 1};
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
  testgen::GenSpec spec{.ranks = 4, .two_streams = false, .amd = true};  // like the seed's MI355X decode: everything on one HIP stream
  return spec;
}

TEST(TraceWhatIf, CommStreamSavingIsBoundedByCommTime) {
  TempDir d;
  auto spec = one_stream_spec();
  testgen::write_trace_dir(spec, d.str());
  auto files = read_trace(d.str());
  WhatIfOptions opt;
  opt.comm_stream = true;
  opt.sms = 0;  // the generated collectives have a grid of 132 blocks, >= the default 132 SMs: refused (issue 19); no charge here
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
  opt.sms = 0;  // the generated collectives have a grid of 132 blocks, >= the default 132 SMs: refused (issue 19); no charge here
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
  testgen::GenSpec spec{.ranks = 2, .two_streams = false, .layer_gap_us = 0};  // no host gap to absorb the change
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
  testgen::GenSpec spec{.ranks = 1, .two_streams = false, .layer_gap_us = 0};
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


// ---- ranks replayed together ------------------------------------------------------------------

/// 8 ranks whose collectives wait for the slowest one (trace_gen.hpp, collective_wait): decode only,
/// no host gap, so a delay is never absorbed by idle time.
testgen::GenSpec coupled_spec() {
  testgen::GenSpec spec{.ranks = 8, .layers = 4, .prefill_steps = 0, .decode_steps = 2, .collective_wait = true, .gemm_skew_us = 1.0, .layer_gap_us = 0};
  return spec;
}

// Hand derivation (decode, each layer starting at T on every rank; trace_gen.cpp's schedule):
//   norm 3 + QKV (20 + r) + attention 15 + bmm 4 + o_proj 10: rank r enters all-reduce #1 at
//   T + 52 + r, the last one (rank 7) at T + 59; it lasts 12 + (7 - r), so all leave at T + 71.
//   Slowing rank 3's QKV GEMM x1.5 (23 -> 34.5 us, +11.5): rank 3 enters at T + 55 + 11.5 = T + 66.5,
//   now the last, and every rank's all-reduce #1 ends at T + 66.5 + 12 = T + 78.5: 7.5 us later
//   (= 66.5 - 59). Everything after it has the same duration on every rank, so each of the 4 layers
//   adds 7.5 us: every rank's decode step is 30 us longer, 60 us over the 2 steps.
//   Replayed independently instead, rank 3 keeps its measured all-reduce (16 us, waiting included)
//   and alone gets 4 x 11.5 = 46 us longer per step; the other ranks do not move.
TEST(TraceWhatIf, SlowingOneRanksGemmDelaysEveryRanksNextCollective) {
  TempDir d;
  testgen::write_trace_dir(coupled_spec(), d.str());
  auto files = read_trace(d.str());
  auto table = CategoryTable::builtin();
  const std::string qkv = "tilesize128x128x64";  // the QKV GEMM's kernel only (the LM head is 256x128x64)

  // The first decode step's graphs, matched and replayed on one engine.
  std::vector<RankTimeline> tls;
  for (const auto& f : files) tls.push_back(build_timeline(f, table, AnalyzeOptions{}));
  std::vector<ReplayGraph> graphs;
  std::vector<const RankTimeline*> tlp;
  std::vector<int> ranks;
  for (size_t r = 0; r < files.size(); ++r) {
    ASSERT_EQ(tls[r].windows[0].name, "ProfilerStep#0");
    graphs.push_back(infer_replay_graph(tls[r], ops_by_window(tls[r])[0], 2.0));
    tlp.push_back(&tls[r]);
    ranks.push_back(files[r].rank);
  }
  std::vector<ReplayGraph*> gp;
  std::vector<const ReplayGraph*> cgp;
  for (auto& g : graphs) {
    gp.push_back(&g);
    cgp.push_back(&g);
  }
  auto m = match_collectives(gp, tlp, ranks, default_collective_group(files));
  EXPECT_EQ(m.groups.size(), 8u);  // per layer all-reduce #1 and #2, 4 layers
  EXPECT_EQ(m.by_order, 8);
  EXPECT_EQ(m.incomplete + m.mismatched + m.skewed_members, 0);
  auto first_ar1 = [&](size_t r) {
    for (size_t i = 0; i < graphs[r].nodes.size(); ++i)
      if (files[r].strings.str(files[r].gpu_ops[tls[r].ops[graphs[r].nodes[i].op].gpu].name).rfind("ncclDevKernel", 0) == 0)
        return i;
    return size_t{0};
  };
  auto base = replay(cgp, m.groups);
  for (size_t r = 0; r < graphs.size(); ++r) {
    EXPECT_NEAR(base.end_us[r][first_ar1(r)], 71.0, 1e-6) << "rank " << r;
    EXPECT_NEAR(base.span_us[r], graphs[r].measured_span_us, 1e-6) << "rank " << r;
  }
  WhatIfOptions opt;
  opt.scale.push_back(parse_rank_scale("3:" + qkv + "=1.5"));
  for (size_t r = 0; r < graphs.size(); ++r) {
    auto ch = apply_whatif(graphs[r], tls[r], opt, 8, files[r].rank);
    EXPECT_EQ(ch.scaled, r == 3 ? 4 : 0);
  }
  auto slow = replay(cgp, m.groups);
  for (size_t r = 0; r < graphs.size(); ++r) {
    EXPECT_NEAR(slow.end_us[r][first_ar1(r)], 78.5, 1e-6) << "rank " << r;
    EXPECT_NEAR(slow.span_us[r] - base.span_us[r], 4 * 7.5, 1e-6) << "rank " << r;
  }

  // The command's report: per rank, 2 decode steps.
  opt.window = "decode";
  auto rep = whatif(files, table, AnalyzeOptions{}, opt, d.str());
  EXPECT_TRUE(rep.coupled);
  EXPECT_EQ(rep.collectives.by_order, 16);
  EXPECT_LE(rep.max_replay_error_us, 1e-6);
  for (size_t r = 0; r < 8; ++r) EXPECT_NEAR(rep.whatif_by_rank[r] - rep.replay_by_rank[r], 60.0, 1e-6) << "rank " << r;
  EXPECT_NE(to_table(rep).find("step time per rank"), std::string::npos);
  opt.independent_ranks = true;
  auto alone = whatif(files, table, AnalyzeOptions{}, opt, d.str());
  for (size_t r = 0; r < 8; ++r)
    EXPECT_NEAR(alone.whatif_by_rank[r] - alone.replay_by_rank[r], r == 3 ? 2 * 46.0 : 0.0, 1e-6) << "rank " << r;
  EXPECT_THROW(parse_rank_scale("x:gemm=2"), std::invalid_argument);
  EXPECT_THROW(parse_rank_scale("3:gemm"), std::invalid_argument);
  EXPECT_THROW(parse_rank_scale(":gemm=2"), std::invalid_argument);
}

// Stragglers, by hand on the same trace: in each of the 8 decode all-reduce #1 rank 7 enters last,
// 1 us after rank 6 (hold 1 us each: 8 us), while ranks 0..6 wait 7 - r us (28 us per collective,
// 224 us); all-reduce #2 starts at the same time everywhere (a tie: nobody is last).
TEST(TraceWhatIf, StragglersNameTheRankThatHoldsTheOthersBack) {
  TempDir d;
  testgen::write_trace_dir(coupled_spec(), d.str());
  auto files = read_trace(d.str());
  auto rep = stragglers(files, CategoryTable::builtin(), AnalyzeOptions{}, "decode", 2.0, d.str());
  EXPECT_EQ(rep.windows, 2);
  EXPECT_EQ(rep.collectives.by_order, 16);
  ASSERT_EQ(rep.ranks.size(), 8u);
  EXPECT_EQ(rep.ranks[0].rank, 7);
  EXPECT_EQ(rep.ranks[0].last, 8);
  EXPECT_NEAR(rep.ranks[0].hold_us, 8.0, 1e-6);
  EXPECT_NEAR(rep.ranks[0].others_waited_us, 224.0, 1e-6);
  EXPECT_NEAR(rep.ranks[0].waited_us, 0.0, 1e-6);
  for (size_t i = 1; i < 8; ++i) {
    EXPECT_EQ(rep.ranks[i].last, 0);
    EXPECT_NEAR(rep.ranks[i].waited_us, 8.0 * (7 - rep.ranks[i].rank), 1e-6) << rep.ranks[i].rank;
    EXPECT_EQ(rep.ranks[i].collectives, 16);
  }
  EXPECT_NE(to_table(rep).find("held back by: rank 7 (8.0 us over 8 collective(s))"), std::string::npos) << to_table(rep);
  EXPECT_THROW(stragglers({files[0]}, CategoryTable::builtin(), AnalyzeOptions{}, "decode", 2.0, "one"), std::invalid_argument);
}

// Two ranks ran two collectives in opposite orders (r0: X then Y, r1: Y then X, one stream each):
// matched by kernel name they would wait for each other in a circle. The window is replayed with
// each rank's measured collectives instead, with a warning, and still reproduces the trace.
TEST(TraceWhatIf, CollectivesMatchedInACycleFallBackToMeasuredDurations) {
  TempDir d;
  auto rank = [](int r, const char* first, const char* second) {
    return fmt::format(R"json({{"distributedInfo": {{"rank": {}}}, "traceEvents": [
      {{"ph": "X", "cat": "kernel", "name": "{}", "ts": 1000, "dur": 10, "args": {{"stream": 7}}}},
      {{"ph": "X", "cat": "kernel", "name": "{}", "ts": 1010, "dur": 10, "args": {{"stream": 7}}}}]}})json",
                       r, first, second);
  };
  write_text(d.file("r0.json"), rank(0, "ncclKernel_X", "ncclKernel_Y"));
  write_text(d.file("r1.json"), rank(1, "ncclKernel_Y", "ncclKernel_X"));
  auto files = read_trace(d.str());
  WhatIfOptions opt;
  opt.window = "all";
  auto rep = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, d.str());
  EXPECT_EQ(rep.collectives.by_order, 2);
  bool warned = false;
  for (const auto& w : rep.warnings) warned |= w.find("wait for each other in a cycle") != std::string::npos;
  EXPECT_TRUE(warned);
  EXPECT_NEAR(rep.replay_us, 20.0, 1e-6);
  EXPECT_LE(rep.max_replay_error_us, 1e-6);
}

// A graph that can never finish (a dependency cycle, which the inference never builds) ends the
// replay with an error, not a hang.
TEST(TraceWhatIf, ACycleIsAnErrorNotAHang) {
  ReplayGraph g;
  g.nodes.resize(2);
  g.nodes[0].stream = 0;
  g.nodes[0].dur_us = 1;
  g.nodes[0].deps = {1};
  g.nodes[0].dep_lag_us = {0};
  g.nodes[1].stream = 0;  // follows node 0 on its stream, and node 0 waits for it
  g.nodes[1].dur_us = 1;
  try {
    replay_span_us(g);
    ADD_FAILURE() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("could never run"), std::string::npos) << e.what();
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
  auto wi = nlohmann::json::parse(run_cli({"trace", "whatif", d.str(), "--comm-stream", "--sms", "0", "--scale-collective", "nccl=0.5", "--format", "json"}));
  EXPECT_TRUE(wi["changes"]["comm_stream"].get<bool>());
  EXPECT_LT(wi["whatif_us"].get<double>(), wi["replay_us"].get<double>());
  EXPECT_THROW(run_cli({"trace", "analyze", d.file("missing.json")}), CLI::Error);
  write_text(d.file("hw.yaml"), "gpu: x\n");
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--fuse-gemm-ar", "--hw", d.file("hw.yaml")}), CLI::RuntimeError);
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--fuse-gemm-ar"}), CLI::RuntimeError);
  // Options that only act together with another are refused alone instead of doing nothing.
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--comm-consumer-after", "2"}), CLI::RuntimeError);
  EXPECT_NO_THROW(run_cli({"trace", "whatif", d.str(), "--comm-stream", "--sms", "0", "--comm-consumer-after", "2"}));
  EXPECT_THROW(run_cli({"trace", "whatif", d.str(), "--hw", d.file("hw.yaml")}), CLI::RuntimeError);
  // A non-number SM count is named as not a number (it was reported as "not in range 0 to 100000").
  try {
    run_cli({"trace", "whatif", d.str(), "--comm-stream", "--sms", "abc"});
    ADD_FAILURE() << "--sms abc accepted";
  } catch (const CLI::Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("Failed parsing abc"), std::string::npos) << w;
    EXPECT_EQ(w.find("range"), std::string::npos) << w;
  }
}


TEST(TraceCli, DefinitionsHtaStragglersAndPerRankScale) {
  TempDir d;
  testgen::write_trace_dir(coupled_spec(), d.str());
  auto hta = run_cli({"trace", "analyze", d.str(), "--definitions", "hta"});
  EXPECT_NE(hta.find("Holistic Trace Analysis' definitions"), std::string::npos) << hta;
  EXPECT_NE(hta.find("kernel-type breakdown"), std::string::npos) << hta;
  auto hj = nlohmann::json::parse(run_cli({"trace", "analyze", d.str(), "--definitions", "hta", "--format", "json"}));
  EXPECT_EQ(hj["definitions"], "hta");
  EXPECT_EQ(hj["ranks"].size(), 8u);
  auto st = run_cli({"trace", "stragglers", d.str(), "--window", "decode"});
  EXPECT_NE(st.find("held back by: rank 7"), std::string::npos) << st;
  auto sj = nlohmann::json::parse(run_cli({"trace", "stragglers", d.str(), "--format", "json"}));
  EXPECT_EQ(sj["ranks"][0]["rank"], 7);
  auto wj = nlohmann::json::parse(run_cli({"trace", "whatif", d.str(), "--scale-on-rank", "3:tilesize128x128x64=1.5", "--format", "json"}));
  EXPECT_TRUE(wj["ranks_coupled"].get<bool>());
  EXPECT_EQ(wj["changes"]["scale_collective"][0]["rank"], 3);
  for (size_t r = 0; r < 8; ++r)
    EXPECT_NEAR(wj["whatif_us_by_rank"][r].get<double>() - wj["replay_us_by_rank"][r].get<double>(), 60.0, 1e-6) << r;
  EXPECT_THROW(run_cli({"trace", "analyze", d.str(), "--definitions", "perfetto"}), CLI::Error);
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
