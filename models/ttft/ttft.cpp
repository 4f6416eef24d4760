// The ttft model: a layer's predicted change (two gemm_ar arms) composed into a prefill's TTFT, and
// the layer counts a scenario fits on its measured rows (layer_fits). Its spec is at the end.
#include "models/ttft/ttft.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"
#include "hw/numbers.hpp"
#include "models/model.hpp"

namespace fusesim::models {
using hw::FileError;

namespace {
const CaseSchema& ttft_case_schema() {
  static const CaseSchema schema{
      "ttft",
      {CaseParam::mapping("base", "gemm_ar parameters of the layer as it runs today, without m (each chunk sets it)")
           .required()
           .expecting("a mapping of gemm_ar parameters"),
       CaseParam::mapping("fused", "gemm_ar parameters of the fused layer, without m").required().expecting("a mapping of gemm_ar parameters"),
       CaseParam::dimension("prompt_tokens", "tokens per request").required(),
       CaseParam::dimension("batch", "requests in the batch").required(),
       CaseParam::dimension("chunk_tokens", "chunked-prefill size (M of each call)").required(),
       CaseParam::node("layers", "layers that run the fused op per chunk (> 0), or {fit: NAME} of the scenario's layer_fits").required(),
       // A measured time: the bounds every measured time has (hw/numbers.hpp), in ms (1e300 printed a
       // 300-digit prediction).
       CaseParam::number("ttft_base_ms", "the measured baseline TTFT (ms)").required().at_least(hw::kMinMeasuredUs * 1e-3).at_most(hw::kMaxMeasuredUs * 1e-3)}};
  return schema;
}
}  // namespace

nlohmann::json run_ttft_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  const CaseValues v = ttft_case_schema().read(p);
  if (trace)
    throw std::invalid_argument("the ttft model composes layer predictions and has no timeline of its own: trace the layer "
                                "with a gemm_ar scenario (the base or fused parameters of this case, with m = the chunk size)");
  // The two arms are the same layer run two ways: same shape and group; M comes from the chunks.
  for (const char* arm : {"base", "fused"})
    if (v.node(arm)["m"])
      throw ParamError(arm, fmt::format("ttft parameter '{}' sets 'm': M is each chunk's token count (chunk_tokens), "
                                        "not a layer parameter here", arm));
  const double tokens = double(v.integer("prompt_tokens")) * double(v.integer("batch")), chunk = double(v.integer("chunk_tokens"));
  // A count given by hand is whole; a fitted one (layer_fits) is an average over the prompt's calls.
  const YAML::Node ln = v.node("layers");
  if (ln.IsMap())
    throw ParamError("layers", "ttft parameter 'layers' {fit: NAME} is resolved by the scenario's layer_fits; run the case "
                               "through its scenario or give a number");
  double layers = 0;
  if (!ln.IsScalar() || ln.Tag() == "!" || !YAML::convert<double>::decode(ln, layers) || !std::isfinite(layers))
    throw ParamError("layers", fmt::format("ttft parameter 'layers' must be a number, got '{}'", hw::yaml_text(ln)));
  const double base_ms = v.number("ttft_base_ms");
  if (!(layers > 0)) throw ParamError("layers", fmt::format("ttft parameter 'layers' must be > 0 (got {})", layers));  // before any simulation
  constexpr double kMaxChunks = 4096;  // 67M tokens at 16384 per chunk: far beyond any prefill, and ~10 s to simulate
  if (std::ceil(tokens / chunk) > kMaxChunks)
    throw ParamError("batch", fmt::format("ttft parameter 'batch' x 'prompt_tokens' = {} tokens makes {} chunks of {}; at most {} "
                                          "chunks are simulated", tokens, std::ceil(tokens / chunk), chunk, kMaxChunks));
  // One arm's layer call at M rows (the arm's parameters with m set); an error names the arm, so the
  // loader points at its line.
  auto arm_case = [&](const char* arm, int64_t m) {
    YAML::Node q = YAML::Clone(v.node(arm));
    q["m"] = m;
    try {
      return run_gemm_ar_case(hw, q, nullptr);
    } catch (const std::invalid_argument& e) {
      throw ParamError(arm, fmt::format("ttft parameter '{}': {}", arm, e.what()));
    }
  };
  double delta_us = 0, base_layer_us = 0;
  nlohmann::json chunks = nlohmann::json::array(), base_params, fused_params;
  for (double done = 0; done < tokens; done += chunk) {
    const int64_t m = int64_t(std::min(chunk, tokens - done));
    const auto br = arm_case("base", m), fr = arm_case("fused", m);
    if (chunks.empty()) {  // the arms' shapes do not change with M: check them on the first chunk
      base_params = br["params"];
      fused_params = fr["params"];
      for (auto* arm : {&base_params, &fused_params}) arm->erase("m"), arm->erase("m_padded");
      for (const char* key : {"n", "k", "world_size", "quant"})
        if (base_params[key] != fused_params[key])
          throw ParamError("fused", fmt::format("ttft parameter 'fused' runs {} = {} but 'base' {} = {}: both arms must be "
                                                  "the same layer (n, k, world_size, quant)",
                                                  key, fused_params[key].dump(), key, base_params[key].dump()));
    }
    const double b = br["predicted_us"].get<double>(), f = fr["predicted_us"].get<double>();
    delta_us += f - b;
    base_layer_us += b;
    chunks.push_back({{"m", m}, {"base_us", b}, {"fused_us", f}});
  }
  nlohmann::json one{{"params", {{"prompt_tokens", v.integer("prompt_tokens")}, {"batch", v.integer("batch")},
                                  {"chunk_tokens", int64_t(chunk)}, {"layers", 1.0}, {"ttft_base_ms", base_ms},
                                  {"base", base_params}, {"fused", fused_params}}},
                     {"saving_per_layer_forward_us", -delta_us},
                     {"base_layer_forward_us", base_layer_us},
                     {"chunks", chunks},
                     {"phases", nlohmann::json::array()}};
  return ttft_at_layers(one, layers);
}

nlohmann::json ttft_at_layers(const nlohmann::json& one_layer, double layers) {
  nlohmann::json r = one_layer;
  const double base_ms = r["params"]["ttft_base_ms"].get<double>();
  const double delta_us = -r["saving_per_layer_forward_us"].get<double>();
  const double base_layer_us = r["base_layer_forward_us"].get<double>();
  if (!(layers > 0)) throw ParamError("layers", fmt::format("ttft parameter 'layers' must be > 0 (got {})", layers));
  if (layers * base_layer_us >= base_ms * 1e3)
    throw ParamError("ttft_base_ms", fmt::format(
        "ttft parameter 'ttft_base_ms' ({} ms) is shorter than the base arm's {:.4g} layers alone ({:.1f} ms at the model's "
        "{:.1f} us per layer over the prompt): the measured base TTFT, the layer count or the shape is wrong",
        base_ms, layers, layers * base_layer_us / 1e3, base_layer_us));
  const double pred_us = base_ms * 1e3 + layers * delta_us;
  r["params"]["layers"] = layers;
  r["predicted_us"] = pred_us;
  r["ttft_change_pct"] = (pred_us - base_ms * 1e3) / (base_ms * 1e3) * 100;
  r["layer_share_of_ttft_pct"] = layers * base_layer_us / (base_ms * 1e3) * 100;
  return r;
}

std::string LayerFits::fit_name(const std::string& case_id) const {
  const auto it = fit_of.find(case_id);
  return it == fit_of.end() ? std::string() : it->second;
}

LayerFits layer_fits(const Scenario& sc) {
  LayerFits out;
  const YAML::Node lf = sc.section("layer_fits");
  const int key_line = sc.section_line("layer_fits");
  const std::string& path = sc.path;
  auto layers_at = [](const Case& c) { return c.param_location("layers"); };
  auto fit_of = [&](const Case& c) -> std::string {
    const YAML::Node l = c.params["layers"];
    if (!l || !l.IsMap()) return "";
    if (l.size() != 1 || !l["fit"] || !l["fit"].IsScalar()) {
      const auto [line, key] = layers_at(c);
      throw FileError(path, line, key, "expected a number or {fit: NAME} (a name of layer_fits)");
    }
    return l["fit"].Scalar();
  };
  if (lf) {
    if (!lf.IsSequence() || lf.size() == 0)
      throw FileError(path, key_line, "layer_fits", "expected a non-empty list of {name, cases: [ID, ...], source}");
  }
  std::map<std::string, const Case*> by_id;
  for (const auto& c : sc.cases) by_id[c.id] = &c;
  // First the fits' names, so a case naming no fit is reported as such before any fit's rows are read.
  for (size_t i = 0; lf && i < lf.size(); ++i) {
    const YAML::Node e = lf[i];
    const std::string key = fmt::format("layer_fits[{}]", i);
    if (!e.IsMap()) throw FileError(path, hw::yaml_line(e), key, "expected {name, cases: [ID, ...], source}");
    hw::check_keys(e, {"name", "cases", "source", "nominal", "nominal_source", "max_layers"}, path, key);
    for (const char* k : {"name", "cases", "source"})
      if (!e[k]) throw FileError(path, hw::yaml_line(e), key + "." + k, "missing");
    LayerFit f;
    f.name = hw::yaml_field(e["name"], path, key + ".name", "a name");
    f.source = hw::yaml_field(e["source"], path, key + ".source", "why the count is fitted (text)");
    f.line = hw::yaml_line(e);
    if (e["nominal"]) {
      f.nominal = hw::yaml_number(e["nominal"], path, key + ".nominal");
      if (!(f.nominal > 0)) throw FileError(path, hw::yaml_line(e["nominal"]), key + ".nominal", "must be > 0 (the count one would assume)");
      if (!e["nominal_source"])
        throw FileError(path, hw::yaml_line(e["nominal"]), key + ".nominal_source", "missing (where the nominal count comes from)");
      f.nominal_source = hw::yaml_field(e["nominal_source"], path, key + ".nominal_source", "a source (text)");
    } else if (e["nominal_source"]) {
      throw FileError(path, hw::yaml_line(e["nominal_source"]), key + ".nominal", "missing (nominal_source without a nominal count)");
    }
    if (e["max_layers"]) {
      f.max_layers = hw::yaml_number(e["max_layers"], path, key + ".max_layers");
      if (!(f.max_layers > 0)) throw FileError(path, hw::yaml_line(e["max_layers"]), key + ".max_layers", "must be > 0");
    }
    for (const auto& g : out.fits)
      if (g.name == f.name) throw FileError(path, f.line, key + ".name", fmt::format("fit '{}' is named twice (also on line {})", f.name, g.line));
    out.fits.push_back(f);
  }
  std::set<std::string> used;
  for (const auto& c : sc.cases) {
    const std::string name = fit_of(c);
    if (name.empty()) continue;
    out.fit_of[c.id] = name;
    if (std::none_of(out.fits.begin(), out.fits.end(), [&](const auto& f) { return f.name == name; })) {
      std::vector<std::string> names;
      for (const auto& f : out.fits) names.push_back(f.name);
      const auto [line, key] = layers_at(c);
      throw FileError(path, line, key,
                      names.empty() ? fmt::format("no layer fit named '{}': this scenario has no layer_fits", name)
                                    : fmt::format("no layer fit named '{}' (layer_fits names: {})", name, fmt::join(names, ", ")));
    }
    used.insert(name);
  }
  for (size_t i = 0; lf && i < lf.size(); ++i) {
    const YAML::Node e = lf[i];
    const std::string key = fmt::format("layer_fits[{}]", i);
    LayerFit& f = out.fits[i];
    if (!used.count(f.name)) throw FileError(path, f.line, key, fmt::format("fit '{}' is used by no case", f.name));
    if (!e["cases"].IsSequence() || e["cases"].size() == 0)
      throw FileError(path, hw::yaml_line(e["cases"]), key + ".cases", "expected a non-empty list of case ids");
    for (size_t j = 0; j < e["cases"].size(); ++j) {
      const std::string ckey = fmt::format("{}.cases[{}]", key, j);
      const std::string id = hw::yaml_field(e["cases"][j], path, ckey, "a case id");
      const auto c = by_id.find(id);
      if (c == by_id.end()) throw FileError(path, hw::yaml_line(e["cases"][j]), ckey, fmt::format("no case '{}' in this scenario", id));
      if (!c->second->measured || !c->second->measured->value_us)
        throw FileError(path, hw::yaml_line(e["cases"][j]), ckey, fmt::format("case '{}' has no measured value to fit on", id));
      if (!c->second->measured->known_miss.empty())
        throw FileError(path, hw::yaml_line(e["cases"][j]), ckey,
                        fmt::format("case '{}' is a known miss: a point the model is known not to reach cannot be fitted on", id));
      if (out.fit_name(id) != f.name) {
        const auto [line, lkey] = layers_at(*c->second);
        const YAML::Node l = c->second->params["layers"];
        throw FileError(path, line, lkey,
                        fmt::format("row '{}' is listed by {} (fit '{}'), so it must take that count: layers: {{fit: {}}} (it has {})", id,
                                    ckey, f.name, f.name, l ? "'" + hw::yaml_text(l) + "'" : "none"));
      }
      if (out.fitted_on.count(id))
        throw FileError(path, hw::yaml_line(e["cases"][j]), ckey, fmt::format("case '{}' is listed twice", id));
      out.fitted_on.insert(id);
      f.cases.push_back(id);
    }
  }
  return out;
}

std::string layer_fit_summary(const nlohmann::json& s) {
  auto part = [](const nlohmann::json& h) {
    return h["compared"].get<int>() == 0 ? std::string("none compared")
                                         : fmt::format("{} compared, median |error| {:.2f}%, max {:.2f}%", h["compared"].get<int>(),
                                                       h["median_abs_error_pct"].get<double>(), h["max_abs_error_pct"].get<double>());
  };
  const int fits = s["layer_fits"].get<int>();
  return fmt::format("held out by the {} layer fit{} (the test): {}; fitted on (match partly by construction): {}", fits,
                     fits == 1 ? "" : "s", part(s["held_out"]), part(s["fitted_on"]));
}

namespace {
/// A scenario run with layer fits: every case that takes a fitted count runs once with one layer
/// (ttft_at_layers recomposes it at the fitted count); each count is the least-squares solution on the
/// TTFT change (as a fraction of the base TTFT) of its listed rows: L = sum(a y) / sum(a a), a = the
/// layer's change per forward / base TTFT, y = the measured change / base TTFT.
class LayerFitRun : public ScenarioRun {
 public:
  LayerFitRun(const Scenario& sc, LayerFits lf, const CaseRunner& run_case, const std::function<bool(const Case&)>& selected,
              std::vector<std::string>& warnings)
      : sc_(sc), lf_(std::move(lf)) {
    // Each fit's rows, as (a, y) pairs, and the largest |saving| among them.
    struct FitRows {
      std::vector<std::pair<double, double>> ay;
      double max_saving = 0;
    };
    std::map<std::string, FitRows> rows;
    for (const auto& c : sc.cases) {
      const std::string fit = lf_.fit_name(c.id);
      const bool fitted_on = lf_.fitted_on.count(c.id) != 0;
      if (fit.empty() || (!fitted_on && !selected(c))) continue;
      YAML::Node one = YAML::Clone(c.params);
      one["layers"] = 1;
      const nlohmann::json& r = one_layer_[c.id] = run_case(c, one, nullptr);
      if (!fitted_on) continue;
      const double base_us = r["params"]["ttft_base_ms"].get<double>() * 1e3;
      const double saving = r["saving_per_layer_forward_us"].get<double>();
      FitRows& fr = rows[fit];
      fr.ay.push_back({-saving / base_us, (*c.measured->value_us - base_us) / base_us});
      fr.max_saving = std::max(fr.max_saving, std::fabs(saving));
    }
    for (const auto& f : lf_.fits) {
      const std::string key = fit_key(f);
      const auto& [ay, max_saving] = rows.at(f.name);
      double sum_ay = 0, sum_aa = 0;
      for (const auto& [a, y] : ay) {
        sum_ay += a * y;
        sum_aa += a * a;
      }
      // A layer whose two arms differ by less than a picosecond per forward changes nothing: the
      // quotient would only scale floating-point noise.
      if (max_saving < 1e-6)
        throw FileError(sc.path, f.line, key, fmt::format("fit '{}': the model's layer changes nothing on its rows (base and fused arms "
                                                          "predict the same time), so no layer count can be fitted", f.name));
      const double layers = sum_ay / sum_aa;
      if (layers == 0)
        throw FileError(sc.path, f.line, key, fmt::format("fit '{}': its measured rows show no TTFT change, so the fitted count is 0", f.name));
      if (!(layers > 0))
        throw FileError(sc.path, f.line, key,
                        fmt::format("fit '{}' gives {:.3g} layers: the measured rows move TTFT the other way from the model's "
                                    "layer change", f.name, layers));
      double ss = 0;
      for (const auto& [a, y] : ay) ss += (layers * a - y) * (layers * a - y);
      fits_[f.name] = {layers, std::sqrt(ss / double(ay.size())) * 100, &f};
      if (f.cases.size() < 2)
        warnings.push_back(fmt::format("layer fit '{}' is fitted on 1 row: that row matches by construction", f.name));
      if (std::none_of(sc.cases.begin(), sc.cases.end(),
                       [&](const Case& c) { return lf_.fit_name(c.id) == f.name && !lf_.fitted_on.count(c.id); }))
        warnings.push_back(fmt::format("layer fit '{}' holds out no row: every row that uses it is fitted on", f.name));
      if (f.max_layers > 0 && layers > f.max_layers)
        warnings.push_back(fmt::format("layer fit '{}' gives {:.1f} layers, above its max_layers {:.4g}", f.name, layers, f.max_layers));
    }
  }

  std::optional<nlohmann::json> result(const Case& c) override {
    const FitResult* fit = fit_for(c);
    if (!fit) return std::nullopt;
    try {
      return ttft_at_layers(one_layer_.at(c.id), fit->layers);
    } catch (const std::invalid_argument& e) {
      throw FileError(sc_.path, fit->fit->line, fit_key(*fit->fit),
                      fmt::format("fit '{}' gives {:.1f} layers, too many for row '{}': {}", fit->fit->name, fit->layers, c.id, e.what()));
    }
  }

  void annotate(const Case& c, nlohmann::json& out) override {
    const FitResult* fit = fit_for(c);
    if (!fit) return;
    out["layers_fit"] = {{"name", fit->fit->name}, {"layers", fit->layers}, {"fitted_on", fit->fit->cases},
                         {"rms_points", fit->rms_points}, {"source", fit->fit->source},
                         {"row", lf_.fitted_on.count(c.id) ? "fitted" : "held out"}};
    if (fit->fit->nominal > 0)
      out["layers_fit"]["nominal"] = {{"layers", fit->fit->nominal}, {"source", fit->fit->nominal_source},
                                      {"scale", fit->layers / fit->fit->nominal}};
  }

  void compared(const Case& c, double abs_err_pct) override {
    if (fit_for(c)) (lf_.fitted_on.count(c.id) ? fitted_errs_ : held_errs_).push_back(abs_err_pct);
  }

  void summarize(nlohmann::json& summary) override {
    auto stats = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      const size_t n = v.size();
      nlohmann::json h{{"compared", n}, {"median_abs_error_pct", nullptr}, {"max_abs_error_pct", nullptr}};
      if (n) {
        h["median_abs_error_pct"] = median(v);
        h["max_abs_error_pct"] = v.back();
      }
      return h;
    };
    summary["held_out"] = stats(held_errs_);
    summary["fitted_on"] = stats(fitted_errs_);
    summary["layer_fits"] = lf_.fits.size();
  }

 private:
  struct FitResult {
    double layers = 0, rms_points = 0;
    const LayerFit* fit = nullptr;
  };
  const FitResult* fit_for(const Case& c) const {
    const std::string name = lf_.fit_name(c.id);
    return name.empty() ? nullptr : &fits_.at(name);
  }
  std::string fit_key(const LayerFit& f) const { return fmt::format("layer_fits[{}]", &f - lf_.fits.data()); }

  const Scenario& sc_;
  const LayerFits lf_;
  std::map<std::string, FitResult> fits_;
  std::map<std::string, nlohmann::json> one_layer_;  // case id -> its result at one layer
  std::vector<double> held_errs_, fitted_errs_;
};
}  // namespace

const ModelSpec& ttft_spec() {
  static const ModelSpec spec = [] {
    // The hardware is gemm_ar's: the model runs gemm_ar layers.
    ModelSpec s{"ttft", "a layer's predicted change (two gemm_ar arms) composed into a prefill's time to first token",
                "seeds 001/002 (SGLang serving of DeepSeek-V4 on MI355X); the layer by the gemm_ar model",
                reads_of(gemm_ar_hardware()), listing_of(ttft_case_schema()), run_ttft_case};
    s.scenario_sections = {{"layer_fits", "fits a layer count"}};
    s.check_scenario = [](const Scenario& sc) { (void)layer_fits(sc); };
    s.begin_run = [](const Scenario& sc, const CaseRunner& run_case, const std::function<bool(const Case&)>& selected,
                     std::vector<std::string>& warnings) -> std::unique_ptr<ScenarioRun> {
      LayerFits lf = layer_fits(sc);
      if (lf.fits.empty()) return nullptr;
      return std::make_unique<LayerFitRun>(sc, std::move(lf), run_case, selected, warnings);
    };
    // A TTFT row predicts only the change of its layers (the base TTFT is measured): the band applies to it.
    s.interval = [](const nlohmann::json& res, double band, nlohmann::json& out) {
      const double p = res["predicted_us"].get<double>();
      if (res.contains("saving_per_layer_forward_us") && res["params"].contains("ttft_base_ms")) {
        const double delta = p - res["params"]["ttft_base_ms"].get<double>() * 1e3;
        out["interval_us"] = {p - std::fabs(delta) * band, p + std::fabs(delta) * band};
        out["interval_of"] = "the predicted TTFT change";
      } else {
        out["interval_us"] = {p * (1 - band), p * (1 + band)};
      }
    };
    // How many layers (fused calls per chunk) the measured change would take at the model's per-layer
    // saving: a diagnostic next to the scenario's stated layer count, not a fit.
    s.on_measured = [](const nlohmann::json& res, double meas, nlohmann::json& out) {
      if (res.contains("saving_per_layer_forward_us") && res["saving_per_layer_forward_us"].get<double>() > 0 &&
          res["params"].contains("ttft_base_ms"))
        out["measured_implies_layers"] = (res["params"]["ttft_base_ms"].get<double>() * 1e3 - meas) /
                                         res["saving_per_layer_forward_us"].get<double>();
    };
    s.check_fit_input = [](const Scenario& sc) {
      // The count would absorb any change of the per-layer prediction.
      const LayerFits lf = layer_fits(sc);
      if (!lf.fits.empty())
        throw FileError(sc.path, lf.fits.front().line, "layer_fits",
                        "this scenario fits its own layer counts on its measured rows, so its rows cannot fit hardware "
                        "values (the count would absorb them); fit on the layer scenarios (e.g. "
                        "scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml) instead");
    };
    // A row a layer count was fitted on matches partly by construction: said on the row itself.
    s.row_note = [](const nlohmann::json& c) {
      if (!c.contains("layers_fit")) return std::string();
      return c["layers_fit"]["row"] == "fitted" ? fmt::format("  fitted on (layer fit '{}')", c["layers_fit"]["name"].get<std::string>())
                                                : std::string("  held out");
    };
    s.row_lines = [](const nlohmann::json& c) {
      std::vector<std::string> lines;
      if (!c.contains("saving_per_layer_forward_us")) return lines;
      const auto& cp = c["params"];
      const double saving = c["saving_per_layer_forward_us"].get<double>();
      std::string layers = fmt::format("{:.0f} layers", cp["layers"].get<double>());
      if (c.contains("layers_fit")) {
        const auto& f = c["layers_fit"];
        const size_t n = f["fitted_on"].size();
        layers = fmt::format("{:.1f} layers fitted (fit '{}' on {} row{}, rms {:.2f} points{})", f["layers"].get<double>(),
                             f["name"].get<std::string>(), n, n == 1 ? "" : "s", f["rms_points"].get<double>(),
                             f.contains("nominal") ? fmt::format("; {:.2f} x the nominal {:.4g}", f["nominal"]["scale"].get<double>(),
                                                                 f["nominal"]["layers"].get<double>())
                                                   : "");
      }
      std::string t = fmt::format("the layer {} {:.1f} us over the prompt's {} chunk(s); {}; the base arm's layers over the "
                                  "prompt are {:.1f}% of the base TTFT", saving < 0 ? "costs" : "saves", std::fabs(saving) < 0.05 ? 0.0 : std::fabs(saving),
                                  c["chunks"].size(), layers, c["layer_share_of_ttft_pct"].get<double>());
      if (c.contains("measured_implies_layers"))
        t += fmt::format("; the measured change would take {:.1f} layers", c["measured_implies_layers"].get<double>());
      lines.push_back("serving: " + t);
      return lines;
    };
    // TTFT: the band is on the predicted change, not the measured base.
    s.interval_line = [](const nlohmann::json& c0) -> std::optional<std::string> {
      if (!c0.contains("interval_of")) return std::nullopt;
      return fmt::format("(95% interval: +-{:.1f}% of each row's predicted TTFT change, from the hardware file's calibration "
                         "residuals over the points it was fitted on, which do not cover other shapes or world sizes; the base "
                         "TTFT is measured)",
                         (c0["interval_us"][1].get<double>() - c0["predicted_us"].get<double>()) /
                             std::fabs(c0["predicted_us"].get<double>() - c0["params"]["ttft_base_ms"].get<double>() * 1e3) * 100);
    };
    s.summary_lines = [](const nlohmann::json& summary) {
      return summary.contains("held_out") ? std::vector<std::string>{layer_fit_summary(summary)} : std::vector<std::string>{};
    };
    s.check_extras = [](const nlohmann::json& summary) {
      CheckExtras x;
      if (summary.contains("held_out")) x.lines.push_back(layer_fit_summary(summary));
      return x;
    };
    s.csv_columns = {
        {"layers",
         [](const nlohmann::json& c) {
           const bool ttft = c.contains("saving_per_layer_forward_us") && c.contains("params") && c["params"].contains("layers");
           return ttft ? fmt::format("{:.3f}", c["params"]["layers"].get<double>()) : std::string();
         }},
        {"layers_row", [](const nlohmann::json& c) {
           return c.contains("layers_fit") ? csv_quoted(c["layers_fit"]["row"].get<std::string>()) : std::string();
         }}};
    return s;
  }();
  return spec;
}

}  // namespace fusesim::models
