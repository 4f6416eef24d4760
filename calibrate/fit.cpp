#include "calibrate/fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <Eigen/Dense>
#include <unsupported/Eigen/NonLinearOptimization>
#include <fmt/format.h>

#include "models/scenario.hpp"

namespace fusesim::calibrate {
namespace {

std::string table_of(const std::string& case_id) {
  const auto slash = case_id.find('/');
  return slash == std::string::npos ? case_id : case_id.substr(0, slash);
}

double median_abs(std::vector<double> v) {
  if (v.empty()) return 0;
  for (auto& x : v) x = std::fabs(x);
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

/// Bounded reparameterisation: z (unbounded) <-> p in [lo, hi].
struct Map {
  double lo, hi;
  bool log;
  double to_p(double z) const {
    const double s = 0.5 * (1.0 + std::tanh(z));
    return log ? lo * std::pow(hi / lo, s) : lo + (hi - lo) * s;
  }
  double to_z(double p) const {
    double s = log ? std::log(p / lo) / std::log(hi / lo) : (p - lo) / (hi - lo);
    s = std::clamp(s, 1e-9, 1 - 1e-9);
    return std::atanh(2 * s - 1);
  }
  double dp_dz(double z) const {
    const double ds = 0.5 * (1 - std::tanh(z) * std::tanh(z));
    return log ? to_p(z) * std::log(hi / lo) * ds : (hi - lo) * ds;
  }
};

struct Functor {
  using Scalar = double;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;

  hw::Hardware* hw;
  const std::vector<FitPoint>* pts;
  std::vector<std::string> keys;
  std::vector<Map> maps;
  std::vector<double> p0;
  double prior_weight;
  int* evals;

  int inputs() const { return int(keys.size()); }
  int values() const { return int(pts->size() + keys.size()); }

  int operator()(const Eigen::VectorXd& z, Eigen::VectorXd& f) const {
    ++*evals;
    for (size_t i = 0; i < keys.size(); ++i) hw->set_si(keys[i], maps[i].to_p(z[i]));
    std::vector<double> pred;
    try {
      pred = predict(*hw, *pts);
    } catch (const std::exception&) {
      f.setConstant(1e3);  // a trial the model cannot run: a large residual steers LM away
      return 0;
    }
    for (size_t j = 0; j < pts->size(); ++j) {
      const auto& pt = (*pts)[j];
      f[j] = pt.weight * (pred[j] - pt.measured_us) / pt.measured_us;
    }
    for (size_t i = 0; i < keys.size(); ++i)
      f[pts->size() + i] = prior_weight * std::log(maps[i].to_p(z[i]) / p0[i]);
    return 0;
  }
};

}  // namespace

std::vector<FitPoint> points_from_scenarios(const std::vector<std::string>& paths, double phase_weight) {
  std::vector<FitPoint> out;
  for (const auto& path : paths) {
    const auto sc = models::Scenario::load(path);
    for (const auto& c : sc.cases) {
      if (!c.measured) continue;
      if (c.measured->value_us)
        out.push_back({sc.name + ":" + c.id, sc.model, table_of(c.id), c.params, "", *c.measured->value_us, 1.0, c.measured->source});
      for (const auto& [ph, v] : c.measured->phases_us)
        out.push_back({sc.name + ":" + c.id + "#" + ph, sc.model, table_of(c.id), c.params, ph, v, phase_weight, c.measured->source});
    }
  }
  return out;
}

std::vector<double> predict(const hw::Hardware& hw, const std::vector<FitPoint>& pts) {
  std::vector<double> out;
  out.reserve(pts.size());
  // Points that share a case (total + phases) are simulated once.
  std::map<std::pair<std::string, std::string>, nlohmann::json> cache;
  for (const auto& pt : pts) {
    YAML::Emitter e;
    e << YAML::Flow << pt.params;
    const auto key = std::make_pair(pt.model, std::string(e.c_str()));
    auto it = cache.find(key);
    if (it == cache.end()) {
      auto runner = models::case_runners().find(pt.model);
      if (runner == models::case_runners().end()) throw std::invalid_argument("unknown model '" + pt.model + "'");
      try {
        it = cache.emplace(key, runner->second(hw, pt.params, nullptr)).first;
      } catch (const std::exception& e) {
        // Name the measurement, so a file that mixes hardware (seed 004: NVLink and InfiniBand) says which.
        throw std::invalid_argument(fmt::format("point {} ({}) on {}: {}", pt.id, pt.source, hw.name(), e.what()));
      }
    }
    const auto& res = it->second;
    if (pt.phase.empty()) {
      if (pt.metric.empty() || pt.metric == "predicted_us") {
        out.push_back(res["predicted_us"].get<double>());
      } else {
        if (!res.contains("extra") || !res["extra"].contains(pt.metric))
          throw std::invalid_argument(fmt::format("point {}: the {} model reports no '{}'", pt.id, pt.model, pt.metric));
        out.push_back(res["extra"][pt.metric].get<double>());
      }
      continue;
    }
    double v = std::nan("");
    for (const auto& ph : res["phases"])
      if (ph["name"] == pt.phase) v = ph["end_us"].get<double>() - ph["start_us"].get<double>();
    if (std::isnan(v)) throw std::invalid_argument(fmt::format("point {}: the model reports no phase '{}'", pt.id, pt.phase));
    out.push_back(v);
  }
  return out;
}

std::vector<bool> holdout_mask(const std::vector<FitPoint>& pts, const std::string& rule) {
  std::vector<bool> mask(pts.size(), false);
  if (rule.empty() || rule == "none") return mask;
  const auto eq = rule.find('=');
  if (eq == std::string::npos) throw std::invalid_argument("holdout rule '" + rule + "': expected PARAM=VALUE, table=NAME, kfold=K/I or none");
  const std::string lhs = rule.substr(0, eq), rhs = rule.substr(eq + 1);
  if (lhs == "kfold") {
    const auto slash = rhs.find('/');
    if (slash == std::string::npos) throw std::invalid_argument("holdout rule '" + rule + "': expected kfold=K/I");
    const int k = std::stoi(rhs.substr(0, slash)), i = std::stoi(rhs.substr(slash + 1));
    if (k < 2 || i < 0 || i >= k) throw std::invalid_argument("holdout rule '" + rule + "': need K >= 2 and 0 <= I < K");
    // Folds over cases (a case's total and phases stay together), interleaved in file order.
    std::map<std::string, int> case_index;
    for (size_t j = 0; j < pts.size(); ++j) {
      const std::string cid = pts[j].id.substr(0, pts[j].id.find('#'));
      if (!case_index.count(cid)) case_index.emplace(cid, int(case_index.size()));
      mask[j] = case_index[cid] % k == i;
    }
    return mask;
  }
  bool any = false;
  for (size_t j = 0; j < pts.size(); ++j) {
    if (lhs == "table") mask[j] = pts[j].table == rhs;
    else {
      const auto v = pts[j].params[lhs];
      mask[j] = v && v.IsScalar() && v.Scalar() == rhs;
    }
    any = any || mask[j];
  }
  if (!any) throw std::invalid_argument("holdout rule '" + rule + "' selects no point");
  return mask;
}

FitResult fit(const hw::Hardware& start, const std::vector<FitPoint>& train, const std::vector<FitPoint>& test,
              const FitOptions& opt) {
  if (train.empty()) throw std::invalid_argument("fit: no training points");
  FitResult res{start};
  std::vector<std::string> keys = opt.free_keys;
  if (keys.empty())
    for (const auto& [k, v] : start.values())
      if (v.kind == hw::Provenance::Fitted) keys.push_back(k);
  Functor fn{&res.fitted, &train, keys, {}, {}, opt.prior_weight, &res.evaluations};
  Eigen::VectorXd z(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const hw::ParamDecl* d = start.registry().find(keys[i]);
    if (!d) throw std::invalid_argument("fit: unknown parameter '" + keys[i] + "'");
    if (!start.has(keys[i])) throw std::invalid_argument("fit: parameter '" + keys[i] + "' is not set in " + start.path());
    if (d->quantity == hw::Quantity::Count) throw std::invalid_argument("fit: '" + keys[i] + "' is a count and cannot be fitted");
    const bool logmap = d->lower > 0;
    fn.maps.push_back(Map{d->lower, d->upper, logmap});
    const double p0 = std::clamp(start.get(keys[i]), d->lower + 1e-12 * (d->upper - d->lower), d->upper);
    fn.p0.push_back(std::max(p0, 1e-30));
    z[i] = fn.maps[i].to_z(p0);
  }
  Eigen::NumericalDiff<Functor> nd(fn, 1e-6);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<Functor>> lm(nd);
  lm.parameters.maxfev = opt.max_evaluations;
  lm.parameters.xtol = 1e-8;
  lm.parameters.ftol = 1e-10;
  res.lm_info = int(lm.minimize(z));
  // Final evaluation at the optimum (sets res.fitted) and the Jacobian for uncertainties.
  Eigen::VectorXd f(fn.values());
  fn(z, f);
  Eigen::MatrixXd J(fn.values(), fn.inputs());
  nd.df(z, J);
  fn(z, f);
  const int n = int(train.size()), p = int(keys.size());
  double ssr = 0;
  for (int j = 0; j < n; ++j) ssr += f[j] * f[j];
  const double s2 = ssr / std::max(1, n - p);
  Eigen::MatrixXd cov = (J.transpose() * J).completeOrthogonalDecomposition().pseudoInverse() * s2;
  for (int i = 0; i < p; ++i) {
    ParamFit pf;
    pf.key = keys[i];
    pf.start_si = start.get(keys[i]);
    pf.value_si = fn.maps[i].to_p(z[i]);
    pf.sigma_si = std::sqrt(std::max(0.0, cov(i, i))) * std::fabs(fn.maps[i].dp_dz(z[i]));
    pf.lower_si = fn.maps[i].lo;
    pf.upper_si = fn.maps[i].hi;
    pf.at_bound = std::fabs(std::tanh(z[i])) > 0.999;
    res.params.push_back(pf);
  }
  const auto ptrain = predict(res.fitted, train);
  std::vector<double> etrain, etest;
  double sq = 0;
  for (size_t j = 0; j < train.size(); ++j) {
    const double e = (ptrain[j] - train[j].measured_us) / train[j].measured_us * 100;
    res.points.push_back({train[j].id, train[j].table, train[j].phase, train[j].measured_us, ptrain[j], e, false});
    if (train[j].phase.empty()) {
      etrain.push_back(e);
      sq += e * e;
    }
  }
  res.residual_sigma_pct = etrain.empty() ? 0 : std::sqrt(sq / etrain.size());
  if (!test.empty()) {
    const auto ptest = predict(res.fitted, test);
    for (size_t j = 0; j < test.size(); ++j) {
      const double e = (ptest[j] - test[j].measured_us) / test[j].measured_us * 100;
      res.points.push_back({test[j].id, test[j].table, test[j].phase, test[j].measured_us, ptest[j], e, true});
      if (test[j].phase.empty()) etest.push_back(e);
    }
  }
  res.median_abs_fit_pct = median_abs(etrain);
  res.max_abs_fit_pct = max_abs(etrain);
  res.median_abs_holdout_pct = median_abs(etest);
  res.max_abs_holdout_pct = max_abs(etest);
  return res;
}

std::string calibrated_yaml(const FitResult& r, const std::vector<std::string>& sources, const std::string& date,
                            const std::string& commit) {
  hw::Hardware out = r.fitted;
  for (const auto& pf : r.params) {
    hw::Value v = out.value(pf.key);
    v.si = pf.value_si;
    v.kind = hw::Provenance::Fitted;
    v.fitted_from = sources;
    v.fitted_on = date;
    v.fitted_commit = commit;
    v.fit_sigma_si = pf.sigma_si;
    // Keep the original source (where the starting value came from), after the fit's statement.
    std::string orig = v.source;
    const std::string tag = "calibrate fit: ", first = "first estimate: ";
    if (orig.rfind(tag, 0) == 0) {
      const auto bar = orig.find(" | ");
      orig = bar == std::string::npos ? "" : orig.substr(bar + 3);
    }
    if (orig.rfind(first, 0) == 0) orig = orig.substr(first.size());
    v.source = fmt::format("{}{} points, median |error| {:.2f}%, max {:.2f}%, RMS {:.2f}%{}{}", tag,
                           std::count_if(r.points.begin(), r.points.end(), [](const PointResult& p) { return !p.held_out && p.phase.empty(); }),
                           r.median_abs_fit_pct, r.max_abs_fit_pct, r.residual_sigma_pct, pf.at_bound ? " (at a bound)" : "",
                           orig.empty() ? "" : " | " + first + orig);
    out.set(pf.key, v);
  }
  hw::Calibration cal;
  cal.residual_rms_pct = r.residual_sigma_pct;
  cal.points = int(std::count_if(r.points.begin(), r.points.end(), [](const PointResult& p) { return !p.held_out && p.phase.empty(); }));
  cal.fitted_on = date;
  cal.commit = commit;
  cal.measurements = sources;
  out.set_calibration(cal);
  return out.to_yaml();
}

}  // namespace fusesim::calibrate
