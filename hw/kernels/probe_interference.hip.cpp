// probe_interference: how a GEMM and a concurrent transfer slow each other on an H200 pair.
//
// For each GEMM shape (bf16, --m list x --n list (M <= 4096 only for the second N), --k; C = X·W^T
// through cuBLASLt/hipBLASLt):
//  measure "gemm_time": GPU 0's GEMM time alone, then while a background transfer runs for about
//    3x the GEMM's time, started together behind a start gate:
//      ce_out   copy-engine puts GPU0 -> GPU1 (64 MiB copies issued on GPU 0)
//      ce_in    copy-engine puts GPU1 -> GPU0 (issued on GPU 1, landing in GPU 0's HBM)
//      ce_both  both of the above
//      pull_B   a pull kernel on GPU 0 (B blocks x 512 threads, 16 B x 4 in flight per thread)
//               loading from GPU 1 and storing locally
//      gemm_both_ce_both  GEMMs on both GPUs and ce_both (the overlapped all-reduce's situation);
//               time_us is the slower GPU's GEMM
//  measure "transfer_bw": a 256 MiB transfer's time and bandwidth alone and while back-to-back
//    GEMMs run for about 3x its time (ce_out, ce_in and pull_B under GEMMs on GPU 0; ce_both under
//    GEMMs on both GPUs).
// Median of --iters gated iterations after --warmup untimed ones, each measurement after --pause-ms idle.
// Output per point: measure, m, n, k, background (or foreground), time_us, alone_time_us,
// slowdown (time / alone), and for transfers bytes, GBps, alone_GBps.
#include <algorithm>
#include <chrono>
#include <thread>
#include <cmath>
#include <functional>
#include <memory>

#include "blaslt_gemm.hpp"
#include "probe_common.hpp"

using namespace fusesim::gpu;

namespace {
struct Job {
  int dev;
  hipStream_t stream;
  std::function<void()> enqueue;
};
}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const Args::RunOptions opt = args.run_options(15, 2);
  const int iters = opt.iters, warmup = opt.warmup;
  const auto ms = args.int_list("--m", {512, 2048, 4096, 16384}, "GEMM M values");
  const int pause_ms = static_cast<int>(args.integer("--pause-ms", 20, "idle GPU time before each measurement (ms)"));
  const auto ns = args.int_list("--n", {7168, 5120}, "GEMM N values");
  const long long max_n = *std::max_element(ns.begin(), ns.end());
  const long long k = args.integer("--k", 2048, "GEMM K");
  const auto pull_blocks = args.int_list("--pull-blocks", {16, 66, 132}, "pull kernel block counts");
  args.finish("probe_interference: GEMM vs concurrent transfer interference (JSON lines on stdout)");

  require_devices(2);
  enable_peer_access_all(2);
  Reporter rep("interference", args.command(), opt.commit, {0, 1});
  const long long max_m = *std::max_element(ms.begin(), ms.end());
  const size_t pool = 1ull << 30, chunk = 64ull << 20, xfer = 256ull << 20;

  hipblasLtHandle_t handle[2];
  std::unique_ptr<Stream> gs[2], xs[2];
  std::unique_ptr<Event> ev_start[2][2], ev_end[2][2];  // [dev][0 = gemm stream, 1 = transfer stream]
  std::vector<DeviceBuffer> x, w, c, ws, send, recv, pulled;
  for (int d = 0; d < 2; ++d) {
    GPU_CHECK(hipSetDevice(d));
    BLAS_CHECK(hipblasLtCreate(&handle[d]));
    gs[d] = std::make_unique<Stream>(d);
    xs[d] = std::make_unique<Stream>(d);
    for (int s = 0; s < 2; ++s) {
      ev_start[d][s] = std::make_unique<Event>(d);
      ev_end[d][s] = std::make_unique<Event>(d);
    }
    x.emplace_back(d, static_cast<size_t>(max_m * k * 2));
    w.emplace_back(d, static_cast<size_t>(max_n * k * 2));
    c.emplace_back(d, static_cast<size_t>(max_m * max_n * 2));
    ws.emplace_back(d, kGemmWorkspaceBytes);
    send.emplace_back(d, pool);
    recv.emplace_back(d, pool);
    pulled.emplace_back(d, pool);
    fill_random_bf16(x[d].ptr, max_m * k, 40 + d, 1.0f, gs[d]->s);
    fill_random_bf16(w[d].ptr, max_n * k, 42 + d, 1.0f, gs[d]->s);
    fill_random_bf16(send[d].ptr, pool / 2, 44 + d, 1.0f, gs[d]->s);
    GPU_CHECK(hipStreamSynchronize(gs[d]->s));
  }
  StartGate gate;

  // Runs the jobs (one per stream) --warmup times untimed, --iters times gated; returns the median
  // time of each job (us) and the median over iterations of the slowest job.
  auto run = [&](const std::vector<Job>& jobs, std::vector<double>* per_job) {
    std::vector<std::vector<double>> t(jobs.size());
    // Idle first, so that each measurement starts from the same clock state (sustained GEMMs lower
    // the SM clock under the power limit).
    if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    for (int it = 0; it < warmup + iters; ++it) {
      const bool timed = it >= warmup;
      for (size_t j = 0; j < jobs.size(); ++j) {
        const Job& jb = jobs[j];
        const int slot = jb.stream == gs[jb.dev]->s ? 0 : 1;
        GPU_CHECK(hipSetDevice(jb.dev));
        if (timed) gate.arm(jb.stream);
        GPU_CHECK(hipEventRecord(ev_start[jb.dev][slot]->e, jb.stream));
        jb.enqueue();
        GPU_CHECK(hipEventRecord(ev_end[jb.dev][slot]->e, jb.stream));
      }
      if (timed) gate.release();
      for (int d = 0; d < 2; ++d) {
        GPU_CHECK(hipSetDevice(d));
        GPU_CHECK(hipDeviceSynchronize());
      }
      if (!timed) continue;
      for (size_t j = 0; j < jobs.size(); ++j) {
        const Job& jb = jobs[j];
        const int slot = jb.stream == gs[jb.dev]->s ? 0 : 1;
        t[j].push_back(elapsed_us(ev_start[jb.dev][slot]->e, ev_end[jb.dev][slot]->e));
      }
    }
    per_job->clear();
    for (auto& v : t) per_job->push_back(stats_of(v).median);
  };

  // Work builders.
  auto ce = [&](int src, size_t bytes, int reps) {
    const int dst = 1 - src;
    return Job{src, xs[src]->s, [&, src, dst, bytes, reps]() {
                 for (int r = 0; r < reps; ++r) {
                   size_t off = (static_cast<size_t>(r) % (pool / bytes)) * bytes;
                   GPU_CHECK(hipMemcpyPeerAsync(recv[dst].as<char>() + off, dst, send[src].as<char>() + off, src,
                                                bytes, xs[src]->s));
                 }
               }};
  };
  auto pull = [&](int d, int blocks, size_t bytes) {
    return Job{d, xs[d]->s, [&, d, blocks, bytes]() {
                 launch_strided_copy(send[1 - d].ptr, pulled[d].ptr, bytes, blocks, 512, 16, 4, xs[d]->s);
               }};
  };

  for (long long n : ns)
  for (long long m : ms) {
    if (n != ns.front() && m > 4096) continue;  // the second N: band-sized GEMMs only
    std::unique_ptr<GemmPlan> plan[2];
    for (int d = 0; d < 2; ++d) {
      GPU_CHECK(hipSetDevice(d));
      plan[d] = std::make_unique<GemmPlan>(handle[d], GemmDtype::bf16, m, n, k, kGemmWorkspaceBytes);
      if (!plan[d]->ok()) {
        std::fprintf(stderr, "fusesim: probe_interference: %s\n", plan[d]->error().c_str());
        return 1;
      }
    }
    auto gemm = [&](int d, int reps) {
      return Job{d, gs[d]->s, [&, d, reps]() {
                   for (int r = 0; r < reps; ++r) plan[d]->run(x[d].ptr, w[d].ptr, c[d].ptr, ws[d].ptr, gs[d]->s);
                 }};
    };
    std::vector<double> r;
    run({gemm(0, 1)}, &r);
    const double t_gemm = r[0];
    run({ce(0, chunk, 1)}, &r);
    const double t_chunk = r[0];
    const int ce_reps = static_cast<int>(std::ceil(3.0 * t_gemm / t_chunk)) + 1;
    auto emit_gemm = [&](const std::string& bg, double t, const std::vector<double>& extra) {
      JsonLine j;
      j.str("measure", "gemm_time").str("dtype", "bf16").integer("m", m).integer("n", n).integer("k", k)
          .str("background", bg).num("time_us", t).num("alone_time_us", t_gemm).num("slowdown", t / t_gemm)
          .num_list("job_times_us", extra).integer("iters", iters).boolean("gate_timeout", gate.timed_out());
      rep.emit(j);
    };
    emit_gemm("none", t_gemm, {t_gemm});
    run({gemm(0, 1), ce(0, chunk, ce_reps)}, &r);
    emit_gemm("ce_out", r[0], r);
    run({gemm(0, 1), ce(1, chunk, ce_reps)}, &r);
    emit_gemm("ce_in", r[0], r);
    run({gemm(0, 1), ce(0, chunk, ce_reps), ce(1, chunk, ce_reps)}, &r);
    emit_gemm("ce_both", r[0], r);
    run({gemm(0, 1), gemm(1, 1), ce(0, chunk, ce_reps), ce(1, chunk, ce_reps)}, &r);
    emit_gemm("gemm_both_ce_both", std::max(r[0], r[1]), r);
    std::vector<double> pull_alone_us;
    for (auto b : pull_blocks) {
      run({pull(0, static_cast<int>(b), chunk)}, &r);
      pull_alone_us.push_back(r[0]);
      const double bw = static_cast<double>(chunk) / r[0];  // bytes per us
      size_t bytes = static_cast<size_t>(std::min(static_cast<double>(pool), bw * 3.0 * t_gemm + chunk));
      bytes &= ~((size_t{1} << 20) - 1);
      run({gemm(0, 1), pull(0, static_cast<int>(b), bytes)}, &r);
      emit_gemm("pull_" + std::to_string(b), r[0], r);
    }

    // Transfers under GEMMs.
    auto emit_xfer = [&](const std::string& fg, double t, double t_alone, double bytes, const std::vector<double>& jobs) {
      JsonLine j;
      j.str("measure", "transfer_bw").str("dtype", "bf16").integer("m", m).integer("n", n).integer("k", k)
          .str("foreground", fg).num("bytes", bytes).num("time_us", t).num("alone_time_us", t_alone)
          .num("slowdown", t / t_alone).num("GBps", bytes / (t * 1e-6) / 1e9)
          .num("alone_GBps", bytes / (t_alone * 1e-6) / 1e9).num("gemm_time_alone_us", t_gemm)
          .num_list("job_times_us", jobs).integer("iters", iters).boolean("gate_timeout", gate.timed_out());
      rep.emit(j);
    };
    run({ce(0, xfer, 1)}, &r);
    const double t_x_alone = r[0];
    const int gemm_reps = static_cast<int>(std::ceil(3.0 * t_x_alone / t_gemm)) + 1;
    run({ce(0, xfer, 1), gemm(0, gemm_reps)}, &r);
    emit_xfer("ce_out", r[0], t_x_alone, static_cast<double>(xfer), r);
    run({ce(1, xfer, 1)}, &r);
    const double t_in_alone = r[0];
    run({ce(1, xfer, 1), gemm(0, gemm_reps)}, &r);
    emit_xfer("ce_in", r[0], t_in_alone, static_cast<double>(xfer), r);
    run({ce(0, xfer, 1), ce(1, xfer, 1)}, &r);
    const double t_both_alone = std::max(r[0], r[1]);
    run({ce(0, xfer, 1), ce(1, xfer, 1), gemm(0, gemm_reps), gemm(1, gemm_reps)}, &r);
    emit_xfer("ce_both_gemm_both", std::max(r[0], r[1]), t_both_alone, 2.0 * static_cast<double>(xfer), r);
    for (size_t i = 0; i < pull_blocks.size(); ++i) {
      const int b = static_cast<int>(pull_blocks[i]);
      run({pull(0, b, xfer)}, &r);
      const double t_alone = r[0];
      const int reps = static_cast<int>(std::ceil(3.0 * t_alone / t_gemm)) + 1;
      run({pull(0, b, xfer), gemm(0, reps)}, &r);
      emit_xfer("pull_" + std::to_string(b), r[0], t_alone, static_cast<double>(xfer), r);
    }
  }
  for (int d = 0; d < 2; ++d) {
    GPU_CHECK(hipSetDevice(d));
    BLAS_CHECK(hipblasLtDestroy(handle[d]));
  }
  return 0;
}
