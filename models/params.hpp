// The parameter registry of every model in fusesim.
#pragma once

#include <string>
#include <vector>

#include "hw/hardware.hpp"

namespace fusesim::models {
/// Registry holding every module's parameter declarations (gemm_ar, afd, ...). Built once on first
/// use from the modules' declaration lists; immutable afterwards.
const hw::ParamRegistry& builtin_registry();
/// Load a hardware file against the builtin registry (see hw::Hardware::load for errors).
hw::Hardware load_hardware(const std::string& path);
/**
 * Every hardware key the case runner `model` reads on `hw`, which a hardware file must set for it:
 * gemm_ar and ttft: the gemm_ar module's required declarations less those no model reads
 * (unread_hardware_keys); gemm_ar_live and h200_probe: that
 * module's, plus the gemm_ar-module keys those models read (gpu.compute_units, memory.fabric_bandwidth,
 * ...); afd: the keys its model reads on `hw`'s topology (afd::hardware_keys). Empty for other names.
 */
std::vector<std::string> required_hardware_keys(const std::string& model, const hw::Hardware& hw);
/**
 * Declared keys that no model reads (gpu.clock, gpu.hbm_bandwidth, links.per_gpu, links.latency, the
 * matrix peak rates, lsa.push_store_latency): a hardware file may set them to describe the machine,
 * but changing them changes no prediction, so no model requires them (`fusesim params` lists them as
 * documentation).
 */
const std::vector<std::string>& unread_hardware_keys();
bool is_unread_hardware_key(const std::string& key);
}  // namespace fusesim::models
