// Limits checked on a JSON text before it is parsed (issue 22): a document nested thousands deep
// exhausted the stack or took 1.6 GB; a line of megabytes is no measurement record.
#pragma once

#include <cstddef>
#include <string_view>

#include "hw/numbers.hpp"

namespace fusesim::hw {

inline constexpr size_t kMaxJsonDepth = 64;             ///< nesting of [ and { (records here use < 10)
inline constexpr size_t kMaxJsonBytes = size_t(64) << 20;  ///< 64 MiB per document

/// Refuse (FileError at `at`, naming the limit) a JSON text nested deeper than `max_depth` or longer
/// than `max_bytes`. A linear scan that skips strings (escapes included); it checks nothing else
/// (the parser reports syntax errors).
void check_json_limits(std::string_view text, const NumberAt& at, size_t max_depth = kMaxJsonDepth, size_t max_bytes = kMaxJsonBytes);

}  // namespace fusesim::hw
