// fusesim trace: category rule table.
#include "calibrate/trace/categories.hpp"
#include "hw/io.hpp"

#include "hw/printable.hpp"
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace fusesim::trace {

const char* to_string(OpClass c) {
  switch (c) {
    case OpClass::compute: return "compute";
    case OpClass::communication: return "communication";
    case OpClass::copy: return "copy";
  }
  return "?";
}

namespace {

[[noreturn]] void bad(const std::string& source, const YAML::Node& n, const std::string& msg) {
  if (n.IsDefined() && n.Mark().line >= 0)
    throw std::runtime_error(fmt::format("{}:{}: {}", source, n.Mark().line + 1, msg));
  throw std::runtime_error(fmt::format("{}: {}", source, msg));
}

void check_keys(const std::string& source, const YAML::Node& map, const std::set<std::string>& allowed,
                const std::string& where) {
  if (!map.IsMap()) bad(source, map, fmt::format("{} must be a mapping", where));
  for (const auto& kv : map) {
    auto k = kv.first.as<std::string>();
    if (!allowed.count(k)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      bad(source, kv.first, fmt::format("unknown key \"{}\" in {} (allowed: {})", k, where, list));
    }
  }
}

std::string str_of(const std::string& source, const YAML::Node& n, const std::string& key) {
  try {
    return n.as<std::string>();
  } catch (const YAML::Exception&) {
    bad(source, n, fmt::format("\"{}\" must be a string", key));
  }
}

// A rules file's patterns are bounded one by one (RE2 memory) and together (instructions): 65000 rules
// of `x{1000}y{1000}` under the 4 MiB file bound had compiled for 69 s into 7.3 GB (a fresh-user trial).
// The built-in table's ~100 patterns compile to about 10^4 instructions.
constexpr int64_t kMaxRuleProgramBytes = int64_t(1) << 20;
constexpr int64_t kMaxRulesInstructions = 2'000'000;
constexpr int kMaxRulesPerFile = 4096;

hw::NamePattern compile(const std::string& source, const YAML::Node& n, const std::string& text, bool icase = true) {
  try {
    return hw::NamePattern::compile(text, "pattern", icase, kMaxRuleProgramBytes);
  } catch (const std::invalid_argument& e) {
    bad(source, n, e.what());
  }
}

}  // namespace

CategoryTable CategoryTable::builtin() {
  // Parsed and its patterns compiled once per process (a copy shares the compiled RE2
  // automata): a caller per input (the fuzz target, tests/fuzz) spent 80% of its time compiling them.
  static const CategoryTable table = from_yaml(kBuiltinCategoriesYaml, "<builtin categories.yaml>");
  return table;
}

CategoryTable CategoryTable::from_yaml(const std::string& yaml_text, const std::string& source) {
  CategoryTable t;
  t.merge(yaml_text, source, false, true);
  return t;
}

/// A rules/categories YAML, bounded (hw/io.hpp): /dev/zero or a FIFO is refused before it is read
/// (it was read whole: 4 GB).
static std::string slurp(const std::string& path) {
  return hw::read_input_file(path, "rules YAML (categories: ...)", hw::kMaxRulesFileBytes, "--rules/--categories");
}

CategoryTable CategoryTable::from_file(const std::string& path) { return from_yaml(slurp(path), path); }

void CategoryTable::prepend_user_rules_file(const std::string& path) { prepend_user_rules(slurp(path), path); }

void CategoryTable::prepend_user_rules(const std::string& yaml_text, const std::string& source) {
  merge(yaml_text, source, true, false);
}

int CategoryTable::find(const std::string& name) const {
  for (size_t i = 0; i < categories_.size(); ++i)
    if (categories_[i].name == name) return static_cast<int>(i);
  return -1;
}

void CategoryTable::merge(const std::string& yaml_text, const std::string& source, bool front, bool full) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw std::runtime_error(fmt::format("{}:{}: YAML syntax error: {}", source, e.mark.line + 1, hw::printable(e.msg)));
  }
  if (!root.IsMap()) bad(source, root, "expected a mapping with a \"rules\" list");
  check_keys(source, root, {"version", "default_category", "categories", "rules", "gemm_ops"}, "the rules file");

  if (auto cats = root["categories"]; cats) {
    if (!cats.IsMap()) bad(source, cats, "\"categories\" must be a mapping name -> {class, label}");
    for (const auto& kv : cats) {
      CategoryInfo ci;
      ci.name = kv.first.as<std::string>();
      check_keys(source, kv.second, {"class", "label"}, fmt::format("category \"{}\"", ci.name));
      auto cls = kv.second["class"] ? str_of(source, kv.second["class"], "class") : "compute";
      if (cls == "compute") ci.cls = OpClass::compute;
      else if (cls == "communication") ci.cls = OpClass::communication;
      else if (cls == "copy") ci.cls = OpClass::copy;
      else bad(source, kv.second["class"], fmt::format("class \"{}\" of category \"{}\" is not compute, communication or copy", cls, ci.name));
      ci.label = kv.second["label"] ? str_of(source, kv.second["label"], "label") : ci.name;
      int existing = find(ci.name);
      if (existing >= 0) categories_[static_cast<size_t>(existing)] = ci;
      else categories_.push_back(ci);
    }
  } else if (full) {
    bad(source, root, "missing \"categories\"");
  }

  if (auto d = root["default_category"]; d) {
    auto name = str_of(source, d, "default_category");
    default_category_ = find(name);
    if (default_category_ < 0) bad(source, d, fmt::format("default_category \"{}\" is not declared", name));
  } else if (full) {
    bad(source, root, "missing \"default_category\"");
  }

  std::vector<CategoryRule> rules;
  if (auto rs = root["rules"]; rs) {
    if (!rs.IsSequence()) bad(source, rs, "\"rules\" must be a list");
    if (rs.size() > size_t(kMaxRulesPerFile))
      bad(source, rs, fmt::format("{} rules, more than the {} a rules file may hold", rs.size(), kMaxRulesPerFile));
    int idx = 0;
    int64_t instructions = 0;
    for (const auto& r : rs) {
      ++idx;
      auto where = fmt::format("rule {}", idx);
      check_keys(source, r, {"category", "family", "pattern", "unless", "kind"}, where);
      if (!r["category"]) bad(source, r, fmt::format("{} lacks \"category\"", where));
      if (!r["pattern"]) bad(source, r, fmt::format("{} lacks \"pattern\"", where));
      CategoryRule rule;
      auto cat = str_of(source, r["category"], "category");
      rule.category = find(cat);
      if (rule.category < 0)
        bad(source, r["category"], fmt::format("{}: category \"{}\" is not declared under \"categories\"", where, cat));
      rule.family = r["family"] ? str_of(source, r["family"], "family") : "";
      rule.pattern_text = str_of(source, r["pattern"], "pattern");
      rule.pattern = compile(source, r["pattern"], rule.pattern_text);
      if (r["unless"]) rule.unless = compile(source, r["unless"], str_of(source, r["unless"], "unless"));
      instructions += rule.pattern.program_size() + rule.unless.program_size();
      if (instructions > kMaxRulesInstructions)
        bad(source, r["pattern"], fmt::format("{}: the rules' patterns up to here compile to {} instructions, more than the {} a rules "
                                              "file may take (write fewer or simpler patterns)",
                                              where, instructions, kMaxRulesInstructions));
      if (r["kind"]) {
        auto k = str_of(source, r["kind"], "kind");
        if (k == "kernel") rule.kind = GpuOpKind::kernel;
        else if (k == "memcpy") rule.kind = GpuOpKind::memcpy;
        else if (k == "memset") rule.kind = GpuOpKind::memset;
        else bad(source, r["kind"], fmt::format("{}: kind \"{}\" is not kernel, memcpy or memset", where, k));
      }
      rule.source = fmt::format("{}:{}", source, where);
      rules.push_back(std::move(rule));
    }
  } else if (!full && !root["gemm_ops"] && !root["categories"]) {
    bad(source, root, "a user rules file needs a \"rules\" list");
  }
  rules_.insert(front ? rules_.begin() : rules_.end(), rules.begin(), rules.end());

  std::vector<GemmOpRule> gemms;
  if (auto gs = root["gemm_ops"]; gs) {
    if (!gs.IsSequence()) bad(source, gs, "\"gemm_ops\" must be a list");
    if (gs.size() > size_t(kMaxRulesPerFile))
      bad(source, gs, fmt::format("{} gemm_ops entries, more than the {} a rules file may hold", gs.size(), kMaxRulesPerFile));
    int idx = 0;
    int64_t instructions = 0;
    for (const auto& g : gs) {
      ++idx;
      auto where = fmt::format("gemm_ops entry {}", idx);
      check_keys(source, g, {"op", "a", "b", "b_layout"}, where);
      if (!g["op"]) bad(source, g, fmt::format("{} lacks \"op\"", where));
      GemmOpRule rule;
      rule.op_text = str_of(source, g["op"], "op");
      rule.op = compile(source, g["op"], rule.op_text, false);
      if ((instructions += rule.op.program_size()) > kMaxRulesInstructions)
        bad(source, g["op"], fmt::format("{}: the gemm_ops patterns up to here compile to {} instructions, more than the {} a rules file "
                                         "may take", where, instructions, kMaxRulesInstructions));
      try {
        rule.a = g["a"] ? g["a"].as<int>() : 0;
        rule.b = g["b"] ? g["b"].as<int>() : 1;
      } catch (const YAML::Exception&) {
        bad(source, g, fmt::format("{}: \"a\" and \"b\" must be input indices", where));
      }
      auto layout = g["b_layout"] ? str_of(source, g["b_layout"], "b_layout") : "kn";
      if (layout != "kn" && layout != "nk") bad(source, g["b_layout"], fmt::format("{}: b_layout must be kn or nk", where));
      rule.b_is_nk = layout == "nk";
      gemms.push_back(std::move(rule));
    }
  }
  gemm_ops_.insert(front ? gemm_ops_.begin() : gemm_ops_.end(), gemms.begin(), gemms.end());
}

Classification CategoryTable::classify(const std::string& name, GpuOpKind kind) const {
  for (const auto& r : rules_) {
    if (r.kind && *r.kind != kind) continue;
    if (r.pattern.search(name) && !r.unless.search(name)) return {r.category, r.family};
  }
  if (kind != GpuOpKind::kernel) {
    int c = find("copy");
    if (c >= 0) return {c, to_string(kind)};
  }
  return {default_category_, ""};
}

const GemmOpRule* CategoryTable::gemm_rule(const std::string& op_name) const {
  for (const auto& g : gemm_ops_)
    if (g.op.full_match(op_name)) return &g;
  return nullptr;
}

std::optional<GemmShape> CategoryTable::gemm_shape(const GemmOpRule& rule, const TraceFile& tf,
                                                   const CpuOp& op) {
  auto n_in = static_cast<int>(op.inputs_count);
  if (rule.a >= n_in || rule.b >= n_in) return std::nullopt;
  const auto& ia = tf.inputs[op.inputs_begin + static_cast<uint32_t>(rule.a)];
  const auto& ib = tf.inputs[op.inputs_begin + static_cast<uint32_t>(rule.b)];
  if (ia.rank < 2 || ib.rank < 2) return std::nullopt;
  auto a = tf.dims_of(ia), b = tf.dims_of(ib);
  GemmShape s;
  s.k = a.back();
  if (b.size() == 2) {
    s.m = 1;
    for (size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] < 0 || __builtin_mul_overflow(s.m, a[i], &s.m)) return std::nullopt;  // not a real shape
  } else {
    s.m = a[a.size() - 2];
    for (size_t i = 0; i + 2 < b.size(); ++i)
      if (b[i] < 0 || __builtin_mul_overflow(s.batch, b[i], &s.batch)) return std::nullopt;
  }
  int64_t b_k = rule.b_is_nk ? b.back() : b[b.size() - 2];
  s.n = rule.b_is_nk ? b[b.size() - 2] : b.back();
  if (b_k != s.k) return std::nullopt;  // not the layout the rule claims
  if (s.m < 0 || s.n < 0 || s.k < 0) return std::nullopt;
  s.a_dtype = ia.dtype;
  s.b_dtype = ib.dtype;
  return s;
}

}  // namespace fusesim::trace
