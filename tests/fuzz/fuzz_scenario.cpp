// libFuzzer target: a scenario file (scenario::load), then its hardware and a run of its first cases
// when it loads. Any std::exception is a clean refusal; a crash, a sanitizer report, a hang or more
// than 2 GB is a bug.
#include <cstdint>
#include <exception>

#include "scenario/load.hpp"
#include "scenario/run.hpp"
#include "sim/event_budget.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fusesim::fuzz::input_file(data, size, ".yaml");
  fusesim::sim::set_default_event_budget(2000000);
  try {
    const auto sc = fusesim::scenario::load(path, {2000});
    const auto hw = fusesim::scenario::load_hardware(sc);
    fusesim::scenario::run(sc, hw);
  } catch (const std::exception&) {
  }
  return 0;
}
