// fusesim engine: fluid flow network with weighted max-min fair sharing.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sim/simulation.hpp"

namespace fusesim::sim {

using ResourceId = int;
using FlowId = int;

/// What a flow consumes of one resource: `weight` bytes of the resource's capacity per byte of
/// flow progress (e.g. a copy that reads and writes the same HBM has weight 2 there).
struct PathHop {
  ResourceId resource;
  double weight = 1.0;
};

/// A transfer to start on a FlowNetwork.
struct FlowSpec {
  std::string name;              ///< label for traces
  double bytes = 0;              ///< payload bytes (>= 0)
  std::vector<PathHop> path;     ///< resources crossed; may be empty (then only rate_cap limits it)
  double rate_cap_Bps = std::numeric_limits<double>::infinity();  ///< per-flow ceiling, bytes/s
  Seconds start_latency = 0;     ///< delay before bytes start to move (s, >= 0)
  /// Share weight in the max-min solution: when resources are saturated, flows receive rate in
  /// proportion to this value (1 = plain max-min). Setting it to a flow's demand (its rate cap)
  /// gives demand-proportional sharing at a saturated resource.
  double share = 1.0;
  std::string lane;              ///< trace lane override (default: the first hop's resource)
  std::function<void()> on_done; ///< called once, at completion time
};

/// Per-resource statistics of a finished (or running) network.
struct ResourceStats {
  std::string name;
  double capacity_Bps = 0;
  double bytes = 0;        ///< weighted bytes carried (sum over flows of weight * progress)
  Seconds busy = 0;        ///< time with at least one active flow
};

/**
 * Fluid flow network: resources with a capacity in bytes/s, flows that cross a weighted path of
 * resources. Rates are the weighted max-min fair solution (progressive filling: all unfrozen flows
 * rise in proportion to their share weight until a resource saturates or a flow hits its cap), and
 * are re-solved only when a flow starts or ends; the network schedules exactly one wake-up, at the
 * next completion.
 *
 * Units: bytes, bytes/s, seconds. Errors: std::invalid_argument for negative bytes, latency or
 * weight, a non-positive share, an unknown resource id, or a negative capacity. A flow whose rate
 * is zero (zero-capacity resource on its path) never completes; stalled() reports such flows.
 */
class FlowNetwork {
 public:
  explicit FlowNetwork(Simulation& sim) : sim_(sim) {}
  /// Add a resource; capacity_Bps >= 0 (0 = blocked). Returns its id.
  ResourceId add_resource(std::string name, double capacity_Bps);
  /// Start a flow now (its bytes move after spec.start_latency). Returns its id.
  FlowId start(FlowSpec spec);
  /// Current rate of a flow in bytes/s (0 if not yet moving or done).
  double rate(FlowId f) const;
  /// Bytes a flow still has to move.
  double remaining(FlowId f) const;
  bool done(FlowId f) const;
  /// Number of flows that started and are not finished.
  int active() const { return active_count_; }
  /// Flows still active with zero rate and nothing scheduled (can never finish).
  std::vector<std::string> stalled() const;
  const std::vector<ResourceStats>& stats() { settle(); return rstats_; }
  const std::string& resource_name(ResourceId r) const { return res_.at(r).name; }
  double capacity(ResourceId r) const { return res_.at(r).capacity; }
  /// Total flows started / completed (engine statistics).
  long started() const { return started_; }
  long completed() const { return completed_; }

 private:
  struct Resource {
    std::string name;
    double capacity;
    int active_flows = 0;
    Seconds busy_since = -1;
  };
  struct Flow {
    FlowSpec spec;
    double remaining;
    double rate = 0;
    bool moving = false;
    bool finished = false;
    Seconds t_start = 0;
  };
  void begin_moving(FlowId f);
  void settle();              // advance all moving flows' progress to now
  void resolve();             // recompute max-min rates and the next wake-up
  void on_wake(uint64_t gen);
  void finish(FlowId f);

  Simulation& sim_;
  std::vector<Resource> res_;
  std::vector<ResourceStats> rstats_;
  std::vector<Flow> flows_;
  std::vector<FlowId> moving_;  // flows currently moving bytes
  Seconds last_settle_ = 0;
  uint64_t wake_gen_ = 0;
  Timer wake_;
  int active_count_ = 0;
  long started_ = 0, completed_ = 0;
  bool in_batch_ = false;
};

}  // namespace fusesim::sim
