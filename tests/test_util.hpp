// Helpers shared by the tests of every layer (tests/<layer>/...): temporary files of the test's own,
// reading files, and the message of the error a call throws.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace fusesim::test {

/// The source folder the tests were built from (FUSESIM_SOURCE_DIR).
inline const std::string kRoot = FUSESIM_SOURCE_DIR;

/// A temporary file name of this test's own: ctest runs the tests of one binary as parallel
/// processes, so a fixed name shared by two tests races (one reads the other's half-written file).
inline std::string test_tmp(const std::string& name) {
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + (t ? std::string(t->test_suite_name()) + "." + t->name() + "-" : std::string()) + name;
}

/// `text` written to the test's own temporary file `name`; returns its path.
inline std::string write_tmp(const std::string& name, const std::string& text) {
  const std::string p = test_tmp(name);
  std::ofstream(p) << text;
  return p;
}

/// The whole file at `path` ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The message of the exception of type E that `f()` throws, "" when it throws none.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

/// Loading `text` (written to the test's own file `name`) with `load(path)` must throw E naming
/// `needle` at line `line` of the file (":LINE:").
template <class E, class Load>
void expect_error_at(Load&& load, const std::string& name, const std::string& text, const std::string& needle, int line) {
  const std::string path = write_tmp(name, text);
  const std::string w = error_of<E>([&] { load(path); });
  EXPECT_NE(w.find(needle), std::string::npos) << (w.empty() ? "accepted a bad file: " + needle : w);
  const std::string at = std::string(":").append(std::to_string(line)).append(":");  // ":LINE:"
  EXPECT_NE(w.find(at), std::string::npos) << w;
}

/// A wall-time bound of a hostile-input test (`seconds` on the release build), multiplied by the
/// environment's FUSESIM_TEST_TIME_SCALE (default 1): the sanitizer build of .ci/setup.sh sets 10,
/// AddressSanitizer's documented slowdown being about 2x and its leak and UB checks adding more, so
/// the bound still catches a hang (unbounded work) without timing the instrumentation.
inline double time_limit_s(double seconds) {
  const char* f = std::getenv("FUSESIM_TEST_TIME_SCALE");
  const double scale = f ? std::atof(f) : 1.0;
  return seconds * (scale > 0 ? scale : 1.0);
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace fusesim::test
