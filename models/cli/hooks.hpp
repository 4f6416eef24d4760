// Registration hooks: each module adds its own sub-commands to the fusesim command line.
#pragma once

namespace CLI { class App; }

namespace fusesim {
/// `fusesim trace analyze|whatif ...` (calibrate/trace). Adds a "trace" sub-command to app.
void register_trace_commands(CLI::App& app);
/// `fusesim calibrate fit|mori ...` (calibrate/). Adds its sub-commands under `calibrate`.
void register_calibrate_commands(CLI::App& calibrate);
/// `fusesim calibrate probe ...` (live-node HIP/CUDA probes). Adds "probe" under `calibrate`.
void register_probe_commands(CLI::App& calibrate);
}  // namespace fusesim
