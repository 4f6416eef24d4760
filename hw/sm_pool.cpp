// Implementation of hw/sm_pool.hpp.
#include "hw/sm_pool.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace fusesim::hw {

namespace {
int regs_per_block(const BlockShape& b) {
  const int warps = (b.threads + 31) / 32;
  const int per_warp = ((b.regs_per_thread * 32 + 255) / 256) * 256;  // allocation unit 256 registers per warp
  return warps * per_warp;
}
}  // namespace

int residency(const SmLimits& sm, const BlockShape& b) {
  if (b.threads < 1) throw std::invalid_argument("residency: a block needs at least one thread");
  int n = std::min(sm.blocks_per_sm, sm.threads_per_sm / b.threads);
  const int regs = regs_per_block(b);
  if (regs > 0) n = std::min(n, sm.regs_per_sm / regs);
  if (b.smem_bytes > 0) n = std::min(n, static_cast<int>(sm.smem_per_sm_bytes / b.smem_bytes));
  if (n < 1) throw std::invalid_argument("residency: the block does not fit one SM (threads, registers or shared memory)");
  return n;
}

bool can_share(const SmLimits& sm, const BlockShape& a, int na, const BlockShape& b) {
  return na + 1 <= sm.blocks_per_sm && na * a.threads + b.threads <= sm.threads_per_sm &&
         na * regs_per_block(a) + regs_per_block(b) <= sm.regs_per_sm &&
         na * a.smem_bytes + b.smem_bytes <= sm.smem_per_sm_bytes;
}

SmPool::SmPool(sim::Simulation& sim, SmLimits limits)
    : sim_(sim), lim_(limits), free_sms_(limits.sms), free_tpcs_(limits.sms / limits.sms_per_tpc) {
  if (limits.sms < 1 || limits.sms_per_tpc < 1) throw std::invalid_argument("SmPool: sms and sms_per_tpc must be >= 1");
}

int SmPool::hold(int sms, int tpcs, std::string label) {
  if (sms < 0 || tpcs < 0 || tpcs > sms)
    throw std::invalid_argument("SmPool::hold(" + label + "): " + std::to_string(sms) + " SMs cannot take " +
                                std::to_string(tpcs) + " whole TPCs");
  if (sms > free_sms_ || tpcs > free_tpcs_)
    throw std::invalid_argument("SmPool::hold(" + label + "): " + std::to_string(sms) + " SMs on " + std::to_string(tpcs) +
                                " TPCs asked, " + std::to_string(free_sms_) + " SMs on " + std::to_string(free_tpcs_) +
                                " TPCs free");
  free_sms_ -= sms;
  free_tpcs_ -= tpcs;
  holds_[next_id_] = {sms, tpcs, std::move(label)};
  return next_id_++;
}

void SmPool::release(int id) {
  auto it = holds_.find(id);
  if (it == holds_.end()) throw std::invalid_argument("SmPool::release: no hold " + std::to_string(id));
  free_sms_ += it->second.sms;
  free_tpcs_ += it->second.tpcs;
  holds_.erase(it);
  auto w = std::move(waiters_);
  waiters_.clear();
  for (auto& fn : w) fn();
}

int spread_placement(const SmLimits& sm, int blocks) {
  const int tpcs = sm.sms / sm.sms_per_tpc;
  return std::min(blocks, tpcs);
}

namespace {
struct TiledRun {
  SmPool& pool;
  TiledKernel k;
  std::function<void()> on_done;
  int left = 0, running = 0, taken = 0, busy = 0;
  std::vector<int> holds;
  bool finished = false;

  /// Slots the pool can give now (whole clusters), up to the grid, and the TPCs they take.
  std::pair<int, int> available() const {
    const SmLimits& L = pool.limits();
    if (k.cluster >= L.sms_per_tpc) {  // clusters of whole TPCs
      const int tpcs_per_cluster = k.cluster / L.sms_per_tpc;
      const int clusters = std::min((k.grid - taken) / k.cluster, pool.free_tpcs() / tpcs_per_cluster);
      return {clusters * k.cluster, clusters * tpcs_per_cluster};
    }
    const int n = std::min(k.grid - taken, pool.free_sms());
    const int partial = pool.free_sms() - L.sms_per_tpc * pool.free_tpcs();  // free SMs on TPCs already in use
    const int whole = std::max(0, n - partial);
    return {n, (whole + L.sms_per_tpc - 1) / L.sms_per_tpc};
  }
  void top_up(const std::shared_ptr<TiledRun>& self) {
    if (finished) return;
    const auto [add, tpcs] = available();
    if (add > 0) {
      holds.push_back(pool.hold(add, tpcs, k.label));
      taken += add;
      running += add;
      for (int i = 0; i < add; ++i) next_tile(self);
    }
    if (taken < k.grid && !finished) pool.on_release([self] { self->top_up(self); });
  }
  void next_tile(const std::shared_ptr<TiledRun>& self) {
    if (left == 0) {
      if (busy == 0 && !finished) {
        finished = true;
        for (int h : holds) pool.release(h);
        on_done();
      }
      return;
    }
    --left;
    ++busy;
    const double dt = k.tile_time_s(running);
    pool.sim().after(dt, [self] {
      --self->busy;
      self->next_tile(self);
    });
  }
};
}  // namespace

void run_tiled(SmPool& pool, const TiledKernel& k, std::function<void()> on_done) {
  if (k.tiles < 1 || k.grid < 1 || k.cluster < 1) throw std::invalid_argument("run_tiled(" + k.label + "): tiles, grid and cluster must be >= 1");
  auto r = std::make_shared<TiledRun>(TiledRun{pool, k, std::move(on_done)});
  r->left = k.tiles;
  r->top_up(r);
}

double waves_beside(const SmLimits& sm, int ctas, int held_sms) {
  if (ctas < 1) throw std::invalid_argument("waves_beside: ctas must be >= 1");
  if (held_sms < 0 || held_sms >= sm.sms)
    throw std::invalid_argument("waves_beside: held SMs must be 0.." + std::to_string(sm.sms - 1));
  sim::Simulation sim;
  SmPool pool(sim, sm);
  if (held_sms > 0) pool.hold(held_sms, std::min(held_sms, sm.sms / sm.sms_per_tpc), "holder");
  TiledKernel k;
  k.tiles = ctas;
  k.grid = ctas;
  k.cluster = 1;
  k.label = "kernel";
  k.tile_time_s = [](int) { return 1e-6; };
  double end = 0;
  run_tiled(pool, k, [&] { end = sim.now(); });
  sim.run();
  return end * 1e6;
}

}  // namespace fusesim::hw
