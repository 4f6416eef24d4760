// probe_cu_remote: remote loads and stores by compute units through peer pointers (NVLink / xGMI).
//
// "pull": a kernel on GPU d loads from GPU 1-d's memory and stores locally; "push": it loads locally
// and stores into GPU 1-d's memory; "lsa_reduce": the all-reduce's reduce kernel with one local and
// one remote bf16 source (one remote byte per output byte). With both=true, both GPUs do the same
// at once (each pulling from / pushing to the other). The copy kernel is a grid-stride loop of
// `blocks` x `threads`; each thread keeps `unroll` loads of `vec_bytes` in flight, so the bytes in
// flight are blocks x threads x vec_bytes x unroll.
// Sweeps: blocks (threads 512, 16 B x 4), threads (132 blocks), vec x unroll (at 132 and 32
// blocks), lsa_reduce vs blocks. Each point's size is chosen for about 1 ms per kernel (4 MiB to
// 512 MiB) from a first untimed run. Timing: start gate, events, median of --iters.
// Output per point: mode, both, blocks, threads, vec_bytes, unroll, bytes_in_flight_per_thread,
// bytes_in_flight, size_bytes (remote bytes per GPU), time_us (slowest GPU), GBps (remote bytes of
// all GPUs / time), per_gpu_GBps.
#include <algorithm>
#include <memory>

#include "probe_common.hpp"

using namespace fusesim::gpu;

namespace {
struct Point {
  std::string mode;
  bool both;
  int blocks, threads, vec, unroll;
  std::string sweep;
};
}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const Args::RunOptions opt = args.run_options(21, 2);
  const int iters = opt.iters, warmup = opt.warmup;
  const double target_us = static_cast<double>(args.integer("--target-us", 1000, "aimed kernel time"));
  const bool quick = args.flag("--quick", "a few points only (smoke test)");
  args.finish("probe_cu_remote: CU pull / push bandwidth through peer pointers (JSON lines on stdout)");

  require_devices(2);
  enable_peer_access_all(2);
  Reporter rep("cu_remote", args.command(), opt.commit, {0, 1});
  const size_t pool = 1ull << 30;
  DeviceBuffer a[2] = {DeviceBuffer(0, pool), DeviceBuffer(1, pool)};
  DeviceBuffer b[2] = {DeviceBuffer(0, pool), DeviceBuffer(1, pool)};
  std::unique_ptr<Stream> st[2];
  std::unique_ptr<Event> e0[2], e1[2];
  for (int d = 0; d < 2; ++d) {
    st[d] = std::make_unique<Stream>(d);
    e0[d] = std::make_unique<Event>(d);
    e1[d] = std::make_unique<Event>(d);
    fill_random_bf16(a[d].ptr, pool / 2, 20 + d, 1.0f, st[d]->s);
    GPU_CHECK(hipStreamSynchronize(st[d]->s));
  }
  StartGate gate;
  const int sms = sm_count(0);

  std::vector<Point> pts;
  const std::vector<int> block_sweep =
      quick ? std::vector<int>{8, sms} : std::vector<int>{1, 2, 4, 8, 16, 32, sms / 2, sms, 2 * sms, 4 * sms, 8 * sms};
  for (bool both : {false, true})
    for (const char* mode : {"pull", "push"})
      for (int bl : block_sweep) pts.push_back({mode, both, bl, 512, 16, 4, "blocks"});
  if (!quick) {
    for (const char* mode : {"pull", "push"})
      for (int th : {64, 128, 256, 512, 1024}) pts.push_back({mode, false, sms, th, 16, 4, "threads"});
    for (int bl : {sms, 32})
      for (const char* mode : {"pull", "push"})
        for (int v : {4, 8, 16})
          for (int u : {1, 2, 4, 8}) pts.push_back({mode, false, bl, 512, v, u, "in_flight"});
    for (bool both : {false, true})
      for (int bl : {16, sms / 2, sms, 2 * sms, 4 * sms}) pts.push_back({"lsa_reduce", both, bl, 512, 16, 1, "lsa_reduce"});
  }

  // Enqueue one op of `size` remote bytes on GPU d at pool offset `off`.
  auto enqueue = [&](const Point& p, int d, size_t size, size_t off) {
    const int peer = 1 - d;
    hipStream_t s = st[d]->s;
    if (p.mode == "pull") {
      launch_strided_copy(a[peer].as<char>() + off, b[d].as<char>() + off, size, p.blocks, p.threads, p.vec, p.unroll, s);
    } else if (p.mode == "push") {
      launch_strided_copy(a[d].as<char>() + off, b[peer].as<char>() + off, size, p.blocks, p.threads, p.vec, p.unroll, s);
    } else {
      const void* srcs[2] = {a[d].as<char>() + off, a[peer].as<char>() + off};
      launch_reduce_bf16(srcs, 2, b[d].as<char>() + off, size / 2, p.blocks, p.threads, s);
    }
  };

  for (const auto& p : pts) {
    // Size for about target_us per kernel, from one untimed run of 8 MiB.
    size_t size = 8u << 20;
    {
      GPU_CHECK(hipSetDevice(0));
      enqueue(p, 0, size, 0);  // first launch loads the kernel
      GPU_CHECK(hipEventRecord(e0[0]->e, st[0]->s));
      enqueue(p, 0, size, 0);
      GPU_CHECK(hipEventRecord(e1[0]->e, st[0]->s));
      GPU_CHECK(hipStreamSynchronize(st[0]->s));
      const double us = elapsed_us(e0[0]->e, e1[0]->e);
      const double want = static_cast<double>(size) / us * target_us;
      size = static_cast<size_t>(std::clamp(want, 4.0 * (1 << 20), 512.0 * (1 << 20)));
      size &= ~((size_t{1} << 20) - 1);
    }
    const size_t slots = pool / size;
    const int ngpu = p.both ? 2 : 1;
    std::vector<double> t_all, t_gpu[2];
    for (int it = 0; it < warmup + iters; ++it) {
      const bool timed = it >= warmup;
      const size_t off = (static_cast<size_t>(it) % slots) * size;
      for (int d = 0; d < ngpu; ++d) {
        GPU_CHECK(hipSetDevice(d));
        if (timed) gate.arm(st[d]->s);
        GPU_CHECK(hipEventRecord(e0[d]->e, st[d]->s));
        enqueue(p, d, size, off);
        GPU_CHECK(hipEventRecord(e1[d]->e, st[d]->s));
      }
      if (timed) gate.release();
      for (int d = 0; d < ngpu; ++d) {
        GPU_CHECK(hipSetDevice(d));
        GPU_CHECK(hipStreamSynchronize(st[d]->s));
      }
      if (!timed) continue;
      double worst = 0;
      for (int d = 0; d < ngpu; ++d) {
        double us = elapsed_us(e0[d]->e, e1[d]->e);
        t_gpu[d].push_back(us);
        worst = std::max(worst, us);
      }
      t_all.push_back(worst);
    }
    Stats s = stats_of(t_all);
    std::vector<double> per_gpu;
    for (int d = 0; d < ngpu; ++d) per_gpu.push_back(static_cast<double>(size) / (stats_of(t_gpu[d]).median * 1e-6) / 1e9);
    const long long per_thread = static_cast<long long>(p.vec) * p.unroll;
    JsonLine j;
    j.str("sweep", p.sweep)
        .str("mode", p.mode)
        .boolean("both", p.both)
        .integer("blocks", p.blocks)
        .integer("threads", p.threads)
        .integer("vec_bytes", p.vec)
        .integer("unroll", p.unroll)
        .integer("bytes_in_flight_per_thread", per_thread)
        .integer("bytes_in_flight", per_thread * p.blocks * p.threads)
        .integer("size_bytes", static_cast<long long>(size))
        .timing(s)
        .num("GBps", ngpu * static_cast<double>(size) / (s.median * 1e-6) / 1e9)
        .num_list("per_gpu_GBps", per_gpu)
        .boolean("gate_timeout", gate.timed_out());
    rep.emit(j);
  }
  return 0;
}
