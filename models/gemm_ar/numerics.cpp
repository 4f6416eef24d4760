#include "models/gemm_ar/numerics.hpp"

#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

namespace fusesim::models {

float round_to_e4m3(float x) {
  if (std::isnan(x)) return x;
  const float a = std::fabs(x);
  if (a >= 448.0f) return std::copysign(448.0f, x);
  if (a == 0.0f) return x;
  // E4M3: exponent bias 7, 3 mantissa bits, smallest normal 2^-6, subnormal step 2^-9.
  int e;
  std::frexp(a, &e);      // a = f * 2^e, f in [0.5, 1)
  int exp2 = e - 1;       // a in [2^exp2, 2^(exp2+1))
  if (exp2 < -6) exp2 = -6;  // subnormal range shares the step of the smallest normal binade
  const double step = std::ldexp(1.0, exp2 - 3);
  const double q = std::nearbyint(double(a) / step) * step;  // nearbyint: ties to even (default mode)
  return std::copysign(float(std::min(q, 448.0)), x);
}

QuantStats quantize_e4m3(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t group) {
  if (group < 1 || cols % group != 0)
    throw std::invalid_argument(fmt::format("quantize_e4m3: group {} must divide cols {}", group, cols));
  if (int64_t(x.size()) != rows * cols)
    throw std::invalid_argument(fmt::format("quantize_e4m3: {} values for a [{}, {}] tensor", x.size(), rows, cols));
  double err2 = 0, ref2 = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < cols; g += group) {
      const float* p = &x[r * cols + g];
      float amax = 0;
      for (int64_t i = 0; i < group; ++i) amax = std::max(amax, std::fabs(p[i]));
      const float scale = amax > 0 ? amax / 448.0f : 1.0f;
      for (int64_t i = 0; i < group; ++i) {
        const float deq = round_to_e4m3(p[i] / scale) * scale;
        err2 += double(deq - p[i]) * (deq - p[i]);
        ref2 += double(p[i]) * p[i];
      }
    }
  return {std::sqrt(err2 / ref2), 4.0 / double(group)};
}

std::vector<float> standard_normal(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<float> out(size_t(rows * cols));
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < out.size(); i += 2) {
    // Box-Muller on 53-bit uniforms in (0, 1].
    const double u1 = (double(gen() >> 11) + 1.0) * 0x1.0p-53, u2 = double(gen() >> 11) * 0x1.0p-53;
    const double rad = std::sqrt(-2.0 * std::log(u1));
    out[i] = float(rad * std::cos(two_pi * u2));
    if (i + 1 < out.size()) out[i + 1] = float(rad * std::sin(two_pi * u2));
  }
  return out;
}

double e4m3_wire_rel_l2_per_row(int64_t cols) {
  static std::mutex mu;
  static std::map<int64_t, double> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(cols);
  if (it != cache.end()) return it->second;
  const int64_t rows = 64;
  const double v = quantize_e4m3(standard_normal(rows, cols), rows, cols, cols).rel_l2;
  cache[cols] = v;
  return v;
}

}  // namespace fusesim::models
