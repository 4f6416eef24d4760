// Names from input (scenario names, case ids, kernel names, table names) made safe for the two
// places a plot puts them: a gnuplot script and a file name. Header-only and free of fusesim types,
// so that any layer writing a plot (calibrate/plot.cpp, a tuner's plot) can use it.
//
// Why: gnuplot runs `!cmd` at the start of a line as a shell command and substitutes `cmd` in
// backquotes inside double-quoted strings (gnuplot 5.4 manual, "Substitution"; checked on Debian's
// gnuplot 5.4.4), and a name like `../../x` chosen as a file name writes outside the output folder.
#pragma once

#include <cctype>
#include <filesystem>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fusesim::plotnames {

/// `s` with every byte gnuplot could read as a line break or control character (< 0x20, 0x7f)
/// replaced by '?'. Bytes >= 0x80 (UTF-8) are kept.
inline std::string printable(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    o += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  return o;
}

/// A gnuplot single-quoted string literal holding `s`: single quotes doubled (gnuplot's only escape
/// in single quotes), control characters replaced by '?' (a newline would end the command and let
/// the next line run, e.g. `!touch FILE`). Single quotes, unlike double quotes, get no backquote
/// command substitution and no backslash escapes.
inline std::string gnuplot_literal(std::string_view s) {
  std::string o = "'";
  for (char c : printable(s)) o += c == '\'' ? std::string("''") : std::string(1, c);
  return o + "'";
}

/// Text safe after `#` in a gnuplot script: control characters and backslashes (a trailing
/// backslash continues a comment onto the next line) replaced by '?'.
inline std::string gnuplot_comment(std::string_view s) {
  std::string o = printable(s);
  for (char& c : o)
    if (c == '\\') c = '?';
  return o;
}

/// A file-name stem from `s`: characters outside [A-Za-z0-9._-] become '_', a leading '.' becomes
/// '_' (no hidden files, no "." or ".."), at most `max_len` bytes; "unnamed" when `s` is empty.
/// The result contains no '/' and cannot leave the folder it is joined to.
inline std::string safe_file_stem(std::string_view s, size_t max_len = 150) {
  std::string o;
  for (char c : s) {
    if (o.size() >= max_len) break;
    const auto u = static_cast<unsigned char>(c);
    const bool ok = (u < 0x80 && std::isalnum(u)) || c == '-' || c == '_' || c == '.';
    o += ok ? c : '_';
  }
  if (o.empty()) return "unnamed";
  if (o[0] == '.') o[0] = '_';
  return o;
}

/// safe_file_stem(s, max_len) when that keeps `s` as it is; otherwise (a character replaced, or cut
/// at max_len) the sanitised text cut to leave room, then '-' and 8 hex digits of a 64-bit FNV-1a
/// hash of the whole of `s`: ids that sanitise alike (`a?b/x`, `a*b/x`; two long ids differing
/// past max_len) get distinct stems instead of overwriting each other's files. At most max_len bytes
/// (max_len >= 16); the same `s` always gives the same stem.
inline std::string unique_file_stem(std::string_view s, size_t max_len = 150) {
  const std::string plain = safe_file_stem(s, max_len);
  if (plain == s) return plain;
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08llx", static_cast<unsigned long long>((h >> 32) ^ (h & 0xffffffffull)) & 0xffffffffull);
  std::string o = plain.substr(0, std::min(plain.size(), max_len - 9));
  return o + "-" + hex;
}

/// `dir / name` where `name` must be a plain file name (no '/', not "." or "..", not empty);
/// std::invalid_argument otherwise. Use with safe_file_stem() for names derived from input.
inline std::filesystem::path path_inside(const std::filesystem::path& dir, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos || name.find('\0') != std::string::npos)
    throw std::invalid_argument("output file name '" + printable(name) + "' is not a plain file name inside '" + dir.string() + "'");
  return dir / name;
}

}  // namespace fusesim::plotnames
