// fusesim trace: kernel category rules (a YAML rule table) and GEMM operator shape rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibrate/trace/kineto_reader.hpp"
#include "hw/name_pattern.hpp"

namespace fusesim::trace {

/// How a category counts in the overlap analysis.
enum class OpClass : uint8_t { compute, communication, copy };
const char* to_string(OpClass c);

struct CategoryInfo {
  std::string name;   ///< e.g. "gemm"
  std::string label;  ///< human label, e.g. "GEMM"
  OpClass cls = OpClass::compute;
};

/// One ordered rule: a GPU event whose name matches `pattern` (and kind, if set) gets category and
/// family. `source` is "file:rule N" for messages.
struct CategoryRule {
  int category = 0;  ///< index into CategoryTable::categories()
  std::string family;
  std::string pattern_text;
  hw::NamePattern pattern;  ///< searched anywhere in the name, case-insensitive (RE2 syntax)
  hw::NamePattern unless;   ///< optional: a name this also matches is not taken by the rule
  std::optional<GpuOpKind> kind;
  std::string source;
};

/// How to read a GEMM's M, N, K from a CPU operator's "Input Dims".
struct GemmOpRule {
  std::string op_text;
  hw::NamePattern op;   ///< matched (full match, case-sensitive) against the CPU operator name
  int a = 0, b = 1;  ///< input indices of the two operands
  bool b_is_nk = false;  ///< b laid out [N, K] (linear weights) instead of [K, N]
};

/// A GEMM shape joined from a CPU operator. batch = 1 for plain 2-D GEMMs.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  uint32_t a_dtype = 0, b_dtype = 0;  ///< StringTable ids in the operator's TraceFile
};

/// Result of classifying one event name.
struct Classification {
  int category = 0;
  std::string family;
};

/**
 * The rule table: categories with their class, ordered name rules (first match wins) and GEMM
 * operator rules. Loaded from YAML (see calibrate/trace/categories.yaml for the format).
 *
 * Errors: std::runtime_error naming the source and the offending key for a YAML syntax error, an
 * unknown key, a rule naming an undeclared category, a bad class or kind, or an invalid regex
 * (RE2 syntax, hw::NamePattern: lookaround and backreferences are refused; a rule's `unless` pattern
 * excludes what a lookahead would).
 */
class CategoryTable {
 public:
  /// The table shipped with fusesim (calibrate/trace/categories.yaml, embedded at build time).
  static CategoryTable builtin();
  /// Parse a full table from YAML text; `source` names it in errors (a path or "<builtin>").
  static CategoryTable from_yaml(const std::string& yaml_text, const std::string& source);
  static CategoryTable from_file(const std::string& path);

  /// Put the rules (and any new categories / gemm_ops) of a user file in front of this table's.
  void prepend_user_rules_file(const std::string& path);
  void prepend_user_rules(const std::string& yaml_text, const std::string& source);

  /// The first rule matching `name` (and not its `unless`) and kind. Linear in the name's length per rule.
  Classification classify(const std::string& name, GpuOpKind kind) const;
  const std::vector<CategoryInfo>& categories() const { return categories_; }
  const CategoryInfo& category(int i) const { return categories_.at(static_cast<size_t>(i)); }
  /// Index of a category by name, -1 if absent.
  int find(const std::string& name) const;
  const std::vector<CategoryRule>& rules() const { return rules_; }

  /// The GEMM rule for a CPU operator name (full match), or null.
  const GemmOpRule* gemm_rule(const std::string& op_name) const;
  /// M, N, K (and batch) of a CPU operator under its rule; nullopt when the dims do not fit (a
  /// negative dim, a product beyond int64, b's K differing from a's).
  static std::optional<GemmShape> gemm_shape(const GemmOpRule& rule, const TraceFile& tf,
                                             const CpuOp& op);

 private:
  void merge(const std::string& yaml_text, const std::string& source, bool front, bool full);
  std::vector<CategoryInfo> categories_;
  std::vector<CategoryRule> rules_;
  std::vector<GemmOpRule> gemm_ops_;
  int default_category_ = -1;
};

/// The built-in YAML text (generated from categories.yaml).
extern const char* const kBuiltinCategoriesYaml;

}  // namespace fusesim::trace
