// probe_smshare: a GEMM sharing the SMs of one GPU with a kernel that holds some of them (issue 19).
//
// Modes (--mode):
//  alone      the components, each kernel alone on the GPU:
//             "gemm_alone": C = X·W^T (bf16, cuBLASLt) per shape (--shapes MxNxK,...), with the library's
//               default plan (sm_target 0) and planned for fewer SMs (--sm-targets, through
//               CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET): time_us, TFLOPs, algo fingerprint.
//             "gemm_alone_pinned" (--pinned-targets, CUDA only; also in gemm_once): the default plan's algorithm
//               run again with the descriptor's SM-count target set after the heuristic chose it (the same
//               kernel, if the library sizes its grid from the descriptor at launch: ncu tells).
//             "neighbour_alone": the copy kernel (16 B x 4 loads in flight per thread, each block its own
//               slice of HBM) and the compute-only kernel (8 FMA chains per thread, no memory traffic) with
//               B blocks (--blocks) alone: time_us for a fixed work per block, the rate per block,
//               GBps (copy), the SMs the blocks landed on (%smid: distinct SMs, distinct TPCs = smid/2),
//               and the launch's residency (blocks per SM from the occupancy API) with the kernel's
//               attributes (threads, registers per thread, static + dynamic shared memory).
//  gemm_once  each shape's plans run once (for `ncu --section LaunchStats`: grid, cluster, registers,
//             shared memory of the library's kernel).
//  gpcmap     "cluster_placement": a kernel launched in clusters of 2, 4, 8 and 16 CTAs (grid = the
//             most clusters resident, from cudaOccupancyMaxActiveClusters) records each CTA's %smid: the
//             SMs of one cluster share a GPC, which maps SMs to GPCs (CUDA only).
//  gpcrest    "cluster_on_rest" (CUDA only): which of the SMs at or above --rest-from can host a cluster of c
//             CTAs: a holder kernel keeps every SM below --rest-from busy (one block per SM) for ~100 ms, then
//             k clusters of c CTAs (one per SM by shared memory; c = 2, 4, 6, 8, k = 1..12 / c) are launched;
//             per launch each CTA's %smid and whether it started while the hold lasted (so on the rest). The
//             CTAs of one cluster share a GPC: the clusters that run on the rest give the GPCs of those SMs.
//  clusterres "cluster_residency" (round 5, CUDA only): a synthetic persistent kernel shaped like cuBLASLt's
//             nvjet GEMMs (384 threads, --res-smem bytes of dynamic shared memory: one CTA per SM, clusters of
//             2 CTAs) with G CTAs sharing T "tiles" (--res-configs GxT,...), each tile a spin of --res-unit-us
//             on %globaltimer, launched on an idle GPU (B = 0) or after a neighbour of B blocks (--blocks,
//             --kinds) has started on every block (as in beside). Tile hand-out: "static" (CTA i takes tiles
//             i, i + G, ...: CUTLASS's persistent scheduler) or "dynamic" (an atomic tile counter). Per launch:
//             each CTA's %smid, start and end (us after the first CTA's start) and tiles run, the CTAs
//             resident at launch (started within half a unit of the first), the late CTAs' indices and the
//             kernel's span in units. Counts the 2-CTA cluster slots a B-block neighbour leaves and which
//             CTAs are late, with no GEMM beside anything.
//  beside     "gemm_beside": the GEMM (default plan) while a neighbour of B blocks runs: the neighbour is
//             launched first on its own stream; the GEMM's stream waits on a device flag until every
//             neighbour block has started (so the neighbour holds its SMs before the GEMM is scheduled),
//             then runs the GEMM. The neighbour's work is sized from a short alone run to last
//             --cover x the GEMM's alone time; `covered` says whether it outlasted the GEMM. With
//             --plan-for-free each point's GEMM is the plan for the SMs the neighbour leaves (SM-count
//             target = SMs - B), timed alone first (alone_time_us; default_plan_alone_time_us beside it).
//  tiletimes  "tile_times" (issue 19, round 7 probe; CUDA only): when each part of the GEMM's output is written,
//             beside a neighbour of B blocks that polls it. C (bf16) is poisoned with 0xFFFF (a NaN the product
//             never writes) before each launch; the neighbour's B blocks (512 threads, one per SM, as the compute
//             neighbour) start first, then the GEMM runs (default plan), and every thread watches up to 16 points
//             of C, the last element of each --poll-step x --poll-step block (C rows r, columns c), reading it
//             from L2 (ld.cv) and recording %globaltimer when it first changes; the blocks leave only when a
//             one-thread kernel after the GEMM (on the GEMM's stream) has set a done flag, so the neighbour holds
//             its SMs for the whole GEMM. Per launch: the points' write times in us after a stamp written just
//             before the GEMM's launch (-1: never seen), the GEMM's span from that stamp to the stamp after it,
//             its event time, and the neighbour's %smid set. --poll-sleep-ns between sweeps of a thread's points.
// Every timing: --warmup untimed, --iters timed behind a start gate, median; --pause-ms idle first.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "blaslt_gemm.hpp"
#include "probe_common.hpp"

using namespace fusesim::gpu;

namespace {

__device__ __forceinline__ int my_smid() {
#if defined(FUSESIM_GPU_HIP)
  return static_cast<int>(__smid());
#else
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return static_cast<int>(r);
#endif
}

// Copy kernel: block b copies its own slice of `n16` 16-byte words `passes` times.
__global__ void __launch_bounds__(512) nb_copy(const int4* __restrict__ src, int4* __restrict__ dst, size_t n16,
                                               int passes, int* smids, int* started) {
  if (threadIdx.x == 0) {
    smids[blockIdx.x] = my_smid();
    atomicAdd(started, 1);
  }
  const int4* s = src + static_cast<size_t>(blockIdx.x) * n16;
  int4* d = dst + static_cast<size_t>(blockIdx.x) * n16;
  const size_t step = static_cast<size_t>(blockDim.x) * 4;
  for (int p = 0; p < passes; ++p) {
    for (size_t i = threadIdx.x; i + 3 * blockDim.x < n16; i += step) {
      int4 a = s[i], b = s[i + blockDim.x], c = s[i + 2 * blockDim.x], e = s[i + 3 * blockDim.x];
      d[i] = a;
      d[i + blockDim.x] = b;
      d[i + 2 * blockDim.x] = c;
      d[i + 3 * blockDim.x] = e;
    }
  }
}

// Compute-only kernel: 8 independent FMA chains per thread, `iters` steps; no memory traffic.
__global__ void __launch_bounds__(512) nb_compute(float* out, long long iters, int* smids, int* started) {
  if (threadIdx.x == 0) {
    smids[blockIdx.x] = my_smid();
    atomicAdd(started, 1);
  }
  float a[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3f + j;
  const float m = 0.999999f, c = 1e-7f;
  for (long long i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], m, c);
  }
  float s = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += a[j];
  if (s == 1234.5f) out[blockIdx.x] = s;  // never true; keeps the chains live
}

// One block of a cluster: records its SM and spins about `spin` cycles (so the whole grid is resident).
__global__ void cluster_smid(int* smids, long long spin) {
  extern __shared__ char pad[];
  if (threadIdx.x == 0) {
    pad[0] = 0;
    smids[blockIdx.x] = my_smid();
  }
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
}

__device__ __forceinline__ unsigned long long gtimer_ns() {
#if defined(FUSESIM_GPU_HIP)
  return wall_clock64();  // not nanoseconds; --mode clusterres refuses to run on HIP
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

// A persistent kernel like nvjet's (one CTA per SM by shared memory, 2-CTA clusters): `tiles` tiles, each a
// spin of unit_ns; static (CTA i: tiles i, i + grid, ...) or dynamic (atomic counter). rec[4 i ..]: smid,
// start (ns, low 32 bits after base), end, tiles run.
__global__ void __launch_bounds__(384) persist_emul(long long* rec, int tiles, long long unit_ns, int dynamic, int* counter) {
  extern __shared__ char pad[];
  __shared__ int next;
  const unsigned long long t0 = gtimer_ns();
  if (threadIdx.x == 0) pad[0] = 0;
  int done = 0;
  int t = dynamic ? -1 : static_cast<int>(blockIdx.x);
  for (;;) {
    if (dynamic) {
      if (threadIdx.x == 0) next = atomicAdd(counter, 1);
      __syncthreads();
      t = next;
      __syncthreads();
    }
    if (t >= tiles) break;
    if (threadIdx.x == 0) {
      const unsigned long long s = gtimer_ns();
      while (gtimer_ns() - s < static_cast<unsigned long long>(unit_ns)) {
      }
    }
    __syncthreads();
    ++done;
    if (!dynamic) t += gridDim.x;
  }
  if (threadIdx.x == 0) {
    rec[4 * blockIdx.x] = my_smid();
    rec[4 * blockIdx.x + 1] = static_cast<long long>(t0);
    rec[4 * blockIdx.x + 2] = static_cast<long long>(gtimer_ns());
    rec[4 * blockIdx.x + 3] = done;
  }
}

// Polling neighbour (--mode tiletimes): B blocks of 512 threads; thread t watches points t, t + T, ... (T = all
// threads, at most kPollPer each) of the bf16 output c at element offsets offs[]; c holds 0xFFFF until the GEMM
// writes it. seen_ns[p]: the %globaltimer time point p was first seen written. Stays until *done != 0 (set after
// the GEMM) or limit_ns has passed since its start, so the neighbour's SMs stay held for the GEMM's whole span.
constexpr int kPollPer = 16;
__global__ void __launch_bounds__(512) nb_poll(const unsigned short* c, const long long* offs, int npoints,
                                               unsigned long long* seen_ns, const int* done, int* smids, int* started,
                                               unsigned long long limit_ns, int sleep_ns) {
  if (threadIdx.x == 0) {
    smids[blockIdx.x] = my_smid();
    atomicAdd(started, 1);
  }
  const unsigned long long t0 = gtimer_ns();
  const int nthreads = static_cast<int>(gridDim.x * blockDim.x);
  const int tid = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  unsigned mask = 0;
  long long off[kPollPer];
#pragma unroll
  for (int k = 0; k < kPollPer; ++k) {
    const int p = tid + k * nthreads;
    off[k] = p < npoints ? offs[p] : 0;
    if (p < npoints) mask |= 1u << k;
  }
  for (;;) {
#pragma unroll
    for (int k = 0; k < kPollPer; ++k)
      if (mask & (1u << k)) {
        const unsigned short v = __ldcv(c + off[k]);
        if (v != 0xFFFFu) {
          seen_ns[tid + k * nthreads] = gtimer_ns();
          mask &= ~(1u << k);
        }
      }
    if (__ldcv(done) != 0 || gtimer_ns() - t0 > limit_ns) break;
#if !defined(FUSESIM_GPU_HIP)
    if (sleep_ns > 0) __nanosleep(static_cast<unsigned>(sleep_ns));
#endif
  }
}

// One thread: stamp[0] = %globaltimer; with set_done, *done = 1 (ends nb_poll).
__global__ void stamp_kernel(unsigned long long* stamp, int* done, int set_done) {
  *stamp = gtimer_ns();
  if (set_done) {
    __threadfence_system();
    atomicExch(done, 1);
  }
}

// --mode gpcrest: holds every SM whose %smid is below `below` (one block per SM by its shared memory) for about
// `spin` cycles: the first block to land on such an SM claims it (claimed[smid]) and holds; blocks landing on an SM
// already claimed or at or above `below` leave at once (launched with more blocks than SMs, so that an SM the
// dispatcher skipped in its first pass is still claimed). held: SMs claimed; end_ns: the latest hold's end.
__global__ void hold_below(int below, long long spin, int* claimed, int* held, unsigned long long* end_ns) {
  extern __shared__ char pad[];
  if (threadIdx.x == 0) {
    pad[0] = 0;
    const int sm = my_smid();
    if (sm < below && atomicExch(&claimed[sm], 1) == 0) {  // claimed[sm] preset to 1: left free
      atomicAdd(held, 1);
      const long long t0 = clock64();
      while (clock64() - t0 < spin) {
      }
      atomicMax(end_ns, gtimer_ns());
    }
  }
}
// --mode gpcrest: one CTA of a cluster records its SM and its start (%globaltimer).
__global__ void cluster_stamp(int* smids, unsigned long long* start_ns) {
  extern __shared__ char pad[];
  if (threadIdx.x == 0) {
    pad[0] = 0;
    smids[blockIdx.x] = my_smid();
    start_ns[blockIdx.x] = gtimer_ns();
  }
}

// Spins (one thread) until *started >= need, or about 2 s of cycles (then sets *timeout).
__global__ void wait_started(volatile int* started, int need, int* timeout) {
  const long long t0 = clock64();
  while (*started < need) {
    if (clock64() - t0 > 4000000000LL) {
      *timeout = 1;
      return;
    }
  }
}

#if !defined(FUSESIM_GPU_HIP)
// A launch of `grid` blocks of `block` threads in clusters of `cluster` along x, with `smem` bytes of dynamic shared
// memory, on `stream` (cudaLaunchKernelEx / cudaOccupancyMaxActiveClusters take cfg). Not copyable: cfg points
// at attr.
struct ClusterLaunch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  ClusterLaunch(int cluster, int grid, int block, size_t smem, cudaStream_t stream) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(block, 1, 1);
    cfg.gridDim = dim3(grid, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};
#endif

struct Shape {
  long long m, n, k;
};

std::vector<Shape> parse_shapes(const std::vector<std::string>& v) {
  std::vector<Shape> out;
  for (const auto& s : v) {
    Shape sh{};
    if (std::sscanf(s.c_str(), "%lldx%lldx%lld", &sh.m, &sh.n, &sh.k) != 3) {
      std::fprintf(stderr, "fusesim: probe_smshare: --shapes: '%s' is not MxNxK\n", s.c_str());
      std::exit(2);
    }
    out.push_back(sh);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const Args::RunOptions opt = args.run_options(15, 3);
  const std::string mode = args.str("--mode", "alone", "alone | gemm_once | beside | gpcmap | clusterres | tiletimes | gpcrest");
  const auto shapes = parse_shapes(args.str_list("--shapes", {"4096x4096x4096", "8192x8192x4096", "2048x7168x4096",
                                                               "1024x4096x8192"}, "GEMM shapes MxNxK"));
  const auto sm_targets = args.int_list("--sm-targets", {0, 128, 124, 116, 100, 99, 84, 66}, "SM-count targets (0: default)");
  const auto pinned_targets = args.int_list("--pinned-targets", {}, "alone / gemm_once: the default plan's algorithm run "
                                            "again told to target each of these SM counts (set after the heuristic; "
                                            "\"gemm_alone_pinned\", CUDA only; empty: none)");
  if (!pinned_targets.empty() &&
      ((mode != "alone" && mode != "gemm_once") || std::find(sm_targets.begin(), sm_targets.end(), 0) == sm_targets.end())) {
    std::fprintf(stderr, "fusesim: probe_smshare: --pinned-targets needs --mode alone or gemm_once and 0 among --sm-targets "
                         "(the default plan it pins)\n");
    return 2;
  }
  const auto blocks = args.int_list("--blocks", {4, 8, 16, 24, 33, 48, 66}, "neighbour block counts B");
  const auto kinds = args.str_list("--kinds", {"copy", "compute"}, "neighbour kinds");
  const long long slice_mib = args.integer("--slice-mib", 4, "copy: HBM slice per block (MiB)");
  const double cover = static_cast<double>(args.integer("--cover", 4, "beside: neighbour length / GEMM alone"));
  const int pause_ms = static_cast<int>(args.integer("--pause-ms", 20, "idle time before each point (ms)"));
  const bool plan_for_free = args.flag("--plan-for-free", "beside: the GEMM planned for the SMs the neighbour leaves "
                                                          "(SM-count target = SMs - B), timed alone and beside");
  const auto res_configs = args.str_list("--res-configs", {"132x256", "128x128", "132x1024"},
                                         "clusterres: GxT (CTAs x tiles) of the persistent emulation");
  const long long res_unit_us = args.integer("--res-unit-us", 20, "clusterres: one tile's spin (us)");
  const long long res_smem = args.integer("--res-smem", 213204, "clusterres: dynamic shared memory per CTA (bytes)");
  const long long res_reps = args.integer("--res-repeats", 3, "clusterres: launches per point");
  const long long rest_from = args.integer("--rest-from", 120, "gpcrest: the first SM of the rest");
  const auto free_sms = args.int_list("--free-sms", {-1}, "gpcrest: the TPCs of these SMs (below --rest-from) left free as "
                                                          "well, one per launch set (-1: none)");
  const long long poll_step = args.integer("--poll-step", 64, "tiletimes: C is watched at the last element of each "
                                                            "step x step block");
  const long long poll_sleep_ns = args.integer("--poll-sleep-ns", 500, "tiletimes: pause between a thread's sweeps (ns)");
  const long long poll_reps = args.integer("--poll-repeats", 3, "tiletimes: recorded launches per point (after one "
                                                                "unrecorded)");
  args.finish("probe_smshare: a GEMM beside a kernel holding B SMs (JSON lines on stdout)");
  if (mode != "alone" && mode != "gemm_once" && mode != "beside" && mode != "gpcmap" && mode != "clusterres" &&
      mode != "tiletimes" && mode != "gpcrest") {
    std::fprintf(stderr, "fusesim: probe_smshare: --mode must be alone, gemm_once, beside, gpcmap, clusterres, tiletimes or gpcrest "
                 "(got %s)\n",
                 mode.c_str());
    return 2;
  }

  require_devices(1);
  GPU_CHECK(hipSetDevice(0));
  Reporter rep("smshare", args.command(), opt.commit, {0});
  const int nsm = sm_count(0);
  size_t max_x = 0, max_w = 0, max_c = 0;
  for (const auto& s : shapes) {
    max_x = std::max<size_t>(max_x, s.m * s.k);
    max_w = std::max<size_t>(max_w, s.n * s.k);
    max_c = std::max<size_t>(max_c, s.m * s.n);
  }
  hipblasLtHandle_t handle;
  BLAS_CHECK(hipblasLtCreate(&handle));
  Stream gs(0), ns(0);
  Event g0(0), g1(0), n0(0), n1(0);
  DeviceBuffer x(0, max_x * 2), w(0, max_w * 2), c(0, max_c * 2), ws(0, kGemmWorkspaceBytes);
  fill_random_bf16(x.ptr, max_x, 11, 1.0f, gs.s);
  fill_random_bf16(w.ptr, max_w, 12, 1.0f, gs.s);
  const long long max_b = std::max<long long>(*std::max_element(blocks.begin(), blocks.end()), 4LL * nsm);
  const size_t slice = static_cast<size_t>(slice_mib) << 20;
  DeviceBuffer src(0, slice * max_b), dst(0, slice * max_b), fout(0, 4 * max_b);
  fill_random_bf16(src.ptr, slice * max_b / 2, 13, 1.0f, gs.s);
  DeviceBuffer smids(0, sizeof(int) * max_b), started(0, sizeof(int)), tmo(0, sizeof(int));
  GPU_CHECK(hipMemset(tmo.ptr, 0, sizeof(int)));
  GPU_CHECK(hipStreamSynchronize(gs.s));
  StartGate gate;

  auto pause = [&]() {
    if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  };
  // Neighbour launchers: work = passes (copy) or FMA steps (compute).
  auto launch_nb = [&](const std::string& kind, int b, long long work) {
    if (kind == "copy")
      nb_copy<<<b, 512, 0, ns.s>>>(src.as<int4>(), dst.as<int4>(), slice / 16, static_cast<int>(work), smids.as<int>(),
                                   started.as<int>());
    else
      nb_compute<<<b, 512, 0, ns.s>>>(fout.as<float>(), work, smids.as<int>(), started.as<int>());
    GPU_CHECK_LAUNCH();
  };
  // Times `enqueue` on stream s between events a, b: warmup + iters, median (us).
  auto time_one = [&](hipStream_t s, Event& a, Event& b, const std::function<void()>& enqueue) {
    pause();
    std::vector<double> t;
    for (int it = 0; it < opt.warmup + opt.iters; ++it) {
      const bool timed = it >= opt.warmup;
      if (timed) gate.arm(s);
      GPU_CHECK(hipEventRecord(a.e, s));
      enqueue();
      GPU_CHECK(hipEventRecord(b.e, s));
      if (timed) gate.release();
      GPU_CHECK(hipStreamSynchronize(s));
      if (timed) t.push_back(elapsed_us(a.e, b.e));
    }
    return stats_of(t);
  };
  auto nb_attrs = [&](const std::string& kind, JsonLine& j) {
    hipFuncAttributes fa{};
    int per_sm = 0;
    if (kind == "copy") {
      GPU_CHECK(hipFuncGetAttributes(&fa, reinterpret_cast<const void*>(nb_copy)));
      GPU_CHECK(hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, nb_copy, 512, 0));
    } else {
      GPU_CHECK(hipFuncGetAttributes(&fa, reinterpret_cast<const void*>(nb_compute)));
      GPU_CHECK(hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, nb_compute, 512, 0));
    }
    j.integer("threads", 512).integer("regs_per_thread", fa.numRegs).integer("static_smem_bytes", fa.sharedSizeBytes)
        .integer("dynamic_smem_bytes", 0).integer("resident_blocks_per_sm", per_sm);
  };
  auto placement = [&](int b, JsonLine& j) {
    std::vector<int> h(b);
    GPU_CHECK(hipMemcpy(h.data(), smids.ptr, sizeof(int) * b, hipMemcpyDeviceToHost));
    std::set<int> sm(h.begin(), h.end()), tpc;
    for (int v : h) tpc.insert(v / 2);
    std::vector<double> hv(h.begin(), h.end());
    j.integer("distinct_sms", static_cast<long long>(sm.size())).integer("distinct_tpcs", static_cast<long long>(tpc.size()))
        .num_list("smids", hv);
  };
  auto nb_unit = [&](const std::string& kind) -> long long { return kind == "copy" ? 8 : 200000; };

  if (mode == "clusterres") {
#if defined(FUSESIM_GPU_HIP)
    std::fprintf(stderr, "fusesim: probe_smshare: --mode clusterres needs CUDA thread-block clusters\n");
    return 2;
#else
    GPU_CHECK(cudaFuncSetAttribute(persist_emul, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(res_smem)));
    DeviceBuffer rec(0, sizeof(long long) * 4 * 1024), counter(0, sizeof(int));
    // The compute neighbour's rate alone, to size it: it must outlast the emulation by far.
    auto nb_len_work = [&](const std::string& kind, int b, double want_us) {
      const long long unit = nb_unit(kind);
      Stats su = time_one(ns.s, n0, n1, [&]() {
        GPU_CHECK(hipMemsetAsync(started.ptr, 0, sizeof(int), ns.s));
        launch_nb(kind, b, unit);
      });
      return std::max<long long>(1, static_cast<long long>(std::ceil(unit * want_us / su.median)));
    };
    std::vector<long long> bl{0};
    for (auto b : blocks) bl.push_back(b);
    for (const auto& cfgs : res_configs) {
      int G = 0, T = 0;
      if (std::sscanf(cfgs.c_str(), "%dx%d", &G, &T) != 2 || G < 2 || G % 2 || G > 1024 || T < 1) {
        std::fprintf(stderr, "fusesim: probe_smshare: --res-configs: '%s' is not GxT (G even, 2..1024)\n", cfgs.c_str());
        return 2;
      }
      const double span_us = (static_cast<double>(T) / G + 4) * res_unit_us;
      for (const auto& kind : kinds)
        for (auto b64 : bl) {
          const int b = static_cast<int>(b64);
          if (b == 0 && kind != kinds.front()) continue;
          const long long work = b > 0 ? nb_len_work(kind, b, 40 * span_us + 2000) : 0;
          for (int dyn = 0; dyn < 2; ++dyn)
            for (long long r = 0; r < res_reps; ++r) {
              pause();
              GPU_CHECK(hipMemsetAsync(counter.ptr, 0, sizeof(int), gs.s));
              GPU_CHECK(hipMemsetAsync(rec.ptr, 0xff, sizeof(long long) * 4 * G, gs.s));
              GPU_CHECK(hipStreamSynchronize(gs.s));
              if (b > 0) {
                GPU_CHECK(hipMemsetAsync(started.ptr, 0, sizeof(int), ns.s));
                GPU_CHECK(hipStreamSynchronize(ns.s));
                launch_nb(kind, b, work);
                wait_started<<<1, 1, 0, gs.s>>>(started.as<int>(), b, tmo.as<int>());
                GPU_CHECK_LAUNCH();
              }
              ClusterLaunch l(2, G, 384, static_cast<size_t>(res_smem), gs.s);
              GPU_CHECK(cudaLaunchKernelEx(&l.cfg, persist_emul, rec.as<long long>(), T, res_unit_us * 1000, dyn, counter.as<int>()));
              GPU_CHECK_LAUNCH();
              GPU_CHECK(hipDeviceSynchronize());
              std::vector<long long> h(4 * G);
              GPU_CHECK(hipMemcpy(h.data(), rec.ptr, sizeof(long long) * h.size(), hipMemcpyDeviceToHost));
              long long base = h[1], last = 0;
              for (int i = 0; i < G; ++i) base = std::min(base, h[4 * i + 1]);
              std::vector<double> sm(G), st(G), en(G), nt(G), late;
              int resident = 0, tiles_run = 0;
              for (int i = 0; i < G; ++i) {
                sm[i] = static_cast<double>(h[4 * i]);
                st[i] = (h[4 * i + 1] - base) * 1e-3;
                en[i] = (h[4 * i + 2] - base) * 1e-3;
                nt[i] = static_cast<double>(h[4 * i + 3]);
                tiles_run += static_cast<int>(h[4 * i + 3]);
                last = std::max(last, h[4 * i + 2] - base);
                if (st[i] < 0.5 * res_unit_us) ++resident;
                else late.push_back(i);
              }
              JsonLine j;
              j.str("measure", "cluster_residency").str("neighbour", b > 0 ? kind : "none").integer("blocks", b)
                  .integer("grid", G).integer("cluster", 2).integer("tiles", T).str("schedule", dyn ? "dynamic" : "static")
                  .integer("unit_us", res_unit_us).integer("smem_bytes", res_smem).integer("repeat", r)
                  .integer("resident_at_launch", resident).integer("tiles_run", tiles_run)
                  .num("span_units", last * 1e-3 / res_unit_us).num_list("late_ctas", late).num_list("cta_smid", sm)
                  .num_list("cta_start_us", st).num_list("cta_end_us", en).num_list("cta_tiles", nt);
              if (b > 0) placement(b, j);
              rep.emit(j);
            }
        }
    }
    (void)hipblasLtDestroy(handle);
    return 0;
#endif
  }

  if (mode == "tiletimes") {
#if defined(FUSESIM_GPU_HIP)
    std::fprintf(stderr, "fusesim: probe_smshare: --mode tiletimes needs %%globaltimer (CUDA only)\n");
    return 2;
#else
    if (poll_step < 1 || poll_sleep_ns < 0 || poll_sleep_ns > 100000 || poll_reps < 1) {
      std::fprintf(stderr, "fusesim: probe_smshare: --poll-step must be >= 1, --poll-sleep-ns 0..100000, "
                           "--poll-repeats >= 1\n");
      return 2;
    }
    DeviceBuffer done(0, sizeof(int)), stamps(0, 2 * sizeof(unsigned long long));
    for (const auto& sh : shapes) {
      GemmPlan plan(handle, GemmDtype::bf16, sh.m, sh.n, sh.k, kGemmWorkspaceBytes);
      JsonLine ja;
      ja.str("measure", "gemm_alone").str("dtype", "bf16").integer("m", sh.m).integer("n", sh.n).integer("k", sh.k)
          .integer("sm_target", 0);
      if (!plan.ok() || !plan.select_working_algo(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s)) {
        ja.str("error", plan.error());
        rep.emit(ja);
        continue;
      }
      Stats sa = time_one(gs.s, g0, g1, [&]() { plan.run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s); });
      ja.timing(sa).str("algo", plan.algo_fingerprint());
      rep.emit(ja);
      // The watched points: the last element of each step x step block of C (row-major m x n).
      const long long pr = (sh.m + poll_step - 1) / poll_step, pc = (sh.n + poll_step - 1) / poll_step;
      std::vector<long long> offs;
      for (long long i = 0; i < pr; ++i)
        for (long long jx = 0; jx < pc; ++jx)
          offs.push_back(std::min(sh.m - 1, i * poll_step + poll_step - 1) * sh.n + std::min(sh.n - 1, jx * poll_step + poll_step - 1));
      const int np = static_cast<int>(offs.size());
      DeviceBuffer d_offs(0, sizeof(long long) * offs.size()), d_seen(0, sizeof(unsigned long long) * offs.size());
      GPU_CHECK(hipMemcpy(d_offs.ptr, offs.data(), sizeof(long long) * offs.size(), hipMemcpyHostToDevice));
      for (auto b64 : blocks) {
        const int b = static_cast<int>(b64);
        if (static_cast<long long>(b) * 512 * kPollPer < np) {
          std::fprintf(stderr, "fusesim: probe_smshare: tiletimes: %d blocks cannot watch %d points (at most %d per "
                               "block); raise --poll-step\n", b, np, 512 * kPollPer);
          return 2;
        }
        for (long long r = -1; r < poll_reps; ++r) {
          pause();
          GPU_CHECK(hipMemsetAsync(c.ptr, 0xff, static_cast<size_t>(sh.m * sh.n) * 2, gs.s));
          GPU_CHECK(hipMemsetAsync(d_seen.ptr, 0, sizeof(unsigned long long) * offs.size(), gs.s));
          GPU_CHECK(hipMemsetAsync(done.ptr, 0, sizeof(int), gs.s));
          GPU_CHECK(hipMemsetAsync(started.ptr, 0, sizeof(int), gs.s));
          GPU_CHECK(hipMemsetAsync(tmo.ptr, 0, sizeof(int), gs.s));
          GPU_CHECK(hipStreamSynchronize(gs.s));
          nb_poll<<<b, 512, 0, ns.s>>>(c.as<unsigned short>(), d_offs.as<long long>(), np,
                                       d_seen.as<unsigned long long>(), done.as<int>(), smids.as<int>(),
                                       started.as<int>(), 2000000000ULL, static_cast<int>(poll_sleep_ns));
          GPU_CHECK_LAUNCH();
          wait_started<<<1, 1, 0, gs.s>>>(started.as<int>(), b, tmo.as<int>());
          GPU_CHECK_LAUNCH();
          stamp_kernel<<<1, 1, 0, gs.s>>>(stamps.as<unsigned long long>(), done.as<int>(), 0);
          GPU_CHECK_LAUNCH();
          GPU_CHECK(hipEventRecord(g0.e, gs.s));
          plan.run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s);
          GPU_CHECK(hipEventRecord(g1.e, gs.s));
          stamp_kernel<<<1, 1, 0, gs.s>>>(stamps.as<unsigned long long>() + 1, done.as<int>(), 1);
          GPU_CHECK_LAUNCH();
          GPU_CHECK(hipDeviceSynchronize());
          if (r < 0) continue;
          std::vector<unsigned long long> seen(offs.size()), st(2);
          GPU_CHECK(hipMemcpy(seen.data(), d_seen.ptr, sizeof(unsigned long long) * seen.size(), hipMemcpyDeviceToHost));
          GPU_CHECK(hipMemcpy(st.data(), stamps.ptr, sizeof(unsigned long long) * 2, hipMemcpyDeviceToHost));
          std::vector<double> t_us(seen.size());
          long long unseen = 0;
          for (size_t i = 0; i < seen.size(); ++i) {
            if (seen[i] == 0) {
              t_us[i] = -1;
              ++unseen;
            } else {
              t_us[i] = std::round((static_cast<double>(seen[i]) - static_cast<double>(st[0])) * 1e-2) * 1e-1;
            }
          }
          int h_tmo = 0;
          GPU_CHECK(hipMemcpy(&h_tmo, tmo.ptr, sizeof(int), hipMemcpyDeviceToHost));
          JsonLine j;
          j.str("measure", "tile_times").str("dtype", "bf16").integer("m", sh.m).integer("n", sh.n).integer("k", sh.k)
              .str("neighbour", "poll").integer("blocks", b).integer("repeat", r).integer("poll_step", poll_step)
              .integer("poll_sleep_ns", poll_sleep_ns).integer("point_rows", pr).integer("point_cols", pc)
              .num("time_us", elapsed_us(g0.e, g1.e)).num("alone_time_us", sa.median)
              .num("span_us", (static_cast<double>(st[1]) - static_cast<double>(st[0])) * 1e-3)
              .integer("unseen_points", unseen).boolean("start_wait_timeout", h_tmo != 0)
              .str("algo", plan.algo_fingerprint());
          placement(b, j);
          j.num_list("point_write_us", t_us);
          rep.emit(j);
        }
      }
    }
    (void)hipblasLtDestroy(handle);
    return 0;
#endif
  }

  if (mode == "gpcrest") {
#if defined(FUSESIM_GPU_HIP)
    std::fprintf(stderr, "fusesim: probe_smshare: --mode gpcrest needs CUDA thread-block clusters\n");
    return 2;
#else
    const int smem = 120 * 1024;  // more than half an SM's shared memory: one block per SM
    GPU_CHECK(cudaFuncSetAttribute(hold_below, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    GPU_CHECK(cudaFuncSetAttribute(cluster_stamp, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    GPU_CHECK(cudaFuncSetAttribute(cluster_stamp, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    const int rest = nsm - static_cast<int>(rest_from);
    if (rest_from < 1 || rest < 1 || rest + 2 > 64) {
      std::fprintf(stderr, "fusesim: probe_smshare: --rest-from must leave 1..62 SMs above it (%d SMs; got %lld)\n", nsm,
                   rest_from);
      return 2;
    }
    for (long long f : free_sms)
      if (f != -1 && (f < 0 || f >= rest_from)) {
        std::fprintf(stderr, "fusesim: probe_smshare: --free-sms: %lld is not an SM below --rest-from (%lld) or -1\n", f, rest_from);
        return 2;
      }
    DeviceBuffer claimed(0, sizeof(int) * nsm), held(0, sizeof(int)), hend(0, sizeof(unsigned long long)), cs(0, sizeof(int) * 64),
        cst(0, sizeof(unsigned long long) * 64);
    for (long long fsm : free_sms)
    for (int c : {2, 4, 6, 8})
      for (int k = 1; k * c <= rest + (fsm >= 0 ? 2 : 0); ++k)
        for (int r = 0; r < 2; ++r) {
          if (fsm >= 0 && c == 2) continue;  // with a TPC left free: clusters of 4 and more only
          pause();
          GPU_CHECK(hipMemset(held.ptr, 0, sizeof(int)));
          GPU_CHECK(hipMemset(hend.ptr, 0, sizeof(unsigned long long)));
          GPU_CHECK(hipMemset(cs.ptr, 0xff, sizeof(int) * 64));
          GPU_CHECK(hipMemset(claimed.ptr, 0, sizeof(int) * nsm));
          GPU_CHECK(hipMemset(tmo.ptr, 0, sizeof(int)));
          const int need = static_cast<int>(rest_from) - (fsm >= 0 ? 2 : 0);
          if (fsm >= 0) {  // leave the TPC of SM fsm (SMs 2t, 2t + 1) free: preset as claimed
            const int one = 1, t = static_cast<int>(fsm) / 2;
            GPU_CHECK(hipMemcpy(claimed.as<int>() + 2 * t, &one, sizeof(int), hipMemcpyHostToDevice));
            GPU_CHECK(hipMemcpy(claimed.as<int>() + 2 * t + 1, &one, sizeof(int), hipMemcpyHostToDevice));
          }
          hold_below<<<4 * nsm, 128, smem, ns.s>>>(static_cast<int>(rest_from), 200000000LL, claimed.as<int>(), held.as<int>(),
                                                    hend.as<unsigned long long>());
          GPU_CHECK_LAUNCH();
          wait_started<<<1, 1, 0, gs.s>>>(held.as<int>(), need, tmo.as<int>());
          GPU_CHECK_LAUNCH();
          ClusterLaunch l(c, c * k, 128, smem, gs.s);
          GPU_CHECK(cudaLaunchKernelEx(&l.cfg, cluster_stamp, cs.as<int>(), cst.as<unsigned long long>()));
          GPU_CHECK(hipDeviceSynchronize());
          std::vector<int> sm(c * k);
          std::vector<unsigned long long> st(c * k), he(1);
          int h_held = 0, h_tmo = 0;
          GPU_CHECK(hipMemcpy(sm.data(), cs.ptr, sizeof(int) * sm.size(), hipMemcpyDeviceToHost));
          GPU_CHECK(hipMemcpy(st.data(), cst.ptr, sizeof(unsigned long long) * st.size(), hipMemcpyDeviceToHost));
          GPU_CHECK(hipMemcpy(he.data(), hend.ptr, sizeof(unsigned long long), hipMemcpyDeviceToHost));
          GPU_CHECK(hipMemcpy(&h_held, held.ptr, sizeof(int), hipMemcpyDeviceToHost));
          GPU_CHECK(hipMemcpy(&h_tmo, tmo.ptr, sizeof(int), hipMemcpyDeviceToHost));
          std::vector<double> smv(sm.begin(), sm.end()), during(c * k);
          int n_during = 0;
          for (int i = 0; i < c * k; ++i) {
            during[i] = st[i] < he[0] ? 1 : 0;
            n_during += st[i] < he[0];
          }
          JsonLine j;
          j.str("measure", "cluster_on_rest").integer("rest_from", rest_from).integer("free_tpc_sm", fsm).integer("cluster", c).integer("clusters", k)
              .integer("repeat", r).integer("held_blocks", h_held).boolean("start_wait_timeout", h_tmo != 0)
              .integer("ctas_during_hold", n_during).num_list("smids", smv).num_list("started_during_hold", during);
          rep.emit(j);
        }
    (void)hipblasLtDestroy(handle);
    return 0;
#endif
  }

  if (mode == "gpcmap") {
#if defined(FUSESIM_GPU_HIP)
    std::fprintf(stderr, "fusesim: probe_smshare: --mode gpcmap needs CUDA thread-block clusters\n");
    return 2;
#else
    GPU_CHECK(cudaFuncSetAttribute(cluster_smid, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    const int smem = 120 * 1024;  // more than half an SM's shared memory: one block per SM
    GPU_CHECK(cudaFuncSetAttribute(cluster_smid, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    for (int cs : {2, 4, 8, 16}) {
      ClusterLaunch l(cs, cs, 128, smem, gs.s);
      int clusters = 0;
      GPU_CHECK(cudaOccupancyMaxActiveClusters(&clusters, cluster_smid, &l.cfg));
      // Grid: every cluster that fits at once (one block per SM by its shared memory).
      for (int r = 0; r < 3; ++r) {
        l.cfg.gridDim = dim3(clusters * cs, 1, 1);
        GPU_CHECK(cudaLaunchKernelEx(&l.cfg, cluster_smid, smids.as<int>(), 2000000LL));
        GPU_CHECK(hipStreamSynchronize(gs.s));
        std::vector<int> h(clusters * cs);
        GPU_CHECK(hipMemcpy(h.data(), smids.ptr, sizeof(int) * h.size(), hipMemcpyDeviceToHost));
        std::vector<double> hv(h.begin(), h.end());
        JsonLine j;
        j.str("measure", "cluster_placement").integer("cluster", cs).integer("max_active_clusters", clusters)
            .integer("repeat", r).num_list("smids", hv);
        rep.emit(j);
      }
    }
    (void)hipblasLtDestroy(handle);
    return 0;
#endif
  }

  for (const auto& sh : shapes) {
    std::unique_ptr<GemmPlan> def;
    for (auto target : sm_targets) {
      if (mode == "beside" && target != 0) continue;
      auto plan = std::make_unique<GemmPlan>(handle, GemmDtype::bf16, sh.m, sh.n, sh.k, kGemmWorkspaceBytes, nullptr,
                                             nullptr, static_cast<int>(target));
      JsonLine j;
      j.str("measure", "gemm_alone").str("dtype", "bf16").integer("m", sh.m).integer("n", sh.n).integer("k", sh.k)
          .integer("sm_target", target);
      if (!plan->ok() || !plan->select_working_algo(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s)) {
        j.str("error", plan->error());
        rep.emit(j);
        continue;
      }
      if (mode == "gemm_once") {
        plan->run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s);
        GPU_CHECK(hipStreamSynchronize(gs.s));
        j.str("algo", plan->algo_fingerprint());
        rep.emit(j);
        if (target == 0) def = std::move(plan);
        continue;
      }
      Stats st = time_one(gs.s, g0, g1, [&]() { plan->run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s); });
      j.timing(st).num("TFLOPs", plan->flops() / (st.median * 1e-6) / 1e12).str("algo", plan->algo_fingerprint());
      rep.emit(j);
      if (target == 0) def = std::move(plan);
    }
    // --pinned-targets: the default plan's algorithm, the descriptor's SM-count target set after the heuristic.
    if ((mode == "alone" || mode == "gemm_once") && def) {
      for (auto target : pinned_targets) {
        JsonLine j;
        j.str("measure", "gemm_alone_pinned").str("dtype", "bf16").integer("m", sh.m).integer("n", sh.n)
            .integer("k", sh.k).integer("sm_target", target).str("algo", def->algo_fingerprint());
        // Set, then one run that may fail without ending the probe (the library may refuse the algorithm now).
        if (!def->set_sm_count_target(static_cast<int>(target)) || !def->try_run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s)) {
          j.str("error", def->error());
          rep.emit(j);
          continue;
        }
        if (mode != "gemm_once") {
          Stats st = time_one(gs.s, g0, g1, [&]() { def->run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s); });
          j.timing(st).num("TFLOPs", def->flops() / (st.median * 1e-6) / 1e12);
        }
        rep.emit(j);
      }
    }
    if (mode != "beside" || !def) continue;
    const double t_alone = [&]() {
      return time_one(gs.s, g0, g1, [&]() { def->run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s); }).median;
    }();
    for (const auto& kind : kinds)
      for (auto b64 : blocks) {
        const int b = static_cast<int>(b64);
        // --plan-for-free: this point's GEMM is planned for nsm - b SMs (timed alone first).
        std::unique_ptr<GemmPlan> fplan;
        double f_alone = 0;
        if (plan_for_free) {
          fplan = std::make_unique<GemmPlan>(handle, GemmDtype::bf16, sh.m, sh.n, sh.k, kGemmWorkspaceBytes, nullptr, nullptr,
                                             nsm - b);
          if (!fplan->ok() || !fplan->select_working_algo(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s)) {
            std::fprintf(stderr, "fusesim: probe_smshare: no plan for %d SMs: %s\n", nsm - b, fplan->error().c_str());
            return 1;
          }
          f_alone = time_one(gs.s, g0, g1, [&]() { fplan->run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s); }).median;
        }
        GemmPlan* gp = plan_for_free ? fplan.get() : def.get();
        const double t_ref = plan_for_free ? f_alone : t_alone;
        // Size the neighbour: time a unit of work alone, scale to cover x the GEMM.
        const long long unit = nb_unit(kind);
        Stats su = time_one(ns.s, n0, n1, [&]() {
          GPU_CHECK(hipMemsetAsync(started.ptr, 0, sizeof(int), ns.s));
          launch_nb(kind, b, unit);
        });
        const long long work = std::max<long long>(1, static_cast<long long>(std::ceil(unit * cover * t_ref / su.median)));
        pause();
        std::vector<double> tg, tn, lead;
        int covered = 0;
        for (int it = 0; it < opt.warmup + opt.iters; ++it) {
          const bool timed = it >= opt.warmup;
          GPU_CHECK(hipMemsetAsync(started.ptr, 0, sizeof(int), ns.s));
          GPU_CHECK(hipStreamSynchronize(ns.s));
          if (timed) {
            gate.arm(ns.s);
            gate.arm(gs.s);
          }
          GPU_CHECK(hipEventRecord(n0.e, ns.s));
          launch_nb(kind, b, work);
          GPU_CHECK(hipEventRecord(n1.e, ns.s));
          wait_started<<<1, 1, 0, gs.s>>>(started.as<int>(), b, tmo.as<int>());
          GPU_CHECK_LAUNCH();
          GPU_CHECK(hipEventRecord(g0.e, gs.s));
          gp->run(x.ptr, w.ptr, c.ptr, ws.ptr, gs.s);
          GPU_CHECK(hipEventRecord(g1.e, gs.s));
          if (timed) gate.release();
          GPU_CHECK(hipDeviceSynchronize());
          if (!timed) continue;
          tg.push_back(elapsed_us(g0.e, g1.e));
          tn.push_back(elapsed_us(n0.e, n1.e));
          lead.push_back(elapsed_us(n0.e, g0.e));
          if (elapsed_us(g1.e, n1.e) > 0) ++covered;
        }
        int h_tmo = 0;
        GPU_CHECK(hipMemcpy(&h_tmo, tmo.ptr, sizeof(int), hipMemcpyDeviceToHost));
        JsonLine j;
        j.str("measure", "gemm_beside").str("dtype", "bf16").integer("m", sh.m).integer("n", sh.n).integer("k", sh.k)
            .str("neighbour", kind).integer("blocks", b).timing(stats_of(tg)).num("alone_time_us", t_ref)
            .num("slowdown", stats_of(tg).median / t_ref).integer("sm_target", plan_for_free ? nsm - b : 0)
            .num("default_plan_alone_time_us", t_alone).str("algo", gp->algo_fingerprint()).num("neighbour_time_us", stats_of(tn).median)
            .num("neighbour_lead_us", stats_of(lead).median).integer("neighbour_work", work)
            .integer("covered_iters", covered).boolean("start_wait_timeout", h_tmo != 0)
            .boolean("gate_timeout", gate.timed_out());
        nb_attrs(kind, j);
        placement(b, j);
        rep.emit(j);
      }
  }

  if (mode == "alone") {
    for (const auto& kind : kinds) {
      if (kind != "copy" && kind != "compute") continue;  // --kinds none: the GEMM records only
      std::vector<long long> bl(blocks.begin(), blocks.end());
      for (long long extra : {1LL, 2LL, 132LL, 264LL, 528LL})
        if (std::find(bl.begin(), bl.end(), extra) == bl.end()) bl.push_back(extra);
      for (auto b64 : bl) {
        const int b = static_cast<int>(b64);
        if (b > max_b) continue;
        const long long work = nb_unit(kind) * 4;
        Stats st = time_one(ns.s, n0, n1, [&]() {
          GPU_CHECK(hipMemsetAsync(started.ptr, 0, sizeof(int), ns.s));
          launch_nb(kind, b, work);
        });
        JsonLine j;
        j.str("measure", "neighbour_alone").str("neighbour", kind).integer("blocks", b).integer("work", work).timing(st);
        if (kind == "copy") {
          const double bytes = 2.0 * static_cast<double>(slice / 16 / (512 * 4) * (512 * 4) * 16) * work * b;
          j.num("bytes", bytes).num("GBps", bytes / (st.median * 1e-6) / 1e9)
              .num("per_block_GBps", bytes / b / (st.median * 1e-6) / 1e9);
        } else {
          j.num("fma_per_thread", 8.0 * work).num("per_block_steps_per_us", work / st.median);
        }
        nb_attrs(kind, j);
        placement(b, j);
        rep.emit(j);
      }
    }
  }
  (void)hipblasLtDestroy(handle);
  return 0;
}
