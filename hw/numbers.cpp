#include "hw/numbers.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "hw/hardware.hpp"

namespace fusesim::hw {
namespace {

std::string shown(std::string_view t) {
  std::string s(t.substr(0, 40));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  return t.size() > 40 ? fmt::format("'{}...' ({} bytes)", s, t.size()) : "'" + s + "'";
}

std::string_view trim(std::string_view t) {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t' || t.front() == '\r' || t.front() == '\n')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r' || t.back() == '\n')) t.remove_suffix(1);
  return t;
}

std::string range_text(int64_t lo, int64_t hi) {
  if (lo == INT64_MIN && hi == INT64_MAX) return "a whole number";
  if (hi == INT64_MAX) return fmt::format("a whole number >= {}", lo);
  if (lo == INT64_MIN) return fmt::format("a whole number <= {}", hi);
  return fmt::format("a whole number from {} to {}", lo, hi);
}

}  // namespace

int64_t parse_int(std::string_view text, const NumberAt& at, int64_t lo, int64_t hi) {
  const std::string_view t = trim(text);
  auto fail = [&](const char* why) -> int64_t {
    throw FileError(at.file, at.line, at.key, fmt::format("expected {}, got {}{}", range_text(lo, hi), shown(text), why));
  };
  if (t.size() > kMaxNumberText) return fail(" (too long)");
  size_t i = 0;
  const bool neg = !t.empty() && t[0] == '-';
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) ++i;
  if (i == t.size()) return fail("");
  // Accumulate as a negative number (INT64_MIN has no positive counterpart).
  int64_t v = 0;
  for (; i < t.size(); ++i) {
    if (t[i] < '0' || t[i] > '9') return fail("");
    const int d = t[i] - '0';
    if (v < (INT64_MIN + d) / 10) return fail(" (out of range)");
    v = v * 10 - d;
  }
  if (!neg) {
    if (v == INT64_MIN) return fail(" (out of range)");
    v = -v;
  }
  if (v < lo || v > hi) return fail(" (out of range)");
  return v;
}

double parse_double(std::string_view text, const NumberAt& at) {
  const std::string_view t = trim(text);
  auto fail = [&](const char* why) -> double {
    throw FileError(at.file, at.line, at.key, fmt::format("expected a finite number, got {}{}", shown(text), why));
  };
  if (t.empty()) return fail("");
  if (t.size() > kMaxNumberText) return fail(" (too long)");
  const std::string s(t);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return fail("");
  if (errno == ERANGE && std::fabs(v) > 1) return fail(" (out of range)");
  if (!std::isfinite(v)) return fail(" (not finite)");
  return v;
}

int64_t to_int(double v, const NumberAt& at, int64_t lo, int64_t hi) {
  // 2^63 is exactly representable; every double below it (and >= -2^63) converts without UB.
  if (!std::isfinite(v) || v != std::floor(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0 ||
      static_cast<int64_t>(v) < lo || static_cast<int64_t>(v) > hi)
    throw FileError(at.file, at.line, at.key, fmt::format("expected {}, got {}", range_text(lo, hi), fmt::format("{:.17g}", v)));
  return static_cast<int64_t>(v);
}

double check_measured_us(double us, const NumberAt& at, const char* what) {
  if (!(us >= kMinMeasuredUs && us <= kMaxMeasuredUs))
    throw FileError(at.file, at.line, at.key, fmt::format("{} must be from {:g} to {:g} us, got {:g}", what, kMinMeasuredUs, kMaxMeasuredUs, us));
  return us;
}

double check_timeline_us(double us, const NumberAt& at) {
  if (!(std::fabs(us) <= kMaxMeasuredUs))
    throw FileError(at.file, at.line, at.key, fmt::format("a timeline time must be from -{0:g} to {0:g} us, got {1:g}", kMaxMeasuredUs, us));
  return us;
}

}  // namespace fusesim::hw
