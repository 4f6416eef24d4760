// fusesim's command line: sub-commands built on CLI11.
#pragma once

namespace CLI { class App; }

namespace fusesim::cli {
/// Add run, check and params to the app (and the modules' hooks: trace, calibrate ...).
void register_all(CLI::App& app);
}  // namespace fusesim::cli
