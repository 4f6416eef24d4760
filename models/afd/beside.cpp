// The FFN expert GEMM beside the AFD transport kernel: see beside.hpp.
#include "models/afd/beside.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/model.hpp"

namespace fusesim::afd {
namespace fs = std::filesystem;
using models::ParamError;

namespace {
/// A ParamError about the case's `key`, worded as the other afd case errors ("afd case: 'KEY' ...").
ParamError bad(const std::string& key, const std::string& msg) {
  return ParamError(key, fmt::format("afd case: '{}': {}", key, msg), msg);
}
bool has_sm_share_keys(const hw::Hardware& hw) {
  return hw.has_table("sm_map") && hw.has("smshare.tile_rate_at_zero") && hw.has("smshare.tile_rate_slope") &&
         hw.has("gpu.sms_per_tpc");
}
}  // namespace

std::string find_gemm_machine(const std::string& hardware_path, const std::string& gemm_machine, std::vector<std::string>* tries_out) {
  const fs::path dir = fs::path(hardware_path).parent_path();
  std::vector<std::string> tries;
  for (const fs::path& t : {dir / gemm_machine, dir / ".." / gemm_machine, fs::path(gemm_machine)}) {
    const std::string s = t.lexically_normal().string();
    if (std::find(tries.begin(), tries.end(), s) == tries.end()) tries.push_back(s);
  }
  if (tries_out) *tries_out = tries;
  std::error_code ec;
  for (const auto& t : tries)
    if (fs::is_regular_file(t, ec)) return t;
  return "";
}

models::SmShareMachine ffn_gemm_machine(const hw::Hardware& hw, const AfdCase& c) {
  if (c.gemm_machine.empty()) {
    if (!has_sm_share_keys(hw))
      throw bad("gemm_machine",
                       fmt::format("overlap_ffn_gemm needs the GEMM's GPU on the SM pool (smshare.tile_rate_at_zero, "
                                   "smshare.tile_rate_slope, gpu.sms_per_tpc, the table sm_map), which {} does not have: "
                                   "give gemm_machine: hw/h200-1gpu.yaml (the H200 measured alone and beside kernels)",
                                   hw.path()));
    return models::sm_share_machine(hw);
  }
  std::vector<std::string> tries;
  const std::string found = find_gemm_machine(hw.path(), c.gemm_machine, &tries);
  if (found.empty())
    throw bad("gemm_machine", fmt::format("no hardware file '{}' (tried {})", c.gemm_machine, fmt::join(tries, ", ")));
  const hw::Hardware mh = models::load_hardware(found);
  if (!has_sm_share_keys(mh))
    throw bad("gemm_machine", fmt::format("{} lacks the SM-pool keys (smshare.tile_rate_at_zero, smshare.tile_rate_slope, "
                                                 "gpu.sms_per_tpc, the table sm_map)", found));
  models::SmShareMachine m = models::sm_share_machine(mh);
  const int sms = static_cast<int>(hw.get("gpu.compute_units"));
  if (m.limits.sms != sms)
    throw bad("gemm_machine", fmt::format("{} has {} SMs, the case's hardware {} has {} (gpu.compute_units)", found,
                                                 m.limits.sms, hw.path(), sms));
  return m;
}

std::vector<FfnGemmBeside> ffn_gemm_beside(const hw::Hardware& hw, const AfdCase& c, const AfdResult& res) {
  std::vector<FfnGemmBeside> out;
  if (c.overlap_ffn_gemm == "off") return out;
  if (c.overlap_ffn_gemm != "dispatch" && c.overlap_ffn_gemm != "combine")
    throw bad("overlap_ffn_gemm", fmt::format("expected off, dispatch or combine, got '{}'", c.overlap_ffn_gemm));
  if (c.ffn_gemm_n < 1)
    throw bad("ffn_gemm_n", "overlap_ffn_gemm needs the expert GEMM's N (its output columns, e.g. 2 x the expert's "
                                   "intermediate size for a fused gate+up projection), >= 1");
  if (c.ffn_gemm_m < 0) throw bad("ffn_gemm_m", fmt::format("must be >= 0 (0: the routed rows), got {}", c.ffn_gemm_m));
  if (c.ffn_gemm_tile_m < 1 || c.ffn_gemm_tile_n < 1)
    throw bad("ffn_gemm_tile_m", fmt::format("the GEMM's tile must be >= 1 x 1, got {} x {}", c.ffn_gemm_tile_m, c.ffn_gemm_tile_n));
  if (c.ffn_gemm_cluster < 1) throw bad("ffn_gemm_cluster", fmt::format("must be >= 1, got {}", c.ffn_gemm_cluster));
  if (c.ffn_gemm_grid < 0) throw bad("ffn_gemm_grid", fmt::format("must be >= 0 (0: from the tiles), got {}", c.ffn_gemm_grid));
  if (c.ffn_gemm_alone_us < 0) throw bad("ffn_gemm_alone_us", fmt::format("must be >= 0 (0: predicted), got {}", c.ffn_gemm_alone_us));

  const models::SmShareMachine m = ffn_gemm_machine(hw, c);
  const int sms = m.limits.sms;
  const bool dispatch = c.overlap_ffn_gemm == "dispatch";
  const std::string kernel = dispatch ? (res.cross_node ? "hybrid_dispatch" : "dispatch_impl")
                                      : (res.cross_node ? "hybrid_combine" : "combine_impl");
  int blocks = c.transport_sms;
  if (!dispatch && !res.cross_node)
    blocks = c.ffn_combine_sms > 0 ? c.ffn_combine_sms : c.combine_sms > 0 ? c.combine_sms : c.transport_sms;

  const Routing rt = route(c.attention_ranks, c.ffn_ranks, c.tokens, c.topk, c.experts, c.capacity, c.seed);
  auto rate = [&](int running) { return m.hw.tile_rate_at_zero - m.hw.tile_rate_slope * running; };

  for (int f = 0; f < c.ffn_ranks; ++f) {
    const auto k = std::find_if(res.kernels.begin(), res.kernels.end(),
                                [&](const hw::Span& s) { return s.device == f && s.role == "ffn" && s.name == kernel; });
    if (k == res.kernels.end())
      throw std::logic_error(fmt::format("afd: FFN rank {} ran no {} to overlap the GEMM with", f, kernel));
    FfnGemmBeside e;
    e.device = f;
    e.neighbour = kernel;
    e.transport_blocks = blocks;
    e.neighbour_us = k->end_us - k->start_us;
    e.start_us = k->start_us;
    e.machine = m.path;
    int64_t rows = 0;
    for (int s = 0; s < rt.sources; ++s) rows += rt.rows_to[s][f];
    e.m = c.ffn_gemm_m > 0 ? c.ffn_gemm_m : rows;
    e.n = c.ffn_gemm_n;
    e.k = c.hidden;
    if (e.m < 1)
      throw bad("ffn_gemm_m", fmt::format("FFN rank {} receives no expert rows in this exchange: give ffn_gemm_m", f));
    const int64_t tiles64 = ((e.n + c.ffn_gemm_tile_m - 1) / c.ffn_gemm_tile_m) * ((e.m + c.ffn_gemm_tile_n - 1) / c.ffn_gemm_tile_n);
    if (tiles64 > (int64_t{1} << 24))
      throw bad("ffn_gemm_n", fmt::format("{} tiles of {} x {}: more than the 2^24 the SM pool runs", tiles64,
                                                 c.ffn_gemm_tile_m, c.ffn_gemm_tile_n));
    e.gemm.tiles = static_cast<int>(tiles64);
    e.gemm.cluster = c.ffn_gemm_cluster;
    if (c.ffn_gemm_grid > 0) {
      e.gemm.grid = c.ffn_gemm_grid;
    } else {
      const int cap = std::max(c.ffn_gemm_cluster, sms / c.ffn_gemm_cluster * c.ffn_gemm_cluster);
      const int t = (e.gemm.tiles + c.ffn_gemm_cluster - 1) / c.ffn_gemm_cluster * c.ffn_gemm_cluster;
      e.gemm.grid = std::min(t, cap);
    }
    e.gemm.block = {c.ffn_gemm_threads, c.ffn_gemm_regs, c.ffn_gemm_smem_bytes};
    const int rounds = (e.gemm.tiles + e.gemm.grid - 1) / e.gemm.grid;
    const int ref = std::min(e.gemm.grid, sms);
    if (!(rate(ref) > 0))
      throw bad("ffn_gemm_grid", fmt::format("the tile rate r({}) of {} is not positive", ref, m.path));
    const double alone_s = c.ffn_gemm_alone_us > 0
                               ? c.ffn_gemm_alone_us * 1e-6
                               : rounds * 2.0 * double(c.ffn_gemm_tile_m) * double(c.ffn_gemm_tile_n) * double(e.k) / rate(ref);
    models::SmNeighbour nb;
    nb.blocks = blocks;
    nb.block = {dispatch ? kDispatchThreads : kCombineThreads, 0,
                c.transport_smem_bytes >= 0 ? c.transport_smem_bytes : m.limits.smem_per_sm_bytes};
    nb.hbm_Bps = 0;
    nb.length_s = e.neighbour_us * 1e-6;
    try {
      e.r = models::gemm_beside(m, e.gemm, nb, alone_s);
    } catch (const ParamError& err) {
      // gemm_beside names the sm_sharing model's keys; the case's own key is named instead.
      const std::string& k = err.key();
      const std::string key = k == "gemm_threads"       ? "ffn_gemm_threads"
                              : k == "alone_time_us"     ? "ffn_gemm_alone_us"
                              : k == "neighbour_threads" ? "transport_smem_bytes"
                              : k == "blocks"            ? "transport_sms"
                                                         : "ffn_gemm_grid";
      throw bad(key, fmt::format("the FFN GEMM beside {} on FFN rank {}: {}", kernel, f, err.detail()));
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace fusesim::afd
