// The GPU-group substrate every model on a node is built on: per rank an HBM (memory-fabric)
// resource, links per direction between members (a mesh or a pair) or per-GPU ports into a switch
// (an NVLink domain), copy-engine queues and their puts, streaming kernels, CU remote loads and stores
// through one remote-load model (Little's law), group barriers, one join latch, and the one span type
// (a phase of a call, a kernel of a timeline) results are made of. What differs between machines and
// kernels is the configuration below (capacities, costs, lane names) and the arguments of each
// operation, not the code.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/flow.hpp"
#include "sim/servers.hpp"
#include "sim/simulation.hpp"

namespace fusesim::hw {

/// One phase of a call or one kernel of a timeline, in microseconds from the start of the run.
struct Span {
  std::string name;   ///< phase or kernel name ("gemm", "combine_impl")
  double start_us = 0, end_us = 0;
  int device = -1;    ///< the GPU it ran on; -1: a phase of the call's critical rank (no device named)
  std::string role;   ///< the device's role where a model gives one (AFD: "attention" | "ffn"); else empty
};

/// Spans as the scenario JSON's "phases": [{"name", "start_us", "end_us", "role"?}], the name
/// written "devN/NAME" when the device is set.
nlohmann::json spans_json(const std::vector<Span>& spans);

/**
 * A join counter: its continuation runs once, when `need` arrivals were counted. Arrivals may come
 * before arm() (they are counted); arm(0, fn) runs fn at once. The continuation is moved out before
 * it runs, so it may arm or destroy other joins.
 */
class Join {
 public:
  void arm(int need, std::function<void()> fn);
  void arrive();
  /// A shared join armed with `need` and `fn`, as a callable that counts one arrival per call
  /// (the callable keeps the join alive).
  static std::function<void()> after(int need, std::function<void()> fn);

 private:
  void check();
  int got_ = 0, need_ = -1;
  bool fired_ = false;
  std::function<void()> fn_;
};

/**
 * CU remote loads by Little's law: `lanes` lanes each keeping `per_lane` bytes in flight move
 * lanes x per_lane bytes per round trip, the round trip growing with what a lane issues one load after
 * another (round_trip + per_lane / 16 x issue_per_16B), and the rate falling past a congestion knee of
 * bytes in flight per GPU: rate /= 1 + congestion_per_MiB x excess MiB. Link bytes per payload byte:
 * 1 / read_efficiency forward, request_cost backward (no backward hop when unset).
 * Sources of the parameters: lsa.* and links.read_* in hw/params.hpp.
 */
struct RemoteLoadModel {
  double round_trip_s = 0;
  double issue_per_16B_s = 0;
  double congestion_knee_B = std::numeric_limits<double>::infinity();
  double congestion_per_MiB = 0;
  double read_efficiency = 1;
  std::optional<double> request_cost;
  /// Bytes/s of all the lanes together (the caller splits it over peers where it needs to).
  double rate(double lanes, double per_lane) const;
};

/// How a group is laid out on the engine. Lane names: "gpuR/<hbm_name>", "gpuR/fabric-requests",
/// "gpuS/<link_name>-><D>" (mesh), "gpuG/<link_name>_out" and "_in" (ports), "gpuS/<queue_name>->D".
struct GroupConfig {
  enum class Links { None, Mesh, Ports };
  int ranks = 0;
  double hbm_Bps = 0;               ///< capacity of each rank's HBM resource (bytes/s, read + write)
  std::string hbm_name = "hbm";
  /// A second per-rank resource at hbm_Bps that GEMM tile loads and copy-engine bytes cross (the MI355X
  /// model's stand-in for the queueing copy transactions add to latency-bound loads; see models/gemm_ar).
  bool request_fabric = false;
  Links links = Links::Mesh;
  double link_Bps = 0;              ///< one link (mesh) or one port (ports), one direction
  std::string link_name = "xgmi";
  bool copy_queues = false;         ///< one copy-engine queue per (source, destination) pair
  double command_latency = 0;       ///< per put: submission to first byte (seconds)
  std::string queue_name = "sdma";
  double copy_hbm_cost = 1.0;       ///< HBM bytes a copied byte costs at each end
  double copy_request_cost = 0;     ///< request-fabric bytes per copied byte at each end (request_fabric)
  /// Added to a put's start while a put in the opposite direction is queued or running (seconds).
  double opposite_direction_latency = 0;
  RemoteLoadModel remote;
  double barrier_latency = 0;       ///< a group barrier: last arrival to release (seconds)
};

/// A full mesh of `ranks` GPUs with one copy-engine queue per (source, destination) pair and CU
/// remote loads, from a model's hardware struct H (SI units) with the members fabric_bandwidth
/// (HBM), link_per_direction, command_latency, remote_read_latency, congestion_knee,
/// congestion_per_MiB, read_efficiency and flag_barrier: the one description of the MI355X mesh
/// that gemm_ar's composite paths and the collective model share (each adds its own policies).
template <class H>
GroupConfig copy_mesh_config(const H& h, int ranks) {
  GroupConfig g;
  g.ranks = ranks;
  g.hbm_Bps = h.fabric_bandwidth;
  g.links = GroupConfig::Links::Mesh;
  g.link_Bps = h.link_per_direction;
  g.copy_queues = true;
  g.command_latency = h.command_latency;
  g.remote.round_trip_s = h.remote_read_latency;
  g.remote.congestion_knee_B = h.congestion_knee;
  g.remote.congestion_per_MiB = h.congestion_per_MiB;
  g.remote.read_efficiency = h.read_efficiency;
  g.barrier_latency = h.flag_barrier;
  return g;
}

/**
 * A GPU group on one engine (a Simulation and its FlowNetwork, owned by the caller). Units: bytes,
 * bytes/s, seconds. Resource ids index FlowNetwork; errors are the FlowNetwork's (std::invalid_argument
 * for negative sizes or latencies).
 */
class GpuGroup {
 public:
  GpuGroup(sim::Simulation& sim, sim::FlowNetwork& net, GroupConfig cfg);
  GpuGroup(const GpuGroup&) = delete;
  GpuGroup& operator=(const GpuGroup&) = delete;

  sim::Simulation& sim;
  sim::FlowNetwork& net;
  int ranks() const { return cfg_.ranks; }
  const GroupConfig& config() const { return cfg_; }
  sim::ResourceId hbm(int r) const { return hbm_.at(r); }
  /// The request-fabric resource of rank r (GroupConfig::request_fabric).
  sim::ResourceId req(int r) const { return req_.at(r); }
  /// Mesh: the link s -> d.
  sim::ResourceId link(int s, int d) const { return links_.at(s).at(d); }
  /// Ports: rank g's port into the switch (out) and out of it (in).
  sim::ResourceId port_out(int g) const { return out_.at(g); }
  sim::ResourceId port_in(int g) const { return in_.at(g); }
  double hbm_capacity() const { return cfg_.hbm_Bps; }
  /// The hops of `weight` bytes per byte from s to d: the link s -> d (mesh) or s's out and d's in port.
  std::vector<sim::PathHop> route(int s, int d, double weight = 1.0) const;

  // ---- copy engines --------------------------------------------------------------------------
  /// A copy-engine put of `bytes` from src to dst on queue (src, dst): after the queue's command
  /// latency (and opposite_direction_latency while the reverse queue is busy) a flow crosses
  /// src's HBM (copy_hbm_cost; src_hop replaces it), src's request fabric (copy_request_cost), the
  /// link, dst's HBM (dst_hop replaces it) and dst's request fabric (unless dst_request is false),
  /// capped and share-weighted at rate_cap. on_done when the bytes have landed; remote_ready (if
  /// set) when a stream of another GPU waiting on the put's completion event may go on: remote_wait
  /// after the data started to move, but not before the put is done.
  struct Put {
    int src = 0, dst = 0;
    double bytes = 0, rate_cap = 0;
    std::string label;
    std::function<void()> on_done;
    std::optional<sim::PathHop> src_hop, dst_hop;
    bool dst_request = true;
    std::function<void()> remote_ready;
    double remote_wait = 0;
  };
  void put(Put p);
  sim::CommandQueue& queue(int s, int d) { return *queues_.at(s).at(d); }
  /// Largest number of commands outstanding on any of rank s's outgoing queues.
  int max_outstanding(int s) const;
  /// fn once every outgoing queue of rank s is idle.
  void when_queues_idle(int s, std::function<void()> fn);
  /// Copy-engine bytes/s now crossing rank r's HBM (puts from and to r).
  double copy_rate(int r) const;

  // ---- kernels on one rank -------------------------------------------------------------------
  /// A kernel streaming `bytes` (reads + writes) through rank's HBM at hbm_weight per byte, plus
  /// extra_hops, after start_latency; capped at rate_cap, share-weighted by share. Lane: `lane`
  /// (empty: the HBM resource's).
  struct Stream {
    int rank = 0;
    std::string name;
    double bytes = 0;
    sim::Seconds start_latency = 0;
    double rate_cap = std::numeric_limits<double>::infinity();
    double share = 1.0;
    double hbm_weight = 1.0;
    std::vector<sim::PathHop> extra_hops;
    std::string lane;
    std::function<void()> on_done;
  };
  sim::FlowId stream(Stream s);

  /// Rate of CU remote loads (GroupConfig::remote).
  double remote_load_rate(double lanes, double per_lane) const { return cfg_.remote.rate(lanes, per_lane); }
  /// CU loads by `reader` of `bytes` from `source`'s HBM, written to reader's HBM at write_factor
  /// per byte: path source HBM, the route source -> reader at 1 / read_efficiency, the route back at
  /// request_cost (when set), reader HBM. `path` replaces that path (a window in host memory).
  struct RemoteLoad {
    int reader = 0, source = 0;
    double bytes = 0, rate_cap = 0, write_factor = 1.0;
    sim::Seconds start_latency = 0;
    std::string name, lane;
    std::function<void()> on_done;
    std::optional<std::vector<sim::PathHop>> path;
  };
  sim::FlowId remote_load(RemoteLoad l);
  /// CU (SM) stores by `writer` of `bytes` into `dest`: path `via` (the writer's own limits: an SM's
  /// store rate, a combine's gather), the route writer -> dest, and dest's HBM (`landing` replaces
  /// it; land = false: the stores' landing is not charged).
  struct RemoteStore {
    int writer = 0, dest = 0;
    double bytes = 0;
    double rate_cap = std::numeric_limits<double>::infinity();
    double share = 1.0;
    sim::Seconds start_latency = 0;
    std::string name, lane;
    std::vector<sim::PathHop> via;
    std::optional<sim::PathHop> landing;
    bool land = true;
    std::function<void()> on_done;
  };
  sim::FlowId remote_store(RemoteStore s);

  // ---- synchronisation -----------------------------------------------------------------------
  /// A group barrier (system fence + flag barrier): when every rank has arrived, each rank's
  /// continuation runs barrier_latency later, in rank order; the trace draws a "barrier" slice per
  /// rank from its arrival to the release on lane gpuR/barrier.
  class Barrier {
   public:
    explicit Barrier(GpuGroup& g);
    void arrive(int r, std::function<void()> fn);

   private:
    GpuGroup& g_;
    std::vector<std::function<void()>> cont_;
    std::vector<double> arrived_;
    int left_;
  };
  /// A new barrier owned by the group.
  Barrier& barrier();

 private:
  GroupConfig cfg_;
  std::vector<sim::ResourceId> hbm_, req_, out_, in_;
  std::vector<std::vector<sim::ResourceId>> links_;
  std::vector<std::vector<std::unique_ptr<sim::CommandQueue>>> queues_;
  std::vector<std::set<sim::FlowId>> copy_flows_;
  std::vector<std::vector<double>> data_start_;
  std::vector<std::unique_ptr<Barrier>> barriers_;
};

}  // namespace fusesim::hw
