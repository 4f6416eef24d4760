#include "models/params.hpp"

#include <algorithm>

#include "models/afd/afd.hpp"
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

const std::vector<std::string>& unread_hardware_keys() {
  // Declared (models/gemm_ar.cpp, models/gemm_ar_live.cpp) but read by no model: no hw.get of them in
  // models/ or calibrate/, and a scenario run with e.g. gpu.clock: 100MHz or links.latency: 100us
  // predicts the same times. Keep this list in step when a model starts reading one of them.
  static const std::vector<std::string> keys{"gpu.clock",          "gpu.hbm_bandwidth",    "links.per_gpu",
                                             "links.latency",      "gpu.fp8_matrix_rate",  "gpu.bf16_matrix_rate",
                                             "lsa.push_store_latency"};
  return keys;
}

bool is_unread_hardware_key(const std::string& key) {
  const auto& u = unread_hardware_keys();
  return std::find(u.begin(), u.end(), key) != u.end();
}

std::vector<std::string> required_hardware_keys(const std::string& model, const hw::Hardware& hw) {
  std::vector<std::string> keys;
  auto required_of = [&](const std::vector<hw::ParamDecl>& decls) {
    for (const auto& d : decls)
      if (d.required && !is_unread_hardware_key(d.key)) keys.push_back(d.key);
  };
  if (model == "gemm_ar" || model == "ttft") {  // ttft runs gemm_ar layers
    required_of(gemm_ar_param_decls());
  } else if (model == "gemm_ar_live" || model == "h200_probe") {
    required_of(gemm_ar_live_param_decls());
    // Declared by the gemm_ar module, read by the H200 pair's models (models/gemm_ar_live.cpp).
    for (const char* k : {"gpu.compute_units", "gpu.hbm_capacity", "kernel.launch_gap", "links.per_direction",
                          "links.read_efficiency", "lsa.remote_read_latency", "memory.fabric_bandwidth"})
      keys.push_back(k);
  } else if (model == "afd") {
    keys = afd::hardware_keys(hw);
  }
  return keys;
}
}  // namespace fusesim::models
