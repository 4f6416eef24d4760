// The model interface's implementation: the case-parameter reader (models/case_params.hpp), the
// helpers of the case types, and the registry built from models/registry.inc.
#include "models/model.hpp"
#include "hw/numbers.hpp"

#include "hw/csv_cell.hpp"
#include "hw/printable.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"

namespace fusesim::models {
namespace {
/// A quoted scalar ("256", 'true') is text in YAML: refused where a number or a flag is expected.
bool quoted(const YAML::Node& v) { return v.IsScalar() && v.Tag() == "!"; }

std::string number_text(double v) { return fmt::format("{}", v); }

std::string words(const std::vector<std::string>& w) {
  if (w.empty()) return "";
  if (w.size() == 1) return w[0];
  std::string s;
  for (size_t i = 0; i + 1 < w.size(); ++i) s += (i ? ", " : "") + w[i];
  return s + " or " + w.back();
}
}  // namespace

CaseParam CaseParam::integer(std::string key, std::string meaning) { return {std::move(key), Kind::Integer, std::move(meaning)}; }
CaseParam CaseParam::integer64(std::string key, std::string meaning) {
  return {std::move(key), Kind::Integer64, std::move(meaning)};
}
CaseParam CaseParam::dimension(std::string key, std::string meaning) {
  return integer64(std::move(key), std::move(meaning)).at_least(1).at_most(double(kMaxDimension)).expecting("a whole number from 1 to 2^31");
}
CaseParam CaseParam::number(std::string key, std::string meaning) { return {std::move(key), Kind::Number, std::move(meaning)}; }
CaseParam CaseParam::flag(std::string key, std::string meaning) { return {std::move(key), Kind::Flag, std::move(meaning)}; }
CaseParam CaseParam::name(std::string key, std::string meaning) { return {std::move(key), Kind::Name, std::move(meaning)}; }
CaseParam CaseParam::mapping(std::string key, std::string meaning) { return {std::move(key), Kind::Mapping, std::move(meaning)}; }
CaseParam CaseParam::node(std::string key, std::string meaning) { return {std::move(key), Kind::Node, std::move(meaning)}; }
CaseParam CaseParam::required() && {
  is_required = true;
  return std::move(*this);
}
CaseParam CaseParam::otherwise(nlohmann::json value) && {
  fallback = std::move(value);
  return std::move(*this);
}
CaseParam CaseParam::one_of(std::vector<std::string> w) && {
  choices = std::move(w);
  return std::move(*this);
}
CaseParam CaseParam::at_least(double v) && {
  min = v;
  return std::move(*this);
}
CaseParam CaseParam::above(double v) && {
  min = v;
  min_exclusive = true;
  return std::move(*this);
}
CaseParam CaseParam::at_most(double v) && {
  max = v;
  return std::move(*this);
}
CaseParam CaseParam::expecting(std::string text) && {
  expected = std::move(text);
  return std::move(*this);
}
CaseParam CaseParam::tunable(std::vector<std::string> not_searched_) && {
  knob = true;
  not_searched = std::move(not_searched_);
  return std::move(*this);
}
CaseParam CaseParam::unreported() && {
  reported = false;
  return std::move(*this);
}

YAML::Node CaseValues::node(const std::string& key) const {
  const auto it = nodes_.find(key);
  return it == nodes_.end() ? YAML::Node() : it->second;
}

const nlohmann::json& CaseValues::at(const std::string& key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) throw std::logic_error("case parameter '" + key + "' was neither given nor declared with a default");
  return it->second;
}

nlohmann::json CaseValues::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& k : reported_)
    if (const auto it = values_.find(k); it != values_.end()) out[k] = it->second;
  return out;
}

CaseSchema::CaseSchema(std::string owner, std::vector<CaseParam> params) : owner_(std::move(owner)), params_(std::move(params)) {}

std::vector<std::string> CaseSchema::describe() const {
  std::vector<std::string> out;
  for (const auto& p : params_)
    out.push_back(fmt::format("{}: {}{}", p.key, p.meaning,
                              p.is_required ? " (required)" : p.fallback ? " (default " + p.fallback->dump() + ")" : ""));
  return out;
}

CaseValues CaseSchema::read(const YAML::Node& params, bool ignore_unknown, bool defer_required) const {
  CaseValues out;
  if (params && !params.IsNull() && !params.IsMap())
    throw ParamError("", fmt::format("{} case: params must be a mapping, got '{}'", owner_, hw::yaml_text(params)));
  auto find = [&](const std::string& k) -> const CaseParam* {
    for (const auto& p : params_)
      if (p.key == k) return &p;
    return nullptr;
  };
  for (const auto& p : params_)
    if (p.reported) out.reported_.push_back(p.key);
  if (params && params.IsMap()) {
    for (auto it = params.begin(); it != params.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      const CaseParam* p = find(k);
      if (!p) {
        if (ignore_unknown) continue;
        std::set<std::string> keys;
        for (const auto& q : params_) keys.insert(q.key);
        throw ParamError(k, fmt::format("unknown {} parameter '{}' (accepted: {})", owner_, k, fmt::join(keys, ", ")));
      }
      const YAML::Node v = it->second;  // a copy: it->second is a temporary proxy
      // An explicit YAML tag (`!!str 1024`, `!foo 1024`) is not read by this loader: refused rather
      // than ignored (issue 22's third trial: `m: !!str 1024` had run as the integer 1024, while
      // `m: "1024"` is refused as a quoted text). Plain ("?"), quoted ("!") and built ("") nodes pass.
      if (const std::string& tag = v.Tag(); !tag.empty() && tag != "?" && tag != "!")
        throw ParamError(k, fmt::format("{} parameter '{}' carries the YAML tag '{}', which this loader does not read; remove it", owner_, k,
                                        hw::printable(tag.rfind("tag:yaml.org,2002:", 0) == 0 ? "!!" + tag.substr(18) : tag)));
      auto bad_type = [&](const std::string& what) -> ParamError {
        return ParamError(k, fmt::format("{} parameter '{}' must be {}{}, got '{}'", owner_, k, p->expected.empty() ? what : p->expected,
                                         quoted(v) ? " (unquoted)" : "", hw::yaml_text(v)));
      };
      auto check_range = [&](double x) {
        const bool low = p->min && (p->min_exclusive ? !(x > *p->min) : !(x >= *p->min));
        const bool high = p->max && !(x <= *p->max);
        if (!low && !high) return;
        std::string range = p->expected;
        if (range.empty()) {
          if (p->min && p->max)
            range = p->min_exclusive ? fmt::format("> {} and <= {}", number_text(*p->min), number_text(*p->max))
                                     : fmt::format("in {}..{}", number_text(*p->min), number_text(*p->max));
          else if (p->min) range = fmt::format("{} {}", p->min_exclusive ? ">" : ">=", number_text(*p->min));
          else range = fmt::format("<= {}", number_text(*p->max));
        }
        throw ParamError(k, fmt::format("{} parameter '{}' must be {}, got {}", owner_, k, range, hw::yaml_text(v)));
      };
      nlohmann::json value;
      switch (p->kind) {
        case CaseParam::Kind::Integer:
        case CaseParam::Kind::Integer64: {
          if (!v.IsScalar() || quoted(v)) throw bad_type("an integer");
          if (hw::leading_zero_integer(v.Scalar()))
            throw ParamError(k, fmt::format("{} parameter '{}' = {}: a whole number with a leading zero (YAML 1.1 reads it as octal); "
                                            "write it without the zero", owner_, k, v.Scalar()));
          long long x = 0;
          if (!YAML::convert<long long>::decode(v, x)) {
            // A whole number too large for 64 bits is out of range, not a word.
            const std::string& t = v.Scalar();
            const size_t digits = t.find_first_not_of("+-") == 1 ? 1 : 0;
            if (!t.empty() && t.size() > digits && t.find_first_not_of("0123456789", digits) == std::string::npos)
              throw ParamError(k, fmt::format("{} parameter '{}' = {} is out of range", owner_, k, v.Scalar()));
            throw bad_type("an integer");
          }
          if (p->kind == CaseParam::Kind::Integer && (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max()))
            throw ParamError(k, fmt::format("{} parameter '{}' = {} is out of range", owner_, k, x));
          check_range(double(x));
          value = int64_t(x);
          break;
        }
        case CaseParam::Kind::Number: {
          double x = 0;
          if (!v.IsScalar() || quoted(v) || !YAML::convert<double>::decode(v, x) || !std::isfinite(x)) throw bad_type("a number");
          check_range(x);
          value = x;
          break;
        }
        case CaseParam::Kind::Flag: {
          bool b = false;
          if (!v.IsScalar() || quoted(v) || !YAML::convert<bool>::decode(v, b)) throw bad_type("true or false");
          value = b;
          break;
        }
        case CaseParam::Kind::Name: {
          if (!v.IsScalar()) throw bad_type(p->choices.empty() ? "a name" : words(p->choices));
          if (!p->choices.empty() && std::find(p->choices.begin(), p->choices.end(), v.Scalar()) == p->choices.end())
            throw ParamError(k, fmt::format("{} parameter '{}' must be {}, got '{}'", owner_, k,
                                            p->expected.empty() ? words(p->choices) : p->expected, v.Scalar()));
          value = v.Scalar();
          break;
        }
        case CaseParam::Kind::Mapping:
          if (!v.IsMap()) throw bad_type("a mapping");
          out.nodes_[k] = v;
          break;
        case CaseParam::Kind::Node:
          out.nodes_[k] = v;
          break;
      }
      if (!value.is_null()) out.values_[k] = value;
      out.given_[k] = true;
      out.order_.push_back(k);
    }
  }
  for (const auto& p : params_) {
    if (out.given(p.key)) continue;
    if (p.is_required) out.missing_.emplace_back(p.key, fmt::format("{} parameter '{}' is missing ({})", owner_, p.key, p.meaning));
    if (p.fallback) out.values_[p.key] = *p.fallback;
  }
  if (!defer_required) out.require();
  return out;
}

void CaseValues::require() const {
  if (!missing_.empty()) throw missing_.front();
}

// ---- cases and scenarios ------------------------------------------------------------------

std::pair<int, std::string> Case::param_location(const std::string& k) const {
  const auto pl = param_lines.find(k);
  if (pl == param_lines.end() || pl->second.first <= 0) return {line, "cases[" + id + "].params." + k};
  const auto& [l, where] = pl->second;
  return {l, where == "defaults" ? "defaults." + k : "cases[" + id + "]." + where + "." + k};
}

uint64_t CaseGroup::size() const {
  uint64_t n = 1;
  for (const auto& s : sweep)
    if (__builtin_mul_overflow(n, uint64_t(s.values.size()), &n))
      throw std::overflow_error(fmt::format("case group '{}': its sweep lists multiply to more than 2^64 points", id));
  return n;
}

std::vector<size_t> CaseGroup::coordinates(uint64_t i) const {
  if (i >= size()) throw std::out_of_range(fmt::format("case group '{}': point {} of {}", id, i, size()));
  std::vector<size_t> at(sweep.size(), 0);
  for (size_t k = sweep.size(); k-- > 0;) {
    at[k] = size_t(i % sweep[k].values.size());
    i /= sweep[k].values.size();
  }
  return at;
}

std::string CaseGroup::point_id(uint64_t i) const {
  const std::vector<size_t> at = coordinates(i);
  std::string out = id;
  for (size_t k = 0; k < sweep.size(); ++k) out += "/" + sweep[k].key + "=" + sweep[k].texts[at[k]];
  return out;
}

YAML::Node CaseGroup::point_params(uint64_t i) const {
  const std::vector<size_t> at = coordinates(i);
  YAML::Node out = YAML::Clone(params);
  // Clones of the values too: assigning a node of another document would merge that document's
  // node memory into the point's.
  for (size_t k = 0; k < sweep.size(); ++k) out[sweep[k].key] = YAML::Clone(sweep[k].values[at[k]]);
  return out;
}

Case CaseGroup::point(uint64_t i) const {
  std::optional<Measured> m;
  if (const auto it = measured.find(i); it != measured.end()) m = it->second;
  return Case{point_id(i), point_params(i), m, tolerance_pct, line, param_lines};
}

void Scenario::add_group(CaseGroup g) {
  group_first.push_back(group_first.empty() ? 0 : group_first.back() + groups.back().size());
  groups.push_back(std::move(g));
}

uint64_t Scenario::case_count() const {
  if (!cases.empty() || groups.empty()) return cases.size();
  return group_first.back() + groups.back().size();
}

std::pair<const CaseGroup*, uint64_t> Scenario::group_of(uint64_t i) const {
  if (groups.empty() || i >= group_first.back() + groups.back().size())
    throw std::out_of_range(fmt::format("scenario '{}': case {} of {}", name, i, groups.empty() ? 0 : group_first.back() + groups.back().size()));
  const size_t g = size_t(std::upper_bound(group_first.begin(), group_first.end(), i) - group_first.begin()) - 1;
  return {&groups[g], i - group_first[g]};
}

Case Scenario::case_at(uint64_t i) const {
  if (!cases.empty()) return cases.at(size_t(i));
  const auto [g, j] = group_of(i);
  return g->point(j);
}

YAML::Node Scenario::section(const std::string& key) const {
  const auto it = sections.find(key);
  if (it != sections.end()) return it->second;
  static const YAML::Node empty = YAML::Load("{}");
  return empty[key];  // a key the (const) empty mapping lacks: an undefined node, false in a test
}

int Scenario::section_line(const std::string& key) const {
  const auto it = section_lines.find(key);
  return it == section_lines.end() ? 0 : it->second;
}

double median(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("median of no values");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string csv_quoted(std::string t) {
  return hw::csv_cell(t);  // escaped, a formula lead ('=', '+', '-', '@') neutralised with a "'", quoted
}

// ---- the registry -------------------------------------------------------------------------

// Each model's spec accessor, defined in the model's own folder.
#define FUSESIM_MODEL(accessor) const ModelSpec& accessor();
#include "models/registry.inc"
#undef FUSESIM_MODEL

const std::vector<const ModelSpec*>& specs() {
  static const std::vector<const ModelSpec*> all{
#define FUSESIM_MODEL(accessor) &accessor(),
#include "models/registry.inc"
#undef FUSESIM_MODEL
  };
  return all;
}

const ModelSpec* find_spec(const std::string& name) {
  for (const ModelSpec* s : specs())
    if (s->name == name) return s;
  return nullptr;
}

std::string model_names() {
  std::string out;
  for (const ModelSpec* s : specs()) out += (out.empty() ? "" : ", ") + s->name;
  return out;
}

namespace {
/// Add `d` unless the same key is already declared; a second, different declaration of one key is a
/// programming error (two models naming one concept differently).
void add_once(hw::ParamRegistry& r, const hw::ParamDecl& d) {
  if (const hw::ParamDecl* had = r.find(d.key)) {
    if (had->quantity != d.quantity || had->lower != d.lower || had->upper != d.upper || had->description != d.description)
      throw std::logic_error("hardware parameter '" + d.key + "' is declared twice with different units, bounds or descriptions");
    return;
  }
  r.add({d});
}
}  // namespace

const hw::ParamRegistry& builtin_registry() {
  static const hw::ParamRegistry reg = [] {
    hw::ParamRegistry r;
    for (const ModelSpec* s : specs()) {
      if (s->hardware)
        for (const auto& h : s->hardware(nullptr)) add_once(r, h.decl);
      for (const auto& d : s->documented) add_once(r, d);
      for (const auto& t : s->tables) r.add_table(t);
    }
    for (const auto& d : hw::vocab::machine_description()) add_once(r, d);
    return r;
  }();
  return reg;
}

hw::Hardware load_hardware(const std::string& path) { return hw::Hardware::load(path, builtin_registry()); }

std::vector<std::string> required_hardware_keys(const std::string& model, const hw::Hardware& hw) {
  std::vector<std::string> keys;
  const ModelSpec* s = find_spec(model);
  if (!s || !s->hardware) return keys;
  for (const auto& h : s->hardware(&hw))
    if (h.required() && std::find(keys.begin(), keys.end(), h.decl.key) == keys.end()) keys.push_back(h.decl.key);
  return keys;
}

const std::vector<std::string>& unread_hardware_keys() {
  static const std::vector<std::string> keys = [] {
    std::set<std::string> read;
    for (const ModelSpec* s : specs())
      if (s->hardware)
        for (const auto& h : s->hardware(nullptr)) read.insert(h.decl.key);
    std::vector<std::string> out;
    // Documented keys first (the machine description, then each model's), as they are declared.
    for (const auto& d : hw::vocab::machine_description())
      if (!read.count(d.key)) out.push_back(d.key);
    for (const ModelSpec* s : specs())
      for (const auto& d : s->documented)
        if (!read.count(d.key) && std::find(out.begin(), out.end(), d.key) == out.end()) out.push_back(d.key);
    return out;
  }();
  return keys;
}

bool is_unread_hardware_key(const std::string& key) {
  const auto& u = unread_hardware_keys();
  return std::find(u.begin(), u.end(), key) != u.end();
}

}  // namespace fusesim::models
