// build/fusesim: predict fused compute+communication paths from YAML scenarios.
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#ifdef FUSESIM_HAVE_TRACE
#include "calibrate/trace/whatif.hpp"
#endif

int main(int argc, char** argv) {
  CLI::App app{"fusesim: simulator and cost model of fused compute+communication paths on multi-GPU nodes"};
  app.require_subcommand(1);
#ifdef FUSESIM_VERSION
  app.set_version_flag("--version", std::string("fusesim ") + FUSESIM_VERSION);
#endif
  fusesim::cli::register_all(app);
  // The trace module is optional (-DFUSESIM_TRACE, CMakeLists.txt); its what-if predicts fused
  // GEMM + all-reduce calls with the gemm_ar model.
#ifdef FUSESIM_HAVE_TRACE
  fusesim::register_trace_commands(app, fusesim::cli::gemm_ar_predictor);
#endif
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      fmt::print(stderr, "fusesim: error: unknown command '{}' (expected one of: {}; see fusesim --help)\n", argv[1], names);
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0, `check` exits 2 on a miss and 1 on a file it could not check (a
    // CLI::RuntimeError from its callback); CLI11's own usage errors (an unknown option, a file that
    // does not exist: codes 100 and up) exit 1 like any other bad input, with the same prefix.
    if (e.get_exit_code() < 100) return app.exit(e);
    fmt::print(stderr, "fusesim: error: {} (see fusesim {}--help)\n", e.what(),
               app.get_subcommands().empty() ? std::string() : app.get_subcommands().front()->get_name() + " ");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "fusesim: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
