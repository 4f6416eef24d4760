// Report plots: per table of measured points, the measured values and the model's predicted curve
// (dense over the swept parameter where it is numeric), held-out points marked differently, drawn
// by gnuplot (PNG and SVG), with the table as CSV next to it.
#pragma once

#include <cstdint>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "calibrate/fit.hpp"
#include "hw/hardware.hpp"

namespace fusesim::calibrate {

/**
 * The file names one command's plots take in one folder, so that no plot file replaces another one
 * written by the same command, nor one of the command's input files (issue 22's second trial: a
 * plain id equal to another id's hashed stem, a table named `x.timeline` beside case `x`'s timeline,
 * or a table `t.curve` beside table `t`'s `.curve.csv` had written over each other while the count
 * said all were written; `check --plot DIR` had replaced a scenario file kept in DIR).
 *
 * claim(dir, stem) returns DIR/BASE where BASE is plotnames::unique_file_stem(stem), or BASE-2,
 * BASE-3, ... when any of BASE's files (BASE + each of kSuffixes) is already claimed (compared
 * without regard to case, for case-insensitive file systems) or is one of `inputs` (the same existing
 * file, as hw::same_existing_file compares them, or the same absolute path). Every file of the returned base is then claimed. Errors:
 * std::runtime_error after 10^4 tries (not reachable with distinct inputs).
 */
class PlotNamer {
 public:
  /// Every file a plot base may take: its table, curve, script, images and gnuplot's log.
  static constexpr const char* kSuffixes[] = {".csv", ".curve.csv", ".dat", ".gp", ".png", ".svg", ".gnuplot.log"};
  /// `inputs`: files no plot may take (the command's inputs, and its other outputs, which may not
  /// exist yet: compared as existing files and as absolute, lexically normal paths).
  explicit PlotNamer(const std::vector<std::string>& inputs = {});
  std::string claim(const std::string& dir, const std::string& stem);

 private:
  std::set<std::string> taken_;                   ///< lower-cased file names claimed so far
  std::set<std::string> input_paths_;             ///< the inputs as absolute, lexically normal paths
  std::set<std::pair<uint64_t, uint64_t>> input_files_;  ///< (device, inode) of the inputs that exist
};

struct PlotOptions {
  std::string dir;            ///< output folder (created)
  std::string prefix;         ///< prepended to every file name (e.g. the scenario's name)
  int dense_points = 24;      ///< predictions per series along a numeric x
  std::string gnuplot = "gnuplot";  ///< executable (looked up in PATH)
  std::string measured_label = "measured (fitted)";  ///< legend of points that are not held out
  PlotNamer* namer = nullptr;  ///< shared by every plot of one command into `dir`; null: one per call
};

struct PlotReport {
  std::vector<std::string> csv_files;    ///< one per table (+ one .curve.csv per numeric table)
  std::vector<std::string> image_files;  ///< .png and .svg written by gnuplot
  bool gnuplot_found = true;
  std::vector<std::string> messages;     ///< e.g. "gnuplot not found: ..." or a failed gnuplot run
};

/// The parameter that varies within a group of points: the first key (in the points' own key order)
/// whose scalar text differs between points, preferring numeric ones; empty when none varies.
std::string varying_param(const std::vector<const FitPoint*>& pts, bool* numeric = nullptr);

/**
 * Write one plot per table of total points (phase points are left out of the plots but kept in the
 * CSV). `predicted_us` and `held_out` are parallel to `pts`. For a numeric x, the curve of each
 * series (points sharing all other parameters) is predicted with `hw` at `dense_points` values
 * spanning the measured range (log-spaced when max/min >= 4, rounded for integer parameters);
 * trials the model refuses are skipped. Files: DIR/PREFIX<table>.csv (id, series, x, measured_us,
 * predicted_us, error_pct, held_out, source), DIR/PREFIX<table>.curve.csv, .gp, .png, .svg.
 * gnuplot missing: the CSV files are still written and the report says so. <table> is made a file
 * stem by opt.namer (PlotNamer::claim: distinct tables, and any input file, never share a file name). Every file
 * goes through a temporary renamed into place, replacing (never following) a symbolic link of its
 * name in DIR, written 0666 less the umask.
 * Errors: std::runtime_error when DIR cannot be created or a file cannot be written.
 */
PlotReport write_plots(const hw::Hardware& hw, const std::vector<FitPoint>& pts, const std::vector<double>& predicted_us,
                       const std::vector<bool>& held_out, const PlotOptions& opt);

/// One bar of a timeline plot: a kernel on one row (e.g. "dev0 measured"), from start_us to end_us.
struct TimelineBar {
  std::string row, kernel;
  double start_us = 0, end_us = 0;
};

/**
 * A Gantt chart of one exchange: each row in `rows` order (top to bottom) with its kernels as bars
 * coloured by kernel name (legend), e.g. measured and predicted rows per device so that a kernel's
 * shift or stretch is seen at once. Files: DIR/NAME.timeline.csv (row, kernel, start_us, end_us,
 * duration_us), .gp, .png, .svg (NAME.timeline made a stem by `namer`, PlotNamer::claim; files written as
 * write_plots writes them); gnuplot missing or failing: the CSV is still written and the
 * report says so. Errors: std::runtime_error when a file cannot be written.
 */
PlotReport write_timeline_plot(const std::string& dir, const std::string& name, const std::string& title,
                               const std::vector<std::string>& rows, const std::vector<TimelineBar>& bars,
                               const std::string& gnuplot = "gnuplot", PlotNamer* namer = nullptr);

}  // namespace fusesim::calibrate
