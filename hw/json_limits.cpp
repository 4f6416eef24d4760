#include "hw/json_limits.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "hw/hardware.hpp"

namespace fusesim::hw {

void check_json_limits(std::string_view text, const NumberAt& at, size_t max_depth, size_t max_bytes) {
  if (text.size() > max_bytes)
    throw FileError(at.file, at.line, at.key, fmt::format("a JSON document of {} bytes is longer than the {} bytes allowed", text.size(), max_bytes));
  size_t depth = 0;
  bool in_string = false;
  int line = at.line > 0 ? at.line : 1;  // the line of byte i (a whole file's lines count from 1)
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    line += c == '\n';
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw FileError(at.file, line, at.key,
                        fmt::format("JSON nested more than {} levels deep (at byte {}): refused, not parsed", max_depth, i + 1));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

nlohmann::json parse_json_bounded(std::string_view text, const NumberAt& at, size_t max_depth, size_t max_bytes) {
  check_json_limits(text, at, max_depth, max_bytes);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // The error's byte offset (1-based) -> the line it is on.
    int line = at.line > 0 ? at.line : 1;
    const size_t upto = std::min(text.size(), e.byte > 0 ? size_t(e.byte - 1) : size_t(0));
    for (size_t i = 0; i < upto; ++i) line += text[i] == '\n';
    throw FileError(at.file, line, at.key, fmt::format("malformed JSON: {}", e.what()));
  }
}

}  // namespace fusesim::hw
