#include "models/afd/params.hpp"

namespace fusesim::afd {

using hw::ParamDecl;
using hw::Quantity;

std::vector<ParamDecl> afd_param_decls() {
  constexpr double us = 1e-6, GBps = 1e9;
  auto T = [&](const char* k, double lo_us, double hi_us, const char* d) {
    return ParamDecl{k, Quantity::Time, lo_us * us, hi_us * us, d, false};
  };
  auto B = [&](const char* k, double lo, double hi, const char* d) {
    return ParamDecl{k, Quantity::Bandwidth, lo * GBps, hi * GBps, d, false};
  };
  auto R = [&](const char* k, double lo, double hi, const char* d) {
    return ParamDecl{k, Quantity::Ratio, lo, hi, d, false};
  };
  auto N = [&](const char* k, double lo, double hi, const char* d) {
    return ParamDecl{k, Quantity::Count, lo, hi, d, false};
  };
  return {
      // --- GPU ------------------------------------------------------------------------------
      N("gpu.sm_count", 1, 1024, "streaming multiprocessors per GPU (grid of the copy epilogue)"),
      B("gpu.hbm_copy_bandwidth", 100, 20000,
        "device-to-device copy rate, read+write bytes per second (epilogue expansion, reduce)"),
      // --- NVLink ---------------------------------------------------------------------------
      B("nvlink.per_direction", 10, 2000, "NVLink bandwidth per GPU per direction (spec)"),
      B("nvlink.sm_store_peak", 10, 2000,
        "usable NVLink rate per GPU per direction for SM-driven stores to peers (all peers together)"),
      T("nvlink.latency", 0.05, 10, "one NVLink store/flag round trip seen by a waiting warp"),
      // --- NIC (one per GPU; ConnectX-7 class) ----------------------------------------------
      B("nic.payload_bandwidth", 1, 100, "RDMA payload bandwidth per NIC per direction"),
      T("nic.atomic_responder_cost", 0.001, 2,
        "service time of one 8-byte fetch-and-add at the responder NIC (serial per NIC)"),
      T("nic.atomic_requester_cost", 0.001, 2,
        "NIC-side processing of one posted atomic at the requester (WQE fetch, serial per NIC)"),
      T("nic.doorbell_cost", 0.001, 5,
        "posting cost on the issuing warp: lock, atomic and two doorbell writes per work-queue entry"),
      T("nic.completion_cost", 0.0, 5,
        "per-post completion handling when each atomic has its own completion (combine finishes)"),
      N("nic.queue_depth", 1, 65536, "work-queue depth per queue pair; beyond it every post polls"),
      T("nic.full_queue_poll", 0.0, 5, "poll of an old completion that a full queue forces per post"),
      N("nic.qps_per_peer", 1, 1024, "queue pairs per peer (library limit)"),
      T("nic.wire_latency", 0.2, 20, "one-way RDMA latency NIC to NIC through the switch"),
      // --- AFD protocol over NVLink (dispatch_impl / dispatch_copy_epilogue / combine_impl) ---
      B("afd.sm_store_rate", 1, 400, "NVLink store rate one transport SM sustains (bytes/s)"),
      T("afd.dispatch_fixed", 0, 50, "dispatch_impl start to first payload byte (launch, count notify)"),
      T("afd.dispatch_finish", 0, 50, "last payload byte to dispatch_impl end (finish flags, exit)"),
      T("afd.token_serial", 0, 10, "serial cost per token on one channel (linked-list round)"),
      R("afd.count_issue_share", 0.05, 1.5,
        "count trigger: a source's count store to the FFN ranks leaves its NVLink queue after the "
        "source has emitted this share of one pass over its T tokens (share x T x token bytes); the "
        "FFN's copy epilogue is launched (programmatic dependent launch) when every source's count "
        "arrived, and waits for the whole dispatch before expanding"),
      T("afd.dispatch_exit_lead", 0, 10,
        "afd FFN dispatch_impl: time from the last block's programmatic-launch trigger (blocks done "
        "with their receive loops) to the kernel's recorded end; the copy epilogue is launched then "
        "when the count trigger has not launched it earlier"),
      T("afd.epilogue_fixed", 0, 50, "dispatch_copy_epilogue fixed cost after the dispatch completes"),
      R("afd.epilogue_efficiency", 0.05, 1.5, "expansion copy rate as a share of gpu.hbm_copy_bandwidth"),
      T("afd.combine_fixed", 0, 50, "combine_impl start to first reduced row sent"),
      T("afd.combine_finish", 0, 50, "last combine row to combine_impl end (finish flags, exit)"),
      B("afd.combine_row_rate", 1, 1000, "expert-row bytes one combine SM gathers and reduces per s"),
      B("afd.combine_gather_peak", 10, 20000, "expert-row gather rate of all combine SMs of one GPU"),
      N("afd.combine_warps_per_sm", 1, 64,
        "combine warps per SM; they are split evenly over the domain's ranks (warps per destination "
        "= this / ranks), each warp holding one token in flight"),
      T("afd.combine_token_latency", 0.05, 50,
        "time one combine warp holds a token: gather its expert rows, reduce, store to the peer "
        "(Little's law: per-destination rate = SMs x warps per destination x token bytes / this)"),
      B("afd.combine_store_peak", 10, 2000,
        "reduced-row store rate of one FFN GPU's combine to all peers together, with unlimited combine "
        "SMs (see combine_store_per_sm)"),
      T("afd.combine_per_dest", 0, 20,
        "FFN combine: serial cost per Attention rank it returns rows to (per-destination finish "
        "flags and tail publication, issued one destination after another)"),
      B("afd.combine_store_per_sm", 0, 1000,
        "reduced-row store rate one FFN combine SM issues; in series with combine_store_peak: "
        "1/rate = 1/peak + 1/(combine SMs x this) (0: the peak alone)"),
      T("afd.reduce_fixed", 0, 50, "combine_reduce_epilogue fixed cost"),
      T("afd.reduce_per_source", 0, 20, "combine_reduce_epilogue cost per FFN rank whose partial is read"),
      B("afd.reduce_bandwidth", 100, 20000,
        "combine_reduce_epilogue streaming rate, bytes read (one partial per FFN rank hit) plus bytes "
        "written per second; the partials arrived by NVLink stores just before and are read once"),
      T("afd.kernel_gap", 0, 10, "launch gap between consecutive kernels of one stream"),
      T("afd.exchange_gap", 0, 50, "gap between exchanges: a rank's last kernel end to its next dispatch start"),
      T("afd.timer_offset", 0, 20, "host timer overhead added to the Attention span in the metric"),
      T("afd.collect_offset", 0, 20,
        "collect-view metric: host timer overhead after the Attention ranks' combine_impl end"),
      T("afd.grid_sync_exit", 0, 50, "extra cost of a grid-sync exit of the FFN combine (one arrival)"),
      // --- masked (role-unaware expert-parallel) path ---------------------------------------
      T("masked.dispatch_extra", 0, 100, "extra dispatch latency of the role-unaware kernel (all ranks)"),
      T("masked.combine_extra", 0, 100, "extra combine latency of the role-unaware kernel (all ranks)"),
      T("masked.per_source", 0, 50, "masked extra latency per sending (Attention) rank, in dispatch and again in combine"),
      T("masked.idle_epilogue", 0, 50,
        "combine_reduce_epilogue of a masked FFN rank (no partial to reduce): launch to exit"),
      T("masked.dispatch_exit_lead", 0, 10,
        "masked dispatch_impl: time from its blocks' programmatic-launch trigger to its recorded end; "
        "the next kernel (copy epilogue on every rank) is launched that long before the dispatch ends"),
      T("masked.idle_launch_lead", 0, 10,
        "masked Attention rank (sends only): its dispatch_impl end minus the launch of its (idle) "
        "dispatch_copy_epilogue; its blocks pass the launch trigger once its sends are out"),
      T("masked.idle_tail", 0, 10,
        "masked Attention rank's dispatch_copy_epilogue (nothing to expand): dispatch end to its exit "
        "(grid-dependency sync returns, the empty kernel exits)"),
      T("masked.count_delay", 0, 50,
        "masked path: extra delay of the count trigger (the role-unaware notify covers every rank) "
        "before the FFN's copy epilogue can be launched by it"),
      // --- cross-node hybrid path (hybrid_dispatch, hybrid_combine, afdep_ffn_complete) -------
      T("hybrid.dispatch_fixed", 0, 200, "hybrid_dispatch fixed latency (launch, counts, RDMA setup)"),
      T("hybrid.forward_per_token", 0, 50,
        "FFN forwarder: one token's NVLink bulk copy and its wait (serial per channel)"),
      B("hybrid.forward_bandwidth", 1, 2000, "FFN forwarder throughput (RDMA buffer to NVLink peers)"),
      T("hybrid.combine_fixed", 0, 200, "hybrid_combine fixed latency"),
      T("hybrid.combine_row_serial", 0, 50, "expert warp: one row sent to its forwarder (serial)"),
      T("hybrid.reduce_put_per_source", 0, 50, "serial reduce + RDMA put per Attention domain"),
      T("hybrid.exit_per_source", 0, 50, "FFN exit barrier cost per Attention source GPU"),
      T("hybrid.masked_extra", 0, 200, "masked path over the hybrid transport: extra fixed latency"),
      T("hybrid.masked_per_source", 0, 200, "masked path over the hybrid transport: extra per domain"),
      T("hybrid.direct_fixed", 0, 300, "non-hybrid (direct RDMA) exchange fixed latency"),
  };
}

hw::ParamRegistry afd_registry() {
  hw::ParamRegistry r;
  r.add(afd_param_decls());
  return r;
}

}  // namespace fusesim::afd
