// Hardware parameters as a model reads them: the shared vocabulary of machine concepts (one
// declaration per concept, whichever model reads it) and typed bindings that read a hardware file
// into a model's struct in one pass, each key bound to a member, required or with its default.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw/hardware.hpp"

namespace fusesim::hw {

/// How a model reads one declared parameter: required (a file used by the model must set it), or
/// with the default the model states where that default is honest (in SI units).
struct HwRead {
  ParamDecl decl;
  std::optional<double> fallback;  ///< value used when the file does not set the key; none: required
  bool required() const { return !fallback.has_value(); }
};

/**
 * A model's typed hardware struct `S` (plain doubles, SI units) and the keys its members are read
 * from: `S s = schema.read(hw)` reads every bound key once. Required keys the file lacks raise
 * std::out_of_range naming the key and the file (Hardware::get); optional ones take their default.
 * The schema is also what the registry derives a model's required and unread key lists from.
 */
template <class S>
class HwSchema {
 public:
  struct Field {
    HwRead read;
    double S::*member;
  };
  HwSchema(std::initializer_list<Field> fields) : fields_(fields) {}
  /// The bindings `fields`, read in this order (a model that picks its bindings per topology).
  explicit HwSchema(std::vector<Field> fields) : fields_(std::move(fields)) {}
  /// Read every bound key of `hw` into a new S (members not bound keep their initialiser).
  S read(const Hardware& hw) const {
    S s{};
    for (const auto& f : fields_)
      s.*(f.member) = f.read.fallback ? hw.get_or(f.read.decl.key, *f.read.fallback) : hw.get(f.read.decl.key);
    return s;
  }
  /// The declarations and how each is read, in binding order.
  std::vector<HwRead> reads() const {
    std::vector<HwRead> out;
    for (const auto& f : fields_) out.push_back(f.read);
    return out;
  }

 private:
  std::vector<Field> fields_;
};

/// A required binding of `decl` to member `m` of S.
template <class S>
typename HwSchema<S>::Field required(double S::*m, const ParamDecl& decl) {
  return {{decl, std::nullopt}, m};
}
/// An optional binding: `fallback` (SI) when the file does not set the key.
template <class S>
typename HwSchema<S>::Field optional(double S::*m, const ParamDecl& decl, double fallback) {
  return {{decl, fallback}, m};
}

/// The one declaration of each machine concept more than one model reads, or that a model of the
/// same machine would read (keys, units, bounds and descriptions live here, not in the models): the
/// GPU and its memory, links, kernel launches, the copy engines and the CU remote-load model of
/// hw/group.hpp, the all-reduce kernels' synchronisation and the library collective. Each returns
/// the declaration of the key named beside it (a model binds it to a member of its struct).
namespace vocab {
const ParamDecl& compute_units();       ///< gpu.compute_units: CUs (AMD) or SMs (NVIDIA) per GPU
const ParamDecl& hbm_capacity();        ///< gpu.hbm_capacity: bytes of HBM per GPU
const ParamDecl& mall_capacity();       ///< gpu.mall_capacity: bytes of last-level cache (MALL) per GPU
const ParamDecl& fabric_bandwidth();    ///< memory.fabric_bandwidth: read + write bytes/s of one GPU's memory
const ParamDecl& write_cost();          ///< memory.write_cost: a streaming kernel's written byte, in read bytes of HBM time
const ParamDecl& link_per_direction();  ///< links.per_direction: one link (pair bundle or switch port), one direction
const ParamDecl& read_efficiency();     ///< links.read_efficiency: payload share of a link under remote loads
const ParamDecl& read_request_cost();   ///< links.read_request_cost: reverse-direction bytes per loaded byte
const ParamDecl& launch_gap();          ///< kernel.launch_gap: gap between dependent kernels of one stream
const ParamDecl& kernel_fixed_cost();   ///< kernel.fixed_cost: a kernel's fixed cost beyond its data movement
const ParamDecl& queue_peak();          ///< sdma.queue_peak: one copy-engine queue's peak put rate
const ParamDecl& command_latency();     ///< sdma.command_latency: a put's submission to its first byte
const ParamDecl& copy_fabric_cost();    ///< sdma.fabric_cost: a copy byte's cost on the fabric-request lane
const ParamDecl& hbm_source_efficiency();        ///< sdma.hbm_source_efficiency: queue-peak share from an HBM source
const ParamDecl& device_submit();                ///< sdma.device_submit: a put issued from inside a kernel
const ParamDecl& submit_cost_per_outstanding();  ///< sdma.submit_cost_per_outstanding: per command still queued
const ParamDecl& remote_read_latency(); ///< lsa.remote_read_latency: round trip of a CU remote load
const ParamDecl& issue_time_per_16B();  ///< lsa.issue_time_per_16B: added round trip per 16 B a lane holds
const ParamDecl& congestion_knee();     ///< lsa.congestion_knee: bytes in flight per GPU past which loads congest
const ParamDecl& congestion_per_MiB();  ///< lsa.congestion_per_MiB: throughput loss per MiB past the knee
const ParamDecl& stage_overhead();      ///< lsa.stage_overhead: per-stage setup and barrier of a two-stage all-reduce
const ParamDecl& ar_loads_per_peer();   ///< lsa.ar_loads_per_peer: 16-byte loads a lane of an all-reduce holds per peer
const ParamDecl& flag_barrier();        ///< sync.flag_barrier: fence + flag barrier among the group
const ParamDecl& ring_bus_bandwidth_per_link();  ///< rccl.bus_bandwidth_per_link: ring all-reduce bus bandwidth
const ParamDecl& ring_step_latency();            ///< rccl.step_latency: ring all-reduce per-step latency
/// Keys that describe a machine but that no model reads (gpu.clock, gpu.hbm_bandwidth, links.per_gpu,
/// links.latency, the matrix peak rates): a hardware file may set them as documentation.
const std::vector<ParamDecl>& machine_description();
}  // namespace vocab

}  // namespace fusesim::hw
