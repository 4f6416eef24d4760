#include "sim/flow.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/trace.hpp"

namespace fusesim::sim {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// Relative tolerance for "same level" when freezing flows in the max-min solution.
constexpr double kRelEps = 1e-12;
// A flow with fewer bytes than this left (absolute, bytes) counts as finished; it absorbs the
// floating-point error of progress = rate * dt.
constexpr double kByteEps = 1e-6;
}  // namespace

ResourceId FlowNetwork::add_resource(std::string name, double capacity_Bps) {
  if (!(capacity_Bps >= 0) || std::isnan(capacity_Bps))
    throw std::invalid_argument(fmt::format("resource '{}': capacity must be >= 0 bytes/s, got {}",
                                            name, capacity_Bps));
  res_.push_back(Resource{name, capacity_Bps});
  rstats_.push_back(ResourceStats{std::move(name), capacity_Bps, 0, 0});
  return static_cast<ResourceId>(res_.size() - 1);
}

FlowId FlowNetwork::start(FlowSpec spec) {
  if (!(spec.bytes >= 0)) throw std::invalid_argument(fmt::format("flow '{}': bytes < 0", spec.name));
  if (!(spec.start_latency >= 0))
    throw std::invalid_argument(fmt::format("flow '{}': start latency < 0", spec.name));
  if (!(spec.share > 0)) throw std::invalid_argument(fmt::format("flow '{}': share must be > 0", spec.name));
  if (!(spec.rate_cap_Bps >= 0))
    throw std::invalid_argument(fmt::format("flow '{}': rate cap < 0", spec.name));
  for (const auto& h : spec.path) {
    if (h.resource < 0 || h.resource >= static_cast<int>(res_.size()))
      throw std::invalid_argument(fmt::format("flow '{}': unknown resource id {}", spec.name, h.resource));
    if (!(h.weight >= 0))
      throw std::invalid_argument(fmt::format("flow '{}': negative weight on '{}'", spec.name,
                                              res_[h.resource].name));
  }
  Flow f{std::move(spec), 0};
  f.remaining = f.spec.bytes;
  flows_.push_back(std::move(f));
  const FlowId id = static_cast<FlowId>(flows_.size() - 1);
  ++active_count_;
  ++started_;
  const Seconds lat = flows_[id].spec.start_latency;
  if (lat > 0)
    sim_.after(lat, [this, id] { begin_moving(id); });
  else
    begin_moving(id);
  return id;
}

void FlowNetwork::begin_moving(FlowId id) {
  Flow& f = flows_[id];
  f.t_start = sim_.now();
  if (f.remaining <= kByteEps) {  // zero-byte flow: done once its latency has passed
    finish(id);
    return;
  }
  settle();
  f.moving = true;
  moving_.push_back(id);
  for (const auto& h : f.spec.path) {
    Resource& r = res_[h.resource];
    if (r.active_flows++ == 0) r.busy_since = sim_.now();
  }
  // Defer the re-solve to the end of the current instant so that flows started together cost
  // one solve, not one each.
  if (!in_batch_) {
    in_batch_ = true;
    sim_.after(0, [this] {
      in_batch_ = false;
      resolve();
    });
  }
}

void FlowNetwork::settle() {
  const Seconds now = sim_.now();
  const Seconds dt = now - last_settle_;
  if (dt > 0) {
    for (FlowId id : moving_) {
      Flow& f = flows_[id];
      const double moved = std::min(f.remaining, f.rate * dt);
      f.remaining -= moved;
      for (const auto& h : f.spec.path) rstats_[h.resource].bytes += moved * h.weight;
    }
  }
  last_settle_ = now;
}

void FlowNetwork::resolve() {
  settle();
  // Finish flows that are (numerically) done.
  std::vector<FlowId> done_now;
  for (FlowId id : moving_)
    // Times are kept to 1 ps, so a flow within 2 ps of progress of its end is done.
    if (flows_[id].remaining <= std::max(kByteEps, flows_[id].rate * 2e-12)) done_now.push_back(id);
  for (FlowId id : done_now) finish(id);  // callbacks may start flows; they defer their solve

  // Weighted max-min by progressive filling.
  std::vector<double> rc(res_.size());
  for (size_t r = 0; r < res_.size(); ++r) rc[r] = res_[r].capacity;
  std::vector<FlowId> open(moving_.begin(), moving_.end());
  std::vector<double> sumw(res_.size());
  while (!open.empty()) {
    std::fill(sumw.begin(), sumw.end(), 0.0);
    for (FlowId id : open)
      for (const auto& h : flows_[id].spec.path) sumw[h.resource] += flows_[id].spec.share * h.weight;
    double level = kInf;
    for (size_t r = 0; r < res_.size(); ++r)
      if (sumw[r] > 0) level = std::min(level, std::max(0.0, rc[r]) / sumw[r]);
    for (FlowId id : open) level = std::min(level, flows_[id].spec.rate_cap_Bps / flows_[id].spec.share);
    std::vector<FlowId> still, fixed;  // fixed: flows frozen at this level
    still.reserve(open.size());
    const double tol = level * (1 + kRelEps) + 1e-300;
    for (FlowId id : open) {
      Flow& f = flows_[id];
      bool frozen = f.spec.rate_cap_Bps / f.spec.share <= tol;
      for (const auto& h : f.spec.path)
        if (!frozen && sumw[h.resource] > 0 && std::max(0.0, rc[h.resource]) / sumw[h.resource] <= tol)
          frozen = true;
      if (frozen) {
        f.rate = std::isinf(level) ? kInf : f.spec.share * level;
        f.rate = std::min(f.rate, f.spec.rate_cap_Bps);
        fixed.push_back(id);
      } else {
        still.push_back(id);
      }
    }
    // Take the frozen flows' use off the resources only now: every freeze test above saw the same rc.
    for (FlowId id : fixed) {
      const Flow& f = flows_[id];
      if (std::isinf(f.rate)) continue;
      for (const auto& h : f.spec.path) rc[h.resource] -= f.rate * h.weight;
    }
    if (still.size() == open.size()) break;  // cannot happen; guards an endless loop
    open.swap(still);
  }

  // Next completion.
  double dt_next = kInf;
  for (FlowId id : moving_) {
    const Flow& f = flows_[id];
    if (std::isinf(f.rate)) dt_next = 0;
    else if (f.rate > 0) dt_next = std::min(dt_next, f.remaining / f.rate);
  }
  sim_.cancel(wake_);
  wake_ = Timer{};
  if (std::isfinite(dt_next)) {
    const uint64_t gen = ++wake_gen_;
    wake_ = sim_.after(dt_next, [this, gen] { on_wake(gen); });
  }
  if (auto* tr = sim_.trace()) {
    for (size_t r = 0; r < res_.size(); ++r) {
      if (res_[r].capacity <= 0) continue;
      tr->counter(res_[r].name, "util", sim_.now(), std::clamp(1.0 - rc[r] / res_[r].capacity, 0.0, 1.0));
    }
  }
}

void FlowNetwork::on_wake(uint64_t gen) {
  if (gen != wake_gen_) return;
  wake_ = Timer{};
  resolve();
}

void FlowNetwork::finish(FlowId id) {
  Flow& f = flows_[id];
  if (f.finished) return;
  f.finished = true;
  f.remaining = 0;
  if (f.moving) {
    f.moving = false;
    moving_.erase(std::find(moving_.begin(), moving_.end(), id));
    for (const auto& h : f.spec.path) {
      Resource& r = res_[h.resource];
      if (--r.active_flows == 0) rstats_[h.resource].busy += sim_.now() - r.busy_since;
    }
  }
  f.rate = 0;
  --active_count_;
  ++completed_;
  if (auto* tr = sim_.trace()) {
    std::string lane = f.spec.lane;
    if (lane.empty()) lane = f.spec.path.empty() ? std::string("flows") : res_[f.spec.path[0].resource].name;
    tr->slice(lane, f.spec.name, f.t_start, sim_.now(), {{"bytes", f.spec.bytes}});
  }
  if (f.spec.on_done) {
    auto cb = std::move(f.spec.on_done);
    cb();
  }
}

double FlowNetwork::rate(FlowId f) const { return flows_.at(f).rate; }
double FlowNetwork::remaining(FlowId f) const {
  const Flow& fl = flows_.at(f);
  if (!fl.moving) return fl.remaining;
  return std::max(0.0, fl.remaining - fl.rate * (sim_.now() - last_settle_));
}
bool FlowNetwork::done(FlowId f) const { return flows_.at(f).finished; }

std::vector<std::string> FlowNetwork::stalled() const {
  std::vector<std::string> out;
  for (FlowId id : moving_)
    if (flows_[id].rate <= 0) out.push_back(flows_[id].spec.name);
  return out;
}

}  // namespace fusesim::sim
