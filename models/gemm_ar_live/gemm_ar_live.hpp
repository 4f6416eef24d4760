// Model of calibrate/live/gemm_ar_live (a real GEMM + all-reduce on a GPU pair driven by streams,
// events and copy-engine memcpyPeerAsync), and of the probes that calibrate it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/group.hpp"
#include "hw/hardware.hpp"
#include "hw/params.hpp"
#include "models/case_params.hpp"
#include "sim/trace.hpp"

namespace fusesim::models {

/// The knobs of gemm_ar_live (same names as its JSON output).
struct LiveConfig {
  std::string mode = "overlapped";  ///< gemm-only | split | overlapped | lsa
  int64_t m = 16384, n = 7168, k = 2048;
  int world_size = 2;
  int bands = 4;         ///< overlapped: GEMM row bands over M (bands / world_size per slice)
  int reduce_blocks = 0; ///< 0: 2 x SMs (the program's default); accepted, not modelled: the reduce is HBM-bound
  int lsa_blocks = 0;    ///< 0: 2 x SMs
  int lsa_threads = 512;
};

/// The hardware the pair's models (gemm_ar_live, h200_probe) read, in SI units.
struct LiveHw {
  double compute_units = 0, hbm_capacity = 0, fabric_bandwidth = 0, link_per_direction = 0, launch_gap = 0;
  double ce_peak = 0, ce_command_latency = 0, ce_opposite_direction_latency = 0, ce_fabric_cost = 0;
  double copy_interference = 0, event_wait_cross_gpu = 0, event_wait_same_gpu = 0;
  double remote_read_latency = 0, issue_time_per_16B = 0, read_efficiency = 0, read_request_cost = 0;
};
/// The keys LiveHw is read from (every one required).
const hw::HwSchema<LiveHw>& gemm_ar_live_hardware();
/// Declared for the pair's files but read by neither model (lsa.push_store_latency).
const std::vector<hw::ParamDecl>& gemm_ar_live_documented();

/// The pair on the substrate: per rank an HBM resource, an NVLink resource per direction, a copy
/// stream ("copy") per (rank, peer) with ce.command_latency per command, CU remote loads with the
/// reverse link's request bytes (links.read_request_cost).
hw::GroupConfig live_group(const LiveHw& h, int ranks);

/**
 * The pair's kernels and copies on a GpuGroup (the policies of the live program: lanes gpuR/sm, the
 * back-to-back launch gap before a kernel, CUDA events between streams).
 */
struct LiveOps {
  hw::GpuGroup& g;
  const LiveHw& h;
  const hw::Hardware& hw;  ///< for the measured GEMM table (blas_gemm_time)
  /// memcpyPeerAsync of `bytes` from s to d on s's copy stream for d. `done` runs when the bytes
  /// have landed; `remote_ready` (optional) when a stream of another GPU waiting on the put's
  /// completion event may go on: sync.event_wait_cross_gpu after the put's data started to move, but
  /// not before the put is done (probe_launch copy_hop_sync_us: the hop's fixed part is 14.4 us at
  /// 4 KiB and 1 MiB and 8.6 us at 16 MiB, i.e. the cross-GPU wait overlaps the transfer).
  void put(int s, int d, double bytes, const std::string& label, std::function<void()> done,
           std::function<void()> remote_ready = {});
  /// One BLAS GEMM call of [rows, n] x k on rank r (bf16 operands and output, 2 bytes each). Alone
  /// it takes the table's time t (compute-bound: it takes no share of the HBM from other flows, as
  /// probe_interference shows: copy-engine bandwidth is unchanged under a GEMM, x0.997-1.004). While
  /// copy-engine traffic crosses r's HBM it runs 1 + kappa * phi * u times slower, with kappa =
  /// gemm.copy_interference (fitted on the 12 gemm_with_copies points of scenarios/h200x2-probes.yaml),
  /// phi = 2 (rows k + n k + rows n) / t / memory.fabric_bandwidth (its own HBM intensity, 0.12..0.36
  /// for M 16384..512 at N 7168) and u = copy-engine bytes/s from and to r / memory.fabric_bandwidth.
  /// u is sampled at the start of each of kGemmPieces equal pieces of its work, so traffic that
  /// starts or stops mid-GEMM counts from the next piece on.
  /// alone_s > 0 replaces the table's time (a probe that measured the same GEMM alone in its own run).
  /// Errors: std::out_of_range from blas_gemm_time.
  void gemm(int r, int64_t rows, int64_t n, int64_t k, const std::string& label, std::function<void()> done, double alone_s = 0);
  static constexpr int kGemmPieces = 16;
  /// A kernel streaming `bytes` through rank r's HBM after the back-to-back launch gap.
  void stream(int r, double bytes, const std::string& label, std::function<void()> done);
  /// A kernel on rank r loading `bytes` from peer p through peer pointers (blocks x threads lanes,
  /// `per_thread` bytes in flight each; the substrate's remote-load model), writing them
  /// (write_factor) to r's HBM; delay < 0: the launch gap.
  void pull(int r, int p, double bytes, int blocks, int threads, double per_thread, double write_factor, const std::string& label,
            std::function<void()> done, double delay = -1);
};

/**
 * Per-call time (seconds) of the vendor BLAS bf16 GEMM [m, n] x k, interpolated log-log over M in
 * the hardware file's `gemm` table (probe_gemm's M sweep at that N and K, one call, bands == 1).
 * Below the smallest measured M the smallest M's time is used (a launch-bound floor); above the
 * largest, time scales with M. Errors: std::out_of_range naming N and K when the table has no sweep
 * for them.
 */
double blas_gemm_time(const hw::Hardware& hw, int64_t m, int64_t n, int64_t k);

/// Result of one simulated gemm_ar_live point.
struct LiveResult {
  double time_us = 0;               ///< max over ranks (the program's time_us)
  std::vector<double> per_rank_us;
  std::vector<hw::Span> phases;     ///< rank 0's phases in start order (us)
};

/**
 * Simulate one point of gemm_ar_live on the engine: per rank an HBM resource and one link resource
 * per direction; GEMM calls compute-bound at the table's per-call time (they take no HBM share from
 * other flows), slowed by 1 + kappa*phi*u while copy-engine traffic crosses their GPU's HBM
 * (gemm.copy_interference; phi and u defined there); copy-engine puts as
 * FIFO commands per (rank, peer) stream with a command latency and a capped flow over source HBM,
 * link and destination HBM; the reduce as an HBM-bound kernel; LSA loads by Little's law over the
 * remote round trip; cross-GPU event waits as a fixed latency. Errors: models::ParamError (a
 * std::invalid_argument) naming mode, world_size, bands or m for an unknown mode, world size other than 2..hw.gpus(), bands not a multiple of world size, M not
 * divisible by bands, M/N/K < 1, negative grids, or buffers larger than gpu.hbm_capacity.
 */
LiveResult simulate_gemm_ar_live(const hw::Hardware& hw, const LiveConfig& c, sim::TraceSink* trace = nullptr);

/// Case runner for scenarios (model `gemm_ar_live`): {"params" (mode, m, n, k, world_size, bands),
/// "predicted_us", "per_rank_us", "phases"}. Errors: models::ParamError naming the parameter.
nlohmann::json run_gemm_ar_live_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

/**
 * Case runner for the calibration probes (model `h200_probe`): params {probe: peer_copy, direction:
 * one|both, size_bytes} (copy-engine put(s) of that size, time from release to the last byte), or
 * {probe: cu_remote, mode: pull, blocks, threads, bytes_in_flight_per_thread, size_bytes, both},
 * or {probe: gemm_banded, m, n, k, bands}, or {probe: gemm_with_copies, m, n, k, background:
 * none|ce_out|ce_in|ce_both, alone_time_us?} (probe_interference's GEMM time under copy-engine
 * puts; alone_time_us, the same run's GEMM alone, replaces the table's time), or {probe: copy_hop,
 * size_bytes} (probe_launch's copy_hop_sync_us: same-GPU event wait, put, cross-GPU event wait). Returns
 * {"predicted_us": ...}. Errors: models::ParamError naming the key (an unknown probe or key, a
 * missing or ill-typed value, a value out of range).
 */
nlohmann::json run_probe_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

}  // namespace fusesim::models
