// Limits checked on a JSON text before it is parsed (issue 22): a document nested thousands deep
// exhausted the stack or took 1.6 GB; a line of megabytes is no measurement record.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "hw/numbers.hpp"

namespace fusesim::hw {

inline constexpr size_t kMaxJsonDepth = 64;             ///< nesting of [ and { (records here use < 10)
inline constexpr size_t kMaxJsonBytes = size_t(64) << 20;  ///< 64 MiB per document

/// Refuse (FileError at `at`, naming the limit) a JSON text nested deeper than `max_depth` or longer
/// than `max_bytes`. A nesting error names the line of the byte that went too deep (`at.line` is the
/// text's first line; 0: a whole file, counted from 1). A linear scan that skips strings (escapes
/// included); it checks nothing else (the parser reports syntax errors).
void check_json_limits(std::string_view text, const NumberAt& at, size_t max_depth = kMaxJsonDepth, size_t max_bytes = kMaxJsonBytes);

/**
 * The project's bounded JSON parse: check_json_limits, then nlohmann::json::parse. `at.line` is the
 * line the text starts on (0: the text is a whole file, whose lines are counted from 1). Errors:
 * FileError naming `at.file`, the line (of the syntax error, for a multi-line text) and `at.key`,
 * for a text over the limits ("nested more than 64 levels deep"), malformed JSON (the parser's
 * message) or a number out of the range of a double ("1e400"; nlohmann's out_of_range 406). A document nested thousands deep never reaches the parser (stack and memory).
 */
nlohmann::json parse_json_bounded(std::string_view text, const NumberAt& at, size_t max_depth = kMaxJsonDepth,
                                  size_t max_bytes = kMaxJsonBytes);

/// The line (counted as parse_json_bounded counts: `at.line` is the text's first line, 0 a whole
/// file) where nlohmann's exception `e` from parsing `text` happened: a parse_error's byte offset, or
/// for a number overflow (out_of_range 406, no offset) the first occurrence of the number's text.
int json_error_line(std::string_view text, const NumberAt& at, const nlohmann::json::exception& e);

/// What a parse exception means, for FileError: "malformed JSON: ..." or, for a number too large
/// for a double ("1e400"), "a number out of the range of a double (...), expected a finite number".
std::string json_error_text(const nlohmann::json::exception& e);

/// An object of a JSON text gave one key twice (parse_json_unique_keys).
struct DuplicateJsonKey : std::runtime_error {
  std::string key;
  explicit DuplicateJsonKey(const std::string& k);
};

/**
 * nlohmann::json::parse(text), refusing an object that gives a key twice: nlohmann keeps the last
 * value silently, so a RESULT_JSON line with `"m": 8192, ..., "m": 1024` had been fitted at 1024
 * under an id saying 8192 (issue 22's third trial; the YAML loaders refuse a repeated key too).
 * Errors: DuplicateJsonKey; nlohmann's exceptions for a syntax error or a number out of range.
 */
nlohmann::json parse_json_unique_keys(std::string_view text);

}  // namespace fusesim::hw
