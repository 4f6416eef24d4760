#include "models/params.hpp"

#include "models/afd/params.hpp"
#include "models/gemm_ar.hpp"
#include "models/gemm_ar_live.hpp"

namespace fusesim::models {
const hw::ParamRegistry& builtin_registry() {
  static const hw::ParamRegistry reg = [] {
    hw::ParamRegistry r;
    r.add(gemm_ar_param_decls());
    r.add(afd::afd_param_decls());
    r.add(gemm_ar_live_param_decls());
    return r;
  }();
  return reg;
}

hw::Hardware load_hardware(const std::string& path) { return hw::Hardware::load(path, builtin_registry()); }
}  // namespace fusesim::models
