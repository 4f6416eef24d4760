// fusesim trace: streaming reader for PyTorch profiler (Kineto) Chrome-trace JSON.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fusesim::trace {

/**
 * A trace file that cannot be read: I/O failure, malformed or truncated JSON, a known event with a
 * missing or mistyped key, or a corrupt gzip stream. what() names the file and, where one applies,
 * the byte offset (in the decompressed stream for gzip files) near which the problem was found.
 */
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, int64_t byte_offset, const std::string& message);
  const std::string& file() const { return file_; }
  /// Byte offset of the problem, or -1 where none applies (e.g. the file cannot be opened).
  int64_t byte_offset() const { return byte_offset_; }

 private:
  std::string file_;
  int64_t byte_offset_;
};

/// Interned strings (kernel and operator names, dtypes). Id 0 is always the empty string.
class StringTable {
 public:
  StringTable();
  uint32_t intern(std::string_view s);
  const std::string& str(uint32_t id) const { return *by_id_.at(id); }
  size_t size() const { return by_id_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  std::vector<const std::string*> by_id_;
};

/// What a GPU-timeline event is (Kineto categories "kernel", "gpu_memcpy", "gpu_memset").
enum class GpuOpKind : uint8_t { kernel, memcpy, memset };
const char* to_string(GpuOpKind k);

/// One GPU-timeline event. Times in microseconds on the trace's clock.
struct GpuOp {
  double start_us = 0;
  double dur_us = 0;
  int64_t correlation = -1;  ///< CUPTI/roctracer correlation id of the launch, -1 if none
  uint32_t name = 0;         ///< StringTable id of the kernel / memcpy name
  uint32_t thread = 0;       ///< dense id of the event's (pid, tid) pair
  int32_t device = -1;       ///< args.device
  int32_t stream = -1;       ///< args.stream
  std::array<int32_t, 3> grid{0, 0, 0};   ///< args.grid (blocks), kernels only
  std::array<int32_t, 3> block{0, 0, 0};  ///< args.block (threads per block), kernels only
  GpuOpKind kind = GpuOpKind::kernel;
  double end_us() const { return start_us + dur_us; }
};

/// One operator input as recorded in "Input Dims" / "Input type".
struct TensorInput {
  uint32_t dims_begin = 0;  ///< index into TraceFile::dims
  int32_t rank = 0;         ///< number of dims; -1 when the input is not a plain tensor (a list)
  uint32_t dtype = 0;       ///< StringTable id of "Input type" entry ("" if absent)
};

/// One CPU operator (cat "cpu_op") or user annotation (cat "user_annotation"). Times in us.
struct CpuOp {
  double start_us = 0;
  double dur_us = 0;
  uint32_t name = 0;
  uint32_t thread = 0;
  uint32_t inputs_begin = 0;  ///< index into TraceFile::inputs
  uint32_t inputs_count = 0;
  bool annotation = false;       ///< cat "user_annotation"
  bool has_input_dims = false;   ///< args had "Input Dims"
  bool input_dims_empty = false; ///< "Input Dims" present but holds no number (e.g. [[], []])
  double end_us() const { return start_us + dur_us; }
};

/// A runtime API call that carries a correlation id (cudaLaunchKernel, hipExtModuleLaunchKernel,
/// cudaMemcpyAsync, ...; cat "cuda_runtime" / "cuda_driver").
struct RuntimeCall {
  double start_us = 0;
  double dur_us = 0;
  int64_t correlation = -1;
  uint32_t name = 0;
  uint32_t thread = 0;
};

/**
 * Everything kept from one trace file (one rank): compact per-event records only, no JSON tree.
 * Events appear in file order (not necessarily time order).
 */
struct TraceFile {
  std::string path;
  int rank = -1;        ///< distributedInfo.rank, -1 if absent
  int world_size = 0;   ///< distributedInfo.world_size, 0 if absent
  std::string device_name;  ///< deviceProperties[0].name, "" if absent
  bool gzip = false;
  uint64_t bytes = 0;   ///< JSON bytes parsed (decompressed)
  uint64_t events = 0;  ///< entries seen in traceEvents
  StringTable strings;
  std::vector<GpuOp> gpu_ops;
  std::vector<CpuOp> cpu_ops;
  std::vector<RuntimeCall> runtime_calls;
  std::vector<TensorInput> inputs;
  std::vector<int64_t> dims;
  /// Events not used by fusesim, counted by "ph/cat" (e.g. "X/python_function", "M/", "i/...").
  std::map<std::string, int64_t> skipped;

  const std::string& name_of(const GpuOp& op) const { return strings.str(op.name); }
  const std::string& name_of(const CpuOp& op) const { return strings.str(op.name); }
  /// Dims of one input (empty span for a non-tensor input).
  std::vector<int64_t> dims_of(const TensorInput& in) const;
};

/**
 * Read one Kineto trace file, plain JSON or gzip (detected from the content, not the name), with a
 * streaming SAX parse: memory grows with the number of kept events, not with the file size.
 *
 * Accepts the object form ({"traceEvents":[...], "distributedInfo":{...}, ...}) and the bare-array
 * form ([...events...]). Kept: ph "X" events of cat kernel / gpu_memcpy / gpu_memset / cpu_op /
 * user_annotation / cuda_runtime / cuda_driver; "ac2g" flow events are used to fill in missing
 * correlation ids and then dropped. Everything else is counted in TraceFile::skipped.
 *
 * Errors: TraceError naming the file and byte offset for unreadable, malformed, truncated or
 * corrupt-gzip input, for a kept event lacking "ts"/"dur" or with a key of the wrong type, and for
 * an event array holding something other than objects ([1, 2, 3]: not a trace); TraceError naming
 * the file for one without a "traceEvents" array or whose event array is empty.
 */
TraceFile read_trace_file(const std::string& path);

/**
 * Read a trace given as one file or as a directory of per-rank files (*.json, *.json.gz, read in
 * natural name order; files are parsed in parallel, one thread per core). Ranks:
 * distributedInfo.rank when every file has a distinct one, otherwise the position in name order.
 * The result is sorted by rank.
 *
 * Errors: TraceError from read_trace_file; TraceError (offset -1) for a missing path or a
 * directory without trace files.
 */
std::vector<TraceFile> read_trace(const std::string& path);

}  // namespace fusesim::trace
