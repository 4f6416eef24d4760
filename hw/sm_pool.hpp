// The SMs (CUs) of one GPU as a pool that several kernels share: a kernel's blocks occupy SMs up to
// the residency its launch allows (threads, registers and shared memory per block against the SM's
// limits), a kernel that holds SMs keeps them until it ends, and a tiled kernel (a GEMM) runs its tiles
// in waves over the CTA slots that are free when each tile is scheduled. HBM is not part of the pool:
// models share it through the flow network (sim/flow.hpp) or, for the sm_sharing model, by the
// proportional stretch documented there. Source of the rules: issue 19 and the H200 probes in
// calibrate/data/h200/README.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/simulation.hpp"

namespace fusesim::hw {

/// One SM's limits (NVIDIA Hopper: 65536 registers, 2048 threads, 228 KiB shared memory, 32 blocks).
struct SmLimits {
  int sms = 132;             ///< SMs (CUs) of the GPU
  int sms_per_tpc = 2;       ///< SMs per TPC, the unit the pool counts clustered kernels in
  int regs_per_sm = 65536;   ///< 32-bit registers per SM
  int threads_per_sm = 2048;
  double smem_per_sm_bytes = 233472;  ///< shared memory per SM (bytes)
  int blocks_per_sm = 32;    ///< hardware limit of resident blocks per SM
};

/// A kernel's launch: threads per block, registers per thread, shared memory per block (static +
/// dynamic, bytes).
struct BlockShape {
  int threads = 0;
  int regs_per_thread = 0;
  double smem_bytes = 0;
};

/// Blocks of `b` one SM holds at once (the occupancy calculator's min over threads, registers, shared
/// memory and the block limit; registers allocated per warp in units of 256). Errors:
/// std::invalid_argument for a block with no threads or one that does not fit an SM at all.
int residency(const SmLimits& sm, const BlockShape& b);

/// Whether `na` blocks of `a` and one block of `b` fit one SM together (registers, threads, shared
/// memory, block count): false means a kernel of `b` cannot use an SM a block of `a` sits on.
bool can_share(const SmLimits& sm, const BlockShape& a, int na, const BlockShape& b);

/**
 * The SM pool of one GPU on the engine. A holder takes `sms` SMs spread over `tpcs` TPCs (how its blocks
 * landed: a measured placement, or spread_placement()); release() gives them back at the current time
 * and runs the waiters. Counts only: which SM is which does not matter to the models.
 * Errors: std::invalid_argument for a hold of more SMs or TPCs than are free, or an unknown id.
 */
class SmPool {
 public:
  SmPool(sim::Simulation& sim, SmLimits limits);
  /// Hold `sms` SMs of which `tpcs` TPCs had no SM held before (tpcs <= sms); returns the hold's id.
  int hold(int sms, int tpcs, std::string label);
  void release(int id);
  int free_sms() const { return free_sms_; }
  /// TPCs with no SM held.
  int free_tpcs() const { return free_tpcs_; }
  const SmLimits& limits() const { return lim_; }
  /// fn runs (once) at the next release.
  void on_release(std::function<void()> fn) { waiters_.push_back(std::move(fn)); }
  sim::Simulation& sim() { return sim_; }

 private:
  struct Hold { int sms, tpcs; std::string label; };
  sim::Simulation& sim_;
  SmLimits lim_;
  int free_sms_, free_tpcs_, next_id_ = 1;
  std::map<int, Hold> holds_;
  std::vector<std::function<void()>> waiters_;
};

/// TPCs that `blocks` blocks one per SM occupy when the dispatcher spreads them one per TPC first.
int spread_placement(const SmLimits& sm, int blocks);

/**
 * A tiled kernel's tiles in waves over CTA slots (a GEMM of `tiles` output tiles, `grid` CTAs in
 * clusters of `cluster`): at the start and at each release of the pool the kernel takes CTA slots up to
 * `grid`: a cluster of at least sms_per_tpc CTAs takes whole free TPCs (the pre-registered rule: a
 * 2-CTA cluster cannot use the free SM of a TPC another kernel's block sits on), a kernel of single
 * CTAs any free SM; each slot runs tiles one after another, a tile lasting
 * tile_time(n) for the n slots running when it starts. on_done(now) when the last tile ends; the slots
 * go back to the pool then. Errors: std::invalid_argument for tiles, grid or cluster < 1.
 */
struct TiledKernel {
  int tiles = 0, grid = 0, cluster = 1;
  std::function<double(int running)> tile_time_s;
  std::string label;
};
void run_tiled(SmPool& pool, const TiledKernel& k, std::function<void()> on_done);

/**
 * The SMs of one GPU by GPC and TPC and the block dispatcher's order over them (round 3 of issue 19).
 * gpc_of_sm[s], tpc_of_sm[s]: the GPC and TPC of SM s (ids 0..sms-1); first_sms: the SMs the dispatcher
 * fills first, in order, before it spreads the rest over the GPCs. On the H200 this is the table
 * `sm_map` of hw/h200-1gpu.yaml (hw/data/h200-sm-map.jsonl: GPCs from clusters of 16, 8, 4 and 2 CTAs,
 * the first SMs from the neighbour kernels' %smid records alone; calibrate/data/h200/README.md).
 */
struct SmMap {
  std::vector<int> gpc_of_sm, tpc_of_sm, first_sms;
  int sms() const { return int(gpc_of_sm.size()); }
  int gpcs() const;
  /// SMs of GPC g in TPC order, one list per SM position in the TPC: lanes[0] = each TPC's first SM
  /// (lowest id), lanes[1] = the second, ...
  std::vector<std::vector<int>> lanes(int g) const;
  /**
   * From rows {"sm": s, "gpc": g, "tpc": t, "dispatch_first": i (optional)} (one per SM). Errors:
   * std::invalid_argument naming `what` (the file) for a missing or negative field, an SM listed twice
   * or missing, two SMs with one dispatch_first rank, or a TPC split over two GPCs.
   */
  static SmMap from_rows(const std::vector<nlohmann::json>& rows, const std::string& what);
};

/**
 * The SMs that `blocks` blocks of a kernel launched on an idle GPU land on, one block per SM (the
 * dispatch rule read from the H200's alone %smid records, calibrate/data/h200/README.md round 3):
 * blocks 1..|first_sms| take first_sms in order; the rest go round-robin over the GPCs 0, 1, ..., each
 * taking its next TPC's first SM (TPCs in id order), a GPC with no such SM left skipped; when every
 * TPC holds one, the second SMs in the same order. Beyond sms blocks every SM holds one (the list has
 * sms entries). Errors: std::invalid_argument for blocks < 0.
 */
std::vector<int> dispatch_placement(const SmMap& map, int blocks);

/// CTA slots for clusters of `cluster` CTAs (one per SM) on the SMs not in `held`: a cluster needs
/// `cluster` free SMs of one GPC, so sum over GPCs of cluster x floor(free SMs / cluster).
int cluster_slots(const SmMap& map, const std::vector<int>& held, int cluster);

/**
 * The SMs of one GPU per GPC on the engine, for kernels that hold named SMs (a neighbour's blocks) and
 * a clustered persistent kernel that takes clusters of free SMs of one GPC. hold() / release() as
 * SmPool; take_cluster() finds a GPC with `cluster` free SMs (the one with most free, lowest id on a
 * tie) or returns -1. Errors: std::invalid_argument for an SM out of range or held twice, an unknown id.
 */
class GpcPool {
 public:
  GpcPool(sim::Simulation& sim, SmMap map);
  int hold(const std::vector<int>& sms, std::string label);
  void release(int id);
  int take_cluster(int cluster);
  void give_cluster(int gpc, int cluster);
  int free_in(int gpc) const { return free_[gpc]; }
  const SmMap& map() const { return map_; }
  void on_release(std::function<void()> fn) { waiters_.push_back(std::move(fn)); }
  sim::Simulation& sim() { return sim_; }

 private:
  void wake();
  sim::Simulation& sim_;
  SmMap map_;
  std::vector<int> free_;
  std::vector<bool> held_;
  int next_id_ = 1;
  std::map<int, std::vector<int>> holds_;
  std::vector<std::function<void()>> waiters_;
};

/**
 * A persistent GEMM's tile grid as its scheduler hands it out (issue 19, calibrate/data/h100/README.md
 * "Round 6 analysis" finding 1 and run 14): cuBLASLt's nvjet kernels with a cluster of cluster_m x
 * cluster_n tiles (the kernel name's `AxB`: A along the tiles_m = ceil(n / tile_m) dimension, B along
 * tiles_n = ceil(m / tile_n)) round the tile grid up to whole clusters along each dimension, and a
 * padded tile costs a full tile time (its CTA runs the main loop; only its stores are predicated).
 * 2688x4608x8192 in 256x128 tiles with a 1x2 cluster: 18 x 21 -> 18 x 22 = 396 tiles, 198 cluster
 * units, where the unpadded 378 missed every beside point by one tile time (rounds 6 and 14). A
 * POST HOC mechanism: found on measured values, not pre-registered. Errors: std::invalid_argument for
 * a dimension or cluster side < 1, or a padded grid of more than 2^30 tiles.
 */
struct ClusterTileGrid {
  int64_t tiles_m = 0, tiles_n = 0;    ///< the real tile grid
  int64_t padded_m = 0, padded_n = 0;  ///< rounded up to whole clusters
  int cluster_m = 1, cluster_n = 1;
  int64_t real_tiles() const { return tiles_m * tiles_n; }
  int64_t tiles() const { return padded_m * padded_n; }  ///< the tiles the scheduler hands out
  int64_t units() const { return tiles() / (int64_t(cluster_m) * cluster_n); }  ///< whole clusters of tiles
};
ClusterTileGrid pad_to_clusters(int64_t tiles_m, int64_t tiles_n, int cluster_m, int cluster_n);

/**
 * How a persistent GEMM's scheduler hands its tiles to its clusters (`PersistentGemm::hand_out`).
 *
 * static_two_then_counter (the default; issue 19 round 7, calibrate/data/h100/README.md "Completion-time
 * probe", runs 15-16 on one H100): what cuBLASLt's nvjet kernels do, read off when each output tile is
 * written (probe_smshare --mode tiletimes). The tiles are handed out in units of one cluster's tiles (a
 * cluster of c CTAs runs c tiles at once; U = ceil(tiles / c) units, G = grid / c clusters). The cluster
 * of blockIdx y has a work id w(y); its first two units are static, w(y) and w(y) + G (those < U); after
 * them it takes units from one counter shared by the grid, starting at 2G, until it is exhausted, and
 * exits. Clusters launch in blockIdx order: the first S at launch (S = the cluster slots free), the
 * others (the late clusters, the highest blockIdx) one by one as soon as a resident cluster exits and
 * frees its slot; a late cluster runs its two static units (then the counter, if anything is left). So
 * every late cluster adds up to two units after the counter runs dry, and which late clusters have a
 * second unit (w + G < U) matters when U < 2G: w(y) of the late clusters is a property of the kernel
 * (`late_work_ids`: w(G - 1), w(G - 2), ..., measured per grid: runs 15-16 found one list for 66 clusters
 * of 2 on three kernels); the blockIdx not listed take the
 * remaining work ids in ascending order (without a list: w(y) = y). Checked on 93 configurations (9
 * shapes, 3 nvjet kernels, B = 1..48 neighbour blocks, U = 128..832): the units written in every wave
 * match exactly (calibrate/data/h100/analyse_r15_tiletimes.py). It explains the round-6 "whole-wave
 * drain" as a consequence, not a rule: at U = 128 (G = 66) the 4 late clusters of B = 4 have work ids 65,
 * 56, 64, 55, two of them with a second unit, so the kernel takes 4 unit times, not 3; at U = 192 every
 * late cluster has 2 units and 3 late clusters (B = 3) start as the counter runs dry: 4, not 5.
 *
 * reserve_one_after_drain (rounds 3-6, kept for comparison and tests): each CTA runs tiles one after
 * another while more tiles are left than CTAs not yet started (the late CTAs keep one tile each), the
 * exited clusters' SMs go back when no CTA of the kernel is running, with the whole-wave drain wait
 * (`whole_wave_drain_wait`) documented above.
 */
enum class HandOut { static_two_then_counter, reserve_one_after_drain };

/**
 * A persistent GEMM kernel on a GpcPool (cuBLASLt's nvjet kernels): `grid` CTAs in clusters of
 * `cluster` share `tiles` output tiles. A cluster starts when `cluster` SMs of one GPC are free. How the
 * tiles reach the clusters is `hand_out` (HandOut above). The default, static_two_then_counter, runs
 * units of `cluster` tiles: every running cluster advances its unit at 1 / tile_time_s(n) units per
 * second, n the CTAs running, re-read whenever n changes (fluid progress: a unit does not keep the rate
 * it started at; all running units share one rate, the tile-rate line's per-SM rate at n CTAs).
 *
 * The rest of this comment describes HandOut::reserve_one_after_drain, the rule of rounds 3-6, kept for
 * comparison and tests: each CTA runs tiles one after another while more tiles are left than CTAs not yet
 * started (every CTA of the grid runs at least its first tile, so the CTAs that could not start at
 * launch, the late ones, keep one tile each), then exits; the exited clusters' SMs go back when no CTA of
 * the kernel is running (the resident CTAs drained), and the late clusters start on them. That the late
 * CTAs do not overlap the drain's last partial wave is the form rounds 1-2 of calibrate/data/h200/ fit,
 * not read from cuBLASLt's scheduler. A tile lasts tile_time_s(n) for the n CTAs running when it starts.
 * With S slots free for the whole run and equal tiles this gives ceil((tiles - L) / S) + ceil(L / S) tile
 * times, L = grid - S (the late-CTA rule of round 2), plus the whole-wave wait below.
 *
 * The whole-wave drain wait (round 6 of issue 19; `whole_wave_drain_wait`, on by default): when the CTAs
 * resident at launch of a PERSISTENT grid (tiles > grid) drain for the first time with late clusters
 * still waiting, and every one of them found the tile hand-out empty at the same instant (the drain ends
 * on a whole wave: no slot idled in its last wave), their SMs go back one tile time later,
 * tile_time_s(grid) (the tile as the whole grid runs it alone, i.e. alone time / ceil(tiles / grid)), so
 * the late clusters start one tile time after the drain. With S slots and equal tiles this is exactly the
 * case (tiles - L) mod S == 0, equivalently (tiles - grid) mod S == 0, and the kernel then takes
 * (tiles - L) / S + ceil(L / S) + 1 tile times.
 * What it is: an EMPIRICAL rule. It was formed on the only misses of rounds 3-4 (1536x6144x8192 beside
 * B = 4 and 8 blocks: 256 tiles, 124 slots, 8 late CTAs, the drain of 248 tiles two whole waves; the GPU
 * took 4 tile times, the round-3 rule 3), pre-registered in round 5 (smshare_predictions_r5.json, not the
 * model then) and confirmed there within +0.24 .. +0.88% at all 6 whole-wave points, one of them on an
 * nvjet kernel not seen before (256x128 1x2); rounds 1-5 hold no whole-wave point at another (tiles, S, L).
 * Bounds: persistent grids only. A grid of one tile per CTA (tiles <= grid: 2048x2048x8192 and
 * 1024x4096x8192, 128 tiles on grid 128) drains a whole wave at every B that leaves it late CTAs and took
 * the round-3 rule's 2 tile times there, never 3, so the rule does not apply to it. It is charged once, at
 * the first drain (a later batch of late CTAs, when L > S, gets no wait: 4096x4096x4096 beside 66 blocks
 * took fewer tile times than the engine gives even without it). A drain whose last wave leaves even one
 * cluster slot idle gets no wait (2560x5120x8192 beside 6 blocks: 370 = 2 x 124 + 122, measured 4 tile
 * times, the round-3 rule's count).
 * What it is not: a mechanism read from cuBLASLt. Why the GPU loses a tile time there is unidentified:
 * not the cluster slots (run 9's residency probe counted the engine's 124), not a static per-CTA tile
 * list, not an atomic-counter hand-out (run 9's emulations of both take other counts); that it is a tail
 * effect of the library's dynamic hand-out when every slot asks for its next tile at the same instant is
 * a reading the data allows, not one it shows.
 * `tiles` is the count the scheduler hands out: for a clustered nvjet kernel the grid padded to whole
 * clusters (pad_to_clusters above; models/sm_sharing pads when the case gives the cluster's shape).
 * Result via on_done(slots at launch, CTAs that started late, whether the whole-wave wait was charged).
 * The paragraphs above describe HandOut::reserve_one_after_drain; the default hand-out is
 * HandOut::static_two_then_counter (below).
 * Errors: std::invalid_argument for tiles, grid or cluster < 1, a cluster larger than every GPC, a grid
 * that is not a whole number of clusters (static_two_then_counter), more late work ids than clusters, or
 * a late work id out of [0, G) or listed twice. A run in which no cluster ever finds free SMs (a
 * neighbour holding them for ever) never calls on_done: the caller must check (models::gemm_beside
 * raises models::ParamError).
 */

struct PersistentGemm {
  int tiles = 0, grid = 0, cluster = 1;
  std::function<double(int running)> tile_time_s;
  std::string label;
  HandOut hand_out = HandOut::static_two_then_counter;
  /// static_two_then_counter: the work ids of the clusters of blockIdx G - 1, G - 2, ... (G = grid /
  /// cluster), each in [0, G) and distinct; empty: w(y) = y.
  std::vector<int> late_work_ids;
  /// reserve_one_after_drain only: the whole-wave drain wait above (false: the round-3..5 engine).
  bool whole_wave_drain_wait = true;
  /// static_two_then_counter only: every unit progresses slow_factor (>= 1) times slower while the clock is
  /// before slow_until_s (s; 0: never; infinity: the whole run), e.g. a neighbour's HBM traffic while it runs
  /// (models::gemm_beside); an absolute time of the pool's clock (the run starts at 0 in gemm_beside). Errors:
  /// std::invalid_argument for slow_factor < 1 or not finite, slow_until_s < 0, or slow_factor != 1 with
  /// slow_until_s > 0 under another hand-out.
  double slow_factor = 1, slow_until_s = 0;
};
void run_persistent(GpcPool& pool, const PersistentGemm& k,
                    std::function<void(int slots_at_launch, int late_ctas, bool whole_wave_drain)> on_done);

}  // namespace fusesim::hw
