// Parse-rate benchmark of the streaming Kineto reader on a generated ~200 MB trace.
// Reports bytes_per_second (the parse rate) and the process's peak RSS against the file size.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include <filesystem>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "calibrate/trace/analysis.hpp"
#include "calibrate/trace/kineto_reader.hpp"
#include "trace_gen.hpp"

namespace {

using namespace fusesim::trace;

struct GeneratedTrace {
  std::string plain, gzip;
  uint64_t plain_bytes = 0, gzip_bytes = 0;
};

// The temporary files' paths as plain C strings, so a signal handler can remove them (unlink is
// async-signal-safe) when the benchmark is interrupted (Ctrl-C, timeout's SIGTERM).
char g_tmp_paths[2][256] = {{0}, {0}};
extern "C" void remove_tmp_and_exit(int sig) {
  for (auto& p : g_tmp_paths)
    if (p[0]) ::unlink(p);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// One 200 MB single-rank trace (61 layers x 150 steps, one python_function event per kernel),
/// written once to /tmp, plus a gzip copy of a 40 MB one.
const GeneratedTrace& trace_files() {
  static GeneratedTrace t = [] {
    GeneratedTrace g;
    testgen::GenSpec spec;
    spec.ranks = 1;
    spec.layers = 61;
    spec.prefill_steps = 10;
    spec.decode_steps = 118;
    spec.python_events_per_kernel = 1;
    g.plain = fmt::format("/tmp/fusesim_bench_trace_{}.json", ::getpid());
    g.gzip = fmt::format("/tmp/fusesim_bench_trace_{}.json.gz", ::getpid());
    std::strncpy(g_tmp_paths[0], g.plain.c_str(), sizeof g_tmp_paths[0] - 1);
    std::strncpy(g_tmp_paths[1], g.gzip.c_str(), sizeof g_tmp_paths[1] - 1);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, remove_tmp_and_exit);
    g.plain_bytes = testgen::write_trace_file(spec, 0, g.plain).bytes;
    spec.gzip = true;
    spec.decode_steps = 16;
    testgen::write_trace_file(spec, 0, g.gzip);
    g.gzip_bytes = std::filesystem::file_size(g.gzip);
    std::atexit([] {
      std::filesystem::remove(trace_files().plain);
      std::filesystem::remove(trace_files().gzip);
    });
    return g;
  }();
  return t;
}

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void report(benchmark::State& state, uint64_t json_bytes, uint64_t file_bytes, const TraceFile& t) {
  state.SetBytesProcessed(static_cast<int64_t>(json_bytes) * state.iterations());
  state.counters["file_MB"] = static_cast<double>(file_bytes) / 1e6;
  state.counters["json_MB"] = static_cast<double>(json_bytes) / 1e6;
  state.counters["events"] = static_cast<double>(t.events);
  state.counters["peak_rss_MB"] = peak_rss_mb();
  state.counters["peak_rss_over_file"] = peak_rss_mb() * 1048576.0 / static_cast<double>(file_bytes);
  state.counters["peak_rss_over_json"] = peak_rss_mb() * 1048576.0 / static_cast<double>(json_bytes);
}

void BM_ParsePlain200MB(benchmark::State& state) {
  const auto& f = trace_files();
  TraceFile t;
  for (auto _ : state) {
    t = TraceFile{};  // peak RSS then measures one parse, not the previous result plus one
    t = read_trace_file(f.plain);
    benchmark::DoNotOptimize(t.gpu_ops.data());
  }
  report(state, t.bytes, f.plain_bytes, t);
}

void BM_ParseGzip(benchmark::State& state) {
  const auto& f = trace_files();
  TraceFile t;
  for (auto _ : state) {
    t = TraceFile{};
    t = read_trace_file(f.gzip);
    benchmark::DoNotOptimize(t.gpu_ops.data());
  }
  report(state, t.bytes, f.gzip_bytes, t);
}

void BM_ParseAndAnalyzePlain200MB(benchmark::State& state) {
  const auto& f = trace_files();
  auto table = CategoryTable::builtin();
  TraceFile last;
  for (auto _ : state) {
    last = TraceFile{};
    std::vector<TraceFile> files;
    files.push_back(read_trace_file(f.plain));
    auto rep = analyze(files, table, AnalyzeOptions{}, "all", f.plain);
    benchmark::DoNotOptimize(rep.ranks.data());
    last = std::move(files[0]);
  }
  report(state, last.bytes, f.plain_bytes, last);
}

}  // namespace

BENCHMARK(BM_ParsePlain200MB)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_ParseGzip)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_ParseAndAnalyzePlain200MB)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_MAIN();
