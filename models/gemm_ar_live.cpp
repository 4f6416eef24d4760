#include "models/gemm_ar_live.hpp"

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
#include "sim/flow.hpp"
#include "sim/servers.hpp"
#include "sim/simulation.hpp"

namespace fusesim::models {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
using hw::ParamDecl;
using hw::Quantity;
}  // namespace

std::vector<ParamDecl> gemm_ar_live_param_decls() {
  const double G = 1e9, us = 1e-6;
  return {
      {"ce.peak", Quantity::Bandwidth, 1 * G, 2000 * G, "one copy-engine command's peak rate, one direction (bytes/s)"},
      {"ce.command_latency", Quantity::Time, 0, 100 * us, "from a memcpyPeerAsync's turn on its stream to its first byte"},
      {"ce.opposite_direction_latency", Quantity::Time, 0, 50 * us,
       "added to a copy command's start while a copy in the opposite direction is queued or running"},
      {"links.read_request_cost", Quantity::Ratio, 0, 1,
       "reverse-direction link bytes per payload byte of CU remote loads (read requests)"},
      {"ce.fabric_cost", Quantity::Ratio, 0.0, 8.0, "HBM bytes a copy-engine byte costs at each end, relative to a kernel's byte"},
      {"gemm.copy_interference", Quantity::Ratio, 0.0, 50.0,
       "kappa: a BLAS GEMM runs (1 + kappa * phi * u) times slower while copy-engine traffic crosses its GPU's HBM; "
       "phi = the GEMM's operand + output bytes per second alone / memory.fabric_bandwidth, u = copy-engine bytes per "
       "second through that HBM (each put counted at its source and its destination) / memory.fabric_bandwidth"},
      {"sync.event_wait_cross_gpu", Quantity::Time, 0, 100 * us, "a stream waiting on an event recorded on another GPU"},
      {"sync.event_wait_same_gpu", Quantity::Time, 0, 100 * us, "a stream waiting on an event of another stream of the same GPU"},
      {"lsa.issue_time_per_16B", Quantity::Time, 0, 10 * us,
       "added to a CU remote load's round trip per 16 bytes a lane keeps in flight (its loads issue one after another)"},
      {"lsa.push_store_latency", Quantity::Time, 0.01 * us, 50 * us, "CU remote stores: bytes in flight / rate (Little's law)", false},
  };
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

namespace {

/// A GPU group of the live program on the engine.
class LiveNode {
 public:
  LiveNode(const hw::Hardware& hw, int ws, sim::Simulation& sim, sim::FlowNetwork& net) : hw(hw), sim(sim), net(net), ws(ws) {
    for (int r = 0; r < ws; ++r) mem.push_back(net.add_resource(fmt::format("gpu{}/hbm", r), hw.get("memory.fabric_bandwidth")));
    link.assign(ws, std::vector<sim::ResourceId>(ws, -1));
    copy.resize(ws);
    for (int s = 0; s < ws; ++s) {
      copy[s].resize(ws);
      for (int d = 0; d < ws; ++d) {
        if (s == d) continue;
        link[s][d] = net.add_resource(fmt::format("gpu{}/nvlink->{}", s, d), hw.get("links.per_direction"));
        copy[s][d] = std::make_unique<sim::CommandQueue>(sim, fmt::format("gpu{}/copy->{}", s, d), hw.get("ce.command_latency"));
      }
    }
  }

  /// memcpyPeerAsync of `bytes` from s to d on s's copy stream for d. `done` runs when the bytes
  /// have landed; `remote_ready` (optional) when a stream of another GPU waiting on the put's
  /// completion event may go on: sync.event_wait_cross_gpu after the put's data started to move, but
  /// not before the put is done (probe_launch copy_hop_sync_us: the hop's fixed part is 14.4 us at
  /// 4 KiB and 1 MiB and 8.6 us at 16 MiB, i.e. the cross-GPU wait overlaps the transfer).
  void put(int s, int d, double bytes, const std::string& label, std::function<void()> done,
           std::function<void()> remote_ready = {}) {
    const double cap = hw.get("ce.peak"), fc = hw.get("ce.fabric_cost");
    if (remote_ready) {
      auto inner = std::move(done);
      done = [this, inner = std::move(inner), remote_ready = std::move(remote_ready), s, d] {
        const double waited = sim.now() - data_start[s][d];
        sim.after(std::max(0.0, hw.get("sync.event_wait_cross_gpu") - waited), remote_ready);
        if (inner) inner();
      };
    }
    copy[s][d]->submit(label, [this, s, d, bytes, cap, fc, label](std::function<void()> fin) {
      const double extra = copy[d][s]->outstanding() > 0 ? hw.get_or("ce.opposite_direction_latency", 0.0) : 0.0;
      data_start[s][d] = sim.now() + extra;
      auto id = std::make_shared<sim::FlowId>(-1);
      *id = net.start({.name = label, .bytes = bytes, .path = {{mem[s], fc}, {link[s][d], 1.0}, {mem[d], fc}},
                       .rate_cap_Bps = cap, .start_latency = extra, .share = cap, .lane = copy[s][d]->name() + " data",
                       .on_done = [this, s, d, id, fin = std::move(fin)] {
                         copy_flows[s].erase(*id);
                         copy_flows[d].erase(*id);
                         fin();
                       }});
      if (!net.done(*id)) {
        copy_flows[s].insert(*id);
        copy_flows[d].insert(*id);
      }
    }, std::move(done));
  }

  /// Copy-engine bytes per second now crossing rank r's HBM (puts from and to r).
  double copy_rate(int r) const {
    double sum = 0;
    for (auto f : copy_flows[r]) sum += net.rate(f);
    return sum;
  }

  /// One BLAS GEMM call of [rows, n] x k on rank r (bf16 operands and output, 2 bytes each). Alone
  /// it takes the table's time t (compute-bound: it takes no share of the HBM from other flows, as
  /// probe_interference shows: copy-engine bandwidth is unchanged under a GEMM, x0.997-1.004). While
  /// copy-engine traffic crosses r's HBM it runs 1 + kappa * phi * u times slower, with kappa =
  /// gemm.copy_interference (fitted on the 12 gemm_with_copies points of scenarios/h200x2-probes.yaml),
  /// phi = 2 (rows k + n k + rows n) / t / memory.fabric_bandwidth (its own HBM intensity, 0.12..0.36
  /// for M 16384..512 at N 7168) and u = copy-engine bytes/s from and to r / memory.fabric_bandwidth.
  /// u is sampled at the start of each of kGemmPieces equal pieces of its work, so traffic that
  /// starts or stops mid-GEMM counts from the next piece on.
  /// alone_s > 0 replaces the table's time (a probe that measured the same GEMM alone in its own run).
  void gemm(int r, int64_t rows, int64_t n, int64_t k, const std::string& label, std::function<void()> done,
            double alone_s = 0) {
    auto g = std::make_shared<GemmCall>();
    g->rank = r;
    g->time = alone_s > 0 ? alone_s : blas_gemm_time(hw, rows, n, k);
    g->bytes = 2.0 * (double(rows) * k + double(n) * k + double(rows) * n);
    g->label = label;
    g->done = std::move(done);
    gemm_piece(g);
  }

  /// State of one GEMM call in progress (see gemm()).
  struct GemmCall {
    int rank = 0, pieces_done = 0;
    double time = 0, bytes = 0;
    std::string label;
    std::function<void()> done;
  };
  void gemm_piece(const std::shared_ptr<GemmCall>& g) {
    if (g->pieces_done == kGemmPieces) {
      g->done();
      return;
    }
    const double fabric = hw.get("memory.fabric_bandwidth");
    const double phi = g->bytes / g->time / fabric;
    const double slow = 1.0 + hw.get_or("gemm.copy_interference", 0.0) * phi * copy_rate(g->rank) / fabric;
    net.start({.name = g->label, .bytes = g->bytes / kGemmPieces, .rate_cap_Bps = g->bytes / g->time / slow,
               .lane = fmt::format("gpu{}/sm", g->rank), .on_done = [this, g] {
                 ++g->pieces_done;
                 gemm_piece(g);
               }});
  }
  static constexpr int kGemmPieces = 16;

  /// A kernel streaming `bytes` through rank r's HBM after the back-to-back launch gap.
  void stream(int r, double bytes, const std::string& label, std::function<void()> done) {
    const double f = hw.get("memory.fabric_bandwidth");
    net.start({.name = label, .bytes = bytes, .path = {{mem[r], 1.0}}, .start_latency = hw.get("kernel.launch_gap"), .share = f,
               .lane = fmt::format("gpu{}/sm", r), .on_done = std::move(done)});
  }

  /// Rate (bytes/s) of CU remote loads, Little's law: lanes x bytes in flight per lane over a round
  /// trip that grows with the bytes each lane issues (L = L0 + per_thread/16 x issue time).
  double pull_rate(double lanes, double per_thread) const {
    const double L = hw.get("lsa.remote_read_latency") + per_thread / 16.0 * hw.get_or("lsa.issue_time_per_16B", 0.0);
    return lanes * per_thread / L;
  }

  /// A kernel on rank r loading `bytes` from peer p through peer pointers (blocks x threads lanes,
  /// `per_thread` bytes in flight each), writing them (write_factor) to r's HBM.
  void pull(int r, int p, double bytes, int blocks, int threads, double per_thread, double write_factor, const std::string& label,
            std::function<void()> done, double delay = -1) {
    const double cap = pull_rate(double(blocks) * threads, per_thread);
    net.start({.name = label, .bytes = bytes,
               .path = {{mem[p], 1.0}, {link[p][r], 1.0 / hw.get("links.read_efficiency")},
                        {link[r][p], hw.get_or("links.read_request_cost", 0.0)}, {mem[r], write_factor}},
               .rate_cap_Bps = cap, .start_latency = delay >= 0 ? delay : hw.get("kernel.launch_gap"), .share = cap,
               .lane = fmt::format("gpu{}/sm", r), .on_done = std::move(done)});
  }

  const hw::Hardware& hw;
  sim::Simulation& sim;
  sim::FlowNetwork& net;
  int ws;
  std::vector<sim::ResourceId> mem;
  std::vector<std::vector<sim::ResourceId>> link;
  std::vector<std::vector<std::unique_ptr<sim::CommandQueue>>> copy;
  std::vector<std::set<sim::FlowId>> copy_flows = std::vector<std::set<sim::FlowId>>(ws);
  std::vector<std::vector<double>> data_start = std::vector<std::vector<double>>(ws, std::vector<double>(ws, 0.0));
};

/// Calls fn after n calls of the returned function.
std::function<void()> after_n(int n, std::function<void()> fn) {
  auto left = std::make_shared<int>(n);
  return [left, fn] {
    if (--*left == 0) fn();
  };
}

}  // namespace

LiveResult simulate_gemm_ar_live(const hw::Hardware& hw, const LiveConfig& c, sim::TraceSink* trace) {
  static const std::set<std::string> modes{"gemm-only", "split", "overlapped", "lsa"};
  if (!modes.count(c.mode)) throw std::invalid_argument(fmt::format("mode: unknown '{}' (expected gemm-only, split, overlapped or lsa)", c.mode));
  if (c.world_size < 2 || c.world_size > hw.gpus())
    throw std::invalid_argument(fmt::format("world_size: {} (the hardware file '{}' has {} GPUs)", c.world_size, hw.name(), hw.gpus()));
  if (c.bands < c.world_size || c.bands % c.world_size) throw std::invalid_argument(fmt::format("bands: {} is not a positive multiple of world_size {}", c.bands, c.world_size));
  if (c.m % c.bands || c.m % c.world_size) throw std::invalid_argument(fmt::format("m: {} is not divisible by bands {}", c.m, c.bands));
  if (c.m < 1 || c.k < 1 || c.n < 1)
    throw std::invalid_argument(fmt::format("m, n, k: must be >= 1 (got m={}, n={}, k={})", c.m, c.n, c.k));
  if (c.lsa_blocks < 0 || c.reduce_blocks < 0 || c.lsa_threads < 1)
    throw std::invalid_argument(fmt::format("lsa_blocks and reduce_blocks must be >= 0 (0: 2 x SMs), lsa_threads >= 1 "
                                            "(got {}, {}, {})", c.lsa_blocks, c.reduce_blocks, c.lsa_threads));
  if (hw.has("gpu.hbm_capacity")) {
    // X [m, k], W [n, k], C, reference, output [m, n] and the receive buffer, bf16, per GPU.
    const double need = 2.0 * (double(c.m) * c.k + double(c.n) * c.k + 3.5 * double(c.m) * c.n);
    if (need > hw.get("gpu.hbm_capacity"))
      throw std::invalid_argument(fmt::format("m={}, n={}, k={}: the program's buffers need {:.1f} GiB per GPU, more than "
                                              "the {:.1f} GiB of '{}'", c.m, c.n, c.k, need / 1073741824.0,
                                              hw.get("gpu.hbm_capacity") / 1073741824.0, hw.name()));
  }
  sim::Simulation sim;
  sim.set_trace(trace);
  sim::FlowNetwork net(sim);
  const int ws = c.world_size;
  LiveNode node(hw, ws, sim, net);
  const int sms = int(hw.get("gpu.compute_units"));
  const int lsa_blocks = c.lsa_blocks > 0 ? c.lsa_blocks : 2 * sms;
  const double slice = double(c.m / ws) * c.n * 2.0;
  const double xgpu = hw.get("sync.event_wait_cross_gpu"), same = hw.get("sync.event_wait_same_gpu");
  std::vector<double> end(ws, 0.0);
  std::vector<std::map<std::string, std::pair<double, double>>> ph(ws);
  auto mark = [&](int r, const std::string& name, double s) { ph[r][name] = {s * 1e6, sim.now() * 1e6}; };
  // Per-rank completion events: sent[r][p] (r's scatter to p landed), reduced[r], gathered[r][p].
  std::vector<std::vector<std::function<void()>>> on_sent(ws, std::vector<std::function<void()>>(ws));
  std::vector<int> sent_left(ws, ws - 1), gather_left(ws, 2 * (ws - 1));
  std::vector<double> t_gemm_end(ws, 0);

  auto finish_rank = [&](int r) {
    if (--gather_left[r] == 0) {
      end[r] = sim.now();
      mark(r, "gather", t_gemm_end[r] > 0 ? ph[r]["reduce"].second * 1e-6 : 0);
    }
  };
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
  std::vector<int> reduce_waits(ws, 2);  // peers' scatters landed (+ event wait), own GEMM done
  auto start_reduce = [&](int r) {
    if (--reduce_waits[r] > 0) return;
    const double t0 = sim.now();
    node.stream(r, (ws + 1) * slice, "reduce", [&, r, t0] {
      mark(r, "reduce", t0);
      gather(r);
    });
  };
  auto reduce_when_received = [&](int r) {
    return after_n(ws - 1, [&, r] { start_reduce(r); });  // called at each put's remote-ready time
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
      auto per_peer_left = std::make_shared<std::vector<int>>(ws, per_slice);
      auto next = std::make_shared<std::function<void(size_t)>>();
      *next = [&, r, order, next, band_rows, band_bytes, per_peer_left](size_t i) {
        if (i == order->size()) {
          mark(r, "gemm", 0);
          t_gemm_end[r] = sim.now();
          start_reduce(r);  // the reduce follows the last band on r's main stream
          return;
        }
        const int dst = (*order)[i];
        const double gap = i == 0 ? 0.0 : hw.get("kernel.launch_gap");
        sim.after(gap, [&, r, i, dst, band_rows, band_bytes, next, per_peer_left] {
          node.gemm(r, band_rows, c.n, c.k, fmt::format("gemm band {}", i), [&, r, i, dst, band_bytes, next, per_peer_left] {
            if (dst != r)
              sim.after(same, [&, r, dst, band_bytes, i, per_peer_left] {
                node.put(r, dst, band_bytes, fmt::format("scatter band {} ->gpu{}", i, dst), {}, [&, dst, per_peer_left] {
                  if (--(*per_peer_left)[dst] == 0) received[dst]();
                });
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
    auto gemms_done = std::make_shared<int>(ws);
    auto reduced_left = std::make_shared<std::vector<int>>(ws, ws - 1);
    std::vector<std::function<void()>> reduced_cb(ws);
    auto start_gather = [&, reduced_left](int r) {
      const double t0 = sim.now();
      auto done = after_n(ws - 1, [&, r, t0] {
        end[r] = sim.now();
        mark(r, "gather", t0);
      });
      for (int p = 0; p < ws; ++p)
        if (p != r) node.pull(r, p, slice, lsa_blocks, c.lsa_threads, 64.0, 1.0, fmt::format("gather <-gpu{}", p), done);
    };
    for (int r = 0; r < ws; ++r) {
      received[r] = [&, r, gemms_done, start_gather, reduced_left] {
        if (--*gemms_done > 0) return;
        for (int q = 0; q < ws; ++q) {
          sim.after(xgpu, [&, q, start_gather, reduced_left] {
            const double t0 = sim.now();
            auto done = after_n(ws, [&, q, t0, start_gather, reduced_left] {
              mark(q, "reduce", t0);
              // q's reduced slice is ready: each peer waits for it (cross-GPU event)
              for (int p = 0; p < ws; ++p)
                if (p != q)
                  sim.after(xgpu, [&, p, start_gather, reduced_left] {
                    if (--(*reduced_left)[p] == 0) start_gather(p);
                  });
            });
            node.stream(q, 2 * slice, "reduce (local)", done);
            for (int p = 0; p < ws; ++p)
              if (p != q) node.pull(q, p, slice, 2 * sms, 512, 64.0, 0.0, fmt::format("reduce <-gpu{}", p), done);
          });
        }
      };
    }
  }
  sim.run();
  if (!net.stalled().empty()) throw std::runtime_error("simulation stalled: " + net.stalled().front());
  LiveResult res;
  for (int r = 0; r < ws; ++r) res.per_rank_us.push_back(end[r] * 1e6);
  res.time_us = *std::max_element(res.per_rank_us.begin(), res.per_rank_us.end());
  for (const auto& [name, se] : ph[0]) res.phases.push_back({name, se});
  std::sort(res.phases.begin(), res.phases.end(), [](auto& a, auto& b) { return a.second.first < b.second.first; });
  return res;
}

nlohmann::json run_gemm_ar_live_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  LiveConfig c;
  for (auto it = p.begin(); it != p.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    try {
      if (k == "mode") c.mode = it->second.as<std::string>();
      else if (k == "m") c.m = it->second.as<int64_t>();
      else if (k == "n") c.n = it->second.as<int64_t>();
      else if (k == "k") c.k = it->second.as<int64_t>();
      else if (k == "world_size") c.world_size = it->second.as<int>();
      else if (k == "bands") c.bands = it->second.as<int>();
      else if (k == "reduce_blocks") c.reduce_blocks = it->second.as<int>();
      else if (k == "lsa_blocks") c.lsa_blocks = it->second.as<int>();
      else if (k == "lsa_threads") c.lsa_threads = it->second.as<int>();
      else
        throw std::invalid_argument(fmt::format(
            "unknown gemm_ar_live parameter '{}' (accepted: bands, k, lsa_blocks, lsa_threads, m, mode, n, reduce_blocks, "
            "world_size)", k));
    } catch (const YAML::Exception&) {
      throw std::invalid_argument(fmt::format("parameter '{}': value '{}' has the wrong type (expected {})", k, hw::yaml_text(it->second),
                                              k == "mode" ? "a name" : "a whole number"));
    }
  }
  const auto r = simulate_gemm_ar_live(hw, c, trace);
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& [name, se] : r.phases) phases.push_back({{"name", name}, {"start_us", se.first}, {"end_us", se.second}});
  return {{"params", {{"mode", c.mode}, {"m", c.m}, {"n", c.n}, {"k", c.k}, {"world_size", c.world_size}, {"bands", c.bands}}},
          {"predicted_us", r.time_us},
          {"per_rank_us", r.per_rank_us},
          {"phases", phases}};
}

nlohmann::json run_probe_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  static const std::map<std::string, std::set<std::string>> keys{
      {"peer_copy", {"probe", "direction", "size_bytes"}},
      {"cu_remote", {"probe", "mode", "blocks", "threads", "bytes_in_flight_per_thread", "size_bytes", "both"}},
      {"gemm_banded", {"probe", "m", "n", "k", "bands"}},
      {"gemm_with_copies", {"probe", "m", "n", "k", "background", "alone_time_us"}},
      {"copy_hop", {"probe", "size_bytes"}}};
  static const std::string names = [] {  // "copy_hop, cu_remote, ..." for the messages below
    std::string s;
    for (const auto& [name, unused] : keys) s += (s.empty() ? "" : ", ") + name;
    return s;
  }();
  if (!p["probe"]) throw std::invalid_argument(fmt::format("probe parameter 'probe' is missing (one of: {})", names));
  const std::string probe = p["probe"].as<std::string>();
  const auto kit = keys.find(probe);
  if (kit == keys.end()) throw std::invalid_argument(fmt::format("probe: unknown '{}' (expected one of: {})", probe, names));
  for (auto it = p.begin(); it != p.end(); ++it)
    if (!kit->second.count(it->first.as<std::string>()))
      throw std::invalid_argument(fmt::format("unknown {} probe parameter '{}' (accepted: {})", probe,
                                              it->first.as<std::string>(), fmt::join(kit->second, ", ")));
  // Typed reads that name the key on a missing or ill-typed value.
  auto need = [&](const char* key) -> YAML::Node {
    if (!p[key]) throw std::invalid_argument(fmt::format("{}: parameter '{}' is missing", probe, key));
    return p[key];
  };
  auto num = [&](const char* key) {
    try {
      return need(key).as<double>();
    } catch (const YAML::Exception&) {
      throw std::invalid_argument(fmt::format("{}: parameter '{}': '{}' is not a number", probe, key, hw::yaml_text(p[key])));
    }
  };
  auto count = [&](const char* key) {
    int64_t v = 0;
    try {
      v = need(key).as<int64_t>();
    } catch (const YAML::Exception&) {
      throw std::invalid_argument(fmt::format("{}: parameter '{}': '{}' is not an integer", probe, key, hw::yaml_text(p[key])));
    }
    if (v < 1) throw std::invalid_argument(fmt::format("{}: parameter '{}' must be >= 1, got {}", probe, key, v));
    return v;
  };
  auto word = [&](const char* key, std::initializer_list<const char*> allowed) {
    std::string v;
    try {
      v = need(key).as<std::string>();
    } catch (const YAML::Exception&) {
      throw std::invalid_argument(fmt::format("{}: parameter '{}' must be a word", probe, key));
    }
    for (const char* a : allowed)
      if (v == a) return v;
    std::string list;
    for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
    throw std::invalid_argument(fmt::format("{}: parameter '{}': '{}' (expected {})", probe, key, v, list));
  };
  sim::Simulation sim;
  sim.set_trace(trace);
  sim::FlowNetwork net(sim);
  LiveNode node(hw, 2, sim, net);
  double t_end = 0;
  if (probe == "peer_copy") {
    const double bytes = num("size_bytes");
    if (!(bytes > 0)) throw std::invalid_argument("peer_copy: size_bytes must be > 0");
    const bool both = p["direction"] && word("direction", {"one", "both"}) == "both";
    auto done = after_n(both ? 2 : 1, [&] { t_end = sim.now(); });
    node.put(0, 1, bytes, "put 0->1", done);
    if (both) node.put(1, 0, bytes, "put 1->0", done);
  } else if (probe == "cu_remote") {
    if (p["mode"]) word("mode", {"pull"});  // only pulls are modelled
    const double bytes = num("size_bytes");
    if (!(bytes > 0)) throw std::invalid_argument("cu_remote: size_bytes must be > 0");
    const int blocks = int(count("blocks")), threads = int(count("threads"));
    const double per_thread = num("bytes_in_flight_per_thread");
    if (!(per_thread > 0)) throw std::invalid_argument("cu_remote: bytes_in_flight_per_thread must be > 0");
    bool both = false;
    if (p["both"]) {
      try {
        both = p["both"].as<bool>();
      } catch (const YAML::Exception&) {
        throw std::invalid_argument("cu_remote: parameter 'both' must be true or false");
      }
    }
    auto done = after_n(both ? 2 : 1, [&] { t_end = sim.now(); });
    node.pull(0, 1, bytes, blocks, threads, per_thread, 1.0, "pull 1->0", done);
    if (both) node.pull(1, 0, bytes, blocks, threads, per_thread, 1.0, "pull 0->1", done);
  } else if (probe == "gemm_banded") {
    const int64_t m = count("m"), n = count("n"), k = count("k");
    const int bands = int(count("bands"));
    if (m % bands) throw std::invalid_argument(fmt::format("gemm_banded: m={} is not divisible by bands={}", m, bands));
    auto next = std::make_shared<std::function<void(int)>>();
    *next = [&, next, m, n, k, bands](int b) {
      if (b == bands) {
        t_end = sim.now();
        return;
      }
      sim.after(b == 0 ? 0.0 : hw.get("kernel.launch_gap"), [&, next, m, n, k, bands, b] {
        node.gemm(0, m / bands, n, k, "band", [next, b] { (*next)(b + 1); });
      });
    };
    (*next)(0);
  } else if (probe == "copy_hop") {
    // probe_launch's copy_hop_sync_us: a kernel's end to a dependent kernel on the peer through an
    // ordering-only event, a put of size_bytes on a copy stream and a cross-GPU event wait.
    const double bytes = num("size_bytes");
    if (!(bytes > 0)) throw std::invalid_argument("copy_hop: size_bytes must be > 0");
    sim.after(hw.get("sync.event_wait_same_gpu"), [&, bytes] {
      node.put(0, 1, bytes, "put 0->1", {}, [&] { t_end = sim.now(); });
    });
  } else {  // gemm_with_copies (the probe name was checked against `keys` above)
    // probe_interference's gemm_time: GPU 0's GEMM while copy-engine puts run out of it (ce_out),
    // into it (ce_in) or both, started together; the puts last longer than the GEMM. With
    // alone_time_us (the same probe run's GEMM alone) the GEMM's own time comes from there, so the
    // point tests the slowdown only, not the run-to-run spread of the GEMM table.
    const int64_t m = count("m"), n = count("n"), k = count("k");
    const std::string bg = word("background", {"none", "ce_out", "ce_in", "ce_both"});
    const double alone = p["alone_time_us"] ? num("alone_time_us") * 1e-6 : 0.0;
    if (p["alone_time_us"] && !(alone > 0)) throw std::invalid_argument("gemm_with_copies: alone_time_us must be > 0");
    const double xfer = 4.0 * (alone > 0 ? alone : blas_gemm_time(hw, m, n, k)) * hw.get("ce.peak");  // outlasts the GEMM
    if (bg == "ce_out" || bg == "ce_both") node.put(0, 1, xfer, "put 0->1", [] {});
    if (bg == "ce_in" || bg == "ce_both") node.put(1, 0, xfer, "put 1->0", [] {});
    node.gemm(0, m, n, k, "gemm", [&] { t_end = sim.now(); }, alone);
  }
  sim.run();
  return {{"predicted_us", t_end * 1e6}, {"phases", nlohmann::json::array()}};
}

}  // namespace fusesim::models
