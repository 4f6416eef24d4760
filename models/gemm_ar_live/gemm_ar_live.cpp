// The model of calibrate/live/gemm_ar_live on the H200 pair (its hardware, kernels on the substrate,
// the case runner and its spec). The pair's probes are in h200_probe.cpp.
#include "models/gemm_ar_live/gemm_ar_live.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"
#include "models/model.hpp"
#include "sim/flow.hpp"
#include "sim/servers.hpp"
#include "sim/simulation.hpp"

namespace fusesim::models {
namespace {
using hw::ParamDecl;
using hw::Quantity;
constexpr double G = 1e9, us = 1e-6;
}  // namespace

const hw::HwSchema<LiveHw>& gemm_ar_live_hardware() {
  static const hw::HwSchema<LiveHw> schema{
      hw::required(&LiveHw::compute_units, hw::vocab::compute_units()),
      hw::required(&LiveHw::hbm_capacity, hw::vocab::hbm_capacity()),
      hw::required(&LiveHw::fabric_bandwidth, hw::vocab::fabric_bandwidth()),
      hw::required(&LiveHw::link_per_direction, hw::vocab::link_per_direction()),
      hw::required(&LiveHw::launch_gap, hw::vocab::launch_gap()),
      hw::required(&LiveHw::ce_peak, ParamDecl{"ce.peak", Quantity::Bandwidth, 1 * G, 2000 * G,
                                               "one copy-engine command's peak rate, one direction (bytes/s)"}),
      hw::required(&LiveHw::ce_command_latency, ParamDecl{"ce.command_latency", Quantity::Time, 0, 100 * us,
                                                          "from a memcpyPeerAsync's turn on its stream to its first byte"}),
      hw::required(&LiveHw::ce_opposite_direction_latency,
                   ParamDecl{"ce.opposite_direction_latency", Quantity::Time, 0, 50 * us,
                             "added to a copy command's start while a copy in the opposite direction is queued or running"}),
      hw::required(&LiveHw::ce_fabric_cost, ParamDecl{"ce.fabric_cost", Quantity::Ratio, 0.0, 8.0,
                                                      "HBM bytes a copy-engine byte costs at each end, relative to a kernel's byte"}),
      hw::required(&LiveHw::copy_interference,
                   ParamDecl{"gemm.copy_interference", Quantity::Ratio, 0.0, 50.0,
                             "kappa: a BLAS GEMM runs (1 + kappa * phi * u) times slower while copy-engine traffic crosses its "
                             "GPU's HBM; phi = the GEMM's operand + output bytes per second alone / memory.fabric_bandwidth, u = "
                             "copy-engine bytes per second through that HBM (each put counted at its source and its destination) "
                             "/ memory.fabric_bandwidth"}),
      hw::required(&LiveHw::event_wait_cross_gpu, ParamDecl{"sync.event_wait_cross_gpu", Quantity::Time, 0, 100 * us,
                                                            "a stream waiting on an event recorded on another GPU"}),
      hw::required(&LiveHw::event_wait_same_gpu, ParamDecl{"sync.event_wait_same_gpu", Quantity::Time, 0, 100 * us,
                                                           "a stream waiting on an event of another stream of the same GPU"}),
      hw::required(&LiveHw::remote_read_latency, hw::vocab::remote_read_latency()),
      hw::required(&LiveHw::issue_time_per_16B, hw::vocab::issue_time_per_16B()),
      hw::required(&LiveHw::read_efficiency, hw::vocab::read_efficiency()),
      hw::required(&LiveHw::read_request_cost, hw::vocab::read_request_cost()),
  };
  return schema;
}

const std::vector<ParamDecl>& gemm_ar_live_documented() {
  static const std::vector<ParamDecl> d{
      {"lsa.push_store_latency", Quantity::Time, 0.01 * us, 50 * us, "CU remote stores: bytes in flight / rate (Little's law)"}};
  return d;
}

double blas_gemm_time(const hw::Hardware& hw, int64_t m, int64_t n, int64_t k) {
  std::vector<std::pair<double, double>> pts;  // (m, seconds)
  for (const auto& row : hw.table("gemm").rows) {
    if (row.value("probe", "") != "gemm" || row.value("dtype", "") != "bf16" || row.value("sweep", "") != "m") continue;
    if (row.value("n", 0) != n || row.value("k", 0) != k || row.value("bands", 1) != 1) continue;
    pts.push_back({row["m"].get<double>(), row["time_us"].get<double>() * 1e-6});
  }
  if (pts.size() < 2)
    throw std::out_of_range(fmt::format("{}: table 'gemm' has no bf16 M sweep at N={}, K={}", hw.path(), n, k));
  std::sort(pts.begin(), pts.end());
  const double x = double(m);
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second * x / pts.back().first;
  for (size_t i = 1; i < pts.size(); ++i)
    if (x <= pts[i].first) {
      const auto [x0, y0] = pts[i - 1];
      const auto [x1, y1] = pts[i];
      const double t = std::log(x / x0) / std::log(x1 / x0);
      return std::exp(std::log(y0) + t * (std::log(y1) - std::log(y0)));
    }
  return pts.back().second;
}

hw::GroupConfig live_group(const LiveHw& h, int ranks) {
  hw::GroupConfig g;
  g.ranks = ranks;
  g.hbm_Bps = h.fabric_bandwidth;
  g.links = hw::GroupConfig::Links::Mesh;
  g.link_Bps = h.link_per_direction;
  g.link_name = "nvlink";
  g.copy_queues = true;
  g.command_latency = h.ce_command_latency;
  g.queue_name = "copy";
  g.copy_hbm_cost = h.ce_fabric_cost;
  g.opposite_direction_latency = h.ce_opposite_direction_latency;
  g.remote.round_trip_s = h.remote_read_latency;
  g.remote.issue_per_16B_s = h.issue_time_per_16B;
  g.remote.read_efficiency = h.read_efficiency;
  g.remote.request_cost = h.read_request_cost;
  return g;
}

void LiveOps::put(int s, int d, double bytes, const std::string& label, std::function<void()> done, std::function<void()> remote_ready) {
  g.put({.src = s, .dst = d, .bytes = bytes, .rate_cap = h.ce_peak, .label = label, .on_done = std::move(done),
         .remote_ready = std::move(remote_ready), .remote_wait = h.event_wait_cross_gpu});
}

namespace {
/// State of one GEMM call in progress (see LiveOps::gemm()).
struct GemmCall {
  int rank = 0, pieces_done = 0;
  double time = 0, bytes = 0;
  std::string label;
  std::function<void()> done;
};
void gemm_piece(const LiveOps& ops, const std::shared_ptr<GemmCall>& c) {
  if (c->pieces_done == LiveOps::kGemmPieces) {
    c->done();
    return;
  }
  const double fabric = ops.h.fabric_bandwidth;
  const double phi = c->bytes / c->time / fabric;
  const double slow = 1.0 + ops.h.copy_interference * phi * ops.g.copy_rate(c->rank) / fabric;
  ops.g.net.start({.name = c->label, .bytes = c->bytes / LiveOps::kGemmPieces, .rate_cap_Bps = c->bytes / c->time / slow,
                   .lane = fmt::format("gpu{}/sm", c->rank), .on_done = [ops, c] {
                     ++c->pieces_done;
                     gemm_piece(ops, c);
                   }});
}
}  // namespace

void LiveOps::gemm(int r, int64_t rows, int64_t n, int64_t k, const std::string& label, std::function<void()> done, double alone_s) {
  auto c = std::make_shared<GemmCall>();
  c->rank = r;
  c->time = alone_s > 0 ? alone_s : blas_gemm_time(hw, rows, n, k);
  c->bytes = 2.0 * (double(rows) * k + double(n) * k + double(rows) * n);
  c->label = label;
  c->done = std::move(done);
  gemm_piece(*this, c);
}

void LiveOps::stream(int r, double bytes, const std::string& label, std::function<void()> done) {
  g.stream({.rank = r, .name = label, .bytes = bytes, .start_latency = h.launch_gap, .share = h.fabric_bandwidth,
            .lane = fmt::format("gpu{}/sm", r), .on_done = std::move(done)});
}

void LiveOps::pull(int r, int p, double bytes, int blocks, int threads, double per_thread, double write_factor,
                   const std::string& label, std::function<void()> done, double delay) {
  const double cap = g.remote_load_rate(double(blocks) * threads, per_thread);
  g.remote_load({.reader = r, .source = p, .bytes = bytes, .rate_cap = cap, .write_factor = write_factor,
                 .start_latency = delay >= 0 ? delay : h.launch_gap, .name = label, .lane = fmt::format("gpu{}/sm", r),
                 .on_done = std::move(done)});
}

LiveResult simulate_gemm_ar_live(const hw::Hardware& hw, const LiveConfig& c, sim::TraceSink* trace) {
  static const std::set<std::string> modes{"gemm-only", "split", "overlapped", "lsa"};
  if (!modes.count(c.mode)) throw ParamError("mode", fmt::format("mode: unknown '{}' (expected gemm-only, split, overlapped or lsa)", c.mode));
  if (c.world_size < 2 || c.world_size > hw.gpus())
    throw ParamError("world_size", fmt::format("world_size: {} (the hardware file '{}' has {} GPUs)", c.world_size, hw.name(), hw.gpus()));
  if (c.bands < c.world_size || c.bands % c.world_size)
    throw ParamError("bands", fmt::format("bands: {} is not a positive multiple of world_size {}", c.bands, c.world_size));
  if (c.m % c.bands || c.m % c.world_size) throw ParamError("m", fmt::format("m: {} is not divisible by bands {}", c.m, c.bands));
  if (c.m < 1 || c.k < 1 || c.n < 1)
    throw std::invalid_argument(fmt::format("m, n, k: must be >= 1 (got m={}, n={}, k={})", c.m, c.n, c.k));
  if (c.lsa_blocks < 0 || c.reduce_blocks < 0 || c.lsa_threads < 1)
    throw std::invalid_argument(fmt::format("lsa_blocks and reduce_blocks must be >= 0 (0: 2 x SMs), lsa_threads >= 1 "
                                            "(got {}, {}, {})", c.lsa_blocks, c.reduce_blocks, c.lsa_threads));
  const LiveHw h = gemm_ar_live_hardware().read(hw);
  {
    // X [m, k], W [n, k], C, reference, output [m, n] and the receive buffer, bf16, per GPU.
    const double need = 2.0 * (double(c.m) * c.k + double(c.n) * c.k + 3.5 * double(c.m) * c.n);
    if (need > h.hbm_capacity)
      throw std::invalid_argument(fmt::format("m={}, n={}, k={}: the program's buffers need {:.1f} GiB per GPU, more than "
                                              "the {:.1f} GiB of '{}'", c.m, c.n, c.k, need / 1073741824.0,
                                              h.hbm_capacity / 1073741824.0, hw.name()));
  }
  sim::Simulation sim;
  sim.set_trace(trace);
  sim::FlowNetwork net(sim);
  const int ws = c.world_size;
  hw::GpuGroup g(sim, net, live_group(h, ws));
  LiveOps node{g, h, hw};
  const int sms = int(h.compute_units);
  const int lsa_blocks = c.lsa_blocks > 0 ? c.lsa_blocks : 2 * sms;
  const double slice = double(c.m / ws) * c.n * 2.0;
  const double xgpu = h.event_wait_cross_gpu, same = h.event_wait_same_gpu;
  std::vector<double> end(ws, 0.0);
  std::vector<std::map<std::string, std::pair<double, double>>> ph(ws);
  auto mark = [&](int r, const std::string& name, double s) { ph[r][name] = {s * 1e6, sim.now() * 1e6}; };
  std::vector<double> t_gemm_end(ws, 0);
  // A rank is done when its outgoing and incoming gathers have landed: 2 (ws - 1) arrivals.
  std::vector<hw::Join> gathered(ws);
  for (int r = 0; r < ws; ++r)
    gathered[r].arm(2 * (ws - 1), [&, r] {
      end[r] = sim.now();
      mark(r, "gather", t_gemm_end[r] > 0 ? ph[r]["reduce"].second * 1e-6 : 0);
    });
  auto finish_rank = [&](int r) { gathered[r].arrive(); };
  // Phase 3 (split/overlapped): after r's reduce, puts of its slice to every peer; a rank is done
  // when its outgoing and incoming gathers have landed (incoming seen through a cross-GPU event).
  auto gather = [&](int r) {
    for (int p = 0; p < ws; ++p) {
      if (p == r) continue;
      sim.after(same, [&, r, p] {
        node.put(r, p, slice, fmt::format("gather ->gpu{}", p), [&, r] { sim.after(same, [&, r] { finish_rank(r); }); },
                 [&, p] { finish_rank(p); });
      });
    }
  };
  // r's reduce is enqueued on r's main stream behind its own GEMM calls (stream order) and waits
  // (cross-GPU events) for every peer's scatter into r; it reads ws slices and writes one.
  std::vector<hw::Join> reduce_waits(ws);  // peers' scatters landed (+ event wait), own GEMM done
  for (int r = 0; r < ws; ++r)
    reduce_waits[r].arm(2, [&, r] {
      const double t0 = sim.now();
      node.stream(r, (ws + 1) * slice, "reduce", [&, r, t0] {
        mark(r, "reduce", t0);
        gather(r);
      });
    });
  auto start_reduce = [&](int r) { reduce_waits[r].arrive(); };
  auto reduce_when_received = [&](int r) {
    return hw::Join::after(ws - 1, [&, r] { start_reduce(r); });  // called at each put's remote-ready time
  };
  std::vector<std::function<void()>> received(ws);
  for (int r = 0; r < ws; ++r) received[r] = reduce_when_received(r);

  for (int r = 0; r < ws; ++r) {
    if (c.mode == "gemm-only") {
      node.gemm(r, c.m, c.n, c.k, "gemm", [&, r] {
        end[r] = sim.now();
        mark(r, "gemm", 0);
      });
    } else if (c.mode == "split") {
      node.gemm(r, c.m, c.n, c.k, "gemm", [&, r] {
        mark(r, "gemm", 0);
        t_gemm_end[r] = sim.now();
        start_reduce(r);  // own GEMM done (stream order)
        for (int p = 0; p < ws; ++p)
          if (p != r)
            sim.after(same, [&, r, p] {
              node.put(r, p, slice, fmt::format("scatter ->gpu{}", p), {}, [&, p] { received[p](); });
            });
      });
    } else if (c.mode == "overlapped") {
      // Bands of the peers' slices first (from r+1), own slice last; each peer band's put queued on
      // the copy stream behind an event recorded after that band's GEMM call.
      const int per_slice = c.bands / ws;
      const int64_t band_rows = c.m / c.bands;
      const double band_bytes = double(band_rows) * c.n * 2.0;
      auto order = std::make_shared<std::vector<int>>();
      for (int q = 1; q <= ws; ++q)
        for (int bi = 0; bi < per_slice; ++bi) order->push_back((r + q) % ws);
      // r's bands to each peer: when all per_slice of them landed, the peer has r's scatter.
      auto per_peer = std::make_shared<std::vector<std::function<void()>>>(ws);
      for (int p = 0; p < ws; ++p) (*per_peer)[p] = hw::Join::after(per_slice, [&, p] { received[p](); });
      auto next = std::make_shared<std::function<void(size_t)>>();
      // The function reaches itself through a weak pointer (a strong one would be a cycle: every
      // overlapped case leaked it); the callbacks in flight hold it strongly until the last band.
      *next = [&, r, order, self = std::weak_ptr<std::function<void(size_t)>>(next), band_rows, band_bytes, per_peer](size_t i) {
        const auto next = self.lock();
        if (i == order->size()) {
          mark(r, "gemm", 0);
          t_gemm_end[r] = sim.now();
          start_reduce(r);  // the reduce follows the last band on r's main stream
          return;
        }
        const int dst = (*order)[i];
        const double gap = i == 0 ? 0.0 : h.launch_gap;
        sim.after(gap, [&, r, i, dst, band_rows, band_bytes, next, per_peer] {
          node.gemm(r, band_rows, c.n, c.k, fmt::format("gemm band {}", i), [&, r, i, dst, band_bytes, next, per_peer] {
            if (dst != r)
              sim.after(same, [&, r, dst, band_bytes, i, per_peer] {
                node.put(r, dst, band_bytes, fmt::format("scatter band {} ->gpu{}", i, dst), {}, [dst, per_peer] { (*per_peer)[dst](); });
              });
            (*next)(i + 1);
          });
        });
      };
      (*next)(0);
    } else {  // lsa
      node.gemm(r, c.m, c.n, c.k, "gemm", [&, r] {
        mark(r, "gemm", 0);
        t_gemm_end[r] = sim.now();
        received[r]();  // counts peers' GEMMs done (below)
      });
    }
  }
  if (c.mode == "lsa") {
    // Reduce on r starts when every rank's GEMM is done (cross-GPU events); it loads the peers'
    // partial slices through peer pointers and its own locally; then a pull kernel per peer copies
    // that peer's reduced slice once the peer's reduce is done.
    auto start_gather = [&](int r) {
      const double t0 = sim.now();
      auto done = hw::Join::after(ws - 1, [&, r, t0] {
        end[r] = sim.now();
        mark(r, "gather", t0);
      });
      for (int p = 0; p < ws; ++p)
        if (p != r) node.pull(r, p, slice, lsa_blocks, c.lsa_threads, 64.0, 1.0, fmt::format("gather <-gpu{}", p), done);
    };
    // p gathers once every peer's reduced slice is ready (ws - 1 cross-GPU events).
    auto peers_reduced = std::make_shared<std::vector<std::function<void()>>>(ws);
    for (int p = 0; p < ws; ++p) (*peers_reduced)[p] = hw::Join::after(ws - 1, [start_gather, p] { start_gather(p); });
    const auto all_gemms = hw::Join::after(ws, [&, peers_reduced] {
      for (int q = 0; q < ws; ++q) {
        sim.after(xgpu, [&, q, peers_reduced] {
          const double t0 = sim.now();
          auto done = hw::Join::after(ws, [&, q, t0, peers_reduced] {
            mark(q, "reduce", t0);
            // q's reduced slice is ready: each peer waits for it (cross-GPU event)
            for (int p = 0; p < ws; ++p)
              if (p != q) sim.after(xgpu, [p, peers_reduced] { (*peers_reduced)[p](); });
          });
          node.stream(q, 2 * slice, "reduce (local)", done);
          for (int p = 0; p < ws; ++p)
            if (p != q) node.pull(q, p, slice, 2 * sms, 512, 64.0, 0.0, fmt::format("reduce <-gpu{}", p), done);
        });
      }
    });
    for (int r = 0; r < ws; ++r) received[r] = all_gemms;
  }
  sim.run();
  if (!net.stalled().empty()) throw std::runtime_error("simulation stalled: " + net.stalled().front());
  LiveResult res;
  for (int r = 0; r < ws; ++r) res.per_rank_us.push_back(end[r] * 1e6);
  res.time_us = *std::max_element(res.per_rank_us.begin(), res.per_rank_us.end());
  for (const auto& [name, se] : ph[0]) res.phases.push_back({name, se.first, se.second});
  std::sort(res.phases.begin(), res.phases.end(), [](auto& a, auto& b) { return a.start_us < b.start_us; });
  return res;
}

namespace {
/// A case's parameters, each bound to its LiveConfig member (whose initialiser is its default).
const CaseFields<LiveConfig>& live_fields() {
  using C = LiveConfig;
  static const CaseFields<C> f{
      "gemm_ar_live",
      {field(CaseParam::name("mode", "gemm-only, split, overlapped or lsa"), &C::mode),
       field(CaseParam::dimension("m", "rows of C"), &C::m),
       field(CaseParam::dimension("n", "columns of C"), &C::n),
       field(CaseParam::dimension("k", "the reduction dimension"), &C::k),
       field(CaseParam::integer("world_size", "GPUs of the pair (2)"), &C::world_size),
       field(CaseParam::integer("bands", "overlapped: GEMM row bands over M (a multiple of world_size)"), &C::bands),
       field(CaseParam::integer("reduce_blocks", "the reduce's grid (0: 2 x SMs); accepted, not modelled").unreported(), &C::reduce_blocks),
       field(CaseParam::integer("lsa_blocks", "the LSA kernels' grid (0: 2 x SMs)").unreported(), &C::lsa_blocks),
       field(CaseParam::integer("lsa_threads", "threads per LSA block").unreported(), &C::lsa_threads)}};
  return f;
}
}  // namespace

nlohmann::json run_gemm_ar_live_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  const CaseValues v = live_fields().schema().read(p);
  const auto r = simulate_gemm_ar_live(hw, live_fields().read(v), trace);
  return {{"params", v.to_json()}, {"predicted_us", r.time_us}, {"per_rank_us", r.per_rank_us}, {"phases", hw::spans_json(r.phases)}};
}

const ModelSpec& gemm_ar_live_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s{"gemm_ar_live", "our overlapped GEMM + all-reduce on an H200 pair (calibrate/live/gemm_ar_live)",
                "calibrate/live/gemm_ar_live.hip.cpp; calibrated on our probes (calibrate/data/h200x2)",
                reads_of(gemm_ar_live_hardware()), listing_of(live_fields().schema()), run_gemm_ar_live_case};
    s.documented = gemm_ar_live_documented();
    s.tables = {{"gemm", "the GEMM alone per shape (m, n, k -> time), measured on the machine (calibrate/data/h200x2)"}};
    return s;
  }();
  return spec;
}

}  // namespace fusesim::models
