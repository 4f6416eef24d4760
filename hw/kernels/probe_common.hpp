// probe_common.hpp: what every fusesim GPU probe shares.
//
// - Args: `--name value` command-line flags with defaults, --help, and a check for unknown flags.
// - JsonLine / Reporter: one JSON object per measured point on stdout, each carrying the probe name,
//   the machine (GPU name, driver, clocks, SM count, ...), the command line, the git commit and the
//   date (UTC, ISO 8601).
// - StartGate: a host-released start line so that work on several streams and GPUs is enqueued
//   first and starts together (device-side timing without host launch gaps).
// - Kernels shared by the probes and calibrate/live/gemm_ar_live: random fills, a strided copy with
//   a chosen vector width / unroll (local, pull or push depending on the pointers), a bf16 reduce.
//
// Units are in the names: _bytes, _us, _ms, _GBps (1e9 bytes per second), _mhz.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu_runtime.hpp"

#ifndef FUSESIM_GIT_COMMIT
#define FUSESIM_GIT_COMMIT "unknown"
#endif

namespace fusesim::gpu {

/// The base of the resources (DeviceBuffer, Stream, Event, SyncEvent) and of StartGate: each owns
/// one runtime object, so none is copyable (DeviceBuffer is movable).
struct NoCopy {
  NoCopy() = default;
  NoCopy(const NoCopy&) = delete;
  NoCopy& operator=(const NoCopy&) = delete;
};

// ---------------------------------------------------------------------------------------------
// Command line

/// Flags of the form `--name value` (or `--name` alone for booleans). Each getter records the flag
/// and its default for --help; finish() prints the help and exits 0 on --help, and exits 2 naming
/// any flag that no getter asked for.
class Args {
 public:
  Args(int argc, char** argv);
  /// The string value of `--name`, or `def` when absent.
  std::string str(const std::string& name, const std::string& def, const std::string& help = "");
  /// The integer value of `--name`, or `def`; exits 2 if the value is not an integer.
  long long integer(const std::string& name, long long def, const std::string& help = "");
  /// A comma-separated integer list (`--m 2048,4096`), or `def`.
  std::vector<long long> int_list(const std::string& name, const std::vector<long long>& def,
                                  const std::string& help = "");
  /// A comma-separated string list, or `def`.
  std::vector<std::string> str_list(const std::string& name, const std::vector<std::string>& def,
                                    const std::string& help = "");
  /// True when the boolean flag `--name` is present.
  bool flag(const std::string& name, const std::string& help = "");
  /// --commit: the git commit each JSON line records (default: the compile-time FUSESIM_GIT_COMMIT).
  std::string commit() { return str("--commit", FUSESIM_GIT_COMMIT, "git commit to record"); }
  /// --device: the GPU a one-GPU probe measures (default 0).
  int device() { return static_cast<int>(integer("--device", 0, "GPU to measure")); }
  /// The options every timing probe reads (--commit, --iters, --warmup), with this probe's defaults.
  struct RunOptions {
    std::string commit;  ///< commit()
    int iters = 0;       ///< --iters: timed iterations; the probe reports their median
    int warmup = 0;      ///< --warmup: untimed iterations before them
  };
  /// Reads --commit, --iters (default `iters`) and --warmup (default `warmup`); exits 2 on a value
  /// that is not an integer (integer()).
  RunOptions run_options(int iters, int warmup) {
    RunOptions o;
    o.commit = commit();
    o.iters = static_cast<int>(integer("--iters", iters, "timed iterations (median)"));
    o.warmup = static_cast<int>(integer("--warmup", warmup, "untimed iterations first"));
    return o;
  }
  /// Handles --help (prints `usage` and the flags seen, exits 0) and unknown flags (exits 2).
  void finish(const std::string& usage);
  /// The command line as typed, argv joined by single spaces.
  const std::string& command() const { return command_; }

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> used_;
  std::vector<std::string> help_lines_;
  std::string command_;
};

// ---------------------------------------------------------------------------------------------
// JSON output

struct Stats;

/// Builds one flat JSON object. Non-finite numbers are written as null.
class JsonLine {
 public:
  JsonLine& str(const std::string& key, const std::string& value);
  JsonLine& num(const std::string& key, double value);
  JsonLine& integer(const std::string& key, long long value);
  JsonLine& boolean(const std::string& key, bool value);
  /// Inserts `json` verbatim (it must already be valid JSON: an object, array, number, ...).
  JsonLine& raw(const std::string& key, const std::string& json);
  JsonLine& num_list(const std::string& key, const std::vector<double>& values);
  /// A timed sample's fields, in this order: iters (count), time_us (median), time_min_us, time_max_us.
  JsonLine& timing(const Stats& s);
  /// The object text, `{...}`.
  std::string text() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};

/// Escapes a string for a JSON string literal (without the surrounding quotes).
std::string json_escape(const std::string& s);
/// The current time in UTC, ISO 8601 with seconds: "2026-11-29T19:52:00Z".
std::string utc_now_iso8601();

/// Describes the machine as a JSON object: platform, GPU name, count, driver (NVML's string where
/// NVML loads, else the runtime's integer), runtime version, compute capability, SM count, peak SM
/// and memory clocks (MHz), L2 and HBM bytes, active NVLink count of the first device, hostname.
std::string machine_json(const std::vector<int>& devices);
/// Current SM clock of `device` in MHz from NVML; -1 where NVML is unavailable (HIP, no driver).
int sm_clock_now_mhz(int device);

/// Prints one JSON line per measured point to stdout, adding the common fields: probe, machine,
/// command, commit (from --commit, else the compile-time FUSESIM_GIT_COMMIT) and date.
class Reporter {
 public:
  /// Reads the machine description once for `devices`; `commit` is the git commit to record.
  Reporter(const std::string& probe, const std::string& command, const std::string& commit,
           const std::vector<int>& devices);
  /// Adds the common fields plus the current SM clock of each device and prints the line (flushed).
  void emit(JsonLine& line);

 private:
  std::string probe_, command_, commit_, machine_;
  std::vector<int> devices_;
};

// ---------------------------------------------------------------------------------------------
// Statistics and timing

/// Summary of a sample: median, minimum, maximum and count. Empty samples give NaN.
struct Stats {
  double median = 0, min = 0, max = 0;
  int n = 0;
};
Stats stats_of(std::vector<double> values);

/// Milliseconds between two recorded events of one device (hipEventElapsedTime), as microseconds.
double elapsed_us(hipEvent_t start, hipEvent_t end);

/// A host-released start line. arm(stream) enqueues on `stream` a one-thread kernel that spins on
/// a host-mapped word until release() is called (or a timeout of about 2 s of GPU cycles, which
/// timed_out() reports). Enqueue all the work after arm() on every stream, then release(): the
/// device executes without host launch gaps and all streams start within a microsecond or two.
/// Warm every kernel up (un-gated) before gating it: with lazy module loading, the first launch of
/// a kernel while another kernel spins can wait for that kernel to finish.
class StartGate : NoCopy {
 public:
  StartGate();
  ~StartGate();
  /// Enqueues the wait on `stream`; the current device must be the stream's device.
  void arm(hipStream_t stream);
  /// Releases every wait armed since the last release.
  void release();
  /// True if any wait gave up after its timeout since the gate was created (timings invalid).
  bool timed_out() const;

 private:
  volatile int* flag_ = nullptr;
  volatile int* timeout_flag_ = nullptr;
  int generation_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Resources (RAII; each frees on the device it was made on)


/// Device memory of `bytes` on `device` (hipMalloc). Exits on failure.
struct DeviceBuffer : NoCopy {
  DeviceBuffer() = default;
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  template <typename T = void>
  T* as() const { return static_cast<T*>(ptr); }
  void* ptr = nullptr;
  size_t bytes = 0;
  int device = -1;
};

/// A non-blocking stream on `device`.
struct Stream : NoCopy {
  explicit Stream(int device);
  ~Stream();
  hipStream_t s = nullptr;
  int device = -1;
};

/// An event on `device`: a timing event by default, or one created with `flags`
/// (hipEventCreateWithFlags).
struct Event : NoCopy {
  explicit Event(int device, unsigned flags = hipEventDefault);
  ~Event();
  hipEvent_t e = nullptr;
  int device = -1;
};

/// An event for ordering only (created with hipEventDisableTiming, as programs use for joins
/// between streams), on `device`.
struct SyncEvent : Event {
  explicit SyncEvent(int device) : Event(device, hipEventDisableTiming) {}
};

/// Number of visible GPUs; exits 1 with a clear message if fewer than `min_devices`.
int require_devices(int min_devices);
/// Enables peer access between every ordered pair of devices in [0, n). Exits 1 if a pair cannot
/// access each other (hipDeviceCanAccessPeer false).
void enable_peer_access_all(int n);
/// Multiprocessor (SM / CU) count of `device`.
int sm_count(int device);

// ---------------------------------------------------------------------------------------------
// Shared kernels (launchers enqueue on `stream`; the current device must be the stream's device)

/// Fills `n` bf16 values with uniform pseudo-random numbers in [-scale, scale) from `seed`.
void fill_random_bf16(void* dst, size_t n, uint64_t seed, float scale, hipStream_t stream);
/// Fills `n` fp8 e4m3 bytes with random finite values of magnitude about 2^-3..2^1 (never NaN in
/// either the OCP or the FNUZ encoding).
void fill_random_fp8(void* dst, size_t n, uint64_t seed, hipStream_t stream);
/// Fills `n` floats with `value`.
void fill_f32(float* dst, size_t n, float value, hipStream_t stream);

/// Copies `bytes` from `src` to `dst` with a grid-stride kernel of `blocks` x `threads`; each thread
/// keeps `unroll` loads of `vec_bytes` (4, 8 or 16) in flight before storing them. Pointers may be
/// local or peer (pull: src remote; push: dst remote). `bytes` must be a multiple of vec_bytes and
/// both pointers vec_bytes-aligned; unroll is 1, 2, 4 or 8. Exits 2 on an unsupported combination.
void launch_strided_copy(const void* src, void* dst, size_t bytes, int blocks, int threads,
                         int vec_bytes, int unroll, hipStream_t stream);

/// dst[i] = bf16(sum_s float(src[s][i])) for i < elems (8-element / 16-byte packs, fp32 sums).
/// Sources may be local or peer pointers (LSA). 1 <= nsrc <= 8; elems a multiple of 8; all
/// pointers 16-byte aligned. blocks <= 0 picks 2 x SM count of the current device.
void launch_reduce_bf16(const void* const* srcs, int nsrc, void* dst, size_t elems, int blocks,
                        int threads, hipStream_t stream);

/// An empty kernel of `blocks` x `threads` (launch-overhead probes).
void launch_empty_kernel(int blocks, int threads, hipStream_t stream);

}  // namespace fusesim::gpu
