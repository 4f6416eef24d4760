#include "hw/group.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/trace.hpp"

namespace fusesim::hw {

nlohmann::json spans_json(const std::vector<Span>& spans) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : spans) {
    nlohmann::json j{{"name", s.device >= 0 ? fmt::format("dev{}/{}", s.device, s.name) : s.name},
                     {"start_us", s.start_us},
                     {"end_us", s.end_us}};
    if (!s.role.empty()) j["role"] = s.role;
    out.push_back(std::move(j));
  }
  return out;
}

void Join::arm(int need, std::function<void()> fn) {
  need_ = need;
  fn_ = std::move(fn);
  check();
}

void Join::arrive() {
  ++got_;
  check();
}

void Join::check() {
  if (!fired_ && need_ >= 0 && got_ >= need_ && fn_) {
    fired_ = true;
    auto fn = std::move(fn_);
    fn();
  }
}

std::function<void()> Join::after(int need, std::function<void()> fn) {
  auto j = std::make_shared<Join>();
  j->arm(need, std::move(fn));
  return [j] { j->arrive(); };
}

double RemoteLoadModel::rate(double lanes, double per_lane) const {
  const double inflight = lanes * per_lane;
  const double round_trip = round_trip_s + per_lane / 16.0 * issue_per_16B_s;
  const double r = inflight / round_trip;
  const double excess_MiB = std::max(0.0, inflight - congestion_knee_B) / (1024.0 * 1024.0);
  return r / (1.0 + congestion_per_MiB * excess_MiB);
}

GpuGroup::GpuGroup(sim::Simulation& s, sim::FlowNetwork& n, GroupConfig cfg) : sim(s), net(n), cfg_(std::move(cfg)) {
  const int R = cfg_.ranks;
  if (R < 1) throw std::invalid_argument(fmt::format("GPU group: needs >= 1 rank, got {}", R));
  for (int r = 0; r < R; ++r) hbm_.push_back(net.add_resource(fmt::format("gpu{}/{}", r, cfg_.hbm_name), cfg_.hbm_Bps));
  if (cfg_.request_fabric)
    for (int r = 0; r < R; ++r) req_.push_back(net.add_resource(fmt::format("gpu{}/fabric-requests", r), cfg_.hbm_Bps));
  if (cfg_.links == GroupConfig::Links::Ports)
    for (int g = 0; g < R; ++g) {
      out_.push_back(net.add_resource(fmt::format("gpu{}/{}_out", g, cfg_.link_name), cfg_.link_Bps));
      in_.push_back(net.add_resource(fmt::format("gpu{}/{}_in", g, cfg_.link_name), cfg_.link_Bps));
    }
  links_.assign(R, std::vector<sim::ResourceId>(R, -1));
  queues_.resize(R);
  for (int s0 = 0; s0 < R; ++s0) {
    queues_[s0].resize(R);
    for (int d = 0; d < R; ++d) {
      if (s0 == d) continue;
      if (cfg_.links == GroupConfig::Links::Mesh)
        links_[s0][d] = net.add_resource(fmt::format("gpu{}/{}->{}", s0, cfg_.link_name, d), cfg_.link_Bps);
      if (cfg_.copy_queues)
        queues_[s0][d] = std::make_unique<sim::CommandQueue>(sim, fmt::format("gpu{}/{}->{}", s0, cfg_.queue_name, d),
                                                             cfg_.command_latency);
    }
  }
  copy_flows_.resize(R);
  data_start_.assign(R, std::vector<double>(R, 0.0));
}

std::vector<sim::PathHop> GpuGroup::route(int s, int d, double weight) const {
  switch (cfg_.links) {
    case GroupConfig::Links::Mesh: return {{links_.at(s).at(d), weight}};
    case GroupConfig::Links::Ports: return {{out_.at(s), weight}, {in_.at(d), weight}};
    case GroupConfig::Links::None: break;
  }
  throw std::logic_error("GPU group: no links between ranks");
}

void GpuGroup::put(Put p) {
  const int s = p.src, d = p.dst;
  std::function<void()> done = std::move(p.on_done);
  if (p.remote_ready) {
    auto inner = std::move(done);
    done = [this, inner = std::move(inner), ready = std::move(p.remote_ready), wait = p.remote_wait, s, d] {
      const double waited = sim.now() - data_start_[s][d];
      sim.after(std::max(0.0, wait - waited), ready);
      if (inner) inner();
    };
  }
  sim::CommandQueue& q = *queues_.at(s).at(d);
  q.submit(p.label,
           [this, s, d, bytes = p.bytes, cap = p.rate_cap, label = p.label, src_hop = p.src_hop, dst_hop = p.dst_hop,
            dst_request = p.dst_request, &q](std::function<void()> fin) {
             const double extra = queues_[d][s]->outstanding() > 0 ? cfg_.opposite_direction_latency : 0.0;
             data_start_[s][d] = sim.now() + extra;
             std::vector<sim::PathHop> path{src_hop ? *src_hop : sim::PathHop{hbm_[s], cfg_.copy_hbm_cost}};
             if (cfg_.request_fabric) path.push_back({req_[s], cfg_.copy_request_cost});
             for (const auto& h : route(s, d)) path.push_back(h);
             path.push_back(dst_hop ? *dst_hop : sim::PathHop{hbm_[d], cfg_.copy_hbm_cost});
             if (cfg_.request_fabric && dst_request) path.push_back({req_[d], cfg_.copy_request_cost});
             auto id = std::make_shared<sim::FlowId>(-1);
             *id = net.start({.name = label, .bytes = bytes, .path = path, .rate_cap_Bps = cap, .start_latency = extra,
                              .share = cap, .lane = q.name() + " data", .on_done = [this, s, d, id, fin = std::move(fin)] {
                                copy_flows_[s].erase(*id);
                                copy_flows_[d].erase(*id);
                                fin();
                              }});
             if (!net.done(*id)) {
               copy_flows_[s].insert(*id);
               copy_flows_[d].insert(*id);
             }
           },
           std::move(done));
}

int GpuGroup::max_outstanding(int s) const {
  int m = 0;
  for (int d = 0; d < ranks(); ++d)
    if (d != s) m = std::max(m, queues_[s][d]->outstanding());
  return m;
}

void GpuGroup::when_queues_idle(int s, std::function<void()> fn) {
  auto all = Join::after(ranks() - 1, std::move(fn));
  for (int d = 0; d < ranks(); ++d)
    if (d != s) queues_[s][d]->when_idle(all);
}

double GpuGroup::copy_rate(int r) const {
  double sum = 0;
  for (auto f : copy_flows_[r]) sum += net.rate(f);
  return sum;
}

sim::FlowId GpuGroup::stream(Stream s) {
  std::vector<sim::PathHop> path{{hbm_.at(s.rank), s.hbm_weight}};
  path.insert(path.end(), s.extra_hops.begin(), s.extra_hops.end());
  return net.start({.name = std::move(s.name), .bytes = s.bytes, .path = std::move(path), .rate_cap_Bps = s.rate_cap,
                    .start_latency = s.start_latency, .share = s.share, .lane = std::move(s.lane), .on_done = std::move(s.on_done)});
}

sim::FlowId GpuGroup::remote_load(RemoteLoad l) {
  std::vector<sim::PathHop> path;
  if (l.path) {
    path = std::move(*l.path);
  } else {
    path.push_back({hbm_.at(l.source), 1.0});
    for (const auto& h : route(l.source, l.reader, 1.0 / cfg_.remote.read_efficiency)) path.push_back(h);
    if (cfg_.remote.request_cost)
      for (const auto& h : route(l.reader, l.source, *cfg_.remote.request_cost)) path.push_back(h);
    path.push_back({hbm_.at(l.reader), l.write_factor});
  }
  return net.start({.name = std::move(l.name), .bytes = l.bytes, .path = std::move(path), .rate_cap_Bps = l.rate_cap,
                    .start_latency = l.start_latency, .share = l.rate_cap, .lane = std::move(l.lane), .on_done = std::move(l.on_done)});
}

sim::FlowId GpuGroup::remote_store(RemoteStore s) {
  std::vector<sim::PathHop> path = std::move(s.via);
  for (const auto& h : route(s.writer, s.dest)) path.push_back(h);
  if (s.land) path.push_back(s.landing ? *s.landing : sim::PathHop{hbm_.at(s.dest), 1.0});
  return net.start({.name = std::move(s.name), .bytes = s.bytes, .path = std::move(path), .rate_cap_Bps = s.rate_cap,
                    .start_latency = s.start_latency, .share = s.share, .lane = std::move(s.lane), .on_done = std::move(s.on_done)});
}

GpuGroup::Barrier::Barrier(GpuGroup& g) : g_(g), cont_(g.ranks()), arrived_(g.ranks(), 0.0), left_(g.ranks()) {}

void GpuGroup::Barrier::arrive(int r, std::function<void()> fn) {
  cont_[r] = std::move(fn);
  arrived_[r] = g_.sim.now();
  if (--left_ == 0)
    g_.sim.after(g_.cfg_.barrier_latency, [this] {
      if (auto* tr = g_.sim.trace())
        for (int q = 0; q < g_.ranks(); ++q) tr->slice(fmt::format("gpu{}/barrier", q), "barrier", arrived_[q], g_.sim.now());
      for (auto& f : cont_) f();
    });
}

GpuGroup::Barrier& GpuGroup::barrier() {
  barriers_.push_back(std::make_unique<Barrier>(*this));
  return *barriers_.back();
}

}  // namespace fusesim::hw
