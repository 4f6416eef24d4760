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
    // --help / --version exit 0; every other command-line error (an unknown option, a file that does
    // not exist) exits 1 like any other error, after CLI11's message (its own codes run to 100+).
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "fusesim: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
