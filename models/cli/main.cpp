// build/fusesim: predict fused compute+communication paths from YAML scenarios.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "models/cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"fusesim: simulator and cost model of fused compute+communication paths on multi-GPU nodes"};
  app.require_subcommand(1);
  fusesim::cli::register_all(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "fusesim: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
