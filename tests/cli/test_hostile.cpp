// Untrusted input stays harmless (issue 22): names that try to run commands through gnuplot or the
// probe script, names that try to leave the output folder, parser bombs (long quantities, long
// headers, deep nesting, huge numbers, `{},`), unbounded sweeps and simulations, invalid UTF-8, and
// interrupted runs. Each gives a clean error (file and line named) quickly or is handled safely.
// Also check's CI outputs: JUnit XML validated against tests/cli/junit.xsd, and --baseline.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <iterator>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "calibrate/measurements.hpp"
#include "calibrate/plot.hpp"
#include "calibrate/plot_names.hpp"
#include "hw/csv_cell.hpp"
#include "hw/hardware.hpp"
#include "hw/io.hpp"
#include "hw/json_limits.hpp"
#include "hw/numbers.hpp"
#include "hw/printable.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::test;
namespace fs = std::filesystem;

extern "C" char** environ;

namespace {

const std::string kBin = FUSESIM_BIN;

struct Ran {
  int rc = -1;
  std::string out;  ///< stdout and stderr together
  double seconds = 0;
};

/// Run `sh -c CMD` (stdout and stderr captured together) from the source folder.
Ran sh(const std::string& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  Ran r;
  FILE* p = ::popen(("cd '" + kRoot + "' && (" + cmd + ") 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

/// No ESC, CR, BEL or C1 CSI byte pair anywhere in `s`.
bool no_controls(const std::string& s) {
  return s.find('\x1b') == std::string::npos && s.find('\r') == std::string::npos && s.find('\x07') == std::string::npos &&
         s.find("\xc2\x9b") == std::string::npos;
}
/// A fresh, empty folder for one test.
fs::path fresh_dir() {
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path d = fs::path(::testing::TempDir()) / ("hostile_" + std::string(t->name()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// Every regular file under `d` (recursively), as paths relative to `d`.
std::vector<std::string> files_under(const fs::path& d) {
  std::vector<std::string> v;
  for (const auto& e : fs::recursive_directory_iterator(d))
    if (!e.is_directory()) v.push_back(fs::relative(e.path(), d).string());
  std::sort(v.begin(), v.end());
  return v;
}

std::string qp(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

// --- 1. names never reach a shell or a script unescaped ------------------------------------------

TEST(PlotNames, GnuplotLiteralsAndFileStemsAreSafe) {
  using namespace fusesim::plotnames;
  EXPECT_EQ(gnuplot_literal("a'b\n!touch X"), "'a''b?!touch X'");
  EXPECT_EQ(gnuplot_literal("`touch X` @M"), "'`touch X` @M'");  // single quotes: no substitution
  EXPECT_EQ(gnuplot_comment("x\\\n!touch X"), "x?" "?!touch X");  // two literals: no trigraph
  EXPECT_EQ(safe_file_stem("../../x"), "_._.._x");
  EXPECT_EQ(safe_file_stem("a/b\n!touch c"), "a_b__touch_c");
  EXPECT_EQ(safe_file_stem(""), "unnamed");
  EXPECT_EQ(safe_file_stem(std::string(1000, 'a')).size(), 150u);
  EXPECT_THROW(path_inside("/tmp/d", "../x"), std::invalid_argument);
  EXPECT_THROW(path_inside("/tmp/d", ".."), std::invalid_argument);
  EXPECT_EQ(path_inside("/tmp/d", "x.png").string(), "/tmp/d/x.png");
}

// Case ids holding a newline + `!touch FILE` (gnuplot's shell escape) and a backquoted command
// (gnuplot's substitution in double quotes), a scenario named `../../x` and ids with `..`: check
// --plot runs no command and writes nothing outside its folder (both happened before the fix).
TEST(HostileNames, CheckPlotRunsNoCommandAndStaysInItsFolder) {
  const fs::path d = fresh_dir();
  fs::create_directories(d / "a" / "b" / "out");
  std::ofstream(d / "a" / "b" / "evil.yaml") << "scenario: evil\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
      << "  - id: \"x\\n!touch PWNED\"\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
      << "    measured: [{at: {m: 4096}, value_us: 100, source: \"s\\n!touch PWNED3\"}, {at: {m: 8192}, value_us: 200, source: t}]\n"
      << "    tolerance_pct: 100\n"
      << "  - id: \"y`touch PWNED2`\"\n    params: {mode: gemm-only, m: 4096, n: 7168, k: 2048}\n"
      << "    measured: {value_us: 100, source: u}\n    tolerance_pct: 100\n";
  std::ofstream(d / "a" / "b" / "trav.yaml") << "scenario: ../../x\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
      << "  - id: \"..\"\n    params: {mode: gemm-only, m: 4096, n: 7168, k: 2048}\n"
      << "    measured: {value_us: 100, source: u}\n    tolerance_pct: 100\n";
  // From inside a/b (gnuplot runs there too), plots into a/b/out/plots.
  const Ran r = sh("cd " + qp(d / "a" / "b") + " && " + kBin + " check evil.yaml trav.yaml --plot out/plots");
  EXPECT_EQ(r.rc, 0) << r.out;
  for (const auto& f : files_under(d)) {
    EXPECT_TRUE(f.rfind("a/b/out/plots/", 0) == 0 || f == "a/b/evil.yaml" || f == "a/b/trav.yaml") << "written outside the folder: " << f;
  }
  for (const char* s : {"PWNED", "PWNED2", "PWNED3"}) EXPECT_FALSE(fs::exists(d / "a" / "b" / s)) << "a command ran: " << s;
  const auto files = files_under(d / "a" / "b" / "out" / "plots");
  EXPECT_GE(files.size(), 6u) << r.out;
  for (const auto& f : files) {
    EXPECT_EQ(f.find('/'), std::string::npos) << f;
    EXPECT_NE(f[0], '.') << f;
    if (f.size() > 3 && f.substr(f.size() - 3) == ".gp") {
      std::ifstream in(d / "a" / "b" / "out" / "plots" / f);
      std::string line;
      while (std::getline(in, line)) {
        EXPECT_NE(line.rfind('!', 0), 0u) << f << ": " << line;
        EXPECT_EQ(line.find("\"y`"), std::string::npos) << f << ": " << line;
      }
    }
  }
}

// The probe script pastes the commit into a C macro: only a safe character set is accepted, checked
// before anything is created or built.
TEST(HostileNames, ProbeScriptRefusesAHostileCommit) {
  const fs::path d = fresh_dir();
  for (const std::string& commit : {"x\"\n!touch " + (d / "PWNED").string(), std::string("../../x"), std::string("a\" ; touch PWNED ; \"")}) {
    const Ran r = sh("bash hw/kernels/run_all_probes.sh " + qp(d / "out") + " '" + commit + "'");
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(has(r.out, "COMMIT must be 1-64 characters of [A-Za-z0-9._+-]")) << r.out;
    EXPECT_FALSE(fs::exists(d / "out")) << commit;
    EXPECT_FALSE(fs::exists(d / "PWNED"));
  }
}

// --- 2. parsers that cannot be driven into a crash ------------------------------------------------

// A 40 KB quantity in a hardware file (std::regex recursed until the stack overflowed).
TEST(HostileParsers, LongQuantityInAHardwareFileIsAnErrorAtItsLine) {
  const fs::path d = fresh_dir();
  std::ifstream in(kRoot + "/hw/h200-2gpu.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), {}), out;
  // Replace the first quantity value with 40 KB of digits.
  const auto pos = text.find("value: ");
  ASSERT_NE(pos, std::string::npos);
  const auto end = text.find_first_of(",}\n", pos);
  text = text.substr(0, pos + 7) + "1" + std::string(40000, '0') + " GBps" + text.substr(end);
  // Beside the checkout's measured tables (named ../calibrate/data/... from hw/).
  fs::create_directories(d / "hw");
  fs::create_directory_symlink(kRoot + "/calibrate", d / "calibrate");
  std::ofstream(d / "hw" / "hw.yaml") << text;
  const Ran r = sh(kBin + " params " + qp(d / "hw" / "hw.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out.substr(0, 2000);
  EXPECT_TRUE(has(r.out, "hw.yaml:")) << r.out.substr(0, 2000);
  EXPECT_TRUE(has(r.out, "longer than the 256 bytes allowed")) << r.out.substr(0, 2000);
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(5));
  EXPECT_DOUBLE_EQ(hw::parse_quantity(hw::Quantity::Bandwidth, " 1.5e3 GBps "), 1.5e12);
  EXPECT_DOUBLE_EQ(hw::parse_quantity(hw::Quantity::Bandwidth, "2 GBps"), 2e9);
  EXPECT_THROW(hw::parse_quantity(hw::Quantity::Bandwidth, "1e GBps"), std::invalid_argument);
  EXPECT_THROW(hw::parse_quantity(hw::Quantity::Bandwidth, "1e999 GBps"), std::invalid_argument);
  EXPECT_THROW(hw::parse_quantity(hw::Quantity::Bandwidth, ". GBps"), std::invalid_argument);
}

// `{},` made yaml-cpp's LoadAllFromFile loop until memory ran out: a clean error at once.
TEST(HostileParsers, BraceCommaFileIsAnErrorNotAHang) {
  const fs::path d = fresh_dir();
  std::ofstream(d / "s.yaml") << "{},";
  for (const std::string cmd : {"run", "params"}) {
    const Ran r = sh("timeout 20 " + kBin + " " + cmd + " " + qp(d / "s.yaml"));
    EXPECT_EQ(r.rc, 1) << cmd << ": " << r.out;
    EXPECT_TRUE(has(r.out, "s.yaml")) << r.out;
    EXPECT_LT(r.seconds, fusesim::test::time_limit_s(5)) << cmd;
  }
  // A real second document is still refused at its `---`; an empty one is not.
  std::ofstream(d / "two.yaml") << "scenario: a\n---\nscenario: b\n";
  EXPECT_TRUE(has(error_of<hw::FileError>([&] { hw::reject_extra_documents((d / "two.yaml").string(), "scenario file"); }), "two.yaml:2:"));
  std::ofstream(d / "one.yaml") << "---\nscenario: a\n---\n# nothing\n";
  EXPECT_NO_THROW(hw::reject_extra_documents((d / "one.yaml").string(), "scenario file"));
}

// YAML nested thousands deep in flow style is refused before yaml-cpp's recursive parser sees it.
TEST(HostileParsers, DeeplyNestedYamlIsRefused) {
  const fs::path d = fresh_dir();
  std::ofstream(d / "deep.yaml") << "scenario: " << std::string(5000, '[') << std::string(5000, ']') << "\n";
  const Ran r = sh(kBin + " run " + qp(d / "deep.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "deep.yaml:1: YAML nested more than 64 levels")) << r.out;
}

// A "billion laughs" of YAML aliases in a 1 KB scenario (found by a user trial, 2026-12-02): the
// loader's walks visit an aliased node once per reference, 10^12 visits here (hours at 15 MB). The
// alias is refused at its line, in the scenario and in a hardware file alike.
TEST(HostileParsers, YamlAliasesAreRefusedAtTheirLine) {
  const fs::path d = fresh_dir();
  std::string bomb = "scenario: laughs\nnotes:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 12; ++i) {
    bomb += "  a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) bomb += (j ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  std::ofstream(d / "laughs.yaml") << bomb << "model: gemm_ar\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\ncases:\n  - {id: a, params: {m: 4096}}\n";
  Ran r = sh(kBin + " run " + qp(d / "laughs.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "laughs.yaml:4: a YAML alias")) << r.out;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(5));
  std::ofstream(d / "hw.yaml") << "gpu: &g x\nname: *g\n";
  std::ofstream(d / "s.yaml") << "scenario: s\nmodel: gemm_ar\nhardware: " << (d / "hw.yaml").string() << "\ncases:\n  - {id: a, params: {m: 4096}}\n";
  r = sh(kBin + " run " + qp(d / "s.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "hw.yaml:2: a YAML alias")) << r.out;
}

// A 40 KB header in an AFD JSON-lines file, JSON nested 5000 deep, a number too long for stoi and a
// token count of 1e300: each an error naming the file, line and (where one) the key.
TEST(HostileParsers, AfdLinesBombsAreErrorsNamingFileAndLine) {
  const fs::path d = fresh_dir();
  auto parse = [&](const std::string& name, const std::string& text) {
    std::ofstream(d / name) << text;
    return error_of<hw::FileError>([&] { calibrate::parse_measurement_file((d / name).string()); });
  };
  std::string e = parse("h.jsonl", "#### 4F:8A " + std::string(40000, ' ') + "x\n{\"tokens\": 1, \"afd\": [83.1, 0, 0]}\n");
  EXPECT_TRUE(has(e, "h.jsonl:1:") && has(e, "longer than the 1024 bytes allowed")) << e;
  e = parse("n.jsonl", "#### 4F:8A num-sms 8\n{\"tokens\": " + std::string(5000, '[') + std::string(5000, ']') + "}\n");
  EXPECT_TRUE(has(e, "n.jsonl:2:") && has(e, "nested more than 64 levels")) << e;
  e = parse("i.jsonl", "#### 4F:8A num-sms 99999999999999999999\n{\"tokens\": 1, \"afd\": [83.1, 0, 0]}\n");
  EXPECT_TRUE(has(e, "i.jsonl:1: 'num-sms': expected a whole number from 0 to 1073741824")) << e;
  e = parse("t.jsonl", "#### 4F:8A num-sms 8\n{\"tokens\": 1e300, \"afd\": [83.1, 0, 0]}\n");
  EXPECT_TRUE(has(e, "t.jsonl:2: 'tokens': expected a whole number from 1 to")) << e;
}

// A seed-004-style document nested thousands deep (1.6 GB and a stack overflow before).
TEST(HostileParsers, DeepSeedDocumentIsRefused) {
  const std::string text = "{\"setup\": \"x\", \"a\": " + std::string(5000, '[') + std::string(5000, ']') + "}";
  const std::string e = error_of<hw::FileError>([&] { calibrate::parse_afd_document(text, "seed.json"); });
  EXPECT_TRUE(has(e, "seed.json") && has(e, "nested more than 64 levels")) << e;
  const std::string e2 = error_of<hw::FileError>([&] { calibrate::parse_afd_document("{\"setup\": \"" + std::string(5000, 'x') + "\"}", "s.json"); });
  EXPECT_TRUE(has(e2, "s.json:1: 'setup': 5000 bytes")) << e2;
}

// The one number helper: errors name file, line and key; no cast out of range.
TEST(HostileParsers, NumberHelperNamesFileLineAndKey) {
  const hw::NumberAt at{"f.json", 7, "m"};
  EXPECT_EQ(hw::parse_int(" 42 ", at), 42);
  EXPECT_EQ(hw::parse_int("-9223372036854775808", at), INT64_MIN);
  EXPECT_TRUE(has(error_of<hw::FileError>([&] { hw::parse_int("9223372036854775808", at); }), "f.json:7: 'm': expected a whole number, got '9223372036854775808' (out of range)"));
  EXPECT_TRUE(has(error_of<hw::FileError>([&] { hw::parse_int("12x", at, 0, 10); }), "expected a whole number from 0 to 10, got '12x'"));
  EXPECT_TRUE(has(error_of<hw::FileError>([&] { hw::parse_int(std::string(40000, '1'), at); }), "(40000 bytes)"));
  EXPECT_TRUE(has(error_of<hw::FileError>([&] { hw::to_int(1e300, at); }), "f.json:7: 'm': expected a whole number, got 1.0000000000000001e+300"));
  EXPECT_TRUE(has(error_of<hw::FileError>([&] { hw::to_int(9223372036854775808.0, at); }), "expected a whole number"));
  EXPECT_EQ(hw::to_int(-9223372036854775808.0, at), INT64_MIN);
  EXPECT_THROW(hw::to_int(1.5, at), hw::FileError);
  EXPECT_DOUBLE_EQ(hw::parse_double("2.5e3", at), 2500);
  EXPECT_THROW(hw::parse_double("1e999", at), hw::FileError);
  EXPECT_THROW(hw::parse_double("nan", at), hw::FileError);
}

// Invalid UTF-8 in a scenario's text: `run --format json` writes it replaced, not the JSON library's error.
TEST(HostileParsers, InvalidUtf8InAScenarioStillGivesJson) {
  const fs::path d = fresh_dir();
  std::ofstream(d / "u.yaml") << "scenario: u\xff\xfe\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                              << "  - id: \"a\xc3\"\n    params: {mode: gemm-only, m: 4096, n: 7168, k: 2048}\n";
  const Ran r = sh(kBin + " run " + qp(d / "u.yaml") + " --format json");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "\"scenario\": \"u\xef\xbf\xbd\xef\xbf\xbd\"")) << r.out.substr(0, 400);
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out.substr(0, 400);
  const Ran csv = sh(kBin + " run " + qp(d / "u.yaml") + " --format csv");
  EXPECT_EQ(csv.rc, 0) << csv.out;
}

// --- 5. bounded work ------------------------------------------------------------------------------

TEST(BoundedWork, AHugeSweepIsRefusedWithItsCountBeforeExpanding) {
  const fs::path d = fresh_dir();
  std::string list = "[";
  for (int i = 1; i <= 1000; ++i) list += (i > 1 ? "," : "") + std::to_string(i * 16);
  list += "]";
  std::ofstream(d / "big.yaml") << "scenario: big\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                                << "  - id: a\n    params: {mode: gemm-only, k: 2048}\n    sweep: {m: " << list << ", n: " << list
                                << ", chunks: [1, 2]}\n";
  const Ran r = sh(kBin + " run " + qp(d / "big.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "big.yaml:7: 'cases[a].sweep': the cases and sweeps expand to 2000000 cases, more than the limit of 1000000")) << r.out;
  EXPECT_TRUE(has(r.out, "--max-cases")) << r.out;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(10));
  // The limit is the user's: a small one refuses a real scenario, counted the same way.
  const Ran s = sh(kBin + " check scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml --max-cases 5");
  EXPECT_EQ(s.rc, 1) << s.out;
  EXPECT_TRUE(has(s.out, "more than the limit of 5")) << s.out;
  // sweep takes the same limit (its error pointed to --max-cases, which it did not accept).
  const Ran w = sh(kBin + " sweep scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml --out " + qp(d / "w.jsonl") + " --max-cases 5");
  EXPECT_EQ(w.rc, 1) << w.out;
  EXPECT_TRUE(has(w.out, "more than the limit of 5")) << w.out;
  EXPECT_FALSE(fs::exists(d / "w.jsonl"));
}

// A scenario that is a device or FIFO (read forever), or a file over 64 MiB, is refused before
// yaml-cpp reads it (/dev/zero had grown to 6 GB in 8 s).
TEST(BoundedWork, ADeviceOrAnOversizedFileIsRefusedBeforeReading) {
  const Ran r = sh(kBin + " run /dev/zero");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "/dev/zero: is not a regular file")) << r.out;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(5));
  const fs::path d = fresh_dir();
  {
    std::ofstream big(d / "big.yaml");
    const std::string line(1 << 20, '#');
    for (int i = 0; i < 65; ++i) big << line << "\n";
  }
  const Ran b = sh(kBin + " run " + qp(d / "big.yaml"));
  EXPECT_EQ(b.rc, 1) << b.out;
  EXPECT_TRUE(has(b.out, "more than the 64 MiB a scenario file may hold")) << b.out;
}

TEST(BoundedWork, AnEventBudgetEndsACaseWithAClearError) {
  const Ran r = sh(kBin + " run scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml --only headline/fused-sdma/m=16384 --max-events 50");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "mi355x-dsv4-pro-wo_b-tp8.yaml:")) << r.out;
  EXPECT_TRUE(has(r.out, "'cases[headline/fused-sdma/m=16384]': cannot run this case: simulation stopped: event budget of 50 callbacks spent")) << r.out;
}

// From the fresh-user trial of 2026-12-02 (issue 22's "still lacking" list): numbers at the edge of
// int64 bounded where they are read (a scenario M of 2^63 - 1 had reached the flow network as
// negative bytes; `breakeven --max-m` of it never ended; `tune --m 1:99999999999` tuned 30 M before
// refusing the 31st), each refused within a second naming the key or option and the bound.
TEST(BoundedWork, DimensionsNearInt64AreRefusedAtOnce) {
  const fs::path d = fresh_dir();
  std::ofstream(d / "m.yaml") << "scenario: m\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                              << "  - id: huge\n    params: {mode: fused-sdma, m: 9223372036854775807, n: 7168, k: 2048}\n";
  Ran r = sh(kBin + " run " + qp(d / "m.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "m.yaml:6")) << r.out;
  EXPECT_TRUE(has(r.out, "a whole number from 1 to 2^31")) << r.out;
  EXPECT_FALSE(has(r.out, "bytes < 0")) << r.out;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(2));
  r = sh(kBin + " breakeven -n 7168 --max-m 9223372036854775807");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "--max-m")) << r.out;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(2));
  r = sh(kBin + " tune --shape n=7168,k=2048,world_size=8 --m 1:99999999999");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--m: expected")) << r.out;
  EXPECT_TRUE(has(r.out, "from 1 to 2^18 = 262144, got '1:99999999999'")) << r.out;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(2));
}

// Measured values and tolerances outside what a GPU event can be: 1e-300 us made every error
// percentage overflow to inf, a tolerance of 1e308% made every check pass; both are refused at their
// line. A model name nothing registers is named at the `model:` line, not line 1; a hardware path that
// is a device is named as not a regular file (it was "no hardware file").
TEST(HostileParsers, ImpossibleMeasuredValuesAndModelsAreNamedAtTheirLine) {
  const fs::path d = fresh_dir();
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n";
  const std::string one_case = "  - id: a\n    params: {mode: gemm-only, m: 4096, n: 7168, k: 2048}\n";
  std::ofstream(d / "tiny.yaml") << head << "cases:\n" << one_case << "    measured: {value_us: 1e-300, source: t}\n";
  Ran r = sh(kBin + " check " + qp(d / "tiny.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "tiny.yaml:7")) << r.out;
  EXPECT_TRUE(has(r.out, "a measured time must be from 0.001 to 1e+10 us, got 1e-300")) << r.out;
  std::ofstream(d / "tol.yaml") << head << "tolerance_pct: 1e308\ncases:\n" << one_case << "    measured: {value_us: 100, source: t}\n";
  r = sh(kBin + " check " + qp(d / "tol.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "tol.yaml:4")) << r.out;
  EXPECT_TRUE(has(r.out, "'tolerance_pct': must be > 0 and at most 100 (a percentage), got 1e+308")) << r.out;
  std::ofstream(d / "model.yaml") << "scenario: s\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\n\nmodel: \"gemm_ar\\e[2J\"\ncases:\n" << one_case;
  r = sh(kBin + " run " + qp(d / "model.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(no_controls(r.out)) << r.out;
  EXPECT_TRUE(has(r.out, "model.yaml:4")) << r.out;
  EXPECT_TRUE(has(r.out, "unknown model 'gemm_ar\\x1b[2J' (expected one of: ")) << r.out;
  std::ofstream(d / "dev.yaml") << "scenario: s\nhardware: /dev/zero\nmodel: gemm_ar\ncases:\n" << one_case;
  r = sh(kBin + " run " + qp(d / "dev.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "dev.yaml:2")) << r.out;
  EXPECT_TRUE(has(r.out, "is not a regular file")) << r.out;
  EXPECT_LT(r.seconds, fusesim::test::time_limit_s(2));
}

// `run --format csv` escapes control characters in ids as the table does (a CSV printed to a
// terminal had passed ESC, BEL and a newline through raw).
TEST(Terminal, CsvEscapesControlCharactersInIds) {
  const fs::path d = fresh_dir();
  std::ofstream(d / "esc.yaml") << "scenario: \"s\\e[31m\"\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                                << "  - id: \"a\\e[2J\\a\\nforged,line\"\n    params: {mode: gemm-only, m: 4096, n: 7168, k: 2048}\n";
  const Ran r = sh(kBin + " run " + qp(d / "esc.yaml") + " --format csv");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(no_controls(r.out)) << r.out;
  EXPECT_TRUE(has(r.out, "\"a\\x1b[2J\\x07\\nforged,line\"")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // the header and one row
}

// --- 6. interruption leaves nothing ---------------------------------------------------------------

namespace {
/// Start `argv` (from the source folder, output to /dev/null); returns its pid.
pid_t start(const std::vector<std::string>& args) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> a = args;
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const std::string cwd = fs::current_path().string();
  fs::current_path(kRoot);
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  fs::current_path(cwd);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

/// Kill `pid` with `sig` once `ready()` holds (or after `max_s`), and reap it; returns its status.
template <class Ready>
int kill_when(pid_t pid, int sig, Ready&& ready, double max_s) {
  const auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < max_s && !ready()) {
    if (::waitpid(pid, &st, WNOHANG) == pid) return st;  // ended by itself
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, sig);
  ::waitpid(pid, &st, 0);
  return st;
}

bool any_hidden_temp(const fs::path& d) {
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().filename().string().rfind('.', 0) == 0) return true;
  return false;
}
}  // namespace

// A run writing a large trace, killed (SIGTERM, SIGINT) while its temporary exists, leaves no
// temporary and no partial output; the signal still ends it (status: killed by that signal).
TEST(Interruption, AKilledRunLeavesNoTemporary) {
  const fs::path d = fresh_dir();
  int killed_while_writing = 0;
  for (int sig : {SIGTERM, SIGINT}) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const pid_t pid = start({kBin, "run", "scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml", "--only", "headline", "--trace",
                               (d / "t.json").string(), "--out", (d / "o.txt").string()});
      ASSERT_GT(pid, 0);
      const int st = kill_when(pid, sig, [&] { return any_hidden_temp(d); }, 60);
      const bool had_temp = WIFSIGNALED(st);
      if (had_temp) {
        ++killed_while_writing;
        EXPECT_EQ(WTERMSIG(st), sig);
      }
      EXPECT_FALSE(any_hidden_temp(d)) << "a temporary was left behind";
      // Outputs are all or nothing: the trace and the table appear together or not at all.
      EXPECT_EQ(fs::exists(d / "t.json"), fs::exists(d / "o.txt"));
      fs::remove(d / "t.json");
      fs::remove(d / "o.txt");
    }
  }
  EXPECT_GT(killed_while_writing, 0) << "no run was killed while its temporary existed: the test did not test";
}

// check --plot killed while gnuplot draws: no temporary, no 0-byte or partial image under a final name.
TEST(Interruption, AKilledPlotLeavesNoPartialImage) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "gnuplot not installed";
  const fs::path d = fresh_dir();
  int killed = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    fs::remove_all(d / "p");
    const pid_t pid = start({kBin, "check", "scenarios/h200x4-afd-timelines.yaml", "--plot", (d / "p").string()});
    ASSERT_GT(pid, 0);
    const int st = kill_when(pid, SIGTERM, [&] { return fs::exists(d / "p") && any_hidden_temp(d / "p"); }, 60);
    killed += WIFSIGNALED(st);
    if (!fs::exists(d / "p")) continue;
    EXPECT_FALSE(any_hidden_temp(d / "p"));
    for (const auto& e : fs::directory_iterator(d / "p")) {
      const auto ext = e.path().extension();
      if (ext == ".png" || ext == ".svg") {
        EXPECT_GT(fs::file_size(e.path()), 0u) << e.path();
      }
    }
  }
  EXPECT_GT(killed, 0) << "no run was killed while gnuplot drew: the test did not test";
}

// --- 7. CI outputs --------------------------------------------------------------------------------

// One test case per measured point; failures carry predicted, measured, error and tolerance; the file
// validates against the JUnit schema (tests/cli/junit.xsd).
TEST(CiOutputs, JunitValidatesAndNamesTheFailure) {
  if (std::system("command -v xmllint >/dev/null 2>&1") != 0) GTEST_SKIP() << "xmllint not installed (Debian package libxml2-utils)";
  const fs::path d = fresh_dir();
  std::ofstream(d / "miss.yaml") << "scenario: \"miss <&>\"\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                                 << "  - id: \"a\xff\"\n    params: {mode: gemm-only, m: 16384, n: 7168, k: 2048}\n"
                                 << "    measured: {value_us: 100, source: test}\n"
                                 // U+FFFE (a non-character XML refuses; found by the second trial of 2026-12-06)
                                 << "  - id: \"b\xef\xbf\xbe\"\n    params: {mode: gemm-only, m: 16384, n: 7168, k: 2048}\n";
  const Ran r = sh(kBin + " check scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml " + qp(d / "miss.yaml") + " " + qp(d / "nope.yaml") +
                   " --junit " + qp(d / "j.xml"));
  EXPECT_EQ(r.rc, 1) << r.out;  // the missing file is bad input
  const Ran v = sh("xmllint --noout --schema tests/cli/junit.xsd " + qp(d / "j.xml"));
  EXPECT_EQ(v.rc, 0) << v.out;
  const std::string x = read_file((d / "j.xml").string());
  EXPECT_TRUE(has(x, "<testsuite name=\"scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml\" tests=\"36\" failures=\"0\"")) << x.substr(0, 600);
  EXPECT_TRUE(has(x, "classname=\"miss &lt;&amp;&gt;\" name=\"a\xef\xbf\xbd\"")) << x;
  EXPECT_FALSE(has(x, "\xef\xbf\xbe")) << x;
  EXPECT_TRUE(has(x, "<failure message=\"predicted ")) << x;
  EXPECT_TRUE(has(x, "measured 100.000 us, error ")) << x;
  EXPECT_TRUE(has(x, "tolerance 10.0%\" type=\"outside tolerance\">")) << x;
  EXPECT_TRUE(has(x, "<error message=\"")) << x;
  // A broken file is caught by the schema check (the test can fail).
  std::ofstream(d / "bad.xml") << "<testsuites><testsuite name=\"x\" tests=\"1\"><testcase/></testsuite></testsuites>\n";
  EXPECT_NE(sh("xmllint --noout --schema tests/cli/junit.xsd " + qp(d / "bad.xml")).rc, 0);
}

// --baseline flags a prediction that moved by more than the threshold (exit 2), and passes an
// unchanged one.
TEST(CiOutputs, BaselineFlagsAChangedPrediction) {
  const fs::path d = fresh_dir();
  const std::string sc = "scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml";
  Ran r = sh(kBin + " check " + sc + " --save-predictions " + qp(d / "base.json"));
  ASSERT_EQ(r.rc, 0) << r.out;
  r = sh(kBin + " check " + sc + " --baseline " + qp(d / "base.json"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "predictions compared, 0 moved by more than 1%")) << r.out;
  // Move one stored prediction by 5%: flagged with its id at a 1% threshold, not at 10%.
  auto j = nlohmann::json::parse(read_file((d / "base.json").string()));
  auto& c = j["runs"][0]["cases"][1];
  const std::string id = c["id"];
  c["predicted_us"] = c["predicted_us"].get<double>() / 1.05;
  std::ofstream(d / "moved.json") << j.dump();
  r = sh(kBin + " check " + sc + " --baseline " + qp(d / "moved.json"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(has(r.out, "MOVED mi355x-dsv4-pro-wo_b-tp8 " + id + ": predicted ")) << r.out;
  EXPECT_TRUE(has(r.out, "(+5.000%, threshold 1%)")) << r.out;
  EXPECT_TRUE(has(r.out, "1 predictions moved by more than 1%")) << r.out;
  r = sh(kBin + " check " + sc + " --baseline " + qp(d / "moved.json") + " --threshold-pct 10");
  EXPECT_EQ(r.rc, 0) << r.out;
  // `run --format json` output is a baseline too.
  ASSERT_EQ(sh(kBin + " run " + sc + " --format json --out " + qp(d / "run.json")).rc, 0);
  r = sh(kBin + " check " + sc + " --baseline " + qp(d / "run.json"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, " predictions compared, 0 moved")) << r.out;
  std::ofstream(d / "junk.json") << "[1, 2]";
  r = sh(kBin + " check " + sc + " --baseline " + qp(d / "junk.json"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "junk.json: run 0 has no scenario name")) << r.out;
}

// --junit carries --baseline's judgement: a test case per compared prediction, the moved one a
// failure with old, new, change and threshold; the file validates against the JUnit schema.
TEST(CiOutputs, JunitCarriesTheMovedPredictions) {
  if (std::system("command -v xmllint >/dev/null 2>&1") != 0) GTEST_SKIP() << "xmllint not installed (Debian package libxml2-utils)";
  const fs::path d = fresh_dir();
  const std::string sc = "scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml";
  ASSERT_EQ(sh(kBin + " check " + sc + " --save-predictions " + qp(d / "base.json")).rc, 0);
  auto j = nlohmann::json::parse(read_file((d / "base.json").string()));
  auto& c = j["runs"][0]["cases"][2];
  const std::string id = c["id"];
  const double now = c["predicted_us"].get<double>();
  c["predicted_us"] = now / 1.05;  // stored 5% lower: the prediction moved +5%
  const size_t n = j["runs"][0]["cases"].size();  // every case, measured or not
  j["runs"][0]["cases"].erase(j["runs"][0]["cases"].begin());  // one case the baseline lacks
  std::ofstream(d / "moved.json") << j.dump();
  const Ran r = sh(kBin + " check " + sc + " --baseline " + qp(d / "moved.json") + " --junit " + qp(d / "j.xml"));
  EXPECT_EQ(r.rc, 2) << r.out;
  const Ran v = sh("xmllint --noout --schema tests/cli/junit.xsd " + qp(d / "j.xml"));
  EXPECT_EQ(v.rc, 0) << v.out;
  const std::string x = read_file((d / "j.xml").string());
  // 36 measured points, then n - 1 compared predictions (1 moved) and 1 not in the baseline.
  EXPECT_TRUE(has(x, fmt::format("<testsuites name=\"fusesim check\" tests=\"{}\" failures=\"1\" errors=\"0\" skipped=\"1\"", 36 + n)))
      << x.substr(0, 400);
  EXPECT_TRUE(has(x, fmt::format("<testsuite name=\"baseline {}\" tests=\"{}\" failures=\"1\" errors=\"0\" skipped=\"1\"",
                                 (d / "moved.json").string(), n)))
      << x;
  const std::string tc = "<testcase classname=\"mi355x-dsv4-pro-wo_b-tp8\" name=\"" + id + " (prediction)\" time=\"0\">\n      <failure message=\"predicted ";
  ASSERT_TRUE(has(x, tc)) << x;
  const std::string f = x.substr(x.find(tc), 600);
  EXPECT_TRUE(has(f, "(+5.000%, threshold 1%)\" type=\"prediction moved\">")) << f;
  EXPECT_TRUE(has(f, fmt::format("old_us={:.6g}\nnew_us={:.6g}\nchange_pct=+5.0000\nthreshold_pct=1\n", now / 1.05, now))) << f;
  EXPECT_TRUE(has(x, "<skipped message=\"not in the baseline ")) << x;
  // Without --baseline the report has no baseline suite (the test can tell them apart).
  ASSERT_EQ(sh(kBin + " check " + sc + " --junit " + qp(d / "plain.xml")).rc, 0);
  EXPECT_FALSE(has(read_file((d / "plain.xml").string()), "prediction moved"));
}

// A --baseline nested thousands deep is refused before the parser sees it, naming the file and the limit.
TEST(CiOutputs, DeepBaselineIsRefused) {
  const fs::path d = fresh_dir();
  std::ofstream(d / "deep.json") << "{\"runs\": " << std::string(5000, '[') << std::string(5000, ']') << "}\n";
  const Ran r = sh(kBin + " check scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml --baseline " + qp(d / "deep.json"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "deep.json:1: '--baseline': JSON nested more than 64 levels deep")) << r.out;
  EXPECT_LT(r.seconds, time_limit_s(5)) << r.out;
}

// --- 8. Terminal control characters -----------------------------------------------------------

// The escaping itself: ESC, CR, BEL, DEL, a C1 control and a broken UTF-8 byte become visible
// escapes; printable UTF-8 is kept.
TEST(Terminal, PrintableEscapesControls) {
  EXPECT_EQ(hw::printable("a\x1b[2Jb\rc\x07\x7f"), "a\\x1b[2Jb\\rc\\x07\\x7f");
  EXPECT_EQ(hw::printable("x\xc2\x9b" "31m"), "x\\xc2\\x9b31m");  // C1 CSI
  EXPECT_EQ(hw::printable("\xff\xe2\x82"), "\\xff\\xe2\\x82");
  EXPECT_EQ(hw::printable("M\xc2\xb5s \xe2\x80\x94 ok"), "M\xc2\xb5s \xe2\x80\x94 ok");  // µ and an em dash kept
  EXPECT_EQ(hw::printable("l1\nl2\t."), "l1\\nl2\\t.");
  EXPECT_EQ(hw::printable("l1\nl2\r.", true), "l1\nl2\\r.");
}

// Case ids and scenario names with ESC sequences (clear screen, retitle the window) and a carriage
// return reach the terminal escaped: run's table, check's lines and an error naming the case.
TEST(Terminal, ControlCharactersInIdsAreEscaped) {
  const fs::path d = fresh_dir();
  // YAML double-quoted escapes: \e is ESC, \r a carriage return, \a BEL.
  const std::string evil = R"(a\e[2J\e]0;pwned\a\rok)";
  std::ofstream(d / "esc.yaml") << "scenario: \"s\\e[31m\"\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                                << "  - id: \"" << evil << "\"\n    params: {mode: gemm-only, m: 16384, n: 7168, k: 2048}\n"
                                << "    measured: {value_us: 100, source: test}\n";
  Ran r = sh(kBin + " run " + qp(d / "esc.yaml"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(no_controls(r.out)) << r.out;
  EXPECT_TRUE(has(r.out, "scenario s\\x1b[31m ")) << r.out;
  EXPECT_TRUE(has(r.out, "a\\x1b[2J\\x1b]0;pwned\\x07\\rok ")) << r.out;
  r = sh(kBin + " check " + qp(d / "esc.yaml"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(no_controls(r.out)) << r.out;
  EXPECT_TRUE(has(r.out, "FAIL " + (d / "esc.yaml").string() + " a\\x1b[2J\\x1b]0;pwned\\x07\\rok: predicted ")) << r.out;
  // The JSON keeps the id exactly (escaped by JSON's own rules).
  r = sh(kBin + " run " + qp(d / "esc.yaml") + " --format json");
  EXPECT_TRUE(has(r.out, R"("id": "a\u001b[2J\u001b]0;pwned\u0007\rok")")) << r.out;
  // An error naming the case: an unknown parameter.
  std::ofstream(d / "bad.yaml") << "scenario: s\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                                << "  - id: \"" << evil << "\"\n    params: {mode: gemm-only, m: 16384, n: 7168, k: 2048, \"frob\\e[8m\": 1}\n";
  r = sh(kBin + " run " + qp(d / "bad.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(no_controls(r.out)) << r.out;
  EXPECT_TRUE(has(r.out, "a\\x1b[2J\\x1b]0;pwned\\x07\\rok")) << r.out;
}

// A hardware file's measured table (JSON lines) with a line nested thousands deep: refused by the
// bounded parse, naming the table file, its line and the table's key.
TEST(HostileParsers, DeepHardwareTableLineIsRefused) {
  const fs::path d = fresh_dir();
  std::string hw = read_file(kRoot + "/hw/h200-2gpu.yaml");
  const std::string from = "file: ../calibrate/data/h200x2/gemm.jsonl";
  ASSERT_TRUE(has(hw, from));
  hw.replace(hw.find(from), from.size(), "file: deep.jsonl");
  std::ofstream(d / "hw.yaml") << hw;
  std::ofstream(d / "deep.jsonl") << "{\"m\": 1}\n{\"m\": " << std::string(5000, '[') << std::string(5000, ']') << "}\n";
  const Ran r = sh(kBin + " params " + qp(d / "hw.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "deep.jsonl:2: 'tables.gemm': JSON nested more than 64 levels deep")) << r.out;
  EXPECT_LT(r.seconds, time_limit_s(5)) << r.out;
}

// The trace commands' tables and errors: a trace whose file name carries ESC sequences and a
// carriage return is named escaped (the table's header, and the error of a broken one).
TEST(Terminal, TraceTablesAndErrorsEscapeNames) {
  if (!has(sh(kBin + " --help").out, "trace")) GTEST_SKIP() << "built without the trace module (FUSESIM_TRACE)";
  const fs::path d = fresh_dir();
  const std::string name = "t\x1b[2J\x1b]0;pwned\x07\rx.json";
  fs::copy_file(kRoot + "/calibrate/trace/examples/tiny_prefill_synthetic.json", d / name);
  Ran r = sh(kBin + " trace analyze " + qp(d / name));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(no_controls(r.out)) << r.out;
  EXPECT_TRUE(has(r.out, "t\\x1b[2J\\x1b]0;pwned\\x07\\rx.json: 1 rank(s)")) << r.out;
  std::ofstream(d / ("bad" + name)) << "{\"traceEvents\": [";
  r = sh(kBin + " trace analyze " + qp(d / ("bad" + name)));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(no_controls(r.out)) << r.out;
  EXPECT_TRUE(has(r.out, "badt\\x1b[2J")) << r.out;
}

// --- issue 22, round 7: every input file bounded, before it is opened --------------------------
// A fresh-user trial (2026-12-06) found inputs read without the scenario file's bounds: a table,
// --measurements, --rules/--categories and --baseline that were /dev/zero grew to GBs, a FIFO hung,
// a directory gave an unrelated error. Every command now goes through hw::read_input_file (or, for
// traces, hw::check_input_file): refused by stat before open(), so no case here can hang (each
// command also runs under `timeout`, whose 124 would fail the rc check).

namespace {

/// The four kinds of bad input path for one test: a device, a FIFO, a directory, a (sparse) file
/// of `big_bytes`. Returns (label, path).
std::vector<std::pair<std::string, std::string>> bad_inputs(const fs::path& d, const std::string& ext, std::uintmax_t big_bytes) {
  fs::create_directories(d / ("dir" + ext));
  const std::string fifo = (d / ("fifo" + ext)).string();
  ::unlink(fifo.c_str());
  EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string big = (d / ("big" + ext)).string();
  { std::ofstream(big) << ""; }
  fs::resize_file(big, big_bytes);  // sparse: stat sees the size, nothing is written
  return {{"device", "/dev/zero"}, {"fifo", fifo}, {"directory", (d / ("dir" + ext)).string()}, {"oversized", big}};
}

/// What each kind's error must say.
std::string bad_input_words(const std::string& label) {
  if (label == "directory") return "directory";  // "is a directory, expected ..." (CLI11's own check: "is actually a directory")
  if (label == "oversized") return "MiB";
  return "is not a regular file (a device, FIFO or socket), expected";
}

/// `timeout 20 CMD`: a hang is rc 124, never a stuck test.
Ran sh_bounded(const std::string& cmd) { return sh("timeout 20 " + cmd); }

}  // namespace

TEST(BoundedInputs, AMeasuredTableThatIsADeviceFifoDirectoryOrHugeIsRefused) {
  const fs::path d = fresh_dir();
  for (const auto& [label, path] : bad_inputs(d, ".jsonl", (std::uintmax_t(64) << 20) + 1)) {
    std::string hw = read_file(kRoot + "/hw/h200-2gpu.yaml");
    const std::string from = "file: ../calibrate/data/h200x2/gemm.jsonl";
    ASSERT_TRUE(has(hw, from));
    hw.replace(hw.find(from), from.size(), "file: " + path);
    std::ofstream(d / "hw.yaml") << hw;
    const Ran r = sh_bounded(kBin + " params " + qp(d / "hw.yaml"));
    EXPECT_EQ(r.rc, 1) << label << ": " << r.out;
    EXPECT_TRUE(has(r.out, "hw.yaml:") && has(r.out, "'tables.gemm'") && has(r.out, path) && has(r.out, bad_input_words(label)) &&
                has(r.out, "measured table"))
        << label << ": " << r.out;
    if (label == "oversized") {
      EXPECT_TRUE(has(r.out, "more than the 64 MiB")) << r.out;
    }
  }
}

TEST(BoundedInputs, AMeasurementFileThatIsADeviceFifoDirectoryOrHugeIsRefused) {
  const fs::path d = fresh_dir();
  for (const auto& [label, path] : bad_inputs(d, ".jsonl", (std::uintmax_t(64) << 20) + 1)) {
    const Ran r = sh_bounded(kBin + " calibrate fit --hw hw/h200-4gpu-nvlink.yaml --free none --measurements " + qp(path));
    EXPECT_EQ(r.rc, 1) << label << ": " << r.out;
    EXPECT_TRUE(has(r.out, path) && has(r.out, bad_input_words(label)) && has(r.out, "--measurements")) << label << ": " << r.out;
    EXPECT_FALSE(has(r.out, "bad_alloc")) << r.out;
  }
}

TEST(BoundedInputs, ABaselineThatIsADeviceFifoDirectoryOrHugeIsRefused) {
  const fs::path d = fresh_dir();
  for (const auto& [label, path] : bad_inputs(d, ".json", (std::uintmax_t(64) << 20) + 1)) {
    const Ran r = sh_bounded(kBin + " check scenarios/h200x4-afd-3a1f-role-path.yaml --baseline " + qp(path));
    EXPECT_EQ(r.rc, 1) << label << ": " << r.out;
    EXPECT_TRUE(has(r.out, path) && has(r.out, bad_input_words(label)) && has(r.out, "--baseline")) << label << ": " << r.out;
  }
}

TEST(BoundedInputs, TraceRulesAndTracesThatAreDevicesFifosOrDirectoriesAreRefused) {
  if (!has(sh(kBin + " --help").out, "trace")) GTEST_SKIP() << "built without the trace module (FUSESIM_TRACE)";
  const fs::path d = fresh_dir();
  const std::string trace = kRoot + "/calibrate/trace/examples/tiny_prefill_synthetic.json";
  for (const char* opt : {"--rules", "--categories"}) {
    for (const auto& [label, path] : bad_inputs(d, ".yaml", (std::uintmax_t(4) << 20) + 1)) {
      const Ran r = sh_bounded(kBin + " trace analyze " + qp(trace) + " " + opt + " " + qp(path));
      EXPECT_EQ(r.rc, 1) << opt << " " << label << ": " << r.out;
      EXPECT_TRUE(has(r.out, path) && has(r.out, bad_input_words(label))) << opt << " " << label << ": " << r.out;
    }
  }
  // The trace itself: a FIFO hung, a device was read to the token limit.
  for (const auto& [label, path] : bad_inputs(d, ".json", 1)) {
    if (label == "directory" || label == "oversized") continue;  // a folder of traces; 1 byte is no bound to test
    const Ran r = sh_bounded(kBin + " trace analyze " + qp(path));
    EXPECT_EQ(r.rc, 1) << label << ": " << r.out;
    EXPECT_TRUE(has(r.out, path) && has(r.out, "is not a regular file")) << label << ": " << r.out;
  }
  // A folder of traces holding a symbolic-link loop named like a trace: named, not a raw filesystem error.
  fs::create_directories(d / "ranks");
  fs::copy_file(trace, d / "ranks" / "rank0.json");
  fs::create_symlink("loop1.json", d / "ranks" / "loop0.json");
  fs::create_symlink("loop0.json", d / "ranks" / "loop1.json");
  const Ran r = sh_bounded(kBin + " trace analyze " + qp(d / "ranks"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "loop0.json") && has(r.out, "a loop of symbolic links, expected a Kineto / Chrome trace file")) << r.out;
  EXPECT_FALSE(has(r.out, "filesystem error")) << r.out;
}

// sweep --out: a FIFO hung at open(); /dev/null was accepted while run --out /dev/null was refused.
// Both are refused now, as for every output (hw::check_output_files): an output is a file name in a
// writable folder, and a sweep's --out is also what --resume reads back, cuts and appends to.
TEST(BoundedInputs, SweepOutThatIsAFifoOrDeviceIsRefusedAsRunDoes) {
  const fs::path d = fresh_dir();
  const std::string fifo = (d / "out.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& out : {fifo, std::string("/dev/null")}) {
    for (const char* resume : {"", " --resume"}) {
      const Ran s = sh_bounded(kBin + " sweep scenarios/h200x4-afd-3a1f-role-path.yaml --no-progress --out " + qp(out) + resume);
      EXPECT_EQ(s.rc, 1) << out << resume << ": " << s.out;
      EXPECT_TRUE(has(s.out, "--out") && has(s.out, "not a regular file")) << s.out;
    }
    const Ran r = sh_bounded(kBin + " run scenarios/h200x4-afd-3a1f-role-path.yaml --out " + qp(out));
    EXPECT_EQ(r.rc, 1) << out << ": " << r.out;
    EXPECT_TRUE(has(r.out, "--out") && has(r.out, "not a regular file")) << r.out;
  }
}

TEST(BoundedInputs, ReadInputFileRefusesBeforeOpening) {
  const fs::path d = fresh_dir();
  for (const auto& [label, path] : bad_inputs(d, ".txt", 2000)) {
    const std::string e = error_of<hw::FileError>([&, p = path] { hw::read_input_file(p, "test file", 1000, "--opt"); });
    EXPECT_TRUE(has(e, path) && has(e, bad_input_words(label)) && has(e, "a test file (--opt)")) << label << ": " << e;
  }
  std::ofstream(d / "ok.txt") << "hello\n";
  EXPECT_EQ(hw::read_input_file((d / "ok.txt").string(), "test file", 1000), "hello\n");
  EXPECT_TRUE(has(error_of<hw::FileError>([&] { hw::read_input_file((d / "none.txt").string(), "test file", 1000); }), "does not exist"));
  fs::create_symlink("l2", d / "l1");
  fs::create_symlink("l1", d / "l2");
  EXPECT_TRUE(has(error_of<hw::FileError>([&] { hw::read_input_file((d / "l1").string(), "test file", 1000); }), "a loop of symbolic links"));
}

// --- issue 22, round 7: a number out of the range of a double ("1e400") in any JSON input ----------
// nlohmann's out_of_range 406 escaped as "[json.exception.out_of_range.406] number overflow parsing
// '1e400'" with no file or line; each format now names both and what was expected.
TEST(HostileParsers, JsonNumberOverflowNamesFileAndLineInEveryFormat) {
  const fs::path d = fresh_dir();
  auto parse = [&](const std::string& name, const std::string& text) {
    std::ofstream(d / name) << text;
    return error_of<hw::FileError>([&] { calibrate::parse_measurement_file((d / name).string()); });
  };
  const std::string rec = R"({"mode": "gemm-only", "world_size": 8, "m": 1e400, "n": 7168, "k": 2048, "max_rank_time_us": 10})";
  std::string e = parse("r.jsonl", rec + "\n");
  EXPECT_TRUE(has(e, "r.jsonl:1:") && has(e, "out of the range of a double") && has(e, "1e400")) << e;
  e = parse("r.log", "noise\nRESULT_JSON " + rec + "\n");
  EXPECT_TRUE(has(e, "r.log:2:") && has(e, "out of the range of a double")) << e;
  e = parse("a.jsonl", "#### 4F:8A num-sms 8\n{\"tokens\": 1, \"afd\": [1e400, 0, 0]}\n");
  EXPECT_TRUE(has(e, "a.jsonl:2:") && has(e, "out of the range of a double")) << e;
  e = parse("seed.json", "{\n \"setup\": \"x\",\n \"v\": 1e400\n}\n");
  EXPECT_TRUE(has(e, "seed.json:3:") && has(e, "out of the range of a double")) << e;
  e = error_of<hw::FileError>([&] { hw::parse_json_bounded("{\n\"a\": [1,\n 2e999]}", {"f.json", 0, "--baseline"}); });
  EXPECT_TRUE(has(e, "f.json:3: '--baseline': a number out of the range of a double")) << e;
  // Through the command line: a --baseline and a measured table.
  std::ofstream(d / "base.json") << "{\"fusesim_predictions\": 1,\n \"x\": -1e400}\n";
  Ran r = sh(kBin + " check scenarios/h200x4-afd-3a1f-role-path.yaml --baseline " + qp(d / "base.json"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "base.json:2: '--baseline': a number out of the range of a double")) << r.out;
  EXPECT_FALSE(has(r.out, "[json.exception")) << r.out;  // only inside the explanation, after the file and line
  std::string hw = read_file(kRoot + "/hw/h200-2gpu.yaml");
  const std::string from = "file: ../calibrate/data/h200x2/gemm.jsonl";
  hw.replace(hw.find(from), from.size(), "file: t.jsonl");
  std::ofstream(d / "hw.yaml") << hw;
  std::ofstream(d / "t.jsonl") << "{\"m\": 1}\n{\"m\": 1e400}\n";
  r = sh(kBin + " params " + qp(d / "hw.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "t.jsonl:2: 'tables.gemm': a number out of the range of a double")) << r.out;
}

// --- issue 22, round 7: no output over an input, in every command (scenario::refuse_outputs_over_inputs)
// A fresh-user trial: `tune --hw X --out X` replaced the hardware file with the tune table; `sweep S
// --out TABLE` and `calibrate fit --hw H --out TABLE` replaced a measured table of the hardware file.
TEST(OutputsOverInputs, TuneSweepAndCalibrateFitRefuseToReplaceTheirInputs) {
  const fs::path d = fresh_dir();
  // A copy of the H200 pair's hardware file reading a copy of its measured table.
  const std::string table = (d / "gemm.jsonl").string();
  fs::copy_file(kRoot + "/calibrate/data/h200x2/gemm.jsonl", table);
  std::string hwtext = read_file(kRoot + "/hw/h200-2gpu.yaml");
  const std::string from = "file: ../calibrate/data/h200x2/gemm.jsonl";
  ASSERT_TRUE(has(hwtext, from));
  hwtext.replace(hwtext.find(from), from.size(), "file: gemm.jsonl");
  const std::string hwp = (d / "hw.yaml").string();
  std::ofstream(hwp) << hwtext;
  const std::string tbefore = read_file(table);
  std::ofstream(d / "pair.yaml") << "scenario: pair\nhardware: " << hwp << "\nmodel: h200_probe\ncases:\n"
                                 << "  - id: a\n    params: {probe: copy_hop, size_bytes: 1048576}\n";
  Ran r = sh(kBin + " sweep " + qp(d / "pair.yaml") + " --no-progress --out " + qp(table));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--out") && has(r.out, "measured table 'gemm'")) << r.out;
  r = sh(kBin + " sweep " + qp(d / "pair.yaml") + " --no-progress --out " + qp(hwp));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "hardware file of")) << r.out;
  r = sh(kBin + " calibrate fit --hw " + qp(hwp) + " --measurements scenarios/h200x2-probes.yaml --out " + qp(table));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--out") && has(r.out, "measured table 'gemm'")) << r.out;
  EXPECT_EQ(read_file(table), tbefore);
  EXPECT_EQ(read_file(hwp), hwtext);
  // tune --hw X --out X, and --out a table of X.
  const std::string mi = (d / "mi.yaml").string();
  fs::copy_file(kRoot + "/hw/mi355x-8gpu.yaml", mi);
  const std::string mbefore = read_file(mi);
  r = sh(kBin + " tune --hw " + qp(mi) + " --shape n=7168,k=2048,world_size=8 --m 1024:2048 --out " + qp(mi));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--out") && has(r.out, "is the hardware file")) << r.out;
  EXPECT_EQ(read_file(mi), mbefore);
  r = sh(kBin + " tune --hw " + qp(hwp) + " --model h200_probe --shape probe=copy_hop --m-key size_bytes --m 1024:2048 --out " + qp(table));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "measured table 'gemm'")) << r.out;
  EXPECT_EQ(read_file(table), tbefore);
}

// --- issue 22, round 7: plot side files go through temp + rename, stems are unique ---------------
TEST(PlotNames, UniqueStemsForIdsThatSanitiseAlike) {
  using fusesim::plotnames::unique_file_stem;
  EXPECT_EQ(unique_file_stem("sw__a.b-c_d"), "sw__a.b-c_d");  // kept as is: nothing replaced or cut
  EXPECT_NE(unique_file_stem("a?b/x"), unique_file_stem("a*b/x"));
  EXPECT_EQ(unique_file_stem("a?b/x").rfind("a_b_x-", 0), 0u) << unique_file_stem("a?b/x");
  const std::string long_a = std::string(299, 'x') + "a", long_b = std::string(299, 'x') + "b";
  EXPECT_NE(unique_file_stem(long_a), unique_file_stem(long_b));
  EXPECT_LE(unique_file_stem(long_a).size(), 150u);
  EXPECT_EQ(unique_file_stem("a?b/x"), unique_file_stem("a?b/x"));  // stable across runs
}

TEST(PlotFiles, CheckPlotReplacesPlantedLinksAndKeepsDistinctIdsApart) {
  const fs::path d = fresh_dir();
  const fs::path plots = d / "plots";
  fs::create_directories(plots);
  // Two tables whose names sanitise alike ("a?b" and "a*b" -> "a_b") and two ids of 300 characters
  // that differ only at the end.
  const std::string long_a = std::string(299, 'y') + "a", long_b = std::string(299, 'y') + "b";
  std::ofstream(d / "sw.yaml") << "scenario: sw\nhardware: " << kRoot << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ntolerance_pct: 100\ncases:\n"
      << "  - id: \"a?b/x\"\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
      << "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n"
      << "  - id: \"a*b/x\"\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
      << "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n"
      << "  - id: \"" << long_a << "/x\"\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
      << "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n"
      << "  - id: \"" << long_b << "/x\"\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
      << "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n";
  // A first run shows the file names; then a link to a victim outside the folder is planted at each.
  Ran r = sh("umask 022 && " + kBin + " check " + qp(d / "sw.yaml") + " --plot " + qp(plots));
  ASSERT_EQ(r.rc, 0) << r.out;
  std::vector<std::string> csv;
  for (const auto& f : files_under(plots))
    if (f.size() > 4 && f.substr(f.size() - 4) == ".csv" && !has(f, ".curve.")) csv.push_back(f);
  EXPECT_EQ(csv.size(), 4u) << fmt::format("{}", fmt::join(csv, " ")) << "\n" << r.out;
  const std::string victim = (d / "victim.txt").string();
  std::ofstream(victim) << "precious\n";
  ::chmod(victim.c_str(), 0600);
  std::vector<std::string> planted;
  for (const auto& f : files_under(plots)) {
    const std::string ext = fs::path(f).extension().string();
    if (ext != ".csv" && ext != ".gp") continue;
    fs::remove(plots / f);
    fs::create_symlink(victim, plots / f);
    planted.push_back(f);
  }
  ASSERT_FALSE(planted.empty());
  r = sh("umask 022 && " + kBin + " check " + qp(d / "sw.yaml") + " --plot " + qp(plots));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_file(victim), "precious\n");
  EXPECT_EQ(fs::status(victim).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  for (const auto& f : planted) {
    EXPECT_FALSE(fs::is_symlink(plots / f)) << f;
    EXPECT_TRUE(fs::is_regular_file(plots / f)) << f;
  }
  // Every plot file (CSV, .gp, PNG, SVG) 0666 less the umask (022): 0644.
  for (const auto& f : files_under(plots)) {
    const auto p = fs::status(plots / f).permissions() & fs::perms::all;
    EXPECT_EQ(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read) << f;
  }
}

// tune --plot: its data, script, images and gnuplot log replace a planted link too (the images are
// drawn into hidden `.NAME.png.part` files renamed into place), all 0666 less the umask.
TEST(PlotFiles, TunePlotReplacesPlantedLinks) {
  const fs::path d = fresh_dir();
  const fs::path plots = d / "plots";
  fs::create_directories(plots);
  const std::string victim = (d / "victim.txt").string();
  std::ofstream(victim) << "precious\n";
  for (const char* f : {"tune_shape0.dat", "tune_shape0.gp", "tune_shape0.png", "tune_shape0.svg", "tune_shape0.gnuplot.log"})
    fs::create_symlink(victim, plots / f);
  const Ran r = sh("umask 022 && " + kBin + " tune --shape n=7168,k=2048,world_size=8 --m 1024:4096 --plot " + qp(plots));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_file(victim), "precious\n");
  for (const auto& f : files_under(plots)) {
    EXPECT_FALSE(fs::is_symlink(plots / f)) << f;
    EXPECT_NE(f[0], '.') << "a temporary left: " << f;
    EXPECT_EQ(fs::status(plots / f).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read) << f;
  }
}

// --- the fresh-user trial of 2026-12-06 (issue 22, num22) --------------------------------------------

namespace {
/// `name` in `d` holding `text`; returns its quoted path.
std::string put(const fs::path& d, const std::string& name, const std::string& text) {
  std::ofstream(d / name) << text;
  return qp(d / name);
}
std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
/// A RESULT_JSON line of seed 000's layout with the given id, table, source and time.
std::string result_line(const std::string& id, const std::string& table, const std::string& source, const std::string& us) {
  return "{\"mode\": \"split-sdma\", \"world_size\": 8, \"m\": 8192, \"n\": 7168, \"k\": 2048, \"quant\": \"blockscale\", \"chunks\": 8, "
         "\"gather_dtype\": \"bf16\", \"gather_transport\": \"sdma\", \"fuse_quantize\": false, \"fuse_reduce_push\": false, "
         "\"gather_bands\": 1, \"publish\": \"writethrough\", \"sdma_queues\": 1, \"max_rank_time_us\": " + us +
         ", \"table\": \"" + table + "\", \"id\": \"" + id + "\", \"source\": \"" + source + "\"}\n";
}
}  // namespace

// 1. The sweep count did not wrap: 8 lists of 256 (2^64 points) had become "point 1 of 0", and a
// 2^64-point group before a plain case printed only the plain case with exit 0; 7 lists of 1000 said
// 3875820019684212736 cases. Now: "more than 2^64", file:line of the group, whatever --max-cases says.
TEST(BoundedWork, SweepCountsPast2To64AreNotWrapped) {
  const fs::path d = fresh_dir();
  auto list = [](int n, int from) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(from + i);
    return s + "]";
  };
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ndefaults: {quant: blockscale, mode: fused-sdma}\ncases:\n";
  std::string a = "  - id: a\n    sweep: {";
  for (const char* k : {"m", "n", "k", "chunks", "pull_blocks", "gather_bands", "sdma_queues", "world_size"})
    a += std::string(k) + ": " + list(256, 1024) + (std::string(k) == "world_size" ? "" : ", ");
  a += "}\n";
  const std::string b = "  - id: b\n    params: {m: 1024, n: 7168, k: 2048, world_size: 8}\n";
  for (const auto& [name, text, line] : {std::tuple{"ab.yaml", head + a + b, 7}, std::tuple{"ba.yaml", head + b + a, 9}}) {
    const std::string p = put(d, name, text);
    for (const std::string lim : {"", " --max-cases 4611686018427387904"}) {
      const Ran r = sh(kBin + " check " + p + lim);
      EXPECT_NE(r.rc, 0) << r.out;
      EXPECT_TRUE(has(r.out, fmt::format("{}:{}: 'cases[a].sweep': the cases and sweeps expand to more than 2^64", name, line))) << r.out;
      EXPECT_FALSE(has(r.out, "of 0")) << r.out;
      EXPECT_LT(r.seconds, time_limit_s(10));
    }
  }
  std::string seven = "  - id: c\n    sweep: {";
  for (const char* k : {"m", "n", "k", "chunks", "pull_blocks", "gather_bands", "sdma_queues"})
    seven += std::string(k) + ": " + list(1000, 1) + (std::string(k) == "sdma_queues" ? "" : ", ");
  seven += "}\n";
  const Ran r = sh(kBin + " run " + put(d, "seven.yaml", head + seven));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "seven.yaml:7: 'cases[c].sweep': the cases and sweeps expand to more than 2^64 (about 1e+21) cases")) << r.out;
  EXPECT_FALSE(has(r.out, "3875820019684212736")) << r.out;
}

// 2. Cases whose work lay outside the engine's events (a GEMM of 3.6e8 tiles, 6.9e10 expert draws,
// breakeven and tune over M = 2^20) end within seconds, naming the key or option and the bound.
TEST(BoundedWork, LongCasesEndWithAClearErrorInSeconds) {
  const fs::path d = fresh_dir();
  const std::string sm = "scenario: s\nhardware: " + kRoot + "/hw/h200-1gpu.yaml\nmodel: sm_sharing\ncases:\n  - id: a\n    params: {m: M, n: N, "
                         "k: 8192, tile_m: 192, tile_n: 192, grid: 132, cluster: 2, gemm_threads: 384, gemm_regs: 168, gemm_smem_bytes: 213204, "
                         "alone_time_us: 189.024, neighbour: copy, blocks: 6, neighbour_threads: 512, neighbour_regs: 30, "
                         "neighbour_alone_GBps: 580.205, cover: 20}\n";
  auto with = [&](std::string t, const std::string& m, const std::string& n) {
    t.replace(t.find("m: M"), 4, "m: " + m);
    t.replace(t.find("n: N"), 4, "n: " + n);
    return t;
  };
  for (const auto& [m, n, tiles] : {std::tuple{"2147483648", "6144", "357913952"}, std::tuple{"2147483648", "2147483648", "125099997105721"}}) {
    const Ran r = sh(kBin + " run " + put(d, "sm.yaml", with(sm, m, n)));
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(has(r.out, fmt::format("sm.yaml:6: 'cases[a].params.m': the GEMM has {} output tiles", tiles))) << r.out;
    EXPECT_TRUE(has(r.out, "more than the 1048576 this model simulates")) << r.out;
    EXPECT_LT(r.seconds, time_limit_s(10));
  }
  const Ran ok = sh(kBin + " run " + put(d, "sm.yaml", with(sm, "8192", "8192")));
  EXPECT_EQ(ok.rc, 0) << ok.out;
  const Ran afd = sh(kBin + " run " + put(d, "afd.yaml", "scenario: s\nhardware: " + kRoot + "/hw/h200-4gpu-nvlink.yaml\nmodel: afd\ncases:\n"
                                                       "  - id: a\n    params: {path: afd, attention_ranks: 1, ffn_ranks: 3, experts: 65535, "
                                                       "tokens: 1048576, transport_sms: 24, hidden: 2048, topk: 65535, capacity: 2048, seed: 4}\n"));
  EXPECT_EQ(afd.rc, 1) << afd.out;
  EXPECT_TRUE(has(afd.out, "afd.yaml:6: 'cases[a].params.topk'")) << afd.out;
  EXPECT_TRUE(has(afd.out, "more than the 67108864 this model routes")) << afd.out;
  EXPECT_LT(afd.seconds, time_limit_s(10));
  Ran r = sh(kBin + " breakeven --max-m 1048576");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "--max-m")) << r.out;
  EXPECT_LT(r.seconds, time_limit_s(2));
  r = sh(kBin + " tune --shape n=7168,k=2048,world_size=8 --m 1048576");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "from 1 to 2^18 = 262144, got '1048576'")) << r.out;
  EXPECT_LT(r.seconds, time_limit_s(2));
}

// 3. Ids, sources, hardware names and non-JSON lines reach the terminal and the plot CSVs escaped.
TEST(Printable, FitParamsBreakevenTuneAndPlotCsvsCarryNoControls) {
  const fs::path d = fresh_dir();
  const std::string ctrl = put(d, "ctrl.jsonl", result_line("a\\u001b[31m\\u0007b", "t\\u001b[2J", "s\\u001b]0;t\\u0007", "722.0"));
  const std::string junk = put(d, "junk.jsonl", "junk \x1b]0;PWNED\x07 \x1b[2J\r line\n" + result_line("x", "t", "s", "722.0"));
  for (const std::string& m : {ctrl, junk}) {
    const Ran r = sh(kBin + " calibrate fit --measurements " + m + " --hw hw/mi355x-8gpu.yaml --plot " + qp(d / ("plot" + std::to_string(m.size()))));
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(no_controls(r.out)) << r.out;
  }
  for (const auto& e : fs::recursive_directory_iterator(d))
    if (e.path().extension() == ".csv") {
      EXPECT_TRUE(no_controls(read_all(e.path()))) << e.path();
    }
  EXPECT_TRUE(has(sh(kBin + " calibrate fit --measurements " + junk + " --hw hw/mi355x-8gpu.yaml").out, "junk \\x1b]0;PWNED\\x07"));
  // A hardware file whose name and a source carry ESC/BEL.
  std::string hwt = read_all(kRoot + "/hw/mi355x-8gpu.yaml");
  const auto nl = hwt.find("\nname:");
  ASSERT_NE(nl, std::string::npos);
  hwt.replace(nl + 1, hwt.find('\n', nl + 1) - nl - 1, "name: \"mi\\e]0;PWN\\a\\e[2Jx\"");
  const std::string hwp = put(d, "hwesc.yaml", hwt);
  for (const std::string& cmd : {" params " + hwp, " breakeven --hw " + hwp + " --max-m 8192",
                                 " tune --hw " + hwp + " --shape n=7168,k=2048,world_size=8,quant=blockscale --m 8192 --knobs chunks"}) {
    const Ran r = sh(kBin + cmd);
    EXPECT_EQ(r.rc, 0) << cmd << ": " << r.out;
    EXPECT_TRUE(no_controls(r.out)) << cmd << ": " << r.out;
    EXPECT_TRUE(has(r.out, "mi\\x1b]0;PWN\\x07\\x1b[2Jx")) << cmd << ": " << r.out;
  }
  // check --plot's CSV: an id and a source with ESC and BEL.
  const std::string sc = put(d, "esc.yaml", "scenario: e\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                                            "  - id: \"a\\e[31m\\ab\"\n    params: {mode: fused-sdma, m: 8192, n: 7168, k: 2048}\n"
                                            "    measured: {value_us: 700, source: \"s\\e]0;t\\a\"}\n");
  const Ran c = sh(kBin + " check " + sc + " --plot " + qp(d / "cplot"));
  EXPECT_TRUE(no_controls(c.out)) << c.out;
  int csvs = 0;
  for (const auto& e : fs::recursive_directory_iterator(d / "cplot"))
    if (e.path().extension() == ".csv") {
      ++csvs;
      EXPECT_TRUE(no_controls(read_all(e.path()))) << e.path();
    }
  EXPECT_GT(csvs, 0);
}

// 4. Measured times outside 1e-3 .. 1e10 us (the scenario bounds, one definition) are refused in every
// measurement format with file, line and key; calibrate fit writes no hardware file with inf; AFD
// headers are parsed strictly; measured inputs of sm_sharing and ttft are bounded.
TEST(MeasuredBounds, EveryFormatRefusesTimesOutsideTheScenarioBounds) {
  const fs::path d = fresh_dir();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"rj_small.jsonl", result_line("x", "t", "s", "722.0") + result_line("y", "t", "s", "1e-300")},
      {"rj_big.jsonl", result_line("x", "t", "s", "1e300")},
      {"afd.jsonl", "#### 2F:2A num-sms 24\n{\"tokens\": 128, \"afd\": [1e300, 0.0, 0]}\n"},
      {"probe.jsonl", "{\"probe\": \"hbm_copy\", \"time_us\": 1e-300, \"bytes\": 1024}\n"},
  };
  for (const auto& [name, text] : bad) {
    const Ran r = sh(kBin + " calibrate fit --measurements " + put(d, name, text) + " --hw hw/mi355x-8gpu.yaml --out " + qp(d / "out.yaml"));
    EXPECT_EQ(r.rc, 1) << name << ": " << r.out;
    EXPECT_TRUE(has(r.out, name + ":")) << r.out;
    EXPECT_TRUE(has(r.out, "a measured time must be from 0.001 to 1e+10 us")) << r.out;
    EXPECT_FALSE(fs::exists(d / "out.yaml")) << name;
  }
  for (const std::string h : {"1e300", "24.5", "0x18", "-5", "NaN"}) {
    const Ran r = sh(kBin + " calibrate fit --measurements " + put(d, "h.jsonl", "#### 2F:2A num-sms " + h + "\n{\"tokens\": 128, \"afd\": [83.11, 0.0, 0]}\n") +
                     " --hw hw/h200-4gpu-nvlink.yaml");
    EXPECT_EQ(r.rc, 1) << h << ": " << r.out;
    EXPECT_TRUE(has(r.out, "h.jsonl:1: 'num-sms': expected a whole number")) << h << ": " << r.out;
  }
  Ran r = sh(kBin + " calibrate fit --measurements " + put(d, "hy.jsonl", "#### 2F:2A hybrid maybe\n{\"tokens\": 128, \"afd\": [83.11, 0.0, 0]}\n") +
             " --hw hw/h200-4gpu-nvlink.yaml");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "hy.jsonl:1: 'hybrid': expected on or off after 'hybrid', got 'maybe'")) << r.out;
  r = sh(kBin + " run " + put(d, "smnan.yaml", "scenario: s\nhardware: " + kRoot + "/hw/h200-1gpu.yaml\nmodel: sm_sharing\ncases:\n  - id: a\n"
                                               "    params: {m: 6144, n: 6144, k: 8192, tile_m: 192, tile_n: 192, grid: 132, cluster: 2, "
                                               "alone_time_us: 1e-300, neighbour: none}\n"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "smnan.yaml:6: 'cases[a].params.alone_time_us'")) << r.out;
  EXPECT_FALSE(has(r.out, "-nan")) << r.out;
  r = sh(kBin + " run " + put(d, "ttft.yaml", "scenario: t\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: ttft\ncases:\n  - id: a\n"
                                              "    params: {batch: 8, prompt_tokens: 4096, chunk_tokens: 16384, layers: 61, ttft_base_ms: 1e300, "
                                              "base: {mode: rccl, n: 7168, k: 2048, world_size: 8, quant: blockscale}, "
                                              "fused: {mode: fused-sdma, n: 7168, k: 2048, world_size: 8, quant: blockscale}}\n"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "ttft.yaml:6: 'cases[a].params.ttft_base_ms'")) << r.out;
  // A scenario's AFD timeline: times from the anchor within +-1e10 us (an end of 1e300 printed 300 digits).
  for (const auto& [field, value] : {std::pair<std::string, std::string>{"end_us", "1e300"}, {"start_us", "-1e11"}}) {
    const std::string kernel = field == "end_us" ? "{device: 0, kernel: dispatch_impl, start_us: -7.08, end_us: " + value + "}"
                                                 : "{device: 0, kernel: dispatch_impl, start_us: " + value + ", end_us: 5}";
    r = sh(kBin + " run " + put(d, "kend.yaml", "scenario: s\nhardware: " + kRoot + "/hw/h200-4gpu-nvlink.yaml\nmodel: afd\ncases:\n  - id: a\n"
                                                "    params: {path: afd, attention_ranks: 1, ffn_ranks: 3, experts: 96, tokens: 128, transport_sms: 24}\n"
                                                "    measured:\n      period_us: 20.1\n      source: s\n      kernels:\n        - " + kernel + "\n"));
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_TRUE(has(r.out, "kend.yaml:11: 'cases[a].measured.kernels." + field + "': a timeline time must be from -1e+10 to 1e+10 us")) << r.out;
  }
}

// 5. One GEMM the fused model refuses (K = 1) no longer ends the what-if: the pair is kept as measured
// and listed with the file, the kernel and the model's reason.
TEST(TraceWhatIf, AGemmTheFusedModelRefusesIsListedNotFatal) {
  const fs::path d = fresh_dir();
  const std::string tr = put(d, "k1.json",
      R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 1000, "pid": 1, "tid": 1},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 50, "pid": 1, "tid": 1, "args": {"Input Dims": [[4096, 1], [1, 2048]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},)"
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 20, "dur": 5, "pid": 1, "tid": 1, "args": {"correlation": 1}},)"
      R"({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16\u001b[2J", "ts": 100, "dur": 300, "pid": 0, "tid": 7, "args": {"correlation": 1, "stream": 7, "device": 0, "grid": [1, 1, 1], "block": [128, 1, 1]}},)"
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 70, "dur": 5, "pid": 1, "tid": 1, "args": {"correlation": 2}},)"
      R"({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ts": 400, "dur": 200, "pid": 0, "tid": 7, "args": {"correlation": 2, "stream": 7, "device": 0, "grid": [1, 1, 1], "block": [128, 1, 1]}}]})");
  const std::string cmd = kBin + " trace whatif " + tr + " --fuse-gemm-ar --hw hw/mi355x-8gpu.yaml --window all --world-size 8";
  const Ran t = sh(cmd);
  EXPECT_EQ(t.rc, 0) << t.out;
  EXPECT_TRUE(no_controls(t.out)) << t.out;
  EXPECT_TRUE(has(t.out, "1 not fused: the model refuses their shape")) << t.out;
  EXPECT_TRUE(has(t.out, "not fused: " + (d / "k1.json").string() + ": sm90_xmma_gemm_bf16\\x1b[2J (M=4096 N=2048 K=1): k: K must be >= 256")) << t.out;
  const Ran j = sh(cmd + " --format json 2>/dev/null");
  ASSERT_EQ(j.rc, 0) << j.out;
  const auto nf = nlohmann::json::parse(j.out)["changes"]["gemm_ar_not_fused"];
  ASSERT_EQ(nf.size(), 1u) << j.out;
  EXPECT_EQ(nf[0]["k"], 1);
  EXPECT_EQ(nf[0]["file"], (d / "k1.json").string());
  EXPECT_TRUE(has(nf[0]["reason"].get<std::string>(), "K must be >= 256")) << j.out;
}

// 6. Help and option checks: RE2 named, a factor out of range said so, a gap bound that is not finite refused.
TEST(TraceWhatIf, OptionTextsAndRanges) {
  Ran r = sh(kBin + " trace whatif --help");
  EXPECT_TRUE(has(r.out, "RE2 syntax, full match")) << r.out;
  EXPECT_FALSE(has(r.out, "ECMAScript")) << r.out;
  r = sh(kBin + " trace whatif tests/trace/fixtures/hta/trace_diff/control/control.json.gz --scale-collective nccl=1e-308");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "FACTOR 1e-308 is out of range (expected 1e-6 .. 1e6)")) << r.out;
  for (const std::string f : {"0x10", "inf", "nan"}) {  // strtod reads these; a factor is a decimal number
    r = sh(kBin + " trace whatif tests/trace/fixtures/hta/trace_diff/control/control.json.gz --scale-collective nccl=" + f);
    EXPECT_EQ(r.rc, 1) << f << ": " << r.out;
    EXPECT_TRUE(has(r.out, "FACTOR '" + f + "' is not a number")) << r.out;
  }
  for (const std::string g : {"nan", "inf", "-1"}) {
    r = sh(kBin + " trace analyze tests/trace/fixtures/hta/trace_diff/control/control.json.gz --gap-min-us " + g);
    EXPECT_NE(r.rc, 0) << g << ": " << r.out;
    EXPECT_TRUE(has(r.out, "--gap-min-us")) << g << ": " << r.out;
    EXPECT_LT(r.out.size(), 2000u) << r.out;
  }
}

// --- the second fresh-user trial of 2026-12-06 (issue 22), its six open items -----------------------

// 1. Plot files of one command never share a name: a table `t.curve` beside table `t` (whose curve is
// `t.curve.csv`), a case `x.timeline` beside case `x`'s AFD timeline, and a plain name equal to
// another name's hashed stem had written over each other while the count said all were written.
// 2. Nor do they take the name of an input file: `check --plot DIR` had replaced a scenario kept in DIR.
TEST(PlotFiles, NamesOfOneCommandNeverCollideNorReplaceAnInput) {
  const fs::path d = fresh_dir();
  calibrate::PlotNamer namer;
  const std::string dir = d.string();
  EXPECT_EQ(namer.claim(dir, "t"), (d / "t").string());
  EXPECT_EQ(namer.claim(dir, "t.curve"), (d / "t.curve-2").string());  // t.curve.csv is t's curve
  EXPECT_EQ(namer.claim(dir, "x.timeline"), (d / "x.timeline").string());
  EXPECT_EQ(namer.claim(dir, "x.timeline"), (d / "x.timeline-2").string());  // the same stem again
  const std::string hashed = plotnames::unique_file_stem("a b");
  ASSERT_NE(hashed, "a b");
  EXPECT_EQ(namer.claim(dir, "a b"), (d / hashed).string());
  EXPECT_EQ(namer.claim(dir, hashed), (d / (hashed + "-2")).string());  // a plain name equal to the hashed stem
  EXPECT_EQ(namer.claim(dir, "T"), (d / "T-2").string());               // case-insensitive file systems
  // An input in the folder under a plot file's name keeps its name and content.
  std::ofstream(d / "in.gp") << "mine\n";
  calibrate::PlotNamer guarded({(d / "in.gp").string()});
  EXPECT_EQ(guarded.claim(dir, "in"), (d / "in-2").string());
  EXPECT_EQ(guarded.claim(dir, "other"), (d / "other").string());

  // Through check --plot: two tables name `t` and `t.curve`, and the scenario file lies in the plot
  // folder under the name table `u`'s script would take. Every table gets its own files, the count
  // is the files on disk, and the scenario is unchanged.
  const fs::path plots = d / "plots";
  fs::create_directories(plots);
  const std::string text = std::string("scenario: sw\nhardware: ") + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ntolerance_pct: 100\ncases:\n" +
                           "  - id: \"t/x\"\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
                           "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n"
                           "  - id: \"t.curve/x\"\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
                           "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n"
                           "  - id: \"u/x\"\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
                           "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n";
  std::ofstream(plots / "sw__u.gp") << text;
  const Ran r = sh(kBin + " check " + qp(plots / "sw__u.gp") + " --plot " + qp(plots));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_file((plots / "sw__u.gp").string()), text);
  std::vector<std::string> tables;
  for (const auto& f : files_under(plots))
    if (f.size() > 4 && f.substr(f.size() - 4) == ".csv" && !has(f, ".curve.csv")) tables.push_back(f);
  EXPECT_EQ(tables, (std::vector<std::string>{"sw__t.csv", "sw__t.curve-2.csv", "sw__u-2.csv"}))
      << fmt::format("{}", fmt::join(files_under(plots), " "));
  for (const char* f : {"sw__t.curve.csv", "sw__t.curve-2.curve.csv", "sw__u-2.curve.csv", "sw__u-2.gp"}) EXPECT_TRUE(fs::exists(plots / f)) << f;
  EXPECT_TRUE(has(r.out, "wrote 6 CSV tables")) << r.out;
}

// 3. A control character in the --plot folder's name had reached gnuplot's script as '?': gnuplot
// drew into another folder and fusesim renamed its empty temporaries into 0-byte images, exit 0. Now
// gnuplot runs in the folder and names its files relative to it; an image left empty is a failure.
TEST(PlotFiles, AControlCharacterInThePlotFolderStillGivesRealImages) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "gnuplot not installed";
  const fs::path d = fresh_dir();
  const fs::path plots = d / "p\x01q";
  const Ran r = sh(kBin + " check scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml --plot " + qp(plots));
  ASSERT_EQ(r.rc, 0) << r.out;
  int images = 0;
  for (const auto& f : files_under(plots)) {
    const std::string ext = fs::path(f).extension().string();
    if (ext != ".png" && ext != ".svg") continue;
    ++images;
    EXPECT_GT(fs::file_size(plots / f), 100u) << f;
  }
  EXPECT_GT(images, 0) << r.out;
  EXPECT_TRUE(no_controls(r.out));
  EXPECT_TRUE(has(r.out, "p\\x01q")) << r.out;  // the folder named with its control character escaped
  for (const auto& f : files_under(d)) EXPECT_FALSE(has(f, "p?q")) << f;
}

// 4. --baseline matched no id holding an invalid UTF-8 byte: --save-predictions stores it with
// U+FFFD, and the new run's raw id was looked up. Both are now compared in the saved form.
TEST(CiOutputs, BaselineMatchesIdsWithInvalidUtf8) {
  const fs::path d = fresh_dir();
  put(d, "u.yaml", std::string("scenario: u\xff\nhardware: ") + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                   "  - id: \"caf\xe9/a\"\n    params: {mode: gemm-only, n: 7168, k: 2048, m: 4096}\n"
                   "  - id: \"ok/b\"\n    params: {mode: gemm-only, n: 7168, k: 2048, m: 8192}\n");
  Ran r = sh(kBin + " check " + qp(d / "u.yaml") + " --save-predictions " + qp(d / "base.json"));
  ASSERT_EQ(r.rc, 0) << r.out;
  r = sh(kBin + " check " + qp(d / "u.yaml") + " --baseline " + qp(d / "base.json"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "2 predictions compared, 0 moved by more than 1%, 0 cases not in the baseline")) << r.out;
}

// 5. AFD headers: a rank ratio that is part of a longer word ("-2F:2A", "3F:1A:7F") had been read as
// its well-formed part, and a key given twice ("num-sms 8 num-sms 16") silently took the first.
TEST(HostileParsers, AfdHeadersWithAMalformedOrRepeatedKeyAreErrors) {
  using calibrate::afd_context_from_header;
  auto error_of = [](const std::string& h) {
    try {
      afd_context_from_header(h, "f.jsonl", 3);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(has(error_of("#### -2F:2A"), "f.jsonl:3: 'ffn_ranks': expected a rank ratio as a word of its own")) << error_of("#### -2F:2A");
  EXPECT_TRUE(has(error_of("#### 3F:1A:7F"), "f.jsonl:3: 'ffn_ranks': the header holds 2 rank ratios")) << error_of("#### 3F:1A:7F");
  EXPECT_TRUE(has(error_of("#### 2F:2A 4F:4A"), "holds 2 rank ratios"));
  EXPECT_TRUE(has(error_of("#### 2F:2A 4f4a"), "holds 2 rank ratios"));
  EXPECT_TRUE(has(error_of("#### 2.5F:2A"), "expected a rank ratio"));
  EXPECT_TRUE(has(error_of("#### 4F:8A num-sms 8 num-sms 16"), "f.jsonl:3: 'num-sms': 'num-sms' appears 2 times in the header; expected once"));
  EXPECT_TRUE(has(error_of("#### 4F:8A hybrid on hybrid off"), "'hybrid' appears 2 times"));
  EXPECT_TRUE(has(error_of("## 1a3f T=1 T=2 afd"), "'T=' appears 2 times"));
  // Well-formed headers as the repository's files and seed 004 write them.
  for (const char* ok : {"#### 4F:8A num-sms 8", "#### 4f8a hybrid off", "## 1a3f T=128 masked", "# (2F:2A) num-sms 24", "# run of 3a4f5b2"})
    EXPECT_EQ(error_of(ok), "") << ok;
  EXPECT_EQ(afd_context_from_header("# (2F:2A) num-sms 24")["ffn_ranks"].as<int>(), 2);
  EXPECT_EQ(afd_context_from_header("# run of 3a4f5b2").size(), 0u);  // a commit hash is not a ratio
}

// 6. A newline in a file name reached error lines raw (a name could forge an "ok" line in a CI
// log); `calibrate fit --out` and the sweep summary printed their paths raw.
TEST(Terminal, FileNamesWithANewlineStayOnTheirErrorLine) {
  const fs::path d = fresh_dir();
  const std::string forged = (d / "x\nok   forged.yaml").string();
  Ran r = sh(kBin + " check " + qp(forged));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "x\\nok   forged.yaml: does not exist")) << r.out;
  EXPECT_FALSE(has(r.out, "\nok   forged")) << r.out;
  // A scenario file whose name holds a newline, with a bad key: the FileError names it escaped.
  const std::string bad = (d / "b\nFAKE.yaml").string();
  std::ofstream(bad) << "scenario: b\nhardware: hw/mi355x-8gpu.yaml\nmodel: gemm_ar\nbogus: 1\ncases: []\n";
  r = sh(kBin + " run " + qp(bad));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "b\\nFAKE.yaml:4")) << r.out;
  EXPECT_FALSE(has(r.out, "\nFAKE")) << r.out;
  // calibrate fit --out: the "wrote" line; sweep --out: its summary line.
  const std::string out = (d / "o\nFAKE.yaml").string();
  r = sh(kBin + " calibrate fit --hw hw/h200-2gpu.yaml --measurements scenarios/h200x2-probes.yaml --out " + qp(out));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "wrote " + d.string() + "/o\\nFAKE.yaml")) << r.out;
  EXPECT_FALSE(has(r.out, "\nFAKE")) << r.out;
  r = sh(kBin + " sweep scenarios/h200x2-probes.yaml --no-progress --out " + qp(d / "s\nFAKE.jsonl"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "s\\nFAKE.jsonl")) << r.out;
  EXPECT_FALSE(has(r.out, "\nFAKE")) << r.out;
}

// --- the third fresh-user trial of 2026-12-06 (issue 22) ---------------------------------------------

// F1: an AFD case's gemm_machine hardware file and its measured table are inputs: run --out, sweep
// --out (which had emptied it before failing) and check --plot had replaced them.
TEST(OutputsOverInputs, AGemmMachineFileAndItsTablesAreInputs) {
  const fs::path d = fresh_dir();
  fs::create_directories(d / "hw" / "data");
  for (const char* f : {"hw/h200-4gpu-nvlink.yaml", "hw/h200-1gpu.yaml", "hw/data/h200-sm-map.jsonl",
                        "hw/data/late-cluster-work-ids-h100.jsonl"}) fs::copy_file(kRoot + "/" + f, d / f);
  fs::copy_file(kRoot + "/scenarios/h200x4-afd-ffn-gemm-beside.yaml", d / "s.yaml");
  const std::string machine = read_file((d / "hw/h200-1gpu.yaml").string()), table = read_file((d / "hw/data/h200-sm-map.jsonl").string());
  for (const std::string cmd : {" run s.yaml --format json --out hw/h200-1gpu.yaml", " run s.yaml --out hw/data/h200-sm-map.jsonl",
                                " sweep s.yaml --no-progress --out hw/h200-1gpu.yaml", " sweep s.yaml --no-progress --out hw/data/h200-sm-map.jsonl"}) {
    const Ran r = sh("cd " + qp(d) + " && " + kBin + cmd);
    EXPECT_EQ(r.rc, 1) << cmd << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "gemm_machine")) << cmd << "\n" << r.out;
    EXPECT_EQ(read_file((d / "hw/h200-1gpu.yaml").string()), machine) << cmd;
    EXPECT_EQ(read_file((d / "hw/data/h200-sm-map.jsonl").string()), table) << cmd;
  }
}

// F2: tune --plot's fixed names tune_shapeN.* had replaced --hw kept in the plot folder under such a
// name, and tune's own --out.
TEST(PlotFiles, TunePlotNeverReplacesItsHardwareFileOrItsOut) {
  const fs::path d = fresh_dir();
  const fs::path tp = d / "tp";
  fs::create_directories(tp);
  fs::copy_file(kRoot + "/hw/mi355x-8gpu.yaml", tp / "tune_shape0.gp");
  const std::string hw_text = read_file((tp / "tune_shape0.gp").string());
  const Ran r = sh(kBin + " tune --hw " + qp(tp / "tune_shape0.gp") + " --shape n=7168,k=2048,world_size=8 --m 1024,2048 --knobs mode --plot " +
                   qp(tp) + " --out " + qp(tp / "tune_shape0-2.svg"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_file((tp / "tune_shape0.gp").string()), hw_text);
  EXPECT_TRUE(has(read_file((tp / "tune_shape0-2.svg").string()), "shape")) << "tune's --out replaced";
  EXPECT_TRUE(fs::exists(tp / "tune_shape0-3.dat")) << fmt::format("{}", fmt::join(files_under(tp), " "));
}

// F3: check's --junit / --save-predictions named like a plot file had been replaced by the plot.
TEST(PlotFiles, CheckPlotsNeverReplaceItsJunitOrPredictions) {
  const fs::path d = fresh_dir();
  const fs::path p = d / "p";
  fs::create_directories(p);
  put(d, "small.yaml", "scenario: small\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ntolerance_pct: 100\ncases:\n"
                       "  - id: a\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
                       "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n");
  const Ran r = sh(kBin + " check " + qp(d / "small.yaml") + " --plot " + qp(p) + " --junit " + qp(p / "small__a.csv") + " --save-predictions " +
                   qp(p / "small__a.gp"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(read_file((p / "small__a.csv").string()), "<testsuites"));
  EXPECT_TRUE(has(read_file((p / "small__a.gp").string()), "fusesim_predictions"));
  EXPECT_TRUE(fs::exists(p / "small__a-2.csv") && fs::exists(p / "small__a-2.gp")) << fmt::format("{}", fmt::join(files_under(p), " "));
}

// F4: one fused-lsa case inside every other bound (M = 805306368, N = 8) had taken 3.7 s and 527 MB
// (2 GB at M = 2^31): the GEMM's output tiles are bounded at 2^20, named at the key.
TEST(BoundedWork, AGemmArCaseOfMoreThan2To20TilesIsRefusedAtOnce) {
  const fs::path d = fresh_dir();
  put(d, "s.yaml", "scenario: lsa\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                   "  - id: a\n    params: {mode: fused-lsa, m: 805306368, n: 8, k: 256, world_size: 8, quant: blockscale}\n");
  const Ran r = sh(kBin + " run " + qp(d / "s.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "s.yaml:6: 'cases[a].params.m'") && has(r.out, "6291456 tiles of 128 x 256") && has(r.out, "more than the 2^20")) << r.out;
  EXPECT_LT(r.seconds, 1.0);
  // The largest shape the data and the commands use is far inside: M = 2^18, N = 7168 (57344 tiles).
  put(d, "ok.yaml", "scenario: ok\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                    "  - id: a\n    params: {mode: gemm-only, m: 262144, n: 7168, k: 2048, world_size: 8}\n");
  EXPECT_EQ(sh(kBin + " run " + qp(d / "ok.yaml")).rc, 0);
}

// F6: --baseline matched runs by scenario name only (two files of one name compared with each
// other), took repeated runs and cases silently, accepted predicted_us 0 / negative / 1e308 and
// another format, and --threshold-pct nan switched it off.
TEST(CiOutputs, BaselineMatchesFilesAndRefusesNonsense) {
  const fs::path d = fresh_dir();
  const std::string head = "scenario: small\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n";
  put(d, "small.yaml", head + "  - id: a\n    params: {mode: gemm-only, n: 7168, k: 2048, m: 16384}\n");
  put(d, "small2.yaml", head + "  - id: a\n    params: {mode: gemm-only, n: 7168, k: 2048, m: 4096}\n");
  const std::string both = qp(d / "small.yaml") + " " + qp(d / "small2.yaml");
  Ran r = sh(kBin + " check " + both + " --save-predictions " + qp(d / "base.json"));
  ASSERT_EQ(r.rc, 0) << r.out;
  r = sh(kBin + " check " + both + " --baseline " + qp(d / "base.json"));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "2 predictions compared, 0 moved")) << r.out;
  auto j = nlohmann::json::parse(read_file((d / "base.json").string()));
  auto bad = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& expect) {
    nlohmann::json b = j;
    edit(b);
    std::ofstream(d / "bad.json") << b.dump();
    const Ran x = sh(kBin + " check " + qp(d / "small.yaml") + " --baseline " + qp(d / "bad.json"));
    EXPECT_EQ(x.rc, 1) << expect << "\n" << x.out;
    EXPECT_TRUE(has(x.out, expect)) << x.out;
    EXPECT_FALSE(has(x.out, "compared,")) << "refused before any scenario runs: " << x.out;
  };
  bad([](nlohmann::json& b) { b["runs"][0]["cases"][0]["predicted_us"] = 0; }, "predicted_us 0 is not a time");
  bad([](nlohmann::json& b) { b["runs"][0]["cases"][0]["predicted_us"] = -136.2; }, "is not a time this fusesim predicts");
  bad([](nlohmann::json& b) { b["runs"][0]["cases"][0]["predicted_us"] = 1e308; }, "is not a time this fusesim predicts");
  bad([](nlohmann::json& b) { b["runs"][0]["cases"].push_back(b["runs"][0]["cases"][0]); }, "lists case 'a' twice");
  bad([](nlohmann::json& b) { b["runs"].push_back(b["runs"][0]); }, "repeats scenario 'small'");
  bad([](nlohmann::json& b) { b["fusesim_predictions"] = 2; }, "a predictions file of format 2");
  std::ofstream(d / "dup.json") << R"({"fusesim_predictions": 1, "runs": [{"scenario": "small", "cases": [{"id": "a", "predicted_us": 500, "predicted_us": 136.2}]}]})";
  r = sh(kBin + " check " + qp(d / "small.yaml") + " --baseline " + qp(d / "dup.json"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "'predicted_us': key 'predicted_us' given twice")) << r.out;
  r = sh(kBin + " check " + qp(d / "small.yaml") + " --baseline " + qp(d / "base.json") + " --threshold-pct nan");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "expected a finite number")) << r.out;
}

// F9: a whole number with a leading zero had been read as octal (m: 01024 ran as 532 under an id
// saying m=01024; 0999 was "out of range"); floats in the same file read decimal.
TEST(HostileParsers, LeadingZeroIntegersAreRefusedNotReadAsOctal) {
  const fs::path d = fresh_dir();
  put(d, "o.yaml", "scenario: o\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                   "  - id: b\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [1024, 01024]}\n");
  Ran r = sh(kBin + " run " + qp(d / "o.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "'m' = 01024: a whole number with a leading zero")) << r.out;
  put(d, "w.yaml", "scenario: o\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                   "  - id: b\n    params: {mode: split-sdma, n: 7168, k: 2048, m: 4096, world_size: 010}\n");
  r = sh(kBin + " run " + qp(d / "w.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "w.yaml:6: 'cases[b].params.world_size'") && has(r.out, "leading zero")) << r.out;
  EXPECT_TRUE(hw::leading_zero_integer("0999") && hw::leading_zero_integer("-010") && !hw::leading_zero_integer("0") &&
              !hw::leading_zero_integer("10") && !hw::leading_zero_integer("0.5") && !hw::leading_zero_integer("0x10"));
}

// F11: a plot that could not be written (a folder in the way) was reported as "not checked (bad
// input)" after the file's results, and left a 0-byte gnuplot log.
TEST(PlotFiles, APlotThatCannotBeWrittenIsNotBadInput) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "gnuplot not installed";
  const fs::path d = fresh_dir();
  fs::create_directories(d / "p4" / "small__a.png");
  put(d, "small.yaml", "scenario: small\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ntolerance_pct: 100\ncases:\n"
                       "  - id: a\n    params: {mode: gemm-only, n: 7168, k: 2048}\n    sweep: {m: [4096, 8192]}\n"
                       "    measured: [{at: {m: 4096}, value_us: 100, source: s}, {at: {m: 8192}, value_us: 200, source: s}]\n");
  const Ran r = sh(kBin + " check " + qp(d / "small.yaml") + " --plot " + qp(d / "p4"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "the plots of " + (d / "small.yaml").string() + " could not be written")) << r.out;
  EXPECT_FALSE(has(r.out, "bad input")) << r.out;
  EXPECT_TRUE(has(r.out, "ERROR: the plots of 1 files could not be written")) << r.out;
  EXPECT_FALSE(fs::exists(d / "p4" / "small__a.gnuplot.log"));
}

// F12: a key given twice in a JSON measurement line was taken silently (the last value): a row whose
// id said m=8192 was fitted at m=1024.
TEST(HostileParsers, AKeyGivenTwiceInAJsonLineIsAnError) {
  const fs::path d = fresh_dir();
  std::string line = result_line("headline/split-sdma/m=8192", "t", "s", "722.0");
  line.insert(line.find("\"n\":"), "\"m\": 1024, ");
  put(d, "dup.jsonl", line);
  const Ran r = sh(kBin + " calibrate fit --hw hw/mi355x-8gpu.yaml --free none --measurements " + qp(d / "dup.jsonl"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "dup.jsonl:1: 'm': key 'm' given twice in the same JSON object")) << r.out;
}

// --- third trial (trial3-report.md) --------------------------------------------------------------

// F8: text cells from input that begin with '=', '+', '-', '@' (a spreadsheet formula) reached the
// CSVs of run, sweep and check --plot quoted but otherwise as is. Each is written with a "'" in
// front (hw::csv_cell, the one writer of CSV text cells); numbers stay numbers; sweep --resume of
// such a CSV compares its kept rows with the same cells and keeps them.
TEST(TrialThree, CsvTextCellsNeverBeginAFormula) {
  EXPECT_EQ(hw::csv_cell("=1+1"), "\"'=1+1\"");
  EXPECT_EQ(hw::csv_cell("@SUM(A1)"), "\"'@SUM(A1)\"");
  EXPECT_EQ(hw::csv_cell("-2+3"), "\"'-2+3\"");
  EXPECT_EQ(hw::csv_cell("+x,\"y\""), "\"'+x,\"\"y\"\"\"");
  EXPECT_EQ(hw::csv_cell("\tx"), "\"\\tx\"");  // escaped first: the cell begins with a backslash
  EXPECT_EQ(hw::csv_cell("a=b"), "\"a=b\"");
  EXPECT_EQ(hw::csv_value("-3.5"), "-3.5");  // a number
  EXPECT_EQ(hw::csv_value("m"), "m");
  EXPECT_EQ(hw::csv_value("=m"), "\"'=m\"");
  EXPECT_EQ(hw::csv_value("-inf"), "\"'-inf\"");
  const fs::path d = fresh_dir();
  std::ofstream(d / "inj.yaml") << "scenario: \"=HYPERLINK(\\\"http://evil\\\",\\\"x\\\")\"\nhardware: " << kRoot
      << "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ntolerance_pct: 10\n"
      << "defaults: {m: 1024, n: 7168, k: 2048, world_size: 8, quant: blockscale}\ncases:\n"
      << "  - id: \"=cmd|' /C calc'!A0\"\n    params: {mode: fused-sdma}\n"
      << "    measured: {value_us: 100000, source: \"@SUM(1+1)*cmd|' /C calc'!A0\"}\n"
      << "  - id: \"+1+2,\\\"x\\\"\\ny\"\n    params: {mode: split-sdma}\n"
      << "  - id: \"-sw\"\n    params: {mode: split-sdma}\n    sweep: {m: [1024, 2048, 4096]}\n";
  const std::string sc = qp(d / "inj.yaml");
  // Every line's text cells: none begins with a formula lead (quoted or not).
  auto no_formula_cell = [](const std::string& csv) {
    for (const char* bad : {"\"=", "\"+", "\"-", "\"@", ",=", ",+", ",@", "\n=", "\n+", "\n-", "\n@"})
      if (has(csv, bad) || csv.rfind(bad + 1, 0) == 0) return false;
    return true;
  };
  Ran r = sh(kBin + " run " + sc + " --format csv");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "\n\"'=cmd|' /C calc'!A0\",")) << r.out;
  EXPECT_TRUE(has(r.out, "\"'@SUM(1+1)*cmd|' /C calc'!A0\"")) << r.out;
  EXPECT_TRUE(has(r.out, "\n\"'+1+2,\"\"x\"\"\\ny\",")) << r.out;
  EXPECT_TRUE(has(r.out, "\n\"'-sw/m=2048\",")) << r.out;
  EXPECT_TRUE(has(r.out, ",100000.000,-99.")) << r.out;  // the negative error_pct: a number, as it was
  // sweep --format csv, cut after two rows and resumed: the kept rows match, the file is whole.
  r = sh(kBin + " sweep " + sc + " --format csv --no-progress --out " + qp(d / "full.csv"));
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string full = read_all(d / "full.csv");
  EXPECT_TRUE(no_formula_cell(full.substr(full.find('\n')))) << full;
  EXPECT_TRUE(has(full, "\"'=cmd|' /C calc'!A0\"")) << full;
  size_t cut = 0;
  for (int i = 0; i < 3; ++i) cut = full.find('\n', cut) + 1;  // the header and two rows
  std::ofstream(d / "part.csv", std::ios::binary) << full.substr(0, cut + 5);  // and a partial third
  r = sh(kBin + " sweep " + sc + " --format csv --no-progress --resume --out " + qp(d / "part.csv"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "2 kept from --out")) << r.out;
  EXPECT_EQ(read_all(d / "part.csv"), full);
  // check --plot's CSV tables.
  r = sh(kBin + " check " + sc + " --plot " + qp(d / "plots"));
  int csvs = 0;
  for (const auto& e : fs::directory_iterator(d / "plots"))
    if (e.path().extension() == ".csv") {
      ++csvs;
      const std::string t = read_all(e.path());
      EXPECT_TRUE(no_formula_cell(t.substr(t.find('\n')))) << e.path() << ":\n" << t;
    }
  EXPECT_GT(csvs, 0) << r.out;
}

// F7: two `sweep --resume` on one output at once both kept the same rows and appended the rest
// (about 1000 rows for 560 cases, both exit 0). A sweep holds an exclusive lock on its output for
// the whole run; a second one on the same file fails at once, naming it, and leaves it as it was.
TEST(TrialThree, ASecondSweepOnALockedOutputFailsAtOnce) {
  const fs::path d = fresh_dir();
  const fs::path out = d / "rows.jsonl";
  Ran r = sh(kBin + " sweep scenarios/h200x2-probes.yaml --no-progress --out " + qp(out));
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string full = read_all(out);
  std::ofstream(out, std::ios::binary | std::ios::trunc) << full.substr(0, full.find('\n') + 1);  // one row kept
  const std::string kept = read_all(out);
  const int fd = ::open(out.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // as another sweep holds it
  for (const char* resume : {" --resume", ""}) {
    r = sh_bounded(kBin + " sweep scenarios/h200x2-probes.yaml --no-progress --out " + qp(out) + resume);
    EXPECT_EQ(r.rc, 1) << resume << ": " << r.out;
    EXPECT_TRUE(has(r.out, "another sweep is writing '" + out.string() + "'")) << r.out;
    EXPECT_LT(r.seconds, 5) << r.out;
    EXPECT_EQ(read_all(out), kept) << resume;  // not cut, not truncated, nothing appended
  }
  ::close(fd);
  r = sh(kBin + " sweep scenarios/h200x2-probes.yaml --no-progress --resume --out " + qp(out));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_all(out), full);
  EXPECT_EQ(files_under(d), (std::vector<std::string>{"rows.jsonl"}));  // no lock file left beside it
}

// F5: tune's options, each within its range, multiplied to hours (--exhaustive-limit 10^6 took
// 80 CPU-s and 394 MB for one M, and --m takes 64 values). The worst case of the whole search is
// counted before it starts and refused over --max-evaluations (default 2*10^6), naming the options.
TEST(TrialThree, TuneRefusesASearchOverItsEvaluationBoundBeforeStarting) {
  const std::string shape = " tune --shape n=7168,k=2048,world_size=8,quant=blockscale";
  const std::string knobs = " --knobs mode,chunks,tile_order,gather_dtype,gather_transport,pull_blocks,fuse_quantize,fuse_reduce_push,gather_bands";
  Ran r = sh_bounded(kBin + shape + " --m 1024:8192 --exhaustive-limit 1000000" + knobs);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_LT(r.seconds, 1) << r.out;
  EXPECT_TRUE(has(r.out, "may take up to 2359300 model evaluations (1 shape x 4 values of --m x 589825 each: exhaustive over the 589824 "
                         "settings of the space (at most --exhaustive-limit 1000000)), more than --max-evaluations 2000000"))
      << r.out;
  r = sh_bounded(kBin + shape + " --m 1024:32768 --restarts 10000");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_LT(r.seconds, 1) << r.out;
  EXPECT_TRUE(has(r.out, "coordinate descent: (--restarts 10000 + 1) starts") && has(r.out, "raise --max-evaluations")) << r.out;
  // Two shapes count twice; --max-evaluations lowers (or raises) the bound.
  r = sh_bounded(kBin + shape + " --shape n=4096,k=4096,world_size=8,quant=blockscale --m 1024 --knobs chunks --max-evaluations 20");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "up to 26 model evaluations (2 shapes x 1 value of --m x 13 each")) << r.out;
  r = sh_bounded(kBin + shape + " --m 1024 --knobs chunks --max-evaluations 13");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "search exhaustive over 12 settings")) << r.out;
  EXPECT_NE(sh_bounded(kBin + shape + " --m 1024 --max-evaluations 0").rc, 0);
  // README's example still runs.
  r = sh(kBin + shape + " --m 1024:32768 --baseline mode=rccl");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "serving threshold")) << r.out;
}

// F13 b-d: an output name beginning with '-' (`run --out -` wrote a file '-', `--out -h` a file
// '-h', `check --plot --` a folder '--') is refused, suggesting ./NAME; breakeven -n past 2^63
// echoes what was typed, not the clamped 9223372036854775807; trace's --decode-max-m says its real
// bound without a 309-digit number, and --gap-min-us names the option once.
TEST(TrialThree, DashOutputNamesAndOptionMessages) {
  const fs::path d = fresh_dir();
  const std::string sc = kRoot + "/scenarios/h200x2-probes.yaml";
  const std::string cd = "cd " + qp(d) + " && timeout 20 " + kBin;
  const std::vector<std::pair<std::string, std::string>> cmds = {
      {" run " + sc + " --out -", "-"},
      {" run " + sc + " --out -h", "-h"},
      {" run " + sc + " --trace -t", "-t"},
      {" sweep " + sc + " --out -", "-"},
      {" check " + sc + " --plot --", "--"},
      {" check " + sc + " --junit -j", "-j"},
      {" check " + sc + " --save-predictions -s", "-s"},
      {" tune --shape n=7168,k=2048,world_size=8,quant=blockscale --m 1024 --knobs chunks --out -o", "-o"},
      {" tune --shape n=7168,k=2048,world_size=8,quant=blockscale --m 1024 --knobs chunks --plot -p", "-p"},
      {" calibrate fit --hw " + kRoot + "/hw/h200-2gpu.yaml --measurements " + sc + " --out -", "-"},
      {" calibrate fit --hw " + kRoot + "/hw/h200-2gpu.yaml --measurements " + sc + " --report -r", "-r"},
      {" calibrate fit --hw " + kRoot + "/hw/h200-2gpu.yaml --measurements " + sc + " --plot -p", "-p"},
  };
  for (const auto& [cmd, name] : cmds) {
    const Ran r = sh(cd + cmd);
    EXPECT_NE(r.rc, 0) << cmd << ": " << r.out;
    EXPECT_TRUE(has(r.out, "'" + name + "' begins with '-'") && has(r.out, "write ./" + name + " for a file")) << cmd << ": " << r.out;
  }
  EXPECT_EQ(files_under(d), std::vector<std::string>{});  // no file or folder named '-...' was made
  EXPECT_TRUE(fs::is_empty(d));
  // ./-name is the way to such a name.
  Ran r = sh(cd + " run " + sc + " --out ./-");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(fs::exists(d / "-"));
  r = sh_bounded(kBin + " breakeven -n 99999999999999999999");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "got 99999999999999999999")) << r.out;
  EXPECT_FALSE(has(r.out, "9223372036854775807")) << r.out;
  const std::string trace = " trace whatif calibrate/trace/examples/tiny_prefill_synthetic.json";
  r = sh_bounded(kBin + trace + " --decode-max-m 0");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "--decode-max-m: expected a whole number >= 1, got '0'")) << r.out;
  EXPECT_LT(r.out.size(), 300u) << r.out;
  r = sh_bounded(kBin + trace + " --min-phase-votes 0");
  EXPECT_TRUE(has(r.out, "--min-phase-votes: expected a whole number >= 1, got '0'")) << r.out;
  r = sh_bounded(kBin + trace + " --gap-min-us nan");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "--gap-min-us: expected a number of microseconds")) << r.out;
  EXPECT_FALSE(has(r.out, "--gap-min-us: --gap-min-us")) << r.out;
}

// F13 a: an explicit YAML tag on a case parameter had been ignored (`m: !!str 1024` ran as 1024).
TEST(HostileParsers, ATaggedCaseParameterIsRefused) {
  const fs::path d = fresh_dir();
  for (const char* value : {"!!str 1024", "!foo 1024", "!!binary 1024"}) {
    put(d, "t.yaml", "scenario: t\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n"
                     "  - id: a\n    params: {mode: gemm-only, n: 7168, k: 2048, m: " + value + "}\n");
    const Ran r = sh(kBin + " run " + qp(d / "t.yaml"));
    EXPECT_EQ(r.rc, 1) << value << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "t.yaml:6: 'cases[a].params.m'") && has(r.out, "carries the YAML tag")) << r.out;
  }
}

// A NUL byte in a yaml-cpp message (a binary file given as a scenario) had cut the error short
// ("unknown escape character: " and nothing): FileError escapes its whole message.
TEST(Terminal, ANulInAYamlErrorIsEscapedNotCut) {
  const fs::path d = fresh_dir();
  {
    std::ofstream f(d / "nul.yaml", std::ios::binary);
    f << "scenario: \"a\\" << '\0' << "b\"\n";
  }
  const Ran r = sh(kBin + " run " + qp(d / "nul.yaml"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(has(r.out, "nul.yaml:1: YAML syntax error: unknown escape character: \\x00")) << r.out;
}
