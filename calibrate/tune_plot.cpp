// The plot of `fusesim tune --plot` (calibrate/tune_plot.hpp).
#include "calibrate/tune_plot.hpp"
#include "hw/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

namespace fusesim::calibrate {
namespace {

/// Write `text` to `path` through a temporary renamed into place (hw::write_outputs_atomic), which
/// replaces a symbolic link at `path` rather than following it; 0666 less the umask. Errors:
/// std::runtime_error naming --plot and the file.
void write_file(const std::string& path, const std::string& text) { hw::write_outputs_atomic({{path, text, "--plot", true}}); }

/// Whether `exe` is found in PATH (or is a path to an executable).
bool in_path(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return ::access(exe.c_str(), X_OK) == 0;
  const char* p = std::getenv("PATH");
  std::string path = p ? p : "";
  size_t a = 0;
  while (a <= path.size()) {
    const size_t b = std::min(path.find(':', a), path.size());
    const std::string d = path.substr(a, b - a);
    if (!d.empty() && ::access((d + "/" + exe).c_str(), X_OK) == 0) return true;
    a = b + 1;
  }
  return false;
}

/// Run `gnuplot script` in `dir` (fork + exec, no shell); its output to `log` in dir. Returns the exit status.
int run_in(const std::string& dir, const std::string& gnuplot, const std::string& script, const std::string& log) {
  // Unwritten buffered output would be written twice (by the child too) without this.
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    // O_EXCL | O_NOFOLLOW: the log is new (the caller removed any file or link of its name).
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execlp(gnuplot.c_str(), gnuplot.c_str(), script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int st = 0;
  if (::waitpid(pid, &st, 0) < 0) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

PlotReport write_tune_plots(const nlohmann::json& r, const std::string& dir, const std::string& gnuplot, PlotNamer* namer_in) {
  namespace fs = std::filesystem;
  PlotReport rep;
  PlotNamer own;
  PlotNamer& namer = namer_in ? *namer_in : own;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("--plot: cannot create '{}': {}", dir, ec.message()));
  rep.gnuplot_found = in_path(gnuplot);
  if (!rep.gnuplot_found) rep.messages.push_back("gnuplot not found in PATH (Debian package gnuplot-nox): wrote the data files only");
  int i = 0;
  for (const auto& sh : r["shapes"]) {
    const std::string name = fs::path(namer.claim(dir, fmt::format("tune_shape{}", i++))).filename().string();
    std::string dat = "# fusesim tune: shape " + sh["shape"].dump() + ", baseline " + r["baseline"].dump() + "\n";
    dat += "# m best_us best_lo_us best_hi_us baseline_us baseline_lo_us baseline_hi_us best_setting\n";
    for (const auto& p : sh["points"]) {
      if (p["best"].is_null()) continue;
      auto band = [](const nlohmann::json& e, int k) {
        return e["interval_us"].is_array() ? e["interval_us"][k].get<double>() : e["predicted_us"].get<double>();
      };
      const auto &b = p["best"], &s = p["baseline"];
      dat += fmt::format("{} {:.4f} {:.4f} {:.4f} {:.4f} {:.4f} {:.4f} {}\n", p["m"].get<int64_t>(), b["predicted_us"].get<double>(), band(b, 0),
                         band(b, 1), s["predicted_us"].get<double>(), band(s, 0), band(s, 1), b["setting"].dump());
    }
    write_file(dir + "/" + name + ".dat", dat);
    rep.csv_files.push_back(dir + "/" + name + ".dat");
    // Fixed text only: the shape's own words stay in the data file's comment.
    // The script kept for the user names NAME.png/.svg; the one run writes hidden `.NAME.png.part`
    // files, renamed into place when gnuplot succeeded (a link planted at NAME.png is replaced, not
    // followed; no partial image under a final name).
    auto script = [&](const std::string& prefix, const std::string& suffix) {
    std::string gp;
    for (const auto& [term, ext] : {std::pair<const char*, const char*>{"pngcairo size 900,600", "png"}, {"svg size 900,600", "svg"}}) {
      gp += fmt::format("set terminal {}\nset output '{}{}.{}{}'\n", term, prefix, name, ext, suffix);
      gp += "set logscale x 2\nset xlabel 'M (rows)'\nset ylabel 'predicted time (us)'\nset key top left\nset grid\n";
      gp += "set title 'fusesim tune: best setting vs baseline (shape: see the .dat file)'\n";
      // The serving threshold (a number the search computed, no input text): a dashed line.
      if (sh["threshold"].contains("m_vs_baseline") && sh["threshold"]["m_vs_baseline"].get<int64_t>() > 1)
        gp += fmt::format("set arrow from {0}, graph 0 to {0}, graph 1 nohead dt 2 lc rgb '#444444'\n"
                          "set label 'serving threshold M = {0}' at {0}, graph 0.95 offset 1,0\n",
                          sh["threshold"]["m_vs_baseline"].get<int64_t>());
      gp += fmt::format("plot '{0}.dat' using 1:3:4 with filledcurves fc rgb '#b0c4de' fs transparent solid 0.5 title 'best, 95% band', "
                        "'' using 1:6:7 with filledcurves fc rgb '#f4c2c2' fs transparent solid 0.5 title 'baseline, 95% band', "
                        "'' using 1:2 with linespoints lw 2 lc rgb '#1f4e9a' title 'best setting', "
                        "'' using 1:5 with linespoints lw 2 lc rgb '#b22222' title 'baseline'\nunset output\n",
                        name);
    }
    return gp;
    };
    write_file(dir + "/" + name + ".gp", script("", ""));
    rep.csv_files.push_back(dir + "/" + name + ".gp");
    if (!rep.gnuplot_found) continue;
    write_file(dir + "/." + name + ".run.gp", script(".", ".part"));
    fs::remove(dir + "/" + name + ".gnuplot.log", ec);  // a planted link is removed, not written through
    const int rc = run_in(dir, gnuplot, "." + name + ".run.gp", name + ".gnuplot.log");
    fs::remove(dir + "/." + name + ".run.gp", ec);
    if (rc != 0) {
      for (const char* ext : {"png", "svg"}) fs::remove(fmt::format("{}/.{}.{}.part", dir, name, ext), ec);
      rep.messages.push_back(fmt::format("gnuplot failed on {}/{}.gp (exit {}); see {}/{}.gnuplot.log", dir, name, rc, dir, name));
      continue;
    }
    for (const char* ext : {"png", "svg"}) {
      const std::string part = fmt::format("{}/.{}.{}.part", dir, name, ext), dest = fmt::format("{}/{}.{}", dir, name, ext);
      if (::rename(part.c_str(), dest.c_str()) != 0)
        throw std::runtime_error(fmt::format("--plot: cannot move the plot into '{}': {}", dest, std::strerror(errno)));
    }
    fs::remove(dir + "/" + name + ".gnuplot.log", ec);
    rep.image_files.push_back(dir + "/" + name + ".png");
    rep.image_files.push_back(dir + "/" + name + ".svg");
  }
  return rep;
}

}  // namespace fusesim::calibrate
