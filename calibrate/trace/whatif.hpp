// fusesim trace: replay a trace's GPU work on the engine and answer "what if" questions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/trace/analysis.hpp"
#include "models/sm_sharing/sm_sharing.hpp"

namespace fusesim::trace {

/// Predicted time (microseconds) of a fused GEMM + all-reduce of an M x N x K GEMM (output M x N
/// reduced over world_size ranks). Supplied by the model owner (models/).
using GemmArPredictor = std::function<double(int64_t m, int64_t n, int64_t k, int world_size)>;

/// Makes the predictor of `trace whatif --fuse-gemm-ar --hw FILE` from the hardware file's path (the
/// command line passes one built on the gemm_ar model, cli/commands.cpp). Errors: those of loading it.
using GemmArPredictorFactory = std::function<GemmArPredictor(const std::string& hw_path)>;

/// A duration rescale: GPU events whose name matches `pattern` (RE2 syntax, searched anywhere in the
/// name, case-insensitive, linear in the name: hw::NamePattern) get their duration multiplied by
/// `factor` (> 0), on every rank or (rank >= 0) on that rank only. `--scale-collective` rescales
/// communication events only (the category table's communication class: a pattern such as `gemm`
/// scales no compute kernel); `--scale-on-rank` is a straggler what-if and rescales any event.
struct CollectiveScale {
  std::string pattern;
  hw::NamePattern re;  ///< `pattern` compiled (parse_collective_scale); compiled from it when empty
  double factor = 1.0;
  int rank = -1;
  bool communication_only = true;  ///< false for --scale-on-rank (any GPU event of that rank)
};

/// Parse "REGEX=FACTOR" (the last '=' splits) and compile REGEX. Errors: std::invalid_argument
/// naming the text (no '=', a factor not a finite number > 0, an invalid RE2 pattern).
CollectiveScale parse_collective_scale(const std::string& text);
/// Parse "RANK:REGEX=FACTOR" (`--scale-on-rank`: any GPU event of that rank, communication_only false).
/// Errors: std::invalid_argument naming the text.
CollectiveScale parse_rank_scale(const std::string& text);

struct WhatIfOptions {
  /// Which windows are replayed: prefill | decode (the windows of that phase), steps (every window,
  /// whatever its phase) or all (the whole trace as one window).
  std::string window = "decode";
  double epsilon_us = 2.0;        ///< tolerance of the dependency inference (see ReplayGraph)
  bool comm_stream = false;       ///< move communication kernels to their own stream
  /// With comm_stream: the N-th non-communication event after a collective on its original stream
  /// waits for it (0 = no consumer waits: the optimistic bound "depending only on producers").
  int comm_consumer_after = 0;
  /// With comm_stream: the SM-sharing charge is on (sms > 0) or off (0). When on, `sm_machine` must be
  /// set and sms must equal its SM count (the command line loads it from --sm-hw, default
  /// hw/h200-1gpu.yaml): a compute kernel that the replay puts beside a moved communication kernel is
  /// slowed by models::gemm_beside, the sm_sharing model's round-3 mechanism (see charge_sm_sharing),
  /// and replayed again with that slowdown on the overlapped part.
  int sms = 132;
  /// The machine of the SM-sharing charge (models::sm_share_machine of a hardware file).
  std::shared_ptr<const models::SmShareMachine> sm_machine;
  std::vector<CollectiveScale> scale;
  bool fuse_gemm_ar = false;      ///< replace GEMM + following all-reduce by the predictor's time
  std::string allreduce_regex = "all_?reduce|cross_device_reduce|allreduce";
  GemmArPredictor gemm_ar_predictor;  ///< required when fuse_gemm_ar
  /// What the predictor assumes (hardware file, mode, wire, quant), printed with the result so that
  /// a fused time is never read without its source.
  std::string gemm_ar_model;
  int world_size = 0;                 ///< 0: from the trace (distributedInfo or rank count)
  /// Replay each rank alone (each keeps its measured collective durations, waits included), as
  /// before ranks were replayed together.
  bool independent_ranks = false;
};

/**
 * One rank's window as a dependency graph for replay. Nodes are the window's GPU events in measured
 * start order (times relative to the window's first start, microseconds).
 *
 * Dependencies, in order of trust:
 *  - stream order: every node follows the previous node on its stream (streams are told apart by
 *    device and stream id);
 *  - the trace's own synchronisation where it has it: a CUPTI "Stream Wait Event" record (stream S
 *    waits, from the cudaStreamWaitEvent call with correlation c_w on, for the cudaEventRecord with
 *    correlation c_r on stream X), or roctracer's hipEventRecord / hipStreamWaitEvent calls with
 *    their event and stream handles (handles mapped to GPU streams through the launches that
 *    carry them): the first node on S launched after c_w depends on the last node on X launched
 *    before c_r. A rank with such records uses only them for cross-stream waits;
 *  - otherwise inferred from timing: the node of another stream whose end is the latest at or
 *    before the node's start and within epsilon_us of it (a kernel that ended after the node
 *    started is never taken).
 * Of a node's constraints, the one with the latest measured end binds when the node starts within
 * epsilon_us of it (its lag, the measured start minus that end, may be negative where a trace
 * shows two events of one stream overlapping); after a longer gap it still binds when the node's
 * launch call had returned before that end (the node was queued: a GPU-side delay that moves with
 * it); otherwise the node is host-released at its measured start (the host's launch timeline is
 * held fixed). Every other constraint gets the lag min(0, start - its end), so with measured
 * durations the replay reproduces every measured start exactly (to the engine's picosecond).
 *
 * Collectives (ranks replayed together): a communication node matched to the same collective on
 * the other ranks of its group (see match_collectives) cannot finish before the last member has
 * entered it: its end is max(start, last entry) + tail_us, tail_us = measured end - measured last
 * entry. A member that ended before the last entry on the trace clock (clock skew between hosts)
 * is replayed with its own duration.
 */
struct ReplayGraph {
  enum class Bind : uint8_t { stream_pred, dep, release };
  struct Node {
    uint32_t op = 0;        ///< index into RankTimeline::ops
    double dur_us = 0;
    int64_t stream = 0;     ///< dense id of (device, stream)
    std::vector<int> deps;  ///< cross-stream dependencies (node indices, all smaller)
    std::vector<double> dep_lag_us;  ///< per dep: its lag when it does not bind (<= 0)
    Bind bind = Bind::release;
    int bind_dep = -1;      ///< with Bind::dep: the node whose end (plus lag) fixes the start
    double lag_us = 0;      ///< lag of the binding constraint (stream_pred or dep)
    double pred_lag_us = 0; ///< lag of the stream-order constraint when it does not bind (<= 0)
    double release_us = 0;  ///< with Bind::release: earliest start
    double measured_start_us = 0;
    bool from_sync = false; ///< bind_dep came from the trace's synchronisation records
    double tail_us = 0;     ///< a coupled collective: measured end - the group's last entry
  };
  std::vector<Node> nodes;
  double measured_span_us = 0;
  int64_t t0_ns = 0;        ///< absolute trace clock of the first node's start (origin + start)
  int sync_deps = 0;        ///< cross-stream dependencies taken from synchronisation records
  int inferred_deps = 0;    ///< cross-stream dependencies inferred from timing
  bool sync_records = false;  ///< the rank's trace has synchronisation records (inference off)
};

/// Build the graph of the ops (timeline indices, any order) of one window.
/// Errors: std::invalid_argument for epsilon_us outside 0..1e9.
ReplayGraph infer_replay_graph(const RankTimeline& tl, const std::vector<uint32_t>& ops, double epsilon_us);

/// One matched collective: the (graph, node) of each member, one per rank of its group.
struct CollectiveGroup {
  std::vector<std::pair<int, int>> members;
};

/// How the collectives of a set of graphs (one per rank) were matched.
struct CollectiveMatch {
  std::vector<CollectiveGroup> groups;  ///< complete groups (every rank of the group present)
  int64_t by_sequence = 0;   ///< groups matched by the "Seq" field
  int64_t by_order = 0;      ///< matched as the k-th collective of a process group / kernel name
  int64_t incomplete = 0;    ///< collectives whose group has a rank missing from the replay
  int64_t mismatched = 0;    ///< k-th collectives whose fields (name, sizes, dtype) differ across ranks
  int64_t skewed_members = 0;  ///< members that ended before the last entry (replayed uncoupled)
};

/**
 * Match the communication nodes of graphs[i] (rank ranks[i], timeline tls[i]) across ranks. Key:
 * the NCCL/RCCL kernel fields when present (process group name; "Seq" when written, else the k-th
 * collective of that group on each rank; collective name, element counts and dtype must agree),
 * else the kernel name (the k-th kernel of that name on each rank). Group: "Process Group Ranks"
 * when written, else `default_group` (every rank of the job when the directory holds them all; empty
 * when it does not, e.g. 2 sampled ranks of 128: such collectives stay uncoupled). A group with a
 * rank missing from `ranks` stays uncoupled. Sets tail_us of every coupled member.
 */
CollectiveMatch match_collectives(std::vector<ReplayGraph*> graphs, const std::vector<const RankTimeline*>& tls,
                                  const std::vector<int>& ranks, const std::vector<int>& default_group);

/// The group of a collective without "Process Group Ranks": every rank of `files` when they are the
/// whole job (no distributedInfo.world_size larger than their count), else empty (unknown).
std::vector<int> default_collective_group(const std::vector<TraceFile>& files);

/// Result of replaying several graphs on one engine (a common clock: the trace's).
struct ReplayResult {
  std::vector<std::vector<double>> start_us, end_us;  ///< [graph][node], from the graph's own t0
  std::vector<double> span_us;                        ///< [graph]: last end, from the graph's t0
  uint64_t engine_events = 0;
};

/**
 * Replay graphs together on one fresh sim::Simulation, coupled through `groups` (may be empty).
 * Graph i's nodes are placed at its t0_ns relative to the earliest graph. An event budget of
 * 8 callbacks per node (+1024) ends a pathological replay.
 * Errors: std::logic_error if some node can never start (a dependency cycle); std::range_error for
 * a replay longer than the engine's range (sim::Simulation::max_seconds(), 1.8e7 s);
 * std::runtime_error when the event budget is spent.
 */
ReplayResult replay(const std::vector<const ReplayGraph*>& graphs, const std::vector<CollectiveGroup>& groups);

/// Replay one graph on a fresh sim::Simulation; returns the span (last end, us, from 0).
/// Errors: as replay().
double replay_span_us(const ReplayGraph& g);

struct WhatIfChanges {
  int comm_moved = 0, consumers_added = 0;
  int scaled = 0;
  int fused = 0, fuse_skipped_no_shape = 0;
  /// A GEMM + all-reduce pair --fuse-gemm-ar left unfused because the fused model refused its shape
  /// (K < 256, M = 2^40, ...): the pair keeps its measured times and the replay goes on.
  struct NotFused {
    std::string file;    ///< the trace file (as given)
    std::string event;   ///< the GEMM kernel's name, hw::printable
    int64_t m = 0, n = 0, k = 0;  ///< the joined shape (m includes the batch)
    std::string reason;  ///< the model's error, hw::printable
    int pairs = 1;       ///< how many pairs of this file, kernel, shape and reason
  };
  std::vector<NotFused> not_fused;
  /// Add `o`'s not_fused to this one's, counting repeats of the same file, event, shape and reason.
  void add_not_fused(const std::vector<NotFused>& o);
};

/// Apply the options' changes to a graph of rank `rank` in place. A GEMM + all-reduce pair whose shape
/// the predictor refuses (it throws, or returns a time that is not finite and >= 0) is left as
/// measured and listed in WhatIfChanges::not_fused. Errors: std::invalid_argument for a bad regex or
/// factor, std::runtime_error when fuse_gemm_ar has no predictor.
WhatIfChanges apply_whatif(ReplayGraph& g, const RankTimeline& tl, const WhatIfOptions& opt, int world_size,
                           int rank = -1);

struct WhatIfWindowRow {
  std::string window;  ///< window name ("ProfilerStep#3", "run 1")
  std::string phase;
  double measured_us = 0, replay_us = 0, whatif_us = 0;  ///< max over ranks
  /// With comm_stream and sms > 0: the what-if replayed again with the SM-sharing charge (max over ranks).
  double whatif_charged_us = 0;
  std::vector<double> measured_by_rank, replay_by_rank, whatif_by_rank;
};

struct WhatIfReport {
  std::string path;
  int world_size = 0;
  WhatIfOptions options;
  std::vector<int> ranks;  ///< the rank of each column of the *_by_rank vectors
  std::vector<WhatIfWindowRow> windows;
  WhatIfChanges changes;  ///< summed over ranks and windows
  double measured_us = 0, replay_us = 0, whatif_us = 0;  ///< summed over windows
  /// Per rank, summed over windows: the step time of that rank alone.
  std::vector<double> measured_by_rank, replay_by_rank, whatif_by_rank;
  bool coupled = false;   ///< ranks replayed together
  CollectiveMatch collectives;  ///< summed over windows (groups not kept)
  int sync_deps = 0, inferred_deps = 0;
  double max_replay_error_us = 0;  ///< max |replay - measured| over windows and ranks
  std::vector<std::string> warnings;
  double replay_error() const { return measured_us > 0 ? (replay_us - measured_us) / measured_us : 0; }
  double saving_us() const { return replay_us - whatif_us; }
  double comm_us = 0;  ///< communication kernel time in the replayed windows, max over ranks
  /// The SM-sharing charge (comm_stream with sms > 0): the what-if replayed again with every compute
  /// kernel beside a moved collective slowed by models::gemm_beside on its overlapped part, summed over
  /// windows; the kernels charged, those beside a collective without a grid in the trace (not charged),
  /// and the added kernel time (us, summed over ranks and windows).
  bool charged = false;
  double whatif_charged_us = 0;
  int charged_kernels = 0, uncharged_no_grid = 0;
  /// Of the charged kernels, those beside a collective whose bytes the trace does not give ("In msg
  /// nelems" / "Out msg nelems" / "dtype"): charged for the SMs only, no HBM stretch.
  int charged_without_bytes = 0;
  double interference_us = 0;
  double saving_charged_us() const { return replay_us - whatif_charged_us; }
};

/// Counters of charge_sm_sharing().
struct SmShareCounts {
  int charged = 0;        ///< compute kernels charged
  int no_grid = 0;        ///< beside a collective but without a grid (theirs or the collective's): not charged
  int without_bytes = 0;  ///< charged for the SMs only: the collective beside gives no bytes
};

/**
 * The SM-sharing charge of one replayed graph (times of the replay: start_us / end_us per node, us): each
 * compute kernel overlapping communication kernels gets dur x (f - 1) x overlap / dur added, f =
 * models::gemm_beside(m, gemm, neighbour, dur).slowdown(): the sm_sharing model's round-3 mechanism
 * (the neighbour's blocks placed by the machine's dispatcher order and holding their SMs, the kernel's
 * CTAs in clusters over the GPC slots left, late CTAs, the HBM queue 1 + kappa u / (1 - u)), the same
 * function `fusesim run` computes a sm_sharing case with. What the trace gives and what is assumed:
 * the compute kernel: grid = its args.grid (x*y*z) CTAs, one tile each (tiles = grid: a persistent
 * kernel's tile count is not in the trace), clusters of 1 (the trace has no cluster shape), its block's
 * threads from args.block, and one block per SM (registers and shared memory are not in the trace: the
 * block is taken to fill an SM's shared memory, so no other block shares its SM); the neighbour: the
 * overlapped collective with the largest grid, blocks = its grid, one block per SM likewise, held for
 * the kernel's whole run; its HBM rate = the largest over the overlapped collectives of (In msg nelems +
 * Out msg nelems) x the dtype's bytes / the collective's replayed duration (the bytes it must read and
 * write; none when the trace lacks the fields). Returns the time added (us); fills `counts`.
 * Errors: std::invalid_argument naming the kernel for a communication kernel whose grid is >= the
 * machine's SMs (it would hold every SM) or whose HBM rate is >= the machine's HBM capacity, and for a
 * block that does not fit an SM.
 */
double charge_sm_sharing(ReplayGraph& g, const RankTimeline& tl, const std::vector<double>& start_us,
                         const std::vector<double>& end_us, const models::SmShareMachine& m, SmShareCounts& counts);

/**
 * Replay the selected windows of every rank as measured, then with the changes, and report step
 * times (per window, the max over ranks, and per rank). Ranks are replayed together (windows of
 * the same name on every rank, collectives coupled: a change on one rank reaches the others
 * through the collectives it delays) unless opt.independent_ranks.
 * Errors: as apply_whatif and replay(); std::invalid_argument for a bad window name; TraceError
 * for a rank without GPU events.
 */
WhatIfReport whatif(const std::vector<TraceFile>& files, const CategoryTable& table,
                    const AnalyzeOptions& aopt, const WhatIfOptions& opt, const std::string& path);

nlohmann::json to_json(const WhatIfReport& r);
std::string to_table(const WhatIfReport& r);

// ---------------------------------------------------------------------------------------------
// `fusesim trace stragglers`
// ---------------------------------------------------------------------------------------------

/// One rank's part in the collectives of the selected windows (measured times, trace clock).
struct StragglerRow {
  int rank = 0;
  int64_t collectives = 0;  ///< coupled collectives it took part in
  int64_t last = 0;         ///< of them, those it entered last (alone: a tie counts for nobody)
  /// Sum over the collectives it entered last of (its entry - the next-latest entry): how much
  /// earlier those collectives could have started had it been no later than the others.
  double hold_us = 0;
  /// Sum over those collectives of every other member's wait (last entry - its entry): the time
  /// it kept the others waiting.
  double others_waited_us = 0;
  /// Sum over all its collectives of its own wait (last entry - its entry).
  double waited_us = 0;
  double step_us = 0;       ///< its measured step time, summed over the windows
};

struct StragglerReport {
  std::string path;
  std::string window;
  int windows = 0;
  std::vector<StragglerRow> ranks;  ///< sorted by hold_us, largest first
  CollectiveMatch collectives;
  std::vector<std::string> warnings;
};

/**
 * Which ranks hold the others back: for every collective matched across ranks (as in whatif),
 * the rank that entered last and by how much (see StragglerRow), summed per rank over the
 * selected windows (`window`: prefill, decode, steps or all; windows matched by name across ranks).
 * Errors: std::invalid_argument for fewer than two ranks or a bad window; TraceError for a rank
 * without GPU events.
 */
StragglerReport stragglers(const std::vector<TraceFile>& files, const CategoryTable& table, const AnalyzeOptions& aopt,
                           const std::string& window, double epsilon_us, const std::string& path);
nlohmann::json to_json(const StragglerReport& r);
std::string to_table(const StragglerReport& r);

}  // namespace fusesim::trace

namespace CLI { class App; }
namespace fusesim {
/// `fusesim trace analyze|whatif ...`: adds a "trace" sub-command to app; --fuse-gemm-ar predicts
/// with the predictor `gemm_ar` makes (an empty factory: --fuse-gemm-ar is refused).
void register_trace_commands(CLI::App& app, trace::GemmArPredictorFactory gemm_ar);
}  // namespace fusesim
