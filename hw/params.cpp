#include "hw/params.hpp"

#include <map>

namespace fusesim::hw::vocab {
namespace {
constexpr double T = 1e12, G = 1e9, us = 1e-6;

/// The shared concepts' declarations, by key (each in SI units, with its sanity bounds).
const ParamDecl& declared(const std::string& key) {
  static const std::map<std::string, ParamDecl> table = [] {
    std::map<std::string, ParamDecl> m;
    for (const ParamDecl& d : std::initializer_list<ParamDecl>{
             // The GPU and its memory.
             {"gpu.compute_units", Quantity::Count, 1, 4096, "CUs (AMD) or SMs (NVIDIA) per GPU (the grid a kernel can hold at once)"},
             {"gpu.hbm_capacity", Quantity::Bytes, 1e9, 1e12, "HBM capacity per GPU"},
             {"gpu.mall_capacity", Quantity::Bytes, 0, 1e10, "last-level cache (AMD Infinity Cache / MALL) per GPU"},
             {"memory.fabric_bandwidth", Quantity::Bandwidth, 0.5 * T, 20 * T,
              "bytes/s (read + write) that kernels and copy engines together can move through one GPU's "
              "memory fabric (L2 misses to MALL/HBM; a device-to-device copy's read + write rate); the "
              "capacity of the GPU's `hbm` resource"},
             {"memory.write_cost", Quantity::Ratio, 1.0, 4.0,
              "HBM time of a byte a streaming kernel writes, relative to a byte it reads (write turnaround): "
              "such a kernel's bytes cross the `hbm` resource at (reads + write_cost x writes) / (reads + "
              "writes) per byte, so memory.fabric_bandwidth is then its read rate; 1 (the default) makes a "
              "written byte cost what a read one does"},
             // Links.
             {"links.per_direction", Quantity::Bandwidth, 1 * G, 2000 * G,
              "one link, one direction: the link resource's capacity (between the two GPUs of a mesh "
              "pair, or a GPU's port into an NVLink switch)"},
             {"links.read_efficiency", Quantity::Ratio, 0.3, 1.0,
              "fraction of a link's bandwidth that CU remote loads deliver as payload (request and response overhead)"},
             {"links.read_request_cost", Quantity::Ratio, 0, 1,
              "reverse-direction link bytes per payload byte of CU remote loads (read requests)"},
             // Kernels.
             {"kernel.launch_gap", Quantity::Time, 0, 100 * us,
              "gap between dependent kernels of one stream (a replayed graph, back-to-back launches)"},
             {"kernel.fixed_cost", Quantity::Time, 0, 100 * us, "per-kernel fixed cost beyond its data movement (ramp, tail)"},
             // Copy engines (AMD SDMA queues; hw/group.hpp's copy queues and puts).
             {"sdma.queue_peak", Quantity::Bandwidth, 1 * G, 1000 * G, "one copy-engine queue's peak put rate (bytes/s)"},
             {"sdma.command_latency", Quantity::Time, 0, 100 * us,
              "time from a put's submission to its first byte (dispatch + packet fetch) per command"},
             {"sdma.fabric_cost", Quantity::Ratio, 1.0, 8.0,
              "cost of a copy-engine byte on a GPU's memory-fabric request resource (the `fabric-requests` lane), "
              "relative to a GEMM tile-load byte: small coherent window transactions delay the GEMM's latency-bound "
              "L2-miss loads; sets how much a concurrent scatter slows the GEMM. Against streaming kernels (reduce, "
              "quantize) a copy byte costs one HBM byte at each end"},
             {"sdma.hbm_source_efficiency", Quantity::Ratio, 0.2, 1.5,
              "fraction of the queue peak a put reaches when its source must come from HBM rather than the MALL "
              "(a scatter whose source and receive slots exceed the MALL: gemm_ar's split scatter of the GEMM output, "
              "the collective's SDMA scatter of its input); bounds 0.2..1.5, not 1, so that a fit on points that put "
              "it near 1 reports its estimate and sigma rather than a bound (above 1: the HBM source costs nothing "
              "measurable)"},
             {"sdma.device_submit", Quantity::Time, 0, 50 * us,
              "a put issued from inside a kernel by an elected block: lock, packet write, doorbell (per put)"},
             {"sdma.submit_cost_per_outstanding", Quantity::Time, 0, 50 * us,
              "a device-side put submission's cost per command still outstanding on that queue (ring space and "
              "write-pointer management under the queue lock)"},
             // CU remote loads (hw/group.hpp's RemoteLoadModel) and the all-reduce kernels built on them.
             {"lsa.remote_read_latency", Quantity::Time, 0.1 * us, 50 * us,
              "round trip of a CU's remote load over the fabric (Little's law: rate = bytes in flight / latency)"},
             {"lsa.issue_time_per_16B", Quantity::Time, 0, 10 * us,
              "added to a CU remote load's round trip per 16 bytes a lane keeps in flight (its loads issue one "
              "after another)"},
             {"lsa.congestion_knee", Quantity::Bytes, 1e4, 1e9, "bytes in flight per GPU past which remote reads congest"},
             {"lsa.congestion_per_MiB", Quantity::Ratio, 0, 10,
              "throughput loss per MiB in flight past the knee (rate /= 1 + x*excess)"},
             {"lsa.stage_overhead", Quantity::Time, 0, 200 * us, "ar_2stage: per-stage address setup and flag barrier"},
             {"lsa.ar_loads_per_peer", Quantity::Ratio, 0.1, 16,
              "ar_1stage/ar_2stage: 16-byte remote loads a lane keeps in flight per peer (a lane holds this x "
              "(world_size - 1); 1 is one pack from every peer, GEMM_AR.md)"},
             // Synchronisation and the library collective.
             {"sync.flag_barrier", Quantity::Time, 0, 200 * us,
              "system fence + flag barrier over the fabric among the group (all ranks signal, all wait)"},
             {"rccl.bus_bandwidth_per_link", Quantity::Bandwidth, 1 * G, 1000 * G,
              "ring all-reduce bus bandwidth per link a rank has to the group (alpha-beta model; bus bandwidth = "
              "links among the group's members per GPU x this)"},
             {"rccl.step_latency", Quantity::Time, 0, 1000 * us, "ring all-reduce per-step latency alpha"},
         })
      m.emplace(d.key, d);
    return m;
  }();
  return table.at(key);
}
}  // namespace

const ParamDecl& compute_units() { return declared("gpu.compute_units"); }
const ParamDecl& hbm_capacity() { return declared("gpu.hbm_capacity"); }
const ParamDecl& mall_capacity() { return declared("gpu.mall_capacity"); }
const ParamDecl& fabric_bandwidth() { return declared("memory.fabric_bandwidth"); }
const ParamDecl& write_cost() { return declared("memory.write_cost"); }
const ParamDecl& link_per_direction() { return declared("links.per_direction"); }
const ParamDecl& read_efficiency() { return declared("links.read_efficiency"); }
const ParamDecl& read_request_cost() { return declared("links.read_request_cost"); }
const ParamDecl& launch_gap() { return declared("kernel.launch_gap"); }
const ParamDecl& kernel_fixed_cost() { return declared("kernel.fixed_cost"); }
const ParamDecl& queue_peak() { return declared("sdma.queue_peak"); }
const ParamDecl& command_latency() { return declared("sdma.command_latency"); }
const ParamDecl& copy_fabric_cost() { return declared("sdma.fabric_cost"); }
const ParamDecl& hbm_source_efficiency() { return declared("sdma.hbm_source_efficiency"); }
const ParamDecl& device_submit() { return declared("sdma.device_submit"); }
const ParamDecl& submit_cost_per_outstanding() { return declared("sdma.submit_cost_per_outstanding"); }
const ParamDecl& remote_read_latency() { return declared("lsa.remote_read_latency"); }
const ParamDecl& issue_time_per_16B() { return declared("lsa.issue_time_per_16B"); }
const ParamDecl& congestion_knee() { return declared("lsa.congestion_knee"); }
const ParamDecl& congestion_per_MiB() { return declared("lsa.congestion_per_MiB"); }
const ParamDecl& stage_overhead() { return declared("lsa.stage_overhead"); }
const ParamDecl& ar_loads_per_peer() { return declared("lsa.ar_loads_per_peer"); }
const ParamDecl& flag_barrier() { return declared("sync.flag_barrier"); }
const ParamDecl& ring_bus_bandwidth_per_link() { return declared("rccl.bus_bandwidth_per_link"); }
const ParamDecl& ring_step_latency() { return declared("rccl.step_latency"); }

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
