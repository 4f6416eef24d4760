// Shared helpers of the calibration tests.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fusesim::calibrate::test {

inline std::string src(const std::string& rel) { return std::string(FUSESIM_SOURCE_DIR) + "/" + rel; }
inline std::string fixture(const std::string& name) { return src("tests/calibrate/fixtures/" + name); }

/// The seed-000 measurement files (calibrate/data/mi355x/*.jsonl) and the scenario, as the fit takes them.
inline std::vector<std::string> seed000_files() {
  std::vector<std::string> v;
  for (const char* f : {"01-headline", "02-gather", "03-pull-grid", "04-phases-sglang", "05-fuse-quantize", "06-reduce-push",
                        "07-cachedwindow"})
    v.push_back(src(std::string("calibrate/data/mi355x/") + f + ".jsonl"));
  v.push_back(src("scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml"));
  return v;
}

/// A fresh temporary folder for one test.
inline std::string temp_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("fusesim_cal_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

/// Run a shell line in the source folder; returns the exit status and fills `out` with stdout+stderr.
inline int run_shell(const std::string& line, std::string* out = nullptr) {
  const std::string log = temp_dir("shell") + "/out.txt";
  const std::string cmd = "cd '" + std::string(FUSESIM_SOURCE_DIR) + "' && " + line + " > '" + log + "' 2>&1";
  const int st = std::system(cmd.c_str());
  if (out) *out = slurp(log);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace fusesim::calibrate::test
