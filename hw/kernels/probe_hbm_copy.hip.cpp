// probe_hbm_copy: device-memory (HBM) copy bandwidth vs size on one GPU.
//
// Methods: "memcpy" (hipMemcpyAsync device-to-device), "kernel" (grid-stride copy, 16-byte vectors,
// 4 in flight per thread, 2 x SMs blocks of 512), "reduce2_bf16" (the all-reduce's reduce kernel:
// two bf16 sources summed in fp32 into one bf16 destination). Each op is timed alone with events
// after a start gate (no host launch gaps), median of --iters; offsets rotate through 2 GiB pools
// so that sizes under the L2 do not hit data the previous iteration left in it.
// Output: one JSON line per (method, size): size_bytes (per source), bytes_moved (reads + writes),
// time_us (median), time_min_us, time_max_us, GBps (bytes_moved / median time).
#include <cmath>

#include "probe_common.hpp"

using namespace fusesim::gpu;

int main(int argc, char** argv) {
  Args args(argc, argv);
  const Args::RunOptions opt = args.run_options(15, 3);
  const int iters = opt.iters, warmup = opt.warmup;
  const int device = args.device();
  const long long min_b = args.integer("--min-bytes", 64 << 10, "smallest size");
  const long long max_b = args.integer("--max-bytes", 1LL << 30, "largest size (<= 1 GiB)");
  const auto methods = args.str_list("--methods", {"memcpy", "kernel", "reduce2_bf16"}, "methods");
  args.finish("probe_hbm_copy: HBM copy bandwidth vs size (JSON lines on stdout)");

  require_devices(device + 1);
  Reporter rep("hbm_copy", args.command(), opt.commit, {device});
  const size_t pool = 2ull << 30;
  DeviceBuffer src(device, pool), src2(device, pool), dst(device, pool);
  Stream st(device);
  Event e0(device), e1(device);
  StartGate gate;
  fill_random_bf16(src.ptr, pool / 2, 1, 1.0f, st.s);
  fill_random_bf16(src2.ptr, pool / 2, 2, 1.0f, st.s);
  GPU_CHECK(hipStreamSynchronize(st.s));
  const int blocks = 2 * sm_count(device);

  for (const auto& method : methods) {
    if (method != "memcpy" && method != "kernel" && method != "reduce2_bf16") {
      std::fprintf(stderr, "fusesim: unknown method %s\n", method.c_str());
      return 2;
    }
    for (long long size = min_b; size <= max_b; size *= 2) {
      const size_t slots = pool / static_cast<size_t>(size);
      std::vector<double> t;
      for (int it = 0; it < warmup + iters; ++it) {
        const size_t off = (static_cast<size_t>(it) % slots) * static_cast<size_t>(size);
        char* s = src.as<char>() + off;
        char* s2 = src2.as<char>() + off;
        char* d = dst.as<char>() + off;
        const bool timed = it >= warmup;
        if (timed) gate.arm(st.s);
        GPU_CHECK(hipEventRecord(e0.e, st.s));
        if (method == "memcpy") {
          GPU_CHECK(hipMemcpyAsync(d, s, size, hipMemcpyDeviceToDevice, st.s));
        } else if (method == "kernel") {
          launch_strided_copy(s, d, size, blocks, 512, 16, 4, st.s);
        } else {
          const void* srcs[2] = {s, s2};
          launch_reduce_bf16(srcs, 2, d, size / 2, blocks, 512, st.s);
        }
        GPU_CHECK(hipEventRecord(e1.e, st.s));
        if (timed) gate.release();
        GPU_CHECK(hipStreamSynchronize(st.s));
        if (timed) t.push_back(elapsed_us(e0.e, e1.e));
      }
      Stats s = stats_of(t);
      const double moved = (method == "reduce2_bf16" ? 3.0 : 2.0) * static_cast<double>(size);
      JsonLine j;
      j.str("method", method)
          .integer("device", device)
          .integer("size_bytes", size)
          .num("bytes_moved", moved)
          .integer("blocks", method == "memcpy" ? 0 : blocks)
          .integer("threads", method == "memcpy" ? 0 : 512)
          .timing(s)
          .num("GBps", moved / (s.median * 1e-6) / 1e9)
          .boolean("gate_timeout", gate.timed_out());
      rep.emit(j);
    }
  }
  return 0;
}
