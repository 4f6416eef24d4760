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
  // Small limits: an input is a whole scenario, and the repository's own seeds (h100-ib-afd-4f12a)
  // took over libFuzzer's 10 s under ASan at 2*10^6 events (a slow input, not a hang).
  fusesim::sim::set_default_event_budget(200000);
  try {
    const auto sc = fusesim::scenario::load(path, {200});
    const auto hw = fusesim::scenario::load_hardware(sc);
    fusesim::scenario::run(sc, hw);
  } catch (const std::exception&) {
  }
  return 0;
}
