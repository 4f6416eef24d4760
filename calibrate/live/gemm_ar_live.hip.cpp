// gemm_ar_live: a real GEMM + all-reduce over the node's GPUs (tensor parallelism of world_size
// ranks, one GPU each), driven by one host thread with streams per GPU and events between them.
//
// Each rank r computes a partial C_r[M, N] = X_r[M, K] · W_r[N, K]^T (bf16 in, bf16 out, fp32
// accumulation, cuBLASLt / hipBLASLt); every rank must end with out = sum_r C_r (bf16). Rank r owns
// the row slice r (M / world_size rows). Modes:
//   gemm-only   the GEMM alone (one library call per rank).
//   split       GEMM; then copy-engine reduce-scatter (rank r puts slice p of C_r into rank p's
//               receive buffer, hipMemcpyPeerAsync on a copy stream per peer); a reduce kernel (own
//               slice + received slices, fp32 sums, bf16 out); copy-engine all-gather (rank r puts
//               its reduced slice into every peer's out).
//   overlapped  the GEMM issued in --bands row bands (one library call per band; bands of peers'
//               slices first, starting at rank r+1, own slice last); each peer band's put is
//               enqueued on the copy stream right behind an event recorded after that band, so it
//               runs while the next bands compute; then reduce and all-gather as in split.
//   lsa         GEMM; then the reduce kernel loads the peers' partial slices directly through
//               peer pointers (no copy engine), and the all-gather is a pull kernel on each rank
//               loading the peers' reduced slices (--lsa-blocks x --lsa-threads, 16 B x 4 in
//               flight per thread). Cross-GPU ordering by events (the host-side analogue of a
//               flag barrier).
// Check: before timing, C, out and the receive buffers are poisoned (NaN); one run's out on every
// rank is compared with a reference sum of separately computed partials (a kernel on GPU 0 reads
// them through peer pointers), and the reference partials with float64 dot products on the host
// at sampled elements. rel_l2 = max over ranks of ||out_r - ref|| / ||ref||; validated = finite
// everywhere, rel_l2 < 1e-2, sampled GEMM error < 1e-2, also for the last timed iteration's out.
// Timing: --warmup untimed iterations, then --iters iterations enqueued behind a start gate on all
// GPUs; per-rank time = from the gate's release to the end of that rank's work (its reduce, its
// outgoing puts and the incoming gather); time_us = median over iterations of the max over ranks.
// Output: one JSON line per (mode, m, n): mode, m, n, k, world_size, bands, time_us,
// per_rank_time_us, rel_l2, validated, plus machine, command, commit, date.
// --check-only validates every point (also through the gated path) and prints no times.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include "blaslt_gemm.hpp"
#include "probe_common.hpp"

using namespace fusesim::gpu;

namespace {


constexpr int kMaxRanks = 8;

struct CheckArgs {
  const unsigned short* ref[kMaxRanks];  // partial references, one per rank (peer pointers)
  const unsigned short* out[kMaxRanks];  // each rank's all-reduce output (peer pointers)
  int ranks;
  size_t elems;
  double* acc;  // [0]: sum ref^2; [1 + r]: sum (out_r - ref)^2; [1 + kMaxRanks + r]: non-finite out_r
};

__device__ inline float bf16_bits_to_float(unsigned short b) {
  return __uint_as_float(static_cast<unsigned int>(b) << 16);
}

__global__ void __launch_bounds__(256) allreduce_check_kernel(CheckArgs a) {
  double ref2 = 0, err2[kMaxRanks], bad[kMaxRanks];
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r) err2[r] = bad[r] = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < a.elems;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    double s = 0;
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r)
      if (r < a.ranks) s += bf16_bits_to_float(a.ref[r][i]);
    ref2 += s * s;
#pragma unroll
    for (int r = 0; r < kMaxRanks; ++r) {
      if (r < a.ranks) {
        double o = bf16_bits_to_float(a.out[r][i]);
        if (!isfinite(o)) {
          bad[r] += 1;
        } else {
          err2[r] += (o - s) * (o - s);
        }
      }
    }
  }
  __shared__ double sh[256];
  auto block_sum = [&](double v, double* dst) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(dst, sh[0]);
    __syncthreads();
  };
  block_sum(ref2, &a.acc[0]);
#pragma unroll
  for (int r = 0; r < kMaxRanks; ++r) {
    if (r < a.ranks) {
      block_sum(err2[r], &a.acc[1 + r]);
      block_sum(bad[r], &a.acc[1 + kMaxRanks + r]);
    }
  }
}

double bf16_host(unsigned short b) {
  unsigned int u = static_cast<unsigned int>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

const char* kUsage =
    "gemm_ar_live: real GEMM + all-reduce on the node's GPUs, modes gemm-only, split, overlapped, lsa\n"
    "(JSON lines on stdout, one per mode x m x n)";

}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const std::string commit = args.str("--commit", FUSESIM_GIT_COMMIT, "git commit to record");
  const auto modes = args.str_list("--modes", {"gemm-only", "split", "overlapped", "lsa"}, "modes to run");
  const auto ms = args.int_list("--m", {2048, 4096, 8192, 16384, 32768}, "M values (rows of C)");
  const auto ns = args.int_list("--n", {7168, 5120}, "N values");
  const long long k = args.integer("--k", 2048, "K");
  const int bands = static_cast<int>(args.integer("--bands", 4, "row bands of the overlapped mode"));
  int ws = static_cast<int>(args.integer("--world-size", 0, "GPUs used (0: all visible)"));
  const int iters = static_cast<int>(args.integer("--iters", 15, "timed iterations (median, >= 11)"));
  const int warmup = static_cast<int>(args.integer("--warmup", 3, "untimed iterations first"));
  const int reduce_blocks = static_cast<int>(args.integer("--reduce-blocks", 0, "reduce grid (0: 2 x SMs)"));
  const int reduce_threads = static_cast<int>(args.integer("--reduce-threads", 512, "reduce block size"));
  int lsa_blocks = static_cast<int>(args.integer("--lsa-blocks", 0, "LSA gather grid (0: 2 x SMs)"));
  const int lsa_threads = static_cast<int>(args.integer("--lsa-threads", 512, "LSA gather block size"));
  const bool check_only = args.flag("--check-only", "validate every point, print no timings");
  const bool band_timing = args.flag("--band-timing",
                                     "also record timed events at each phase boundary: after each band GEMM or the "
                                     "GEMM, after each put (on its copy stream), before and after the reduce, before "
                                     "and after the LSA gather; medians since the rank's start as mark_<name>_us, one "
                                     "value per rank (peerQ = the rank Q after it); these events perturb the times: "
                                     "use for the timeline, not as the measurement");
  args.finish(kUsage);

  const int visible = require_devices(2);
  if (ws == 0) ws = std::min(visible, kMaxRanks);
  if (ws < 2 || ws > visible || ws > kMaxRanks) {
    std::fprintf(stderr, "fusesim: --world-size must be 2..%d and <= visible GPUs (%d)\n", kMaxRanks, visible);
    return 2;
  }
  for (const auto& mode : modes) {
    if (mode != "gemm-only" && mode != "split" && mode != "overlapped" && mode != "lsa") {
      std::fprintf(stderr, "fusesim: unknown mode '%s'\n", mode.c_str());
      return 2;
    }
  }
  for (auto m : ms) {
    if (m % (static_cast<long long>(ws) * bands) != 0) {
      std::fprintf(stderr, "fusesim: M=%lld must be a multiple of world_size x bands = %d\n", m, ws * bands);
      return 2;
    }
  }
  for (auto n : ns) {
    if (n % 8 != 0 || k % 16 != 0) {
      std::fprintf(stderr, "fusesim: N must be a multiple of 8 and K of 16\n");
      return 2;
    }
  }
  if (bands % ws != 0) {
    std::fprintf(stderr, "fusesim: --bands (%d) must be a multiple of world_size (%d)\n", bands, ws);
    return 2;
  }
  if (!check_only && iters < 11) {
    std::fprintf(stderr, "fusesim: --iters must be >= 11\n");
    return 2;
  }
  enable_peer_access_all(ws);
  std::vector<int> devs;
  for (int r = 0; r < ws; ++r) devs.push_back(r);
  Reporter rep("gemm_ar_live", args.command(), commit, devs);
  if (lsa_blocks <= 0) lsa_blocks = 2 * sm_count(0);

  const long long max_m = *std::max_element(ms.begin(), ms.end());
  const long long max_n = *std::max_element(ns.begin(), ns.end());
  const size_t c_bytes = static_cast<size_t>(max_m * max_n * 2);
  const size_t recv_bytes = static_cast<size_t>((ws - 1) * (max_m / ws) * max_n * 2);

  // Per-rank resources.
  struct Rank {
    int dev;
    hipblasLtHandle_t blas = nullptr;
    std::unique_ptr<Stream> main;
    std::vector<std::unique_ptr<Stream>> copy;  // copy[p]: puts to rank p
    DeviceBuffer x, w, c, ref, out, recv, work;
    std::unique_ptr<Event> start, end;
    std::unique_ptr<SyncEvent> gemm_done, reduced, lsa_done;
    std::vector<std::unique_ptr<SyncEvent>> band_done, sent, gathered;  // [band], [peer], [peer]
    std::map<std::string, std::unique_ptr<Event>> marks;                // --band-timing: name -> event
  };
  std::vector<Rank> rk(ws);
  for (int r = 0; r < ws; ++r) {
    Rank& R = rk[r];
    R.dev = r;
    GPU_CHECK(hipSetDevice(r));
    BLAS_CHECK(hipblasLtCreate(&R.blas));
    R.main = std::make_unique<Stream>(r);
    for (int p = 0; p < ws; ++p) {
      R.copy.push_back(std::make_unique<Stream>(r));
      R.sent.push_back(std::make_unique<SyncEvent>(r));
      R.gathered.push_back(std::make_unique<SyncEvent>(r));
    }
    for (int b = 0; b < bands; ++b) R.band_done.push_back(std::make_unique<SyncEvent>(r));
    R.x = DeviceBuffer(r, static_cast<size_t>(max_m * k * 2));
    R.w = DeviceBuffer(r, static_cast<size_t>(max_n * k * 2));
    R.c = DeviceBuffer(r, c_bytes);
    R.ref = DeviceBuffer(r, c_bytes);
    R.out = DeviceBuffer(r, c_bytes);
    R.recv = DeviceBuffer(r, recv_bytes);
    R.work = DeviceBuffer(r, kGemmWorkspaceBytes);
    R.start = std::make_unique<Event>(r);
    R.end = std::make_unique<Event>(r);
    R.gemm_done = std::make_unique<SyncEvent>(r);
    R.reduced = std::make_unique<SyncEvent>(r);
    R.lsa_done = std::make_unique<SyncEvent>(r);
    fill_random_bf16(R.x.ptr, static_cast<size_t>(max_m * k), 1000 + r, 1.0f, R.main->s);
    fill_random_bf16(R.w.ptr, static_cast<size_t>(max_n * k), 2000 + r, 1.0f, R.main->s);
    GPU_CHECK(hipStreamSynchronize(R.main->s));
  }
  GPU_CHECK(hipSetDevice(0));
  DeviceBuffer acc(0, (1 + 2 * kMaxRanks) * sizeof(double));
  StartGate gate;

  auto sync_all = [&]() {
    for (int r = 0; r < ws; ++r) {
      GPU_CHECK(hipSetDevice(r));
      GPU_CHECK(hipDeviceSynchronize());
    }
  };

  for (long long n : ns) {
    for (long long m : ms) {
      const long long slice_rows = m / ws, band_rows = m / bands;
      const int bands_per_slice = bands / ws;
      const size_t slice_elems = static_cast<size_t>(slice_rows * n);
      const size_t slice_bytes = slice_elems * 2, band_bytes = static_cast<size_t>(band_rows * n * 2);
      std::vector<std::unique_ptr<GemmPlan>> full(ws), band(ws);
      for (int r = 0; r < ws; ++r) {
        GPU_CHECK(hipSetDevice(r));
        full[r] = std::make_unique<GemmPlan>(rk[r].blas, GemmDtype::bf16, m, n, k, kGemmWorkspaceBytes);
        band[r] = std::make_unique<GemmPlan>(rk[r].blas, GemmDtype::bf16, band_rows, n, k, kGemmWorkspaceBytes);
        for (auto* p : {full[r].get(), band[r].get()}) {
          if (!p->ok()) {
            std::fprintf(stderr, "fusesim: gemm_ar_live: %s\n", p->error().c_str());
            return 1;
          }
        }
        // Reference partials: one full GEMM into `ref`.
        full[r]->run(rk[r].x.ptr, rk[r].w.ptr, rk[r].ref.ptr, rk[r].work.ptr, rk[r].main->s);
      }
      sync_all();

      // Sampled float64 check of a partial (`buf` on rank r) against X_r and W_r on the host.
      auto sample_rel_l2 = [&](int r, const void* buf) {
        double num = 0, den = 0;
        std::vector<unsigned short> xr(k), wr(k);
        unsigned long long state = 0x9e3779b97f4a7c15ULL * (r + 1) + m * 31 + n;
        GPU_CHECK(hipSetDevice(r));
        for (int s = 0; s < 48; ++s) {
          state = state * 6364136223846793005ULL + 1442695040888963407ULL;
          long long i = static_cast<long long>((state >> 33) % static_cast<unsigned long long>(m));
          state = state * 6364136223846793005ULL + 1442695040888963407ULL;
          long long j = static_cast<long long>((state >> 33) % static_cast<unsigned long long>(n));
          unsigned short cv = 0;
          GPU_CHECK(hipMemcpy(xr.data(), rk[r].x.as<char>() + i * k * 2, k * 2, hipMemcpyDeviceToHost));
          GPU_CHECK(hipMemcpy(wr.data(), rk[r].w.as<char>() + j * k * 2, k * 2, hipMemcpyDeviceToHost));
          GPU_CHECK(hipMemcpy(&cv, static_cast<const char*>(buf) + (i * n + j) * 2, 2, hipMemcpyDeviceToHost));
          double d = 0;
          for (long long q = 0; q < k; ++q) d += bf16_host(xr[q]) * bf16_host(wr[q]);
          double c = bf16_host(cv);
          if (!std::isfinite(c)) return static_cast<double>(NAN);
          num += (c - d) * (c - d);
          den += d * d;
        }
        return std::sqrt(num / den);
      };
      double ref_sample = 0;
      for (int r = 0; r < ws; ++r) ref_sample = std::max(ref_sample, sample_rel_l2(r, rk[r].ref.ptr));

      // Full check of every rank's out against the sum of the reference partials (on GPU 0).
      auto check_out = [&]() {
        GPU_CHECK(hipSetDevice(0));
        CheckArgs a{};
        for (int r = 0; r < ws; ++r) {
          a.ref[r] = rk[r].ref.as<const unsigned short>();
          a.out[r] = rk[r].out.as<const unsigned short>();
        }
        a.ranks = ws;
        a.elems = static_cast<size_t>(m * n);
        a.acc = acc.as<double>();
        GPU_CHECK(hipMemset(acc.ptr, 0, acc.bytes));
        allreduce_check_kernel<<<4 * sm_count(0), 256>>>(a);
        GPU_CHECK_LAUNCH();
        GPU_CHECK(hipDeviceSynchronize());
        std::vector<double> h(1 + 2 * kMaxRanks);
        GPU_CHECK(hipMemcpy(h.data(), acc.ptr, h.size() * sizeof(double), hipMemcpyDeviceToHost));
        double rel = 0;
        bool finite = true;
        for (int r = 0; r < ws; ++r) {
          rel = std::max(rel, std::sqrt(h[1 + r] / h[0]));
          if (h[1 + kMaxRanks + r] != 0) finite = false;
        }
        return finite ? rel : static_cast<double>(NAN);
      };

      auto poison = [&]() {
        for (int r = 0; r < ws; ++r) {
          GPU_CHECK(hipSetDevice(r));
          GPU_CHECK(hipMemset(rk[r].c.ptr, 0xFF, c_bytes));
          GPU_CHECK(hipMemset(rk[r].out.ptr, 0xFF, c_bytes));
          GPU_CHECK(hipMemset(rk[r].recv.ptr, 0xFF, recv_bytes));
        }
        sync_all();
      };

      // Receive-buffer slot of source rank `src` at destination `dst`.
      auto slot = [&](int src, int dst) { return src < dst ? src : src - 1; };
      auto c_rows = [&](int r, long long row) { return rk[r].c.as<char>() + row * n * 2; };
      auto out_rows = [&](int r, long long row) { return rk[r].out.as<char>() + row * n * 2; };
      auto recv_at = [&](int dst, int src) { return rk[dst].recv.as<char>() + slot(src, dst) * slice_bytes; };

      // Enqueues one iteration of `mode` on every rank (gated or not).
      // Timed phase marks (--band-timing), recorded on `stream` of rank r (the current device).
      auto mark = [&](int r, const std::string& name, hipStream_t stream) {
        if (!band_timing) return;
        auto& ev = rk[r].marks[name];
        if (!ev) ev = std::make_unique<Event>(r);
        GPU_CHECK(hipEventRecord(ev->e, stream));
      };
      auto enqueue = [&](const std::string& mode, bool gated) {
        for (int r = 0; r < ws; ++r) {
          GPU_CHECK(hipSetDevice(r));
          if (gated) gate.arm(rk[r].main->s);
          GPU_CHECK(hipEventRecord(rk[r].start->e, rk[r].main->s));
        }
        if (mode == "gemm-only") {
          for (int r = 0; r < ws; ++r) {
            GPU_CHECK(hipSetDevice(r));
            full[r]->run(rk[r].x.ptr, rk[r].w.ptr, rk[r].c.ptr, rk[r].work.ptr, rk[r].main->s);
            mark(r, "gemm_end", rk[r].main->s);
          }
        } else if (mode == "split" || mode == "overlapped") {
          // Phase 1: GEMM and reduce-scatter puts.
          for (int r = 0; r < ws; ++r) {
            Rank& R = rk[r];
            GPU_CHECK(hipSetDevice(r));
            if (mode == "split") {
              full[r]->run(R.x.ptr, R.w.ptr, R.c.ptr, R.work.ptr, R.main->s);
              GPU_CHECK(hipEventRecord(R.gemm_done->e, R.main->s));
              mark(r, "gemm_end", R.main->s);
              for (int p = 0; p < ws; ++p) {
                if (p == r) continue;
                GPU_CHECK(hipStreamWaitEvent(R.copy[p]->s, R.gemm_done->e, 0));
                GPU_CHECK(hipMemcpyPeerAsync(recv_at(p, r), p, c_rows(r, p * slice_rows), r, slice_bytes, R.copy[p]->s));
                mark(r, "scatter_end_peer" + std::to_string((p - r + ws) % ws), R.copy[p]->s);
              }
            } else {
              int issued = 0;
              for (int q = 1; q <= ws; ++q) {
                const int dst = (r + q) % ws;  // peers first (r+1, r+2, ...), own slice last
                for (int bi = 0; bi < bands_per_slice; ++bi) {
                  const int b = dst * bands_per_slice + bi;
                  const long long row = b * band_rows;
                  band[r]->run(R.x.as<char>() + row * k * 2, R.w.ptr, c_rows(r, row), R.work.ptr, R.main->s);
                  mark(r, "band" + std::to_string(issued++) + "_end", R.main->s);
                  if (dst == r) continue;
                  GPU_CHECK(hipEventRecord(R.band_done[b]->e, R.main->s));
                  GPU_CHECK(hipStreamWaitEvent(R.copy[dst]->s, R.band_done[b]->e, 0));
                  GPU_CHECK(hipMemcpyPeerAsync(recv_at(dst, r) + bi * band_bytes, dst, c_rows(r, row), r, band_bytes,
                                               R.copy[dst]->s));
                  mark(r, "scatter_band" + std::to_string(issued - 1) + "_end", R.copy[dst]->s);
                }
              }
            }
            for (int p = 0; p < ws; ++p)
              if (p != r) GPU_CHECK(hipEventRecord(R.sent[p]->e, R.copy[p]->s));
          }
          // Phase 2: reduce own slice (own partial + received slices).
          for (int r = 0; r < ws; ++r) {
            Rank& R = rk[r];
            GPU_CHECK(hipSetDevice(r));
            std::vector<const void*> srcs = {c_rows(r, r * slice_rows)};
            for (int p = 0; p < ws; ++p) {
              if (p == r) continue;
              GPU_CHECK(hipStreamWaitEvent(R.main->s, rk[p].sent[r]->e, 0));
              srcs.push_back(recv_at(r, p));
            }
            mark(r, "reduce_start", R.main->s);
            launch_reduce_bf16(srcs.data(), ws, out_rows(r, r * slice_rows), slice_elems, reduce_blocks,
                               reduce_threads, R.main->s);
            GPU_CHECK(hipEventRecord(R.reduced->e, R.main->s));
            mark(r, "reduce_end", R.main->s);
          }
          // Phase 3: all-gather puts.
          for (int r = 0; r < ws; ++r) {
            Rank& R = rk[r];
            GPU_CHECK(hipSetDevice(r));
            for (int p = 0; p < ws; ++p) {
              if (p == r) continue;
              GPU_CHECK(hipStreamWaitEvent(R.copy[p]->s, R.reduced->e, 0));
              GPU_CHECK(hipMemcpyPeerAsync(out_rows(p, r * slice_rows), p, out_rows(r, r * slice_rows), r, slice_bytes,
                                           R.copy[p]->s));
              GPU_CHECK(hipEventRecord(R.gathered[p]->e, R.copy[p]->s));
              mark(r, "gather_end_peer" + std::to_string((p - r + ws) % ws), R.copy[p]->s);
            }
          }
          // Phase 4: a rank is done when its outgoing and incoming gathers are.
          for (int r = 0; r < ws; ++r) {
            GPU_CHECK(hipSetDevice(r));
            for (int p = 0; p < ws; ++p) {
              if (p == r) continue;
              GPU_CHECK(hipStreamWaitEvent(rk[r].main->s, rk[r].gathered[p]->e, 0));
              GPU_CHECK(hipStreamWaitEvent(rk[r].main->s, rk[p].gathered[r]->e, 0));
            }
          }
        } else {  // lsa
          for (int r = 0; r < ws; ++r) {
            GPU_CHECK(hipSetDevice(r));
            full[r]->run(rk[r].x.ptr, rk[r].w.ptr, rk[r].c.ptr, rk[r].work.ptr, rk[r].main->s);
            GPU_CHECK(hipEventRecord(rk[r].gemm_done->e, rk[r].main->s));
            mark(r, "gemm_end", rk[r].main->s);
          }
          for (int r = 0; r < ws; ++r) {
            GPU_CHECK(hipSetDevice(r));
            std::vector<const void*> srcs;
            for (int q = 0; q < ws; ++q) {
              if (q != r) GPU_CHECK(hipStreamWaitEvent(rk[r].main->s, rk[q].gemm_done->e, 0));
              srcs.push_back(c_rows(q, r * slice_rows));  // peer pointers for q != r
            }
            mark(r, "reduce_start", rk[r].main->s);
            launch_reduce_bf16(srcs.data(), ws, out_rows(r, r * slice_rows), slice_elems, reduce_blocks,
                               reduce_threads, rk[r].main->s);
            GPU_CHECK(hipEventRecord(rk[r].reduced->e, rk[r].main->s));
            mark(r, "reduce_end", rk[r].main->s);
          }
          for (int r = 0; r < ws; ++r) {
            GPU_CHECK(hipSetDevice(r));
            for (int p = 0; p < ws; ++p) {
              if (p == r) continue;
              GPU_CHECK(hipStreamWaitEvent(rk[r].main->s, rk[p].reduced->e, 0));
              mark(r, "gather_start_peer" + std::to_string((p - r + ws) % ws), rk[r].main->s);
              launch_strided_copy(out_rows(p, p * slice_rows), out_rows(r, p * slice_rows), slice_bytes, lsa_blocks,
                                  lsa_threads, 16, 4, rk[r].main->s);
            }
          }
        }
        for (int r = 0; r < ws; ++r) {
          GPU_CHECK(hipSetDevice(r));
          GPU_CHECK(hipEventRecord(rk[r].end->e, rk[r].main->s));
        }
        if (gated) gate.release();
      };

      auto validate = [&](const std::string& mode) {
        if (mode == "gemm-only") {
          double rel = 0;
          for (int r = 0; r < ws; ++r) rel = std::max(rel, sample_rel_l2(r, rk[r].c.ptr));
          return rel;
        }
        return check_out();
      };

      for (const auto& mode : modes) {
        for (int r = 0; r < ws; ++r) rk[r].marks.clear();  // marks of this mode only
        poison();
        enqueue(mode, false);
        sync_all();
        double rel_l2 = validate(mode);
        bool ok = std::isfinite(rel_l2) && rel_l2 < 1e-2 && std::isfinite(ref_sample) && ref_sample < 1e-2;
        std::vector<double> times, per_rank[kMaxRanks];
        std::vector<std::map<std::string, std::vector<double>>> mark_times(ws);  // rank -> name -> times
        if (check_only) {
          poison();
          enqueue(mode, true);
          sync_all();
          double rel2 = validate(mode);
          ok = ok && std::isfinite(rel2) && rel2 < 1e-2 && !gate.timed_out();
          rel_l2 = std::max(rel_l2, rel2);
        } else {
          for (int it = 0; it < warmup + iters; ++it) {
            const bool timed = it >= warmup;
            enqueue(mode, timed);
            sync_all();
            if (!timed) continue;
            double worst = 0;
            for (int r = 0; r < ws; ++r) {
              double t = elapsed_us(rk[r].start->e, rk[r].end->e);
              per_rank[r].push_back(t);
              worst = std::max(worst, t);
              if (band_timing)
                for (auto& [name, ev] : rk[r].marks) mark_times[r][name].push_back(elapsed_us(rk[r].start->e, ev->e));
            }
            times.push_back(worst);
          }
          double rel2 = validate(mode);  // the last timed iteration's result
          ok = ok && std::isfinite(rel2) && rel2 < 1e-2 && !gate.timed_out();
          rel_l2 = std::max(rel_l2, rel2);
        }
        Stats s = stats_of(times);
        std::vector<double> prt;
        for (int r = 0; r < ws; ++r) prt.push_back(stats_of(per_rank[r]).median);
        JsonLine j;
        j.str("mode", mode).integer("m", m).integer("n", n).integer("k", k).integer("world_size", ws)
            .integer("bands", mode == "overlapped" ? bands : 1).str("dtype", "bf16");
        if (check_only) {
          j.raw("time_us", "null").raw("per_rank_time_us", "null");
        } else {
          j.num("time_us", s.median).num_list("per_rank_time_us", prt).num("time_min_us", s.min)
              .num("time_max_us", s.max).integer("iters", s.n);
        }
        j.num("rel_l2", rel_l2).num("gemm_sample_rel_l2", ref_sample).boolean("validated", ok)
            .boolean("check_only", check_only).integer("reduce_blocks", reduce_blocks)
            .integer("reduce_threads", reduce_threads).integer("lsa_blocks", lsa_blocks)
            .integer("lsa_threads", lsa_threads).boolean("gate_timeout", gate.timed_out())
            .str("gemm_algo_fingerprint", full[0]->algo_fingerprint())
            .str("band_algo_fingerprint", band[0]->algo_fingerprint());
        if (band_timing && !check_only) {
          // Names recorded this mode (events of earlier modes stay in the map but were not recorded
          // in this mode's iterations: only names whose every rank has ws x iters samples count).
          std::map<std::string, std::vector<double>> per_name;
          for (int r = 0; r < ws; ++r)
            for (auto& [name, v] : mark_times[r])
              if (static_cast<int>(v.size()) == iters) per_name[name].push_back(stats_of(v).median);
          for (auto& [name, v] : per_name)
            if (static_cast<int>(v.size()) == ws) j.num_list("mark_" + name + "_us", v);
        }
        rep.emit(j);
      }
    }
  }
  for (int r = 0; r < ws; ++r) {
    GPU_CHECK(hipSetDevice(r));
    BLAS_CHECK(hipblasLtDestroy(rk[r].blas));
  }
  return 0;
}
