// Model of calibrate/live/gemm_ar_live (a real GEMM + all-reduce on a GPU pair driven by streams,
// events and copy-engine memcpyPeerAsync), and of the probes that calibrate it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "hw/hardware.hpp"
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

/// Parameters this model adds to the registry (copy engine, events, GEMM traffic).
std::vector<hw::ParamDecl> gemm_ar_live_param_decls();

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
  std::vector<std::pair<std::string, std::pair<double, double>>> phases;  ///< rank 0: name -> (start, end) us
};

/**
 * Simulate one point of gemm_ar_live on the engine: per rank an HBM resource and one link resource
 * per direction; GEMM calls compute-bound at the table's per-call time (they take no HBM share from
 * other flows), slowed by 1 + kappa*phi*u while copy-engine traffic crosses their GPU's HBM
 * (gemm.copy_interference; phi and u defined there); copy-engine puts as
 * FIFO commands per (rank, peer) stream with a command latency and a capped flow over source HBM,
 * link and destination HBM; the reduce as an HBM-bound kernel; LSA loads by Little's law over the
 * remote round trip; cross-GPU event waits as a fixed latency. Errors: std::invalid_argument for
 * an unknown mode, world size other than 2..hw.gpus(), bands not a multiple of world size, M not
 * divisible by bands, M/N/K < 1, negative grids, or buffers larger than gpu.hbm_capacity.
 */
LiveResult simulate_gemm_ar_live(const hw::Hardware& hw, const LiveConfig& c, sim::TraceSink* trace = nullptr);

/// Case runner for scenarios (model `gemm_ar_live`).
nlohmann::json run_gemm_ar_live_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

/**
 * Case runner for the calibration probes (model `h200_probe`): params {probe: peer_copy, direction:
 * one|both, size_bytes} (copy-engine put(s) of that size, time from release to the last byte), or
 * {probe: cu_remote, mode: pull, blocks, threads, bytes_in_flight_per_thread, size_bytes, both},
 * or {probe: gemm_banded, m, n, k, bands}, or {probe: gemm_with_copies, m, n, k, background:
 * none|ce_out|ce_in|ce_both, alone_time_us?} (probe_interference's GEMM time under copy-engine
 * puts; alone_time_us, the same run's GEMM alone, replaces the table's time), or {probe: copy_hop,
 * size_bytes} (probe_launch's copy_hop_sync_us: same-GPU event wait, put, cross-GPU event wait). Returns
 * {"predicted_us": ...}. Errors: std::invalid_argument naming the probe and the key for an unknown
 * probe or key, a missing or ill-typed value, or a value out of range.
 */
nlohmann::json run_probe_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

}  // namespace fusesim::models
