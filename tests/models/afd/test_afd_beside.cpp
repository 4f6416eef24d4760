// The next micro-batch's FFN expert GEMM beside the AFD transport kernel (models/afd/beside.hpp),
// charged by models::gemm_beside.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "models/afd/afd.hpp"
#include "models/afd/beside.hpp"
#include "models/afd/spec.hpp"
#include "models/model.hpp"
#include "models/sm_sharing/sm_sharing.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::afd;

namespace {
const hw::Hardware& h200x4() {
  static const hw::Hardware h = models::load_hardware(test::kRoot + "/hw/h200-4gpu-nvlink.yaml");
  return h;
}
const models::SmShareMachine& h200_pool() {
  static const models::SmShareMachine m = models::sm_share_machine(models::load_hardware(test::kRoot + "/hw/h200-1gpu.yaml"));
  return m;
}
/// A 1A:1F case overlapping a GEMM of m x n x 2048 with the dispatch on `sms` transport SMs.
AfdCase overlap_case(int sms, int64_t m, int64_t n) {
  AfdCase c;
  c.attention_ranks = 1;
  c.ffn_ranks = 1;
  c.tokens = 128;
  c.transport_sms = sms;
  c.overlap_ffn_gemm = "dispatch";
  c.ffn_gemm_m = m;
  c.ffn_gemm_n = n;
  c.gemm_machine = "hw/h200-1gpu.yaml";
  return c;
}
/// An exchange whose FFN rank 0 runs dispatch_impl for `us` (a hand-made timeline, so that the
/// neighbour's length is the test's choice).
AfdResult one_dispatch(double us) {
  AfdResult r;
  r.kernels.push_back({"dispatch_impl", 0.0, us, 0, "ffn"});
  r.kernels.push_back({"dispatch_impl", 0.0, us, 1, "attention"});
  return r;
}
std::string param_error_key(const hw::Hardware& hw, const AfdCase& c, const AfdResult& r) {
  try {
    (void)ffn_gemm_beside(hw, c, r);
  } catch (const models::ParamError& e) {
    return e.key();
  }
  return "";
}
}  // namespace

TEST(AfdFfnGemmBeside, OffChargesNothingAndChangesNoResult) {
  AfdCase c = overlap_case(24, 4096, 1536);
  c.overlap_ffn_gemm = "off";
  EXPECT_TRUE(ffn_gemm_beside(h200x4(), c, one_dispatch(1000)).empty());
  const YAML::Node plain = YAML::Load("{attention_ranks: 2, ffn_ranks: 2, tokens: 128, transport_sms: 24}");
  const YAML::Node off = YAML::Load("{attention_ranks: 2, ffn_ranks: 2, tokens: 128, transport_sms: 24, overlap_ffn_gemm: off}");
  EXPECT_EQ(run_afd_case(h200x4(), plain, nullptr).dump(), run_afd_case(h200x4(), off, nullptr).dump());
}

TEST(AfdFfnGemmBeside, EqualsGemmBesideForThatGemmAndTheTransportKernel) {
  // A simulated exchange: the GEMM's M is the expert rows routed to each FFN rank, the neighbour the
  // rank's dispatch_impl on transport_sms blocks of 384 threads filling an SM, for its span.
  AfdCase c = overlap_case(24, 0, 1536);
  c.attention_ranks = 2;
  c.ffn_ranks = 2;
  c.tokens = 512;
  const AfdResult res = simulate_afd(h200x4(), c);
  const auto got = ffn_gemm_beside(h200x4(), c, res);
  ASSERT_EQ(got.size(), 2u);
  const Routing rt = route(2, 2, 512, c.topk, c.experts, c.capacity, c.seed);
  for (const auto& b : got) {
    const auto k = std::find_if(res.kernels.begin(), res.kernels.end(), [&](const hw::Span& s) {
      return s.device == b.device && s.name == "dispatch_impl";
    });
    ASSERT_NE(k, res.kernels.end());
    const int64_t m = rt.rows_to[0][b.device] + rt.rows_to[1][b.device];
    EXPECT_EQ(b.m, m);
    models::GemmOnSms g;
    g.tiles = int((1536 + 255) / 256 * ((m + 127) / 128));
    g.grid = std::min(g.tiles + g.tiles % 2, 132);
    g.cluster = 2;
    g.block = {384, 168, 213188};
    EXPECT_EQ(b.gemm.tiles, g.tiles);
    EXPECT_EQ(b.gemm.grid, g.grid);
    const models::SmShareMachine& pool = h200_pool();
    const double r = pool.hw.tile_rate_at_zero - pool.hw.tile_rate_slope * g.grid;
    const double alone = ((g.tiles + g.grid - 1) / g.grid) * 2.0 * 256 * 128 * 2048 / r;
    models::SmNeighbour nb;
    nb.blocks = 24;
    nb.block = {384, 0, pool.limits.smem_per_sm_bytes};
    nb.length_s = (k->end_us - k->start_us) * 1e-6;
    const models::BesideResult want = models::gemm_beside(pool, g, nb, alone);
    EXPECT_DOUBLE_EQ(b.r.alone_s, want.alone_s);
    EXPECT_DOUBLE_EQ(b.r.beside_s, want.beside_s);
    EXPECT_EQ(b.r.held_sms, 24);
    EXPECT_EQ(b.r.late_ctas, want.late_ctas);
    EXPECT_DOUBLE_EQ(b.charge_us(), (want.beside_s - want.alone_s) * 1e6);
  }
}

TEST(AfdFfnGemmBeside, ChargeGrowsWithTransportSms) {
  // A GEMM of 132 tiles (one wave on 132 CTAs) beside a dispatch that outlasts it: each step in the
  // transport's SMs that adds a wave of late CTAs adds to the charge (1 SM: one extra tile; 64: the
  // late CTAs outnumber the free slots; 96, 120: more waves of them). Within a wave count the charge
  // falls by up to ~1% as SMs are taken (the tile-rate line r(n) is faster with fewer CTAs running),
  // which this test does not pin.
  double last = 0;
  for (int sms : {1, 4, 64, 96, 120}) {
    const auto b = ffn_gemm_beside(h200x4(), overlap_case(sms, 22 * 128, 6 * 256), one_dispatch(5000));
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].r.held_sms, sms);
    if (sms == 4) {
      EXPECT_GT(b[0].charge_us(), 0.75 * last) << "the same wave count as 1 SM";
    } else {
      EXPECT_GT(b[0].charge_us(), last + 0.5 * b[0].r.alone_s * 1e6) << sms << " transport SMs";
    }
    last = b[0].charge_us();
  }
}

TEST(AfdFfnGemmBeside, APartialWaveCostsAWholeTileTime) {
  // 132 tiles on 132 CTAs: one wave alone. Four transport SMs (on four TPCs) leave room for S clusters
  // of 2 CTAs at launch; the L = 132 - S late CTAs run their tile after the first wave: a whole tile
  // time more (at the faster rate of L CTAs running), far more than the 4/132 share of SMs taken.
  const auto b = ffn_gemm_beside(h200x4(), overlap_case(4, 22 * 128, 6 * 256), one_dispatch(5000));
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(b[0].gemm.tiles, 132);
  ASSERT_EQ(b[0].gemm.grid, 132);
  const int S = b[0].r.slots_at_launch, L = b[0].r.late_ctas;
  EXPECT_EQ(S + L, 132);
  EXPECT_GT(L, 0);
  EXPECT_LE(L, S);
  const models::SmShareMachine& pool = h200_pool();
  const double tile_us = b[0].r.alone_s * 1e6;  // one round = one tile time
  // The per-SM rate: the line r0 - slope n, capped at smshare.tile_rate_max (round 5 of issue 19).
  auto rate = [&](int n) { return std::min(pool.hw.tile_rate_at_zero - pool.hw.tile_rate_slope * n, pool.hw.tile_rate_max); };
  ASSERT_GT(pool.hw.tile_rate_max, 0);
  // The first wave's S tiles at r(S), then the late CTAs' L at r(L), each tile t x r(132) / r(n).
  EXPECT_NEAR(b[0].charge_us(), tile_us * (rate(132) / rate(S) + rate(132) / rate(L) - 1), 1e-6 * tile_us);
  EXPECT_GT(b[0].charge_us(), 0.75 * tile_us);
  EXPECT_GT(b[0].charge_us(), 20 * tile_us * 4.0 / 132);
}

TEST(AfdFfnGemmBeside, ATransportBlockThatLeavesRoomHoldsNoSm) {
  // With no shared memory, a 384-thread transport block (registers unknown: 0) fits beside a GEMM
  // block (384 x 168 registers, 213 KB): hw::can_share, nothing held, no charge.
  AfdCase c = overlap_case(24, 4096, 1536);
  c.transport_smem_bytes = 0;
  const auto b = ffn_gemm_beside(h200x4(), c, one_dispatch(5000));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].r.held_sms, 0);
  EXPECT_DOUBLE_EQ(b[0].charge_us(), 0.0);
}

TEST(AfdFfnGemmBeside, RunReportsTheChargeAndTheGemmPhase) {
  const YAML::Node p = YAML::Load(
      "{attention_ranks: 3, ffn_ranks: 1, tokens: 512, transport_sms: 48, overlap_ffn_gemm: dispatch, ffn_gemm_n: 1536, "
      "gemm_machine: hw/h200-1gpu.yaml}");
  const nlohmann::json out = run_afd_case(h200x4(), p, nullptr);
  const nlohmann::json& x = out["extra"];
  ASSERT_TRUE(x.contains("ffn_gemm_charge_us"));
  EXPECT_EQ(x["ffn_gemm_held_sms"].get<int>(), 48);
  EXPECT_DOUBLE_EQ(x["ffn_gemm_charge_us"].get<double>(),
                   x["ffn_gemm_beside_us"].get<double>() - x["ffn_gemm_alone_us"].get<double>());
  const auto& ph = out["phases"];
  const auto g = std::find_if(ph.begin(), ph.end(), [](const auto& q) { return q["name"] == "dev0/ffn_gemm"; });
  ASSERT_NE(g, ph.end());
  EXPECT_NEAR((*g)["end_us"].get<double>() - (*g)["start_us"].get<double>(), x["ffn_gemm_beside_us"].get<double>(), 1e-9);
  // The exchange itself is not changed (the GEMM's pull on the transport is not modelled).
  const YAML::Node plain = YAML::Load("{attention_ranks: 3, ffn_ranks: 1, tokens: 512, transport_sms: 48}");
  EXPECT_DOUBLE_EQ(out["predicted_us"].get<double>(), run_afd_case(h200x4(), plain, nullptr)["predicted_us"].get<double>());
}

TEST(AfdFfnGemmBeside, BadInputIsNamed) {
  AfdCase c = overlap_case(24, 4096, 1536);
  c.ffn_gemm_n = 0;
  EXPECT_EQ(param_error_key(h200x4(), c, one_dispatch(10)), "ffn_gemm_n");
  c = overlap_case(24, 4096, 1536);
  c.gemm_machine.clear();  // hw/h200-4gpu-nvlink.yaml has no SM-pool keys
  EXPECT_EQ(param_error_key(h200x4(), c, one_dispatch(10)), "gemm_machine");
  c.gemm_machine = "hw/no-such-machine.yaml";
  EXPECT_EQ(param_error_key(h200x4(), c, one_dispatch(10)), "gemm_machine");
  c = overlap_case(24, 4096, 1536);
  c.ffn_gemm_tile_n = 0;
  EXPECT_EQ(param_error_key(h200x4(), c, one_dispatch(10)), "ffn_gemm_tile_m");
  c = overlap_case(24, 4096, 1536);
  c.ffn_gemm_threads = 4096;  // no SM holds such a block: gemm_beside's error, named by the case's key
  EXPECT_EQ(param_error_key(h200x4(), c, one_dispatch(10)), "ffn_gemm_threads");
  c = overlap_case(24, 4096, 1536);
  c.ffn_gemm_n = 0;
  try {
    (void)ffn_gemm_beside(h200x4(), c, one_dispatch(10));
    ADD_FAILURE() << "no error";
  } catch (const models::ParamError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("afd case: 'ffn_gemm_n': ", 0), 0u) << e.what();
  }
  c = overlap_case(24, 4096, 1536);
  EXPECT_THROW((void)ffn_gemm_beside(h200x4(), c, AfdResult{}), std::logic_error);
  const YAML::Node bad = YAML::Load("{attention_ranks: 1, ffn_ranks: 1, tokens: 8, overlap_ffn_gemm: always}");
  EXPECT_THROW((void)run_afd_case(h200x4(), bad, nullptr), models::ParamError);
}

TEST(AfdFfnGemmBeside, PodsOverlapTheHybridKernels) {
  // H100 pods: the FFN ranks' hybrid_dispatch / hybrid_combine are the neighbours (the H200 SM pool
  // stands in for the H100's, an assumption the README states).
  const hw::Hardware h100 = models::load_hardware(test::kRoot + "/hw/h100-ib-pods.yaml");
  for (const std::string with : {"dispatch", "combine"}) {
    const YAML::Node p = YAML::Load("{attention_ranks: 4, ffn_ranks: 4, tokens: 512, transport_sms: 24, overlap_ffn_gemm: " + with +
                                    ", ffn_gemm_n: 1536, gemm_machine: hw/h200-1gpu.yaml}");
    const nlohmann::json out = run_afd_case(h100, p, nullptr);
    const auto& ranks = out["extra"]["ffn_gemm_beside"]["ranks"];
    ASSERT_EQ(ranks.size(), 4u);
    for (const auto& r : ranks) {
      EXPECT_EQ(r["neighbour"], "hybrid_" + with);
      EXPECT_EQ(r["held_sms"].get<int>(), 24);
      // The charge is computed for every rank. It can be slightly negative since round 7's hand-out
      // (hw::HandOut::static_two_then_counter): a neighbour that delays the late clusters lets the second units of
      // the clusters with w < U - G run beside the delayed clusters' first units, where alone they form a tail of
      // their own (here 0.15-0.25 us; down to -1.8 us in scenarios/h200x4-afd-ffn-gemm-beside.yaml at 128 tokens).
      EXPECT_GT(r["charge_us"].get<double>(), -1.0);
    }
  }
}
