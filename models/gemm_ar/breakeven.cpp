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
