// The one checked number parser for input files (issue 22): text or a JSON/YAML double to a number
// with every failure a hw::FileError naming the file, line and key and what was expected, never a
// std::stoi/stod/bad-cast message, and every conversion to an integer range-checked (a double such
// as 1e300 cast to int64_t is undefined behaviour; the release build made it INT64_MIN).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fusesim::hw {

/// Where a number comes from, for the error: file, line (0: unknown) and key ("" for none).
struct NumberAt {
  std::string file;
  int line = 0;
  std::string key;
};

/// Most bytes a number's text may have (longer: an error, so no 40 KB digit string is parsed).
inline constexpr size_t kMaxNumberText = 64;

/// A whole number in [lo, hi] from its decimal text (optional sign, digits; surrounding blanks
/// allowed). Errors: FileError at `at` saying what was expected and the text (shortened).
int64_t parse_int(std::string_view text, const NumberAt& at, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);

/// A finite number from its text (what strtod reads, all of it; blanks allowed around).
/// Errors: FileError at `at` for no number, trailing text, overflow or a non-finite value.
double parse_double(std::string_view text, const NumberAt& at);

/// `v` as a whole number in [lo, hi]: refused (FileError at `at`) when not finite, not whole or
/// out of the range, so no cast is ever out of int64_t's range.
int64_t to_int(double v, const NumberAt& at, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);

/// True for the text of a whole number with a leading zero ("010", "-0999", "+01024"): yaml-cpp reads
/// it as octal (YAML 1.1; 532 for 01024, an error for 0999) where YAML 1.2's core schema and every
/// float in the same file read decimal, so the YAML loaders refuse it (issue 22's third trial).
inline bool leading_zero_integer(std::string_view t) {
  size_t i = !t.empty() && (t[0] == '+' || t[0] == '-') ? 1 : 0;
  if (t.size() < i + 2 || t[i] != '0') return false;
  for (size_t j = i + 1; j < t.size(); ++j)
    if (t[j] < '0' || t[j] > '9') return false;
  return true;
}

/// The range of a measured time (us), the one definition every reader shares (scenario files'
/// measured values and phases, RESULT_JSON, bench_ar, AFD lines and timelines, seed-004 documents,
/// probes): a GPU event's time from 1 ns to about 2.8 hours. Outside, it is a unit mistake (a time in
/// seconds or ps) or hostile (1e-300 made every error percentage overflow to inf, and calibrate fit
/// wrote `residual_rms_pct: inf` into a hardware file).
inline constexpr double kMinMeasuredUs = 1e-3, kMaxMeasuredUs = 1e10;

/// `us` when it is a measured time in [kMinMeasuredUs, kMaxMeasuredUs]. Errors: FileError at `at`
/// ("a measured time must be from 0.001 to 1e+10 us, got X"); `what` replaces "a measured time".
double check_measured_us(double us, const NumberAt& at, const char* what = "a measured time");

/// `us` when it is a timeline time: an offset from the timeline's reference kernel (either sign: AFD
/// FFN kernels start waiting before it; seed 004 starts at -7.08 us) within +-kMaxMeasuredUs. Errors:
/// FileError at `at` ("a timeline time must be from -1e+10 to 1e+10 us, got X").
double check_timeline_us(double us, const NumberAt& at);

}  // namespace fusesim::hw
