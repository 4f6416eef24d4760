// fusesim's command line (build/fusesim): the commands run, check, params, breakeven and calibrate
// (a library, fusesim_cli, that tests run in-process) and, compiled with FUSESIM_CLI_MAIN, the
// program's main() at the end of this file (the executable's translation unit holds only main).
#ifndef FUSESIM_CLI_MAIN
#include "cli/commands.hpp"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <sstream>
#include <tuple>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "calibrate/commands.hpp"
#include "calibrate/measurements.hpp"
#include "calibrate/plot.hpp"
#include "cli/ci_outputs.hpp"
#include "hw/io.hpp"
#include "hw/json_limits.hpp"
#include "hw/output_name.hpp"
#include "hw/printable.hpp"
#include "models/gemm_ar/breakeven.hpp"
#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "scenario/sweep.hpp"
#include "scenario/tune.hpp"
#include "calibrate/tune_plot.hpp"
#ifdef FUSESIM_TUNE_TRACE
#include "cli/tune_trace.hpp"
#endif
#include "sim/event_budget.hpp"
#include "sim/trace.hpp"


namespace fusesim::cli {
namespace {

struct RunArgs {
  std::vector<std::string> scenarios;
  std::string format = "table", trace, only, out;
  uint64_t max_cases = scenario::LoadOptions{}.max_cases;
  uint64_t max_events = 0;  // set from kDefaultMaxEvents
};

/// Default --max-events: callbacks one case's simulation may run before it is ended with an error.
/// Far above any scenario's case here (the largest runs a few million), low enough that a
/// pathological input ends within minutes instead of hanging.
constexpr uint64_t kDefaultMaxEvents = 1000000000;

/// --max-cases and --max-events of run and check.
void add_limit_options(CLI::App* cmd, uint64_t& max_cases, uint64_t& max_events) {
  max_events = kDefaultMaxEvents;
  cmd->add_option("--max-cases", max_cases, "refuse a scenario whose cases and sweeps expand to more than N cases (counted before expanding)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 62))
      ->capture_default_str();
  cmd->add_option("--max-events", max_events, "end a case whose simulation runs more than N callbacks, with an error")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 62))
      ->capture_default_str();
}

/// JSON text for the user: invalid UTF-8 from an input file (a name, a note) is replaced by U+FFFD
/// rather than failing the whole output with the JSON library's message.
std::string json_text(const nlohmann::json& j, int indent) { return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace); }

/// A Gantt chart per case of `sc` with a measured AFD timeline (calibrate::write_timeline_plot into
/// `dir`): per device, the measured kernels above the predicted ones (`res`: run_scenario's result).
/// Files and messages are added to `rep`.
void write_timeline_plots(const models::Scenario& sc, const nlohmann::json& res, const std::string& dir,
                          calibrate::PlotReport& rep, calibrate::PlotNamer& namer) {
  std::map<std::string, models::Case> by_id;  // the cases with a measured timeline
  for (uint64_t i = 0; i < sc.case_count(); ++i)
    if (models::Case c = sc.case_at(i); c.measured && !c.measured->kernels.empty()) by_id.emplace(c.id, std::move(c));
  for (const auto& r : res["cases"]) {
    const auto it = by_id.find(r["id"].get<std::string>());
    if (it == by_id.end()) continue;
    const auto& kernels = it->second.measured->kernels;
    // Devices in order, each with its role, from the predicted phases ("devN/KERNEL").
    std::map<int, std::string> roles;
    std::vector<std::pair<int, const nlohmann::json*>> predicted;
    for (const auto& ph : r["phases"]) {
      const std::string n = ph["name"].get<std::string>();
      const int dev = std::stoi(n.substr(3, n.find('/') - 3));
      roles[dev] = ph.value("role", std::string());
      predicted.push_back({dev, &ph});
    }
    for (const auto& k : kernels) roles.emplace(k.device, "");
    std::vector<std::string> rows;
    std::vector<calibrate::TimelineBar> bars;
    for (const auto& [dev, role] : roles) {
      const std::string head = fmt::format("dev{}{}", dev, role.empty() ? "" : " " + role);
      rows.push_back(head + " measured");
      rows.push_back(head + " predicted");
      for (const auto& k : kernels)
        if (k.device == dev) bars.push_back({head + " measured", k.kernel, k.start_us, k.end_us});
      for (const auto& [d, ph] : predicted) {
        if (d != dev) continue;
        const std::string n = (*ph)["name"].get<std::string>();
        bars.push_back({head + " predicted", n.substr(n.find('/') + 1), (*ph)["start_us"].get<double>(), (*ph)["end_us"].get<double>()});
      }
    }
    const auto t = calibrate::write_timeline_plot(dir, sc.name + "__" + it->first,
                                                  fmt::format("{} {}: measured vs predicted kernels", sc.name, it->first), rows, bars,
                                                  "gnuplot", &namer);
    rep.csv_files.insert(rep.csv_files.end(), t.csv_files.begin(), t.csv_files.end());
    rep.image_files.insert(rep.image_files.end(), t.image_files.begin(), t.image_files.end());
    rep.messages.insert(rep.messages.end(), t.messages.begin(), t.messages.end());
  }
}


/// `check --junit FILE` / `--save-predictions FILE` replace an existing FILE only when it is an earlier
/// output of the same kind (its first 4 KiB hold `marker`): a scenario that cannot be loaded names no
/// hardware file to protect, so `check BROKEN.yaml --junit hw/X.yaml` had replaced the hardware file
/// with XML (found by a helper's test run). Errors: std::invalid_argument naming the option, the path,
/// the kind expected and how the file begins (escaped).
void refuse_replacing_foreign_file(const hw::OutputFile& o, const std::string& marker, const std::string& kind) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.path, ec) || std::filesystem::file_size(o.path, ec) == 0) return;
  std::ifstream in(o.path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  if (head.find(marker) != std::string::npos) return;
  const std::string first = head.substr(0, std::min(head.find('\n'), size_t(60)));
  throw std::invalid_argument(fmt::format("{} '{}' exists and is not {} (it begins '{}'): refusing to replace it; remove it or give "
                                          "another file",
                                          o.option, hw::printable(o.path), kind, hw::printable(first)));
}

/// `check --plot DIR`: checked before any scenario runs. DIR is a directory, or does not exist yet
/// in an existing, writable folder (only DIR itself is created, as --out needs its folder to exist).
void check_plot_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) throw std::runtime_error("--plot: expected a directory, got an empty name");
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st))
      throw std::runtime_error(fmt::format("--plot '{}': {}; --plot wants a directory (it writes its plots and CSV tables into it)",
                                           dir, fs::is_regular_file(st) ? "is a file" : "is not a directory"));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      throw std::runtime_error(fmt::format("--plot '{}': directory is not writable: {}", dir, std::strerror(errno)));
    return;
  }
  fs::path p(dir);
  if (!p.has_filename()) p = p.parent_path();  // "out/" names the folder "out"
  const fs::path parent = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const auto pst = fs::status(parent, ec);
  if (!fs::exists(pst))
    throw std::runtime_error(fmt::format("--plot '{}': folder '{}' does not exist (--plot creates only the last folder of its path)",
                                         dir, parent.string()));
  if (!fs::is_directory(pst)) throw std::runtime_error(fmt::format("--plot '{}': '{}' is not a folder", dir, parent.string()));
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw std::runtime_error(fmt::format("--plot '{}': folder '{}' is not writable: {}", dir, parent.string(), std::strerror(errno)));
}

/// A file with a top-level `scenario:` or `cases:` is a scenario file (models::Scenario::load).
bool looks_like_scenario_file(const std::string& path) {
  try {
    const YAML::Node root = hw::load_yaml_map(path, "hardware file");  // bounded: not YAML::LoadFile (a FIFO, /dev/zero)
    return root.IsMap() && (root["scenario"] || root["cases"]);
  } catch (const std::exception&) {
    return false;  // the hardware loader reports what is wrong with it
  }
}

/// models::validate names GemmArConfig's knobs (the error's key); breakeven's user gave flags.
[[noreturn]] void rethrow_with_flag(const models::ParamError& e, const std::string& prefix = "") {
  static const std::map<std::string, std::string> flags{{"world_size", "--world-size"}, {"n", "-n/--n"}, {"k", "-k/--k"},
                                                        {"quant", "--quant"}, {"gather_dtype", "--wire"},
                                                        {"gather_transport", "--wire"}, {"m", ""}};
  if (const auto f = flags.find(e.key()); f != flags.end())  // "m": M is searched, the message says which
    throw std::invalid_argument(prefix + (f->second.empty() ? e.detail() : f->second + ": " + e.detail()));
  throw std::invalid_argument(prefix + e.what());
}

// The serving thresholds chosen by hand in SGLang (_MIN_FUSED_M, seeds 001/002), and the shapes
// (MI355X) they were chosen on.
constexpr const char* kHandThresholdShapes =
    "DeepSeek-V4-Pro wo_b (N=7168 K=2048 TP8 blockscale) and DeepSeek-V4.1-Flash wo_b (N=5120 TP2 K=4096 / TP4 K=2048 mxfp8) on MI355X";
bool hand_threshold_shape(const models::GemmArConfig& c) {
  return (c.n == 7168 && c.k == 2048 && c.world_size == 8 && c.quant == "blockscale") ||
         (c.n == 5120 && c.quant == "mxfp8" && ((c.world_size == 4 && c.k == 2048) || (c.world_size == 2 && c.k == 4096)));
}

/// A command-line value as the JSON scalar YAML would read it (an integer, true/false, a number, else text).
nlohmann::json scalar_of(const std::string& text) {
  const YAML::Node n = YAML::Load(text);
  if (!n.IsScalar()) return text;
  int64_t i;
  double d;
  bool b;
  if (YAML::convert<int64_t>::decode(n, i)) return i;
  if (YAML::convert<double>::decode(n, d)) return d;
  if (YAML::convert<bool>::decode(n, b)) return b;
  return n.as<std::string>();
}

/// "k=v,k=v" (commas or spaces between) as a JSON object. Errors: std::invalid_argument naming the option.
nlohmann::json assignments(const std::string& text, const std::string& option) {
  nlohmann::json out = nlohmann::json::object();
  std::string part;
  std::string t = text;
  std::replace(t.begin(), t.end(), ',', ' ');
  std::istringstream words(t);
  while (words >> part) {
    const auto eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size())
      throw std::invalid_argument(fmt::format("{}: expected KEY=VALUE items separated by commas, got '{}'", option, part));
    out[part.substr(0, eq)] = scalar_of(part.substr(eq + 1));
  }
  return out;
}

/// Largest M `tune --m` takes: tune simulates every setting of the search (up to --exhaustive-limit,
/// 4096) at each M and a simulation grows with M: M = 131072 took 8 s on gemm_ar and 1048576 over
/// 20 s; 2^18 is 8 x the default's largest M (32768). A larger M is refused before anything runs.
constexpr int64_t kMaxTuneM = int64_t(1) << 18;
/// Most M values one --m list may name (a doubling A:B has at most 19).
constexpr size_t kMaxTuneMs = 64;

/// --m: "A:B" (A, 2A, 4A, ... up to B) or "M1,M2,..." with every M in 1..kMaxTuneM and at most
/// kMaxTuneMs values. Errors: std::invalid_argument naming --m, the text and the bound.
std::vector<int64_t> m_list(const std::string& text) {
  std::vector<int64_t> out;
  auto num = [&](const std::string& s) {
    try {
      size_t used = 0;
      const long long v = std::stoll(s, &used);
      if (used != s.size() || v < 1 || v > kMaxTuneM) throw std::invalid_argument("");
      return int64_t(v);
    } catch (const std::exception&) {
      // A larger M was refused only after every smaller M had been tuned (from a fresh-user trial:
      // --m 1:99999999999 ran for minutes first); --m 1048576 ran for over 20 s.
      throw std::invalid_argument(fmt::format(
          "--m: expected A:B (A, 2A, 4A, ... up to B) or M1,M2,... with whole M from 1 to 2^18 = {}, got '{}'",
          kMaxTuneM, hw::printable(text)));
    }
  };
  if (const auto c = text.find(':'); c != std::string::npos) {
    const int64_t a = num(text.substr(0, c)), b = num(text.substr(c + 1));
    if (b < a) throw std::invalid_argument(fmt::format("--m {}: the end is below the start", text));
    for (int64_t m = a; m <= b; m *= 2) out.push_back(m);
  } else {
    std::string t = text;
    std::replace(t.begin(), t.end(), ',', ' ');
    std::istringstream words(t);
    std::string w;
    while (words >> w) {
      out.push_back(num(w));
      if (out.size() > kMaxTuneMs)
        throw std::invalid_argument(fmt::format("--m: more than {} values (tune runs the whole search at each M)", kMaxTuneMs));
    }
    if (out.empty()) num("");
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::function<double(int64_t, int64_t, int64_t, int)> gemm_ar_predictor(const std::string& hw_path) {
  auto hw = std::make_shared<hw::Hardware>(models::load_hardware(hw_path));
  return [hw](int64_t m, int64_t n, int64_t k, int world_size) {
    models::GemmArConfig c;
    c.mode = "fused-sdma";
    c.m = m;
    c.n = n;
    c.k = k;
    c.world_size = world_size;
    return models::simulate_gemm_ar(*hw, c).total_us;
  };
}

nlohmann::json breakeven_report(const hw::Hardware& hw, const BreakevenOptions& o) {
  const auto needed = models::required_hardware_keys("gemm_ar", hw);
  if (std::any_of(needed.begin(), needed.end(), [&](const std::string& k) { return !hw.has(k); }))
    throw std::runtime_error(fmt::format("breakeven needs a gemm_ar hardware file (with SDMA and GEMM tile parameters, e.g. "
                                         "hw/mi355x-8gpu.yaml); '{}' is not one", hw.path()));
  models::GemmArConfig c;
  c.m = 1;  // break_even sets M; validate the shape at the smallest
  c.n = o.n;
  c.k = o.k;
  c.world_size = o.ws;
  c.quant = o.quant;
  if (o.wire == "fp8") {
    c.gather_dtype = "fp8";
    c.gather_transport = "lsa";
  }
  try {
    models::validate(c, hw);
  } catch (const models::ParamError& e) {
    rethrow_with_flag(e);
  }
  const int64_t smallest = int64_t(c.world_size) * models::block_m(c.quant);
  if (o.max_m < smallest)
    throw std::invalid_argument(fmt::format("--max-m {} is below the smallest M the kernel runs (world_size x BLOCK_M = {})", o.max_m,
                                            smallest));
  {  // the largest M searched must fit the GPU (window + operands): validate() says so naming 'm'
    models::GemmArConfig top = c;
    top.m = o.max_m;
    top.mode = "fused-sdma";
    try {
      models::validate(top, hw);
    } catch (const models::ParamError& e) {
      rethrow_with_flag(e, fmt::format("--max-m {}: ", o.max_m));
    }
  }
  const auto r = models::break_even(hw, c, o.max_m);
  auto curve = r.curve.get<std::vector<nlohmann::json>>();
  auto tidy = [&curve] {
    std::sort(curve.begin(), curve.end(), [](const auto& a, const auto& b) { return a["m"].template get<int64_t>() < b["m"].template get<int64_t>(); });
    curve.erase(std::unique(curve.begin(), curve.end(), [](const auto& a, const auto& b) { return a["m"] == b["m"]; }), curve.end());
  };
  tidy();
  const bool has_band = hw.calibration() && hw.calibration()->residual_rms_pct > 0;
  const double band = has_band ? 1.96 * hw.calibration()->residual_rms_pct : 0.0;
  // Smallest M from which the fused path wins by more than the band at every larger M up to max_m
  // (-1: at no M). The curve holds both ends of every padding step, where the fused (and split) time
  // is constant and the RCCL time grows with M: from the last curve point where it does not win by
  // the band, the next point is bisected over whole M, as break_even refines the plain threshold.
  auto clear_win = [&](const char* other) -> int64_t {
    auto wins = [&](const nlohmann::json& p) {
      const double ot = p[other].get<double>(), f = p["fused_us"].get<double>();
      return (ot - f) / ot * 100 > band;
    };
    int first = -1;
    for (int i = int(curve.size()) - 1; i >= 0; --i) {
      if (!wins(curve[i])) break;
      first = i;
    }
    if (first <= 0) return first < 0 ? -1 : curve[0]["m"].get<int64_t>();
    int64_t lo = curve[first - 1]["m"].get<int64_t>(), hi = curve[first]["m"].get<int64_t>();  // lo loses, hi wins
    std::vector<nlohmann::json> added;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      added.push_back(models::break_even_point(hw, c, mid));
      if (wins(added.back())) hi = mid;
      else lo = mid;
    }
    curve.insert(curve.end(), added.begin(), added.end());
    tidy();
    return hi;
  };
  nlohmann::json out{{"hardware", hw.name()}, {"hardware_file", hw.path()}, {"n", c.n}, {"k", c.k}, {"world_size", c.world_size}, {"wire", o.wire},
                     {"quant", c.quant}, {"max_m", o.max_m}, {"padding_step", smallest}};
  auto put = [&](const std::string& name, int64_t m) {
    out[name] = m;
    out[name + "_every_m"] = m == 1;
  };
  put("m_vs_split", r.m_vs_split);
  put("m_vs_rccl", r.m_vs_rccl);
  out["m_vs_split_aligned"] = r.m_vs_split_aligned;
  out["m_vs_rccl_aligned"] = r.m_vs_rccl_aligned;
  if (has_band) {
    out["band_95_pct"] = band;
    put("m_clear_win_vs_split", clear_win("split_us"));
    put("m_clear_win_vs_rccl", clear_win("rccl_us"));
  }
  out["serving_threshold_by_hand"] = o.wire == "fp8" ? 2048 : 8192;
  out["serving_threshold_by_hand_chosen_for"] = kHandThresholdShapes;
  out["serving_threshold_by_hand_for_this_shape"] = hand_threshold_shape(c);
  out["curve"] = curve;
  return out;
}

void register_all(CLI::App& app) {
  auto run_args = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "predict every case of a scenario and compare with its measured values");
  // The file is checked when the scenario is loaded (an error naming it), not by CLI11, whose file
  // check runs before its unknown-option check and so called `--formt json` a missing file "json".
  run->add_option("scenario", run_args->scenarios, "scenario YAML file (one)")->required();
  run->add_option("--format", run_args->format, "table, json or csv")->check(CLI::IsMember({"table", "json", "csv"}));
  run->add_option("--trace", run_args->trace, "write a Chrome/Perfetto trace-event JSON of every case to FILE")->check(hw::refuse_dash_output_name);
  run->add_option("--only", run_args->only, "run only cases whose id contains TEXT");
  run->add_option("--out", run_args->out, "write the output to FILE instead of stdout")->check(hw::refuse_dash_output_name);
  add_limit_options(run, run_args->max_cases, run_args->max_events);
  run->callback([run_args] {
    // A bad destination is refused before the (possibly long) run.
    std::vector<hw::OutputFile> outputs;
    if (!run_args->trace.empty()) outputs.push_back({run_args->trace, "", "--trace"});
    if (!run_args->out.empty()) outputs.push_back({run_args->out, "", "--out"});
    if (run_args->scenarios.size() > 1)
      throw std::invalid_argument(fmt::format("run takes one scenario file, got {}: {} (fusesim check takes several)",
                                              run_args->scenarios.size(), fmt::join(run_args->scenarios, ", ")));
    // No output over an input (scenario::refuse_outputs_over_inputs): the scenario file before it is
    // loaded (one that cannot be loaded is still protected), then its hardware file and tables.
    scenario::refuse_outputs_over_inputs(outputs, {{run_args->scenarios.at(0), "scenario file", ""}});
    hw::check_output_files(outputs);
    sim::set_default_event_budget(run_args->max_events);
    auto sc = scenario::load(run_args->scenarios.at(0), {run_args->max_cases, false});
    scenario::refuse_outputs_over_inputs(outputs, &sc, nullptr);
    auto hw = scenario::load_hardware(sc);
    scenario::refuse_outputs_over_inputs(outputs, &sc, &hw);
    sim::TraceSink trace;
    scenario::RunOptions opt;
    opt.only = run_args->only;
    if (!run_args->trace.empty()) opt.trace = &trace;
    const auto res = scenario::run(sc, hw, opt);
    std::string text = run_args->format == "json" ? json_text(res, 2) + "\n"
                       : run_args->format == "csv" ? scenario::format_csv(res)
                                                   : scenario::format_table(res);
    // Both outputs or neither: a failure to write one leaves the other file as it was.
    for (auto& o : outputs) o.text = o.option == "--trace" ? trace.to_text() : text;
    hw::write_outputs_atomic(outputs);
    if (run_args->out.empty()) fmt::print("{}", text);
  });

  auto check_args = std::make_shared<std::vector<std::string>>();
  auto check_plot = std::make_shared<std::string>();
  struct CheckCi {
    std::string junit, baseline, save;
    double threshold_pct = 1.0;
    uint64_t max_cases = scenario::LoadOptions{}.max_cases, max_events = 0;
  };
  auto ci = std::make_shared<CheckCi>();
  auto* check = app.add_subcommand("check", "run scenarios; exit non-zero when any measured case misses its stated tolerance");
  check->add_option("scenarios", *check_args, "scenario YAML files (one that cannot be read is reported and the others still checked)")->required();
  check->add_option("--plot", *check_plot,
                    "write per-table plots (gnuplot PNG + SVG) and CSV tables of measured vs predicted into DIR (an existing "
                    "directory, or a new one whose parent folder exists)")
      ->check(hw::refuse_dash_output_name);
  check->add_option("--junit", ci->junit, "also write a JUnit XML report to FILE (one test case per measured point)")->check(hw::refuse_dash_output_name);
  check->add_option("--baseline", ci->baseline,
                    "compare every prediction with a stored run (OLD.json: `run --format json` output, or --save-predictions'); "
                    "exit 2 when any moved by more than --threshold-pct");
  check->add_option("--threshold-pct", ci->threshold_pct, "how far a prediction may move from --baseline's, in percent")
      ->check(CLI::Range(0.0, 1e6))
      ->check(CLI::Validator([](std::string& v) { return std::isfinite(std::strtod(v.c_str(), nullptr)) ? std::string() : "expected a finite number, got " + v; }, "FINITE"))
      ->capture_default_str();
  check->add_option("--save-predictions", ci->save, "write every case's prediction to FILE (a baseline for a later --baseline)")->check(hw::refuse_dash_output_name);
  add_limit_options(check, ci->max_cases, ci->max_events);
  check->callback([check, check_args, check_plot, ci] {
    // An empty --plot is a mistake (e.g. an unset shell variable), not "no plots": refused, not ignored.
    if (check->count("--plot") > 0) check_plot_dir(*check_plot);  // before any scenario runs
    if (check->count("--threshold-pct") > 0 && ci->baseline.empty())
      throw std::invalid_argument("--threshold-pct is --baseline's threshold: give --baseline OLD.json too");
    // The baseline and the destinations are checked before any scenario runs.
    std::optional<BaselineIndex> baseline;  // read and checked before any scenario runs
    if (!ci->baseline.empty()) {
      // Bounded (hw/io.hpp, hw/json_limits.hpp): /dev/zero or a FIFO is refused before it is read;
      // nesting, size and number range checked by the parser helper.
      const std::string text = hw::read_input_file(ci->baseline, "--save-predictions JSON of an earlier check", hw::kMaxBaselineFileBytes,
                                                   "--baseline");
      baseline = index_baseline(hw::parse_json_bounded(text, {ci->baseline, 0, "--baseline"}), ci->baseline);
    }
    std::vector<hw::OutputFile> ci_outputs;
    if (!ci->junit.empty()) ci_outputs.push_back({ci->junit, "", "--junit"});
    if (!ci->save.empty()) ci_outputs.push_back({ci->save, "", "--save-predictions"});
    {
      std::vector<scenario::InputFile> named;  // protected even when a scenario cannot be loaded
      for (const auto& path : *check_args) named.push_back({path, "scenario file", ""});
      if (!ci->baseline.empty()) named.push_back({ci->baseline, "--baseline file", ""});
      scenario::refuse_outputs_over_inputs(ci_outputs, named);
    }
    // The hardware files (and their measured tables) the scenarios read are inputs too (a fresh-user
    // trial's `check S --junit hw/mi355x-8gpu.yaml` replaced the hardware file with XML): checked
    // before anything runs. Each file is loaded once, here; a scenario or hardware file that cannot be
    // loaded keeps its error, which the loop below reports in its turn.
    struct Loaded {
      std::optional<models::Scenario> sc;
      std::optional<hw::Hardware> hw;
      std::exception_ptr error;
      std::vector<scenario::InputFile> inputs;  ///< what it reads (scenario::input_files), listed once
    };
    std::vector<Loaded> loaded(check_args->size());
    for (size_t i = 0; i < check_args->size(); ++i) {
      Loaded& l = loaded[i];
      try {
        l.sc = scenario::load((*check_args)[i], {ci->max_cases, false});
      } catch (const std::exception&) {
        l.error = std::current_exception();
        continue;
      }
      l.inputs = scenario::input_files(&*l.sc, nullptr);
      scenario::refuse_outputs_over_inputs(ci_outputs, l.inputs);
      try {
        l.hw = scenario::load_hardware(*l.sc);
      } catch (const std::exception&) {
        l.error = std::current_exception();
        continue;
      }
      const auto of_hw = scenario::input_files(nullptr, &*l.hw);  // its tables (and the file again)
      l.inputs.insert(l.inputs.end(), of_hw.begin(), of_hw.end());
      scenario::refuse_outputs_over_inputs(ci_outputs, of_hw);
    }
    for (const auto& o : ci_outputs)
      if (o.option == "--junit") refuse_replacing_foreign_file(o, "<testsuites", "a JUnit XML file that fusesim check wrote");
      else refuse_replacing_foreign_file(o, "\"fusesim_predictions\"", "a predictions file that fusesim check --save-predictions wrote");
    hw::check_output_files(ci_outputs);
    sim::set_default_event_budget(ci->max_events);
    // Every plot file of this check gets its own name in --plot's folder, never one of the inputs'.
    std::vector<std::string> plot_inputs;
    if (!check_plot->empty()) {
      for (const auto& path : *check_args) plot_inputs.push_back(path);
      if (!ci->baseline.empty()) plot_inputs.push_back(ci->baseline);
      for (const auto& o : ci_outputs) plot_inputs.push_back(o.path);  // the command's other outputs
      for (const auto& l : loaded)
        for (const auto& in : l.inputs) plot_inputs.push_back(in.path);
    }
    calibrate::PlotNamer plot_namer(plot_inputs);
    std::vector<JunitFile> junit_files;
    std::vector<std::pair<std::string, nlohmann::json>> results;
    int bad = 0, compared = 0, unreadable = 0, plot_failures = 0;
    std::vector<std::pair<std::string, int>> model_bad;  // a model's failures beyond the cases (what, how many)
    for (size_t fi = 0; fi < check_args->size(); ++fi) {
      const std::string& path = (*check_args)[fi];
      // A file that cannot be checked (bad input) is reported; the other files are still checked.
      try {
        if (loaded[fi].error) std::rethrow_exception(loaded[fi].error);
        const models::Scenario& sc = *loaded[fi].sc;
        const hw::Hardware& hw = *loaded[fi].hw;
        auto res = scenario::run(sc, hw);
        junit_files.push_back({path, res, ""});
        results.push_back({path, res});
        int here = 0, now_passing = 0;
        for (const auto& c : res["cases"]) {
          if (c["within_tolerance"].is_null()) continue;
          ++compared;
          const bool ok = c["within_tolerance"].get<bool>();
          if (c.contains("known_miss")) {
            if (ok) {
              ++here;
              ++now_passing;
              fmt::print("FAIL {} {}: marked known_miss but now within tolerance ({:+.2f}%): remove the flag\n", hw::printable(path),
                         hw::printable(c["id"].get<std::string>()), c["error_pct"].get<double>());
            } else {
              fmt::print("known miss {} {}: error {:+.2f}% (tolerance {:.1f}%): {}\n", hw::printable(path), hw::printable(c["id"].get<std::string>()),
                         c["error_pct"].get<double>(), c["tolerance_pct"].get<double>(), hw::printable(c["known_miss"].get<std::string>()));
            }
            continue;
          }
          if (!ok) {
            ++here;
            fmt::print("FAIL {} {}: predicted {:.1f} us, measured {:.1f} us, error {:+.2f}% (tolerance {:.1f}%)\n", hw::printable(path),
                       hw::printable(c["id"].get<std::string>()), c["predicted_us"].get<double>(), c["measured_us"].get<double>(),
                       c["error_pct"].get<double>(), c["tolerance_pct"].get<double>());
          }
        }
        const auto& s = res["summary"];
        fmt::print("{} {}: {} compared, median |error| {}, max {}, {} outside tolerance{}\n", here ? "FAIL" : "ok  ", hw::printable(path),
                   s["compared"].get<int>(),
                   s["median_abs_error_pct"].is_null() ? "-" : fmt::format("{:.2f}%", s["median_abs_error_pct"].get<double>()),
                   s["max_abs_error_pct"].is_null() ? "-" : fmt::format("{:.2f}%", s["max_abs_error_pct"].get<double>()),
                   here - now_passing, now_passing ? fmt::format(", {} known misses now within (remove their flag)", now_passing) : "");
        bad += here;
        // The model's own lines (held-out statistics, per-kernel durations), indented under the
        // file's line; their failures are counted apart from the cases'.
        const models::CheckExtras extra = scenario::check_extras(res);
        for (const auto& line : extra.lines) fmt::print("     {}\n", hw::printable(line));
        if (extra.failures) {
          fmt::print("FAIL {}: {} {}\n", hw::printable(path), extra.failures, hw::printable(extra.file_failure_text));
          auto it = std::find_if(model_bad.begin(), model_bad.end(), [&](const auto& m) { return m.first == extra.failure_text; });
          if (it == model_bad.end()) model_bad.push_back({extra.failure_text, extra.failures});
          else it->second += extra.failures;
        }
        for (const auto& w : s["warnings"]) fmt::print(stderr, "warning: {}: {}\n", hw::printable(path), hw::printable(w.get<std::string>()));
        if (!check_plot->empty()) {
          // The plots draw the points `calibrate fit` would read; a scenario it refuses (one with
          // fitted layer counts) is checked and simply not plotted.
          std::vector<calibrate::FitPoint> pts;
          try {
            pts = calibrate::to_fit_points(calibrate::parse_scenario_file(path, 0.5).records);
          } catch (const std::exception& e) {
            fmt::print(stderr, "plot: {} not plotted: {}\n", hw::printable(path), hw::printable(e.what()));
          }
          if (!pts.empty()) try {
            calibrate::PlotOptions po;
            po.dir = *check_plot;
            po.prefix = sc.name + "__";
            po.measured_label = "measured";
            po.namer = &plot_namer;
            auto rep = calibrate::write_plots(hw, pts, calibrate::predict(hw, pts), std::vector<bool>(pts.size(), false), po);
            write_timeline_plots(sc, res, *check_plot, rep, plot_namer);
            for (const auto& m : rep.messages) fmt::print(stderr, "plot: {}\n", hw::printable(m));
            fmt::print("     {}: wrote {} CSV tables and {} images into {}\n", hw::printable(path), rep.csv_files.size(), rep.image_files.size(),
                       hw::printable(*check_plot));
          } catch (const std::exception& e) {
            // The file was checked; its plots could not be written (a folder in the way, a name too
            // long): said as such, not as bad input, and the check exits 1 at the end.
            ++plot_failures;
            std::fflush(stdout);
            fmt::print(stderr, "fusesim: error: the plots of {} could not be written: {}\n", hw::printable(path), hw::printable(e.what()));
          }
        }
      } catch (const std::exception& e) {
        ++unreadable;
        std::fflush(stdout);
        fmt::print(stderr, "fusesim: error: {}\n", hw::printable(e.what()));
        junit_files.push_back({path, nullptr, e.what()});
        fmt::print("ERROR {}: not checked (bad input, see the error above)\n", hw::printable(path));
      }
    }
    // Cases and a model's own judgements are counted apart (a kernel miss is not a case outside tolerance).
    std::string failed;
    if (bad) failed = fmt::format("{} of {} compared cases outside tolerance or known misses now within it", bad, compared);
    for (const auto& [what, n] : model_bad) failed += fmt::format("{}{} {}", failed.empty() ? "" : "; ", n, what);
    std::optional<BaselineDiff> diff;  // --baseline's, also carried into --junit's report
    if (!ci->baseline.empty()) {
      std::vector<nlohmann::json> runs;
      std::vector<std::string> files;
      for (const auto& r : results) {
        runs.push_back(r.second);
        files.push_back(r.first);
      }
      diff = compare_baseline(*baseline, runs, ci->threshold_pct, &files);
      const BaselineDiff& d = *diff;
      for (const auto& m : d.moved)
        fmt::print("MOVED {} {}: predicted {:.3f} us, baseline {:.3f} us ({:+.3f}%, threshold {:g}%)\n", hw::printable(m.scenario),
                   hw::printable(m.id), m.new_us, m.old_us, m.change_pct, ci->threshold_pct);
      fmt::print("baseline {}: {} predictions compared, {} moved by more than {:g}%, {} cases not in the baseline\n",
                 hw::printable(ci->baseline), d.compared, d.moved.size(), ci->threshold_pct, d.not_in_baseline.size());
      if (!d.moved.empty())
        failed += fmt::format("{}{} predictions moved by more than {:g}% since {}", failed.empty() ? "" : "; ", d.moved.size(), ci->threshold_pct,
                              ci->baseline);
    }
    for (auto& o : ci_outputs)
      o.text = o.option == "--junit" ? junit_xml(junit_files, diff ? &*diff : nullptr) : json_text(predictions_document(results), 1) + "\n";
    if (!ci_outputs.empty()) hw::write_outputs_atomic(ci_outputs);
    if (unreadable || plot_failures) {
      std::string what;
      if (unreadable) what = fmt::format("{} of {} files could not be checked", unreadable, check_args->size());
      if (plot_failures) what += fmt::format("{}the plots of {} files could not be written", what.empty() ? "" : "; ", plot_failures);
      fmt::print("ERROR: {}{}\n", what, failed.empty() ? "" : "; " + hw::printable(failed));
      throw CLI::RuntimeError(1);
    }
    if (!failed.empty()) {
      fmt::print("FAIL: {}\n", hw::printable(failed));
      throw CLI::RuntimeError(2);
    }
  });

  auto params_path = std::make_shared<std::string>();
  auto* params = app.add_subcommand("params", "list every model parameter of a hardware file: value, unit, bounds, provenance");
  params->add_option("hardware", *params_path, "hardware YAML file")->required()->check(CLI::ExistingFile);
  auto params_json = std::make_shared<bool>(false);
  params->add_flag("--json", *params_json, "print JSON instead of a table");
  params->callback([params_path, params_json] {
    if (looks_like_scenario_file(*params_path))
      throw std::invalid_argument(fmt::format("{}: this is a scenario file; params wants a hardware file (e.g. hw/mi355x-8gpu.yaml; "
                                              "the scenario's `hardware:` names its own)", *params_path));
    auto hw = models::load_hardware(*params_path);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& d : models::builtin_registry().all()) {
      if (!hw.has(d.key)) continue;
      const auto& v = hw.value(d.key);
      out.push_back({{"key", d.key}, {"value", hw::to_display(d.quantity, v.si)}, {"unit", hw::display_unit(d.quantity)},
                     {"text", v.text}, {"lower", hw::to_display(d.quantity, d.lower)}, {"upper", hw::to_display(d.quantity, d.upper)},
                     {"kind", hw::provenance_name(v.kind)}, {"source", v.source}, {"description", d.description},
                     {"line", v.line}, {"fitted_from", v.fitted_from}, {"fitted_on", v.fitted_on}, {"commit", v.fitted_commit},
                     {"sigma", v.fit_sigma_si > 0 ? nlohmann::json(hw::to_display(d.quantity, v.fit_sigma_si)) : nlohmann::json()},
                     // The fit's one-sigma exceeds the value: the points it was fitted on do not pin it down.
                     {"not_identified", v.fit_sigma_si > 0 && v.fit_sigma_si > std::fabs(v.si)},
                     {"read_by_a_model", !models::is_unread_hardware_key(d.key)}});
    }
    if (*params_json) {
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("{} ({}): {} parameters\n", hw::printable(hw.name()), hw::printable(*params_path), out.size());
    fmt::print("{:<34} {:>12} {:>10} {:<7} {:>10} {:>10}  {:<9} {}\n", "key", "value", "sigma", "unit", "lower", "upper", "kind",
               "source (fitted: on, commit)");
    int unidentified = 0;
    for (const auto& p : out) {
      std::string src = p["source"].get<std::string>();
      if (p["not_identified"].get<bool>()) {
        ++unidentified;
        src = "NOT IDENTIFIED (sigma > |value|) " + src;
      }
      const std::string on = p["fitted_on"].get<std::string>(), commit = p["commit"].get<std::string>();
      if (!on.empty() || !commit.empty())
        src += fmt::format(" [fitted{}{}]", on.empty() ? "" : " " + on, commit.empty() ? "" : ", commit " + commit);
      fmt::print("{:<34} {:>12.6g} {:>10} {:<7} {:>10.4g} {:>10.4g}  {:<9} {}\n", p["key"].get<std::string>(),
                 p["value"].get<double>(), p["sigma"].is_null() ? "-" : fmt::format("{:.3g}", p["sigma"].get<double>()),
                 p["unit"].get<std::string>(), p["lower"].get<double>(), p["upper"].get<double>(), p["kind"].get<std::string>(),
                 hw::printable(src));  // source, fitted_on and commit come from the file (issue 22)
    }
    if (unidentified)
      fmt::print("{} fitted values are NOT IDENTIFIED: their fit's sigma exceeds the value, so the points they were fitted on "
                 "constrain only combinations of them\n", unidentified);
    // Which models the file can run (each model's spec): the keys it requires on this hardware that
    // the file sets, and its other declarations the file sets.
    for (const models::ModelSpec* spec : models::specs()) {
      const auto needed = models::required_hardware_keys(spec->name, hw);
      std::vector<std::string> missing;
      for (const auto& k : needed)
        if (!hw.has(k)) missing.push_back(k);
      const int required = int(needed.size());
      int optional = 0, optional_set = 0;
      if (spec->hardware)
        for (const auto& h : spec->hardware(nullptr))
          if (std::find(needed.begin(), needed.end(), h.decl.key) == needed.end()) {
            ++optional;
            optional_set += hw.has(h.decl.key) ? 1 : 0;
          }
      fmt::print("{}: {}/{} required and {}/{} optional parameters set{}{}{}\n", spec->name, required - int(missing.size()),
                 required, optional_set, optional, missing.empty() ? "" : "; not set: ",
                 fmt::join(missing.begin(), missing.begin() + std::min<size_t>(missing.size(), 6), ", "),
                 missing.size() > 6 ? ", ..." : "");
    }
    // Declared keys no model reads: they describe the machine; changing them changes no prediction.
    std::vector<std::string> unread;
    for (const auto& k : models::unread_hardware_keys())
      if (hw.has(k)) unread.push_back(k);
    if (!unread.empty())
      fmt::print("not read by any model (documentation): {}\n", fmt::join(unread, ", "));
  });

  auto be = std::make_shared<BreakevenOptions>();
  auto* bec = app.add_subcommand("breakeven", "smallest M from which the fused path beats the split path and the RCCL baseline");
  bec->add_option("--hw", be->hw,
                  "hardware YAML (default: hw/mi355x-8gpu.yaml in the current folder, else in the checkout this binary "
                  "was built from)");
  bec->add_option("--wire", be->wire, "bf16 (SDMA gather) or fp8 (LSA pull gather)")->check(CLI::IsMember({"bf16", "fp8"}));
  // A number past 2^63 was clamped by the parser and the error showed 9223372036854775807, not what
  // was typed (trial 3): checked as text first.
  const auto dimension_text = [](const std::string& t) -> std::string {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc::result_out_of_range && end == t.data() + t.size())
      return fmt::format("must be a positive multiple of 8, at most 2^31 = 2147483648, got {}", t);
    return {};
  };
  bec->add_option("-n,--n", be->n, "N (columns of C)")->check(dimension_text);
  bec->add_option("-k,--k", be->k, "K")->check(dimension_text);
  bec->add_option("--world-size", be->ws, "ranks");
  bec->add_option("--quant", be->quant, "blockscale, ptpc or mxfp8");
  // Both ends of every padding step up to max_m are simulated (3 paths each), and each simulation
  // grows with M, so the time grows with max_m squared: 2^18 (4 x the default) takes 3-5 s at world
  // size 2..8; 2^20 took 76 s (issue 22's trial) and 2^63 - 1 never ended.
  bec->add_option("--max-m", be->max_m, "largest M searched (at most 262144)")
      ->check(CLI::TypeValidator<int64_t>("a whole number"))
      ->check(CLI::Range(int64_t(1), int64_t(1) << 18));
  bec->add_option("--format", be->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  bec->footer(
      "JSON (--format json): m_vs_split, m_vs_rccl and (with a calibrated hardware file) m_clear_win_vs_split,\n"
      "m_clear_win_vs_rccl are the smallest M from which the fused path wins (by more than band_95_pct for\n"
      "the clear_win ones) at every larger M up to max_m; -1 means at no M up to max_m. Each has a boolean\n"
      "<name>_every_m: true when it wins at every M from 1 (the number is then 1, which is not M=1 alone).\n"
      "m_vs_*_aligned count only M that are multiples of padding_step (world_size x BLOCK_M).\n"
      "serving_threshold_by_hand is SGLang's _MIN_FUSED_M, chosen by hand for the shapes in\n"
      "serving_threshold_by_hand_chosen_for; serving_threshold_by_hand_for_this_shape says whether this is one.\n");
  bec->callback([bec, be] {
    namespace fs = std::filesystem;
    if (bec->count("--hw") == 0 && !fs::exists(be->hw)) {
      const std::string built = std::string(FUSESIM_SOURCE_DIR) + "/" + be->hw;
      if (!fs::exists(built))
        throw std::runtime_error(fmt::format("--hw: no hardware file given, and the default {} is neither in the current folder "
                                             "nor at {}; give --hw FILE", be->hw, built));
      be->hw = built;
    } else if (!fs::is_regular_file(be->hw)) {
      throw std::runtime_error(fmt::format("--hw: '{}' is not a file (expected a hardware YAML, e.g. hw/mi355x-8gpu.yaml)", be->hw));
    }
    const auto hw = models::load_hardware(be->hw);
    const auto out = breakeven_report(hw, *be);
    if (be->format == "json") {
      fmt::print("{}\n", out.dump(2));
      return;
    }
    const int64_t max_m = out["max_m"].get<int64_t>(), smallest = out["padding_step"].get<int64_t>();
    auto show = [&](int64_t m) {
      if (m < 0) return fmt::format("no M: it still loses at the largest M searched (<= --max-m {}; see the curve below)", max_m);
      if (m == 1) return fmt::format("every M (up to --max-m {})", max_m);
      return fmt::format("M >= {} (wins there and at every larger M up to --max-m {}; M is padded to a multiple of "
                         "world_size x BLOCK_M = {})", m, max_m, smallest);
    };
    fmt::print("{} ({}) N={} K={} ws={} wire={} ({})\n", hw::printable(hw.name()), hw::printable(hw.path()), out["n"].get<int64_t>(), out["k"].get<int64_t>(),
               out["world_size"].get<int>(), be->wire, out["quant"].get<std::string>());
    fmt::print("  fused beats split-sdma from      {}\n", show(out["m_vs_split"].get<int64_t>()));
    fmt::print("  fused beats RCCL baseline from   {}\n", show(out["m_vs_rccl"].get<int64_t>()));
    auto show_aligned = [&](int64_t m) { return m < 0 ? std::string("no M") : fmt::format("M >= {}", m); };
    fmt::print("  at M that are multiples of {} only (no padding rows): beats split-sdma from {}, RCCL from {}\n", smallest,
               show_aligned(out["m_vs_split_aligned"].get<int64_t>()), show_aligned(out["m_vs_rccl_aligned"].get<int64_t>()));
    fmt::print("  serving threshold chosen by hand M >= {} (SGLang _MIN_FUSED_M, {} wire), chosen for {}{}\n",
               out["serving_threshold_by_hand"].get<int64_t>(), be->wire, out["serving_threshold_by_hand_chosen_for"].get<std::string>(),
               out["serving_threshold_by_hand_for_this_shape"].get<bool>() ? " (this shape is one of them)"
                                                                           : ": not this shape, for which it says nothing");
    if (out.contains("band_95_pct")) {
      auto text = [](int64_t m) {
        return m < 0 ? std::string("at no M") : m == 1 ? std::string("at every M") : fmt::format("from M >= {}", m);
      };
      fmt::print("  each time below is +-{:.1f}% at 95% (the hardware file's calibration residuals); fused wins by more "
                 "than that over split-sdma {}, over RCCL {}\n", out["band_95_pct"].get<double>(),
                 text(out["m_clear_win_vs_split"].get<int64_t>()), text(out["m_clear_win_vs_rccl"].get<int64_t>()));
    }
    fmt::print("  {:>7} {:>10} {:>10} {:>10}\n", "M", "fused_us", "split_us", "rccl_us");
    for (const auto& p : out["curve"])
      fmt::print("  {:>7} {:>10.1f} {:>10.1f} {:>10.1f}\n", p["m"].get<int64_t>(), p["fused_us"].get<double>(),
                 p["split_us"].get<double>(), p["rccl_us"].get<double>());
  });

  // ---- sweep: every case streamed to a file, split among MPI ranks under mpirun -----------------
  struct SweepArgs {
    std::string scenario, out, format = "jsonl";
    bool resume = false, no_progress = false;
    uint64_t max_cases = scenario::LoadOptions{}.max_cases, max_events = 0;  // set by add_limit_options
  };
  auto sw = std::make_shared<SweepArgs>();
  auto* swc = app.add_subcommand("sweep", "run every case of a scenario, streaming rows to a file (resumable; split over MPI ranks under mpirun)");
  swc->add_option("scenario", sw->scenario, "scenario YAML file")->required();
  swc->add_option("--out", sw->out, "output file (rows written in case order as they finish)")->required()->check(hw::refuse_dash_output_name);
  swc->add_option("--format", sw->format, "jsonl (a case's JSON per line) or csv (run's CSV)")->check(CLI::IsMember({"jsonl", "csv"}));
  swc->add_flag("--resume", sw->resume, "keep the complete rows of --out (checked against the cases: ids, parameters, the first and last rows run again) and run the rest");
  swc->add_flag("--no-progress", sw->no_progress, "no progress line on stderr");
  add_limit_options(swc, sw->max_cases, sw->max_events);
  swc->callback([sw] {
    const std::vector<hw::OutputFile> outs{{sw->out, "", "--out"}};
    scenario::refuse_outputs_over_inputs(outs, {{sw->scenario, "scenario file", ""}});
    // A file name in a writable folder, as run --out: a FIFO hung at open(); /dev/null was accepted
    // (unlike run) but a sweep's --out is also what --resume reads, cuts and appends to.
    hw::check_output_files(outs);
    sim::set_default_event_budget(sw->max_events);
    auto sc = scenario::load(sw->scenario, {sw->max_cases, false});
    scenario::refuse_outputs_over_inputs(outs, &sc, nullptr);
    auto hw = scenario::load_hardware(sc);
    scenario::refuse_outputs_over_inputs(outs, &sc, &hw);  // its measured tables too
    scenario::SweepOptions o;
    o.out = sw->out;
    o.format = sw->format;
    o.resume = sw->resume;
    o.progress = !sw->no_progress;
    const auto rep = scenario::sweep(sc, hw, o);
    if (rep.rank == 0)
      fmt::print("sweep {}: {} cases ({} kept from --out, {} run) by {} process{} in {:.2f} s ({:.1f} cases/s): {}\n", hw::printable(sc.path), rep.cases,
                 rep.resumed, rep.ran, rep.ranks, rep.ranks == 1 ? "" : "es", rep.seconds, rep.seconds > 0 ? rep.ran / rep.seconds : 0.0,
                 hw::printable(o.out));
  });

  // ---- tune: the best knob setting per shape and M ------------------------------------------------
  struct TuneArgs {
    std::string hw = "hw/mi355x-8gpu.yaml", model = "gemm_ar", m = "1024:32768", m_key = "m", baseline = "mode=rccl", fixed, format = "table", out, plot,
                from_trace;
    std::vector<std::string> shapes, values, knobs;
    int64_t exhaustive_limit = 4096, max_shapes = 64, max_evaluations = scenario::TuneOptions::kDefaultMaxTuneEvaluations;
    int restarts = 4;
    unsigned seed = 1;
  };
  auto ta = std::make_shared<TuneArgs>();
  auto* tc = app.add_subcommand("tune", "search a model's knobs (from its case schema) for the best setting per shape and M, and the serving threshold");
  tc->add_option("--hw", ta->hw, "hardware YAML (default hw/mi355x-8gpu.yaml, in the current folder or this checkout)");
  tc->add_option("--model", ta->model, "the model whose knobs are searched (default gemm_ar)");
  tc->add_option("--shape", ta->shapes, "fixed case parameters of one shape, KEY=VALUE,... (repeat for several shapes; with --from-trace: "
                                      "at most one, the parameters under every shape of the trace)");
  tc->add_option("--from-trace", ta->from_trace, "take the shapes (M, N, K, world size) from the GEMM + all-reduce pairs of a PyTorch "
                                                "profiler trace (a file or a folder of per-rank files)");
  tc->add_option("--max-shapes", ta->max_shapes, "with --from-trace: refuse a trace with more distinct shapes than this (default 64)")
      ->check(CLI::Range(int64_t(1), int64_t(100000)));
  tc->add_option("--m", ta->m, "M: A:B (A, 2A, ... up to B) or M1,M2,... (default 1024:32768; M at most 262144, at most 64 values)");
  tc->add_option("--m-key", ta->m_key, "the case parameter --m sets (default m; afd: tokens)");
  tc->add_option("--baseline", ta->baseline, "the baseline's parameters, KEY=VALUE,... (default mode=rccl)");
  tc->add_option("--values", ta->values, "restrict a knob's candidates: KEY=V1,V2,... (repeatable)");
  tc->add_option("--knobs", ta->knobs, "search only these knobs (comma-separated; the others keep their defaults)")->delimiter(',');
  tc->add_option("--fix", ta->fixed, "hold parameters for every setting, KEY=VALUE,...");
  tc->add_option("--exhaustive-limit", ta->exhaustive_limit, "search exhaustively up to this many settings (default 4096)");
  tc->add_option("--restarts", ta->restarts, "coordinate descent: random starts besides the defaults (default 4)");
  tc->add_option("--max-evaluations", ta->max_evaluations, "refuse a search whose worst case takes more than N model evaluations in all (default 2000000)")
      ->check(CLI::Range(int64_t(1), int64_t(1000000000000)));
  tc->add_option("--seed", ta->seed, "coordinate descent: seed of the random starts (default 1)");
  tc->add_option("--format", ta->format, "table, json or yaml (a scenario to feed back to fusesim run)")->check(CLI::IsMember({"table", "json", "yaml"}));
  tc->add_option("--out", ta->out, "write the output to FILE instead of stdout")->check(hw::refuse_dash_output_name);
  tc->add_option("--plot", ta->plot, "write per shape the best setting's and the baseline's predicted time vs M with the 95% band (gnuplot) into DIR")
      ->check(hw::refuse_dash_output_name);
  tc->callback([tc, ta] {
    namespace fs = std::filesystem;
    if (tc->count("--hw") == 0 && !fs::exists(ta->hw)) ta->hw = std::string(FUSESIM_SOURCE_DIR) + "/" + ta->hw;
    if (!fs::is_regular_file(ta->hw)) throw std::runtime_error(fmt::format("--hw: '{}' is not a file (expected a hardware YAML)", ta->hw));
    if (tc->count("--plot") > 0) check_plot_dir(ta->plot);
    if (!ta->out.empty()) hw::check_output_files({{ta->out, "", "--out"}});  // before the search
    const models::ModelSpec* spec = models::find_spec(ta->model);
    if (!spec) throw std::invalid_argument(fmt::format("--model: unknown model '{}' (expected one of: {})", ta->model, models::model_names()));
    const auto hw = models::load_hardware(ta->hw);
    // --out over --hw replaced the hardware file with the tune table (a fresh-user trial).
    std::vector<scenario::InputFile> trace_inputs;  // --from-trace's file, or the files of its folder
    if (!ta->from_trace.empty()) {
      std::error_code ec;
      if (fs::is_directory(ta->from_trace, ec)) {
        size_t n = 0;
        for (const auto& e : fs::directory_iterator(ta->from_trace, ec))
          if (n++ < 100000 && e.is_regular_file(ec)) trace_inputs.push_back({e.path().string(), "--from-trace trace file", ""});
      } else {
        trace_inputs.push_back({ta->from_trace, "--from-trace trace file", ""});
      }
    }
    if (!ta->out.empty()) scenario::refuse_outputs_over_inputs({{ta->out, "", "--out"}}, nullptr, &hw, trace_inputs);
    scenario::TuneOptions o;
    if (ta->shapes.empty() && ta->from_trace.empty()) throw std::invalid_argument("tune: give --shape K=V,... or --from-trace TRACE");
    if (!ta->from_trace.empty() && tc->count("--m") > 0)
      throw std::invalid_argument("--m: with --from-trace each shape's M is the trace's (leave --m out)");
    for (const auto& s : ta->shapes) o.shapes.push_back(assignments(s, "--shape"));
    if (ta->from_trace.empty()) o.ms = m_list(ta->m);
    o.baseline = assignments(ta->baseline, "--baseline");
    o.fixed = assignments(ta->fixed, "--fix");
    for (const auto& v : ta->values) {
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument(fmt::format("--values: expected KEY=V1,V2,..., got '{}'", v));
      std::string t = v.substr(eq + 1);
      std::replace(t.begin(), t.end(), ',', ' ');
      std::istringstream words(t);
      std::string w;
      auto& list = o.values[v.substr(0, eq)];
      while (words >> w) list.push_back(scalar_of(w));
      if (list.empty()) throw std::invalid_argument(fmt::format("--values: no value given in '{}'", v));
    }
    o.only = ta->knobs;
    o.m_key = ta->m_key;
    o.exhaustive_limit = ta->exhaustive_limit;
    o.restarts = ta->restarts;
    o.max_evaluations = ta->max_evaluations;
    o.seed = ta->seed;
    nlohmann::json res;
    std::string summary;  // what the trace gave (--from-trace)
    if (!ta->from_trace.empty()) {
#ifdef FUSESIM_TUNE_TRACE
      const TracePairs pairs = find_gemm_allreduce_pairs(ta->from_trace);
      try {
        res = tune_trace_shapes(pairs, *spec, hw, ta->hw, o, size_t(ta->max_shapes), pairs.shapes.size() > 1);
      } catch (const std::invalid_argument&) {
        fmt::print(stderr, "{}", hw::printable(format_trace_summary(pairs, nlohmann::json::object()), true));  // each pair and why it is not tuned
        throw;
      }
      summary = format_trace_summary(pairs, res);
#else
      throw std::invalid_argument("--from-trace: this fusesim was built without the trace module (-DFUSESIM_TRACE=ON)");
#endif
    } else {
      res = scenario::tune(*spec, hw, ta->hw, o);
    }
    std::string text = ta->format == "json" ? res.dump(2) + "\n" : ta->format == "yaml" ? scenario::format_tune_scenario(res) : scenario::format_tune_table(res);
    // Kernel and op names come from someone else's trace: escaped before a terminal (hw/printable.hpp).
    if (!summary.empty() && ta->format == "table") text = hw::printable(summary + "\n" + text, true);
    else if (!summary.empty() && ta->format == "yaml") fmt::print(stderr, "{}", hw::printable(summary, true));
    if (!ta->out.empty()) {
      std::vector<hw::OutputFile> outs{{ta->out, text, "--out"}};
      hw::check_output_files(outs);
      hw::write_outputs_atomic(outs);
    } else {
      fmt::print("{}", text);
    }
    if (!ta->plot.empty()) {
      // No plot file over --hw, its tables, the trace or --out (issue 22's third trial).
      std::vector<std::string> taken;
      for (const auto& in : scenario::input_files(nullptr, &hw)) taken.push_back(in.path);
      for (const auto& in : trace_inputs) taken.push_back(in.path);
      if (!ta->out.empty()) taken.push_back(ta->out);
      calibrate::PlotNamer namer(taken);
      const auto rep = calibrate::write_tune_plots(res, ta->plot, "gnuplot", &namer);
      for (const auto& m : rep.messages) fmt::print(stderr, "plot: {}\n", hw::printable(m));
      fmt::print(stderr, "tune: wrote {} data files and {} images into {}\n", rep.csv_files.size(), rep.image_files.size(), hw::printable(ta->plot));
    }
  });

  auto* calibrate = app.add_subcommand("calibrate", "fit the model to measurements; run probes or the real benchmark on a live node");
  calibrate->require_subcommand(1);
  register_calibrate_commands(*calibrate);
}

}  // namespace fusesim::cli

#else  // FUSESIM_CLI_MAIN: the program.

#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "hw/printable.hpp"
#ifdef FUSESIM_HAVE_TRACE
#include "calibrate/trace/whatif.hpp"
#endif

/// build/fusesim: the commands of register_all (and trace, when built with it) on the command line;
/// exit 0 on success, 1 on an error (printed as "fusesim: error: ..."), 2 when `check` finds a miss.
int main(int argc, char** argv) {
  CLI::App app{"fusesim: simulator and cost model of fused compute+communication paths on multi-GPU nodes"};
  app.require_subcommand(1);
#ifdef FUSESIM_VERSION
  app.set_version_flag("--version", std::string("fusesim ") + FUSESIM_VERSION);
#endif
  fusesim::cli::register_all(app);
  // The trace module is optional (-DFUSESIM_TRACE, CMakeLists.txt); its what-if predicts fused
  // GEMM + all-reduce calls with the gemm_ar model.
#ifdef FUSESIM_HAVE_TRACE
  fusesim::register_trace_commands(app, fusesim::cli::gemm_ar_predictor);
#endif
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      fmt::print(stderr, "fusesim: error: unknown command '{}' (expected one of: {}; see fusesim --help)\n", fusesim::hw::printable(argv[1]), names);
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help / --version exit 0, `check` exits 2 on a miss and 1 on a file it could not check (a
    // CLI::RuntimeError from its callback); CLI11's own usage errors (an unknown option, a file that
    // does not exist: codes 100 and up) exit 1 like any other bad input, with the same prefix.
    if (e.get_exit_code() < 100) return app.exit(e);
    fmt::print(stderr, "fusesim: error: {} (see fusesim {}--help)\n", fusesim::hw::printable(e.what()),
               app.get_subcommands().empty() ? std::string() : app.get_subcommands().front()->get_name() + " ");
    return 1;
  } catch (const std::exception& e) {
    // Messages quote input (case ids, names, file paths): control characters are escaped.
    fmt::print(stderr, "fusesim: error: {}\n", fusesim::hw::printable(e.what()));
    return 1;
  }
  return 0;
}

#endif  // FUSESIM_CLI_MAIN
