// The plot of `fusesim tune --plot DIR`: per shape, the best setting's and the baseline's predicted
// time vs M with their 95% bands (gnuplot PNG and SVG, as `check --plot` draws its plots). Text from
// the user's input (shape and setting names) goes only into the data files, never into a gnuplot
// script: the scripts hold fixed text and the files' generated names, and gnuplot runs in DIR
// without a shell.
#pragma once

#include <nlohmann/json.hpp>

#include "calibrate/plot.hpp"

namespace fusesim::calibrate {

/**
 * Per shape i of `tune_result` (scenario::tune's output): DIR/tune_shape<i>.dat (a comment line
 * with the shape as JSON, then per M: m best_us best_lo best_hi baseline_us baseline_lo baseline_hi
 * and the best setting as JSON in the last column), .gp, .png and .svg. gnuplot missing or failing:
 * the data files are still written and the report says so. Every file replaces (never follows) a
 * symbolic link of its name in DIR and is written 0666 less the umask; .dat and .gp through a
 * temporary renamed into place, the images drawn into hidden `.NAME.png.part` files renamed when
 * gnuplot succeeded. The base name comes from `namer` (PlotNamer::claim; null: one of its own): a
 * base taken by an input or another output of the command (`--hw`, `--out`, a trace in DIR named
 * tune_shape0.dat) becomes tune_shape<i>-2. Errors: std::runtime_error when DIR cannot be created or
 * a file cannot be written.
 */
PlotReport write_tune_plots(const nlohmann::json& tune_result, const std::string& dir, const std::string& gnuplot = "gnuplot",
                            PlotNamer* namer = nullptr);

}  // namespace fusesim::calibrate
