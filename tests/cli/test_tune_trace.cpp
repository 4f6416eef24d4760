// tune --from-trace (cli/tune_trace.hpp): the GEMM + all-reduce pairs of real profiler traces (each
// pair not tuned says why), the distinct shapes of a generated tensor-parallel trace tuned at their
// own M with their counts and measured times, and hostile traces refused with the file and field.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "calibrate/trace/kineto_reader.hpp"
#include "cli/tune_trace.hpp"
#include "hw/io.hpp"
#include "models/model.hpp"
#include "tests/test_util.hpp"
#include "tests/trace/trace_gen.hpp"

using namespace fusesim;
using namespace fusesim::test;

TEST(TuneTrace, RealDdpTraceNamesWhyEachPairIsNotTuned) {
  // HTA's control trace (8-rank DDP training, rank 3, record_shapes on): every NCCL all-reduce is a
  // gradient bucket (nccl:all_reduce's Input Dims, e.g. 45310188 floats), never the M x N output of
  // the GEMM launched before it, so each pair is listed as not tuned and nothing is tuned.
  const std::string path = kRoot + "/tests/trace/fixtures/hta/trace_diff/control/control.json.gz";
  const cli::TracePairs t = cli::find_gemm_allreduce_pairs(path);
  EXPECT_EQ(t.files, 1);
  EXPECT_EQ(t.allreduces, 18);
  ASSERT_EQ(t.pairs.size(), 18u);
  EXPECT_TRUE(t.shapes.empty());
  for (const auto& p : t.pairs) {
    EXPECT_EQ(p.rank, 3);
    EXPECT_EQ(p.link, "next launch");  // NCCL runs on its own stream
    EXPECT_GT(p.m, 0);
    EXPECT_EQ(p.group_size, 8);
    EXPECT_EQ(p.group_size_from, "distributedInfo.world_size");
    EXPECT_EQ(p.ar_size_from, "Input Dims of nccl:all_reduce");
    EXPECT_EQ(p.ar_dtype, "float");
    EXPECT_EQ(p.ar_bytes, p.ar_nelems * 4);
    EXPECT_NE(p.problem.find("it reduces something else"), std::string::npos) << p.problem;
  }
  EXPECT_EQ(t.pairs[0].ar_nelems, 45310188);
  const auto hw = models::load_hardware(kRoot + "/hw/mi355x-8gpu.yaml");
  scenario::TuneOptions o;
  const std::string e = error_of<std::invalid_argument>([&] { cli::tune_trace_shapes(t, *models::find_spec("gemm_ar"), hw, "hw", o); });
  EXPECT_NE(e.find("--from-trace " + path + ": nothing to tune: 18 GEMM + all-reduce pairs, 18 not tuned"), std::string::npos) << e;
  const std::string text = cli::format_trace_summary(t, nlohmann::json::object());
  EXPECT_NE(text.find("not tuned: rank 3 GEMM"), std::string::npos) << text;
}

TEST(TuneTrace, RealTraceWithoutShapesSaysSoPerPair) {
  // HTA's NCCL trace carries the collective fields (In msg nelems, Group size, dtype) but no Input
  // Dims: a pair whose GEMM op is aten::mm says the trace has no shapes; nothing is guessed.
  const cli::TracePairs t = cli::find_gemm_allreduce_pairs(kRoot + "/tests/trace/fixtures/hta/nccl_parser_config/nccl_data.json.gz");
  ASSERT_FALSE(t.pairs.empty());
  EXPECT_TRUE(t.shapes.empty());
  int no_shapes = 0;
  for (const auto& p : t.pairs) {
    EXPECT_EQ(p.m, -1);
    EXPECT_EQ(p.ar_size_from, "In msg nelems");
    EXPECT_EQ(p.group_size, 2);
    EXPECT_EQ(p.group_size_from, "Group size");
    EXPECT_FALSE(p.problem.empty());
    if (p.problem.find("the trace has no shapes: its CPU op 'aten::mm' carries no Input Dims (record the trace with record_shapes=True)") !=
        std::string::npos)
      ++no_shapes;
  }
  EXPECT_GT(no_shapes, 0);
}

TEST(TuneTrace, GeneratedTensorParallelTraceTunesEachDistinctShape) {
  // 8 ranks, 2 layers, one prefill step (M = 2048) and two decode steps (M = 64): each layer's o_proj
  // GEMM (aten::mm [M, 1024] x [1024, 7168]) is followed on its stream by an NCCL all-reduce of its
  // [M, 7168] output: 16 prefill pairs and 32 decode pairs, two shapes. The second all-reduce
  // (vllm's, on its own stream) follows the router GEMM (N = 256): not its output, not tuned.
  trace::testgen::GenSpec g;
  g.layers = 2;
  const std::string dir = test_tmp("tp_trace");
  std::filesystem::remove_all(dir);
  trace::testgen::write_trace_dir(g, dir);
  const cli::TracePairs t = cli::find_gemm_allreduce_pairs(dir);
  EXPECT_EQ(t.files, 8);
  ASSERT_EQ(t.shapes.size(), 2u);
  EXPECT_EQ(t.shapes[0].m, 2048);
  EXPECT_EQ(t.shapes[1].m, 64);
  for (const auto& s : t.shapes) {
    EXPECT_EQ(s.n, 7168);
    EXPECT_EQ(s.k, 1024);
    EXPECT_EQ(s.world_size, 8);
    EXPECT_EQ(s.ranks.size(), 8u);
  }
  EXPECT_EQ(t.shapes[0].count, 16);
  EXPECT_EQ(t.shapes[1].count, 32);
  // The generator's durations: o_proj 10 us (x 8 in prefill), all-reduce #1 12 + rank x 0.5 us.
  EXPECT_DOUBLE_EQ(t.shapes[1].median_gemm_us(), 10.0);
  EXPECT_DOUBLE_EQ(t.shapes[1].median_ar_us(), 12.0 + 0.5 * 3.5);
  int other = 0;
  for (const auto& p : t.pairs)
    if (!p.problem.empty()) {
      ++other;
      EXPECT_EQ(p.n, 256);
      EXPECT_NE(p.problem.find("the GEMM's output M x N = "), std::string::npos) << p.problem;
    }
  EXPECT_EQ(other, 48);
  // Each shape tuned at its own M, its count and measured times beside the prediction.
  const auto hw = models::load_hardware(kRoot + "/hw/mi355x-8gpu.yaml");
  scenario::TuneOptions o;
  o.shapes = {nlohmann::json{{"quant", "blockscale"}}};
  o.only = {"gather_dtype", "gather_transport"};
  o.fixed = {{"mode", "fused-sdma"}};
  o.baseline = {{"mode", "rccl"}};
  // Bounded work: a trace with more distinct shapes than --max-shapes is refused with the count.
  const std::string many = error_of<std::invalid_argument>([&] { cli::tune_trace_shapes(t, *models::find_spec("gemm_ar"), hw, "hw", o, 1); });
  EXPECT_NE(many.find("2 distinct GEMM + all-reduce shapes, more than --max-shapes 1"), std::string::npos) << many;
  const auto res = cli::tune_trace_shapes(t, *models::find_spec("gemm_ar"), hw, kRoot + "/hw/mi355x-8gpu.yaml", o);
  ASSERT_EQ(res["shapes"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& sh = res["shapes"][i];
    EXPECT_EQ(sh["shape"]["n"], 7168);
    EXPECT_EQ(sh["shape"]["k"], 1024);
    EXPECT_EQ(sh["shape"]["world_size"], 8);
    EXPECT_EQ(sh["shape"]["quant"], "blockscale");
    ASSERT_EQ(sh["points"].size(), 1u);
    EXPECT_EQ(sh["points"][0]["m"], t.shapes[i].m);
    EXPECT_EQ(sh["trace"]["count"], t.shapes[i].count);
    EXPECT_GT(sh["points"][0]["best"]["predicted_us"].get<double>(), 0);
  }
  EXPECT_EQ(res["trace"]["not_tuned"], 48);
  const std::string text = cli::format_trace_summary(t, res);
  EXPECT_NE(text.find("shape M=2048 N=7168 K=1024 world size 8: 16 pairs on 8 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("measured per pair (median): GEMM 10.0 us + all-reduce 13.8 us = 23.8 us; predicted: baseline "), std::string::npos) << text;
}

TEST(TuneTrace, HostileTracesAreRefusedNamingTheFileAndField) {
  // Bad JSON, a kernel without its duration, a trace without GPU kernels: each a TraceError naming
  // the file (and the field), before any tuning.
  const std::string bad = write_tmp("bad.json", "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\",, }]}");
  std::string e = error_of<trace::TraceError>([&] { cli::find_gemm_allreduce_pairs(bad); });
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("byte"), std::string::npos) << e;
  const std::string nodur = write_tmp("nodur.json", "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
                                                    "\"ts\": 10, \"args\": {\"stream\": 7, \"device\": 0}}]}");
  e = error_of<trace::TraceError>([&] { cli::find_gemm_allreduce_pairs(nodur); });
  EXPECT_NE(e.find("nodur.json"), std::string::npos) << e;
  EXPECT_NE(e.find("dur"), std::string::npos) << e;
  const std::string cpu = write_tmp("cpu.json", "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 0, \"tid\": 1, "
                                                "\"ts\": 10, \"dur\": 5, \"args\": {}}]}");
  e = error_of<trace::TraceError>([&] { cli::find_gemm_allreduce_pairs(cpu); });
  EXPECT_NE(e.find("cpu.json"), std::string::npos) << e;
  e = error_of<trace::TraceError>([&] { cli::find_gemm_allreduce_pairs(test_tmp("does-not-exist.json")); });
  EXPECT_NE(e.find("does-not-exist.json"), std::string::npos) << e;
}

TEST(TuneTrace, KernelNamesCannotForgeOrRecolourSummaryLines) {
  // A GEMM kernel name holding a newline, a would-be gnuplot/shell escape and an ESC sequence: the
  // pair's "not tuned" line stays one line, with the newline and ESC written as escapes.
  const std::string path = write_tmp(
      "forge.json",
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\\n!touch PWNED\\u001b[2J\", \"ts\": 1, \"dur\": 5, \"pid\": 0, "
      "\"tid\": 7, \"args\": {\"stream\": 7, \"device\": 0, \"correlation\": 1}}, {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
      "\"ncclKernel_AllReduce_RING_LL_Sum_bf16\", \"ts\": 7, \"dur\": 5, \"pid\": 0, \"tid\": 7, \"args\": {\"stream\": 7, \"device\": 0, "
      "\"correlation\": 2, \"In msg nelems\": 10, \"Group size\": 8}}]}");
  const cli::TracePairs t = cli::find_gemm_allreduce_pairs(path);
  ASSERT_EQ(t.pairs.size(), 1u);
  EXPECT_EQ(t.pairs[0].gemm_kernel, "gemm\n!touch PWNED\x1b[2J");  // kept exactly (JSON output)
  const std::string text = cli::format_trace_summary(t, nlohmann::json::object());
  EXPECT_NE(text.find("GEMM 'gemm\\n!touch PWNED\\x1b[2J'"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;  // the counts line and the pair's line
}
