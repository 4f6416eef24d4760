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

}  // namespace

nlohmann::json run_ttft_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  static const std::set<std::string> known{"base", "fused", "prompt_tokens", "batch", "chunk_tokens", "layers", "ttft_base_ms"};
  for (auto it = p.begin(); it != p.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!known.count(k))
      throw std::invalid_argument(fmt::format("unknown ttft parameter '{}' (accepted: {})", k, fmt::join(known, ", ")));
  }
  if (trace)
    throw std::invalid_argument("the ttft model composes layer predictions and has no timeline of its own: trace the layer "
                                "with a gemm_ar scenario (the base or fused parameters of this case, with m = the chunk size)");
  for (const char* arm : {"base", "fused"})
    if (!p[arm] || !p[arm].IsMap())
      throw std::invalid_argument(fmt::format("ttft parameter '{}' {} (expected a mapping of gemm_ar parameters)", arm,
                                              p[arm] ? "is not a mapping" : "is missing"));
  // The two arms are the same layer run two ways: same shape and group; M comes from the chunks.
  for (const char* arm : {"base", "fused"})
    if (p[arm]["m"])
      throw std::invalid_argument(fmt::format("ttft parameter '{}' sets 'm': M is each chunk's token count (chunk_tokens), "
                                              "not a layer parameter here", arm));
  auto whole = [&](const char* key) {
    const double v = need(p, key);
    if (v < 1 || v != std::floor(v))
      throw std::invalid_argument(fmt::format("ttft parameter '{}' must be a whole number >= 1 (got {})", key, v));
    return v;
  };
  const double tokens = whole("prompt_tokens") * whole("batch"), chunk = whole("chunk_tokens");
  // A count given by hand is whole; a fitted one (layer_fits) is an average over the prompt's calls.
  if (p["layers"] && p["layers"].IsMap())
    throw std::invalid_argument("ttft parameter 'layers' {fit: NAME} is resolved by the scenario's layer_fits; run the case "
                                "through its scenario or give a number");
  const double layers = need(p, "layers"), base_ms = need(p, "ttft_base_ms");
  if (!(layers > 0)) throw std::invalid_argument(fmt::format("ttft parameter 'layers' must be > 0 (got {})", layers));  // before any simulation
  if (base_ms <= 0) throw std::invalid_argument(fmt::format("ttft parameter 'ttft_base_ms' must be > 0 (got {})", base_ms));
  constexpr double kMaxChunks = 4096;  // 67M tokens at 16384 per chunk: far beyond any prefill, and ~10 s to simulate
  if (std::ceil(tokens / chunk) > kMaxChunks)
    throw std::invalid_argument(fmt::format("ttft parameter 'batch' x 'prompt_tokens' = {} tokens makes {} chunks of {}; at most {} "
                                            "chunks are simulated", tokens, std::ceil(tokens / chunk), chunk, kMaxChunks));
  // One arm's layer call at M rows (the arm's parameters with m set); an error names the arm first,
  // so the loader points at its line.
  auto arm_case = [&](const char* arm, int64_t m) {
    YAML::Node q = YAML::Clone(p[arm]);
    q["m"] = m;
    try {
      return run_gemm_ar_case(hw, q, nullptr);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("ttft parameter '{}': {}", arm, e.what()));
    }
  };
  double delta_us = 0, base_layer_us = 0;
  nlohmann::json chunks = nlohmann::json::array(), base_params, fused_params;
  for (double done = 0; done < tokens; done += chunk) {
    const int64_t m = int64_t(std::min(chunk, tokens - done));
    const auto br = arm_case("base", m), fr = arm_case("fused", m);
    if (chunks.empty()) {  // the arms' shapes do not change with M: check them on the first chunk
      base_params = br["params"];
      fused_params = fr["params"];
      for (auto* arm : {&base_params, &fused_params}) arm->erase("m"), arm->erase("m_padded");
      for (const char* key : {"n", "k", "world_size", "quant"})
        if (base_params[key] != fused_params[key])
          throw std::invalid_argument(fmt::format("ttft parameter 'fused' runs {} = {} but 'base' {} = {}: both arms must be "
                                                  "the same layer (n, k, world_size, quant)",
                                                  key, fused_params[key].dump(), key, base_params[key].dump()));
    }
    const double b = br["predicted_us"].get<double>(), f = fr["predicted_us"].get<double>();
    delta_us += f - b;
    base_layer_us += b;
    chunks.push_back({{"m", m}, {"base_us", b}, {"fused_us", f}});
  }
  nlohmann::json one{{"params", {{"prompt_tokens", int64_t(need(p, "prompt_tokens"))}, {"batch", int64_t(need(p, "batch"))},
                                  {"chunk_tokens", int64_t(chunk)}, {"layers", 1.0}, {"ttft_base_ms", base_ms},
                                  {"base", base_params}, {"fused", fused_params}}},
                     {"saving_per_layer_forward_us", -delta_us},
                     {"base_layer_forward_us", base_layer_us},
                     {"chunks", chunks},
                     {"phases", nlohmann::json::array()}};
  return ttft_at_layers(one, layers);
}

nlohmann::json ttft_at_layers(const nlohmann::json& one_layer, double layers) {
  nlohmann::json r = one_layer;
  const double base_ms = r["params"]["ttft_base_ms"].get<double>();
  const double delta_us = -r["saving_per_layer_forward_us"].get<double>();
  const double base_layer_us = r["base_layer_forward_us"].get<double>();
  if (!(layers > 0)) throw std::invalid_argument(fmt::format("ttft parameter 'layers' must be > 0 (got {})", layers));
  if (layers * base_layer_us >= base_ms * 1e3)
    throw std::invalid_argument(fmt::format(
        "ttft parameter 'ttft_base_ms' ({} ms) is shorter than the base arm's {:.4g} layers alone ({:.1f} ms at the model's "
        "{:.1f} us per layer over the prompt): the measured base TTFT, the layer count or the shape is wrong",
        base_ms, layers, layers * base_layer_us / 1e3, base_layer_us));
  const double pred_us = base_ms * 1e3 + layers * delta_us;
  r["params"]["layers"] = layers;
  r["predicted_us"] = pred_us;
  r["ttft_change_pct"] = (pred_us - base_ms * 1e3) / (base_ms * 1e3) * 100;
  r["layer_share_of_ttft_pct"] = layers * base_layer_us / (base_ms * 1e3) * 100;
  return r;
}

nlohmann::json break_even_point(const hw::Hardware& hw, const GemmArConfig& fused, int64_t m) {
  GemmArConfig f = fused, s = fused, r = fused;
  f.mode = "fused-sdma";
  f.m = s.m = r.m = m;
  s.mode = "split-sdma";
  r.mode = "rccl";
  s.gather_dtype = r.gather_dtype = "bf16";
  s.gather_transport = r.gather_transport = "sdma";
  s.fuse_quantize = r.fuse_quantize = false;
  return {{"m", m}, {"fused_us", simulate_gemm_ar(hw, f).total_us}, {"split_us", simulate_gemm_ar(hw, s).total_us},
          {"rccl_us", simulate_gemm_ar(hw, r).total_us}};
}

BreakEven break_even(const hw::Hardware& hw, const GemmArConfig& fused_in, int64_t max_m) {
  BreakEven out;
  out.curve = nlohmann::json::array();
  GemmArConfig fused = fused_in;
  fused.mode = "fused-sdma";
  const int64_t step = int64_t(fused.world_size) * block_m(fused.quant);
  auto eval = [&](int64_t m) {
    out.curve.push_back(break_even_point(hw, fused, m));
    const auto& p = out.curve.back();
    const double tf = p["fused_us"].get<double>();
    return std::make_pair(tf < p["split_us"].get<double>(), tf < p["rccl_us"].get<double>());
  };
  // The fused and split kernels pad M up to a multiple of ws*BLOCK_M; the RCCL baseline does not. So
  // over each padding step (k*step, (k+1)*step] the padded paths cost the same while the baseline
  // grows with M: the step's first M is where the fused path is worst off. Both ends of every step up
  // to max_m are evaluated.
  std::vector<int64_t> left, right;
  for (int64_t m = step; m <= max_m; m += step) {
    left.push_back(m - step + 1);
    right.push_back(m);
  }
  // A max_m inside a step: that step's part up to max_m is searched too (it was left out, so a
  // claim "wins up to max_m" could rest on M it never evaluated).
  const int64_t covered = right.empty() ? 0 : right.back();
  if (max_m > covered) {
    left.push_back(covered + 1);
    right.push_back(max_m);
  }
  std::vector<std::pair<bool, bool>> win_left, win_right;
  for (size_t i = 0; i < left.size(); ++i) {
    win_left.push_back(eval(left[i]));
    win_right.push_back(eval(right[i]));
  }
  auto search = [&](bool second) -> int64_t {
    auto pick = [&](const std::pair<bool, bool>& w) { return second ? w.second : w.first; };
    // First step from which the fused path wins at the start of every step (hence everywhere);
    // size() when it loses at the start of the last one.
    const int n = int(left.size());
    if (n == 0) return -1;
    int first = n;
    for (int i = n - 1; i >= 0; --i) {
      if (!pick(win_left[i])) break;
      first = i;
    }
    if (first == 0) return left[0];
    // In the step before, the fused time is constant and the other grows with M: bisect for the
    // smallest M there from which it wins (if it wins at the step's end at all). For the last step
    // that is the only way to win: it wins from there to max_m, its end.
    const int prev = first - 1;
    if (!pick(win_right[prev])) return first < n ? left[first] : -1;
    int64_t lo = left[prev], hi = right[prev];  // lo loses, hi wins
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (pick(eval(mid))) hi = mid;
      else lo = mid;
    }
    return hi;
  };
  // The same over M that are multiples of the padding step only (no padding rows).
  auto search_aligned = [&](bool second) -> int64_t {
    int64_t from = -1;
    for (int i = int(right.size()) - 1; i >= 0; --i) {
      if (!(second ? win_right[i].second : win_right[i].first)) break;
      from = right[i];
    }
    return from;
  };
  out.m_vs_split = search(false);
  out.m_vs_rccl = search(true);
  out.m_vs_split_aligned = search_aligned(false);
  out.m_vs_rccl_aligned = search_aligned(true);
  return out;
}

}  // namespace fusesim::models
