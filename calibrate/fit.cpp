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
    const auto sc = scenario::load(path);
    refuse_layer_fits(sc);
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
  // A parameter no fitted point depends on is pinned by the prior alone, or by nothing (prior weight
  // 0: the pseudo-inverse then gives it sigma ~0, as if known exactly). "Depends": some point's
  // weighted relative error moves by more than 1e-5 per unit of the bounded coordinate z (a unit of z
  // spans a large part of the bounds). On the repository's fits the keys a point depends on give
  // 2e-3 or more, those none does 5e-8 or less (the simulator's round-off through the forward difference).
  std::vector<bool> moves_points(size_t(p), true);
  for (int i = 0; i < p; ++i) moves_points[size_t(i)] = n > 0 && J.col(i).head(n).cwiseAbs().maxCoeff() > 1e-5;
  double ssr = 0;
  for (int j = 0; j < n; ++j) ssr += f[j] * f[j];
  const double s2 = ssr / std::max(1, n - p);
  Eigen::MatrixXd cov = (J.transpose() * J).completeOrthogonalDecomposition().pseudoInverse() * s2;
  for (int i = 0; i < p; ++i) {
    ParamFit pf;
    pf.key = keys[i];
    pf.start_si = start.get(keys[i]);
    pf.value_si = fn.maps[i].to_p(z[i]);
    const double var = cov(i, i);
    pf.sigma_si = std::isnan(var) ? var : std::sqrt(std::max(0.0, var)) * std::fabs(fn.maps[i].dp_dz(z[i]));
    if (!moves_points[size_t(i)]) pf.sigma_si = std::numeric_limits<double>::infinity();
    pf.lower_si = fn.maps[i].lo;
    pf.upper_si = fn.maps[i].hi;
    pf.at_bound = std::fabs(std::tanh(z[i])) > 0.999;
    pf.identified = std::isfinite(pf.sigma_si) && pf.sigma_si <= std::fabs(pf.value_si);
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
  if (!etest.empty()) {
    res.median_abs_holdout_pct = median_abs(etest);
    res.max_abs_holdout_pct = max_abs(etest);
  }
  return res;
}

std::string calibrated_yaml(const FitResult& r, const std::vector<std::string>& sources, const std::string& date,
                            const std::string& commit) {
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
    std::string orig = v.source;
    const std::string tag = "calibrate fit: ", first = "first estimate: ";
    if (orig.rfind(tag, 0) == 0) {
      const auto bar = orig.find(" | ");
      orig = bar == std::string::npos ? "" : orig.substr(bar + 3);
    }
    if (orig.rfind(first, 0) == 0) orig = orig.substr(first.size());
    v.source = fmt::format("{}{}; totals: median |error| {:.2f}%, max {:.2f}%, RMS {:.2f}%{}{}{}", tag, describe_points(counts),
                           r.median_abs_fit_pct, r.max_abs_fit_pct, r.residual_sigma_pct, pf.at_bound ? " (at a bound)" : "",
                           pf.identified ? "" : " (not identified by these points)", orig.empty() ? "" : " | " + first + orig);
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
