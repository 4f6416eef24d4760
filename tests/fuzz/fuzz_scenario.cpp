// libFuzzer target: a scenario file (scenario::load: YAML, defaults, sweeps, case parameters,
// measured values, limits), then a run of its first cases when it loads. Any std::exception is a
// clean refusal; a crash, a sanitizer report, a hang or more than 2 GB is a bug.
//
// Cheap per input (tests/fuzz/RUNS.md: 10^6 executions per target): every case is parsed and
// validated by load(), but only the first kRunCases run, each under an event budget of
// kEventBudget callbacks (the repository's cases need 10^2..10^4; a larger one ends with the
// budget's error, which is itself a path under test). The hardware file a scenario names is loaded
// once per path and kept: those are the repository's own files, and their loader has its own
// target (fuzz_hardware), so re-reading them for every input would only slow this one down.
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>

#include "scenario/load.hpp"
#include "scenario/run.hpp"
#include "sim/event_budget.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace {
constexpr size_t kRunCases = 2;
constexpr uint64_t kEventBudget = 20000;
constexpr uint64_t kMaxCases = 256;  // a sweep beyond it is refused by load() with its count

/// The hardware file at `path`, loaded once (a file that fails to load is tried again: its error is
/// part of what this input exercises).
const fusesim::hw::Hardware& hardware(const fusesim::models::Scenario& sc) {
  static std::map<std::string, std::unique_ptr<fusesim::hw::Hardware>> cache;
  auto& slot = cache[sc.hardware_path];
  if (!slot) slot = std::make_unique<fusesim::hw::Hardware>(fusesim::scenario::load_hardware(sc));
  return *slot;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fusesim::fuzz::input_file(data, size, ".yaml");
  fusesim::sim::set_default_event_budget(kEventBudget);
  try {
    auto sc = fusesim::scenario::load(path, {kMaxCases});
    if (sc.cases.size() > kRunCases) sc.cases.erase(sc.cases.begin() + kRunCases, sc.cases.end());
    fusesim::scenario::run(sc, hardware(sc));
  } catch (const std::exception&) {
  }
  return 0;
}
