#include "models/afd/hardware.hpp"

#include <map>
#include <set>
#include <string>

namespace fusesim::afd {
namespace {
using hw::ParamDecl;
using hw::Quantity;
constexpr double us = 1e-6, GBps = 1e9;

/// The AFD model's own declarations, by the AfdHw member they are read into.
const ParamDecl& decl(const std::string& member) {
  static const std::map<std::string, ParamDecl> d{
    {"sm_store_peak", {"nvlink.sm_store_peak", Quantity::Bandwidth, 10 * GBps, 2000 * GBps,
           "usable NVLink rate per GPU per direction for SM-driven stores to peers (all peers together)"}},
    {"nvlink_latency", {"nvlink.latency", Quantity::Time, 0.05 * us, 10 * us,
           "one NVLink store/flag round trip seen by a waiting warp"}},
    {"nic_payload_bandwidth", {"nic.payload_bandwidth", Quantity::Bandwidth, 1 * GBps, 100 * GBps,
           "RDMA payload bandwidth per NIC per direction"}},
    {"nic_atomic_responder_cost", {"nic.atomic_responder_cost", Quantity::Time, 0.001 * us, 2 * us,
           "service time of one 8-byte fetch-and-add at the responder NIC (serial per NIC)"}},
    {"nic_atomic_requester_cost", {"nic.atomic_requester_cost", Quantity::Time, 0.001 * us, 2 * us,
           "NIC-side processing of one posted atomic at the requester (WQE fetch, serial per NIC)"}},
    {"nic_doorbell_cost", {"nic.doorbell_cost", Quantity::Time, 0.001 * us, 5 * us,
           "posting cost on the issuing warp: lock, atomic and two doorbell writes per work-queue entry"}},
    {"nic_completion_cost", {"nic.completion_cost", Quantity::Time, 0.0 * us, 5 * us,
           "per-post completion handling when each atomic has its own completion (combine finishes)"}},
    {"nic_queue_depth", {"nic.queue_depth", Quantity::Count, 1, 65536,
           "work-queue depth per queue pair; beyond it every post polls"}},
    {"nic_full_queue_poll", {"nic.full_queue_poll", Quantity::Time, 0.0 * us, 5 * us,
           "poll of an old completion that a full queue forces per post"}},
    {"nic_qps_per_peer", {"nic.qps_per_peer", Quantity::Count, 1, 1024,
           "queue pairs per peer (library limit)"}},
    {"nic_wire_latency", {"nic.wire_latency", Quantity::Time, 0.2 * us, 20 * us,
           "one-way RDMA latency NIC to NIC through the switch"}},
    {"sm_store_rate", {"afd.sm_store_rate", Quantity::Bandwidth, 1 * GBps, 400 * GBps,
           "NVLink store rate one transport SM sustains (bytes/s)"}},
    {"dispatch_fixed", {"afd.dispatch_fixed", Quantity::Time, 0 * us, 50 * us,
           "dispatch_impl start to first payload byte (launch, count notify)"}},
    {"dispatch_finish", {"afd.dispatch_finish", Quantity::Time, 0 * us, 50 * us,
           "last payload byte to dispatch_impl end (finish flags, exit)"}},
    {"token_serial", {"afd.token_serial", Quantity::Time, 0 * us, 10 * us,
           "serial cost per token on one channel (linked-list round)"}},
    {"count_issue_share", {"afd.count_issue_share", Quantity::Ratio, 0.05, 1.5,
           "count trigger: a source's count store to the FFN ranks leaves its NVLink queue after the "
                   "source has emitted this share of one pass over its T tokens (share x T x token bytes); the "
                   "FFN's copy epilogue is launched (programmatic dependent launch) when every source's count "
                   "arrived, and waits for the whole dispatch before expanding"}},
    {"dispatch_exit_lead", {"afd.dispatch_exit_lead", Quantity::Time, 0 * us, 10 * us,
           "afd FFN dispatch_impl: time from the last block's programmatic-launch trigger (blocks done "
                   "with their receive loops) to the kernel's recorded end; the copy epilogue is launched then "
                   "when the count trigger has not launched it earlier"}},
    {"epilogue_fixed", {"afd.epilogue_fixed", Quantity::Time, 0 * us, 50 * us,
           "dispatch_copy_epilogue fixed cost after the dispatch completes"}},
    {"epilogue_efficiency", {"afd.epilogue_efficiency", Quantity::Ratio, 0.05, 1.5,
           "expansion copy rate as a share of gpu.hbm_copy_bandwidth"}},
    {"combine_fixed", {"afd.combine_fixed", Quantity::Time, 0 * us, 50 * us,
           "combine_impl start to first reduced row sent"}},
    {"combine_finish", {"afd.combine_finish", Quantity::Time, 0 * us, 50 * us,
           "last combine row to combine_impl end (finish flags, exit)"}},
    {"combine_row_rate", {"afd.combine_row_rate", Quantity::Bandwidth, 1 * GBps, 1000 * GBps,
           "expert-row bytes one combine SM gathers and reduces per s"}},
    {"combine_gather_peak", {"afd.combine_gather_peak", Quantity::Bandwidth, 10 * GBps, 20000 * GBps,
           "expert-row gather rate of all combine SMs of one GPU"}},
    {"combine_warps_per_sm", {"afd.combine_warps_per_sm", Quantity::Count, 1, 64,
           "combine warps per SM; they are split evenly over the domain's ranks (warps per destination "
                   "= this / ranks), each warp holding one token in flight"}},
    {"combine_token_latency", {"afd.combine_token_latency", Quantity::Time, 0.05 * us, 50 * us,
           "time one combine warp holds a token: gather its expert rows, reduce, store to the peer "
                   "(Little's law: per-destination rate = SMs x warps per destination x token bytes / this)"}},
    {"combine_store_peak", {"afd.combine_store_peak", Quantity::Bandwidth, 10 * GBps, 2000 * GBps,
           "reduced-row store rate of one FFN GPU's combine to all peers together, with unlimited combine "
                   "SMs (see combine_store_per_sm)"}},
    {"combine_per_dest", {"afd.combine_per_dest", Quantity::Time, 0 * us, 20 * us,
           "FFN combine: serial cost per Attention rank it returns rows to (per-destination finish "
                   "flags and tail publication, issued one destination after another)"}},
    {"combine_store_per_sm", {"afd.combine_store_per_sm", Quantity::Bandwidth, 0 * GBps, 1000 * GBps,
           "reduced-row store rate one FFN combine SM issues; in series with combine_store_peak: "
                   "1/rate = 1/peak + 1/(combine SMs x this) (0: the peak alone)"}},
    {"reduce_fixed", {"afd.reduce_fixed", Quantity::Time, 0 * us, 50 * us,
           "combine_reduce_epilogue fixed cost"}},
    {"reduce_per_source", {"afd.reduce_per_source", Quantity::Time, 0 * us, 20 * us,
           "combine_reduce_epilogue cost per FFN rank whose partial is read"}},
    {"reduce_bandwidth", {"afd.reduce_bandwidth", Quantity::Bandwidth, 100 * GBps, 20000 * GBps,
           "combine_reduce_epilogue streaming rate, bytes read (one partial per FFN rank hit) plus bytes "
                   "written per second; the partials arrived by NVLink stores just before and are read once"}},
    {"exchange_gap", {"afd.exchange_gap", Quantity::Time, 0 * us, 50 * us,
           "gap between exchanges: a rank's last kernel end to its next dispatch start"}},
    {"timer_offset", {"afd.timer_offset", Quantity::Time, 0 * us, 20 * us,
           "host timer overhead added to the Attention span in the metric"}},
    {"collect_offset", {"afd.collect_offset", Quantity::Time, 0 * us, 20 * us,
           "collect-view metric: host timer overhead after the Attention ranks' combine_impl end"}},
    {"grid_sync_exit", {"afd.grid_sync_exit", Quantity::Time, 0 * us, 50 * us,
           "extra cost of a grid-sync exit of the FFN combine (one arrival)"}},
    {"masked_dispatch_extra", {"masked.dispatch_extra", Quantity::Time, 0 * us, 100 * us,
           "extra dispatch latency of the role-unaware kernel (all ranks)"}},
    {"masked_combine_extra", {"masked.combine_extra", Quantity::Time, 0 * us, 100 * us,
           "extra combine latency of the role-unaware kernel (all ranks)"}},
    {"masked_per_source", {"masked.per_source", Quantity::Time, 0 * us, 50 * us,
           "masked extra latency per sending (Attention) rank, in dispatch and again in combine"}},
    {"masked_idle_epilogue", {"masked.idle_epilogue", Quantity::Time, 0 * us, 50 * us,
           "combine_reduce_epilogue of a masked FFN rank (no partial to reduce): launch to exit"}},
    {"masked_dispatch_exit_lead", {"masked.dispatch_exit_lead", Quantity::Time, 0 * us, 10 * us,
           "masked dispatch_impl: time from its blocks' programmatic-launch trigger to its recorded end; "
                   "the next kernel (copy epilogue on every rank) is launched that long before the dispatch ends"}},
    {"masked_idle_launch_lead", {"masked.idle_launch_lead", Quantity::Time, 0 * us, 10 * us,
           "masked Attention rank (sends only): its dispatch_impl end minus the launch of its (idle) "
                   "dispatch_copy_epilogue; its blocks pass the launch trigger once its sends are out"}},
    {"masked_idle_tail", {"masked.idle_tail", Quantity::Time, 0 * us, 10 * us,
           "masked Attention rank's dispatch_copy_epilogue (nothing to expand): dispatch end to its exit "
                   "(grid-dependency sync returns, the empty kernel exits)"}},
    {"masked_count_delay", {"masked.count_delay", Quantity::Time, 0 * us, 50 * us,
           "masked path: extra delay of the count trigger (the role-unaware notify covers every rank) "
                   "before the FFN's copy epilogue can be launched by it"}},
    {"hybrid_dispatch_fixed", {"hybrid.dispatch_fixed", Quantity::Time, 0 * us, 200 * us,
           "hybrid_dispatch fixed latency (launch, counts, RDMA setup)"}},
    {"hybrid_forward_per_token", {"hybrid.forward_per_token", Quantity::Time, 0 * us, 50 * us,
           "FFN forwarder: one token's NVLink bulk copy and its wait (serial per channel)"}},
    {"hybrid_forward_bandwidth", {"hybrid.forward_bandwidth", Quantity::Bandwidth, 1 * GBps, 2000 * GBps,
           "FFN forwarder throughput (RDMA buffer to NVLink peers)"}},
    {"hybrid_combine_fixed", {"hybrid.combine_fixed", Quantity::Time, 0 * us, 200 * us,
           "hybrid_combine fixed latency"}},
    {"hybrid_combine_row_serial", {"hybrid.combine_row_serial", Quantity::Time, 0 * us, 50 * us,
           "expert warp: one row sent to its forwarder (serial)"}},
    {"hybrid_reduce_put_per_source", {"hybrid.reduce_put_per_source", Quantity::Time, 0 * us, 50 * us,
           "serial reduce + RDMA put per Attention domain"}},
    {"hybrid_exit_per_source", {"hybrid.exit_per_source", Quantity::Time, 0 * us, 50 * us,
           "FFN exit barrier cost per Attention source GPU"}},
    {"hybrid_masked_extra", {"hybrid.masked_extra", Quantity::Time, 0 * us, 200 * us,
           "masked path over the hybrid transport: extra fixed latency"}},
    {"hybrid_masked_per_source", {"hybrid.masked_per_source", Quantity::Time, 0 * us, 200 * us,
           "masked path over the hybrid transport: extra per domain"}},
    {"hybrid_direct_fixed", {"hybrid.direct_fixed", Quantity::Time, 0 * us, 300 * us,
           "non-hybrid (direct RDMA) exchange fixed latency"}},
  };
  return d.at(member);
}
}  // namespace

namespace {
/// The NVLink domain: what run_nvlink reads.
const hw::HwSchema<AfdHw>& nvlink_schema() {
  static const hw::HwSchema<AfdHw> nvlink{
      hw::optional(&AfdHw::compute_units, hw::vocab::compute_units(), 132),  // H100 / H200 SXM (HARDWARE.md)
      hw::required(&AfdHw::fabric_bandwidth, hw::vocab::fabric_bandwidth()),
      hw::required(&AfdHw::nvlink_latency, decl("nvlink_latency")),
      hw::required(&AfdHw::link_per_direction, hw::vocab::link_per_direction()),
      hw::required(&AfdHw::sm_store_peak, decl("sm_store_peak")),
      hw::required(&AfdHw::combine_finish, decl("combine_finish")),
      hw::required(&AfdHw::combine_fixed, decl("combine_fixed")),
      hw::required(&AfdHw::combine_gather_peak, decl("combine_gather_peak")),
      hw::required(&AfdHw::combine_per_dest, decl("combine_per_dest")),
      hw::required(&AfdHw::combine_row_rate, decl("combine_row_rate")),
      hw::required(&AfdHw::combine_store_peak, decl("combine_store_peak")),
      hw::required(&AfdHw::combine_store_per_sm, decl("combine_store_per_sm")),
      hw::required(&AfdHw::combine_token_latency, decl("combine_token_latency")),
      hw::required(&AfdHw::combine_warps_per_sm, decl("combine_warps_per_sm")),
      hw::required(&AfdHw::count_issue_share, decl("count_issue_share")),
      hw::required(&AfdHw::dispatch_exit_lead, decl("dispatch_exit_lead")),
      hw::required(&AfdHw::dispatch_finish, decl("dispatch_finish")),
      hw::required(&AfdHw::dispatch_fixed, decl("dispatch_fixed")),
      hw::required(&AfdHw::epilogue_efficiency, decl("epilogue_efficiency")),
      hw::required(&AfdHw::epilogue_fixed, decl("epilogue_fixed")),
      hw::required(&AfdHw::exchange_gap, decl("exchange_gap")),
      hw::required(&AfdHw::grid_sync_exit, decl("grid_sync_exit")),
      hw::required(&AfdHw::launch_gap, hw::vocab::launch_gap()),
      hw::required(&AfdHw::reduce_bandwidth, decl("reduce_bandwidth")),
      hw::required(&AfdHw::reduce_fixed, decl("reduce_fixed")),
      hw::required(&AfdHw::reduce_per_source, decl("reduce_per_source")),
      hw::required(&AfdHw::sm_store_rate, decl("sm_store_rate")),
      hw::required(&AfdHw::token_serial, decl("token_serial")),
      hw::required(&AfdHw::masked_combine_extra, decl("masked_combine_extra")),
      hw::required(&AfdHw::masked_count_delay, decl("masked_count_delay")),
      hw::required(&AfdHw::masked_dispatch_exit_lead, decl("masked_dispatch_exit_lead")),
      hw::required(&AfdHw::masked_dispatch_extra, decl("masked_dispatch_extra")),
      hw::required(&AfdHw::masked_idle_epilogue, decl("masked_idle_epilogue")),
      hw::required(&AfdHw::masked_idle_launch_lead, decl("masked_idle_launch_lead")),
      hw::required(&AfdHw::masked_idle_tail, decl("masked_idle_tail")),
      hw::required(&AfdHw::masked_per_source, decl("masked_per_source")),
      hw::required(&AfdHw::collect_offset, decl("collect_offset")),
      hw::required(&AfdHw::timer_offset, decl("timer_offset")),
  };
  return nvlink;
}
/// InfiniBand pods: what run_pods reads.
const hw::HwSchema<AfdHw>& pods_schema() {
  static const hw::HwSchema<AfdHw> pods{
      hw::optional(&AfdHw::compute_units, hw::vocab::compute_units(), 132),  // H100 / H200 SXM (HARDWARE.md)
      hw::required(&AfdHw::fabric_bandwidth, hw::vocab::fabric_bandwidth()),
      hw::required(&AfdHw::link_per_direction, hw::vocab::link_per_direction()),
      hw::required(&AfdHw::sm_store_peak, decl("sm_store_peak")),
      hw::required(&AfdHw::combine_finish, decl("combine_finish")),
      hw::required(&AfdHw::dispatch_finish, decl("dispatch_finish")),
      hw::required(&AfdHw::epilogue_efficiency, decl("epilogue_efficiency")),
      hw::required(&AfdHw::epilogue_fixed, decl("epilogue_fixed")),
      hw::required(&AfdHw::exchange_gap, decl("exchange_gap")),
      hw::required(&AfdHw::launch_gap, hw::vocab::launch_gap()),
      hw::required(&AfdHw::timer_offset, decl("timer_offset")),
      hw::required(&AfdHw::hybrid_combine_fixed, decl("hybrid_combine_fixed")),
      hw::required(&AfdHw::hybrid_combine_row_serial, decl("hybrid_combine_row_serial")),
      hw::required(&AfdHw::hybrid_direct_fixed, decl("hybrid_direct_fixed")),
      hw::required(&AfdHw::hybrid_dispatch_fixed, decl("hybrid_dispatch_fixed")),
      hw::required(&AfdHw::hybrid_exit_per_source, decl("hybrid_exit_per_source")),
      hw::required(&AfdHw::hybrid_forward_bandwidth, decl("hybrid_forward_bandwidth")),
      hw::required(&AfdHw::hybrid_forward_per_token, decl("hybrid_forward_per_token")),
      hw::required(&AfdHw::hybrid_masked_extra, decl("hybrid_masked_extra")),
      hw::required(&AfdHw::hybrid_masked_per_source, decl("hybrid_masked_per_source")),
      hw::required(&AfdHw::hybrid_reduce_put_per_source, decl("hybrid_reduce_put_per_source")),
      hw::required(&AfdHw::nic_atomic_requester_cost, decl("nic_atomic_requester_cost")),
      hw::required(&AfdHw::nic_atomic_responder_cost, decl("nic_atomic_responder_cost")),
      hw::required(&AfdHw::nic_completion_cost, decl("nic_completion_cost")),
      hw::required(&AfdHw::nic_doorbell_cost, decl("nic_doorbell_cost")),
      hw::required(&AfdHw::nic_full_queue_poll, decl("nic_full_queue_poll")),
      hw::required(&AfdHw::nic_payload_bandwidth, decl("nic_payload_bandwidth")),
      hw::required(&AfdHw::nic_qps_per_peer, decl("nic_qps_per_peer")),
      hw::required(&AfdHw::nic_queue_depth, decl("nic_queue_depth")),
      hw::required(&AfdHw::nic_wire_latency, decl("nic_wire_latency")),
  };
  return pods;
}
}  // namespace

const hw::HwSchema<AfdHw>& afd_hardware(const hw::Hardware& hw) {
  return hw.topology_kind() == "pods" ? pods_schema() : nvlink_schema();
}

std::vector<hw::HwRead> afd_hardware_reads() {
  std::vector<hw::HwRead> out;
  std::set<std::string> seen;
  for (const auto* schema : {&nvlink_schema(), &pods_schema()})
    for (const auto& h : schema->reads())
      if (seen.insert(h.decl.key).second) out.push_back(h);
  return out;
}

hw::ParamRegistry afd_registry() {
  hw::ParamRegistry r;
  for (const auto& h : afd_hardware_reads()) r.add({h.decl});
  return r;
}

}  // namespace fusesim::afd
