#include "hw/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "hw/hardware.hpp"

namespace fusesim::hw {

namespace {
/// Reject a mapping that repeats a key anywhere in the document (yaml-cpp keeps both silently).
void check_duplicate_keys(const YAML::Node& n, const std::string& path, const std::string& where) {
  if (n.IsMap()) {
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
      const std::string here = where.empty() ? k : where + "." + k;
      if (!seen.insert(k).second)
        throw FileError(path, it->first.Mark().line + 1, here, "key given twice in the same mapping");
      check_duplicate_keys(it->second, path, here);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) check_duplicate_keys(n[i], path, where + "[" + std::to_string(i) + "]");
  }
}
}  // namespace

YAML::Node load_yaml_map(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw FileError(path, 0, "", fmt::format("is a directory, expected a {}", what));
  std::ifstream in(path);
  if (!in) throw FileError(path, 0, "", fmt::format("cannot open {}: {}", what, std::strerror(errno)));
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    std::string hint;
    // yaml-cpp reports an unclosed flow collection where it gave up (often the next entry's line);
    // name the line of the bracket left open, found by a scan that skips quoted text and comments.
    if (e.msg.find("flow not found") != std::string::npos) {
      std::ifstream again(path);
      std::vector<std::pair<char, int>> open;
      std::string text;
      for (int n = 1; std::getline(again, text) && n <= e.mark.line + 1; ++n) {
        char quote = 0;
        for (char ch : text) {
          if (quote) { if (ch == quote) quote = 0; continue; }
          if (ch == '"' || ch == '\'') quote = ch;
          else if (ch == '#') break;
          else if (ch == '{' || ch == '[') open.emplace_back(ch, n);
          else if ((ch == '}' || ch == ']') && !open.empty()) open.pop_back();
        }
      }
      if (!open.empty()) hint = fmt::format(" (the '{}' opened on line {} is not closed)", open.back().first, open.back().second);
    }
    throw FileError(path, e.mark.line + 1, "", "YAML syntax error: " + e.msg + hint);
  }
  if (!root.IsMap()) throw FileError(path, 1, "", "expected a mapping at the top level of the " + what);
  check_duplicate_keys(root, path, "");
  return root;
}

std::string yaml_text(const YAML::Node& n) {
  if (!n || n.IsNull()) return "null";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

YAML::Node yaml_merged(const YAML::Node& defaults, const YAML::Node& params) {
  YAML::Node out(YAML::NodeType::Map);
  for (const YAML::Node& m : {defaults, params})
    if (m && m.IsMap())
      for (auto it = m.begin(); it != m.end(); ++it) out[it->first.as<std::string>()] = it->second;
  return out;
}

std::string first_quoted_key(const std::string& message, const std::function<bool(const std::string&)>& is_key) {
  for (size_t q = message.find('\''); q != std::string::npos; q = message.find('\'', q + 1)) {
    const size_t e = message.find('\'', q + 1);
    if (e == std::string::npos) break;
    const std::string word = message.substr(q + 1, e - q - 1);
    if (is_key(word)) return word;
    q = e;
  }
  return "";
}

void write_file_atomic(const std::string& path, const std::string& text) { write_files_atomic({{path, text}}); }

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  for (size_t i = 0; i < files.size(); ++i)
    for (size_t j = i + 1; j < files.size(); ++j) {
      std::error_code ec1, ec2;
      const auto a = std::filesystem::weakly_canonical(files[i].first, ec1), b = std::filesystem::weakly_canonical(files[j].first, ec2);
      if (files[i].first == files[j].first || (!ec1 && !ec2 && a == b))
        throw std::invalid_argument(fmt::format("two outputs name the same file '{}'", files[i].first));
    }
  std::vector<std::string> tmps;
  auto drop = [&] {
    for (const auto& t : tmps) std::remove(t.c_str());
  };
  for (const auto& [path, text] : files) {
    tmps.push_back(path + ".tmp");
    std::ofstream f(tmps.back());
    if (!f || !(f << text) || !f.flush()) {
      const std::string why = std::strerror(errno);
      drop();
      throw std::runtime_error(fmt::format("cannot write '{}': {}", path, why));
    }
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (std::rename(tmps[i].c_str(), files[i].first.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      drop();
      throw std::runtime_error(fmt::format("cannot move output into '{}': {}", files[i].first, why));
    }
}

}  // namespace fusesim::hw
