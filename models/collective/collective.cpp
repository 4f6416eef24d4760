#include "models/collective/collective.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/flow.hpp"
#include "sim/simulation.hpp"

namespace fusesim::models {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kScale = 4;  // bytes of one fp32 scale per row (the fp8 wire)
// Work-items one CU holds at once: 4 SIMDs x 8 wave slots x 64 lanes (AMD CDNA3 ISA reference; the
// same bound gemm_ar uses for its pull kernels). Blocks beyond it add no loads in flight.
constexpr double kMaxThreadsPerCu = 2048;
constexpr int kLanesPerBlock = 512;  // LSA ar_1stage/ar_2stage and aiter's kernels: 512-thread blocks
// The SDMA kernel builds of bench_ar.py the public data measured (ROCm/mori commits): the later one
// is the default, its puts at the queue peak; the earlier one's rate share is a key of its own.
const char* const kLaterSdmaBuild = "e7606746";
const char* const kEarlierSdmaBuild = "0f4d2776";

using hw::ParamDecl;
using hw::Quantity;

const ParamDecl& put_share_earlier_decl() {
  static const ParamDecl d{"sdma.build_0f4d2776_put_share", Quantity::Ratio, 0.2, 2.0,
                           "bench_ar.py's SDMA all-reduce kernel at ROCm/mori@0f4d2776: its puts' rate as a share of "
                           "sdma.queue_peak (the later build e7606746, the default, puts at the queue peak); fitted on the "
                           "two SDMA columns of bench_ar.py's docstring tables"};
  return d;
}
const ParamDecl& lsa_block_cap_decl() {
  static const ParamDecl d{"lsa.ar_block_cap", Quantity::Count, 1, 4096,
                           "LSA all-reduce (ar_1stage / ar_2stage): grid = min(cap, 16-byte packs / 512) blocks of 512 lanes"};
  return d;
}
const ParamDecl& aiter_stage_decl() {
  static const ParamDecl d{"aiter.stage_overhead", Quantity::Time, 0, 200e-6,
                           "aiter's custom all-reduce: per stage (one-shot: one; two-shot: two), the cross-rank flag "
                           "synchronisation and setup beyond the launch and the data movement"};
  return d;
}
const ParamDecl& aiter_loads_decl() {
  static const ParamDecl d{"aiter.loads_in_flight", Quantity::Ratio, 0.5, 16,
                           "aiter's custom all-reduce: 16-byte remote loads a lane keeps in flight (memory-level "
                           "parallelism; one pack per peer would be world_size - 1)"};
  return d;
}
const ParamDecl& aiter_block_cap_decl() {
  static const ParamDecl d{"aiter.block_cap", Quantity::Count, 1, 4096,
                           "aiter's custom all-reduce: grid = min(cap, 16-byte packs / 512) blocks of 512 lanes"};
  return d;
}
}  // namespace

const hw::HwSchema<CollectiveHw>& collective_hardware() {
  using H = CollectiveHw;
  static const hw::HwSchema<H> schema{
      hw::required(&H::compute_units, hw::vocab::compute_units()),
      // Only for refusing a tensor that cannot fit (no timing depends on it): unlimited when unset.
      hw::optional(&H::hbm_capacity, hw::vocab::hbm_capacity(), std::numeric_limits<double>::infinity()),
      hw::required(&H::fabric_bandwidth, hw::vocab::fabric_bandwidth()),
      hw::optional(&H::write_cost, hw::vocab::write_cost(), 1.0),
      hw::required(&H::link_per_direction, hw::vocab::link_per_direction()),
      hw::required(&H::read_efficiency, hw::vocab::read_efficiency()),
      hw::required(&H::launch_gap, hw::vocab::launch_gap()),
      hw::required(&H::fixed_cost, hw::vocab::kernel_fixed_cost()),
      hw::required(&H::flag_barrier, hw::vocab::flag_barrier()),
      hw::required(&H::queue_peak, hw::vocab::queue_peak()),
      hw::required(&H::command_latency, hw::vocab::command_latency()),
      // The same keys gemm_ar's split scatter reads; absent, a put from HBM runs at the queue peak
      // (the mechanism off) and nothing is taken to be cached.
      hw::optional(&H::hbm_source_efficiency, hw::vocab::hbm_source_efficiency(), 1.0),
      hw::optional(&H::mall_capacity, hw::vocab::mall_capacity(), 0.0),
      hw::required(&H::remote_read_latency, hw::vocab::remote_read_latency()),
      hw::required(&H::congestion_knee, hw::vocab::congestion_knee()),
      hw::required(&H::congestion_per_MiB, hw::vocab::congestion_per_MiB()),
      hw::required(&H::stage_overhead, hw::vocab::stage_overhead()),
      hw::required(&H::ar_loads_per_peer, hw::vocab::ar_loads_per_peer()),
      hw::required(&H::rccl_bus_bandwidth_per_link, hw::vocab::ring_bus_bandwidth_per_link()),
      hw::required(&H::rccl_step_latency, hw::vocab::ring_step_latency()),
      // No honest default: a file that lacks it cannot run that build (refused, naming the key).
      hw::optional(&H::sdma_put_share_0f4d2776, put_share_earlier_decl(), kNaN),
      // GEMM_AR.md: ar_2stage's grid is min(24, packs/512) x 512.
      hw::optional(&H::lsa_block_cap, lsa_block_cap_decl(), 24),
      // No honest default: a file that lacks it cannot run backend aiter (refused, naming the key).
      hw::optional(&H::aiter_stage_overhead, aiter_stage_decl(), kNaN),
      hw::optional(&H::aiter_loads_in_flight, aiter_loads_decl(), kNaN),
      // vLLM's custom all-reduce (from which aiter's derives) caps its grid at 36 blocks of 512
      // threads (custom_all_reduce.cuh, block_limit); not checked against aiter's own source.
      hw::optional(&H::aiter_block_cap, aiter_block_cap_decl(), 36),
  };
  return schema;
}

namespace {

/// The case struct's fields (COLLECTIVE_SCHEMA: names and values fixed by the integrator).
const CaseFields<CollectiveConfig>& collective_fields() {
  using C = CollectiveConfig;
  static const CaseFields<C> f{
      "collective",
      {field(CaseParam::name("op", "all-reduce, reduce-scatter or all-gather").one_of({"all-reduce", "reduce-scatter", "all-gather"}), &C::op),
       field(CaseParam::name("backend", "sdma (copy engines), lsa (CU remote loads), aiter (one-/two-shot custom all-reduce) or rccl (ring)")
                 .one_of({"sdma", "lsa", "aiter", "rccl"})
                 .required()
                 .tunable(),
             &C::backend),
       field(CaseParam::dimension("m", "rows of the full tensor [m, n] (not padded)").required(), &C::m),
       field(CaseParam::dimension("n", "columns of the tensor"), &C::n),
       field(CaseParam::integer("world_size", "ranks on the mesh: 2, 4 or 8"), &C::world_size),
       field(CaseParam::name("dtype", "element type on the wire: bf16, or fp8 (e4m3 + an fp32 scale per row)").one_of({"bf16", "fp8"}), &C::dtype),
       field(CaseParam::name("stage", "auto (the backend's rule), 1 or 2 (LSA 1-/2-stage, aiter one-/two-shot)").one_of({"auto", "1", "2"}).tunable(), &C::stage),
       field(CaseParam::integer("blocks", "LSA / aiter grid (0: the backend's rule, min(cap, packs / 512))").at_least(0).at_most(65536).tunable(), &C::blocks),
       field(CaseParam::name("build", "the SDMA kernel build (e7606746, the default, or 0f4d2776)").one_of({kLaterSdmaBuild, kEarlierSdmaBuild})
                 .unreported(),  // the result's params name the build that ran
             &C::build)}};
  return f;
}

void bad(const std::string& key, const std::string& what) { throw ParamError(key, fmt::format("{}: {}", key, what), what); }

void validate(const CollectiveConfig& c, const CollectiveHw& h, const hw::Hardware& hw) {
  if (c.world_size != 2 && c.world_size != 4 && c.world_size != 8)
    bad("world_size", fmt::format("{} is not supported (expected 2, 4 or 8)", c.world_size));
  if (c.world_size > hw.gpus())
    bad("world_size", fmt::format("{} ranks but the hardware file '{}' has {} GPUs", c.world_size, hw.name(), hw.gpus()));
  {
    // The input and the output (or the received slices) of one rank must fit in its HBM.
    const double elem = c.dtype == "fp8" ? 1.0 : 2.0;
    const double tensor = double(c.m) * (double(c.n) * elem + (c.dtype == "fp8" ? kScale : 0.0));
    if (2 * tensor > h.hbm_capacity)
      bad(c.m >= c.n ? "m" : "n", fmt::format("[{}, {}] in {} is {:.1f} GiB; its input and output need {:.1f} GiB of HBM per GPU but '{}' "
                                              "has {:.1f} GiB", c.m, c.n, c.dtype, tensor / 1073741824.0, 2 * tensor / 1073741824.0,
                                              hw.name(), h.hbm_capacity / 1073741824.0));
  }
  if (c.backend == "aiter" && c.op != "all-reduce")
    bad("op", fmt::format("aiter's custom all-reduce offers only all-reduce, not {}", c.op));
  if (c.stage != "auto" && c.backend != "lsa" && c.backend != "aiter")
    bad("stage", fmt::format("applies to backends lsa and aiter only, not {}", c.backend));
  if (c.stage != "auto" && c.op != "all-reduce")
    bad("stage", fmt::format("a {} is one stage (the stage count is an all-reduce's)", c.op));
  if (c.blocks != 0 && c.backend != "lsa" && c.backend != "aiter")
    bad("blocks", fmt::format("applies to backends lsa and aiter only, not {}", c.backend));
  if (!c.build.empty() && c.backend != "sdma") bad("build", fmt::format("names an SDMA kernel build; backend {} has none", c.backend));
  if (c.build == kEarlierSdmaBuild && std::isnan(h.sdma_put_share_0f4d2776))
    bad("build", fmt::format("the hardware file '{}' does not describe build {} (it sets no {})", hw.name(), kEarlierSdmaBuild,
                             put_share_earlier_decl().key));
  if (c.backend == "aiter" && (std::isnan(h.aiter_stage_overhead) || std::isnan(h.aiter_loads_in_flight)))
    bad("backend", fmt::format("the hardware file '{}' does not describe aiter's all-reduce (it needs {} and {})", hw.name(),
                               aiter_stage_decl().key, aiter_loads_decl().key));
}

/// The group on the substrate: per rank an HBM resource at memory.fabric_bandwidth, one xGMI link
/// per direction, one copy-engine queue per (source, destination), the CU remote-load model of
/// gemm_ar (Little's law with the congestion knee; link payload at links.read_efficiency) and the
/// flag barrier. No request-fabric lane: it models what copies do to a concurrent GEMM, and a
/// standalone collective has none.
hw::GroupConfig group_config(const CollectiveHw& h, int ws) { return hw::copy_mesh_config(h, ws); }

/// One call on a fresh engine: every rank runs the backend's kernel sequence; phases per rank.
class Call {
 public:
  Call(const CollectiveHw& h, const CollectiveConfig& c, int stages, int blocks, sim::Simulation& sim, sim::FlowNetwork& net)
      : h_(h), c_(c), ws_(c.world_size), stages_(stages), blocks_(blocks), sim_(sim), g_(sim, net, group_config(h, ws_)),
        mark_(size_t(ws_), 0.0), end_(size_t(ws_), 0.0), phases_(size_t(ws_)) {
    const double elem = c.dtype == "fp8" ? 1.0 : 2.0;
    const double row_bytes = double(c.n) * elem + (c.dtype == "fp8" ? kScale : 0.0);
    tensor_ = double(c.m) * row_bytes;  // unpadded: a slice is m / ws rows, fractional rows allowed
    slice_ = tensor_ / ws_;
  }

  void start() {
    b1_ = &g_.barrier();
    b2_ = &g_.barrier();
    for (int r = 0; r < ws_; ++r) {
      if (c_.backend == "sdma") sdma(r);
      else if (c_.backend == "lsa") lsa(r);
      else if (c_.backend == "aiter") aiter(r);
      else rccl(r);
    }
  }

  CollectiveResult result() const {
    CollectiveResult out;
    int crit = 0;
    for (int r = 0; r < ws_; ++r) {
      out.per_rank_us.push_back(end_[r] * 1e6);
      if (end_[r] > end_[crit]) crit = r;
    }
    out.total_us = end_[crit] * 1e6;
    out.phases = phases_[crit];
    out.wire_bytes = tensor_;
    return out;
  }

 private:
  double launch() const { return h_.launch_gap + h_.fixed_cost; }
  double now() const { return sim_.now(); }
  void phase(int r, const std::string& name) {
    phases_[r].push_back({name, mark_[r] * 1e6, now() * 1e6});
    mark_[r] = now();
  }
  void finish(int r, const std::string& name) {
    phase(r, name);
    end_[r] = now();
  }
  double put_rate() const { return h_.queue_peak * (c_.build == kEarlierSdmaBuild ? h_.sdma_put_share_0f4d2776 : 1.0); }
  /// The scatter's share of the put rate, as gemm_ar's split scatter has it: the fraction f of the
  /// source still in the MALL is MALL / working set (the input tensor and the (ws-1) receive slots),
  /// capped at 1; the rest comes from HBM at sdma.hbm_source_efficiency of the rate (harmonic blend).
  /// 1 whenever the working set fits the MALL (every standalone point below M=16384 at N=7168).
  double scatter_source_efficiency() const {
    const double working = tensor_ + (ws_ - 1) * slice_;
    const double f = h_.mall_capacity <= 0 ? 0.0 : std::min(1.0, h_.mall_capacity / working);
    return 1.0 / (f + (1.0 - f) / h_.hbm_source_efficiency);
  }
  std::string cu_lane(int r) const { return fmt::format("gpu{}/cu", r); }

  // ---- SDMA (bench_ar.py backend sdma; GEMM_AR.md's split scatter, reduce and gather) ----------
  /// Scatter: a kernel launch, then one put per peer of that peer's slice on the (r, peer) queue at
  /// the build's put rate (times scatter_source_efficiency: its source partly in HBM); when r's queues are idle, the flag barrier. Reduce: a kernel streaming
  /// own + (ws-1) received slices and writing one, through r's HBM (the written slice at memory.write_cost per byte). Gather: a launch, one put of the
  /// reduced slice per peer, queues idle, the barrier. reduce-scatter: the first two; all-gather: the
  /// last alone (each rank's slice of the m rows).
  void sdma(int r) {
    if (c_.op == "all-gather") return sdma_gather(r);
    sim_.after(launch(), [this, r] {
      for (int d = 0; d < ws_; ++d)
        if (d != r)
          g_.put({.src = r, .dst = d, .bytes = slice_, .rate_cap = put_rate() * scatter_source_efficiency(),
                  .label = fmt::format("scatter ->gpu{}", d)});
      g_.when_queues_idle(r, [this, r] {
        b1_->arrive(r, [this, r] {
          phase(r, "scatter");
          g_.stream({.rank = r, .name = "reduce", .bytes = (ws_ + 1) * slice_, .start_latency = launch(), .share = g_.hbm_capacity(),
                     .hbm_weight = (ws_ + h_.write_cost) / (ws_ + 1),  // ws slices read, one written
                     .lane = cu_lane(r), .on_done = [this, r] {
                       if (c_.op == "reduce-scatter") return finish(r, "reduce");
                       phase(r, "reduce");
                       sdma_gather(r);
                     }});
        });
      });
    });
  }
  void sdma_gather(int r) {
    sim_.after(launch(), [this, r] {
      for (int d = 0; d < ws_; ++d)
        if (d != r) g_.put({.src = r, .dst = d, .bytes = slice_, .rate_cap = put_rate(), .label = fmt::format("gather ->gpu{}", d)});
      g_.when_queues_idle(r, [this, r] { b2_->arrive(r, [this, r] { finish(r, "gather"); }); });
    });
  }

  // ---- CU remote loads (LSA and aiter) ----------------------------------------------------------
  /// Rank r loads bytes_per_peer from every peer with blocks x 512 lanes, each holding `per_lane`
  /// bytes in flight (the substrate's remote-load model gives all peers' rate together, split
  /// evenly), writing write_factor bytes locally per byte loaded; on_done when all have landed.
  void loads(int r, const std::string& name, double bytes_per_peer, double per_lane, double write_factor, double start_latency,
             std::function<void()> on_done) {
    const double resident = std::min(double(blocks_), std::floor(h_.compute_units * kMaxThreadsPerCu / kLanesPerBlock));
    const double cap = g_.remote_load_rate(resident * kLanesPerBlock, per_lane) / (ws_ - 1);
    auto all = hw::Join::after(ws_ - 1, std::move(on_done));
    for (int p = 0; p < ws_; ++p)
      if (p != r)
        g_.remote_load({.reader = r, .source = p, .bytes = bytes_per_peer, .rate_cap = cap, .write_factor = write_factor,
                        .start_latency = start_latency, .name = fmt::format("{} <-gpu{}", name, p), .lane = cu_lane(r), .on_done = all});
  }

  /// LSA (mori's ar_1stage / ar_2stage, GEMM_AR.md; the same costs as gemm_ar's split-lsa): lanes
  /// hold lsa.ar_loads_per_peer x (ws - 1) 16-byte loads (one pack from every peer at 1). 1-stage: after the launch and lsa.stage_overhead,
  /// read every peer's whole input and write the sum. 2-stage: stage 1 reads this rank's slice from
  /// every peer and writes the partial; the flag barrier; stage 2 (same kernel: no launch, another
  /// stage overhead) reads every peer's reduced slice. reduce-scatter: stage 1; all-gather: stage 2
  /// (with the launch), each alone.
  void lsa(int r) {
    const double lif = h_.ar_loads_per_peer * (ws_ - 1) * 16.0, so = h_.stage_overhead;
    if (c_.op == "reduce-scatter")
      return loads(r, "reduce-scatter", slice_, lif, 1.0 / (ws_ - 1), launch() + so, [this, r] { finish(r, "stage1"); });
    if (c_.op == "all-gather")
      return loads(r, "all-gather", slice_, lif, 1.0, launch() + so, [this, r] { finish(r, "stage2"); });
    if (stages_ == 1)
      return loads(r, "ar_1stage", tensor_, lif, 1.0 / (ws_ - 1), launch() + so, [this, r] { finish(r, "all-reduce"); });
    loads(r, "ar_2stage stage 1", slice_, lif, 1.0 / (ws_ - 1), launch() + so, [this, r, lif, so] {
      phase(r, "stage1");
      b1_->arrive(r, [this, r, lif, so] {
        phase(r, "barrier");
        loads(r, "ar_2stage stage 2", slice_, lif, 1.0, so, [this, r] { finish(r, "stage2"); });
      });
    });
  }

  /// aiter's custom all-reduce (vLLM's design): one kernel in which each lane holds
  /// aiter.loads_in_flight 16-byte loads in flight, reading the peers' registered buffers (under
  /// graph replay, the benchmark's timing, the input is a registered graph buffer: no copy into the
  /// IPC buffer first).
  /// One-shot: after the launch and aiter.stage_overhead (the ranks' flag sync), read every peer's
  /// whole input and write the sum. Two-shot: stage 1 reduces this rank's slice from every peer,
  /// another stage overhead (the second flag sync), stage 2 reads every peer's reduced slice.
  void aiter(int r) {
    const double per_lane = h_.aiter_loads_in_flight * 16.0, so = h_.aiter_stage_overhead;
    if (stages_ == 1)
      return loads(r, "one-shot", tensor_, per_lane, 1.0 / (ws_ - 1), launch() + so, [this, r] { finish(r, "one-shot"); });
    loads(r, "two-shot stage 1", slice_, per_lane, 1.0 / (ws_ - 1), launch() + so, [this, r, per_lane, so] {
      phase(r, "stage1");
      loads(r, "two-shot stage 2", slice_, per_lane, 1.0, so, [this, r] { finish(r, "stage2"); });
    });
  }

  // ---- RCCL ring (the alpha-beta model gemm_ar's rccl baseline uses) --------------------------
  /// After a launch: all-reduce 2(ws-1) steps of step_latency plus 2(ws-1)/ws x bytes at the bus
  /// bandwidth (ws-1) x rccl.bus_bandwidth_per_link; reduce-scatter and all-gather half the steps and
  /// bytes (ws-1 steps, (ws-1)/ws x bytes).
  void rccl(int r) {
    const double legs = c_.op == "all-reduce" ? 2.0 : 1.0;
    const double busbw = (ws_ - 1) * h_.rccl_bus_bandwidth_per_link;
    const double t = legs * (ws_ - 1) * h_.rccl_step_latency + legs * (ws_ - 1) / ws_ * tensor_ / busbw;
    sim_.after(launch() + t, [this, r] { finish(r, c_.op); });
  }

  const CollectiveHw& h_;
  const CollectiveConfig& c_;
  int ws_, stages_, blocks_;
  sim::Simulation& sim_;
  hw::GpuGroup g_;
  double tensor_ = 0, slice_ = 0;
  std::vector<double> mark_, end_;
  std::vector<std::vector<hw::Span>> phases_;
  hw::GpuGroup::Barrier* b1_ = nullptr;
  hw::GpuGroup::Barrier* b2_ = nullptr;
};

CollectiveResult simulate_once(const CollectiveHw& h, const CollectiveConfig& c, int stages, int blocks, sim::TraceSink* trace) {
  sim::Simulation sim;
  sim.set_trace(trace);
  sim::FlowNetwork net(sim);
  Call call(h, c, stages, blocks, sim, net);
  call.start();
  sim.run();
  if (!net.stalled().empty())
    throw std::runtime_error(fmt::format("simulation stalled: flow '{}' can never finish (a zero-capacity resource?)", net.stalled().front()));
  CollectiveResult res = call.result();
  res.stages = stages;
  res.blocks = blocks;
  return res;
}
}  // namespace

const CaseSchema& collective_case_schema() { return collective_fields().schema(); }

CollectiveResult simulate_collective(const hw::Hardware& hw, const CollectiveConfig& c, sim::TraceSink* trace) {
  const CollectiveHw h = collective_hardware().read(hw);
  validate(c, h, hw);
  const bool cu = c.backend == "lsa" || c.backend == "aiter";
  int blocks = 0, stages = 0;
  if (cu) {
    // The grid: min(cap, 16-byte packs of the tensor / 512), at least one block (GEMM_AR.md's rule
    // for ar_2stage; aiter's cap is its own key).
    const double cap = c.backend == "lsa" ? h.lsa_block_cap : h.aiter_block_cap;
    const double elem = c.dtype == "fp8" ? 1.0 : 2.0;
    const double packs = double(c.m) * (double(c.n) * elem + (c.dtype == "fp8" ? kScale : 0.0)) / 16.0;
    blocks = c.blocks > 0 ? c.blocks : int(std::max(1.0, std::min(cap, std::floor(packs / kLanesPerBlock))));
  }
  CollectiveResult res;
  if (cu && c.op == "all-reduce" && c.stage == "auto") {
    // The size rule: the stage count that is faster on this machine. bench_ar.py's own threshold is
    // not in our sources (mori's gemm_ar switches at 80 KiB, GEMM_AR.md, which the standalone table
    // contradicts: its M=64 point, 896 KiB, is below any 2-stage time); with ws=2 the two stages move
    // the same bytes as one and add a synchronisation, so 1 stage always wins, as GEMM_AR.md says.
    // The trace shows the chosen run only.
    const CollectiveResult one = simulate_once(h, c, 1, blocks, nullptr), two = simulate_once(h, c, 2, blocks, nullptr);
    const int best = one.total_us <= two.total_us ? 1 : 2;
    res = trace ? simulate_once(h, c, best, blocks, trace) : (best == 1 ? one : two);
  } else {
    if (cu) stages = c.op == "all-reduce" ? std::stoi(c.stage) : 1;
    res = simulate_once(h, c, stages, blocks, trace);
  }
  if (c.backend == "sdma") res.build = c.build.empty() ? kLaterSdmaBuild : c.build;
  return res;
}

nlohmann::json run_collective_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  const CaseValues v = collective_case_schema().read(p, false, true);
  const CollectiveConfig c = collective_fields().read(v);
  v.require();
  const CollectiveResult r = simulate_collective(hw, c, trace);
  nlohmann::json params = v.to_json();
  if (r.stages > 0) params["stages"] = r.stages;  // what ran: the auto rule's choice
  if (r.blocks > 0) params["blocks"] = r.blocks;
  if (!r.build.empty()) params["build"] = r.build;
  return {{"params", params}, {"predicted_us", r.total_us}, {"phases", hw::spans_json(r.phases)}, {"per_rank_us", r.per_rank_us}};
}

const ModelSpec& collective_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s{"collective",
                "one collective on its own on a fully meshed node: all-reduce, reduce-scatter, all-gather by SDMA, LSA, aiter or RCCL",
                "mori bench_ar.py and its kernels (GEMM_AR.md, HARDWARE.md); aiter/vLLM custom all-reduce; the alpha-beta ring; "
                "fitted on ROCm/mori's public standalone all-reduce tables (calibrate/data/mori-public/)",
                reads_of(collective_hardware()), listing_of(collective_case_schema()), run_collective_case};
    s.schema = &collective_case_schema();
    s.row_note = [](const nlohmann::json& c) {
      const auto& cp = c["params"];
      std::string t;
      if (cp.is_object() && cp.contains("stages")) t += fmt::format("  ({}-stage, {} blocks)", cp["stages"].get<int>(), cp["blocks"].get<int>());
      if (cp.is_object() && cp.contains("build")) t += fmt::format("  (build {})", cp["build"].get<std::string>());
      return t;
    };
    return s;
  }();
  return spec;
}

}  // namespace fusesim::models
