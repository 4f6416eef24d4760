// The seven real captures from Holistic Trace Analysis' test data (tests/trace/fixtures/hta, MIT):
// every one loads (the ROCm one too), HTA's numbers are reproduced by its definitions, the replay
// with no change reproduces every window's GPU span, the pipelined trace's steps are counted once,
// and at most 5 % of any trace's GPU time is uncategorised.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "calibrate/trace/whatif.hpp"

#ifndef FUSESIM_TRACE_FIXTURES
#error "FUSESIM_TRACE_FIXTURES must name tests/trace/fixtures/hta"
#endif

namespace fusesim::trace {
namespace {

std::string fixture(const std::string& rel) { return std::string(FUSESIM_TRACE_FIXTURES) + "/" + rel; }

struct HtaRef {
  const char* file;
  double idle, compute, non_compute;
  double overlap;  // < 0: none (no communication)
  int64_t comm_us;
  std::vector<std::string> steps_kept;
};

// fixtures/hta/README.md (HTA's numbers, computed with HTA's definitions from its source).
const std::vector<HtaRef>& references() {
  static const std::vector<HtaRef> refs = {
      {"nccl_parser_config/nccl_data.json.gz", 77.78, 17.26, 4.97, 14.31, 24278, {"ProfilerStep#4", "ProfilerStep#5"}},
      {"negative_queue_length_values_check/rank0.json.gz", 69.44, 14.15, 16.41, 1.37, 136490,
       {"ProfilerStep#550", "ProfilerStep#551", "ProfilerStep#552", "ProfilerStep#553"}},
      {"trace_diff/control/control.json.gz", 16.20, 61.23, 22.57, 47.03, 132510,
       {"ProfilerStep#1009", "ProfilerStep#1010", "ProfilerStep#1011", "ProfilerStep#1012", "ProfilerStep#1013"}},
      {"trace_filter/sampled_rank-0.json.gz", 53.56, 17.71, 28.74, 11.81, 195327, {"ProfilerStep#551"}},
      {"trace_filter/sampled_rank-1.json.gz", 54.72, 22.57, 22.72, 20.05, 168027, {"ProfilerStep#551"}},
      {"critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", 98.08, 1.89, 0.03, -1, 0, {}},
      {"amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 98.53, 1.08, 0.39, -1, 0, {"ProfilerStep#1"}},
  };
  return refs;
}

TEST(RealTraces, EveryTraceLoadsIncludingTheRocmOne) {
  for (const auto& ref : references()) {
    SCOPED_TRACE(ref.file);
    auto t = read_trace_file(fixture(ref.file));
    EXPECT_TRUE(t.gzip);
    EXPECT_FALSE(t.gpu_ops.empty());
    EXPECT_TRUE(t.warnings.empty());
  }
  // ROCm: hip runtime calls write args.stream as a hex string ("0x0": the null stream).
  auto amd = read_trace_file(fixture("amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
  EXPECT_EQ(amd.device_name, "AMD Radeon Graphics");
  EXPECT_EQ(amd.gpu_ops.size(), 16u);  // 14 kernels, 2 memcpy
  int with_handle = 0;
  for (const auto& r : amd.runtime_calls)
    if (r.stream_handle == 0) with_handle++;
  EXPECT_EQ(with_handle, 16);  // the 16 launches (hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyWithStream)
  // Timestamps are exact: the first memcpy is at ts 4203669603454.206 us, dur 22.441 us.
  bool found = false;
  for (const auto& g : amd.gpu_ops) {
    if (g.kind != GpuOpKind::memcpy) continue;
    EXPECT_EQ(amd.origin_ns + g.start_ns, int64_t{4203669603454206});
    EXPECT_EQ(g.dur_ns, 22441);
    found = true;
    break;
  }
  EXPECT_TRUE(found);
}

TEST(RealTraces, NcclKernelFieldsAreRead) {
  auto t = read_trace_file(fixture("nccl_parser_config/nccl_data.json.gz"));
  ASSERT_EQ(t.collectives.size(), 21u);  // the 21 NCCL kernels carry them
  const GpuOp* first = nullptr;
  for (const auto& g : t.gpu_ops)
    if (g.collective >= 0 && (!first || g.start_ns < first->start_ns)) first = &g;
  ASSERT_NE(first, nullptr);
  const auto& c = t.collectives[static_cast<size_t>(first->collective)];
  // The earliest: a broadcast of 53120 elements over process group "0" = ranks [0, 1].
  EXPECT_EQ(t.strings.str(c.name), "broadcast");
  EXPECT_EQ(c.in_nelems, 53120);
  EXPECT_EQ(c.out_nelems, 53120);
  EXPECT_EQ(c.group_size, 2);
  EXPECT_EQ(t.strings.str(c.dtype), "Float");
  EXPECT_EQ(t.strings.str(c.pg_name), "0");
  EXPECT_EQ(t.strings.str(c.pg_ranks), "[0, 1]");
}

// --definitions hta reproduces HTA's numbers (to the 0.01 percentage point HTA rounds to: the
// same two-decimal values), steps kept and communication union included.
TEST(RealTraces, HtaDefinitionsReproduceHtasNumbers) {
  for (const auto& ref : references()) {
    SCOPED_TRACE(ref.file);
    auto m = hta_metrics(read_trace_file(fixture(ref.file)));
    EXPECT_NEAR(m.idle_pct, ref.idle, 1e-9);
    EXPECT_NEAR(m.compute_pct, ref.compute, 1e-9);
    EXPECT_NEAR(m.non_compute_pct, ref.non_compute, 1e-9);
    if (ref.overlap < 0) {
      EXPECT_FALSE(m.overlap_pct.has_value());
    } else {
      ASSERT_TRUE(m.overlap_pct.has_value());
      EXPECT_NEAR(*m.overlap_pct, ref.overlap, 1e-9);
    }
    EXPECT_EQ(m.comm_us, ref.comm_us);
    EXPECT_EQ(m.steps_kept, ref.steps_kept);
  }
}

// The kernel-type breakdown of the smallest trace, by hand (event_sync_trace: 7 GPU events, no
// steps): 3 ampere_sgemm of 123 us (COMPUTATION 369 us), 3 memsets of 1 us (MEMORY 3 us) and one
// Stream Wait Event record of 2 us (SYNCHRONIZATION); 374 us in all: 98.66 %, 0.80 %, 0.53 %.
// Temporal: span 348667..368173 = 19506 us, idle 19506 - 374 = 19132 us (98.08 %).
TEST(RealTraces, HtaKernelTypeBreakdownByHand) {
  auto m = hta_metrics(read_trace_file(fixture("critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz")));
  EXPECT_EQ(m.span_us, 19506);
  EXPECT_EQ(m.busy_us, 374);
  EXPECT_EQ(m.compute_us, 369);
  ASSERT_EQ(m.kernel_types.size(), 3u);
  EXPECT_EQ(m.kernel_types[0].type, HtaKernelType::computation);
  EXPECT_EQ(m.kernel_types[0].sum_us, 369);
  EXPECT_NEAR(m.kernel_types[0].pct, 98.66, 1e-9);
  EXPECT_EQ(m.kernel_types[1].type, HtaKernelType::memory);
  EXPECT_EQ(m.kernel_types[1].sum_us, 3);
  EXPECT_NEAR(m.kernel_types[1].pct, 0.80, 1e-9);
  EXPECT_EQ(m.kernel_types[2].type, HtaKernelType::synchronization);
  EXPECT_EQ(m.kernel_types[2].sum_us, 2);
  EXPECT_NEAR(m.kernel_types[2].pct, 0.53, 1e-9);
}

// Replay with no change: every window of every trace (each step, and the whole trace as one
// window) comes back within 0.1 us of its measured GPU span.
TEST(RealTraces, ReplayWithNoChangeReproducesEveryWindowsSpan) {
  auto table = CategoryTable::builtin();
  int windows = 0;
  for (const auto& ref : references()) {
    auto files = read_trace(fixture(ref.file));
    for (const char* w : {"steps", "all"}) {
      SCOPED_TRACE(fmt::format("{} --window {}", ref.file, w));
      WhatIfOptions opt;
      opt.window = w;
      auto rep = whatif(files, table, AnalyzeOptions{}, opt, ref.file);
      ASSERT_FALSE(rep.windows.empty());
      for (const auto& row : rep.windows) {
        for (size_t r = 0; r < row.measured_by_rank.size(); ++r) {
          EXPECT_NEAR(row.replay_by_rank[r], row.measured_by_rank[r], 0.1) << row.window;
          ++windows;
        }
      }
      EXPECT_LE(rep.max_replay_error_us, 0.1);
    }
  }
  // The 7 whole traces, and the step windows holding GPU events: nccl_data 3, negative_queue 5,
  // trace_diff 6, trace_filter 2 + 2, mi250 1 (its ProfilerStep#2 has none), event_sync 1 (no
  // ProfilerStep: one window).
  EXPECT_EQ(windows, 7 + (3 + 5 + 6 + 2 + 2 + 1 + 1));
}

// The directory of two sampled ranks of a 128-rank job: the collectives' group is unknown (no
// "Process Group Ranks", 2 traces of 128), so nothing is coupled and each rank replays as measured.
TEST(RealTraces, TwoSampledRanksOfALargeJobAreNotCoupled) {
  auto files = read_trace(fixture("trace_filter"));
  ASSERT_EQ(files.size(), 2u);
  WhatIfOptions opt;
  opt.window = "steps";
  auto rep = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, "trace_filter");
  EXPECT_EQ(rep.collectives.by_order + rep.collectives.by_sequence, 0);
  EXPECT_GT(rep.collectives.incomplete, 0);
  EXPECT_LE(rep.max_replay_error_us, 0.1);
}

// cuda_event_sync_multi_stream: the CUPTI "Stream Wait Event" record (cudaStreamWaitEvent corr 1389
// on stream 24, waiting for the cudaEventRecord corr 1385 on stream 20) makes the memset on stream
// 24 (corr 1411) wait for the GEMM on stream 20 (corr 27), the only dependency; nothing is inferred.
// Slowing the three 123 us GEMMs x200 (24600 us each), by hand:
//   GEMM on 20: host-released at 348700, ends 373300; GEMM on 28: released at 349097, ends 373697;
//   memset on 24: max(its release 368034, 373300) = 373300, ends 373301; GEMM on 24: released at
//   368050 but after the memset: 373301, ends 397901. Span from the first event (348667): 49234 us.
//   (Without the record the memset would not wait: max(373697, 368050 + 24600) - 348667 = 43983.)
TEST(RealTraces, TheTracesOwnStreamWaitIsTheDependency) {
  auto files = read_trace(fixture("critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz"));
  WhatIfOptions opt;
  opt.window = "all";
  CollectiveScale gemms = parse_collective_scale("ampere_sgemm=200");
  gemms.communication_only = false;  // the GEMMs, as --scale-on-rank would on a one-rank trace
  opt.scale.push_back(gemms);
  auto rep = whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, opt, "event_sync");
  EXPECT_EQ(rep.sync_deps, 1);
  EXPECT_EQ(rep.inferred_deps, 0);
  EXPECT_NEAR(rep.replay_us, 19506.0, 1e-6);
  EXPECT_NEAR(rep.whatif_us, 49234.0, 1e-6);
}

// negative_queue_length rank0: each step's kernels (attributed by launch) run ~160 ms past its CPU
// step, into the next one. Each step's wall is its GPU span less what earlier steps' spans cover,
// so the walls add up to the trace's GPU span (1231461 us = 1683564902781176 - 1683564901549715)
// instead of 1868439 us, and no wall exceeds its CPU step by more than its kernels ran past it.
// Walls of steps 551..554 = e_k - e_(k-1) with the steps' last GPU ends e_550..e_554 =
// ...1920360, ...2135930, ...2352447, ...2568658, ...2781176: 215570, 216517, 216211, 212518.
TEST(RealTraces, PipelinedStepsAreCountedOnce) {
  auto files = read_trace(fixture("negative_queue_length_values_check/rank0.json.gz"));
  auto table = CategoryTable::builtin();
  auto tl = build_timeline(files[0], table, AnalyzeOptions{});
  ASSERT_EQ(tl.windows.size(), 5u);
  double sum = 0, span_sum = 0;
  for (const auto& w : tl.windows) {
    SCOPED_TRACE(w.name);
    sum += w.wall_us;
    span_sum += w.span_us();
    EXPECT_LE(w.wall_us, w.cpu_us() + w.ran_past_us + 1e-6);
    EXPECT_LE(w.busy_us, w.wall_us + 1e-6);
  }
  EXPECT_NEAR(sum, 1231461.0, 1e-6);
  EXPECT_NEAR(span_sum, 1868439.0, 1e-6);
  const double want[] = {215570, 216517, 216211, 212518};
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(tl.windows[static_cast<size_t>(k + 1)].wall_us, want[k], 1e-6) << k;
  // The CPU steps: 209748, 216483, 216119, 215467, 216216 us; the first step's kernels (its own and
  // the 872 events without a launch before step 551) ran 161886 us past its end.
  EXPECT_NEAR(tl.windows[0].cpu_us(), 209748.0, 1e-6);
  EXPECT_NEAR(tl.windows[0].ran_past_us, 161886.0, 1e-6);
  auto rep = analyze(files, table, AnalyzeOptions{}, "all", "rank0");
  double phase_wall = 0;
  for (const auto& p : rep.ranks[0].phases)
    if (p.phase != "all") phase_wall += p.wall_us;
    else EXPECT_NEAR(p.wall_us, 1231461.0, 1e-6);
  EXPECT_NEAR(phase_wall, 1231461.0, 1e-6);
}

// The category table covers the kernel families of these training captures (cuDNN convolutions
// and batch norm, FBGEMM embeddings, multi_tensor_apply optimisers, CUB sorts and scans, Triton
// fused kernels, ROCm's hipBLASLt): at most 5 % of any trace's GPU time falls in "other".
TEST(RealTraces, AtMostFivePercentOfGpuTimeIsUncategorised) {
  auto table = CategoryTable::builtin();
  for (const auto& ref : references()) {
    SCOPED_TRACE(ref.file);
    auto files = read_trace(fixture(ref.file));
    auto rep = analyze(files, table, AnalyzeOptions{}, "all", ref.file);
    const PhaseStats* all = nullptr;
    for (const auto& p : rep.ranks[0].phases)
      if (p.phase == "all") all = &p;
    ASSERT_NE(all, nullptr);
    auto it = all->by_category.find("other");
    double other = it == all->by_category.end() ? 0.0 : it->second.total_us;
    EXPECT_LE(other, 0.05 * all->kernel_us) << other << " of " << all->kernel_us << " us";
  }
}

}  // namespace
}  // namespace fusesim::trace
