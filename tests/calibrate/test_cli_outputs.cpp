// Outputs of the command line (fusesim run --out/--trace, calibrate fit --out/--report) and the
// argument checks of calibrate fit and trace analyze, from a new-user trial: every error is one line
// `fusesim: error: ...` naming the file or option, exit status 1, and nothing half-written.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "hw/io.hpp"
#include "models/model.hpp"
#include "test_util.hpp"

namespace fusesim::calibrate {
namespace {

namespace fs = std::filesystem;
using namespace test;  // tests/calibrate/test_util.hpp

const std::string kBin = FUSESIM_BIN;
const std::string kScenario = src("scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml");

/// The names in a folder.
std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

/// Run a command line in `dir`; returns the exit status, fills `out` with stdout+stderr.
int run_in(const std::string& dir, const std::string& line, std::string* out) {
  return run_shell("cd '" + dir + "' && " + line, out);
}

/// The one error line of a failed command: exactly one line starting "fusesim: error: ".
void expect_one_error_line(const std::string& out, const std::string& part) {
  const auto at = out.find("fusesim: error: ");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at, out.find('\n', at) - at);
  EXPECT_NE(line.find(part), std::string::npos) << "missing '" << part << "' in: " << line;
  EXPECT_EQ(out.find("fusesim: error: ", at + 1), std::string::npos) << out;
}

// ---- hw::write_files_atomic -------------------------------------------------------------------

TEST(CliOutputs, SameFileUnderAnyRelativeSpellingIsRefused) {
  const std::string d = temp_dir("samefile");
  const fs::path cwd = fs::current_path();
  fs::current_path(d);
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"./o3.txt", "o3.txt"}, {"o3.txt", "nosuchdir/../o3.txt"}, {"o3.txt", d + "/o3.txt"}, {"o3.txt", d + "/./o3.txt"}}) {
    EXPECT_THROW(hw::write_files_atomic({{a, "1"}, {b, "2"}}), std::invalid_argument) << a << " vs " << b;
  }
  // Also a symbolic link to the other output's file.
  spit("real.txt", "old");
  fs::create_symlink("real.txt", "link.txt");
  EXPECT_THROW(hw::write_files_atomic({{"real.txt", "1"}, {"link.txt", "2"}}), std::invalid_argument);
  fs::current_path(cwd);
  EXPECT_EQ(listing(d), (std::set<std::string>{"real.txt", "link.txt"}));
  EXPECT_EQ(slurp(d + "/real.txt"), "old");
}

TEST(CliOutputs, TemporaryNameNeverClobbersAUserFile) {
  const std::string d = temp_dir("tmpname");
  spit(d + "/o.txt.tmp", "mine");
  hw::write_files_atomic({{d + "/o.txt", "new"}});
  EXPECT_EQ(slurp(d + "/o.txt.tmp"), "mine");
  EXPECT_EQ(slurp(d + "/o.txt"), "new");
  EXPECT_EQ(listing(d), (std::set<std::string>{"o.txt", "o.txt.tmp"}));
}

TEST(CliOutputs, BadDestinationIsRefusedBeforeAnythingIsWritten) {
  const std::string d = temp_dir("baddest");
  fs::create_directory(d + "/adir");
  spit(d + "/old.json", "old");
  try {
    hw::write_outputs_atomic({{d + "/old.json", "new", "--trace"}, {d + "/adir", "x", "--out"}});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--out '" + d + "/adir': is a directory, expected a file name"), std::string::npos) << e.what();
  }
  EXPECT_THROW(hw::write_files_atomic({{d + "/old.json", "new"}, {d + "/missing/out.txt", "x"}}), std::runtime_error);
  EXPECT_THROW(hw::write_files_atomic({{d + "/old.json", "new"}, {"", "x"}}), std::runtime_error);
  EXPECT_EQ(slurp(d + "/old.json"), "old");
  EXPECT_EQ(listing(d), (std::set<std::string>{"adir", "old.json"}));
}

TEST(CliOutputs, ReplacedFileKeepsItsModeAndALinkIsWrittenThrough) {
  const std::string d = temp_dir("mode");
  spit(d + "/p.txt", "old");
  fs::permissions(d + "/p.txt", fs::perms::owner_read | fs::perms::owner_write);
  hw::write_files_atomic({{d + "/p.txt", "new"}, {d + "/fresh.txt", "x"}});
  EXPECT_EQ(fs::status(d + "/p.txt").permissions(), fs::perms::owner_read | fs::perms::owner_write);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(unsigned(fs::status(d + "/fresh.txt").permissions()), unsigned(0666 & ~mask));
  fs::create_symlink("p.txt", d + "/l.txt");
  hw::write_files_atomic({{d + "/l.txt", "through"}});
  EXPECT_TRUE(fs::is_symlink(d + "/l.txt"));
  EXPECT_EQ(slurp(d + "/p.txt"), "through");
  EXPECT_EQ(listing(d), (std::set<std::string>{"p.txt", "fresh.txt", "l.txt"}));
}

// ---- fusesim run --out / --trace --------------------------------------------------------------

/// `fusesim run` of the fp8/m=16384 case of kScenario with `args` in folder `d` must fail (exit 1)
/// with the one error line `error`.
void expect_run_refused(const std::string& d, const std::string& args, const std::string& error) {
  std::string out;
  EXPECT_EQ(run_in(d, kBin + " run " + kScenario + " --only fp8/m=16384 " + args, &out), 1) << out;
  expect_one_error_line(out, error);
}

TEST(CliOutputs, RunWithAFolderAsOutWritesNoTrace) {
  const std::string d = temp_dir("run_dir");
  fs::create_directory(d + "/adir");
  expect_run_refused(d, "--trace e2.json --out adir", "'adir': is a directory, expected a file name");
  EXPECT_EQ(listing(d), (std::set<std::string>{"adir"}));
}

TEST(CliOutputs, RunWithOutInAMissingFolderWritesNoTrace) {
  const std::string d = temp_dir("run_missing");
  expect_run_refused(d, "--trace e2.json --out nodir/o.txt", "folder 'nodir' does not exist");
  EXPECT_TRUE(listing(d).empty());
}

TEST(CliOutputs, RunOutAndTraceSpelledDifferentlyAreTheSameFile) {
  const std::string d = temp_dir("run_same");
  expect_run_refused(d, "--out ./o3.txt --trace o3.txt", "same file");
  EXPECT_TRUE(listing(d).empty());
  // Writing both to distinct files works, leaving no temporary behind.
  std::string out;
  EXPECT_EQ(run_in(d, kBin + " run " + kScenario + " --only fp8/m=16384 --out o3.txt --trace t.json", &out), 0) << out;
  EXPECT_EQ(listing(d), (std::set<std::string>{"o3.txt", "t.json"}));
}

// ---- fusesim calibrate fit --------------------------------------------------------------------

const std::string kFitBase = kBin + " calibrate fit --hw " + src("hw/h200-2gpu.yaml") + " --measurements " +
                             src("scenarios/h200x2-probes.yaml") + " --commit test";
const std::string kFitH200 = kFitBase + " --max-evaluations 1 --date 2026-01-02";

TEST(FitArgs, OutAndReportTheSameFileAreRefused) {
  const std::string d = temp_dir("fit_same");
  std::string out;
  EXPECT_EQ(run_in(d, kFitH200 + " --out X --report X", &out), 1) << out;
  expect_one_error_line(out, "--out and --report name the same file 'X'");
  EXPECT_EQ(run_in(d, kFitH200 + " --out ./X --report sub/../X", &out), 1) << out;
  expect_one_error_line(out, "--out and --report name the same file");
  EXPECT_EQ(run_in(d, kFitH200 + " --out X --report nodir/r.json", &out), 1) << out;
  expect_one_error_line(out, "--report 'nodir/r.json': folder 'nodir' does not exist");
  EXPECT_TRUE(listing(d).empty());
  EXPECT_EQ(run_in(d, kFitH200 + " --out X --report R", &out), 0) << out;
  EXPECT_EQ(listing(d), (std::set<std::string>{"X", "R"}));
  EXPECT_EQ(slurp(d + "/R").substr(0, 1), "{");
  EXPECT_NE(slurp(d + "/X").find("name: h200-2gpu"), std::string::npos);
}

TEST(FitArgs, TableFilesResolveFromTheOutputFolder) {
  const std::string d = temp_dir("fit_tables");
  std::string out;
  // Written elsewhere than hw/: the table's path is rewritten from the new folder.
  fs::create_directories(d + "/x");
  ASSERT_EQ(run_in(src(""), kFitH200 + " --out " + d + "/x/f2.yaml", &out), 0) << out;
  const std::string text = slurp(d + "/x/f2.yaml");
  const fs::path want = fs::weakly_canonical(src("calibrate/data/h200x2/gemm.jsonl")).lexically_relative(fs::weakly_canonical(d + "/x"));
  EXPECT_NE(text.find("gemm: {file: " + want.string() + ", kind: measured, source: \"probe_gemm"), std::string::npos) << text;
  const auto hw = models::load_hardware(d + "/x/f2.yaml");
  EXPECT_FALSE(hw.table("gemm").rows.empty());
  EXPECT_EQ(fs::weakly_canonical(hw.table("gemm").file), fs::weakly_canonical(src("calibrate/data/h200x2/gemm.jsonl")));
  // A relative --out from another working folder resolves too.
  ASSERT_EQ(run_in(d, kFitH200 + " --out f3.yaml", &out), 0) << out;
  EXPECT_FALSE(models::load_hardware(d + "/f3.yaml").table("gemm").rows.empty());
  // Written beside the starting file (a copy with its table, in the same layout), the path is as it was.
  fs::create_directories(d + "/hw");
  fs::create_directories(d + "/calibrate/data/h200x2");
  fs::copy_file(src("hw/h200-2gpu.yaml"), d + "/hw/h200-2gpu.yaml");
  fs::copy_file(src("calibrate/data/h200x2/gemm.jsonl"), d + "/calibrate/data/h200x2/gemm.jsonl");
  ASSERT_EQ(run_in(d, kBin + " calibrate fit --hw hw/h200-2gpu.yaml --measurements " + src("scenarios/h200x2-probes.yaml") +
                          " --max-evaluations 1 --out hw/fitted.yaml",
                   &out),
            0)
      << out;
  EXPECT_NE(slurp(d + "/hw/fitted.yaml").find("gemm: {file: ../calibrate/data/h200x2/gemm.jsonl, kind: measured"), std::string::npos);
  EXPECT_FALSE(models::load_hardware(d + "/hw/fitted.yaml").table("gemm").rows.empty());
}

TEST(FitArgs, BadNumbersAndDatesAreRefusedNamingTheOption) {
  const std::string d = temp_dir("fit_args");
  const std::vector<std::pair<std::string, std::string>> bad{
      {"--holdout kfold=0", "--holdout kfold=0: K must be a whole number of 2 or more"},
      {"--holdout kfold=1", "--holdout kfold=1: K must be a whole number of 2 or more"},
      {"--holdout kfold=x", "--holdout kfold=x: K must be a whole number"},
      {"--holdout kfold=1000", "--holdout kfold=1000: K must be from 2 to "},
      {"--holdout kfold=1000/3", "--holdout kfold=1000/3: K must be from 2 to "},
      {"--holdout kfold=5/5", "--holdout kfold=5/5: the fold I of kfold=K/I must be a whole number from 0 to 4"},
      {"--holdout kfold=5/-1", "from 0 to 4"},
      {"--holdout m=12345678", "--holdout: holdout rule 'm=12345678' selects no point"},
      {"--max-evaluations 0", "--max-evaluations 0: expected a whole number of 1 or more"},
      {"--max-evaluations=-5", "--max-evaluations -5: expected a whole number of 1 or more"},
      {"--prior-weight=-1", "--prior-weight -1: expected a number of 0 or more"},
      {"--phase-weight=-0.5", "--phase-weight -0.5: expected a number of 0 or more"},
      {"--date notadate", "--date 'notadate': expected a date written YYYY-MM-DD"},
      {"--date 2026-13-01", "--date '2026-13-01'"},
      {"--date 2026-02-30", "--date '2026-02-30'"},
  };
  for (const auto& [args, msg] : bad) {
    std::string out;
    const std::string rest = args.find("--max-evaluations") == 0 ? " --date 2026-01-02" : args.find("--date") == 0 ? " --max-evaluations 1" : "";
    EXPECT_EQ(run_in(d, kFitBase + " " + args + rest + " --out f.yaml --report r.json", &out), 1) << args << "\n" << out;
    expect_one_error_line(out, msg);
    EXPECT_EQ(out.find("fold 0/"), std::string::npos) << args << ": a fold ran\n" << out;
  }
  EXPECT_TRUE(listing(d).empty());
  // The edges of the valid ranges pass.
  std::string out;
  EXPECT_EQ(run_in(d, kFitBase + " --max-evaluations 1 --holdout kfold=2/1 --prior-weight 0 --phase-weight 0 --date 2028-02-29", &out), 0)
      << out;
  // A k-fold run's report gives the folds' held-out figures in its summary (they were null there).
  EXPECT_EQ(run_in(d, kFitBase + " --max-evaluations 1 --holdout kfold=2 --report kf.json", &out), 0) << out;
  std::ifstream in(d + "/kf.json");
  const auto rep = nlohmann::json::parse(in);
  EXPECT_EQ(rep["summary"]["holdout_from"], "kfold");
  EXPECT_EQ(rep["summary"]["median_abs_holdout_pct"], rep["kfold"]["median_abs_holdout_pct"]);
  EXPECT_FALSE(rep["summary"]["median_abs_holdout_pct"].is_null());
}

// ---- fusesim trace analyze --------------------------------------------------------------------

TEST(CliTrace, AnalyzeRefusesAFileThatIsNotATraceOrHasNoEvents) {
  std::string out;
  if (run_shell(kBin + " trace --help", &out) != 0) GTEST_SKIP() << "fusesim built without the trace module";
  const std::string d = temp_dir("trace_empty");
  spit(d + "/a.json", "[1,2,3]");
  spit(d + "/e.json", "{\"traceEvents\": []}");
  EXPECT_EQ(run_in(d, kBin + " trace analyze a.json", &out), 1) << out;
  expect_one_error_line(out, "a.json: byte");
  expect_one_error_line(out, "not a Kineto / Chrome trace");
  EXPECT_EQ(run_in(d, kBin + " trace analyze e.json", &out), 1) << out;
  expect_one_error_line(out, "e.json: the trace holds no events");
}

}  // namespace
}  // namespace fusesim::calibrate
