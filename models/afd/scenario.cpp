#include "models/afd/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"

namespace fusesim::afd {

const std::vector<std::string>& afd_case_param_names() {
  static const std::vector<std::string> names{
      "path", "attention_ranks", "ffn_ranks", "tokens", "transport_sms", "hidden", "topk", "experts",
      "hybrid", "payload", "capacity", "combine_sms", "ffn_combine_sms", "grid_sync_exit", "seed",
      "skip_empty_finish", "rotate_channels", "inline_finish", "view"};
  return names;
}

namespace {
[[noreturn]] void wrong_type(const std::string& k, const std::string& expected, const YAML::Node& v) {
  throw std::invalid_argument(fmt::format("afd case: '{}' must be {}, got '{}'", k, expected, hw::yaml_text(v)));
}

/// A quoted scalar ("256", 'true') is text in YAML: refused where a number or a boolean is expected,
/// as any other wrong type is (yaml-cpp would convert it).
bool quoted(const YAML::Node& v) { return v.IsScalar() && v.Tag() == "!"; }

int as_int(const YAML::Node& v, const std::string& k) {
  long long x = 0;
  try {
    if (!v.IsScalar() || quoted(v)) wrong_type(k, "an integer (unquoted)", v);
    x = v.as<long long>();
  } catch (const YAML::Exception&) {
    wrong_type(k, "an integer", v);
  }
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    throw std::invalid_argument(fmt::format("afd case: '{}' = {} is out of range", k, x));
  return int(x);
}

bool as_bool(const YAML::Node& v, const std::string& k) {
  try {
    if (v.IsScalar() && !quoted(v)) return v.as<bool>();
  } catch (const YAML::Exception&) {
  }
  wrong_type(k, "true or false", v);
}

std::string as_string(const YAML::Node& v, const std::string& k, const std::string& expected) {
  if (!v.IsScalar()) wrong_type(k, expected, v);
  return v.Scalar();
}

/// The keys a case must give, with what they are (the message when one is missing).
const std::vector<std::pair<std::string, std::string>>& required_keys() {
  static const std::vector<std::pair<std::string, std::string>> r{
      {"attention_ranks", "Attention ranks A, >= 1"},
      {"ffn_ranks", "FFN ranks F, >= 1"},
      {"tokens", fmt::format("tokens per Attention rank, 1..{}", kMaxTokens)}};
  return r;
}
}  // namespace

AfdCase afd_case_from_yaml(const YAML::Node& params) {
  AfdCase c;
  if (params && !params.IsNull() && !params.IsMap()) throw std::invalid_argument("afd case: params must be a mapping");
  const auto& names = afd_case_param_names();
  if (params && params.IsMap()) {
    for (auto it = params.begin(); it != params.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      if (std::find(names.begin(), names.end(), k) == names.end())
        throw std::invalid_argument(fmt::format("afd case: unknown param '{}' (accepted: {})", k, fmt::join(names, ", ")));
      const YAML::Node v = it->second;  // a copy: it->second is a temporary proxy
      if (k == "path") c.path = as_string(v, k, "afd, afd_shared or masked");
      else if (k == "attention_ranks") c.attention_ranks = as_int(v, k);
      else if (k == "ffn_ranks") c.ffn_ranks = as_int(v, k);
      else if (k == "tokens") c.tokens = as_int(v, k);
      else if (k == "transport_sms") c.transport_sms = as_int(v, k);
      else if (k == "hidden") c.hidden = as_int(v, k);
      else if (k == "topk") c.topk = as_int(v, k);
      else if (k == "experts") c.experts = as_int(v, k);
      else if (k == "capacity") c.capacity = as_int(v, k);
      else if (k == "combine_sms") c.combine_sms = as_int(v, k);
      else if (k == "ffn_combine_sms") c.ffn_combine_sms = as_int(v, k);
      else if (k == "seed") {
        try {
          if (!v.IsScalar() || v.Scalar().empty() || v.Scalar()[0] == '-') wrong_type(k, "an integer >= 0", v);
          c.seed = v.as<uint64_t>();
        } catch (const YAML::Exception&) {
          wrong_type(k, "an integer >= 0", v);
        }
      } else if (k == "view") c.view = as_string(v, k, "span or collect");
      else if (k == "hybrid") {
        const std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "on" || s == "true") c.hybrid = true;
        else if (s == "off" || s == "false") c.hybrid = false;
        else wrong_type(k, "on or off", v);
      } else if (k == "payload") {
        const std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "bf16" || s == "fp16") c.dtype_bytes = 2;
        else if (s == "fp8") c.dtype_bytes = 1;
        else if (s == "fp32") c.dtype_bytes = 4;
        else wrong_type(k, "bf16, fp16, fp8 or fp32", v);
      } else if (k == "grid_sync_exit") c.grid_sync_exit = as_bool(v, k);
      else if (k == "skip_empty_finish") c.skip_empty_finish = as_bool(v, k);
      else if (k == "rotate_channels") c.rotate_channels = as_bool(v, k);
      else if (k == "inline_finish") c.inline_finish = as_bool(v, k);
      c.given.push_back(k);
    }
  }
  for (const auto& [k, what] : required_keys())
    if (!c.was_given(k)) throw std::invalid_argument(fmt::format("afd case: parameter '{}' is missing ({})", k, what));
  return c;
}

namespace {
/// The case's effective parameters: every model input, plus the what-if switches that were set.
nlohmann::json params_json(const AfdCase& c, bool cross_node) {
  nlohmann::json p = {{"path", c.path},
                      {"attention_ranks", c.attention_ranks},
                      {"ffn_ranks", c.ffn_ranks},
                      {"tokens", c.tokens},
                      {"transport_sms", c.transport_sms},
                      {"hidden", c.hidden},
                      {"dtype_bytes", c.dtype_bytes},
                      {"topk", c.topk},
                      {"experts", c.experts},
                      {"capacity", c.capacity},
                      {"seed", c.seed}};
  auto set = [&](const std::string& k, bool v) { return v || c.was_given(k); };
  if (cross_node) {
    p["hybrid"] = c.hybrid;  // the InfiniBand path's mode, given or not
    if (set("skip_empty_finish", c.skip_empty_finish)) p["skip_empty_finish"] = c.skip_empty_finish;
    if (set("inline_finish", c.inline_finish)) p["inline_finish"] = c.inline_finish;
  } else {
    // Settings only the NVLink-domain model reads.
    p["view"] = c.view;
    p["combine_sms"] = c.combine_sms > 0 ? c.combine_sms : c.transport_sms;
    if (set("ffn_combine_sms", c.ffn_combine_sms > 0)) p["ffn_combine_sms"] = c.ffn_combine_sms;
    if (set("grid_sync_exit", c.grid_sync_exit)) p["grid_sync_exit"] = c.grid_sync_exit;
  }
  if (set("rotate_channels", c.rotate_channels)) p["rotate_channels"] = c.rotate_channels;
  return p;
}

nlohmann::json result_json(const AfdCase& c, const AfdResult& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& k : r.kernels)
    phases.push_back({{"name", fmt::format("dev{}/{}", k.device, k.kernel)}, {"role", k.role},
                      {"start_us", k.start_us}, {"end_us", k.end_us}});
  nlohmann::json nics = nlohmann::json::array();
  for (const auto& n : r.nics)
    nics.push_back({{"device", n.device}, {"role", n.role}, {"atomics_in", n.atomics_in},
                    {"atomics_out", n.atomics_out}, {"inline_writes_out", n.inline_writes_out},
                    {"payload_writes", n.payload_writes}, {"polls", n.polls}});
  nlohmann::json extra = {{"span_us", r.span_us}, {"period_us", r.period_us}, {"channels", r.channels},
                          {"cross_node", r.cross_node}};
  if (!nics.empty()) extra["nic_ops_per_round_trip"] = nics;
  for (const auto& [k, v] : r.extra) extra[k] = v;
  nlohmann::json out = {{"params", params_json(c, r.cross_node)}, {"predicted_us", r.exchange_us},
                        {"phases", phases}, {"extra", extra}};
  if (!r.note.empty()) out["note"] = r.note;
  return out;
}

}  // namespace

nlohmann::json run_afd_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace) {
  const AfdCase c = afd_case_from_yaml(params);
  nlohmann::json out = result_json(c, simulate_afd(hw, c, trace));
  // A case with protocol what-ifs switched on also reports the same exchange without them, so its
  // predicted effect is on the case's own line.
  std::vector<std::string> on;
  AfdCase base = c;
  if (c.skip_empty_finish) on.push_back("skip_empty_finish"), base.skip_empty_finish = false;
  if (c.inline_finish) on.push_back("inline_finish"), base.inline_finish = false;
  if (c.rotate_channels) on.push_back("rotate_channels"), base.rotate_channels = false;
  if (!on.empty()) {
    const double without = simulate_afd(hw, base, nullptr).exchange_us, with = out["predicted_us"].get<double>();
    // A switch with no effect reports 0 (the two runs order their events differently and can differ
    // by rounding, 1e-13 us, which printed as -0.0).
    const double change = std::fabs(with - without) < 1e-9 ? 0.0 : with - without;
    out["whatif"] = {{"switches", on}, {"without_us", without}, {"change_us", change},
                     {"change_pct", change / without * 100.0}};
  }
  return out;
}

}  // namespace fusesim::afd
