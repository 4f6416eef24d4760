// The sm_sharing model: see sm_sharing.hpp.
#include "models/sm_sharing/sm_sharing.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/group.hpp"
#include "hw/numbers.hpp"
#include "hw/sm_pool.hpp"
#include "sim/simulation.hpp"

namespace fusesim::models {
namespace {
using hw::ParamDecl;
using hw::Quantity;
constexpr double T = 1e12;
// Most output tiles one GEMM may have: 2^20 (a 65536 x 65536 output in 64 x 64 tiles; the largest
// measured case in scenarios/, 8192 x 8192 in 256 x 128 tiles, has 2048). One tile costs about 0.5 us of
// simulation, so the bound keeps a case under a second.
constexpr int64_t kMaxTiles = int64_t(1) << 20;

const CaseSchema& schema() {
  auto dim = [](const char* k, const char* what) { return CaseParam::dimension(k, what).required(); };
  static const CaseSchema s(
      "sm_sharing",
      {dim("m", "GEMM M"), dim("n", "GEMM N"), dim("k", "GEMM K"),
       dim("tile_m", "the library kernel's tile along the library's M (our N)"),
       dim("tile_n", "the library kernel's tile along the library's N (our M)"),
       dim("grid", "the GEMM kernel's CTAs"), dim("cluster", "CTAs per cluster"),
       CaseParam::integer("cluster_m",
                          "the cluster's tiles along ceil(n / tile_m) (nvjet's AxB: A); with cluster_n, the tile grid is "
                          "padded to whole clusters (hw::pad_to_clusters)")
           .at_least(1),
       CaseParam::integer("cluster_n", "the cluster's tiles along ceil(m / tile_n) (nvjet's AxB: B); cluster_m x cluster_n = cluster")
           .at_least(1),
       CaseParam::name("kernel",
                       "the GEMM's kernel as ncu names it (nvjet_...): selects its HBM coefficient in the hardware table "
                       "hbm_queue_kappa_by_kernel (absent or not listed: smshare.hbm_queue_kappa)"),
       CaseParam::integer("gemm_threads", "threads per GEMM block").otherwise(384).at_least(1),
       CaseParam::integer("gemm_regs", "registers per GEMM thread").otherwise(168).at_least(1),
       CaseParam::number("gemm_smem_bytes", "shared memory per GEMM block (bytes)").otherwise(213188).at_least(0),
       // Measured inputs keep the bounds of every measured time (hw/numbers.hpp; 1e-300 predicted -nan).
       CaseParam::number("alone_time_us", "the GEMM alone, measured (us)").at_least(hw::kMinMeasuredUs).at_most(hw::kMaxMeasuredUs),
       CaseParam::name("neighbour", "none, copy or compute").one_of({"none", "copy", "compute"}).otherwise("none"),
       CaseParam::integer("blocks", "the neighbour's blocks").otherwise(0).at_least(0),
       CaseParam::integer("neighbour_threads", "threads per neighbour block").otherwise(512).at_least(1),
       CaseParam::integer("neighbour_regs", "registers per neighbour thread").otherwise(32).at_least(1),
       CaseParam::number("neighbour_smem_bytes", "shared memory per neighbour block (bytes)").otherwise(0).at_least(0),
       CaseParam::integer("neighbour_tpcs", "TPCs the neighbour's blocks landed on (measured placement)").at_least(0),
       // No GPU's memory moves 100 TB/s (an H200's HBM: 4.8 TB/s).
       CaseParam::number("neighbour_alone_GBps", "copy neighbour: its bandwidth alone (GB/s, read + write)").at_least(0).at_most(1e5),
       CaseParam::number("cover", "the neighbour's length over the GEMM's alone time").otherwise(20).above(0).at_most(1e6),
       CaseParam::integer("cluster_slots",
                          "round 2: CTA slots free for the GEMM's clusters, sum over GPCs of cluster x floor(free SMs / "
                          "cluster) (calibrate/data/h200/predict_smshare_r2.py); given: the round-2 rule")
           .at_least(1),
       CaseParam::number("hbm_queue_kappa",
                         "round 2, copy neighbour: the GEMM's HBM queueing coefficient, stretch 1 + kappa u / (1 - u) "
                         "(dimensionless, fitted per shape on round 1's copy/compute pairs)")
           .at_least(0)});
  return s;
}
}  // namespace

const hw::HwSchema<SmSharingHw>& sm_sharing_hardware() {
  static const hw::HwSchema<SmSharingHw> s{
      hw::required(&SmSharingHw::sms, hw::vocab::compute_units()),
      hw::required(&SmSharingHw::sms_per_tpc,
                   ParamDecl{"gpu.sms_per_tpc", Quantity::Count, 1, 8, "SMs per TPC, the unit 2-CTA clusters are counted in"}),
      hw::required(&SmSharingHw::tile_rate_at_zero,
                   ParamDecl{"smshare.tile_rate_at_zero", Quantity::FlopRate, 1 * T, 50 * T,
                             "r0 of a GEMM CTA's tile rate per SM, r(n) = r0 - slope x n with n CTAs running (FLOP/s)"}),
      hw::required(&SmSharingHw::tile_rate_slope,
                   ParamDecl{"smshare.tile_rate_slope", Quantity::FlopRate, 0, 1 * T,
                             "slope of the per-SM tile rate per CTA running (FLOP/s per CTA)"}),
      hw::required(&SmSharingHw::hbm, hw::vocab::fabric_bandwidth()),
      hw::optional(&SmSharingHw::hbm_queue_kappa,
                   ParamDecl{"smshare.hbm_queue_kappa", Quantity::Ratio, 0, 1,
                             "round 3: a copy neighbour stretches the GEMM by 1 + kappa u / (1 - u), u = the copy's "
                             "bandwidth alone / HBM (dimensionless, one value for every GEMM shape)"},
                   -1),
      hw::optional(&SmSharingHw::tile_rate_max,
                   ParamDecl{"smshare.tile_rate_max", Quantity::FlopRate, 1 * T, 50 * T,
                             "round 5: the per-SM tile rate with few CTAs running; the round-3 mechanism uses "
                             "min(r0 - slope n, tile_rate_max) (FLOP/s per SM)"},
                   -1),
  };
  return s;
}

namespace {
using RowError = std::function<hw::FileError(const std::string&)>;
/// The rows of the hardware's optional JSON-lines table `name` (absent: nothing; `*file` = its path): each row
/// must be an object whose keys are among `keys`; `row(r, bad)` reads one, `bad(what)` the error naming the
/// hardware file, the table, its file and the row. Errors: hw::FileError for an empty table, a row that is not an
/// object, an unknown key, or what `row` throws.
void for_each_table_row(const hw::Hardware& hwf, const char* name, const char* per, std::initializer_list<const char*> keys,
                        std::string* file, const std::function<void(const nlohmann::json&, const RowError&)>& row) {
  if (!hwf.has_table(name)) return;
  const hw::Table& t = hwf.table(name);
  *file = t.file;
  const std::string key = std::string("tables.") + name, list = fmt::format("{}", fmt::join(keys, ", "));
  if (t.rows.empty())
    throw hw::FileError(hwf.path(), t.line, key, fmt::format("{} holds no row (expected one per {}: {})", t.file, per, list));
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const nlohmann::json& r = t.rows[i];
    const RowError bad = [&](const std::string& what) {
      return hw::FileError(hwf.path(), t.line, key, fmt::format("{} row {}: {}", t.file, i + 1, what));
    };
    if (!r.is_object()) throw bad("expected an object {" + list + "}");
    for (const auto& [k, val] : r.items())
      if (std::find_if(keys.begin(), keys.end(), [&](const char* a) { return k == a; }) == keys.end())
        throw bad(fmt::format("unknown key '{}' (expected {})", k, list));
    row(r, bad);
  }
}
}  // namespace

SmShareMachine sm_share_machine(const hw::Hardware& hwf) {
  SmShareMachine m;
  m.hw = sm_sharing_hardware().read(hwf);
  m.path = hwf.path();
  if (!hwf.has_table("sm_map"))
    throw hw::FileError(hwf.path(), -1, "tables.sm_map",
                        "the round-3 SM-sharing rule needs the table sm_map (the GPCs and the dispatcher's order)");
  const hw::Table& tab = hwf.table("sm_map");
  try {
    m.map = hw::SmMap::from_rows(tab.rows, tab.file);
  } catch (const std::invalid_argument& e) {
    throw hw::FileError(hwf.path(), tab.line, "tables.sm_map", e.what());
  }
  if (m.map.sms() != int(m.hw.sms))
    throw hw::FileError(hwf.path(), tab.line, "tables.sm_map",
                        fmt::format("{} SMs in {}, gpu.compute_units is {}", m.map.sms(), tab.file, int(m.hw.sms)));
  m.limits.sms = int(m.hw.sms);
  m.limits.sms_per_tpc = int(m.hw.sms_per_tpc);
  for_each_table_row(hwf, "late_cluster_work_ids", "grid", {"clusters", "cluster_ctas", "late_work_ids"}, &m.late_work_ids_file,
                     [&](const nlohmann::json& r, const RowError& bad) {
                       auto count = [&](const char* k) {
                         if (!r.contains(k) || !r[k].is_number_integer() || r[k].get<int64_t>() < 1 || r[k].get<int64_t>() > 1 << 20)
                           throw bad(fmt::format("'{}' must be an integer in 1..2^20", k));
                         return r[k].get<int>();
                       };
                       const int clusters = count("clusters"), ctas = count("cluster_ctas");
                       if (!r.contains("late_work_ids") || !r["late_work_ids"].is_array() || r["late_work_ids"].empty())
                         throw bad("'late_work_ids' must be a non-empty list of work ids");
                       std::vector<int> ids;
                       std::set<int> seen;
                       for (const auto& x : r["late_work_ids"]) {
                         if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= clusters ||
                             !seen.insert(x.get<int>()).second)
                           throw bad(fmt::format("'late_work_ids' must hold distinct integers in 0..{}", clusters - 1));
                         ids.push_back(x.get<int>());
                       }
                       if (!m.late_work_ids.emplace(std::make_pair(clusters, ctas), ids).second) throw bad("a grid listed twice");
                     });
  for_each_table_row(hwf, "hbm_queue_kappa_by_kernel", "kernel", {"kernel", "kappa", "pairs", "spread"}, &m.kappa_by_kernel_file,
                     [&](const nlohmann::json& r, const RowError& bad) {
                       if (!r.contains("kernel") || !r["kernel"].is_string() || r["kernel"].get<std::string>().empty())
                         throw bad("'kernel' must be the kernel's name (text)");
                       if (!r.contains("kappa") || !r["kappa"].is_number() || !(r["kappa"].get<double>() >= 0) ||
                           r["kappa"].get<double>() > 1)
                         throw bad("'kappa' must be a number in 0..1");
                       if (!m.kappa_by_kernel.emplace(r["kernel"].get<std::string>(), r["kappa"].get<double>()).second)
                         throw bad("kernel listed twice");
                     });
  return m;
}

namespace {
/// One engine run of the GEMM on a fresh GpcPool, the neighbour's SMs `held` (empty: alone) for
/// hold_s; tile_time(n) per tile. Returns (end time s, slots at launch, late CTAs, whole-wave wait charged).
std::tuple<double, int, int, bool> persistent_run(const SmShareMachine& m, const GemmOnSms& g, const std::vector<int>& held,
                                            double hold_s, const std::function<double(int)>& tile_time,
                                            sim::TraceSink* trace, double slow_factor = 1) {
  sim::Simulation sim;
  sim.set_trace(trace);
  hw::GpcPool pool(sim, m.map);
  if (!held.empty()) {
    const int id = pool.hold(held, "neighbour");
    if (std::isfinite(hold_s)) sim.at(hold_s, [&pool, id] { pool.release(id); });
  }
  hw::PersistentGemm pg;
  pg.tiles = g.tiles;
  pg.grid = g.grid;
  pg.cluster = g.cluster;
  pg.label = "gemm";
  pg.tile_time_s = tile_time;
  pg.late_work_ids = g.late_work_ids;
  if (slow_factor != 1) {  // the neighbour's HBM stretch while it runs (held or not)
    pg.slow_factor = slow_factor;
    pg.slow_until_s = hold_s;
  }
  double t_end = 0;
  int slots = 0, late = 0;
  bool whole = false, done = false;
  hw::run_persistent(pool, pg, [&](int s, int l, bool w) {
    t_end = sim.now();
    slots = s;
    late = l;
    whole = w;
    done = true;
  });
  sim.run();
  if (!done)
    throw ParamError("blocks", fmt::format("the GEMM never finishes: its clusters of {} CTAs find no free SMs of one GPC while the "
                                           "neighbour holds {} SMs{}", g.cluster, held.size(),
                                           std::isfinite(hold_s) ? "" : " for ever (give it a finite cover)"));
  return {t_end, slots, late, whole};
}
}  // namespace

BesideResult gemm_beside(const SmShareMachine& m, const GemmOnSms& g, const SmNeighbour& nb, double alone_s,
                         sim::TraceSink* trace) {
  if (g.tiles < 1 || g.grid < 1 || g.cluster < 1)
    throw ParamError("grid", fmt::format("the GEMM needs tiles, grid and cluster >= 1 (got {}, {}, {})", g.tiles, g.grid, g.cluster));
  if (!(alone_s > 0) || !std::isfinite(alone_s))
    throw ParamError("alone_time_us", fmt::format("the GEMM's alone time must be > 0 and finite, not {} s", alone_s));
  if (nb.blocks < 0) throw ParamError("blocks", "the neighbour's blocks must be >= 0");
  if (g.grid % g.cluster != 0)
    throw ParamError("grid", fmt::format("a grid of {} CTAs is not a whole number of clusters of {}", g.grid, g.cluster));
  const SmSharingHw& h = m.hw;
  auto rate = [&](int running) { return h.tile_rate(running); };
  if (rate(m.limits.sms) <= 0)
    throw ParamError("grid", fmt::format("the tile rate r({}) of {} is not positive", m.limits.sms, m.path));
  try {
    (void)hw::residency(m.limits, g.block);
  } catch (const std::invalid_argument& e) {
    throw ParamError("gemm_threads", fmt::format("the GEMM's block: {}", e.what()));
  }
  BesideResult r;
  // The late clusters' work ids: the case's, else the machine's table row for this grid (G clusters of c).
  GemmOnSms gw = g;
  r.late_work_ids_source = "none: w(y) = y (no late_cluster_work_ids row for this grid)";
  if (!g.late_work_ids.empty()) {
    r.late_work_ids_source = "given";
  } else if (const auto it = m.late_work_ids.find({g.grid / g.cluster, g.cluster}); it != m.late_work_ids.end()) {
    gw.late_work_ids = it->second;
    r.late_work_ids_source = "measured: " + m.late_work_ids_file;
  }
  // The HBM coefficient: the kernel's row of the machine's table, else smshare.hbm_queue_kappa.
  r.hbm_queue_kappa = h.hbm_queue_kappa;
  r.hbm_queue_kappa_source = "machine: smshare.hbm_queue_kappa";
  if (const auto it = m.kappa_by_kernel.find(g.kernel); !g.kernel.empty() && it != m.kappa_by_kernel.end()) {
    r.hbm_queue_kappa = it->second;
    r.hbm_queue_kappa_source = "kernel " + g.kernel + ": " + m.kappa_by_kernel_file;
  } else if (!g.kernel.empty()) {  // say so: a misspelt name would otherwise fall back unseen
    r.hbm_queue_kappa_source += " (kernel " + g.kernel + " is not in the machine's hbm_queue_kappa_by_kernel)";
  }
  if (nb.hbm_Bps > 0) {
    if (r.hbm_queue_kappa < 0)
      throw ParamError("neighbour_alone_GBps",
                       fmt::format("a neighbour that moves HBM bytes needs smshare.hbm_queue_kappa in {} (or a row of its "
                                   "table hbm_queue_kappa_by_kernel for the case's kernel)", m.path));
    r.hbm_u = nb.hbm_Bps / h.hbm;
    if (r.hbm_u >= 1)
      throw ParamError("neighbour_alone_GBps", fmt::format("u = {:.3f} of the HBM capacity: expected < 1", r.hbm_u));
    r.stretch = 1 + r.hbm_queue_kappa * r.hbm_u / (1 - r.hbm_u);
  }
  // The tile time: alone_s / rounds x r(ref) / r(n), ref = the CTAs running alone (the grid when it fits
  // the GPU), then scaled so that the engine alone takes alone_s exactly.
  const int rounds = (g.tiles + g.grid - 1) / g.grid;
  const double tile0 = alone_s / rounds;
  const int ref = std::min(g.grid, m.limits.sms);
  std::function<double(int)> tile_time = [&](int running) {
    return tile0 * rate(ref) / rate(std::clamp(running, 1, m.limits.sms));
  };
  std::vector<int> held;
  if (nb.blocks > 0) {
    try {
      (void)hw::residency(m.limits, nb.block);
    } catch (const std::invalid_argument& e) {
      throw ParamError("neighbour_threads", fmt::format("the neighbour's block: {}", e.what()));
    }
    if (!hw::can_share(m.limits, nb.block, 1, g.block)) held = hw::dispatch_placement(m.map, nb.blocks);
  }
  r.held_sms = int(held.size());
  const double t_alone = std::get<0>(persistent_run(m, gw, {}, 0, tile_time, nullptr));
  r.alone_s = alone_s;
  const double scale = alone_s / t_alone;
  // Beside: the neighbour holds its SMs (none when a GEMM block fits beside its blocks) and stretches every unit by
  // the HBM factor while it runs (hw::PersistentGemm::slow_factor until nb.length_s): a neighbour that outlasts the
  // GEMM stretches all of it; one that ends first, or that the GEMM waits for, only the part run beside it.
  const auto [t_b, slots, late, whole] = persistent_run(m, gw, held, nb.length_s / scale, tile_time, trace, r.stretch);
  r.beside_s = t_b * scale;
  r.slots_at_launch = slots;
  r.late_ctas = late;
  r.whole_wave_drain = whole;
  return r;
}

namespace {
constexpr size_t kMaxKernelNameChars = 4096;

/// Round 3 (see the header): the case's kernels on gemm_beside(), the neighbour for cover x alone_time_us.
nlohmann::json run_round3(const hw::Hardware& hwf, const CaseValues& v, sim::TraceSink* trace, int tiles, double alone) {
  SmShareMachine m;
  try {
    m = sm_share_machine(hwf);
  } catch (const hw::FileError& e) {
    if (!hwf.has_table("sm_map"))
      throw ParamError("neighbour", fmt::format("the round-3 rule (no neighbour_tpcs, no cluster_slots) needs the table sm_map "
                                                "in {} (the GPCs and the dispatcher's order)", hwf.path()));
    throw;
  }
  const std::string kind = v.name("neighbour");
  GemmOnSms g;
  g.tiles = tiles;
  g.grid = int(v.integer("grid"));
  g.cluster = int(v.integer("cluster"));
  g.block = {int(v.integer("gemm_threads")), int(v.integer("gemm_regs")), v.number("gemm_smem_bytes")};
  if (v.given("kernel")) {
    g.kernel = v.name("kernel");
    if (g.kernel.size() > kMaxKernelNameChars)  // ncu's names of templated kernels run to a few thousand characters
      throw ParamError("kernel", fmt::format("the kernel's name is {} characters long: at most {}", g.kernel.size(), kMaxKernelNameChars));
  }
  SmNeighbour nb;
  nb.blocks = int(v.integer("blocks"));
  nb.block = {int(v.integer("neighbour_threads")), int(v.integer("neighbour_regs")), v.number("neighbour_smem_bytes")};
  nb.length_s = v.number("cover") * alone;
  if (kind == "copy") nb.hbm_Bps = v.number("neighbour_alone_GBps") * 1e9;
  const BesideResult r = gemm_beside(m, g, nb, alone, trace);
  const double t = r.beside_s;
  std::vector<hw::Span> spans{{"neighbour_" + kind, 0.0, nb.length_s * 1e6, 0, ""}, {"gemm", 0.0, t * 1e6, 0, ""}};
  return {{"predicted_us", t * 1e6}, {"phases", hw::spans_json(spans)}, {"cta_slots", r.slots_at_launch},
          {"late_ctas", r.late_ctas}, {"whole_wave_drain", r.whole_wave_drain}, {"hbm_stretch", r.stretch},
          {"alone_us", alone * 1e6},
          {"rule", "engine (hw::run_persistent, round 7 hand-out: each cluster's first two units static, then a shared counter; "
                   "late clusters start as slots free; tiles padded to whole clusters when cluster_m / cluster_n are given)"},
          {"late_work_ids", r.late_work_ids_source},
          {"hbm_queue_kappa", r.hbm_queue_kappa},
          {"hbm_queue_kappa_source", r.hbm_queue_kappa_source},
          {"neighbour_sms", hw::dispatch_placement(m.map, nb.blocks).size()}};
}
}  // namespace

nlohmann::json run_sm_sharing_case(const hw::Hardware& hwf, const YAML::Node& p, sim::TraceSink* trace) {
  const CaseValues v = schema().read(p);
  const SmSharingHw h = sm_sharing_hardware().read(hwf);
  const int64_t m = v.integer("m"), n = v.integer("n"), k = v.integer("k");
  const int64_t tm = v.integer("tile_m"), tn = v.integer("tile_n");
  const int grid = int(v.integer("grid")), cluster = int(v.integer("cluster"));
  // The GEMM's tiles, each an event of the engine (and of hw::run_tiled's loop): at most kMaxTiles.
  // Counted in int64 (m = n = 2^31 overflowed int) before anything runs: m = 2^31 made 3.6e8 tiles
  // and 200 s of simulation that no event budget stopped.
  const int64_t tiles_m = (n + tm - 1) / tm, tiles_n = (m + tn - 1) / tn;
  const int64_t real64 = tiles_m * tiles_n;
  if (real64 > kMaxTiles)
    throw ParamError("m", fmt::format("the GEMM has {} output tiles (ceil(n / tile_m) x ceil(m / tile_n) = ceil({} / {}) x ceil({} / {})), "
                                      "more than the {} this model simulates", real64, n, tm, m, tn, kMaxTiles));
  // The scheduler's tiles: the grid padded to whole clusters when the case gives the cluster's shape
  // (hw::pad_to_clusters; a padded tile costs a tile time), else the output tiles.
  const bool shaped = v.given("cluster_m") || v.given("cluster_n");
  int64_t tiles64 = real64, units = 0;
  if (shaped) {
    if (!v.given("cluster_m") || !v.given("cluster_n"))
      throw ParamError(v.given("cluster_m") ? "cluster_n" : "cluster_m", "the cluster's shape needs both cluster_m and cluster_n");
    const int64_t cm = v.integer("cluster_m"), cn = v.integer("cluster_n");
    if (cm * cn != cluster)
      throw ParamError("cluster_m", fmt::format("cluster_m x cluster_n = {} x {} = {}, but cluster is {}", cm, cn, cm * cn, cluster));
    const hw::ClusterTileGrid pg = hw::pad_to_clusters(tiles_m, tiles_n, int(cm), int(cn));
    tiles64 = pg.tiles();
    units = pg.units();
    if (tiles64 > kMaxTiles)
      throw ParamError("m", fmt::format("the GEMM's tile grid padded to whole {} x {} clusters has {} tiles, more than the {} this "
                                        "model simulates", cm, cn, tiles64, kMaxTiles));
  }
  const int tiles = int(tiles64), real_tiles = int(real64);
  // Every result reports the output tiles ("tiles") and the tiles the scheduler hands out.
  auto finish = [&](nlohmann::json j) {
    j["params"] = v.to_json();  // as the model ran them (README: every case's "params")
    j["tiles"] = real_tiles;
    j["scheduled_tiles"] = tiles;
    if (shaped) j["cluster_units"] = units;
    return j;
  };
  const int rounds = (tiles + grid - 1) / grid;
  auto rate = [&](int running) { return h.tile_rate_at_zero - h.tile_rate_slope * running; };
  if (rate(grid) <= 0) throw ParamError("grid", fmt::format("the tile rate r(grid={}) is not positive", grid));
  const double tile_flops = 2.0 * double(tm) * double(tn) * double(k);
  const double alone = v.given("alone_time_us") ? v.number("alone_time_us") * 1e-6 : rounds * tile_flops / rate(grid);
  const double tile0 = alone / rounds;
  const std::string kind = v.name("neighbour");
  const int blocks = int(v.integer("blocks"));
  if (kind != "none" && blocks < 1) throw ParamError("blocks", "a neighbour needs blocks >= 1");
  if (kind == "copy" && !v.given("neighbour_alone_GBps"))
    throw ParamError("neighbour_alone_GBps", "a copy neighbour needs neighbour_alone_GBps, its bandwidth alone (GB/s, read + write)");

  if (v.given("cluster_slots")) {
    // Round 2 (calibrate/data/h200/predict_smshare_r2.py, the same rule): S slots from the GPC count, the
    // grid's G - S late CTAs run their first tile after the resident CTAs drained the rest, HBM queueing.
    const int slots = kind == "none" ? grid : std::min(grid, int(v.integer("cluster_slots")));
    const int late = grid - slots;
    const int drained = std::max(0, tiles - late), reserved = std::min(late, tiles);
    const int waves = (drained + slots - 1) / slots + (reserved + slots - 1) / slots;
    if (rate(slots) <= 0) throw ParamError("cluster_slots", fmt::format("the tile rate r({}) is not positive", slots));
    const double t_sm = waves * tile0 * rate(grid) / rate(slots);
    const double nb_len2 = v.number("cover") * alone;
    if (kind != "none" && t_sm > nb_len2)
      throw ParamError("cover", fmt::format("the round-2 rule assumes the neighbour outlasts the GEMM ({:.1f} us > {:.1f} us)",
                                            t_sm * 1e6, nb_len2 * 1e6));
    double stretch2 = 1.0;
    if (kind == "copy") {
      if (!v.given("hbm_queue_kappa")) throw ParamError("hbm_queue_kappa", "a copy neighbour under the round-2 rule needs it");
      const double u = v.number("neighbour_alone_GBps") * 1e9 / h.hbm;
      if (u >= 1) throw ParamError("neighbour_alone_GBps", fmt::format("u = {:.3f} of the HBM capacity: expected < 1", u));
      stretch2 = 1 + v.number("hbm_queue_kappa") * u / (1 - u);
    }
    const double t2 = t_sm * stretch2;
    std::vector<hw::Span> sp2;
    if (kind != "none") sp2.push_back({"neighbour_" + kind, 0.0, nb_len2 * 1e6, 0, ""});
    sp2.push_back({"gemm", 0.0, t2 * 1e6, 0, ""});
    return finish({{"predicted_us", t2 * 1e6}, {"phases", hw::spans_json(sp2)}, {"cta_slots", slots},
                   {"waves", waves}, {"hbm_stretch", stretch2}, {"alone_us", alone * 1e6}});
  }

  if (kind != "none" && !v.given("neighbour_tpcs") && hwf.has_table("sm_map")) return finish(run_round3(hwf, v, trace, tiles, alone));

  sim::Simulation sim;
  sim.set_trace(trace);
  hw::SmLimits lim;
  lim.sms = int(h.sms);
  lim.sms_per_tpc = int(h.sms_per_tpc);
  hw::SmPool pool(sim, lim);
  const hw::BlockShape gemm_block{int(v.integer("gemm_threads")), int(v.integer("gemm_regs")), v.number("gemm_smem_bytes")};
  const hw::BlockShape nb_block{int(v.integer("neighbour_threads")), int(v.integer("neighbour_regs")),
                                v.number("neighbour_smem_bytes")};
  (void)hw::residency(lim, gemm_block);
  std::vector<hw::Span> spans;
  const double nb_len = v.number("cover") * alone;
  if (kind != "none") {
    (void)hw::residency(lim, nb_block);
    // One block per SM while blocks <= SMs (the dispatcher spreads them; %smid showed distinct SMs = B).
    const int sms = std::min(blocks, lim.sms);
    const int tpcs = v.given("neighbour_tpcs") ? int(v.integer("neighbour_tpcs")) : hw::spread_placement(lim, blocks);
    if (tpcs > sms || tpcs * lim.sms_per_tpc < sms || tpcs > lim.sms / lim.sms_per_tpc)
      throw ParamError("neighbour_tpcs", fmt::format("{} blocks on {} SMs cannot lie on {} TPCs", blocks, sms, tpcs));
    if (!hw::can_share(lim, nb_block, 1, gemm_block)) {
      const int id = pool.hold(sms, tpcs, "neighbour");
      sim.at(nb_len, [&pool, id] { pool.release(id); });
    }
    spans.push_back({"neighbour_" + kind, 0.0, nb_len * 1e6, 0, ""});
  }
  int slots_at_start = 0;
  double t_end = 0;
  hw::TiledKernel tk;
  tk.tiles = tiles;
  tk.grid = grid;
  tk.cluster = cluster;
  tk.label = "gemm";
  tk.tile_time_s = [&](int running) {
    if (slots_at_start == 0) slots_at_start = running;
    return tile0 * rate(grid) / rate(running);
  };
  hw::run_tiled(pool, tk, [&] { t_end = sim.now(); });
  sim.run();
  double stretch = 1.0;
  if (kind == "copy") {
    const double bytes = 2.0 * (double(m) * k + double(n) * k + double(m) * n);
    const double demand = bytes / t_end;
    stretch = std::max(1.0, (v.number("neighbour_alone_GBps") * 1e9 + demand) / h.hbm);
  }
  const double t = t_end * stretch;
  spans.push_back({"gemm", 0.0, t * 1e6, 0, ""});
  return finish({{"predicted_us", t * 1e6},
                 {"phases", hw::spans_json(spans)},
                 {"cta_slots", slots_at_start},
                 {"hbm_stretch", stretch},
                 {"alone_us", alone * 1e6}});
}

const ModelSpec& sm_sharing_spec() {
  static const ModelSpec spec = [] {
    ModelSpec s{"sm_sharing", "a GEMM beside a kernel holding B SMs on one GPU: tiles in waves over the free SM pool (issue 19)",
                "calibrate/data/h200/README.md (probe_smshare on one H200; predictions pre-registered in smshare_predictions.json)",
                reads_of(sm_sharing_hardware()), [] { return schema().describe(); }, run_sm_sharing_case};
    s.tables = {{"sm_map", "the GPU's SMs: GPC, TPC and the dispatcher's order (hw::SmMap; one row per SM)"},
                {"late_cluster_work_ids", "per persistent grid (clusters, CTAs per cluster): the late clusters' work ids"},
                {"hbm_queue_kappa_by_kernel", "per GEMM kernel (as ncu names it): its HBM queueing coefficient kappa"}};
    return s;
  }();
  return spec;
}

}  // namespace fusesim::models
