// fusesim trace: replay a trace's GPU work on the engine and answer "what if" questions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/trace/analysis.hpp"

namespace fusesim::trace {

/// Predicted time (microseconds) of a fused GEMM + all-reduce of an M x N x K GEMM (output M x N
/// reduced over world_size ranks). Supplied by the model owner (models/).
using GemmArPredictor = std::function<double(int64_t m, int64_t n, int64_t k, int world_size)>;

/// Makes the predictor of `trace whatif --fuse-gemm-ar --hw FILE` from the hardware file's path (the
/// command line passes one built on the gemm_ar model, cli/commands.cpp). Errors: those of loading it.
using GemmArPredictorFactory = std::function<GemmArPredictor(const std::string& hw_path)>;

/// A collective rescale: GPU events whose name matches `pattern` (ECMAScript, searched,
/// case-insensitive) get their duration multiplied by `factor` (> 0).
struct CollectiveScale {
  std::string pattern;
  double factor = 1.0;
};

/// Parse "REGEX=FACTOR" (the last '=' splits). Errors: std::invalid_argument naming the text.
CollectiveScale parse_collective_scale(const std::string& text);

struct WhatIfOptions {
  std::string window = "decode";  ///< prefill | decode | all: which windows are replayed
  double epsilon_us = 2.0;        ///< tolerance of the dependency inference (see ReplayGraph)
  bool comm_stream = false;       ///< move communication kernels to their own stream
  /// With comm_stream: the N-th non-communication event after a collective on its original stream
  /// waits for it (0 = no consumer waits: the optimistic bound "depending only on producers").
  int comm_consumer_after = 0;
  std::vector<CollectiveScale> scale;
  bool fuse_gemm_ar = false;      ///< replace GEMM + following all-reduce by the predictor's time
  std::string allreduce_regex = "all_?reduce|cross_device_reduce|allreduce";
  GemmArPredictor gemm_ar_predictor;  ///< required when fuse_gemm_ar
  /// What the predictor assumes (hardware file, mode, wire, quant), printed with the result so that
  /// a fused time is never read without its source.
  std::string gemm_ar_model;
  int world_size = 0;                 ///< 0: from the trace (distributedInfo or rank count)
};

/**
 * One rank's window as a dependency graph for replay. Nodes are the window's GPU events in measured
 * start order (times relative to the window's first start, microseconds).
 *
 * Dependency rule (inferred from timing alone; the trace has no event records):
 *  - every node follows the previous node on its stream (stream order);
 *  - a node may wait on a node of another stream: the one whose end is latest within
 *    [start - epsilon_us, start + epsilon_us]. It is taken as the binding dependency when the node
 *    started after a gap longer than epsilon_us on its own stream, or when it ended later than the
 *    node's stream predecessor (the later of two candidate constraints is the one that held);
 *  - otherwise a node that starts within epsilon_us of its stream predecessor's end is "chained";
 *    so is a node after a longer gap whose launch call (joined by correlation id) had returned
 *    before the predecessor ended: it was queued, so the gap is a GPU-side delay that moves with
 *    the predecessor;
 *  - any other node (after a gap, launched late or not joined, with no such end on another
 *    stream) is host-released: it cannot start before its measured offset (`release_us`), i.e.
 *    the host's launch timeline is held fixed.
 * The binding constraint keeps its measured lag (`lag_us`, the measured start minus the end it
 * waited for, 0..epsilon_us), so with measured durations the replay reproduces every measured
 * start exactly (up to events on one stream that overlap in the trace).
 */
struct ReplayGraph {
  enum class Bind : uint8_t { stream_pred, dep, release };
  struct Node {
    uint32_t op = 0;        ///< index into RankTimeline::ops
    double dur_us = 0;
    int stream = 0;
    std::vector<int> deps;  ///< cross-stream dependencies (node indices, all smaller)
    Bind bind = Bind::release;
    int bind_dep = -1;      ///< with Bind::dep: the node whose end (plus lag) fixes the start
    double lag_us = 0;
    double release_us = 0;  ///< with Bind::release: earliest start
    double measured_start_us = 0;
  };
  std::vector<Node> nodes;
  double measured_span_us = 0;
};

/// Build the graph of the ops (timeline indices, any order) of one window.
ReplayGraph infer_replay_graph(const RankTimeline& tl, const std::vector<uint32_t>& ops, double epsilon_us);

/// Replay a graph on a fresh sim::Simulation; returns the span (last end, us, from 0).
/// Errors: std::logic_error if some node can never start (a dependency cycle).
double replay_span_us(const ReplayGraph& g);

struct WhatIfChanges {
  int comm_moved = 0, consumers_added = 0;
  int scaled = 0;
  int fused = 0, fuse_skipped_no_shape = 0;
};

/// Apply the options' changes to a graph in place. Errors: std::invalid_argument for a bad regex
/// or factor, std::runtime_error when fuse_gemm_ar has no predictor.
WhatIfChanges apply_whatif(ReplayGraph& g, const RankTimeline& tl, const WhatIfOptions& opt, int world_size);

struct WhatIfWindowRow {
  std::string window;  ///< window name ("ProfilerStep#3", "run 1")
  std::string phase;
  double measured_us = 0, replay_us = 0, whatif_us = 0;  ///< max over ranks
  std::vector<double> measured_by_rank, replay_by_rank, whatif_by_rank;
};

struct WhatIfReport {
  std::string path;
  int world_size = 0;
  WhatIfOptions options;
  std::vector<WhatIfWindowRow> windows;
  WhatIfChanges changes;  ///< summed over ranks and windows
  double measured_us = 0, replay_us = 0, whatif_us = 0;  ///< summed over windows
  double replay_error() const { return measured_us > 0 ? (replay_us - measured_us) / measured_us : 0; }
  double saving_us() const { return replay_us - whatif_us; }
  double comm_us = 0;  ///< communication kernel time in the replayed windows, max over ranks
};

/**
 * Replay the selected windows of every rank as measured, then with the changes, and report step
 * times (per window, the max over ranks). Ranks are replayed independently (each keeps its own
 * measured collective durations, which include waiting for other ranks).
 * Errors: as apply_whatif; std::invalid_argument for a bad window name.
 */
WhatIfReport whatif(const std::vector<TraceFile>& files, const CategoryTable& table,
                    const AnalyzeOptions& aopt, const WhatIfOptions& opt, const std::string& path);

nlohmann::json to_json(const WhatIfReport& r);
std::string to_table(const WhatIfReport& r);

}  // namespace fusesim::trace

namespace CLI { class App; }
namespace fusesim {
/// `fusesim trace analyze|whatif ...`: adds a "trace" sub-command to app; --fuse-gemm-ar predicts
/// with the predictor `gemm_ar` makes (an empty factory: --fuse-gemm-ar is refused).
void register_trace_commands(CLI::App& app, trace::GemmArPredictorFactory gemm_ar);
}  // namespace fusesim
