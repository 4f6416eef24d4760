// The knob search of `fusesim tune` (scenario/tune.hpp).
#include "scenario/tune.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "hw/printable.hpp"
#include <fmt/ranges.h>

#include "models/gemm_ar/breakeven.hpp"

namespace fusesim::scenario {
using nlohmann::json;

namespace {

/// A JSON scalar as a YAML scalar node of the same type (programmatic: never quoted).
YAML::Node yaml_of(const json& v) {
  YAML::Node n;
  if (v.is_boolean()) n = v.get<bool>();
  else if (v.is_number_integer()) n = v.get<int64_t>();
  else if (v.is_number()) n = v.get<double>();
  else if (v.is_string()) n = v.get<std::string>();
  else n = v.dump();
  return n;
}

/// The ladder 1, 2, 3, 4, 6, 8, 12, ... within [lo, hi] (powers of two and 1.5 x them), with lo itself.
std::vector<json> ladder(int64_t lo, int64_t hi) {
  std::set<int64_t> v;
  if (lo <= hi) v.insert(lo);
  for (int64_t p = 1; p <= hi && p > 0; p *= 2) {
    if (p >= lo) v.insert(p);
    const int64_t q = p + p / 2;
    if (p >= 2 && q >= lo && q <= hi) v.insert(q);
  }
  return {v.begin(), v.end()};
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// "k=v k=v" of the knobs off their default (the defaults' text when none).
std::string setting_text(const json& setting, const std::vector<Knob>& knobs) {
  std::string t;
  for (const auto& k : knobs) {
    if (!setting.contains(k.key) || setting[k.key] == k.fallback) continue;
    t += (t.empty() ? "" : " ") + k.key + "=" + value_text(setting[k.key]);
  }
  return t.empty() ? "(defaults)" : t;
}

/// One evaluated setting at one shape and M.
struct Eval {
  bool ok = false;
  double us = std::numeric_limits<double>::infinity();
  json interval;  ///< [lo, hi] or null
  json params;    ///< the params the model reports
  std::string why;
};

/// Runs settings of one shape through the model, each once (memoised by its text).
class Evaluator {
 public:
  /// `max_entries`: the most settings cached (tune checked the worst case against it before it
  /// started; past it is an error, never unbounded memory). `keep_params`: keep the params each
  /// setting's result reports (the threshold's padding step), otherwise dropped to keep the cache small.
  Evaluator(const models::ModelSpec& spec, const hw::Hardware& hw, json base, int64_t max_entries, bool keep_params = false)
      : spec_(spec), hw_(hw), base_(std::move(base)), max_entries_(max_entries), keep_params_(keep_params) {
    if (hw.calibration() && hw.calibration()->residual_rms_pct > 0) s_ = 1.96 * hw.calibration()->residual_rms_pct / 100.0;
  }
  /// The model's result for base + setting (the setting's keys replace the base's).
  const Eval& at(const json& setting) {
    json p = base_;
    for (auto& [k, v] : setting.items()) p[k] = v;
    const std::string key = p.dump();
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    if (int64_t(cache_.size()) >= max_entries_)
      throw std::runtime_error(fmt::format("tune: more than {} settings evaluated at one shape and M (--max-evaluations)", max_entries_));
    Eval e;
    try {
      YAML::Node y(YAML::NodeType::Map);
      for (auto& [k, v] : p.items()) y[k] = yaml_of(v);
      const json res = spec_.run(hw_, y, nullptr);
      e.ok = true;
      e.us = res["predicted_us"].get<double>();
      if (keep_params_) e.params = res.value("params", json::object());
      if (s_ > 0) {
        json out;
        if (spec_.interval) spec_.interval(res, s_, out);
        else out["interval_us"] = {e.us * (1 - s_), e.us * (1 + s_)};
        e.interval = out.value("interval_us", json());
      }
      ++feasible_;
    } catch (const std::invalid_argument& x) {  // models::ParamError too: a setting the model refuses
      e.why = x.what();
    } catch (const std::out_of_range& x) {
      e.why = x.what();
    }
    return cache_.emplace(key, std::move(e)).first->second;
  }
  int64_t evaluations() const { return int64_t(cache_.size()); }
  int64_t refused() const { return int64_t(cache_.size()) - feasible_; }
  double band_s() const { return s_; }
  /// Every feasible evaluation: (us, full params).
  std::vector<std::pair<double, json>> feasible() const {
    std::vector<std::pair<double, json>> v;
    for (const auto& [k, e] : cache_)
      if (e.ok) v.push_back({e.us, json::parse(k)});
    return v;
  }

 private:
  const models::ModelSpec& spec_;
  const hw::Hardware& hw_;
  json base_;
  double s_ = 0;
  int64_t max_entries_;
  bool keep_params_;
  std::map<std::string, Eval> cache_;
  int64_t feasible_ = 0;
};

/// A setting: the fixed parameters and each knob's value at `idx`.
json setting_of(const std::vector<Knob>& knobs, const std::vector<size_t>& idx, const json& fixed) {
  json s = fixed;
  for (size_t i = 0; i < knobs.size(); ++i) s[knobs[i].key] = knobs[i].values[idx[i]];
  return s;
}

}  // namespace

std::vector<Knob> knob_space(const models::CaseSchema& schema, const TuneOptions& opt) {
  std::vector<Knob> out;
  std::set<std::string> knob_keys;
  for (const auto& p : schema.params()) {
    if (!p.knob) continue;
    knob_keys.insert(p.key);
    Knob k{p.key, {}, p.fallback ? *p.fallback : json()};
    using K = models::CaseParam::Kind;
    std::vector<json> allowed;
    if (p.kind == K::Name) {
      for (const auto& c : p.choices)
        if (std::find(p.not_searched.begin(), p.not_searched.end(), c) == p.not_searched.end()) allowed.push_back(c);
    } else if (p.kind == K::Flag) {
      allowed = {false, true};
    } else if (p.kind == K::Integer || p.kind == K::Integer64) {
      const int64_t lo = p.min ? int64_t(std::ceil(*p.min + (p.min_exclusive ? 1 : 0))) : 1;
      allowed = ladder(std::max<int64_t>(lo, 1), p.max ? int64_t(*p.max) : 4096);
      // The default is a candidate too (e.g. 0: the model's own rule), when the range allows it.
      if (p.fallback && p.fallback->is_number_integer() && p.fallback->get<int64_t>() >= lo &&
          std::find(allowed.begin(), allowed.end(), *p.fallback) == allowed.end())
        allowed.insert(allowed.begin(), *p.fallback);
    } else {
      throw std::invalid_argument(fmt::format("{} parameter '{}' is marked a knob but is not a word, flag or integer", schema.owner(), p.key));
    }
    if (const auto r = opt.values.find(p.key); r != opt.values.end()) {
      for (const auto& v : r->second) {
        bool fits = false;
        if (p.kind == K::Name) fits = v.is_string() && std::find(p.choices.begin(), p.choices.end(), v.get<std::string>()) != p.choices.end();
        else if (p.kind == K::Flag) fits = v.is_boolean();
        else fits = v.is_number_integer() && (!p.min || v.get<double>() >= *p.min) && (!p.max || v.get<double>() <= *p.max);
        if (!fits)
          throw std::invalid_argument(fmt::format("--values {}: {} is not a value {} parameter '{}' allows ({})", p.key, value_text(v),
                                                  schema.owner(), p.key, p.meaning));
      }
      allowed = r->second;
    }
    if (opt.fixed.contains(p.key)) {
      // A value the schema leaves out of every search (gemm_ar's gemm-only does no all-reduce) is not
      // a setting of the same call either when the user holds it: it would "win" against the baseline.
      const json& v = opt.fixed[p.key];
      if (v.is_string() && std::find(p.not_searched.begin(), p.not_searched.end(), v.get<std::string>()) != p.not_searched.end())
        throw std::invalid_argument(fmt::format("--fix {}={}: the {} model leaves this value out of the search ({}): it is not a setting of the "
                                                "call the baseline makes",
                                                p.key, v.get<std::string>(), schema.owner(), p.meaning));
      continue;
    }
    if (!opt.only.empty() && std::find(opt.only.begin(), opt.only.end(), p.key) == opt.only.end()) continue;
    if (opt.baseline.contains(p.key))
      allowed.erase(std::remove(allowed.begin(), allowed.end(), opt.baseline[p.key]), allowed.end());
    if (allowed.empty()) continue;
    k.values = allowed;
    out.push_back(std::move(k));
  }
  std::vector<std::pair<std::string, std::string>> named;  // (option, key)
  for (const auto& [key, v] : opt.values) named.push_back({"--values", key});
  for (const auto& key : opt.only) named.push_back({"--knobs", key});
  for (const auto& [option, key] : named)
    if (!knob_keys.count(key)) {
      std::vector<std::string> names;
      for (const auto& p : schema.params())
        if (p.knob) names.push_back(p.key);
      throw std::invalid_argument(fmt::format("{} {}: not a knob of the {} model (its knobs: {})", option, key, schema.owner(), fmt::join(names, ", ")));
    }
  return out;
}

double tune_evaluation_bound(const std::vector<Knob>& knobs, size_t shapes, size_t ms, const TuneOptions& opt, std::string* how) {
  double space = 1, values = 0;
  for (const auto& k : knobs) space *= double(k.values.size()), values += double(k.values.size());
  const bool exhaustive = space <= double(opt.exhaustive_limit);
  const double descent = double(opt.restarts + 1) * (1 + kTuneMaxPasses * values);
  const double per_m = (exhaustive ? space : std::min(space, descent)) + 1;  // + the baseline
  if (how) {
    if (exhaustive)
      *how = fmt::format("exhaustive over the {:.0f} settings of the space (at most --exhaustive-limit {})", space, opt.exhaustive_limit);
    else
      *how = fmt::format("coordinate descent: (--restarts {} + 1) starts x up to {} passes over the knobs' {:.0f} values, at most the space's {:.0f} "
                         "settings",
                         opt.restarts, kTuneMaxPasses, values, space);
  }
  return std::min(double(shapes) * double(ms) * per_m, 9e18);
}

json tune(const models::ModelSpec& spec, const hw::Hardware& hw, const std::string& hw_path, const TuneOptions& opt) {
  if (!spec.schema) throw std::invalid_argument(fmt::format("the {} model declares no case schema: nothing to tune", spec.name));
  if (opt.ms.empty()) throw std::invalid_argument("tune: no M given");
  // Bounded work (issue 22; from a fresh-user trial: --restarts -1 ran a degenerate search and
  // --restarts 10^9 / --exhaustive-limit 10^11 ran without end).
  if (opt.restarts < 0 || opt.restarts > 10000)
    throw std::invalid_argument(fmt::format("--restarts: {} is outside 0..10000 (random starts besides the defaults)", opt.restarts));
  if (opt.exhaustive_limit < 0 || opt.exhaustive_limit > 1000000)
    throw std::invalid_argument(
        fmt::format("--exhaustive-limit: {} is outside 0..1000000 (settings searched exhaustively per M; 0: always coordinate descent)", opt.exhaustive_limit));
  if (!opt.baseline.is_object() || opt.baseline.empty())
    throw std::invalid_argument("tune: no baseline given (the parameters it differs by, e.g. mode=rccl)");
  const std::vector<Knob> knobs = knob_space(*spec.schema, opt);
  if (knobs.empty()) throw std::invalid_argument(fmt::format("the {} model has no knob left to search (all fixed or restricted away)", spec.name));
  int64_t space = 1;
  for (const auto& k : knobs) space = space > (int64_t(1) << 40) ? space : space * int64_t(k.values.size());
  // Bounded total work (trial 3: --exhaustive-limit 10^6 took 80 CPU-s and 394 MB for one M, and
  // --m accepts 64 values; --restarts 10^4 cached every setting it met): the worst case of the whole
  // search, counted before it starts, against --max-evaluations.
  if (opt.max_evaluations < 1)
    throw std::invalid_argument(fmt::format("--max-evaluations: {} is not a count (expected 1 or more)", opt.max_evaluations));
  {
    std::string how;
    const double worst = tune_evaluation_bound(knobs, opt.shapes.size(), opt.ms.size(), opt, &how);
    if (worst > double(opt.max_evaluations))
      throw std::invalid_argument(fmt::format(
          "tune: this search may take up to {:.0f} model evaluations ({} shape{} x {} value{} of --m x {:.0f} each: {}), more than "
          "--max-evaluations {}; narrow it (fewer --m values or shapes, --knobs, --values, --fix, a smaller --exhaustive-limit or "
          "--restarts) or raise --max-evaluations",
          worst, opt.shapes.size(), opt.shapes.size() == 1 ? "" : "s", opt.ms.size(), opt.ms.size() == 1 ? "" : "s",
          worst / double(opt.shapes.size()) / double(opt.ms.size()), how, opt.max_evaluations));
  }
  const bool exhaustive = space <= opt.exhaustive_limit;
  json knobs_json = json::array();
  for (const auto& k : knobs) knobs_json.push_back({{"key", k.key}, {"values", k.values}, {"default", k.fallback}});
  json result{{"model", spec.name},
              {"hardware", hw.name()},
              {"hardware_file", hw_path},
              {"baseline", opt.baseline},
              {"fixed", opt.fixed},
              {"m_key", opt.m_key},
              {"knobs", knobs_json},
              {"search",
               {{"space_size", space},
                {"method", exhaustive ? "exhaustive" : "coordinate descent with restarts"},
                {"exhaustive_limit", opt.exhaustive_limit},
                {"restarts", opt.restarts},
                {"seed", opt.seed}}},
              {"shapes", json::array()}};
  // The schema's default index of each knob (its first value when the default is not a candidate).
  std::vector<size_t> defaults(knobs.size(), 0);
  for (size_t i = 0; i < knobs.size(); ++i) {
    const auto it = std::find(knobs[i].values.begin(), knobs[i].values.end(), knobs[i].fallback);
    if (it != knobs[i].values.end()) defaults[i] = size_t(it - knobs[i].values.begin());
  }
  for (const json& shape : opt.shapes) {
    json shape_out{{"shape", shape}, {"points", json::array()}};
    std::vector<json> best_settings;  // distinct, for the threshold
    for (const int64_t m : opt.ms) {
      json base = shape;  // the fixed parameters are part of every setting, not of the baseline
      base[opt.m_key] = m;
      Evaluator ev(spec, hw, base, opt.max_evaluations);
      // The baseline: the shape with the baseline's parameters, the other knobs at their defaults.
      const Eval& b = ev.at(opt.baseline);
      if (!b.ok) throw std::invalid_argument(fmt::format("the baseline {} at {}={} is refused by the model: {}", opt.baseline.dump(), opt.m_key, m, b.why));
      const Eval base_eval = b;
      auto time_of = [&](const std::vector<size_t>& idx) { return ev.at(setting_of(knobs, idx, opt.fixed)).us; };
      std::vector<size_t> best_idx = defaults;
      double best = time_of(best_idx);
      if (exhaustive) {
        std::vector<size_t> idx(knobs.size(), 0);
        while (true) {
          const double t = time_of(idx);
          if (t < best) best = t, best_idx = idx;
          size_t i = 0;
          while (i < knobs.size() && ++idx[i] == knobs[i].values.size()) idx[i++] = 0;
          if (i == knobs.size()) break;
        }
      } else {
        std::mt19937 rng(opt.seed);
        for (int start = 0; start <= opt.restarts; ++start) {
          std::vector<size_t> idx = defaults;
          if (start > 0)
            for (size_t i = 0; i < knobs.size(); ++i) idx[i] = std::uniform_int_distribution<size_t>(0, knobs[i].values.size() - 1)(rng);
          double cur = time_of(idx);
          for (int pass = 0; pass < kTuneMaxPasses; ++pass) {
            bool moved = false;
            for (size_t i = 0; i < knobs.size(); ++i) {
              size_t arg = idx[i];
              for (size_t v = 0; v < knobs[i].values.size(); ++v) {
                std::vector<size_t> t = idx;
                t[i] = v;
                const double us = time_of(t);
                if (us < cur) cur = us, arg = v, moved = true;
              }
              idx[i] = arg;
            }
            if (!moved) break;
          }
          if (cur < best) best = cur, best_idx = idx;
        }
      }
      json point{{"m", m}, {"space_size", space}, {"method", exhaustive ? "exhaustive" : "coordinate descent with restarts"}};
      if (!std::isfinite(best)) {
        point["best"] = nullptr;
        point["none"] = "the model refuses every setting searched";
        point["evaluations"] = ev.evaluations();
        point["refused"] = ev.refused();
        shape_out["points"].push_back(point);
        continue;
      }
      // Knobs off their default that change nothing go back to it (a clean setting to read).
      for (size_t i = 0; i < knobs.size(); ++i) {
        if (best_idx[i] == defaults[i]) continue;
        std::vector<size_t> t = best_idx;
        t[i] = defaults[i];
        if (time_of(t) == best) best_idx = t;
      }
      const json best_setting = setting_of(knobs, best_idx, opt.fixed);
      const Eval& be = ev.at(best_setting);
      point["best"] = {{"setting", best_setting}, {"text", setting_text(best_setting, knobs)}, {"predicted_us", be.us}, {"interval_us", be.interval}};
      point["baseline"] = {{"setting", opt.baseline}, {"predicted_us", base_eval.us}, {"interval_us", base_eval.interval}};
      point["gain_pct"] = (base_eval.us - be.us) / base_eval.us * 100.0;
      if (std::find(best_settings.begin(), best_settings.end(), best_setting) == best_settings.end()) best_settings.push_back(best_setting);
      // Each knob varied alone from the best setting.
      json effects = json::array();
      for (size_t i = 0; i < knobs.size(); ++i) {
        json vals = json::array();
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (size_t v = 0; v < knobs[i].values.size(); ++v) {
          std::vector<size_t> t = best_idx;
          t[i] = v;
          const double us = time_of(t);
          vals.push_back({{"value", knobs[i].values[v]}, {"predicted_us", std::isfinite(us) ? json(us) : json()}});
          if (std::isfinite(us)) lo = std::min(lo, us), hi = std::max(hi, us);
        }
        effects.push_back({{"key", knobs[i].key}, {"best_value", knobs[i].values[best_idx[i]]}, {"min_us", lo}, {"max_us", hi},
                           {"spread_pct", (hi - lo) / be.us * 100.0}, {"values", vals}});
      }
      std::stable_sort(effects.begin(), effects.end(), [](const json& a, const json& b) { return a["spread_pct"].get<double>() > b["spread_pct"].get<double>(); });
      point["knob_effects"] = effects;
      // Settings the band cannot separate from the best: predicted within the best's 95% band
      // (none without a band: then only equal times).
      const double top = be.interval.is_array() ? be.interval[1].get<double>() : be.us;
      std::vector<std::pair<double, json>> ties;
      for (auto& [us, p] : ev.feasible()) {
        if (us > top) continue;
        json s = opt.fixed;
        for (const auto& k : knobs) s[k.key] = p[k.key];
        bool is_baseline = true;
        for (auto& [k, v] : opt.baseline.items()) is_baseline = is_baseline && p.contains(k) && p[k] == v;
        if (!is_baseline) ties.push_back({us, s});
      }
      std::sort(ties.begin(), ties.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first < b.first : a.second.dump() < b.second.dump(); });
      ties.erase(std::unique(ties.begin(), ties.end()), ties.end());
      json tj = json::array();
      for (size_t i = 0; i < ties.size() && i < 50; ++i)
        tj.push_back({{"setting", ties[i].second}, {"text", setting_text(ties[i].second, knobs)}, {"predicted_us", ties[i].first}});
      point["within_band"] = tj;
      point["within_band_count"] = ties.size();
      point["band_95_pct"] = ev.band_s() * 100.0;
      point["evaluations"] = ev.evaluations();
      point["refused"] = ev.refused();
      shape_out["points"].push_back(point);
    }
    // The serving threshold: the smallest M from which the best settings found (the fastest of them
    // at each M) beat the baseline at every larger M up to the largest M given, by break_even_search.
    json thr;
    const int64_t max_m = opt.ms.back();
    if (best_settings.empty()) {
      thr["none"] = "no setting found";
    } else {
      json base1 = shape;
      base1[opt.m_key] = 1;
      Evaluator e1(spec, hw, base1, opt.max_evaluations, true);
      const Eval& p1 = e1.at(best_settings.front());
      if (!p1.ok || !p1.params.contains("m_padded")) {
        thr["none"] = "the model reports no padding step (params.m_padded at M=1), which the threshold search steps by";
      } else {
        const int64_t step = p1.params["m_padded"].get<int64_t>();
        int64_t evals = 0;
        const auto t = models::break_even_search(step, max_m, 1, [&](int64_t m) {
          json b = shape;
          b[opt.m_key] = m;
          Evaluator e(spec, hw, b, opt.max_evaluations);
          double fused = std::numeric_limits<double>::infinity();
          for (const auto& s : best_settings) fused = std::min(fused, e.at(s).us);
          const double base_us = e.at(opt.baseline).us;
          evals += e.evaluations();
          return std::vector<bool>{fused < base_us};
        });
        thr = {{"m_vs_baseline", t[0].every_m}, {"m_vs_baseline_aligned", t[0].aligned}, {"padding_step", step}, {"max_m", max_m},
               {"settings", best_settings}, {"evaluations", evals}};
      }
    }
    shape_out["threshold"] = thr;
    result["shapes"].push_back(shape_out);
  }
  return result;
}

std::string format_tune_table(const json& r) {
  std::ostringstream o;
  o << fmt::format("tune {} on {} ({}): baseline {}; fixed {}; search {} over {} settings\n", r["model"].get<std::string>(),
                   hw::printable(r["hardware"].get<std::string>()), hw::printable(r["hardware_file"].get<std::string>()), r["baseline"].dump(), r["fixed"].dump(),
                   r["search"]["method"].get<std::string>(), r["search"]["space_size"].get<int64_t>());
  std::vector<std::string> ks;
  for (const auto& k : r["knobs"]) {
    std::vector<std::string> vs;
    for (const auto& v : k["values"]) vs.push_back(value_text(v));
    ks.push_back(fmt::format("{} [{}]", k["key"].get<std::string>(), fmt::join(vs, " ")));
  }
  o << fmt::format("knobs (from the {} case schema): {}\n", r["model"].get<std::string>(), fmt::join(ks, "; "));
  for (const auto& sh : r["shapes"]) {
    o << fmt::format("\nshape {}\n", sh["shape"].dump());
    o << fmt::format("{:>8} {:>11} {:>21} {:>11} {:>7} {:>5} {:>6}  {}\n", "M", "best_us", "95% band", "baseline_us", "gain%", "ties", "evals",
                     "best setting (knobs off their default)");
    for (const auto& p : sh["points"]) {
      if (p["best"].is_null()) {
        o << fmt::format("{:>8} {}\n", p["m"].get<int64_t>(), p.value("none", std::string("none")));
        continue;
      }
      const auto& b = p["best"];
      const std::string band = b["interval_us"].is_array()
                                   ? fmt::format("[{:.1f}, {:.1f}]", b["interval_us"][0].get<double>(), b["interval_us"][1].get<double>())
                                   : "-";
      o << fmt::format("{:>8} {:>11.1f} {:>21} {:>11.1f} {:>+7.1f} {:>5} {:>6}  {}\n", p["m"].get<int64_t>(), b["predicted_us"].get<double>(), band,
                       p["baseline"]["predicted_us"].get<double>(), p["gain_pct"].get<double>(), p["within_band_count"].get<int64_t>(),
                       p["evaluations"].get<int64_t>(), b["text"].get<std::string>());
      std::vector<std::string> eff;
      for (const auto& e : p["knob_effects"])
        if (e["spread_pct"].get<double>() > 0) eff.push_back(fmt::format("{} {:.1f}%", e["key"].get<std::string>(), e["spread_pct"].get<double>()));
      o << fmt::format("{:>8} knobs that matter (spread varying each alone): {}\n", "", eff.empty() ? "none" : fmt::format("{}", fmt::join(eff, ", ")));
    }
    const auto& t = sh["threshold"];
    if (t.contains("none")) {
      o << fmt::format("threshold: none ({})\n", t["none"].get<std::string>());
    } else {
      auto m_text = [](int64_t m) { return m < 0 ? std::string("no M up to max") : m == 1 ? std::string("every M") : fmt::format("M >= {}", m); };
      o << fmt::format("serving threshold (the best settings beat the baseline at every larger M up to {}): {} over every M; {} over "
                       "multiples of {} (models::break_even_search, {} evaluations)\n",
                       t["max_m"].get<int64_t>(), m_text(t["m_vs_baseline"].get<int64_t>()), m_text(t["m_vs_baseline_aligned"].get<int64_t>()),
                       t["padding_step"].get<int64_t>(), t["evaluations"].get<int64_t>());
    }
  }
  return o.str();
}

std::string format_tune_scenario(const json& r) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "scenario" << YAML::Value << "tune-" + r["model"].get<std::string>();
  y << YAML::Key << "description" << YAML::Value
    << fmt::format("written by fusesim tune: per shape and M, the best setting found and the baseline {}", r["baseline"].dump());
  y << YAML::Key << "hardware" << YAML::Value << r["hardware_file"].get<std::string>();
  y << YAML::Key << "model" << YAML::Value << r["model"].get<std::string>();
  y << YAML::Key << "cases" << YAML::Value << YAML::BeginSeq;
  int si = 0;
  for (const auto& sh : r["shapes"]) {
    for (const auto& p : sh["points"]) {
      if (p["best"].is_null()) continue;
      for (const char* which : {"best", "baseline"}) {
        json params = sh["shape"];
        for (auto& [k, v] : p[which]["setting"].items()) params[k] = v;
        params[r["m_key"].get<std::string>()] = p["m"];
        y << YAML::BeginMap << YAML::Key << "id" << YAML::Value
          << fmt::format("shape{}/{}/{}={}", si, which, r["m_key"].get<std::string>(), p["m"].get<int64_t>());
        y << YAML::Key << "params" << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (auto& [k, v] : params.items()) {
          y << YAML::Key << k << YAML::Value;
          if (v.is_boolean()) y << v.get<bool>();
          else if (v.is_number_integer()) y << v.get<int64_t>();
          else if (v.is_number()) y << v.get<double>();
          else y << value_text(v);
        }
        y << YAML::EndMap << YAML::EndMap;
      }
    }
    ++si;
  }
  y << YAML::EndSeq << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

}  // namespace fusesim::scenario
