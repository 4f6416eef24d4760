#include "models/serving.hpp"

#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/scenario.hpp"

namespace fusesim::models {
namespace {
double need(const YAML::Node& p, const char* key) {
  if (!p[key]) throw std::invalid_argument(fmt::format("ttft parameter '{}' is missing", key));
  try {
    return p[key].as<double>();
  } catch (const YAML::Exception&) {
    throw std::invalid_argument(fmt::format("ttft parameter '{}' must be a number", key));
  }
}

double layer_us(const hw::Hardware& hw, YAML::Node params, int64_t m) {
  params["m"] = m;
  return run_gemm_ar_case(hw, params, nullptr)["predicted_us"].get<double>();
}
}  // namespace

nlohmann::json run_ttft_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink*) {
  static const std::set<std::string> known{"base", "fused", "prompt_tokens", "batch", "chunk_tokens", "layers", "ttft_base_ms"};
  for (auto it = p.begin(); it != p.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!known.count(k))
      throw std::invalid_argument(fmt::format("unknown ttft parameter '{}' (accepted: {})", k, fmt::join(known, ", ")));
  }
  if (!p["base"] || !p["base"].IsMap() || !p["fused"] || !p["fused"].IsMap())
    throw std::invalid_argument("ttft parameters 'base' and 'fused' must be mappings of gemm_ar parameters");
  const double tokens = need(p, "prompt_tokens") * need(p, "batch"), chunk = need(p, "chunk_tokens");
  const double layers = need(p, "layers"), base_ms = need(p, "ttft_base_ms");
  if (tokens < 1 || chunk < 1 || layers < 1 || base_ms <= 0) throw std::invalid_argument("ttft parameters must be positive");
  const YAML::Node base = YAML::Clone(p["base"]), fused = YAML::Clone(p["fused"]);
  double delta_us = 0, base_layer_us = 0;
  nlohmann::json chunks = nlohmann::json::array();
  for (double done = 0; done < tokens; done += chunk) {
    const int64_t m = int64_t(std::min(chunk, tokens - done));
    const double b = layer_us(hw, base, m), f = layer_us(hw, fused, m);
    delta_us += f - b;
    base_layer_us += b;
    chunks.push_back({{"m", m}, {"base_us", b}, {"fused_us", f}});
  }
  const double pred_us = base_ms * 1e3 + layers * delta_us;
  return {{"params", {{"prompt_tokens", need(p, "prompt_tokens")}, {"batch", need(p, "batch")}, {"chunk_tokens", chunk},
                      {"layers", layers}, {"ttft_base_ms", base_ms}}},
          {"predicted_us", pred_us},
          {"ttft_change_pct", (pred_us - base_ms * 1e3) / (base_ms * 1e3) * 100},
          {"layer_share_of_ttft_pct", layers * base_layer_us / (base_ms * 1e3) * 100},
          {"saving_per_layer_forward_us", -delta_us},
          {"chunks", chunks},
          {"phases", nlohmann::json::array()}};
}

BreakEven break_even(const hw::Hardware& hw, const GemmArConfig& fused_in, int64_t max_m) {
  BreakEven out;
  out.curve = nlohmann::json::array();
  GemmArConfig fused = fused_in;
  fused.mode = "fused-sdma";
  const int64_t step = int64_t(fused.world_size) * block_m(fused.quant);
  auto eval = [&](int64_t m) {
    GemmArConfig f = fused, s = fused, r = fused;
    f.m = s.m = r.m = m;
    s.mode = "split-sdma";
    r.mode = "rccl";
    s.gather_dtype = r.gather_dtype = "bf16";
    s.gather_transport = r.gather_transport = "sdma";
    s.fuse_quantize = r.fuse_quantize = false;
    const double tf = simulate_gemm_ar(hw, f).total_us, ts = simulate_gemm_ar(hw, s).total_us, tr = simulate_gemm_ar(hw, r).total_us;
    out.curve.push_back({{"m", m}, {"fused_us", tf}, {"split_us", ts}, {"rccl_us", tr}});
    return std::make_pair(tf < ts, tf < tr);
  };
  std::vector<int64_t> grid;
  for (int64_t m = step; m <= max_m; m *= 2) grid.push_back(m);
  std::vector<std::pair<bool, bool>> wins;
  for (int64_t m : grid) wins.push_back(eval(m));
  auto search = [&](bool second) -> int64_t {
    // first index from which every scanned point wins
    int first = -1;
    for (int i = int(grid.size()) - 1; i >= 0; --i) {
      const bool w = second ? wins[i].second : wins[i].first;
      if (!w) break;
      first = i;
    }
    if (first < 0) return -1;
    if (first == 0) return grid[0];
    int64_t lo = grid[first - 1], hi = grid[first];  // lo loses, hi wins
    while (hi - lo > step) {
      int64_t mid = (lo + hi) / 2 / step * step;
      if (mid <= lo) mid = lo + step;
      const auto w = eval(mid);
      if (second ? w.second : w.first) hi = mid;
      else lo = mid;
    }
    return hi;
  };
  out.m_vs_split = search(false);
  out.m_vs_rccl = search(true);
  return out;
}

}  // namespace fusesim::models
