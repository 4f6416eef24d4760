// The afd model on a minimal hand-written NVLink domain (minimal-hw.yaml): one Attention rank
// (device 1), one FFN rank (device 0), one token of hidden 128 (bf16) routed to the one expert, one
// transport SM. Every expected time is derived by hand in the comments.
//
// Bytes: a dispatched token 128 x 2 + top-1 metadata (8 + 64) = 328 B; a combined or expanded row
// 256 B. Dispatch: the token's two parts around the count store (count_issue_share 0.5 of the source's
// 328 B: 164 B each) at the transport SM's 1 GB/s (the 10 GB/s port does not bind), the first after
// dispatch_fixed 2 + nvlink.latency 1 + token_serial 0.5 = 3.5 us: 3.5 -> 3.664 (the count arrives:
// the epilogue can be launched), 3.664 -> 3.828 us; dispatch_impl ends dispatch_finish 1 us later,
// 4.828 us, on both ranks. FFN copy epilogue: epilogue_fixed 1 us + (328 + 256) B at 0.5 TB/s x 0.05
// = 25 GB/s (0.02336 us): 4.828 -> 5.85136 us; launched at min(the count 3.664, the exit trigger
// 4.828 - 0.5) = 3.664 us. FFN combine: after the 0.5 us gap, 6.35136 us; its one row leaves
// combine_fixed 1 + nvlink 1 = 2 us later at one warp x 256 B / 1 us = 0.256 GB/s (the lowest rate on
// its path): 8.35136 -> 9.35136, then combine_finish 1 + per destination 0.5: ends 10.85136 us. The
// Attention combine starts after its dispatch and the gap (5.328 us) and ends one NVLink latency
// after the FFN's exit, 11.85136 us; its reduce epilogue starts 0.5 us later, 12.35136, and takes
// reduce_fixed 1 + 0.5 per FFN source + 2 x 256 B at 128 GB/s (0.004 us) = 1.504 us: 13.85536 us.
// Span 13.85536; period + exchange_gap 2 = 15.85536; the metric + timer_offset 1 = 14.85536 us. The
// FFN's dispatch_impl started waiting one period before its combine ended, plus the gap:
// 10.85136 - 15.85536 + 2 = -3.004 us.
#include <gtest/gtest.h>

#include <map>

#include "models/afd/afd.hpp"
#include "models/model.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;

TEST(AfdMinimal, OneTokenThroughDispatchEpilogueCombineAndReduce) {
  const hw::Hardware hw = models::load_hardware(test::kRoot + "/tests/models/afd/minimal-hw.yaml");
  const afd::AfdCase c{.attention_ranks = 1, .ffn_ranks = 1, .tokens = 1, .transport_sms = 1,
                       .hidden = 128, .topk = 1, .experts = 1};
  const afd::AfdResult r = afd::simulate_afd(hw, c, nullptr);
  EXPECT_NEAR(r.span_us, 13.85536, 1e-9);
  EXPECT_NEAR(r.period_us, 15.85536, 1e-9);
  EXPECT_NEAR(r.exchange_us, 14.85536, 1e-9);
  std::map<std::string, std::pair<double, double>> k;
  for (const auto& s : r.kernels) k[std::to_string(s.device) + "/" + s.name] = {s.start_us, s.end_us};
  const std::map<std::string, std::pair<double, double>> want{
      {"0/dispatch_impl", {-3.004, 4.828}},           {"0/dispatch_copy_epilogue", {3.664, 5.85136}},
      {"0/combine_impl", {6.35136, 10.85136}},        {"1/dispatch_impl", {0.0, 4.828}},
      {"1/combine_impl", {5.328, 11.85136}},          {"1/combine_reduce_epilogue", {12.35136, 13.85536}}};
  ASSERT_EQ(k.size(), want.size());
  for (const auto& [name, se] : want) {
    ASSERT_TRUE(k.count(name)) << name;
    EXPECT_NEAR(k[name].first, se.first, 1e-9) << name;
    EXPECT_NEAR(k[name].second, se.second, 1e-9) << name;
  }
}
