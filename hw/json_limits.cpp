#include "hw/json_limits.hpp"

#include <algorithm>
#include <set>
#include <vector>

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

int json_error_line(std::string_view text, const NumberAt& at, const nlohmann::json::exception& e) {
  int line = at.line > 0 ? at.line : 1;
  size_t upto = 0;
  if (const auto* pe = dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
    upto = std::min(text.size(), pe->byte > 0 ? size_t(pe->byte - 1) : size_t(0));
  } else {
    // out_of_range 406 ("number overflow parsing '1e400'") carries no position: the line of the
    // first occurrence of the quoted token.
    const std::string_view msg = e.what();
    const auto a = msg.find("parsing '");
    const auto b = a == std::string_view::npos ? a : msg.find('\'', a + 9);
    if (b != std::string_view::npos) {
      const auto at_token = text.find(msg.substr(a + 9, b - a - 9));
      if (at_token != std::string_view::npos) upto = at_token;
    }
  }
  for (size_t i = 0; i < upto; ++i) line += text[i] == '\n';
  return line;
}

std::string json_error_text(const nlohmann::json::exception& e) {
  if (e.id == 406) {  // number overflow: "[json.exception.out_of_range.406] number overflow parsing '1e400'"
    std::string_view what = e.what();
    if (const auto b = what.find("] "); b != std::string_view::npos) what.remove_prefix(b + 2);
    return fmt::format("a number out of the range of a double ({}), expected a finite number", what);
  }
  return fmt::format("malformed JSON: {}", e.what());
}

DuplicateJsonKey::DuplicateJsonKey(const std::string& k)
    : std::runtime_error("key '" + k + "' given twice in the same JSON object: expected each key once"), key(k) {}

nlohmann::json parse_json_unique_keys(std::string_view text) {
  // One set of keys per open object (the nesting is bounded by check_json_limits before this runs).
  std::vector<std::set<std::string>> open;
  auto cb = [&open](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) open.emplace_back();
    else if (event == E::object_end && !open.empty()) open.pop_back();
    else if (event == E::key && !open.empty() && parsed.is_string() && !open.back().insert(parsed.get<std::string>()).second)
      throw DuplicateJsonKey(parsed.get<std::string>());
    return true;
  };
  return nlohmann::json::parse(text, cb);
}

nlohmann::json parse_json_bounded(std::string_view text, const NumberAt& at, size_t max_depth, size_t max_bytes) {
  check_json_limits(text, at, max_depth, max_bytes);
  try {
    return parse_json_unique_keys(text);
  } catch (const DuplicateJsonKey& e) {
    throw FileError(at.file, at.line, e.key, e.what());
  } catch (const nlohmann::json::exception& e) {
    // A syntax error (parse_error, with its byte offset) or a number too large for a double
    // (out_of_range 406, "1e400"): both name the file and line, never nlohmann's bare message.
    throw FileError(at.file, json_error_line(text, at, e), at.key, json_error_text(e));
  }
}

}  // namespace fusesim::hw
