// Parameters of the AFD (attention-FFN disaggregated) MoE transport model: NVLink, NIC and protocol
// costs. Declared here, where they are used; the lead's builtin registry adds this list.
#pragma once

#include <vector>

#include "hw/hardware.hpp"

namespace fusesim::afd {

/**
 * Every hardware parameter the AFD model reads (sections gpu.sm_count / gpu.hbm_copy_bandwidth,
 * nvlink.*, nic.*, afd.*, masked.*, hybrid.*), with SI bounds used both to reject impossible files
 * and as the fitter's box. None is marked required: the NVLink-domain model reads gpu/nvlink/afd/
 * masked keys, the cross-node model additionally nic/hybrid keys; a missing key is reported by
 * Hardware::get (std::out_of_range naming key and file) when the model needs it.
 */
std::vector<fusesim::hw::ParamDecl> afd_param_decls();

/// A registry holding only afd_param_decls() (for this module's tests and fitting tool; the
/// scenario runner uses the lead's builtin registry).
fusesim::hw::ParamRegistry afd_registry();

}  // namespace fusesim::afd
