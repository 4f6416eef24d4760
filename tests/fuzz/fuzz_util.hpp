// Shared by the libFuzzer targets (tests/fuzz/README.md): the input as a file of this process's own.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace fusesim::fuzz {

/// Write `data` to a file of this process's own (TMPDIR or /tmp, the pid and `ext` in its name) and
/// return its path; the same file is reused by every input.
inline std::string input_file(const uint8_t* data, size_t size, const char* ext) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir && *dir ? dir : "/tmp") + "/fusesim_fuzz_" + std::to_string(::getpid()) + ext;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace fusesim::fuzz
