// Live runner for ROCm: builds and runs the `torchrun ... bench_gemm_ar.py` commands of a sweep on a
// node with mori, checks first that the build has the SDMA path, pauses between runs so the previous
// ranks' copy-engine queues drain, enforces a per-run timeout, reports progress, and appends every
// RESULT_JSON record (with command, host, date, commit) to a JSON-lines file as it arrives, so an
// interrupted sweep keeps what it measured and can resume. Linux only (fork/exec, process groups).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace fusesim::calibrate {

/// Where the benchmarks live inside a mori checkout: the GEMM + all-reduce and the standalone all-reduce.
inline constexpr const char* kBenchGemmArPath = "benchmark/cco/flydsl/gemm_ar/bench_gemm_ar.py";
inline constexpr const char* kBenchArPath = "benchmark/cco/flydsl/ar/bench_ar.py";
/// bench_gemm_ar.py's defaults (data README, 103655f6 .. ad271d19): --chunks 8, --gather-bands 8.
inline constexpr int kBenchChunks = 8;
inline constexpr int kBenchGatherBands = 8;

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
  /// The launcher (resolve_launcher): "python" (default: `python3 -m torch.distributed.run`, as mori's
  /// own sweep script launches; works without an activated environment), "torchrun" (found on
  /// PATH), or the path of an executable (the tests' stand-in); never a shell string.
  std::string launcher = "python";
  std::string python;                          ///< interpreter for --launcher python (default python3 on PATH)
  std::vector<std::string> launcher_args;      ///< arguments added after the launcher, one word each
  std::string layout = "auto";                 ///< RESULT_JSON layout recorded with each line ("auto": not recorded)
  double timeout_s = 900;               ///< per run; the process group is killed after it
  double pause_s = 10;                  ///< between runs (copy-engine queues of the previous ranks drain)
  bool resume = false;                  ///< skip runs whose successful record is already in `out`
  std::string commit;                   ///< fusesim commit recorded (default: git HEAD of the working directory)
  std::ostream* progress = nullptr;     ///< progress and messages (default std::cerr)
};

/**
 * Expand a sweep file into runs. `kind: gemm_ar` (default; bench_gemm_ar.py), cartesian product in
 * the order of the keys listed here:
 *   table: NAME                      # recorded in every line (default: the sweep file's stem)
 *   modes: [fused-sdma, split-sdma]  # --mode
 *   m: [8192, 16384]   n: [7168]   k: [2048]
 *   quant: [blockscale]              # --quant
 *   wires: [bf16, fp8-lsa, fp8-sdma] # --gather-dtype / --gather-transport
 *   chunks: [8]                      # --chunks (default 8, the benchmark's), SDMA scatter modes only
 *   pull_blocks: [48, 64]            # env MORI_GEMM_AR_PULL_BLOCKS (fp8-lsa wire only)
 *   fuse_quantize: [false]           # --fuse-quantize / --no-fuse-quantize (fp8 wire only)
 *   fuse_reduce_push: [false, true]  # --fuse-reduce-push (fused-sdma, bf16 wire)
 *   gather_bands: [1, 4]   publish: [writethrough, fence]   # with fuse_reduce_push only (defaults 8, writethrough)
 *   sdma_queues: [1]                 # --sdma-queues (SDMA scatter modes)
 *   extra_args: ["--iters", "11"]    # appended verbatim to every command
 * Every combination the benchmark (ad271d19) accepts is run: the fp8 wire with split-sdma, fused-sdma
 * and fused-lsa; split-lsa refuses it (dropped, with a note); gemm-only has no wire, chunks or
 * gather knobs. Chunks are lowered as the benchmark does (lowered_chunks: halved until they divide
 * the row bands per destination) and passed lowered, so two values that run alike run once (a note
 * says so). Knobs that do not apply are dropped and the duplicates removed. Defaults: modes
 * [fused-sdma], m [16384], n [7168], k [2048], quant [blockscale], wires [bf16].
 * `kind: allreduce` (bench_ar.py, the standalone all-reduce): backends [lsa, sdma] (--backend),
 * m (-m; default [64, 1024, 16384]), n (-n; default [7168]), dtype [bf16], table, extra_args.
 * `notes` (if not null) receives what was dropped or merged and why.
 * Errors: hw::FileError naming the sweep file, line and key (unknown key, not a list, a wrong value);
 * std::runtime_error from resolve_launcher.
 */
std::vector<MoriRun> expand_sweep(const YAML::Node& sweep, const std::string& sweep_path, const MoriOptions& opt,
                                  std::vector<std::string>* notes = nullptr);

/// bench_gemm_ar.py's chunk lowering (103655f6 .. ad271d19): `while chunks > 1 and bands % chunks:
/// chunks //= 2` (8 becomes 4 at 12 row bands per destination, not 6).
int lowered_chunks(int chunks, int64_t bands);

/**
 * The launcher's argv prefix: "python" -> {<python3 or opt.python, found on PATH>, "-m",
 * "torch.distributed.run"}; "torchrun" -> {<torchrun found on PATH>}; else {opt.launcher} (an
 * executable file); then opt.launcher_args. Errors: std::runtime_error naming what was not found
 * and what to pass instead.
 */
std::vector<std::string> resolve_launcher(const MoriOptions& opt);

/// `name` found on PATH (or, containing '/', itself) as an executable file; empty when not found.
std::string find_on_path(const std::string& name);

/// The run the SDMA check uses: for kind gemm_ar fused-sdma, blockscale, M=2048, N=7168, K=2048, bf16
/// wire; for kind allreduce bench_ar.py --backend sdma -m 2048 -n 7168.
MoriRun sdma_check_run(const MoriOptions& opt, const std::string& kind = "gemm_ar");

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
 * timeout, no RESULT_JSON line, or a result run_validation_problem calls unusable (validated false,
 * rel_l2 > kMovedNothingRelL2, a NaN rel_l2 where the run validates). Bare NaN literals are read.
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

/// What `calibrate mori --plan-scenario` writes (write_plan_scenario).
struct PlanOptions {
  std::string out;              ///< scenario YAML to write (atomically: a temporary file, then renamed)
  std::string hardware;         ///< the scenario's hardware file (e.g. the components' fitted file)
  std::string measured;         ///< empty: predictions only; else a calibrate mori output whose records give value_us
  std::string name;             ///< scenario name (default: the sweep file's stem)
  double tolerance_pct = 10;    ///< the scenario's tolerance_pct (fusesim check)
};

/**
 * Write the sweep's runs as a scenario without launching anything: one case per run (the params the
 * runner passes, under the gemm_ar case keys; model collective with op all-reduce for an allreduce
 * sweep), `hardware` po.hardware, a header naming the sweep, the date and the fusesim commit. With
 * po.measured, each case whose run has an accepted record in that file (matched by run_key; a resumed
 * sweep's last one) gets `measured: {value_us, source}` (source: file:line, date, host, commit), and
 * the runs without one are listed in trailing comments with the reason, so `fusesim check` compares
 * the predictions with the measurements. Returns 0. Errors: hw::FileError for a bad sweep or
 * measurement file; std::runtime_error for a missing --hw or an unwritable output.
 */
int write_plan_scenario(const PlanOptions& po, const MoriOptions& opt);

}  // namespace fusesim::calibrate
