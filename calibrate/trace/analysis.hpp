// fusesim trace: per-rank timelines (joins, categories, steps, phases) and the `trace analyze` report.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
 *     ProfilerStep#N, matched by a hand-written scanner; another pattern by RE2, hw::NamePattern) are
 *     the windows. A GPU event belongs to the step whose CPU
 *     interval encloses the runtime call that launched it (joined by correlation id), whenever it
 *     ran: in a pipelined trace a step's kernels may run long after its CPU step ended. An event
 *     without a launch falls in the last step that started before it on the GPU clock.
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

/// Full-match test of step annotation names (AnalyzeOptions::step_regex), case-sensitive, in time
/// linear in the name: the default pattern ProfilerStep#\d+ by a scanner, another one by RE2
/// (hw::NamePattern; RE2 syntax). Errors: std::runtime_error naming --step-regex when the pattern
/// is not a valid RE2 pattern (lookaround and backreferences are refused).
class StepMatcher {
 public:
  explicit StepMatcher(const std::string& pattern);
  bool match(std::string_view name) const;
  /// True when the pattern is the default one (matched by the scanner).
  bool scanner() const { return scanner_; }

 private:
  bool scanner_ = true;
  hw::NamePattern re_;
};

/// True for "ProfilerStep#" followed by one or more decimal digits and nothing else.
bool is_profiler_step_name(std::string_view name);

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

/// A half-open interval of integer nanoseconds [b, e) on a rank's clock (relative to its origin).
struct NsInterval {
  int64_t b = 0, e = 0;
};

/**
 * One window (step). Times in microseconds relative to the file's origin (TraceFile::origin_ns).
 * The GPU timeline is partitioned between windows so that no time is counted twice when steps
 * overlap (pipelining): window w owns `wall_us` = the part of its own GPU span [start_us, end_us]
 * that no earlier window's span covers; busy/idle of that part count every GPU event in it.
 */
struct Window {
  std::string name;  ///< "ProfilerStep#3" or "run 2"
  Phase phase = Phase::unknown;
  double start_us = 0, end_us = 0;  ///< GPU span of its own events (0, 0 when it has none)
  int64_t median_m = -1;            ///< median GEMM M behind the phase decision, -1 if none
  int64_t gpu_events = 0;           ///< GPU events attributed to it
  bool from_annotation = false;     ///< a step annotation (else a GEMM-M run)
  double cpu_start_us = 0, cpu_end_us = 0;  ///< the step annotation's CPU interval
  double wall_us = 0;      ///< its share of the GPU timeline (see above)
  double busy_us = 0;      ///< GPU busy time (any event) within that share
  /// With an annotation: how long its own GPU events ran past the end of its CPU step
  /// (max(0, end_us - cpu_end_us)); the wall can exceed the CPU step by at most this much.
  double ran_past_us = 0;
  double span_us() const { return end_us - start_us; }
  double cpu_us() const { return cpu_end_us - cpu_start_us; }
};

/**
 * A rank's GPU events sorted by start time, each classified and joined to its CPU operator, and
 * its windows (steps) with phases and their share of the timeline. Refers to (does not own) the
 * TraceFile and CategoryTable.
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
  /// Per window: the intervals it owns (its span less earlier windows' spans), sorted, disjoint.
  std::vector<std::vector<NsInterval>> regions;
  /// Union of every GPU event interval of the rank, sorted, disjoint.
  std::vector<NsInterval> busy;

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
  int windows = 0;            ///< windows with at least one GPU event
  int empty_windows = 0;      ///< windows of this phase holding no GPU event
  int64_t events = 0;         ///< GPU events
  double wall_us = 0;         ///< sum of the windows' timeline shares (never counts time twice)
  double busy_us = 0;         ///< GPU busy time within them
  double idle_us = 0;         ///< wall - busy
  double span_us = 0;         ///< sum of the windows' own GPU spans (overlaps when steps pipeline)
  double cpu_us = 0;          ///< sum of the windows' CPU step durations (annotations only)
  int64_t idle_gaps = 0;      ///< gaps >= gap_min_us between busy intervals
  double largest_gap_us = 0;
  double kernel_us = 0;       ///< sum of GPU event durations
  std::map<std::string, CategoryStat> by_category;
  std::map<std::string, CategoryStat> by_family;  ///< key "category/family"
  std::vector<int64_t> streams;
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
  int empty_windows = 0;           ///< windows without GPU events (any phase)
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
  std::vector<std::string> warnings;       ///< the reader's and the analysis' (all ranks)
};

/**
 * Analyse ranks: per rank and phase statistics, per-step figures, cross-rank communication
 * balance, GEMM shapes and empty-Input-Dims counts. `window` is "prefill", "decode" or "all" (all
 * phases found plus the whole trace). Errors: std::invalid_argument for another window name;
 * TraceError (require_gpu_events) for a rank without GPU events.
 */
AnalysisReport analyze(const std::vector<TraceFile>& files, const CategoryTable& table,
                       const AnalyzeOptions& opt, const std::string& window, const std::string& path);

/// Statistics of the given windows (indices into tl.windows) of one rank: wall/busy/idle from
/// their timeline shares, categories and overlap from their own (launch-attributed) events.
PhaseStats window_stats(const RankTimeline& tl, const std::vector<int>& windows, const std::string& phase,
                        const AnalyzeOptions& opt);
/// Statistics of the whole trace of one rank (wall = first GPU start to last GPU end).
PhaseStats whole_trace_stats(const RankTimeline& tl, const AnalyzeOptions& opt);

nlohmann::json to_json(const AnalysisReport& r);
/// Human-readable tables (fixed-width text).
std::string to_table(const AnalysisReport& r);

// ---------------------------------------------------------------------------------------------
// Holistic Trace Analysis' definitions (`fusesim trace analyze --definitions hta`)
// ---------------------------------------------------------------------------------------------

/// HTA's kernel type of a GPU event name (HTA's regexes, matched at the start of the name:
/// communication ^nccl|^hip|^hccl|.*ncclKernel.*, memory ^(hip)?Memcpy|^(hip)?Memset|^dma).
enum class HtaKernelType : uint8_t { communication, computation, memory, synchronization };
const char* to_string(HtaKernelType t);
HtaKernelType hta_kernel_type(std::string_view name);

/// Sum of one kernel type's event durations (integer us after HTA's rounding) and its share.
struct HtaTypeRow {
  HtaKernelType type = HtaKernelType::computation;
  int64_t events = 0;
  int64_t sum_us = 0;
  double pct = 0;  ///< of the sum over all types, rounded to 2 decimals
};

/**
 * One rank's figures under HTA's definitions (facebookresearch/HolisticTraceAnalysis, the
 * temporal breakdown, communication/computation overlap and kernel-type breakdown):
 *  - GPU events: events with a numeric args.stream other than -1 (kernels, memcpy, memset and
 *    CUPTI "cuda_sync" records such as Stream Wait Event);
 *  - kept when their CPU launch (the runtime call of the same correlation id) starts before the
 *    last ProfilerStep#N annotation: the last step and events with no launch in the file are
 *    dropped; without any ProfilerStep every GPU event is kept;
 *  - times rounded inward to integer microseconds (start up, end down; a shorter event is empty);
 *  - type by name (hta_kernel_type); cuda_sync records count as GPU time but not as computation
 *    (synchronization), which is what reproduces HTA's 1.89 % / 0.03 % on
 *    cuda_event_sync_multi_stream;
 *  - temporal breakdown over the span (first kept start to last kept end): idle = span - |union of
 *    all|, compute = |union of computation|, non-compute = |union of all| - compute, each as a
 *    percentage rounded to 2 decimals (round half to even, like pandas);
 *  - overlap = |union(computation) ∩ union(communication)| / |union(communication)|, rounded to 2
 *    decimals (absent without communication);
 *  - kernel-type breakdown: per type, the sum of event durations and its share of the total.
 */
struct HtaMetrics {
  int rank = 0;
  std::string file;
  std::vector<std::string> steps_kept;  ///< ProfilerStep names before the last one
  std::string step_dropped;             ///< the last ProfilerStep ("" without steps)
  int64_t gpu_events = 0;               ///< kept
  int64_t dropped_events = 0;           ///< GPU events dropped by the step filter
  int64_t span_us = 0, busy_us = 0, idle_us = 0, compute_us = 0, non_compute_us = 0;
  double idle_pct = 0, compute_pct = 0, non_compute_pct = 0;
  int64_t comm_us = 0;       ///< |union(communication)|
  int64_t overlap_us = 0;    ///< |union(computation) ∩ union(communication)|
  std::optional<double> overlap_pct;
  std::vector<HtaTypeRow> kernel_types;
};

/// HTA's metrics of one rank (see HtaMetrics). Errors: TraceError when no GPU event is kept.
HtaMetrics hta_metrics(const TraceFile& file);

struct HtaReport {
  std::string path;
  std::vector<HtaMetrics> ranks;
  std::vector<std::string> warnings;
};
HtaReport hta_report(const std::vector<TraceFile>& files, const std::string& path);
nlohmann::json to_json(const HtaReport& r);
std::string to_table(const HtaReport& r);

}  // namespace fusesim::trace
