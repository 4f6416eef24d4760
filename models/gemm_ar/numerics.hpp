// Numerics of the fp8 wire: e4m3 quantisation with per-group fp32 scales.
#pragma once

#include <cstdint>
#include <vector>

namespace fusesim::models {

/**
 * Round a float to the nearest representable OCP FP8 E4M3 value (round to nearest, ties to even),
 * saturating at +-448 (the format's largest finite value; E4M3 "fn" has no infinities). Subnormals
 * down to 2^-9 are represented. NaN stays NaN.
 */
float round_to_e4m3(float x);

/// Result of quantising a [rows, cols] tensor to e4m3 with one fp32 scale per `group` elements.
struct QuantStats {
  double rel_l2 = 0;           ///< ||dequant(quant(x)) - x||_2 / ||x||_2
  double scale_bytes_frac = 0; ///< fp32 scale bytes / e4m3 payload bytes (4 / group)
};

/**
 * Quantise `x` (row-major [rows, cols]) with one scale per `group` consecutive elements of a row
 * (group == cols: one scale per row). scale = amax / 448 (amax of the group), q = e4m3(x / scale).
 * Errors: std::invalid_argument if group < 1, cols % group != 0 or x.size() != rows * cols.
 */
QuantStats quantize_e4m3(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t group);

/// rows x cols standard-normal samples from a fixed-seed generator (std::mt19937_64 + Box-Muller,
/// deterministic across platforms).
std::vector<float> standard_normal(int64_t rows, int64_t cols, uint64_t seed = 1234);

/// relL2 that the fp8 wire (e4m3, one scale per row of `cols`) adds on standard-normal data,
/// computed once per cols on 64 synthetic rows and cached.
double e4m3_wire_rel_l2_per_row(int64_t cols);

}  // namespace fusesim::models
