// `fusesim tune --from-trace`: the GEMM + all-reduce pairs of a PyTorch profiler (Kineto) trace and
// their distinct shapes, the shapes tune searches. Built with the trace module (FUSESIM_TRACE).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/hardware.hpp"
#include "models/model.hpp"
#include "scenario/tune.hpp"

namespace fusesim::cli {

/// One GEMM kernel and the all-reduce that follows it, as a trace records them.
struct TracePair {
  int rank = 0;                  ///< the file's rank (distributedInfo.rank, else its position)
  int device = -1;               ///< args.device of the GEMM kernel
  std::string gemm_kernel, ar_kernel;
  double gemm_start_us = 0;      ///< on the rank's clock (from its earliest event)
  double gemm_us = 0, ar_us = 0; ///< measured kernel durations
  std::string link;              ///< "same stream" (the all-reduce is the next kernel on the GEMM's stream) or "next launch"
  std::string gemm_op;           ///< the CPU operator that gave the shape ("" without one)
  int64_t m = -1, n = -1, k = -1;  ///< from the operator's "Input Dims" (-1: not in the trace)
  std::string gemm_dtype;        ///< the operator's first input's "Input type"
  int64_t ar_nelems = -1;        ///< elements reduced ("In msg nelems", else the all-reduce op's "Input Dims"; -1: none)
  std::string ar_dtype;          ///< the all-reduce's dtype (its "dtype" field or "Input type")
  int64_t ar_bytes = -1;         ///< ar_nelems x the dtype's size (-1: size unknown)
  int64_t group_size = -1;       ///< "Group size", else distributedInfo.world_size (-1: neither)
  std::string group_size_from;   ///< "Group size" | "distributedInfo.world_size" | ""
  std::string ar_size_from;      ///< "In msg nelems" | "Input Dims of OP" | ""
  /// Why the pair is not tuned ("" when it is): no shapes recorded, a batched GEMM, an all-reduce of
  /// something else than the GEMM's output, no size or group size in the trace.
  std::string problem;
};

/// A distinct shape (M, N, K, world size) over the tunable pairs: how often it occurs, measured times.
struct TraceShape {
  int64_t m = 0, n = 0, k = 0, world_size = 0;
  std::string gemm_dtype, ar_dtype;
  int64_t count = 0;
  std::vector<int> ranks;                   ///< the ranks it occurs on (sorted, distinct)
  std::vector<double> gemm_us, ar_us;       ///< measured, one per pair, in file order
  double median_gemm_us() const;
  double median_ar_us() const;
  /// Per pair GEMM + all-reduce kernel time (what an unfused GEMM then all-reduce costs), median.
  double median_sum_us() const;
};

/// What a trace holds for tune.
struct TracePairs {
  std::string path;
  int files = 0;                     ///< per-rank files read
  int64_t gpu_kernels = 0;           ///< kernels over all ranks
  int64_t allreduces = 0;            ///< all-reduce kernels found
  std::vector<TracePair> pairs;      ///< every pair (tuned or not), by rank then GPU start
  std::vector<TraceShape> shapes;    ///< distinct shapes of the tunable pairs, in order of first occurrence
  std::vector<std::string> warnings; ///< the reader's
};

/**
 * Read a trace (a file or a folder of per-rank files, calibrate/trace's reader) and find every GEMM
 * kernel followed by an all-reduce. An all-reduce: a communication kernel (categories.yaml) whose
 * name matches all_?reduce|cross_device_reduce (the rule of `trace whatif --fuse-gemm-ar`), whose
 * NCCL/RCCL fields say "allreduce", or, for a kernel that names no other collective (not
 * nccl...SendRecv / AllGather / ReduceScatter / Broadcast / AllToAll, no other "Collective name"),
 * whose launch sits inside a CPU op named c10d::allreduce_, nccl:all_reduce or *all_reduce*. Its GEMM: the kernel just before it on its stream when that is
 * a GEMM ("same stream"); otherwise (NCCL runs on its own stream) the last GEMM kernel of the same
 * device launched before it, unless another all-reduce was launched in between ("next launch").
 * M, N, K come from the GEMM's CPU op (aten::mm / addmm / linear / matmul / ..., calibrate/trace
 * gemm_ops, joined through the launch's correlation id); the all-reduce's elements, dtype and group
 * size from its kernel's fields ("In msg nelems", "dtype", "Group size"), else from the Input Dims
 * and Input type of its enclosing all-reduce CPU op, and distributedInfo.world_size. A pair missing
 * any of them, a batched GEMM, or an all-reduce whose element count is not the GEMM's M x N (it
 * reduces something else, e.g. a DDP gradient bucket) carries a `problem` and is not in `shapes`;
 * nothing is guessed. Errors: trace::TraceError naming the file (and byte, line, key) for an
 * unreadable, malformed or truncated trace, an event lacking a required field or with a mistyped
 * one, a trace without GPU kernels.
 */
TracePairs find_gemm_allreduce_pairs(const std::string& path);

/// The pairs and shapes as JSON: {"trace", "files", "gpu_kernels", "allreduces", "pairs": [...],
/// "shapes": [{m, n, k, world_size, gemm_dtype, ar_dtype, count, ranks, measured_gemm_us,
/// measured_allreduce_us, measured_sum_us (medians)}], "not_tuned": count}.
nlohmann::json to_json(const TracePairs& t);

/**
 * scenario::tune for every distinct shape of `t` at its own M: `opt.shapes` holds at most one
 * mapping, the parameters under the trace's (e.g. quant), to which each shape's n, k and world_size
 * are set; opt.ms is set per shape. One result in tune()'s layout with every shape tuned, each
 * shape's entry carrying "trace": {m, n, k, world_size, count, ranks, measured medians}; the
 * result's "trace" is to_json(t); a shape the model refuses (its world size, say) is listed in
 * "not_tuned_shapes" with the model's message. Errors: std::invalid_argument when opt.shapes has
 * more than one mapping, or when no shape of the trace could be tuned (naming the trace, how many
 * pairs it has and why they were not tuned), and when the trace has more than `max_shapes` distinct
 * shapes (bounded work: each shape is a search of hundreds of simulations). A line per shape goes
 * to stderr when `progress` is set.
 */
nlohmann::json tune_trace_shapes(const TracePairs& t, const models::ModelSpec& spec, const hw::Hardware& hw, const std::string& hw_path,
                                 scenario::TuneOptions opt, size_t max_shapes = 64, bool progress = false);

/// What the trace gave, as text for the table output: the counts, each pair not tuned and why (at
/// most `max_lines`, then how many more), and per tuned shape its count and measured medians beside
/// the predicted baseline and best (from tune_trace_shapes' result).
std::string format_trace_summary(const TracePairs& t, const nlohmann::json& result, size_t max_lines = 20);

}  // namespace fusesim::cli
