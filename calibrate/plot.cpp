#include "calibrate/plot.hpp"
#include "calibrate/plot_names.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "hw/csv_cell.hpp"
#include "hw/io.hpp"
#include "hw/printable.hpp"
#include "hw/temp_files.hpp"

namespace fusesim::calibrate {
namespace fs = std::filesystem;

extern "C" char** environ;

namespace {

bool is_number(const std::string& s, double* out = nullptr) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if (out) *out = v;
  return std::isfinite(v);
}

std::string scalar(const YAML::Node& n) {
  if (!n) return "";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

/// A CSV field from input (an id, a source, a kernel name): hw::csv_cell (no ESC, BEL or newline
/// reaches whoever views the table, issue 22; a formula lead '=', '+', '-', '@' prefixed with "'").
std::string csv_quote(const std::string& s) { return hw::csv_cell(s); }

/// A name from input as a gnuplot string literal (plot_names.hpp: single-quoted, control characters
/// replaced), never pasted into the script raw.
std::string gp_quote(const std::string& s) { return plotnames::gnuplot_literal(s); }

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Series label: the parameters other than x that vary within the table.
std::string series_of(const FitPoint& p, const std::string& x, const std::vector<std::string>& varying) {
  std::string s;
  for (const auto& k : varying) {
    if (k == x || !p.params[k]) continue;
    s += (s.empty() ? "" : " ") + k + "=" + scalar(p.params[k]);
  }
  return s.empty() ? "model" : s;
}

bool find_in_path(const std::string& exe) {
  if (exe.find('/') != std::string::npos) return access(exe.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  std::string dir;
  while (std::getline(ss, dir, ':'))
    if (!dir.empty() && access((dir + "/" + exe).c_str(), X_OK) == 0) return true;
  return false;
}

/// Run `exe script` in folder `dir` (posix_spawn with a chdir: the script names its files relative
/// to the folder, so the folder's name, which may hold any byte, never enters the script), stdout and
/// stderr to `log` (a full path, created new). Returns the exit status (-1 on spawn failure).
int run_gnuplot(const std::string& exe, const std::string& dir, const std::string& script, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // A link planted at LOG is removed, not followed (O_NOFOLLOW | O_EXCL): gnuplot's messages stay
  // in the --plot folder.
  ::unlink(log.c_str());
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());  // glibc >= 2.29
  // An executable named with a '/' relative to our folder stays that file after the chdir.
  std::string exe_path = exe;
  if (exe.find('/') != std::string::npos && exe[0] != '/') exe_path = fs::absolute(exe).string();
  std::vector<std::string> args{exe_path, script};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, exe_path.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  hw::set_temp_writer_child(pid);  // a SIGINT/SIGTERM kills it before the temporaries are unlinked
  int status = 0;
  const pid_t w = waitpid(pid, &status, 0);
  hw::set_temp_writer_child(0);
  if (w < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// Every plot side file (.csv, .gp) through a temporary renamed into place that replaces a symbolic
/// link at `path` rather than following it (one planted in the --plot folder made fusesim write
/// outside it), 0666 less the umask like the images.
void write_text(const std::string& path, const std::string& text) { hw::write_outputs_atomic({{path, text, "--plot", true}}); }

/// A new empty hidden file `.STEM.XXXXXX` beside `final_path`, registered for removal on a signal
/// from the moment it exists (hw/temp_files.hpp). Errors: std::runtime_error naming the folder.
std::unique_ptr<hw::ScopedTemp> new_temp_beside(const std::string& final_path) {
  const fs::path p(final_path);
  std::string hidden(1, '.');
  hidden.append(p.filename().string()).append(".XXXXXX");
  std::string pat = (p.parent_path() / hidden).string();
  int slot = -1;
  const int fd = hw::create_registered_temp(pat, slot);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create a temporary file beside '{}': {}", hw::printable(final_path), std::strerror(errno)));
  ::close(fd);
  return std::make_unique<hw::ScopedTemp>(pat, slot);
}

/// Draw BASE.png and BASE.svg: gnuplot runs `head + outputs(png, svg)` in BASE's folder with the
/// images going to hidden registered temporaries (removed on SIGINT/SIGTERM, hw/temp_files.hpp) that
/// are renamed to their final names only when gnuplot succeeded and wrote both, so no 0-byte or
/// partial image is ever left under a final name. `outputs` gets file names relative to the folder
/// (BASE.gp, kept for the user, names the final files: `cd DIR && gnuplot BASE.gp` redraws them).
/// Returns gnuplot's exit status (1 when it exited 0 but left an image empty).
int render_images(const std::string& exe, const std::string& base, const std::string& head,
                  const std::function<std::string(const std::string&, const std::string&)>& outputs, PlotReport& rep) {
  const fs::path base_path(base);
  const std::string dir = base_path.parent_path().empty() ? "." : base_path.parent_path().string();
  const std::string stem = base_path.filename().string();
  auto name_in_dir = [](const std::string& p) { return fs::path(p).filename().string(); };
  write_text(base + ".gp", head + outputs(stem + ".png", stem + ".svg"));
  if (!rep.gnuplot_found) return 0;
  hw::install_temp_cleanup_handlers();
  const auto png = new_temp_beside(base + ".png"), svg = new_temp_beside(base + ".svg"), script = new_temp_beside(base + ".gp");
  {
    std::ofstream f(script->path());
    if (!f || !(f << head << outputs(name_in_dir(png->path()), name_in_dir(svg->path()))))
      throw std::runtime_error(fmt::format("cannot write '{}'", hw::printable(script->path())));
  }
  const int log_slot = hw::register_temp(base + ".gnuplot.log");  // removed if the run is killed; kept when gnuplot fails
  int rc = run_gnuplot(exe, dir, name_in_dir(script->path()), base + ".gnuplot.log");
  hw::forget_temp(log_slot);
  std::string why = fmt::format("exit {}", rc);
  if (rc == 0)
    for (auto* t : {png.get(), svg.get()}) {
      struct stat st {};
      if (::stat(t->path().c_str(), &st) != 0 || st.st_size == 0) {
        rc = 1;  // gnuplot said nothing went wrong, but an image is empty: not a plot
        why = "exit 0 but an empty image";
      }
    }
  if (rc != 0) {
    rep.messages.push_back(fmt::format("gnuplot failed on {} ({}); see {}", base + ".gp", why, base + ".gnuplot.log"));
    return rc;
  }
  std::error_code ec;
  fs::remove(base + ".gnuplot.log", ec);  // gnuplot succeeded: its log goes, whatever follows
  const mode_t mask = ::umask(0);
  ::umask(mask);
  for (auto* t : {png.get(), svg.get()}) {
    const std::string dest = t == png.get() ? base + ".png" : base + ".svg";
    // mkstemp made it 0600; the images get the CSV and .gp files' 0666 less the umask.
    if (::chmod(t->path().c_str(), 0666 & ~mask) != 0)
      throw std::runtime_error(fmt::format("cannot set the permissions of '{}': {}", hw::printable(t->path()), std::strerror(errno)));
    if (::rename(t->path().c_str(), dest.c_str()) != 0)
      throw std::runtime_error(fmt::format("cannot move the plot into '{}': {}", hw::printable(dest), std::strerror(errno)));
    t->release();
  }
  rep.image_files.push_back(base + ".png");
  rep.image_files.push_back(base + ".svg");
  return 0;
}

}  // namespace

namespace {
std::string normal_path(const std::string& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return (ec ? fs::path(p) : a).lexically_normal().string();
}
}  // namespace

PlotNamer::PlotNamer(const std::vector<std::string>& inputs) {
  // Each input once: its path, and its file's identity when it exists (what hw::same_existing_file
  // compares, fs::equivalent), so that claim() costs one stat per candidate file, not one per input.
  for (const auto& in : inputs) {
    input_paths_.insert(normal_path(in));
    struct stat st {};
    if (::stat(in.c_str(), &st) == 0) input_files_.insert({st.st_dev, st.st_ino});
  }
}

std::string PlotNamer::claim(const std::string& dir, const std::string& stem) {
  const std::string first = plotnames::unique_file_stem(stem);
  for (int n = 1; n <= 10000; ++n) {
    const std::string base = n == 1 ? first : fmt::format("{}-{}", first, n);
    bool free = true;
    for (const char* suffix : kSuffixes) {
      const std::string file = base + suffix;
      if (taken_.count(lower(file))) free = false;
      const std::string path = plotnames::path_inside(dir, file).string();
      struct stat st {};
      if (input_paths_.count(normal_path(path)) || (::stat(path.c_str(), &st) == 0 && input_files_.count({st.st_dev, st.st_ino})))
        free = false;
      if (!free) break;
    }
    if (!free) continue;
    for (const char* suffix : kSuffixes) taken_.insert(lower(base + suffix));
    return plotnames::path_inside(dir, base).string();
  }
  throw std::runtime_error(fmt::format("--plot: no free file name for '{}' in '{}' after 10000 tries", hw::printable(stem), hw::printable(dir)));
}

std::string varying_param(const std::vector<const FitPoint*>& pts, bool* numeric) {
  if (numeric) *numeric = false;
  if (pts.size() < 2) return "";
  std::vector<std::string> keys;
  std::set<std::string> seen;
  for (const auto* p : pts)
    if (p->params.IsMap())
      for (auto it = p->params.begin(); it != p->params.end(); ++it)
        if (seen.insert(it->first.as<std::string>()).second) keys.push_back(it->first.as<std::string>());
  std::string first_any;
  for (const auto& k : keys) {
    std::set<std::string> vals;
    bool all_num = true;
    for (const auto* p : pts) {
      const std::string v = scalar(p->params[k]);
      vals.insert(v);
      all_num = all_num && is_number(v);
    }
    if (vals.size() < 2) continue;
    if (all_num) {
      if (numeric) *numeric = true;
      return k;
    }
    if (first_any.empty()) first_any = k;
  }
  return first_any;
}

PlotReport write_plots(const hw::Hardware& hw, const std::vector<FitPoint>& pts, const std::vector<double>& predicted_us,
                       const std::vector<bool>& held_out, const PlotOptions& opt) {
  PlotReport rep;
  PlotNamer own;  // no namer given: names distinct within this call
  PlotNamer& namer = opt.namer ? *opt.namer : own;
  std::error_code ec;
  fs::create_directories(opt.dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create plot folder '{}': {}", opt.dir, ec.message()));
  rep.gnuplot_found = find_in_path(opt.gnuplot);
  if (!rep.gnuplot_found)
    rep.messages.push_back(fmt::format("gnuplot not found ('{}' is not in PATH; Debian package gnuplot-nox): wrote the CSV "
                                       "tables only, no PNG/SVG",
                                       opt.gnuplot));
  // Tables in order of first appearance.
  std::vector<std::string> tables;
  std::map<std::string, std::vector<size_t>> rows;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (!rows.count(pts[i].table)) tables.push_back(pts[i].table);
    rows[pts[i].table].push_back(i);
  }
  for (const auto& table : tables) {
    const auto& idx = rows[table];
    std::vector<const FitPoint*> totals;
    for (size_t i : idx)
      if (pts[i].phase.empty()) totals.push_back(&pts[i]);
    bool numeric = false;
    const std::string x = varying_param(totals, &numeric);
    // Every parameter that varies (for series labels).
    std::vector<std::string> varying;
    {
      std::vector<const FitPoint*> rest = totals;
      std::set<std::string> keys;
      for (const auto* p : rest)
        if (p->params.IsMap())
          for (auto it = p->params.begin(); it != p->params.end(); ++it) keys.insert(it->first.as<std::string>());
      for (const auto& k : keys) {
        std::set<std::string> vals;
        for (const auto* p : rest) vals.insert(scalar(p->params[k]));
        if (vals.size() > 1) varying.push_back(k);
      }
    }
    const std::string base = namer.claim(opt.dir, opt.prefix + table);
    // The table.
    std::ostringstream csv;
    csv << "id,series,x_param,x,phase,measured_us,predicted_us,error_pct,held_out,source\n";
    std::vector<std::string> series_order;
    std::map<std::string, std::vector<size_t>> series_rows;
    for (size_t i : idx) {
      const auto& p = pts[i];
      const std::string xs = x.empty() ? "" : scalar(p.params[x]);
      const std::string ser = series_of(p, x, varying);
      const double err = (predicted_us[i] - p.measured_us) / p.measured_us * 100;
      csv << fmt::format("{},{},{},{},{},{:.4f},{:.4f},{:.3f},{},{}\n", csv_quote(p.id), csv_quote(ser), hw::csv_value(x), hw::csv_value(xs), hw::csv_value(p.phase), p.measured_us,
                         predicted_us[i], err, held_out[i] ? 1 : 0, csv_quote(p.source));
      if (p.phase.empty()) {
        if (!series_rows.count(ser)) series_order.push_back(ser);
        series_rows[ser].push_back(i);
      }
    }
    write_text(base + ".csv", csv.str());
    rep.csv_files.push_back(base + ".csv");
    if (totals.empty()) continue;
    // Data blocks for gnuplot: per series, fitted and held-out points; the dense curve.
    std::ostringstream dat;
    std::vector<std::string> plot_cmds;
    const bool categorical = !numeric;
    std::vector<std::string> xtics;
    int cat = 0;
    int block = 0;
    std::ostringstream curve_csv;
    curve_csv << "series,x_param,x,predicted_us\n";
    for (size_t s = 0; s < series_order.size(); ++s) {
      const auto& ser = series_order[s];
      auto ids = series_rows[ser];
      if (numeric)
        std::sort(ids.begin(), ids.end(), [&](size_t a, size_t b) {
          return std::stod(scalar(pts[a].params[x])) < std::stod(scalar(pts[b].params[x]));
        });
      std::ostringstream fitted, held, pred;
      int nf = 0, nh = 0;
      for (size_t i : ids) {
        std::string xv;
        if (categorical) {
          xv = std::to_string(cat);
          std::string label = pts[i].id.substr(pts[i].id.rfind('/') == std::string::npos ? 0 : pts[i].id.rfind('/') + 1);
          xtics.push_back(fmt::format("{} {}", gp_quote(label), cat));
          ++cat;
        } else {
          xv = scalar(pts[i].params[x]);
        }
        (held_out[i] ? held : fitted) << xv << " " << pts[i].measured_us << "\n";
        (held_out[i] ? nh : nf)++;
        pred << xv << " " << predicted_us[i] << "\n";
      }
      // Dense prediction along x for this series.
      std::ostringstream dense;
      int nd = 0;
      if (numeric && !ids.empty()) {
        double lo = 1e300, hi = -1e300;
        bool integer = true;
        for (size_t i : ids) {
          const double v = std::stod(scalar(pts[i].params[x]));
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          integer = integer && pts[i].params[x].Scalar().find_first_of(".eE") == std::string::npos;
        }
        if (hi > lo) {
          const bool logx = lo > 0 && hi / lo >= 4;
          std::vector<FitPoint> trial;
          std::vector<double> xsv;
          int skipped = 0;
          std::string first_skip;
          for (int j = 0; j < opt.dense_points; ++j) {
            const double t = double(j) / (opt.dense_points - 1);
            double v = logx ? lo * std::pow(hi / lo, t) : lo + (hi - lo) * t;
            if (integer) v = std::round(v);
            if (!xsv.empty() && v == xsv.back()) continue;
            xsv.push_back(v);
          }
          for (double v : xsv) {
            FitPoint fp = pts[ids.front()];
            fp.params = YAML::Clone(fp.params);
            if (integer) fp.params[x] = static_cast<int64_t>(v);
            else fp.params[x] = v;
            try {
              const double y = predict(hw, {fp}).at(0);
              dense << v << " " << y << "\n";
              curve_csv << fmt::format("{},{},{},{:.4f}\n", csv_quote(ser), hw::csv_value(x), v, y);
              ++nd;
            } catch (const std::exception& e) {
              // A trial the model refuses (an invalid combination, a shape a measured table lacks):
              // no point there, and the report says how many were skipped and why.
              if (skipped++ == 0) first_skip = e.what();
            }
          }
          if (skipped)
            rep.messages.push_back(fmt::format("{}: {} of {} curve points of series '{}' skipped (the model refused them; the "
                                               "first: {})", table, skipped, xsv.size(), ser, first_skip));
        }
      }
      const std::string title = ser == "model" ? "" : ser;
      auto add_block = [&](const std::string& data, int n, const std::string& style, const std::string& what) {
        if (n == 0) return;
        dat << "$B" << block << " << EOD\n" << data << "EOD\n";
        plot_cmds.push_back(fmt::format("$B{} using 1:2 {} title {}", block, style, gp_quote(what + (title.empty() ? "" : " (" + title + ")"))));
        ++block;
      };
      const int lc = int(s) + 1;
      if (nd > 1) add_block(dense.str(), nd, fmt::format("with lines lw 2 lc {}", lc), "predicted");
      else add_block(pred.str(), int(ids.size()), fmt::format("with points pt 2 ps 1.5 lc {}", lc), "predicted");
      add_block(fitted.str(), nf, fmt::format("with points pt 7 ps 1.3 lc {}", lc), opt.measured_label);
      add_block(held.str(), nh, fmt::format("with points pt 6 ps 2.0 lw 2 lc {}", lc), "measured (held out)");
    }
    if (numeric) {
      write_text(base + ".curve.csv", curve_csv.str());
      rep.csv_files.push_back(base + ".curve.csv");
    }
    std::ostringstream gp;
    gp << "# generated by fusesim: " << plotnames::gnuplot_comment(table) << "\n" << dat.str();
    gp << "set title " << gp_quote(opt.prefix + table) << "\nset ylabel \"time (us)\"\nset grid\nset key below\n";
    if (numeric) {
      gp << "set xlabel " << gp_quote(x) << "\n";
      double lo = 1e300, hi = -1e300;
      for (const auto* p : totals) {
        const double v = std::stod(scalar(p->params[x]));
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      if (lo > 0 && hi / lo >= 4) gp << "set logscale x 2\n";
      gp << "set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n";
    } else {
      gp << "set xtics rotate by -30 (";
      for (size_t i = 0; i < xtics.size(); ++i) gp << (i ? ", " : "") << xtics[i];
      gp << ")\nset xrange [-0.5:" << cat - 0.5 << "]\nset offsets 0, 0, graph 0.1, graph 0.1\n";
    }
    std::string plot = "plot ";
    for (size_t i = 0; i < plot_cmds.size(); ++i) plot += (i ? ", \\\n     " : "") + plot_cmds[i];
    render_images(opt.gnuplot, base, gp.str(), [&](const std::string& png, const std::string& svg) {
      return "set terminal pngcairo size 1000,700 noenhanced\nset output " + gp_quote(png) + "\n" + plot + "\n" +
             "set terminal svg size 1000,700 noenhanced\nset output " + gp_quote(svg) + "\n" + plot + "\nunset output\n";
    }, rep);
  }
  return rep;
}

PlotReport write_timeline_plot(const std::string& dir, const std::string& name, const std::string& title,
                               const std::vector<std::string>& rows, const std::vector<TimelineBar>& bars,
                               const std::string& gnuplot, PlotNamer* namer) {
  PlotReport rep;
  PlotNamer own;
  const std::string base = (namer ? *namer : own).claim(dir, name + ".timeline");
  std::ostringstream csv;
  csv << "row,kernel,start_us,end_us,duration_us\n";
  std::vector<std::string> kernels;  // legend order: first seen
  for (const auto& b : bars) {
    csv << fmt::format("{},{},{:.4f},{:.4f},{:.4f}\n", csv_quote(b.row), csv_quote(b.kernel), b.start_us, b.end_us, b.end_us - b.start_us);
    if (std::find(kernels.begin(), kernels.end(), b.kernel) == kernels.end()) kernels.push_back(b.kernel);
  }
  write_text(base + ".csv", csv.str());
  rep.csv_files.push_back(base + ".csv");
  // One data block per kernel name (its legend entry); y = row index from the top.
  std::ostringstream gp;
  gp << "# generated by fusesim: timeline " << plotnames::gnuplot_comment(name) << "\n";
  for (size_t k = 0; k < kernels.size(); ++k) {
    gp << "$K" << k << " << EOD\n";
    for (const auto& b : bars) {
      if (b.kernel != kernels[k]) continue;
      const auto r = std::find(rows.begin(), rows.end(), b.row);
      if (r == rows.end()) continue;
      const double y = double(rows.size() - 1 - size_t(r - rows.begin()));
      gp << fmt::format("{:.4f} {:.1f} {:.4f} 0.35\n", 0.5 * (b.start_us + b.end_us), y, 0.5 * (b.end_us - b.start_us));
    }
    gp << "EOD\n";
  }
  gp << "set title " << gp_quote(title) << "\nset xlabel \"time (us)\"\nset grid x\nset key below\n";
  gp << "set yrange [-0.7:" << double(rows.size()) - 0.3 << "]\nset ytics (";
  for (size_t i = 0; i < rows.size(); ++i) gp << (i ? ", " : "") << gp_quote(rows[i]) << " " << rows.size() - 1 - i;
  gp << ")\nset style fill solid 0.6 border -1\n";
  std::string plot = "plot ";
  for (size_t k = 0; k < kernels.size(); ++k)
    plot += fmt::format("{}$K{} using 1:2:3:4 with boxxyerror lc {} title {}", k ? ", \\\n     " : "", k, k + 1, gp_quote(kernels[k]));
  const int height = 160 + 40 * int(rows.size());
  rep.gnuplot_found = find_in_path(gnuplot);
  if (!rep.gnuplot_found) rep.messages.push_back("gnuplot not found in PATH: wrote " + base + ".csv and " + base + ".gp only");
  render_images(gnuplot, base, gp.str(), [&](const std::string& png, const std::string& svg) {
    return fmt::format("set terminal pngcairo size 1200,{} noenhanced\nset output {}\n{}\n", height, gp_quote(png), plot) +
           fmt::format("set terminal svg size 1200,{} noenhanced\nset output {}\n{}\nunset output\n", height, gp_quote(svg), plot);
  }, rep);
  return rep;
}

}  // namespace fusesim::calibrate
