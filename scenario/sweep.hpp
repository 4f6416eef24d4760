// Sweeps: every case of a scenario (its sweeps expanded) run one by one and streamed to a file as
// JSON lines or CSV, resumable, split among MPI ranks when launched by mpirun (`fusesim sweep`).
// The output is byte-identical whatever the number of processes: each row is the case's own result
// (what `fusesim run` reports for it, as the one case of its scenario), written in case order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware.hpp"
#include "models/model.hpp"

namespace fusesim::scenario {

/// Options of sweep().
struct SweepOptions {
  std::string out;               ///< output file (written as cases finish; required)
  std::string format = "jsonl";  ///< jsonl (one case's JSON per line) | csv (run's CSV: a header, a row per case)
  bool resume = false;           ///< continue `out`: keep its complete rows (checked against the cases, see sweep()), run the rest
  bool progress = true;          ///< a progress line on stderr (cases done, rate, time left), refreshed every progress_s
  double progress_s = 1.0;
};

/// What a sweep did.
struct SweepReport {
  int64_t cases = 0;    ///< cases in the scenario
  int64_t resumed = 0;  ///< complete rows kept from a previous run (--resume)
  int64_t ran = 0;      ///< cases run now (over every rank)
  int ranks = 1;        ///< processes (MPI ranks) that ran them
  int rank = 0;         ///< this process's rank (only rank 0 writes and reports)
  double seconds = 0;   ///< wall time of the run
};

/// split_by_cost's rule one case at a time: next(cost) is the owner of the next case in file order
/// (the rank with the least expected cost so far; ties: the lowest rank). Every rank makes the same
/// CostSplit from the same costs, so the split needs no list of cases. Errors: std::invalid_argument
/// for ranks < 1.
class CostSplit {
 public:
  explicit CostSplit(int ranks);
  int next(double cost);  ///< `cost` >= 0 (a negative one counts 0)

 private:
  std::vector<double> load_;
};

/// ModelSpec::expected_cost of case `i` of a scenario, from its index without making the case (its
/// group's parameters with the point's swept values set in one reused node): cheap, for calls with i
/// increasing. 1 for a model without expected_cost. Errors: std::out_of_range for i >= case_count().
class CaseCosts {
 public:
  explicit CaseCosts(const models::Scenario& sc);
  double at(uint64_t i);

 private:
  const models::Scenario& sc_;
  const models::ModelSpec* spec_;
  const models::CaseGroup* group_ = nullptr;
  YAML::Node scratch_;
};

/**
 * The owner rank of each case: cases in file order, each given to the rank with the least expected
 * cost so far (ties: the lowest rank), so that ranks finish together and results arrive nearly in
 * case order (rank 0 buffers little). `cost`: ModelSpec::expected_cost per case (>= 0). Errors:
 * std::invalid_argument for ranks < 1.
 */
std::vector<int> split_by_cost(const std::vector<double>& cost, int ranks);

/// One output row of case `index` of `sc` (the case's result as the one case of its scenario,
/// scenario::run): its compact JSON line, or its CSV row (no header), each ending in a newline.
/// Errors: those of scenario::run.
std::string sweep_row(const models::Scenario& sc, const hw::Hardware& hw, size_t index, const std::string& format);

/// The CSV header line of sweep's CSV output (the header of scenario::format_csv).
std::string sweep_csv_header();

/// Whether this process was started by mpirun / an MPI launcher (Open MPI's or PMIx's environment).
bool launched_under_mpi();

/**
 * Run every case of `sc` and write its row to opt.out in case order, streaming (each row flushed
 * as soon as every earlier row is written). Under mpirun (with the MPI build), the cases are split
 * among the ranks by split_by_cost and rank 0 writes; without mpirun the same binary runs them all
 * in one process. Rank 0 holds an exclusive flock on opt.out for the whole sweep (taken before the
 * file is read, cut or truncated); another sweep holding it is std::invalid_argument "--out:
 * another sweep is writing 'FILE'". Memory does not grow with the case count: cases are made from their index
 * (Scenario::case_at; load the scenario with LoadOptions::expand false), the owners computed case
 * by case (CostSplit, CaseCosts). --resume keeps the complete rows of opt.out (a partial last line
 * is cut; the file is read line by line) after checking that each is the row of the case at its
 * position: its id (CSV: the header too), every parameter the case sets against the row's "params"
 * echo, and the first and the last kept rows run again must give the same bytes (a hardware file
 * or model that changed since).
 * Errors (std::invalid_argument, before any case runs): a model that runs its cases together
 * (ModelSpec::begin_run, e.g. ttft's layer fits), an unknown format, a file to resume that is not
 * this scenario's output (naming its line), a kept row whose parameters or re-run row differ from
 * the case at its position (naming the line, the case's index and id, and the key), an output that
 * cannot be opened; an output that is not a file name in a writable folder (hw::check_output_files:
 * a folder, a device such as /dev/null, a FIFO; std::runtime_error naming --out), as for run --out;
 * with resume, a file over hw::kMaxResumeFileBytes (hw::FileError); a case that fails is
 * hw::FileError (as run names it), after the rows before it were written (resume from there). Under
 * MPI a failure on any rank is printed by rank 0, which then aborts the job (exit 1).
 */
SweepReport sweep(const models::Scenario& sc, const hw::Hardware& hw, const SweepOptions& opt);

}  // namespace fusesim::scenario
