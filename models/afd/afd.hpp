// AFD MoE dispatch/combine between Attention and FFN ranks (seed 004, AFD.md): routing, channels,
// the kernels of one exchange and their costs, simulated on the fusesim engine.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hw/group.hpp"
#include "hw/hardware.hpp"
#include "sim/trace.hpp"

namespace fusesim::afd {

/// Largest T (tokens per Attention rank) a case may ask for: 32x the T from which the default
/// capacity (2048 rows per expert per source, 128 experts, top-8) must drop rows (T > 32768), and
/// still a run of under two seconds and ~120 MB on the 12-Attention-rank pods (routing keeps
/// per-token state; T = 1e8 needed ~10 GB and looked like a hang).
inline constexpr int kMaxTokens = 1 << 20;
/// Most expert draws one case's routing makes (attention_ranks x tokens x topk; validate refuses more).
inline constexpr int64_t kMaxRoutedRows = int64_t(1) << 26;

/**
 * One exchange (dispatch + combine) to simulate. Names follow the benchmark (seed 004 passthrough):
 * --ffn-ranks, --attention-ranks, --tokens, --num-sms, --hidden, --hybrid. The member defaults
 * serve the C++ API; a scenario case must name attention_ranks, ffn_ranks and tokens
 * (afd_case_from_yaml), the other keys default to the values below.
 */
struct AfdCase {
  std::string path = "afd";    ///< afd (role-aware) | afd_shared (runs as afd, with a note: no source describes it) | masked
  int attention_ranks = 2;     ///< A: GPUs that run attention and send tokens
  int ffn_ranks = 2;           ///< F: GPUs that hold the experts
  int tokens = 128;            ///< T: tokens per Attention rank (1..kMaxTokens)
  int transport_sms = 24;      ///< SMs of dispatch/combine; channels C = 8 x transport_sms
  int combine_sms = 0;         ///< combine grid on every rank (AFDEP_SCRATCH_COMBINE_SMS); 0 = transport_sms
  int ffn_combine_sms = 0;     ///< FFN-only combine grid (AFDEP_SCRATCH_FFN_COMBINE_SMS); 0 = off
  bool grid_sync_exit = false; ///< AFDEP_GRID_SYNC_EXIT: FFN combine exits through one grid sync
  int hidden = 2048;           ///< hidden size (elements per token)
  int dtype_bytes = 2;         ///< dispatch payload bytes per element (bf16 = 2; fp8 = 1 plus an fp32 scale per 128 elements); the combine stays bf16 (fp32 payload: fp32)
  int topk = 8;                ///< experts per token
  int experts = 128;           ///< E, spread evenly over the F FFN ranks
  int capacity = 2048;         ///< max tokens per expert per source rank (excess rows dropped)
  bool hybrid = true;          ///< cross-node: RDMA to the rail peer + NVLink forwarding (off = direct RDMA)
  uint64_t seed = 4;           ///< routing seed (random top-k)
  /// Which clock the metric reads (NVLink domain): "span" = first Attention dispatch start to the
  /// last Attention kernel end (the reduce epilogue) + afd.timer_offset (transport-SM sweep);
  /// "collect" = to the end of the Attention ranks' combine_impl, when the collected outputs are
  /// ready, + afd.collect_offset (seed 004 *_collect_view screens; the reduce epilogue is not in it).
  std::string view = "span";
  // What-if switches (AFD.md proposed fixes):
  bool skip_empty_finish = false;  ///< no finish atomic on channels that carried nothing; one release per pair
  bool rotate_channels = false;    ///< token t of source s rides channel (t + s*C/sources) mod C
  bool inline_finish = false;      ///< data-less finishes as inline RDMA writes (no atomic unit)
  // The next micro-batch's FFN expert GEMM beside the transport kernel (models/afd/beside.hpp; issue 19):
  std::string overlap_ffn_gemm = "off";  ///< off | dispatch | combine: the FFN ranks' transport kernel it runs beside
  int64_t ffn_gemm_n = 0;        ///< the expert GEMM's N (output columns); required when overlap_ffn_gemm is on
  int64_t ffn_gemm_m = 0;        ///< its M; 0 = the expert rows routed to that FFN rank
  int ffn_gemm_tile_m = 256;     ///< the library's tile along N (sm_sharing's tile_m; cuBLAS bf16 plan, scenarios/h200-sm-sharing.yaml)
  int ffn_gemm_tile_n = 128;     ///< the library's tile along M (sm_sharing's tile_n)
  int ffn_gemm_cluster = 2;      ///< CTAs per cluster (same plan)
  int ffn_gemm_grid = 0;         ///< CTAs; 0 = min(tiles, SMs) rounded down to the cluster
  int ffn_gemm_threads = 384;    ///< threads per GEMM block (same plan, ncu)
  int ffn_gemm_regs = 168;       ///< registers per GEMM thread (same plan, ncu)
  double ffn_gemm_smem_bytes = 213188;  ///< shared memory per GEMM block (same plan, ncu)
  double ffn_gemm_alone_us = 0;  ///< the GEMM alone (us); 0 = predicted from the machine's tile rate
  std::string gemm_machine;      ///< hardware file with the SM-pool keys; empty = the case's hardware
  double transport_smem_bytes = -1;  ///< shared memory per transport block; -1 = the SM's whole shared memory
  /// Keys the scenario case set explicitly (afd_case_from_yaml fills it): validate() refuses the
  /// InfiniBand-only switches (hybrid, skip_empty_finish, inline_finish) on hardware without a NIC
  /// when given at all, since `hybrid: on` equals the default and would otherwise pass unnoticed.
  std::vector<std::string> given;
  bool was_given(const std::string& key) const;
};

/// Whether `hw` runs the InfiniBand (NIC) model: topology kind "pods". Elsewhere the NVLink-domain
/// model runs, which has no NIC and ignores hybrid, skip_empty_finish and inline_finish.
bool has_nic_path(const hw::Hardware& hw);

/// Number of channels: C = 8 x transport SMs (AFD.md "Channels and control traffic").
inline int channels_of(int transport_sms) { return 8 * transport_sms; }

/**
 * Random top-k routing with a fixed seed: for every source (Attention) rank and token, k distinct
 * experts drawn uniformly from E; expert e lives on FFN rank e / (E/F). Each source draws from its
 * own stream (seeded from seed and the source index), so a source's first T tokens route the same
 * way at every T and for any number of sources. Counts per (source, FFN):
 * tokens that hit the FFN at least once (dispatch sends a token once per FFN rank) and expert rows.
 * Capacity: rows beyond `capacity` per (source, expert) are dropped (never at the seed's sizes).
 * Errors: std::invalid_argument if k > E, k > 65535, E % F != 0, F > 32, or any count < 1.
 */
struct Routing {
  int sources = 0, ffn = 0, tokens = 0;
  /// hits[s][t] = bitmask of FFN ranks hit by token t of source s (F <= 32).
  std::vector<std::vector<uint32_t>> hits;
  /// rows[s][t * F + f] = expert rows of token t of source s on FFN f.
  std::vector<std::vector<uint16_t>> rows;
  std::vector<std::vector<int>> tokens_to;  ///< [s][f] tokens of s that hit f
  std::vector<std::vector<int>> rows_to;    ///< [s][f] expert rows of s on f
  int dropped_rows = 0;
};
Routing route(int sources, int ffn_ranks, int tokens, int topk, int experts, int capacity,
              uint64_t seed);

/// NIC operations of one round trip (dispatch + combine) at one NIC.
struct NicOps {
  int device = 0;
  std::string role;
  long atomics_in = 0;       ///< fetch-and-adds served as responder
  long atomics_out = 0;      ///< fetch-and-adds posted as requester
  long inline_writes_out = 0;///< data-less finishes as inline writes (what-if)
  long payload_writes = 0;   ///< RDMA writes carrying tokens or rows
  long polls = 0;            ///< polls forced by a full queue
};

struct AfdResult {
  double exchange_us = 0;    ///< the seed's metric for the case's view (AfdCase::view), us
  double span_us = 0;        ///< first Attention dispatch start to last Attention kernel end (us)
  double period_us = 0;      ///< span + exchange gap (steady-state period, us)
  /// Each device's kernels (name dispatch_impl, dispatch_copy_epilogue, combine_impl, ...; role
  /// attention | ffn), times in us relative to the first Attention rank's dispatch start.
  std::vector<hw::Span> kernels;
  std::vector<NicOps> nics;  ///< cross-node only
  int channels = 0;
  bool cross_node = false;
  std::map<std::string, double> extra;  ///< diagnostics (bytes, bottleneck shares)
  /// Case-level remark not tied to a phase, empty if none: set when routing dropped rows over
  /// capacity ("routing dropped D of N rows over capacity C ..."); the scenario JSON's "note".
  std::string note;
};

/// The hardware parameters the AFD model requires on `hw`'s topology (the NVLink domain or InfiniBand
/// pods), derived from afd_hardware(hw) (models/afd/hardware.hpp).
std::vector<std::string> hardware_keys(const hw::Hardware& hw);
/// GPUs per NIC on a pods topology: topology gpus_per_node / nics_per_node (both absent: one NIC per
/// GPU). Errors: std::invalid_argument naming the hardware when only one is given, or when the ratio
/// is not a whole number that divides gpus_per_pod (more NICs than GPUs per node is not modelled).
int gpus_per_nic(const hw::Hardware& hw);

/// Those of hardware_keys(hw) that `hw` does not set; empty when it can run. simulate_afd refuses
/// such hardware naming them, and the scenario runner checks it before any case runs.
std::vector<std::string> missing_hardware_keys(const hw::Hardware& hw);

/**
 * Simulate one exchange on the engine (one sim::Simulation per call). The model follows the
 * hardware's topology kind: on a single NVLink domain (kind other than pods) the NVLink-domain model;
 * on `pods` always the cross-node model, even for a split that would fit one pod (the FFN pod plus
 * S = ceil(attention_ranks / gpus_per_pod) Attention pods, the last one possibly partial), with NICs
 * as OpServers and RDMA payload as flows; GPUs share a NIC when topology gpus_per_node /
 * nics_per_node > 1. With `hybrid`, ffn_ranks must equal gpus_per_pod (one FFN GPU per rail).
 * trace (optional): one lane per device's kernels ("gpuN/kernels") and per NIC ("nicN/requester",
 * "nicN/responder"), plus the engine's own flow lanes.
 * Errors: models::ParamError carrying the offending key ("afd case: 'tokens' must be in 1..1048576,
 * got 0") for impossible cases (ranks < 1, T outside 1..kMaxTokens, SMs out of 1..gpu.compute_units, unknown path, split not fitting the hardware, an InfiniBand-only switch on
 * hardware without a NIC, hybrid with ffn_ranks != gpus_per_pod, a NIC ratio that does not divide
 * a pod); std::out_of_range if the hardware file lacks a parameter the model needs.
 */
AfdResult simulate_afd(const hw::Hardware& hw, const AfdCase& c, sim::TraceSink* trace = nullptr);

/// Validate a case against the hardware (same errors as simulate_afd).
void validate(const AfdCase& c, const hw::Hardware& hw);

}  // namespace fusesim::afd
