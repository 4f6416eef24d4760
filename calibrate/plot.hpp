// Report plots: per table of measured points, the measured values and the model's predicted curve
// (dense over the swept parameter where it is numeric), held-out points marked differently, drawn
// by gnuplot (PNG and SVG), with the table as CSV next to it.
#pragma once

#include <string>
#include <vector>

#include "calibrate/fit.hpp"
#include "hw/hardware.hpp"

namespace fusesim::calibrate {

struct PlotOptions {
  std::string dir;            ///< output folder (created)
  std::string prefix;         ///< prepended to every file name (e.g. the scenario's name)
  int dense_points = 24;      ///< predictions per series along a numeric x
  std::string gnuplot = "gnuplot";  ///< executable (looked up in PATH)
  std::string measured_label = "measured (fitted)";  ///< legend of points that are not held out
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
 * stem by plotnames::unique_file_stem (tables that sanitise alike get distinct files). Every file
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
 * duration_us), .gp, .png, .svg (NAME made a stem by plotnames::unique_file_stem; files written as
 * write_plots writes them); gnuplot missing or failing: the CSV is still written and the
 * report says so. Errors: std::runtime_error when a file cannot be written.
 */
PlotReport write_timeline_plot(const std::string& dir, const std::string& name, const std::string& title,
                               const std::vector<std::string>& rows, const std::vector<TimelineBar>& bars,
                               const std::string& gnuplot = "gnuplot");

}  // namespace fusesim::calibrate
