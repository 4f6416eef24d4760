// Parse-rate benchmark of the streaming Kineto reader on a generated ~200 MB trace and on the real
// captures of tests/trace/fixtures/hta. Reports bytes_per_second (the parse rate: the reader runs
// on one thread, so this is per core) and peak RSS against the file size, both of the benchmark
// process (cumulative, the largest so far) and of a fresh child process doing one parse alone
// (peak_rss_fresh_MB, peak_rss_fresh_over_file: what a `fusesim trace` run of that file needs).
#include <sys/resource.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include <filesystem>
#include <fstream>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "calibrate/trace/analysis.hpp"
#include "calibrate/trace/kineto_reader.hpp"
#include "calibrate/trace/whatif.hpp"
#include "trace_gen.hpp"

#ifndef FUSESIM_TRACE_FIXTURES
#error "FUSESIM_TRACE_FIXTURES must name tests/trace/fixtures/hta"
#endif

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
    testgen::GenSpec spec{.ranks = 1, .layers = 61, .prefill_steps = 10, .decode_steps = 118, .python_events_per_kernel = 1};
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

/// The calling process's own peak RSS (MB) from /proc/self/status VmHWM: per address space, so a
/// freshly exec'd process does not inherit its parent's (getrusage's ru_maxrss of a child does).
double vm_hwm_mb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return -1;
}

/// Peak RSS (MB) of a fresh process: this binary re-executed with --parse-once FILE OUT parses FILE
/// once and writes its VmHWM to OUT (the binary's own pages included).
double fresh_peak_rss_mb(const std::string& path) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string flag = "--parse-once";
  std::string out = fmt::format("/tmp/fusesim_bench_hwm_{}.txt", ::getpid());
  char* argv[] = {self.data(), flag.data(), const_cast<char*>(path.c_str()), out.data(), nullptr};
  pid_t pid = 0;
  if (::posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ) != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  double mb = -1;
  std::ifstream(out) >> mb;
  std::filesystem::remove(out);
  return mb;
}

void report(benchmark::State& state, uint64_t json_bytes, uint64_t file_bytes, const TraceFile& t) {
  state.SetBytesProcessed(static_cast<int64_t>(json_bytes) * state.iterations());
  state.counters["file_MB"] = static_cast<double>(file_bytes) / 1e6;
  state.counters["json_MB"] = static_cast<double>(json_bytes) / 1e6;
  state.counters["events"] = static_cast<double>(t.events);
  state.counters["peak_rss_MB"] = peak_rss_mb();
  state.counters["peak_rss_over_file"] = peak_rss_mb() * 1048576.0 / static_cast<double>(file_bytes);
  state.counters["peak_rss_over_json"] = peak_rss_mb() * 1048576.0 / static_cast<double>(json_bytes);
  double fresh = fresh_peak_rss_mb(t.path);
  state.counters["peak_rss_fresh_MB"] = fresh;
  state.counters["peak_rss_fresh_over_file"] = fresh * 1048576.0 / static_cast<double>(file_bytes);
  state.counters["peak_rss_fresh_over_json"] = fresh * 1048576.0 / static_cast<double>(json_bytes);
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

/// The largest real capture of the fixtures (trace_diff control: 1.8 MB gzip, 35 MB of JSON).
std::string real_trace() { return std::string(FUSESIM_TRACE_FIXTURES) + "/trace_diff/control/control.json.gz"; }

void BM_ParseRealCaptureGzip(benchmark::State& state) {
  TraceFile t;
  for (auto _ : state) {
    t = TraceFile{};
    t = read_trace_file(real_trace());
    benchmark::DoNotOptimize(t.gpu_ops.data());
  }
  report(state, t.bytes, std::filesystem::file_size(real_trace()), t);
}

/// Replay of the real capture, every step and the whole trace (no change: twice each).
void BM_WhatIfRealCapture(benchmark::State& state) {
  auto table = CategoryTable::builtin();
  std::vector<TraceFile> files;
  files.push_back(read_trace_file(real_trace()));
  for (auto _ : state) {
    for (const char* w : {"steps", "all"}) {
      WhatIfOptions opt;
      opt.window = w;
      auto rep = whatif(files, table, AnalyzeOptions{}, opt, real_trace());
      benchmark::DoNotOptimize(rep.replay_us);
    }
  }
  state.counters["gpu_events"] = static_cast<double>(files[0].gpu_ops.size());
}

}  // namespace

BENCHMARK(BM_ParseRealCaptureGzip)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_WhatIfRealCapture)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_ParsePlain200MB)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_ParseGzip)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_ParseAndAnalyzePlain200MB)->Unit(benchmark::kMillisecond)->Iterations(1);

// `bench_trace --parse-once FILE OUT` parses FILE once, writes its peak RSS to OUT and exits
// (fresh_peak_rss_mb's child).
int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--parse-once") == 0) {
    auto t = read_trace_file(argv[2]);
    std::ofstream(argv[3]) << vm_hwm_mb() << "\n";
    return t.gpu_ops.empty() ? 1 : 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
