// The hardware the AFD (attention-FFN disaggregated) MoE transport model reads: NVLink, NIC and
// protocol costs, declared here where they are used (the machine concepts it shares with other
// models -- compute units, HBM, links, launch gap -- in hw/params.hpp).
#pragma once

#include <vector>

#include "hw/hardware.hpp"
#include "hw/params.hpp"

namespace fusesim::afd {

/// Every parameter the AFD model reads, in SI units (keys: afd.*, masked.*, nvlink.*, nic.*,
/// hybrid.*; the shared ones: gpu.compute_units, memory.fabric_bandwidth, links.per_direction,
/// kernel.launch_gap). A model run reads it once from the hardware file (afd_hardware()).
struct AfdHw {
  double compute_units = 0, fabric_bandwidth = 0, link_per_direction = 0, sm_store_peak = 0, nvlink_latency = 0, nic_payload_bandwidth = 0, nic_atomic_responder_cost = 0, nic_atomic_requester_cost = 0, nic_doorbell_cost = 0, nic_completion_cost = 0, nic_queue_depth = 0, nic_full_queue_poll = 0, nic_qps_per_peer = 0, nic_wire_latency = 0, sm_store_rate = 0, dispatch_fixed = 0, dispatch_finish = 0, token_serial = 0, count_issue_share = 0, dispatch_exit_lead = 0, epilogue_fixed = 0, epilogue_efficiency = 0, combine_fixed = 0, combine_finish = 0, combine_row_rate = 0, combine_gather_peak = 0, combine_warps_per_sm = 0, combine_token_latency = 0, combine_store_peak = 0, combine_per_dest = 0, combine_store_per_sm = 0, reduce_fixed = 0, reduce_per_source = 0, reduce_bandwidth = 0, launch_gap = 0, exchange_gap = 0, timer_offset = 0, collect_offset = 0, grid_sync_exit = 0, masked_dispatch_extra = 0, masked_combine_extra = 0, masked_per_source = 0, masked_idle_epilogue = 0, masked_dispatch_exit_lead = 0, masked_idle_launch_lead = 0, masked_idle_tail = 0, masked_count_delay = 0, hybrid_dispatch_fixed = 0, hybrid_forward_per_token = 0, hybrid_forward_bandwidth = 0, hybrid_combine_fixed = 0, hybrid_combine_row_serial = 0, hybrid_reduce_put_per_source = 0, hybrid_exit_per_source = 0, hybrid_masked_extra = 0, hybrid_masked_per_source = 0, hybrid_direct_fixed = 0;
};

/**
 * The bindings of AfdHw for `hw`'s topology: the NVLink-domain model (any topology but pods) reads the
 * gpu/memory/links/nvlink/afd/masked keys, the cross-node model (pods) also the nic/hybrid keys and
 * fewer afd ones; each set is required on its topology. gpu.compute_units defaults to 132 (H100 and
 * H200 SXM, HARDWARE.md): it only bounds the SM counts a case may ask for.
 */
const hw::HwSchema<AfdHw>& afd_hardware(const hw::Hardware& hw);
/// Both topologies' bindings together (every key the model may read, once each).
std::vector<hw::HwRead> afd_hardware_reads();

/// A registry holding the AFD model's declarations only (for fusesim_afd_fit and this model's tests;
/// the scenario runner uses the builtin registry, models/model.hpp).
fusesim::hw::ParamRegistry afd_registry();

}  // namespace fusesim::afd
