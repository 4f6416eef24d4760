// fusesim trace: streaming Kineto reader (nlohmann::json SAX over a zlib stream).
#include "calibrate/trace/kineto_reader.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <exception>
#include <mutex>
#include <thread>
#include <filesystem>
#include <iterator>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

namespace fusesim::trace {

namespace fs = std::filesystem;

TraceError::TraceError(std::string file, int64_t byte_offset, const std::string& message)
    : std::runtime_error(byte_offset >= 0
                             ? fmt::format("{}: byte {}: {}", file, byte_offset, message)
                             : fmt::format("{}: {}", file, message)),
      file_(std::move(file)),
      byte_offset_(byte_offset) {}

StringTable::StringTable() { intern(""); }

uint32_t StringTable::intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(by_id_.size());
  auto [pos, ok] = ids_.emplace(std::string(s), id);
  by_id_.push_back(&pos->first);
  return id;
}

const char* to_string(GpuOpKind k) {
  switch (k) {
    case GpuOpKind::kernel: return "kernel";
    case GpuOpKind::memcpy: return "memcpy";
    case GpuOpKind::memset: return "memset";
  }
  return "?";
}

std::vector<int64_t> TraceFile::dims_of(const TensorInput& in) const {
  if (in.rank <= 0) return {};
  return {dims.begin() + in.dims_begin, dims.begin() + in.dims_begin + in.rank};
}

namespace {

// ---- chunked zlib source and the input iterator nlohmann's lexer reads through ----------------

/// Reads a plain or gzip file in large chunks (zlib's gzread is transparent for plain files).
class ChunkSource {
 public:
  static constexpr size_t kChunkBytes = 1 << 20;

  explicit ChunkSource(const std::string& path) : path_(path), buf_(new char[kChunkBytes]) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw TraceError(path, -1, "cannot open file");
    gzbuffer(file_, 1 << 18);
    cur_ = end_ = buf_.get();
  }
  ~ChunkSource() { if (file_) gzclose(file_); }
  ChunkSource(const ChunkSource&) = delete;
  ChunkSource& operator=(const ChunkSource&) = delete;

  /// Bytes handed to the parser so far (decompressed).
  uint64_t offset() const { return before_ + static_cast<uint64_t>(cur_ - buf_.get()); }
  bool gzip() const { return gzip_; }
  const std::string& path() const { return path_; }

  bool has_data() { return cur_ != end_ || refill(); }
  char peek() const { return *cur_; }
  void advance() { ++cur_; }

 private:
  bool refill() {
    if (eof_) return false;
    before_ += static_cast<uint64_t>(end_ - buf_.get());
    int n = gzread(file_, buf_.get(), static_cast<unsigned>(kChunkBytes));
    if (first_) {
      gzip_ = gzdirect(file_) == 0;
      first_ = false;
    }
    int errnum = Z_OK;
    const char* msg = gzerror(file_, &errnum);
    if (n < 0 || (errnum != Z_OK && errnum != Z_BUF_ERROR)) {
      throw TraceError(path_, static_cast<int64_t>(before_),
                       fmt::format("{} read error: {}", gzip_ ? "gzip" : "file", msg ? msg : "?"));
    }
    if (errnum == Z_BUF_ERROR && n <= 0) {
      throw TraceError(path_, static_cast<int64_t>(before_),
                       "truncated gzip stream (unexpected end of compressed data)");
    }
    cur_ = buf_.get();
    end_ = buf_.get() + std::max(n, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    return true;
  }

  std::string path_;
  gzFile file_ = nullptr;
  std::unique_ptr<char[]> buf_;
  char* cur_ = nullptr;
  char* end_ = nullptr;
  uint64_t before_ = 0;
  bool eof_ = false, first_ = true, gzip_ = false;
};

/// Input iterator over a ChunkSource; a default-constructed one is the end sentinel.
struct ChunkIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;

  ChunkSource* src = nullptr;
  char operator*() const { return src->peek(); }
  ChunkIterator& operator++() { src->advance(); return *this; }
  ChunkIterator operator++(int) { auto t = *this; src->advance(); return t; }
  // Only ever compared against the end sentinel.
  bool operator==(const ChunkIterator& o) const {
    bool a = src && src->has_data(), b = o.src && o.src->has_data();
    return a == b;
  }
  bool operator!=(const ChunkIterator& o) const { return !(*this == o); }
};

// ---- the SAX handler ---------------------------------------------------------------------------

using json = nlohmann::json;

enum class Where : uint8_t {
  top,            // the root object
  events,         // traceEvents array (or a bare root array)
  event,          // one event object
  args,           // event.args
  dims,           // args["Input Dims"]
  dims_elem,      // one input's dims
  dims_nested,    // deeper than one input (tensor lists)
  types,          // args["Input type"]
  grid, block,    // args.grid / args.block
  dist,           // distributedInfo
  devprops,       // deviceProperties
  devprop,        // one deviceProperties element
};

enum class Key : uint8_t {
  other, ph, cat, name, pid, tid, ts, dur, id, args,
  device, stream, correlation, grid, block, input_dims, input_type,
  trace_events, distributed_info, device_properties, rank, world_size,
};

struct IdValue {  // pid/tid/flow id: integers or strings
  bool set = false;
  bool is_str = false;
  int64_t i = 0;
  std::string s;
};

class KinetoSax {
 public:
  KinetoSax(TraceFile& out, ChunkSource& src) : out_(out), src_(src) {}

  bool null() { return scalar_other(); }
  bool boolean(bool) { return scalar_other(); }
  bool number_integer(json::number_integer_t v) { return number(static_cast<double>(v), v); }
  bool number_unsigned(json::number_unsigned_t v) {
    auto i = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? std::numeric_limits<int64_t>::max()
                 : static_cast<int64_t>(v);
    return number(static_cast<double>(v), i);
  }
  bool number_float(json::number_float_t v, const std::string&) {
    return number(v, static_cast<int64_t>(v));
  }
  bool binary(json::binary_t&) { return scalar_other(); }

  bool string(std::string& v) {
    if (skip_) return true;
    if (stack_.empty()) fail("the trace must be a JSON object or array, found a string");
    switch (stack_.back()) {
      case Where::event:
        switch (key_) {
          case Key::ph: ev_.ph = v; break;
          case Key::cat: ev_.cat = v; break;
          case Key::name: ev_.name = v; break;
          case Key::pid: set_id(ev_.pid, v); break;
          case Key::tid: set_id(ev_.tid, v); break;
          case Key::id: set_id(ev_.id, v); break;
          case Key::ts: case Key::dur: wrong_type("a number", "a string"); break;
          default: break;
        }
        break;
      case Where::args:
        if (key_ == Key::device || key_ == Key::stream || key_ == Key::correlation)
          wrong_type("a number", "a string");
        break;
      case Where::events: not_an_event("a string"); break;
      case Where::types: ev_.types.push_back(out_.strings.intern(v)); break;
      case Where::dims: ev_.add_input(-1); break;
      case Where::dims_elem: ev_.inputs.back().rank = -1; break;
      case Where::devprop:
        if (key_ == Key::name && out_.device_name.empty()) out_.device_name = v;
        break;
      default: break;
    }
    return true;
  }

  bool start_object(std::size_t) {
    if (skip_) { ++skip_; return true; }
    if (stack_.empty()) { stack_.push_back(Where::top); return true; }
    switch (stack_.back()) {
      case Where::events: stack_.push_back(Where::event); ev_.reset(); ++out_.events; return true;
      case Where::event:
        if (key_ == Key::args) { stack_.push_back(Where::args); return true; }
        break;
      case Where::top:
        if (key_ == Key::distributed_info) { stack_.push_back(Where::dist); return true; }
        if (key_ == Key::trace_events) fail("\"traceEvents\" must be an array");
        break;
      case Where::devprops: stack_.push_back(Where::devprop); return true;
      case Where::dims: ev_.add_input(-1); break;
      case Where::dims_elem: ev_.inputs.back().rank = -1; break;
      default: break;
    }
    ++skip_;
    return true;
  }

  bool start_array(std::size_t) {
    if (skip_) { ++skip_; return true; }
    if (stack_.empty()) {
      stack_.push_back(Where::events);
      root_is_array_ = true;
      return true;
    }
    switch (stack_.back()) {
      case Where::top:
        if (key_ == Key::trace_events) { stack_.push_back(Where::events); saw_events_ = true; return true; }
        if (key_ == Key::device_properties) { stack_.push_back(Where::devprops); return true; }
        break;
      case Where::args:
        switch (key_) {
          case Key::input_dims: stack_.push_back(Where::dims); ev_.has_dims = true; return true;
          case Key::input_type: stack_.push_back(Where::types); return true;
          case Key::grid: stack_.push_back(Where::grid); ev_.idx = 0; return true;
          case Key::block: stack_.push_back(Where::block); ev_.idx = 0; return true;
          default: break;
        }
        break;
      case Where::dims:
        stack_.push_back(Where::dims_elem);
        ev_.add_input(0);
        return true;
      case Where::dims_elem:
      case Where::dims_nested:
        if (stack_.back() == Where::dims_elem) ev_.inputs.back().rank = -1;
        stack_.push_back(Where::dims_nested);
        return true;
      case Where::events:
        not_an_event("an array");
        break;
      default: break;
    }
    ++skip_;
    return true;
  }

  bool end_object() {
    if (skip_) { --skip_; return true; }
    if (stack_.back() == Where::event) finish_event();
    stack_.pop_back();
    key_ = Key::other;
    return true;
  }

  bool end_array() {
    if (skip_) { --skip_; return true; }
    stack_.pop_back();
    key_ = Key::other;
    return true;
  }

  bool key(std::string& k) {
    if (skip_) return true;
    switch (stack_.back()) {
      case Where::event: key_ = event_key(k); break;
      case Where::args: key_ = args_key(k); break;
      case Where::top:
        key_ = k == "traceEvents"       ? Key::trace_events
               : k == "distributedInfo" ? Key::distributed_info
               : k == "deviceProperties" ? Key::device_properties
                                         : Key::other;
        break;
      case Where::dist:
        key_ = k == "rank" ? Key::rank : k == "world_size" ? Key::world_size : Key::other;
        break;
      case Where::devprop: key_ = k == "name" ? Key::name : Key::other; break;
      default: key_ = Key::other; break;
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column N: " prefix:
    // we report the byte offset ourselves.
    if (auto p = what.find(": "); p != std::string::npos && what.rfind("[json.exception", 0) == 0)
      what = what.substr(p + 2);
    bool at_end = last_token.empty() || last_token == "<end of input>" ||
                  what.find("end of input") != std::string::npos;
    throw TraceError(out_.path, static_cast<int64_t>(position > 0 ? position - 1 : 0),
                     fmt::format("malformed JSON{}: {}", at_end ? " (file truncated?)" : "", what));
  }

  bool saw_events() const { return saw_events_ || root_is_array_; }
  void finish() { resolve_flows(); }

 private:
  struct EventBuf {
    std::string ph, cat, name;
    IdValue pid, tid, id;
    double ts = 0, dur = 0;
    bool has_ts = false, has_dur = false;
    int64_t device = -1, stream = -1, correlation = -1;
    std::array<int32_t, 3> grid{0, 0, 0}, block{0, 0, 0};
    int idx = 0;
    bool has_dims = false, dims_nonempty = false;
    std::vector<TensorInput> inputs;
    std::vector<int64_t> dims;  // dims of all inputs of this event
    std::vector<uint32_t> types;

    void reset() {
      ph.clear(); cat.clear(); name.clear();
      pid.set = tid.set = id.set = false;
      has_ts = has_dur = false;
      device = stream = correlation = -1;
      grid = block = {0, 0, 0};
      has_dims = dims_nonempty = false;
      inputs.clear(); dims.clear(); types.clear();
    }
    void add_input(int32_t rank) {
      TensorInput in;
      in.dims_begin = static_cast<uint32_t>(dims.size());
      in.rank = rank;
      inputs.push_back(in);
    }
  };

  [[noreturn]] void fail(const std::string& msg) {
    throw TraceError(out_.path, static_cast<int64_t>(src_.offset()), msg);
  }
  /// An entry of the event array that is not an object: not a Kineto / Chrome trace.
  [[noreturn]] void not_an_event(const char* got) {
    fail(fmt::format("entry {} of {} is {}, expected an event object: not a Kineto / Chrome trace", out_.events,
                     root_is_array_ ? "the top-level array" : "\"traceEvents\"", got));
  }
  [[noreturn]] void wrong_type(const char* want, const char* got) {
    fail(fmt::format("key \"{}\" of {} event \"{}\" must be {}, found {}", key_text(key_), ev_.cat,
                     ev_.name, want, got));
  }

  static Key event_key_of(const std::string& k) {
    switch (k.size()) {
      case 2:
        if (k == "ph") return Key::ph;
        if (k == "ts") return Key::ts;
        if (k == "id") return Key::id;
        break;
      case 3:
        if (k == "cat") return Key::cat;
        if (k == "pid") return Key::pid;
        if (k == "tid") return Key::tid;
        if (k == "dur") return Key::dur;
        break;
      case 4:
        if (k == "name") return Key::name;
        if (k == "args") return Key::args;
        break;
      default: break;
    }
    return Key::other;
  }
  Key event_key(const std::string& k) { return event_key_of(k); }
  static const char* key_text(Key k) {
    switch (k) {
      case Key::ts: return "ts";
      case Key::dur: return "dur";
      case Key::device: return "args.device";
      case Key::stream: return "args.stream";
      case Key::correlation: return "args.correlation";
      default: return "?";
    }
  }
  Key args_key(const std::string& k) {
    Key r = Key::other;
    switch (k.size()) {
      case 4: if (k == "grid") r = Key::grid; break;
      case 5: if (k == "block") r = Key::block; break;
      case 6:
        if (k == "device") r = Key::device;
        else if (k == "stream") r = Key::stream;
        break;
      case 10:
        if (k == "Input Dims" || k == "input_dims") r = Key::input_dims;
        else if (k == "Input type") r = Key::input_type;
        break;
      case 11: if (k == "correlation") r = Key::correlation; break;
      default:
        if (k == "Input types") r = Key::input_type;
        break;
    }
    return r;
  }

  static void set_id(IdValue& id, const std::string& v) {
    id.set = true;
    id.is_str = true;
    id.s = v;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), id.i);
    if (ec == std::errc() && p == v.data() + v.size()) id.is_str = false;
  }
  static void set_id(IdValue& id, int64_t v) {
    id.set = true;
    id.is_str = false;
    id.i = v;
  }

  bool scalar_other() {
    if (skip_ || stack_.empty()) return true;
    Where w = stack_.back();
    if (w == Where::events) not_an_event("null or a boolean");
    if (w == Where::dims) ev_.add_input(-1);
    else if (w == Where::dims_elem) ev_.inputs.back().rank = -1;
    else if (w == Where::event && (key_ == Key::ts || key_ == Key::dur))
      wrong_type("a number", "null or a boolean");
    return true;
  }

  bool number(double d, int64_t i) {
    if (skip_) return true;
    if (stack_.empty()) fail("the trace must be a JSON object or array, found a number");
    switch (stack_.back()) {
      case Where::events: not_an_event("a number"); break;
      case Where::event:
        switch (key_) {
          case Key::ts: ev_.ts = d; ev_.has_ts = true; break;
          case Key::dur: ev_.dur = d; ev_.has_dur = true; break;
          case Key::pid: set_id(ev_.pid, i); break;
          case Key::tid: set_id(ev_.tid, i); break;
          case Key::id: set_id(ev_.id, i); break;
          default: break;
        }
        break;
      case Where::args:
        switch (key_) {
          case Key::device: ev_.device = i; break;
          case Key::stream: ev_.stream = i; break;
          case Key::correlation: ev_.correlation = i; break;
          default: break;
        }
        break;
      case Where::dims_elem:
        ev_.dims.push_back(i);
        ev_.inputs.back().rank++;
        ev_.dims_nonempty = true;
        break;
      case Where::dims_nested: ev_.dims_nonempty = true; break;
      case Where::dims: ev_.add_input(-1); ev_.dims_nonempty = true; break;
      case Where::grid: if (ev_.idx < 3) ev_.grid[ev_.idx++] = static_cast<int32_t>(i); break;
      case Where::block: if (ev_.idx < 3) ev_.block[ev_.idx++] = static_cast<int32_t>(i); break;
      case Where::dist:
        if (key_ == Key::rank) out_.rank = static_cast<int>(i);
        else if (key_ == Key::world_size) out_.world_size = static_cast<int>(i);
        break;
      default: break;
    }
    return true;
  }

  uint32_t thread_id() {
    auto part = [this](const IdValue& v) -> int64_t {
      if (!v.set) return std::numeric_limits<int64_t>::min();
      if (!v.is_str) return v.i;
      // strings map to negative ids below any plausible numeric pid/tid
      return std::numeric_limits<int64_t>::min() / 2 - static_cast<int64_t>(out_.strings.intern(v.s));
    };
    std::pair<int64_t, int64_t> k{part(ev_.pid), part(ev_.tid)};
    auto it = threads_.find(k);
    if (it != threads_.end()) return it->second;
    auto id = static_cast<uint32_t>(threads_.size());
    threads_.emplace(k, id);
    return id;
  }

  void require_times() {
    if (!ev_.has_ts || !ev_.has_dur) {
      fail(fmt::format("{} event \"{}\" lacks \"{}\"", ev_.cat, ev_.name,
                       ev_.has_ts ? "dur" : "ts"));
    }
  }

  void skip_event() {
    skip_key_.assign(ev_.ph);
    skip_key_ += '/';
    skip_key_ += ev_.cat;
    auto it = out_.skipped.find(skip_key_);
    if (it == out_.skipped.end()) out_.skipped.emplace(skip_key_, 1);
    else ++it->second;
  }

  void finish_event() {
    const std::string& cat = ev_.cat;
    if (ev_.ph == "X") {
      if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Kernel" ||
          cat == "Memcpy" || cat == "Memset") {
        require_times();
        GpuOp op;
        op.start_us = ev_.ts;
        op.dur_us = ev_.dur;
        op.correlation = ev_.correlation;
        op.name = out_.strings.intern(ev_.name);
        op.thread = thread_id();
        op.device = static_cast<int32_t>(ev_.device);
        op.stream = static_cast<int32_t>(ev_.stream);
        op.grid = ev_.grid;
        op.block = ev_.block;
        op.kind = (cat == "kernel" || cat == "Kernel") ? GpuOpKind::kernel
                  : (cat == "gpu_memcpy" || cat == "Memcpy") ? GpuOpKind::memcpy
                                                             : GpuOpKind::memset;
        if (op.stream < 0 && ev_.tid.set && !ev_.tid.is_str) op.stream = static_cast<int32_t>(ev_.tid.i);
        out_.gpu_ops.push_back(op);
        return;
      }
      if (cat == "cpu_op" || cat == "user_annotation" || cat == "Operator") {
        require_times();
        CpuOp op;
        op.start_us = ev_.ts;
        op.dur_us = ev_.dur;
        op.name = out_.strings.intern(ev_.name);
        op.thread = thread_id();
        op.annotation = cat == "user_annotation";
        op.has_input_dims = ev_.has_dims;
        op.input_dims_empty = ev_.has_dims && !ev_.dims_nonempty;
        op.inputs_begin = static_cast<uint32_t>(out_.inputs.size());
        op.inputs_count = static_cast<uint32_t>(ev_.inputs.size());
        auto base = static_cast<uint32_t>(out_.dims.size());
        for (size_t i = 0; i < ev_.inputs.size(); ++i) {
          TensorInput in = ev_.inputs[i];
          in.dims_begin += base;
          if (in.rank < 0) in.rank = -1;
          in.dtype = i < ev_.types.size() ? ev_.types[i] : 0;
          out_.inputs.push_back(in);
        }
        out_.dims.insert(out_.dims.end(), ev_.dims.begin(), ev_.dims.end());
        out_.cpu_ops.push_back(op);
        return;
      }
      if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "hip_runtime" || cat == "Runtime") {
        require_times();
        RuntimeCall rc;
        rc.start_us = ev_.ts;
        rc.dur_us = ev_.dur;
        rc.correlation = ev_.correlation;
        rc.name = out_.strings.intern(ev_.name);
        rc.thread = thread_id();
        out_.runtime_calls.push_back(rc);
        return;
      }
    } else if ((ev_.ph == "s" || ev_.ph == "f") && cat == "ac2g" && ev_.id.set && !ev_.id.is_str &&
               ev_.has_ts) {
      flows_.push_back({ev_.ts, ev_.id.i, thread_id(), ev_.ph == "s"});
      return;
    }
    skip_event();
  }

  /// Fill in correlation ids that are missing on kernels / launches from the "ac2g" flow events
  /// ("s" at the launch's ts on its thread, "f" at the kernel's ts on its thread).
  void resolve_flows() {
    bool missing = std::any_of(out_.gpu_ops.begin(), out_.gpu_ops.end(), [](const GpuOp& g) { return g.correlation < 0; }) ||
                   std::any_of(out_.runtime_calls.begin(), out_.runtime_calls.end(), [](const RuntimeCall& r) { return r.correlation < 0; });
    if (flows_.empty() || !missing) {
      flows_ = {};
      return;
    }
    std::map<std::pair<uint32_t, double>, int64_t> start_at, finish_at;
    for (const auto& f : flows_) (f.start ? start_at : finish_at)[{f.thread, f.ts}] = f.id;
    for (auto& op : out_.gpu_ops) {
      if (op.correlation >= 0) continue;
      auto it = finish_at.find({op.thread, op.start_us});
      if (it != finish_at.end()) op.correlation = it->second;
    }
    for (auto& rc : out_.runtime_calls) {
      if (rc.correlation >= 0) continue;
      auto it = start_at.find({rc.thread, rc.start_us});
      if (it != start_at.end()) rc.correlation = it->second;
    }
    flows_.clear();
    flows_.shrink_to_fit();
  }

  struct Flow { double ts; int64_t id; uint32_t thread; bool start; };
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
      return std::hash<int64_t>{}(p.first) * 1000003u ^ std::hash<int64_t>{}(p.second);
    }
  };

  TraceFile& out_;
  ChunkSource& src_;
  std::vector<Where> stack_;
  int skip_ = 0;
  Key key_ = Key::other;
  EventBuf ev_;
  std::string skip_key_;
  std::vector<Flow> flows_;
  std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, PairHash> threads_;
  bool saw_events_ = false, root_is_array_ = false;
};

/// Natural order: digit runs compare as numbers ("rank2" < "rank10").
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string_view na(a.data() + i, i2 - i), nb(b.data() + j, j2 - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

bool is_trace_name(const std::string& n) {
  auto ends = [&](std::string_view s) {
    return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

}  // namespace

TraceFile read_trace_file(const std::string& path) {
  TraceFile out;
  out.path = path;
  ChunkSource src(path);
  KinetoSax sax(out, src);
  ChunkIterator first{&src}, last{};
  bool ok = json::sax_parse(first, last, &sax);
  if (!ok) throw TraceError(path, static_cast<int64_t>(src.offset()), "JSON parse stopped");
  if (!sax.saw_events()) throw TraceError(path, -1, "no \"traceEvents\" array: not a Kineto trace");
  if (out.events == 0)
    throw TraceError(path, -1, "the trace holds no events (an empty event array): expected a Kineto / Chrome trace with events");
  sax.finish();
  out.gzip = src.gzip();
  out.bytes = src.offset();
  return out;
}

std::vector<TraceFile> read_trace(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw TraceError(path, -1, "no such file or directory");
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path)) {
      if (e.is_regular_file() && is_trace_name(e.path().filename().string()))
        files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end(), natural_less);
    if (files.empty()) throw TraceError(path, -1, "directory holds no *.json or *.json.gz trace file");
  } else {
    files.push_back(path);
  }
  // Parse the rank files in parallel (each parse is independent); the first error wins.
  std::vector<TraceFile> out(files.size());
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto worker = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      try {
        out[i] = read_trace_file(files[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    }
  };
  unsigned n_threads = std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()),
                                          static_cast<unsigned>(files.size()));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n_threads; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  std::vector<int> seen;
  bool distinct = true;
  for (const auto& t : out) {
    if (t.rank < 0 || std::find(seen.begin(), seen.end(), t.rank) != seen.end()) distinct = false;
    seen.push_back(t.rank);
  }
  if (!distinct || out.size() == 1) {
    if (out.size() > 1 || out[0].rank < 0)
      for (size_t i = 0; i < out.size(); ++i) out[i].rank = static_cast<int>(i);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceFile& a, const TraceFile& b) { return a.rank < b.rank; });
  return out;
}

}  // namespace fusesim::trace
