// libFuzzer target: a hardware file (models::load_hardware: YAML, quantities, units, bounds).
#include <cstdint>
#include <exception>

#include "models/model.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fusesim::fuzz::input_file(data, size, ".yaml");
  try {
    fusesim::models::load_hardware(path);
  } catch (const std::exception&) {
  }
  return 0;
}
