#include "models/afd/hardware.hpp"

#include <string>
#include <utility>

namespace fusesim::afd {
namespace {
using hw::Quantity;
constexpr double us = 1e-6, GBps = 1e9;
enum Topologies : unsigned { kNvlink = 1, kPods = 2, kBoth = kNvlink | kPods };

/// One hardware parameter of the model: how it is read into its AfdHw member, and which topologies
/// read it (kNvlink: the NVLink-domain model, any topology but pods; kPods: the cross-node model).
struct AfdParam {
  hw::HwSchema<AfdHw>::Field field;
  unsigned read_on;
};

/// Every parameter the AFD model reads, declared once (the machine concepts it shares with other
/// models from hw/params.hpp), in the order the bindings read them.
const std::vector<AfdParam>& afd_params() {
  static const std::vector<AfdParam> p{
      // H100 / H200 SXM (HARDWARE.md): only bounds the SM counts a case may ask for.
      {hw::optional(&AfdHw::compute_units, hw::vocab::compute_units(), 132), kBoth},
      {hw::required(&AfdHw::fabric_bandwidth, hw::vocab::fabric_bandwidth()), kBoth},
      {hw::required(&AfdHw::nvlink_latency, {"nvlink.latency", Quantity::Time, 0.05 * us, 10 * us,
              "one NVLink store/flag round trip seen by a waiting warp"}), kNvlink},
      {hw::required(&AfdHw::link_per_direction, hw::vocab::link_per_direction()), kBoth},
      {hw::required(&AfdHw::sm_store_peak, {"nvlink.sm_store_peak", Quantity::Bandwidth, 10 * GBps, 2000 * GBps,
              "usable NVLink rate per GPU per direction for SM-driven stores to peers (all peers together)"}), kBoth},
      {hw::required(&AfdHw::combine_finish, {"afd.combine_finish", Quantity::Time, 0 * us, 50 * us,
              "last combine row to combine_impl end (finish flags, exit)"}), kBoth},
      {hw::required(&AfdHw::combine_fixed, {"afd.combine_fixed", Quantity::Time, 0 * us, 50 * us,
              "combine_impl start to first reduced row sent"}), kNvlink},
      {hw::required(&AfdHw::combine_gather_peak, {"afd.combine_gather_peak", Quantity::Bandwidth, 10 * GBps, 20000 * GBps,
              "expert-row gather rate of all combine SMs of one GPU"}), kNvlink},
      {hw::required(&AfdHw::combine_per_dest, {"afd.combine_per_dest", Quantity::Time, 0 * us, 20 * us,
              "FFN combine: serial cost per Attention rank it returns rows to (per-destination finish "
              "flags and tail publication, issued one destination after another)"}), kNvlink},
      {hw::required(&AfdHw::combine_row_rate, {"afd.combine_row_rate", Quantity::Bandwidth, 1 * GBps, 1000 * GBps,
              "expert-row bytes one combine SM gathers and reduces per s"}), kNvlink},
      {hw::required(&AfdHw::combine_store_peak, {"afd.combine_store_peak", Quantity::Bandwidth, 10 * GBps, 2000 * GBps,
              "reduced-row store rate of one FFN GPU's combine to all peers together, with unlimited combine "
              "SMs (see combine_store_per_sm)"}), kNvlink},
      {hw::required(&AfdHw::combine_store_per_sm, {"afd.combine_store_per_sm", Quantity::Bandwidth, 0 * GBps, 1000 * GBps,
              "reduced-row store rate one FFN combine SM issues; in series with combine_store_peak: "
              "1/rate = 1/peak + 1/(combine SMs x this) (0: the peak alone)"}), kNvlink},
      {hw::required(&AfdHw::combine_token_latency, {"afd.combine_token_latency", Quantity::Time, 0.05 * us, 50 * us,
              "time one combine warp holds a token: gather its expert rows, reduce, store to the peer "
              "(Little's law: per-destination rate = SMs x warps per destination x token bytes / this)"}), kNvlink},
      {hw::required(&AfdHw::combine_warps_per_sm, {"afd.combine_warps_per_sm", Quantity::Count, 1, 64,
              "combine warps per SM; they are split evenly over the domain's ranks (warps per destination "
              "= this / ranks), each warp holding one token in flight"}), kNvlink},
      {hw::required(&AfdHw::count_issue_share, {"afd.count_issue_share", Quantity::Ratio, 0.05, 1.5,
              "count trigger: a source's count store to the FFN ranks leaves its NVLink queue after the "
              "source has emitted this share of one pass over its T tokens (share x T x token bytes); the "
              "FFN's copy epilogue is launched (programmatic dependent launch) when every source's count "
              "arrived, and waits for the whole dispatch before expanding"}), kNvlink},
      {hw::required(&AfdHw::dispatch_exit_lead, {"afd.dispatch_exit_lead", Quantity::Time, 0 * us, 10 * us,
              "afd FFN dispatch_impl: time from the last block's programmatic-launch trigger (blocks done "
              "with their receive loops) to the kernel's recorded end; the copy epilogue is launched then "
              "when the count trigger has not launched it earlier"}), kNvlink},
      {hw::required(&AfdHw::dispatch_finish, {"afd.dispatch_finish", Quantity::Time, 0 * us, 50 * us,
              "last payload byte to dispatch_impl end (finish flags, exit)"}), kBoth},
      {hw::required(&AfdHw::dispatch_fixed, {"afd.dispatch_fixed", Quantity::Time, 0 * us, 50 * us,
              "dispatch_impl start to first payload byte (launch, count notify)"}), kNvlink},
      {hw::required(&AfdHw::epilogue_efficiency, {"afd.epilogue_efficiency", Quantity::Ratio, 0.05, 1.5,
              "expansion copy rate as a share of memory.fabric_bandwidth"}), kBoth},
      {hw::required(&AfdHw::epilogue_fixed, {"afd.epilogue_fixed", Quantity::Time, 0 * us, 50 * us,
              "dispatch_copy_epilogue fixed cost after the dispatch completes"}), kBoth},
      {hw::required(&AfdHw::exchange_gap, {"afd.exchange_gap", Quantity::Time, 0 * us, 50 * us,
              "gap between exchanges: a rank's last kernel end to its next dispatch start"}), kBoth},
      {hw::required(&AfdHw::grid_sync_exit, {"afd.grid_sync_exit", Quantity::Time, 0 * us, 50 * us,
              "extra cost of a grid-sync exit of the FFN combine (one arrival)"}), kNvlink},
      {hw::required(&AfdHw::launch_gap, hw::vocab::launch_gap()), kBoth},
      {hw::required(&AfdHw::reduce_bandwidth, {"afd.reduce_bandwidth", Quantity::Bandwidth, 100 * GBps, 20000 * GBps,
              "combine_reduce_epilogue streaming rate, bytes read (one partial per FFN rank hit) plus bytes "
              "written per second; the partials arrived by NVLink stores just before and are read once"}), kNvlink},
      {hw::required(&AfdHw::reduce_fixed, {"afd.reduce_fixed", Quantity::Time, 0 * us, 50 * us,
              "combine_reduce_epilogue fixed cost"}), kNvlink},
      {hw::required(&AfdHw::reduce_per_source, {"afd.reduce_per_source", Quantity::Time, 0 * us, 20 * us,
              "combine_reduce_epilogue cost per FFN rank whose partial is read"}), kNvlink},
      {hw::required(&AfdHw::sm_store_rate, {"afd.sm_store_rate", Quantity::Bandwidth, 1 * GBps, 400 * GBps,
              "NVLink store rate one transport SM sustains (bytes/s)"}), kNvlink},
      {hw::required(&AfdHw::token_serial, {"afd.token_serial", Quantity::Time, 0 * us, 10 * us,
              "serial cost per token on one channel (linked-list round)"}), kNvlink},
      {hw::required(&AfdHw::masked_combine_extra, {"masked.combine_extra", Quantity::Time, 0 * us, 100 * us,
              "extra combine latency of the role-unaware kernel (all ranks)"}), kNvlink},
      {hw::required(&AfdHw::masked_count_delay, {"masked.count_delay", Quantity::Time, 0 * us, 50 * us,
              "masked path: extra delay of the count trigger (the role-unaware notify covers every rank) "
              "before the FFN's copy epilogue can be launched by it"}), kNvlink},
      {hw::required(&AfdHw::masked_dispatch_exit_lead, {"masked.dispatch_exit_lead", Quantity::Time, 0 * us, 10 * us,
              "masked dispatch_impl: time from its blocks' programmatic-launch trigger to its recorded end; "
              "the next kernel (copy epilogue on every rank) is launched that long before the dispatch ends"}), kNvlink},
      {hw::required(&AfdHw::masked_dispatch_extra, {"masked.dispatch_extra", Quantity::Time, 0 * us, 100 * us,
              "extra dispatch latency of the role-unaware kernel (all ranks)"}), kNvlink},
      {hw::required(&AfdHw::masked_idle_epilogue, {"masked.idle_epilogue", Quantity::Time, 0 * us, 50 * us,
              "combine_reduce_epilogue of a masked FFN rank (no partial to reduce): launch to exit"}), kNvlink},
      {hw::required(&AfdHw::masked_idle_launch_lead, {"masked.idle_launch_lead", Quantity::Time, 0 * us, 10 * us,
              "masked Attention rank (sends only): its dispatch_impl end minus the launch of its (idle) "
              "dispatch_copy_epilogue; its blocks pass the launch trigger once its sends are out"}), kNvlink},
      {hw::required(&AfdHw::masked_idle_tail, {"masked.idle_tail", Quantity::Time, 0 * us, 10 * us,
              "masked Attention rank's dispatch_copy_epilogue (nothing to expand): dispatch end to its exit "
              "(grid-dependency sync returns, the empty kernel exits)"}), kNvlink},
      {hw::required(&AfdHw::masked_per_source, {"masked.per_source", Quantity::Time, 0 * us, 50 * us,
              "masked extra latency per sending (Attention) rank, in dispatch and again in combine"}), kNvlink},
      {hw::required(&AfdHw::collect_offset, {"afd.collect_offset", Quantity::Time, 0 * us, 20 * us,
              "collect-view metric: host timer overhead after the Attention ranks' combine_impl end"}), kNvlink},
      {hw::required(&AfdHw::timer_offset, {"afd.timer_offset", Quantity::Time, 0 * us, 20 * us,
              "host timer overhead added to the Attention span in the metric"}), kBoth},
      {hw::required(&AfdHw::hybrid_combine_fixed, {"hybrid.combine_fixed", Quantity::Time, 0 * us, 200 * us,
              "hybrid_combine fixed latency"}), kPods},
      {hw::required(&AfdHw::hybrid_combine_row_serial, {"hybrid.combine_row_serial", Quantity::Time, 0 * us, 50 * us,
              "expert warp: one row sent to its forwarder (serial)"}), kPods},
      {hw::required(&AfdHw::hybrid_direct_fixed, {"hybrid.direct_fixed", Quantity::Time, 0 * us, 300 * us,
              "non-hybrid (direct RDMA) exchange fixed latency"}), kPods},
      {hw::required(&AfdHw::hybrid_dispatch_fixed, {"hybrid.dispatch_fixed", Quantity::Time, 0 * us, 200 * us,
              "hybrid_dispatch fixed latency (launch, counts, RDMA setup)"}), kPods},
      {hw::required(&AfdHw::hybrid_exit_per_source, {"hybrid.exit_per_source", Quantity::Time, 0 * us, 50 * us,
              "FFN exit barrier cost per Attention source GPU"}), kPods},
      {hw::required(&AfdHw::hybrid_forward_bandwidth, {"hybrid.forward_bandwidth", Quantity::Bandwidth, 1 * GBps, 2000 * GBps,
              "FFN forwarder throughput (RDMA buffer to NVLink peers)"}), kPods},
      {hw::required(&AfdHw::hybrid_forward_per_token, {"hybrid.forward_per_token", Quantity::Time, 0 * us, 50 * us,
              "FFN forwarder: one token's NVLink bulk copy and its wait (serial per channel)"}), kPods},
      {hw::required(&AfdHw::hybrid_masked_extra, {"hybrid.masked_extra", Quantity::Time, 0 * us, 200 * us,
              "masked path over the hybrid transport: extra fixed latency"}), kPods},
      {hw::required(&AfdHw::hybrid_masked_per_source, {"hybrid.masked_per_source", Quantity::Time, 0 * us, 200 * us,
              "masked path over the hybrid transport: extra per domain"}), kPods},
      {hw::required(&AfdHw::hybrid_reduce_put_per_source, {"hybrid.reduce_put_per_source", Quantity::Time, 0 * us, 50 * us,
              "serial reduce + RDMA put per Attention domain"}), kPods},
      {hw::required(&AfdHw::nic_atomic_requester_cost, {"nic.atomic_requester_cost", Quantity::Time, 0.001 * us, 2 * us,
              "NIC-side processing of one posted atomic at the requester (WQE fetch, serial per NIC)"}), kPods},
      {hw::required(&AfdHw::nic_atomic_responder_cost, {"nic.atomic_responder_cost", Quantity::Time, 0.001 * us, 2 * us,
              "service time of one 8-byte fetch-and-add at the responder NIC (serial per NIC)"}), kPods},
      {hw::required(&AfdHw::nic_completion_cost, {"nic.completion_cost", Quantity::Time, 0.0 * us, 5 * us,
              "per-post completion handling when each atomic has its own completion (combine finishes)"}), kPods},
      {hw::required(&AfdHw::nic_doorbell_cost, {"nic.doorbell_cost", Quantity::Time, 0.001 * us, 5 * us,
              "posting cost on the issuing warp: lock, atomic and two doorbell writes per work-queue entry"}), kPods},
      {hw::required(&AfdHw::nic_full_queue_poll, {"nic.full_queue_poll", Quantity::Time, 0.0 * us, 5 * us,
              "poll of an old completion that a full queue forces per post"}), kPods},
      {hw::required(&AfdHw::nic_payload_bandwidth, {"nic.payload_bandwidth", Quantity::Bandwidth, 1 * GBps, 100 * GBps,
              "RDMA payload bandwidth per NIC per direction"}), kPods},
      {hw::required(&AfdHw::nic_qps_per_peer, {"nic.qps_per_peer", Quantity::Count, 1, 1024,
              "queue pairs per peer (library limit)"}), kPods},
      {hw::required(&AfdHw::nic_queue_depth, {"nic.queue_depth", Quantity::Count, 1, 65536,
              "work-queue depth per queue pair; beyond it every post polls"}), kPods},
      {hw::required(&AfdHw::nic_wire_latency, {"nic.wire_latency", Quantity::Time, 0.2 * us, 20 * us,
              "one-way RDMA latency NIC to NIC through the switch"}), kPods},
  };
  return p;
}

/// The bindings read on one topology (`on`: kNvlink or kPods), in afd_params() order.
hw::HwSchema<AfdHw> schema_on(unsigned on) {
  std::vector<hw::HwSchema<AfdHw>::Field> fields;
  for (const AfdParam& a : afd_params())
    if (a.read_on & on) fields.push_back(a.field);
  return hw::HwSchema<AfdHw>(std::move(fields));
}
}  // namespace

const hw::HwSchema<AfdHw>& afd_hardware(const hw::Hardware& hw) {
  static const hw::HwSchema<AfdHw> nvlink = schema_on(kNvlink), pods = schema_on(kPods);
  return hw.topology_kind() == "pods" ? pods : nvlink;
}

std::vector<hw::HwRead> afd_hardware_reads() {
  std::vector<hw::HwRead> out;
  for (const AfdParam& a : afd_params()) out.push_back(a.field.read);
  return out;
}

hw::ParamRegistry afd_registry() {
  hw::ParamRegistry r;
  for (const auto& h : afd_hardware_reads()) r.add({h.decl});
  return r;
}

}  // namespace fusesim::afd
