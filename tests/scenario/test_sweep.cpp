// fusesim sweep (scenario/sweep.hpp): the split by expected cost, rows equal to run's cases, resume
// after a cut, and a file of another scenario refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "scenario/sweep.hpp"
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

TEST(Sweep, RefusesAModelThatRunsItsCasesTogether) {
  const auto sc = scenario::load(kRoot + "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  const auto hw = scenario::load_hardware(sc);
  scenario::SweepOptions o;
  o.out = test_tmp("ttft.jsonl");
  o.progress = false;
  EXPECT_NE(error_of<std::invalid_argument>([&] { scenario::sweep(sc, hw, o); }).find("runs its cases together"), std::string::npos);
}
