#include "hw/params.hpp"

namespace fusesim::hw::vocab {
namespace {
constexpr double T = 1e12, G = 1e9, us = 1e-6;
}

const ParamDecl& compute_units() {
  static const ParamDecl d{"gpu.compute_units", Quantity::Count, 1, 4096,
                           "CUs (AMD) or SMs (NVIDIA) per GPU (the grid a kernel can hold at once)"};
  return d;
}
const ParamDecl& hbm_capacity() {
  static const ParamDecl d{"gpu.hbm_capacity", Quantity::Bytes, 1e9, 1e12, "HBM capacity per GPU"};
  return d;
}
const ParamDecl& fabric_bandwidth() {
  static const ParamDecl d{"memory.fabric_bandwidth", Quantity::Bandwidth, 0.5 * T, 20 * T,
                           "bytes/s (read + write) that kernels and copy engines together can move through one GPU's "
                           "memory fabric (L2 misses to MALL/HBM; a device-to-device copy's read + write rate); the "
                           "capacity of the GPU's `hbm` resource"};
  return d;
}
const ParamDecl& link_per_direction() {
  static const ParamDecl d{"links.per_direction", Quantity::Bandwidth, 1 * G, 2000 * G,
                           "one link, one direction: the link resource's capacity (between the two GPUs of a mesh "
                           "pair, or a GPU's port into an NVLink switch)"};
  return d;
}
const ParamDecl& launch_gap() {
  static const ParamDecl d{"kernel.launch_gap", Quantity::Time, 0, 100 * us,
                           "gap between dependent kernels of one stream (a replayed graph, back-to-back launches)"};
  return d;
}
const ParamDecl& remote_read_latency() {
  static const ParamDecl d{"lsa.remote_read_latency", Quantity::Time, 0.1 * us, 50 * us,
                           "round trip of a CU's remote load over the fabric (Little's law: rate = bytes in flight / latency)"};
  return d;
}
const ParamDecl& read_efficiency() {
  static const ParamDecl d{"links.read_efficiency", Quantity::Ratio, 0.3, 1.0,
                           "fraction of a link's bandwidth that CU remote loads deliver as payload (request and response overhead)"};
  return d;
}
const ParamDecl& read_request_cost() {
  static const ParamDecl d{"links.read_request_cost", Quantity::Ratio, 0, 1,
                           "reverse-direction link bytes per payload byte of CU remote loads (read requests)"};
  return d;
}
const ParamDecl& issue_time_per_16B() {
  static const ParamDecl d{"lsa.issue_time_per_16B", Quantity::Time, 0, 10 * us,
                           "added to a CU remote load's round trip per 16 bytes a lane keeps in flight (its loads issue one "
                           "after another)"};
  return d;
}
const ParamDecl& congestion_knee() {
  static const ParamDecl d{"lsa.congestion_knee", Quantity::Bytes, 1e4, 1e9,
                           "bytes in flight per GPU past which remote reads congest"};
  return d;
}
const ParamDecl& congestion_per_MiB() {
  static const ParamDecl d{"lsa.congestion_per_MiB", Quantity::Ratio, 0, 10,
                           "throughput loss per MiB in flight past the knee (rate /= 1 + x*excess)"};
  return d;
}

const std::vector<ParamDecl>& machine_description() {
  static const std::vector<ParamDecl> d{
      {"gpu.clock", Quantity::Frequency, 1e8, 5e9, "peak engine clock"},
      {"gpu.hbm_bandwidth", Quantity::Bandwidth, 1e11, 1e14, "HBM peak bandwidth (datasheet)"},
      {"links.per_gpu", Quantity::Count, 1, 64, "links per GPU"},
      {"links.latency", Quantity::Time, 0, 100 * us, "one-way latency of a small write over a link"},
      {"gpu.fp8_matrix_rate", Quantity::FlopRate, 1e13, 1e17, "dense FP8 matrix peak"},
      {"gpu.bf16_matrix_rate", Quantity::FlopRate, 1e13, 1e17, "dense BF16 matrix peak"},
  };
  return d;
}

}  // namespace fusesim::hw::vocab
