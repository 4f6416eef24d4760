// The collective model on a minimal hand-written machine (minimal-hw.yaml): every expected time is
// derived by hand in the comments, as the engine's tests are.
//
// A kernel launch costs launch_gap 2 + fixed_cost 1 = 3 us. The tensor [m, n] = [256, 256] in bf16
// is T = 131072 B (fp8: 256 x (256 + a 4-byte scale) = 66560 B); a slice is T / ws. HBM (1 TB/s)
// and links (100 GB/s; remote-load payload 50 GB/s) bind only where a comment says so.
#include <gtest/gtest.h>

#include "models/collective/collective.hpp"
#include "models/model.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;

namespace {
const hw::Hardware& minimal() {
  static const hw::Hardware h = models::load_hardware(test::kRoot + "/tests/models/collective/minimal-hw.yaml");
  return h;
}
nlohmann::json run(const std::string& extra) {
  return models::run_collective_case(minimal(), YAML::Load("{m: 256, n: 256, " + extra + "}"), nullptr);
}
double total(const nlohmann::json& r) { return r["predicted_us"].get<double>(); }
double phase(const nlohmann::json& r, const std::string& name) {
  for (const auto& p : r["phases"])
    if (p["name"] == name) return p["end_us"].get<double>() - p["start_us"].get<double>();
  return -1;
}
}  // namespace

TEST(CollectiveMinimal, SdmaAllReduceIsScatterReduceGather) {
  // ws 2, slice 65536 B. Scatter: 3 us launch, 1 us command latency, 65536 B at the queue peak
  // 10 GB/s = 6.5536 us, the flag barrier 4 us: 14.5536 us. Reduce: 3 us launch + 3 slices (196608 B)
  // at 1 TB/s = 0.196608 us: 3.196608 us. Gather: as the scatter, 14.5536 us. Total 32.303808 us.
  const auto r = run("backend: sdma, world_size: 2");
  EXPECT_NEAR(total(r), 32.303808, 1e-9);
  EXPECT_NEAR(phase(r, "scatter"), 14.5536, 1e-9);
  EXPECT_NEAR(phase(r, "reduce"), 3.196608, 1e-9);
  EXPECT_NEAR(phase(r, "gather"), 14.5536, 1e-9);
  EXPECT_EQ(r["params"]["build"], "e7606746");
}

TEST(CollectiveMinimal, TheEarlierSdmaBuildPutsAtItsShareOfTheQueuePeak) {
  // Build 0f4d2776 puts at 0.5 x 10 GB/s: 13.1072 us per slice. Scatter 3 + 1 + 13.1072 + 4 =
  // 21.1072, reduce 3.196608, gather 21.1072: 45.411008 us.
  EXPECT_NEAR(total(run("backend: sdma, world_size: 2, build: 0f4d2776")), 45.411008, 1e-9);
}

TEST(CollectiveMinimal, SdmaLegsAlone) {
  // reduce-scatter: the scatter and the reduce, 14.5536 + 3.196608 = 17.750208 us; all-gather: the
  // gather leg alone, 14.5536 us.
  EXPECT_NEAR(total(run("backend: sdma, world_size: 2, op: reduce-scatter")), 17.750208, 1e-9);
  EXPECT_NEAR(total(run("backend: sdma, world_size: 2, op: all-gather")), 14.5536, 1e-9);
}

TEST(CollectiveMinimal, TheFp8WireMovesAByteAnElementAndAScalePerRow) {
  // T = 66560 B, slice 33280 B: a put takes 3.328 us. Scatter 3 + 1 + 3.328 + 4 = 11.328; reduce
  // 3 + 99840 B at 1 TB/s = 3.09984; gather 11.328: 25.75584 us.
  EXPECT_NEAR(total(run("backend: sdma, world_size: 2, dtype: fp8")), 25.75584, 1e-9);
}

TEST(CollectiveMinimal, LsaPicksTheFasterStageCount) {
  // A lane holds lsa.ar_loads_per_peer (1) x (ws - 1) 16-byte loads: one pack from every peer.
  // ws 2: grid min(cap 2, 8192 packs / 512) = 2 blocks x 512 lanes x 1 load of 16 B in flight = 16384 B
  // per 1 us round trip: 16.384 GB/s (below the link's 50 GB/s of payload).
  // 1-stage: launch 3 + stage overhead 1, then T from the one peer in 8 us: 12 us. 2-stage:
  // 4 + 65536 B / 16.384 GB/s = 8, barrier 4, stage 2: overhead 1 + 4 = 17 us. auto takes 1 stage.
  const auto a = run("backend: lsa, world_size: 2");
  EXPECT_NEAR(total(a), 12.0, 1e-9);
  EXPECT_EQ(a["params"]["stages"], 1);
  EXPECT_EQ(a["params"]["blocks"], 2);
  EXPECT_NEAR(total(run("backend: lsa, world_size: 2, stage: 2")), 17.0, 1e-9);
  // ws 4: 3 loads a lane, 49152 B per round trip: 49.152 GB/s, 16.384 GB/s per peer (below 50).
  // 1-stage: 4 + 131072 B / 16.384 GB/s = 4 + 8 = 12 us. 2-stage: 4 + 32768 B / 16.384 GB/s = 6,
  // barrier 4, stage 2: 1 + 2 = 3: 13 us. auto takes 1 stage.
  const auto b = run("backend: lsa, world_size: 4");
  EXPECT_NEAR(total(b), 12.0, 1e-9);
  EXPECT_EQ(b["params"]["stages"], 1);
  const auto b2 = run("backend: lsa, world_size: 4, stage: 2");
  EXPECT_NEAR(total(b2), 13.0, 1e-9);
  EXPECT_NEAR(phase(b2, "stage1"), 6.0, 1e-9);
  EXPECT_NEAR(phase(b2, "barrier"), 4.0, 1e-9);
  EXPECT_NEAR(phase(b2, "stage2"), 3.0, 1e-9);
  // ws 4, m = 1024 (T = 524288 B, still 2 blocks): 1-stage 4 + 32 = 36 us; 2-stage 4 + 8, barrier 4,
  // 1 + 8: 25 us. auto takes 2 stages.
  const auto c = models::run_collective_case(minimal(), YAML::Load("{m: 1024, n: 256, backend: lsa, world_size: 4}"), nullptr);
  EXPECT_NEAR(total(c), 25.0, 1e-9);
  EXPECT_EQ(c["params"]["stages"], 2);
  EXPECT_NEAR(phase(c, "stage1"), 12.0, 1e-9);
  EXPECT_NEAR(phase(c, "stage2"), 9.0, 1e-9);
  EXPECT_NEAR(total(models::run_collective_case(minimal(), YAML::Load("{m: 1024, n: 256, backend: lsa, world_size: 4, stage: 1}"), nullptr)),
              36.0, 1e-9);
}

TEST(CollectiveMinimal, AiterRunsOneShotOrTwoShot) {
  // ws 4. Grid min(cap 4, 16 blocks) = 4 x 512 lanes x 3 loads of 16 B (aiter.loads_in_flight) = 98304 B per 1 us round
  // trip: 98.304 GB/s, 32.768 GB/s per peer (below the links' 50 GB/s of payload). One-shot: launch 3
  // + stage overhead 3, then T per peer in 4 us: 10 us. Two-shot: 6 + a slice (32768 B) in 1 us, then
  // 3 + 1: 11 us. auto takes one-shot.
  const auto a = run("backend: aiter, world_size: 4");
  EXPECT_NEAR(total(a), 10.0, 1e-9);
  EXPECT_EQ(a["params"]["stages"], 1);
  EXPECT_EQ(a["params"]["blocks"], 4);
  EXPECT_NEAR(total(run("backend: aiter, world_size: 4, stage: 2")), 11.0, 1e-9);
  // m = 1024 (T = 524288 B): one-shot 6 + 16 = 22; two-shot 6 + 4, then 3 + 4: 17 us, two-shot wins.
  const auto b = models::run_collective_case(minimal(), YAML::Load("{m: 1024, n: 256, backend: aiter, world_size: 4}"), nullptr);
  EXPECT_NEAR(total(b), 17.0, 1e-9);
  EXPECT_EQ(b["params"]["stages"], 2);
  EXPECT_NEAR(phase(b, "stage1"), 10.0, 1e-9);
  EXPECT_NEAR(phase(b, "stage2"), 7.0, 1e-9);
}

TEST(CollectiveMinimal, RcclIsTheAlphaBetaRing) {
  // ws 4, bus bandwidth 3 links x 10 GB/s. All-reduce: launch 3 + 2 x 3 steps x 5 us + 2 x 3/4 x T /
  // 30 GB/s = 6.5536: 39.5536 us. All-gather: 3 + 15 + 3/4 x T / 30 GB/s = 3.2768: 21.2768 us.
  EXPECT_NEAR(total(run("backend: rccl, world_size: 4")), 39.5536, 1e-9);
  EXPECT_NEAR(total(run("backend: rccl, world_size: 4, op: all-gather")), 21.2768, 1e-9);
}

TEST(CollectiveMinimal, RefusedValuesNameTheirKey) {
  auto key_of = [](const std::string& params) {
    try {
      models::run_collective_case(minimal(), YAML::Load("{" + params + "}"), nullptr);
    } catch (const models::ParamError& e) {
      return e.key();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(key_of("m: 256, backend: aiter, op: reduce-scatter, world_size: 4"), "op");
  EXPECT_EQ(key_of("m: 256, backend: sdma, world_size: 8"), "world_size");  // the file has 4 GPUs
  EXPECT_EQ(key_of("m: 256, backend: sdma, world_size: 3"), "world_size");
  EXPECT_EQ(key_of("m: 256, backend: lsa, build: 0f4d2776, world_size: 2"), "build");
  EXPECT_EQ(key_of("m: 256, backend: sdma, build: abc, world_size: 2"), "build");
  EXPECT_EQ(key_of("m: 256, backend: rccl, stage: 2, world_size: 2"), "stage");
  EXPECT_EQ(key_of("m: 256, backend: nvls, world_size: 2"), "backend");
  EXPECT_EQ(key_of("m: 0, backend: sdma, world_size: 2"), "m");
  EXPECT_EQ(key_of("m: 256, world_size: 2"), "backend");
  EXPECT_EQ(key_of("backend: sdma, world_size: 2"), "m");
  EXPECT_EQ(key_of("m: 256, backend: sdma, world_size: 2, chunks: 4"), "chunks");  // unknown keys refused
}
