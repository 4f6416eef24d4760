// The parameter registry of every model in fusesim.
#pragma once

#include "hw/hardware.hpp"

namespace fusesim::models {
/// Registry holding every module's parameter declarations (gemm_ar, afd, ...). Built once on first
/// use from the modules' declaration lists; immutable afterwards.
const hw::ParamRegistry& builtin_registry();
/// Load a hardware file against the builtin registry (see hw::Hardware::load for errors).
hw::Hardware load_hardware(const std::string& path);
}  // namespace fusesim::models
