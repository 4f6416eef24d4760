// Live runner for ROCm: builds and runs the `torchrun ... bench_gemm_ar.py` commands of a sweep on a
// node with mori, checks first that the build has the SDMA path, pauses between runs so the previous
// ranks' copy-engine queues drain, enforces a per-run timeout, reports progress, and appends every
// RESULT_JSON record (with command, host, date, commit) to a JSON-lines file as it arrives, so an
// interrupted sweep keeps what it measured and can resume. Linux only (fork/exec, process groups).
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace fusesim::calibrate {

/// Where the benchmark lives inside a mori checkout.
inline constexpr const char* kBenchGemmArPath = "benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py";

/// One run of the benchmark.
struct MoriRun {
  std::string key;                           ///< stable id of the run (its knobs), used by --resume
  nlohmann::json params;                     ///< the knobs under the benchmark's RESULT_JSON names
  std::vector<std::string> argv;             ///< launcher + torchrun args + script + flags (no shell)
  std::map<std::string, std::string> env;    ///< variables added to the environment
  std::string command;                       ///< the same as a copy-pasteable shell line (for records)
};

struct MoriOptions {
  std::string mori_dir;                 ///< mori checkout (the benchmark path is relative to it); the runs' working directory
  int nproc = 8;                        ///< --nproc_per_node
  std::string sweep_path;               ///< sweep YAML (see expand_sweep)
  std::string out;                      ///< JSON-lines output, appended
  std::string launcher = "torchrun";    ///< replaces `torchrun` (split on spaces; tests pass a stand-in script)
  double timeout_s = 900;               ///< per run; the process group is killed after it
  double pause_s = 10;                  ///< between runs (copy-engine queues of the previous ranks drain)
  bool resume = false;                  ///< skip runs whose successful record is already in `out`
  std::string commit;                   ///< fusesim commit recorded (default: git HEAD of the working directory)
  std::ostream* progress = nullptr;     ///< progress and messages (default std::cerr)
};

/**
 * Expand a sweep file into runs (cartesian product in the order of the keys listed here):
 *   table: NAME                      # recorded in every line (default: the sweep file's stem)
 *   modes: [fused-sdma, split-sdma]  # --mode
 *   m: [8192, 16384]   n: [7168]   k: [2048]
 *   quant: [blockscale]              # --quant
 *   wires: [bf16, fp8-lsa, fp8-sdma] # --gather-dtype / --gather-transport
 *   chunks: [8]                      # --chunks
 *   pull_blocks: [48, 64]            # env MORI_GEMM_AR_PULL_BLOCKS (fp8-lsa wire only)
 *   fuse_quantize: [false]           # --fuse-quantize / --no-fuse-quantize (fp8 wire only)
 *   fuse_reduce_push: [false, true]  # --fuse-reduce-push (fused-sdma, bf16 wire)
 *   gather_bands: [1, 4]   publish: [writethrough, fence]   # with fuse_reduce_push only
 *   sdma_queues: [1]                 # --sdma-queues
 *   extra_args: ["--iters", "11"]    # appended verbatim to every command
 * Knobs that do not apply to a combination (the fp8 wire outside fused-sdma, pull blocks outside
 * fp8-lsa, bands without fuse_reduce_push, ...) are dropped and the duplicates removed, so every
 * run is one the benchmark accepts. Defaults: modes [fused-sdma], m [16384], n [7168], k [2048],
 * quant [blockscale], wires [bf16].
 * Errors: hw::FileError naming the sweep file, line and key (unknown key, not a list, a wrong value).
 */
std::vector<MoriRun> expand_sweep(const YAML::Node& sweep, const std::string& sweep_path, const MoriOptions& opt);

/// The run the SDMA check uses: fused-sdma, blockscale, M=2048, N=7168, K=2048, bf16 wire.
MoriRun sdma_check_run(const MoriOptions& opt);

/// What one run gave.
struct RunOutcome {
  int exit_code = 0;                          ///< child's exit status (128+signal when killed)
  bool timed_out = false;
  double seconds = 0;
  std::vector<nlohmann::json> results;        ///< RESULT_JSON objects printed (duplicates removed)
  std::vector<std::string> tail;              ///< last lines of output (for failure reasons)
  std::string failure;                        ///< empty: a usable measurement; else why not
};

/**
 * Run one command: fork, new process group, working directory `cwd`, environment = ours + `env`,
 * stdout and stderr through one pipe (also appended to `log` when it is open). After `timeout_s`
 * the group gets SIGTERM, then SIGKILL 3 s later. failure is set for a crash (non-zero exit), a
 * timeout, no RESULT_JSON line, validated false, or rel_l2 > kMovedNothingRelL2.
 * Errors: std::runtime_error when fork/pipe fails or the program cannot be executed (exit 127).
 */
RunOutcome run_command(const MoriRun& run, const std::string& cwd, double timeout_s, std::ostream* log);

/// Host description recorded with every line: hostname, ROCm version (hipconfig --version, else
/// /opt/rocm/.info/version), kernel release.
nlohmann::json host_info();

/**
 * The whole sweep: check the benchmark exists, run the SDMA check (refuse the sweep with a clear
 * message when it is not validated or moved nothing), then every run (skipping those already in
 * `out` with --resume), pausing between runs, appending one line per result (or one failure line)
 * to `out` with flush + fsync. Progress on opt.progress: "run i of n", elapsed, estimate left.
 * Returns the process exit code: 0 all runs measured, 1 some runs failed (recorded), 3 the SDMA
 * check refused the sweep, 130 interrupted (SIGINT/SIGTERM; the running child's group is killed).
 * Errors: hw::FileError for a bad sweep file, std::runtime_error for a missing mori dir/benchmark
 * or an unwritable output.
 */
int run_mori_sweep(const MoriOptions& opt);

}  // namespace fusesim::calibrate
