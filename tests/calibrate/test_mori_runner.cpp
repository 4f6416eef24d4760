// `calibrate mori` through the stand-in launcher (fake_torchrun.sh): a normal sweep, a crash, a
// timeout, a non-validated row, a build without SDMA, and resuming an interrupted sweep.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "calibrate/measurements.hpp"
#include "calibrate/mori_runner.hpp"
#include "hw/hardware.hpp"
#include "test_util.hpp"

namespace fusesim::calibrate {
namespace {
using test::fixture;
using test::src;

class MoriRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = test::temp_dir(std::string("mori_") + info->name());
    opt.mori_dir = fixture("mori");
    opt.nproc = 8;
    opt.sweep_path = fixture("sweep_small.yaml");
    opt.out = dir + "/sweep.jsonl";
    opt.launcher = src("tests/calibrate/fake_torchrun.sh");
    opt.timeout_s = 20;
    opt.pause_s = 0;
    opt.commit = "0123456789ab";
    opt.progress = &progress;
    setenv("FAKE_CALLS", (dir + "/calls.txt").c_str(), 1);
  }
  void TearDown() override {
    for (const char* v : {"FAKE_CALLS", "FAKE_CRASH_M", "FAKE_TIMEOUT_M", "FAKE_INVALID_M", "FAKE_NO_SDMA", "FAKE_PIDS"}) unsetenv(v);
  }
  int calls() const {
    std::istringstream ss(test::slurp(dir + "/calls.txt"));
    std::string l;
    int n = 0;
    while (std::getline(ss, l)) n += !l.empty();
    return n;
  }
  ParseResult parsed() const { return parse_measurement_file(opt.out); }
  std::string dir;
  MoriOptions opt;
  std::ostringstream progress;
};

TEST_F(MoriRunner, SweepExpansionBuildsArgvWithoutShell) {
  const auto runs = expand_sweep(YAML::LoadFile(opt.sweep_path), opt.sweep_path, opt);
  // fused-sdma: 2 M x (bf16 + fp8-lsa x 2 pull grids); split-sdma: 2 M x bf16 (no fp8 wire outside fused-sdma)
  ASSERT_EQ(runs.size(), 8u);
  const auto& r = runs[1];
  EXPECT_EQ(r.argv[0], opt.launcher);
  EXPECT_EQ(r.argv[1], "--standalone");
  EXPECT_EQ(r.argv[2], "--nproc_per_node=8");
  EXPECT_EQ(r.argv[3], kBenchGemmArPath);
  EXPECT_EQ(r.env.at("MORI_ENABLE_SDMA"), "1");
  EXPECT_EQ(r.env.at("MORI_SOCKET_IFNAME"), "lo");
  EXPECT_EQ(r.env.at("MORI_GEMM_AR_PULL_BLOCKS"), "48");
  EXPECT_NE(r.command.find("--gather-dtype fp8 --gather-transport lsa --no-fuse-quantize"), std::string::npos) << r.command;
  YAML::Node bad = YAML::Load("modes: [fused-sdma]\nwires: [fp4]\n");
  try {
    expand_sweep(bad, "bad.yaml", opt);
    FAIL();
  } catch (const hw::FileError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:2: 'wires'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(expand_sweep(YAML::Load("mode: [fused-sdma]\n"), "bad.yaml", opt), hw::FileError);  // unknown key
}

TEST_F(MoriRunner, NormalSweep) {
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  EXPECT_EQ(calls(), 9);  // the SDMA check + 8 runs
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 9u);
  for (const auto& r : p.records) {
    EXPECT_FALSE(r.rejected) << r.reason;
    EXPECT_EQ(r.kind, "gemm_ar");
    EXPECT_TRUE(r.extra.contains("command"));
    EXPECT_TRUE(r.extra["host"].contains("hostname"));
    EXPECT_EQ(r.extra["fusesim_commit"], "0123456789ab");
    EXPECT_TRUE(r.extra.contains("date"));
  }
  EXPECT_EQ(p.records[0].table, "sdma-check");
  EXPECT_EQ(p.records[1].table, "test-sweep");
  // pull grid recorded from the environment
  EXPECT_EQ(p.records[2].params["pull_blocks"].as<int>(), 48);
  EXPECT_DOUBLE_EQ(p.records[2].value, 541.0);
  const std::string prog = progress.str();
  EXPECT_NE(prog.find("SDMA check passed"), std::string::npos) << prog;
  EXPECT_NE(prog.find("[run 8 of 8]"), std::string::npos) << prog;
  EXPECT_NE(prog.find("left"), std::string::npos) << prog;
  EXPECT_EQ(to_fit_points(p.records).size(), 9u);
}

TEST_F(MoriRunner, CrashIsRecordedAsFailure) {
  setenv("FAKE_CRASH_M", "8192", 1);
  EXPECT_EQ(run_mori_sweep(opt), 1) << progress.str();
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 9u);
  int failed = 0;
  for (const auto& r : p.records)
    if (r.rejected) {
      ++failed;
      EXPECT_EQ(r.kind, "failure");
      EXPECT_NE(r.reason.find("crash: exit code 1, no RESULT_JSON"), std::string::npos) << r.reason;
      EXPECT_EQ(r.params["m"].as<int>(), 8192);
      EXPECT_NE(r.extra["output_tail"].dump().find("hsaKmtCreateQueueExt"), std::string::npos);
    }
  EXPECT_EQ(failed, 4);
  EXPECT_EQ(to_fit_points(p.records).size(), 5u);  // failures are never fitted
}

TEST_F(MoriRunner, TimeoutKillsTheProcessGroup) {
  test::spit(dir + "/two.yaml", "table: t\nmodes: [fused-sdma]\nm: [8192, 16384]\n");
  opt.sweep_path = dir + "/two.yaml";
  opt.timeout_s = 1.5;
  setenv("FAKE_TIMEOUT_M", "16384", 1);
  setenv("FAKE_PIDS", (dir + "/pids.txt").c_str(), 1);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_mori_sweep(opt), 1) << progress.str();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 10.0);  // the fake sleeps 30 s: it was killed
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 3u);
  EXPECT_FALSE(p.records[1].rejected);
  EXPECT_TRUE(p.records[2].rejected);
  EXPECT_NE(p.records[2].reason.find("timeout after 2 s"), std::string::npos) << p.records[2].reason;
  // no sleeper left behind in the group
  std::istringstream pids(test::slurp(dir + "/pids.txt"));
  int pid = 0, n = 0;
  while (pids >> pid) {
    ++n;
    // gone, or a zombie waiting for init to reap it (killed, orphaned by the killed launcher)
    auto alive = [](int p) {
      const std::string stat = test::slurp("/proc/" + std::to_string(p) + "/stat");
      const auto close = stat.rfind(')');
      return !stat.empty() && close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
    };
    for (int i = 0; i < 30 && alive(pid); ++i) usleep(100000);
    EXPECT_FALSE(alive(pid)) << "the run's child " << pid << " is still running";
  }
  EXPECT_EQ(n, 1);
}

TEST_F(MoriRunner, NotValidatedIsRecordedAsFailure) {
  setenv("FAKE_INVALID_M", "16384", 1);
  EXPECT_EQ(run_mori_sweep(opt), 1) << progress.str();
  const auto p = parsed();
  int failed = 0;
  for (const auto& r : p.records)
    if (r.rejected) {
      ++failed;
      EXPECT_NE(r.reason.find("not validated"), std::string::npos) << r.reason;
      EXPECT_DOUBLE_EQ(r.extra["rel_l2"].get<double>(), 0.0413);
    }
  EXPECT_EQ(failed, 4);
}

TEST_F(MoriRunner, BuildWithoutSdmaRefusesTheSweep) {
  setenv("FAKE_NO_SDMA", "1", 1);
  EXPECT_EQ(run_mori_sweep(opt), 3);
  EXPECT_EQ(calls(), 1);  // only the check ran
  const std::string prog = progress.str();
  EXPECT_NE(prog.find("REFUSED: the SDMA check failed"), std::string::npos) << prog;
  EXPECT_NE(prog.find("moved nothing"), std::string::npos) << prog;
  EXPECT_NE(prog.find("BUILD_CCO_SDMA=ON"), std::string::npos) << prog;
  EXPECT_TRUE(!std::filesystem::exists(opt.out) || std::filesystem::file_size(opt.out) == 0);
}

TEST_F(MoriRunner, ResumeAfterInterruption) {
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  // Interrupted after the check and 3 runs, in the middle of writing the 4th record.
  const std::string full = test::slurp(opt.out);
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) pos = full.find('\n', pos) + 1;
  const size_t fifth_end = full.find('\n', pos);
  test::spit(opt.out, full.substr(0, pos) + full.substr(pos, (fifth_end - pos) / 2));
  std::filesystem::remove(dir + "/calls.txt");
  opt.resume = true;
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  EXPECT_EQ(calls(), 1 + 5);  // the check again, then only the 5 runs not yet measured
  EXPECT_NE(progress.str().find("resume: 3 of 8 runs already in"), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find("removed the last line"), std::string::npos) << progress.str();
  const auto p = parsed();  // the torn line is gone: the file parses
  size_t sweep = 0;
  std::set<std::string> keys;
  for (const auto& r : p.records)
    if (r.table == "test-sweep") {
      ++sweep;
      keys.insert(r.extra["run_key"].get<std::string>());
    }
  EXPECT_EQ(sweep, 8u);
  EXPECT_EQ(keys.size(), 8u);
}

}  // namespace
}  // namespace fusesim::calibrate
