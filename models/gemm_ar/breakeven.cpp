// Break-even M of the fused path against the split path and the RCCL baseline (the gemm_ar model).
#include "models/gemm_ar/breakeven.hpp"

#include <vector>

namespace fusesim::models {

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

std::vector<Threshold> break_even_search(int64_t step, int64_t max_m, int comparisons,
                                         const std::function<std::vector<bool>(int64_t m)>& wins) {
  // The padded path pads M up to a multiple of the step; the other does not. So over each padding
  // step (k*step, (k+1)*step] the padded path costs the same while the other grows with M: the
  // step's first M is where the padded path is worst off. Both ends of every step up to max_m are
  // evaluated.
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
  std::vector<std::vector<bool>> win_left, win_right;
  for (size_t i = 0; i < left.size(); ++i) {
    win_left.push_back(wins(left[i]));
    win_right.push_back(wins(right[i]));
  }
  auto search = [&](int which) -> int64_t {
    // First step from which the path wins at the start of every step (hence everywhere);
    // size() when it loses at the start of the last one.
    const int n = int(left.size());
    if (n == 0) return -1;
    int first = n;
    for (int i = n - 1; i >= 0; --i) {
      if (!win_left[i][which]) break;
      first = i;
    }
    if (first == 0) return left[0];
    // In the step before, the padded time is constant and the other grows with M: bisect for the
    // smallest M there from which it wins (if it wins at the step's end at all). For the last step
    // that is the only way to win: it wins from there to max_m, its end.
    const int prev = first - 1;
    if (!win_right[prev][which]) return first < n ? left[first] : -1;
    int64_t lo = left[prev], hi = right[prev];  // lo loses, hi wins
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (wins(mid)[which]) hi = mid;
      else lo = mid;
    }
    return hi;
  };
  // The same over M that are multiples of the padding step only (no padding rows).
  auto search_aligned = [&](int which) -> int64_t {
    int64_t from = -1;
    for (int i = int(right.size()) - 1; i >= 0; --i) {
      if (!win_right[i][which]) break;
      from = right[i];
    }
    return from;
  };
  std::vector<Threshold> out(comparisons);
  for (int c = 0; c < comparisons; ++c) out[c].every_m = search(c);
  for (int c = 0; c < comparisons; ++c) out[c].aligned = search_aligned(c);
  return out;
}

BreakEven break_even(const hw::Hardware& hw, const GemmArConfig& fused_in, int64_t max_m) {
  BreakEven out;
  out.curve = nlohmann::json::array();
  GemmArConfig fused = fused_in;
  fused.mode = "fused-sdma";
  const int64_t step = int64_t(fused.world_size) * block_m(fused.quant);
  const auto t = break_even_search(step, max_m, 2, [&](int64_t m) {
    out.curve.push_back(break_even_point(hw, fused, m));
    const auto& p = out.curve.back();
    const double tf = p["fused_us"].get<double>();
    return std::vector<bool>{tf < p["split_us"].get<double>(), tf < p["rccl_us"].get<double>()};
  });
  out.m_vs_split = t[0].every_m;
  out.m_vs_rccl = t[1].every_m;
  out.m_vs_split_aligned = t[0].aligned;
  out.m_vs_rccl_aligned = t[1].aligned;
  return out;
}

}  // namespace fusesim::models
