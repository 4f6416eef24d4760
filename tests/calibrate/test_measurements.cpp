// Parsers: RESULT_JSON lines (good, malformed, rejected), AFD lines, seed-004 documents, probes,
// scenario de-duplication, hold-out rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "calibrate/fit.hpp"
#include "calibrate/measurements.hpp"
#include "models/afd/timeline.hpp"
#include "hw/hardware.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "test_util.hpp"
#include "tests/test_util.hpp"

namespace fusesim::calibrate {
namespace {
using test::fixture;
using test::seed000_files;
using test::src;

TEST(ResultJson, LogLinesWithPrefixAndNoise) {
  const auto r = parse_measurement_file(fixture("bench.log"));
  ASSERT_EQ(r.records.size(), 3u);
  const auto& a = r.records[0];
  EXPECT_EQ(a.kind, "gemm_ar");
  EXPECT_EQ(a.model, "gemm_ar");
  EXPECT_EQ(a.line, 3);
  EXPECT_EQ(a.file, fixture("bench.log"));
  EXPECT_FALSE(a.rejected);
  EXPECT_DOUBLE_EQ(a.value, 1148.8);
  EXPECT_EQ(a.params["m"].as<int>(), 16384);
  EXPECT_EQ(a.params["mode"].as<std::string>(), "fused-sdma");
  EXPECT_FALSE(a.params["fuse_quantize"].as<bool>());
  // the bf16 wire always gathers over SDMA; the printed default is kept in extra
  EXPECT_EQ(a.params["gather_transport"].as<std::string>(), "sdma");
  EXPECT_EQ(a.extra["gather_transport_printed"], "lsa");
  EXPECT_EQ(a.extra["per_rank_time_us"].size(), 2u);
  EXPECT_EQ(a.table, "bench");
  // noise lines: one warning with the count
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("skipped 3 line(s)"), std::string::npos) << r.warnings[0];
}

TEST(ResultJson, ValidatedFalseIsRejectedWithReason) {
  const auto r = parse_measurement_file(fixture("bench.log"));
  const auto& b = r.records.at(1);
  EXPECT_TRUE(b.rejected);
  EXPECT_NE(b.reason.find("validated: false"), std::string::npos) << b.reason;
  EXPECT_EQ(b.line, 5);
}

TEST(ResultJson, MovedNothingIsRejectedWithReason) {
  const auto r = parse_measurement_file(fixture("bench.log"));
  const auto& c = r.records.at(2);
  EXPECT_TRUE(c.rejected);
  EXPECT_NE(c.reason.find("moved nothing"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("0.993"), std::string::npos) << c.reason;
  // rejected records never become fit points
  EXPECT_EQ(to_fit_points(r.records).size(), 1u);
}

TEST(ResultJson, MalformedLineNamesFileAndLine) {
  const std::string w = fusesim::test::error_of<hw::FileError>([] { parse_measurement_file(fixture("bench_bad.log")); });
  ASSERT_FALSE(w.empty()) << "expected an error";
  EXPECT_NE(w.find("bench_bad.log:2:"), std::string::npos) << w;
  EXPECT_NE(w.find("malformed JSON"), std::string::npos) << w;
}

TEST(ResultJson, WrongFieldTypeNamesTheField) {
  const auto j = nlohmann::json::parse(R"({"mode": "fused-sdma", "m": "big", "max_rank_time_us": 5})");
  const std::string w = fusesim::test::error_of<hw::FileError>([&] { record_from_result_json(j, "x.jsonl", 7); });
  ASSERT_FALSE(w.empty()) << "expected an error";
  EXPECT_NE(w.find("x.jsonl:7: 'm'"), std::string::npos) << w;
}

TEST(ResultJson, JsonlNoiseLineIsSkippedWithWarningAndBadJsonIsAnError) {
  std::istringstream ok("not json at all\n{\"mode\": \"fused-sdma\", \"m\": 8192, \"max_rank_time_us\": 600}\n");
  const auto r = parse_jsonl_stream(ok, "t.jsonl");
  ASSERT_EQ(r.records.size(), 1u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("t.jsonl:1"), std::string::npos);
  std::istringstream bad("{\"foo\": 1}\n{\"mode\": \n");
  try {
    parse_jsonl_stream(bad, "t.jsonl");
    FAIL() << "expected an error";
  } catch (const hw::FileError& e) {
    // line 1 is an object of no known layout: the first error
    EXPECT_NE(std::string(e.what()).find("t.jsonl:1"), std::string::npos) << e.what();
  }
  // A gemm_ar record (it names a mode) without its time is rejected with that reason, not an error.
  std::istringstream notime("{\"mode\": \"fused-sdma\"}\n");
  const auto nt = parse_jsonl_stream(notime, "t.jsonl");
  ASSERT_EQ(nt.records.size(), 1u);
  EXPECT_TRUE(nt.records[0].rejected);
  std::istringstream bad2("{\"mode\": \n");
  EXPECT_THROW(parse_jsonl_stream(bad2, "t.jsonl"), hw::FileError);
}

TEST(ResultJson, ImpossibleWorldSizeOrMIsRejectedNotDividedBy) {
  // Regression from fuzz_measurements (2026-12-02, crash f9a7a67d...): a fused-sdma row with
  // world_size 0 divided by zero counting its row bands (UBSan); now rejected naming the key.
  for (const char* row : {R"({"mode": "fused-sdma", "world_size": 0, "m": 2048, "n": 7168, "k": 2048, "quant": "blockscale", "max_rank_time_us": 600})",
                          R"({"mode": "split-sdma", "world_size": -8, "m": 2048, "max_rank_time_us": 600})",
                          R"({"mode": "fused-sdma", "world_size": 8, "m": 1099511627777, "max_rank_time_us": 600})"}) {
    const auto r = record_from_result_json(nlohmann::json::parse(row), "w.jsonl", 1);
    EXPECT_TRUE(r.rejected) << row;
    EXPECT_TRUE(r.reason.find("world_size: ") != std::string::npos || r.reason.find("m: ") != std::string::npos) << r.reason;
  }
}

TEST(ResultJson, FailureRecordsOfTheRunnerAreRejected) {
  const auto j = nlohmann::json::parse(R"({"mode": "fused-sdma", "m": 8192, "failure": "timeout after 600 s"})");
  const auto r = record_from_result_json(j, "sweep.jsonl", 4);
  EXPECT_TRUE(r.rejected);
  EXPECT_EQ(r.kind, "failure");
  EXPECT_NE(r.reason.find("timeout"), std::string::npos);
}

TEST(Afd, LinesWithHeaders) {
  const auto r = parse_measurement_file(fixture("afd_lines.jsonl"));
  ASSERT_EQ(r.records.size(), 3u);
  const auto& a = r.records[0];
  EXPECT_EQ(a.kind, "afd");
  EXPECT_EQ(a.params["path"].as<std::string>(), "afd");
  EXPECT_EQ(a.params["ffn_ranks"].as<int>(), 4);
  EXPECT_EQ(a.params["attention_ranks"].as<int>(), 8);
  EXPECT_EQ(a.params["transport_sms"].as<int>(), 8);
  EXPECT_EQ(a.params["tokens"].as<int>(), 1);
  EXPECT_DOUBLE_EQ(a.value, 83.11);
  EXPECT_EQ(a.line, 2);
  const auto& m = r.records[2];
  EXPECT_EQ(m.params["path"].as<std::string>(), "masked");
  EXPECT_DOUBLE_EQ(m.value, 95.2);
  EXPECT_EQ(m.extra["change_pct"], 3.4);
  EXPECT_EQ(m.extra["repeats_faster"], 1);
}

TEST(Afd, HeaderParsing) {
  auto c = afd_context_from_header("#### 4f8a hybrid off");
  EXPECT_EQ(c["ffn_ranks"].as<int>(), 4);
  EXPECT_EQ(c["attention_ranks"].as<int>(), 8);
  EXPECT_EQ(c["hybrid"].as<std::string>(), "off");
  c = afd_context_from_header("## 1a3f T=128 masked");
  EXPECT_EQ(c["attention_ranks"].as<int>(), 1);
  EXPECT_EQ(c["ffn_ranks"].as<int>(), 3);
  EXPECT_EQ(c["tokens"].as<int>(), 128);
  EXPECT_EQ(c["path"].as<std::string>(), "masked");
  EXPECT_EQ(afd_context_from_header("### nothing here").size(), 0u);
}

TEST(Afd, Seed004DocumentLayout) {
  const auto r = parse_measurement_file(fixture("seed004_small.json"));
  std::map<std::string, std::vector<const Record*>> by_table;
  for (const auto& x : r.records) by_table[x.table].push_back(&x);
  // timeline: period + 2 kernels
  const auto& tl = by_table["kernel_timelines.traces.1a3f-t1-afd"];
  ASSERT_EQ(tl.size(), 3u);
  EXPECT_EQ(tl[0]->quantity, "period_us");
  EXPECT_DOUBLE_EQ(tl[0]->value, 20.10);
  EXPECT_EQ(tl[0]->params["attention_ranks"].as<int>(), 1);
  EXPECT_EQ(tl[0]->params["ffn_ranks"].as<int>(), 3);
  EXPECT_EQ(tl[0]->params["tokens"].as<int>(), 1);
  EXPECT_EQ(tl[0]->params["transport_sms"].as<int>(), 24);  // the setup's default
  EXPECT_EQ(tl[1]->quantity, "kernel_dur_us");
  EXPECT_EQ(tl[1]->phase, "dev0/dispatch_impl");
  EXPECT_EQ(tl[1]->extra["kernel"], "dispatch_impl");
  EXPECT_EQ(tl[1]->model, "");  // at T = 1 a kernel duration is reported, not fitted (T >= 128 only)
  EXPECT_FALSE(tl[1]->params["kernel"]);  // the case's parameters stay the afd runner's
  EXPECT_DOUBLE_EQ(tl[2]->value, 7.55);
  EXPECT_GT(tl[1]->line, 0);
  // transport-SM sweep: 2 tokens x 2 SM counts
  const auto& sw = by_table["transport_sm_sweep_all_kernels.2a2f"];
  ASSERT_EQ(sw.size(), 4u);
  for (const auto* x : sw) {
    EXPECT_EQ(x->params["attention_ranks"].as<int>(), 2);
    EXPECT_EQ(x->params["ffn_ranks"].as<int>(), 2);
  }
  const auto it = std::find_if(sw.begin(), sw.end(), [](const Record* x) {
    return x->params["tokens"].as<int>() == 512 && x->params["transport_sms"].as<int>() == 8;
  });
  ASSERT_NE(it, sw.end());
  EXPECT_DOUBLE_EQ((*it)->value, 92.51);
  // screen: 2 rows x 3 arms; masked by role_aware false; env kept
  const auto& sc = by_table["combine_grid.screen"];
  ASSERT_EQ(sc.size(), 6u);
  int masked = 0;
  for (const auto* x : sc) {
    EXPECT_EQ(x->params["attention_ranks"].as<int>(), 3);
    EXPECT_EQ(x->params["ffn_ranks"].as<int>(), 1);
    masked += x->params["path"].as<std::string>() == "masked";
    if (x->extra["arm"] == "afd_c64") {
      EXPECT_EQ(x->extra["env"]["AFDEP_SCRATCH_COMBINE_SMS"], "64");
    }
  }
  EXPECT_EQ(masked, 2);
  // string array with headers
  size_t dvh = 0;
  for (const auto& x : r.records)
    if (x.table.rfind("per_source_cost.direct_vs_hybrid", 0) == 0) {
      ++dvh;
      if (x.params["tokens"].as<int>() == 8) {
        EXPECT_EQ(x.params["transport_sms"].as<int>(), 16);
        EXPECT_EQ(x.params["ffn_ranks"].as<int>(), 4);
      } else {
        EXPECT_EQ(x.params["hybrid"].as<std::string>(), "on");
        EXPECT_EQ(x.params["attention_ranks"].as<int>(), 8);
      }
    }
  EXPECT_EQ(dvh, 3u);
}

TEST(Afd, RealSeed004ParsesIntoRecords) {
  const std::string seed = src("../shared/seeds/004_2ccc46173d8762aa.txt");
  if (!std::filesystem::exists(seed)) GTEST_SKIP() << "seed 004 not present at " << seed;
  const auto r = parse_measurement_file(seed);
  size_t sweep = 0;
  for (const auto& x : r.records) sweep += x.table == "transport_sm_sweep_all_kernels.2a2f";
  EXPECT_EQ(sweep, 28u);  // 4 token counts x 7 SM counts
}

TEST(Probe, GenericRecordsAndRejections) {
  const auto r = parse_measurement_file(fixture("probes.jsonl"));
  ASSERT_EQ(r.records.size(), 4u);
  // Records 2 and 3 are rejected with their reasons; 0 and 1 are kept.
  EXPECT_TRUE(r.records[2].rejected);
  EXPECT_NE(r.records[2].reason.find("moved nothing"), std::string::npos);
  EXPECT_TRUE(r.records[3].rejected);
  EXPECT_NE(r.records[3].reason.find("validated: false"), std::string::npos);
  EXPECT_EQ(r.records[1].unit, "GBps");
  const auto& a = r.records[0];
  EXPECT_EQ(a.kind, "probe");
  EXPECT_EQ(a.quantity, "probe_hbm_copy.time_us");
  EXPECT_EQ(a.unit, "us");
  EXPECT_DOUBLE_EQ(a.value, 61.2);
  EXPECT_EQ(a.params["method"].as<std::string>(), "d2d");
  EXPECT_EQ(a.params["GBps"].as<double>(), 4386.1);
  EXPECT_TRUE(a.extra.contains("machine"));
  EXPECT_TRUE(to_fit_points(r.records).empty());  // probes have no case model
}

TEST(Seed000, JsonlAndScenarioDeduplicate) {
  std::vector<Record> rejected;
  const auto pts = load_fit_points(seed000_files(), 0.3, &rejected);
  EXPECT_TRUE(rejected.empty());
  size_t totals = 0, phases = 0;
  std::set<std::string> ids;
  for (const auto& p : pts) {
    (p.phase.empty() ? totals : phases)++;
    EXPECT_TRUE(ids.insert(p.id).second) << "duplicate id " << p.id;
    // every total now comes from the JSONL files
    if (p.phase.empty()) {
      EXPECT_EQ(p.id.find("mi355x-dsv4-pro-wo_b-tp8:"), std::string::npos) << p.id;
    }
  }
  EXPECT_EQ(totals, 36u);
  EXPECT_EQ(phases, 16u);
  // phases joined the JSONL record of their case
  EXPECT_TRUE(ids.count("phases/bf16#gather"));
  EXPECT_TRUE(ids.count("phases/bf16"));
  // same points as the scenario alone
  const auto sc = points_from_scenarios({src("scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml")}, 0.3);
  EXPECT_EQ(sc.size(), pts.size());
}

TEST(Holdout, Rules) {
  const auto pts = load_fit_points(seed000_files(), 0.3);
  auto count = [](const std::vector<bool>& m) { return std::count(m.begin(), m.end(), true); };
  const auto m8 = holdout_mask(pts, "m=8192");
  EXPECT_EQ(count(m8), 3);
  for (size_t i = 0; i < pts.size(); ++i)
    if (m8[i]) {
      EXPECT_EQ(pts[i].table, "headline");
    }
  EXPECT_EQ(count(holdout_mask(pts, "table=pull-grid")), 6);
  EXPECT_EQ(count(holdout_mask(pts, "none")), 0);
  EXPECT_THROW(holdout_mask(pts, "m=123"), std::invalid_argument);
  EXPECT_THROW(holdout_mask(pts, "kfold=1/0"), std::invalid_argument);
  EXPECT_THROW(holdout_mask(pts, "garbage"), std::invalid_argument);
  // k-fold: every point in exactly one fold; a case's total and phases in the same fold
  std::vector<int> fold(pts.size(), -1);
  for (int i = 0; i < 5; ++i) {
    const auto m = holdout_mask(pts, "kfold=5/" + std::to_string(i));
    for (size_t j = 0; j < pts.size(); ++j)
      if (m[j]) {
        EXPECT_EQ(fold[j], -1);
        fold[j] = i;
      }
  }
  std::map<std::string, int> case_fold;
  for (size_t j = 0; j < pts.size(); ++j) {
    ASSERT_GE(fold[j], 0);
    const std::string cid = pts[j].id.substr(0, pts[j].id.find('#'));
    auto [it, fresh] = case_fold.emplace(cid, fold[j]);
    EXPECT_EQ(it->second, fold[j]) << pts[j].id;
  }
}

}  // namespace
}  // namespace fusesim::calibrate

namespace fusesim::calibrate {
namespace {
// An AFD timeline scenario feeds `calibrate fit` what `fusesim check` judges: each case's exchange
// period (not its exchange time) and every kernel duration at T >= 128, predicted as check does.
TEST(Afd, TimelineScenarioFitsThePeriodAndTheKernelDurationsCheckJudges) {
  const std::string path = src("scenarios/h200x4-afd-timelines.yaml");
  const auto pts = load_fit_points({path}, 0.5);
  const auto sc = scenario::load(path);
  const auto hw = scenario::load_hardware(sc);
  const auto res = scenario::run(sc, hw);
  const auto totals = scenario::compared_points(res);
  const auto kernels = afd::kernel_duration_points(sc, res);
  std::vector<FitPoint> period, kernel;
  for (const auto& p : pts) (p.phase.empty() ? period : kernel).push_back(p);
  ASSERT_EQ(period.size(), totals.size());
  ASSERT_EQ(kernel.size(), kernels.size());
  EXPECT_EQ(kernel.size(), 252u);
  for (const auto& p : period) EXPECT_EQ(p.metric, "period_us") << p.id;
  for (const auto& p : kernel) EXPECT_DOUBLE_EQ(p.weight, 0.5) << p.id;
  const auto pp = predict(hw, period), kp = predict(hw, kernel);
  for (size_t i = 0; i < period.size(); ++i) {
    EXPECT_DOUBLE_EQ(period[i].measured_us, totals[i].measured) << period[i].id;
    EXPECT_NEAR(pp[i], totals[i].predicted, 1e-9) << period[i].id;
  }
  for (size_t i = 0; i < kernel.size(); ++i) {
    EXPECT_DOUBLE_EQ(kernel[i].measured_us, kernels[i].measured) << kernel[i].id;
    EXPECT_NEAR(kp[i], kernels[i].predicted, 1e-9) << kernel[i].id;
  }
}

// kernel_duration_points by token range: the default is the judged T >= 128 set; [0, 127] is the
// T = 1 timelines that `calibrate fit --small-t-kernel-weight` can add; the two cover every kernel.
TEST(Afd, KernelDurationPointsSplitByTokens) {
  const auto sc = scenario::load(src("scenarios/h200x4-afd-timelines.yaml"));
  const auto res = scenario::run(sc, scenario::load_hardware(sc));
  const auto judged = afd::kernel_duration_points(sc, res);
  const auto small = afd::kernel_duration_points(sc, res, 0, afd::kKernelDurationMinTokens - 1);
  const auto all = afd::kernel_duration_points(sc, res, 0);
  EXPECT_EQ(judged.size(), 252u);
  EXPECT_EQ(small.size(), 84u);
  EXPECT_EQ(all.size(), judged.size() + small.size());
  std::map<std::string, int> tokens;
  for (const auto& c : sc.cases) tokens[c.id] = c.params["tokens"].as<int>();
  for (const auto& p : small) EXPECT_EQ(tokens.at(p.case_id), 1) << p.case_id;
  for (const auto& p : judged) EXPECT_GE(tokens.at(p.case_id), 128) << p.case_id;
  // The summary reports the unjudged ones apart: their count, and how many are outside the tolerance.
  const auto kd = afd::kernel_durations(sc, res);
  ASSERT_FALSE(kd["below_min_tokens"].is_null());
  EXPECT_EQ(kd["below_min_tokens"]["total"].get<size_t>(), small.size());
  EXPECT_EQ(kd["total"].get<size_t>(), judged.size());
  const auto outside = std::count_if(small.begin(), small.end(), [&](const auto& p) { return std::fabs(p.err_pct()) > 15.0; });
  EXPECT_EQ(kd["below_min_tokens"]["outside_tolerance"].get<long>(), outside);
}

// The seed-004 document's setup line gives the experts: 128, and 96 for 1 Attention : 3 FFN ranks.
TEST(Afd, Seed004SetupLineGivesTheExpertsPerSplit) {
  const std::string doc = R"({"setup": "4 x H200, top-k 8 of 128 experts (96 for 1A:3F), 24 transport SMs unless noted",
 "kernel_timelines": {"traces": {"1a3f-t128-afd": ["## 1a3f T=128 afd", "anchor dev3 period median 29.22 us"],
                                 "2a2f-t128-afd": ["## 2a2f T=128 afd", "anchor dev2 period median 33.98 us"]}}})";
  const auto r = parse_afd_document(doc, "inline.json");
  ASSERT_EQ(r.records.size(), 2u);
  for (const auto& x : r.records) {
    const int a = x.params["attention_ranks"].as<int>();
    EXPECT_EQ(x.params["experts"].as<int>(), a == 1 ? 96 : 128) << x.id;
  }
}
}  // namespace
}  // namespace fusesim::calibrate

namespace fusesim::calibrate {
namespace {
// A RESULT_JSON-style line: a field one or two letters off a parameter's name is a typo and an error
// naming it (it was kept as metadata and the point fitted at the parameter's default); a record with
// a mode but no time is rejected with that reason (it was called a layout nobody knows).
TEST(ResultJson, AMisspelledParameterIsAnErrorAndAMissingTimeARejection) {
  const std::string dir = ::testing::TempDir();
  const std::string good = R"({"mode": "fused-sdma", "world_size": 8, "m": 16384, "n": 7168, "k": 2048, "gather_dtype": "fp8", "gather_transport": "lsa", )";
  {
    std::ofstream(dir + "typo.jsonl") << good << R"("pull_block": 24, "max_rank_time_us": 1000, "machine": "x"})" << "\n";
    try {
      parse_measurement_file(dir + "typo.jsonl", 0.5);
      ADD_FAILURE() << "a misspelled parameter was accepted";
    } catch (const hw::FileError& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("typo.jsonl:1"), std::string::npos) << w;
      EXPECT_NE(w.find("did you mean 'pull_blocks'"), std::string::npos) << w;
    }
  }
  std::ofstream(dir + "notime.jsonl") << good << R"("pull_blocks": 24, "machine": "x"})" << "\n";
  const auto pr = parse_measurement_file(dir + "notime.jsonl", 0.5);
  ASSERT_EQ(pr.records.size(), 1u);
  EXPECT_TRUE(pr.records[0].rejected);
  EXPECT_EQ(pr.records[0].reason, "no max_rank_time_us");
}
}  // namespace
}  // namespace fusesim::calibrate
