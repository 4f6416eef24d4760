// Implementation of hw/sm_pool.hpp.
#include "hw/sm_pool.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <stdexcept>
#include <tuple>

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

}  // namespace fusesim::hw

namespace fusesim::hw {

int SmMap::gpcs() const {
  int g = 0;
  for (int v : gpc_of_sm) g = std::max(g, v + 1);
  return g;
}

std::vector<std::vector<int>> SmMap::lanes(int g) const {
  std::map<int, std::vector<int>> by_tpc;  // TPC id -> its SMs (ascending)
  for (int s = 0; s < sms(); ++s)
    if (gpc_of_sm[s] == g) by_tpc[tpc_of_sm[s]].push_back(s);
  std::vector<std::pair<int, std::vector<int>>> tpcs;
  for (auto& [t, v] : by_tpc) tpcs.emplace_back(v.front(), v);
  std::sort(tpcs.begin(), tpcs.end());  // TPCs in order of their first SM's id
  std::vector<std::vector<int>> out;
  for (auto& [first, v] : tpcs)
    for (size_t i = 0; i < v.size(); ++i) {
      if (out.size() <= i) out.resize(i + 1);
      out[i].push_back(v[i]);
    }
  return out;
}

SmMap SmMap::from_rows(const std::vector<nlohmann::json>& rows, const std::string& what) {
  auto field = [&](const nlohmann::json& r, const char* k, size_t line) {
    if (!r.contains(k) || !r[k].is_number_integer() || r[k].get<int>() < 0)
      throw std::invalid_argument(what + " line " + std::to_string(line) + ": '" + k + "' must be an integer >= 0");
    return r[k].get<int>();
  };
  const int n = int(rows.size());
  if (n < 1) throw std::invalid_argument(what + ": no SMs");
  SmMap m;
  m.gpc_of_sm.assign(n, -1);
  m.tpc_of_sm.assign(n, -1);
  std::map<int, int> first;  // rank -> SM
  std::map<int, int> tpc_gpc;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int s = field(rows[i], "sm", i + 1), g = field(rows[i], "gpc", i + 1), t = field(rows[i], "tpc", i + 1);
    if (s >= n || m.gpc_of_sm[s] >= 0)
      throw std::invalid_argument(what + " line " + std::to_string(i + 1) + ": SM " + std::to_string(s) +
                                  (s >= n ? " out of range 0.." + std::to_string(n - 1) : " listed twice"));
    if (tpc_gpc.count(t) && tpc_gpc[t] != g)
      throw std::invalid_argument(what + " line " + std::to_string(i + 1) + ": TPC " + std::to_string(t) + " in two GPCs");
    tpc_gpc[t] = g;
    m.gpc_of_sm[s] = g;
    m.tpc_of_sm[s] = t;
    if (rows[i].contains("dispatch_first")) {
      const int r = field(rows[i], "dispatch_first", i + 1);
      if (first.count(r)) throw std::invalid_argument(what + " line " + std::to_string(i + 1) + ": dispatch_first " + std::to_string(r) + " twice");
      first[r] = s;
    }
  }
  for (auto& [r, s] : first) m.first_sms.push_back(s);
  return m;
}

std::vector<int> dispatch_placement(const SmMap& map, int blocks) {
  if (blocks < 0) throw std::invalid_argument("dispatch_placement: blocks must be >= 0");
  std::vector<int> out;
  std::vector<bool> used(map.sms(), false);
  for (int s : map.first_sms) {
    if (int(out.size()) == blocks) return out;
    out.push_back(s);
    used[s] = true;
  }
  const int G = map.gpcs();
  std::vector<std::vector<std::vector<int>>> lanes(G);
  for (int g = 0; g < G; ++g) lanes[g] = map.lanes(g);
  for (size_t lane = 0; int(out.size()) < std::min(blocks, map.sms()); ++lane) {
    std::vector<std::vector<int>> q(G);  // this lane's unused SMs per GPC, in TPC order
    bool any = false;
    for (int g = 0; g < G; ++g)
      if (lane < lanes[g].size())
        for (int s : lanes[g][lane])
          if (!used[s]) q[g].push_back(s), any = true;
    if (!any) {
      if (lane > 64) break;
      continue;
    }
    std::vector<size_t> next(G, 0);
    for (bool placed = true; placed && int(out.size()) < blocks;) {
      placed = false;
      for (int g = 0; g < G && int(out.size()) < blocks; ++g)
        if (next[g] < q[g].size()) {
          const int s = q[g][next[g]++];
          out.push_back(s);
          used[s] = true;
          placed = true;
        }
    }
  }
  return out;
}

ClusterTileGrid pad_to_clusters(int64_t tiles_m, int64_t tiles_n, int cluster_m, int cluster_n) {
  if (tiles_m < 1 || tiles_n < 1 || cluster_m < 1 || cluster_n < 1)
    throw std::invalid_argument("pad_to_clusters: the tile grid (" + std::to_string(tiles_m) + " x " + std::to_string(tiles_n) +
                                ") and the cluster (" + std::to_string(cluster_m) + " x " + std::to_string(cluster_n) +
                                ") must be >= 1 along each dimension");
  constexpr int64_t kMax = int64_t(1) << 30;
  if (tiles_m > kMax || tiles_n > kMax)
    throw std::invalid_argument("pad_to_clusters: a tile grid side over 2^30");
  ClusterTileGrid g;
  g.tiles_m = tiles_m;
  g.tiles_n = tiles_n;
  g.cluster_m = cluster_m;
  g.cluster_n = cluster_n;
  g.padded_m = (tiles_m + cluster_m - 1) / cluster_m * cluster_m;
  g.padded_n = (tiles_n + cluster_n - 1) / cluster_n * cluster_n;
  if (g.padded_m > kMax / g.padded_n) throw std::invalid_argument("pad_to_clusters: more than 2^30 tiles");
  return g;
}

int cluster_slots(const SmMap& map, const std::vector<int>& held, int cluster) {
  if (cluster < 1) throw std::invalid_argument("cluster_slots: cluster must be >= 1");
  std::vector<int> free(map.gpcs(), 0);
  std::vector<bool> h(map.sms(), false);
  for (int s : held)
    if (s >= 0 && s < map.sms()) h[s] = true;
  for (int s = 0; s < map.sms(); ++s)
    if (!h[s]) ++free[map.gpc_of_sm[s]];
  int slots = 0;
  for (int f : free) slots += cluster * (f / cluster);
  return slots;
}

GpcPool::GpcPool(sim::Simulation& sim, SmMap map) : sim_(sim), map_(std::move(map)), free_(map_.gpcs(), 0), held_(map_.sms(), false) {
  for (int g : map_.gpc_of_sm) ++free_[g];
}

int GpcPool::hold(const std::vector<int>& sms, std::string label) {
  for (int s : sms) {
    if (s < 0 || s >= map_.sms()) throw std::invalid_argument("GpcPool::hold(" + label + "): SM " + std::to_string(s) + " out of range");
    if (held_[s]) throw std::invalid_argument("GpcPool::hold(" + label + "): SM " + std::to_string(s) + " already held");
  }
  for (int s : sms) {
    held_[s] = true;
    --free_[map_.gpc_of_sm[s]];
  }
  holds_[next_id_] = sms;
  return next_id_++;
}

void GpcPool::release(int id) {
  auto it = holds_.find(id);
  if (it == holds_.end()) throw std::invalid_argument("GpcPool::release: no hold " + std::to_string(id));
  for (int s : it->second) {
    held_[s] = false;
    ++free_[map_.gpc_of_sm[s]];
  }
  holds_.erase(it);
  wake();
}

int GpcPool::take_cluster(int cluster) {
  int best = -1;
  for (int g = 0; g < int(free_.size()); ++g)
    if (free_[g] >= cluster && (best < 0 || free_[g] > free_[best])) best = g;
  if (best >= 0) free_[best] -= cluster;
  return best;
}

void GpcPool::give_cluster(int gpc, int cluster) {
  free_[gpc] += cluster;
  wake();
}

void GpcPool::wake() {
  auto w = std::move(waiters_);
  waiters_.clear();
  for (auto& fn : w) fn();
}

namespace {
struct PersistentRun {
  GpcPool& pool;
  PersistentGemm k;
  std::function<void(int, int, bool)> on_done;
  int tiles_left = 0, not_started = 0, running = 0, exited = 0, slots_at_launch = 0, late = 0;
  bool launched = false, finished = false, waiting = false;
  int whole_wave_drains = 0;      // 0 or 1: the whole-wave wait was charged
  bool resident_drained = false;  // the CTAs resident at launch have all exited once (the first drain)
  double first_exit_s = -1;       // when the first CTA found the hand-out empty (-1: none yet)
  std::vector<std::pair<int, int>> exited_clusters;  // (gpc, CTAs) whose CTAs all exited, slots not yet back

  void launch(const std::shared_ptr<PersistentRun>& self) {
    waiting = false;
    std::vector<std::pair<int, int>> started;  // (gpc, CTAs) of the clusters started now
    while (not_started > 0) {
      const int c = std::min(k.cluster, not_started);
      const int g = pool.take_cluster(c);
      if (g < 0) break;
      not_started -= c;
      started.emplace_back(g, c);
    }
    int n = 0;
    for (auto& st : started) n += st.second;
    if (!launched) slots_at_launch = n;
    else late += n;
    launched = true;
    running += n;
    for (auto& [g, c] : started) {
      auto left = std::make_shared<int>(c);
      for (int i = 0; i < c; ++i) step(self, g, c, left);
    }
    if (not_started > 0 && !waiting && !finished) {
      waiting = true;
      pool.on_release([self] { self->launch(self); });
    }
  }
  // One CTA of a cluster on GPC g: its next tile, or its exit.
  void step(const std::shared_ptr<PersistentRun>& self, int g, int c, const std::shared_ptr<int>& left) {
    if (tiles_left > not_started) {
      --tiles_left;
      const double dt = k.tile_time_s(running);
      pool.sim().after(dt, [self, g, c, left] { self->step(self, g, c, left); });
      return;
    }
    --running;
    ++exited;
    const double now = pool.sim().now();
    if (first_exit_s < 0) first_exit_s = now;
    if (--*left == 0) exited_clusters.emplace_back(g, c);
    if (running == 0) {  // the resident CTAs have drained: their slots go back, late clusters start
      auto back = std::move(exited_clusters);
      exited_clusters.clear();
      // The whole-wave drain (header): the first drain of a persistent grid with late clusters waiting,
      // every resident CTA having found the hand-out empty at this same instant.
      const bool whole_wave = k.whole_wave_drain_wait && !resident_drained && not_started > 0 && k.tiles > k.grid &&
                              first_exit_s == now;
      resident_drained = true;
      if (whole_wave) {
        ++whole_wave_drains;
        pool.sim().after(k.tile_time_s(k.grid), [self, back] {
          for (auto& [gg, cc] : back) self->pool.give_cluster(gg, cc);
        });
      } else {
        for (auto& [gg, cc] : back) pool.give_cluster(gg, cc);
      }
    }
    if (exited == k.grid && !finished) {
      finished = true;
      on_done(slots_at_launch, late, whole_wave_drains > 0);
    }
  }
};
// HandOut::static_two_then_counter (sm_pool.hpp): clusters of blockIdx y = 0..G-1 launched in order as
// cluster slots free; cluster y runs units w(y), w(y) + G (< U), then units of the shared counter from 2G.
struct ClusterRun {
  GpcPool& pool;
  PersistentGemm k;
  std::function<void(int, int, bool)> on_done;
  int G = 0, U = 0, c = 1;
  std::vector<int> work;         // w(y)
  std::vector<int> static_done;  // static units run by cluster y (0..2)
  int next_y = 0, counter = 0, running = 0, exited = 0, slots_at_launch = 0, late = 0;
  bool launched = false, finished = false, waiting = false;
  // Fluid progress: every running cluster advances its unit at 1 / tile_time_s(running CTAs) units per second,
  // re-read whenever the CTAs running change (a unit does not keep the rate it started at). V: the work one
  // cluster has done since the start (units); active: (V at which a running unit ends, blockIdx, gpc), in the
  // order the units started, which is also the order they end (V only grows, every unit is one unit of work).
  double V = 0, t_last = 0;
  double factor = 1;  // k.slow_factor until k.slow_until_s, then 1: a unit's time is tile_time_s(running) x factor
  std::deque<std::tuple<double, int, int>> active;
  sim::Timer timer{};
  bool timer_set = false;

  // One unit's time at the current rate (s): the CTAs running and the slow factor in force.
  double unit_time() const { return k.tile_time_s(running) * factor; }
  void advance() {
    const double now = pool.sim().now();
    if (running > 0 && now > t_last) V += (now - t_last) / unit_time();
    t_last = now;
  }
  void reschedule(const std::shared_ptr<ClusterRun>& self) {
    if (timer_set) pool.sim().cancel(timer);
    timer_set = false;
    if (active.empty() || running <= 0) return;
    const double dt = std::max(0.0, (std::get<0>(active.front()) - V) * unit_time());
    timer = pool.sim().after(dt, [self] { self->complete(self); });
    timer_set = true;
  }
  // The units whose work is done (within rounding) end now; their clusters take the next unit or exit.
  void complete(const std::shared_ptr<ClusterRun>& self) {
    timer_set = false;
    advance();
    std::vector<std::pair<int, int>> ended;
    // "Done" within the engine's picosecond clock: the timer fires at its time rounded to a picosecond, which can
    // fall a fraction of one short of the unit's end.
    const double eps = running > 0 ? 1e-12 / unit_time() : 0;
    while (!active.empty() && std::get<0>(active.front()) <= V + eps) {
      ended.emplace_back(std::get<1>(active.front()), std::get<2>(active.front()));
      active.pop_front();
    }
    for (auto& [y, g] : ended) step(self, y, g);
    reschedule(self);
  }
  void launch(const std::shared_ptr<ClusterRun>& self) {
    waiting = false;
    advance();
    // Until no slot is free: a cluster with no unit (U < G) exits as it starts, and its slot goes to the next
    // cluster at once (no waiter is registered yet to hear that release).
    for (;;) {
      std::vector<std::pair<int, int>> started;  // (blockIdx, gpc)
      while (next_y < G) {
        const int g = pool.take_cluster(c);
        if (g < 0) break;
        started.emplace_back(next_y++, g);
      }
      if (started.empty()) break;
      const int n = int(started.size()) * c;
      if (!launched) slots_at_launch = n;
      else late += n;
      launched = true;
      running += n;
      for (auto& [y, g] : started) step(self, y, g);
    }
    if (next_y < G && !waiting && !finished) {
      waiting = true;
      pool.on_release([self] { self->launch(self); });
    }
    reschedule(self);
  }
  // Cluster y on GPC g, at an instant advance() has reached: its next unit (static, then the counter), or its
  // exit (the slot goes back now).
  void step(const std::shared_ptr<ClusterRun>& self, int y, int g) {
    int unit = -1;
    while (static_done[y] < 2 && unit < 0) {
      const int u = work[y] + G * static_done[y]++;
      if (u < U) unit = u;
    }
    if (unit < 0 && counter < U) unit = counter++;
    if (unit >= 0) {
      active.emplace_back(V + 1.0, y, g);
      return;
    }
    running -= c;
    ++exited;
    pool.give_cluster(g, c);
    if (exited == G && !finished) {
      finished = true;
      on_done(slots_at_launch, late, false);
    }
  }
};
}  // namespace

void run_persistent(GpcPool& pool, const PersistentGemm& k, std::function<void(int, int, bool)> on_done) {
  if (k.tiles < 1 || k.grid < 1 || k.cluster < 1)
    throw std::invalid_argument("run_persistent(" + k.label + "): tiles, grid and cluster must be >= 1");
  if (!(k.slow_factor >= 1) || !std::isfinite(k.slow_factor) || !(k.slow_until_s >= 0))
    throw std::invalid_argument("run_persistent(" + k.label + "): slow_factor must be >= 1 and finite, slow_until_s >= 0");
  int biggest = 0;
  for (int g = 0; g < pool.map().gpcs(); ++g) biggest = std::max(biggest, int(std::count(pool.map().gpc_of_sm.begin(), pool.map().gpc_of_sm.end(), g)));
  if (k.cluster > biggest)
    throw std::invalid_argument("run_persistent(" + k.label + "): a cluster of " + std::to_string(k.cluster) +
                                " CTAs is larger than every GPC (" + std::to_string(biggest) + " SMs)");
  if (k.hand_out == HandOut::static_two_then_counter) {
    if (k.grid % k.cluster != 0)
      throw std::invalid_argument("run_persistent(" + k.label + "): a grid of " + std::to_string(k.grid) +
                                  " CTAs is not a whole number of clusters of " + std::to_string(k.cluster));
    auto r = std::make_shared<ClusterRun>(ClusterRun{pool, k, std::move(on_done)});
    r->c = k.cluster;
    r->G = k.grid / k.cluster;
    r->U = (k.tiles + k.cluster - 1) / k.cluster;
    r->counter = 2 * r->G;
    if (int(k.late_work_ids.size()) > r->G)
      throw std::invalid_argument("run_persistent(" + k.label + "): " + std::to_string(k.late_work_ids.size()) +
                                  " late work ids for " + std::to_string(r->G) + " clusters");
    r->work.assign(r->G, -1);
    std::vector<bool> used(r->G, false);
    for (size_t i = 0; i < k.late_work_ids.size(); ++i) {
      const int w = k.late_work_ids[i];
      if (w < 0 || w >= r->G || used[w])
        throw std::invalid_argument("run_persistent(" + k.label + "): late work id " + std::to_string(w) +
                                    (w < 0 || w >= r->G ? " out of [0, " + std::to_string(r->G) + ")" : " listed twice"));
      used[w] = true;
      r->work[r->G - 1 - int(i)] = w;
    }
    int next_free = 0;
    for (int y = 0; y < r->G; ++y) {
      if (r->work[y] >= 0) continue;
      while (used[next_free]) ++next_free;
      r->work[y] = next_free;
      used[next_free] = true;
    }
    r->static_done.assign(r->G, 0);
    if (k.slow_until_s > 0 && k.slow_factor != 1) {
      r->factor = k.slow_factor;
      if (std::isfinite(k.slow_until_s))
        pool.sim().at(k.slow_until_s, [r] {  // the rate in force since t_last ends now
          r->advance();
          r->factor = 1;
          r->reschedule(r);
        });
    }
    r->launch(r);
    return;
  }
  if (k.slow_until_s > 0 && k.slow_factor != 1)
    throw std::invalid_argument("run_persistent(" + k.label + "): slow_factor needs HandOut::static_two_then_counter");
  auto r = std::make_shared<PersistentRun>(PersistentRun{pool, k, std::move(on_done)});
  r->tiles_left = k.tiles;
  r->not_started = k.grid;
  r->launch(r);
}

}  // namespace fusesim::hw
