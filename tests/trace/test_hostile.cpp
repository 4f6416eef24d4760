// Hostile input to the trace commands (issue 22): each is a clean error (exit 1, the file and the
// byte offset or line named) within a second, or is handled safely (exit 0) within a second.
#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/test_util.hpp"
#include <nlohmann/json.hpp>

#include "calibrate/trace/whatif.hpp"
#include "test_util.hpp"

namespace fusesim::trace {
namespace {

using test::TempDir;
using test::write_text;

struct CliResult {
  int exit_code = 0;
  std::string out, err;
  double seconds = 0;
};

/// Run `fusesim ARGS...` in-process as main() does: the exit code of a CLI11 error, stdout and stderr.
CliResult run(std::vector<std::string> args) {
  CliResult r;
  CLI::App app{"fusesim"};
  register_trace_commands(app, {});
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  auto t0 = std::chrono::steady_clock::now();
  try {
    app.parse(args);
  } catch (const CLI::Error& e) {
    r.exit_code = e.get_exit_code();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

/// A refusal: exit 1 within a second, stderr naming the file and each of `parts`.
void expect_refused(const std::vector<std::string>& args, const std::string& file, std::initializer_list<std::string> parts) {
  auto r = run(args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(1.0));
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "missing '" << p << "' in: " << r.err;
}

const char* kKernel = R"({"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", "ts": 5, "dur": 2, "args": {"stream": 7}})";

std::string trace_of(const std::string& events) { return std::string("{\"traceEvents\": [\n") + events + "\n]}\n"; }

TEST(TraceHostile, DeepNestingIsRefusedWithTheLimit) {
  TempDir d;
  std::string text = "{\"traceEvents\": [\n" + std::string(kKernel) + ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"args\": {\"x\": " +
                     std::string(200000, '[');
  write_text(d.file("deep.json"), text);
  for (const char* cmd : {"analyze", "whatif"})
    expect_refused({"trace", cmd, d.file("deep.json")}, d.file("deep.json"), {"nested deeper than 100 levels", "byte", "line 3"});
}

TEST(TraceHostile, AnOverLongTokenIsRefused) {
  TempDir d;
  write_text(d.file("long.json"), trace_of(std::string(kKernel) + ",\n{\"name\": \"" + std::string(17 << 20, 'x') + "\"}"));
  expect_refused({"trace", "analyze", d.file("long.json")}, d.file("long.json"), {"single JSON token", "16 MiB", "byte"});
}

// A number beyond a double ("1e400", nlohmann's out_of_range 406): the file, byte and line, and what
// was expected (it was called malformed JSON).
TEST(TraceHostile, ANumberBeyondADoubleNamesFileAndLine) {
  TempDir d;
  write_text(d.file("e.json"), trace_of(std::string(kKernel) + ",\n" + R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e400, "dur": 1})"));
  expect_refused({"trace", "analyze", d.file("e.json")}, d.file("e.json"),
                 {"a number out of the range of a double", "1e400", "expected a finite number", "byte", "line 3"});
}

TEST(TraceHostile, NumbersOutOfRangeAreRefusedWithTheirKey) {
  TempDir d;
  const std::pair<const char*, const char*> cases[] = {
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e300, "dur": 1, "args": {"stream": 7}})", "key \"ts\""},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7, "correlation": 1e19}})", "key \"args.correlation\""},
      {R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"Input Dims": [[99999999999999999999, 2]]}})", "key \"args.Input Dims\""},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 9.3e15, "dur": 1, "args": {"stream": 7}})", "key \"ts\""},
  };
  for (const auto& [event, key] : cases) {
    SCOPED_TRACE(event);
    write_text(d.file("n.json"), trace_of(std::string(kKernel) + ",\n" + event));
    expect_refused({"trace", "analyze", d.file("n.json")}, d.file("n.json"), {key, "byte", "line 3"});
  }
}

// An integer key holding an array or an object, and a negative device index, are refused with the
// key (they were skipped as if absent: the stream fell back to the thread id); a negative size in
// Input Dims is named in a warning (it takes no GEMM shape) instead of being dropped silently.
TEST(TraceHostile, MistypedStreamsDevicesAndDimsAreNamed) {
  TempDir d;
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": [1, 2]}})", {"key \"args.stream\"", "an array"}},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7, "correlation": {"a": 1}}})",
       {"key \"args.correlation\"", "an object"}},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7, "device": -1}})",
       {"key \"args.device\"", "device index (0 or more), found -1"}},
  };
  for (const auto& [event, parts] : cases) {
    SCOPED_TRACE(event);
    write_text(d.file("t.json"), trace_of(std::string(kKernel) + ",\n" + event));
    auto r = run({"trace", "analyze", d.file("t.json")});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find(d.file("t.json")), std::string::npos) << r.err;
    for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "missing '" << p << "' in: " << r.err;
  }
  write_text(d.file("dims.json"), trace_of(std::string(kKernel) + ",\n" +
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"Input Dims": [[-4, 8], [8, 16]]}})"));
  auto w = run({"trace", "analyze", d.file("dims.json")});
  EXPECT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE((w.out + w.err).find("1 CPU operator(s) carry a negative size in \"Input Dims\""), std::string::npos) << w.out << w.err;
  EXPECT_NE((w.out + w.err).find("aten::mm"), std::string::npos);
}

TEST(TraceHostile, ATruncatedOrMalformedFileIsNamed) {
  TempDir d;
  std::string text = trace_of(std::string(kKernel) + ",\n" + kKernel);
  write_text(d.file("cut.json"), text.substr(0, text.size() - 40));
  expect_refused({"trace", "analyze", d.file("cut.json")}, d.file("cut.json"),
                 {"truncated", fmt::format("byte {}", text.size() - 40)});
  write_text(d.file("bad.json"), trace_of(std::string(kKernel) + ",\n{\"ph\" \"X\"}"));
  expect_refused({"trace", "analyze", d.file("bad.json")}, d.file("bad.json"), {"malformed JSON", "byte", "line 3"});
}

TEST(TraceHostile, DuplicateRanksAndForeignAcceleratorsAreNamed) {
  TempDir d;
  const std::string ranked = std::string("{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [") + kKernel + "]}";
  write_text(d.file("r0.json"), ranked);
  write_text(d.file("r0-copy.json"), ranked);
  expect_refused({"trace", "whatif", d.str()}, d.file("r0-copy.json"), {"two files carry distributedInfo.rank 0", d.file("r0.json")});
  TempDir e;
  write_text(e.file("mtia.json"), trace_of(R"({"ph": "X", "cat": "mtia_ccp_events", "name": "gemm", "ts": 1, "dur": 1})"));
  expect_refused({"trace", "analyze", e.file("mtia.json")}, e.file("mtia.json"), {"no GPU events", "mtia_ccp_events: 1"});
}

// A 40 KB step annotation (it overflowed std::regex's recursion) and a 40 KB kernel name are
// handled: the default step pattern is scanned by hand, every other pattern runs in RE2 (linear).
TEST(TraceHostile, FortyKilobyteNamesAreHandled) {
  TempDir d;
  const std::string step = "ProfilerStep#" + std::string(40000, '9');
  const std::string kernel = "void cutlass::Kernel2<" + std::string(40000, 'x') + ">";
  write_text(d.file("names.json"), trace_of(fmt::format(
      R"({{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": 1, "tid": 1, "ts": 0, "dur": 100}},
{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 2, "args": {{"correlation": 5}}}},
{{"ph": "X", "cat": "kernel", "name": "{}", "ts": 20, "dur": 30, "args": {{"stream": 7, "correlation": 5}}}})",
      step, kernel)));
  auto r = run({"trace", "analyze", d.file("names.json"), "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(1.0));
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ranks"][0]["windows"].size(), 1u);
  EXPECT_EQ(j["ranks"][0]["windows"][0]["gpu_events"], 1);
  EXPECT_EQ(j["ranks"][0]["phases"].back()["categories"].count("gemm"), 1u);
  // A user pattern runs on the whole 40 KB name and finds the step.
  auto u = run({"trace", "analyze", d.file("names.json"), "--step-regex", "ProfilerStep#[0-9]*9", "--format", "json"});
  EXPECT_EQ(u.exit_code, 0) << u.err;
  EXPECT_LT(u.seconds, fusesim::test::time_limit_s(1.0));
  EXPECT_EQ(nlohmann::json::parse(u.out)["ranks"][0]["windows"].size(), 1u) << u.out;
  auto w = run({"trace", "whatif", d.file("names.json"), "--window", "steps"});
  EXPECT_EQ(w.exit_code, 0) << w.err;
  EXPECT_LT(w.seconds, fusesim::test::time_limit_s(1.0));
}

// A pattern that backtracks exponentially in std::regex ((a*)*b: 30 'a's did not finish in 10 minutes)
// against a 2 MB collective name ends at once; --scale-collective leaves compute kernels alone; an
// invalid pattern is refused before any window is looked at, also when no window would be replayed.
TEST(TraceHostile, CatastrophicPatternsOnHugeNamesEndAtOnce) {
  TempDir d;
  const std::string comm = "ncclDevKernel_AllReduce_" + std::string(2 << 20, 'a');
  write_text(d.file("big.json"), trace_of(fmt::format(
      R"({{"ph": "X", "cat": "kernel", "name": "nvjet_gemm", "ts": 0, "dur": 30, "args": {{"stream": 7}}}},
{{"ph": "X", "cat": "kernel", "name": "{}", "ts": 40, "dur": 20, "args": {{"stream": 7}}}})",
      comm)));
  auto w = run({"trace", "whatif", d.file("big.json"), "--window", "all", "--scale-collective", "(a*)*b=2",
                "--scale-collective", "(a*)*$=3", "--format", "json"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_LT(w.seconds, fusesim::test::time_limit_s(5.0));
  EXPECT_EQ(nlohmann::json::parse(w.out)["changes"]["events_rescaled"], 1) << w.out;  // (a*)*$ matches the collective only
  auto g = run({"trace", "whatif", d.file("big.json"), "--window", "all", "--scale-collective", "gemm=2", "--format", "json"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(nlohmann::json::parse(g.out)["changes"]["events_rescaled"], 0) << g.out;  // nvjet_gemm is compute
  for (const std::string bad : {"(=2", "x(?!y)=2", "(a)\\1=2"}) {
    auto r = run({"trace", "whatif", d.file("big.json"), "--window", "prefill", "--scale-collective", bad});
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.out;
    EXPECT_NE(r.err.find("invalid regex"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--scale-collective"), std::string::npos) << r.err;
  }
  auto ar = run({"trace", "whatif", d.file("big.json"), "--window", "prefill", "--allreduce-regex", "[a-"});
  EXPECT_EQ(ar.exit_code, 1);
  EXPECT_NE(ar.err.find("--allreduce-regex"), std::string::npos) << ar.err;
}

// Two replays of a trace spanning 1e7 s in one process (the second one used to wrap SystemC's
// 64-bit picosecond clock and never end), and a trace spanning 2e7 s, past the engine's range:
// refused with the file named.
TEST(TraceHostile, LongTraceSpansNeverHang) {
  TempDir d;
  auto two_kernels = [](double second_ts_us) {
    return trace_of(fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "k1", "ts": 1000, "dur": 2, "args": {{"stream": 7}}}},
{{"ph": "X", "cat": "kernel", "name": "k2", "ts": {:.0f}, "dur": 2, "args": {{"stream": 7}}}})",
        second_ts_us));
  };
  write_text(d.file("long.json"), two_kernels(1000 + 1e13));  // 1e7 s later
  for (int i = 0; i < 2; ++i) {
    auto r = run({"trace", "whatif", d.file("long.json"), "--window", "all", "--format", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LT(r.seconds, fusesim::test::time_limit_s(1.0));
    auto j = nlohmann::json::parse(r.out);
    EXPECT_NEAR(j["replay_us"].get<double>(), 1e13 + 2, 1e-3);
  }
  write_text(d.file("longer.json"), two_kernels(1000 + 2e13));  // 2e7 s later
  expect_refused({"trace", "whatif", d.file("longer.json"), "--window", "all"}, d.file("longer.json"),
                 {"too long to replay", "beyond the engine's range"});
}

TEST(TraceHostile, ARankThatIsNotThereIsRefused) {
  TempDir d;
  write_text(d.file("t.json"), trace_of(kKernel));
  expect_refused({"trace", "whatif", d.file("t.json"), "--scale-on-rank", "9:k=2"}, d.file("t.json"), {"holds no rank 9"});
}

// A rules file under its 4 MiB bound whose patterns compile to millions of instructions (65000 rules of
// x{1000}y{1000} took 69 s and 7.3 GB) is refused at the rule that passes the budget, naming the file
// and its line; so is a file of more than 4096 rules.
TEST(TraceHostile, CostlyRulesFilesAreRefusedAtTheirLine) {
  TempDir d;
  std::string rules = "rules:\n";
  for (int i = 0; i < 3000; ++i) rules += fmt::format("  - {{category: gemm, family: f, pattern: \"x{{1000}}y{{1000}}{}\"}}\n", i);
  write_text(d.file("costly.yaml"), rules);
  write_text(d.file("t.json"), trace_of(kKernel));
  auto r = run({"trace", "analyze", d.file("t.json"), "--rules", d.file("costly.yaml")});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find(d.file("costly.yaml") + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("instructions, more than the 2000000 a rules file may take"), std::string::npos) << r.err;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(5.0));
  std::string many = "rules:\n";
  for (int i = 0; i < 4097; ++i) many += fmt::format("  - {{category: gemm, pattern: \"k{}\"}}\n", i);
  write_text(d.file("many.yaml"), many);
  r = run({"trace", "analyze", d.file("t.json"), "--rules", d.file("many.yaml")});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("4097 rules, more than the 4096 a rules file may hold"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fusesim::trace
