// fusesim trace: replay on sim::Simulation and what-if transformations.
#include "calibrate/trace/whatif.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/simulation.hpp"

namespace fusesim::trace {

CollectiveScale parse_collective_scale(const std::string& text) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw std::invalid_argument(fmt::format("--scale-collective '{}': expected REGEX=FACTOR", text));
  CollectiveScale s;
  s.pattern = text.substr(0, eq);
  try {
    size_t used = 0;
    s.factor = std::stod(text.substr(eq + 1), &used);
    if (used != text.size() - eq - 1) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("--scale-collective '{}': FACTOR '{}' is not a number", text, text.substr(eq + 1)));
  }
  if (!(s.factor > 0) || !std::isfinite(s.factor))
    throw std::invalid_argument(fmt::format("--scale-collective '{}': FACTOR must be > 0", text));
  return s;
}

ReplayGraph infer_replay_graph(const RankTimeline& tl, const std::vector<uint32_t>& ops, double epsilon_us) {
  ReplayGraph g;
  // A GPU event whose launch call had returned before its stream went idle was already queued:
  // the gap in front of it is a GPU-side delay, not the host being late.
  auto queued_before = [&tl](const TimelineOp& op, double stream_idle_from_us) {
    if (!op.launched()) return false;
    const auto& rc = tl.file->runtime_calls[static_cast<size_t>(op.launch_call)];
    return rc.start_us + rc.dur_us <= stream_idle_from_us;
  };
  std::vector<uint32_t> order(ops);
  std::sort(order.begin(), order.end());  // timeline ops are already in start order
  if (order.empty()) return g;
  const auto& file = *tl.file;
  double t0 = file.gpu_ops[tl.ops[order.front()].gpu].start_us;
  double last_end = t0;
  // Per stream: node indices in order, and their ends (non-decreasing for a well-formed stream).
  std::map<int, std::vector<int>> nodes_of_stream;
  std::map<int, std::vector<double>> ends_of_stream;
  g.nodes.reserve(order.size());
  for (uint32_t oi : order) {
    const auto& gop = file.gpu_ops[tl.ops[oi].gpu];
    ReplayGraph::Node n;
    n.op = oi;
    n.dur_us = gop.dur_us;
    n.stream = gop.stream;
    n.measured_start_us = gop.start_us - t0;
    double start = gop.start_us;
    auto& own = nodes_of_stream[gop.stream];
    double pred_end = own.empty() ? -1e300 : ends_of_stream[gop.stream].back();
    // Latest end on another stream within [start - eps, start + eps]: a possible cross-stream wait.
    int best = -1;
    double best_end = -1e300;
    for (const auto& [stream, ends] : ends_of_stream) {
      if (stream == gop.stream || ends.empty()) continue;
      auto it = std::upper_bound(ends.begin(), ends.end(), start + epsilon_us);
      if (it == ends.begin()) continue;
      --it;
      if (*it < start - epsilon_us || *it <= best_end) continue;
      best_end = *it;
      best = nodes_of_stream[stream][static_cast<size_t>(it - ends.begin())];
    }
    bool chained = !own.empty() && start - pred_end <= epsilon_us;
    if (best >= 0 && (!chained || best_end > pred_end)) {
      n.bind = ReplayGraph::Bind::dep;
      n.bind_dep = best;
      n.deps.push_back(best);
      n.lag_us = std::max(0.0, start - best_end);
    } else if (chained || (!own.empty() && queued_before(tl.ops[oi], pred_end))) {
      n.bind = ReplayGraph::Bind::stream_pred;
      n.lag_us = std::max(0.0, start - pred_end);
    } else {
      n.bind = ReplayGraph::Bind::release;
      n.release_us = start - t0;
    }
    int idx = static_cast<int>(g.nodes.size());
    own.push_back(idx);
    // Keep ends sorted for the binary search even if the trace has overlapping events on a stream.
    auto& ends = ends_of_stream[gop.stream];
    ends.push_back(std::max(gop.end_us(), ends.empty() ? -1e300 : ends.back()));
    last_end = std::max(last_end, gop.end_us());
    g.nodes.push_back(std::move(n));
  }
  g.measured_span_us = last_end - t0;
  return g;
}

double replay_span_us(const ReplayGraph& g) {
  const size_t n = g.nodes.size();
  if (n == 0) return 0;
  std::vector<int> stream_pred(n, -1);
  {
    std::unordered_map<int, int> last;
    for (size_t i = 0; i < n; ++i) {
      auto it = last.find(g.nodes[i].stream);
      if (it != last.end()) stream_pred[i] = it->second;
      last[g.nodes[i].stream] = static_cast<int>(i);
    }
  }
  std::vector<std::vector<int>> dependents(n);
  std::vector<int> waiting(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (stream_pred[i] >= 0) {
      dependents[static_cast<size_t>(stream_pred[i])].push_back(static_cast<int>(i));
      waiting[i]++;
    }
    for (int d : g.nodes[i].deps) {
      if (d < 0 || static_cast<size_t>(d) >= n) throw std::logic_error("replay: dependency out of range");
      dependents[static_cast<size_t>(d)].push_back(static_cast<int>(i));
      waiting[i]++;
    }
  }
  std::vector<double> end_s(n, std::numeric_limits<double>::quiet_NaN());
  size_t done = 0;
  sim::Simulation sim;
  constexpr double kUs = 1e-6;

  std::function<void(size_t)> launch = [&](size_t i) {
    const auto& nd = g.nodes[i];
    double ready = sim.now();
    if (stream_pred[i] >= 0) ready = std::max(ready, end_s[static_cast<size_t>(stream_pred[i])]);
    for (int d : nd.deps) ready = std::max(ready, end_s[static_cast<size_t>(d)]);
    switch (nd.bind) {
      case ReplayGraph::Bind::stream_pred:
        if (stream_pred[i] >= 0) ready = std::max(ready, end_s[static_cast<size_t>(stream_pred[i])] + nd.lag_us * kUs);
        break;
      case ReplayGraph::Bind::dep:
        ready = std::max(ready, end_s[static_cast<size_t>(nd.bind_dep)] + nd.lag_us * kUs);
        break;
      case ReplayGraph::Bind::release:
        ready = std::max(ready, nd.release_us * kUs);
        break;
    }
    sim.at(ready, [&, i] {
      sim.after(g.nodes[i].dur_us * kUs, [&, i] {
        end_s[i] = sim.now();
        ++done;
        for (int d : dependents[i])
          if (--waiting[static_cast<size_t>(d)] == 0) launch(static_cast<size_t>(d));
      });
    });
  };
  for (size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) launch(i);
  sim.run();
  if (done != n) throw std::logic_error(fmt::format("replay: {} of {} GPU events could never start (dependency cycle)", n - done, n));
  double span = 0;
  for (double e : end_s) span = std::max(span, e);
  return span / kUs;
}

WhatIfChanges apply_whatif(ReplayGraph& g, const RankTimeline& tl, const WhatIfOptions& opt, int world_size) {
  WhatIfChanges ch;
  const auto& file = *tl.file;
  const size_t n = g.nodes.size();
  auto name_of = [&](const ReplayGraph::Node& nd) -> const std::string& {
    return file.strings.str(file.gpu_ops[tl.ops[nd.op].gpu].name);
  };
  auto is_comm = [&](const ReplayGraph::Node& nd) { return tl.cls(tl.ops[nd.op]) == OpClass::communication; };

  // 1. Rescale collectives.
  for (const auto& sc : opt.scale) {
    std::regex re;
    try {
      re = std::regex(sc.pattern, std::regex::ECMAScript | std::regex::icase);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument(fmt::format("--scale-collective: invalid regex '{}': {}", sc.pattern, e.what()));
    }
    std::unordered_map<uint32_t, bool> match;
    for (auto& nd : g.nodes) {
      uint32_t nm = file.gpu_ops[tl.ops[nd.op].gpu].name;
      auto it = match.find(nm);
      if (it == match.end()) it = match.emplace(nm, std::regex_search(name_of(nd), re)).first;
      if (it->second) {
        nd.dur_us *= sc.factor;
        ch.scaled++;
      }
    }
  }

  // 2. Fuse GEMM + the all-reduce that follows it on its stream.
  if (opt.fuse_gemm_ar) {
    if (!opt.gemm_ar_predictor) throw std::runtime_error("--fuse-gemm-ar needs a GEMM+all-reduce predictor");
    std::regex ar;
    try {
      ar = std::regex(opt.allreduce_regex, std::regex::ECMAScript | std::regex::icase);
    } catch (const std::regex_error& e) {
      throw std::invalid_argument(fmt::format("--allreduce-regex: invalid regex '{}': {}", opt.allreduce_regex, e.what()));
    }
    int gemm_cat = tl.table->find("gemm");
    std::unordered_map<int, int> prev_on_stream;
    std::vector<int> prev(n, -1);
    for (size_t i = 0; i < n; ++i) {
      auto it = prev_on_stream.find(g.nodes[i].stream);
      if (it != prev_on_stream.end()) prev[i] = it->second;
      prev_on_stream[g.nodes[i].stream] = static_cast<int>(i);
    }
    std::unordered_map<int32_t, std::vector<int>> nodes_of_gemm_op;
    for (size_t i = 0; i < n; ++i) {
      const auto& op = tl.ops[g.nodes[i].op];
      if (op.gemm_op >= 0) nodes_of_gemm_op[op.gemm_op].push_back(static_cast<int>(i));
    }
    for (size_t i = 0; i < n; ++i) {
      auto& c = g.nodes[i];
      if (!is_comm(c) || !std::regex_search(name_of(c), ar) || prev[i] < 0) continue;
      const auto& p = tl.ops[g.nodes[static_cast<size_t>(prev[i])].op];
      if (p.category != gemm_cat) continue;
      if (p.shape < 0) {
        ch.fuse_skipped_no_shape++;
        continue;
      }
      const auto& s = tl.shapes[static_cast<size_t>(p.shape)];
      double t = opt.gemm_ar_predictor(s.m * s.batch, s.n, s.k, world_size);
      if (!(t >= 0) || !std::isfinite(t))
        throw std::runtime_error(fmt::format("GEMM+all-reduce predictor returned {} us for {}x{}x{}", t, s.m, s.n, s.k));
      auto& members = nodes_of_gemm_op[p.gemm_op];
      bool first = true;
      for (int m : members) {
        g.nodes[static_cast<size_t>(m)].dur_us = first ? t : 0.0;
        first = false;
      }
      c.dur_us = 0;
      c.lag_us = 0;
      ch.fused++;
    }
  }

  // 3. Communication on its own stream, depending only on its producers.
  if (opt.comm_stream) {
    int comm_stream = std::numeric_limits<int>::min() + 7;  // a stream id no trace uses
    std::unordered_map<int, int> last_compute;  // original stream -> last non-comm node
    std::vector<std::pair<int, int>> pending_consumers;  // (comm node, original stream)
    std::unordered_map<int, std::vector<std::pair<int, int>>> waiting_comm;  // stream -> (comm, remaining)
    for (size_t i = 0; i < n; ++i) {
      auto& nd = g.nodes[i];
      int stream = nd.stream;
      if (is_comm(nd)) {
        auto it = last_compute.find(stream);
        int producer = it == last_compute.end() ? -1 : it->second;
        if (nd.bind == ReplayGraph::Bind::stream_pred) {
          if (producer >= 0) {
            nd.bind = ReplayGraph::Bind::dep;
            nd.bind_dep = producer;
          } else {
            nd.bind = ReplayGraph::Bind::release;
            nd.release_us = nd.measured_start_us;
          }
        }
        if (producer >= 0 && std::find(nd.deps.begin(), nd.deps.end(), producer) == nd.deps.end())
          nd.deps.push_back(producer);
        nd.stream = comm_stream;
        ch.comm_moved++;
        if (opt.comm_consumer_after > 0) waiting_comm[stream].push_back({static_cast<int>(i), opt.comm_consumer_after});
      } else {
        last_compute[stream] = static_cast<int>(i);
        auto wit = waiting_comm.find(stream);
        if (wit != waiting_comm.end()) {
          auto& lst = wit->second;
          for (auto& [c, left] : lst) {
            if (--left == 0) {
              nd.deps.push_back(c);
              ch.consumers_added++;
            }
          }
          lst.erase(std::remove_if(lst.begin(), lst.end(), [](const auto& p) { return p.second <= 0; }), lst.end());
        }
      }
    }
  }
  return ch;
}

namespace {
std::vector<std::string> selected_phases(const std::string& window) {
  if (window == "all") return {};
  if (window == "prefill" || window == "decode") return {window};
  throw std::invalid_argument(fmt::format("--window must be prefill, decode or all, not \"{}\"", window));
}
}  // namespace

WhatIfReport whatif(const std::vector<TraceFile>& files, const CategoryTable& table,
                    const AnalyzeOptions& aopt, const WhatIfOptions& opt, const std::string& path) {
  auto phases = selected_phases(opt.window);
  WhatIfReport rep;
  rep.path = path;
  rep.options = opt;
  rep.world_size = opt.world_size;
  if (rep.world_size <= 0) {
    rep.world_size = static_cast<int>(files.size());
    for (const auto& f : files) rep.world_size = std::max(rep.world_size, f.world_size);
  }
  if (opt.fuse_gemm_ar && rep.world_size < 2)
    throw std::invalid_argument(fmt::format(
        "--fuse-gemm-ar: {} gives a world size of {} (its rank count and distributedInfo), so the all-reduce's rank count is unknown; "
        "pass --world-size N (the ranks of the all-reduce this trace's rank took part in: 2, 4 or 8)",
        path, rep.world_size));
  std::map<std::string, size_t> row_of;
  const size_t nranks = files.size();
  for (size_t r = 0; r < nranks; ++r) {
    RankTimeline tl = build_timeline(files[r], table, aopt);
    std::vector<std::vector<uint32_t>> groups;
    std::vector<const Window*> wins;
    Window whole{"all", Phase::unknown};
    if (phases.empty()) {
      groups.emplace_back(tl.ops.size());
      for (uint32_t i = 0; i < tl.ops.size(); ++i) groups.back()[i] = i;
      wins.push_back(&whole);
    } else {
      auto per = ops_by_window(tl);
      for (size_t w = 0; w < tl.windows.size(); ++w) {
        if (to_string(tl.windows[w].phase) != phases[0] || per[w].empty()) continue;
        groups.push_back(std::move(per[w]));
        wins.push_back(&tl.windows[w]);
      }
    }
    for (size_t k = 0; k < groups.size(); ++k) {
      ReplayGraph g = infer_replay_graph(tl, groups[k], opt.epsilon_us);
      double base = replay_span_us(g);
      double comm = 0;
      for (const auto& nd : g.nodes)
        if (tl.cls(tl.ops[nd.op]) == OpClass::communication) comm += nd.dur_us;
      auto ch = apply_whatif(g, tl, opt, rep.world_size);
      double changed = replay_span_us(g);
      rep.changes.comm_moved += ch.comm_moved;
      rep.changes.consumers_added += ch.consumers_added;
      rep.changes.scaled += ch.scaled;
      rep.changes.fused += ch.fused;
      rep.changes.fuse_skipped_no_shape += ch.fuse_skipped_no_shape;
      const std::string& wname = wins[k]->name;
      auto it = row_of.find(wname);
      if (it == row_of.end()) {
        it = row_of.emplace(wname, rep.windows.size()).first;
        WhatIfWindowRow row;
        row.window = wname;
        row.phase = phases.empty() ? "all" : to_string(wins[k]->phase);
        row.measured_by_rank.assign(nranks, 0);
        row.replay_by_rank.assign(nranks, 0);
        row.whatif_by_rank.assign(nranks, 0);
        rep.windows.push_back(row);
      }
      auto& row = rep.windows[it->second];
      row.measured_by_rank[r] = g.measured_span_us;
      row.replay_by_rank[r] = base;
      row.whatif_by_rank[r] = changed;
      row.measured_us = std::max(row.measured_us, g.measured_span_us);
      row.replay_us = std::max(row.replay_us, base);
      row.whatif_us = std::max(row.whatif_us, changed);
      rep.comm_us = std::max(rep.comm_us, comm);
    }
  }
  for (const auto& row : rep.windows) {
    rep.measured_us += row.measured_us;
    rep.replay_us += row.replay_us;
    rep.whatif_us += row.whatif_us;
  }
  return rep;
}

nlohmann::json to_json(const WhatIfReport& r) {
  nlohmann::json j;
  j["path"] = r.path;
  j["world_size"] = r.world_size;
  j["window"] = r.options.window;
  nlohmann::json changes;
  changes["comm_stream"] = r.options.comm_stream;
  changes["comm_consumer_after"] = r.options.comm_consumer_after;
  changes["fuse_gemm_ar"] = r.options.fuse_gemm_ar;
  if (r.options.fuse_gemm_ar) changes["gemm_ar_model"] = r.options.gemm_ar_model;
  changes["scale_collective"] = nlohmann::json::array();
  for (const auto& s : r.options.scale) changes["scale_collective"].push_back({{"pattern", s.pattern}, {"factor", s.factor}});
  changes["comm_kernels_moved"] = r.changes.comm_moved;
  changes["consumer_waits_added"] = r.changes.consumers_added;
  changes["events_rescaled"] = r.changes.scaled;
  changes["gemm_ar_fused"] = r.changes.fused;
  changes["gemm_ar_skipped_no_shape"] = r.changes.fuse_skipped_no_shape;
  j["changes"] = changes;
  j["epsilon_us"] = r.options.epsilon_us;
  j["measured_us"] = r.measured_us;
  j["replay_us"] = r.replay_us;
  j["replay_error"] = r.replay_error();
  j["whatif_us"] = r.whatif_us;
  j["saving_us"] = r.saving_us();
  j["comm_us_per_window_max"] = r.comm_us;
  j["windows"] = nlohmann::json::array();
  for (const auto& w : r.windows)
    j["windows"].push_back({{"window", w.window}, {"phase", w.phase}, {"measured_us", w.measured_us},
                            {"replay_us", w.replay_us}, {"whatif_us", w.whatif_us},
                            {"measured_us_by_rank", w.measured_by_rank}, {"replay_us_by_rank", w.replay_by_rank},
                            {"whatif_us_by_rank", w.whatif_by_rank}});
  return j;
}

std::string to_table(const WhatIfReport& r) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "trace {}: {} window(s) of phase {}, world size {}\n", r.path, r.windows.size(), r.options.window, r.world_size);
  if (r.windows.empty())
    fmt::format_to(out, "warning: the trace has no {} window, so nothing was replayed (choose the phase with --window; "
                        "`fusesim trace analyze` lists the phases the trace has)\n", r.options.window);
  std::vector<std::string> what;
  if (r.options.comm_stream)
    what.push_back(fmt::format("communication on its own stream ({} kernels moved{})", r.changes.comm_moved,
                               r.options.comm_consumer_after > 0 ? fmt::format(", {} consumer waits", r.changes.consumers_added) : std::string(", producers only")));
  for (const auto& s : r.options.scale) what.push_back(fmt::format("'{}' x {}", s.pattern, s.factor));
  if (!r.options.scale.empty()) what.push_back(fmt::format("({} events rescaled)", r.changes.scaled));
  if (r.options.fuse_gemm_ar)
    what.push_back(fmt::format("GEMM+all-reduce fused ({} pairs, {} skipped without a joined shape; each pair's time is the fused "
                               "model's: {})", r.changes.fused, r.changes.fuse_skipped_no_shape,
                               r.options.gemm_ar_model.empty() ? std::string("predictor not described") : r.options.gemm_ar_model));
  fmt::format_to(out, "change: {}\n", what.empty() ? std::string("none") : fmt::format("{}", fmt::join(what, "; ")));
  fmt::format_to(out, "   {:<20} {:<8} {:>14} {:>14} {:>14} {:>10}\n", "window", "phase", "measured_us", "replay_us", "whatif_us", "saving");
  for (const auto& w : r.windows) {
    double saved = std::abs(w.replay_us - w.whatif_us) < 1e-6 ? 0.0 : w.replay_us - w.whatif_us;
    fmt::format_to(out, "   {:<20} {:<8} {:>14.1f} {:>14.1f} {:>14.1f} {:>9.2f}%\n", w.window, w.phase, w.measured_us,
                   w.replay_us, w.whatif_us, w.replay_us > 0 ? 100.0 * saved / w.replay_us : 0.0);
  }
  double n = r.windows.empty() ? 1.0 : static_cast<double>(r.windows.size());
  double err = std::abs(r.replay_error()) < 1e-9 ? 0.0 : r.replay_error();
  fmt::format_to(out, "step time (mean over windows, max over ranks): measured {:.1f} us, replay {:.1f} us ({:+.3f}%), what-if {:.1f} us\n",
                 r.measured_us / n, r.replay_us / n, 100.0 * err, r.whatif_us / n);
  double saving = std::abs(r.saving_us()) < 1e-6 ? 0.0 : r.saving_us();  // no "-0.0"
  fmt::format_to(out, "saving: {:.1f} us per step ({:.2f}%); communication per step (max rank): {:.1f} us\n",
                 saving / n, r.replay_us > 0 ? 100.0 * saving / r.replay_us : 0.0, r.comm_us);
  return o;
}

}  // namespace fusesim::trace
