// The sm_sharing model (issue 19): a GEMM beside a kernel that holds some of the GPU's SMs, on the
// SM pool of hw/sm_pool.hpp. Registered in models/registry.inc.
#pragma once

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
#include "hw/params.hpp"
#include "models/model.hpp"
#include "sim/trace.hpp"

namespace fusesim::models {

/// The machine keys sm_sharing reads (SI units): SMs, SMs per TPC, the per-SM tile rate line
/// r(n) = tile_rate_at_zero - tile_rate_slope x n (FLOP/s per SM with n CTAs running) and the HBM
/// capacity the copy neighbour and the GEMM share.
/// Round 3 also reads smshare.hbm_queue_kappa (optional: a copy neighbour under the round-3 rule needs
/// it) and the table `sm_map` (GPCs, TPCs, the dispatcher's first SMs; hw::SmMap).
struct SmSharingHw {
  double sms = 0, sms_per_tpc = 0, tile_rate_at_zero = 0, tile_rate_slope = 0, hbm = 0, hbm_queue_kappa = -1;
};
const hw::HwSchema<SmSharingHw>& sm_sharing_hardware();

/**
 * One GEMM (C = X W^T, bf16, M x N x K) on one GPU, alone or beside a neighbour kernel of `blocks`
 * blocks launched first (model `sm_sharing`). Params (the GEMM kernel's launch as ncu read it):
 *   m, n, k; tile_m, tile_n (the library's tile: tiles = ceil(n / tile_m) x ceil(m / tile_n));
 *   grid, cluster (CTAs and CTAs per cluster); gemm_threads, gemm_regs, gemm_smem_bytes (its block);
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
 * engine computes every mechanism from the kernels' attributes and the hardware file): the neighbour's
 * B blocks land on hw::dispatch_placement over the machine's `sm_map` table and hold those SMs (unless
 * a GEMM block fits beside one, hw::can_share) for cover x alone_time_us; the GEMM runs as
 * hw::run_persistent on a hw::GpcPool (clusters of `cluster` free SMs of one GPC, late CTAs keep one
 * tile each), a tile lasting alone_time / ceil(tiles / grid) x r(grid) / r(n) for n CTAs running; a copy
 * neighbour stretches it by 1 + kappa u / (1 - u), u = neighbour_alone_GBps / HBM, kappa the machine's
 * smshare.hbm_queue_kappa (one coefficient for every shape, calibrate/data/h200/fit_hbm_kappa_r3.py).
 * Result: predicted_us, phases (gemm, neighbour), cta_slots, tiles, hbm_stretch (round 2: waves; round 3:
 * late_ctas, rule).
 * Errors: models::ParamError naming the key (a value out of range, a neighbour without blocks; round 2:
 * a copy neighbour without hbm_queue_kappa, u >= 1, a GEMM outlasting the neighbour's cover; round 3: a
 * machine without the sm_map table or, for a copy neighbour, without smshare.hbm_queue_kappa).
 */
nlohmann::json run_sm_sharing_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

const ModelSpec& sm_sharing_spec();

}  // namespace fusesim::models
