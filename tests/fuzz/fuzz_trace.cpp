// libFuzzer target: a Kineto/PyTorch profiler trace through `fusesim trace analyze` and
// `trace whatif --window all --comm-stream` (reader, analysis, replay on the engine, the SM-sharing charge on
// hw/h200-1gpu.yaml), in-process. The first byte
// picks the command. Cheap per input (tests/fuzz/RUNS.md): the replay runs under an event budget of
// 2*10^4 callbacks (the seed traces need fewer; a longer replay ends with the budget's error).
#include <cstdint>
#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "calibrate/trace/whatif.hpp"
#include "sim/event_budget.hpp"
#include "tests/fuzz/fuzz_util.hpp"

#ifndef FUSESIM_SOURCE_DIR
#error "FUSESIM_SOURCE_DIR must name the repository (the SM-sharing charge's machine, hw/h200-1gpu.yaml)"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path = fusesim::fuzz::input_file(data + 1, size - 1, ".json");
  std::vector<std::string> args = data[0] % 2 ? std::vector<std::string>{"trace", "whatif", path, "--window", "all", "--comm-stream",
                                                                         "--sm-hw", FUSESIM_SOURCE_DIR "/hw/h200-1gpu.yaml"}
                                              : std::vector<std::string>{"trace", "analyze", path};
  fusesim::sim::set_default_event_budget(20000);
  CLI::App app{"fusesim"};
  fusesim::register_trace_commands(app, {});
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  std::ostringstream sink;
  auto* old_out = std::cout.rdbuf(sink.rdbuf());
  auto* old_err = std::cerr.rdbuf(sink.rdbuf());
  try {
    app.parse(args);
  } catch (const std::exception&) {
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return 0;
}
