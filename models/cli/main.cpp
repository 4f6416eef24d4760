// build/fusesim: predict fused compute+communication paths from YAML scenarios.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "models/cli/commands.hpp"
#include "models/cli/hooks.hpp"

int main(int argc, char** argv) {
  CLI::App app{"fusesim: simulator and cost model of fused compute+communication paths on multi-GPU nodes"};
  app.require_subcommand(1);
  fusesim::cli::register_all(app);
  // Optional modules, present when their targets were built (see CMakeLists.txt).
  CLI::App* calibrate = app.get_subcommand("calibrate");
  (void)calibrate;
#ifdef FUSESIM_HAVE_TRACE
  fusesim::register_trace_commands(app);
#endif
#ifdef FUSESIM_HAVE_PROBES
  fusesim::register_probe_commands(*calibrate);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0 and `check` exits 2 (a CLI::RuntimeError from its callback); CLI11's own
    // usage errors (an unknown option, a file that does not exist: codes 100 and up) exit 1 like any
    // other bad input, after CLI11's message.
    const int rc = app.exit(e);
    return rc >= 100 ? 1 : rc;
  } catch (const std::exception& e) {
    fmt::print(stderr, "fusesim: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
