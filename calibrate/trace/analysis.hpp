// fusesim trace: per-rank timelines (joins, categories, phases) and the `trace analyze` report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/trace/categories.hpp"
#include "calibrate/trace/kineto_reader.hpp"

namespace fusesim::trace {

enum class Phase : uint8_t { prefill, decode, unknown };
const char* to_string(Phase p);

/**
 * How windows (steps) and phases are found. The rule:
 *  1. Steps: CPU events (cpu_op or user_annotation) whose name fully matches `step_regex` (default
 *     ProfilerStep#N) are the windows. A GPU event belongs to the step whose CPU interval encloses
 *     the runtime call that launched it (joined by correlation id); an event without a launch falls
 *     in the last step that started before it on the GPU clock.
 *  2. Phase of a step: the median M of the GEMMs joined to the step's kernels (see gemm_ops in
 *     categories.yaml): M <= decode_max_m is decode (M is the batch of sequences), larger is
 *     prefill (M is the number of prompt tokens). A step with no joined GEMM is "unknown".
 *  3. Without step annotations: every GEMM with a joined shape votes decode/prefill by the same M
 *     rule in GPU start order; runs of fewer than min_phase_votes votes are merged into the run
 *     before them; each run is a window, and the boundary between two runs is the largest idle gap
 *     between the last vote of one and the min_phase_votes-th vote of the next (so a step's
 *     trailing GEMM with a small M, e.g. a prefill LM head with M = requests, stays in its step).
 */
struct AnalyzeOptions {
  std::string step_regex = R"(ProfilerStep#\d+)";
  int64_t decode_max_m = 256;   ///< largest GEMM M still called decode
  int min_phase_votes = 4;      ///< smallest run of GEMM votes that forms its own window (rule 3)
  double gap_min_us = 1.0;      ///< idle gaps shorter than this are not counted as gaps (still idle)
};

/// One GPU event of a rank with its joins resolved.
struct TimelineOp {
  uint32_t gpu = 0;        ///< index into TraceFile::gpu_ops
  int32_t category = 0;    ///< index into CategoryTable::categories()
  int32_t family = 0;      ///< index into RankTimeline::families
  int32_t launch_op = -1;  ///< innermost CPU op enclosing the launch (index into cpu_ops), -1 if none
  int32_t gemm_op = -1;    ///< CPU op giving the GEMM shape (a gemm_ops match at or above launch_op)
  int32_t shape = -1;      ///< index into RankTimeline::shapes
  int32_t window = -1;     ///< index into RankTimeline::windows, -1 if outside every window
  int32_t launch_call = -1;  ///< runtime call that launched it (TraceFile::runtime_calls), -1 if none
  bool launched() const { return launch_call >= 0; }
};

struct Window {
  std::string name;  ///< "ProfilerStep#3" or "run 2"
  Phase phase = Phase::unknown;
  double start_us = 0, end_us = 0;  ///< GPU span of its events
  int64_t median_m = -1;            ///< median GEMM M behind the phase decision, -1 if none
};

/**
 * A rank's GPU events sorted by start time, each classified and joined to its CPU operator, and
 * its windows (steps) with phases. Refers to (does not own) the TraceFile and CategoryTable.
 */
struct RankTimeline {
  const TraceFile* file = nullptr;
  const CategoryTable* table = nullptr;
  int rank = 0;
  std::vector<TimelineOp> ops;
  std::vector<Window> windows;
  std::vector<GemmShape> shapes;
  std::vector<std::string> families;
  bool steps_from_annotations = false;

  const GpuOp& gpu(const TimelineOp& op) const { return file->gpu_ops[op.gpu]; }
  OpClass cls(const TimelineOp& op) const { return table->category(op.category).cls; }
};

/// Build a rank's timeline. Errors: std::runtime_error for an invalid step_regex.
RankTimeline build_timeline(const TraceFile& file, const CategoryTable& table,
                            const AnalyzeOptions& opt);

/// The timeline indices of each window's ops ([window][k], in start order).
std::vector<std::vector<uint32_t>> ops_by_window(const RankTimeline& tl);

struct CategoryStat {
  int64_t count = 0;
  double total_us = 0;
  double avg_us() const { return count ? total_us / static_cast<double>(count) : 0; }
};

/// Statistics of one rank over one phase (summed over its windows) or over the whole trace.
struct PhaseStats {
  std::string phase;          ///< "prefill", "decode", "unknown" or "all"
  int windows = 0;
  int64_t events = 0;         ///< GPU events
  double wall_us = 0;         ///< sum over windows of (last end - first start)
  double busy_us = 0;         ///< union of GPU event intervals
  double idle_us = 0;         ///< wall - busy
  int64_t idle_gaps = 0;      ///< gaps >= gap_min_us between busy intervals
  double largest_gap_us = 0;
  double kernel_us = 0;       ///< sum of GPU event durations
  std::map<std::string, CategoryStat> by_category;
  std::map<std::string, CategoryStat> by_family;  ///< key "category/family"
  std::vector<int> streams;
  double comm_us = 0;          ///< sum of communication event durations
  double comm_busy_us = 0;     ///< per stream union of communication intervals, summed
  double comm_overlap_us = 0;  ///< comm_busy_us that runs concurrently with compute on another stream
  double overlap_fraction() const { return comm_busy_us > 0 ? comm_overlap_us / comm_busy_us : 0; }
  int64_t gemm_kernels = 0, gemm_kernels_with_shape = 0;
};

struct RankReport {
  int rank = 0;
  std::string file, device_name;
  uint64_t bytes = 0, events = 0;
  int64_t gpu_events = 0, launched = 0;  ///< GPU events / those joined to a launch
  std::map<std::string, int64_t> skipped;
  std::string window_rule;  ///< "ProfilerStep annotations" or "GEMM M runs"
  std::vector<Window> windows;
  std::vector<PhaseStats> phases;  ///< the selected phases, then "all" when the window is all
};

struct BalanceRow {
  std::string phase;
  double min_us = 0, median_us = 0, max_us = 0;
  int min_rank = -1, max_rank = -1;
};

struct ShapeRow {
  std::string phase, op;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype;
  int64_t calls = 0, kernels = 0;
  double kernel_us = 0;
  std::string families, example_kernel;
};

struct AnalysisReport {
  std::string path;
  int world_size = 0;
  std::string window;  ///< prefill | decode | all
  std::vector<RankReport> ranks;
  std::vector<BalanceRow> comm_balance;
  std::vector<ShapeRow> gemm_shapes;
  int64_t ops_with_input_dims = 0, ops_with_empty_input_dims = 0;
  std::map<std::string, int64_t> empty_input_dims_by_op;
  std::map<std::string, int64_t> skipped;  ///< over all ranks
};

/**
 * Analyse ranks: per rank and phase statistics, cross-rank communication balance, GEMM shapes and
 * empty-Input-Dims counts. `window` is "prefill", "decode" or "all" (all phases found plus the
 * whole trace). Errors: std::invalid_argument for another window name.
 */
AnalysisReport analyze(const std::vector<TraceFile>& files, const CategoryTable& table,
                       const AnalyzeOptions& opt, const std::string& window, const std::string& path);

/// Statistics of the ops of `tl` whose index is in `op_indices` (all one window or a set of them).
PhaseStats window_stats(const RankTimeline& tl, const std::vector<std::vector<uint32_t>>& windows,
                        const std::string& phase, const AnalyzeOptions& opt);

nlohmann::json to_json(const AnalysisReport& r);
/// Human-readable tables (fixed-width text).
std::string to_table(const AnalysisReport& r);

}  // namespace fusesim::trace
