#include "models/cli/commands.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <tuple>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "calibrate/measurements.hpp"
#include "calibrate/plot.hpp"
#include "models/cli/hooks.hpp"
#include "hw/io.hpp"
#include "models/params.hpp"
#include "models/gemm_ar.hpp"
#include "models/gemm_ar_live.hpp"
#include "models/afd/afd.hpp"
#include "models/afd/params.hpp"
#include "models/scenario.hpp"
#include "models/serving.hpp"
#include "sim/trace.hpp"


namespace fusesim::cli {
namespace {

struct RunArgs {
  std::vector<std::string> scenarios;
  std::string format = "table", trace, only, out;
};

std::string kernel_duration_text(const nlohmann::json& kd, bool list) {
  if (kd.is_null()) return "";
  std::string out = fmt::format(
      "kernel durations at T >= 128: {} of {} within {:.0f}% (median |error| {:.2f}%, max {:.2f}%); outside: {} known misses, {} new\n",
      kd["within"].get<size_t>(), kd["total"].get<size_t>(), kd["tolerance_pct"].get<double>(), kd["median_abs_error_pct"].get<double>(),
      kd["max_abs_error_pct"].get<double>(), kd["misses"].size() - kd["new_misses"].get<size_t>(), kd["new_misses"].get<int>());
  for (const auto& m : kd["misses"])
    if (list || !m["known"].get<bool>())
      out += fmt::format("  {} kernel duration {} {}: measured {:.2f} us, predicted {:.2f} us ({:+.1f}%){}\n",
                         m["known"].get<bool>() ? "known miss:" : "NEW MISS:", m["case"].get<std::string>(),
                         m["kernel"].get<std::string>(), m["measured_us"].get<double>(), m["predicted_us"].get<double>(),
                         m["error_pct"].get<double>(), list && m["known"].get<bool>() ? " -- " + m["reason"].get<std::string>() : "");
  for (const auto& m : kd["known_now_within"])
    out += fmt::format("  KNOWN MISS NOW WITHIN: {} {} ({:+.1f}%): remove it from kernel_durations.known_misses\n",
                       m["case"].get<std::string>(), m["kernel"].get<std::string>(), m["error_pct"].get<double>());
  return out;
}

}  // namespace

void register_all(CLI::App& app) {
  auto run_args = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "predict every case of a scenario and compare with its measured values");
  run->add_option("scenario", run_args->scenarios, "scenario YAML file")->required()->check(CLI::ExistingFile)->expected(1);
  run->add_option("--format", run_args->format, "table, json or csv")->check(CLI::IsMember({"table", "json", "csv"}));
  run->add_option("--trace", run_args->trace, "write a Chrome/Perfetto trace-event JSON of every case to FILE");
  run->add_option("--only", run_args->only, "run only cases whose id contains TEXT");
  run->add_option("--out", run_args->out, "write the output to FILE instead of stdout");
  run->callback([run_args] {
    // A bad destination is refused before the (possibly long) run.
    std::vector<hw::OutputFile> outputs;
    if (!run_args->trace.empty()) outputs.push_back({run_args->trace, "", "--trace"});
    if (!run_args->out.empty()) outputs.push_back({run_args->out, "", "--out"});
    hw::check_output_files(outputs);
    auto sc = models::Scenario::load(run_args->scenarios.at(0));
    auto hw = models::load_scenario_hardware(sc);
    sim::TraceSink trace;
    models::RunOptions opt;
    opt.only = run_args->only;
    if (!run_args->trace.empty()) opt.trace = &trace;
    auto res = models::run_scenario(sc, hw, opt);
    const auto kd = models::kernel_durations(sc, res);
    if (!kd.is_null()) res["summary"]["kernel_durations"] = kd;
    std::string text = run_args->format == "json" ? res.dump(2) + "\n"
                       : run_args->format == "csv" ? models::format_csv(res)
                                                   : models::format_table(res) + kernel_duration_text(kd, true);
    // Both outputs or neither: a failure to write one leaves the other file as it was.
    for (auto& o : outputs) o.text = o.option == "--trace" ? trace.to_text() : text;
    hw::write_outputs_atomic(outputs);
    if (run_args->out.empty()) fmt::print("{}", text);
  });

  auto check_args = std::make_shared<std::vector<std::string>>();
  auto check_plot = std::make_shared<std::string>();
  auto* check = app.add_subcommand("check", "run scenarios; exit non-zero when any measured case misses its stated tolerance");
  check->add_option("scenarios", *check_args, "scenario YAML files (one that cannot be read is reported and the others still checked)")->required();
  check->add_option("--plot", *check_plot, "write per-table plots (gnuplot PNG + SVG) and CSV tables of measured vs predicted into DIR");
  check->callback([check_args, check_plot] {
    int bad = 0, compared = 0, unreadable = 0;
    for (const auto& path : *check_args) {
      // A file that cannot be checked (bad input) is reported; the other files are still checked.
      try {
        auto sc = models::Scenario::load(path);
        auto hw = models::load_scenario_hardware(sc);
        auto res = models::run_scenario(sc, hw);
        int here = 0, now_passing = 0;
        for (const auto& c : res["cases"]) {
          if (c["within_tolerance"].is_null()) continue;
          ++compared;
          const bool ok = c["within_tolerance"].get<bool>();
          if (c.contains("known_miss")) {
            if (ok) {
              ++here;
              ++now_passing;
              fmt::print("FAIL {} {}: marked known_miss but now within tolerance ({:+.2f}%): remove the flag\n", path,
                         c["id"].get<std::string>(), c["error_pct"].get<double>());
            } else {
              fmt::print("known miss {} {}: error {:+.2f}% (tolerance {:.1f}%): {}\n", path, c["id"].get<std::string>(),
                         c["error_pct"].get<double>(), c["tolerance_pct"].get<double>(), c["known_miss"].get<std::string>());
            }
            continue;
          }
          if (!ok) {
            ++here;
            fmt::print("FAIL {} {}: predicted {:.1f} us, measured {:.1f} us, error {:+.2f}% (tolerance {:.1f}%)\n", path,
                       c["id"].get<std::string>(), c["predicted_us"].get<double>(), c["measured_us"].get<double>(),
                       c["error_pct"].get<double>(), c["tolerance_pct"].get<double>());
          }
        }
        const auto& s = res["summary"];
        fmt::print("{} {}: {} compared, median |error| {}, max {}, {} outside tolerance{}\n", here ? "FAIL" : "ok  ", path,
                   s["compared"].get<int>(),
                   s["median_abs_error_pct"].is_null() ? "-" : fmt::format("{:.2f}%", s["median_abs_error_pct"].get<double>()),
                   s["max_abs_error_pct"].is_null() ? "-" : fmt::format("{:.2f}%", s["max_abs_error_pct"].get<double>()),
                   here - now_passing, now_passing ? fmt::format(", {} known misses now within (remove their flag)", now_passing) : "");
        bad += here;
        // Per-kernel durations: a miss not listed in kernel_durations.known_misses, or a listed one
        // that now passes, fails the check like a case outside tolerance.
        if (const auto kd = models::kernel_durations(sc, res); !kd.is_null()) {
          fmt::print("     {}", kernel_duration_text(kd, false));
          const int kbad = kd["new_misses"].get<int>() + int(kd["known_now_within"].size());
          if (kbad) fmt::print("FAIL {}: {} per-kernel duration(s) outside the known misses\n", path, kbad);
          bad += kbad;
        }
        if (!check_plot->empty()) {
          const auto pts = calibrate::to_fit_points(calibrate::parse_scenario_file(path, 0.5).records);
          if (!pts.empty()) {
            calibrate::PlotOptions po;
            po.dir = *check_plot;
            po.prefix = sc.name + "__";
            po.measured_label = "measured";
            const auto rep = calibrate::write_plots(hw, pts, calibrate::predict(hw, pts), std::vector<bool>(pts.size(), false), po);
            for (const auto& m : rep.messages) fmt::print(stderr, "plot: {}\n", m);
            fmt::print("     {}: wrote {} CSV tables and {} images into {}\n", path, rep.csv_files.size(), rep.image_files.size(), *check_plot);
          }
        }
      } catch (const std::exception& e) {
        ++unreadable;
        std::fflush(stdout);
        fmt::print(stderr, "fusesim: error: {}\n", e.what());
        fmt::print("ERROR {}: not checked (bad input, see the error above)\n", path);
      }
    }
    if (unreadable) {
      fmt::print("ERROR: {} of {} files could not be checked{}\n", unreadable, check_args->size(),
                 bad ? fmt::format("; {} compared cases outside tolerance or known misses now within it", bad) : "");
      throw CLI::RuntimeError(1);
    }
    if (bad) {
      fmt::print("FAIL: {} of {} compared cases outside tolerance or known misses now within it\n", bad, compared);
      throw CLI::RuntimeError(2);
    }
  });

  auto params_path = std::make_shared<std::string>();
  auto* params = app.add_subcommand("params", "list every model parameter of a hardware file: value, unit, bounds, provenance");
  params->add_option("hardware", *params_path, "hardware YAML file")->required()->check(CLI::ExistingFile);
  auto params_json = std::make_shared<bool>(false);
  params->add_flag("--json", *params_json, "print JSON instead of a table");
  params->callback([params_path, params_json] {
    auto hw = models::load_hardware(*params_path);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& d : models::builtin_registry().all()) {
      if (!hw.has(d.key)) continue;
      const auto& v = hw.value(d.key);
      out.push_back({{"key", d.key}, {"value", hw::to_display(d.quantity, v.si)}, {"unit", hw::display_unit(d.quantity)},
                     {"text", v.text}, {"lower", hw::to_display(d.quantity, d.lower)}, {"upper", hw::to_display(d.quantity, d.upper)},
                     {"kind", hw::provenance_name(v.kind)}, {"source", v.source}, {"description", d.description},
                     {"line", v.line}, {"fitted_from", v.fitted_from}, {"fitted_on", v.fitted_on}, {"commit", v.fitted_commit},
                     {"sigma", v.fit_sigma_si > 0 ? nlohmann::json(hw::to_display(d.quantity, v.fit_sigma_si)) : nlohmann::json()}});
    }
    if (*params_json) {
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("{} ({}): {} parameters\n", hw.name(), *params_path, out.size());
    fmt::print("{:<34} {:>12} {:>10} {:<7} {:>10} {:>10}  {:<9} {}\n", "key", "value", "sigma", "unit", "lower", "upper", "kind",
               "source (fitted: on, commit)");
    for (const auto& p : out) {
      std::string src = p["source"].get<std::string>();
      const std::string on = p["fitted_on"].get<std::string>(), commit = p["commit"].get<std::string>();
      if (!on.empty() || !commit.empty())
        src += fmt::format(" [fitted{}{}]", on.empty() ? "" : " " + on, commit.empty() ? "" : ", commit " + commit);
      fmt::print("{:<34} {:>12.6g} {:>10} {:<7} {:>10.4g} {:>10.4g}  {:<9} {}\n", p["key"].get<std::string>(),
                 p["value"].get<double>(), p["sigma"].is_null() ? "-" : fmt::format("{:.3g}", p["sigma"].get<double>()),
                 p["unit"].get<std::string>(), p["lower"].get<double>(), p["upper"].get<double>(), p["kind"].get<std::string>(),
                 src);
    }
    // Which models the file can run: the keys each reads (models::required_hardware_keys) it sets,
    // and the module's other declarations it sets.
    const std::vector<std::tuple<std::string, std::string, std::vector<hw::ParamDecl>>> modules{
        {"gemm_ar", "gemm_ar", models::gemm_ar_param_decls()},
        {"gemm_ar_live / h200_probe", "gemm_ar_live", models::gemm_ar_live_param_decls()},
        {"afd", "afd", fusesim::afd::afd_param_decls()}};
    for (const auto& [name, model, decls] : modules) {
      const auto needed = models::required_hardware_keys(model, hw);
      std::vector<std::string> missing;
      for (const auto& k : needed)
        if (!hw.has(k)) missing.push_back(k);
      const int required = int(needed.size());
      int optional = 0, optional_set = 0;
      for (const auto& d : decls)
        if (std::find(needed.begin(), needed.end(), d.key) == needed.end()) {
          ++optional;
          optional_set += hw.has(d.key) ? 1 : 0;
        }
      fmt::print("{}: {}/{} required and {}/{} optional parameters set{}{}{}\n", name, required - int(missing.size()),
                 required, optional_set, optional, missing.empty() ? "" : "; not set: ",
                 fmt::join(missing.begin(), missing.begin() + std::min<size_t>(missing.size(), 6), ", "),
                 missing.size() > 6 ? ", ..." : "");
    }
  });

  struct BeArgs {
    std::string hw = "hw/mi355x-8gpu.yaml", wire = "bf16", quant = "blockscale", format = "table";
    int64_t n = 7168, k = 2048, max_m = 65536;
    int ws = 8;
  };
  auto be = std::make_shared<BeArgs>();
  auto* bec = app.add_subcommand("breakeven", "smallest M from which the fused path beats the split path and the RCCL baseline");
  bec->add_option("--hw", be->hw, "hardware YAML")->check(CLI::ExistingFile);
  bec->add_option("--wire", be->wire, "bf16 (SDMA gather) or fp8 (LSA pull gather)")->check(CLI::IsMember({"bf16", "fp8"}));
  bec->add_option("-n,--n", be->n, "N (columns of C)");
  bec->add_option("-k,--k", be->k, "K");
  bec->add_option("--world-size", be->ws, "ranks");
  bec->add_option("--quant", be->quant, "blockscale, ptpc or mxfp8");
  bec->add_option("--max-m", be->max_m, "largest M searched");
  bec->add_option("--format", be->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  bec->callback([be] {
    const auto hw = models::load_hardware(be->hw);
    if (!hw.has("sdma.queue_peak"))
      throw std::runtime_error(fmt::format("breakeven needs a gemm_ar hardware file (with SDMA and GEMM tile parameters, e.g. "
                                           "hw/mi355x-8gpu.yaml); '{}' is not one", be->hw));
    models::GemmArConfig c;
    c.n = be->n;
    c.k = be->k;
    c.world_size = be->ws;
    c.quant = be->quant;
    if (be->wire == "fp8") {
      c.gather_dtype = "fp8";
      c.gather_transport = "lsa";
    }
    models::validate(c, hw);
    if (be->max_m < int64_t(c.world_size) * models::block_m(c.quant))
      throw std::invalid_argument(fmt::format("--max-m {} is below the smallest M the kernel runs (world_size x BLOCK_M = {})", be->max_m,
                                              int64_t(c.world_size) * models::block_m(c.quant)));
    {  // the largest M searched must fit the GPU (window + operands): validate() says so naming 'm'
      models::GemmArConfig top = c;
      top.m = be->max_m;
      top.mode = "fused-sdma";
      try {
        models::validate(top, hw);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("--max-m {}: {}", be->max_m, e.what()));
      }
    }
    const auto r = models::break_even(hw, c, be->max_m);
    // Serving thresholds chosen by hand in SGLang (_MIN_FUSED_M, seeds 001/002).
    const int64_t hand = be->wire == "fp8" ? 2048 : 8192;
    const int64_t smallest = int64_t(c.world_size) * models::block_m(c.quant);
    auto show = [&](int64_t m) {
      if (m < 0) return fmt::format("no M: it still loses at the largest M searched (<= --max-m {}; see the curve below)", be->max_m);
      if (m == 1) return fmt::format("every M (up to --max-m {})", be->max_m);
      return fmt::format("M >= {} (wins there and at every larger M up to --max-m {}; M is padded to a multiple of "
                         "world_size x BLOCK_M = {})", m, be->max_m, smallest);
    };
    auto curve = r.curve.get<std::vector<nlohmann::json>>();
    std::sort(curve.begin(), curve.end(), [](const auto& a, const auto& b) { return a["m"].template get<int64_t>() < b["m"].template get<int64_t>(); });
    curve.erase(std::unique(curve.begin(), curve.end(), [](const auto& a, const auto& b) { return a["m"] == b["m"]; }), curve.end());
    const bool has_band = hw.calibration() && hw.calibration()->residual_rms_pct > 0;
    const double band = has_band ? 1.96 * hw.calibration()->residual_rms_pct : 0.0;
    // Smallest M of the curve from which the fused path wins by more than that band at every larger M
    // (-1: at no M of the curve).
    auto clear_win = [&](const char* other) -> int64_t {
      int64_t from = -1;
      for (auto it = curve.rbegin(); it != curve.rend(); ++it) {
        const double o = (*it)[other].get<double>(), f = (*it)["fused_us"].get<double>();
        if ((o - f) / o * 100 <= band) break;
        from = (*it)["m"].get<int64_t>();
      }
      return from;
    };
    if (be->format == "json") {
      nlohmann::json out{{"hardware", hw.name()}, {"n", c.n}, {"k", c.k}, {"world_size", c.world_size},
                         {"wire", be->wire}, {"quant", c.quant}, {"m_vs_split", r.m_vs_split}, {"m_vs_rccl", r.m_vs_rccl},
                         {"m_vs_split_aligned", r.m_vs_split_aligned}, {"m_vs_rccl_aligned", r.m_vs_rccl_aligned},
                         {"serving_threshold_by_hand", hand}, {"curve", curve}};
      if (has_band)
        out["band_95_pct"] = band, out["m_clear_win_vs_split"] = clear_win("split_us"),
        out["m_clear_win_vs_rccl"] = clear_win("rccl_us");
      fmt::print("{}\n", out.dump(2));
      return;
    }
    fmt::print("{} N={} K={} ws={} wire={} ({})\n", hw.name(), c.n, c.k, c.world_size, be->wire, c.quant);
    fmt::print("  fused beats split-sdma from      {}\n", show(r.m_vs_split));
    fmt::print("  fused beats RCCL baseline from   {}\n", show(r.m_vs_rccl));
    auto show_aligned = [&](int64_t m) { return m < 0 ? std::string("no M") : fmt::format("M >= {}", m); };
    fmt::print("  at M that are multiples of {} only (no padding rows): beats split-sdma from {}, RCCL from {}\n", smallest,
               show_aligned(r.m_vs_split_aligned), show_aligned(r.m_vs_rccl_aligned));
    fmt::print("  serving threshold chosen by hand M >= {} (SGLang _MIN_FUSED_M, {} wire)\n", hand, be->wire);
    if (has_band) {
      auto text = [](int64_t m) { return m < 0 ? std::string("at no M of the curve") : fmt::format("from M >= {}", m); };
      fmt::print("  each time below is +-{:.1f}% at 95% (the hardware file's calibration residuals); fused wins by more "
                 "than that over split-sdma {}, over RCCL {}\n", band, text(clear_win("split_us")), text(clear_win("rccl_us")));
    }
    fmt::print("  {:>7} {:>10} {:>10} {:>10}\n", "M", "fused_us", "split_us", "rccl_us");
    for (const auto& p : curve)
      fmt::print("  {:>7} {:>10.1f} {:>10.1f} {:>10.1f}\n", p["m"].get<int64_t>(), p["fused_us"].get<double>(),
                 p["split_us"].get<double>(), p["rccl_us"].get<double>());
  });

  auto* calibrate = app.add_subcommand("calibrate", "fit the model to measurements; run probes or the real benchmark on a live node");
  calibrate->require_subcommand(1);
  register_calibrate_commands(*calibrate);
}

}  // namespace fusesim::cli
