// probe_launch: kernel launch latency and the graph-replay floor on one GPU, plus the cost of an
// event wait between streams (same GPU and across GPUs, when two are visible).
//
// Quantities (each the median of --iters samples; one JSON line each, field "quantity"):
//   launch_sync_wall_us       host wall time of one empty-kernel launch + stream synchronize
//   launch_enqueue_host_us    host time per launch call, enqueuing --batch launches back to back
//   kernel_event_span_us      device time between events around one empty kernel (gated)
//   kernel_back_to_back_us    device time per empty kernel, --batch of them enqueued behind a gate
//   graph_sync_wall_us        host wall time of one replay of a 1-kernel graph + synchronize
//   graph_replay_event_span_us  device time between events around one replay of a 1-kernel graph
//   graph_back_to_back_us     device time per replay, --batch replays behind a gate
//   graph_kernel_in_graph_us  device time per kernel inside one replay of a --batch-kernel graph
//   event_wait_same_gpu_us    extra device time when a second kernel on another stream of the
//                             same GPU waits on an event after the first (vs the same stream)
//   event_wait_cross_gpu_us   the same when the second stream is on GPU 1 (round trip back to 0,
//                             halved: one cross-GPU wait)
//   copy_hop_us               a kernel's end to a dependent kernel's start on the other GPU through
//                             an event-gated copy-engine put on a second stream (the pattern of
//                             gemm_ar_live's scatter -> reduce), per put size (--hop-sizes): round
//                             trip GPU0 -> GPU1 -> GPU0 minus 3 kernels on one stream, halved; with
//                             put_leg_us (kernel end to put end on GPU0)
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "probe_common.hpp"

using namespace fusesim::gpu;

namespace {
double wall_us_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const std::string commit = args.commit();
  const int iters = static_cast<int>(args.integer("--iters", 51, "samples per quantity (median)"));
  const int batch = static_cast<int>(args.integer("--batch", 200, "launches per back-to-back sample"));
  const auto hop_sizes = args.int_list("--hop-sizes", {4096, 1048576, 16777216}, "put sizes of the copy hop (bytes)");
  args.finish("probe_launch: launch latency and graph-replay floor (JSON lines on stdout)");

  int ndev = require_devices(1);
  std::vector<int> used = ndev >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0};
  if (ndev >= 2) enable_peer_access_all(2);
  Reporter rep("launch", args.command(), commit, used);
  GPU_CHECK(hipSetDevice(0));
  Stream st(0), st2(0);
  Event e0(0), e1(0);
  StartGate gate;

  auto emit = [&](const std::string& q, const std::vector<double>& v, const std::string& note) {
    Stats s = stats_of(v);
    JsonLine j;
    j.str("quantity", q).timing(s).integer("batch", batch).str("note", note)
        .boolean("gate_timeout", gate.timed_out());
    rep.emit(j);
  };

  // `iters` samples of the device time between two events around what `enqueue` enqueues on st,
  // behind the gate (so it runs without host launch gaps), divided by `per` (us per launch).
  auto gated_span = [&](const std::function<void()>& enqueue, int per) {
    std::vector<double> out;
    for (int i = 0; i < iters; ++i) {
      gate.arm(st.s);
      GPU_CHECK(hipEventRecord(e0.e, st.s));
      enqueue();
      GPU_CHECK(hipEventRecord(e1.e, st.s));
      gate.release();
      GPU_CHECK(hipStreamSynchronize(st.s));
      out.push_back(elapsed_us(e0.e, e1.e) / per);
    }
    return out;
  };

  // Warm-up: load the kernels and the gate.
  for (int i = 0; i < 10; ++i) launch_empty_kernel(1, 32, st.s);
  gate.arm(st.s);
  gate.release();
  GPU_CHECK(hipStreamSynchronize(st.s));

  std::vector<double> v;
  for (int i = 0; i < iters + 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    launch_empty_kernel(1, 32, st.s);
    GPU_CHECK(hipStreamSynchronize(st.s));
    if (i >= 3) v.push_back(wall_us_since(t0));
  }
  emit("launch_sync_wall_us", v, "1x32 empty kernel, launch + hipStreamSynchronize, host clock");

  v.clear();
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    for (int b = 0; b < batch; ++b) launch_empty_kernel(1, 32, st.s);
    v.push_back(wall_us_since(t0) / batch);
    GPU_CHECK(hipStreamSynchronize(st.s));
  }
  emit("launch_enqueue_host_us", v, "host time per launch call, batch enqueued back to back");

  emit("kernel_event_span_us", gated_span([&] { launch_empty_kernel(1, 32, st.s); }, 1),
       "events around one empty kernel, gated");

  emit("kernel_back_to_back_us", gated_span([&] { for (int b = 0; b < batch; ++b) launch_empty_kernel(1, 32, st.s); }, batch),
       "device time per empty kernel, batch enqueued behind a gate");

  // Graphs: one empty kernel, and `batch` empty kernels.
  hipGraph_t g1 = nullptr, gn = nullptr;
  hipGraphExec_t x1 = nullptr, xn = nullptr;
  GPU_CHECK(hipStreamBeginCapture(st.s, hipStreamCaptureModeThreadLocal));
  launch_empty_kernel(1, 32, st.s);
  GPU_CHECK(hipStreamEndCapture(st.s, &g1));
  GPU_CHECK(hipGraphInstantiateWithFlags(&x1, g1, 0));
  GPU_CHECK(hipStreamBeginCapture(st.s, hipStreamCaptureModeThreadLocal));
  for (int b = 0; b < batch; ++b) launch_empty_kernel(1, 32, st.s);
  GPU_CHECK(hipStreamEndCapture(st.s, &gn));
  GPU_CHECK(hipGraphInstantiateWithFlags(&xn, gn, 0));
  for (int i = 0; i < 5; ++i) {
    GPU_CHECK(hipGraphLaunch(x1, st.s));
    GPU_CHECK(hipGraphLaunch(xn, st.s));
  }
  GPU_CHECK(hipStreamSynchronize(st.s));

  v.clear();
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    GPU_CHECK(hipGraphLaunch(x1, st.s));
    GPU_CHECK(hipStreamSynchronize(st.s));
    v.push_back(wall_us_since(t0));
  }
  emit("graph_sync_wall_us", v, "one replay of a 1-kernel graph + synchronize, host clock");

  emit("graph_replay_event_span_us", gated_span([&] { GPU_CHECK(hipGraphLaunch(x1, st.s)); }, 1),
       "events around one replay of a 1-kernel graph, gated");

  emit("graph_back_to_back_us", gated_span([&] { for (int b = 0; b < batch; ++b) GPU_CHECK(hipGraphLaunch(x1, st.s)); }, batch),
       "device time per replay of a 1-kernel graph, batch behind a gate");

  emit("graph_kernel_in_graph_us", gated_span([&] { GPU_CHECK(hipGraphLaunch(xn, st.s)); }, batch),
       "device time per kernel inside one replay of a batch-kernel graph");

  // Event waits: k on st, then k on st2 after waiting on st's event, vs both on st. The joining
  // events are timing events (Event) or ordering-only ones (SyncEvent, what gemm_ar_live uses);
  // both are measured, the "_sync" quantities with ordering-only joins.
  Event mid_t(0);
  SyncEvent mid_s(0);
  hipEvent_t mid_e = mid_t.e;
  auto chain = [&](hipStream_t second, int second_dev, hipEvent_t back_e) {
    std::vector<double> out;
    for (int i = 0; i < iters + 3; ++i) {
      GPU_CHECK(hipSetDevice(0));
      gate.arm(st.s);
      GPU_CHECK(hipEventRecord(e0.e, st.s));
      launch_empty_kernel(1, 32, st.s);
      if (second) {
        GPU_CHECK(hipEventRecord(mid_e, st.s));
        GPU_CHECK(hipSetDevice(second_dev));
        GPU_CHECK(hipStreamWaitEvent(second, mid_e, 0));
        launch_empty_kernel(1, 32, second);
        if (back_e) {
          GPU_CHECK(hipEventRecord(back_e, second));
          GPU_CHECK(hipSetDevice(0));
          GPU_CHECK(hipStreamWaitEvent(st.s, back_e, 0));
          launch_empty_kernel(1, 32, st.s);
        } else {
          GPU_CHECK(hipEventRecord(e1.e, second));
        }
      } else {
        launch_empty_kernel(1, 32, st.s);
      }
      GPU_CHECK(hipSetDevice(0));
      if (!second || back_e) GPU_CHECK(hipEventRecord(e1.e, st.s));
      gate.release();
      GPU_CHECK(hipDeviceSynchronize());
      if (second_dev != 0) {
        GPU_CHECK(hipSetDevice(second_dev));
        GPU_CHECK(hipDeviceSynchronize());
        GPU_CHECK(hipSetDevice(0));
      }
      if (i >= 3) out.push_back(elapsed_us(e0.e, e1.e));
    }
    return stats_of(out).median;
  };
  // Same-stream chains of 2 and 3 kernels are the baselines.
  const double base2 = chain(nullptr, 0, nullptr);
  for (int kind = 0; kind < 2; ++kind) {
    mid_e = kind == 0 ? mid_t.e : mid_s.e;
    const double same = chain(st2.s, 0, nullptr);
    JsonLine j;
    j.str("quantity", kind == 0 ? "event_wait_same_gpu_us" : "event_wait_same_gpu_sync_us")
        .num("time_us", same - base2).num("chain_us", same).num("baseline_us", base2).integer("iters", iters)
        .str("note", kind == 0 ? "2 kernels across 2 streams of GPU 0 joined by a timing event, minus 2 on one stream"
                               : "2 kernels across 2 streams of GPU 0 joined by an ordering-only event "
                                 "(hipEventDisableTiming), minus 2 on one stream");
    rep.emit(j);
  }
  if (ndev >= 2) {
    Stream remote(1);
    Event back_t(1);
    SyncEvent back_s(1);
    for (int i = 0; i < 5; ++i) {  // load the kernel on GPU 1
      GPU_CHECK(hipSetDevice(1));
      launch_empty_kernel(1, 32, remote.s);
      GPU_CHECK(hipStreamSynchronize(remote.s));
    }
    GPU_CHECK(hipSetDevice(0));
    // Baseline: 3 kernels on one stream of GPU 0.
    std::vector<double> b3;
    for (int i = 0; i < iters + 3; ++i) {
      gate.arm(st.s);
      GPU_CHECK(hipEventRecord(e0.e, st.s));
      for (int k = 0; k < 3; ++k) launch_empty_kernel(1, 32, st.s);
      GPU_CHECK(hipEventRecord(e1.e, st.s));
      gate.release();
      GPU_CHECK(hipStreamSynchronize(st.s));
      if (i >= 3) b3.push_back(elapsed_us(e0.e, e1.e));
    }
    const double base3 = stats_of(b3).median;
    for (int kind = 0; kind < 2; ++kind) {
      mid_e = kind == 0 ? mid_t.e : mid_s.e;
      const double cross = chain(remote.s, 1, kind == 0 ? back_t.e : back_s.e);
      JsonLine j;
      j.str("quantity", kind == 0 ? "event_wait_cross_gpu_us" : "event_wait_cross_gpu_sync_us")
          .num("time_us", 0.5 * (cross - base3)).num("chain_us", cross).num("baseline_us", base3)
          .integer("iters", iters)
          .str("note", kind == 0 ? "GPU0 kernel -> GPU1 kernel -> GPU0 kernel joined by timing events, minus 3 on one "
                                   "stream, halved"
                                 : "the same joined by ordering-only events (hipEventDisableTiming)");
      rep.emit(j);
    }

    // The copy hop: kernel (GPU0 st) -> event -> put of S bytes on GPU0's copy stream -> event ->
    // kernel (GPU1) -> event -> put back on GPU1's copy stream -> event -> kernel (GPU0 st), for each
    // S in --hop-sizes. put_leg_us: GPU0's start to the end of its put (same device), minus one
    // kernel (base3 - base2): the same-GPU event wait + the put.
    Stream copy0(0), copy1(1);
    Event ev_a_t(0), ev_b(0), ev_c_t(1), ev_d_t(1);  // ev_b stays a timing event (the put leg is timed)
    SyncEvent ev_a_s(0), ev_b_s(0), ev_c_s(1), ev_d_s(1);
    const long long max_hop = *std::max_element(hop_sizes.begin(), hop_sizes.end());
    DeviceBuffer buf0(0, static_cast<size_t>(max_hop)), buf1(1, static_cast<size_t>(max_hop));
    for (int kind = 0; kind < 2; ++kind)
    for (long long hop_bytes : hop_sizes) {
      const size_t hb = static_cast<size_t>(hop_bytes);
      hipEvent_t ev_a = kind == 0 ? ev_a_t.e : ev_a_s.e, ev_c = kind == 0 ? ev_c_t.e : ev_c_s.e,
                 ev_d = kind == 0 ? ev_d_t.e : ev_d_s.e;
      std::vector<double> hops, legs;
      for (int i = 0; i < iters + 3; ++i) {
        GPU_CHECK(hipSetDevice(0));
        gate.arm(st.s);
        GPU_CHECK(hipEventRecord(e0.e, st.s));
        launch_empty_kernel(1, 32, st.s);
        GPU_CHECK(hipEventRecord(ev_a, st.s));
        GPU_CHECK(hipStreamWaitEvent(copy0.s, ev_a, 0));
        GPU_CHECK(hipMemcpyPeerAsync(buf1.ptr, 1, buf0.ptr, 0, hb, copy0.s));
        hipEvent_t join = ev_b.e;
        if (kind == 1) {  // the join is ordering-only; the timed end of the put is recorded after it
          GPU_CHECK(hipEventRecord(ev_b_s.e, copy0.s));
          join = ev_b_s.e;
        }
        GPU_CHECK(hipEventRecord(ev_b.e, copy0.s));
        GPU_CHECK(hipSetDevice(1));
        GPU_CHECK(hipStreamWaitEvent(remote.s, join, 0));
        launch_empty_kernel(1, 32, remote.s);
        GPU_CHECK(hipEventRecord(ev_c, remote.s));
        GPU_CHECK(hipStreamWaitEvent(copy1.s, ev_c, 0));
        GPU_CHECK(hipMemcpyPeerAsync(buf0.ptr, 0, buf1.ptr, 1, hb, copy1.s));
        GPU_CHECK(hipEventRecord(ev_d, copy1.s));
        GPU_CHECK(hipSetDevice(0));
        GPU_CHECK(hipStreamWaitEvent(st.s, ev_d, 0));
        launch_empty_kernel(1, 32, st.s);
        GPU_CHECK(hipEventRecord(e1.e, st.s));
        gate.release();
        GPU_CHECK(hipDeviceSynchronize());
        GPU_CHECK(hipSetDevice(1));
        GPU_CHECK(hipDeviceSynchronize());
        GPU_CHECK(hipSetDevice(0));
        if (i >= 3) {
          hops.push_back(elapsed_us(e0.e, e1.e));
          legs.push_back(elapsed_us(e0.e, ev_b.e));
        }
      }
      const double hop_chain = stats_of(hops).median, one_kernel = base3 - base2;
      JsonLine jh;
      jh.str("quantity", kind == 0 ? "copy_hop_us" : "copy_hop_sync_us").num("time_us", 0.5 * (hop_chain - base3)).num("chain_us", hop_chain)
          .num("baseline_us", base3).num("put_leg_us", stats_of(legs).median - one_kernel)
          .num("one_kernel_us", one_kernel).integer("iters", iters).integer("copy_bytes", hop_bytes)
          .str("note", std::string(kind == 0 ? "timing events: " : "ordering-only events (but the timed put end): ") +
                           "kernel -> event -> peer put of copy_bytes on a copy stream -> event -> kernel on the peer, "
                           "round trip GPU0 -> GPU1 -> GPU0 minus 3 kernels on one stream, halved; put_leg_us: "
                           "GPU0's kernel end to its put's end");
      rep.emit(jh);
    }
  }
  GPU_CHECK(hipGraphExecDestroy(x1));
  GPU_CHECK(hipGraphExecDestroy(xn));
  GPU_CHECK(hipGraphDestroy(g1));
  GPU_CHECK(hipGraphDestroy(gn));
  return 0;
}
