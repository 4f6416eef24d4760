// The afd model through the scenario layer: the NIC placement checked at the hardware line, a
// what-if's report, and the measured kernel entries and known misses of a timeline.
#include <gtest/gtest.h>

#include <string>

#include "models/afd/timeline.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "tests/scenario/scenario_util.hpp"

using namespace fusesim;
using namespace fusesim::test;

namespace {
/// The message of the hw::FileError raised loading, running or judging the kernel durations of the
/// scenario `text` (written to this test's `name`), "" when it all runs.
std::string judge_error(const std::string& name, const std::string& text) {
  return scenario_error(name, text, [](const auto& sc, const auto& res) { (void)afd::kernel_durations(sc, res); });
}
}  // namespace

TEST(ScenarioAfd, ANicPlacementTheModelCannotTakeIsRefusedAtTheHardwareLine) {
  std::string hwt = read_file(kRoot + "/hw/h100-ib-pods.yaml");
  const std::string from = "gpus_per_node: 8, nics_per_node: 8";
  ASSERT_NE(hwt.find(from), std::string::npos);
  hwt.replace(hwt.find(from), from.size(), "gpus_per_node: 8, nics_per_node: 16");  // more NICs than GPUs
  const std::string hwp = write_tmp("pods-16nic.yaml", hwt);
  const std::string p = write_tmp("nics.yaml", "scenario: s\nmodel: afd\nhardware: " + hwp +
                                                   "\ncases:\n  - id: a\n    params: {attention_ranks: 4, ffn_ranks: 4, tokens: 1}\n");
  const std::string w = scenario_file_error(p);
  EXPECT_FALSE(w.empty()) << "ran on a NIC placement the model cannot take";
  EXPECT_NE(w.find(":3: 'hardware'"), std::string::npos) << w;
  EXPECT_NE(w.find("must be a whole number of GPUs per NIC"), std::string::npos) << w;
}

TEST(ScenarioAfd, AWhatIfCaseReportsItsEffectAgainstTheSameExchangeWithout) {
  const std::string p = write_tmp("whatif.yaml", "scenario: s\nhardware: " + kRoot + "/hw/h100-ib-pods.yaml\nmodel: afd\n"
                        "cases:\n  - id: base\n    params: {attention_ranks: 4, ffn_ranks: 4, tokens: 1}\n"
                        "  - id: skip\n    params: {attention_ranks: 4, ffn_ranks: 4, tokens: 1, skip_empty_finish: true}\n");
  const auto sc = scenario::load(p);
  const auto r = scenario::run(sc, scenario::load_hardware(sc));
  const auto& base = r["cases"][0];
  const auto& skip = r["cases"][1];
  EXPECT_FALSE(base.contains("whatif"));
  ASSERT_TRUE(skip.contains("whatif"));
  EXPECT_NEAR(skip["whatif"]["without_us"].get<double>(), base["predicted_us"].get<double>(), 1e-6);
  EXPECT_LT(skip["whatif"]["change_pct"].get<double>(), -5.0);
  const std::string table = scenario::format_table(r);
  EXPECT_NE(table.find("what-if: skip_empty_finish"), std::string::npos) << table;
  EXPECT_NE(table.find("NIC ops per round trip: dev 0,1,2,3: ffn NIC: atomics in 2, out 2"), std::string::npos) << table;
  EXPECT_NE(table.find("dev0 (ffn): hybrid_dispatch"), std::string::npos) << table;
}

// Measured kernel timelines: an entry that could never be compared, or that would be compared wrongly,
// is an error naming its line (each was accepted: a mistyped kernel or a device beyond the ranks was
// dropped, end < start gave a negative duration, a known miss naming nothing could never fail).
TEST(ScenarioAfd, MeasuredKernelEntriesAndKnownMissesAreChecked) {
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/h200-4gpu-nvlink.yaml\nmodel: afd\n";
  const std::string kcase =  // lines 4-6 (+ the kernel_durations block before it, when given)
      "cases:\n  - id: a\n    params: {attention_ranks: 2, ffn_ranks: 2, tokens: 128}\n";
  auto with_kernels = [&](const std::string& kernels, const std::string& before = "") {
    return head + before + kcase + "    measured:\n      period_us: 30\n      source: x\n      kernels:\n" + kernels;
  };
  // Lines: 1-3 head, 4-6 case, 7 measured, 8 period, 9 source, 10 kernels, 11.. entries.
  expect_load_error(with_kernels("        - {device: 1.5, kernel: combine_impl, start_us: 1, end_us: 2}\n"),
                    "expected a device index", 11);
  expect_load_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 3, end_us: 2}\n"),
                    "a kernel must end after it starts", 11);
  expect_load_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 2}\n"
                                 "        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 3}\n"),
                    "listed twice (first at line 11)", 12);
  const std::string kd = "kernel_durations:\n  known_misses:\n    - {case: b, kernel: dev0/combine_impl, reason: r}\n";
  expect_load_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 2}\n", kd), "no case 'b'", 6);
  const std::string kd2 = "kernel_durations:\n  known_misses:\n    - {case: a, kernel: dev0/combine_imp, reason: r}\n";
  expect_load_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 2}\n", kd2),
                    "has no measured kernel 'dev0/combine_imp'", 6);
  expect_load_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 2}\n",
                                 "kernel_durations: {tolerance_pct: -3}\n"),
                    "'kernel_durations.tolerance_pct': must be > 0", 4);
  // A kernel the model does not run on that device: named when the case is compared.
  for (const std::string bad : {"{device: 7, kernel: combine_impl, start_us: 1, end_us: 2}",
                                "{device: 0, kernel: dispatch_implx, start_us: 1, end_us: 2}"}) {
    const std::string w = judge_error("kern.yaml", with_kernels("        - " + bad + "\n"));
    EXPECT_NE(w.find(":11:"), std::string::npos) << bad << ": " << (w.empty() ? "compared" : w);
    EXPECT_NE(w.find("the model runs no"), std::string::npos) << w;
    EXPECT_NE(w.find("dev0/combine_impl"), std::string::npos) << w;  // what it does run
  }
}
