// One collective on its own (`model: collective`) on a fully meshed node: all-reduce, reduce-scatter
// and all-gather by copy engines (mori's SDMA all-reduce: scatter, reduce, gather), by CU remote
// loads (mori's LSA all-reduce, 1- or 2-stage), by a one-shot / two-shot custom all-reduce (aiter's,
// derived from vLLM's) and by the library ring (RCCL). Built on the GPU-group substrate
// (hw/group.hpp) and the shared hardware vocabulary (hw/params.hpp): the keys gemm_ar reads for the
// same mechanisms, so values fitted on standalone collectives are the composite paths' too. The
// case schema is fixed in the integrator's COLLECTIVE_SCHEMA (op, backend, m, n, world_size, dtype,
// stage, blocks, build).
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
#include "models/model.hpp"
#include "sim/trace.hpp"

namespace fusesim::models {

/// The hardware the collective model reads, in SI units (keys in collective_hardware()).
struct CollectiveHw {
  // Shared with gemm_ar (hw/params.hpp's vocabulary).
  double compute_units = 0, hbm_capacity = 0, fabric_bandwidth = 0, link_per_direction = 0, read_efficiency = 0;
  double write_cost = 1;  ///< memory.write_cost (optional, default 1): the reduce's written slice on the HBM
  double launch_gap = 0, fixed_cost = 0, flag_barrier = 0;
  double queue_peak = 0, command_latency = 0;
  /// sdma.hbm_source_efficiency (optional, default 1: no penalty): the share of the queue peak a put
  /// reaches when its source comes from HBM, not the MALL; with gpu.mall_capacity (optional, default
  /// 0: nothing cached) it sets the scatter's rate once input + receive slots exceed the MALL.
  double hbm_source_efficiency = 1, mall_capacity = 0;
  double remote_read_latency = 0, congestion_knee = 0, congestion_per_MiB = 0, stage_overhead = 0, ar_loads_per_peer = 0;
  double rccl_bus_bandwidth_per_link = 0, rccl_step_latency = 0;
  // The collective's own (declared in collective.cpp).
  double sdma_put_share_0f4d2776 = 1;  ///< put rate of bench_ar's earlier SDMA kernel / the later one's
  double lsa_block_cap = 24;           ///< LSA all-reduce grid cap (blocks of 512 lanes)
  double aiter_stage_overhead = 0;     ///< aiter custom all-reduce: per stage, its cross-rank flag sync
  double aiter_loads_in_flight = 0;    ///< aiter custom all-reduce: 16-byte loads a lane holds in flight
  double aiter_block_cap = 36;         ///< aiter custom all-reduce grid cap (blocks of 512 lanes)
};
/// The keys CollectiveHw is read from: the shared ones required, the collective's own with their
/// defaults where a default is honest (see collective.cpp for units, bounds and sources).
const hw::HwSchema<CollectiveHw>& collective_hardware();

/// One collective call, under COLLECTIVE_SCHEMA's names. Initialisers are the case defaults.
struct CollectiveConfig {
  std::string op = "all-reduce";  ///< all-reduce | reduce-scatter | all-gather
  std::string backend;            ///< sdma | lsa | aiter | rccl (required)
  int64_t m = 0;                  ///< rows of the full tensor [m, n] (required, >= 1; not padded)
  int64_t n = 7168;               ///< columns
  int world_size = 8;             ///< 2, 4 or 8 ranks on the mesh
  std::string dtype = "bf16";     ///< element type on the wire: bf16 | fp8 (e4m3 + one fp32 scale per row)
  std::string stage = "auto";     ///< auto | 1 | 2 (LSA: 1- or 2-stage; aiter: one-shot or two-shot)
  int blocks = 0;                 ///< LSA / aiter grid (0: the backend's own rule, with its block cap)
  std::string build;              ///< SDMA kernel build ("": the file's default, the later e7606746)
};

/// What one call predicts: the critical rank's time and phases, and the choices the rules made.
struct CollectiveResult {
  double total_us = 0;
  std::vector<hw::Span> phases;
  std::vector<double> per_rank_us;
  int stages = 0;      ///< LSA / aiter: the stage count that ran (1 or 2); 0 for the others
  int blocks = 0;      ///< LSA / aiter: the grid that ran
  std::string build;   ///< SDMA: the kernel build that ran
  double wire_bytes = 0;  ///< bytes of the full tensor on the wire (m x n x element + row scales)
};

/// The case parameters (COLLECTIVE_SCHEMA).
const CaseSchema& collective_case_schema();

/**
 * Simulate one collective. Units: us in the result. Errors: models::ParamError naming the key for a
 * refused value (a world size the file's node lacks, aiter asked for a reduce-scatter, a build the
 * file does not describe, stage 2 with world size 2 on aiter...).
 */
CollectiveResult simulate_collective(const hw::Hardware& hw, const CollectiveConfig& c, sim::TraceSink* trace = nullptr);

/// The model's run function: {"params", "predicted_us", "phases", "per_rank_us"} (params add
/// stages, blocks and build where they apply: what ran).
nlohmann::json run_collective_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace);

/// The collective model's spec (models/registry.inc).
const ModelSpec& collective_spec();

}  // namespace fusesim::models
