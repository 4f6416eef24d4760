// probe_gemm: vendor-BLAS GEMM time vs M, N, K (cuBLASLt / hipBLASLt), bf16 and fp8 e4m3 with
// per-tensor scales, on one GPU. C[M,N] (bf16) = X[M,K] · W[N,K]^T, see blaslt_gemm.hpp.
//
// Sweeps: M (--m list) x N (--n list) at K (--k), both dtypes; K sweep and N sweep at M=8192;
// "banded": the same product issued as `bands` row-band calls back to back on one stream (what
// gemm_ar_live's overlapped mode does), bf16, for M >= 2048. Inputs are random (never zeros); the
// same buffers are reused across iterations, as in gemm_ar_live. Each point: --warmup untimed runs,
// then --iters runs timed one by one with events behind a start gate. The whole list of points is
// measured --rounds times, each round starting one point later in the list (so no shape is always
// measured right after the same heavy one), with --pause-ms of idle GPU before each point: sustained
// GEMMs lower the SM clock (power), and a sweep measured in one fixed order gave the shapes measured
// late up to 15% slower than the same shapes measured first (calibrate/data/h200x2/README.md).
// The reported time is the median over all rounds' timed iterations; round_medians_us lists each round's.
// Output per point: sweep, dtype, m, n, k, bands, time_us, time_min_us, time_max_us, TFLOPs
// (2*M*N*K / median time), workspace_bytes; or an "error" field when the library has no algorithm.
#include <algorithm>
#include <chrono>
#include <thread>
#include <memory>

#include "blaslt_gemm.hpp"
#include "probe_common.hpp"

using namespace fusesim::gpu;

namespace {
struct Shape {
  std::string sweep;
  GemmDtype dtype;
  long long m, n, k;
  int bands;
};
}  // namespace

int main(int argc, char** argv) {
  Args args(argc, argv);
  const Args::RunOptions opt = args.run_options(15, 3);
  const int iters = opt.iters, warmup = opt.warmup;
  const int device = args.device();
  const auto ms = args.int_list("--m", {128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}, "M sweep");
  const auto ns = args.int_list("--n", {7168, 5120}, "N values of the M sweep");
  const long long k0 = args.integer("--k", 2048, "K of the M sweep");
  const auto dtype_names = args.str_list("--dtypes", {"bf16", "fp8"}, "input types");
  const auto band_list = args.int_list("--bands", {2, 4, 8}, "band counts of the banded sweep");
  const bool extra = !args.flag("--no-extra", "skip the K, N and banded sweeps");
  const int rounds = static_cast<int>(args.integer("--rounds", 3, "passes over all points (rotated order)"));
  const int pause_ms = static_cast<int>(args.integer("--pause-ms", 20, "idle GPU time before each point (ms)"));
  args.finish("probe_gemm: cuBLASLt/hipBLASLt GEMM time vs shape (JSON lines on stdout)");

  require_devices(device + 1);
  std::vector<GemmDtype> dtypes;
  for (const auto& n : dtype_names) {
    GemmDtype d;
    if (!parse_gemm_dtype(n, &d)) {
      std::fprintf(stderr, "fusesim: unknown dtype %s\n", n.c_str());
      return 2;
    }
    dtypes.push_back(d);
  }
  std::vector<Shape> shapes;
  for (auto d : dtypes)
    for (auto n : ns)
      for (auto m : ms) shapes.push_back({"m", d, m, n, k0, 1});
  if (extra) {
    for (auto d : dtypes) {
      for (long long k : {512, 1024, 4096, 8192}) shapes.push_back({"k", d, 8192, 7168, k, 1});
      for (long long n : {1024, 2048, 4096, 8192}) shapes.push_back({"n", d, 8192, n, 2048, 1});
    }
    for (auto n : ns)
      for (long long m : {2048, 4096, 8192, 16384, 32768})
        for (auto b : band_list)
          if (m % b == 0) shapes.push_back({"banded", GemmDtype::bf16, m, n, k0, static_cast<int>(b)});
  }
  size_t max_x = 0, max_w = 0, max_c = 0;
  for (const auto& s : shapes) {
    max_x = std::max<size_t>(max_x, s.m * s.k);
    max_w = std::max<size_t>(max_w, s.n * s.k);
    max_c = std::max<size_t>(max_c, s.m * s.n);
  }

  Reporter rep("gemm", args.command(), opt.commit, {device});
  GPU_CHECK(hipSetDevice(device));
  Stream st(device);
  Event e0(device), e1(device);
  StartGate gate;
  DeviceBuffer x16(device, max_x * 2), w16(device, max_w * 2), x8(device, max_x), w8(device, max_w);
  DeviceBuffer c(device, max_c * 2), ws(device, kGemmWorkspaceBytes), scales(device, 512);
  fill_random_bf16(x16.ptr, max_x, 31, 1.0f, st.s);
  fill_random_bf16(w16.ptr, max_w, 32, 1.0f, st.s);
  fill_random_fp8(x8.ptr, max_x, 33, st.s);
  fill_random_fp8(w8.ptr, max_w, 34, st.s);
  fill_f32(scales.as<float>(), 128, 0.5f, st.s);  // scale_x at byte 0, scale_w at byte 256
  GPU_CHECK(hipStreamSynchronize(st.s));
  hipblasLtHandle_t handle = nullptr;
  BLAS_CHECK(hipblasLtCreate(&handle));

  if (rounds < 1 || pause_ms < 0) {
    std::fprintf(stderr, "fusesim: --rounds must be >= 1 and --pause-ms >= 0\n");
    return 2;
  }
  struct Point {
    std::unique_ptr<GemmPlan> plan;
    std::string error;
    std::vector<double> all;
    std::vector<double> round_medians;
  };
  std::vector<Point> pts(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    const bool fp8 = s.dtype == GemmDtype::fp8_e4m3;
    pts[i].plan = std::make_unique<GemmPlan>(handle, s.dtype, s.m / s.bands, s.n, s.k, kGemmWorkspaceBytes,
                                             scales.as<float>(), scales.as<float>() + 64);
    if (!pts[i].plan->ok()) {
      pts[i].error = pts[i].plan->error();
      continue;
    }
    if (!pts[i].plan->select_working_algo(fp8 ? x8.as<char>() : x16.as<char>(), fp8 ? w8.as<char>() : w16.as<char>(),
                                          c.ptr, ws.ptr, st.s))
      pts[i].error = pts[i].plan->error();
  }
  for (int round = 0; round < rounds; ++round) {
    for (size_t j = 0; j < shapes.size(); ++j) {
      const size_t i = (j + static_cast<size_t>(round)) % shapes.size();
      const auto& s = shapes[i];
      Point& P = pts[i];
      if (!P.error.empty()) continue;
      const bool fp8 = s.dtype == GemmDtype::fp8_e4m3;
      const char* x = fp8 ? x8.as<char>() : x16.as<char>();
      const char* w = fp8 ? w8.as<char>() : w16.as<char>();
      const long long band_m = s.m / s.bands;
      const size_t in_bytes = gemm_dtype_bytes(s.dtype);
      auto enqueue = [&]() {
        for (int b = 0; b < s.bands; ++b)
          P.plan->run(x + b * band_m * s.k * in_bytes, w, c.as<char>() + b * band_m * s.n * 2, ws.ptr, st.s);
      };
      if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      std::vector<double> t;
      for (int it = 0; it < warmup + iters; ++it) {
        const bool timed = it >= warmup;
        if (timed) gate.arm(st.s);
        GPU_CHECK(hipEventRecord(e0.e, st.s));
        enqueue();
        GPU_CHECK(hipEventRecord(e1.e, st.s));
        if (timed) gate.release();
        GPU_CHECK(hipStreamSynchronize(st.s));
        if (timed) t.push_back(elapsed_us(e0.e, e1.e));
      }
      P.round_medians.push_back(stats_of(t).median);
      P.all.insert(P.all.end(), t.begin(), t.end());
    }
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    const Point& P = pts[i];
    JsonLine j;
    j.str("sweep", s.sweep).str("dtype", gemm_dtype_name(s.dtype)).integer("m", s.m).integer("n", s.n)
        .integer("k", s.k).integer("bands", s.bands);
    if (!P.error.empty()) {
      j.str("error", P.error);
      rep.emit(j);
      continue;
    }
    Stats st_ = stats_of(P.all);
    const double flops = 2.0 * s.m * s.n * s.k;
    j.timing(st_)
        .num_list("round_medians_us", P.round_medians).integer("rounds", rounds).integer("pause_ms", pause_ms)
        .num("TFLOPs", flops / (st_.median * 1e-6) / 1e12)
        .integer("workspace_bytes", static_cast<long long>(P.plan->workspace_needed_bytes()))
        .integer("algo_index", P.plan->algo_index()).integer("algo_count", P.plan->algo_count())
        .str("algo_fingerprint", P.plan->algo_fingerprint())
        .boolean("gate_timeout", gate.timed_out());
    rep.emit(j);
  }
  BLAS_CHECK(hipblasLtDestroy(handle));
  return 0;
}
