// The one writer of a CSV text cell from input (case ids, sources, scenario names, series labels,
// kernel and phase names), used by every CSV fusesim writes: `run --format csv`, `sweep --format
// csv` (and its `--resume`, which compares its kept rows with these same cells), and the plot CSVs
// of `check --plot` / `calibrate fit --plot`. Header-only, like hw/printable.hpp.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hw/printable.hpp"

namespace fusesim::hw {

/// True when a spreadsheet would read a cell beginning with `text` as a formula (OWASP "CSV
/// injection"): its first character is '=', '+', '-', '@', a tab or a carriage return.
inline bool csv_formula_lead(std::string_view text) {
  if (text.empty()) return false;
  const char c = text.front();
  return c == '=' || c == '+' || c == '-' || c == '@' || c == '\t' || c == '\r';
}

/**
 * `text` as one quoted CSV text cell: control characters and invalid UTF-8 written as escapes
 * (hw::printable: `\n`, `\x1b`), so a cell is one line and no ESC reaches whoever views the table;
 * a cell that would begin with '=', '+', '-', '@', tab or carriage return is prefixed with a single
 * quote `'` so that Excel / LibreOffice show it as text instead of evaluating it (`=cmd|...` ->
 * `"'=cmd|..."`); then RFC 4180 quoting (in quotes, a quote inside doubled). For text cells only:
 * numbers are written as numbers (a negative error_pct stays `-3.2`).
 */
inline std::string csv_cell(std::string_view text) {
  std::string t = printable(text);
  if (csv_formula_lead(t)) t.insert(t.begin(), '\'');
  std::string o = "\"";
  o.reserve(t.size() + 3);
  for (char c : t) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

/// A cell that holds a number or a word from input (a parameter name, its value, a phase name): a
/// finite decimal number (`-3.5`, `1024`) or a plain word (letters, digits, `_ . / :`, not beginning
/// with a formula lead) as it is, anything else as csv_cell.
inline std::string csv_value(std::string_view text) {
  if (text.empty()) return std::string();
  const std::string t(text);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  const bool number = end == t.c_str() + t.size() && errno == 0 && std::isfinite(v) && t.find_first_of("xXpP") == std::string::npos;
  if (number && t.find_first_of(" \t\n\r\f\v") == std::string::npos) return t;
  bool plain = !csv_formula_lead(t);
  for (char c : t)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' || c == ':');
  return plain ? t : csv_cell(t);
}

}  // namespace fusesim::hw
