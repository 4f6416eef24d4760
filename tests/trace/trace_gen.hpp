// Test/benchmark helper: writes synthetic PyTorch-profiler (Kineto) traces in the real Chrome-trace
// format, with a schedule designed so that every figure the analyzer reports is known exactly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fusesim::trace::testgen {

/**
 * What to generate. Each step is `layers` transformer layers (norm, QKV GEMM, attention, MLA bmm,
 * o_proj GEMM, all-reduce #1, norm, [host gap], router GEMM, top-k, align, fused MoE, shared-expert
 * FP8 GEMM, all-reduce #2, memcpy, residual add) followed by an LM-head GEMM with M = requests.
 * Prefill steps have M = prefill_tokens and every duration times prefill_scale; decode steps have
 * M = decode_batch. Steps are separated by step_gap_us of idle GPU time.
 */
struct GenSpec {
  int ranks = 8;
  int layers = 4;
  int prefill_steps = 1;
  int decode_steps = 2;
  int64_t decode_batch = 64;
  int64_t prefill_tokens = 2048;
  int64_t prefill_requests = 4;  ///< M of the prefill LM head
  double prefill_scale = 8.0;
  bool two_streams = true;   ///< all-reduce #2 on its own stream, overlapping 8 us of compute
  bool step_annotations = true;  ///< ProfilerStep#N user annotations
  bool correlation_in_args = true;  ///< false: kernels carry no args.correlation (ac2g flows only)
  bool amd = false;          ///< hip launch names and an RCCL all-reduce
  bool gzip = false;
  bool extra_events = true;  ///< metadata, instant, counter and unknown-category events
  int python_events_per_kernel = 0;  ///< bulk python_function events (benchmark realism)
  double rank_comm_skew_us = 0.5;    ///< all-reduce #1 lasts 12 + rank * skew us (decode)
  /// Collectives that wait for the slowest rank, as real ones do: the QKV GEMM lasts
  /// 20 + rank * gemm_skew_us (decode), so rank r enters all-reduce #1 at 52 + r * gemm_skew_us
  /// after its layer starts, and all-reduce #1 lasts 12 + (ranks - 1 - r) * gemm_skew_us: every rank
  /// leaves it at 64 + (ranks - 1) * gemm_skew_us (12 us after the last one entered).
  /// rank_comm_skew_us is then unused.
  bool collective_wait = false;
  double gemm_skew_us = 1.0;
  double layer_gap_us = 5.0;         ///< idle gap inside each decode layer (x prefill_scale)
  /// true: the kernel after the layer gap is launched by the host during the gap (host-bound);
  /// false: it was queued long before (the gap is a GPU-side delay).
  bool gap_is_host_late = true;
  double step_gap_us = 50.0;
};

/// Exact answers for one rank and phase, from the schedule's construction.
struct PhaseTruth {
  int windows = 0;
  double wall_us = 0, busy_us = 0, idle_us = 0;
  int64_t idle_gaps = 0;
  double comm_us = 0, overlap_us = 0;
  int64_t kernels = 0;
  std::map<std::string, std::pair<int64_t, double>> by_category;  ///< count, total us
  std::vector<double> step_wall_us;  ///< GPU span of each step
};

struct ShapeTruth {
  std::string op;
  int64_t m, n, k, batch;
  std::string dtype;
  int64_t calls_per_rank;
};

struct GenTruth {
  std::vector<std::map<std::string, PhaseTruth>> ranks;  ///< [rank]["prefill"|"decode"]
  std::map<std::string, std::vector<ShapeTruth>> shapes;  ///< phase -> shapes
  std::map<std::string, int64_t> empty_input_dims;  ///< op -> count over all ranks
  int64_t ops_with_input_dims = 0;                  ///< over all ranks
  std::map<std::string, int64_t> skipped;           ///< "ph/cat" -> count over all ranks
  std::vector<std::string> files;
  uint64_t bytes = 0;
};

/// Write one file per rank (rank0.json[.gz], ...) into `dir` (created if missing).
GenTruth write_trace_dir(const GenSpec& spec, const std::string& dir);
/// Write a single rank's trace to `path`.
GenTruth write_trace_file(const GenSpec& spec, int rank, const std::string& path);

}  // namespace fusesim::trace::testgen
