// AFD exchange model on the fusesim engine. Mechanisms from AFD.md (read from the transport's code
// by others); every cost is a hardware parameter (params.cpp), none is a measured point.
#include "models/afd/afd.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/afd/hardware.hpp"
#include "models/case_params.hpp"
#include "sim/flow.hpp"
#include "sim/servers.hpp"
#include "sim/simulation.hpp"

namespace fusesim::afd {
namespace {

/// Finish signals transport SM `sm` posts for one (source, destination) pair, and how many of them
/// are data-less (the finish of a channel that carried nothing, and the designated release).
/// Each SM drives channels 8*sm .. 8*sm+7; a channel with n tokens publishes its tail every 3
/// linked-list rounds and finishes once at the end, floor(n/3)+1 atomics (AFD.md); an empty channel
/// sends its finish only. With skip_empty_finish the empty channels send nothing and SM 0 sends one
/// designated release per pair (AFD.md's proposed fix). `tokens_per_channel` holds the pair's
/// tokens per channel (size C = 8 x SMs).
std::pair<int, int> sm_finish_posts(const std::vector<int>& tokens_per_channel, int sm, bool skip_empty_finish) {
  int posts = 0, dataless = 0;
  for (int ch = 8 * sm; ch < 8 * sm + 8; ++ch) {
    const int n = tokens_per_channel[ch];
    if (n > 0) posts += n / 3 + 1;
    else if (!skip_empty_finish) { posts += 1; dataless += 1; }
  }
  if (skip_empty_finish && sm == 0) { posts += 1; dataless += 1; }
  return {posts, dataless};
}

constexpr double kUs = 1e-6;

int nic_sharing(const hw::Hardware& hw) {
  const int P = hw.topology_int("gpus_per_pod", 4);
  const int nics = hw.topology_int("nics_per_node", 0), gpus = hw.topology_int("gpus_per_node", 0);
  if (nics == 0 && gpus == 0) return 1;
  if (nics < 1 || gpus < 1)
    throw std::invalid_argument(fmt::format(
        "hardware '{}': topology needs both gpus_per_node and nics_per_node (>= 1) to place NICs, got {} and {}",
        hw.name(), gpus, nics));
  if (gpus % nics != 0 || P % (gpus / nics) != 0)
    throw std::invalid_argument(fmt::format(
        "hardware '{}': topology gpus_per_node {} / nics_per_node {} must be a whole number of GPUs per NIC that divides "
        "gpus_per_pod {} (the pods model shares a NIC among GPUs of one pod; more NICs than GPUs is not modelled)",
        hw.name(), gpus, nics, P));
  return gpus / nics;
}

/// Per-token dispatch metadata: top-k expert ids and weights (4 B each) plus a 64-B header, which
/// puts a BF16 hidden-2048 token at ~4.2 KB (AFD.md: "4096 B + metadata ~ 4.2 KB at top-k 8").
double meta_bytes(int topk) { return topk * 8.0 + 64.0; }

/// Bytes of one dispatched token: hidden x payload bytes, plus one fp32 scale per 128 elements when
/// the payload is fp8 (DeepEP's fp8 dispatch layout), plus the routing metadata.
double dispatch_token_bytes(const AfdCase& c) {
  const double scales = c.dtype_bytes == 1 ? c.hidden / 128.0 * 4.0 : 0.0;  // hidden % 128 == 0 (validated)
  return double(c.hidden) * c.dtype_bytes + scales + meta_bytes(c.topk);
}

/// Bytes of one combined (reduced or expert) row: the combine runs in bf16 whatever the dispatch
/// payload (DeepEP combines bf16; an fp8 dispatch does not shrink the combine), fp32 stays fp32.
double combine_row_bytes(const AfdCase& c) { return double(c.hidden) * std::max(2, c.dtype_bytes); }

/// Channel of token t of source `src` among `sources`: t mod C, or rotated by src*C/sources.
int channel_of(int t, int src, int sources, int C, bool rotate) {
  const int off = rotate ? int((int64_t(src) * C) / std::max(1, sources)) : 0;
  return (t + off) % C;
}

struct Ctx {
  const hw::Hardware& hw;
  const AfdHw h;  ///< the hardware, read once (afd_hardware for this topology)
  const AfdCase& c;
  sim::TraceSink* trace;
  sim::Simulation sim;
  sim::FlowNetwork net{sim};
  AfdResult res;
  Ctx(const hw::Hardware& hwf, const AfdCase& cc, sim::TraceSink* t) : hw(hwf), h(afd_hardware(hwf).read(hwf)), c(cc), trace(t) {
    sim.set_trace(t);
  }
  /// Record a kernel span (seconds) on device d.
  void kernel(int d, const std::string& role, const std::string& name, double t0, double t1) {
    res.kernels.push_back({name, t0 / kUs, t1 / kUs, d, role});
  }
};

/// The domain's GPUs on the substrate: per GPU its port into the NVLink switch, each direction at
/// what its SMs' stores reach (nvlink.sm_store_peak) capped by the links' per-direction rate
/// (links.per_direction), and an HBM resource at the copy epilogue's rate (memory.fabric_bandwidth x
/// afd.epilogue_efficiency, lane "hbm_copy"); no copy engines (the transport's SMs store to peers).
hw::GroupConfig domain_group(const AfdHw& h, int gpus) {
  hw::GroupConfig g;
  g.ranks = gpus;
  g.hbm_Bps = h.fabric_bandwidth * h.epilogue_efficiency;
  g.hbm_name = "hbm_copy";
  g.links = hw::GroupConfig::Links::Ports;
  g.link_Bps = std::min(h.sm_store_peak, h.link_per_direction);
  g.link_name = "nvlink";
  return g;
}

// ====================================== NVLink domain ============================================
// Devices: FFN ranks 0..F-1, Attention ranks F..F+A-1 (the seed's device numbering).
void run_nvlink(Ctx& x) {
  const AfdCase& c = x.c;
  const int A = c.attention_ranks, F = c.ffn_ranks, N = A + F, T = c.tokens;
  const bool masked = c.path == "masked";
  const int C = channels_of(c.transport_sms);
  const int sms = c.transport_sms;
  int combine_sms_attn = c.combine_sms > 0 ? c.combine_sms : sms;
  int combine_sms_ffn = c.ffn_combine_sms > 0 ? c.ffn_combine_sms : combine_sms_attn;
  (void)combine_sms_attn;
  const Routing r = route(A, F, T, c.topk, c.experts, c.capacity, c.seed);
  const double tok = combine_row_bytes(c);       // combine rows (bf16)
  const double xtok = double(c.hidden) * c.dtype_bytes;  // an expanded row in the dispatch dtype
  const double dtok = dispatch_token_bytes(c);    // a dispatched token on the wire
  const double gap = x.h.launch_gap;
  const double nvl_lat = x.h.nvlink_latency;
  auto& sim = x.sim;
  auto& net = x.net;
  hw::GpuGroup grp_(sim, net, domain_group(x.h, N));

  // Combine stores of one FFN GPU: what its combine SMs issue in series with a device-wide peak,
  // 1/rate = 1/combine_store_peak + 1/(combine SMs x combine_store_per_sm). The measured combines keep
  // gaining past the SM count where a flat cap would stop them: the 2A:2F exchange at T=2048 goes
  // 180.8 / 176.9 / 172.1 / 164.6 us at 24 / 32 / 48 / 64 transport SMs, and the 3A:1F FFN-only
  // screen at T=2048 runs its 25 MB of reduced rows at ~200 GB/s with 48 combine SMs and ~260 GB/s
  // with 64-132 (seed 004). A flat 198.5 GB/s cap (the previous model) predicted both flat (183 us;
  // 288 us, +12.05% at 132 SMs). combine_store_per_sm = 0 restores the flat cap.
  const double per_sm = x.h.combine_store_per_sm;
  const double store_cap = per_sm > 0 ? 1.0 / (1.0 / x.h.combine_store_peak + 1.0 / (combine_sms_ffn * per_sm))
                                      : x.h.combine_store_peak;
  std::vector<sim::ResourceId> gather(N), cstore(N);
  for (int g = 0; g < N; ++g) {
    gather[g] = net.add_resource(fmt::format("gpu{}/combine_gather", g), x.h.combine_gather_peak);
    cstore[g] = net.add_resource(fmt::format("gpu{}/combine_store", g), store_cap);
  }
  auto dev_attn = [&](int a) { return F + a; };

  // ---- timeline state ----
  std::vector<double> disp_end(N, 0), epi_end(N, 0), comb_start(N, 0), comb_end(N, 0), red_end(N, 0),
      epi_start(N, 0), in_done(N, 0), comb_flows_done(N, 0);
  std::vector<double> in_bytes(N, 0), rows_bytes(N, 0);
  // The role-unaware (masked) kernel does its extra layout/notify work for every rank before the
  // first payload byte, so it delays the payload and the count stores alike.
  const double masked_disp0 = masked ? x.h.masked_dispatch_extra + x.h.masked_per_source * A : 0.0;
  const double t_first = x.h.dispatch_fixed + masked_disp0;

  auto L_disp_all = std::make_shared<hw::Join>();
  std::vector<hw::Join> L_out(N), L_in(N), L_comb_out(N), L_comb_in(N);
  auto L_comb_all = std::make_shared<hw::Join>();
  auto L_ffn_comb_end = std::make_shared<hw::Join>();

  // ---- reduce epilogue at Attention ranks (and idle kernels of masked FFN ranks) ----
  auto start_reduce = [&](int d, double t0) {
    double dur;
    if (d >= F) {
      int fh = 0;
      for (int f = 0; f < F; ++f) fh += r.tokens_to[d - F][f] > 0;
      const double bytes = double(T) * (fh + 1) * tok;
      // The partials were just written into this GPU's receive buffers by the FFN ranks' NVLink
      // stores and are read back once (largely from L2), so the reduce streams at its own rate,
      // not at the device-to-device copy rate of the expansion epilogue.
      dur = x.h.reduce_fixed + x.h.reduce_per_source * fh + bytes / x.h.reduce_bandwidth;
    } else {
      dur = x.h.masked_idle_epilogue;
    }
    red_end[d] = t0 + dur;
    x.kernel(d, d >= F ? "attention" : "ffn", "combine_reduce_epilogue", t0, t0 + dur);
  };

  // ---- combine ----
  auto finish_attention_combine = [&](int d, double t_end) {
    comb_end[d] = t_end;
    x.kernel(d, d >= F ? "attention" : "ffn", "combine_impl", comb_start[d], t_end);
    if (d >= F || masked) sim.at(t_end + gap, [&, d] { start_reduce(d, sim.now()); });
  };
  auto ffn_combine = [&](int f) {
    comb_start[f] = sim.now();
    const double t_send = sim.now() + x.h.combine_fixed;
    const int Cc = channels_of(combine_sms_ffn);
    // Flows per (combine SM, Attention destination): reduced rows of the tokens whose channel
    // (t mod Cc) belongs to that SM; the SM reads every expert row it reduces.
    std::vector<sim::ResourceId> csm(combine_sms_ffn);
    for (int s = 0; s < combine_sms_ffn; ++s)
      csm[s] = net.add_resource(fmt::format("gpu{}/combine_sm{}", f, s), x.h.combine_row_rate);
    // Latency-bound warps (Little's law): each SM's combine warps are split evenly over the N ranks
    // of the domain, whatever their role, so one destination gets warps_per_sm / N warps per SM;
    // each holds one token for combine_token_latency. This caps every (SM, destination) flow.
    const double warps_per_dest = x.h.combine_warps_per_sm / double(N);
    const double lane_cap = warps_per_dest * tok / x.h.combine_token_latency;
    struct Acc { double tokens = 0, rows = 0; };
    std::vector<Acc> acc(size_t(combine_sms_ffn) * A);
    for (int a = 0; a < A; ++a)
      for (int t = 0; t < T; ++t) {
        const int n = r.rows[a][size_t(t) * F + f];
        if (!n) continue;
        const int s = channel_of(t, a, A, Cc, c.rotate_channels) % combine_sms_ffn;
        acc[size_t(s) * A + a].tokens += 1;
        acc[size_t(s) * A + a].rows += n;
      }
    int nflows = 0;
    for (auto& q : acc) nflows += q.tokens > 0;
    L_comb_out[f].arm(nflows, [&, f] {
      comb_flows_done[f] = sim.now();
      // Per-destination serial tail: finish flags go out one Attention rank after another.
      int ndest = 0;
      for (int a = 0; a < A; ++a) ndest += r.tokens_to[a][f] > 0;
      double t_end = sim.now() + x.h.combine_finish + x.h.combine_per_dest * ndest;
      if (c.grid_sync_exit) t_end += x.h.grid_sync_exit;
      if (masked) { L_comb_all->arrive(); return; }
      finish_attention_combine(f, t_end);
      sim.at(t_end, [&] { L_ffn_comb_end->arrive(); });  // the Attention ranks see the FFN's exit
    });
    for (int s = 0; s < combine_sms_ffn; ++s)
      for (int a = 0; a < A; ++a) {
        const Acc& q = acc[size_t(s) * A + a];
        if (q.tokens <= 0) continue;
        const double w = q.rows / q.tokens;
        // The SM's reduced rows, stored over the switch into the Attention rank (the landing is not
        // charged: the reduce epilogue reads them back, at its own rate).
        const int da = dev_attn(a);
        grp_.remote_store({.writer = f, .dest = da, .bytes = q.tokens * tok, .rate_cap = lane_cap,
                           .start_latency = (t_send - sim.now()) + nvl_lat, .name = fmt::format("combine f{}->a{} sm{}", f, a, s),
                           .lane = fmt::format("gpu{}/combine_flows", f), .via = {{csm[s], w}, {gather[f], w}, {cstore[f], 1.0}},
                           .land = false, .on_done = [&, f, da] { L_comb_out[f].arrive(); L_comb_in[da].arrive(); }});
      }
  };

  // ---- epilogue (FFN expansion; idle on masked Attention ranks) ----
  auto start_epilogue = [&](int d) {
    const double t0 = sim.now();
    if (d >= F) {  // masked Attention rank: nothing to expand
      // Launched by the dispatch kernel's programmatic-launch trigger before dispatch_impl's
      // recorded end (t0 here is that end): an Attention rank's blocks receive nothing, so they
      // pass the trigger once their sends are out, masked.idle_launch_lead before the domain-wide
      // end; the kernel then waits in its grid-dependency sync for the dispatch to complete and
      // exits masked.idle_tail later, having nothing to copy.
      const double t1 = t0 + x.h.masked_idle_tail;
      epi_end[d] = t1;
      x.kernel(d, "attention", "dispatch_copy_epilogue", t0 - x.h.masked_idle_launch_lead, t1);
      sim.at(t1 + gap, [&, d] { comb_start[d] = sim.now(); });
      return;
    }
    grp_.stream({.rank = d, .name = fmt::format("expand gpu{}", d), .bytes = in_bytes[d] + rows_bytes[d],
                 .start_latency = x.h.epilogue_fixed, .on_done = [&, d] {
      epi_end[d] = sim.now();
      // Launched (programmatic dependent launch) at the earlier of two triggers: every source's
      // count arrived (epi_start), or dispatch_impl's blocks passed their own launch trigger on the
      // way out, which precedes its recorded end by the path's exit lead (the afd FFN receive
      // kernel's notify-warp trigger and exit differ from the role-unaware masked kernel's).
      const double lead = masked ? x.h.masked_dispatch_exit_lead : x.h.dispatch_exit_lead;
      x.kernel(d, "ffn", "dispatch_copy_epilogue", std::min(epi_start[d], disp_end[d] - lead), sim.now());
      sim.after(gap, [&, d] { ffn_combine(d); });
    }});
  };

  // ---- dispatch ----
  for (int f = 0; f < F; ++f) {
    for (int a = 0; a < A; ++a) {
      in_bytes[f] += r.tokens_to[a][f] * dtok;
      rows_bytes[f] += r.rows_to[a][f] * xtok;
    }
  }
  auto end_dispatch = [&](int d, double t_end) {
    disp_end[d] = t_end;
    // Count trigger (epi_start, set when every source's count arrived): the epilogue kernel is
    // launched then, but expands only after the whole dispatch (grid dependency) completed.
    if (d < F) {
      sim.at(t_end, [&, d] { start_epilogue(d); });
    } else {
      if (masked) sim.at(t_end, [&, d] { start_epilogue(d); });
      else sim.at(t_end + gap, [&, d] { comb_start[d] = sim.now(); });
    }
  };
  // Per (Attention rank, SM, FFN): tokens and the longest per-channel chain.
  struct Grp { double tokens = 0; int chain = 0; };
  std::vector<Grp> grp(size_t(A) * sms * F);
  for (int a = 0; a < A; ++a) {
    std::vector<int> per_ch(size_t(C) * F, 0);
    for (int t = 0; t < T; ++t) {
      const int ch = channel_of(t, a, A, C, c.rotate_channels);
      for (int f = 0; f < F; ++f)
        if (r.hits[a][t] >> f & 1) {
          Grp& g = grp[(size_t(a) * sms + ch % sms) * F + f];
          g.tokens += 1;
          g.chain = std::max(g.chain, ++per_ch[size_t(ch) * F + f]);
        }
    }
  }
  int total_flows = 0;
  std::vector<int> out_flows(A, 0), in_flows(F, 0);
  for (int a = 0; a < A; ++a)
    for (int s = 0; s < sms; ++s)
      for (int f = 0; f < F; ++f)
        if (grp[(size_t(a) * sms + s) * F + f].tokens > 0) { ++out_flows[a]; ++in_flows[f]; ++total_flows; }
  const double fin = x.h.dispatch_finish;
  L_disp_all->arm(total_flows, [&, fin] {
    if (!masked) return;
    const double t_end = sim.now() + fin;
    for (int d = 0; d < N; ++d) { in_done[d] = sim.now(); end_dispatch(d, t_end); }
  });
  for (int a = 0; a < A; ++a)
    L_out[a].arm(out_flows[a], [&, a, fin] { if (!masked) end_dispatch(dev_attn(a), sim.now() + fin); });
  for (int f = 0; f < F; ++f)
    L_in[f].arm(in_flows[f], [&, f, fin] {
      in_done[f] = sim.now();
      if (!masked) end_dispatch(f, sim.now() + fin);
    });
  std::vector<sim::ResourceId> sm_res(size_t(A) * sms);
  for (int a = 0; a < A; ++a)
    for (int s = 0; s < sms; ++s)
      sm_res[size_t(a) * sms + s] = net.add_resource(fmt::format("gpu{}/transport_sm{}", dev_attn(a), s),
                                                     x.h.sm_store_rate);
  const double tser = x.h.token_serial;
  // Count trigger (seed 004 streaming_expand_timing_bound: counts only precede the payload when
  // the payload warps are held back): source a's count store leaves behind the payload it emitted
  // first, share x T x dtok bytes of its egress; its flows are split there, and the FFN's epilogue
  // launch waits for the counts of all its sources (+ one NVLink latency).
  std::vector<double> egress(A, 0.0), count_at(A, 0.0);
  for (int a = 0; a < A; ++a)
    for (int f = 0; f < F; ++f) egress[a] += r.tokens_to[a][f] * dtok;
  std::vector<hw::Join> L_count(A);
  auto L_counts_all = std::make_shared<hw::Join>();
  L_counts_all->arm(A, [&] {
    double t = 0;
    for (int a = 0; a < A; ++a) t = std::max(t, count_at[a]);
    // The count store rides behind the payload part already delivered (its NVLink latency is in
    // that flow's); the role-unaware masked kernel publishes it masked.count_delay later (its
    // notify covers every rank of the domain, not just the FFN ranks).
    for (int f = 0; f < F; ++f) epi_start[f] = t + (masked ? x.h.masked_count_delay : 0.0);
  });
  for (int a = 0; a < A; ++a)
    L_count[a].arm(out_flows[a], [&, a] { count_at[a] = sim.now(); L_counts_all->arrive(); });
  const double share = x.h.count_issue_share;
  for (int a = 0; a < A; ++a) {
    const double q = egress[a] > 0 ? std::min(1.0, share * T * dtok / egress[a]) : 1.0;
    for (int s = 0; s < sms; ++s)
      for (int f = 0; f < F; ++f) {
        const Grp& g = grp[(size_t(a) * sms + s) * F + f];
        if (g.tokens <= 0) continue;
        // The transport SM's stores over the switch into the FFN rank (landing not charged), in two
        // parts around the count store.
        const sim::ResourceId sm = sm_res[size_t(a) * sms + s];
        const double bytes = g.tokens * dtok;
        grp_.remote_store({.writer = dev_attn(a), .dest = f, .bytes = q * bytes, .start_latency = t_first + nvl_lat + tser * g.chain,
                           .name = fmt::format("dispatch a{}->f{} sm{} (before count)", a, f, s),
                           .lane = fmt::format("gpu{}/dispatch_flows", dev_attn(a)), .via = {{sm, 1.0}}, .land = false,
                           .on_done = [&, a, f, s, bytes, q, sm] {
                             L_count[a].arrive();
                             grp_.remote_store({.writer = dev_attn(a), .dest = f, .bytes = (1.0 - q) * bytes,
                                                .name = fmt::format("dispatch a{}->f{} sm{} (after count)", a, f, s),
                                                .lane = fmt::format("gpu{}/dispatch_flows", dev_attn(a)), .via = {{sm, 1.0}},
                                                .land = false, .on_done = [&, a, f] {
                                                  L_out[a].arrive();
                                                  L_in[f].arrive();
                                                  L_disp_all->arrive();
                                                }});
                           }});
      }
  }

  // ---- Attention combine end: every FFN's finish flags (AFD) / the global combine (masked) ----
  const int ffn_with_data = F;  // every FFN rank runs its combine (empty ones only signal)
  L_ffn_comb_end->arm(ffn_with_data, [&] {
    double t = sim.now() + nvl_lat;
    for (int a = 0; a < A; ++a) {
      const int d = dev_attn(a);
      const double t_min = comb_start[d] + x.h.combine_fixed + x.h.combine_finish;
      finish_attention_combine(d, std::max(t, t_min));
    }
  });
  const int masked_comb = F;
  if (masked)
    L_comb_all->arm(masked_comb, [&] {
      const double t_end = sim.now() + x.h.combine_finish + x.h.masked_combine_extra +
                           x.h.masked_per_source * A +
                           (c.grid_sync_exit ? x.h.grid_sync_exit : 0.0);
      for (int d = 0; d < N; ++d) finish_attention_combine(d, std::max(t_end, comb_start[d]));
    });

  sim.run();
  if (auto st = net.stalled(); !st.empty())
    throw std::logic_error("afd model: stalled flow " + st.front());

  // ---- results ----
  double span = 0;
  for (int a = 0; a < A; ++a) span = std::max(span, red_end[dev_attn(a)]);
  const double period = span + x.h.exchange_gap;
  // Attention dispatch kernels start at 0; every rank relaunches its dispatch one exchange gap
  // after its own previous exchange ended (steady state, one period earlier): FFN ranks therefore
  // start waiting before the Attention ranks do.
  for (int a = 0; a < A; ++a) x.kernel(dev_attn(a), "attention", "dispatch_impl", 0.0, disp_end[dev_attn(a)]);
  for (int f = 0; f < F; ++f) {
    const double last = masked ? red_end[f] : comb_end[f];
    const double start = std::min(0.0, last - period + x.h.exchange_gap);
    x.kernel(f, "ffn", "dispatch_impl", start, disp_end[f]);
  }
  std::sort(x.res.kernels.begin(), x.res.kernels.end(), [](const hw::Span& p, const hw::Span& q) {
    return p.device != q.device ? p.device < q.device : p.start_us < q.start_us;
  });
  x.res.span_us = span / kUs;
  x.res.period_us = period / kUs;
  if (c.view == "collect") {
    double collect = 0;
    for (int a = 0; a < A; ++a) collect = std::max(collect, comb_end[dev_attn(a)]);
    x.res.exchange_us = (collect + x.h.collect_offset) / kUs;
  } else {
    x.res.exchange_us = (span + x.h.timer_offset) / kUs;
  }
  x.res.channels = C;
  double tb = 0;
  for (int f = 0; f < F; ++f) tb += in_bytes[f];
  x.res.extra["dispatch_bytes"] = tb;
  x.res.extra["routing_dropped_rows"] = r.dropped_rows;
}

// ======================================== across pods ============================================
// Devices: FFN GPUs 0..F-1 (FFN pod), Attention GPU (s, l) = F + s*P + l. Rail peer of (s, l): FFN l.
void run_pods(Ctx& x) {
  const AfdCase& c = x.c;
  const int A = c.attention_ranks, F = c.ffn_ranks, T = c.tokens;
  const int P = x.hw.topology_int("gpus_per_pod", 4);
  const int S = (A + P - 1) / P;
  const int N = F + A;
  const bool masked = c.path == "masked";
  const int sms = c.transport_sms, C = channels_of(sms);
  const Routing r = route(A, F, T, c.topk, c.experts, c.capacity, c.seed);
  const double tok = combine_row_bytes(c), xtok = double(c.hidden) * c.dtype_bytes,
               dtok = dispatch_token_bytes(c);
  auto& sim = x.sim;
  auto& net = x.net;
  const double gap = x.h.launch_gap, wire = x.h.nic_wire_latency;
  const double nicbw = x.h.nic_payload_bandwidth;
  const double t_db = x.h.nic_doorbell_cost, t_req = x.h.nic_atomic_requester_cost,
               t_resp = x.h.nic_atomic_responder_cost, t_cpl = x.h.nic_completion_cost,
               t_poll = x.h.nic_full_queue_poll;
  const int depth = int(x.h.nic_queue_depth);
  const int qps_per_peer = std::min<int>(int(x.h.nic_qps_per_peer), sms);
  auto dev = [&](int a) { return F + a; };
  auto rail = [&](int a) { return (a % P) % F; };

  // NICs: gpus_per_node / nics_per_node GPUs of a pod share one (1 on H100 HGX: 8 NICs for 8 GPUs,
  // rail-optimised); the NIC is named after the first GPU that uses it. validate() checks the ratio.
  const int gpus_per_nic = nic_sharing(x.hw);
  x.res.extra["gpus_per_nic"] = gpus_per_nic;
  auto nic_of = [&](int g) {
    const int l = g < F ? g : (g - F) % P;  // local index within its pod
    return g - l + (l / gpus_per_nic) * gpus_per_nic;
  };
  // The GPUs' NVLink ports and copy-epilogue HBM from the substrate; the NICs (the pods' own
  // resources: payload per direction, atomic units) and the FFN forwarders are the model's.
  hw::GpuGroup grp_(sim, net, domain_group(x.h, N));
  std::vector<sim::ResourceId> tx(N), rx(N), fwd(F);
  for (int g = 0; g < N; ++g) {
    if (nic_of(g) == g) {
      tx[g] = net.add_resource(fmt::format("nic{}/tx", g), nicbw);
      rx[g] = net.add_resource(fmt::format("nic{}/rx", g), nicbw);
    } else {
      tx[g] = tx[nic_of(g)];
      rx[g] = rx[nic_of(g)];
    }
  }
  for (int f = 0; f < F; ++f) fwd[f] = net.add_resource(fmt::format("gpu{}/forwarder", f), x.h.hybrid_forward_bandwidth);
  std::vector<std::unique_ptr<sim::OpServer>> nic_servers;
  std::vector<sim::OpServer*> req(N), resp(N);
  for (int g = 0; g < N; ++g) {
    if (nic_of(g) != g) { req[g] = req[nic_of(g)]; resp[g] = resp[nic_of(g)]; continue; }
    nic_servers.push_back(std::make_unique<sim::OpServer>(sim, fmt::format("nic{}/requester", g), t_req));
    req[g] = nic_servers.back().get();
    nic_servers.push_back(std::make_unique<sim::OpServer>(sim, fmt::format("nic{}/responder", g), t_resp));
    resp[g] = nic_servers.back().get();
  }
  x.res.nics.resize(N);
  for (int g = 0; g < N; ++g) x.res.nics[g] = {g, g < F ? "ffn" : "attention"};

  // Sources of each FFN GPU's NIC: hybrid = its rail peers; direct = every Attention GPU.
  std::vector<std::vector<int>> srcs(F);
  for (int a = 0; a < A; ++a) {
    if (c.hybrid) srcs[rail(a)].push_back(a);
    else for (int f = 0; f < F; ++f) srcs[f].push_back(a);
  }
  // Channel occupancy per (source, channel): tokens; per (FFN, channel): tokens over its sources.
  // Hybrid: every token of a source rides its channel to the rail peer (which forwards it), so the
  // channel's linked list holds all of them. Direct: each FFN destination has its own list per
  // channel, holding only the tokens that hit it.
  std::vector<std::vector<int>> ch_tokens(A, std::vector<int>(C, 0));
  std::vector<std::vector<int>> ch_tokens_to(c.hybrid ? 0 : size_t(A) * F, std::vector<int>(C, 0));
  for (int a = 0; a < A; ++a)
    for (int t = 0; t < T; ++t) {
      const int ch = channel_of(t, a, A, C, c.rotate_channels);
      ch_tokens[a][ch]++;
      if (!c.hybrid)
        for (int f = 0; f < F; ++f)
          if (r.hits[a][t] >> f & 1) ch_tokens_to[size_t(a) * F + f][ch]++;
    }
  auto pair_channels = [&](int a, int f) -> const std::vector<int>& {
    return c.hybrid ? ch_tokens[a] : ch_tokens_to[size_t(a) * F + f];
  };

  /// Post a group of finish signals from an SM of device `from` to device `to`: the SM pays the
  /// doorbell (+ completion, + poll when the queue pair is full) per post, the requester NIC its
  /// per-op cost, the wire its latency, the responder NIC `resp_ops` atomics. `done` runs when the
  /// responder has served them.
  struct PostCounter { std::vector<long> per_qp; };
  std::vector<std::vector<long>> qp_posts(N, std::vector<long>(size_t(N) * qps_per_peer, 0));
  auto post_group = [&](int from, int to, int sm, int posts, int resp_ops, int inline_ops, bool own_completion,
                        std::function<void()> done) {
    long& on_qp = qp_posts[from][size_t(to) * qps_per_peer + sm % qps_per_peer];
    int polls = 0;
    for (int i = 0; i < posts; ++i) if (++on_qp > depth) ++polls;
    x.res.nics[from].atomics_out += posts - inline_ops;
    x.res.nics[from].inline_writes_out += inline_ops;
    x.res.nics[from].polls += polls;
    x.res.nics[to].atomics_in += resp_ops;
    const double sm_cost = posts * (t_db + (own_completion ? t_cpl : 0.0)) + polls * t_poll;
    sim.after(sm_cost, [&, from, to, posts, resp_ops, done] {
      req[from]->submit_cost(posts * t_req, [&, to, resp_ops, done] {
        sim.after(wire, [&, to, resp_ops, done] {
          if (resp_ops == 0) { done(); return; }
          resp[to]->submit_cost(resp_ops * t_resp, done, fmt::format("{} finish atomics", resp_ops));
        });
      }, fmt::format("{} posts", posts));
    });
  };

  std::vector<double> disp_end(N, 0), epi_end(N, 0), comb_start(N, 0), comb_end(N, 0), done_end(N, 0);
  std::vector<hw::Join> L_ffn_disp(F), L_attn_disp(A), L_ffn_comb(F), L_attn_comb(A), L_fwd_in(F);
  std::vector<hw::Join> L_ffn_exit(F);

  // ------------------------------------------------------------------ combine ----
  auto attn_combine_done = [&](int a) {
    const int d = dev(a);
    comb_end[d] = sim.now() + x.h.combine_finish;
    x.kernel(d, "attention", "hybrid_combine", comb_start[d], comb_end[d]);
    for (int f = 0; f < F; ++f) L_ffn_exit[f].arrive();
  };
  auto ffn_combine = [&](int f) {
    comb_start[f] = sim.now();
    const double t0 = x.h.hybrid_combine_fixed;
    // Serial per-source chain (AFD.md): the expert warp sends up to 4S rows, then S reduce+put steps.
    int max_pairs = 0;
    {
      std::vector<int> pairs(C, 0);
      for (int a = 0; a < A; ++a)
        for (int t = 0; t < T; ++t)
          if (r.hits[a][t] >> f & 1) max_pairs = std::max(max_pairs, ++pairs[channel_of(t, a, A, C, c.rotate_channels)]);
    }
    const int nsrc = int(srcs[f].size());
    const double chain = max_pairs * x.h.hybrid_combine_row_serial +
                         (c.hybrid ? nsrc * x.h.hybrid_reduce_put_per_source : 0.0);
    // Payload: the reduced rows back to every source (over its rail forwarder in hybrid).
    std::vector<std::pair<int, double>> flows;  // (source, bytes)
    for (int a : srcs[f]) {
      const double b = c.hybrid ? double(T) * tok : r.tokens_to[a][f] * tok;
      if (b > 0) flows.push_back({a, b});
    }
    const int nfl = int(flows.size());
    L_ffn_comb[f].arm(nfl + 1, [&, f] {
      // Finish atomics: one per (channel, source), C*S per FFN NIC (AFD.md); each with its own
      // WQE, doorbell and completion. What-ifs: skip empty channels / inline data-less finishes.
      auto L_post = std::make_shared<hw::Join>();
      int groups = 0;
      std::vector<std::tuple<int, int, int, int, int>> todo;  // a, sm, posts, resp_ops, inline
      for (int a : srcs[f]) {
        for (int s = 0; s < sms; ++s) {
          const auto [posts, dataless] = sm_finish_posts(pair_channels(a, f), s, c.skip_empty_finish);
          if (posts == 0) continue;
          const int inl = c.inline_finish ? dataless : 0;
          // The Attention NIC sees C*F in (AFD.md): every channel's finish counts once per FFN rank.
          const int rops = (posts - inl) * (c.hybrid ? F : 1);
          todo.emplace_back(a, s, posts, rops, inl);
          ++groups;
        }
      }
      L_post->arm(groups, [&, f] {
        comb_end[f] = sim.now() + x.h.combine_finish;
        x.kernel(f, "ffn", "hybrid_combine", comb_start[f], comb_end[f]);
        sim.at(comb_end[f] + gap, [&, f] {
          const double t1 = sim.now();
          L_ffn_exit[f].arm(A, [&, f, t1] {
            const double e = std::max(sim.now() + wire, t1) +
                             x.h.hybrid_exit_per_source * double(A);
            done_end[f] = e;
            x.kernel(f, "ffn", "afdep_ffn_complete", t1, e);
          });
        });
        for (int a : srcs[f]) L_attn_comb[a].arrive();
      });
      for (auto& [a, s, posts, rops, inl] : todo)
        post_group(f, dev(a), s, posts, rops, inl, true, [L_post] { L_post->arrive(); });
    });
    sim.after(t0 + chain, [&, f] { L_ffn_comb[f].arrive(); });
    for (auto& [a, b] : flows) {
      sim::FlowSpec fs;
      fs.name = fmt::format("combine f{}->a{}", f, a);
      fs.bytes = b;
      fs.path = {{tx[f], 1.0}, {rx[dev(a)], 1.0}};
      if (c.hybrid) fs.path.push_back({fwd[f], 1.0});
      fs.start_latency = t0 + wire;
      fs.lane = fmt::format("nic{}/payload", f);
      x.res.nics[f].payload_writes += 1;
      fs.on_done = [&, f, a = a] { L_ffn_comb[f].arrive(); L_attn_comb[a].arrive(); };
      net.start(std::move(fs));
    }
  };
  // Attention combine ends when its payload arrived and every FFN source's finishes were served.
  for (int a = 0; a < A; ++a) {
    int need = 0;
    for (int f = 0; f < F; ++f)
      for (int s : srcs[f]) if (s == a) need += 1 + ((c.hybrid ? double(T) * tok : r.tokens_to[a][f] * tok) > 0);
    L_attn_comb[a].arm(need, [&, a] { attn_combine_done(a); });
  }

  // ------------------------------------------------------------------ epilogue ----
  auto ffn_epilogue = [&](int f) {
    const double t0 = sim.now();
    double bytes = 0;
    for (int a = 0; a < A; ++a) bytes += r.tokens_to[a][f] * dtok + r.rows_to[a][f] * xtok;
    grp_.stream({.rank = f, .name = fmt::format("expand gpu{}", f), .bytes = bytes, .start_latency = x.h.epilogue_fixed,
                 .on_done = [&, f, t0] {
                   epi_end[f] = sim.now();
                   x.kernel(f, "ffn", "dispatch_copy_epilogue", t0, sim.now());
                   sim.after(gap, [&, f] { ffn_combine(f); });
                 }});
  };

  // ------------------------------------------------------------------ dispatch ----
  const double t_disp = x.h.hybrid_dispatch_fixed + (c.hybrid ? 0.0 : x.h.hybrid_direct_fixed) +
                        (masked && c.hybrid ? x.h.hybrid_masked_extra + x.h.hybrid_masked_per_source * S : 0.0);
  // FFN f's dispatch ends when (i) all C*S finish atomics of its sources were served, (ii) the
  // serial forwarding of the tokens on its busiest channel is done and (iii) every payload byte
  // addressed to it (RDMA + NVLink forward) arrived.
  std::vector<int> fwd_chain(F, 0);
  for (int f = 0; f < F; ++f) {
    std::vector<int> per(C, 0);
    for (int a : srcs[f])
      for (int ch = 0; ch < C; ++ch) fwd_chain[f] = std::max(fwd_chain[f], per[ch] += ch_tokens[a][ch]);
  }
  std::vector<int> ffn_in_flows(F, 0), atomics_groups(F, 0);
  struct DFlow { int a, g; double bytes, ib_weight; };
  std::vector<DFlow> dflows;
  for (int a = 0; a < A; ++a) {
    double sum = 0;
    for (int g = 0; g < F; ++g) sum += r.tokens_to[a][g] * dtok;
    const double ib_once = double(T) * dtok;  // hybrid: each token crosses IB once per FFN node
    for (int g = 0; g < F; ++g) {
      const double b = r.tokens_to[a][g] * dtok;
      if (b <= 0) continue;
      dflows.push_back({a, g, b, c.hybrid ? ib_once / sum : 1.0});
      ffn_in_flows[g]++;
    }
  }
  std::vector<double> atomics_done(F, 0);
  std::vector<hw::Join> L_atomics(F);
  for (int g = 0; g < F; ++g) {
    // forwarders feeding g: every rail FFN in hybrid (their chains), itself in direct mode.
    const int fw = c.hybrid ? F : 0;
    L_ffn_disp[g].arm(ffn_in_flows[g] + fw + (c.hybrid ? 0 : 1), [&, g] {
      disp_end[g] = sim.now() + x.h.dispatch_finish;
      x.kernel(g, "ffn", "hybrid_dispatch", 0.0, disp_end[g]);
      sim.at(disp_end[g] + gap, [&, g] { ffn_epilogue(g); });
    });
  }
  for (int f = 0; f < F; ++f) {
    int groups = 0;
    for (int a : srcs[f]) for (int s = 0; s < sms; ++s) (void)a, (void)s, ++groups;
    L_atomics[f].arm(groups, [&, f] {
      atomics_done[f] = sim.now();
      if (c.hybrid) {
        const double chain = fwd_chain[f] * x.h.hybrid_forward_per_token;
        sim.after(chain, [&] { for (int g = 0; g < F; ++g) L_ffn_disp[g].arrive(); });
      } else {
        L_ffn_disp[f].arrive();
      }
    });
  }
  // Attention side: payload flows, then finish atomics per SM group.
  for (int a = 0; a < A; ++a) {
    int nfl = 0;
    for (auto& d : dflows) nfl += d.a == a;
    L_attn_disp[a].arm(nfl, [&, a] {
      // Finish atomics: one per (channel, FFN rank): C*F posts at the Attention NIC (AFD.md); the
      // rail FFN NIC serves one per (channel, source): C*S at each FFN NIC.
      auto L_post = std::make_shared<hw::Join>();
      std::vector<std::tuple<int, int, int, int, int>> todo;  // to, sm, posts, resp_ops, inline
      for (int f = 0; f < F; ++f) {
        bool is_src = false;
        for (int s : srcs[f]) is_src |= s == a;
        if (!is_src) continue;
        for (int s = 0; s < sms; ++s) {
          const auto [posts, dataless] = sm_finish_posts(pair_channels(a, f), s, c.skip_empty_finish);
          const int inl = c.inline_finish ? dataless : 0;
          const int rops = posts - inl;
          const int nposts = posts * (c.hybrid ? F : 1);
          todo.emplace_back(f, s, nposts, rops, inl * (c.hybrid ? F : 1));
        }
      }
      L_post->arm(int(todo.size()), [&, a] {
        disp_end[dev(a)] = sim.now() + x.h.dispatch_finish;
        x.kernel(dev(a), "attention", "hybrid_dispatch", 0.0, disp_end[dev(a)]);
        sim.at(disp_end[dev(a)] + gap, [&, a] { comb_start[dev(a)] = sim.now(); });
      });
      for (auto& [f, s, nposts, rops, inl] : todo)
        post_group(dev(a), f, s, nposts, rops, inl, false, [&, L_post, f = f] {
          L_atomics[f].arrive();
          L_post->arrive();
        });
    });
  }
  for (auto& d : dflows) {
    sim::FlowSpec fs;
    fs.name = fmt::format("dispatch a{}->f{}", d.a, d.g);
    fs.bytes = d.bytes;
    const int rf = c.hybrid ? rail(d.a) : d.g;
    fs.path = {{tx[dev(d.a)], d.ib_weight}, {rx[rf], d.ib_weight}};
    if (c.hybrid) {
      fs.path.push_back({fwd[rf], 1.0});
      if (rf != d.g)  // the rail FFN forwards over NVLink: its port out, the destination's port in
        for (const auto& h : grp_.route(rf, d.g)) fs.path.push_back(h);
    }
    fs.start_latency = t_disp + wire;
    fs.lane = fmt::format("nic{}/payload", dev(d.a));
    x.res.nics[dev(d.a)].payload_writes += 1;
    fs.on_done = [&, a = d.a, g = d.g] { L_attn_disp[a].arrive(); L_ffn_disp[g].arrive(); };
    net.start(std::move(fs));
  }

  sim.run();
  if (auto st = net.stalled(); !st.empty()) throw std::logic_error("afd model: stalled flow " + st.front());
  double span = 0, ffn_span = 0;
  for (int a = 0; a < A; ++a) span = std::max(span, comb_end[dev(a)]);
  for (int f = 0; f < F; ++f) ffn_span = std::max(ffn_span, done_end[f]);
  std::sort(x.res.kernels.begin(), x.res.kernels.end(), [](const hw::Span& p, const hw::Span& q) {
    return p.device != q.device ? p.device < q.device : p.start_us < q.start_us;
  });
  // Steady state: the next exchange cannot start before the FFN pod's exit barrier completes.
  const double cycle = std::max(span, ffn_span);
  x.res.span_us = span / kUs;
  x.res.period_us = (cycle + x.h.exchange_gap) / kUs;
  x.res.exchange_us = (cycle + x.h.timer_offset) / kUs;
  x.res.channels = C;
  x.res.cross_node = true;
  x.res.extra["sources_per_ffn_nic"] = double(srcs[0].size());
  x.res.extra["attention_domains"] = S;
  x.res.extra["routing_dropped_rows"] = r.dropped_rows;
}

}  // namespace

bool AfdCase::was_given(const std::string& key) const {
  return std::find(given.begin(), given.end(), key) != given.end();
}

bool has_nic_path(const hw::Hardware& hw) { return hw.topology_kind() == "pods"; }

std::vector<std::string> hardware_keys(const hw::Hardware& hw) {
  std::vector<std::string> keys;
  for (const auto& r : afd_hardware(hw).reads())
    if (r.required()) keys.push_back(r.decl.key);
  return keys;
}

int gpus_per_nic(const hw::Hardware& hw) { return nic_sharing(hw); }

std::vector<std::string> missing_hardware_keys(const hw::Hardware& hw) {
  std::vector<std::string> missing;
  for (const auto& k : hardware_keys(hw))
    if (!hw.has(k)) missing.push_back(k);
  return missing;
}

void validate(const AfdCase& c, const hw::Hardware& hw) {
  {
    const auto missing = missing_hardware_keys(hw);
    if (!missing.empty())
      throw std::invalid_argument(fmt::format(
          "hardware '{}' lacks {} parameter(s) the afd model reads on a {} topology: {}{} (is this an AFD hardware file, "
          "e.g. hw/h200-4gpu-nvlink.yaml or hw/h100-ib-pods.yaml?)",
          hw.name(), missing.size(), hw.topology_kind(), fmt::join(missing.begin(), missing.begin() + std::min<size_t>(missing.size(), 8), ", "),
          missing.size() > 8 ? fmt::format(" and {} more", missing.size() - 8) : ""));
  }
  // Every message quotes the key first; the error carries it (models::ParamError), so the scenario
  // runner points at that key's line.
  auto bad = [](const std::string& k, const std::string& m) { throw models::ParamError(k, fmt::format("afd case: '{}' {}", k, m)); };
  if (c.path != "afd" && c.path != "afd_shared" && c.path != "masked")
    bad("path", "must be afd, afd_shared or masked, got '" + c.path + "'");
  if (c.view != "span" && c.view != "collect") bad("view", "must be span or collect, got '" + c.view + "'");
  if (c.attention_ranks < 1) bad("attention_ranks", fmt::format("must be >= 1, got {}", c.attention_ranks));
  if (c.ffn_ranks < 1) bad("ffn_ranks", fmt::format("must be >= 1, got {}", c.ffn_ranks));
  if (c.ffn_ranks > 32) bad("ffn_ranks", fmt::format("must be <= 32 (routing keeps a 32-bit mask of FFN ranks), got {}", c.ffn_ranks));
  // The split must fit the hardware: one NVLink domain, or (pods) the FFN ranks one pod.
  const bool pods = hw.topology_kind() == "pods";
  const int domain = pods ? hw.topology_int("gpus_per_pod", 4) : hw.gpus();
  if (pods && c.ffn_ranks > domain) bad("ffn_ranks", fmt::format("must fit one pod of {} GPUs, got {}", domain, c.ffn_ranks));
  if (pods && c.hybrid && c.ffn_ranks != domain)
    bad("ffn_ranks", fmt::format("must be {} (one FFN GPU per rail of a {}-GPU pod) with 'hybrid': rail-matched forwarding sends "
                                 "Attention local rank l's traffic to FFN GPU l; got {} (use hybrid: false for direct sends)",
                                 domain, domain, c.ffn_ranks));
  if (pods) nic_sharing(hw);
  if (c.attention_ranks + c.ffn_ranks > hw.gpus())
    bad("attention_ranks", fmt::format("+ 'ffn_ranks' = {} exceeds the {} GPUs of {}", c.attention_ranks + c.ffn_ranks, hw.gpus(), hw.name()));
  if (c.tokens < 1 || c.tokens > kMaxTokens)
    bad("tokens", fmt::format("must be in 1..{} (tokens per Attention rank), got {}", kMaxTokens, c.tokens));
  const int sm = int(afd_hardware(hw).read(hw).compute_units);
  if (c.transport_sms < 1 || c.transport_sms > sm) bad("transport_sms", fmt::format("must be in 1..{}, got {}", sm, c.transport_sms));
  if (c.combine_sms < 0 || c.combine_sms > sm) bad("combine_sms", fmt::format("must be in 0..{}, got {}", sm, c.combine_sms));
  if (c.ffn_combine_sms < 0 || c.ffn_combine_sms > sm)
    bad("ffn_combine_sms", fmt::format("must be in 0..{}, got {}", sm, c.ffn_combine_sms));
  if (c.hidden < 1) bad("hidden", fmt::format("must be >= 1, got {}", c.hidden));
  if (c.dtype_bytes < 1) bad("payload", fmt::format("must have >= 1 byte per element, got {}", c.dtype_bytes));
  // An fp8 dispatch carries one fp32 scale per 128 elements (DeepEP's fp8 layout): whole groups only.
  if (c.dtype_bytes == 1 && c.hidden % 128)
    bad("hidden", fmt::format("must be a multiple of 128 with the fp8 payload (one fp32 scale per 128 elements), got {}", c.hidden));
  if (c.capacity < 1) bad("capacity", fmt::format("must be >= 1, got {}", c.capacity));
  if (c.experts < 1 || c.experts > 65536) bad("experts", fmt::format("must be in 1..65536, got {}", c.experts));
  if (c.topk < 1 || c.topk > c.experts) bad("topk", fmt::format("must be in 1..'experts' ({}), got {}", c.experts, c.topk));
  // Routing draws topk experts for every token of every Attention rank: at most kMaxRoutedRows
  // draws (2^26: 8 ranks x 2^20 tokens x top-8; the largest scenario routes 12 x 16384 x 8 = 1.6e6).
  // 1048576 tokens at top-65535 asked for 6.9e10 draws and ran for minutes past any event budget.
  if (int64_t(c.attention_ranks) * c.tokens * c.topk > kMaxRoutedRows)
    bad("topk", fmt::format("x 'tokens' x 'attention_ranks' = {} x {} x {} = {} expert draws, more than the {} this model routes",
                            c.topk, c.tokens, c.attention_ranks, int64_t(c.attention_ranks) * c.tokens * c.topk, kMaxRoutedRows));
  if (c.experts % c.ffn_ranks)
    bad("experts", fmt::format("({}) must be a multiple of 'ffn_ranks' ({})", c.experts, c.ffn_ranks));
  // InfiniBand-only switches: the NVLink-domain model (run_nvlink) reads none of them, so on
  // hardware without a NIC they would be accepted and change nothing.
  if (!has_nic_path(hw)) {
    const bool set[] = {c.was_given("hybrid") || !c.hybrid, c.was_given("skip_empty_finish") || c.skip_empty_finish,
                        c.was_given("inline_finish") || c.inline_finish};
    const char* keys[] = {"hybrid", "skip_empty_finish", "inline_finish"};
    for (int i = 0; i < 3; ++i)
      if (set[i])
        bad(keys[i], fmt::format("applies to the InfiniBand path (hardware with a NIC, topology kind pods); {} has none "
                                 "(topology {}, the NVLink-domain model ignores it)",
                                 hw.name(), hw.topology_kind()));
  } else {
    // ... and the reverse: these are read by the NVLink-domain model only (run_nvlink).
    for (const char* k : {"view", "combine_sms", "ffn_combine_sms", "grid_sync_exit"})
      if (c.was_given(k))
        bad(k, fmt::format("applies to the NVLink-domain model only; {} is InfiniBand pods (topology {}), whose model "
                           "ignores it", hw.name(), hw.topology_kind()));
  }
}

AfdResult simulate_afd(const hw::Hardware& hw, const AfdCase& c, sim::TraceSink* trace) {
  validate(c, hw);
  Ctx x(hw, c, trace);
  if (hw.topology_kind() == "pods") run_pods(x);
  else run_nvlink(x);
  if (const auto it = x.res.extra.find("routing_dropped_rows"); it != x.res.extra.end() && it->second > 0) {
    const long routed = long(c.attention_ranks) * c.tokens * c.topk;
    x.res.note = fmt::format(
        "routing dropped {} of {} rows ({} Attention ranks x {} tokens x top-{}) over capacity {} (rows per expert "
        "per Attention rank); dropped rows are not sent",
        long(it->second), routed, c.attention_ranks, c.tokens, c.topk, c.capacity);
  }
  if (c.path == "afd_shared") {
    // Named by the issue's case parameters, but neither seed 004 nor AFD.md describes or measures a
    // distinct "afd_shared" path: it runs the afd path, and says so.
    const std::string n = "path afd_shared runs as afd: no measurement or description of a distinct shared path exists "
                          "in seed 004 or AFD.md to model it from";
    x.res.note = x.res.note.empty() ? n : x.res.note + "; " + n;
  }
  if (trace) {
    for (const auto& k : x.res.kernels)
      trace->slice(fmt::format("gpu{}/kernels", k.device), k.name, k.start_us * kUs, k.end_us * kUs,
                   {{"role", k.role}});
  }
  return x.res;
}

}  // namespace fusesim::afd
