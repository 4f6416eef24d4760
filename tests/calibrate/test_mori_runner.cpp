// `calibrate mori` through the stand-in launcher (fake_torchrun.sh): a normal sweep, a crash, a
// timeout, a non-validated row, a build without SDMA, and resuming an interrupted sweep; every
// combination the benchmark accepts, its defaults, the default launcher (python3 -m
// torch.distributed.run through a stand-in interpreter), the standalone all-reduce sweep kind, and
// recorded lines of the old RESULT_JSON layouts (NaN, no quant) through a crash and --resume.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "calibrate/measurements.hpp"
#include "calibrate/mori_runner.hpp"
#include "hw/hardware.hpp"
#include "test_util.hpp"
#include "tests/test_util.hpp"

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
    for (const char* v : {"FAKE_CALLS", "FAKE_CRASH_M", "FAKE_TIMEOUT_M", "FAKE_INVALID_M", "FAKE_NO_SDMA", "FAKE_PIDS", "FAKE_RECORDED", "FAKE_NAN_M"})
      unsetenv(v);
    setenv("PATH", path_.c_str(), 1);
  }
  std::string path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
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
  // fused-sdma and split-sdma: 2 M x (bf16 + fp8-lsa x 2 pull grids) (the benchmark runs the fp8 wire with split-sdma)
  ASSERT_EQ(runs.size(), 12u);
  const auto& r = runs[1];
  EXPECT_EQ(r.argv[0], opt.launcher);
  EXPECT_EQ(r.argv[1], "--standalone");
  EXPECT_EQ(r.argv[2], "--nproc_per_node=8");
  EXPECT_EQ(r.argv[3], kBenchGemmArPath);
  EXPECT_EQ(r.env.at("MORI_ENABLE_SDMA"), "1");
  EXPECT_EQ(r.env.at("MORI_SOCKET_IFNAME"), "lo");
  EXPECT_EQ(r.env.at("MORI_GEMM_AR_PULL_BLOCKS"), "48");
  EXPECT_NE(r.command.find("--gather-dtype fp8 --gather-transport lsa --chunks 8 --no-fuse-quantize"), std::string::npos) << r.command;
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
  EXPECT_EQ(calls(), 13);  // the SDMA check + 12 runs
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 13u);
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
  EXPECT_NE(prog.find("[run 12 of 12]"), std::string::npos) << prog;
  EXPECT_NE(prog.find("left"), std::string::npos) << prog;
  EXPECT_EQ(to_fit_points(p.records).size(), 13u);
}

TEST_F(MoriRunner, CrashIsRecordedAsFailure) {
  setenv("FAKE_CRASH_M", "8192", 1);
  EXPECT_EQ(run_mori_sweep(opt), 1) << progress.str();
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 13u);
  int failed = 0;
  for (const auto& r : p.records)
    if (r.rejected) {
      ++failed;
      EXPECT_EQ(r.kind, "failure");
      EXPECT_NE(r.reason.find("crash: exit code 1, no RESULT_JSON"), std::string::npos) << r.reason;
      EXPECT_EQ(r.params["m"].as<int>(), 8192);
      EXPECT_NE(r.extra["output_tail"].dump().find("hsaKmtCreateQueueExt"), std::string::npos);
    }
  EXPECT_EQ(failed, 6);
  EXPECT_EQ(to_fit_points(p.records).size(), 7u);  // failures are never fitted
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
  EXPECT_EQ(failed, 6);
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
  EXPECT_EQ(calls(), 1 + 9);  // the check again, then only the 9 runs not yet measured
  EXPECT_NE(progress.str().find("resume: 3 of 12 runs already in"), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find("removed the last line"), std::string::npos) << progress.str();
  const auto p = parsed();  // the torn line is gone: the file parses
  size_t sweep = 0;
  std::set<std::string> keys;
  for (const auto& r : p.records)
    if (r.table == "test-sweep") {
      ++sweep;
      keys.insert(r.extra["run_key"].get<std::string>());
    }
  EXPECT_EQ(sweep, 12u);
  EXPECT_EQ(keys.size(), 12u);
}

// A RESULT_JSON line nested thousands deep (issue 22) is refused by the bounded parse, naming the
// run's output and its line; the launcher's output reaches the progress stream with its terminal
// control characters escaped.
TEST_F(MoriRunner, DeepResultJsonIsRefusedNamingTheOutputLine) {
  const std::string launcher = dir + "/deep_launcher.sh";
  test::spit(launcher, "#!/bin/sh\necho 'starting'\nprintf 'RESULT_JSON {\"a\": '; head -c 5000 /dev/zero | tr '\\0' '['; echo\n"
                       "printf 'noise \\033[2J\\033]0;title\\007\\r\\n'\n");
  std::filesystem::permissions(launcher, std::filesystem::perms::owner_all);
  opt.launcher = launcher;
  EXPECT_NE(run_mori_sweep(opt), 0) << progress.str();
  const std::string prog = progress.str();
  EXPECT_NE(prog.find("REFUSED: the SDMA check failed: no RESULT_JSON line in the output"), std::string::npos) << prog;
  EXPECT_NE(prog.find("(unreadable RESULT_JSON line above: output of run "), std::string::npos) << prog;
  EXPECT_NE(prog.find(":2: JSON nested more than 64 levels deep"), std::string::npos) << prog;
  EXPECT_NE(prog.find("noise \\x1b[2J\\x1b]0;title\\x07\\r"), std::string::npos) << prog;
  EXPECT_EQ(prog.find('\x1b'), std::string::npos) << prog;
}

// A resumed output whose line is nested thousands deep: that line is named and ignored (its run is
// measured again), not parsed.
TEST_F(MoriRunner, ResumeIgnoresADeepLineNamingIt) {
  test::spit(opt.out, "{\"run_key\": " + std::string(5000, '[') + std::string(5000, ']') + "}\n");
  opt.resume = true;
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  EXPECT_EQ(calls(), 13);  // nothing was taken from the deep line
  EXPECT_NE(progress.str().find("resume: ignoring a torn or malformed line: " + opt.out + ":1: JSON nested more than 64 levels deep"),
            std::string::npos)
      << progress.str();
  // The kept deep line is refused by the measurement reader too, naming its line.
  const std::string e = fusesim::test::error_of<hw::FileError>([&] { parse_measurement_file(opt.out); });
  EXPECT_NE(e.find("sweep.jsonl:1: JSON nested more than 64 levels deep"), std::string::npos) << e;
}

// Every combination bench_gemm_ar.py (ad271d19) accepts: the fp8 wire with split-sdma and fused-lsa
// (only split-lsa refuses it, said in a note), gemm-only once (no wire), the benchmark's defaults
// (--chunks 8 lowered by halving, --gather-bands 8 with fuse_reduce_push).
TEST_F(MoriRunner, ExpansionRunsEveryCombinationTheBenchmarkAccepts) {
  std::vector<std::string> notes;
  const auto runs = expand_sweep(YAML::Load("modes: [gemm-only, split-sdma, fused-lsa, split-lsa]\nm: [12288]\nwires: [bf16, fp8-sdma, fp8-lsa]\n"),
                                 "all.yaml", opt, &notes);
  std::map<std::string, int> per_mode;
  for (const auto& r : runs) ++per_mode[r.params["mode"].get<std::string>()];
  EXPECT_EQ(per_mode["gemm-only"], 1);
  EXPECT_EQ(per_mode["split-sdma"], 3);
  EXPECT_EQ(per_mode["fused-lsa"], 3);
  EXPECT_EQ(per_mode["split-lsa"], 1);
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  EXPECT_NE(all.find("with split-lsa: not run"), std::string::npos) << all;
  // 12288 rows / 8 ranks / BLOCK_M 128 = 12 row bands per destination: chunks 8 runs as 4 (not 6).
  EXPECT_NE(all.find("chunks 8 runs as 4 at M=12288 (12 row bands"), std::string::npos) << all;
  for (const auto& r : runs)
    if (r.params["mode"] == "split-sdma") {
      EXPECT_NE(r.command.find("--chunks 4"), std::string::npos) << r.command;
    }
  EXPECT_EQ(lowered_chunks(8, 12), 4);
  EXPECT_EQ(lowered_chunks(8, 16), 8);
  EXPECT_EQ(lowered_chunks(8, 6), 2);
  const auto push = expand_sweep(YAML::Load("modes: [fused-sdma]\nfuse_reduce_push: [true]\n"), "p.yaml", opt);
  ASSERT_EQ(push.size(), 1u);
  EXPECT_NE(push[0].command.find("--fuse-reduce-push --gather-bands 8 --publish writethrough"), std::string::npos) << push[0].command;
}

// The default launcher is `python3 -m torch.distributed.run` (no activated environment needed): here
// a stand-in python3 on PATH; torchrun is looked up on PATH only when asked for, and its absence is
// an error saying what to pass instead.
TEST_F(MoriRunner, DefaultLauncherIsPythonMinusMTorchDistributedRun) {
  setenv("PATH", (fixture("bin") + ":" + path_).c_str(), 1);
  opt.launcher = "python";
  test::spit(dir + "/one.yaml", "table: t\nmodes: [fused-sdma]\nm: [8192]\n");
  opt.sweep_path = dir + "/one.yaml";
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 2u);
  const auto argv = p.records[1].extra["argv"];
  EXPECT_EQ(argv[0], fixture("bin") + "/python3");
  EXPECT_EQ(argv[1], "-m");
  EXPECT_EQ(argv[2], "torch.distributed.run");
  EXPECT_EQ(argv[3], "--standalone");
  setenv("PATH", fixture("bin").c_str(), 1);  // no torchrun there
  opt.launcher = "torchrun";
  const std::string w = fusesim::test::error_of<std::runtime_error>([&] { resolve_launcher(opt); });
  EXPECT_NE(w.find("torchrun is not on PATH"), std::string::npos) << w;
  EXPECT_NE(w.find("--launcher python"), std::string::npos) << w;
  opt.launcher = "torchrun --standalone";  // a shell string is not a launcher
  EXPECT_THROW(resolve_launcher(opt), std::runtime_error);
}

// The standalone all-reduce (bench_ar.py) as a second sweep kind: its SDMA check first, then every
// backend x M; the lines are collective records.
TEST_F(MoriRunner, AllreduceSweepKind) {
  test::spit(dir + "/ar.yaml", "kind: allreduce\ntable: ar\nbackends: [lsa, sdma]\nm: [64, 16384]\n");
  opt.sweep_path = dir + "/ar.yaml";
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  EXPECT_EQ(calls(), 5);
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 5u);
  EXPECT_EQ(p.records[0].table, "sdma-check");
  for (const auto& r : p.records) {
    EXPECT_FALSE(r.rejected) << r.reason;
    EXPECT_EQ(r.kind, "collective");
    EXPECT_NE(r.extra["command"].get<std::string>().find(kBenchArPath), std::string::npos);
  }
  EXPECT_EQ(p.records[1].params["backend"].as<std::string>(), "lsa");
  EXPECT_DOUBLE_EQ(p.records[2].value, 1043.0);  // lsa, M=16384
  setenv("FAKE_NO_SDMA", "1", 1);
  std::filesystem::remove(opt.out);
  EXPECT_EQ(run_mori_sweep(opt), 3);
  EXPECT_THROW(expand_sweep(YAML::Load("kind: allreduce\nbackends: [aiter]\n"), "a.yaml", opt), hw::FileError);
}

// Recorded lines of the old layouts through the runner: NaN rel_l2 of gemm-only, no quant; a crash
// mid-sweep, then --resume: every row kept (the failures too), the failed runs retried.
TEST_F(MoriRunner, OldLayoutsThroughACrashAndResumeKeepEveryRow) {
  test::spit(dir + "/old.yaml", "table: old\nmodes: [gemm-only, fused-sdma]\nm: [8192, 16384]\n");
  opt.sweep_path = dir + "/old.yaml";
  setenv("FAKE_RECORDED", fixture("layouts/recorded_16ddbb94.jsonl").c_str(), 1);
  setenv("FAKE_CRASH_M", "16384", 1);
  EXPECT_EQ(run_mori_sweep(opt), 1) << progress.str();
  EXPECT_EQ(parsed().records.size(), 5u);  // the check, 2 measured, 2 failures
  unsetenv("FAKE_CRASH_M");
  std::filesystem::remove(dir + "/calls.txt");
  opt.resume = true;
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  EXPECT_EQ(calls(), 1 + 2);
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 8u);  // 5 + the check again + the 2 retried runs
  int failures = 0, nan_gemm_only = 0;
  for (const auto& r : p.records) {
    if (r.kind == "failure") {
      ++failures;
      EXPECT_NE(r.reason.find("crash"), std::string::npos) << r.reason;
      continue;
    }
    EXPECT_FALSE(r.rejected) << r.reason;
    EXPECT_EQ(r.params["quant"].as<std::string>(), "ptpc") << "no quant at 16ddbb94: ptpc operands";
    if (r.params["mode"].as<std::string>() == "gemm-only") {
      ++nan_gemm_only;
      EXPECT_EQ(r.extra["rel_l2"], "NaN");
    } else {
      // chunks 0 = one push per row band: M / 8 ranks / 256
      EXPECT_EQ(r.params["chunks"].as<int>(), r.params["m"].as<int>() / 8 / 256);
    }
  }
  EXPECT_EQ(failures, 2);
  EXPECT_EQ(nan_gemm_only, 2);
}

// 0b26ebf8's rows print no chunks: `calibrate mori --layout 0b26ebf8` records the layout with each
// line, so they are read with its --chunks default (1); 103655f6's rows are read with fuse_quantize on.
TEST_F(MoriRunner, StatedLayoutIsRecordedAndRead) {
  test::spit(dir + "/old.yaml", "table: old\nmodes: [gemm-only, fused-sdma]\nm: [8192, 16384]\n");
  opt.sweep_path = dir + "/old.yaml";
  setenv("FAKE_RECORDED", fixture("layouts/recorded_0b26ebf8.jsonl").c_str(), 1);
  opt.layout = "0b26ebf8";
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  for (const auto& r : parsed().records) {
    EXPECT_FALSE(r.rejected) << r.reason;
    EXPECT_EQ(r.extra["layout"], "0b26ebf8");
    if (r.params["mode"].as<std::string>() == "fused-sdma") {
      EXPECT_EQ(r.params["chunks"].as<int>(), 1);
    }
  }
  std::filesystem::remove(opt.out);
  setenv("FAKE_RECORDED", fixture("layouts/recorded_103655f6.jsonl").c_str(), 1);
  opt.layout = "auto";
  ASSERT_EQ(run_mori_sweep(opt), 0) << progress.str();
  const auto p = parsed();
  ASSERT_EQ(p.records.size(), 5u);
  for (const auto& r : p.records) {
    EXPECT_FALSE(r.rejected) << r.reason;
    EXPECT_EQ(r.extra["layout"], "103655f6");
    if (r.params["mode"].as<std::string>() == "fused-sdma") {
      EXPECT_TRUE(r.params["fuse_quantize"].as<bool>());
      EXPECT_EQ(r.params["gather_dtype"].as<std::string>(), "fp8");
    }
  }
}

// The MI355X live loop (calibrate/mi355x_live_loop.sh, issue 18 item 4) end to end on recorded output
// through the stand-in launcher and the default launcher (python3 -m torch.distributed.run):
// components (gemm-only per route and shape: the real 9aaef3e9 rows; the all-reduce alone per backend
// and M: bench_ar.py lines with the public table's times), fit of the component keys (the SDMA checks
// held out), predictions of the composite sweep recorded with commit and date before it is measured,
// the composite sweep (seed 000's headline values), fusesim check.
TEST_F(MoriRunner, LiveLoopEndToEnd) {
  const std::string out = dir + "/loop";
  std::string log;
  const int rc = test::run_shell("PATH='" + fixture("bin") + "':\"$PATH\" FUSESIM='" + std::string(FUSESIM_BIN) + "' MORI_DIR='" +
                                     fixture("mori") + "' SWEEPS='" + fixture("loop") + "' MORI_ARGS='--pause-s 0' calibrate/mi355x_live_loop.sh '" +
                                     out + "'",
                                 &log);
  ASSERT_EQ(rc, 0) << log;
  // The steps in order: predictions recorded before the composite sweep ran.
  const auto pred_at = log.find("predictions: " + out + "/predictions.json"), comp_at = log.find("4/5 measure the composite sweep");
  ASSERT_NE(pred_at, std::string::npos) << log;
  ASSERT_NE(comp_at, std::string::npos) << log;
  EXPECT_LT(pred_at, comp_at);
  const auto pred = nlohmann::json::parse(test::slurp(out + "/predictions.json"));
  EXPECT_EQ(pred["commit"].get<std::string>().size(), 12u);
  EXPECT_EQ(pred["date"].get<std::string>().size(), 20u);  // 2026-12-02T02:46:51Z
  EXPECT_EQ(pred["hardware_sha256"].get<std::string>().size(), 64u);
  ASSERT_EQ(pred["predictions"]["cases"].size(), 4u);
  for (const auto& c : pred["predictions"]["cases"]) EXPECT_GT(c["predicted_us"].get<double>(), 0.0);
  for (const auto& r : parse_measurement_file(out + "/composite.jsonl").records)
    EXPECT_GE(r.extra["date"].get<std::string>(), pred["date"].get<std::string>()) << "a composite measured before the predictions";
  // The GEMM keys are fitted on gemm-only points only; the SDMA check (a fused-sdma run) is held out.
  const auto fit = nlohmann::json::parse(test::slurp(out + "/fit-gemm.json"));
  int fitted = 0;
  for (const auto& p : fit["points"]) {
    if (p["table"] == "sdma-check") EXPECT_TRUE(p["held_out"].get<bool>());
    else {
      EXPECT_EQ(p["table"], "components-gemm");
      fitted += !p["held_out"].get<bool>();
    }
  }
  EXPECT_EQ(fitted, 3);
  const auto coll = nlohmann::json::parse(test::slurp(out + "/fit-allreduce.json"));
  int coll_fitted = 0;
  for (const auto& p : coll["points"]) coll_fitted += !p["held_out"].get<bool>();
  EXPECT_EQ(coll_fitted, 4);
  // fusesim check compared the 4 composite points with the recorded predictions' model, within 10%.
  EXPECT_NE(log.find("composite-measured.yaml: 4 compared"), std::string::npos) << log;
  EXPECT_NE(log.find("0 outside tolerance"), std::string::npos) << log;
}

// A bare NaN rel_l2 in today's layout: a failed run where the mode validates; a measurement (not
// validated, said so) when the run passed --skip-validation, which the runner's argv records.
TEST_F(MoriRunner, NaNRelL2IsAFailureUnlessTheRunSkippedValidation) {
  setenv("FAKE_NAN_M", "4096", 1);
  test::spit(dir + "/g.yaml", "table: g\nmodes: [gemm-only]\nm: [4096]\n");
  opt.sweep_path = dir + "/g.yaml";
  EXPECT_EQ(run_mori_sweep(opt), 1) << progress.str();
  auto p = parsed();
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_EQ(p.records[1].kind, "failure");
  EXPECT_NE(p.records[1].reason.find("rel_l2: NaN where mode gemm-only validates"), std::string::npos) << p.records[1].reason;
  std::filesystem::remove(opt.out);
  test::spit(dir + "/g.yaml", "table: g\nmodes: [gemm-only]\nm: [4096]\nextra_args: [--skip-validation]\n");
  EXPECT_EQ(run_mori_sweep(opt), 0) << progress.str();
  p = parsed();
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_FALSE(p.records[1].rejected) << p.records[1].reason;
  EXPECT_EQ(p.records[1].extra["not_validated"], "the run passed --skip-validation");
  EXPECT_EQ(p.records[1].extra["rel_l2"], "NaN");
}

}  // namespace
}  // namespace fusesim::calibrate
