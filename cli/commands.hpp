// fusesim's command line: sub-commands built on CLI11.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "hw/hardware.hpp"

namespace CLI { class App; }

namespace fusesim::cli {
/// Add run, check, params, breakeven and calibrate (calibrate/commands.hpp) to the app.
void register_all(CLI::App& app);

/// The fused GEMM + all-reduce predictor `fusesim trace whatif --fuse-gemm-ar --hw FILE` uses, on the
/// gemm_ar model: fused-sdma, bf16 wire, the model's defaults otherwise; the whole call's time in
/// microseconds at (M, N, K, world size), M padded as the kernel does. Errors: hw::FileError for a bad
/// hardware file (here); models::ParamError for an impossible shape (when called).
std::function<double(int64_t m, int64_t n, int64_t k, int world_size)> gemm_ar_predictor(const std::string& hw_path);

/// What `fusesim breakeven` is asked (its options; hw is the hardware file's path).
struct BreakevenOptions {
  std::string hw = "hw/mi355x-8gpu.yaml", wire = "bf16", quant = "blockscale", format = "table";
  int64_t n = 7168, k = 2048, max_m = 65536;
  int ws = 8;
};

/**
 * `fusesim breakeven`'s result as the JSON it prints with --format json (the table is printed from
 * it): the thresholds of models::break_even, each with a `<name>_every_m` boolean (true: the fused
 * path wins at every M from 1 up to max_m; the number is then 1) and -1 for "at no M up to max_m";
 * with a calibration in `hw`, band_95_pct and the smallest M from which the fused path wins by more
 * than that band at every larger M (m_clear_win_vs_split / _vs_rccl), bisected over whole M like the
 * plain thresholds; the hand-chosen serving threshold and the shapes it was chosen for.
 * Errors: std::invalid_argument naming the command-line flag (--world-size, -n/--n, -k/--k, --quant,
 * --wire, --max-m) of a bad value; std::runtime_error when `hw` is not a gemm_ar hardware file.
 */
nlohmann::json breakeven_report(const hw::Hardware& hw, const BreakevenOptions& o);
}  // namespace fusesim::cli
