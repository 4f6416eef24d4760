// fusesim trace: replay on sim::Simulation, ranks coupled through their collectives, what-if
// transformations and the stragglers view.
#include "calibrate/trace/whatif.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "hw/printable.hpp"
#include "hw/sm_pool.hpp"
#include "sim/simulation.hpp"

namespace fusesim::trace {

CollectiveScale parse_collective_scale(const std::string& text) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw std::invalid_argument(fmt::format("--scale-collective '{}': expected REGEX=FACTOR", text));
  CollectiveScale s;
  s.pattern = text.substr(0, eq);
  // strtod, not stod: stod throws out_of_range for 1e-308 or 1e400, which read as "not a number".
  const std::string f = text.substr(eq + 1);
  char* end = nullptr;
  errno = 0;
  s.factor = std::strtod(f.c_str(), &end);
  // A decimal number only: strtod also reads hex floats ("0x10" as 16), "inf" and "nan".
  const bool decimal = !f.empty() && f.find_first_not_of("0123456789.eE+-") == std::string::npos;
  if (!decimal || end == f.c_str() || end != f.c_str() + f.size() || std::isnan(s.factor))
    throw std::invalid_argument(fmt::format("--scale-collective '{}': FACTOR '{}' is not a number", hw::printable(text), hw::printable(f)));
  // A factor outside 1e-6 .. 1e6 makes an event last under a picosecond or past any trace's length
  // (no real what-if scales a collective by a million).
  if (!(s.factor >= 1e-6 && s.factor <= 1e6) || errno == ERANGE)
    throw std::invalid_argument(fmt::format("--scale-collective '{}': FACTOR {} is out of range (expected 1e-6 .. 1e6)", hw::printable(text), hw::printable(f)));
  s.re = hw::NamePattern::compile(s.pattern, fmt::format("--scale-collective '{}'", text));
  return s;
}

CollectiveScale parse_rank_scale(const std::string& text) {
  auto colon = text.find(':');
  int64_t rank = -1;
  if (colon == std::string::npos || colon == 0 || !parse_id_text(text.substr(0, colon), rank) || rank < 0 ||
      rank > (int64_t{1} << 24))
    throw std::invalid_argument(fmt::format("--scale-on-rank '{}': expected RANK:REGEX=FACTOR with RANK a rank number", text));
  CollectiveScale s;
  try {
    s = parse_collective_scale(text.substr(colon + 1));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("--scale-on-rank '{}': expected RANK:REGEX=FACTOR ({})", text, e.what()));
  }
  s.rank = static_cast<int>(rank);
  s.communication_only = false;  // a straggler: its GEMMs as much as its collectives
  return s;
}

namespace {

/// A cross-stream wait the trace records: stream `waiter` waits, from launch correlation
/// `wait_corr` on, for the work launched on `record` before correlation `record_corr`.
struct SyncDep {
  int64_t waiter_stream, wait_corr, record_stream, record_corr;
};

/// The synchronisation records of a rank: CUPTI Stream Wait Event records, or roctracer's
/// hipEventRecord / hipStreamWaitEvent calls (handles mapped to GPU streams by the launches).
std::vector<SyncDep> sync_deps_of(const TraceFile& f) {
  std::vector<SyncDep> out;
  for (const auto& s : f.syncs) {
    if (s.kind != SyncEvent::Kind::stream_wait_event || s.stream < 0 || s.wait_on_stream < 0 ||
        s.wait_record_correlation < 0 || s.correlation < 0)
      continue;
    out.push_back({s.stream, s.correlation, s.wait_on_stream, s.wait_record_correlation});
  }
  // HIP: handle -> GPU stream through the launches that carry both.
  bool hip = std::any_of(f.runtime_calls.begin(), f.runtime_calls.end(), [](const RuntimeCall& r) { return r.event_handle != -1; });
  if (!hip) return out;
  std::unordered_map<int64_t, int64_t> stream_of_corr;
  for (const auto& g : f.gpu_ops)
    if (g.correlation >= 0) stream_of_corr.emplace(g.correlation, g.stream);
  std::unordered_map<int64_t, int64_t> stream_of_handle;
  for (const auto& r : f.runtime_calls) {
    if (r.stream_handle == -1 || r.correlation < 0) continue;
    auto it = stream_of_corr.find(r.correlation);
    if (it != stream_of_corr.end()) stream_of_handle.emplace(r.stream_handle, it->second);
  }
  struct Rec { int64_t corr, stream; };
  std::unordered_map<int64_t, std::vector<Rec>> records;  // event handle -> records in call order
  std::vector<const RuntimeCall*> calls;
  for (const auto& r : f.runtime_calls)
    if (r.event_handle != -1 && r.correlation >= 0) calls.push_back(&r);
  std::sort(calls.begin(), calls.end(), [](const RuntimeCall* a, const RuntimeCall* b) { return a->correlation < b->correlation; });
  for (const RuntimeCall* r : calls) {
    const auto& name = f.strings.str(r->name);
    auto sh = stream_of_handle.find(r->stream_handle);
    if (sh == stream_of_handle.end()) continue;
    if (name.rfind("hipEventRecord", 0) == 0) {
      records[r->event_handle].push_back({r->correlation, sh->second});
    } else if (name.rfind("hipStreamWaitEvent", 0) == 0) {
      auto rit = records.find(r->event_handle);
      if (rit == records.end() || rit->second.empty()) continue;
      const auto& rec = rit->second.back();  // the latest record before this wait (call order)
      out.push_back({sh->second, r->correlation, rec.stream, rec.corr});
    }
  }
  return out;
}

}  // namespace

ReplayGraph infer_replay_graph(const RankTimeline& tl, const std::vector<uint32_t>& ops, double epsilon_us) {
  ReplayGraph g;
  std::vector<uint32_t> order(ops);
  std::sort(order.begin(), order.end());  // timeline ops are already in start order
  if (order.empty()) return g;
  const auto& file = *tl.file;
  if (!(epsilon_us >= 0) || epsilon_us > 1e9)
    throw std::invalid_argument(fmt::format("--epsilon-us {} is outside 0..1e9 us", epsilon_us));
  const int64_t eps_ns = static_cast<int64_t>(std::llround(epsilon_us * 1000.0));
  const int64_t t0 = file.gpu_ops[tl.ops[order.front()].gpu].start_ns;
  g.t0_ns = file.origin_ns + t0;
  // A GPU event whose launch call had returned by `t` was already queued at `t`: a gap in front
  // of it is a GPU-side delay, not the host being late.
  auto queued_by = [&](const TimelineOp& op, int64_t t) {
    if (!op.launched()) return false;
    return file.runtime_calls[static_cast<size_t>(op.launch_call)].end_ns() <= t;
  };
  // Dense stream ids over (device, stream).
  std::map<std::pair<int32_t, int64_t>, int64_t> stream_ids;
  std::unordered_map<int64_t, int64_t> dense_of_raw;  // raw stream id -> dense (sync records carry no device)
  auto dense = [&](const GpuOp& op) {
    auto [it, fresh] = stream_ids.emplace(std::make_pair(op.device, op.stream), static_cast<int64_t>(stream_ids.size()));
    dense_of_raw.emplace(op.stream, it->second);
    return it->second;
  };
  std::vector<int64_t> node_stream(order.size());
  for (size_t i = 0; i < order.size(); ++i) node_stream[i] = dense(file.gpu_ops[tl.ops[order[i]].gpu]);

  // Synchronisation records -> (waiter node, recorded node) pairs of this window.
  auto syncs = sync_deps_of(file);
  g.sync_records = !syncs.empty();
  std::vector<std::vector<int>> sync_of(order.size());
  if (g.sync_records) {
    std::unordered_map<int64_t, std::vector<std::pair<int64_t, int>>> by_stream;  // dense -> (corr, node)
    for (size_t i = 0; i < order.size(); ++i) {
      int64_t c = file.gpu_ops[tl.ops[order[i]].gpu].correlation;
      if (c >= 0) by_stream[node_stream[i]].push_back({c, static_cast<int>(i)});
    }
    for (auto& [st, v] : by_stream) std::sort(v.begin(), v.end());
    for (const auto& s : syncs) {
      auto w = dense_of_raw.find(s.waiter_stream), r = dense_of_raw.find(s.record_stream);
      if (w == dense_of_raw.end() || r == dense_of_raw.end() || w->second == r->second) continue;
      const auto& wv = by_stream[w->second];
      const auto& rv = by_stream[r->second];
      auto wi = std::upper_bound(wv.begin(), wv.end(), std::make_pair(s.wait_corr, std::numeric_limits<int>::max()));
      auto ri = std::lower_bound(rv.begin(), rv.end(), std::make_pair(s.record_corr, std::numeric_limits<int>::min()));
      if (wi == wv.end() || ri == rv.begin()) continue;
      --ri;
      if (ri->second >= wi->second) continue;  // not earlier in start order: not a usable edge
      auto& lst = sync_of[static_cast<size_t>(wi->second)];
      if (std::find(lst.begin(), lst.end(), ri->second) == lst.end()) lst.push_back(ri->second);
    }
  }

  // Per stream: the last node, and for inference the running latest end with the node that has it.
  std::unordered_map<int64_t, int> last_of_stream;
  struct EndPos { int64_t end; int node; };
  std::unordered_map<int64_t, std::vector<EndPos>> ends_of_stream;  // running max of ends, per stream
  std::vector<int64_t> node_end(order.size());
  int64_t last_end = t0;
  g.nodes.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& top = tl.ops[order[i]];
    const auto& gop = file.gpu_ops[top.gpu];
    ReplayGraph::Node n;
    n.op = order[i];
    n.dur_us = gop.dur_us();
    n.stream = node_stream[i];
    n.measured_start_us = ns_to_us(gop.start_ns - t0);
    const int64_t S = gop.start_ns;
    node_end[i] = gop.end_ns();

    // Candidates: (end, node, kind) with kind 0 = stream predecessor, 1 = sync record, 2 = inferred.
    struct Cand { int64_t end; int node; int kind; };
    std::vector<Cand> cands;
    auto pit = last_of_stream.find(n.stream);
    int pred = pit == last_of_stream.end() ? -1 : pit->second;
    if (pred >= 0) cands.push_back({node_end[static_cast<size_t>(pred)], pred, 0});
    for (int d : sync_of[i]) cands.push_back({node_end[static_cast<size_t>(d)], d, 1});
    if (!g.sync_records) {
      // The latest end on another stream at or before S, within epsilon of it.
      int best = -1;
      int64_t best_end = std::numeric_limits<int64_t>::min();
      for (const auto& [stream, ends] : ends_of_stream) {
        if (stream == n.stream || ends.empty()) continue;
        auto it = std::upper_bound(ends.begin(), ends.end(), S, [](int64_t v, const EndPos& e) { return v < e.end; });
        if (it == ends.begin()) continue;
        --it;
        if (S - it->end > eps_ns || it->end <= best_end) continue;
        best_end = it->end;
        best = it->node;
      }
      if (best >= 0) cands.push_back({best_end, best, 2});
    }
    // The binding candidate: the latest end; on a tie the stream predecessor, then a record.
    const Cand* bind = nullptr;
    for (const auto& c : cands)
      if (!bind || c.end > bind->end || (c.end == bind->end && c.kind < bind->kind)) bind = &c;
    bool binds = bind && (S - bind->end <= eps_ns || queued_by(top, bind->end));
    if (binds) {
      n.lag_us = ns_to_us(S - bind->end);
      if (bind->kind == 0) {
        n.bind = ReplayGraph::Bind::stream_pred;
      } else {
        n.bind = ReplayGraph::Bind::dep;
        n.bind_dep = bind->node;
        n.from_sync = bind->kind == 1;
      }
    } else {
      n.bind = ReplayGraph::Bind::release;
      n.release_us = ns_to_us(S - t0);
    }
    for (const auto& c : cands) {
      double lag = std::min(0.0, ns_to_us(S - c.end));
      if (c.kind == 0) {
        if (&c != bind || !binds) n.pred_lag_us = lag;
        continue;
      }
      if (c.kind == 2 && (&c != bind || !binds)) continue;  // an inferred wait is kept only where it binds
      n.deps.push_back(c.node);
      n.dep_lag_us.push_back(&c == bind && binds ? n.lag_us : lag);
      if (c.kind == 1) g.sync_deps++;
      else g.inferred_deps++;
    }
    int idx = static_cast<int>(g.nodes.size());
    last_of_stream[n.stream] = idx;
    auto& ends = ends_of_stream[n.stream];
    if (ends.empty() || gop.end_ns() > ends.back().end) ends.push_back({gop.end_ns(), idx});
    else ends.push_back(ends.back());  // keep the running max (and the node that has it)
    last_end = std::max(last_end, gop.end_ns());
    g.nodes.push_back(std::move(n));
  }
  g.measured_span_us = ns_to_us(last_end - t0);
  return g;
}

namespace {

/// The ranks of a "Process Group Ranks" field such as "[0, 1]" (empty when it does not parse).
std::vector<int> parse_rank_list(const std::string& s) {
  std::vector<int> out;
  int64_t cur = -1;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      cur = (cur < 0 ? 0 : cur) * 10 + (c - '0');
      if (cur > (int64_t{1} << 24)) return {};
    } else {
      if (cur >= 0) out.push_back(static_cast<int>(cur));
      cur = -1;
      if (c != '[' && c != ']' && c != ',' && c != ' ') return {};
    }
  }
  if (cur >= 0) out.push_back(static_cast<int>(cur));
  return out;
}

}  // namespace

std::vector<int> default_collective_group(const std::vector<TraceFile>& files) {
  int world = 0;
  for (const auto& f : files) world = std::max(world, f.world_size);
  if (world > static_cast<int>(files.size())) return {};
  std::vector<int> g;
  for (const auto& f : files) g.push_back(f.rank);
  std::sort(g.begin(), g.end());
  return g;
}

CollectiveMatch match_collectives(std::vector<ReplayGraph*> graphs, const std::vector<const RankTimeline*>& tls,
                                  const std::vector<int>& ranks, const std::vector<int>& default_group) {
  CollectiveMatch m;
  // Per key: per rank (graph index) the communication nodes in start order, with their signature.
  struct Member { int graph, node; std::string signature; std::vector<int> group; bool by_seq; };
  std::map<std::string, std::map<int, std::vector<Member>>> seqs;
  std::map<int, int> graph_of_rank;
  for (size_t gi = 0; gi < graphs.size(); ++gi) graph_of_rank[ranks[gi]] = static_cast<int>(gi);
  std::vector<int> everyone(default_group);
  std::sort(everyone.begin(), everyone.end());
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    const auto& tl = *tls[gi];
    const auto& f = *tl.file;
    for (size_t ni = 0; ni < graphs[gi]->nodes.size(); ++ni) {
      auto& nd = graphs[gi]->nodes[ni];
      nd.tail_us = 0;
      const auto& top = tl.ops[nd.op];
      if (tl.cls(top) != OpClass::communication) continue;
      const auto& g = f.gpu_ops[top.gpu];
      Member mem{static_cast<int>(gi), static_cast<int>(ni), "", everyone, false};
      std::string key;
      if (g.collective >= 0) {
        const auto& c = f.collectives[static_cast<size_t>(g.collective)];
        key = "pg:" + f.strings.str(c.pg_name);
        mem.signature = fmt::format("{} in {} out {} {}", f.strings.str(c.name), c.in_nelems, c.out_nelems, f.strings.str(c.dtype));
        auto listed = parse_rank_list(f.strings.str(c.pg_ranks));
        if (!listed.empty()) mem.group = listed;
        if (c.seq >= 0) {
          key += fmt::format("|seq:{}", c.seq);
          mem.by_seq = true;
        }
      } else {
        key = "kernel:" + f.strings.str(g.name);
      }
      std::sort(mem.group.begin(), mem.group.end());
      seqs[key][static_cast<int>(gi)].push_back(std::move(mem));
    }
  }
  for (auto& [key, per_graph] : seqs) {
    size_t longest = 0;
    for (const auto& [gi, v] : per_graph) longest = std::max(longest, v.size());
    for (size_t k = 0; k < longest; ++k) {
      // The k-th collective of this key on the rank of the first graph that has one names the group.
      const Member* first = nullptr;
      for (const auto& [gi, v] : per_graph)
        if (k < v.size()) { first = &v[k]; break; }
      if (!first) continue;
      CollectiveGroup grp;
      bool complete = true, same = true;
      for (int r : first->group) {
        auto git = graph_of_rank.find(r);
        if (git == graph_of_rank.end()) { complete = false; break; }
        auto pit = per_graph.find(git->second);
        if (pit == per_graph.end() || k >= pit->second.size()) { complete = false; break; }
        const auto& mem = pit->second[k];
        if (mem.signature != first->signature || mem.group != first->group) same = false;
        grp.members.emplace_back(mem.graph, mem.node);
      }
      if (first->group.empty() || !complete || grp.members.size() < 2) {
        if (first->group.size() != 1) m.incomplete++;
        continue;
      }
      if (!same) {
        m.mismatched++;
        continue;
      }
      (first->by_seq ? m.by_sequence : m.by_order)++;
      // Tail of each member: measured end minus the group's last entry (trace clock).
      double last_entry = -std::numeric_limits<double>::infinity();
      for (auto [gi, ni] : grp.members) {
        const auto& g = *graphs[static_cast<size_t>(gi)];
        last_entry = std::max(last_entry, ns_to_us(g.t0_ns) + g.nodes[static_cast<size_t>(ni)].measured_start_us);
      }
      for (auto [gi, ni] : grp.members) {
        auto& g = *graphs[static_cast<size_t>(gi)];
        auto& nd = g.nodes[static_cast<size_t>(ni)];
        double end = ns_to_us(g.t0_ns) + nd.measured_start_us + nd.dur_us;
        nd.tail_us = end - last_entry;
        if (nd.tail_us < 0) m.skewed_members++;
      }
      m.groups.push_back(std::move(grp));
    }
  }
  return m;
}

ReplayResult replay(const std::vector<const ReplayGraph*>& graphs, const std::vector<CollectiveGroup>& groups) {
  ReplayResult res;
  const size_t ng = graphs.size();
  res.start_us.resize(ng);
  res.end_us.resize(ng);
  res.span_us.assign(ng, 0.0);
  std::vector<size_t> base(ng + 1, 0);
  for (size_t gi = 0; gi < ng; ++gi) base[gi + 1] = base[gi] + graphs[gi]->nodes.size();
  const size_t n = base[ng];
  if (n == 0) return res;
  int64_t t_min = std::numeric_limits<int64_t>::max();
  for (const auto* g : graphs)
    if (!g->nodes.empty()) t_min = std::min(t_min, g->t0_ns);
  std::vector<double> offset_s(ng, 0.0);  // each graph's t0 on the common clock, seconds
  for (size_t gi = 0; gi < ng; ++gi) offset_s[gi] = ns_to_us(graphs[gi]->t0_ns - t_min) * 1e-6;

  struct Flat {
    const ReplayGraph::Node* nd;
    size_t graph;
    int pred = -1;  // flat id of the stream predecessor
    int group = -1;
  };
  std::vector<Flat> fl(n);
  for (size_t gi = 0; gi < ng; ++gi) {
    std::unordered_map<int64_t, int> last;
    for (size_t i = 0; i < graphs[gi]->nodes.size(); ++i) {
      size_t id = base[gi] + i;
      fl[id].nd = &graphs[gi]->nodes[i];
      fl[id].graph = gi;
      auto it = last.find(fl[id].nd->stream);
      if (it != last.end()) fl[id].pred = it->second;
      last[fl[id].nd->stream] = static_cast<int>(id);
    }
  }
  for (size_t k = 0; k < groups.size(); ++k) {
    for (auto [gi, ni] : groups[k].members) {
      size_t id = base[static_cast<size_t>(gi)] + static_cast<size_t>(ni);
      const auto& nd = *fl[id].nd;
      if (nd.tail_us >= 0) fl[id].group = static_cast<int>(k);  // a skewed member runs uncoupled
    }
  }
  std::vector<std::vector<int>> entered(groups.size());
  std::vector<int> members_left(groups.size(), 0);

  std::vector<std::vector<int>> dependents(n);
  std::vector<int> waiting(n, 0);
  for (size_t id = 0; id < n; ++id) {
    if (fl[id].pred >= 0) {
      dependents[static_cast<size_t>(fl[id].pred)].push_back(static_cast<int>(id));
      waiting[id]++;
    }
    for (int d : fl[id].nd->deps) {
      if (d < 0 || static_cast<size_t>(d) >= graphs[fl[id].graph]->nodes.size())
        throw std::logic_error("replay: dependency out of range");
      dependents[base[fl[id].graph] + static_cast<size_t>(d)].push_back(static_cast<int>(id));
      waiting[id]++;
    }
  }
  constexpr double kUs = 1e-6;
  std::vector<double> start_s(n, std::numeric_limits<double>::quiet_NaN()), end_s(n, std::numeric_limits<double>::quiet_NaN());
  size_t done = 0;
  sim::Simulation sim;
  sim.set_event_budget(8 * static_cast<uint64_t>(n) + 1024);

  std::function<void(size_t)> end_known;
  // All sources' ends are known: the start is the latest constraint (never before now).
  auto schedule = [&](size_t id) {
    const auto& nd = *fl[id].nd;
    const size_t gi = fl[id].graph;
    double ready = sim.now();
    if (fl[id].pred >= 0) {
      double lag = nd.bind == ReplayGraph::Bind::stream_pred ? nd.lag_us : nd.pred_lag_us;
      ready = std::max(ready, end_s[static_cast<size_t>(fl[id].pred)] + lag * kUs);
    }
    for (size_t k = 0; k < nd.deps.size(); ++k) {
      double lag = nd.bind == ReplayGraph::Bind::dep && nd.deps[k] == nd.bind_dep ? nd.lag_us
                   : k < nd.dep_lag_us.size()                                       ? nd.dep_lag_us[k]
                                                                                    : 0.0;
      ready = std::max(ready, end_s[base[gi] + static_cast<size_t>(nd.deps[k])] + lag * kUs);
    }
    if (nd.bind == ReplayGraph::Bind::release) ready = std::max(ready, offset_s[gi] + nd.release_us * kUs);
    sim.at(ready, [&, id, ready] {
      start_s[id] = ready;  // exact (the engine's clock rounds to picoseconds)
      int grp = fl[id].group;
      if (grp < 0) {
        end_s[id] = ready + fl[id].nd->dur_us * kUs;
        end_known(id);
        return;
      }
      // A coupled collective: its end is known once the last member of its group has entered.
      entered[static_cast<size_t>(grp)].push_back(static_cast<int>(id));
      if (--members_left[static_cast<size_t>(grp)] > 0) return;
      double last = ready;
      for (int m : entered[static_cast<size_t>(grp)]) {
        end_s[static_cast<size_t>(m)] = std::max(start_s[static_cast<size_t>(m)], last) + fl[static_cast<size_t>(m)].nd->tail_us * kUs;
        end_known(static_cast<size_t>(m));
      }
    });
  };
  end_known = [&](size_t id) {
    sim.at(std::max(end_s[id], sim.now()), [&, id] { ++done; });
    for (int d : dependents[id])
      if (--waiting[static_cast<size_t>(d)] == 0) schedule(static_cast<size_t>(d));
  };
  // A group with skewed (uncoupled) members still needs every coupled one: count only those.
  for (size_t k = 0; k < groups.size(); ++k) {
    int coupled = 0;
    for (auto [gi, ni] : groups[k].members)
      if (fl[base[static_cast<size_t>(gi)] + static_cast<size_t>(ni)].group == static_cast<int>(k)) coupled++;
    members_left[k] = coupled;
  }
  for (size_t id = 0; id < n; ++id)
    if (waiting[id] == 0) schedule(id);
  res.engine_events = 0;
  sim.run();
  res.engine_events = sim.events_processed();
  if (done != n)
    throw std::logic_error(fmt::format("replay: {} of {} GPU events could never run (a dependency cycle, or a collective "
                                       "whose group never completed)", n - done, n));
  for (size_t gi = 0; gi < ng; ++gi) {
    const size_t m = graphs[gi]->nodes.size();
    res.start_us[gi].resize(m);
    res.end_us[gi].resize(m);
    for (size_t i = 0; i < m; ++i) {
      res.start_us[gi][i] = (start_s[base[gi] + i] - offset_s[gi]) / kUs;
      res.end_us[gi][i] = (end_s[base[gi] + i] - offset_s[gi]) / kUs;
      res.span_us[gi] = std::max(res.span_us[gi], res.end_us[gi][i]);
    }
  }
  return res;
}

double replay_span_us(const ReplayGraph& g) {
  if (g.nodes.empty()) return 0;
  return replay({&g}, {}).span_us[0];
}

void WhatIfChanges::add_not_fused(const std::vector<NotFused>& o) {
  for (const auto& x : o) {
    auto same = [&](const NotFused& y) {
      return y.file == x.file && y.event == x.event && y.m == x.m && y.n == x.n && y.k == x.k && y.reason == x.reason;
    };
    auto it = std::find_if(not_fused.begin(), not_fused.end(), same);
    if (it != not_fused.end()) it->pairs += x.pairs;
    else if (not_fused.size() < 1000) not_fused.push_back(x);  // a bound on the report; counted below
    else not_fused.back().pairs += x.pairs;
  }
}

WhatIfChanges apply_whatif(ReplayGraph& g, const RankTimeline& tl, const WhatIfOptions& opt, int world_size, int rank) {
  WhatIfChanges ch;
  const auto& file = *tl.file;
  const size_t n = g.nodes.size();
  auto name_of = [&](const ReplayGraph::Node& nd) -> const std::string& {
    return file.strings.str(file.gpu_ops[tl.ops[nd.op].gpu].name);
  };
  auto is_comm = [&](const ReplayGraph::Node& nd) { return tl.cls(tl.ops[nd.op]) == OpClass::communication; };

  // 1. Rescale collectives.
  for (const auto& sc : opt.scale) {
    if (sc.rank >= 0 && sc.rank != rank) continue;
    const hw::NamePattern re = sc.re.empty() ? hw::NamePattern::compile(sc.pattern, "--scale-collective") : sc.re;
    std::unordered_map<uint32_t, bool> match;
    for (auto& nd : g.nodes) {
      if (sc.communication_only && !is_comm(nd)) continue;  // --scale-collective: compute and copies keep their time
      uint32_t nm = file.gpu_ops[tl.ops[nd.op].gpu].name;
      auto it = match.find(nm);
      if (it == match.end()) it = match.emplace(nm, re.search(name_of(nd))).first;
      if (it->second) {
        nd.dur_us *= sc.factor;
        nd.tail_us *= sc.factor;
        ch.scaled++;
      }
    }
  }

  // 2. Fuse GEMM + the all-reduce that follows it on its stream.
  if (opt.fuse_gemm_ar) {
    if (!opt.gemm_ar_predictor) throw std::runtime_error("--fuse-gemm-ar needs a GEMM+all-reduce predictor");
    const hw::NamePattern ar = hw::NamePattern::compile(opt.allreduce_regex, "--allreduce-regex");
    int gemm_cat = tl.table->find("gemm");
    std::unordered_map<int64_t, int> prev_on_stream;
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
      if (!is_comm(c) || !ar.search(name_of(c)) || prev[i] < 0) continue;
      const auto& p = tl.ops[g.nodes[static_cast<size_t>(prev[i])].op];
      if (p.category != gemm_cat) continue;
      if (p.shape < 0) {
        ch.fuse_skipped_no_shape++;
        continue;
      }
      const auto& s = tl.shapes[static_cast<size_t>(p.shape)];
      int64_t mb = 0;
      if (__builtin_mul_overflow(s.m, s.batch, &mb)) {
        ch.fuse_skipped_no_shape++;
        continue;
      }
      // A shape the fused model refuses (K < 256, M = 2^40, ...) leaves this pair as measured and is
      // reported with its file, kernel and the model's reason (tune --from-trace's "not tuned"); one
      // such GEMM had ended the whole replay with the bare model error.
      double t = 0;
      std::string why;
      try {
        t = opt.gemm_ar_predictor(mb, s.n, s.k, world_size);
        if (!(t >= 0) || !std::isfinite(t)) why = fmt::format("the predictor returned {} us", t);
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (!why.empty()) {
        ch.add_not_fused({{file.path, hw::printable(name_of(g.nodes[static_cast<size_t>(prev[i])])), mb, s.n, s.k, hw::printable(why), 1}});
        continue;
      }
      auto& members = nodes_of_gemm_op[p.gemm_op];
      bool first = true;
      for (int m : members) {
        g.nodes[static_cast<size_t>(m)].dur_us = first ? t : 0.0;
        first = false;
      }
      c.dur_us = 0;
      c.tail_us = 0;
      c.lag_us = 0;
      ch.fused++;
    }
  }

  // 3. Communication on its own stream, depending only on its producers.
  if (opt.comm_stream) {
    const int64_t comm_stream = std::numeric_limits<int64_t>::min() + 7;  // a stream id no trace uses
    std::unordered_map<int64_t, int> last_compute;  // original stream -> last non-comm node
    std::unordered_map<int64_t, std::vector<std::pair<int, int>>> waiting_comm;  // stream -> (comm, remaining)
    for (auto& nd : g.nodes) nd.pred_lag_us = 0;  // stream predecessors change: no measured overlap to keep
    for (size_t i = 0; i < n; ++i) {
      auto& nd = g.nodes[i];
      int64_t stream = nd.stream;
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
        if (producer >= 0 && std::find(nd.deps.begin(), nd.deps.end(), producer) == nd.deps.end()) {
          nd.deps.push_back(producer);
          nd.dep_lag_us.push_back(0);
        }
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
              nd.dep_lag_us.push_back(0);
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
/// The phases a --window value selects: none for "all" (the whole trace as one window), every
/// phase for "steps" (each window on its own, whatever its phase).
std::vector<std::string> selected_phases(const std::string& window) {
  if (window == "all") return {};
  if (window == "steps") return {"prefill", "decode", "unknown"};
  if (window == "prefill" || window == "decode") return {window};
  throw std::invalid_argument(fmt::format("--window must be prefill, decode, steps or all, not \"{}\"", window));
}

/// The windows selected by `window`, grouped by name across ranks (a window of one name is the
/// same step on every rank), in order of first appearance.
struct WindowSet {
  std::string name, phase;
  std::vector<std::pair<size_t, std::vector<uint32_t>>> per_rank;  // (index into the timelines, ops)
};

std::vector<WindowSet> select_windows(const std::vector<RankTimeline>& tls, const std::string& window) {
  auto phases = selected_phases(window);
  std::vector<WindowSet> sets;
  if (phases.empty()) {
    WindowSet s{"all", "all", {}};
    for (size_t r = 0; r < tls.size(); ++r) {
      std::vector<uint32_t> all(tls[r].ops.size());
      std::iota(all.begin(), all.end(), 0u);
      if (!all.empty()) s.per_rank.emplace_back(r, std::move(all));
    }
    sets.push_back(std::move(s));
    return sets;
  }
  std::map<std::string, size_t> index;
  for (size_t r = 0; r < tls.size(); ++r) {
    auto per = ops_by_window(tls[r]);
    for (size_t w = 0; w < tls[r].windows.size(); ++w) {
      const auto& win = tls[r].windows[w];
      if (std::find(phases.begin(), phases.end(), to_string(win.phase)) == phases.end() || per[w].empty()) continue;
      auto [it, fresh] = index.emplace(win.name, sets.size());
      if (fresh) sets.push_back({win.name, to_string(win.phase), {}});
      sets[it->second].per_rank.emplace_back(r, std::move(per[w]));
    }
  }
  return sets;
}

void add_match(CollectiveMatch& sum, const CollectiveMatch& m) {
  sum.by_sequence += m.by_sequence;
  sum.by_order += m.by_order;
  sum.incomplete += m.incomplete;
  sum.mismatched += m.mismatched;
  sum.skewed_members += m.skewed_members;
}

std::vector<std::string> match_warnings(const CollectiveMatch& m) {
  std::vector<std::string> w;
  if (m.incomplete > 0)
    w.push_back(fmt::format("{} collective(s) belong to a group with a rank missing from this directory or from the "
                            "replayed window (or to an unknown group: no \"Process Group Ranks\" and fewer traces than "
                            "distributedInfo.world_size): not coupled, each keeps its measured duration, waits included", m.incomplete));
  if (m.mismatched > 0)
    w.push_back(fmt::format("{} collective(s) differ across ranks at the same position (name, element count or dtype): "
                            "not coupled", m.mismatched));
  if (m.skewed_members > 0)
    w.push_back(fmt::format("{} collective member(s) ended before the last rank entered on the trace clock (the hosts' "
                            "clocks differ): replayed with their own duration", m.skewed_members));
  return w;
}
}  // namespace

namespace {
/// Bytes of one element of a PyTorch dtype as Kineto writes it on a collective ("Float", "BFloat16",
/// "c10::Half", ...); 0 when unknown.
double dtype_bytes(std::string t) {
  if (t.rfind("c10::", 0) == 0) t = t.substr(5);
  static const std::map<std::string, double> sizes = {
      {"Byte", 1},   {"Char", 1},   {"Bool", 1},     {"Short", 2},         {"Half", 2},          {"BFloat16", 2},
      {"Int", 4},    {"Float", 4},  {"Long", 8},     {"Double", 8},        {"ComplexHalf", 4},   {"ComplexFloat", 8},
      {"ComplexDouble", 16},        {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"Float8_e4m3fnuz", 1}, {"Float8_e5m2fnuz", 1},
      {"UInt16", 2}, {"UInt32", 4}, {"UInt64", 8}};
  auto it = sizes.find(t);
  return it == sizes.end() ? 0.0 : it->second;
}
}  // namespace

double charge_sm_sharing(ReplayGraph& g, const RankTimeline& tl, const std::vector<double>& start_us,
                         const std::vector<double>& end_us, const models::SmShareMachine& m, SmShareCounts& counts) {
  const int sms = m.limits.sms;
  // One block per SM: the trace has no registers or shared memory, so each block is taken to fill an SM.
  auto block_of = [&](const GpuOp& op) {
    int64_t t = 1;
    for (int32_t d : op.block) t *= std::max<int32_t>(1, d);
    return hw::BlockShape{static_cast<int>(std::min<int64_t>(t, 1 << 20)), 0, m.limits.smem_per_sm_bytes};
  };
  auto ctas_of = [&](const ReplayGraph::Node& nd) -> int64_t {
    const GpuOp& op = tl.gpu(tl.ops[nd.op]);
    if (op.kind != GpuOpKind::kernel) return 0;
    int64_t c = 1;
    for (int32_t d : op.grid) {
      if (d <= 0) return 0;
      c *= d;
    }
    return c;
  };
  struct Iv { double s, e; int held; size_t node; double bps; bool bytes_known; };
  std::vector<Iv> comm;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const auto& nd = g.nodes[j];
    if (tl.cls(tl.ops[nd.op]) != OpClass::communication || !(end_us[j] > start_us[j])) continue;
    const GpuOp& op = tl.gpu(tl.ops[nd.op]);
    const int64_t c = ctas_of(nd);
    if (c >= sms)  // one block per SM: the collective would hold every SM, nothing is left for the compute kernels
      throw std::invalid_argument(fmt::format(
          "--sms {}: the communication kernel '{}' (trace op {}) has a grid of {} blocks, one per SM, which holds every "
          "one of the {} SMs of {}, so no compute kernel could run beside it; give --sm-hw a machine of more than {} SMs "
          "or --sms 0 for no SM-sharing charge",
          sms, tl.file->name_of(op), nd.op, c, sms, m.path, c));
    double bps = 0;
    bool known = false;
    if (op.collective >= 0 && static_cast<size_t>(op.collective) < tl.file->collectives.size()) {
      const CollectiveArgs& ca = tl.file->collectives[static_cast<size_t>(op.collective)];
      const double eb = dtype_bytes(tl.file->strings.str(ca.dtype));
      if (eb > 0 && (ca.in_nelems >= 0 || ca.out_nelems >= 0)) {
        known = true;
        const double bytes = eb * (double(std::max<int64_t>(0, ca.in_nelems)) + double(std::max<int64_t>(0, ca.out_nelems)));
        bps = bytes / ((end_us[j] - start_us[j]) * 1e-6);
        if (bps >= m.hw.hbm)
          throw std::invalid_argument(fmt::format(
              "the communication kernel '{}' (trace op {}) moves {:.0f} bytes (In + Out msg nelems x {}) in {:.3f} us: "
              "{:.1f} GB/s, at or above the HBM capacity of {} ({:.1f} GB/s), which the SM-sharing charge cannot queue; "
              "--sms 0 turns the charge off",
              tl.file->name_of(op), nd.op, bytes, tl.file->strings.str(ca.dtype), end_us[j] - start_us[j], bps * 1e-9,
              m.path, m.hw.hbm * 1e-9));
      }
    }
    comm.push_back({start_us[j], end_us[j], c > 0 ? static_cast<int>(c) : -1, j, bps, known});
  }
  double added = 0;
  std::map<std::tuple<int64_t, int64_t, int, int, double>, double> memo;  // (ctas, threads, held, nb threads, bps)
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    auto& nd = g.nodes[j];
    if (tl.cls(tl.ops[nd.op]) == OpClass::communication || !(nd.dur_us > 0)) continue;
    double overlap = 0, bps = 0;
    const Iv* widest = nullptr;
    bool unknown = false, bytes_known = true;
    for (const auto& c : comm) {
      const double o = std::min(end_us[j], c.e) - std::max(start_us[j], c.s);
      if (o <= 0) continue;
      overlap += o;
      if (c.held < 0) unknown = true;
      if (!widest || c.held > widest->held) widest = &c;
      bps = std::max(bps, c.bps);
      bytes_known = bytes_known && c.bytes_known;
    }
    if (overlap <= 0) continue;
    const int64_t ctas = ctas_of(nd);
    if (ctas <= 0 || unknown || !widest || widest->held <= 0) {
      ++counts.no_grid;
      continue;
    }
    const GpuOp& op = tl.gpu(tl.ops[nd.op]);
    const GpuOp& nop = tl.gpu(tl.ops[g.nodes[widest->node].op]);
    models::GemmOnSms gemm;
    gemm.grid = gemm.tiles = static_cast<int>(std::min<int64_t>(ctas, 1 << 24));
    gemm.cluster = 1;
    gemm.block = block_of(op);
    models::SmNeighbour nb;
    nb.blocks = widest->held;
    nb.block = block_of(nop);
    nb.hbm_Bps = bps;
    auto key = std::make_tuple(static_cast<int64_t>(gemm.grid), static_cast<int64_t>(gemm.block.threads), nb.blocks,
                               nb.block.threads, bps);
    auto it = memo.find(key);
    if (it == memo.end()) {
      double f = 1;
      try {
        // The slowdown is a ratio: any alone time gives it (1 s here; the engine's clock in picoseconds).
        f = models::gemm_beside(m, gemm, nb, 1.0).slowdown();
      } catch (const models::ParamError& e) {
        throw std::invalid_argument(fmt::format("the SM-sharing charge of kernel '{}' (trace op {}) beside '{}' (trace op {}): {}",
                                                tl.file->name_of(op), nd.op, tl.file->name_of(nop),
                                                g.nodes[widest->node].op, e.what()));
      }
      it = memo.emplace(key, f).first;
    }
    const double frac = std::min(1.0, overlap / (end_us[j] - start_us[j]));
    const double extra = nd.dur_us * (it->second - 1.0) * frac;
    if (extra > 0) {
      nd.dur_us += extra;
      added += extra;
      ++counts.charged;
      if (!bytes_known) ++counts.without_bytes;
    }
  }
  return added;
}

WhatIfReport whatif(const std::vector<TraceFile>& files, const CategoryTable& table,
                    const AnalyzeOptions& aopt, const WhatIfOptions& opt, const std::string& path) {
  selected_phases(opt.window);
  // Every pattern is checked before any window is looked at (an invalid one used to pass unseen when
  // no window was replayed).
  hw::NamePattern::compile(opt.allreduce_regex, "--allreduce-regex");
  for (const auto& sc : opt.scale)
    if (sc.re.empty()) hw::NamePattern::compile(sc.pattern, "--scale-collective");
  (void)StepMatcher(aopt.step_regex);
  require_gpu_events(files, "replay");
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
  const size_t nranks = files.size();
  std::vector<RankTimeline> tls;
  tls.reserve(nranks);
  for (const auto& f : files) {
    tls.push_back(build_timeline(f, table, aopt));
    rep.ranks.push_back(f.rank);
    for (const auto& w : f.warnings) rep.warnings.push_back(w);
  }
  rep.coupled = !opt.independent_ranks && nranks > 1;
  const auto default_group = default_collective_group(files);
  rep.measured_by_rank.assign(nranks, 0);
  rep.replay_by_rank.assign(nranks, 0);
  rep.whatif_by_rank.assign(nranks, 0);

  for (auto& set : select_windows(tls, opt.window)) {
    std::vector<ReplayGraph> graphs;
    std::vector<const RankTimeline*> gtls;
    std::vector<int> granks;
    graphs.reserve(set.per_rank.size());
    for (auto& [r, ops] : set.per_rank) {
      graphs.push_back(infer_replay_graph(tls[r], ops, opt.epsilon_us));
      gtls.push_back(&tls[r]);
      granks.push_back(files[r].rank);
      rep.sync_deps += graphs.back().sync_deps;
      rep.inferred_deps += graphs.back().inferred_deps;
    }
    std::vector<ReplayGraph*> gp;
    std::vector<const ReplayGraph*> cgp;
    for (auto& g : graphs) {
      gp.push_back(&g);
      cgp.push_back(&g);
    }
    std::vector<CollectiveGroup> groups;
    if (rep.coupled) {
      auto m = match_collectives(gp, gtls, granks, default_group);
      add_match(rep.collectives, m);
      groups = std::move(m.groups);
    }
    auto run = [&]() {
      std::vector<double> spans(graphs.size(), 0.0);
      try {
        if (rep.coupled) {
          spans = replay(cgp, groups).span_us;
        } else {
          for (size_t i = 0; i < graphs.size(); ++i) spans[i] = replay_span_us(graphs[i]);
        }
      } catch (const std::range_error& e) {
        double span_s = 0;
        for (const auto& g : graphs) span_s = std::max(span_s, g.measured_span_us * 1e-6);
        throw TraceError(files[set.per_rank.front().first].path, -1,
                         fmt::format("window {} spans {:.6g} s of GPU time, too long to replay: {}", set.name, span_s, e.what()));
      }
      return spans;
    };
    std::vector<double> base;
    try {
      base = run();
    } catch (const std::logic_error& e) {
      if (groups.empty()) throw;
      // Matched collectives that wait for each other in a circle (kernel-name matching can pair
      // them so where ranks ran them in different orders): replay this window uncoupled.
      rep.warnings.push_back(fmt::format("window {}: its {} coupled collective(s) wait for each other in a cycle across "
                                         "ranks (matched in different orders?): replayed with each rank's measured "
                                         "collectives instead ({})", set.name, groups.size(), e.what()));
      groups.clear();
      base = run();
    }
    std::vector<double> comm(graphs.size(), 0.0);
    for (size_t i = 0; i < graphs.size(); ++i) {
      for (const auto& nd : graphs[i].nodes)
        if (gtls[i]->cls(gtls[i]->ops[nd.op]) == OpClass::communication) comm[i] += nd.dur_us;
      auto ch = apply_whatif(graphs[i], *gtls[i], opt, rep.world_size, granks[i]);
      rep.changes.comm_moved += ch.comm_moved;
      rep.changes.consumers_added += ch.consumers_added;
      rep.changes.scaled += ch.scaled;
      rep.changes.fused += ch.fused;
      rep.changes.fuse_skipped_no_shape += ch.fuse_skipped_no_shape;
      rep.changes.add_not_fused(ch.not_fused);
    }
    auto changed = run();
    std::vector<double> charged_spans;
    if (opt.comm_stream && opt.sms > 0) {
      if (!opt.sm_machine)
        throw std::invalid_argument("the SM-sharing charge (--sms > 0) needs a machine (--sm-hw FILE); --sms 0 turns it off");
      if (opt.sms != opt.sm_machine->limits.sms)
        throw std::invalid_argument(fmt::format("--sms {} differs from the {} SMs of {} (--sm-hw): give --sms {} or 0 (no charge)",
                                                opt.sms, opt.sm_machine->limits.sms, opt.sm_machine->path,
                                                opt.sm_machine->limits.sms));
      // Replay the what-if for node times, charge the kernels beside moved collectives, replay again.
      std::vector<std::vector<double>> st(graphs.size()), en(graphs.size());
      if (rep.coupled) {
        auto rr = replay(cgp, groups);
        st = rr.start_us;
        en = rr.end_us;
      } else {
        for (size_t i = 0; i < graphs.size(); ++i) {
          auto rr = replay({&graphs[i]}, {});
          st[i] = rr.start_us[0];
          en[i] = rr.end_us[0];
        }
      }
      SmShareCounts counts;
      for (size_t i = 0; i < graphs.size(); ++i)
        rep.interference_us += charge_sm_sharing(graphs[i], *gtls[i], st[i], en[i], *opt.sm_machine, counts);
      rep.charged_kernels += counts.charged;
      rep.uncharged_no_grid += counts.no_grid;
      rep.charged_without_bytes += counts.without_bytes;
      charged_spans = run();
      rep.charged = true;
    }
    WhatIfWindowRow row;
    row.window = set.name;
    row.phase = set.phase;
    row.measured_by_rank.assign(nranks, 0);
    row.replay_by_rank.assign(nranks, 0);
    row.whatif_by_rank.assign(nranks, 0);
    for (size_t i = 0; i < graphs.size(); ++i) {
      size_t r = set.per_rank[i].first;
      row.measured_by_rank[r] = graphs[i].measured_span_us;
      row.replay_by_rank[r] = base[i];
      row.whatif_by_rank[r] = changed[i];
      row.measured_us = std::max(row.measured_us, graphs[i].measured_span_us);
      row.replay_us = std::max(row.replay_us, base[i]);
      row.whatif_us = std::max(row.whatif_us, changed[i]);
      if (!charged_spans.empty()) row.whatif_charged_us = std::max(row.whatif_charged_us, charged_spans[i]);
      rep.measured_by_rank[r] += graphs[i].measured_span_us;
      rep.replay_by_rank[r] += base[i];
      rep.whatif_by_rank[r] += changed[i];
      rep.comm_us = std::max(rep.comm_us, comm[i]);
      rep.max_replay_error_us = std::max(rep.max_replay_error_us, std::abs(base[i] - graphs[i].measured_span_us));
    }
    rep.windows.push_back(std::move(row));
  }
  for (const auto& row : rep.windows) {
    rep.measured_us += row.measured_us;
    rep.replay_us += row.replay_us;
    rep.whatif_us += row.whatif_us;
    rep.whatif_charged_us += row.whatif_charged_us;
  }
  for (auto& w : match_warnings(rep.collectives)) rep.warnings.push_back(std::move(w));
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
  for (const auto& s : r.options.scale) {
    nlohmann::json js = {{"pattern", s.pattern}, {"factor", s.factor}};
    if (s.rank >= 0) js["rank"] = s.rank;
    changes["scale_collective"].push_back(js);
  }
  changes["comm_kernels_moved"] = r.changes.comm_moved;
  changes["consumer_waits_added"] = r.changes.consumers_added;
  changes["events_rescaled"] = r.changes.scaled;
  changes["gemm_ar_fused"] = r.changes.fused;
  changes["gemm_ar_skipped_no_shape"] = r.changes.fuse_skipped_no_shape;
  changes["gemm_ar_not_fused"] = nlohmann::json::array();
  for (const auto& x : r.changes.not_fused)
    changes["gemm_ar_not_fused"].push_back(
        {{"file", hw::printable(x.file)}, {"event", x.event}, {"m", x.m}, {"n", x.n}, {"k", x.k}, {"reason", x.reason}, {"pairs", x.pairs}});
  j["changes"] = changes;
  j["epsilon_us"] = r.options.epsilon_us;
  j["ranks_coupled"] = r.coupled;
  j["collectives"] = {{"coupled_by_sequence", r.collectives.by_sequence},
                      {"coupled_by_order", r.collectives.by_order},
                      {"group_incomplete", r.collectives.incomplete},
                      {"mismatched", r.collectives.mismatched},
                      {"members_with_clock_skew", r.collectives.skewed_members}};
  j["dependencies"] = {{"from_sync_records", r.sync_deps}, {"inferred", r.inferred_deps}};
  j["measured_us"] = r.measured_us;
  j["replay_us"] = r.replay_us;
  j["replay_error"] = r.replay_error();
  j["max_replay_error_us"] = r.max_replay_error_us;
  j["whatif_us"] = r.whatif_us;
  j["saving_us"] = r.saving_us();
  if (r.charged) {
    j["sm_sharing"] = {{"sms", r.options.sms},
                       {"machine", r.options.sm_machine ? r.options.sm_machine->path : std::string()},
                       {"rule", "models::gemm_beside (the sm_sharing model's mechanism: round-3 placement and slots, round-7 hand-out)"},
                       {"kernels_charged_without_bytes", r.charged_without_bytes},
                       {"whatif_charged_us", r.whatif_charged_us},
                       {"saving_charged_us", r.saving_charged_us()},
                       {"kernels_charged", r.charged_kernels},
                       {"kernels_beside_without_grid", r.uncharged_no_grid},
                       {"interference_us", r.interference_us}};
  }
  j["comm_us_per_window_max"] = r.comm_us;
  j["ranks"] = r.ranks;
  j["measured_us_by_rank"] = r.measured_by_rank;
  j["replay_us_by_rank"] = r.replay_by_rank;
  j["whatif_us_by_rank"] = r.whatif_by_rank;
  j["windows"] = nlohmann::json::array();
  for (const auto& w : r.windows)
    j["windows"].push_back({{"window", w.window}, {"phase", w.phase}, {"measured_us", w.measured_us},
                            {"replay_us", w.replay_us}, {"whatif_us", w.whatif_us},
                            {"measured_us_by_rank", w.measured_by_rank}, {"replay_us_by_rank", w.replay_by_rank},
                            {"whatif_us_by_rank", w.whatif_by_rank}});
  j["warnings"] = r.warnings;
  return j;
}

std::string to_table(const WhatIfReport& r) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "trace {}: {} window(s) of phase {}, world size {}, {} rank(s){}\n", r.path, r.windows.size(),
                 r.options.window, r.world_size, r.ranks.size(),
                 r.ranks.size() < 2 ? std::string() : r.coupled ? std::string(" replayed together (collectives coupled)")
                                                                : std::string(" replayed independently"));
  for (const auto& w : r.warnings) fmt::format_to(out, "warning: {}\n", w);
  if (r.windows.empty())
    fmt::format_to(out, "warning: the trace has no {} window, so nothing was replayed (choose the phase with --window; "
                        "`fusesim trace analyze` lists the phases the trace has)\n", r.options.window);
  if (r.coupled)
    fmt::format_to(out, "collectives coupled across ranks: {} ({} by sequence number, {} by order)\n",
                   r.collectives.by_sequence + r.collectives.by_order, r.collectives.by_sequence, r.collectives.by_order);
  fmt::format_to(out, "cross-stream dependencies: {} from the trace's synchronisation records, {} inferred from timing\n",
                 r.sync_deps, r.inferred_deps);
  std::vector<std::string> what;
  if (r.options.comm_stream)
    what.push_back(fmt::format("communication on its own stream ({} kernels moved{})", r.changes.comm_moved,
                               r.options.comm_consumer_after > 0 ? fmt::format(", {} consumer waits", r.changes.consumers_added) : std::string(", producers only")));
  for (const auto& s : r.options.scale)
    what.push_back(s.rank >= 0 ? fmt::format("'{}' x {} on rank {}", s.pattern, s.factor, s.rank) : fmt::format("'{}' x {}", s.pattern, s.factor));
  if (!r.options.scale.empty()) what.push_back(fmt::format("({} events rescaled)", r.changes.scaled));
  int not_fused = 0;
  for (const auto& x : r.changes.not_fused) not_fused += x.pairs;
  if (r.options.fuse_gemm_ar)
    what.push_back(fmt::format("GEMM+all-reduce fused ({} pairs, {} skipped without a joined shape{}; each pair's time is the fused "
                               "model's: {})", r.changes.fused, r.changes.fuse_skipped_no_shape,
                               not_fused ? fmt::format(", {} not fused: the model refuses their shape (listed below)", not_fused) : std::string(),
                               r.options.gemm_ar_model.empty() ? std::string("predictor not described") : r.options.gemm_ar_model));
  fmt::format_to(out, "change: {}\n", what.empty() ? std::string("none") : fmt::format("{}", fmt::join(what, "; ")));
  for (const auto& x : r.changes.not_fused)
    fmt::format_to(out, "   not fused: {}: {} (M={} N={} K={}{}): {}\n", hw::printable(x.file), x.event, x.m, x.n, x.k,
                   x.pairs > 1 ? fmt::format(", {} pairs", x.pairs) : std::string(), x.reason);
  fmt::format_to(out, "   {:<20} {:<8} {:>14} {:>14} {:>14} {:>10}\n", "window", "phase", "measured_us", "replay_us", "whatif_us", "saving");
  for (const auto& w : r.windows) {
    double saved = std::abs(w.replay_us - w.whatif_us) < 1e-6 ? 0.0 : w.replay_us - w.whatif_us;
    fmt::format_to(out, "   {:<20} {:<8} {:>14.1f} {:>14.1f} {:>14.1f} {:>9.2f}%\n", w.window, w.phase, w.measured_us,
                   w.replay_us, w.whatif_us, w.replay_us > 0 ? 100.0 * saved / w.replay_us : 0.0);
  }
  double n = r.windows.empty() ? 1.0 : static_cast<double>(r.windows.size());
  double err = std::abs(r.replay_error()) < 1e-9 ? 0.0 : r.replay_error();
  fmt::format_to(out, "step time (mean over windows, max over ranks): measured {:.1f} us, replay {:.1f} us ({:+.3f}%, at most "
                      "{:.3f} us off on any window and rank), what-if {:.1f} us\n",
                 r.measured_us / n, r.replay_us / n, 100.0 * err, r.max_replay_error_us, r.whatif_us / n);
  double saving = std::abs(r.saving_us()) < 1e-6 ? 0.0 : r.saving_us();  // no "-0.0"
  fmt::format_to(out, "saving: {:.1f} us per step ({:.2f}%); communication per step (max rank): {:.1f} us\n",
                 saving / n, r.replay_us > 0 ? 100.0 * saving / r.replay_us : 0.0, r.comm_us);
  if (r.charged) {
    double sc = std::abs(r.saving_charged_us()) < 1e-6 ? 0.0 : r.saving_charged_us();
    fmt::format_to(out, "saving with the SM-sharing charge ({} SMs of {}, the sm_sharing model's mechanism: {} compute kernel(s) "
                        "beside a moved collective, +{:.1f} us of kernel time; {} of them for the SMs only, the collective's "
                        "bytes not in the trace; {} beside one without a grid, not charged): "
                        "{:.1f} us per step ({:.2f}%), what-if {:.1f} us\n",
                   r.options.sms, r.options.sm_machine ? r.options.sm_machine->path : std::string("?"), r.charged_kernels,
                   r.interference_us, r.charged_without_bytes, r.uncharged_no_grid, sc / n,
                   r.replay_us > 0 ? 100.0 * sc / r.replay_us : 0.0, r.whatif_charged_us / n);
  }
  if (r.ranks.size() > 1) {
    fmt::format_to(out, "step time per rank (mean over windows)\n   {:>5} {:>14} {:>14} {:>14} {:>12}\n", "rank", "measured_us",
                   "replay_us", "whatif_us", "change_us");
    for (size_t i = 0; i < r.ranks.size(); ++i) {
      double d = (r.whatif_by_rank[i] - r.replay_by_rank[i]) / n;
      fmt::format_to(out, "   {:>5} {:>14.1f} {:>14.1f} {:>14.1f} {:>+12.1f}\n", r.ranks[i], r.measured_by_rank[i] / n,
                     r.replay_by_rank[i] / n, r.whatif_by_rank[i] / n, std::abs(d) < 1e-6 ? 0.0 : d);
    }
  }
  return o;
}

StragglerReport stragglers(const std::vector<TraceFile>& files, const CategoryTable& table, const AnalyzeOptions& aopt,
                           const std::string& window, double epsilon_us, const std::string& path) {
  selected_phases(window);
  if (files.size() < 2)
    throw std::invalid_argument(fmt::format("{} holds one rank: stragglers compare the ranks of a job (give the directory "
                                            "of all its ranks' traces)", path));
  require_gpu_events(files, "compare");
  StragglerReport rep;
  rep.path = path;
  rep.window = window;
  std::vector<RankTimeline> tls;
  tls.reserve(files.size());
  for (const auto& f : files) {
    tls.push_back(build_timeline(f, table, aopt));
    for (const auto& w : f.warnings) rep.warnings.push_back(w);
  }
  rep.ranks.resize(files.size());
  for (size_t r = 0; r < files.size(); ++r) rep.ranks[r].rank = files[r].rank;
  const auto default_group = default_collective_group(files);
  for (auto& set : select_windows(tls, window)) {
    rep.windows++;
    std::vector<ReplayGraph> graphs;
    std::vector<const RankTimeline*> gtls;
    std::vector<int> granks;
    for (auto& [r, ops] : set.per_rank) {
      graphs.push_back(infer_replay_graph(tls[r], ops, epsilon_us));
      gtls.push_back(&tls[r]);
      granks.push_back(files[r].rank);
      rep.ranks[r].step_us += graphs.back().measured_span_us;
    }
    std::vector<ReplayGraph*> gp;
    for (auto& g : graphs) gp.push_back(&g);
    auto m = match_collectives(gp, gtls, granks, default_group);
    add_match(rep.collectives, m);
    for (const auto& grp : m.groups) {
      std::vector<std::pair<double, size_t>> entries;  // (entry us on the trace clock, rank index)
      for (auto [gi, ni] : grp.members) {
        const auto& g = graphs[static_cast<size_t>(gi)];
        entries.emplace_back(ns_to_us(g.t0_ns) + g.nodes[static_cast<size_t>(ni)].measured_start_us,
                             set.per_rank[static_cast<size_t>(gi)].first);
      }
      std::sort(entries.begin(), entries.end());
      const double last = entries.back().first, next = entries[entries.size() - 2].first;
      for (const auto& [t, r] : entries) {
        rep.ranks[r].collectives++;
        rep.ranks[r].waited_us += last - t;
      }
      if (!(last > next)) continue;  // a tie: nobody entered last alone
      auto& lr = rep.ranks[entries.back().second];
      lr.last++;
      lr.hold_us += last - next;
      for (size_t k = 0; k + 1 < entries.size(); ++k) lr.others_waited_us += last - entries[k].first;
    }
  }
  std::stable_sort(rep.ranks.begin(), rep.ranks.end(), [](const StragglerRow& a, const StragglerRow& b) { return a.hold_us > b.hold_us; });
  for (auto& w : match_warnings(rep.collectives)) rep.warnings.push_back(std::move(w));
  return rep;
}

nlohmann::json to_json(const StragglerReport& r) {
  nlohmann::json j;
  j["path"] = r.path;
  j["window"] = r.window;
  j["windows"] = r.windows;
  j["collectives_matched"] = r.collectives.by_sequence + r.collectives.by_order;
  j["ranks"] = nlohmann::json::array();
  for (const auto& s : r.ranks)
    j["ranks"].push_back({{"rank", s.rank}, {"collectives", s.collectives}, {"entered_last", s.last}, {"hold_us", s.hold_us},
                          {"others_waited_us", s.others_waited_us}, {"waited_us", s.waited_us}, {"step_us", s.step_us}});
  j["warnings"] = r.warnings;
  return j;
}

std::string to_table(const StragglerReport& r) {
  std::string o;
  auto out = std::back_inserter(o);
  int64_t matched = r.collectives.by_sequence + r.collectives.by_order;
  fmt::format_to(out, "trace {}: {} rank(s), {} window(s) of phase {}, {} collective(s) matched across ranks\n", r.path,
                 r.ranks.size(), r.windows, r.window, matched);
  for (const auto& w : r.warnings) fmt::format_to(out, "warning: {}\n", w);
  if (matched == 0) {
    fmt::format_to(out, "no collective is matched across the ranks here, so no rank can be said to hold the others back\n");
    return o;
  }
  fmt::format_to(out, "hold = how much earlier the collectives a rank entered last could have started had it been no later than "
                      "the next rank; others waited = the other ranks' wait in those collectives\n");
  fmt::format_to(out, "   {:>5} {:>12} {:>12} {:>12} {:>16} {:>12} {:>14}\n", "rank", "collectives", "entered_last", "hold_us",
                 "others_waited_us", "waited_us", "step_us");
  for (const auto& s : r.ranks)
    fmt::format_to(out, "   {:>5} {:>12} {:>12} {:>12.1f} {:>16.1f} {:>12.1f} {:>14.1f}\n", s.rank, s.collectives, s.last,
                   s.hold_us, s.others_waited_us, s.waited_us, s.step_us);
  std::vector<std::string> names;
  for (const auto& s : r.ranks)
    if (s.hold_us >= 0.05) names.push_back(fmt::format("rank {} ({:.1f} us over {} collective(s))", s.rank, s.hold_us, s.last));
  if (names.empty())
    fmt::format_to(out, "no rank holds the others back (every collective's last two entries are within 0.05 us)\n");
  else
    fmt::format_to(out, "held back by: {}\n", fmt::join(names, ", "));
  return o;
}

}  // namespace fusesim::trace
