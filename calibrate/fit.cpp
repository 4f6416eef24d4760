#include "calibrate/fit.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include <Eigen/Dense>
#include <unsupported/Eigen/NonLinearOptimization>
#include <fmt/format.h>

#include "calibrate/measurements.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"

namespace fusesim::calibrate {
namespace {

std::string table_of(const std::string& case_id) {
  const auto slash = case_id.find('/');
  return slash == std::string::npos ? case_id : case_id.substr(0, slash);
}

double median_abs(std::vector<double> v) {
  if (v.empty()) return 0;
  for (auto& x : v) x = std::fabs(x);
  return models::median(std::move(v));
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

/// The objective as Eigen's LM functor: z (bounded coordinates) -> the residual vector.
struct Functor {
  using Scalar = double;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;

  hw::Hardware* hw;
  const std::vector<FitPoint>* pts;
  const Objective* obj;
  std::vector<std::string> keys;
  std::vector<Map> maps;
  std::vector<double> p0;
  int* evals;

  int inputs() const { return int(keys.size()); }
  int values() const { return int(obj->size(keys.size())); }

  int operator()(const Eigen::VectorXd& z, Eigen::VectorXd& f) const {
    std::vector<double> p(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) p[i] = maps[i].to_p(z[i]);
    evaluate(p, f);
    return 0;
  }

  /// The residuals at parameter values p (SI), which are set in *hw.
  void evaluate(const std::vector<double>& p, Eigen::VectorXd& f) const {
    ++*evals;
    for (size_t i = 0; i < keys.size(); ++i) hw->set_si(keys[i], p[i]);
    std::vector<double> pred;
    try {
      pred = predict(*hw, *pts);
    } catch (const std::exception&) {
      f.setConstant(1e3);  // a trial the model cannot run: a large residual steers the fit away
      return;
    }
    obj->residuals(pred, p, p0, f.data());
  }
};

}  // namespace

std::vector<FitPoint> points_from_scenarios(const std::vector<std::string>& paths, double phase_weight,
                                            double small_t_kernel_weight) {
  std::vector<FitPoint> out;
  for (const auto& path : paths) {
    const auto sc = scenario::load(path);
    refuse_layer_fits(sc);
    for (const auto& c : sc.cases) {
      if (!c.measured) continue;
      const std::string id = sc.name + ":" + c.id, table = table_of(c.id);
      if (c.measured->value_us)
        out.push_back({id, sc.model, table, c.params, "", *c.measured->value_us, 1.0, c.measured->source,
                       c.measured->metric == "period_us" ? "period_us" : "", path, c.line, PointKind::Total});
      // An AFD timeline's kernels: at T >= 128 (judged by check), and below when asked for.
      const models::ModelSpec* spec = models::find_spec(sc.model);
      auto kernels = [&](bool unjudged) {
        return spec && spec->fitted_kernels ? spec->fitted_kernels(c, unjudged) : std::vector<models::Measured::KernelSpan>{};
      };
      for (const auto& k : kernels(false))
        out.push_back({id + "#" + k.name(), sc.model, table, c.params, k.name(), k.duration_us, phase_weight, c.measured->source,
                       "", path, k.line, PointKind::KernelDuration});
      if (small_t_kernel_weight > 0)
        for (const auto& k : kernels(true))
          out.push_back({id + "#" + k.name(), sc.model, table, c.params, k.name(), k.duration_us, std::sqrt(small_t_kernel_weight),
                         c.measured->source, "", path, k.line, PointKind::SmallTKernelDuration});
      for (const auto& [ph, v] : c.measured->phases_us)
        out.push_back({id + "#" + ph, sc.model, table, c.params, ph, v, phase_weight, c.measured->source, "", path, c.line,
                       PointKind::Phase});
    }
  }
  return out;
}

PointKind kind_of(const FitPoint& p) {
  if (p.phase.empty()) return PointKind::Total;
  if (!is_kernel_duration(p.phase)) return PointKind::Phase;
  const models::ModelSpec* spec = models::find_spec(p.model);
  return spec && spec->kernels_unjudged && spec->kernels_unjudged(p.params) ? PointKind::SmallTKernelDuration
                                                                            : PointKind::KernelDuration;
}

const char* point_kind_name(PointKind k) {
  switch (k) {
    case PointKind::Total: return "total";
    case PointKind::Phase: return "phase";
    case PointKind::KernelDuration: return "kernel duration";
    case PointKind::SmallTKernelDuration: return "kernel duration at T < 128";
  }
  return "?";
}

const char* fit_method_name(FitMethod m) { return m == FitMethod::NelderMead ? "nelder-mead" : "lm"; }
const char* residual_form_name(ResidualForm r) { return r == ResidualForm::Log ? "log" : "relative"; }

bool default_objective(const FitOptions& o) {
  return o.method == FitMethod::LevenbergMarquardt && o.residuals == ResidualForm::Relative && o.hinge == 0 &&
         !o.kernel_weight && o.kernel_hinge == 0 && o.small_t_kernel_weight == 0 && o.median_cap == 0;
}

std::string describe_objective(const FitOptions& o) {
  if (default_objective(o)) return "";
  std::string s = o.method == FitMethod::NelderMead ? fmt::format("nelder-mead, {} iterations", o.iterations) : "lm";
  s += fmt::format("; {} residuals", residual_form_name(o.residuals));
  if (o.hinge > 0) s += fmt::format("; hinge {:g} over {:g}", o.hinge, o.hinge_threshold);
  if (o.kernel_weight) s += fmt::format("; kernel weight {:g}", *o.kernel_weight);
  if (o.kernel_hinge > 0) s += fmt::format("; kernel hinge {:g} over {:g}", o.kernel_hinge, o.kernel_hinge_threshold);
  if (o.small_t_kernel_weight > 0) s += fmt::format("; small-T kernel weight {:g}", o.small_t_kernel_weight);
  if (o.median_cap > 0) s += fmt::format("; median cap {:g}", o.median_cap);
  return s + fmt::format("; prior weight {:g}", o.prior_weight);
}

double ObjectiveTerms::sum() const {
  return totals + phases + kernel_durations + small_t_kernel_durations + hinge + kernel_hinge + median_cap + prior;
}

Objective::Objective(const std::vector<FitPoint>& points, const FitOptions& opt) : pts_(&points), opt_(opt) {
  auto check = [](const char* what, double v) {
    if (!std::isfinite(v) || v < 0)
      throw std::invalid_argument(fmt::format("fit: {} {}: expected a finite number >= 0", what, v));
  };
  check("prior weight", opt.prior_weight);
  check("hinge", opt.hinge);
  check("hinge threshold", opt.hinge_threshold);
  if (opt.kernel_weight) check("kernel weight", *opt.kernel_weight);
  check("kernel hinge", opt.kernel_hinge);
  check("kernel hinge threshold", opt.kernel_hinge_threshold);
  check("small-T kernel weight", opt.small_t_kernel_weight);
  check("median cap", opt.median_cap);
  std::map<std::string, size_t> group_of;  // file -> index in groups_, in order of first appearance
  for (size_t j = 0; j < points.size(); ++j) {
    const FitPoint& pt = points[j];
    double w = pt.weight;
    switch (pt.kind) {
      case PointKind::Total:
        totals_.push_back(j);
        if (!group_of.count(pt.file)) {
          group_of.emplace(pt.file, groups_.size());
          groups_.emplace_back();
        }
        groups_[group_of[pt.file]].push_back(j);
        break;
      case PointKind::Phase: break;
      case PointKind::KernelDuration:
        kernels_.push_back(j);
        if (opt.kernel_weight) w = std::sqrt(*opt.kernel_weight);
        break;
      case PointKind::SmallTKernelDuration: w = std::sqrt(opt.small_t_kernel_weight); break;
    }
    weight_.push_back(w);
  }
  data_size_ = points.size() + (opt.hinge > 0 ? totals_.size() : 0) + (opt.kernel_hinge > 0 ? kernels_.size() : 0) +
               (opt.median_cap > 0 ? groups_.size() : 0);
}

void Objective::residuals(const std::vector<double>& pred, const std::vector<double>& p, const std::vector<double>& p0,
                          double* r) const {
  const auto& pts = *pts_;
  auto log_error = [&](size_t j) { return std::log(std::max(pred[j], kLogFloorUs) / pts[j].measured_us); };
  size_t k = 0;
  for (size_t j = 0; j < pts.size(); ++j)
    r[k++] = opt_.residuals == ResidualForm::Log ? weight_[j] * log_error(j)
                                                 : weight_[j] * (pred[j] - pts[j].measured_us) / pts[j].measured_us;
  auto hinge = [&](double weight, double threshold, size_t j) {
    const double over = std::fabs(log_error(j)) - threshold;
    return over > 0 ? std::sqrt(weight) * over : 0.0;
  };
  if (opt_.hinge > 0)
    for (size_t j : totals_) r[k++] = hinge(opt_.hinge, opt_.hinge_threshold, j);
  if (opt_.kernel_hinge > 0)
    for (size_t j : kernels_) r[k++] = hinge(opt_.kernel_hinge, opt_.kernel_hinge_threshold, j);
  if (opt_.median_cap > 0)
    for (const auto& g : groups_) {
      std::vector<double> a;
      for (size_t j : g) a.push_back(std::fabs(pred[j] - pts[j].measured_us) / pts[j].measured_us);
      const double m = models::median(a);
      r[k++] = m > opt_.median_cap ? std::sqrt(100.0 * double(g.size())) * (m - opt_.median_cap) : 0.0;
    }
  for (size_t i = 0; i < p.size(); ++i) r[k++] = opt_.prior_weight * std::log(p[i] / p0[i]);
}

ObjectiveTerms Objective::terms(const double* r, size_t n_params) const {
  ObjectiveTerms t;
  const auto& pts = *pts_;
  size_t k = 0;
  for (size_t j = 0; j < pts.size(); ++j, ++k) {
    const double sq = r[k] * r[k];
    switch (pts[j].kind) {
      case PointKind::Total: t.totals += sq; break;
      case PointKind::Phase: t.phases += sq; break;
      case PointKind::KernelDuration: t.kernel_durations += sq; break;
      case PointKind::SmallTKernelDuration: t.small_t_kernel_durations += sq; break;
    }
  }
  auto add = [&](double& term, size_t count) {
    for (size_t i = 0; i < count; ++i, ++k) term += r[k] * r[k];
  };
  add(t.hinge, opt_.hinge > 0 ? totals_.size() : 0);
  add(t.kernel_hinge, opt_.kernel_hinge > 0 ? kernels_.size() : 0);
  add(t.median_cap, opt_.median_cap > 0 ? groups_.size() : 0);
  add(t.prior, n_params);
  return t;
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
      const models::ModelSpec* spec = models::find_spec(pt.model);
      if (!spec) throw std::invalid_argument("unknown model '" + pt.model + "'");
      try {
        it = cache.emplace(key, spec->run(hw, pt.params, nullptr)).first;
      } catch (const std::exception& e) {
        // Name the measurement, so a file that mixes hardware (seed 004: NVLink and InfiniBand) says which.
        throw std::invalid_argument(fmt::format("{}point {} ({}) on {}: {}",
                                                pt.file.empty() ? "" : fmt::format("{}:{}: ", pt.file, pt.line), pt.id,
                                                pt.source, hw.name(), e.what()));
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

namespace {

/// fusesim_afd_fit's Nelder-Mead, unchanged: minimise `objective` over x from x0 for `iterations`
/// iterations (see fit()); returns the best vertex and sets *f_best, *f_start (objective(x0)),
/// *spread (worst - best at the end). iterations 0 evaluates x0 only.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& objective, const std::vector<double>& x0,
                                int iterations, double* f_best, double* f_start, double* spread) {
  const size_t n = x0.size();
  if (iterations == 0 || n == 0) {
    *f_best = *f_start = objective(x0);
    *spread = 0;
    return x0;
  }
  std::vector<std::vector<double>> simplex(n + 1, x0);
  std::vector<double> fv(n + 1);
  for (size_t i = 0; i < n; ++i) simplex[i + 1][i] += 0.3;
  for (size_t i = 0; i <= n; ++i) fv[i] = objective(simplex[i]);
  *f_start = fv[0];
  for (int it = 0; it < iterations; ++it) {
    std::vector<size_t> idx(n + 1);
    for (size_t i = 0; i <= n; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return fv[a] < fv[b]; });
    const auto S = simplex;
    const auto F = fv;
    for (size_t i = 0; i <= n; ++i) {
      simplex[i] = S[idx[i]];
      fv[i] = F[idx[i]];
    }
    if (it % 50 == 0) fmt::print(stderr, "nelder-mead: iteration {} of {}: best objective {:.5f}\n", it, iterations, fv[0]);
    std::vector<double> c(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) c[j] += simplex[i][j] / double(n);
    auto lerp = [&](double t) {
      std::vector<double> q(n);
      for (size_t j = 0; j < n; ++j) q[j] = c[j] + t * (simplex[n][j] - c[j]);
      return q;
    };
    const auto xr = lerp(-1);
    const double fr = objective(xr);
    if (fr < fv[0]) {
      const auto xe = lerp(-2);
      const double fe = objective(xe);
      if (fe < fr) {
        simplex[n] = xe;
        fv[n] = fe;
      } else {
        simplex[n] = xr;
        fv[n] = fr;
      }
    } else if (fr < fv[n - 1]) {
      simplex[n] = xr;
      fv[n] = fr;
    } else {
      const auto xc = lerp(fr < fv[n] ? -0.5 : 0.5);
      const double fc = objective(xc);
      if (fc < std::min(fr, fv[n])) {
        simplex[n] = xc;
        fv[n] = fc;
      } else {
        for (size_t i = 1; i <= n; ++i) {
          for (size_t j = 0; j < n; ++j) simplex[i][j] = simplex[0][j] + 0.5 * (simplex[i][j] - simplex[0][j]);
          fv[i] = objective(simplex[i]);
        }
      }
    }
  }
  const size_t best = size_t(std::min_element(fv.begin(), fv.end()) - fv.begin());
  *f_best = fv[best];
  *spread = *std::max_element(fv.begin(), fv.end()) - fv[best];
  return simplex[best];
}

}  // namespace

std::optional<std::string> nelder_mead_warning(const FitResult& r) {
  if (r.method != FitMethod::NelderMead || r.iterations == 0 || r.params.empty()) return std::nullopt;
  if (r.simplex_spread <= 1e-6 * std::max(1.0, std::fabs(r.objective))) return std::nullopt;
  return fmt::format("the Nelder-Mead simplex has not contracted after {} iterations (its vertices' objectives still differ "
                     "by {:.3g}): more --iters may lower the objective; the values reported and written are its best vertex",
                     r.iterations, r.simplex_spread);
}

FitResult fit(const hw::Hardware& start, const std::vector<FitPoint>& train, const std::vector<FitPoint>& test,
              const FitOptions& opt) {
  if (train.empty()) throw std::invalid_argument("fit: no training points");
  FitResult res{start};
  res.method = opt.method;
  std::vector<std::string> keys = opt.free_keys;
  if (opt.no_free_keys) keys.clear();
  else if (keys.empty())
    for (const auto& [k, v] : start.values())
      if (v.kind == hw::Provenance::Fitted) keys.push_back(k);
  const Objective obj(train, opt);
  Functor fn{&res.fitted, &train, &obj, keys, {}, {}, &res.evaluations};
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
  const size_t np = keys.size();
  Eigen::VectorXd f(fn.values());
  res.evaluated_only = np == 0 || (opt.method == FitMethod::NelderMead && opt.iterations == 0);
  std::vector<double> p_nm;  // Nelder-Mead's best vertex (SI)
  if (np == 0) {
    std::vector<double> none;
    fn.evaluate(none, f);
  } else if (opt.method == FitMethod::LevenbergMarquardt) {
    Eigen::NumericalDiff<Functor> nd(fn, 1e-6);
    Eigen::LevenbergMarquardt<Eigen::NumericalDiff<Functor>> lm(nd);
    lm.parameters.maxfev = opt.max_evaluations;
    lm.parameters.xtol = 1e-8;
    lm.parameters.ftol = 1e-10;
    res.lm_info = int(lm.minimize(z));
  } else {
    // On x = log(p), clamped to the bounds when applied, as fusesim_afd_fit did.
    std::vector<double> lo(np), hi(np), x0(np);
    for (size_t i = 0; i < np; ++i) {
      lo[i] = std::log(std::max(fn.maps[i].lo, 1e-15));
      hi[i] = std::log(fn.maps[i].hi);
      x0[i] = std::log(std::max(start.get(keys[i]), 1e-15));
    }
    auto to_p = [&](const std::vector<double>& x) {
      std::vector<double> p(np);
      for (size_t i = 0; i < np; ++i) p[i] = std::exp(std::clamp(x[i], lo[i], hi[i]));
      return p;
    };
    Eigen::VectorXd r(fn.values());
    auto objective = [&](const std::vector<double>& x) {
      fn.evaluate(to_p(x), r);
      double v = r.squaredNorm();
      for (size_t i = 0; i < np; ++i)
        if (x[i] < lo[i] || x[i] > hi[i]) v += 1e3;
      return v;
    };
    double f_best = 0, f_start = 0;
    const auto x = nelder_mead(objective, x0, opt.iterations, &f_best, &f_start, &res.simplex_spread);
    res.iterations = opt.iterations;
    res.objective_start = f_start;
    p_nm = to_p(x);
    // --iters 0 evaluates the file's own values (exp(log(p)) can differ from p in the last bit).
    if (opt.iterations == 0)
      for (size_t i = 0; i < np; ++i) p_nm[i] = std::clamp(start.get(keys[i]), std::exp(lo[i]), std::exp(hi[i]));
    for (size_t i = 0; i < np; ++i) z[i] = fn.maps[i].to_z(p_nm[i]);
  }
  const int n = int(train.size()), p = int(np), nd_data = int(obj.data_size());
  if (np > 0) {
    // Final evaluation at the optimum (sets res.fitted) and the Jacobian for uncertainties, in the
    // bounded coordinates z for both methods.
    Eigen::NumericalDiff<Functor> nd(fn, 1e-6);
    fn(z, f);
    Eigen::MatrixXd J(fn.values(), fn.inputs());
    nd.df(z, J);
    if (p_nm.empty()) fn(z, f);
    else fn.evaluate(p_nm, f);  // exactly at the best vertex (z maps back to it only to rounding)
    // A parameter no fitted point depends on is pinned by the prior alone, or by nothing (prior weight
    // 0: the pseudo-inverse then gives it sigma ~0, as if known exactly). "Depends": some data
    // residual (a point's weighted error, a hinge, a median cap) moves by more than 1e-5 per unit of
    // the bounded coordinate z (a unit of z spans a large part of the bounds). On the repository's fits
    // the keys a point depends on give 2e-3 or more, those none does 5e-8 or less (the simulator's
    // round-off through the forward difference).
    std::vector<bool> moves_points(size_t(p), true);
    for (int i = 0; i < p; ++i) moves_points[size_t(i)] = nd_data > 0 && J.col(i).head(nd_data).cwiseAbs().maxCoeff() > 1e-5;
    double ssr = 0;
    for (int j = 0; j < nd_data; ++j) ssr += f[j] * f[j];
    const double s2 = ssr / std::max(1, n - p);
    Eigen::MatrixXd cov = (J.transpose() * J).completeOrthogonalDecomposition().pseudoInverse() * s2;
    for (int i = 0; i < p; ++i) {
      ParamFit pf;
      pf.key = keys[i];
      pf.start_si = start.get(keys[i]);
      pf.value_si = p_nm.empty() ? fn.maps[i].to_p(z[i]) : p_nm[size_t(i)];
      const double var = cov(i, i);
      pf.sigma_si = std::isnan(var) ? var : std::sqrt(std::max(0.0, var)) * std::fabs(fn.maps[i].dp_dz(z[i]));
      if (!moves_points[size_t(i)]) pf.sigma_si = std::numeric_limits<double>::infinity();
      pf.lower_si = fn.maps[i].lo;
      pf.upper_si = fn.maps[i].hi;
      pf.at_bound = std::fabs(std::tanh(z[i])) > 0.999;
      pf.identified = std::isfinite(pf.sigma_si) && pf.sigma_si <= std::fabs(pf.value_si);
      res.params.push_back(pf);
    }
  }
  res.terms = obj.terms(f.data(), np);
  res.objective = res.terms.sum();
  const auto ptrain = predict(res.fitted, train);
  std::vector<double> etrain, etest;
  double sq = 0;
  for (size_t j = 0; j < train.size(); ++j) {
    const double e = (ptrain[j] - train[j].measured_us) / train[j].measured_us * 100;
    res.points.push_back(
        {train[j].id, train[j].table, train[j].phase, train[j].measured_us, ptrain[j], e, false, train[j].kind, train[j].file});
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
      res.points.push_back({test[j].id, test[j].table, test[j].phase, test[j].measured_us, ptest[j], e, true, test[j].kind, test[j].file});
      if (test[j].phase.empty()) etest.push_back(e);
    }
  }
  res.median_abs_fit_pct = median_abs(etrain);
  res.max_abs_fit_pct = max_abs(etrain);
  if (!etest.empty()) {
    res.median_abs_holdout_pct = median_abs(etest);
    res.max_abs_holdout_pct = max_abs(etest);
  }
  // LM: the objective at the start, evaluated last and not counted (LM's count is Eigen's), and only
  // for an objective other than the default (whose output never showed it). A simulation's result can
  // depend in its last bits on how much was simulated before it in the process (sim::Simulation
  // measures from SystemC's running clock), so an evaluation before the fit would move its path, and
  // one after it the next fit's (k-fold). Nelder-Mead's start is its first vertex.
  if (res.evaluated_only) res.objective_start = res.objective;
  else if (opt.method == FitMethod::LevenbergMarquardt && !default_objective(opt)) {
    int uncounted = 0;
    Functor at_start = fn;
    hw::Hardware scratch = start;
    at_start.hw = &scratch;
    at_start.evals = &uncounted;
    std::vector<double> p(np);
    for (size_t i = 0; i < np; ++i) p[i] = start.get(keys[i]);
    Eigen::VectorXd f0(fn.values());
    at_start.evaluate(p, f0);
    res.objective_start = f0.squaredNorm();
  }
  return res;
}

std::string first_estimate_of(const std::string& previous) {
  std::string orig = previous;
  if (orig.rfind("calibrate fit: ", 0) == 0 || orig.rfind("calibrate fit (", 0) == 0) {  // a source a fit wrote
    const auto bar = orig.find(" | ");
    orig = bar == std::string::npos ? "" : orig.substr(bar + 3);
  }
  if (orig.empty() || orig.rfind("first estimate", 0) == 0) return orig;
  return "first estimate: " + orig;
}

std::string calibrated_yaml(const FitResult& r, const std::vector<std::string>& sources, const std::string& date,
                            const std::string& commit, const std::string& objective) {
  // Never a non-finite number in a hardware file (the loader refuses it; issue 22 found
  // `residual_rms_pct: inf` written from a 1e-300 measured time): refuse before anything is written.
  auto finite = [](const char* what, double x) {
    if (!std::isfinite(x))
      throw std::runtime_error(fmt::format("calibrate fit: the fit's {} is {} (a measured time or prediction out of range); "
                                           "no hardware file written", what, x));
  };
  finite("residual RMS", r.residual_sigma_pct);
  finite("median |error|", r.median_abs_fit_pct);
  finite("max |error|", r.max_abs_fit_pct);
  for (const auto& pf : r.params) finite(pf.key.c_str(), pf.value_si);
  hw::Hardware out = r.fitted;
  const PointCounts counts = fitted_point_counts(r);
  for (const auto& pf : r.params) {
    hw::Value v = out.value(pf.key);
    v.si = pf.value_si;
    v.kind = hw::Provenance::Fitted;
    v.fitted_from = sources;
    v.fitted_on = date;
    v.fitted_commit = commit;
    v.fit_sigma_si = std::isfinite(pf.sigma_si) ? pf.sigma_si : 0;  // no sigma written when the fit gives none
    // Keep the original source (where the starting value came from), after the fit's statement.
    const std::string orig = first_estimate_of(v.source);
    const std::string tag = objective.empty() ? "calibrate fit: " : "calibrate fit (" + objective + "): ";
    v.source = fmt::format("{}{}; totals: median |error| {:.2f}%, max {:.2f}%, RMS {:.2f}%{}{}{}", tag, describe_points(counts),
                           r.median_abs_fit_pct, r.max_abs_fit_pct, r.residual_sigma_pct, pf.at_bound ? " (at a bound)" : "",
                           pf.identified ? "" : " (not identified by these points)", orig.empty() ? "" : " | " + orig);
    out.set(pf.key, v);
  }
  hw::Calibration cal;
  cal.residual_rms_pct = r.residual_sigma_pct;
  cal.points = counts.totals;  // the residual RMS is over the totals
  cal.fitted_on = date;
  cal.commit = commit;
  cal.measurements = sources;
  out.set_calibration(cal);
  return out.to_yaml();
}

bool is_kernel_duration(const std::string& phase) {
  if (phase.rfind("dev", 0) != 0) return false;
  size_t i = 3;
  while (i < phase.size() && std::isdigit(static_cast<unsigned char>(phase[i]))) ++i;
  return i > 3 && i + 1 < phase.size() && phase[i] == '/';
}

PointCounts fitted_point_counts(const FitResult& r) {
  PointCounts c;
  for (const auto& p : r.points) {
    if (p.held_out) continue;
    if (p.phase.empty()) ++c.totals;
    else if (is_kernel_duration(p.phase)) ++c.kernel_durations;
    else ++c.phases;
  }
  return c;
}

std::string describe_points(const PointCounts& c) {
  std::string parts;
  auto add = [&](int n, const char* one, const char* many) {
    if (n == 0) return;
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, n == 1 ? one : many);
  };
  add(c.totals, "total", "totals");
  add(c.phases, "phase", "phases");
  add(c.kernel_durations, "kernel duration", "kernel durations");
  return fmt::format("{} {} ({})", c.all(), c.all() == 1 ? "point" : "points", parts.empty() ? "none" : parts);
}

std::string lm_status_name(int status) {
  switch (status) {
    case -2: return "NotStarted";
    case -1: return "Running";
    case 0: return "ImproperInputParameters";
    case 1: return "RelativeReductionTooSmall";
    case 2: return "RelativeErrorTooSmall";
    case 3: return "RelativeErrorAndReductionTooSmall";
    case 4: return "CosinusTooSmall";
    case 5: return "TooManyFunctionEvaluation";
    case 6: return "FtolTooSmall";
    case 7: return "XtolTooSmall";
    case 8: return "GtolTooSmall";
    case 9: return "UserAsked";
    default: return "Unknown";
  }
}

std::string lm_status_meaning(int status) {
  switch (status) {
    case 0: return "not run: improper input (no parameter or fewer residuals than parameters)";
    case 1: return "converged: the last step reduced the sum of squares by less than ftol (1e-10, relative)";
    case 2: return "converged: the last step moved the parameters by less than xtol (1e-8, relative)";
    case 3: return "converged: the last step changed both the sum of squares (ftol) and the parameters (xtol) by less than the tolerances";
    case 4: return "converged: the residuals are orthogonal to the Jacobian's columns (gradient zero within gtol)";
    case 5: return "NOT converged: stopped at --max-evaluations";
    case 6: return "stopped: ftol too small, the sum of squares cannot be reduced further";
    case 7: return "stopped: xtol too small, the parameters cannot be improved further";
    case 8: return "stopped: the residuals are orthogonal to the Jacobian to machine precision";
    case 9: return "stopped on request";
    default: return "not finished";
  }
}

std::optional<std::string> few_points_warning(const FitResult& r) {
  const PointCounts c = fitted_point_counts(r);
  const size_t np = r.params.size();
  if (size_t(c.all()) >= 3 * np) return std::nullopt;
  return fmt::format("{} parameters fitted on {}: fewer than 3 points per parameter ({} wanted); the points may not determine "
                     "every value (see 'not identified' below)", np, describe_points(c), 3 * np);
}

namespace {
// ---- keep_input_layout ------------------------------------------------------------------------

/// One key of a block-style mapping: its leading comment/blank lines and its own lines.
struct Chunk {
  std::string key, lead, text;
};
struct Chunks {
  std::string preamble, trailing;  ///< lines before the first key, after the last
  std::vector<Chunk> list;
  const Chunk* find(const std::string& k) const {
    for (const auto& c : list)
      if (c.key == k) return &c;
    return nullptr;
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

/// Split the lines of a mapping whose keys sit at column `indent`. Blank and comment lines go to
/// the next key (or stay in the current one when its text continues after them).
Chunks split_chunks(const std::vector<std::string>& lines, size_t indent) {
  Chunks s;
  std::string pending;
  for (const auto& l : lines) {
    const size_t ns = l.find_first_not_of(' ');
    if (ns == std::string::npos || l[ns] == '#') {
      pending += l + "\n";
      continue;
    }
    if (ns == indent) {
      size_t colon = 0;
      while ((colon = l.find(':', colon)) != std::string::npos && colon + 1 < l.size() && l[colon + 1] != ' ') ++colon;
      if (colon == std::string::npos) throw std::runtime_error("not a key line");
      if (s.list.empty()) s.preamble = std::move(pending);
      s.list.push_back({l.substr(indent, colon - indent), std::move(pending), l + "\n"});
      pending.clear();
      continue;
    }
    if (ns < indent || s.list.empty()) throw std::runtime_error("unexpected indentation");
    s.list.back().text += pending + l + "\n";
    pending.clear();
  }
  if (s.list.empty()) s.preamble = std::move(pending);
  else s.trailing = std::move(pending);
  return s;
}

/// Same content: scalars by text (quoting and style aside), mappings regardless of key order.
bool same_content(const YAML::Node& a, const YAML::Node& b) {
  if (a.Type() != b.Type()) return false;
  if (a.IsScalar()) return a.Scalar() == b.Scalar();
  if (a.IsSequence()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!same_content(a[i], b[i])) return false;
    return true;
  }
  if (a.IsMap()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!it->first.IsScalar()) return false;
      const YAML::Node bv = b[it->first.Scalar()];
      if (!bv || !same_content(it->second, bv)) return false;
    }
    return true;
  }
  return true;
}

/// Text of lines indented by `indent` or more, less that indentation (so a nested chunk parses alone).
std::string dedent(const std::string& text, size_t indent) {
  std::string out;
  for (const auto& l : lines_of(text)) out += (l.size() >= indent && l.find_first_not_of(' ') >= indent ? l.substr(indent) : l) + "\n";
  return out;
}

/// Keys in the input's order, each key only in `written` right after the one it follows there.
std::vector<std::string> merged_order(const Chunks& in, const Chunks& wr) {
  std::vector<std::string> order;
  for (const auto& c : in.list)
    if (wr.find(c.key)) order.push_back(c.key);
  std::string prev;
  for (const auto& c : wr.list) {
    if (std::find(order.begin(), order.end(), c.key) == order.end()) {
      auto at = prev.empty() ? order.begin() : std::find(order.begin(), order.end(), prev) + 1;
      order.insert(at, c.key);
    }
    prev = c.key;
  }
  return order;
}

/// A chunk holding a block-style mapping: "key:" (perhaps a comment) on its first line, entries below.
bool is_block_map(const Chunk& c, const YAML::Node& value) {
  if (!value.IsMap()) return false;
  const std::string first = c.text.substr(0, c.text.find('\n'));
  const size_t after = first.find_first_not_of(' ', first.find(':') + 1);
  return after == std::string::npos || first[after] == '#';
}

std::string merge_chunks(const Chunks& in, const Chunks& wr, size_t indent, bool top);

/// One chunk of the output: the input's text when its content is unchanged; a block mapping
/// merged key by key; else the written text.
std::string merge_one(const Chunk& a, const Chunk& b, size_t indent, bool top) {
  const YAML::Node na = YAML::Load(dedent(a.text, indent)), nb = YAML::Load(dedent(b.text, indent));
  if (same_content(na, nb)) return a.lead + a.text;
  if (!na.IsMap() || na.size() != 1 || !nb.IsMap() || nb.size() != 1) return a.lead + b.text;
  const YAML::Node va = na.begin()->second, vb = nb.begin()->second;
  if (top && is_block_map(a, va) && is_block_map(b, vb)) {
    const auto la = lines_of(a.text), lb = lines_of(b.text);
    const Chunks ca = split_chunks({la.begin() + 1, la.end()}, indent + 2), cb = split_chunks({lb.begin() + 1, lb.end()}, indent + 2);
    return a.lead + la[0] + "\n" + merge_chunks(ca, cb, indent + 2, false);
  }
  return a.lead + b.text;
}

std::string merge_chunks(const Chunks& in, const Chunks& wr, size_t indent, bool top) {
  std::string out = in.preamble;
  for (const auto& key : merged_order(in, wr)) {
    const Chunk *a = in.find(key), *b = wr.find(key);
    out += a ? merge_one(*a, *b, indent, top) : b->lead + b->text;
  }
  return out + in.trailing;
}

std::string leading_comments(const std::string& text) {
  std::string out;
  for (const auto& l : lines_of(text)) {
    const size_t ns = l.find_first_not_of(' ');
    if (ns != std::string::npos && l[ns] != '#') break;
    out += l + "\n";
  }
  return out;
}
}  // namespace

std::string keep_input_layout(const std::string& input, const std::string& written, std::string* fell_back) {
  const std::string fallback = leading_comments(input) + written;
  auto give_up = [&](const std::string& why) {
    if (fell_back) *fell_back = why;
    return fallback;
  };
  if (input.find('\r') != std::string::npos) return give_up("the input has CRLF line ends");
  try {
    const Chunks in = split_chunks(lines_of(input), 0), wr = split_chunks(lines_of(written), 0);
    const std::string out = merge_chunks(in, wr, 0, true);
    if (!same_content(YAML::Load(out), YAML::Load(written)))
      return give_up("rearranged as the input, the text would not load to the fitted content (an indentation other than "
                     "two spaces?)");
    return out;
  } catch (const std::exception& e) {  // a layout this cannot split, or YAML it cannot parse
    return give_up(std::string("the input's layout could not be followed: ") + e.what());
  }
}

bool lm_converged(int status) { return status >= 1 && status <= 4; }

}  // namespace fusesim::calibrate
