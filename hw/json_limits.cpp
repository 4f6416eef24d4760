#include "hw/json_limits.hpp"

#include <fmt/format.h>

#include "hw/hardware.hpp"

namespace fusesim::hw {

void check_json_limits(std::string_view text, const NumberAt& at, size_t max_depth, size_t max_bytes) {
  if (text.size() > max_bytes)
    throw FileError(at.file, at.line, at.key, fmt::format("a JSON document of {} bytes is longer than the {} bytes allowed", text.size(), max_bytes));
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw FileError(at.file, at.line, at.key,
                        fmt::format("JSON nested more than {} levels deep (at byte {}): refused, not parsed", max_depth, i + 1));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace fusesim::hw
