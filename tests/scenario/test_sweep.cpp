// fusesim sweep (scenario/sweep.hpp): the split by expected cost, rows equal to run's cases, resume
// after a cut, a file of another scenario refused, kept rows checked against the cases and the
// hardware; cases made from their index (scenario::LoadOptions::expand false) equal to the expanded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "hw/io.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "scenario/sweep.hpp"
#include "tests/scenario/scenario_util.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::test;

TEST(Sweep, SplitByCostBalancesTheRanks) {
  // One expensive case then cheap ones: the expensive one's rank takes no more until the others catch up.
  const std::vector<double> cost{10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10};
  const auto owner = scenario::split_by_cost(cost, 2);
  double load[2] = {0, 0};
  for (size_t i = 0; i < cost.size(); ++i) load[owner[i]] += cost[i];
  EXPECT_EQ(owner[0], 0);
  EXPECT_EQ(owner[1], 1);
  EXPECT_LE(std::abs(load[0] - load[1]), 10.0);
  EXPECT_EQ(load[0] + load[1], 30.0);
  EXPECT_EQ(scenario::split_by_cost(cost, 2), owner);
  EXPECT_THROW(scenario::split_by_cost(cost, 0), std::invalid_argument);
}

TEST(Sweep, RowsAreRunsCasesAndResumeContinuesACutFile) {
  const auto sc = scenario::load(kRoot + "/scenarios/h200x4-afd-3a1f-role-path.yaml");
  const auto hw = scenario::load_hardware(sc);
  ASSERT_GE(sc.cases.size(), 3u);
  scenario::SweepOptions o;
  o.out = test_tmp("full.jsonl");
  o.progress = false;
  const auto rep = scenario::sweep(sc, hw, o);
  EXPECT_EQ(rep.ran, int64_t(sc.cases.size()));
  const std::string full = read_file(o.out);
  // Row i is the case's JSON as run reports it (without the run's summary).
  const auto res = scenario::run(sc, hw);
  std::string expected;
  for (const auto& c : res["cases"]) expected += c.dump() + "\n";
  EXPECT_EQ(full, expected);
  // Cut inside the third row: --resume keeps two rows, cuts the partial one and runs the rest.
  const size_t second_end = full.find('\n', full.find('\n') + 1) + 1;
  o.out = test_tmp("cut.jsonl");
  std::ofstream(o.out, std::ios::binary) << full.substr(0, second_end + 20);
  o.resume = true;
  const auto rep2 = scenario::sweep(sc, hw, o);
  EXPECT_EQ(rep2.resumed, 2);
  EXPECT_EQ(rep2.ran, int64_t(sc.cases.size()) - 2);
  EXPECT_EQ(read_file(o.out), full);
  // CSV: the header and run's rows.
  scenario::SweepOptions c;
  c.out = test_tmp("full.csv");
  c.format = "csv";
  c.progress = false;
  scenario::sweep(sc, hw, c);
  EXPECT_EQ(read_file(c.out), scenario::format_csv(res));
}

TEST(Sweep, ResumeRefusesAnotherScenariosOutput) {
  const auto sc = scenario::load(kRoot + "/scenarios/h200x4-afd-3a1f-role-path.yaml");
  const auto hw = scenario::load_hardware(sc);
  scenario::SweepOptions o;
  o.out = write_tmp("other.jsonl", "{\"id\":\"first\"}\n{\"id\":\"not-a-case\"}\n");
  o.resume = true;
  o.progress = false;
  const std::string e = error_of<std::invalid_argument>([&] { scenario::sweep(sc, hw, o); });
  EXPECT_NE(e.find("other.jsonl:1: expected the row of case 0"), std::string::npos) << e;
  EXPECT_EQ(read_file(o.out), "{\"id\":\"first\"}\n{\"id\":\"not-a-case\"}\n");  // left as it was
}

TEST(Sweep, ResumeRefusesALineLongerThanARowCanBe) {
  // A kept line is read bounded: one of 2 MiB (no newline, as a partial last row would be, and with
  // one) is refused naming the file and line, not read into memory whole; the file is left as it was.
  const auto sc = scenario::load(kRoot + "/scenarios/h200x4-afd-3a1f-role-path.yaml");
  const auto hw = scenario::load_hardware(sc);
  for (const std::string end : {"", "\n"}) {
    scenario::SweepOptions o;
    const std::string text = "{\"id\":\"" + std::string(size_t(2) << 20, 'x') + end;
    o.out = write_tmp("long.jsonl", text);
    o.resume = true;
    o.progress = false;
    const std::string e = error_of<std::invalid_argument>([&] { scenario::sweep(sc, hw, o); });
    EXPECT_NE(e.find("long.jsonl:1: a line longer than 1048576 bytes"), std::string::npos) << e;
    EXPECT_EQ(read_file(o.out).size(), text.size());
  }
}

TEST(Sweep, ResumeRefusesADeeplyNestedKeptRow) {
  // A kept row under 1 MiB nested 400000 deep (a fresh-user trial, 2026-12-02) overflowed the JSON
  // parser's stack (a segfault); it is refused naming the file and line, and left as it was.
  const auto sc = scenario::load(kRoot + "/scenarios/h200x4-afd-3a1f-role-path.yaml");
  const auto hw = scenario::load_hardware(sc);
  scenario::SweepOptions o;
  const std::string text = "{\"id\":\"x\",\"params\":" + std::string(400000, '[') + std::string(400000, ']') + "}\n";
  o.out = write_tmp("deep.jsonl", text);
  o.resume = true;
  o.progress = false;
  const std::string e = error_of<std::exception>([&] { scenario::sweep(sc, hw, o); });
  EXPECT_NE(e.find("deep.jsonl:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("nested more than 64 levels"), std::string::npos) << e;
  EXPECT_EQ(read_file(o.out).size(), text.size());
}

TEST(Sweep, RefusesAModelThatRunsItsCasesTogether) {
  const auto sc = scenario::load(kRoot + "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  const auto hw = scenario::load_hardware(sc);
  scenario::SweepOptions o;
  o.out = test_tmp("ttft.jsonl");
  o.progress = false;
  EXPECT_NE(error_of<std::invalid_argument>([&] { scenario::sweep(sc, hw, o); }).find("runs its cases together"), std::string::npos);
}

namespace {
const std::string kGemmHead = "scenario: lazy\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n";
}

TEST(Sweep, CasesMadeFromTheirIndexAreTheExpandedOnes) {
  // Unexpanded (LoadOptions::expand false) the cases are made from their index; each must be the
  // case the expanded load makes: id, parameters (a swept key of params keeps its place), measured
  // value, lines.
  const std::string path = write_tmp("lazy.yaml", kGemmHead +
                                                      "defaults: {n: 7168, k: 2048, world_size: 8, quant: blockscale}\n"
                                                      "cases:\n"
                                                      "  - id: one\n"
                                                      "    params: {mode: rccl, m: 1024}\n"
                                                      "    measured: {value_us: 100, source: t}\n"
                                                      "  - id: grid\n"
                                                      "    params: {mode: fused-sdma, chunks: 4}\n"
                                                      "    sweep: {m: [1024, 2048], chunks: [1, 2, 8], tile_order: [rotated, linear]}\n"
                                                      "    measured:\n"
                                                      "      - {at: {m: 2048, chunks: 8, tile_order: linear}, value_us: 300, source: t}\n"
                                                      "      - {at: {m: 1024, chunks: 2, tile_order: rotated}, value_us: 200, source: t}\n");
  const auto full = scenario::load(path);
  scenario::LoadOptions lazy_opt;
  lazy_opt.expand = false;
  const auto lazy = scenario::load(path, lazy_opt);
  ASSERT_EQ(full.cases.size(), 13u);
  EXPECT_TRUE(lazy.cases.empty());
  ASSERT_EQ(lazy.groups.size(), 2u);
  ASSERT_EQ(lazy.case_count(), 13u);
  EXPECT_EQ(full.case_count(), 13u);
  int measured = 0;
  for (size_t i = 0; i < full.cases.size(); ++i) {
    const models::Case a = full.cases[i], b = lazy.case_at(i);
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(hw::yaml_text(a.params), hw::yaml_text(b.params)) << a.id;
    ASSERT_EQ(a.measured.has_value(), b.measured.has_value()) << a.id;
    if (a.measured) {
      EXPECT_EQ(*a.measured->value_us, *b.measured->value_us);
      ++measured;
    }
    EXPECT_EQ(a.line, b.line);
    EXPECT_EQ(a.param_lines, b.param_lines);
  }
  EXPECT_EQ(measured, 3);
  // The order: the last swept parameter fastest; chunks keeps its place among params.
  EXPECT_EQ(lazy.case_at(1).id, "grid/m=1024/chunks=1/tile_order=rotated");
  EXPECT_EQ(lazy.case_at(2).id, "grid/m=1024/chunks=1/tile_order=linear");
  EXPECT_EQ(lazy.case_at(12).id, "grid/m=2048/chunks=8/tile_order=linear");
  EXPECT_EQ(*lazy.case_at(12).measured->value_us, 300);
  EXPECT_EQ(*lazy.case_at(3).measured->value_us, 200);
  EXPECT_EQ(hw::yaml_text(lazy.case_at(1).params),
            "{n: 7168, k: 2048, world_size: 8, quant: blockscale, mode: fused-sdma, chunks: 1, m: 1024, tile_order: rotated}");
  EXPECT_THROW(lazy.case_at(13), std::out_of_range);
  // run() gives the same result whichever way the cases were loaded.
  const auto hw = scenario::load_hardware(full);
  auto r1 = scenario::run(full, hw), r2 = scenario::run(lazy, hw);
  r1["summary"].erase("runtime_ms");
  r2["summary"].erase("runtime_ms");
  EXPECT_EQ(r1.dump(), r2.dump());
  // The cost split's costs from the index are expected_cost of the made case.
  scenario::CaseCosts costs(lazy);
  const auto* spec = models::find_spec("gemm_ar");
  for (uint64_t i = 0; i < lazy.case_count(); ++i) EXPECT_EQ(costs.at(i), spec->expected_cost(full.cases[i].params)) << i;
}

TEST(Sweep, AMillionCaseScenarioReportsItsFirstCasesErrorWithoutExpanding) {
  // Lists that multiply to 10^6 points in a file of a few hundred bytes, the first point wrong: the
  // scenario is not expanded (one group, no case made) and run and sweep name the first case's error.
  std::string m, c;
  for (int i = 1; i <= 1000; ++i) m += (i > 1 ? "," : "") + std::to_string(i);
  const std::string path = write_tmp("million.yaml", kGemmHead +
                                                         "defaults: {n: 7168, k: 2048, world_size: 8, mode: frob}\n"
                                                         "cases:\n  - id: a\n    sweep: {m: [" + m + "], chunks: [" + m + "]}\n");
  scenario::LoadOptions opt;
  opt.expand = false;
  const auto sc = scenario::load(path, opt);
  EXPECT_TRUE(sc.cases.empty());
  ASSERT_EQ(sc.groups.size(), 1u);
  EXPECT_EQ(sc.case_count(), 1000000u);
  EXPECT_EQ(sc.case_at(999999).id, "a/m=1000/chunks=1000");
  const auto hw = scenario::load_hardware(sc);
  const std::string e = error_of<hw::FileError>([&] { scenario::run(sc, hw); });
  EXPECT_NE(e.find("million.yaml:4: 'defaults.mode'"), std::string::npos) << e;
  EXPECT_NE(e.find("got 'frob'"), std::string::npos) << e;
  scenario::SweepOptions o;
  o.out = test_tmp("million.jsonl");
  o.progress = false;
  const std::string e2 = error_of<std::invalid_argument>([&] { scenario::sweep(sc, hw, o); });
  EXPECT_NE(e2.find("rows of cases before 0 are written"), std::string::npos) << e2;
}

TEST(Sweep, DuplicateIdsAndAmbiguousPointsAreFoundWithoutExpanding) {
  const std::string head = kGemmHead + "defaults: {n: 7168, k: 2048, mode: rccl}\ncases:\n";
  // A value given twice in a sweep list: the first repeated id in case order.
  expect_load_error(head + "  - id: a\n    sweep: {m: [1, 2], chunks: [3, 3]}\n", "'cases[a]': duplicate case id 'a/m=1/chunks=3'", 6);
  expect_load_error(head + "  - id: a\n    sweep: {m: [1, 2, 1], chunks: [3, 4]}\n", "duplicate case id 'a/m=1/chunks=3'", 6);
  // A case whose id is another case's point, before or after it.
  expect_load_error(head + "  - id: a/m=2\n  - id: a\n    sweep: {m: [1, 2]}\n", "'cases[a]': duplicate case id 'a/m=2'", 7);
  expect_load_error(head + "  - id: a\n    sweep: {m: [1, 2]}\n  - id: a/m=2\n", "'cases[a/m=2]': duplicate case id 'a/m=2'", 8);
  expect_load_error(head + "  - id: a\n  - id: a\n", "'cases[a]': duplicate case id 'a'", 7);
  // Related ids that do not collide load.
  scenario::load(write_tmp("ok.yaml", head + "  - id: a\n    sweep: {m: [1, 2]}\n  - id: a/m=3\n  - id: a/m\n  - id: b\n    sweep: {m: [1]}\n"));
  // A measured point that names several sweep points, or one twice.
  expect_load_error(head + "  - id: a\n    sweep: {m: [1, 2], chunks: [3, 4]}\n    measured:\n      - {at: {m: 2}, value_us: 1, source: t}\n",
                    "'cases[a].measured[0].at': '{m: 2}' matches 2 sweep points (a/m=2/chunks=3, ...)", 9);
  expect_load_error(head + "  - id: a\n    sweep: {m: [1, 2]}\n    measured:\n      - {at: {m: 2}, value_us: 1, source: t}\n"
                           "      - {at: {m: 2}, value_us: 2, source: t}\n",
                    "sweep point '{m: 2}' given twice (also on line 9)", 10);
}

TEST(Sweep, ResumeRefusesARowWhoseParametersChanged) {
  // The scenario edited between runs (pull_blocks of every case): the kept rows' ids still match,
  // their parameters do not; --resume names the case and the key, and runs nothing.
  const std::string text = kGemmHead + "defaults: {n: 7168, k: 2048, world_size: 8, quant: blockscale, mode: fused-sdma, pull_blocks: 64}\n"
                                       "cases:\n  - id: a\n    sweep: {m: [1024, 2048], chunks: [4, 8]}\n";
  const std::string path = write_tmp("edited.yaml", text);
  auto sc = scenario::load(path);
  const auto hw = scenario::load_hardware(sc);
  scenario::SweepOptions o;
  o.out = test_tmp("edited.jsonl");
  o.progress = false;
  scenario::sweep(sc, hw, o);
  const std::string full = read_file(o.out);
  o.resume = true;
  EXPECT_EQ(scenario::sweep(sc, hw, o).resumed, 4);  // unchanged: every row kept
  EXPECT_EQ(read_file(o.out), full);
  std::string edited = text;
  edited.replace(edited.find("pull_blocks: 64"), 15, "pull_blocks: 32");
  sc = scenario::load(write_tmp("edited.yaml", edited));
  const std::string e = error_of<std::invalid_argument>([&] { scenario::sweep(sc, hw, o); });
  EXPECT_NE(e.find("edited.jsonl:1: the kept row of case 0 ('a/m=1024/chunks=4') has pull_blocks = 64, but the case now sets pull_blocks: 32"),
            std::string::npos)
      << e;
  EXPECT_EQ(read_file(o.out), full);  // left as it was
  // CSV too (the params column).
  scenario::SweepOptions c = o;
  c.out = test_tmp("edited.csv");
  c.format = "csv";
  c.resume = false;
  scenario::sweep(scenario::load(write_tmp("edited.yaml", text)), hw, c);
  c.resume = true;
  const std::string e2 = error_of<std::invalid_argument>([&] { scenario::sweep(sc, hw, c); });
  EXPECT_NE(e2.find("edited.csv:2: the kept row of case 0 ('a/m=1024/chunks=4') has pull_blocks = 64"), std::string::npos) << e2;
}

TEST(Sweep, ResumeRefusesARowWhoseMeasurementOrToleranceChanged) {
  // From a fresh-user trial: a measurement added to a middle case after the run had been kept with
  // measured_us null, and a changed tolerance was blamed on the hardware file. Both are now refused
  // naming the case, in JSON lines and CSV.
  const std::string head = kGemmHead + "defaults: {n: 7168, k: 2048, world_size: 8, quant: blockscale, mode: fused-sdma}\ncases:\n";
  const std::string text = head + "  - id: a\n    sweep: {m: [1024, 2048]}\n  - id: b\n    params: {m: 4096}\n  - id: c\n    params: {m: 8192}\n";
  const std::string measured = head + "  - id: a\n    sweep: {m: [1024, 2048]}\n  - id: b\n    params: {m: 4096}\n    measured: {value_us: 300, source: \"test\"}\n"
                                      "  - id: c\n    params: {m: 8192}\n";
  const std::string tolerance = head + "  - id: a\n    sweep: {m: [1024, 2048]}\n  - id: b\n    params: {m: 4096}\n    measured: {value_us: 300, source: \"test\"}\n"
                                       "    tolerance_pct: 3\n  - id: c\n    params: {m: 8192}\n";
  const auto hw = scenario::load_hardware(scenario::load(write_tmp("meas.yaml", text)));
  for (const std::string format : {"jsonl", "csv"}) {
    scenario::SweepOptions o;
    o.out = test_tmp("meas." + format);
    o.format = format;
    o.progress = false;
    scenario::sweep(scenario::load(write_tmp("meas.yaml", text)), hw, o);
    const std::string full = read_file(o.out);
    o.resume = true;
    const int line = format == "csv" ? 4 : 3;
    std::string e = error_of<std::invalid_argument>([&] { scenario::sweep(scenario::load(write_tmp("meas.yaml", measured)), hw, o); });
    EXPECT_NE(e.find(fmt::format("meas.{}:{}: the kept row of case 2 ('b') has measured_us none in the row, 300 in the scenario now", format, line)),
              std::string::npos)
        << e;
    EXPECT_EQ(read_file(o.out), full);
    o.resume = false;
    scenario::sweep(scenario::load(write_tmp("meas.yaml", measured)), hw, o);
    o.resume = true;
    e = error_of<std::invalid_argument>([&] { scenario::sweep(scenario::load(write_tmp("meas.yaml", tolerance)), hw, o); });
    EXPECT_NE(e.find("has tolerance_pct 10 in the row, 3 in the scenario now"), std::string::npos) << e;
    EXPECT_EQ(e.find("hardware file"), std::string::npos) << e;
  }
}

TEST(Sweep, ResumeRefusesRowsWrittenOnOtherHardware) {
  // The same cases on a hardware file with another fabric bandwidth: parameters agree, the first
  // kept row run again does not; --resume names the case and the key that differs.
  const std::string path = write_tmp("hwedit.yaml", kGemmHead + "defaults: {n: 7168, k: 2048, world_size: 8, quant: blockscale, mode: split-sdma}\n"
                                                                "cases:\n  - id: a\n    sweep: {m: [1024, 2048, 4096]}\n");
  const auto sc = scenario::load(path);
  const auto hw = scenario::load_hardware(sc);
  scenario::SweepOptions o;
  o.out = test_tmp("hwedit.jsonl");
  o.progress = false;
  scenario::sweep(sc, hw, o);
  const std::string full = read_file(o.out);
  auto other = hw;
  other.set_si("memory.fabric_bandwidth", 2e12);
  o.resume = true;
  const std::string e = error_of<std::invalid_argument>([&] { scenario::sweep(sc, other, o); });
  EXPECT_NE(e.find("hwedit.jsonl:1: the kept row of case 0 ('a/m=1024') differs from the case run now at predicted_us (kept "), std::string::npos) << e;
  EXPECT_NE(e.find("the hardware file"), std::string::npos) << e;
  EXPECT_EQ(read_file(o.out), full);
}
