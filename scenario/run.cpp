// Running: every selected case through its model's spec, compared with its measured values.
#include "scenario/run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"

namespace fusesim::scenario {
using hw::FileError;
using models::Case;
using models::median;

namespace {
/// The spec of the scenario's model. Errors: hw::FileError at `model:` for an unknown name.
const models::ModelSpec& spec_of(const models::Scenario& sc) {
  if (const models::ModelSpec* s = models::find_spec(sc.model)) return *s;
  std::vector<std::string> names;
  for (const models::ModelSpec* s : models::specs()) names.push_back(s->name);
  std::sort(names.begin(), names.end());
  throw FileError(sc.path, 1, "model", fmt::format("unknown model '{}' (expected one of: {})", sc.model, fmt::join(names, ", ")));
}

/// The hardware must set every parameter the model requires: found before any case runs, rather
/// than mid-simulation; then the model's own checks of the hardware.
void check_hardware(const models::Scenario& sc, const models::ModelSpec& spec, const hw::Hardware& hw) {
  std::vector<std::string> missing;
  for (const auto& k : models::required_hardware_keys(sc.model, hw))
    if (!hw.has(k)) missing.push_back(k);
  if (!missing.empty()) {
    constexpr size_t kShown = 10;
    std::string list = fmt::format("{}", fmt::join(missing.begin(), missing.begin() + std::min(missing.size(), kShown), ", "));
    const std::string file = hw.path().empty() ? hw.name() : hw.path();
    std::string more;
    if (missing.size() > kShown) {
      list += fmt::format(" and {} more", missing.size() - kShown);
      more = fmt::format("; `fusesim params {}` lists them all", file);
    }
    throw FileError(sc.path, sc.hardware_line, "hardware",
                    fmt::format("{} lacks {} (required by the {} model{}; is this the right hardware file?)", file, list, sc.model, more));
  }
  if (spec.check_hardware) {
    try {
      spec.check_hardware(hw);
    } catch (const std::invalid_argument& e) {
      throw FileError(sc.path, sc.hardware_line, "hardware", e.what());
    }
  }
}
}  // namespace

nlohmann::json run(const models::Scenario& sc, const hw::Hardware& hw, const RunOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const models::ModelSpec& spec = spec_of(sc);
  check_hardware(sc, spec, hw);
  // One case through the model, its refusals named at the line of the parameter they are about.
  const models::CaseRunner run_case = [&](const Case& c, const YAML::Node& params, sim::TraceSink* trace) {
    try {
      return spec.run(hw, params, trace);
    } catch (const models::ParamError& e) {
      int line = c.line;
      std::string where = "cases[" + c.id + "]";
      const auto pl = c.param_lines.find(e.key());
      if (pl != c.param_lines.end() && pl->second.first > 0) std::tie(line, where) = c.param_location(e.key());
      throw FileError(sc.path, line, where, e.what());
    } catch (const std::invalid_argument& e) {
      throw FileError(sc.path, c.line, "cases[" + c.id + "]", e.what());
    } catch (const std::out_of_range& e) {
      // A lookup the hardware file cannot serve for this case (e.g. a GEMM shape its measured table
      // lacks): named at the case, with the table's own message.
      throw FileError(sc.path, c.line, "cases[" + c.id + "]", std::string("cannot run this case: ") + e.what());
    } catch (const FileError&) {
      throw;
    } catch (const std::runtime_error& e) {
      // The simulation's own limits (its event budget, a simulated time past SystemC's clock): named
      // at the case that hit them.
      throw FileError(sc.path, c.line, "cases[" + c.id + "]", std::string("cannot run this case: ") + e.what());
    }
  };
  const std::function<bool(const Case&)> selected = [&](const Case& c) {
    return opt.only.empty() || c.id.find(opt.only) != std::string::npos;
  };
  std::vector<std::string> warnings;
  const std::unique_ptr<models::ScenarioRun> state = spec.begin_run ? spec.begin_run(sc, run_case, selected, warnings) : nullptr;
  nlohmann::json cases = nlohmann::json::array();
  std::vector<double> errs;
  int outside = 0, known = 0, unexpected = 0;
  // Case by case in file order, each made from its index when the scenario was loaded unexpanded
  // (a sweep's first case runs, and its error shows, before the rest are made).
  const uint64_t ncases = sc.case_count();
  for (uint64_t ci = 0; ci < ncases; ++ci) {
    const Case c = sc.case_at(ci);
    if (!selected(c)) continue;
    if (opt.trace) opt.trace->set_prefix(c.id + ":");
    std::optional<nlohmann::json> given = state ? state->result(c) : std::nullopt;
    const nlohmann::json res = given ? std::move(*given) : run_case(c, c.params, opt.trace);
    nlohmann::json out{{"id", c.id}};
    for (auto& [k, v] : res.items()) out[k] = v;
    if (state) state->annotate(c, out);
    if (hw.calibration() && hw.calibration()->residual_rms_pct > 0) {
      // 95% interval from the calibration's residuals: +-1.96 x the RMS relative error of its fit.
      const double s = 1.96 * hw.calibration()->residual_rms_pct / 100.0;
      if (spec.interval) {
        spec.interval(res, s, out);
      } else {
        const double p = res["predicted_us"].get<double>();
        out["interval_us"] = {p * (1 - s), p * (1 + s)};
      }
    }
    out["measured_us"] = nullptr;
    out["error_pct"] = nullptr;
    out["within_tolerance"] = nullptr;
    out["tolerance_pct"] = c.tolerance_pct;
    if (c.measured) {
      out["source"] = c.measured->source;
      if (c.measured->value_us) {
        const double meas = *c.measured->value_us;
        double pred = res["predicted_us"].get<double>();
        if (c.measured->metric == "period_us") {
          if (!res.contains("extra") || !res["extra"].contains("period_us"))
            throw FileError(sc.path, c.line, "cases[" + c.id + "].measured.period_us", "this model reports no period");
          pred = res["extra"]["period_us"].get<double>();
          out["compared_metric"] = "period_us";
          // predicted_us is what was compared, in every output format; the model's own prediction
          // stays alongside, under its name (AFD: the exchange time).
          out[spec.primary_metric] = res["predicted_us"];
          out["predicted_us"] = pred;
        }
        const double err = (pred - meas) / meas * 100.0;
        out["measured_us"] = meas;
        out["error_pct"] = err;
        const bool ok = std::fabs(err) <= c.tolerance_pct;
        out["within_tolerance"] = ok;
        if (c.measured->known_miss.empty()) {
          outside += !ok;
        } else {
          out["known_miss"] = c.measured->known_miss;
          known += !ok;
          unexpected += ok;
        }
        errs.push_back(std::fabs(err));
        if (state) state->compared(c, std::fabs(err));
        if (spec.on_measured) spec.on_measured(res, meas, out);
      }
      for (const auto& [name, v] : c.measured->phases_us) {
        bool known = false;
        for (const auto& ph : out["phases"]) known = known || ph["name"] == name;
        if (!known) {
          std::string have;
          for (const auto& ph : out["phases"]) have += (have.empty() ? "" : ", ") + ph["name"].get<std::string>();
          throw FileError(sc.path, c.line, "cases[" + c.id + "].measured_phases." + name,
                          fmt::format("the model reports no phase '{}' for this case (it reports: {})", name, have));
        }
      }
      for (auto& ph : out["phases"]) {
        auto m = c.measured->phases_us.find(ph["name"].get<std::string>());
        if (m == c.measured->phases_us.end()) continue;
        const double d = ph["end_us"].get<double>() - ph["start_us"].get<double>();
        ph["measured_us"] = m->second;
        ph["error_pct"] = (d - m->second) / m->second * 100.0;
      }
    }
    // A measured timeline: each kernel's measured duration beside the predicted phase of the same
    // "devN/KERNEL" name (which of them are judged is the model's: ModelSpec::judge).
    if (c.measured)
      for (const auto& k : c.measured->kernels)
        for (auto& ph : out["phases"])
          if (ph["name"].get<std::string>() == k.name()) {
            const double d = ph["end_us"].get<double>() - ph["start_us"].get<double>();
            ph["measured_us"] = k.duration_us;
            ph["error_pct"] = (d - k.duration_us) / k.duration_us * 100.0;
          }
    cases.push_back(std::move(out));
  }
  if (!opt.only.empty() && cases.empty())
    throw std::invalid_argument(fmt::format("--only '{}': no case id of '{}' contains it", opt.only, sc.path));
  std::sort(errs.begin(), errs.end());
  nlohmann::json summary{{"compared", errs.size()}, {"outside_tolerance", outside}, {"known_misses", known},
                         {"unexpected_passes", unexpected}};
  if (errs.empty()) {
    summary["median_abs_error_pct"] = nullptr;
    summary["max_abs_error_pct"] = nullptr;
  } else {
    summary["median_abs_error_pct"] = median(errs);
    summary["max_abs_error_pct"] = errs.back();
  }
  if (state) state->summarize(summary);
  summary["warnings"] = warnings;
  nlohmann::json result{{"scenario", sc.name}, {"hardware", hw.name()}, {"hardware_file", sc.hardware_path},
                        {"model", sc.model}, {"cases", cases}, {"summary", summary}};
  if (spec.judge) spec.judge(sc, result);
  result["summary"]["runtime_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

std::vector<models::ComparedPoint> compared_points(const nlohmann::json& res) {
  std::vector<models::ComparedPoint> out;
  for (const auto& c : res["cases"])
    if (c.contains("measured_us") && !c["measured_us"].is_null())
      out.push_back({c["id"].get<std::string>(), c.value("compared_metric", std::string("predicted_us")),
                     c["measured_us"].get<double>(), c["predicted_us"].get<double>()});
  return out;
}

}  // namespace fusesim::scenario
