// The GEMM + all-reduce pairs of a profiler trace, for `fusesim tune --from-trace` (cli/tune_trace.hpp).
#include "cli/tune_trace.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "calibrate/trace/analysis.hpp"
#include "calibrate/trace/whatif.hpp"
#include "hw/name_pattern.hpp"
#include "hw/printable.hpp"
#include "calibrate/trace/categories.hpp"
#include "calibrate/trace/kineto_reader.hpp"

namespace fusesim::cli {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Bytes per element of a dtype as traces write it ("c10::BFloat16", "float", "Float", "bf16",
/// "c10::Float8_e4m3fn", "Half", "double", "int"); -1 when not known.
int64_t dtype_bytes(const std::string& dtype) {
  const std::string d = lower(dtype);
  if (d.empty()) return -1;
  if (d.find("float8") != std::string::npos || d.find("fp8") != std::string::npos || d.find("e4m3") != std::string::npos ||
      d.find("e5m2") != std::string::npos || d.find("int8") != std::string::npos || d == "char" || d == "byte" || d == "bool")
    return 1;
  if (d.find("bfloat16") != std::string::npos || d.find("bf16") != std::string::npos || d.find("half") != std::string::npos ||
      d.find("float16") != std::string::npos || d.find("fp16") != std::string::npos || d.find("int16") != std::string::npos || d == "short")
    return 2;
  if (d.find("double") != std::string::npos || d.find("float64") != std::string::npos || d.find("int64") != std::string::npos || d == "long")
    return 8;
  if (d.find("float") != std::string::npos || d.find("fp32") != std::string::npos || d.find("int32") != std::string::npos || d == "int")
    return 4;
  return -1;
}

const hw::NamePattern& allreduce_name() {
  // The all-reduce rule of `trace whatif --fuse-gemm-ar` (WhatIfOptions::allreduce_regex).
  static const hw::NamePattern re = hw::NamePattern::compile(trace::WhatIfOptions{}.allreduce_regex, "all-reduce rule");
  return re;
}

const hw::NamePattern& other_collective_name() {
  // NCCL/RCCL kernels of the other collectives (ncclKernel_SendRecv_..., ncclDevKernel_AllGather_...).
  static const hw::NamePattern re = hw::NamePattern::compile(
      "(nccl|rccl).*(sendrecv|send_|recv_|allgather|reducescatter|broadcast|alltoall|reduce_(sum|prod|min|max))", "collective rule");
  return re;
}

/// The CPU ops enclosing CPU op `inner` on its thread (itself first, then outwards by start).
std::vector<uint32_t> enclosing(const trace::TraceFile& f, int32_t inner) {
  std::vector<uint32_t> out;
  if (inner < 0) return out;
  const trace::CpuOp& in = f.cpu_ops[size_t(inner)];
  out.push_back(uint32_t(inner));
  for (uint32_t j = 0; j < f.cpu_ops.size(); ++j) {
    const trace::CpuOp& c = f.cpu_ops[j];
    if (int32_t(j) != inner && c.thread == in.thread && c.start_ns <= in.start_ns && c.end_ns() >= in.end_ns()) out.push_back(j);
  }
  std::sort(out.begin() + 1, out.end(), [&](uint32_t a, uint32_t b) { return f.cpu_ops[a].start_ns > f.cpu_ops[b].start_ns; });
  return out;
}

void pairs_of_rank(const trace::TraceFile& f, const trace::CategoryTable& table, TracePairs& out) {
  const trace::RankTimeline tl = trace::build_timeline(f, table, trace::AnalyzeOptions{});
  const int gemm_cat = table.find("gemm");
  const size_t n = tl.ops.size();
  out.gpu_kernels += int64_t(std::count_if(tl.ops.begin(), tl.ops.end(), [&](const trace::TimelineOp& o) { return tl.gpu(o).kind == trace::GpuOpKind::kernel; }));
  auto is_gemm = [&](size_t i) { return tl.ops[i].category == gemm_cat && tl.gpu(tl.ops[i]).kind == trace::GpuOpKind::kernel; };
  std::vector<char> ar(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const trace::TimelineOp& op = tl.ops[i];
    if (tl.cls(op) != trace::OpClass::communication || tl.gpu(op).kind != trace::GpuOpKind::kernel) continue;
    const trace::GpuOp& g = tl.gpu(op);
    bool yes = allreduce_name().search(f.name_of(g));
    // A kernel (or its NCCL fields) naming another collective is not an all-reduce, whatever CPU op launched it.
    bool other = other_collective_name().search(f.name_of(g));
    if (!yes && g.collective >= 0) {
      const std::string c = lower(f.strings.str(f.collectives[size_t(g.collective)].name));
      yes = c.find("allreduce") != std::string::npos || c.find("all_reduce") != std::string::npos;
      other = other || (!yes && !c.empty());
    }
    if (!yes && !other)
      for (uint32_t c : enclosing(f, op.launch_op)) yes = yes || allreduce_name().search(f.name_of(f.cpu_ops[c]));
    ar[i] = yes;
    out.allreduces += yes;
  }
  // The GEMM of each all-reduce: the kernel before it on its stream, else the last GEMM of its
  // device launched before it that no all-reduce launched in between took.
  std::vector<int> gemm_of(n, -1);
  std::vector<const char*> link(n, "");
  std::unordered_map<int64_t, int> prev_on_stream;
  for (size_t i = 0; i < n; ++i) {
    const trace::GpuOp& g = tl.gpu(tl.ops[i]);
    const int64_t key = (int64_t(g.device) << 40) ^ g.stream;
    if (ar[i]) {
      const auto p = prev_on_stream.find(key);
      if (p != prev_on_stream.end() && is_gemm(size_t(p->second))) {
        gemm_of[i] = p->second;
        link[i] = "same stream";
      }
    }
    prev_on_stream[key] = int(i);
  }
  auto launch_ns = [&](size_t i) {
    const trace::TimelineOp& op = tl.ops[i];
    return op.launch_call >= 0 ? f.runtime_calls[size_t(op.launch_call)].start_ns : tl.gpu(op).start_ns;
  };
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return launch_ns(a) < launch_ns(b); });
  std::map<int, int> last_gemm;  // device -> op (-1: taken)
  for (size_t i : order) {
    const int dev = tl.gpu(tl.ops[i]).device;
    if (is_gemm(i)) last_gemm[dev] = int(i);
    if (!ar[i]) continue;
    const auto lg = last_gemm.find(dev);
    if (gemm_of[i] < 0 && lg != last_gemm.end() && lg->second >= 0) {
      gemm_of[i] = lg->second;
      link[i] = "next launch";
    }
    last_gemm[dev] = -1;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!ar[i] || gemm_of[i] < 0) continue;
    const trace::TimelineOp& gop = tl.ops[size_t(gemm_of[i])];
    const trace::GpuOp& gg = tl.gpu(gop);
    const trace::GpuOp& ag = tl.gpu(tl.ops[i]);
    TracePair p;
    p.rank = f.rank;
    p.device = gg.device;
    p.gemm_kernel = f.name_of(gg);
    p.ar_kernel = f.name_of(ag);
    p.gemm_start_us = gg.start_us();
    p.gemm_us = gg.dur_us();
    p.ar_us = ag.dur_us();
    p.link = link[i];
    std::vector<std::string> problems;
    if (gop.gemm_op >= 0) p.gemm_op = f.name_of(f.cpu_ops[size_t(gop.gemm_op)]);
    if (gop.shape >= 0) {
      const trace::GemmShape& s = tl.shapes[size_t(gop.shape)];
      p.m = s.m;
      p.n = s.n;
      p.k = s.k;
      p.gemm_dtype = f.strings.str(s.a_dtype);
      if (s.batch != 1) problems.push_back(fmt::format("a batched GEMM (batch {}; gemm_ar models one GEMM per rank)", s.batch));
    } else if (gop.gemm_op >= 0) {
      const trace::CpuOp& c = f.cpu_ops[size_t(gop.gemm_op)];
      problems.push_back(!c.has_input_dims || c.input_dims_empty
                             ? fmt::format("the trace has no shapes: its CPU op '{}' carries no Input Dims (record the trace with "
                                           "record_shapes=True)",
                                           p.gemm_op)
                             : fmt::format("the Input Dims of its CPU op '{}' give no GEMM shape", p.gemm_op));
    } else if (gop.launch_op >= 0) {
      const trace::CpuOp& c = f.cpu_ops[size_t(gop.launch_op)];
      problems.push_back(fmt::format("no GEMM CPU op (aten::mm, addmm, linear, matmul, ...) encloses its launch (innermost CPU op "
                                     "'{}'{}), so the trace gives no M, N, K",
                                     f.name_of(c), c.has_input_dims ? "" : ", without Input Dims"));
    } else {
      problems.push_back("its launch is not in the trace (no runtime call with its correlation id), so no CPU op gives M, N, K");
    }
    if (ag.collective >= 0) {
      const trace::CollectiveArgs& c = f.collectives[size_t(ag.collective)];
      if (c.in_nelems >= 0) {
        p.ar_nelems = c.in_nelems;
        p.ar_dtype = f.strings.str(c.dtype);
        p.ar_size_from = "In msg nelems";
      }
      if (c.group_size >= 0) {
        p.group_size = c.group_size;
        p.group_size_from = "Group size";
      }
    }
    if (p.ar_nelems < 0)
      for (uint32_t ci : enclosing(f, tl.ops[i].launch_op)) {
        const trace::CpuOp& c = f.cpu_ops[ci];
        if (!allreduce_name().search(f.name_of(c)) || !c.has_input_dims || c.inputs_count == 0) continue;
        const trace::TensorInput& in = f.inputs[c.inputs_begin];
        if (in.rank <= 0) continue;
        int64_t e = 1;
        bool ok = true;
        for (int64_t d : f.dims_of(in)) ok = ok && d >= 0 && !__builtin_mul_overflow(e, d, &e);
        if (!ok) continue;
        p.ar_nelems = e;
        p.ar_dtype = f.strings.str(in.dtype);
        p.ar_size_from = "Input Dims of " + f.name_of(c);
        break;
      }
    if (p.group_size < 0 && f.world_size > 0) {
      p.group_size = f.world_size;
      p.group_size_from = "distributedInfo.world_size";
    }
    if (p.ar_nelems >= 0 && dtype_bytes(p.ar_dtype) > 0) p.ar_bytes = p.ar_nelems * dtype_bytes(p.ar_dtype);
    if (p.ar_nelems < 0)
      problems.push_back("the all-reduce's size is not in the trace (no 'In msg nelems' on its kernel, no Input Dims on an all-reduce CPU op)");
    else if (int64_t mn = 0; p.m > 0 && p.n > 0 && __builtin_mul_overflow(p.m, p.n, &mn))
      problems.push_back(fmt::format("the GEMM's output M x N = {} x {} overflows 64 bits: not a shape to tune", p.m, p.n));
    else if (p.m > 0 && p.n > 0 && p.ar_nelems != mn)
      problems.push_back(fmt::format("the all-reduce carries {} elements, the GEMM's output M x N = {}: it reduces something else", p.ar_nelems, mn));
    if (p.group_size < 0) problems.push_back("no group size in the trace ('Group size' or distributedInfo.world_size)");
    for (const auto& s : problems) p.problem += (p.problem.empty() ? "" : "; ") + s;
    out.pairs.push_back(std::move(p));
  }
}

}  // namespace

double TraceShape::median_gemm_us() const { return models::median(gemm_us); }
double TraceShape::median_ar_us() const { return models::median(ar_us); }
double TraceShape::median_sum_us() const {
  std::vector<double> s(gemm_us.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = gemm_us[i] + ar_us[i];
  return models::median(s);
}

TracePairs find_gemm_allreduce_pairs(const std::string& path) {
  TracePairs out;
  out.path = path;
  const std::vector<trace::TraceFile> files = trace::read_trace(path);
  trace::require_gpu_events(files, "tune --from-trace");
  const trace::CategoryTable table = trace::CategoryTable::builtin();
  out.files = int(files.size());
  for (const auto& f : files) {
    pairs_of_rank(f, table, out);
    for (const auto& w : f.warnings) out.warnings.push_back(f.path + ": " + w);
  }
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, size_t> index;
  for (const auto& p : out.pairs) {
    if (!p.problem.empty()) continue;
    const auto key = std::make_tuple(p.m, p.n, p.k, p.group_size);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, out.shapes.size()).first;
      TraceShape s;
      s.m = p.m;
      s.n = p.n;
      s.k = p.k;
      s.world_size = p.group_size;
      s.gemm_dtype = p.gemm_dtype;
      s.ar_dtype = p.ar_dtype;
      out.shapes.push_back(s);
    }
    TraceShape& s = out.shapes[it->second];
    ++s.count;
    s.gemm_us.push_back(p.gemm_us);
    s.ar_us.push_back(p.ar_us);
    if (std::find(s.ranks.begin(), s.ranks.end(), p.rank) == s.ranks.end()) s.ranks.push_back(p.rank);
  }
  for (auto& s : out.shapes) std::sort(s.ranks.begin(), s.ranks.end());
  return out;
}

nlohmann::json to_json(const TracePairs& t) {
  nlohmann::json pairs = nlohmann::json::array(), shapes = nlohmann::json::array();
  int64_t not_tuned = 0;
  auto num = [](int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
  for (const auto& p : t.pairs) {
    not_tuned += !p.problem.empty();
    pairs.push_back({{"rank", p.rank}, {"device", p.device}, {"gemm_kernel", p.gemm_kernel}, {"allreduce_kernel", p.ar_kernel},
                     {"gemm_start_us", p.gemm_start_us}, {"gemm_us", p.gemm_us}, {"allreduce_us", p.ar_us}, {"link", p.link},
                     {"gemm_op", p.gemm_op}, {"m", num(p.m)}, {"n", num(p.n)}, {"k", num(p.k)}, {"gemm_dtype", p.gemm_dtype},
                     {"allreduce_nelems", num(p.ar_nelems)}, {"allreduce_dtype", p.ar_dtype}, {"allreduce_bytes", num(p.ar_bytes)},
                     {"allreduce_size_from", p.ar_size_from}, {"group_size", num(p.group_size)}, {"group_size_from", p.group_size_from},
                     {"problem", p.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.problem)}});
  }
  for (const auto& s : t.shapes)
    shapes.push_back({{"m", s.m}, {"n", s.n}, {"k", s.k}, {"world_size", s.world_size}, {"gemm_dtype", s.gemm_dtype},
                      {"allreduce_dtype", s.ar_dtype}, {"count", s.count}, {"ranks", s.ranks}, {"measured_gemm_us", s.median_gemm_us()},
                      {"measured_allreduce_us", s.median_ar_us()}, {"measured_sum_us", s.median_sum_us()}});
  return {{"trace", t.path}, {"files", t.files}, {"gpu_kernels", t.gpu_kernels}, {"allreduces", t.allreduces},
          {"pairs", pairs}, {"shapes", shapes}, {"not_tuned", not_tuned}, {"warnings", t.warnings}};
}

nlohmann::json tune_trace_shapes(const TracePairs& t, const models::ModelSpec& spec, const hw::Hardware& hw, const std::string& hw_path,
                                 scenario::TuneOptions opt, size_t max_shapes, bool progress) {
  if (t.shapes.size() > max_shapes)
    throw std::invalid_argument(fmt::format("--from-trace {}: {} distinct GEMM + all-reduce shapes, more than --max-shapes {} (each is a search of "
                                            "hundreds of simulations; raise --max-shapes to tune them all)",
                                            t.path, t.shapes.size(), max_shapes));
  if (opt.shapes.size() > 1)
    throw std::invalid_argument("--from-trace: give at most one --shape (the parameters under every shape of the trace, e.g. quant=blockscale)");
  const nlohmann::json base = opt.shapes.empty() ? nlohmann::json::object() : opt.shapes[0];
  // --max-evaluations bounds the whole call: every shape of the trace, each at its own M (each
  // scenario::tune below checks only its own shape). A knob option tune refuses is left to it.
  if (spec.schema) {
    std::vector<scenario::Knob> knobs;
    try {
      knobs = scenario::knob_space(*spec.schema, opt);
    } catch (const std::invalid_argument&) {
    }
    std::string how;
    const double worst = knobs.empty() ? 0 : scenario::tune_evaluation_bound(knobs, t.shapes.size(), 1, opt, &how);
    if (worst > double(opt.max_evaluations))
      throw std::invalid_argument(fmt::format("--from-trace {}: tuning its {} shapes may take up to {:.0f} model evaluations ({:.0f} a shape: {}), more "
                                              "than --max-evaluations {}; narrow it (--knobs, --values, --fix, a smaller --exhaustive-limit or "
                                              "--restarts) or raise --max-evaluations",
                                              t.path, t.shapes.size(), worst, worst / double(t.shapes.size()), how, opt.max_evaluations));
  }
  nlohmann::json result, refused = nlohmann::json::array();
  for (const auto& s : t.shapes) {
    nlohmann::json shape = base;
    shape["n"] = s.n;
    shape["k"] = s.k;
    shape["world_size"] = s.world_size;
    opt.shapes = {shape};
    opt.ms = {s.m};
    const nlohmann::json info{{"m", s.m}, {"n", s.n}, {"k", s.k}, {"world_size", s.world_size}, {"gemm_dtype", s.gemm_dtype},
                              {"allreduce_dtype", s.ar_dtype}, {"count", s.count}, {"ranks", s.ranks},
                              {"measured_gemm_us", s.median_gemm_us()}, {"measured_allreduce_us", s.median_ar_us()},
                              {"measured_sum_us", s.median_sum_us()}};
    if (progress)
      fmt::print(stderr, "tune: shape {} of {}: M={} N={} K={} world size {} ({} pairs)\n", &s - t.shapes.data() + 1, t.shapes.size(), s.m, s.n, s.k,
                 s.world_size, s.count);
    nlohmann::json one;
    try {
      one = scenario::tune(spec, hw, hw_path, opt);
    } catch (const std::invalid_argument& e) {
      refused.push_back({{"trace", info}, {"why", e.what()}});
      continue;
    }
    one["shapes"][0]["trace"] = info;
    if (result.is_null()) {
      result = one;
    } else {
      result["shapes"].push_back(one["shapes"][0]);
    }
  }
  const nlohmann::json tj = to_json(t);
  if (result.is_null()) {
    std::string why = t.pairs.empty() ? fmt::format("no GEMM kernel followed by an all-reduce ({} kernels, {} all-reduces)", t.gpu_kernels, t.allreduces)
                                      : fmt::format("{} GEMM + all-reduce pairs, {} not tuned for what the trace lacks (listed above)", t.pairs.size(),
                                                    tj["not_tuned"].get<int64_t>());
    for (const auto& r : refused) why += fmt::format("; a shape the {} model refuses: {}", spec.name, r["why"].get<std::string>());
    throw std::invalid_argument(fmt::format("--from-trace {}: nothing to tune: {}", t.path, why));
  }
  result["trace"] = tj;
  result["not_tuned_shapes"] = refused;
  return result;
}

std::string format_trace_summary(const TracePairs& t, const nlohmann::json& result, size_t max_lines) {
  const int64_t not_tuned = std::count_if(t.pairs.begin(), t.pairs.end(), [](const TracePair& p) { return !p.problem.empty(); });
  std::string o = fmt::format("trace {}: {} file{}, {} kernels, {} all-reduces, {} GEMM + all-reduce pairs: {} in {} distinct shape{}, {} not tuned\n",
                              t.path, t.files, t.files == 1 ? "" : "s", t.gpu_kernels, t.allreduces, t.pairs.size(),
                              int64_t(t.pairs.size()) - not_tuned, t.shapes.size(), t.shapes.size() == 1 ? "" : "s", not_tuned);
  // Kernel names come from someone else's trace: a newline in one must not start a line of its own
  // (hw/printable.hpp escapes it; the caller escapes the rest of the text for the terminal).
  auto cut = [](const std::string& s) { return hw::printable(s.size() > 60 ? s.substr(0, 57) + "..." : s); };
  size_t shown = 0;
  for (const auto& p : t.pairs) {
    if (p.problem.empty()) continue;
    if (shown++ == max_lines) {
      o += fmt::format("  ... and {} more pairs not tuned (--format json lists every pair)\n", not_tuned - int64_t(max_lines));
      break;
    }
    o += fmt::format("  not tuned: rank {} GEMM '{}' at {:.1f} us ({}{}) -> all-reduce '{}' ({}): {}\n", p.rank, cut(p.gemm_kernel), p.gemm_start_us,
                     p.m > 0 ? fmt::format("M={} N={} K={}", p.m, p.n, p.k) : "no shape",
                     p.ar_nelems >= 0 ? fmt::format(", all-reduce {} elements", p.ar_nelems) : "", cut(p.ar_kernel), p.link, hw::printable(p.problem));
  }
  for (const auto& r : result.value("not_tuned_shapes", nlohmann::json::array()))
    o += fmt::format("  shape M={} N={} K={} world size {} ({} pairs) not tuned: {}\n", r["trace"]["m"].get<int64_t>(), r["trace"]["n"].get<int64_t>(),
                     r["trace"]["k"].get<int64_t>(), r["trace"]["world_size"].get<int64_t>(), r["trace"]["count"].get<int64_t>(),
                     r["why"].get<std::string>());
  for (const auto& sh : result.is_object() && result.contains("shapes") ? result["shapes"] : nlohmann::json::array()) {
    const auto& tr = sh["trace"];
    const auto& pt = sh["points"][0];
    const auto ranks = tr["ranks"].get<std::vector<int>>();
    o += fmt::format("  shape M={} N={} K={} world size {}: {} pairs on {} rank{} ({} GEMM, {} all-reduce); measured per pair (median): GEMM {:.1f} us + "
                     "all-reduce {:.1f} us = {:.1f} us; predicted: baseline {:.1f} us, best {:.1f} us\n",
                     tr["m"].get<int64_t>(), tr["n"].get<int64_t>(), tr["k"].get<int64_t>(), tr["world_size"].get<int64_t>(), tr["count"].get<int64_t>(),
                     ranks.size(), ranks.size() == 1 ? "" : "s", tr["gemm_dtype"].get<std::string>(), tr["allreduce_dtype"].get<std::string>(),
                     tr["measured_gemm_us"].get<double>(), tr["measured_allreduce_us"].get<double>(), tr["measured_sum_us"].get<double>(),
                     pt["baseline"]["predicted_us"].get<double>(), pt["best"]["predicted_us"].get<double>());
  }
  return o;
}

}  // namespace fusesim::cli
