// gemm_ar model tests: validation, memory formula, mechanisms (contention, what-ifs) and the
// orderings seed 000 reports, on the committed MI355X hardware file.
#include <gtest/gtest.h>

#include <cmath>

#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::test;
using models::GemmArConfig;

namespace {
const hw::Hardware& mi355x() {
  static const hw::Hardware h = models::load_hardware(FUSESIM_SOURCE_DIR "/hw/mi355x-8gpu.yaml");
  return h;
}
GemmArConfig cfg(const std::string& mode, int64_t m = 16384) {
  GemmArConfig c;
  c.mode = mode;
  c.m = m;
  return c;
}
GemmArConfig fp8(const std::string& transport, int64_t m = 16384) {
  GemmArConfig c = cfg("fused-sdma", m);
  c.gather_dtype = "fp8";
  c.gather_transport = transport;
  return c;
}
double run(const GemmArConfig& c) { return models::simulate_gemm_ar(mi355x(), c).total_us; }
double phase(const models::GemmArResult& r, const std::string& name) {
  for (const auto& p : r.phases)
    if (p.name == name) return p.end_us - p.start_us;
  ADD_FAILURE() << "no phase " << name;
  return 0;
}
constexpr double MiB = 1024.0 * 1024.0;
}  // namespace

TEST(GemmArValidate, RejectsImpossibleShapesAndCombinations) {
  auto expect_bad = [](GemmArConfig c, const std::string& knob) {
    try {
      models::validate(c, mi355x());
      ADD_FAILURE() << "accepted a bad " << knob;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(knob), std::string::npos) << e.what();
    }
  };
  GemmArConfig c = cfg("fused-sdma");
  c.k = 128;
  expect_bad(c, "k");
  c = cfg("fused-sdmaa");
  expect_bad(c, "mode");
  c = cfg("split-lsa");
  c.gather_dtype = "fp8";
  expect_bad(c, "gather_dtype");  // the benchmark refuses split-lsa with the fp8 wire
  c = cfg("fused-sdma");
  c.gather_transport = "lsa";
  expect_bad(c, "gather_transport");  // lsa pull only exists for the fp8 wire
  c = cfg("fused-sdma");
  c.world_size = 3;
  expect_bad(c, "world_size");
  c = cfg("fused-sdma");
  c.fuse_quantize = true;
  expect_bad(c, "fuse_quantize");
  c = cfg("fused-sdma");
  c.quant = "int8";
  expect_bad(c, "quant");
  // A shape that does not fit in HBM names the dimension behind the largest term.
  auto key_of = [](GemmArConfig c) {
    try {
      models::validate(c, mi355x());
    } catch (const std::invalid_argument& e) {
      const std::string w = e.what();
      return w.substr(0, w.find(':'));
    }
    return std::string("accepted");
  };
  c = cfg("fused-sdma", 1024);
  c.k = int64_t(1) << 31;  // B = N x K fp8 = 14 TiB
  EXPECT_EQ(key_of(c), "k");
  c = cfg("fused-sdma", 1024);
  c.n = 2147483656;  // B and the window grow with N
  EXPECT_EQ(key_of(c), "n");
  c = cfg("fused-sdma", int64_t(1) << 26);  // the window and A grow with M
  EXPECT_EQ(key_of(c), "m");
  // The RCCL baseline has no window, but its all-reduced bf16 output (M x N) must fit too: M = 1e8
  // at N = 7168 needs 1.3 TiB (it ran and predicted 14.6 s).
  c = cfg("rccl", 100000000);
  EXPECT_EQ(key_of(c), "m");
  // M that is not a multiple of ws * BLOCK_M is padded, not refused.
  c = cfg("fused-sdma", 1000);
  EXPECT_NO_THROW(models::validate(c, mi355x()));
  EXPECT_EQ(models::padded_m(c), 1024);
}

TEST(GemmArMemory, WindowSizeMatchesTheSeeds) {
  // seed 000 / GEMM_AR.md: 700 MiB (bf16 wire) and 812 MiB (fp8 wire) at M=16384, N=7168, ws=8.
  GemmArConfig c = cfg("fused-sdma");
  EXPECT_NEAR(models::window_bytes(c) / MiB, 700, 700 * 0.02);
  c.gather_dtype = "fp8";
  EXPECT_NEAR(models::window_bytes(c) / MiB, 812, 812 * 0.02);
  // V4.1-Flash PR: 560-640 MiB at N=5120; TP2 at M=16384 gives the ends of the range.
  c = cfg("fused-sdma");
  c.n = 5120;
  c.world_size = 2;
  EXPECT_NEAR(models::window_bytes(c) / MiB, 560, 560 * 0.02);
  c.gather_dtype = "fp8";
  EXPECT_NEAR(models::window_bytes(c) / MiB, 640, 640 * 0.02);
  // The GEMM + RCCL baseline all-reduces an ordinary tensor: no window.
  EXPECT_EQ(models::window_bytes(cfg("rccl")), 0.0);
}

TEST(GemmArMechanism, FusedGemmRunsLongerBecauseOfConcurrentTraffic) {
  const auto alone = models::simulate_gemm_ar(mi355x(), cfg("gemm-only"));
  const auto fused = models::simulate_gemm_ar(mi355x(), cfg("fused-sdma"));
  GemmArConfig idle = cfg("fused-sdma");
  idle.sdma_moves_nothing = true;  // same kernels and commands, no bytes on the fabric
  const auto no_traffic = models::simulate_gemm_ar(mi355x(), idle);
  // The fused GEMM is slower than the GEMM alone (per-phase table: 441.9 vs 369.4 us; the model's
  // figure is judged against the 441.9 us in Mi355xScenario.PerPhaseTableFromComponents) ...
  EXPECT_GT(phase(fused, "gemm"), phase(alone, "gemm") * 1.02);
  // ... and the slowdown disappears when the copies move nothing: it comes from the shared fabric.
  EXPECT_NEAR(phase(no_traffic, "gemm"), phase(alone, "gemm"), phase(alone, "gemm") * 0.01);
}

TEST(GemmArMechanism, CopyEnginesServedFirstMoveTheGemmDrainBoundaryNotTheirSum) {
  // sdma.gemm_request_share < 1: on the request fabric the copy engines are served ahead of the GEMM's
  // tile loads, so the scatter slows the GEMM more than the GEMM slows the scatter. The scatter is
  // queue-bound and backlogged, so what ends it is its own rate: a GEMM that runs longer shortens the
  // drain by about as much (seed 000's per-phase table: the fused GEMM 441.9 us against 369.4 alone
  // with the drain 180.2, where the symmetric share of 2026-12-01 gave 411 and 214).
  hw::Hardware even = mi355x();
  even.set_si("sdma.gemm_request_share", 1.0);
  ASSERT_LT(mi355x().get("sdma.gemm_request_share"), 1.0);
  const auto first = models::simulate_gemm_ar(mi355x(), cfg("fused-sdma"));
  const auto fair = models::simulate_gemm_ar(even, cfg("fused-sdma"));
  EXPECT_GT(phase(first, "gemm"), phase(fair, "gemm") + 20);
  EXPECT_LT(phase(first, "drain"), phase(fair, "drain") - 20);
  const double sum_first = phase(first, "gemm") + phase(first, "drain"), sum_fair = phase(fair, "gemm") + phase(fair, "drain");
  EXPECT_NEAR(sum_first, sum_fair, 0.05 * sum_fair);
  // The GEMM alone has nothing to share with: unchanged.
  EXPECT_DOUBLE_EQ(models::simulate_gemm_ar(even, cfg("gemm-only")).total_us, run(cfg("gemm-only")));
}

TEST(GemmArMechanism, ReduceQuantizeDequantizeFromOneHbmReadRateAndWriteCost) {
  // kernel.launch_gap (the launch sum), memory.fabric_bandwidth (the read rate) and memory.write_cost
  // were solved by least squares from seed 000's three kernels measured as their own phases
  // (calibrate/data/mi355x/hbm_read_write.py): the reduce (8 slices read, 1 written: 41.7 / 42.5 /
  // 43.1 us over the three columns), the dequantize (3.5 read, 7 written: 61.0 us) and the quantize
  // (1 read, 1/2 + row scales written: 11.8 / 11.9 us). Each kernel's mean is met within 0.5 us.
  const auto r = models::simulate_gemm_ar(mi355x(), fp8("sdma"));
  EXPECT_NEAR(phase(r, "reduce"), (41.7 + 42.5 + 43.1) / 3, 0.5);
  EXPECT_NEAR(phase(r, "dequantize"), 61.0, 0.5);
  EXPECT_NEAR(phase(r, "quantize"), 11.85, 0.5);
  // With written bytes costing what read ones do, one rate cannot give both kernels: the dequantize
  // (write-heavy) comes out well short of its 61.0 us.
  hw::Hardware flat = mi355x();
  flat.set_si("memory.write_cost", 1.0);
  EXPECT_LT(phase(models::simulate_gemm_ar(flat, fp8("sdma")), "dequantize"), 0.85 * 61.0);
}

TEST(GemmArWhatIf, FailureModesAreVisible) {
  const double normal = run(cfg("fused-sdma"));
  GemmArConfig host = cfg("fused-sdma");
  host.window_in_host_memory = true;
  // Window in host memory: every window write crosses PCIe at about one link's rate: several-fold slower.
  EXPECT_GT(run(host), 2.0 * normal);
  GemmArConfig nothing = cfg("fused-sdma");
  nothing.sdma_moves_nothing = true;
  // A build without SDMA measures faster than it is (seed 000: -6.8% end to end instead of -2.3%) ...
  EXPECT_LT(run(nothing), 0.8 * normal);
  // ... and fp8/lsa then looks worst of the three wires, since the pull is the one leg not on SDMA.
  GemmArConfig lsa = fp8("lsa"), sdma = fp8("sdma"), bf16 = cfg("fused-sdma");
  for (auto* c : {&lsa, &sdma, &bf16}) c->sdma_moves_nothing = true;
  EXPECT_GT(run(lsa), run(sdma));
  EXPECT_GT(run(lsa), run(bf16));
}

TEST(GemmArWhatIf, HostWindowSlowsEveryAccessToTheWindow) {
  // Every access to a window pinned in host memory crosses PCIe: the reduce and the LSA pull read it,
  // and split-lsa's loads read peers' windows, so each of those slows down too (not only the writes).
  auto host = [](GemmArConfig c) { c.window_in_host_memory = true; return c; };
  const auto lsa = models::simulate_gemm_ar(mi355x(), fp8("lsa")), lsa_h = models::simulate_gemm_ar(mi355x(), host(fp8("lsa")));
  EXPECT_GT(phase(lsa_h, "reduce"), 5.0 * phase(lsa, "reduce"));
  EXPECT_GT(phase(lsa_h, "pull"), 5.0 * phase(lsa, "pull"));
  EXPECT_GT(run(host(cfg("split-lsa"))), 3.0 * run(cfg("split-lsa")));
  // mori's GEMM writes C into the window in every mode (the data README: C is the window's input
  // region, in gemm-only too): split-sdma's and gemm-only's GEMM slow down as well, and so does the
  // split scatter, which reads C out of the window.
  const auto split = models::simulate_gemm_ar(mi355x(), cfg("split-sdma")),
             split_h = models::simulate_gemm_ar(mi355x(), host(cfg("split-sdma")));
  EXPECT_GT(phase(split_h, "gemm"), 1.5 * phase(split, "gemm"));
  EXPECT_GT(phase(split_h, "scatter"), 1.5 * phase(split, "scatter"));
  EXPECT_GT(phase(split_h, "reduce"), 5.0 * phase(split, "reduce"));
  EXPECT_GT(run(host(cfg("gemm-only"))), 1.5 * run(cfg("gemm-only")));
  // The RCCL baseline has no window: nothing moves.
  EXPECT_NEAR(run(host(cfg("rccl"))), run(cfg("rccl")), 1e-6);
}

TEST(GemmArSemantics, ChunksAreHalvedUntilTheyDivideTheRowBands) {
  // bench_gemm_ar.py @103655f6..ad271d19: `while chunks > 1 and bands % chunks: chunks //= 2`.
  GemmArConfig c = cfg("fused-sdma", 12288);  // 12288 / 8 ranks / BLOCK_M 128 = 12 bands per destination
  EXPECT_EQ(models::effective_chunks(c), 4);   // 8 -> 4 (not 6, the largest divisor <= 8)
  c.chunks = 5;
  EXPECT_EQ(models::effective_chunks(c), 2);   // 5 -> 2, which divides 12
  c = cfg("fused-sdma", 16384);                // 16 bands
  c.chunks = 8;
  EXPECT_EQ(models::effective_chunks(c), 8);
  c = cfg("fused-sdma", 5120);                 // 5 bands: 8 -> 4 -> 2 -> 1
  EXPECT_EQ(models::effective_chunks(c), 1);
  const auto j = models::run_gemm_ar_case(mi355x(), YAML::Load("{mode: fused-sdma, m: 12288}"), nullptr);
  EXPECT_EQ(j["params"]["chunks_effective"].get<int>(), 4);
  EXPECT_NE(j["note"].get<std::string>().find("halved"), std::string::npos) << j["note"];
}

TEST(GemmArSemantics, TheFp8WireRunsWithSplitSdmaAndFusedLsaOnlySplitLsaRefusesIt) {
  // bench_gemm_ar.py @ad271d19 refuses only split-lsa with --gather-dtype fp8; sweep.py's preset
  // fused-fp8 runs it on fused-lsa.
  for (const std::string mode : {"split-sdma", "fused-lsa"})
    for (const std::string t : {"sdma", "lsa"}) {
      GemmArConfig c = cfg(mode);
      c.gather_dtype = "fp8";
      c.gather_transport = t;
      const auto r = models::simulate_gemm_ar(mi355x(), c);
      GemmArConfig b = cfg(mode);
      // The fp8 wire halves the gather's bytes at M=16384: faster than the bf16 wire.
      EXPECT_LT(r.total_us, run(b)) << mode << " " << t;
      EXPECT_GT(phase(r, t == "lsa" ? "pull" : "dequantize"), 0) << mode << " " << t;
    }
  GemmArConfig c = cfg("split-lsa");
  c.gather_dtype = "fp8";
  EXPECT_THROW(models::validate(c, mi355x()), std::invalid_argument);
}

TEST(GemmArSemantics, WorldSizeOneIsTheGemmInOneProcess) {
  // bench_mori_gemm_1p.py (mori_1p.jsonl): one process, no collective.
  GemmArConfig c = cfg("gemm-only");
  c.world_size = 1;
  c.quant = "mxfp8";
  c.n = 5120;
  const auto r = models::simulate_gemm_ar(mi355x(), c);
  EXPECT_EQ(r.per_rank_us.size(), 1u);
  // The same tiles as at world size 4 (M=16384 is a multiple of 4 x 256): the same time.
  GemmArConfig c4 = c;
  c4.world_size = 4;
  EXPECT_NEAR(r.total_us, run(c4), 1e-6);
  GemmArConfig s = cfg("fused-sdma");
  s.world_size = 1;
  EXPECT_THROW(models::validate(s, mi355x()), std::invalid_argument);
}

TEST(GemmArGemm, TheKernelBuildIsData) {
  // ROCm/mori's two mxfp8 builds at [16384, 5120] K=2048: 275.0 us (mori_med.txt @d5c0277d) and
  // 180.2 us (mori_1p.jsonl @4f4e3e91, the file's default build); each within 5% of its build's costs.
  GemmArConfig c = cfg("gemm-only");
  c.quant = "mxfp8";
  c.n = 5120;
  c.world_size = 4;
  const double now = run(c);
  c.gemm_build = "d5c0277d";
  const double old = run(c);
  EXPECT_NEAR(now, 180.2, 0.05 * 180.2);
  EXPECT_NEAR(old, 275.04, 0.05 * 275.04);
  // A build the file does not hold, or a route the build was not measured on, names gemm_build.
  for (const auto& [build, quant] : std::vector<std::pair<std::string, std::string>>{{"nosuch", "mxfp8"}, {"d5c0277d", "ptpc"}}) {
    c.gemm_build = build;
    c.quant = quant;
    try {
      models::validate(c, mi355x());
      ADD_FAILURE() << "accepted gemm_build " << build << " for " << quant;
    } catch (const models::ParamError& e) {
      EXPECT_EQ(e.key(), "gemm_build");
      EXPECT_NE(std::string(e.what()).find("gemm@" + build + "." + quant + "_latency"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("builds there: default, d5c0277d"), std::string::npos) << e.what();
    }
  }
}

TEST(GemmArGemm, APartialLastWaveCostsWhatItsTilesCost) {
  // The data README's N sweep (ROCm/mori@0187031f README, "Persistent tiles": ptpc, M=4096, K=1024,
  // 8 ranks): N 4096 is one full wave of 256 tiles (32.6 us); N 4352..7168 add a last wave of 16..192
  // tiles (45.9 / 44.7 / 45.2 / 47.4 / 49.8 us), each far below two full waves (65 us).
  const std::vector<std::pair<int64_t, double>> sweep{{4096, 32.64}, {4352, 45.88}, {4608, 44.68}, {5120, 45.24}, {6144, 47.4}, {7168, 49.8}};
  for (const auto& [n, us] : sweep) {
    GemmArConfig c = cfg("gemm-only", 4096);
    c.quant = "ptpc";
    c.k = 1024;
    c.n = n;
    EXPECT_NEAR(run(c), us, 0.05 * us) << "N=" << n;
  }
}

TEST(GemmArWhatIf, GatherPutShareMovesTheGatherPutsOnly) {
  // sdma.gather_put_share (absent from hw/mi355x-8gpu.yaml: 1) scales the gather's puts alone; the
  // diagnostic of issue 17 (README) fits it as a fifth composite key. At 1.1 the bf16 gather's bytes
  // take 1/1.1 of their time (launch, command latency and barrier unchanged), the rest does not move.
  hw::Hardware faster = mi355x();
  faster.set_si("sdma.gather_put_share", 1.1);
  const auto a = models::simulate_gemm_ar(mi355x(), cfg("fused-sdma")), b = models::simulate_gemm_ar(faster, cfg("fused-sdma"));
  const double fixed = 4.887 + 6.25504 + 7.5;  // launch sum, sdma.command_latency, sync.flag_barrier
  EXPECT_NEAR(phase(b, "gather") - fixed, (phase(a, "gather") - fixed) / 1.1, 0.5);
  EXPECT_NEAR(phase(b, "gemm"), phase(a, "gemm"), 1e-6);
  EXPECT_NEAR(phase(b, "drain"), phase(a, "drain"), 1e-6);
}

TEST(GemmArValidate, FuseReducePushRefusesTheFp8Wire) {
  GemmArConfig c = fp8("sdma");
  c.fuse_reduce_push = true;
  try {
    models::validate(c, mi355x());
    ADD_FAILURE() << "accepted fuse_reduce_push with the fp8 wire";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fuse_reduce_push"), std::string::npos) << e.what();
  }
}

TEST(GemmArBaseline, RcclGemmIsNotPaddedToRowBands) {
  // The fused kernels pad M to world_size x BLOCK_M (1024 here: M=1025 runs as 2048, two GEMM waves);
  // the baseline's GEMM only rounds to its 128-row tile: M=1025 stays one wave, as M=1024.
  GemmArConfig a = cfg("rccl", 1024), b = cfg("rccl", 1025);
  EXPECT_EQ(models::padded_m(b), 1025);
  EXPECT_NEAR(phase(models::simulate_gemm_ar(mi355x(), b), "gemm"), phase(models::simulate_gemm_ar(mi355x(), a), "gemm"), 0.5);
  GemmArConfig f = cfg("fused-sdma", 1025);
  EXPECT_EQ(models::padded_m(f), 2048);
}

TEST(GemmArPull, BlocksBeyondWhatTheCusHoldAddNoLoadsInFlight) {
  // 256 CUs x 2048 work-items / 256 lanes = 2048 resident pull blocks: 4096 pulls like 2048.
  GemmArConfig a = fp8("lsa"), b = fp8("lsa");
  a.pull_blocks = 2048;
  b.pull_blocks = 4096;
  EXPECT_NEAR(run(a), run(b), 1e-6);
}

TEST(GemmArOrdering, WiresAndModesAtEveryM) {
  // seed 000: fused-sdma + fp8/lsa < bf16 gather < split-sdma at every M ("fp8 wins wherever fusing
  // does" with the pull), and fp8/lsa < fp8/sdma.
  for (int64_t m : {4096, 8192, 16384}) {
    const double lsa = run(fp8("lsa", m)), f8s = run(fp8("sdma", m)), bf16 = run(cfg("fused-sdma", m)),
                 split = run(cfg("split-sdma", m));
    EXPECT_LT(lsa, f8s) << "M=" << m;
    EXPECT_LT(lsa, bf16) << "M=" << m;
    EXPECT_LT(bf16, split) << "M=" << m;
  }
  // Seed 000, "Who moves the gather": fp8/sdma is faster than the bf16 wire at M=16384 (1018.9 vs
  // 1150.7 us).
  EXPECT_LT(run(fp8("sdma", 16384)), run(cfg("fused-sdma", 16384)));
}

TEST(GemmArOrdering, Fp8OverSdmaAtM4096IsWhatThePhaseTableAllows) {
  // Seed 000 states that with the SDMA gather "the two conversion kernels were a fixed cost against a
  // transfer that shrinks with M, so fp8 measured [withheld for validation] at M=4096": the number is
  // withheld, and the statement's mechanism is bounded by the seed's own per-phase table (M=16384):
  //  - the fp8 wire saves 437.8 - 256.4 = 181.4 us of gather, a byte count proportional to M:
  //    45.4 us at M=4096;
  //  - the kernels it adds, affine in M: quantize q(M) = fq + (11.8 - fq) M/16384 with fq <= 11.8 less
  //    its 42 MiB at the 8 TB/s HBM spec (fq <= 6.3 us); dequantize with fd <= 61.0 - 294 MiB / 8 TB/s
  //    (fd <= 22.5 us). At M=4096 they cost 18.2 + 0.75 (fq + fd) <= 39.8 us < 45.4 us.
  // So the data puts fp8/sdma at least 5.6 us ahead of the bf16 wire at M=4096 (the issue's "slower"
  // is the seed's statement, not a measurement the table allows), and the model must agree.
  const double bf16 = run(cfg("fused-sdma", 4096)), f8s = run(fp8("sdma", 4096));
  EXPECT_LT(f8s, bf16 - 5.6);
  // ... and its conversion kernels at M=4096 stay inside that bound.
  const auto r = models::simulate_gemm_ar(mi355x(), fp8("sdma", 4096));
  EXPECT_LE(phase(r, "quantize") + phase(r, "dequantize"), 39.8);
  // fused-lsa loses to fused-sdma everywhere (GEMM_AR.md: its GEMM slows when the epilogue stores
  // cross the fabric): at every M, and at N whose columns per rank are not whole tiles.
  for (int64_t m : {2048, 4096, 8192, 16384, 32768})
    EXPECT_GT(run(cfg("fused-lsa", m)), run(cfg("fused-sdma", m))) << "M=" << m;
  // More output is never faster: 768, 896 (3.5 tiles of 256), 1024 and 1152 columns per rank.
  double prev = 0;
  for (int64_t n : {6144, 7168, 8192, 9216}) {
    GemmArConfig c = cfg("fused-lsa", 8192);
    c.n = n;
    const double t = run(c);
    EXPECT_GT(t, prev) << "N=" << n;
    GemmArConfig s = cfg("fused-sdma", 8192);
    s.n = n;
    EXPECT_GT(t, run(s)) << "N=" << n;
    prev = t;
  }
  // 16 chunks of 1.75 MiB lose to 8.
  GemmArConfig c16 = cfg("fused-sdma");
  c16.chunks = 16;
  EXPECT_GT(run(c16), run(cfg("fused-sdma")));
  EXPECT_EQ(models::effective_chunks(c16), 16);
}

TEST(GemmArOrdering, PullGridIsFlatFrom48To80AndSteepOutside) {
  // Seed 000, 'The pull grid' (fp8/lsa, M=16384, MORI_GEMM_AR_PULL_BLOCKS): 1091 / 1006 / 962 / 959 /
  // 963 / 1138 us at 24 / 32 / 48 / 64 / 80 / 256 blocks, "flat from 48 to 80, steep either side"
  // (issue 17: the pull grid flat from 48 to 80 blocks, from the mechanism: Little's law below the
  // links' read payload, the congestion knee above it).
  auto pull = [](int blocks) {
    GemmArConfig c = fp8("lsa");
    c.pull_blocks = blocks;
    return run(c);
  };
  const double p48 = pull(48), p64 = pull(64), p80 = pull(80);
  const double lo = std::min({p48, p64, p80}), hi = std::max({p48, p64, p80});
  EXPECT_LE((hi - lo) / lo, 0.01);
  EXPECT_GE(pull(24), p64 * 1.04);
  EXPECT_GE(pull(256), p64 * 1.04);
}

TEST(GemmArOrdering, FuseQuantizeCostsTenToFortyMicroseconds) {
  for (const std::string t : {"lsa", "sdma"}) {
    GemmArConfig on = fp8(t), off = fp8(t);
    on.fuse_quantize = true;
    const double d = run(on) - run(off);
    EXPECT_GE(d, 10.0) << t;
    EXPECT_LE(d, 40.0) << t;
  }
}

TEST(GemmArOrdering, ReducePushBestNearFourBandsWorstAtThirtyTwo) {
  auto bands = [](int b, const std::string& publish) {
    GemmArConfig c = cfg("fused-sdma");
    c.fuse_reduce_push = true;
    c.gather_bands = b;
    c.publish = publish;
    return run(c);
  };
  // Seed 000 (writethrough): 1162.1 / 1157.2 / 1160.3 / 1190.1 / 1323.5 us at 1 / 4 / 8 / 16 / 32
  // bands: overlapping the gather with the reduce buys a little at 4 bands, per-band costs win after.
  double worst = 0, best = 1e30;
  int worst_b = 0, best_b = 0;
  for (int b : {1, 2, 4, 8, 16, 32}) {
    const double t = bands(b, "writethrough");
    if (t > worst) { worst = t; worst_b = b; }
    if (t < best) { best = t; best_b = b; }
  }
  EXPECT_EQ(worst_b, 32);
  EXPECT_GE(best_b, 2);
  EXPECT_LE(best_b, 8);
  EXPECT_LT(bands(4, "writethrough"), bands(1, "writethrough"));
  // A release after the stores (~61 us per band) is unrepayable: fence is slower at every band count.
  for (int b : {1, 4, 32}) EXPECT_GT(bands(b, "fence"), bands(b, "writethrough") + 50.0) << b;
  // Seed 000: the system-scope release is charged once per block per band, ~61 us per band. It sits
  // between a band's reduce and its puts, so while the releases together are shorter than the
  // gather they hide behind it in part (1 band: the whole 61 us shows; 4 bands: about as much);
  // past that the fence publish grows by the release's cost per band (16 -> 32 bands, within 10%).
  EXPECT_NEAR(bands(1, "fence") - bands(1, "writethrough"), 61.0, 6.1);
  EXPECT_NEAR((bands(32, "fence") - bands(16, "fence")) / 16.0, 61.0, 6.1);
  EXPECT_GT(bands(16, "fence") - bands(16, "writethrough"), bands(4, "fence") - bands(4, "writethrough"));
}

TEST(GemmArGroups, SmallerGroupsUseOnlyTheirLinks) {
  // A TP4 group on the 8-GPU mesh: each rank has 3 peers; the call is valid and cheaper per row.
  GemmArConfig c = cfg("fused-sdma");
  c.world_size = 4;
  c.n = 5120;
  const auto r = models::simulate_gemm_ar(mi355x(), c);
  EXPECT_EQ(r.per_rank_us.size(), 4u);
  EXPECT_GT(r.total_us, 0);
}

TEST(GemmArCoverage, EveryConfigurationThePublicDataCoversRuns) {
  // Issue 17: modes, quantisation routes, N 4096..7168, K 1024..2048, world size 1 to 8, M 64..16384,
  // chunks, wire and transport (calibrate/data/mori-public/ and seed 000) all run and give a time.
  int ran = 0;
  auto ok = [&](GemmArConfig c) {
    const auto r = models::simulate_gemm_ar(mi355x(), c);
    EXPECT_GT(r.total_us, 0) << c.mode << " " << c.quant << " M=" << c.m << " ws=" << c.world_size;
    ++ran;
  };
  for (const std::string mode : {"gemm-only", "split-sdma", "fused-sdma", "split-lsa", "fused-lsa", "rccl"})
    for (const std::string quant : {"blockscale", "ptpc", "mxfp8"})
      for (int ws : {1, 2, 4, 8})
        for (int64_t m : {64, 16384}) {
          if (ws == 1 && mode != "gemm-only") continue;
          GemmArConfig c = cfg(mode, m);
          c.quant = quant;
          c.world_size = ws;
          ok(c);
          if (mode == "split-sdma" || mode == "fused-sdma" || mode == "fused-lsa")
            for (const std::string t : {"sdma", "lsa"}) {
              GemmArConfig f = c;
              f.gather_dtype = "fp8";
              f.gather_transport = t;
              ok(f);
            }
        }
  for (int64_t n : {4096, 4352, 5120, 6144, 7168})
    for (int64_t k : {1024, 2048})
      for (int chunks : {1, 2, 4, 8, 16}) {
        GemmArConfig c = cfg("fused-sdma", 4096);
        c.n = n;
        c.k = k;
        c.chunks = chunks;
        ok(c);
      }
  GemmArConfig b = cfg("gemm-only");
  b.quant = "mxfp8";
  b.gemm_build = "d5c0277d";
  ok(b);
  EXPECT_GT(ran, 150);
}
