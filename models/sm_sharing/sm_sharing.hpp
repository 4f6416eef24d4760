// The sm_sharing model (issue 19): a GEMM beside a kernel that holds some of the GPU's SMs, on the
// SM pool of hw/sm_pool.hpp. Registered in models/registry.inc.
#pragma once

#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
#include "hw/params.hpp"
#include "hw/sm_pool.hpp"
#include "models/model.hpp"
#include "sim/trace.hpp"

namespace fusesim::models {

/// The machine keys sm_sharing reads (SI units): SMs, SMs per TPC, the per-SM tile rate line
/// r(n) = tile_rate_at_zero - tile_rate_slope x n (FLOP/s per SM with n CTAs running) and the HBM
/// capacity the copy neighbour and the GEMM share.
/// Round 3 also reads smshare.hbm_queue_kappa (optional: a copy neighbour under the round-3 rule needs
/// it) and the table `sm_map` (GPCs, TPCs, the dispatcher's first SMs; hw::SmMap).
/// Round 5 also reads smshare.tile_rate_max (optional, FLOP/s per SM: the round-3 mechanism caps the line
/// there, r(n) = min(r0 - slope n, tile_rate_max); absent (-1): the line alone).
struct SmSharingHw {
  double sms = 0, sms_per_tpc = 0, tile_rate_at_zero = 0, tile_rate_slope = 0, hbm = 0, hbm_queue_kappa = -1;
  double tile_rate_max = -1;
  /// The per-SM tile rate with n CTAs running (FLOP/s): the line, capped at tile_rate_max where it is given.
  double tile_rate(int n) const {
    const double line = tile_rate_at_zero - tile_rate_slope * n;
    return tile_rate_max > 0 ? std::min(line, tile_rate_max) : line;
  }
};
const hw::HwSchema<SmSharingHw>& sm_sharing_hardware();

/// The machine of the round-3 rule, read once from a hardware file (hw/h200-1gpu.yaml): the keys of
/// SmSharingHw, the SM limits (gpu.compute_units SMs, gpu.sms_per_tpc; Hopper's per-SM limits) and the
/// table `sm_map` (hw::SmMap). Errors: hw::FileError naming the file and key for a missing or bad key
/// or table, or an sm_map whose SM count differs from gpu.compute_units.
struct SmShareMachine {
  SmSharingHw hw;
  hw::SmLimits limits;
  hw::SmMap map;
  std::string path;  ///< the hardware file
  /// The optional table late_cluster_work_ids: (clusters G, CTAs per cluster) -> the work ids of the
  /// clusters of blockIdx G - 1, G - 2, ... (hw::PersistentGemm::late_work_ids), measured per grid.
  std::map<std::pair<int, int>, std::vector<int>> late_work_ids;
  std::string late_work_ids_file;  ///< where they came from (empty: no table)
  /// The optional table hbm_queue_kappa_by_kernel: kernel name (as ncu prints it) -> its HBM queueing
  /// coefficient, fitted on copy/compute pairs of that kernel (calibrate/data/h100/fit_kappa_by_kernel.py).
  std::map<std::string, double> kappa_by_kernel;
  std::string kappa_by_kernel_file;
};
SmShareMachine sm_share_machine(const hw::Hardware& hwf);

/// A GEMM kernel on the SM pool: `tiles` tiles shared by `grid` CTAs in clusters of `cluster` (a
/// persistent kernel: tiles > grid; a one-tile-per-CTA kernel: tiles = grid), each CTA of `block`.
/// `tiles` is what the scheduler hands out: for a clustered nvjet kernel of known cluster shape, the
/// tile grid padded to whole clusters (hw::pad_to_clusters; run_sm_sharing_case does it).
struct GemmOnSms {
  int tiles = 0, grid = 0, cluster = 1;
  hw::BlockShape block;
  /// The late clusters' work ids (hw::PersistentGemm::late_work_ids; empty: w(y) = y).
  std::vector<int> late_work_ids;
  /// The kernel as ncu names it (nvjet_...; empty: unknown): selects its HBM coefficient in the machine's
  /// table hbm_queue_kappa_by_kernel (not listed: smshare.hbm_queue_kappa).
  std::string kernel;
};

/// The kernel beside the GEMM, launched first on an idle GPU: `blocks` blocks of `block`; hbm_Bps the
/// bytes/s it moves through HBM alone (read + write; 0: none, no HBM stretch); it holds its SMs for
/// length_s (infinity: the GEMM's whole run).
struct SmNeighbour {
  int blocks = 0;
  hw::BlockShape block;
  double hbm_Bps = 0;
  double length_s = std::numeric_limits<double>::infinity();
};

/// What gemm_beside() computed: the GEMM's time alone and beside (seconds; beside: the SM pool with the HBM
/// stretch while the neighbour runs, so a neighbour that ends first, or that the GEMM waits for, stretches only the
/// part run beside it), the HBM stretch, the CTA slots at launch, the late CTAs and the SMs the neighbour holds (0
/// when a GEMM block fits beside its blocks).
struct BesideResult {
  double alone_s = 0, beside_s = 0, stretch = 1;
  int slots_at_launch = 0, late_ctas = 0, held_sms = 0;
  /// The engine charged round 6's whole-wave drain wait: only with hw::HandOut::reserve_one_after_drain;
  /// always false under the default hand-out (kept in the result for comparison with older outputs).
  bool whole_wave_drain = false;
  double hbm_u = 0;  ///< the neighbour's HBM rate / HBM capacity
  /// Where the late clusters' work ids came from: "given" (GemmOnSms), "measured: <table file>" (the
  /// machine's late_cluster_work_ids row for this grid) or "none: w(y) = y ...".
  std::string late_work_ids_source;
  /// The HBM coefficient used and where it came from ("kernel <name>: <table file>" or "machine: smshare.hbm_queue_kappa").
  double hbm_queue_kappa = 0;
  std::string hbm_queue_kappa_source;
  /// The GEMM's time beside over its time alone.
  double slowdown() const { return beside_s / alone_s; }
};

/**
 * THE mechanism (round-3 placement and slots, round-7 hand-out) of a GEMM beside a kernel holding SMs (issue 19), shared by the sm_sharing
 * model (run_sm_sharing_case) and `fusesim trace whatif --comm-stream`'s SM-sharing charge: the
 * neighbour's blocks land on hw::dispatch_placement over the machine's sm_map and hold those SMs
 * (unless a GEMM block fits beside one of its blocks, hw::can_share) for nb.length_s; the GEMM runs as
 * hw::run_persistent on a hw::GpcPool (clusters of free SMs of one GPC, handed out as round 7 measured:
 * each cluster's first two units static, then a shared counter, late clusters starting as slots free,
 * their work ids from the machine's late_cluster_work_ids row for this grid when it has one, see
 * hw::HandOut), a unit progressing with n CTAs running at the rate of a tile lasting c / r(n), r(n) the machine's tile-rate line capped at
 * smshare.tile_rate_max where the file gives it (SmSharingHw::tile_rate: the GEMM planned for 4..16 SMs
 * alone runs at 1.13-1.18 x its rate at 132 CTAs, not the line's 1.25; round 5) and c such that
 * the same engine run with nothing beside takes alone_s (for a grid that starts whole alone:
 * alone_s / ceil(tiles / grid) x r(grid) / r(n), the round-3 rule); a neighbour that moves bytes
 * stretches the GEMM by 1 + kappa u / (1 - u) while it runs, u = nb.hbm_Bps / HBM, kappa = smshare.hbm_queue_kappa.
 * alone_s in seconds (> 0). Errors: models::ParamError naming the key for tiles, grid or cluster < 1,
 * a block that does not fit an SM ("grid" / "gemm_threads" / "neighbour_threads"), a tile rate
 * r(n) <= 0 for some n <= the SMs ("grid"), a neighbour that moves bytes on a machine without
 * smshare.hbm_queue_kappa or with u >= 1 ("neighbour_alone_GBps").
 */
BesideResult gemm_beside(const SmShareMachine& m, const GemmOnSms& g, const SmNeighbour& nb, double alone_s,
                         sim::TraceSink* trace = nullptr);

/**
 * One GEMM (C = X W^T, bf16, M x N x K) on one GPU, alone or beside a neighbour kernel of `blocks`
 * blocks launched first (model `sm_sharing`). Params (the GEMM kernel's launch as ncu read it):
 *   m, n, k; tile_m, tile_n (the library's tile: tiles = ceil(n / tile_m) x ceil(m / tile_n));
 *   grid, cluster (CTAs and CTAs per cluster); cluster_m, cluster_n (optional, both or neither: the
 *   cluster's shape in tiles, nvjet's AxB, A along ceil(n / tile_m); cluster_m x cluster_n = cluster;
 *   given, the tile grid is padded to whole clusters, hw::pad_to_clusters, and every rule below counts
 *   the padded tiles, the alone time's rounds included); gemm_threads, gemm_regs, gemm_smem_bytes (its block);
 *   alone_time_us (the GEMM alone, measured: the component the beside prediction starts from; absent:
 *   the alone time is predicted as ceil(tiles / grid) tiles of 2 tile_m tile_n K FLOP at r(grid));
 *   neighbour: none | copy | compute; blocks, neighbour_threads, neighbour_regs, neighbour_smem_bytes;
 *   neighbour_tpcs (TPCs its blocks landed on alone, measured by %smid; default: one block per TPC);
 *   neighbour_alone_GBps (copy: its bandwidth alone, read + write); cover (the neighbour lasts cover x
 *   alone_time_us, as probe_smshare sizes it).
 * The neighbour holds min(blocks, SMs) SMs on neighbour_tpcs TPCs unless a GEMM block fits beside its
 * blocks (hw::can_share); the GEMM's tiles run in waves over the CTA slots free (hw::run_tiled), a tile
 * lasting alone_time / ceil(tiles / grid) x r(grid) / r(n); a copy neighbour stretches the GEMM by
 * max(1, (neighbour_alone_GBps + the GEMM's compulsory bytes / its time) / HBM) (proportional sharing).
 * Round 2 (when cluster_slots is given; calibrate/data/h200/predict_smshare_r2.py computes the same):
 * S = min(grid, cluster_slots) slots (a 2-CTA cluster needs two free SMs of one GPC, counted from the
 * neighbour's placement and the GPC map); the grid's L = grid - S late CTAs run their first tile only
 * after the resident CTAs drained the other tiles: waves = ceil((tiles - L) / S) + ceil(L / S), each
 * tile alone_time / ceil(tiles / grid) x r(grid) / r(S) (closed form, not the SmPool engine; the
 * neighbour must outlast the GEMM); a copy neighbour stretches it by 1 + hbm_queue_kappa u / (1 - u),
 * u = neighbour_alone_GBps / HBM (a queue on HBM; kappa fitted per shape on round 1's pairs).
 * Round 3 (the rule for a neighbour when neither neighbour_tpcs nor cluster_slots is given and the
 * machine file has the table sm_map, as hw/h200-1gpu.yaml; without it, round 1's spread placement; the
 * engine computes every mechanism from the kernels' attributes and the hardware file, by gemm_beside()): the neighbour's
 * B blocks land on hw::dispatch_placement over the machine's `sm_map` table and hold those SMs (unless
 * a GEMM block fits beside one, hw::can_share) for cover x alone_time_us; the GEMM runs as
 * hw::run_persistent on a hw::GpcPool (clusters of `cluster` free SMs of one GPC, round 7's hand-out:
 * first two units static, then a shared counter; late clusters as slots free, their work ids from the
 * hardware table late_cluster_work_ids for this grid), a tile lasting alone_time / ceil(tiles / grid) x r(grid) / r(n) for n CTAs running (r(n) =
 * SmSharingHw::tile_rate: the line capped at smshare.tile_rate_max where the file gives it, round 5); a copy
 * neighbour stretches it by 1 + kappa u / (1 - u), u = neighbour_alone_GBps / HBM, kappa the machine's
 * smshare.hbm_queue_kappa (one coefficient for every shape, calibrate/data/h200/fit_hbm_kappa_r3.py).
 * Result: predicted_us, phases (gemm, neighbour), cta_slots, tiles (the output tiles), scheduled_tiles (the
 * padded count the rules ran; = tiles without a cluster shape), cluster_units (with a cluster shape),
 * hbm_stretch (round 2: waves; round 3: late_ctas, whole_wave_drain (false under round 7's hand-out), rule,
 * late_work_ids: where the late clusters' work ids came from).
 * Errors: models::ParamError naming the key (a value out of range, a neighbour without blocks; round 2:
 * a copy neighbour without hbm_queue_kappa, u >= 1, a GEMM outlasting the neighbour's cover; round 3: a
 * machine without the sm_map table or, for a copy neighbour, without smshare.hbm_queue_kappa).
 */
nlohmann::json run_sm_sharing_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

const ModelSpec& sm_sharing_spec();

}  // namespace fusesim::models
