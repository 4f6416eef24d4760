// Fused GEMM + all-reduce (mori gemm_ar) on a fully meshed node: configuration, validation, the
// hardware it reads, the discrete-event model of every mode, the fp8 wire's numerics, and the
// model's spec (its case parameters and report extras; registered in models/registry.inc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/group.hpp"
#include "hw/hardware.hpp"
#include "hw/params.hpp"
#include "models/case_params.hpp"
#include "sim/trace.hpp"

namespace fusesim::models {

/// The hardware the gemm_ar model reads, in SI units (keys in gemm_ar_hardware(); read once per call).
struct GemmArHw {
  double compute_units = 0, hbm_capacity = 0, fabric_bandwidth = 0, link_per_direction = 0;
  double launch_gap = 0, fixed_cost = 0, flag_barrier = 0;
  double queue_peak = 0, command_latency = 0, fabric_cost = 0, hbm_source_efficiency = 0, mall_capacity = 0;
  double device_submit = 0, submit_cost_per_outstanding = 0;
  double workgroups_per_cu = 0;
  double xcds = 1;  ///< gpu.xcds (optional, default 1): dies whose CUs share one L2 (operand reuse: gemm_operand_l2_hit)
  double request_share = 1;  ///< sdma.gemm_request_share (optional, default 1): the GEMM waves' share on the request fabric
  double write_cost = 1;  ///< memory.write_cost (optional, default 1)
  double gather_put_share = 1;  ///< sdma.gather_put_share (optional, default 1: what-if / diagnostic, not set in the MI355X file)
  // The GEMM per quantisation route, for the file's default build (GemmRouteCost; other builds in
  // sections gemm@BUILD): latency, wave_per_kblock, tile_fixed.
  double blockscale_latency = 0, blockscale_wave_per_kblock = 0, blockscale_tile_fixed = 0;
  double ptpc_latency = 0, ptpc_wave_per_kblock = 0, ptpc_tile_fixed = 0;
  double mxfp8_latency = 0, mxfp8_wave_per_kblock = 0, mxfp8_tile_fixed = 0;
  double remote_store_rate = 0;
  double row_wave_efficiency = 0, band_sync = 0, system_release_per_band = 0;
  double read_efficiency = 0, remote_read_latency = 0, congestion_knee = 0, congestion_per_MiB = 0;
  double stage_overhead = 0, ar_loads_per_peer = 0;
  double window_write_rate = 0;
  double rccl_bus_bandwidth_per_link = 0, rccl_step_latency = 0;
};
/// The keys GemmArHw is read from (declared here, or in hw/params.hpp where several models read
/// them), every one required but gpu.mall_capacity (default 0: no MALL).
const hw::HwSchema<GemmArHw>& gemm_ar_hardware();

/**
 * What one quantisation route's GEMM kernel (mori's gfx950 kernels) costs, in seconds. A call of
 * W = ceil(tiles / (CUs x workgroups per CU)) waves takes
 *   latency + sum over waves of (kb x wave_per_kblock + tiles_in_wave x tile_fixed)
 * with kb = K/128 the K blocks: a wave is a time per K block (the tile's main loop, latency-bound:
 * seed 000's K-sweep, "wait, not work") plus a time per tile it holds (what the tiles share), so a
 * partial last wave costs what its tiles cost, not a full wave (the N sweep of the data README). A
 * wave-fixed term independent of K fits 0 on every route, and a per-tile term per K block is not
 * identified by the gemm-only points (sigma above its value on every route), so neither is a parameter.
 * Fitted per route and build on gemm-only measurements (scenarios/mi355x-components-gemm.yaml).
 */
struct GemmRouteCost {
  double latency = 0, wave_per_kblock = 0, tile_fixed = 0;
};
/**
 * The route's costs for kernel build `build`: "default" is the file's gemm.<quant>_* keys; any other
 * name reads gemm@<build>.<quant>_* (all three required). Errors: models::ParamError on key
 * gemm_build naming the missing hardware key and the builds the file has.
 */
GemmRouteCost gemm_route_cost(const hw::Hardware& hw, const GemmArHw& h, const std::string& build, const std::string& quant);
/// Tiles of the GEMM (BLOCK_M x 256 output tiles over the padded M) and tiles per wave, for a config.
struct GemmWaves {
  int64_t tiles = 0, per_wave = 1, full_waves = 0, last_wave_tiles = 0;
};

/// The knobs of mori's bench_gemm_ar.py, under the benchmark's own names (see GEMM_AR.md). The
/// member initialisers are the defaults of a scenario case too (gemm_ar_case_schema()).
struct GemmArConfig {
  std::string mode = "fused-sdma";      ///< gemm-only | split-sdma | fused-sdma | split-lsa | fused-lsa | rccl
  int64_t m = 16384;                    ///< rows of A and C (tokens)
  int64_t n = 7168;                     ///< columns of C (hidden size)
  int64_t k = 2048;                     ///< reduction dimension (K >= 256)
  int world_size = 8;                   ///< tensor-parallel ranks: 1 (gemm-only: one process), 2, 4 or 8 (<= GPUs in the hw file)
  std::string quant = "blockscale";     ///< blockscale (BLOCK_M 128) | ptpc | mxfp8 (BLOCK_M 256)
  std::string gemm_build = "default";   ///< the GEMM kernel build whose costs apply (hw file: gemm@BUILD), default: the file's gemm.*
  int chunks = 8;                       ///< scatter chunks per destination (halved until it divides the row bands per destination)
  int sdma_queues = 1;                  ///< queues created per peer (one per peer is used)
  std::string tile_order = "rotated";   ///< rotated | linear
  std::string gather_dtype = "bf16";    ///< bf16 | fp8 (e4m3 + one fp32 scale per row)
  std::string gather_transport = "sdma";///< sdma | lsa (fp8 only)
  int pull_blocks = 64;                 ///< grid of the LSA pull kernel (MORI_GEMM_AR_PULL_BLOCKS)
  bool fuse_quantize = false;           ///< one reduce+quantize kernel (fp8 wire)
  bool fuse_reduce_push = false;        ///< gather puts issued from inside the reduce
  int gather_bands = 1;                 ///< bands of the reduce when fuse_reduce_push
  std::string publish = "writethrough"; ///< writethrough | fence (release per block per band)
  // What-if switches (failure modes of a node):
  bool window_in_host_memory = false;   ///< every window write crosses PCIe at about one link's rate
  bool sdma_moves_nothing = false;      ///< a build without the SDMA path: puts complete, move 0 bytes
};

/**
 * Validate a configuration against the benchmark's rules and the hardware.
 * Throws models::ParamError (a std::invalid_argument) whose key is the knob, its message "KNOB: what
 * was expected": unknown mode/quant/dtype/
 * transport/order/publish, world size not in {1,2,4,8} (1 only for gemm-only) or larger than the
 * node, K < 256 or not a multiple of 128, M or N < 1, chunks/pull_blocks/gather_bands out of range,
 * an unknown gemm_build, and the combinations the real benchmark (bench_gemm_ar.py @ad271d19)
 * refuses: the fp8 wire with split-lsa (split-sdma and fused-lsa run it) or rccl, the LSA transport
 * with the bf16 wire, fuse_quantize without the fp8 wire, fuse_reduce_push with the LSA transport.
 */
void validate(const GemmArConfig& c, const hw::Hardware& hw);

/// BLOCK_M of a quantisation scheme: 128 for blockscale, 256 for ptpc and mxfp8 (GEMM_AR.md).
int block_m(const std::string& quant);
/// M padded up to a multiple of world_size * BLOCK_M (rows), as mori's kernels do; M itself for mode rccl
/// (the baseline's framework GEMM only rounds M up to its tile, which its wave count accounts for).
int64_t padded_m(const GemmArConfig& c);
/// Scatter chunks per destination actually used: the requested chunks halved while they do not
/// divide the row bands per destination (bench_gemm_ar.py @103655f6..ad271d19: `while chunks > 1
/// and bands % chunks: chunks //= 2`), so 8 runs as 4 at 12 bands (not as 6).
int effective_chunks(const GemmArConfig& c);
/// The GEMM's tiles and waves for a config (BLOCK_M by quant, M padded as padded_m(), N tiles of 256).
GemmWaves gemm_waves(const GemmArConfig& c, double compute_units, double workgroups_per_cu);
/**
 * The share of the GEMM's A/B tile loads served by an L2 (the rest crosses the memory fabric), from
 * the kernel's structure rather than a key: tile index = workgroup id (the rotated and the linear
 * order alike: row tile = index / N tiles, column = index % N tiles), workgroup i on die i mod xcds
 * (MI300's round-robin dispatch over its XCDs, each with its own L2; assumed for gfx950), one wave of
 * CUs x workgroups_per_cu resident workgroups moving through K together, so a die loads each row
 * tile's A and each column tile's B its wave's tiles use once per wave (per 128-deep K block a wave's
 * working set on a die is a few hundred KiB of a 4 MiB L2, the MI300X size) and nothing across waves (a wave streams
 * all of K through the L2). The loads are weighted by bytes (BLOCK_M x K of A, 256 x K of B per
 * tile); over at most 1024 waves sampled evenly. 0.751 at seed 000's [16384, 7168] blockscale over 8
 * XCDs. It replaces gemm.operand_l2_hit, which no measurement identified (issue 17: the GEMM alone
 * is compute-bound above a share of 0.27, and on the composites it traded off against sdma.fabric_cost).
 */
double gemm_operand_l2_hit(const GemmArConfig& c, double compute_units, double workgroups_per_cu, int xcds);

/**
 * Symmetric window size in bytes. T = M_pad*N*2 (the bf16 output). bf16 wire: the GEMM's output
 * (T), the (ws-1) receive slots (T(ws-1)/ws), the gather's output (T), the reduced slice and one
 * staging slice (2T/ws): (3 + 1/ws) T. The fp8 wire adds the e4m3 staging of every rank's slice and
 * its row scales: T/2 + 4*M_pad bytes. Reproduces 700 / 812 MiB at M=16384, N=7168, ws=8 and
 * 560 / 640 MiB at M=16384, N=5120, ws=2 (seed 000 and the V4.1-Flash PR). Every mori mode has the
 * window (gemm-only too: the benchmark's GEMM writes C into it); mode rccl (the GEMM + RCCL baseline)
 * has none: 0.
 */
double window_bytes(const GemmArConfig& c);

/// Result of one simulated call.
struct GemmArResult {
  double total_us = 0;                 ///< max over ranks, from the first launch to the last kernel's end
  std::vector<double> per_rank_us;     ///< each rank's finish time
  std::vector<hw::Span> phases;        ///< critical rank's phases (gemm, drain, reduce, ...), in us
  double window_bytes = 0;
  double wire_rel_l2 = 0;              ///< relL2 the wire adds (0 for bf16; per-row e4m3 otherwise)
  long engine_events = 0;
  long flows = 0;
};

/**
 * Simulate one call on the hardware. Builds, for the ws ranks of the group, a CU pool, an HBM
 * (memory fabric) resource, one link resource per direction between members and one SDMA queue per
 * (source, destination) pair, then runs the mode's kernels as flows and queue commands.
 * Units: times in us in the result. trace may be null.
 * Errors: std::invalid_argument from validate(); std::out_of_range if the hw file lacks a needed
 * parameter (names it).
 */
GemmArResult simulate_gemm_ar(const hw::Hardware& hw, const GemmArConfig& c, sim::TraceSink* trace = nullptr);

/**
 * The case parameters of a gemm_ar scenario case (the knobs above, under the benchmark's names;
 * mode and m required, the rest defaulting to GemmArConfig's initialisers). Calibration reads the
 * benchmark's RESULT_JSON fields with it too.
 */
const CaseSchema& gemm_ar_case_schema();
/// A GemmArConfig from a case's read parameters.
GemmArConfig gemm_ar_config(const CaseValues& v);

/**
 * The gemm_ar case runner (model `gemm_ar`): {"params" (the knobs that ran, with m_padded and
 * chunks_effective), "predicted_us", "phases", "window_MiB", "wire_rel_l2", "per_rank_us", "note"?
 * (a lowered chunks)}. Errors: models::ParamError naming the knob (the reader's refusals and
 * validate()'s), std::out_of_range for a hardware file lacking a parameter.
 */
nlohmann::json run_gemm_ar_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

// ---- the fp8 wire's numerics: e4m3 quantisation with per-group fp32 scales ---------------------

/**
 * Round a float to the nearest representable OCP FP8 E4M3 value (round to nearest, ties to even),
 * saturating at +-448 (the format's largest finite value; E4M3 "fn" has no infinities). Subnormals
 * down to 2^-9 are represented. NaN stays NaN.
 */
float round_to_e4m3(float x);

/// Result of quantising a [rows, cols] tensor to e4m3 with one fp32 scale per `group` elements.
struct QuantStats {
  double rel_l2 = 0;           ///< ||dequant(quant(x)) - x||_2 / ||x||_2
  double scale_bytes_frac = 0; ///< fp32 scale bytes / e4m3 payload bytes (4 / group)
};

/**
 * Quantise `x` (row-major [rows, cols]) with one scale per `group` consecutive elements of a row
 * (group == cols: one scale per row). scale = amax / 448 (amax of the group), q = e4m3(x / scale).
 * Errors: std::invalid_argument if group < 1, cols % group != 0 or x.size() != rows * cols.
 */
QuantStats quantize_e4m3(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t group);

/// rows x cols standard-normal samples from a fixed-seed generator (std::mt19937_64 + Box-Muller,
/// deterministic across platforms).
std::vector<float> standard_normal(int64_t rows, int64_t cols, uint64_t seed = 1234);

/// relL2 that the fp8 wire (e4m3, one scale per row of `cols`) adds on standard-normal data,
/// computed once per cols on 64 synthetic rows and cached.
double e4m3_wire_rel_l2_per_row(int64_t cols);

}  // namespace fusesim::models
