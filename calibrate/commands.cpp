// `fusesim calibrate fit` (and the other calibrate sub-commands' registration).
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "calibrate/commands.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/measurements.hpp"
#include "calibrate/mori_runner.hpp"
#include "calibrate/plot.hpp"
#include "hw/io.hpp"
#include "hw/output_name.hpp"
#include "hw/printable.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"

namespace fusesim {
namespace {

std::string today_utc() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::string git_head() {
  std::FILE* p = popen("git rev-parse --short=12 HEAD 2>/dev/null", "r");
  if (!p) return "unknown";
  char buf[64] = {0};
  const bool ok = std::fgets(buf, sizeof buf, p) != nullptr;
  pclose(p);
  std::string s = ok ? buf : "unknown";
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s.empty() ? "unknown" : s;
}


/// `calibrate fit`'s arguments as parsed (defaults as the options declare them).
struct FitArgs {
  std::string hw, out, holdout = "none", date, commit, report, free, plot;
  int max_evaluations = 4000;
  std::vector<std::string> measurements;
  std::string layout = "auto";  ///< RESULT_JSON layout of bench_gemm_ar.py rows (calibrate::record_from_result_json)
  double prior_weight = 0.01, phase_weight = 0.5;
  // The method and the objective's terms (calibrate::FitOptions).
  std::string method = "lm", residuals = "relative";
  int iters = 400;
  double hinge = 0, hinge_threshold = 0.10, kernel_weight = 0, kernel_hinge = 0, kernel_hinge_threshold = 0.13;
  double small_t_kernel_weight = 0, median_cap = 0;
  /// Which options were given (CLI11's count), for the refusals that depend on the method.
  bool given_iters = false, given_max_evaluations = false, given_kernel_weight = false, given_kernel_hinge = false,
       given_kernel_hinge_threshold = false, given_hinge_threshold = false;
  bool nelder_mead() const { return method == "nelder-mead"; }
  bool evaluate_only() const { return free == "none" || (nelder_mead() && iters == 0); }
};

/// CLI11 check: a finite number >= 0 (weights, hinges, thresholds; a negative weight would reward errors).
const CLI::Validator kNonNegativeFinite(
    [](std::string& v) -> std::string {
      double x = 0;
      try {
        size_t used = 0;
        x = std::stod(v, &used);
        if (used != v.size()) return "expected a number, got '" + v + "'";
      } catch (const std::exception&) {
        return "expected a number, got '" + v + "'";
      }
      if (!std::isfinite(x) || x < 0) return "expected a finite number >= 0, got " + v;
      return {};
    },
    "FINITE >= 0");

/// A whole number written in full ("12"; not "", "12x", "+12", "1e3"); nullopt otherwise.
std::optional<long> whole_number(const std::string& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::stol(s);
}

/// CLI11 check: a whole number of iterations, 0 to 1000000, written in full ("400"; not "1.5", "1e3").
const CLI::Validator kIterations(
    [](std::string& v) -> std::string {
      const auto n = whole_number(v);
      if (!n || *n > 1000000) return "expected a whole number from 0 to 1000000, got '" + v + "'";
      return {};
    },
    "0..1000000");

/// True for a real calendar date written YYYY-MM-DD.
bool is_iso_date(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  const auto y = whole_number(s.substr(0, 4)), m = whole_number(s.substr(5, 2)), d = whole_number(s.substr(8, 2));
  if (!y || !m || !d || *m < 1 || *m > 12 || *d < 1) return false;
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (*y % 4 == 0 && *y % 100 != 0) || *y % 400 == 0;
  return *d <= days[*m - 1] + (*m == 2 && leap ? 1 : 0);
}

/// `--holdout kfold=K` or `kfold=K/I`: K (and I, -1 when absent); nullopt for another rule.
/// Errors: std::invalid_argument naming the option and the valid range.
std::optional<std::pair<long, long>> parse_kfold(const std::string& rule) {
  if (rule.rfind("kfold=", 0) != 0) return std::nullopt;
  const std::string rest = rule.substr(6);
  const auto slash = rest.find('/');
  const auto k = whole_number(rest.substr(0, slash));
  if (!k || *k < 2)
    throw std::invalid_argument(fmt::format("--holdout {}: K must be a whole number of 2 or more (and at most the number of "
                                            "measured cases); expected kfold=K or kfold=K/I", rule));
  if (slash == std::string::npos) return std::make_pair(*k, -1L);
  const auto i = whole_number(rest.substr(slash + 1));
  if (!i || *i >= *k)
    throw std::invalid_argument(fmt::format("--holdout {}: the fold I of kfold=K/I must be a whole number from 0 to {}", rule, *k - 1));
  return std::make_pair(*k, *i);
}

/// Refuse bad `calibrate fit` arguments before any work, each error naming the option and what it takes.
void validate_fit_args(const FitArgs& a) {
  if (a.max_evaluations < 1)
    throw std::invalid_argument(fmt::format("--max-evaluations {}: expected a whole number of 1 or more", a.max_evaluations));
  if (!std::isfinite(a.prior_weight) || a.prior_weight < 0)
    throw std::invalid_argument(fmt::format("--prior-weight {}: expected a number of 0 or more (0 turns the prior off)", a.prior_weight));
  if (!std::isfinite(a.phase_weight) || a.phase_weight < 0)
    throw std::invalid_argument(fmt::format("--phase-weight {}: expected a number of 0 or more (0 ignores the phases)", a.phase_weight));
  if (!a.date.empty() && !is_iso_date(a.date))
    throw std::invalid_argument(fmt::format("--date '{}': expected a date written YYYY-MM-DD, e.g. 2026-11-29", a.date));
  parse_kfold(a.holdout);
  // Each method's own stopping rule.
  if (a.given_iters && !a.nelder_mead())
    throw std::invalid_argument(fmt::format("--iters {}: Nelder-Mead's iteration count; --method lm stops at convergence or "
                                            "--max-evaluations (add --method nelder-mead)", a.iters));
  if (a.given_max_evaluations && a.nelder_mead())
    throw std::invalid_argument(fmt::format("--max-evaluations {}: caps Levenberg-Marquardt; --method nelder-mead runs --iters "
                                            "iterations", a.max_evaluations));
  // A threshold without its hinge changes nothing: refused rather than ignored.
  if (a.given_hinge_threshold && a.hinge == 0)
    throw std::invalid_argument("--hinge-threshold: without --hinge H (H > 0) there is no hinge term for it to set");
  if (a.given_kernel_hinge_threshold && a.kernel_hinge == 0)
    throw std::invalid_argument("--kernel-hinge-threshold: without --kernel-hinge H (H > 0) there is no kernel hinge term for it to set");
  if (a.evaluate_only() && !a.out.empty())
    throw std::invalid_argument(fmt::format("--out {}: {} fits nothing (it evaluates the starting values), so there is no fitted "
                                            "file to write", a.out, a.free == "none" ? "--free none" : "--iters 0"));
}

/// The objective and method of the parsed arguments (validate_fit_args first).
calibrate::FitOptions fit_options(const FitArgs& a) {
  calibrate::FitOptions o;
  o.prior_weight = a.prior_weight;
  o.max_evaluations = a.max_evaluations;
  o.method = a.nelder_mead() ? calibrate::FitMethod::NelderMead : calibrate::FitMethod::LevenbergMarquardt;
  o.iterations = a.iters;
  o.residuals = a.residuals == "log" ? calibrate::ResidualForm::Log : calibrate::ResidualForm::Relative;
  o.hinge = a.hinge;
  o.hinge_threshold = a.hinge_threshold;
  if (a.given_kernel_weight) o.kernel_weight = a.kernel_weight;
  o.kernel_hinge = a.kernel_hinge;
  o.kernel_hinge_threshold = a.kernel_hinge_threshold;
  o.small_t_kernel_weight = a.small_t_kernel_weight;
  o.median_cap = a.median_cap;
  o.no_free_keys = a.free == "none";
  return o;
}

/// What `calibrate fit` knows of one measurement file: its name in the per-file lines (a scenario's
/// `scenario:` name, else the path), its model and the hardware file it names (scenarios only).
struct MeasurementFile {
  std::string path, name, model, hardware;
};

/// The measurement files as given, each scenario read by models::Scenario::load (its name, model and
/// hardware); other files by path only. Errors: hw::FileError from the scenario loader.
std::vector<MeasurementFile> measurement_files(const std::vector<std::string>& paths) {
  std::vector<MeasurementFile> out;
  for (const auto& p : paths) {
    const std::string ext = std::filesystem::path(p).extension().string();
    if (ext == ".yaml" || ext == ".yml") {
      const auto sc = scenario::load(p);
      out.push_back({p, sc.name, sc.model, sc.hardware_path});
    } else {
      out.push_back({p, p, "", ""});
    }
  }
  return out;
}

/// Refuse a kernel option (--kernel-weight, --kernel-hinge, --kernel-hinge-threshold,
/// --small-t-kernel-weight) when no fitted point is of the kind it weights: it would change nothing.
/// Errors: std::invalid_argument naming the option and the files' models.
void check_kernel_options(const FitArgs& a, const std::vector<calibrate::FitPoint>& pts, const std::vector<MeasurementFile>& files) {
  auto has = [&](calibrate::PointKind k) {
    return std::any_of(pts.begin(), pts.end(), [&](const calibrate::FitPoint& p) { return p.kind == k; });
  };
  std::string models;
  for (const auto& f : files)
    models += fmt::format("{}{} (model {})", models.empty() ? "" : ", ", f.path, f.model.empty() ? "none: not a scenario" : f.model);
  auto refuse = [&](const std::string& option, const char* what) {
    throw std::invalid_argument(fmt::format("{}: the measurements have no {} to weight (the per-kernel durations of a measured AFD "
                                            "timeline, `kernels:` in a model: afd scenario); measurement files: {}",
                                            option, what, models));
  };
  const char* judged = "AFD timeline kernel duration at T >= 128";
  if (a.given_kernel_weight && !has(calibrate::PointKind::KernelDuration)) refuse("--kernel-weight", judged);
  if ((a.given_kernel_hinge || a.given_kernel_hinge_threshold) && !has(calibrate::PointKind::KernelDuration))
    refuse(a.given_kernel_hinge ? "--kernel-hinge" : "--kernel-hinge-threshold", judged);
  if (a.small_t_kernel_weight > 0 && !has(calibrate::PointKind::SmallTKernelDuration))
    refuse("--small-t-kernel-weight", "AFD timeline kernel duration at T < 128");
}

/// Errors per measurement file at the fitted values, fitted and held-out points together, as
/// fusesim_afd_fit printed them per scenario: "NAME: N points, median |err| X%, max Y%" over the
/// totals, then per kind of kernel duration present "  kernel durations at T >= 128: N, median |err|
/// X%, max Y%, K outside 15%" (and "at T < 128 (fitted with --small-t-kernel-weight)"), and "  phases:
/// ..." when there are phases. Also returned as JSON: [{file, name, totals: {count, median_abs_pct,
/// max_abs_pct}, kernel_durations?, small_t_kernel_durations?, phases?}].
nlohmann::json print_files(const calibrate::FitResult& r, const std::vector<MeasurementFile>& files) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : files) {
    std::vector<double> tot, ker, small, ph;
    for (const auto& p : r.points) {
      if (p.file != f.path) continue;
      const double e = std::fabs(p.error_pct);
      switch (p.kind) {
        case calibrate::PointKind::Total: tot.push_back(e); break;
        case calibrate::PointKind::Phase: ph.push_back(e); break;
        case calibrate::PointKind::KernelDuration: ker.push_back(e); break;
        case calibrate::PointKind::SmallTKernelDuration: small.push_back(e); break;
      }
    }
    auto stats = [](const std::vector<double>& v) {
      const double med = v.empty() ? 0.0 : models::median(v), mx = v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
      return std::make_pair(med, mx);
    };
    const auto [tm, tx] = stats(tot);
    fmt::print("{}: {} points, median |err| {:.2f}%, max {:.2f}%\n", hw::printable(f.name), tot.size(), tm, tx);
    nlohmann::json j{{"file", f.path}, {"name", f.name}, {"totals", {{"count", tot.size()}, {"median_abs_pct", tm}, {"max_abs_pct", tx}}}};
    auto kernel_line = [&](const char* what, const char* key, const std::vector<double>& v) {
      if (v.empty()) return;
      const auto [m, x] = stats(v);
      const auto over = std::count_if(v.begin(), v.end(), [](double e) { return e > 15.0; });
      fmt::print("  kernel durations {}: {}, median |err| {:.2f}%, max {:.2f}%, {} outside 15%\n", what, v.size(), m, x, over);
      j[key] = {{"count", v.size()}, {"median_abs_pct", m}, {"max_abs_pct", x}, {"outside_15_pct", over}};
    };
    kernel_line("at T >= 128", "kernel_durations", ker);
    kernel_line("at T < 128 (fitted with --small-t-kernel-weight)", "small_t_kernel_durations", small);
    if (!ph.empty()) {
      const auto [m, x] = stats(ph);
      fmt::print("  phases: {}, median |err| {:.2f}%, max {:.2f}%\n", ph.size(), m, x);
      j["phases"] = {{"count", ph.size()}, {"median_abs_pct", m}, {"max_abs_pct", x}};
    }
    out.push_back(j);
  }
  return out;
}

/// The objective's terms as one line: "objective 6.68449 = totals 0.13, hinge 0.5, ...", every term
/// the options turn on (totals always).
std::string objective_line(const calibrate::FitResult& r, const calibrate::FitOptions& o, bool has_phases, bool has_kernels) {
  const auto& t = r.terms;
  std::string s = fmt::format("objective {:.5f} = totals {:.5g}", r.objective, t.totals);
  if (has_phases) s += fmt::format(", phases {:.5g}", t.phases);
  if (has_kernels) s += fmt::format(", kernel durations {:.5g}", t.kernel_durations);
  if (o.small_t_kernel_weight > 0) s += fmt::format(", kernel durations at T < 128 {:.5g}", t.small_t_kernel_durations);
  if (o.hinge > 0) s += fmt::format(", hinge {:.5g}", t.hinge);
  if (o.kernel_hinge > 0) s += fmt::format(", kernel hinge {:.5g}", t.kernel_hinge);
  if (o.median_cap > 0) s += fmt::format(", median cap {:.5g}", t.median_cap);
  return s + fmt::format(", prior {:.5g}", t.prior);
}

/// The objective's terms as the report's `objective.terms` object (every term, 0 where it is off).
nlohmann::json terms_json(const calibrate::ObjectiveTerms& t) {
  return {{"totals", t.totals}, {"phases", t.phases}, {"kernel_durations", t.kernel_durations},
          {"small_t_kernel_durations", t.small_t_kernel_durations}, {"hinge", t.hinge}, {"kernel_hinge", t.kernel_hinge},
          {"median_cap", t.median_cap}, {"prior", t.prior}};
}

/// Measured cases of the points (a case's total and its phases share the id up to '#'), which the
/// k-fold rule deals out over folds: kfold=K needs K of them at least.
size_t measured_cases(const std::vector<calibrate::FitPoint>& pts) {
  std::set<std::string> ids;
  for (const auto& p : pts) ids.insert(p.id.substr(0, p.id.find('#')));
  return ids.size();
}

/// `yaml` (a hardware file written from `hw`) with each table's relative `file:` rewritten to
/// resolve from the folder of `out_path`, where the text is going: the relative path from that
/// folder to the table's file (Hardware::to_yaml writes it relative to the starting file's folder).
/// An absolute path is kept. Each table is one flow-mapping line, as Hardware::to_yaml writes it.
std::string rebase_table_files(const std::string& yaml, const hw::Hardware& hw, const std::string& out_path) {
  namespace fs = std::filesystem;
  const YAML::Node root = YAML::Load(yaml);
  const YAML::Node tables = root["tables"];
  if (!tables || !tables.IsMap()) return yaml;
  std::vector<std::string> lines;
  {
    std::istringstream in(yaml);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  std::error_code ec;
  fs::path out_dir = fs::weakly_canonical(fs::absolute(out_path), ec).parent_path();
  if (ec) out_dir = fs::absolute(out_path).lexically_normal().parent_path();
  bool changed = false;
  for (auto it = tables.begin(); it != tables.end(); ++it) {
    const std::string name = it->first.Scalar();
    const YAML::Node entry = it->second;
    if (!entry.IsMap() || !entry["file"] || !hw.has_table(name) || fs::path(entry["file"].Scalar()).is_absolute()) continue;
    const size_t line = size_t(it->first.Mark().line);
    if (line >= lines.size() || size_t(entry.Mark().line) != line)
      throw std::runtime_error(fmt::format("calibrate fit: table '{}' of the written hardware file is not on one line", name));
    fs::path target = fs::weakly_canonical(fs::absolute(hw.table(name).file), ec);
    if (ec) target = fs::absolute(hw.table(name).file).lexically_normal();
    fs::path rel = target.lexically_relative(out_dir);
    if (rel.empty()) rel = target;
    if (rel.string() == entry["file"].Scalar()) continue;
    YAML::Emitter e;
    e << YAML::BeginMap << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (auto f = entry.begin(); f != entry.end(); ++f) {
      const std::string key = f->first.Scalar();
      e << YAML::Key << key << YAML::Value;
      if (key == "file") e << rel.string();
      else if (f->second.IsScalar() && key == "source") e << YAML::DoubleQuoted << f->second.Scalar();
      else e << f->second;
    }
    e << YAML::EndMap << YAML::EndMap;
    const size_t indent = lines[line].find_first_not_of(' ');
    lines[line] = lines[line].substr(0, indent == std::string::npos ? 0 : indent) + e.c_str();
    changed = true;
  }
  if (!changed) return yaml;
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

/// A JSON number, or null for an empty optional (no held-out total).
nlohmann::json or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }
std::string pct_or_na(const std::optional<double>& v) { return v ? fmt::format("{:.2f}%", *v) : "n/a (no total held out)"; }

void print_points(const calibrate::FitResult& r, bool held_out) {
  for (const auto& p : r.points) {
    if (p.held_out != held_out) continue;
    fmt::print("  {:<72} {:>9.1f} {:>9.1f} {:>+7.2f}%\n", hw::printable(p.id), p.measured_us, p.predicted_us, p.error_pct);
  }
}

}  // namespace

/// `calibrate probe`: run every portable probe (hw/kernels/run_all_probes.sh) on this node's GPUs,
/// writing JSON lines (machine, command, commit, date in each) under DIR. Errors: no GPU visible,
/// the script missing, or the script failing (its exit status is returned).
int run_probes(const std::string& out_dir, const std::string& commit, const std::string& script) {
  const bool nvidia = std::system("nvidia-smi -L >/dev/null 2>&1") == 0;
  const bool amd = std::system("rocm-smi --showid >/dev/null 2>&1") == 0;
  if (!nvidia && !amd)
    throw std::runtime_error("calibrate probe: no GPU visible here (nvidia-smi / rocm-smi found none); run it on a live node, "
                             "e.g. through the device tool (calibrate/data/h200x2/README.md)");
  std::ifstream probe_script(script);
  if (!probe_script) throw std::runtime_error(fmt::format("calibrate probe: cannot read '{}'", script));
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("calibrate probe: fork failed");
  if (pid == 0) {
    execlp("bash", "bash", script.c_str(), out_dir.c_str(), commit.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  if (rc != 0) throw std::runtime_error(fmt::format("calibrate probe: {} exited with status {}", script, rc));
  fmt::print("probe sweeps written under {} (commit {})\n", hw::printable(out_dir), hw::printable(commit));
  return 0;
}

void register_calibrate_commands(CLI::App& calibrate) {
  {
    auto out = std::make_shared<std::string>(), commit = std::make_shared<std::string>();
    auto script = std::make_shared<std::string>(FUSESIM_SOURCE_DIR "/hw/kernels/run_all_probes.sh");
    auto* probe = calibrate.add_subcommand("probe", "run the portable GPU probes on this live node (hw/kernels/run_all_probes.sh)");
    probe->add_option("--out", *out, "directory for the JSON-lines files")->required();
    probe->add_option("--commit", *commit, "commit recorded in every line (default: git HEAD)");
    probe->add_option("--script", *script, "probe driver script");
    probe->callback([out, commit, script] { run_probes(*out, commit->empty() ? git_head() : *commit, *script); });
  }
  auto a = std::make_shared<FitArgs>();
  auto* fit = calibrate.add_subcommand(
      "fit", "fit a hardware file's parameters to measured points (Levenberg-Marquardt or Nelder-Mead on one objective); report "
             "fitted and held-out error; write the fitted hardware file");
  fit->add_option("--hw", a->hw, "starting hardware YAML")->required()->check(CLI::ExistingFile);
  fit->add_option("--measurements", a->measurements,
                  "measurement files: scenario YAML (measured values), JSON lines (*.jsonl: RESULT_JSON records, probe or AFD "
                  "lines), benchmark logs (*.log: RESULT_JSON lines among noise), seed-004 style JSON documents")
      ->required()->check(CLI::ExistingFile);
  fit->add_option("--method", a->method,
                  "minimiser: lm (bounded Levenberg-Marquardt, default) or nelder-mead (on log-parameters inside the bounds; "
                  "the AFD hardware files' fits)")
      ->check(CLI::IsMember({"lm", "nelder-mead"}))->capture_default_str();
  fit->add_option("--plot", a->plot, "write per-table plots (gnuplot PNG + SVG) and CSV tables of measured vs predicted into DIR")
      ->check(hw::refuse_dash_output_name);
  auto* max_evals = fit->add_option("--max-evaluations", a->max_evaluations, "lm: cap on the Levenberg-Marquardt function evaluations per fit (Eigen's maxfev); the numerical Jacobian's evaluations (one per free parameter per step) are not capped by it but are counted in the printed total");
  auto* iters = fit->add_option("--iters", a->iters, "nelder-mead: iterations (no other stop; default 400); 0 evaluates the start")
                    ->check(kIterations);
  fit->add_option("--holdout", a->holdout,
                  "held-out points: PARAM=VALUE (e.g. m=8192), table=NAME, kfold=K (all K folds), kfold=K/I, none");
  fit->add_option("--out", a->out, "write the calibrated hardware YAML here")->check(hw::refuse_dash_output_name);
  fit->add_option("--report", a->report, "write the fit report (params, residuals per point) as JSON here")->check(hw::refuse_dash_output_name);
  fit->add_option("--free", a->free,
                  "comma-separated keys to fit (default: every value of kind fitted); none: fit nothing, evaluate the start");
  fit->add_option("--prior-weight", a->prior_weight, "weight of the log(p/p0) prior residuals");
  fit->add_option("--layout", a->layout,
                  "RESULT_JSON layout of bench_gemm_ar.py rows by the commit that printed them: auto (recognised by the key set), "
                  "16ddbb94, 0b26ebf8, 103655f6, 6022ecfa or ad271d19 (a '# layout: X' line in a file states it for the lines after it)")
      ->check(CLI::IsMember({"auto", "16ddbb94", "0b26ebf8", "103655f6", "6022ecfa", "ad271d19"}));
  fit->add_option("--phase-weight", a->phase_weight, "weight of per-phase residuals relative to totals (and of kernel durations without --kernel-weight)");
  fit->add_option("--residuals", a->residuals,
                  "a point's error in its residual: relative ((pred - meas) / meas, default) or log (log(pred / meas))")
      ->check(CLI::IsMember({"relative", "log"}))->capture_default_str();
  fit->add_option("--hinge", a->hinge, "weight on a total's squared excess of |log error| over --hinge-threshold (0: off)")
      ->check(kNonNegativeFinite);
  auto* hinge_thr = fit->add_option("--hinge-threshold", a->hinge_threshold, "|log error| above which --hinge applies (default 0.1, about 10%)")
                        ->check(kNonNegativeFinite);
  auto* kw = fit->add_option("--kernel-weight", a->kernel_weight,
                             "weight on the squared error of an AFD timeline's kernel duration at T >= 128 (default: weighted "
                             "as a phase, --phase-weight on the error)")
                 ->check(kNonNegativeFinite);
  auto* kh = fit->add_option("--kernel-hinge", a->kernel_hinge,
                             "the same as --hinge for those kernel durations, over --kernel-hinge-threshold (0: off)")
                 ->check(kNonNegativeFinite);
  auto* kh_thr = fit->add_option("--kernel-hinge-threshold", a->kernel_hinge_threshold, "|log error| above which --kernel-hinge applies (default 0.13)")
                     ->check(kNonNegativeFinite);
  fit->add_option("--small-t-kernel-weight", a->small_t_kernel_weight,
                  "also fit the AFD timelines' kernel durations at T < 128 (not judged) with this weight on their squared "
                  "error (0: off)")
      ->check(kNonNegativeFinite);
  fit->add_option("--median-cap", a->median_cap,
                  "add 100 x n x (median - M)^2 for a measurement file whose n totals' median |error| exceeds M (e.g. 0.045; 0: off)")
      ->check(kNonNegativeFinite);
  fit->add_option("--date", a->date, "date recorded in the output (default: today, UTC)");
  fit->add_option("--commit", a->commit, "commit recorded in the output (default: git HEAD)");
  fit->callback([a, max_evals, iters, hinge_thr, kw, kh, kh_thr] {
    a->given_iters = iters->count() > 0;
    a->given_max_evaluations = max_evals->count() > 0;
    a->given_hinge_threshold = hinge_thr->count() > 0;
    a->given_kernel_weight = kw->count() > 0;
    a->given_kernel_hinge = kh->count() > 0;
    a->given_kernel_hinge_threshold = kh_thr->count() > 0;
    validate_fit_args(*a);
    // Refuse a bad destination (a folder, a missing folder, --out and --report the same file)
    // before the fit, and write both all-or-nothing after it.
    std::vector<hw::OutputFile> outputs;
    if (!a->out.empty()) outputs.push_back({a->out, "", "--out"});
    if (!a->report.empty()) outputs.push_back({a->report, "", "--report"});
    hw::check_output_files(outputs);
    // No output over an input (a fresh-user trial's --report F replaced its --hw or --measurements
    // file F with the JSON report). --out may name --hw: writing the calibrated file in place.
    std::vector<scenario::InputFile> named{{a->hw, "--hw file", "--out"}};
    for (const auto& m : a->measurements) {
      named.push_back({m, "measurement file", ""});
      // A scenario given as measurements reads its hardware file and whatever its model's cases
      // name (afd's gemm_machine): inputs too. One that does not load is reported by the fit below.
      try {
        const models::Scenario sc = scenario::load(m, {scenario::LoadOptions{}.max_cases, false});
        for (const auto& in : scenario::input_files(&sc, nullptr))
          if (in.path != m) named.push_back(in);
      } catch (const std::exception&) {
      }
    }
    scenario::refuse_outputs_over_inputs(outputs, named);
    const auto hw = models::load_hardware(a->hw);
    // ... nor over a measured table of --hw (a fresh-user trial's --out TABLE replaced one).
    {
      auto in = scenario::input_files(nullptr, &hw);
      in.front().replaceable_by = "--out";  // the hardware file itself, calibrated in place
      scenario::refuse_outputs_over_inputs(outputs, in);
    }
    std::vector<calibrate::Record> rejected;
    std::vector<std::string> warnings;
    auto pts = calibrate::load_fit_points(a->measurements, a->phase_weight, &rejected, &warnings, a->layout);
    for (auto& p : pts) p.kind = calibrate::kind_of(p);
    for (size_t i = 0; i < warnings.size() && i < 5; ++i) fmt::print(stderr, "warning: {}\n", hw::printable(warnings[i]));
    if (warnings.size() > 5) fmt::print(stderr, "warning: ... and {} more\n", warnings.size() - 5);
    for (const auto& r : rejected)
      fmt::print("rejected {}:{} ({}): {}\n", hw::printable(r.file), r.line, hw::printable(r.id), hw::printable(r.reason));
    if (pts.empty()) throw std::runtime_error("no measured point a model can predict in the measurement files");
    if (const auto kf = parse_kfold(a->holdout); kf && size_t(kf->first) > measured_cases(pts))
      throw std::invalid_argument(fmt::format("--holdout {}: K must be from 2 to {}, the number of measured cases in the measurement "
                                              "files (a case's total and phases stay in one fold)", a->holdout, measured_cases(pts)));
    const auto mfiles = measurement_files(a->measurements);
    // --small-t-kernel-weight: the scenarios' timeline kernels below T = 128 too (load_fit_points
    // leaves them out; their totals and judged kernels are already in).
    if (a->small_t_kernel_weight > 0) {
      std::vector<std::string> scenarios;
      for (const auto& f : mfiles)
        if (!f.model.empty()) scenarios.push_back(f.path);
      for (auto& p : calibrate::points_from_scenarios(scenarios, a->phase_weight, a->small_t_kernel_weight))
        if (p.kind == calibrate::PointKind::SmallTKernelDuration) pts.push_back(std::move(p));
    }
    check_kernel_options(*a, pts, mfiles);
    calibrate::FitOptions opt = fit_options(*a);
    if (opt.method == calibrate::FitMethod::NelderMead)
      for (const auto& f : mfiles) {
        // Fitting a copy of the scenario's hardware file is fine; fitting another machine is not caught
        // here, so say which file the scenario names (fusesim_afd_fit's note).
        std::error_code ec;
        if (!f.hardware.empty() && !std::filesystem::equivalent(f.hardware, a->hw, ec))
          fmt::print(stderr, "note: {} names hardware {}; fitting {} in its place\n", hw::printable(f.path), hw::printable(f.hardware), hw::printable(a->hw));
      }
    if (!a->free.empty() && a->free != "none") {
      std::string k;
      for (char c : a->free + ",") {
        if (c == ',') { if (!k.empty()) opt.free_keys.push_back(k); k.clear(); }
        else if (c != ' ') k += c;
      }
      // Each key once, and only values the file marks `kind: fitted`: refitting a spec, measured,
      // library or derived value would overwrite its provenance with a fit (and one no point may
      // depend on).
      for (size_t i = 0; i < opt.free_keys.size(); ++i) {
        const std::string& key = opt.free_keys[i];
        if (std::find(opt.free_keys.begin(), opt.free_keys.begin() + long(i), key) != opt.free_keys.begin() + long(i))
          throw std::invalid_argument(fmt::format("--free: '{}' is listed twice", key));
        const auto& vals = hw.values();
        const auto v = vals.find(key);
        if (v == vals.end())
          throw std::invalid_argument(fmt::format("--free: '{}' is not a value of {} (`fusesim params {}` lists them)", key, a->hw, a->hw));
        if (v->second.kind != hw::Provenance::Fitted)
          throw std::invalid_argument(fmt::format("--free: '{}' is kind: {} in {} (source: {}); only kind: fitted values are fitted, "
                                                  "so that a fit never overwrites a spec or measured value's provenance",
                                                  key, hw::provenance_name(v->second.kind), a->hw, v->second.source));
      }
    }
    const std::string date = a->date.empty() ? today_utc() : a->date;
    const std::string commit = a->commit.empty() ? git_head() : a->commit;
    auto split = [&](const std::vector<bool>& mask) {
      std::vector<calibrate::FitPoint> tr, te;
      for (size_t i = 0; i < pts.size(); ++i) (mask[i] ? te : tr).push_back(pts[i]);
      return std::make_pair(tr, te);
    };
    nlohmann::json report{{"hardware", a->hw}, {"measurements", a->measurements}, {"holdout", a->holdout}, {"date", date}, {"commit", commit}};
    calibrate::FitResult final_fit{hw};
    std::vector<bool> final_mask(pts.size(), false);
    // kfold=K without an index: every fold in turn, then a final fit on all points.
    if (a->holdout.rfind("kfold=", 0) == 0 && a->holdout.find('/') == std::string::npos) {
      const int k = int(parse_kfold(a->holdout)->first);
      std::vector<double> held;
      nlohmann::json folds = nlohmann::json::array();
      for (int i = 0; i < k; ++i) {
        auto [tr, te] = split(calibrate::holdout_mask(pts, fmt::format("kfold={}/{}", k, i)));
        auto r = calibrate::fit(hw, tr, te, opt);
        fmt::print("fold {}/{}: {} fitted points (median |error| {:.2f}%), {} held out: median |error| {}, max {}\n", i, k,
                   tr.size(), r.median_abs_fit_pct, te.size(), pct_or_na(r.median_abs_holdout_pct), pct_or_na(r.max_abs_holdout_pct));
        for (const auto& p : r.points)
          if (p.held_out && p.phase.empty()) held.push_back(std::fabs(p.error_pct));
        folds.push_back({{"fold", i}, {"median_abs_fit_pct", r.median_abs_fit_pct}, {"median_abs_holdout_pct", or_null(r.median_abs_holdout_pct)},
                         {"max_abs_holdout_pct", or_null(r.max_abs_holdout_pct)}});
      }
      std::sort(held.begin(), held.end());
      const double med = held.empty() ? 0 : models::median(held);
      fmt::print("k-fold (k={}): {} held-out totals, median |error| {:.2f}%, max {:.2f}%\n", k, held.size(), med, held.empty() ? 0 : held.back());
      report["kfold"] = {{"k", k}, {"folds", folds}, {"median_abs_holdout_pct", held.empty() ? nlohmann::json() : nlohmann::json(med)},
                         {"max_abs_holdout_pct", held.empty() ? nlohmann::json() : nlohmann::json(held.back())}};
      final_fit = calibrate::fit(hw, pts, {}, opt);
    } else {
      try {
        final_mask = calibrate::holdout_mask(pts, a->holdout);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("--holdout: {}", e.what()));
      }
      auto [tr, te] = split(final_mask);
      final_fit = calibrate::fit(hw, tr, te, opt);
    }
    const auto& r = final_fit;
    const auto counts = calibrate::fitted_point_counts(r);
    const bool nm = opt.method == calibrate::FitMethod::NelderMead;
    if (r.evaluated_only)
      fmt::print("evaluated {} at the starting values of {} parameters ({}); {} evaluations\n", calibrate::describe_points(counts),
                 r.params.size(), a->free == "none" ? "--free none: no parameter is fitted" : "--iters 0: nothing is fitted",
                 r.evaluations);
    else if (nm)
      fmt::print("fitted {} parameters on {}; Nelder-Mead, {} iterations; {} evaluations; objective {:.5f} at the start, {:.5f} "
                 "fitted\n", r.params.size(), calibrate::describe_points(counts), r.iterations, r.evaluations, r.objective_start,
                 r.objective);
    else
      fmt::print("fitted {} parameters on {}; {} evaluations; LM status {} ({}): {}\n", r.params.size(), calibrate::describe_points(counts),
                 r.evaluations, r.lm_info, calibrate::lm_status_name(r.lm_info), calibrate::lm_status_meaning(r.lm_info));
    // The objective's terms, where the options make it more than calibrate fit's default.
    const bool show_objective = !calibrate::default_objective(opt) || r.evaluated_only;
    const std::string objective = calibrate::default_objective(opt)
                                      ? fmt::format("lm; relative residuals; prior weight {:g}", opt.prior_weight)
                                      : calibrate::describe_objective(opt);
    if (show_objective) fmt::print("{} ({})\n", objective_line(r, opt, counts.phases > 0, counts.kernel_durations > 0), objective);
    const auto few_points = calibrate::few_points_warning(r);
    if (few_points) fmt::print(stderr, "warning: {}\n", *few_points);
    std::optional<std::string> not_converged;
    if (nm) not_converged = calibrate::nelder_mead_warning(r);
    else if (!r.evaluated_only && !calibrate::lm_converged(r.lm_info))
      not_converged = fmt::format("the fit did not converge (LM status {}, {}): the values reported and written are where it stopped",
                                  r.lm_info, calibrate::lm_status_name(r.lm_info));
    if (not_converged) fmt::print(stderr, "warning: {}\n", *not_converged);
    fmt::print("  {:<32} {:>12} {:>12} {:>10}  {}\n", "parameter", "start", "fitted", "sigma", "unit");
    std::vector<std::string> unidentified;
    for (const auto& p : r.params) {
      const auto* d = hw.registry().find(p.key);
      fmt::print("  {:<32} {:>12.5g} {:>12.5g} {:>10.3g}  {}{}{}\n", p.key, hw::to_display(d->quantity, p.start_si),
                 hw::to_display(d->quantity, p.value_si), hw::to_display(d->quantity, p.sigma_si), hw::display_unit(d->quantity),
                 p.at_bound ? "  (at a bound)" : "", p.identified ? "" : "  (not identified)");
      if (!p.identified)
        unidentified.push_back(std::isinf(p.sigma_si)
                                   ? fmt::format("{} {:.4g}{}{}: no fitted point depends on it", p.key, hw::to_display(d->quantity, p.value_si),
                                                 *hw::display_unit(d->quantity) ? " " : "", hw::display_unit(d->quantity))
                                   : fmt::format("{} {:.4g} +- {:.3g}{}{}", p.key, hw::to_display(d->quantity, p.value_si),
                                                 hw::to_display(d->quantity, p.sigma_si), *hw::display_unit(d->quantity) ? " " : "",
                                                 hw::display_unit(d->quantity)));
    }
    if (!unidentified.empty()) {
      fmt::print("not identified by these points (sigma > |value|, or no point depends on the value):\n");
      for (const auto& u : unidentified) fmt::print("  {}\n", u);
    }
    // The statistics are over totals (a case's value), phases being weighted residuals only; say so,
    // and give the phases' own when there are any.
    std::vector<double> ph;
    size_t totals = 0;
    for (const auto& p : r.points)
      if (!p.held_out) (p.phase.empty() ? (void)++totals : ph.push_back(std::fabs(p.error_pct)));
    fmt::print("fitted points: {} totals: median |error| {:.2f}%, max {:.2f}%, RMS {:.2f}%", totals, r.median_abs_fit_pct,
               r.max_abs_fit_pct, r.residual_sigma_pct);
    if (!ph.empty()) {
      std::sort(ph.begin(), ph.end());
      const std::string what = counts.kernel_durations == 0 ? "phases" : counts.phases == 0 ? "kernel durations" : "phases and kernel durations";
      fmt::print("; {} {}: median |error| {:.2f}%, max {:.2f}%", ph.size(), what, ph[ph.size() / 2], ph.back());
    }
    fmt::print("\n");
    fmt::print("  {:<72} {:>9} {:>9} {:>8}\n", "point", "measured", "predicted", "error");
    print_points(r, false);
    if (std::any_of(r.points.begin(), r.points.end(), [](auto& p) { return p.held_out; })) {
      fmt::print("held-out points: median |error| {}, max {}\n", pct_or_na(r.median_abs_holdout_pct), pct_or_na(r.max_abs_holdout_pct));
      print_points(r, true);
    }
    // Nelder-Mead (and an evaluation): the errors per measurement file, as fusesim_afd_fit printed them.
    nlohmann::json per_file;
    if (nm || r.evaluated_only) {
      fmt::print("errors per measurement file (fitted and held-out points):\n");
      per_file = print_files(r, mfiles);
    }
    nlohmann::json params = nlohmann::json::array(), points = nlohmann::json::array();
    for (const auto& p : r.params)
      params.push_back({{"key", p.key}, {"start_si", p.start_si}, {"value_si", p.value_si},
                        {"sigma_si", std::isfinite(p.sigma_si) ? nlohmann::json(p.sigma_si) : nlohmann::json()},  // null: no sigma
                        {"at_bound", p.at_bound}, {"identified", p.identified}});
    for (const auto& p : r.points)
      points.push_back({{"id", p.id}, {"table", p.table}, {"phase", p.phase}, {"measured_us", p.measured_us},
                        {"predicted_us", p.predicted_us}, {"error_pct", p.error_pct}, {"held_out", p.held_out}});
    report["params"] = params;
    report["points"] = points;
    report["summary"] = {{"median_abs_fit_pct", r.median_abs_fit_pct}, {"max_abs_fit_pct", r.max_abs_fit_pct},
                         {"residual_sigma_pct", r.residual_sigma_pct}, {"median_abs_holdout_pct", or_null(r.median_abs_holdout_pct)},
                         {"max_abs_holdout_pct", or_null(r.max_abs_holdout_pct)},
                         {"fitted_points", {{"all", counts.all()}, {"totals", counts.totals}, {"phases", counts.phases},
                                            {"kernel_durations", counts.kernel_durations}}},
                         {"parameters", r.params.size()}, {"not_identified", nlohmann::json::array()}};
    for (const auto& p : r.params)
      if (!p.identified) report["summary"]["not_identified"].push_back(p.key);
    // k-fold: the final fit holds nothing out; the held-out figures of the summary are the folds'
    // (every total held out once), as `kfold` gives them.
    if (report.contains("kfold")) {
      report["summary"]["median_abs_holdout_pct"] = report["kfold"]["median_abs_holdout_pct"];
      report["summary"]["max_abs_holdout_pct"] = report["kfold"]["max_abs_holdout_pct"];
      report["summary"]["holdout_from"] = "kfold";
    }
    if (nm)
      report["nelder_mead"] = {{"iterations", r.iterations}, {"evaluations", r.evaluations}, {"simplex_spread", r.simplex_spread}};
    else if (!r.evaluated_only)
      report["lm"] = {{"status", r.lm_info}, {"name", calibrate::lm_status_name(r.lm_info)},
                      {"meaning", calibrate::lm_status_meaning(r.lm_info)}, {"evaluations", r.evaluations}};
    if (r.evaluated_only) report["evaluated_only"] = true;
    if (show_objective)
      report["objective"] = {{"method", calibrate::fit_method_name(opt.method)}, {"description", objective},
                             {"start", r.objective_start}, {"value", r.objective}, {"terms", terms_json(r.terms)}};
    if (!per_file.is_null()) report["files"] = per_file;
    report["warnings"] = few_points ? nlohmann::json::array({*few_points}) : nlohmann::json::array();
    if (not_converged) report["warnings"].push_back(*not_converged);
    std::vector<hw::OutputFile> files;
    if (!a->out.empty()) {
      std::vector<std::string> sources;
      for (const auto& m : a->measurements) sources.push_back(m + (a->holdout == "none" ? "" : " (holdout " + a->holdout + ")"));
      // Laid out as the starting file (its comments, order of sections and keys, folded description,
      // and the text of every unchanged value), so a diff against it shows what the fit changed.
      std::string input;
      {
        input = hw::read_input_file(a->hw, "hardware file", hw::kMaxYamlFileBytes, "--hw");  // loaded above; bounded all the same
      }
      std::string fell_back;
      std::string text = calibrate::keep_input_layout(
          input, rebase_table_files(calibrate::calibrated_yaml(r, sources, date, commit, calibrate::describe_objective(opt)), hw, a->out),
          &fell_back);
      if (!fell_back.empty())
        fmt::print(stderr, "warning: --out {}: the starting file's layout is not kept ({}); written with sections and keys "
                           "sorted and the description on one line\n", hw::printable(a->out), hw::printable(fell_back));
      files.push_back({a->out, std::move(text), "--out"});
    }
    if (!a->report.empty()) files.push_back({a->report, report.dump(2) + "\n", "--report"});
    hw::write_outputs_atomic(files);
    for (const auto& f : files) fmt::print("wrote {}\n", hw::printable(f.path));
    if (!a->plot.empty()) {
      std::map<std::string, double> by_id;
      for (const auto& p : r.points) by_id[p.id] = p.predicted_us;
      std::vector<double> pred;
      for (const auto& p : pts) pred.push_back(by_id.at(p.id));
      calibrate::PlotOptions po;
      po.dir = a->plot;
      // No plot file over an input or the files just written.
      std::vector<std::string> inputs;
      for (const auto& in : named) inputs.push_back(in.path);  // --hw, the measurements and what they read
      for (const auto& in : scenario::input_files(nullptr, &hw)) inputs.push_back(in.path);
      for (const auto& f : files) inputs.push_back(f.path);
      calibrate::PlotNamer namer(inputs);
      po.namer = &namer;
      const auto rep = calibrate::write_plots(r.fitted, pts, pred, final_mask, po);
      for (const auto& m : rep.messages) fmt::print(stderr, "plot: {}\n", hw::printable(m));
      fmt::print("wrote {} CSV tables and {} images into {}\n", rep.csv_files.size(), rep.image_files.size(), hw::printable(a->plot));
    }
  });

  // calibrate mori: the real benchmark on a live ROCm node.
  auto mo = std::make_shared<calibrate::MoriOptions>();
  auto* mori = calibrate.add_subcommand("mori", "run a sweep of mori's bench_gemm_ar.py (kind gemm_ar) or bench_ar.py (kind allreduce) on this ROCm node; append RESULT_JSON records to a file");
  mori->add_option("--mori-dir", mo->mori_dir, "mori checkout built with BUILD_CCO_SDMA=ON (the runs' working directory; required unless --plan-scenario)");
  mori->add_option("--nproc", mo->nproc, "ranks (torchrun --nproc_per_node)")->check(CLI::Range(1, 64));
  mori->add_option("--sweep", mo->sweep_path, "sweep YAML: lists of modes, m, n, k, quant, wires, chunks, pull_blocks, ...")
      ->required()->check(CLI::ExistingFile);
  mori->add_option("--out", mo->out, "JSON-lines output; each record is appended (flush + fsync) as it arrives (required unless --plan-scenario)");
  mori->add_option("--launcher", mo->launcher,
                   "python (default: python3 -m torch.distributed.run, no activated environment needed), torchrun (found on PATH), "
                   "or the path of an executable; never a shell string");
  mori->add_option("--python", mo->python, "interpreter for --launcher python (default: python3 on PATH)");
  mori->add_option("--launcher-arg", mo->launcher_args, "an argument added after the launcher (repeat for several; one word each)");
  mori->add_option("--layout", mo->layout, "RESULT_JSON layout of the benchmark checkout, recorded with every line (default auto: recognised)")
      ->check(CLI::IsMember({"auto", "16ddbb94", "0b26ebf8", "103655f6", "6022ecfa", "ad271d19"}));
  mori->add_option("--timeout-s", mo->timeout_s, "per-run timeout in seconds (the run's process group is killed)")->check(CLI::PositiveNumber);
  mori->add_option("--pause-s", mo->pause_s, "pause between runs so the previous ranks' SDMA queues drain (seconds)")
      ->check(CLI::NonNegativeNumber);
  mori->add_flag("--resume", mo->resume, "skip runs already measured in --out (failed runs are retried)");
  mori->add_option("--commit", mo->commit, "fusesim commit recorded (default: git HEAD)");
  auto po = std::make_shared<calibrate::PlanOptions>();
  mori->add_option("--plan-scenario", po->out,
                   "launch nothing: write the sweep's runs as a scenario YAML (predictions; with --measured, their measured values) and exit");
  mori->add_option("--hw", po->hardware, "with --plan-scenario: the scenario's hardware file");
  mori->add_option("--measured", po->measured, "with --plan-scenario: a calibrate mori output whose records give the cases' measured values")
      ->check(CLI::ExistingFile);
  mori->add_option("--scenario-name", po->name, "with --plan-scenario: the scenario's name (default: the sweep file's stem)");
  mori->add_option("--tolerance-pct", po->tolerance_pct, "with --plan-scenario: the scenario's tolerance_pct (default 10)")
      ->check(CLI::PositiveNumber);
  mori->callback([mo, po] {
    if (!po->out.empty()) {
      calibrate::write_plan_scenario(*po, *mo);
      return;
    }
    if (mo->mori_dir.empty()) throw CLI::RequiredError("--mori-dir");
    if (mo->out.empty()) throw CLI::RequiredError("--out");
    const int rc = calibrate::run_mori_sweep(*mo);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace fusesim
