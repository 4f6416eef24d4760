// The one typed reader of a scenario case's parameters, for every model: each model declares its
// parameters (kind, meaning, required or default, choices, range) beside its run function; the
// reader refuses unknown keys (listing the accepted ones), values of the wrong type (a quoted number
// or flag too: YAML makes it text), words outside the choices and numbers outside the range, and
// writes the params JSON. Every refusal is a ParamError carrying the key.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace fusesim::models {

/// An error about one case parameter: what() is the message for the user, key() the parameter it is
/// about ("" for the case as a whole). The scenario layer names the key's file line from it.
class ParamError : public std::invalid_argument {
 public:
  /// `detail`: the message without its naming of the key, for a caller that names the key its own way
  /// (a command-line flag); empty: the whole message.
  ParamError(std::string key, const std::string& what, std::string detail = "")
      : std::invalid_argument(what), key_(std::move(key)), detail_(detail.empty() ? what : std::move(detail)) {}
  const std::string& key() const { return key_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string key_, detail_;
};

/// One declared case parameter (built with the named constructors and the chained setters).
struct CaseParam {
  enum class Kind { Integer, Integer64, Number, Flag, Name, Mapping, Node };
  std::string key;
  Kind kind = Kind::Node;
  std::string meaning;           ///< what it is: the listing, and the '... is missing (MEANING)' message
  bool is_required = false;
  std::optional<nlohmann::json> fallback;  ///< the default (written into the params JSON when not given)
  std::vector<std::string> choices;        ///< Name: the accepted words (empty: any text)
  std::optional<double> min, max;          ///< Integer/Number: bounds (inclusive; min exclusive if set below)
  bool min_exclusive = false;
  std::string expected;          ///< replaces the generated wording of what is expected ("an integer", ">= 1")
  bool reported = true;          ///< written into the params JSON
  /// A setting the user chooses for a given shape (a knob), searched by `fusesim tune`: its
  /// candidates are its choices (Name, less `not_searched`), false and true (Flag), or the ladder
  /// 1, 2, 3, 4, 6, 8, 12, ... (powers of two and 1.5 x them) within [min, max] (Integer).
  bool knob = false;
  std::vector<std::string> not_searched;  ///< choices a search leaves out (e.g. a mode that is not the same call)

  static CaseParam integer(std::string key, std::string meaning);    ///< a whole number that fits an int
  static CaseParam integer64(std::string key, std::string meaning);  ///< a whole number (64 bits)
  /// A tensor dimension or token count: a whole number in [1, kMaxDimension]. The bound keeps every
  /// product a model forms of two or three dimensions and a dtype size inside int64 and exact in a
  /// double; no real case comes near it (a scenario M of 2^63 - 1 overflowed the padded M and
  /// reached the flow network as negative bytes; `breakeven --max-m` of it never ended).
  static CaseParam dimension(std::string key, std::string meaning);
  static constexpr int64_t kMaxDimension = int64_t(1) << 31;
  static CaseParam number(std::string key, std::string meaning);     ///< a finite number
  static CaseParam flag(std::string key, std::string meaning);       ///< true or false, unquoted
  static CaseParam name(std::string key, std::string meaning);       ///< a word (text)
  static CaseParam mapping(std::string key, std::string meaning);    ///< a mapping (read by the model)
  static CaseParam node(std::string key, std::string meaning);       ///< any value (checked by the model)
  CaseParam required() &&;
  CaseParam otherwise(nlohmann::json value) &&;  ///< the default
  CaseParam one_of(std::vector<std::string> words) &&;
  CaseParam at_least(double v) &&;
  CaseParam above(double v) &&;   ///< exclusive lower bound
  CaseParam at_most(double v) &&;
  CaseParam expecting(std::string text) &&;
  CaseParam unreported() &&;
  /// Mark as a knob (see `knob`); `not_searched`: choices a search must leave out.
  CaseParam tunable(std::vector<std::string> not_searched = {}) &&;
};

/// The values of one case read by a CaseSchema: the given ones, and the defaults of the rest.
class CaseValues {
 public:
  bool given(const std::string& key) const { return given_.count(key) != 0; }
  /// Whether the key has a value (given, or declared with a default).
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  /// Keys given, in the order of the params mapping.
  const std::vector<std::string>& given_keys() const { return order_; }
  int64_t integer(const std::string& key) const { return at(key).get<int64_t>(); }
  double number(const std::string& key) const { return at(key).get<double>(); }
  bool flag(const std::string& key) const { return at(key).get<bool>(); }
  std::string name(const std::string& key) const { return at(key).get<std::string>(); }
  /// A Mapping or Node parameter as given (undefined node when not given).
  YAML::Node node(const std::string& key) const;
  /// The params JSON: every reported parameter with a value, in the declared type.
  nlohmann::json to_json() const;
  /// Throw the ParamError of the first required parameter not given (read() with defer_required
  /// leaves that check to the model, after its own validation of the values given).
  void require() const;

 private:
  friend class CaseSchema;
  const nlohmann::json& at(const std::string& key) const;
  std::map<std::string, nlohmann::json> values_;
  std::map<std::string, YAML::Node> nodes_;
  std::map<std::string, bool> given_;
  std::vector<std::string> order_;
  std::vector<std::string> reported_;
  std::vector<ParamError> missing_;
};

/// A model's case-parameter declarations. `owner` names the model in messages ("gemm_ar parameter
/// 'm' ...", "peer_copy probe parameter ...").
class CaseSchema {
 public:
  CaseSchema(std::string owner, std::vector<CaseParam> params);
  /**
   * Read `params` (a mapping, or null for none). Errors (ParamError carrying the key): a params
   * node that is not a mapping (key ""), an unknown key ("unknown OWNER parameter 'K' (accepted:
   * A, B, ...)"), a missing required key ("OWNER parameter 'K' is missing (MEANING)"), a value of the
   * wrong type or quoted ("OWNER parameter 'K' must be an integer (unquoted), got 'V'"), a whole
   * number out of its type's range ("... 'K' = V is out of range"), a word not among the choices or
   * a number outside the range ("... must be EXPECTED, got V"). With ignore_unknown, undeclared keys
   * are skipped (a model reading a selector key before its sub-schema); with defer_required, a
   * missing required key is left to CaseValues::require().
   */
  CaseValues read(const YAML::Node& params, bool ignore_unknown = false, bool defer_required = false) const;
  const std::vector<CaseParam>& params() const { return params_; }
  const std::string& owner() const { return owner_; }
  /// "key: meaning (default X)" per parameter, for listings.
  std::vector<std::string> describe() const;

 private:
  std::string owner_;
  std::vector<CaseParam> params_;
};

/**
 * A model's case struct T and its parameters: each declared parameter bound to the member it is read
 * into (or to a function setting members from it). A default-constructed T gives the defaults of the
 * parameters that are neither required nor declared with one, so the struct's initialisers are the
 * one place a default is written. `read` takes a case's read values (schema().read(params)).
 */
template <class T>
class CaseFields {
 public:
  struct Field {
    CaseParam param;
    std::function<void(T&, const CaseValues&)> set;  ///< copy the parameter's value into the struct
  };
  CaseFields(std::string owner, std::vector<Field> fields)
      : fields_(std::move(fields)), schema_(std::move(owner), params_of(fields_)) {}
  const CaseSchema& schema() const { return schema_; }
  /// A T from read values: each parameter with a value (given or default) set; a required one not
  /// given (read with defer_required) keeps the member's initialiser until CaseValues::require().
  T read(const CaseValues& v) const {
    T t{};
    for (const auto& f : fields_)
      if (v.has(f.param.key)) f.set(t, v);
    return t;
  }

 private:
  static std::vector<CaseParam> params_of(const std::vector<Field>& fields) {
    std::vector<CaseParam> out;
    for (const auto& f : fields) out.push_back(f.param);
    return out;
  }
  std::vector<Field> fields_;
  CaseSchema schema_;
};

/// Bind parameter `p` to member `m` of T (a bool, a whole number, a floating-point number or a
/// string); unless required or declared with a default, its default is a default T's member.
template <class T, class M>
typename CaseFields<T>::Field field(CaseParam p, M T::*m) {
  if (!p.is_required && !p.fallback) p.fallback = nlohmann::json(T{}.*m);
  const std::string key = p.key;
  return {std::move(p), [m, key](T& t, const CaseValues& v) {
            if constexpr (std::is_same_v<M, bool>) t.*m = v.flag(key);
            else if constexpr (std::is_integral_v<M>) t.*m = static_cast<M>(v.integer(key));
            else if constexpr (std::is_floating_point_v<M>) t.*m = v.number(key);
            else t.*m = v.name(key);
          }};
}

}  // namespace fusesim::models
