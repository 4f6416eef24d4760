// `fusesim calibrate ...`: the calibration module's sub-commands (fit, mori, probe), added by the
// command line (cli/commands.cpp).
#pragma once

namespace CLI { class App; }

namespace fusesim {
/// Add fit, mori and probe under `calibrate` (a sub-command of the fusesim program).
void register_calibrate_commands(CLI::App& calibrate);
}  // namespace fusesim
