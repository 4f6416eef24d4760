// The H200-pair models (gemm_ar_live, h200_probe) on a minimal hand-written machine
// (minimal-hw.yaml, minimal-gemm.jsonl): every expected time is derived by hand in the comments.
// Copy commands: 2 us latency (+0.5 us while the opposite direction is busy), then 10 GB/s; a kernel
// starts 1 us after its launch; a cross-GPU event wait is 5 us, a same-GPU one 0.5 us; the BLAS GEMM
// at N = K = 256 takes 10 us at M = 256 and 20 us at M = 512 (no slowdown under copies).
#include <gtest/gtest.h>

#include "models/gemm_ar_live/gemm_ar_live.hpp"
#include "models/model.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;

namespace {
const hw::Hardware& minimal() {
  static const hw::Hardware h = models::load_hardware(test::kRoot + "/tests/models/gemm_ar_live/minimal-hw.yaml");
  return h;
}
double probe(const std::string& params) {
  return models::run_probe_case(minimal(), YAML::Load(params), nullptr)["predicted_us"].get<double>();
}
}  // namespace

TEST(LiveMinimal, PeerCopiesPayTheCommandLatencyAndTheOppositeDirection) {
  // One direction, 1 MB: 2 us + 1e6 / 10e9 = 102 us. Both directions: each command finds the other
  // queued: 2.5 + 100 = 102.5 us.
  EXPECT_NEAR(probe("{probe: peer_copy, size_bytes: 1000000}"), 102.0, 1e-9);
  EXPECT_NEAR(probe("{probe: peer_copy, direction: both, size_bytes: 1000000}"), 102.5, 1e-9);
}

TEST(LiveMinimal, ACopyHopWaitsOnTheSameGpuThenOverlapsTheCrossGpuWaitWithTheTransfer) {
  // 0.5 us same-GPU wait, the put (2 + 100 us): done at 102.5 us; the cross-GPU wait (5 us after the
  // data started, at 2.5 us) is over long before.
  EXPECT_NEAR(probe("{probe: copy_hop, size_bytes: 1000000}"), 102.5, 1e-9);
}

TEST(LiveMinimal, PullsFollowLittlesLaw) {
  // 2 blocks x 64 threads x 64 B in flight = 8192 B per 1 us round trip = 8.192 GB/s (the link allows
  // 100 GB/s x read efficiency 0.5 = 50): 8.192e6 B in 1000 us, after the 1 us launch: 1001 us.
  EXPECT_NEAR(probe("{probe: cu_remote, blocks: 2, threads: 64, bytes_in_flight_per_thread: 64, size_bytes: 8192000}"), 1001.0, 1e-9);
}

TEST(LiveMinimal, BandedGemmsRunBackToBack) {
  // Two bands of M = 256: 10 us, the 1 us launch gap, 10 us: 21 us; alone, M = 512: 20 us.
  EXPECT_NEAR(probe("{probe: gemm_banded, m: 512, n: 256, k: 256, bands: 2}"), 21.0, 1e-9);
  EXPECT_NEAR(probe("{probe: gemm_with_copies, m: 512, n: 256, k: 256, background: none}"), 20.0, 1e-9);
}

TEST(LiveMinimal, SplitIsTheGemmThenScatterReduceAndGather) {
  // M = 512 on 2 ranks: the GEMM is 20 us; a slice is 256 x 256 x 2 = 131072 B (13.1072 us at 10 GB/s).
  // Scatter: 0.5 us same-GPU wait, a 2 us command + 0.5 us (the other rank's put is queued): data
  // from 23 us, landed at 36.1072, seen by the peer at once (the 5 us event wait overlapped the
  // transfer). Reduce: 1 us launch + 3 slices x 131072 B at 1 TB/s (0.393216 us): to 37.500416 us.
  // Gather: 0.5 us wait, 2 + 0.5 us command, 13.1072 us: landed at 53.607616 (the peer sees it then);
  // the rank's own stream sees its put 0.5 us later: the rank ends at 54.107616 us.
  models::LiveConfig c;
  c.mode = "split";
  c.m = 512;
  c.n = 256;
  c.k = 256;
  const auto r = models::simulate_gemm_ar_live(minimal(), c);
  EXPECT_NEAR(r.time_us, 54.107616, 1e-9);
  ASSERT_EQ(r.phases.size(), 3u);
  EXPECT_NEAR(r.phases[0].end_us - r.phases[0].start_us, 20.0, 1e-9);       // gemm
  EXPECT_NEAR(r.phases[1].end_us - r.phases[1].start_us, 1.393216, 1e-9);   // reduce
  EXPECT_NEAR(r.phases[2].end_us - r.phases[2].start_us, 16.6072, 1e-9);    // gather
}
