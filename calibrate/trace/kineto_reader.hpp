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
 * missing or mistyped key, a number out of range, nesting or a token beyond the reader's limits, or
 * a corrupt gzip stream. what() names the file and, where one applies, the byte offset (in the
 * decompressed stream for gzip files) and the line near which the problem was found:
 * "FILE: byte N (line L): message".
 */
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, int64_t byte_offset, const std::string& message, int64_t line = -1);
  const std::string& file() const { return file_; }
  /// Byte offset of the problem, or -1 where none applies (e.g. the file cannot be opened).
  int64_t byte_offset() const { return byte_offset_; }
  /// 1-based line of the problem, or -1 where none applies.
  int64_t line() const { return line_; }

 private:
  std::string file_;
  int64_t byte_offset_;
  int64_t line_;
};

/// Limits of the reader on untrusted input (each exceeded one is a TraceError naming it).
struct ReaderLimits {
  /// Deepest JSON nesting (objects and arrays). Kineto writes at most ~8 levels (an event's
  /// args."Input Dims" of a tensor list); deeper input is refused before it costs memory.
  static constexpr int kMaxDepth = 100;
  /// Longest single JSON token (a string or a number), bytes. Kernel names reach ~10 KB and
  /// annotations tens of KB; a longer token is refused while it is read, not after.
  static constexpr int64_t kMaxTokenBytes = int64_t{16} << 20;
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

/// Nanoseconds to microseconds (correctly rounded: exact for |ns| < 2^53, i.e. 104 days).
inline double ns_to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

/// What a GPU-timeline event is (Kineto categories "kernel", "gpu_memcpy", "gpu_memset").
enum class GpuOpKind : uint8_t { kernel, memcpy, memset };
const char* to_string(GpuOpKind k);

/**
 * One GPU-timeline event. Times are integer nanoseconds relative to TraceFile::origin_ns, kept
 * exactly as the trace wrote them (a microsecond value with up to three decimals is exact; further
 * digits are rounded to the nearest nanosecond, half away from zero).
 */
struct GpuOp {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = -1;  ///< CUPTI/roctracer correlation id of the launch, -1 if none
  int64_t stream = -1;       ///< args.stream (tid when absent)
  uint32_t name = 0;         ///< StringTable id of the kernel / memcpy name
  uint32_t thread = 0;       ///< dense id of the event's (pid, tid) pair
  int32_t device = -1;       ///< args.device
  int32_t collective = -1;   ///< index into TraceFile::collectives (NCCL/RCCL kernel fields), -1 if none
  std::array<int32_t, 3> grid{0, 0, 0};   ///< args.grid (blocks), kernels only
  std::array<int32_t, 3> block{0, 0, 0};  ///< args.block (threads per block), kernels only
  GpuOpKind kind = GpuOpKind::kernel;
  bool has_stream = false;   ///< args.stream was present (HTA keeps events with args.stream != -1)
  int64_t end_ns() const { return start_ns + dur_ns; }
  double start_us() const { return ns_to_us(start_ns); }
  double dur_us() const { return ns_to_us(dur_ns); }
  double end_us() const { return ns_to_us(start_ns + dur_ns); }
};

/**
 * The collective fields Kineto writes on an NCCL/RCCL kernel (PyTorch >= 2.1, record_param_comms):
 * "Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "Process Group Name",
 * "Process Group Description", "Process Group Ranks" and, where present, a sequence number "Seq".
 * String fields are StringTable ids (0 when absent), numbers -1 when absent.
 */
struct CollectiveArgs {
  uint32_t name = 0;        ///< e.g. "allreduce", "broadcast", "send", "recv"
  uint32_t pg_name = 0;     ///< process group name, e.g. "0"
  uint32_t pg_desc = 0;     ///< e.g. "default_pg"
  uint32_t pg_ranks = 0;    ///< the group's global ranks as written, e.g. "[0, 1]"
  uint32_t dtype = 0;
  int64_t in_nelems = -1, out_nelems = -1;
  int64_t group_size = -1;
  int64_t seq = -1;
};

/// One operator input as recorded in "Input Dims" / "Input type".
struct TensorInput {
  uint32_t dims_begin = 0;  ///< index into TraceFile::dims
  int32_t rank = 0;         ///< number of dims; -1 when the input is not a plain tensor (a list)
  uint32_t dtype = 0;       ///< StringTable id of "Input type" entry ("" if absent)
};

/// One CPU operator (cat "cpu_op") or user annotation (cat "user_annotation"). Times: integer ns
/// relative to TraceFile::origin_ns.
struct CpuOp {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  uint32_t name = 0;
  uint32_t thread = 0;
  uint32_t inputs_begin = 0;  ///< index into TraceFile::inputs
  uint32_t inputs_count = 0;
  bool annotation = false;       ///< cat "user_annotation"
  bool has_input_dims = false;   ///< args had "Input Dims"
  bool input_dims_empty = false; ///< "Input Dims" present but holds no number (e.g. [[], []])
  int64_t end_ns() const { return start_ns + dur_ns; }
  double start_us() const { return ns_to_us(start_ns); }
  double dur_us() const { return ns_to_us(dur_ns); }
  double end_us() const { return ns_to_us(start_ns + dur_ns); }
};

/// A runtime API call that carries a correlation id (cudaLaunchKernel, hipExtModuleLaunchKernel,
/// cudaMemcpyAsync, cudaStreamWaitEvent, hipEventRecord, ...; cat "cuda_runtime" / "cuda_driver").
struct RuntimeCall {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = -1;
  /// args.stream / args.event where the runtime writes them (roctracer: handles such as "0x0" or
  /// "0x55d0c3a0"), as unsigned 64-bit values stored in int64; -1 when absent.
  int64_t stream_handle = -1;
  int64_t event_handle = -1;
  uint32_t name = 0;
  uint32_t thread = 0;
  int64_t end_ns() const { return start_ns + dur_ns; }
  double start_us() const { return ns_to_us(start_ns); }
  double end_us() const { return ns_to_us(start_ns + dur_ns); }
};

/**
 * A CUPTI synchronisation record (cat "cuda_sync", Kineto >= 2.3): "Stream Wait Event" says GPU
 * stream `stream` waits, from the cudaStreamWaitEvent call with correlation `correlation` on, for
 * the event recorded on `wait_on_stream` by the cudaEventRecord call with correlation
 * `wait_record_correlation`; "Event Sync", "Stream Sync" and "Context Sync" are host waits.
 */
struct SyncEvent {
  enum class Kind : uint8_t { stream_wait_event, event_sync, stream_sync, context_sync, other };
  int64_t start_ns = 0, dur_ns = 0;
  int64_t stream = -1, wait_on_stream = -1, wait_record_correlation = -1, correlation = -1;
  uint32_t name = 0;
  Kind kind = Kind::other;
  bool has_stream = false;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

/**
 * Everything kept from one trace file (one rank): compact per-event records only, no JSON tree.
 * Events appear in file order (not necessarily time order). All times are integer nanoseconds
 * relative to `origin_ns` (the earliest kept timestamp), so that microsecond doubles of them stay
 * exact; `origin_ns` is the absolute trace clock (ts x 1000), shared by the ranks of one job.
 */
struct TraceFile {
  std::string path;
  int rank = -1;        ///< distributedInfo.rank, -1 if absent
  int world_size = 0;   ///< distributedInfo.world_size, 0 if absent
  std::string device_name;  ///< deviceProperties[0].name, "" if absent
  bool gzip = false;
  uint64_t bytes = 0;   ///< JSON bytes parsed (decompressed)
  uint64_t events = 0;  ///< entries seen in traceEvents
  int64_t origin_ns = 0;
  StringTable strings;
  std::vector<GpuOp> gpu_ops;
  std::vector<CpuOp> cpu_ops;
  std::vector<RuntimeCall> runtime_calls;
  std::vector<SyncEvent> syncs;
  std::vector<CollectiveArgs> collectives;
  std::vector<TensorInput> inputs;
  std::vector<int64_t> dims;
  /// Events not used by fusesim, counted by "ph/cat" (e.g. "X/python_function", "M/", "i/...").
  std::map<std::string, int64_t> skipped;
  /// Device events of an accelerator fusesim does not analyse (MTIA, HPU, NPU, TPU, XPU-specific,
  /// PrivateUse1 categories), counted by cat; also in `skipped` and named in `warnings`.
  std::map<std::string, int64_t> foreign_device_events;
  /// Things a user should know that do not stop the analysis (printed with every report).
  std::vector<std::string> warnings;

  const std::string& name_of(const GpuOp& op) const { return strings.str(op.name); }
  const std::string& name_of(const CpuOp& op) const { return strings.str(op.name); }
  /// Dims of one input (empty span for a non-tensor input).
  std::vector<int64_t> dims_of(const TensorInput& in) const;
};

/**
 * Parse an identifier written as a JSON string: decimal ("42", "-1") or hexadecimal ("0x1f",
 * "0X1F"; up to 64 bits, stored two's-complement in int64). Returns false for anything else
 * (empty, other characters, out of range).
 */
bool parse_id_text(std::string_view text, int64_t& out);

/**
 * Convert a decimal number as written in JSON (e.g. "1712867402348289", "4203669603187.439",
 * "1.7e15", "-3") from microseconds to integer nanoseconds exactly: digits beyond the third
 * decimal are rounded to the nearest nanosecond, half away from zero. Returns false when the text
 * is not a number or the result is outside int64 (|t| > 9.2e15 us, 292 years).
 */
bool us_text_to_ns(std::string_view text, int64_t& out_ns);

/**
 * Read one Kineto trace file, plain JSON or gzip (detected from the content, not the name), with a
 * streaming SAX parse: memory grows with the number of kept events, not with the file size.
 *
 * Accepts the object form ({"traceEvents":[...], "distributedInfo":{...}, ...}) and the bare-array
 * form ([...events...]). Kept: ph "X" events of cat kernel / gpu_memcpy / gpu_memset / cpu_op /
 * user_annotation / cuda_runtime / cuda_driver / cuda_sync; "ac2g" (or "async_cpu_to_gpu") flow
 * events are used to fill in missing correlation ids and then dropped. Everything else is counted
 * in TraceFile::skipped. Ids (pid, tid, args.stream, args.device, args.correlation, flow id) may be
 * numbers or strings of decimal or 0x-hex digits (ROCm writes args.stream "0x0"); pid/tid strings
 * of other text ("Spans") are kept as names. Timestamps are kept exactly (see us_text_to_ns).
 *
 * Errors: TraceError naming the file, byte offset and line for unreadable, malformed, truncated
 * (the message says "truncated") or corrupt-gzip input; for a kept event lacking "ts"/"dur" or
 * with a key of the wrong type; for an id, size or time that is not an integer in range (the key
 * is named); for nesting deeper than ReaderLimits::kMaxDepth or a token longer than
 * ReaderLimits::kMaxTokenBytes; for an event array holding something other than objects ([1, 2,
 * 3]: not a trace); TraceError naming the file for one without a "traceEvents" array or whose
 * event array is empty.
 */
TraceFile read_trace_file(const std::string& path);

/**
 * Read a trace given as one file or as a directory of per-rank files (*.json, *.json.gz, read in
 * natural name order; files are parsed in parallel, one thread per core). Ranks:
 * distributedInfo.rank when every file has one, the position in name order when none has; the
 * result is sorted by rank.
 *
 * Errors: TraceError from read_trace_file; TraceError (offset -1) for a missing path, a directory
 * without trace files, two files of one directory with the same distributedInfo.rank (both named),
 * or a directory where some files carry distributedInfo.rank and others do not.
 */
std::vector<TraceFile> read_trace(const std::string& path);

/**
 * Refuse a trace with no GPU event to analyse: TraceError naming the (first such) file, what it
 * does hold (CPU events only, or device events of an accelerator fusesim does not analyse, by
 * category) and what is expected (cat kernel / gpu_memcpy / gpu_memset). `what` names the command.
 */
void require_gpu_events(const std::vector<TraceFile>& files, const std::string& what);

}  // namespace fusesim::trace
