#include "models/afd/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace fusesim::afd {

const std::vector<std::string>& afd_case_param_names() {
  static const std::vector<std::string> names{
      "path", "attention_ranks", "ffn_ranks", "tokens", "transport_sms", "hidden", "topk", "experts",
      "hybrid", "payload", "capacity", "combine_sms", "ffn_combine_sms", "grid_sync_exit", "seed",
      "skip_empty_finish", "rotate_channels", "inline_finish", "view"};
  return names;
}

AfdCase afd_case_from_yaml(const YAML::Node& params) {
  AfdCase c;
  if (!params) return c;
  if (!params.IsMap()) throw std::invalid_argument("afd case: params must be a mapping");
  const auto& names = afd_case_param_names();
  for (auto it = params.begin(); it != params.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (std::find(names.begin(), names.end(), k) == names.end())
      throw std::invalid_argument(fmt::format("afd case: unknown param '{}' (accepted: {})", k, fmt::join(names, ", ")));
    const YAML::Node& v = it->second;
    try {
      if (k == "path") c.path = v.as<std::string>();
      else if (k == "attention_ranks") c.attention_ranks = v.as<int>();
      else if (k == "ffn_ranks") c.ffn_ranks = v.as<int>();
      else if (k == "tokens") c.tokens = v.as<int>();
      else if (k == "transport_sms") c.transport_sms = v.as<int>();
      else if (k == "hidden") c.hidden = v.as<int>();
      else if (k == "topk") c.topk = v.as<int>();
      else if (k == "experts") c.experts = v.as<int>();
      else if (k == "capacity") c.capacity = v.as<int>();
      else if (k == "combine_sms") c.combine_sms = v.as<int>();
      else if (k == "ffn_combine_sms") c.ffn_combine_sms = v.as<int>();
      else if (k == "seed") c.seed = v.as<uint64_t>();
      else if (k == "view") c.view = v.as<std::string>();
      else if (k == "hybrid") {
        const std::string s = v.as<std::string>();
        if (s == "on" || s == "true") c.hybrid = true;
        else if (s == "off" || s == "false") c.hybrid = false;
        else throw std::invalid_argument("expected on|off");
      } else if (k == "payload") {
        const std::string s = v.as<std::string>();
        if (s == "bf16" || s == "fp16") c.dtype_bytes = 2;
        else if (s == "fp8") c.dtype_bytes = 1;
        else if (s == "fp32") c.dtype_bytes = 4;
        else throw std::invalid_argument("expected bf16|fp16|fp8|fp32");
      } else if (k == "grid_sync_exit") c.grid_sync_exit = v.as<bool>();
      else if (k == "skip_empty_finish") c.skip_empty_finish = v.as<bool>();
      else if (k == "rotate_channels") c.rotate_channels = v.as<bool>();
      else if (k == "inline_finish") c.inline_finish = v.as<bool>();
    } catch (const YAML::Exception& e) {
      throw std::invalid_argument(fmt::format("afd case: param '{}': {}", k, e.what()));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("afd case: param '{}': {}", k, e.what()));
    }
  }
  return c;
}

static nlohmann::json result_json(const AfdResult& r) {
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
  return {{"predicted_us", r.exchange_us}, {"phases", phases}, {"extra", extra}};
}

nlohmann::json run_afd_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace) {
  return result_json(simulate_afd(hw, afd_case_from_yaml(params), trace));
}

double AfdScenarioReport::median_abs_err_pct() const {
  if (points.empty()) return 0;
  std::vector<double> e;
  for (const auto& p : points) e.push_back(std::fabs(p.err_pct()));
  std::sort(e.begin(), e.end());
  const size_t n = e.size();
  return n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
}
double AfdScenarioReport::max_abs_err_pct() const {
  double m = 0;
  for (const auto& p : points) m = std::max(m, std::fabs(p.err_pct()));
  return m;
}

AfdScenarioReport evaluate_afd_scenario(const std::string& path, const std::string& root,
                                        const hw::ParamRegistry& registry, const hw::Hardware* hw_override) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw hw::FileError(path, e.mark.line + 1, "", e.what());
  }
  AfdScenarioReport rep;
  rep.scenario = doc["scenario"].as<std::string>("");
  rep.hardware = doc["hardware"].as<std::string>("");
  if (doc["model"].as<std::string>("") != "afd") throw hw::FileError(path, 0, "model", "expected 'afd'");
  std::unique_ptr<hw::Hardware> own;
  const hw::Hardware* hwp = hw_override;
  if (!hwp) {
    own = std::make_unique<hw::Hardware>(hw::Hardware::load(root + "/" + rep.hardware, registry));
    hwp = own.get();
  }
  if (doc["tolerance_pct"]) rep.tolerance_pct = doc["tolerance_pct"].as<double>();
  for (const auto& cs : doc["cases"]) {
    const std::string id = cs["id"].as<std::string>();
    std::vector<YAML::Node> variants;
    if (cs["sweep"]) {
      // Cartesian product of the sweep lists over the base params.
      variants.push_back(YAML::Clone(cs["params"]));
      for (auto it = cs["sweep"].begin(); it != cs["sweep"].end(); ++it) {
        std::vector<YAML::Node> next;
        for (const auto& base : variants)
          for (const auto& v : it->second) {
            YAML::Node n = YAML::Clone(base);
            n[it->first.as<std::string>()] = YAML::Node(v);
            next.push_back(n);
          }
        variants = next;
      }
    } else {
      variants.push_back(cs["params"]);
    }
    for (const auto& params : variants) {
      AfdCase c;
      try {
        c = afd_case_from_yaml(params);
      } catch (const std::invalid_argument& e) {
        throw hw::FileError(path, cs.Mark().line + 1, "cases." + id + ".params", e.what());
      }
      const AfdResult r = simulate_afd(*hwp, c, nullptr);
      nlohmann::json pj = result_json(r);
      pj["id"] = id;
      pj["params"] = {{"path", c.path}, {"attention_ranks", c.attention_ranks}, {"ffn_ranks", c.ffn_ranks},
                      {"tokens", c.tokens}, {"transport_sms", c.transport_sms}, {"hybrid", c.hybrid}};
      const YAML::Node m = cs["measured"];
      if (m && !cs["sweep"]) {
        if (m["value_us"]) {
          rep.points.push_back({id, "value_us", m["value_us"].as<double>(), r.exchange_us});
          pj["measured_us"] = m["value_us"].as<double>();
        }
        if (m["period_us"]) {
          rep.points.push_back({id, "period_us", m["period_us"].as<double>(), r.period_us});
          pj["measured_period_us"] = m["period_us"].as<double>();
        }
        if (m["kernels"] && c.tokens >= 128) {
          for (const auto& k : m["kernels"]) {
            const int d = k["device"].as<int>();
            const std::string kn = k["kernel"].as<std::string>();
            const double dur = k["end_us"].as<double>() - k["start_us"].as<double>();
            for (const auto& ks : r.kernels)
              if (ks.device == d && ks.kernel == kn)
                rep.kernel_points.push_back({id, fmt::format("dev{}/{}", d, kn), dur, ks.end_us - ks.start_us});
          }
        }
      }
      rep.predictions.push_back(pj);
    }
  }
  return rep;
}

}  // namespace fusesim::afd
