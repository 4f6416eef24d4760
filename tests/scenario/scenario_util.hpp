// Helpers of the tests that load and run scenario files (tests/scenario, tests/models/<model>):
// the error a scenario raises on loading, or on the way from loading to its judged result.
#pragma once

#include <functional>
#include <string>

#include "scenario/load.hpp"
#include "scenario/run.hpp"
#include "tests/test_util.hpp"

namespace fusesim::test {

/// What a test may do with a scenario's result after scenario::run (e.g. judge its timelines).
using AfterRun = std::function<void(const models::Scenario&, const nlohmann::json&)>;

/// Load the scenario file at `path`, run it on its hardware and hand scenario and result to `then`
/// (when given): the message of the hw::FileError raised on the way, "" when it all runs.
inline std::string scenario_file_error(const std::string& path, const AfterRun& then = {}) {
  return error_of<hw::FileError>([&] {
    const auto sc = scenario::load(path);
    const auto res = scenario::run(sc, scenario::load_hardware(sc));
    if (then) then(sc, res);
  });
}

/// scenario_file_error of `text` written to the test's own temporary file `name`.
inline std::string scenario_error(const std::string& name, const std::string& text, const AfterRun& then = {}) {
  return scenario_file_error(write_tmp(name, text), then);
}

/// The scenario `text` must fail to load (scenario::load) with `needle` at line `line`.
inline void expect_load_error(const std::string& text, const std::string& needle, int line) {
  expect_error_at<hw::FileError>([](const std::string& p) { scenario::load(p); }, "bad.yaml", text, needle, line);
}

}  // namespace fusesim::test
