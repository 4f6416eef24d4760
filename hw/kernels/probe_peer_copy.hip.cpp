// probe_peer_copy: copy-engine peer copies (hipMemcpyPeerAsync) between GPU 0 and GPU 1.
//
// For each size (powers of two from --min-bytes to --max-bytes) and configuration:
//   direction "one" (GPU 0 -> GPU 1) or "both" (0 -> 1 and 1 -> 0 at once);
//   issuer "src" (the copy is enqueued on a stream of the sending GPU: a put) or "dst" (on the
//   receiving GPU: a get);
//   streams: the size is cut into that many equal chunks, one per concurrent stream of the issuer;
//   streams after the first wait on an event recorded on the first after the gate (the usual
//   fan-out), so their cost of an event wait is part of the time.
// Each transfer is enqueued behind a start gate, so times are device-side (from the gate's release
// to the last chunk's completion on each issuing GPU) without host launch gaps. Median of --iters.
// Output: one JSON line per point: direction, issuer, streams, size_bytes (per direction), time_us
// (slowest direction), GBps (all bytes moved / time), per_direction_time_us, per_direction_GBps.
#include <algorithm>
#include <memory>

#include "probe_common.hpp"

using namespace fusesim::gpu;

namespace {
struct Config {
  std::string direction, issuer;
  int streams;
};
}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const Args::RunOptions opt = args.run_options(21, 3);
  const int iters = opt.iters, warmup = opt.warmup;
  const long long min_b = args.integer("--min-bytes", 4 << 10, "smallest size");
  const long long max_b = args.integer("--max-bytes", 1LL << 30, "largest size (<= 1 GiB)");
  const auto stream_counts = args.int_list("--streams", {1, 2, 4, 8}, "concurrent streams per issuer");
  args.finish("probe_peer_copy: copy-engine peer copy latency and bandwidth (JSON lines on stdout)");

  require_devices(2);
  enable_peer_access_all(2);
  Reporter rep("peer_copy", args.command(), opt.commit, {0, 1});
  const size_t buf = static_cast<size_t>(max_b);
  DeviceBuffer send[2] = {DeviceBuffer(0, buf), DeviceBuffer(1, buf)};
  DeviceBuffer recv[2] = {DeviceBuffer(0, buf), DeviceBuffer(1, buf)};
  int max_streams = 1;
  for (auto s : stream_counts) max_streams = std::max<int>(max_streams, static_cast<int>(s));
  std::vector<std::unique_ptr<Stream>> streams[2];
  std::vector<std::unique_ptr<Event>> ends[2];
  std::unique_ptr<Event> starts[2];
  for (int d = 0; d < 2; ++d) {
    GPU_CHECK(hipSetDevice(d));
    fill_random_bf16(send[d].ptr, buf / 2, 10 + d, 1.0f, nullptr);
    GPU_CHECK(hipDeviceSynchronize());
    starts[d] = std::make_unique<Event>(d);
    for (int i = 0; i < max_streams; ++i) {
      streams[d].push_back(std::make_unique<Stream>(d));
      ends[d].push_back(std::make_unique<Event>(d));
    }
  }
  StartGate gate;

  std::vector<Config> configs;
  for (auto n : stream_counts) configs.push_back({"one", "src", static_cast<int>(n)});
  configs.push_back({"one", "dst", 1});
  for (auto n : stream_counts) configs.push_back({"both", "src", static_cast<int>(n)});

  for (const auto& cfg : configs) {
    const int ndir = cfg.direction == "both" ? 2 : 1;
    for (long long size = min_b; size <= max_b; size *= 2) {
      const size_t chunk = static_cast<size_t>(size) / cfg.streams;
      std::vector<double> t_all, t_dir[2];
      for (int it = 0; it < warmup + iters; ++it) {
        const bool timed = it >= warmup;
        for (int dir = 0; dir < ndir; ++dir) {
          const int src = dir, dst = 1 - dir;  // dir 0: GPU0 -> GPU1, dir 1: GPU1 -> GPU0
          const int issuer = cfg.issuer == "src" ? src : dst;
          GPU_CHECK(hipSetDevice(issuer));
          hipStream_t s0 = streams[issuer][0]->s;
          if (timed) gate.arm(s0);
          GPU_CHECK(hipEventRecord(starts[issuer]->e, s0));
          for (int i = 0; i < cfg.streams; ++i) {
            hipStream_t si = streams[issuer][i]->s;
            if (i) GPU_CHECK(hipStreamWaitEvent(si, starts[issuer]->e, 0));
            GPU_CHECK(hipMemcpyPeerAsync(recv[dst].as<char>() + i * chunk, dst, send[src].as<char>() + i * chunk,
                                         src, chunk, si));
            GPU_CHECK(hipEventRecord(ends[issuer][i]->e, si));
          }
        }
        if (timed) gate.release();
        for (int d = 0; d < 2; ++d) {
          GPU_CHECK(hipSetDevice(d));
          GPU_CHECK(hipDeviceSynchronize());
        }
        if (!timed) continue;
        double worst = 0;
        for (int dir = 0; dir < ndir; ++dir) {
          const int issuer = cfg.issuer == "src" ? dir : 1 - dir;
          double span = 0;
          for (int i = 0; i < cfg.streams; ++i)
            span = std::max(span, elapsed_us(starts[issuer]->e, ends[issuer][i]->e));
          t_dir[dir].push_back(span);
          worst = std::max(worst, span);
        }
        t_all.push_back(worst);
      }
      Stats s = stats_of(t_all);
      std::vector<double> dir_t, dir_bw;
      for (int dir = 0; dir < ndir; ++dir) {
        Stats sd = stats_of(t_dir[dir]);
        dir_t.push_back(sd.median);
        dir_bw.push_back(static_cast<double>(size) / (sd.median * 1e-6) / 1e9);
      }
      JsonLine j;
      j.str("direction", cfg.direction)
          .str("issuer", cfg.issuer)
          .integer("streams", cfg.streams)
          .integer("size_bytes", size)
          .integer("chunk_bytes", static_cast<long long>(chunk))
          .timing(s)
          .num("GBps", ndir * static_cast<double>(size) / (s.median * 1e-6) / 1e9)
          .num_list("per_direction_time_us", dir_t)
          .num_list("per_direction_GBps", dir_bw)
          .boolean("gate_timeout", gate.timed_out());
      rep.emit(j);
    }
  }
  return 0;
}
