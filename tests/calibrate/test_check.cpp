// `fusesim check`: fails (exit 2, names the case) on a fixture whose tolerance is deliberately wrong,
// passes on the real MI355X scenario; `check --plot` writes the CSV and images.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.hpp"

namespace fusesim::calibrate {
namespace {

const std::string kBin = FUSESIM_BIN;

TEST(Check, FailsOnDeliberatelyWrongTolerance) {
  std::string out;
  const int rc = test::run_shell(kBin + " check tests/calibrate/fixtures/check_wrong_tolerance.yaml", &out);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("FAIL tests/calibrate/fixtures/check_wrong_tolerance.yaml headline/fused-sdma-tolerance-too-tight"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("tolerance 0.0%"), std::string::npos) << out;
  EXPECT_EQ(out.find("gemm-only:"), std::string::npos) << out;  // the case within its tolerance is not reported
}

TEST(Check, PassesOnTheRealScenario) {
  std::string out;
  const int rc = test::run_shell(kBin + " check scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("0 outside tolerance"), std::string::npos) << out;
}

TEST(Check, PlotWritesCsvAndImages) {
  const std::string dir = test::temp_dir("checkplot");
  std::string out;
  const int rc = test::run_shell(kBin + " check scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml --plot " + dir, &out);
  ASSERT_EQ(rc, 0) << out;
  const std::string base = dir + "/mi355x-dsv4-pro-wo_b-tp8__pull-grid";
  EXPECT_TRUE(std::filesystem::exists(base + ".csv"));
  EXPECT_TRUE(std::filesystem::exists(base + ".curve.csv"));
  const std::string csv = test::slurp(base + ".csv");
  EXPECT_NE(csv.find("pull_blocks,24,,1091.0000"), std::string::npos) << csv;
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    EXPECT_GT(std::filesystem::file_size(base + ".png"), 1000u);
    EXPECT_GT(std::filesystem::file_size(base + ".svg"), 1000u);
  }
}

TEST(Check, PlotWithoutGnuplotStillWritesCsv) {
  const std::string dir = test::temp_dir("nognuplot");
  std::string out;
  const int rc = test::run_shell("PATH=/nonexistent " + kBin + " check scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml --plot " + dir, &out);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("gnuplot not found"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/mi355x-dsv4-pro-wo_b-tp8__headline.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/mi355x-dsv4-pro-wo_b-tp8__headline.png"));
}

}  // namespace
}  // namespace fusesim::calibrate
