// The MI355X file from its components (issue 17): the GEMM per quantisation route fitted on the
// public gemm-only measurements alone (scenarios/mi355x-components-gemm.yaml), k-fold (k=5) held-out
// per route, the N=5120 rows predicted from the N=7168 rows, and the committed file's GEMM keys being
// that fit's. Every fit runs to the fitter's own convergence; nothing is loosened.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "calibrate/fit.hpp"
#include "calibrate/measurements.hpp"
#include "models/collective/collective.hpp"
#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "test_util.hpp"

namespace fusesim::calibrate {
namespace {
using test::src;

const char* kGemmScenario = "scenarios/mi355x-components-gemm.yaml";

/// Every gemm.* / gemm@BUILD.* value of kind fitted in the file: the GEMM's component keys.
std::vector<std::string> gemm_keys(const hw::Hardware& h, const std::string& quant = "") {
  std::vector<std::string> keys;
  for (const auto& [k, v] : h.values())
    if (v.kind == hw::Provenance::Fitted && k.rfind("gemm", 0) == 0 &&
        (quant.empty() || k.find("." + quant + "_") != std::string::npos))
      keys.push_back(k);
  return keys;
}

struct Stats {
  double median = 0, max = 0;
  size_t n = 0;
};
Stats stats(std::vector<double> e) {
  Stats s;
  s.n = e.size();
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  s.median = e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
  s.max = e.back();
  return s;
}
std::string quant_of(const FitPoint& p) { return p.params["quant"] ? p.params["quant"].as<std::string>() : "blockscale"; }

}  // namespace

TEST(ComponentsGemm, KFoldHeldOutPerRouteMeetsTheIssueTargets) {
  // Issue 17, "What it must show": k-fold (k=5) over the public gemm-only points, held-out median
  // |error| <= 3% and max <= 8% per route (two d5c0277d K=1024 cells are listed known misses in
  // scenarios/mi355x-components-gemm-known-misses.yaml and are not fitted).
  const hw::Hardware start = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  const auto pts = points_from_scenarios({src(kGemmScenario)});
  ASSERT_EQ(pts.size(), 53u);
  FitOptions opt;
  opt.free_keys = gemm_keys(start);
  ASSERT_EQ(opt.free_keys.size(), 12u);  // 3 routes x 3 + build d5c0277d's mxfp8 x 3
  std::map<std::string, std::vector<double>> held;
  for (int i = 0; i < 5; ++i) {
    const auto mask = holdout_mask(pts, "kfold=5/" + std::to_string(i));
    std::vector<FitPoint> tr, te;
    for (size_t j = 0; j < pts.size(); ++j) (mask[j] ? te : tr).push_back(pts[j]);
    const FitResult r = fit(start, tr, te, opt);
    ASSERT_TRUE(lm_converged(r.lm_info)) << "fold " << i << ": " << lm_status_name(r.lm_info);
    for (const auto& p : r.points)
      if (p.held_out)
        for (const auto& q : te)
          if (q.id == p.id) held[quant_of(q)].push_back(std::fabs(p.error_pct));
  }
  for (const auto& [route, e] : held) {
    const Stats s = stats(e);
    RecordProperty("kfold_" + route, ::testing::PrintToString(s.median) + "/" + ::testing::PrintToString(s.max));
    std::printf("k-fold held out, %s: %zu points, median %.2f%%, max %.2f%%\n", route.c_str(), s.n, s.median, s.max);
    EXPECT_LE(s.median, 3.0) << route;
    EXPECT_LE(s.max, 8.0) << route;
  }
  EXPECT_EQ(held.size(), 3u);
}

TEST(ComponentsGemm, TheCommittedGemmKeysAreTheComponentFit) {
  // hw/mi355x-8gpu.yaml's GEMM keys were written by calibrate fit on the gemm-only scenario (README,
  // Calibration): refitting from the file moves none of them by more than 1%, and the file predicts
  // every fitted gemm-only point within the scenario's 8%.
  const hw::Hardware start = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  const auto pts = points_from_scenarios({src(kGemmScenario)});
  FitOptions opt;
  opt.free_keys = gemm_keys(start);
  const FitResult r = fit(start, pts, {}, opt);
  for (const auto& p : r.params) {
    EXPECT_NEAR(p.value_si, p.start_si, 0.01 * std::fabs(p.start_si)) << p.key;
    if (p.key == "gemm.mxfp8_latency") {
      // Reported, not kept silently: the default build's mxfp8 points (all K=2048, N=5120) put its
      // latency at 1.0 +- 2.3 us, i.e. consistent with zero; calibrate fit lists it as not identified.
      EXPECT_FALSE(p.identified) << p.key;
      EXPECT_LT(p.value_si, 5e-6) << p.key;
      continue;
    }
    EXPECT_TRUE(p.identified) << p.key << " sigma " << p.sigma_si;
    EXPECT_LT(p.sigma_si, 0.5 * std::fabs(p.value_si)) << p.key;
  }
  FitOptions none;
  none.no_free_keys = true;
  const FitResult e = fit(start, pts, {}, none);
  for (const auto& p : e.points) EXPECT_LE(std::fabs(p.error_pct), 8.0) << p.id;
  // Seed 000's K-sweep statement (mori's blockscale at [16384, 7168], 8 ranks: 51.6 us fixed +
  // 20.9 us per K-block): the file's slope per K-block, from K=1024 to 2048, within 10% of it.
  auto at_k = [&](int k) {
    return models::run_gemm_ar_case(start, YAML::Load("{mode: gemm-only, m: 16384, k: " + std::to_string(k) + "}"), nullptr)["predicted_us"]
        .get<double>();
  };
  const double slope = (at_k(2048) - at_k(1024)) / 8.0;
  std::printf("K-sweep slope %.2f us per K-block (seed 000: 20.9), fixed %.1f us (51.6)\n", slope, at_k(1024) - 8 * slope);
  EXPECT_NEAR(slope, 20.9, 2.09);
}

TEST(ComponentsGemm, NFiveThousandPredictedFromNSevenThousand) {
  // Issue 17: fitted on the N=7168 rows alone, the N=5120 rows (and ptpc's N sweep, 4096..6144)
  // predicted within 5%. The N=7168 gemm-only rows
  // are all K=2048 but one ptpc row, so they cannot split a wave's cost between its fixed and per-K
  // parts; seed 000's K-sweep statement at N=7168 (51.6 us + 20.9 us per K-block, blockscale) is
  // the K information added for blockscale, as two points at K=1024 and 2048 (218.8, 386.0 us).
  const hw::Hardware start = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  auto pts = points_from_scenarios({src(kGemmScenario)});
  for (int k : {1024, 2048}) {
    FitPoint p;
    p.id = "seed000-ksweep/k=" + std::to_string(k);
    p.model = "gemm_ar";
    p.table = "seed000-ksweep";
    p.params = YAML::Load("{mode: gemm-only, m: 16384, n: 7168, k: " + std::to_string(k) + ", world_size: 8, quant: blockscale}");
    p.measured_us = 51.6 + 20.9 * k / 128.0;
    p.source = "seed 000: K-sweep, 51.6 us fixed + 20.9 us per K-block";
    pts.push_back(p);
  }
  for (const std::string route : {"blockscale", "ptpc"}) {
    std::vector<FitPoint> tr, te;
    for (const auto& p : pts) {
      if (quant_of(p) != route) continue;
      (p.params["n"].as<int>() == 7168 ? tr : te).push_back(p);
    }
    FitOptions opt;
    opt.free_keys = gemm_keys(start, route);
    ASSERT_EQ(opt.free_keys.size(), 3u);
    const FitResult r = fit(start, tr, te, opt);
    std::vector<double> e;
    for (const auto& p : r.points)
      if (p.held_out) e.push_back(std::fabs(p.error_pct));
    const Stats s = stats(e);
    std::printf("%s: fitted on %zu N=7168 points, %zu N<7168 points held out: median %.2f%%, max %.2f%%\n", route.c_str(), tr.size(),
                s.n, s.median, s.max);
    EXPECT_GT(s.n, 0u);
    EXPECT_LE(s.max, 5.0) << route;
  }
}

}  // namespace fusesim::calibrate

namespace fusesim::calibrate {
TEST(ComponentsComposites, SeedZeroPredictedFromComponentsWithFourCompositeKeys) {
  // Issue 17: with the GEMM keys (gemm-only points), the collective keys (standalone all-reduce
  // points, sdma.hbm_source_efficiency among them: see ComponentsAllReduceFit below) and the launch
  // sum and HBM rates (seed 000's kernel phases) fixed, four keys are fitted on seed 000's composite
  // totals (and its phases at --phase-weight 0.3, as README's Calibration runs it). Two are
  // interaction keys: sdma.fabric_cost (what the GEMM and the copies take from each other) and
  // sdma.gemm_request_share (how that is split between them: the copy engines served first; it sets
  // where the GEMM phase ends and the drain begins). Two describe the fp8 pull kernel, which runs
  // only inside a composite: lsa.remote_read_latency (the pull grid's 24 and 32 block points, 7 loads
  // in flight per lane from GEMM_AR.md; the standalone LSA points bound it from above only, see
  // ComponentsAllReduceFit) and lsa.congestion_per_MiB (its 256 block point, the knee set at the
  // grid's flat end). Targets (the issue's): at most 4 keys, median <= 3%, max <= 8%, each key with
  // sigma below half its value; the committed file holds that fit's values.
  const hw::Hardware start = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  auto files = test::seed000_files();
  const auto pts = load_fit_points(files, 0.3);
  FitOptions opt;
  opt.free_keys = {"sdma.fabric_cost", "sdma.gemm_request_share", "lsa.remote_read_latency", "lsa.congestion_per_MiB"};
  const FitResult r = fit(start, pts, {}, opt);
  ASSERT_EQ(r.params.size(), 4u);
  ASSERT_TRUE(lm_converged(r.lm_info)) << lm_status_name(r.lm_info);
  std::printf("seed 000 composites from components: median %.2f%%, max %.2f%%\n", r.median_abs_fit_pct, r.max_abs_fit_pct);
  EXPECT_LE(r.median_abs_fit_pct, 3.0);
  EXPECT_LE(r.max_abs_fit_pct, 8.0);
  for (const auto& p : r.params) {
    std::printf("  %s = %g +- %g\n", p.key.c_str(), p.value_si, p.sigma_si);
    EXPECT_TRUE(p.identified) << p.key;
    EXPECT_LT(p.sigma_si, 0.5 * std::fabs(p.value_si)) << p.key;
    EXPECT_NEAR(p.value_si, p.start_si, 0.01 * std::fabs(p.start_si)) << p.key << ": the committed file is this fit's";
  }
}

TEST(ComponentsAllReduceFit, TheHbmSourceOfTheScatterIsIdentifiedByTheStandaloneSdmaPoint) {
  // Issue 17: the standalone fit of README's step 3, with sdma.hbm_source_efficiency free beside
  // the eight collective keys. The collective's SDMA scatter reads its input from HBM for the part
  // of input + receive slots beyond the MALL, as gemm_ar's split scatter does; at [16384, 7168]
  // bf16 (224 MiB input, 196 MiB receive slots, 256 MiB MALL) that is the one standalone point
  // depending on it, and it identifies it (about 1.0 +- 0.15: the HBM source costs nothing
  // measurable). The committed file holds this fit's values; every key's sigma is below half its value.
  const hw::Hardware start = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  const auto pts = points_from_scenarios({src("scenarios/mi355x-components-allreduce.yaml")});
  ASSERT_EQ(pts.size(), 29u);
  FitOptions opt;
  opt.free_keys = {"sdma.queue_peak",       "sdma.command_latency",  "sdma.build_0f4d2776_put_share",
                   "lsa.stage_overhead",    "links.read_efficiency", "aiter.stage_overhead",
                   "aiter.loads_in_flight", "rccl.bus_bandwidth_per_link", "sdma.hbm_source_efficiency"};
  const FitResult r = fit(start, pts, {}, opt);
  ASSERT_TRUE(lm_converged(r.lm_info)) << lm_status_name(r.lm_info);
  EXPECT_LE(r.median_abs_fit_pct, 4.0);
  EXPECT_LE(r.max_abs_fit_pct, 10.0);
  for (const auto& p : r.params) {
    EXPECT_TRUE(p.identified) << p.key;
    EXPECT_FALSE(p.at_bound) << p.key;
    EXPECT_LT(p.sigma_si, 0.5 * std::fabs(p.value_si)) << p.key;
    EXPECT_NEAR(p.value_si, p.start_si, 0.01 * std::fabs(p.start_si)) << p.key << ": the committed file is this fit's";
    if (p.key == "sdma.hbm_source_efficiency") std::printf("  %s = %g +- %g\n", p.key.c_str(), p.value_si, p.sigma_si);
  }
  // The mechanism is what identifies it: at the earlier composite value (0.844) the M=16384 point
  // moves by more than 3%, the M=8192 points (input + slots within the MALL) not at all.
  hw::Hardware low = start;
  low.set_si("sdma.hbm_source_efficiency", 0.844);
  auto at = [](const hw::Hardware& h, int m) {
    return models::run_collective_case(h, YAML::Load("{backend: sdma, m: " + std::to_string(m) + "}"), nullptr)["predicted_us"]
        .get<double>();
  };
  EXPECT_GT(at(low, 16384), 1.03 * at(start, 16384));
  EXPECT_DOUBLE_EQ(at(low, 8192), at(start, 8192));
}

TEST(ComponentsAllReduceFit, TheStandaloneLsaPointsBoundTheRemoteReadLatencyFromAboveOnly) {
  // Issue 17's lead for a fifth component key: ar_2stage's lanes issue the same 16-byte remote loads
  // (7 in flight, GEMM_AR.md) as the fp8 pull. At 24 blocks x 512 lanes they keep 1.3 MiB in flight,
  // which at the pull grid's round trip (2.78 us) asks more than the links' read payload (0.758 x 7
  // x 76.8 GB/s): the links bind and no standalone point depends on the round trip below ~3.4 us.
  // Free in the standalone fit it is not identified (and aiter.loads_in_flight with it, the aiter
  // points seeing their ratio); above the bound the LSA points move. So it stays a composite key.
  const hw::Hardware start = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  const auto pts = points_from_scenarios({src("scenarios/mi355x-components-allreduce.yaml")});
  FitOptions opt;
  opt.free_keys = {"sdma.queue_peak",       "sdma.command_latency",  "sdma.build_0f4d2776_put_share",
                   "lsa.stage_overhead",    "links.read_efficiency", "aiter.stage_overhead",
                   "aiter.loads_in_flight", "rccl.bus_bandwidth_per_link", "lsa.remote_read_latency"};
  const FitResult r = fit(start, pts, {}, opt);
  for (const auto& p : r.params) {
    if (p.key == "lsa.remote_read_latency") {
      EXPECT_FALSE(p.identified) << p.value_si << " +- " << p.sigma_si;
    }
  }
  auto lsa = [](const hw::Hardware& h) {
    return models::run_collective_case(h, YAML::Load("{backend: lsa, m: 16384}"), nullptr)["predicted_us"].get<double>();
  };
  hw::Hardware faster = start, slower = start;
  faster.set_si("lsa.remote_read_latency", 2.0e-6);
  slower.set_si("lsa.remote_read_latency", 3.6e-6);
  EXPECT_DOUBLE_EQ(lsa(faster), lsa(start));
  EXPECT_GT(lsa(slower), 1.03 * lsa(start));
}
}  // namespace fusesim::calibrate

namespace fusesim::calibrate {
TEST(ComponentsComposites, OnlyTheListedKeysAreFittedOnCompositeTotals) {
  // Issue 17: every value of hw/mi355x-8gpu.yaml fitted on seed 000's composites (a fitted_from
  // naming calibrate/data/mi355x/) is one of the four composite keys above. A new key fitted on
  // composites fails here. gemm.operand_l2_hit, the 2026-11-29 composite fit's value that no
  // measurement identified (sigma 0.31 on 0.62), is gone: the GEMM's operand reuse in L2 is derived
  // per shape from the tile order and the XCDs (gpu.xcds, a spec value; models::gemm_operand_l2_hit).
  const hw::Hardware h = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  const std::set<std::string> allowed{"sdma.fabric_cost", "sdma.gemm_request_share", "lsa.remote_read_latency",
                                      "lsa.congestion_per_MiB"};
  std::set<std::string> composite;
  for (const auto& [k, v] : h.values()) {
    if (v.kind != hw::Provenance::Fitted) continue;
    for (const auto& f : v.fitted_from)
      if (f.find("calibrate/data/mi355x/") != std::string::npos) composite.insert(k);
  }
  EXPECT_EQ(composite, allowed);
  EXPECT_FALSE(h.has("gemm.operand_l2_hit"));
  EXPECT_EQ(h.values().at("gpu.xcds").kind, hw::Provenance::Spec);
  // Values set by hand from seed 000 (not by the fitter), so that none joins the composite keys
  // unseen: from its kernels' own phases (the launch sum, the HBM read rate and write cost, the
  // barrier-only phase), a statement (the system-scope release), paired differences of composite
  // totals that isolate one kernel the standalone runs lack (the fused reduce+quantize's efficiency,
  // the band publish's submit), and three that no measurement identifies, set to 0 or at the grid's
  // flat end (README, "The MI355X file from its components", steps 2, 4 and 5). A new value whose
  // source cites seed 000 fails here until it is placed in one of these.
  const std::set<std::string> from_kernel_phases{"kernel.launch_gap", "memory.fabric_bandwidth", "memory.write_cost",
                                                 "sync.flag_barrier"};
  const std::set<std::string> from_statements{"reduce.system_release_per_band"};
  const std::set<std::string> from_paired_differences{"sdma.device_submit", "reduce.row_wave_efficiency"};
  const std::set<std::string> not_identified{"reduce.band_sync", "sdma.submit_cost_per_outstanding", "lsa.congestion_knee"};
  std::set<std::string> by_hand, expected;
  for (const auto& [k, v] : h.values())
    if (v.kind != hw::Provenance::Fitted && v.source.find("seed 000") != std::string::npos) by_hand.insert(k);
  for (const auto* set : {&from_kernel_phases, &from_statements, &from_paired_differences, &not_identified})
    expected.insert(set->begin(), set->end());
  EXPECT_EQ(by_hand, expected);
  // The kernel launch is one sum (every MI355X path charges launch_gap + fixed_cost together),
  // carried by kernel.launch_gap from seed 000's kernel phases.
  EXPECT_EQ(h.values().at("kernel.fixed_cost").kind, hw::Provenance::Derived);
  EXPECT_EQ(h.get("kernel.fixed_cost"), 0.0);
}
}  // namespace fusesim::calibrate

namespace fusesim::calibrate {
TEST(ComponentsGemm, NoGemmOnlyPointDependsOnTheOperandReuse) {
  // Issue 17 (b): what share of the GEMM's A/B loads an L2 serves is not identified by the GEMM
  // alone: a wave alone runs at its compute-bound rate while its fabric traffic stays below the HBM
  // rate, which holds for every public gemm-only point at any share above 0.27 (ptpc at K=2048 is
  // the tightest: calibrate/data/mi355x/phase_table_bounds.py). The derived share
  // (models::gemm_operand_l2_hit) is 0.72..0.76 at the seeds' shapes over 8 XCDs and 0.90..0.94 over
  // one L2: the 53 points give the same times with either. Only below the bound do they move (256
  // dies of one tile each: no reuse at all), which shows the comparison can fail.
  const hw::Hardware eight = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  hw::Hardware one = eight, many = eight;
  one.set_si("gpu.xcds", 1);
  many.set_si("gpu.xcds", 256);
  models::GemmArConfig seed;
  seed.mode = "gemm-only";
  EXPECT_NEAR(models::gemm_operand_l2_hit(seed, 256, 1, 8), 0.751, 0.001);
  EXPECT_GT(models::gemm_operand_l2_hit(seed, 256, 1, 1), 0.9);
  EXPECT_NEAR(models::gemm_operand_l2_hit(seed, 256, 1, 256), 0.0, 1e-12);
  const auto pts = points_from_scenarios({src(kGemmScenario)});
  ASSERT_EQ(pts.size(), 53u);
  int moved = 0;
  for (const auto& p : pts) {
    YAML::Node q = YAML::Clone(p.params);
    q["mode"] = "gemm-only";
    auto at = [&](const hw::Hardware& h) { return models::run_gemm_ar_case(h, q, nullptr)["predicted_us"].get<double>(); };
    const double t8 = at(eight);
    EXPECT_NEAR(at(one), t8, 1e-9 * t8) << p.id;
    moved += at(many) > t8 * (1 + 1e-6);
  }
  EXPECT_GT(moved, 0);
}
}  // namespace fusesim::calibrate
