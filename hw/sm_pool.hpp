// The SMs (CUs) of one GPU as a pool that several kernels share: a kernel's blocks occupy SMs up to
// the residency its launch allows (threads, registers and shared memory per block against the SM's
// limits), a kernel that holds SMs keeps them until it ends, and a tiled kernel (a GEMM) runs its tiles
// in waves over the CTA slots that are free when each tile is scheduled. HBM is not part of the pool:
// models share it through the flow network (sim/flow.hpp) or, for the sm_sharing model, by the
// proportional stretch documented there. Source of the rules: issue 19 and the H200 probes in
// calibrate/data/h200/README.md.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

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
 * Time, in units of one CTA's length, of a kernel of `ctas` equal CTAs, one per SM, when `held_sms` SMs
 * are held by another kernel for the whole run: the CTAs run in waves over the free SMs (run_tiled on a
 * pool of sm.sms SMs). waves_beside(sm, g, h) / waves_beside(sm, g, 0) is the slowdown the SM pool
 * predicts for such a kernel beside the holder. Errors: std::invalid_argument for ctas < 1 or held_sms
 * outside 0..sm.sms - 1.
 */
double waves_beside(const SmLimits& sm, int ctas, int held_sms);

}  // namespace fusesim::hw
