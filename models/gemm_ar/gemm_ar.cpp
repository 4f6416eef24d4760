#include "models/gemm_ar/gemm_ar.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/model.hpp"
#include "sim/flow.hpp"
#include "sim/servers.hpp"
#include "sim/simulation.hpp"

namespace fusesim::models {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kBf16 = 2, kFp8 = 1, kScale = 4;  // bytes per element / per fp32 scale
constexpr int kBlockN = 256, kBlockK = 128;         // mori gemm_ar tile (GEMM_AR.md)
constexpr int64_t kMaxGemmTiles = int64_t(1) << 20;  // most output tiles a case may have (validate())
// Work-items one CU holds at once: 4 SIMDs x 8 wave slots x 64 lanes (AMD CDNA3 ISA reference; assumed
// unchanged on gfx950). Blocks beyond what the CUs hold wait for a slot, so they add no loads in flight.
constexpr double kMaxThreadsPerCu = 2048;

using hw::ParamDecl;
using hw::Quantity;
}  // namespace

const hw::HwSchema<GemmArHw>& gemm_ar_hardware() {
  const double G = 1e9, us = 1e-6;
  static const hw::HwSchema<GemmArHw> schema{
      hw::required(&GemmArHw::compute_units, hw::vocab::compute_units()),
      hw::required(&GemmArHw::hbm_capacity, hw::vocab::hbm_capacity()),
      hw::required(&GemmArHw::fabric_bandwidth, hw::vocab::fabric_bandwidth()),
      hw::required(&GemmArHw::link_per_direction, hw::vocab::link_per_direction()),
      hw::required(&GemmArHw::queue_peak, hw::vocab::queue_peak()),
      hw::required(&GemmArHw::command_latency, hw::vocab::command_latency()),
      hw::required(&GemmArHw::fabric_cost, hw::vocab::copy_fabric_cost()),
      hw::required(&GemmArHw::read_efficiency, hw::vocab::read_efficiency()),
      hw::required(&GemmArHw::hbm_source_efficiency, hw::vocab::hbm_source_efficiency()),
      hw::optional(&GemmArHw::mall_capacity, hw::vocab::mall_capacity(), 0.0),
      hw::optional(&GemmArHw::write_cost, hw::vocab::write_cost(), 1.0),
      // Absent (hw/mi355x-8gpu.yaml does not set it): 1, the gather's puts at the per-queue rate of the
      // standalone SDMA all-reduce (issue 17: no component measurement separates them; README).
      hw::optional(&GemmArHw::gather_put_share, ParamDecl{"sdma.gather_put_share", Quantity::Ratio, 0.5, 2.0, "gemm_ar's gather puts (either wire, and fuse_reduce_push's band puts) as a share of sdma.queue_peak: a what-if, and the diagnostic of README's 'The MI355X file from its components' (seed 000's composite totals alone put it at 1.077 +- 0.018 as a fifth composite key); no component measurement identifies it"}, 1.0),
      hw::required(&GemmArHw::launch_gap, hw::vocab::launch_gap()),
      hw::required(&GemmArHw::fixed_cost, hw::vocab::kernel_fixed_cost()),
      hw::required(&GemmArHw::flag_barrier, hw::vocab::flag_barrier()),
      hw::required(&GemmArHw::workgroups_per_cu, ParamDecl{"gemm.workgroups_per_cu", Quantity::Count, 1, 16, "resident GEMM workgroups per CU (one 512-thread WG)"}),
      hw::optional(&GemmArHw::request_share, ParamDecl{"sdma.gemm_request_share", Quantity::Ratio, 0.05, 4.0, "arbitration weight of the GEMM's tile loads on the memory-fabric request resource per byte/s of their compute-bound rate, relative to a copy-engine put's per byte/s of its queue peak (1: both slowed by the same factor; < 1: the copy engines are served first, so a concurrent scatter slows the GEMM more than the GEMM slows it)"}, 1.0),
      // One L2 for all CUs when absent (a GPU of one die).
      hw::optional(&GemmArHw::xcds, ParamDecl{"gpu.xcds", Quantity::Count, 1, 1024, "dies (XCDs) per GPU, each with its own L2; workgroups are dispatched over them round-robin (the GEMM's operand reuse, gemm_operand_l2_hit)"}, 1.0),
      hw::required(&GemmArHw::blockscale_latency, ParamDecl{"gemm.blockscale_latency", Quantity::Time, 0, 1000 * us, "blockscale route (per-128 block scales, BLOCK_M 128): the GEMM kernel's time outside its waves (launch, prologue, tail), per call"}),
      hw::required(&GemmArHw::blockscale_wave_per_kblock, ParamDecl{"gemm.blockscale_wave_per_kblock", Quantity::Time, 0, 100 * us, "blockscale: time of one wave per 128-deep K block"}),
      hw::required(&GemmArHw::blockscale_tile_fixed, ParamDecl{"gemm.blockscale_tile_fixed", Quantity::Time, 0, 10 * us, "blockscale: time a wave adds per tile it holds (BLOCK_M x 256)"}),
      hw::required(&GemmArHw::ptpc_latency, ParamDecl{"gemm.ptpc_latency", Quantity::Time, 0, 1000 * us, "ptpc route (a scale per row and column, BLOCK_M 256): the GEMM kernel's time outside its waves (launch, prologue, tail), per call"}),
      hw::required(&GemmArHw::ptpc_wave_per_kblock, ParamDecl{"gemm.ptpc_wave_per_kblock", Quantity::Time, 0, 100 * us, "ptpc: time of one wave per 128-deep K block"}),
      hw::required(&GemmArHw::ptpc_tile_fixed, ParamDecl{"gemm.ptpc_tile_fixed", Quantity::Time, 0, 10 * us, "ptpc: time a wave adds per tile it holds (BLOCK_M x 256)"}),
      hw::required(&GemmArHw::mxfp8_latency, ParamDecl{"gemm.mxfp8_latency", Quantity::Time, 0, 1000 * us, "mxfp8 route (native scaled MFMA, BLOCK_M 256): the GEMM kernel's time outside its waves (launch, prologue, tail), per call"}),
      hw::required(&GemmArHw::mxfp8_wave_per_kblock, ParamDecl{"gemm.mxfp8_wave_per_kblock", Quantity::Time, 0, 100 * us, "mxfp8: time of one wave per 128-deep K block"}),
      hw::required(&GemmArHw::mxfp8_tile_fixed, ParamDecl{"gemm.mxfp8_tile_fixed", Quantity::Time, 0, 10 * us, "mxfp8: time a wave adds per tile it holds (BLOCK_M x 256)"}),
      hw::required(&GemmArHw::remote_store_rate, ParamDecl{"gemm.remote_store_rate", Quantity::Bandwidth, 1 * G, 1000 * G, "per destination, rate at which a GEMM epilogue's CU stores reach a peer (fused-lsa)"}),
      hw::required(&GemmArHw::row_wave_efficiency, ParamDecl{"reduce.row_wave_efficiency", Quantity::Ratio, 0.05, 1.0, "fraction of the fabric bandwidth a one-wave-per-row reduce+quantize kernel reaches (fuse_quantize)"}),
      hw::required(&GemmArHw::band_sync, ParamDecl{"reduce.band_sync", Quantity::Time, 0, 200 * us, "fuse_reduce_push: per band, the 256-block wait barrier, counter atomic and elected block's locked puts"}),
      hw::required(&GemmArHw::device_submit, hw::vocab::device_submit()),
      hw::required(&GemmArHw::submit_cost_per_outstanding, hw::vocab::submit_cost_per_outstanding()),
      hw::required(&GemmArHw::system_release_per_band, ParamDecl{"reduce.system_release_per_band", Quantity::Time, 0, 1000 * us, "fuse_reduce_push with publish=fence: L2 write-back for a system-scope release, per band"}),
      hw::required(&GemmArHw::remote_read_latency, hw::vocab::remote_read_latency()),
      hw::required(&GemmArHw::congestion_knee, hw::vocab::congestion_knee()),
      hw::required(&GemmArHw::congestion_per_MiB, hw::vocab::congestion_per_MiB()),
      hw::required(&GemmArHw::stage_overhead, hw::vocab::stage_overhead()),
      hw::required(&GemmArHw::ar_loads_per_peer, hw::vocab::ar_loads_per_peer()),
      hw::required(&GemmArHw::window_write_rate, ParamDecl{"pcie.window_write_rate", Quantity::Bandwidth, 1 * G, 1000 * G, "what-if window_in_host_memory: rate of window writes crossing PCIe to host memory, per GPU"}),
      hw::required(&GemmArHw::rccl_bus_bandwidth_per_link, hw::vocab::ring_bus_bandwidth_per_link()),
      hw::required(&GemmArHw::rccl_step_latency, hw::vocab::ring_step_latency()),
  };
  return schema;
}

int block_m(const std::string& quant) { return quant == "blockscale" ? 128 : 256; }

int64_t padded_m(const GemmArConfig& c) {
  if (c.mode == "rccl") return c.m;  // a framework GEMM + all-reduce: no row bands to pad for
  const int64_t q = int64_t(c.world_size) * block_m(c.quant);
  return (c.m + q - 1) / q * q;
}

int effective_chunks(const GemmArConfig& c) {
  const int64_t bands = padded_m(c) / c.world_size / block_m(c.quant);
  int chunks = std::max(1, c.chunks);
  while (chunks > 1 && bands % chunks != 0) chunks /= 2;  // bench_gemm_ar.py @103655f6..ad271d19
  return chunks;
}

GemmWaves gemm_waves(const GemmArConfig& c, double compute_units, double workgroups_per_cu) {
  const int bm = block_m(c.quant);
  // mori's kernels pad M to a multiple of world_size x BLOCK_M (row bands per destination); the
  // RCCL baseline's GEMM (a framework GEMM) only rounds M up to its tile.
  const int64_t m_tiles = c.mode == "rccl" ? (c.m + bm - 1) / bm : padded_m(c) / bm;
  GemmWaves w;
  w.tiles = m_tiles * ((c.n + kBlockN - 1) / kBlockN);
  w.per_wave = std::max<int64_t>(1, int64_t(compute_units) * int64_t(workgroups_per_cu));
  w.full_waves = w.tiles / w.per_wave;
  w.last_wave_tiles = w.tiles % w.per_wave;
  return w;
}

double gemm_operand_l2_hit(const GemmArConfig& c, double compute_units, double workgroups_per_cu, int xcds) {
  const GemmWaves w = gemm_waves(c, compute_units, workgroups_per_cu);
  const int64_t nt = (c.n + kBlockN - 1) / kBlockN;
  const double bm = block_m(c.quant);
  const int64_t dies = std::max(1, xcds);
  const int64_t waves = (w.tiles + w.per_wave - 1) / w.per_wave;
  const int64_t step = std::max<int64_t>(1, waves / 1024);
  double loads = 0, unique = 0;
  std::vector<int64_t> rows, cols;
  for (int64_t wave = 0; wave < waves; wave += step) {
    const int64_t first = wave * w.per_wave, end = std::min(w.tiles, first + w.per_wave);
    for (int64_t x = 0; x < dies; ++x) {
      rows.clear();
      cols.clear();
      for (int64_t t = first + ((x - first % dies) % dies + dies) % dies; t < end; t += dies) {
        rows.push_back(t / nt);
        cols.push_back(t % nt);
      }
      if (rows.empty()) continue;
      const double tiles = double(rows.size());
      std::sort(rows.begin(), rows.end());
      std::sort(cols.begin(), cols.end());
      const double nr = double(std::unique(rows.begin(), rows.end()) - rows.begin());
      const double nc = double(std::unique(cols.begin(), cols.end()) - cols.begin());
      loads += tiles * (bm + kBlockN);
      unique += nr * bm + nc * kBlockN;
    }
  }
  return loads > 0 ? 1.0 - unique / loads : 0.0;
}

GemmRouteCost gemm_route_cost(const hw::Hardware& hw, const GemmArHw& h, const std::string& build, const std::string& quant) {
  if (build == "default") {
    if (quant == "blockscale")
      return {h.blockscale_latency, h.blockscale_wave_per_kblock, h.blockscale_tile_fixed};
    if (quant == "ptpc") return {h.ptpc_latency, h.ptpc_wave_per_kblock, h.ptpc_tile_fixed};
    return {h.mxfp8_latency, h.mxfp8_wave_per_kblock, h.mxfp8_tile_fixed};
  }
  auto get = [&](const char* name) {
    const std::string key = fmt::format("gemm@{}.{}_{}", build, quant, name);
    if (!hw.has(key)) {
      std::vector<std::string> builds{"default"};
      for (const auto& [k, v] : hw.values())
        if (k.rfind("gemm@", 0) == 0) {
          const std::string b = k.substr(5, k.find('.') - 5);
          if (std::find(builds.begin(), builds.end(), b) == builds.end()) builds.push_back(b);
        }
      const std::string what = fmt::format("build '{}' has no {} GEMM in '{}' (no key {}; builds there: {})", build, quant,
                                           hw.name(), key, fmt::join(builds, ", "));
      throw ParamError("gemm_build", "gemm_build: " + what, what);
    }
    return hw.get(key);
  };
  return {get("latency"), get("wave_per_kblock"), get("tile_fixed")};
}

double window_bytes(const GemmArConfig& c) {
  if (c.mode == "rccl") return 0.0;  // the baseline all-reduces a framework tensor: no symmetric window
  const double T = double(padded_m(c)) * c.n * kBf16;
  double w = (3.0 + 1.0 / c.world_size) * T;
  if (c.gather_dtype == "fp8") w += T / 2 + kScale * double(padded_m(c));
  return w;
}

void validate(const GemmArConfig& c, const hw::Hardware& hw) {
  auto bad = [](const std::string& knob, const std::string& what) { throw ParamError(knob, fmt::format("{}: {}", knob, what), what); };
  static const std::vector<std::string> modes{"gemm-only", "split-sdma", "fused-sdma", "split-lsa", "fused-lsa", "rccl"};
  if (std::find(modes.begin(), modes.end(), c.mode) == modes.end())
    bad("mode", fmt::format("unknown mode '{}' (expected gemm-only, split-sdma, fused-sdma, split-lsa, fused-lsa or rccl)", c.mode));
  if (c.quant != "blockscale" && c.quant != "ptpc" && c.quant != "mxfp8")
    bad("quant", fmt::format("unknown quantisation '{}' (expected ptpc, blockscale or mxfp8)", c.quant));
  if (c.world_size != 1 && c.world_size != 2 && c.world_size != 4 && c.world_size != 8)
    bad("world_size", fmt::format("{} is not supported (expected 1, 2, 4 or 8)", c.world_size));
  if (c.world_size == 1 && c.mode != "gemm-only")
    bad("world_size", fmt::format("1 (one process) runs only the GEMM (mode gemm-only); mode {} needs 2, 4 or 8 ranks", c.mode));
  if (c.world_size > hw.gpus())
    bad("world_size", fmt::format("{} ranks but the hardware file '{}' has {} GPUs", c.world_size, hw.name(), hw.gpus()));
  if (c.m < 1) bad("m", fmt::format("M must be >= 1, got {}", c.m));
  // The schema bounds a scenario's dimensions (CaseParam::dimension); the command lines (breakeven,
  // tune, trace whatif --fuse-gemm-ar) build configs directly, so the bound is checked here too.
  for (auto [key, v] : {std::pair<const char*, int64_t>{"m", c.m}, {"n", c.n}, {"k", c.k}})
    if (v > CaseParam::kMaxDimension) bad(key, fmt::format("{} must be at most 2^31 = {}, got {}", key, CaseParam::kMaxDimension, v));
  if (c.n < 1 || c.n % 8 != 0) bad("n", fmt::format("N must be a positive multiple of 8, got {}", c.n));
  // The work a case costs grows with the GEMM's output tiles (waves of tiles, and fused-lsa's per-tile
  // remote stores): at most kMaxGemmTiles (issue 22's third trial: fused-lsa at M = 805306368, N = 8
  // had taken 3.7 s and 527 MB, 2 GB at M = 2^31, inside every other bound). 2^20 tiles is M = 2^18
  // rows at N = 2^19 columns in 128 x 256 tiles, far past any measured or served shape (M <= 2^18 in
  // tune and breakeven; N <= 7168 in the data).
  if (c.m >= 1 && c.n >= 8) {
    const int64_t tiles = ((c.m + block_m(c.quant) - 1) / block_m(c.quant)) * ((c.n + kBlockN - 1) / kBlockN);
    if (tiles > kMaxGemmTiles)
      bad(c.m >= c.n ? "m" : "n", fmt::format("the GEMM's output is {} tiles of {} x {} (M = {}, N = {}), more than the 2^20 = {} this model "
                                              "simulates", tiles, block_m(c.quant), kBlockN, c.m, c.n, kMaxGemmTiles));
  }
  if (c.k < 256) bad("k", fmt::format("K must be >= 256 (two 128-deep K blocks), got {}", c.k));
  if (c.k % kBlockK != 0) bad("k", fmt::format("K must be a multiple of {}, got {}", kBlockK, c.k));
  if (c.chunks < 1 || c.chunks > 64) bad("chunks", fmt::format("must be in [1, 64], got {}", c.chunks));
  if (c.sdma_queues < 1 || c.sdma_queues > 8) bad("sdma_queues", fmt::format("must be in [1, 8], got {}", c.sdma_queues));
  if (c.tile_order != "rotated" && c.tile_order != "linear")
    bad("tile_order", fmt::format("unknown order '{}' (expected rotated or linear)", c.tile_order));
  if (c.gather_dtype != "bf16" && c.gather_dtype != "fp8")
    bad("gather_dtype", fmt::format("unknown wire '{}' (expected bf16 or fp8)", c.gather_dtype));
  if (c.gather_transport != "sdma" && c.gather_transport != "lsa")
    bad("gather_transport", fmt::format("unknown transport '{}' (expected sdma or lsa)", c.gather_transport));
  if (c.pull_blocks < 1 || c.pull_blocks > 4096) bad("pull_blocks", fmt::format("must be in [1, 4096], got {}", c.pull_blocks));
  if (c.gather_bands < 1 || c.gather_bands > 256) bad("gather_bands", fmt::format("must be in [1, 256], got {}", c.gather_bands));
  if (c.publish != "writethrough" && c.publish != "fence")
    bad("publish", fmt::format("unknown publish '{}' (expected writethrough or fence)", c.publish));
  const bool fp8 = c.gather_dtype == "fp8";
  // bench_gemm_ar.py @ad271d19 refuses only split-lsa with --gather-dtype fp8 (its all-reduce kernel
  // has no fp8 gather); split-sdma and fused-lsa run the fp8 gather (sweep.py preset fused-fp8).
  if (fp8 && (c.mode == "split-lsa" || c.mode == "rccl"))
    bad("gather_dtype", fmt::format("the fp8 wire is offered with split-sdma, fused-sdma and fused-lsa (mode {} refuses it)", c.mode));
  if (c.gather_transport == "lsa" && !fp8)
    bad("gather_transport", "the LSA pull gather exists only for the fp8 wire (use gather_dtype: fp8)");
  if (c.fuse_quantize && !fp8) bad("fuse_quantize", "needs the fp8 wire (gather_dtype: fp8)");
  if (c.fuse_reduce_push && c.gather_transport == "lsa")
    bad("fuse_reduce_push", "pushes the gather over SDMA; it cannot be combined with gather_transport: lsa");
  if (c.fuse_reduce_push && c.mode != "fused-sdma") bad("fuse_reduce_push", "is only offered with mode fused-sdma");
  if (c.fuse_reduce_push && fp8)
    bad("fuse_reduce_push", "pushes the reduced bf16 slice from inside the reduce; with gather_dtype: fp8 there is a quantize "
                            "between the two, and no source describes or measures a fused fp8 push (seed 000 measures the "
                            "bf16 wire only): use gather_dtype: bf16, or fuse_reduce_push: false");
  if (c.gather_bands > 1 && !c.fuse_reduce_push) bad("gather_bands", "only applies with fuse_reduce_push: true");
  (void)gemm_route_cost(hw, gemm_ar_hardware().read(hw), c.gemm_build, c.quant);  // an unknown build or route names gemm_build
  {
    const double hbm_capacity = gemm_ar_hardware().read(hw).hbm_capacity;
    // The window plus the GEMM's operands must fit in one GPU's HBM.
    // The RCCL baseline has no window but all-reduces the GEMM's bf16 output, M x N, in place.
    const double win = c.mode == "rccl" ? double(c.m) * c.n * kBf16 : window_bytes(c), a = double(padded_m(c)) * c.k,
                 b = double(c.n) * c.k;
    const double need = win + a + b;
    if (need > hbm_capacity) {
      // Name the dimension behind the largest term: the window grows with M and N, A (fp8) with M
      // and K, B (fp8) with N and K.
      const char* key = win >= a && win >= b ? (c.m >= c.n ? "m" : "n") : a >= b ? (c.m >= c.k ? "m" : "k") : (c.n >= c.k ? "n" : "k");
      constexpr double GiB = 1073741824.0;
      bad(key, fmt::format("M={}, N={}, K={} need {:.1f} GiB of HBM per GPU ({} {:.1f}, A {:.1f}, B {:.1f} GiB) "
                           "but '{}' has {:.1f} GiB",
                           c.m, c.n, c.k, need / GiB, c.mode == "rccl" ? "the all-reduced output" : "symmetric window", win / GiB,
                           a / GiB, b / GiB, hw.name(), hbm_capacity / GiB));
    }
  }
  const int64_t bands = padded_m(c) / c.world_size / block_m(c.quant);
  if (c.fuse_reduce_push && bands * block_m(c.quant) < c.gather_bands)
    bad("gather_bands", fmt::format("{} bands but the slice has only {} rows", c.gather_bands, bands * block_m(c.quant)));
}

namespace {

/// The gemm_ar group on the substrate (hw/group.hpp), with the MI355X model's policies: per rank an
/// HBM (memory-fabric) resource ("gpuR/hbm") and a fabric-request resource, one xGMI link per
/// direction ("gpuS/xgmi->D"), one SDMA queue per (source, destination) ("gpuS/sdma->D"), CU remote
/// loads with the congestion knee, group barriers at sync.flag_barrier; and the window-in-host-memory
/// what-if's PCIe resources. Helpers for the operations every mode is made of.
hw::GroupConfig group_config(const GemmArHw& h, int ws) {
  hw::GroupConfig g = hw::copy_mesh_config(h, ws);
  // The request resource is a phenomenological stand-in for the queueing copy-engine transactions
  // add to the GEMM's latency-bound L2-miss tile loads: GEMM waves cross it at one unit per byte,
  // copy-engine puts at sdma.fabric_cost per byte (at both ends), streaming kernels not at all. Its
  // capacity is memory.fabric_bandwidth; its weight (sdma.fabric_cost) and the GEMM's share there
  // (sdma.gemm_request_share, on the GEMM waves' flows) were fitted on seed 000's composites: the
  // weight sets the fused GEMM's 441.9 us against 369.4 alone, the share (copy engines served first)
  // the drain that follows it; no MI355X probe separates them yet (an SDMA-vs-GEMM and
  // SDMA-vs-stream interference probe would).
  g.request_fabric = true;
  g.copy_hbm_cost = 1.0;  // a copy byte is one HBM byte at each end
  g.copy_request_cost = h.fabric_cost;
  return g;
}

class Node {
 public:
  Node(const hw::Hardware& hw, const GemmArConfig& c, sim::Simulation& sim, sim::FlowNetwork& net)
      : hw(hw), h(gemm_ar_hardware().read(hw)), c(c), sim(sim), net(net), ws(c.world_size), g(sim, net, group_config(h, ws)),
        operand_l2_hit(gemm_operand_l2_hit(c, h.compute_units, h.workgroups_per_cu, int(h.xcds))) {
    // What-if: the window pinned in host memory. Every access to it crosses the GPU's PCIe link, one
    // resource per direction (PCIe is full duplex), each at pcie.window_write_rate.
    if (c.window_in_host_memory)
      for (int r = 0; r < ws; ++r) {
        pcie_.push_back(net.add_resource(fmt::format("gpu{}/pcie-to-host", r), h.window_write_rate));
        pcie_rd_.push_back(net.add_resource(fmt::format("gpu{}/pcie-from-host", r), h.window_write_rate));
      }
  }

  double fabric() const { return g.hbm_capacity(); }
  double launch() const { return h.launch_gap + h.fixed_cost; }
  std::string cu_lane(int r) const { return fmt::format("gpu{}/cu", r); }

  /// Hop for a write of weight w into rank d's symmetric window: its HBM, or its PCIe link when
  /// the window is pinned in host memory (what-if).
  sim::PathHop window_hop(int d, double w = 1.0) const {
    return c.window_in_host_memory ? sim::PathHop{pcie_[d], w} : sim::PathHop{g.hbm(d), w};
  }
  /// Hop for a read of weight w from rank r's window by rank r (or by a copy engine of r).
  sim::PathHop window_read_hop(int r, double w = 1.0) const {
    return c.window_in_host_memory ? sim::PathHop{pcie_rd_[r], w} : sim::PathHop{g.hbm(r), w};
  }

  /// Copy-engine put of `bytes` from s to d on queue (s,d): the command pays sdma.command_latency,
  /// then a flow over s's HBM (read, one byte per byte), the link s->d and d's window (write), and
  /// over both ends' fabric-request resources at sdma.fabric_cost per byte, capped at the queue peak
  /// x efficiency. on_done when the bytes have landed.
  /// src_in_window: the source lies in s's window (the fused GEMM's C, a reduced slice), which the
  /// window_in_host_memory what-if reads over PCIe.
  void sdma_put(int s, int d, double bytes, double efficiency, const std::string& label, std::function<void()> on_done = {},
                bool src_in_window = false) {
    g.put({.src = s, .dst = d, .bytes = c.sdma_moves_nothing ? 0.0 : bytes, .rate_cap = h.queue_peak * efficiency, .label = label,
           .on_done = std::move(on_done), .src_hop = src_in_window ? window_read_hop(s) : sim::PathHop{g.hbm(s), 1.0},
           .dst_hop = window_hop(d, 1.0), .dst_request = !c.window_in_host_memory});
  }

  /// A kernel streaming `bytes` (reads + writes) through rank r's memory fabric, after the launch
  /// gap and fixed cost. efficiency < 1 caps it at that fraction of the fabric.
  /// window_read / window_write: bytes of `bytes` that read from / write to r's window; the
  /// window_in_host_memory what-if moves them onto r's PCIe link (otherwise they are HBM bytes too).
  /// Every caller's writes go to the window, so window_write is also the bytes written: on the HBM
  /// they weigh memory.write_cost each (read bytes 1), which is how one HBM rate gives the reduce
  /// (8 slices read, 1 written) and the dequantize (1 read, 2 written) of seed 000's per-phase table.
  void stream_kernel(int r, const std::string& name, double bytes, std::function<void()> on_done, double efficiency = 1.0,
                     double extra_delay = 0, double window_read = 0, double window_write = 0) {
    hw::GpuGroup::Stream k{.rank = r, .name = name, .bytes = bytes, .start_latency = launch() + extra_delay,
                           .rate_cap = efficiency >= 1.0 ? kInf : fabric() * efficiency, .share = fabric(), .lane = cu_lane(r),
                           .on_done = std::move(on_done)};
    if (bytes > 0) k.hbm_weight = (bytes - window_write + h.write_cost * window_write) / bytes;
    if (c.window_in_host_memory && bytes > 0) {
      k.hbm_weight = std::max(0.0, bytes - window_read - window_write) / bytes;
      if (window_read > 0) k.extra_hops.push_back(window_read_hop(r, window_read / bytes));
      if (window_write > 0) k.extra_hops.push_back(window_hop(r, window_write / bytes));
    }
    g.stream(std::move(k));
  }

  /// CU pull: rank r loads `bytes_per_peer` from every peer (blocks x threads lanes, each with
  /// loads_in_flight 16-byte loads outstanding) and writes write_factor bytes locally per byte read;
  /// the substrate's remote-load model gives the rate of all peers together, split evenly.
  void pull_kernel(int r, const std::string& name, double bytes_per_peer, int blocks, int threads, double loads_in_flight,
                   double write_factor, std::function<void()> on_done, double extra_delay = 0) {
    const double resident = std::min(double(blocks), std::floor(h.compute_units * kMaxThreadsPerCu / threads));
    const double per_peer_cap = g.remote_load_rate(resident * threads, loads_in_flight * 16.0) / (ws - 1);
    auto all = hw::Join::after(ws - 1, std::move(on_done));
    for (int p = 0; p < ws; ++p) {
      if (p == r) continue;
      hw::GpuGroup::RemoteLoad l{.reader = r, .source = p, .bytes = bytes_per_peer, .rate_cap = per_peer_cap,
                                 .write_factor = write_factor, .start_latency = launch() + extra_delay,
                                 .name = fmt::format("{} <-gpu{}", name, p), .lane = cu_lane(r), .on_done = all};
      // the peer's window is host memory: r reads it over its own PCIe link
      if (c.window_in_host_memory) l.path = std::vector<sim::PathHop>{window_read_hop(r), window_hop(r, write_factor)};
      g.remote_load(std::move(l));
    }
  }

  const hw::Hardware& hw;
  const GemmArHw h;
  const GemmArConfig& c;
  sim::Simulation& sim;
  sim::FlowNetwork& net;
  int ws;
  hw::GpuGroup g;
  const double operand_l2_hit;  ///< gemm_operand_l2_hit for this call's GEMM (the same on every rank)

 private:
  std::vector<sim::ResourceId> pcie_, pcie_rd_;
};

/// Phase boundaries of one rank.
struct Timeline {
  std::vector<hw::Span> phases;
  double end = 0;
  void mark(const std::string& name, double s, double e) { phases.push_back({name, s * 1e6, e * 1e6}); }
};

/// The GEMM of one rank as waves of tiles over its CUs (non-persistent grid, one tile per resident
/// workgroup). A wave is a flow over the rank's memory fabric carrying its tiles' L2-missing operand
/// loads and C stores, capped at the compute-bound rate (bytes / tile time): it runs at compute
/// speed alone and slows when copies share the fabric. Tiles are ordered rotated or linear; when a
/// wave ends, every (destination, chunk) whose last tile was in it is reported through on_chunk.
class Gemm {
 public:
  Gemm(Node& node, int rank, bool remote_stores, std::function<void(int, int)> on_chunk, std::function<void()> on_done)
      : n_(node), r_(rank), remote_(remote_stores), on_chunk_(std::move(on_chunk)), on_done_(std::move(on_done)) {
    const auto& c = n_.c;
    const auto& h = n_.h;
    const int bm = block_m(c.quant);
    n_tiles_ = (c.n + kBlockN - 1) / kBlockN;
    const GemmWaves gw = gemm_waves(c, h.compute_units, h.workgroups_per_cu);
    m_tiles_ = gw.tiles / n_tiles_;
    tiles_ = gw.tiles;
    per_wave_ = gw.per_wave;
    waves_ = (tiles_ + per_wave_ - 1) / per_wave_;
    const double kblocks = double(c.k) / kBlockK;
    cost_ = gemm_route_cost(n_.hw, h, c.gemm_build, c.quant);
    wave_fixed_ = kblocks * cost_.wave_per_kblock;
    per_tile_ = cost_.tile_fixed;
    // A/B bytes a tile's loads take from the memory fabric: those its die's L2 does not already hold
    // from another tile of the wave (gemm_operand_l2_hit).
    ab_tile_ = (double(bm) + kBlockN) * c.k * kFp8 * (1.0 - n_.operand_l2_hit);
    c_tile_ = double(bm) * kBlockN * kBf16;
    const int ws = n_.ws;
    dest_row_tiles_ = m_tiles_ / ws;
    chunks_ = effective_chunks(c);
    const int64_t rt_per_chunk = dest_row_tiles_ / chunks_;
    last_wave_.assign(ws, std::vector<int64_t>(chunks_, 0));
    for (int d = 0; d < ws; ++d)
      for (int ch = 0; ch < chunks_; ++ch) {
        const int64_t rt = (ch + 1) * rt_per_chunk - 1;  // last row tile of the chunk, within d's slice
        const int64_t idx = c.tile_order == "rotated"
                                // fastest over N tiles, then destination from own rank + 1, then row tile
                                ? (rt * ws + ((d - r_ - 1) % ws + ws) % ws) * n_tiles_ + (n_tiles_ - 1)
                                // linear: row-major over C, destination d owns the d-th slice
                                : (int64_t(d) * dest_row_tiles_ + rt) * n_tiles_ + (n_tiles_ - 1);
        last_wave_[d][ch] = idx / per_wave_;
      }
  }

  void start() { next_wave(); }
  /// The route's time outside the waves (the kernel's launch, prologue and tail), in s.
  double latency() const { return cost_.latency; }

 private:
  int dest_of_tile(int64_t t) const {
    const int64_t row_tile = t / n_tiles_;
    if (n_.c.tile_order == "linear") return int(row_tile / dest_row_tiles_);
    const int ws = n_.ws;
    return int(((row_tile % ws) + r_ + 1) % ws);
  }

  void next_wave() {
    if (wave_ == waves_) {
      on_done_();
      return;
    }
    const int w = int(wave_);
    const int64_t first = wave_ * per_wave_, count = std::min(per_wave_, tiles_ - first);
    // The wave is done when its compute and (fused-lsa) its remote stores are.
    auto wave = std::make_shared<hw::Join>();
    auto done = [wave] { wave->arrive(); };
    auto next = [this, w] {
      if (on_chunk_)
        for (int d = 0; d < n_.ws; ++d)
          for (int ch = 0; ch < chunks_; ++ch)
            if (last_wave_[d][ch] == w) on_chunk_(d, ch);
      ++wave_;
      next_wave();
    };
    int parts = 1;
    // The wave alone: its time per K block plus what each of its tiles adds (gemm_route_cost).
    const double compute_s = wave_fixed_ + double(count) * per_tile_;
    std::function<void()> after_compute;  // fused-lsa: the wave's remote stores
    double local_bytes = count * ab_tile_;
    double c_local = count * c_tile_;
    if (remote_) {
      // fused-lsa: the epilogue stores every tile straight into its destination's slot.
      std::vector<double> per_dest(n_.ws, 0.0);
      for (int64_t t = first; t < first + count; ++t) per_dest[dest_of_tile(t)] += c_tile_;
      c_local = per_dest[r_];
      if (n_.c.tile_order == "rotated" && n_.ws > 1) {
        // Rotated order cycles the destinations every row tile, so each CU's next tile goes to
        // another peer: CUs that stored to a quiet link move on while others wait on a busy one, and
        // over the GEMM each link carries an even share. The wave boundary is the model's, not the
        // kernel's, so its remote bytes are spread evenly over the peers instead of charging the
        // wave its busiest link (which made an N that leaves a wave's rows uneven over the
        // destinations, e.g. 896 columns per rank, slower than a larger N).
        double remote = 0;
        for (int d = 0; d < n_.ws; ++d)
          if (d != r_) remote += per_dest[d];
        for (int d = 0; d < n_.ws; ++d)
          if (d != r_) per_dest[d] = remote / (n_.ws - 1);
      }
      // The remote stores are the tiles' epilogue: with one resident workgroup per CU
      // (gemm.workgroups_per_cu) no other tile's main loop runs on the CU meanwhile, so they follow
      // the wave's compute instead of overlapping it; this is how the GEMM slows down when its
      // stores cross the fabric (GEMM_AR.md: fused-lsa measured to lose to fused-sdma everywhere).
      const double scap = n_.h.remote_store_rate;
      int nstores = 0;
      for (int d = 0; d < n_.ws; ++d) nstores += d != r_ && per_dest[d] > 0;
      parts += nstores > 0 ? 1 : 0;
      auto stores = [this, w, per_dest, scap, done, nstores] {
        auto all = hw::Join::after(nstores, done);
        for (int d = 0; d < n_.ws; ++d) {
          if (d == r_ || per_dest[d] <= 0) continue;
          n_.g.remote_store({.writer = r_, .dest = d, .bytes = per_dest[d], .rate_cap = scap, .share = scap,
                             .name = fmt::format("gemm wave {} stores ->gpu{}", w, d), .lane = n_.cu_lane(r_) + " remote stores",
                             .landing = n_.window_hop(d), .on_done = all});
        }
      };
      if (nstores > 0) after_compute = stores;
    }
    wave->arm(parts, next);
    const double bytes = local_bytes + c_local;
    const double cap = bytes / compute_s;
    // The wave's loads and stores stream through the rank's HBM and its request fabric, with
    // sdma.gemm_request_share x its rate as its share there (a copy-engine put's share is its queue peak).
    hw::GpuGroup::Stream k{.rank = r_, .name = fmt::format("gemm wave {}", w), .bytes = bytes, .rate_cap = cap,
                           .share = cap * n_.h.request_share,
                           .extra_hops = {{n_.g.req(r_), 1.0}}, .lane = n_.cu_lane(r_), .on_done = [done, after_compute] {
                             if (after_compute) after_compute();
                             done();
                           }};
    if (n_.c.window_in_host_memory && n_.c.mode != "rccl") {
      // mori's GEMM writes C into the window in every mode (gemm-only too; the data README): those
      // bytes cross PCIe instead of staying in HBM
      k.hbm_weight = local_bytes / bytes;
      k.extra_hops[0].weight = local_bytes / bytes;  // the request fabric carries the local loads only
      k.extra_hops.push_back(n_.window_hop(r_, c_local / bytes));
    }
    n_.g.stream(std::move(k));
  }

  Node& n_;
  int r_;
  bool remote_;
  std::function<void(int, int)> on_chunk_;
  std::function<void()> on_done_;
  int64_t n_tiles_ = 0, m_tiles_ = 0, tiles_ = 0, per_wave_ = 1, waves_ = 0, wave_ = 0, dest_row_tiles_ = 1;
  int chunks_ = 1;
  GemmRouteCost cost_;
  double wave_fixed_ = 0, per_tile_ = 0, ab_tile_ = 0, c_tile_ = 0;
  std::vector<std::vector<int64_t>> last_wave_;
};

/// Orchestrates one call: every rank runs the mode's kernel sequence; phases are recorded per rank.
class Call {
 public:
  Call(const hw::Hardware& hw, const GemmArConfig& c, sim::Simulation& sim, sim::FlowNetwork& net)
      : n_(hw, c, sim, net), c_(c), ws_(c.world_size), tl_(ws_), t_mark_(ws_, 0.0) {
    const double T = double(padded_m(c)) * c.n * kBf16;
    slice_ = T / ws_;
    tensor_ = T;
    slice_rows_ = double(padded_m(c)) / ws_;
  }

  void start() {
    b1_ = &n_.g.barrier();
    b2_ = &n_.g.barrier();
    for (int r = 0; r < ws_; ++r)
      issuers_.push_back(std::make_unique<sim::OpServer>(n_.sim, fmt::format("gpu{}/put issue", r), 0.0));
    for (int r = 0; r < ws_; ++r) {
      const bool fused = c_.mode == "fused-sdma";
      const bool fused_lsa = c_.mode == "fused-lsa";
      std::function<void(int, int)> on_chunk;
      if (fused) {
        const double chunk_bytes = slice_ / effective_chunks(c_);
        // Chunks are put right after their tiles are stored: the source is still in the MALL.
        const double eff = 1.0;
        on_chunk = [this, r, chunk_bytes, eff](int d, int ch) {
          if (d != r) n_.sdma_put(r, d, chunk_bytes, eff, fmt::format("scatter chunk {} ->gpu{}", ch, d), {}, true);
        };
      }
      gemms_.push_back(std::make_unique<Gemm>(n_, r, fused_lsa, on_chunk, [this, r] { after_gemm(r); }));
      // The GEMM kernel's own latency (launch, prologue, tail: gemm.<quant>_latency) comes before
      // its first wave; the gemm phase runs from the call's start.
      n_.sim.after(gemms_[r]->latency(), [this, r] { gemms_[r]->start(); });
    }
  }

  GemmArResult result() const {
    GemmArResult out;
    int crit = 0;
    for (int r = 0; r < ws_; ++r) {
      out.per_rank_us.push_back(tl_[r].end * 1e6);
      if (tl_[r].end > tl_[crit].end) crit = r;
    }
    out.total_us = tl_[crit].end * 1e6;
    out.phases = tl_[crit].phases;
    return out;
  }

 private:
  double now() const { return n_.sim.now(); }
  void phase(int r, const std::string& name) {
    tl_[r].mark(name, t_mark_[r], now());
    t_mark_[r] = now();
  }
  void finish(int r, const std::string& name) {
    phase(r, name);
    tl_[r].end = now();
  }

  void after_gemm(int r) {
    phase(r, "gemm");
    const std::string& m = c_.mode;
    if (m == "gemm-only") {
      tl_[r].end = now();
      return;
    }
    if (m == "rccl") {
      // Ring all-reduce (alpha-beta): 2(ws-1) steps, each moving T/ws per rank.
      // Bus bandwidth scales with the links each rank has to the other members (a full mesh: ws-1).
      // The library all-reduces the real [M, N] tensor (no padding to ws x BLOCK_M).
      const double busbw = (ws_ - 1) * n_.h.rccl_bus_bandwidth_per_link;
      const double bytes = double(c_.m) * c_.n * kBf16;
      const double t = 2.0 * (ws_ - 1) * n_.h.rccl_step_latency + 2.0 * (ws_ - 1) / ws_ * bytes / busbw;
      n_.sim.after(n_.launch() + t, [this, r] { finish(r, "all-reduce"); });
      return;
    }
    if (m == "split-lsa") {
      split_lsa(r);
      return;
    }
    if (m == "split-sdma") {
      // One small kernel issues a whole-slice put per peer, waits for its queues, fences and flags.
      n_.sim.after(n_.launch(), [this, r] {
        const double eff = split_scatter_efficiency();
        for (int d = 0; d < ws_; ++d)
          if (d != r) n_.sdma_put(r, d, slice_, eff, fmt::format("scatter ->gpu{}", d), {}, true);
        n_.g.when_queues_idle(r, [this, r] { b1_->arrive(r, [this, r] { phase(r, "scatter"); reduce(r); }); });
      });
      return;
    }
    // fused-sdma and fused-lsa: the scatter already went out from the GEMM; drain the tail.
    n_.g.when_queues_idle(r, [this, r] { b1_->arrive(r, [this, r] { phase(r, "drain"); reduce(r); }); });
  }

  /// Split scatter: the source is the whole GEMM output, read after the GEMM. The fraction f of it
  /// still in the MALL is MALL / working set (C, the receive slots, A and B), capped at 1; the rest
  /// comes from HBM at sdma.hbm_source_efficiency of the queue peak. Harmonic blend of the two rates.
  double split_scatter_efficiency() const {
    const auto& c = c_;
    const double mall = n_.h.mall_capacity;
    const double working = tensor_ + (ws_ - 1) * slice_ + double(padded_m(c)) * c.k * kFp8 + double(c.n) * c.k * kFp8;
    const double f = mall <= 0 ? 0.0 : std::min(1.0, mall / working);
    const double e = n_.h.hbm_source_efficiency;
    return 1.0 / (f + (1.0 - f) / e);
  }

  void reduce(int r) {
    const bool fp8 = c_.gather_dtype == "fp8";
    const double reduce_bytes = (ws_ + 1) * slice_;  // read own + (ws-1) received slices, write one
    if (c_.fuse_reduce_push) {
      reduce_push(r, 0);
      return;
    }
    if (fp8 && c_.fuse_quantize) {
      // One kernel, one wave per row (a per-row amax): reads ws slices, writes e4m3 + row scales.
      const double bytes = ws_ * slice_ + slice_ / 2 + kScale * slice_rows_;
      n_.stream_kernel(r, "reduce+quantize", bytes, [this, r] { phase(r, "reduce+quantize"); gather(r); },
                       n_.h.row_wave_efficiency, 0, window_reads(), bytes - ws_ * slice_);
      return;
    }
    n_.stream_kernel(r, "reduce", reduce_bytes, [this, r, fp8] {
      phase(r, "reduce");
      if (!fp8) return gather(r);
      const double qbytes = slice_ + slice_ / 2 + kScale * slice_rows_;
      n_.stream_kernel(r, "quantize", qbytes, [this, r] {
        phase(r, "quantize");
        gather(r);
      }, 1.0, 0, slice_, qbytes - slice_);
    }, 1.0, 0, window_reads(), slice_);
  }

  /// fuse_reduce_push: the reduce runs in bands. After each band every block meets at a grid-wide
  /// barrier (reduce.band_sync; with publish=fence plus a system-scope release per band); then the
  /// elected block issues that band's puts, one per peer, under the queue lock
  /// (sdma.device_submit + sdma.submit_cost_per_outstanding x commands still queued, each), while
  /// the other blocks go on with the next band. The last band's issue is exposed.
  void reduce_push(int r, int band) {
    const int B = c_.gather_bands;
    const double extra = band == 0 ? 0.0 : -n_.launch();  // later bands run inside the same kernel
    const double sync = n_.h.band_sync +
                        (c_.publish == "fence" ? n_.h.system_release_per_band : 0.0);
    n_.stream_kernel(r, fmt::format("reduce band {}", band), (ws_ + 1) * slice_ / B, [this, r, band, B, sync] {
      n_.sim.after(sync, [this, r, band, B] {
        const bool last = band + 1 == B;
        auto issued = std::make_shared<hw::Join>();
        issued->arm(ws_ - 1, [this, r, last] {
          if (!last) return;
          phase(r, "reduce+push");
          n_.g.when_queues_idle(r, [this, r] { b2_->arrive(r, [this, r] { finish(r, "gather"); }); });
        });
        for (int d = 0; d < ws_; ++d) {
          if (d == r) continue;
          const double cost = n_.h.device_submit + n_.h.submit_cost_per_outstanding * n_.g.max_outstanding(r);
          issuer(r).submit_cost(cost, [this, r, d, band, B, issued] {
            n_.sdma_put(r, d, slice_ / B, n_.h.gather_put_share, fmt::format("gather band {} ->gpu{}", band, d), {}, true);
            issued->arrive();
          });
        }
        if (!last) reduce_push(r, band + 1);
      });
    }, 1.0, extra, window_reads() / B, slice_ / B);
  }
  sim::OpServer& issuer(int r) { return *issuers_[size_t(r)]; }

  /// Bytes the reduce reads from the window: the (ws-1) received slices and the rank's own partial
  /// (C, which the GEMM wrote into the window).
  /// (mori's GEMM writes C into the window in every mode: the data README.)
  double window_reads() const { return ws_ * slice_; }

  void gather(int r) {
    const bool fp8 = c_.gather_dtype == "fp8";
    const double wire = fp8 ? slice_ / 2 + kScale * slice_rows_ : slice_;
    if (fp8 && c_.gather_transport == "lsa") {
      // Barrier (every rank's quantized slice is ready), then pull_blocks x 256 lanes each with
      // (ws-1) 16-byte loads in flight read every peer's e4m3 slice and store bf16 locally.
      b2_->arrive(r, [this, r, wire] {
        phase(r, "barrier");
        n_.pull_kernel(r, "pull", wire, c_.pull_blocks, 256, ws_ - 1, 2.0 * slice_ / wire,
                       [this, r] { finish(r, "pull"); });
      });
      return;
    }
    n_.sim.after(n_.launch(), [this, r, wire, fp8] {
      for (int d = 0; d < ws_; ++d)
        if (d != r) n_.sdma_put(r, d, wire, n_.h.gather_put_share, fmt::format("gather ->gpu{}", d), {}, true);
      n_.g.when_queues_idle(r, [this, r, fp8] {
        b2_->arrive(r, [this, r, fp8] {
          if (!fp8) return finish(r, "gather");
          phase(r, "gather");
          // Widen the landed e4m3 to bf16: read (ws-1) fp8 slices, write (ws-1) bf16 slices.
          n_.stream_kernel(r, "dequantize", (ws_ - 1) * (slice_ / 2 + slice_), [this, r] { finish(r, "dequantize"); }, 1.0, 0,
                           (ws_ - 1) * slice_ / 2, (ws_ - 1) * slice_);
        });
      });
    });
  }

  /// split-lsa: ar_2stage (grid min(24, packs/512) x 512 lanes, lsa.ar_loads_per_peer 16-byte packs
  /// from every peer in flight per lane: (ws - 1) at 1), or the 1-stage kernel for tiny tensors.
  void split_lsa(int r) {
    const double packs = tensor_ / 16.0;
    const int blocks = int(std::max(1.0, std::min(24.0, std::floor(packs / 512))));
    const double one_stage_limit = ws_ == 2 ? kInf : (ws_ <= 4 ? 160.0 * 1024 : 80.0 * 1024);
    const double stage = n_.h.stage_overhead;
    const double lif = n_.h.ar_loads_per_peer * (ws_ - 1);
    if (tensor_ < one_stage_limit) {
      n_.pull_kernel(r, "ar_1stage", tensor_, blocks, 512, lif, 1.0 / (ws_ - 1), [this, r] { finish(r, "all-reduce"); }, stage);
      return;
    }
    n_.pull_kernel(r, "ar_2stage stage 1", slice_, blocks, 512, lif, 1.0 / (ws_ - 1), [this, r, blocks, stage, lif] {
      phase(r, "reduce");
      b1_->arrive(r, [this, r, blocks, stage, lif] {
        phase(r, "barrier");
        n_.pull_kernel(r, "ar_2stage stage 2", slice_, blocks, 512, lif, 1.0, [this, r] { finish(r, "gather"); },
                       stage - n_.launch());
      });
    }, stage);
  }

  Node n_;
  const GemmArConfig& c_;
  int ws_;
  double slice_ = 0, tensor_ = 0, slice_rows_ = 0;
  std::vector<Timeline> tl_;
  std::vector<double> t_mark_;
  std::vector<std::unique_ptr<Gemm>> gemms_;
  std::vector<std::unique_ptr<sim::OpServer>> issuers_;
  hw::GpuGroup::Barrier* b1_ = nullptr;
  hw::GpuGroup::Barrier* b2_ = nullptr;
};

}  // namespace

GemmArResult simulate_gemm_ar(const hw::Hardware& hw, const GemmArConfig& c, sim::TraceSink* trace) {
  validate(c, hw);
  sim::Simulation sim;
  sim.set_trace(trace);
  sim::FlowNetwork net(sim);
  Call call(hw, c, sim, net);
  call.start();
  sim.run();
  if (!net.stalled().empty())
    throw std::runtime_error(fmt::format("simulation stalled: flow '{}' can never finish (a zero-capacity resource?)",
                                         net.stalled().front()));
  GemmArResult res = call.result();
  res.window_bytes = window_bytes(c);
  res.wire_rel_l2 = c.gather_dtype == "fp8" ? e4m3_wire_rel_l2_per_row(c.n) : 0.0;
  res.engine_events = long(sim.events_processed());
  res.flows = net.started();
  return res;
}

// ================================ the fp8 wire's numerics ========================================

float round_to_e4m3(float x) {
  if (std::isnan(x)) return x;
  const float a = std::fabs(x);
  if (a >= 448.0f) return std::copysign(448.0f, x);
  if (a == 0.0f) return x;
  // E4M3: exponent bias 7, 3 mantissa bits, smallest normal 2^-6, subnormal step 2^-9.
  int e;
  std::frexp(a, &e);      // a = f * 2^e, f in [0.5, 1)
  int exp2 = e - 1;       // a in [2^exp2, 2^(exp2+1))
  if (exp2 < -6) exp2 = -6;  // subnormal range shares the step of the smallest normal binade
  const double step = std::ldexp(1.0, exp2 - 3);
  const double q = std::nearbyint(double(a) / step) * step;  // nearbyint: ties to even (default mode)
  return std::copysign(float(std::min(q, 448.0)), x);
}

QuantStats quantize_e4m3(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t group) {
  if (group < 1 || cols % group != 0)
    throw std::invalid_argument(fmt::format("quantize_e4m3: group {} must divide cols {}", group, cols));
  if (int64_t(x.size()) != rows * cols)
    throw std::invalid_argument(fmt::format("quantize_e4m3: {} values for a [{}, {}] tensor", x.size(), rows, cols));
  double err2 = 0, ref2 = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < cols; g += group) {
      const float* p = &x[r * cols + g];
      float amax = 0;
      for (int64_t i = 0; i < group; ++i) amax = std::max(amax, std::fabs(p[i]));
      const float scale = amax > 0 ? amax / 448.0f : 1.0f;
      for (int64_t i = 0; i < group; ++i) {
        const float deq = round_to_e4m3(p[i] / scale) * scale;
        err2 += double(deq - p[i]) * (deq - p[i]);
        ref2 += double(p[i]) * p[i];
      }
    }
  return {std::sqrt(err2 / ref2), 4.0 / double(group)};
}

std::vector<float> standard_normal(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<float> out(size_t(rows * cols));
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < out.size(); i += 2) {
    // Box-Muller on 53-bit uniforms in (0, 1].
    const double u1 = (double(gen() >> 11) + 1.0) * 0x1.0p-53, u2 = double(gen() >> 11) * 0x1.0p-53;
    const double rad = std::sqrt(-2.0 * std::log(u1));
    out[i] = float(rad * std::cos(two_pi * u2));
    if (i + 1 < out.size()) out[i + 1] = float(rad * std::sin(two_pi * u2));
  }
  return out;
}

double e4m3_wire_rel_l2_per_row(int64_t cols) {
  static std::mutex mu;
  static std::map<int64_t, double> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(cols);
  if (it != cache.end()) return it->second;
  const int64_t rows = 64;
  const double v = quantize_e4m3(standard_normal(rows, cols), rows, cols, cols).rel_l2;
  cache[cols] = v;
  return v;
}

// ================================ the model's spec ===============================================

namespace {
/// The knobs as a scenario case gives them, each bound to its GemmArConfig member (whose
/// initialiser is its default; mode and m are required).
const CaseFields<GemmArConfig>& gemm_ar_fields() {
  using C = GemmArConfig;
  static const CaseFields<C> f{
      "gemm_ar",
      {field(CaseParam::name("mode", "one of gemm-only, split-sdma, fused-sdma, split-lsa, fused-lsa, rccl").required()
                 .one_of({"gemm-only", "split-sdma", "fused-sdma", "split-lsa", "fused-lsa", "rccl"})
                 .tunable({"gemm-only"}),  // gemm-only does no all-reduce: not a setting of the same call
             &C::mode),
       field(CaseParam::dimension("m", "rows of C, the tokens of the call").required(), &C::m),
       field(CaseParam::dimension("n", "columns of C (the hidden size)"), &C::n),
       field(CaseParam::dimension("k", "the reduction dimension (>= 256, a multiple of 128)"), &C::k),
       field(CaseParam::integer("world_size", "tensor-parallel ranks: 2, 4 or 8; 1 for gemm-only in one process"), &C::world_size),
       field(CaseParam::name("quant", "blockscale (BLOCK_M 128), ptpc or mxfp8 (BLOCK_M 256)"), &C::quant),
       field(CaseParam::name("gemm_build", "the GEMM kernel build whose costs apply: default (the hw file's gemm.*) or a build of gemm@BUILD"), &C::gemm_build),
       field(CaseParam::integer("chunks", "scatter chunks per destination (halved until it divides the row bands)").at_least(1).at_most(64).tunable(), &C::chunks),
       field(CaseParam::integer("sdma_queues", "queues created per peer (one is used: no effect on timing)"), &C::sdma_queues),
       field(CaseParam::name("tile_order", "rotated or linear").one_of({"rotated", "linear"}).tunable(), &C::tile_order),
       field(CaseParam::name("gather_dtype", "the wire: bf16, or fp8 (e4m3 + a scale per row)").one_of({"bf16", "fp8"}).tunable(), &C::gather_dtype),
       field(CaseParam::name("gather_transport", "sdma, or lsa (the fp8 wire's pull)").one_of({"sdma", "lsa"}).tunable(), &C::gather_transport),
       field(CaseParam::integer("pull_blocks", "grid of the LSA pull kernel (MORI_GEMM_AR_PULL_BLOCKS)").at_least(1).at_most(4096).tunable(), &C::pull_blocks),
       field(CaseParam::flag("fuse_quantize", "one reduce+quantize kernel (fp8 wire)").tunable(), &C::fuse_quantize),
       field(CaseParam::flag("fuse_reduce_push", "gather puts issued from inside the reduce (fused-sdma, bf16)").tunable(), &C::fuse_reduce_push),
       field(CaseParam::integer("gather_bands", "bands of the reduce with fuse_reduce_push").at_least(1).at_most(256).tunable(), &C::gather_bands),
       field(CaseParam::name("publish", "writethrough or fence (a release per block per band)").one_of({"writethrough", "fence"}).tunable(), &C::publish),
       field(CaseParam::flag("window_in_host_memory", "what-if: every window access crosses PCIe"), &C::window_in_host_memory),
       field(CaseParam::flag("sdma_moves_nothing", "what-if: puts complete and move no byte"), &C::sdma_moves_nothing)}};
  return f;
}
}  // namespace

const CaseSchema& gemm_ar_case_schema() { return gemm_ar_fields().schema(); }

GemmArConfig gemm_ar_config(const CaseValues& v) { return gemm_ar_fields().read(v); }

nlohmann::json run_gemm_ar_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  // The path and the row count say which layer call this is; no silent default for either, but
  // their absence is reported after the values given and their validation (a bad value first).
  const CaseValues v = gemm_ar_case_schema().read(p, false, true);
  const GemmArConfig c = gemm_ar_config(v);
  validate(c, hw);
  v.require();
  const GemmArResult r = simulate_gemm_ar(hw, c, trace);
  nlohmann::json params = v.to_json();
  params["m_padded"] = padded_m(c);                  // the kernel pads M to world_size x BLOCK_M
  params["chunks_effective"] = effective_chunks(c);  // chunks halved until they divide the bands per destination
  nlohmann::json out{{"params", params},
                     {"predicted_us", r.total_us},
                     {"phases", hw::spans_json(r.phases)},
                     {"window_MiB", r.window_bytes / (1024.0 * 1024.0)},
                     {"wire_rel_l2", r.wire_rel_l2},
                     {"per_rank_us", r.per_rank_us}};
  // What ran differs from what was asked: said on the case's line, not only in the JSON params.
  if (effective_chunks(c) != c.chunks)
    out["note"] = fmt::format("chunks {} runs as {} (halved until it divides the {} row bands per destination, as bench_gemm_ar.py does)",
                              c.chunks, effective_chunks(c), padded_m(c) / c.world_size / block_m(c.quant));
  return out;
}

const ModelSpec& gemm_ar_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s{"gemm_ar", "mori's fused fp8 GEMM + all-reduce (every mode of bench_gemm_ar.py and an RCCL-style ring baseline)",
                "mori gemm_ar benchmark and kernels (GEMM_AR.md); fitted on seed 000 (hw/mi355x-8gpu.yaml)",
                reads_of(gemm_ar_hardware()), listing_of(gemm_ar_case_schema()), run_gemm_ar_case};
    s.schema = &gemm_ar_case_schema();
    // A case costs a fixed part (set-up, the reduce and gather kernels' launches) and a part that
    // grows with the GEMM's tiles, M x N: measured fused-sdma at N=7168 (tests/bench/bench_sweep.cpp,
    // BM_GemmArCaseByM): 3.5 ms at M=128, 4.4 at 1024, 6.5 at 4096, 13.5 at 16384, about
    // 3.5 ms x (1 + 3 M N / (16384 x 7168)).
    s.expected_cost = [](const YAML::Node& p) {
      const auto get = [&](const char* k, double d) {
        try {
          return p[k] && p[k].IsScalar() ? p[k].as<double>() : d;
        } catch (const std::exception&) {
          return d;
        }
      };
      return 1.0 + 3.0 * get("m", 16384) * get("n", 7168) / (16384.0 * 7168.0);
    };
    s.row_note = [](const nlohmann::json& c) {
      const auto& cp = c["params"];
      if (cp.is_object() && cp.contains("m") && cp.contains("m_padded") && cp["m"] != cp["m_padded"])
        return fmt::format("  (M padded to {}, as the kernel does)", cp["m_padded"].get<int64_t>());
      return std::string();
    };
    s.phases_note = [](const nlohmann::json& c) {
      if (!c.contains("window_MiB")) return std::string();
      std::string t = fmt::format("symmetric window {:.0f} MiB per GPU", c["window_MiB"].get<double>());
      if (c.contains("wire_rel_l2") && c["wire_rel_l2"].get<double>() > 0)
        t += fmt::format(", fp8 wire relL2 {:.2e} (e4m3, a scale per row, on standard-normal data)", c["wire_rel_l2"].get<double>());
      return t;
    };
    s.csv_columns = {
        {"window_MiB", [](const nlohmann::json& c) { return c.contains("window_MiB") ? fmt::format("{:.3f}", c["window_MiB"].get<double>()) : std::string(); }},
        {"wire_rel_l2", [](const nlohmann::json& c) { return c.contains("wire_rel_l2") ? fmt::format("{:.4g}", c["wire_rel_l2"].get<double>()) : std::string(); }}};
    return s;
  }();
  return spec;
}

}  // namespace fusesim::models
