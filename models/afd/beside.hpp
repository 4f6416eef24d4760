// The FFN expert GEMM of the next micro-batch run beside this exchange's transport kernel on each FFN
// rank (issue 19 item 4), charged through models::gemm_beside, the sm_sharing model's mechanism.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware.hpp"
#include "models/afd/afd.hpp"
#include "models/sm_sharing/sm_sharing.hpp"

namespace fusesim::afd {

/// The launch of the transport kernel as a neighbour on the SM pool: `threads` per block (AFD.md
/// "Setups measured": hybrid_dispatch is transport SMs x 384 threads, hybrid_combine transport SMs x
/// 512; the NVLink-domain dispatch_impl / combine_impl are assumed to launch the same blocks, no
/// source gives theirs) and the whole shared memory of an SM per block (assumption from the seed-004
/// patch quoting deepep_v2 csrc/elastic/buffer.hpp, whose launch passes
/// jit::device_runtime->get_num_smem_bytes(), taken to be the device's opt-in maximum; then no GEMM
/// block fits beside a transport block and each block holds its SM). Registers: unknown, 0.
inline constexpr int kDispatchThreads = 384;
inline constexpr int kCombineThreads = 512;

/// One FFN rank's GEMM beside its transport kernel.
struct FfnGemmBeside {
  int device = -1;                 ///< the FFN rank (device index, 0..F-1)
  std::string neighbour;           ///< the transport kernel beside it (dispatch_impl, hybrid_combine, ...)
  int transport_blocks = 0;        ///< its grid (blocks = SMs it asks for)
  double neighbour_us = 0;         ///< how long it holds them (its span on this rank, us)
  double start_us = 0;             ///< where the GEMM starts: the neighbour's start (us, the exchange's clock)
  int64_t m = 0, n = 0, k = 0;     ///< the GEMM (C = X W^T): m expert rows, n = ffn_gemm_n, k = hidden
  models::GemmOnSms gemm;          ///< its tiles, grid, cluster and block
  std::string machine;             ///< the hardware file of the SM pool (ffn_gemm_machine's path)
  models::BesideResult r;          ///< gemm_beside's answer (alone_s, beside_s, held_sms, late_ctas, ...)
  double charge_us() const { return (r.beside_s - r.alone_s) * 1e6; }
};

/// The machine the charge runs on: the case's hardware when it has the sm_sharing keys (smshare.*,
/// gpu.sms_per_tpc) and the table sm_map, else the file named by c.gemm_machine, resolved against the
/// case hardware file's folder, then that folder's parent (the repository root for hw/FILE), then the
/// CWD. Errors: models::ParamError("gemm_machine") when neither has them, the file is missing, or its
/// SM count differs from the case hardware's gpu.compute_units; hw::FileError for a bad machine file.
models::SmShareMachine ffn_gemm_machine(const hw::Hardware& hw, const AfdCase& c);

/// The file a case's `gemm_machine` names, as ffn_gemm_machine() finds it: tried against the folder
/// of `hardware_path`, that folder's parent, then the CWD; empty when none is a regular file.
/// `tries` (may be null) gets the paths tried.
std::string find_gemm_machine(const std::string& hardware_path, const std::string& gemm_machine, std::vector<std::string>* tries = nullptr);

/**
 * For each FFN rank of `res` (an exchange simulate_afd(hw, c) ran), the next micro-batch's expert GEMM
 * launched when the rank's transport kernel starts (c.overlap_ffn_gemm: "dispatch" -> dispatch_impl /
 * hybrid_dispatch, "combine" -> combine_impl / hybrid_combine), that kernel holding its grid's SMs for
 * its span on the rank (models::SmNeighbour: blocks = transport_sms, or the rank's combine grid
 * ffn_combine_sms / combine_sms in the NVLink domain; block of kDispatchThreads / kCombineThreads
 * threads, c.transport_smem_bytes of shared memory, -1: the SM's whole shared memory; no HBM bytes).
 * The GEMM: m = c.ffn_gemm_m, or (0) the expert rows routed to that rank in this exchange (the next
 * micro-batch assumed to route like this one), n = c.ffn_gemm_n, k = c.hidden, tiles =
 * ceil(n / tile_m) x ceil(m / tile_n) as one dense GEMM (a grouped GEMM padding each expert's rows to
 * a tile has at least as many), grid = c.ffn_gemm_grid or min(tiles, SMs) rounded down to the
 * cluster, block c.ffn_gemm_threads / regs / smem_bytes; its time alone c.ffn_gemm_alone_us or
 * ceil(tiles / grid) tiles of 2 tile_m tile_n k FLOP at the machine's tile rate r(min(grid, SMs)), as
 * the sm_sharing model predicts a GEMM with no measured alone time.
 * Returns one entry per FFN rank, empty when c.overlap_ffn_gemm is "off". Errors: models::ParamError
 * naming the key (ffn_gemm_n missing, a GEMM dimension or tile < 1, ffn_gemm_machine's errors,
 * gemm_beside's errors); std::logic_error if `res` lacks the neighbour kernel on an FFN rank.
 */
std::vector<FfnGemmBeside> ffn_gemm_beside(const hw::Hardware& hw, const AfdCase& c, const AfdResult& res);

}  // namespace fusesim::afd
