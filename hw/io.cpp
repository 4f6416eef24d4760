#include "hw/io.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "hw/hardware.hpp"

namespace fusesim::hw {

YAML::Node load_yaml_map(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw FileError(path, 0, "", "cannot open " + what);
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw FileError(path, e.mark.line + 1, "", "YAML syntax error: " + e.msg);
  }
  if (!root.IsMap()) throw FileError(path, 1, "", "expected a mapping at the top level of the " + what);
  return root;
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f || !(f << text) || !f.flush()) {
      std::remove(tmp.c_str());
      throw std::runtime_error(fmt::format("cannot write '{}'", path));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot move output into '{}'", path));
  }
}

}  // namespace fusesim::hw
