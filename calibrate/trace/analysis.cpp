// fusesim trace: timelines, the analyze report and HTA's metrics.
#include "calibrate/trace/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

namespace fusesim::trace {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::prefill: return "prefill";
    case Phase::decode: return "decode";
    case Phase::unknown: return "unknown";
  }
  return "?";
}

bool is_profiler_step_name(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  for (size_t i = kPrefix.size(); i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

StepMatcher::StepMatcher(const std::string& pattern) {
  scanner_ = pattern == R"(ProfilerStep#\d+)" || pattern == R"(ProfilerStep#[0-9]+)";
  if (scanner_) return;
  try {
    re_ = hw::NamePattern::compile(pattern, "--step-regex", false);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
}

bool StepMatcher::match(std::string_view name) const {
  if (scanner_) return is_profiler_step_name(name);
  return re_.full_match(name);
}

namespace {

/// Sort and merge intervals; returns the union (sorted, disjoint, empty intervals dropped).
std::vector<NsInterval> merge_union(std::vector<NsInterval> v) {
  std::sort(v.begin(), v.end(), [](const NsInterval& x, const NsInterval& y) { return x.b < y.b; });
  std::vector<NsInterval> out;
  for (const auto& iv : v) {
    if (iv.e <= iv.b) continue;
    if (!out.empty() && iv.b <= out.back().e) out.back().e = std::max(out.back().e, iv.e);
    else out.push_back(iv);
  }
  return out;
}

int64_t measure(const std::vector<NsInterval>& u) {
  int64_t s = 0;
  for (const auto& iv : u) s += iv.e - iv.b;
  return s;
}

/// Measure of the intersection of two unions (each sorted and disjoint).
int64_t intersect_measure(const std::vector<NsInterval>& a, const std::vector<NsInterval>& b) {
  int64_t s = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].b, b[j].b), hi = std::min(a[i].e, b[j].e);
    if (hi > lo) s += hi - lo;
    if (a[i].e < b[j].e) ++i;
    else ++j;
  }
  return s;
}

/// [b, e) less a union (sorted, disjoint): the pieces left, in order.
std::vector<NsInterval> subtract(NsInterval x, const std::vector<NsInterval>& u) {
  std::vector<NsInterval> out;
  int64_t cur = x.b;
  auto it = std::lower_bound(u.begin(), u.end(), x.b, [](const NsInterval& iv, int64_t t) { return iv.e <= t; });
  for (; it != u.end() && it->b < x.e; ++it) {
    if (it->b > cur) out.push_back({cur, std::min(it->b, x.e)});
    cur = std::max(cur, it->e);
    if (cur >= x.e) break;
  }
  if (cur < x.e) out.push_back({cur, x.e});
  return out;
}

/// Add an interval to a union (sorted, disjoint) in place.
void add_to_union(std::vector<NsInterval>& u, NsInterval x) {
  if (x.e <= x.b) return;
  auto it = std::lower_bound(u.begin(), u.end(), x.b, [](const NsInterval& iv, int64_t t) { return iv.e < t; });
  auto first = it;
  while (it != u.end() && it->b <= x.e) {
    x.b = std::min(x.b, it->b);
    x.e = std::max(x.e, it->e);
    ++it;
  }
  it = u.erase(first, it);
  u.insert(it, x);
}

Phase phase_of_m(int64_t m, const AnalyzeOptions& opt) {
  return m <= opt.decode_max_m ? Phase::decode : Phase::prefill;
}

std::string short_dtype(const std::string& t) {
  std::string s = t;
  if (s.rfind("c10::", 0) == 0) s = s.substr(5);
  return s.empty() ? "?" : s;
}

double us(int64_t ns) { return ns_to_us(ns); }

}  // namespace

RankTimeline build_timeline(const TraceFile& file, const CategoryTable& table, const AnalyzeOptions& opt) {
  RankTimeline tl;
  tl.file = &file;
  tl.table = &table;
  tl.rank = file.rank;

  // --- categories, cached per interned name and kind ---
  std::unordered_map<uint64_t, std::pair<int, int>> cls_cache;
  std::unordered_map<std::string, int> family_ids;
  auto family_id = [&](const std::string& f) {
    auto it = family_ids.find(f);
    if (it != family_ids.end()) return it->second;
    int id = static_cast<int>(tl.families.size());
    tl.families.push_back(f);
    family_ids.emplace(f, id);
    return id;
  };

  tl.ops.resize(file.gpu_ops.size());
  for (uint32_t i = 0; i < file.gpu_ops.size(); ++i) {
    const auto& g = file.gpu_ops[i];
    uint64_t key = (static_cast<uint64_t>(g.name) << 2) | static_cast<uint64_t>(g.kind);
    auto it = cls_cache.find(key);
    if (it == cls_cache.end()) {
      auto c = table.classify(file.strings.str(g.name), g.kind);
      it = cls_cache.emplace(key, std::make_pair(c.category, family_id(c.family))).first;
    }
    tl.ops[i].gpu = i;
    tl.ops[i].category = it->second.first;
    tl.ops[i].family = it->second.second;
  }

  // --- join: kernel -> runtime call (correlation) -> innermost enclosing CPU op (same thread) ---
  std::unordered_map<int64_t, uint32_t> rc_of_corr;
  rc_of_corr.reserve(file.runtime_calls.size());
  for (uint32_t i = 0; i < file.runtime_calls.size(); ++i)
    if (file.runtime_calls[i].correlation >= 0) rc_of_corr.emplace(file.runtime_calls[i].correlation, i);

  std::vector<int32_t> innermost(file.runtime_calls.size(), -1);
  std::vector<int32_t> parent(file.cpu_ops.size(), -1);
  {
    // Sweep each thread's CPU ops and runtime calls in time order with a stack of open ops.
    struct Item { int64_t t; int64_t neg_dur; int kind; uint32_t idx; };  // kind 0 = op, 1 = call
    std::unordered_map<uint32_t, std::vector<Item>> per_thread;
    for (uint32_t i = 0; i < file.cpu_ops.size(); ++i) {
      const auto& c = file.cpu_ops[i];
      per_thread[c.thread].push_back({c.start_ns, -c.dur_ns, 0, i});
    }
    for (uint32_t i = 0; i < file.runtime_calls.size(); ++i) {
      const auto& r = file.runtime_calls[i];
      if (r.correlation < 0) continue;
      per_thread[r.thread].push_back({r.start_ns, -r.dur_ns, 1, i});
    }
    std::vector<uint32_t> stack;
    for (auto& [thread, items] : per_thread) {
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        if (a.t != b.t) return a.t < b.t;
        if (a.kind != b.kind) return a.kind < b.kind;  // an op encloses a call at the same ts
        return a.neg_dur < b.neg_dur;                  // longer (outer) op first
      });
      stack.clear();
      for (const auto& it : items) {
        while (!stack.empty() && file.cpu_ops[stack.back()].end_ns() < it.t) stack.pop_back();
        int32_t top = stack.empty() ? -1 : static_cast<int32_t>(stack.back());
        if (it.kind == 0) {
          parent[it.idx] = top;
          stack.push_back(it.idx);
        } else {
          innermost[it.idx] = top;
        }
      }
    }
  }

  std::vector<int32_t> gemm_rule_cache(file.strings.size(), -2);  // per name: -1 none, else 1
  std::vector<const GemmOpRule*> rule_of_name(file.strings.size(), nullptr);
  std::unordered_map<int32_t, int32_t> shape_of_cpu_op;
  for (auto& op : tl.ops) {
    const auto& g = file.gpu_ops[op.gpu];
    if (g.correlation < 0) continue;
    auto it = rc_of_corr.find(g.correlation);
    if (it == rc_of_corr.end()) continue;
    op.launch_call = static_cast<int32_t>(it->second);
    op.launch_op = innermost[it->second];
    for (int32_t c = op.launch_op, depth = 0; c >= 0 && depth < 16; c = parent[c], ++depth) {
      uint32_t nm = file.cpu_ops[c].name;
      if (gemm_rule_cache[nm] == -2) {
        rule_of_name[nm] = table.gemm_rule(file.strings.str(nm));
        gemm_rule_cache[nm] = rule_of_name[nm] ? 1 : -1;
      }
      if (gemm_rule_cache[nm] < 0) continue;
      op.gemm_op = c;
      auto sit = shape_of_cpu_op.find(c);
      if (sit == shape_of_cpu_op.end()) {
        auto s = CategoryTable::gemm_shape(*rule_of_name[nm], file, file.cpu_ops[c]);
        int32_t idx = -1;
        if (s) {
          idx = static_cast<int32_t>(tl.shapes.size());
          tl.shapes.push_back(*s);
        }
        sit = shape_of_cpu_op.emplace(c, idx).first;
      }
      op.shape = sit->second;
      break;
    }
  }

  std::sort(tl.ops.begin(), tl.ops.end(), [&](const TimelineOp& a, const TimelineOp& b) {
    const auto &x = file.gpu_ops[a.gpu], &y = file.gpu_ops[b.gpu];
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : a.gpu < b.gpu;
  });

  // --- windows ---
  StepMatcher matcher(opt.step_regex);
  std::vector<uint32_t> steps;
  {
    std::vector<int8_t> is_step(file.strings.size(), -1);
    for (uint32_t i = 0; i < file.cpu_ops.size(); ++i) {
      uint32_t nm = file.cpu_ops[i].name;
      if (is_step[nm] < 0) {
        const auto& text = file.strings.str(nm);
        is_step[nm] = matcher.match(text) ? 1 : 0;
      }
      if (is_step[nm]) steps.push_back(i);
    }
    std::sort(steps.begin(), steps.end(), [&](uint32_t a, uint32_t b) {
      return file.cpu_ops[a].start_ns < file.cpu_ops[b].start_ns;
    });
  }

  auto median_m = [&](std::vector<int64_t>& ms) -> int64_t {
    if (ms.empty()) return -1;
    std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
    return ms[ms.size() / 2];
  };

  if (!steps.empty()) {
    tl.steps_from_annotations = true;
    for (auto s : steps) {
      Window w;
      w.name = file.strings.str(file.cpu_ops[s].name);
      w.from_annotation = true;
      w.cpu_start_us = file.cpu_ops[s].start_us();
      w.cpu_end_us = file.cpu_ops[s].end_us();
      tl.windows.push_back(std::move(w));
    }
    for (auto& op : tl.ops) {
      const auto& g = file.gpu_ops[op.gpu];
      int64_t t;
      bool by_launch = false;
      if (op.launched()) {
        t = file.runtime_calls[static_cast<size_t>(op.launch_call)].start_ns;
        by_launch = true;
      } else {
        t = g.start_ns;
      }
      auto it = std::upper_bound(steps.begin(), steps.end(), t, [&](int64_t v, uint32_t s) {
        return v < file.cpu_ops[s].start_ns;
      });
      if (it == steps.begin()) continue;
      auto s = static_cast<size_t>(std::distance(steps.begin(), it) - 1);
      if (by_launch && t > file.cpu_ops[steps[s]].end_ns()) continue;  // launched between steps
      op.window = static_cast<int32_t>(s);
    }
    std::vector<std::vector<int64_t>> ms(tl.windows.size());
    for (const auto& op : tl.ops)
      if (op.window >= 0 && op.shape >= 0) ms[static_cast<size_t>(op.window)].push_back(tl.shapes[op.shape].m);
    for (size_t w = 0; w < tl.windows.size(); ++w) {
      tl.windows[w].median_m = median_m(ms[w]);
      tl.windows[w].phase = tl.windows[w].median_m < 0 ? Phase::unknown : phase_of_m(tl.windows[w].median_m, opt);
    }
  } else {
    // GEMM-M runs. first/last are positions in `votes` (timeline indices of voting GEMMs).
    struct Run { Phase phase; int votes; size_t first, last; };
    std::vector<size_t> votes;
    std::vector<Run> runs;
    for (size_t i = 0; i < tl.ops.size(); ++i) {
      if (tl.ops[i].shape < 0) continue;
      Phase p = phase_of_m(tl.shapes[tl.ops[i].shape].m, opt);
      votes.push_back(i);
      if (!runs.empty() && runs.back().phase == p) {
        runs.back().votes++;
        runs.back().last = votes.size() - 1;
      } else {
        runs.push_back({p, 1, votes.size() - 1, votes.size() - 1});
      }
    }
    // Merge short runs into the previous one (a short first run into the next), then coalesce.
    std::vector<Run> merged;
    int pending = 0;
    for (size_t ri = 0; ri < runs.size(); ++ri) {
      Run r = runs[ri];
      bool short_run = r.votes < opt.min_phase_votes;
      if (short_run && !merged.empty()) {
        merged.back().votes += r.votes;
        merged.back().last = r.last;
        continue;
      }
      if (short_run && ri + 1 < runs.size()) {
        pending += r.votes;
        continue;
      }
      r.votes += pending;
      pending = 0;
      if (!merged.empty() && merged.back().phase == r.phase) {
        merged.back().votes += r.votes;
        merged.back().last = r.last;
      } else {
        merged.push_back(r);
      }
    }
    if (merged.empty()) {
      Window w;
      w.name = "all";
      tl.windows.push_back(w);
      for (auto& op : tl.ops) op.window = 0;
    } else {
      // Boundaries: the largest idle gap between the last vote of a run and the
      // min_phase_votes-th vote of the next (a step's trailing GEMMs, e.g. the LM head with
      // M = requests, may vote for the next run's phase).
      std::vector<size_t> begin_of(merged.size(), 0);
      for (size_t r = 1; r < merged.size(); ++r) {
        size_t from = votes[merged[r - 1].last];
        size_t upto_vote = std::min(merged[r].first + static_cast<size_t>(std::max(opt.min_phase_votes, 1)) - 1, merged[r].last);
        size_t upto = votes[upto_vote];
        int64_t max_end = file.gpu_ops[tl.ops[from].gpu].end_ns();
        int64_t best_gap = std::numeric_limits<int64_t>::min();
        size_t best = votes[merged[r].first];
        for (size_t i = from + 1; i <= upto; ++i) {
          const auto& g = file.gpu_ops[tl.ops[i].gpu];
          int64_t gap = g.start_ns - max_end;
          if (gap > best_gap) { best_gap = gap; best = i; }
          max_end = std::max(max_end, g.end_ns());
        }
        begin_of[r] = best;
      }
      for (size_t r = 0; r < merged.size(); ++r) {
        Window w;
        w.name = fmt::format("run {}", r);
        w.phase = merged[r].phase;
        tl.windows.push_back(std::move(w));
        size_t end = r + 1 < merged.size() ? begin_of[r + 1] : tl.ops.size();
        for (size_t i = begin_of[r]; i < end; ++i) tl.ops[i].window = static_cast<int32_t>(r);
      }
      std::vector<std::vector<int64_t>> ms(tl.windows.size());
      for (const auto& op : tl.ops)
        if (op.window >= 0 && op.shape >= 0) ms[static_cast<size_t>(op.window)].push_back(tl.shapes[op.shape].m);
      for (size_t w = 0; w < tl.windows.size(); ++w) tl.windows[w].median_m = median_m(ms[w]);
    }
  }

  // --- GPU spans of windows, the rank's busy union, and each window's share of the timeline ---
  std::vector<NsInterval> span(tl.windows.size(), NsInterval{0, 0});
  std::vector<bool> seen(tl.windows.size(), false);
  std::vector<NsInterval> all;
  all.reserve(tl.ops.size());
  for (const auto& op : tl.ops) {
    const auto& g = file.gpu_ops[op.gpu];
    all.push_back({g.start_ns, g.end_ns()});
    if (op.window < 0) continue;
    auto w = static_cast<size_t>(op.window);
    tl.windows[w].gpu_events++;
    if (!seen[w]) {
      span[w] = {g.start_ns, g.end_ns()};
      seen[w] = true;
    } else {
      span[w].b = std::min(span[w].b, g.start_ns);
      span[w].e = std::max(span[w].e, g.end_ns());
    }
  }
  tl.busy = merge_union(std::move(all));
  tl.regions.assign(tl.windows.size(), {});
  std::vector<NsInterval> earlier;  // union of earlier windows' spans
  for (size_t w = 0; w < tl.windows.size(); ++w) {
    auto& win = tl.windows[w];
    if (!seen[w]) continue;
    win.start_us = us(span[w].b);
    win.end_us = us(span[w].e);
    tl.regions[w] = subtract(span[w], earlier);
    add_to_union(earlier, span[w]);
    win.wall_us = us(measure(tl.regions[w]));
    win.busy_us = us(intersect_measure(tl.regions[w], tl.busy));
    if (win.from_annotation) win.ran_past_us = std::max(0.0, win.end_us - win.cpu_end_us);
  }
  return tl;
}

std::vector<std::vector<uint32_t>> ops_by_window(const RankTimeline& tl) {
  std::vector<std::vector<uint32_t>> per(tl.windows.size());
  for (uint32_t i = 0; i < tl.ops.size(); ++i)
    if (tl.ops[i].window >= 0) per[static_cast<size_t>(tl.ops[i].window)].push_back(i);
  return per;
}

namespace {

/// Categories, families, streams, communication and its overlap of one group of ops (added to s).
void add_op_stats(const RankTimeline& tl, const std::vector<uint32_t>& idx, PhaseStats& s, std::set<int64_t>& streams) {
  const auto& file = *tl.file;
  std::map<int64_t, std::vector<NsInterval>> comm_by_stream, compute_by_stream;
  for (uint32_t i : idx) {
    const auto& op = tl.ops[i];
    const auto& g = file.gpu_ops[op.gpu];
    s.events++;
    s.kernel_us += g.dur_us();
    const auto& cat = tl.table->category(op.category);
    auto& cs = s.by_category[cat.name];
    cs.count++;
    cs.total_us += g.dur_us();
    const auto& fam = tl.families[static_cast<size_t>(op.family)];
    auto& fs = s.by_family[fam.empty() ? cat.name : cat.name + "/" + fam];
    fs.count++;
    fs.total_us += g.dur_us();
    streams.insert(g.stream);
    if (cat.cls == OpClass::communication) {
      s.comm_us += g.dur_us();
      comm_by_stream[g.stream].push_back({g.start_ns, g.end_ns()});
    } else if (cat.cls == OpClass::compute) {
      compute_by_stream[g.stream].push_back({g.start_ns, g.end_ns()});
    }
    if (cat.name == "gemm") {
      s.gemm_kernels++;
      if (op.shape >= 0) s.gemm_kernels_with_shape++;
    }
  }
  for (auto& [stream, ivs] : comm_by_stream) {
    auto cu = merge_union(ivs);
    s.comm_busy_us += us(measure(cu));
    std::vector<NsInterval> other;
    for (const auto& [st2, c] : compute_by_stream)
      if (st2 != stream) other.insert(other.end(), c.begin(), c.end());
    s.comm_overlap_us += us(intersect_measure(cu, merge_union(std::move(other))));
  }
}

/// Idle gaps of the busy union inside a set of disjoint pieces (sorted): count >= min, largest.
void add_gaps(const std::vector<NsInterval>& pieces, const std::vector<NsInterval>& busy, double gap_min_us,
              PhaseStats& s) {
  for (const auto& p : pieces) {
    for (const auto& gap : subtract(p, busy)) {
      // A piece's own edges are event edges (a span starts at an event start and ends at an
      // event end; a piece cut by an earlier span starts at that span's last end), so each
      // uncovered part is an idle gap between events.
      double g = us(gap.e - gap.b);
      if (g >= gap_min_us) s.idle_gaps++;
      s.largest_gap_us = std::max(s.largest_gap_us, g);
    }
  }
}

}  // namespace

PhaseStats window_stats(const RankTimeline& tl, const std::vector<int>& windows, const std::string& phase,
                        const AnalyzeOptions& opt) {
  PhaseStats s;
  s.phase = phase;
  std::set<int64_t> streams;
  auto per = ops_by_window(tl);
  for (int w : windows) {
    const auto& win = tl.windows.at(static_cast<size_t>(w));
    if (win.gpu_events == 0) {
      s.empty_windows++;
      continue;
    }
    s.windows++;
    s.wall_us += win.wall_us;
    s.busy_us += win.busy_us;
    s.span_us += win.span_us();
    if (win.from_annotation) s.cpu_us += win.cpu_us();
    add_gaps(tl.regions[static_cast<size_t>(w)], tl.busy, opt.gap_min_us, s);
    add_op_stats(tl, per[static_cast<size_t>(w)], s, streams);
  }
  s.idle_us = s.wall_us - s.busy_us;
  s.streams.assign(streams.begin(), streams.end());
  return s;
}

PhaseStats whole_trace_stats(const RankTimeline& tl, const AnalyzeOptions& opt) {
  PhaseStats s;
  s.phase = "all";
  if (tl.ops.empty()) return s;
  std::set<int64_t> streams;
  std::vector<uint32_t> idx(tl.ops.size());
  std::iota(idx.begin(), idx.end(), 0u);
  s.windows = 1;
  NsInterval whole{tl.gpu(tl.ops.front()).start_ns, tl.gpu(tl.ops.front()).end_ns()};  // busy may be empty (0-us events)
  for (const auto& op : tl.ops) {
    whole.b = std::min(whole.b, tl.gpu(op).start_ns);
    whole.e = std::max(whole.e, tl.gpu(op).end_ns());
  }
  s.wall_us = us(whole.e - whole.b);
  s.span_us = s.wall_us;
  s.busy_us = us(measure(tl.busy));
  for (const auto& w : tl.windows)
    if (w.from_annotation && w.gpu_events > 0) s.cpu_us += w.cpu_us();
  add_gaps({whole}, tl.busy, opt.gap_min_us, s);
  add_op_stats(tl, idx, s, streams);
  s.idle_us = s.wall_us - s.busy_us;
  s.streams.assign(streams.begin(), streams.end());
  return s;
}

AnalysisReport analyze(const std::vector<TraceFile>& files, const CategoryTable& table,
                       const AnalyzeOptions& opt, const std::string& window, const std::string& path) {
  if (window != "prefill" && window != "decode" && window != "all")
    throw std::invalid_argument(fmt::format("--window must be prefill, decode or all, not \"{}\"", window));
  require_gpu_events(files, "analyze");
  AnalysisReport rep;
  rep.path = path;
  rep.window = window;
  rep.world_size = static_cast<int>(files.size());
  for (const auto& f : files) rep.world_size = std::max(rep.world_size, f.world_size);

  std::map<std::string, std::vector<std::pair<double, int>>> comm_per_phase;  // phase -> (us, rank)
  struct ShapeKey {
    std::string phase, op;
    int64_t m, n, k, batch;
    std::string dtype;
    bool operator<(const ShapeKey& o) const {
      return std::tie(phase, op, m, n, k, batch, dtype) < std::tie(o.phase, o.op, o.m, o.n, o.k, o.batch, o.dtype);
    }
  };
  struct ShapeAcc { std::set<std::pair<int, int32_t>> calls; int64_t kernels = 0; double us = 0; std::set<std::string> families; std::string example; };
  std::map<ShapeKey, ShapeAcc> shapes;

  for (const auto& f : files) {
    RankTimeline tl = build_timeline(f, table, opt);
    for (const auto& w : f.warnings) rep.warnings.push_back(w);
    RankReport rr;
    rr.rank = f.rank;
    rr.file = f.path;
    rr.device_name = f.device_name;
    rr.bytes = f.bytes;
    rr.events = f.events;
    rr.gpu_events = static_cast<int64_t>(f.gpu_ops.size());
    rr.skipped = f.skipped;
    for (const auto& [k, v] : f.skipped) rep.skipped[k] += v;
    rr.window_rule = tl.steps_from_annotations ? "step annotations (" + opt.step_regex + ")" : "GEMM M runs";
    rr.windows = tl.windows;
    for (const auto& w : tl.windows)
      if (w.gpu_events == 0) rr.empty_windows++;
    for (uint32_t i = 0; i < tl.ops.size(); ++i)
      if (tl.ops[i].launched()) rr.launched++;
    std::map<Phase, std::vector<int>> by_phase;
    for (size_t w = 0; w < tl.windows.size(); ++w) by_phase[tl.windows[w].phase].push_back(static_cast<int>(w));
    std::vector<Phase> wanted;
    if (window == "all") wanted = {Phase::prefill, Phase::decode, Phase::unknown};
    else wanted = {window == "prefill" ? Phase::prefill : Phase::decode};
    for (Phase p : wanted) {
      auto it = by_phase.find(p);
      if (it == by_phase.end()) {
        if (window != "all") {
          PhaseStats empty;
          empty.phase = to_string(p);
          rr.phases.push_back(empty);
        }
        continue;
      }
      rr.phases.push_back(window_stats(tl, it->second, to_string(p), opt));
    }
    if (window == "all") rr.phases.push_back(whole_trace_stats(tl, opt));
    for (const auto& ps : rr.phases) comm_per_phase[ps.phase].push_back({ps.comm_us, f.rank});

    // GEMM shapes.
    std::set<Phase> wanted_set(wanted.begin(), wanted.end());
    for (const auto& op : tl.ops) {
      if (op.shape < 0) continue;
      Phase p = op.window >= 0 ? tl.windows[static_cast<size_t>(op.window)].phase : Phase::unknown;
      if (!wanted_set.count(p)) continue;
      const auto& s = tl.shapes[op.shape];
      std::string dt = short_dtype(f.strings.str(s.a_dtype));
      std::string dtb = short_dtype(f.strings.str(s.b_dtype));
      if (dtb != dt) dt += "*" + dtb;
      ShapeKey key{to_string(p), f.strings.str(f.cpu_ops[op.gemm_op].name), s.m, s.n, s.k, s.batch, dt};
      auto& acc = shapes[key];
      acc.calls.insert({f.rank, op.gemm_op});
      acc.kernels++;
      acc.us += f.gpu_ops[op.gpu].dur_us();
      const auto& fam = tl.families[static_cast<size_t>(op.family)];
      acc.families.insert(table.category(op.category).name + (fam.empty() ? "" : "/" + fam));
      if (acc.example.empty()) acc.example = f.strings.str(f.gpu_ops[op.gpu].name);
    }

    for (const auto& c : f.cpu_ops) {
      if (!c.has_input_dims) continue;
      rep.ops_with_input_dims++;
      if (c.input_dims_empty) {
        rep.ops_with_empty_input_dims++;
        rep.empty_input_dims_by_op[f.strings.str(c.name)]++;
      }
    }
    rep.ranks.push_back(std::move(rr));
  }

  for (auto& [phase, v] : comm_per_phase) {
    std::sort(v.begin(), v.end());
    BalanceRow b;
    b.phase = phase;
    b.min_us = v.front().first;
    b.min_rank = v.front().second;
    b.max_us = v.back().first;
    b.max_rank = v.back().second;
    size_t n = v.size();
    b.median_us = n % 2 ? v[n / 2].first : 0.5 * (v[n / 2 - 1].first + v[n / 2].first);
    rep.comm_balance.push_back(b);
  }
  for (auto& [k, acc] : shapes) {
    ShapeRow r;
    r.phase = k.phase;
    r.op = k.op;
    r.m = k.m;
    r.n = k.n;
    r.k = k.k;
    r.batch = k.batch;
    r.dtype = k.dtype;
    r.calls = static_cast<int64_t>(acc.calls.size());
    r.kernels = acc.kernels;
    r.kernel_us = acc.us;
    for (const auto& fam : acc.families) r.families += (r.families.empty() ? "" : ",") + fam;
    r.example_kernel = acc.example;
    rep.gemm_shapes.push_back(r);
  }
  std::stable_sort(rep.gemm_shapes.begin(), rep.gemm_shapes.end(),
                   [](const ShapeRow& a, const ShapeRow& b) {
                     return a.phase != b.phase ? a.phase < b.phase : a.kernel_us > b.kernel_us;
                   });
  return rep;
}

// ---------------------------------------------------------------------------------- output ----

namespace {
nlohmann::json stats_json(const PhaseStats& s) {
  nlohmann::json j;
  j["phase"] = s.phase;
  j["windows"] = s.windows;
  j["windows_without_gpu_events"] = s.empty_windows;
  j["gpu_events"] = s.events;
  j["wall_us"] = s.wall_us;
  j["span_us"] = s.span_us;
  j["cpu_step_us"] = s.cpu_us;
  j["busy_us"] = s.busy_us;
  j["idle_us"] = s.idle_us;
  j["idle_gaps"] = s.idle_gaps;
  j["largest_gap_us"] = s.largest_gap_us;
  j["kernel_us"] = s.kernel_us;
  j["streams"] = s.streams;
  auto cats = nlohmann::json::object();
  for (const auto& [k, c] : s.by_category) cats[k] = {{"count", c.count}, {"total_us", c.total_us}, {"avg_us", c.avg_us()}};
  j["categories"] = cats;
  auto fams = nlohmann::json::object();
  for (const auto& [k, c] : s.by_family) fams[k] = {{"count", c.count}, {"total_us", c.total_us}, {"avg_us", c.avg_us()}};
  j["families"] = fams;
  j["communication"] = {{"kernel_us", s.comm_us},
                        {"busy_us", s.comm_busy_us},
                        {"overlapped_with_compute_us", s.comm_overlap_us},
                        {"overlap_fraction", s.overlap_fraction()}};
  j["gemm_kernels"] = s.gemm_kernels;
  j["gemm_kernels_with_shape"] = s.gemm_kernels_with_shape;
  return j;
}
}  // namespace

nlohmann::json to_json(const AnalysisReport& r) {
  nlohmann::json j;
  j["path"] = r.path;
  j["world_size"] = r.world_size;
  j["window"] = r.window;
  j["ranks"] = nlohmann::json::array();
  for (const auto& rr : r.ranks) {
    nlohmann::json jr;
    jr["rank"] = rr.rank;
    jr["file"] = rr.file;
    jr["device"] = rr.device_name;
    jr["bytes"] = rr.bytes;
    jr["events"] = rr.events;
    jr["gpu_events"] = rr.gpu_events;
    jr["gpu_events_joined_to_launch"] = rr.launched;
    jr["skipped_events"] = rr.skipped;
    jr["window_rule"] = rr.window_rule;
    jr["windows"] = nlohmann::json::array();
    for (const auto& w : rr.windows) {
      nlohmann::json jw = {{"name", w.name}, {"phase", to_string(w.phase)}, {"gpu_events", w.gpu_events},
                           {"start_us", w.start_us}, {"end_us", w.end_us}, {"span_us", w.span_us()},
                           {"wall_us", w.wall_us}, {"busy_us", w.busy_us}, {"median_gemm_m", w.median_m}};
      if (w.from_annotation) {
        jw["cpu_start_us"] = w.cpu_start_us;
        jw["cpu_end_us"] = w.cpu_end_us;
        jw["cpu_step_us"] = w.cpu_us();
        jw["ran_past_cpu_step_us"] = w.ran_past_us;
      }
      jr["windows"].push_back(jw);
    }
    jr["windows_without_gpu_events"] = rr.empty_windows;
    jr["phases"] = nlohmann::json::array();
    for (const auto& s : rr.phases) jr["phases"].push_back(stats_json(s));
    j["ranks"].push_back(jr);
  }
  j["communication_balance"] = nlohmann::json::array();
  for (const auto& b : r.comm_balance)
    j["communication_balance"].push_back({{"phase", b.phase}, {"min_us", b.min_us}, {"min_rank", b.min_rank},
                                          {"median_us", b.median_us}, {"max_us", b.max_us}, {"max_rank", b.max_rank}});
  j["gemm_shapes"] = nlohmann::json::array();
  for (const auto& s : r.gemm_shapes)
    j["gemm_shapes"].push_back({{"phase", s.phase}, {"op", s.op}, {"m", s.m}, {"n", s.n}, {"k", s.k},
                                {"batch", s.batch}, {"dtype", s.dtype}, {"calls", s.calls}, {"kernels", s.kernels},
                                {"kernel_us", s.kernel_us}, {"families", s.families}, {"example_kernel", s.example_kernel}});
  j["input_dims"] = {{"ops_with_input_dims", r.ops_with_input_dims},
                     {"ops_with_empty_input_dims", r.ops_with_empty_input_dims},
                     {"empty_by_op", r.empty_input_dims_by_op}};
  j["skipped_events"] = r.skipped;
  j["warnings"] = r.warnings;
  return j;
}

namespace {
/// The per-step table of one rank (at most 24 rows; JSON lists every window).
void print_steps(std::back_insert_iterator<std::string> out, const RankReport& rr) {
  if (rr.windows.empty()) return;
  bool annotated = std::any_of(rr.windows.begin(), rr.windows.end(), [](const Window& w) { return w.from_annotation; });
  fmt::format_to(out, "   {:<22} {:<8} {:>7} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "window", "phase", "events",
                 annotated ? "cpu_step_us" : "", "gpu_span_us", "wall_us", "busy_us", annotated ? "ran_past_us" : "");
  constexpr size_t kRows = 24;
  double wall = 0, span = 0, cpu = 0;
  for (size_t i = 0; i < rr.windows.size(); ++i) {
    const auto& w = rr.windows[i];
    wall += w.wall_us;
    span += w.span_us();
    if (w.from_annotation) cpu += w.cpu_us();
    if (i >= kRows) continue;
    std::string name = w.name.size() > 22 ? w.name.substr(0, 19) + "..." : w.name;
    fmt::format_to(out, "   {:<22} {:<8} {:>7} {:>12} {:>12.1f} {:>12.1f} {:>12.1f} {:>12}\n", name, to_string(w.phase), w.gpu_events,
                   w.from_annotation ? fmt::format("{:.1f}", w.cpu_us()) : std::string(), w.span_us(), w.wall_us, w.busy_us,
                   w.from_annotation ? fmt::format("{:.1f}", w.ran_past_us) : std::string());
  }
  if (rr.windows.size() > kRows)
    fmt::format_to(out, "   ... {} more window(s) (--format json lists every one)\n", rr.windows.size() - kRows);
  fmt::format_to(out, "   {:<22} {:<8} {:>7} {:>12} {:>12.1f} {:>12.1f}\n", "(sum)", "", "",
                 annotated ? fmt::format("{:.1f}", cpu) : std::string(), span, wall);
}
}  // namespace

std::string to_table(const AnalysisReport& r) {
  std::string o;
  auto out = std::back_inserter(o);
  int64_t events = 0;
  for (const auto& rr : r.ranks) events += static_cast<int64_t>(rr.events);
  fmt::format_to(out, "trace {}: {} rank(s), world size {}, {} events\n", r.path, r.ranks.size(), r.world_size, events);
  for (const auto& w : r.warnings) fmt::format_to(out, "warning: {}\n", w);
  if (!r.skipped.empty()) {
    fmt::format_to(out, "skipped event kinds (ph/cat: count):");
    for (const auto& [k, v] : r.skipped) fmt::format_to(out, " {}: {};", k, v);
    o += "\n";
  }
  for (const auto& rr : r.ranks) {
    fmt::format_to(out, "\n== rank {} ({}{}{}) — windows from {}: {}\n", rr.rank, rr.file,
                   rr.device_name.empty() ? "" : ", ", rr.device_name, rr.window_rule, rr.windows.size());
    fmt::format_to(out, "   GPU events joined to their launch: {} of {}\n", rr.launched, rr.gpu_events);
    print_steps(out, rr);
    for (const auto& s : rr.phases) {
      if (s.windows == 0) {
        if (s.empty_windows > 0)
          fmt::format_to(out, "-- {}: {} window{} of this phase, none holding a GPU event\n", s.phase, s.empty_windows,
                         s.empty_windows == 1 ? "" : "s");
        else if (rr.empty_windows > 0)
          fmt::format_to(out, "-- {}: no window of this phase ({} window{} of the trace hold{} no GPU event, so {} phase is unknown)\n",
                         s.phase, rr.empty_windows, rr.empty_windows == 1 ? "" : "s", rr.empty_windows == 1 ? "s" : "",
                         rr.empty_windows == 1 ? "its" : "their");
        else
          fmt::format_to(out, "-- {}: no window of this phase\n", s.phase);
        continue;
      }
      double busy_pct = s.wall_us > 0 ? 100.0 * s.busy_us / s.wall_us : 0;
      std::string empties = s.empty_windows > 0 ? fmt::format(" and {} without GPU events", s.empty_windows) : std::string();
      fmt::format_to(out, "-- {} ({} window{}{}): wall {:.1f} us, GPU busy {:.1f} us ({:.1f}%), idle {:.1f} us in {} gap(s) (largest {:.1f} us), streams [{}]\n",
                     s.phase, s.windows, s.windows == 1 ? "" : "s", empties, s.wall_us, s.busy_us, busy_pct, s.idle_us,
                     s.idle_gaps, s.largest_gap_us, fmt::join(s.streams, ","));
      if (s.span_us > s.wall_us + 0.05 && s.phase != "all")
        fmt::format_to(out, "   (the windows' own GPU spans add up to {:.1f} us: steps overlap on the GPU, and each overlap is "
                            "counted once, in the earlier step)\n", s.span_us);
      fmt::format_to(out, "   {:<32} {:>8} {:>12} {:>10} {:>7}\n", "category  (family)", "count", "total_us", "avg_us", "%");
      auto pct = [&](double us) { return s.kernel_us > 0 ? 100.0 * us / s.kernel_us : 0.0; };
      std::vector<std::pair<std::string, CategoryStat>> cats(s.by_category.begin(), s.by_category.end());
      std::sort(cats.begin(), cats.end(), [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
      for (const auto& [cat, c] : cats) {
        std::vector<std::pair<std::string, CategoryStat>> fams;  // families of this category
        for (const auto& [k, f] : s.by_family)
          if (k.size() > cat.size() && k.compare(0, cat.size() + 1, cat + "/") == 0) fams.emplace_back(k.substr(cat.size() + 1), f);
        std::sort(fams.begin(), fams.end(), [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
        bool one = fams.size() == 1 && fams[0].second.count == c.count;
        std::string label = one ? fmt::format("{} ({})", cat, fams[0].first) : cat;
        fmt::format_to(out, "   {:<32} {:>8} {:>12.1f} {:>10.2f} {:>6.1f}%\n", label, c.count, c.total_us, c.avg_us(), pct(c.total_us));
        if (one) continue;
        for (const auto& [fam, f] : fams)
          fmt::format_to(out, "     {:<30} {:>8} {:>12.1f} {:>10.2f} {:>6.1f}%\n", "- " + fam, f.count, f.total_us, f.avg_us(), pct(f.total_us));
      }
      fmt::format_to(out, "   communication {:.1f} us ({} kernel us); concurrent with compute on another stream: {:.1f} us = {:.1f}%\n",
                     s.comm_busy_us, s.comm_us, s.comm_overlap_us, 100.0 * s.overlap_fraction());
    }
  }
  if (!r.comm_balance.empty()) {
    fmt::format_to(out, "\ncommunication time across ranks (sum of communication kernel us)\n");
    fmt::format_to(out, "   {:<8} {:>12} {:>12} {:>12} {:>9}\n", "phase", "min", "median", "max", "max/min");
    for (const auto& b : r.comm_balance)
      fmt::format_to(out, "   {:<8} {:>8.1f} (r{}) {:>12.1f} {:>8.1f} (r{}) {:>9.3f}\n", b.phase, b.min_us, b.min_rank,
                     b.median_us, b.max_us, b.max_rank, b.min_us > 0 ? b.max_us / b.min_us : 0.0);
  }
  if (!r.gemm_shapes.empty()) {
    fmt::format_to(out, "\nGEMM shapes joined from CPU operators (all ranks)\n");
    fmt::format_to(out, "   {:<8} {:<18} {:>22} {:<22} {:>7} {:>8} {:>12} {:>9}  {}\n", "phase", "op", "MxNxK (batch)",
                   "dtype", "calls", "kernels", "kernel_us", "us/call", "kernel families");
    for (const auto& s : r.gemm_shapes) {
      std::string shape = fmt::format("{}x{}x{}", s.m, s.n, s.k);
      if (s.batch != 1) shape += fmt::format(" ({})", s.batch);
      fmt::format_to(out, "   {:<8} {:<18} {:>22} {:<22} {:>7} {:>8} {:>12.1f} {:>9.2f}  {}\n", s.phase, s.op, shape,
                     s.dtype, s.calls, s.kernels, s.kernel_us, s.calls ? s.kernel_us / static_cast<double>(s.calls) : 0.0,
                     s.families);
    }
  }
  fmt::format_to(out, "\nCPU operators with \"Input Dims\": {}, of which empty (no tensor input): {}\n",
                 r.ops_with_input_dims, r.ops_with_empty_input_dims);
  std::vector<std::pair<std::string, int64_t>> e(r.empty_input_dims_by_op.begin(), r.empty_input_dims_by_op.end());
  std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [k, v] : e) fmt::format_to(out, "   {:<40} {:>10}\n", k, v);
  return o;
}

// ------------------------------------------------------------------------------ HTA's metrics ----

const char* to_string(HtaKernelType t) {
  switch (t) {
    case HtaKernelType::communication: return "COMMUNICATION";
    case HtaKernelType::computation: return "COMPUTATION";
    case HtaKernelType::memory: return "MEMORY";
    case HtaKernelType::synchronization: return "SYNCHRONIZATION";
  }
  return "?";
}

HtaKernelType hta_kernel_type(std::string_view n) {
  auto starts = [&](std::string_view p) { return n.size() >= p.size() && n.compare(0, p.size(), p) == 0; };
  // HTA: communication ^nccl|^hip|^hccl|.*ncclKernel.*, memory ^(hip)?Memcpy|^(hip)?Memset|^dma.
  if (starts("nccl") || starts("hip") || starts("hccl") || n.find("ncclKernel") != std::string_view::npos)
    return HtaKernelType::communication;
  if (starts("Memcpy") || starts("Memset") || starts("hipMemcpy") || starts("hipMemset") || starts("dma"))
    return HtaKernelType::memory;
  return HtaKernelType::computation;
}

namespace {
/// Round to 2 decimals the way pandas/numpy do (x * 100, round half to even, / 100).
double round2(double x) { return std::nearbyint(x * 100.0) / 100.0; }
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
}  // namespace

HtaMetrics hta_metrics(const TraceFile& f) {
  HtaMetrics m;
  m.rank = f.rank;
  m.file = f.path;
  // The last ProfilerStep (by start) and the launch time of each correlation id.
  int64_t last_step = 0;
  bool has_steps = false;
  std::vector<std::pair<int64_t, std::string>> steps;
  for (const auto& c : f.cpu_ops)
    if (is_profiler_step_name(f.strings.str(c.name))) steps.emplace_back(c.start_ns, f.strings.str(c.name));
  std::sort(steps.begin(), steps.end());
  if (!steps.empty()) {
    has_steps = true;
    last_step = steps.back().first;
    m.step_dropped = steps.back().second;
    for (size_t i = 0; i + 1 < steps.size(); ++i) m.steps_kept.push_back(steps[i].second);
  }
  std::unordered_map<int64_t, int64_t> launch_at;
  if (has_steps) {
    launch_at.reserve(f.runtime_calls.size());
    for (const auto& r : f.runtime_calls)
      if (r.correlation >= 0) launch_at.emplace(r.correlation, r.start_ns);
  }
  auto kept = [&](int64_t correlation) {
    if (!has_steps) return true;
    auto it = launch_at.find(correlation);
    return it != launch_at.end() && it->second < last_step;
  };
  struct Ev { int64_t b, e; HtaKernelType t; };
  std::vector<Ev> evs;
  auto add = [&](int64_t start_ns, int64_t dur_ns, HtaKernelType t) {
    int64_t b = ceil_div(f.origin_ns + start_ns, 1000), e = floor_div(f.origin_ns + start_ns + dur_ns, 1000);
    evs.push_back({b, std::max(b, e), t});
  };
  for (const auto& g : f.gpu_ops) {
    if (!g.has_stream || g.stream == -1) continue;
    if (!kept(g.correlation)) { m.dropped_events++; continue; }
    add(g.start_ns, g.dur_ns, hta_kernel_type(f.strings.str(g.name)));
  }
  for (const auto& s : f.syncs) {
    if (!s.has_stream || s.stream == -1) continue;
    if (!kept(s.correlation)) { m.dropped_events++; continue; }
    add(s.start_ns, s.dur_ns, HtaKernelType::synchronization);
  }
  m.gpu_events = static_cast<int64_t>(evs.size());
  if (evs.empty())
    throw TraceError(f.path, -1, has_steps ? fmt::format("HTA's definitions keep no GPU event: none was launched before the last "
                                                         "ProfilerStep ({}), which HTA drops", m.step_dropped)
                                           : std::string("HTA's definitions find no GPU event (args.stream != -1)"));
  int64_t lo = evs.front().b, hi = evs.front().e;
  std::vector<NsInterval> all, comp, comm;  // integer microseconds here
  for (const auto& e : evs) {
    lo = std::min(lo, e.b);
    hi = std::max(hi, e.e);
    all.push_back({e.b, e.e});
    if (e.t == HtaKernelType::computation) comp.push_back({e.b, e.e});
    if (e.t == HtaKernelType::communication) comm.push_back({e.b, e.e});
  }
  auto ua = merge_union(all), uc = merge_union(comp), um = merge_union(comm);
  m.span_us = hi - lo;
  m.busy_us = measure(ua);
  m.idle_us = m.span_us - m.busy_us;
  m.compute_us = measure(uc);
  m.non_compute_us = m.busy_us - m.compute_us;
  auto pct = [&](int64_t x) { return m.span_us > 0 ? round2(100.0 * static_cast<double>(x) / static_cast<double>(m.span_us)) : 0.0; };
  m.idle_pct = pct(m.idle_us);
  m.compute_pct = pct(m.compute_us);
  m.non_compute_pct = pct(m.non_compute_us);
  m.comm_us = measure(um);
  m.overlap_us = intersect_measure(uc, um);
  if (m.comm_us > 0) m.overlap_pct = round2(100.0 * static_cast<double>(m.overlap_us) / static_cast<double>(m.comm_us));
  int64_t total = 0;
  std::map<HtaKernelType, HtaTypeRow> rows;
  for (const auto& e : evs) {
    auto& r = rows[e.t];
    r.type = e.t;
    r.events++;
    r.sum_us += e.e - e.b;
    total += e.e - e.b;
  }
  for (auto& [t, r] : rows) {
    r.pct = total > 0 ? round2(100.0 * static_cast<double>(r.sum_us) / static_cast<double>(total)) : 0.0;
    m.kernel_types.push_back(r);
  }
  std::sort(m.kernel_types.begin(), m.kernel_types.end(), [](const HtaTypeRow& a, const HtaTypeRow& b) { return a.sum_us > b.sum_us; });
  return m;
}

HtaReport hta_report(const std::vector<TraceFile>& files, const std::string& path) {
  require_gpu_events(files, "analyze");
  HtaReport r;
  r.path = path;
  for (const auto& f : files) {
    for (const auto& w : f.warnings) r.warnings.push_back(w);
    r.ranks.push_back(hta_metrics(f));
  }
  return r;
}

nlohmann::json to_json(const HtaReport& r) {
  nlohmann::json j;
  j["path"] = r.path;
  j["definitions"] = "hta";
  j["ranks"] = nlohmann::json::array();
  for (const auto& m : r.ranks) {
    nlohmann::json jr;
    jr["rank"] = m.rank;
    jr["file"] = m.file;
    jr["steps_kept"] = m.steps_kept;
    jr["step_dropped"] = m.step_dropped;
    jr["gpu_events"] = m.gpu_events;
    jr["gpu_events_dropped"] = m.dropped_events;
    jr["temporal_breakdown"] = {{"span_us", m.span_us},         {"idle_us", m.idle_us},
                                {"compute_us", m.compute_us},   {"non_compute_us", m.non_compute_us},
                                {"idle_pct", m.idle_pct},       {"compute_pct", m.compute_pct},
                                {"non_compute_pct", m.non_compute_pct}};
    jr["comm_comp_overlap"] = {{"communication_us", m.comm_us}, {"overlap_us", m.overlap_us},
                               {"overlap_pct", m.overlap_pct ? nlohmann::json(*m.overlap_pct) : nlohmann::json(nullptr)}};
    jr["kernel_types"] = nlohmann::json::array();
    for (const auto& t : m.kernel_types)
      jr["kernel_types"].push_back({{"type", to_string(t.type)}, {"events", t.events}, {"sum_us", t.sum_us}, {"pct", t.pct}});
    j["ranks"].push_back(jr);
  }
  j["warnings"] = r.warnings;
  return j;
}

std::string to_table(const HtaReport& r) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "trace {}: {} rank(s), Holistic Trace Analysis' definitions (--definitions hta)\n", r.path, r.ranks.size());
  for (const auto& w : r.warnings) fmt::format_to(out, "warning: {}\n", w);
  fmt::format_to(out, "temporal breakdown (% of the GPU span) and communication/computation overlap, per rank\n");
  fmt::format_to(out, "   {:>4} {:>8} {:>9} {:>13} {:>12} {:>12} {:>14}  {}\n", "rank", "idle %", "compute %", "non-compute %",
                 "span_us", "overlap %", "comm_union_us", "steps kept");
  for (const auto& m : r.ranks) {
    std::string steps = m.step_dropped.empty() ? "(no ProfilerStep: all GPU events)"
                        : m.steps_kept.empty()  ? fmt::format("none ({} dropped)", m.step_dropped)
                        : m.steps_kept.size() == 1
                            ? fmt::format("{} ({} dropped)", m.steps_kept.front(), m.step_dropped)
                            : fmt::format("{}..{} ({} dropped)", m.steps_kept.front(), m.steps_kept.back(), m.step_dropped);
    fmt::format_to(out, "   {:>4} {:>8.2f} {:>9.2f} {:>13.2f} {:>12} {:>12} {:>14}  {}\n", m.rank, m.idle_pct, m.compute_pct,
                   m.non_compute_pct, m.span_us, m.overlap_pct ? fmt::format("{:.2f}", *m.overlap_pct) : std::string("-"),
                   m.comm_us, steps);
  }
  fmt::format_to(out, "kernel-type breakdown (sum of event durations, % of all types)\n");
  for (const auto& m : r.ranks) {
    fmt::format_to(out, "   rank {}:", m.rank);
    for (const auto& t : m.kernel_types) fmt::format_to(out, " {} {} us ({:.2f}%, {} events);", to_string(t.type), t.sum_us, t.pct, t.events);
    o += "\n";
  }
  return o;
}

}  // namespace fusesim::trace
