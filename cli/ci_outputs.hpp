// `fusesim check`'s outputs for CI systems: JUnit XML (one test case per measured point) and a
// comparison of predictions with a stored run (the regression a model change causes).
#pragma once

#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fusesim::cli {

/// One scenario file's part of a JUnit report: `result` is scenario::run()'s JSON (null when the
/// file could not be checked; `error` then says why).
struct JunitFile {
  std::string path;
  nlohmann::json result;
  std::string error;
};

/// One prediction that moved since the baseline.
struct Moved {
  std::string scenario, id;
  double old_us = 0, new_us = 0, change_pct = 0;  ///< us, us, percent of old
  size_t order = 0;                                ///< its place among the compared cases
};

/// What compare_baseline found.
struct BaselineDiff {
  std::vector<Moved> moved;               ///< |change| > threshold, in run order
  std::vector<Moved> within;              ///< compared and within the threshold, in run order
  std::vector<std::pair<std::string, std::string>> not_in_baseline;  ///< (scenario, case id) of cases the baseline lacks
  size_t compared = 0;                    ///< cases found in both
  double threshold_pct = 0;               ///< the threshold they were judged by
  std::string baseline_name;              ///< the baseline file, as given
};

/**
 * JUnit XML (the element and attribute set of the schema in tests/cli/junit.xsd): one <testsuite>
 * per file (name: the file's path), one <testcase> per case with a measured value (classname: the
 * scenario's name, name: the case id). A case outside its tolerance gets a <failure> whose message
 * gives predicted, measured, error and tolerance; a known miss still outside it is <skipped> with
 * its reason; a known miss now within tolerance is a <failure> (check fails it too); a file that
 * could not be checked is one test case with an <error>. With `baseline` (check --baseline), one
 * more <testsuite> named "baseline FILE": a <testcase> per compared prediction (classname: the
 * scenario, name: "ID (prediction)"), a <failure> of type "prediction moved" for each moved one
 * with old, new, change and threshold; a case the baseline lacks is <skipped>. Text is
 * XML-escaped, control characters other than tab/newline replaced, invalid UTF-8 replaced by U+FFFD.
 */
std::string junit_xml(const std::vector<JunitFile>& files, const BaselineDiff* baseline = nullptr);

/// The largest predicted_us a baseline may hold (us): 10^10, hw::kMaxMeasuredUs's bound.
inline constexpr double kMaxBaselineUs = 1e10;

/// A baseline read once (index_baseline): each run's predictions by (file, scenario, id) where the
/// baseline records the run's file, and by (scenario, id).
struct BaselineIndex {
  std::string name;  ///< the baseline file, as given
  std::map<std::tuple<std::string, std::string, std::string>, double> by_file;  ///< (file, scenario, id) -> predicted_us
  std::map<std::pair<std::string, std::string>, double> by_scenario;            ///< (scenario, id) -> predicted_us
  std::map<std::string, int> runs_of_scenario;                                   ///< scenario name -> runs of it
  std::set<std::pair<std::string, std::string>> seen_runs;                       ///< (file or "", scenario)
};

/**
 * Read a baseline: a `run --format json` result, an array of them, or the {"fusesim_predictions":
 * 1, "runs": [...]} that `check --save-predictions` writes. Errors: std::invalid_argument naming
 * `baseline_name` when the document has none of those shapes, is a predictions file of another
 * format, repeats a run or a case id, or a case lacks a predicted_us in (0, kMaxBaselineUs].
 */
BaselineIndex index_baseline(const nlohmann::json& baseline, const std::string& baseline_name);

/**
 * Compare every case's predicted_us in `runs` (scenario::run() results; `files`, when given, the
 * scenario file of each run) with the baseline's. A run is matched by (file, scenario name) where
 * the baseline records its file and the file is among the baseline's, else by scenario name when
 * exactly one baseline run has it; a case then by id (ids compared as saved: invalid UTF-8 as
 * U+FFFD). A case moved when |new - old| / old x 100 > threshold_pct. Errors: std::invalid_argument
 * when the threshold is not a finite number >= 0.
 */
BaselineDiff compare_baseline(const BaselineIndex& baseline, const std::vector<nlohmann::json>& runs, double threshold_pct,
                              const std::vector<std::string>* files = nullptr);

/// The document `check --save-predictions FILE` writes: {"fusesim_predictions": 1, "runs": [...]}
/// with, per run, its scenario name, file and each case's id and predicted_us.
nlohmann::json predictions_document(const std::vector<std::pair<std::string, nlohmann::json>>& path_and_result);

}  // namespace fusesim::cli
