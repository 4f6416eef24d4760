// fusesim trace: streaming Kineto reader (nlohmann::json SAX over a zlib stream).
#include "calibrate/trace/kineto_reader.hpp"
#include "hw/hardware.hpp"
#include "hw/io.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <exception>
#include <filesystem>
#include <iterator>
#include <limits>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>
#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <sys/stat.h>
#include <fcntl.h>

namespace fusesim::trace {

namespace fs = std::filesystem;

namespace {
std::string error_text(const std::string& file, int64_t byte_offset, int64_t line, const std::string& message) {
  if (byte_offset < 0) return fmt::format("{}: {}", file, message);
  if (line < 0) return fmt::format("{}: byte {}: {}", file, byte_offset, message);
  return fmt::format("{}: byte {} (line {}): {}", file, byte_offset, line, message);
}

/// A name as shown in a message: at most 80 characters (a 40 KB annotation stays readable).
std::string shown(std::string_view s) {
  if (s.size() <= 80) return std::string(s);
  return fmt::format("{}... ({} bytes)", s.substr(0, 77), s.size());
}
}  // namespace

TraceError::TraceError(std::string file, int64_t byte_offset, const std::string& message, int64_t line)
    : std::runtime_error(error_text(file, byte_offset, line, message)),
      file_(std::move(file)),
      byte_offset_(byte_offset),
      line_(line) {}

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

bool parse_id_text(std::string_view t, int64_t& out) {
  if (t.empty()) return false;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(t.data() + 2, t.data() + t.size(), v, 16);
    if (ec != std::errc() || p != t.data() + t.size()) return false;
    out = static_cast<int64_t>(v);  // handles (pointers) keep their 64 bits
    return true;
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 10);
  if (ec != std::errc() || p != t.data() + t.size()) return false;
  out = v;
  return true;
}

bool us_text_to_ns(std::string_view t, int64_t& out_ns) {
  // value = sign * D * 10^e10 with D the significant digits (no dot); ns = value * 10^3.
  // Digits go to a stack buffer: this runs for every ts and dur of a trace.
  constexpr size_t kMaxDigits = 40;  // beyond int64 whatever follows: keep only the magnitude
  char digits[kMaxDigits];
  size_t nd = 0;
  size_t i = 0;
  bool neg = false;
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) neg = t[i++] == '-';
  int64_t e10 = 0;
  bool any = false, dot = false;
  for (; i < t.size(); ++i) {
    char c = t[i];
    if (c >= '0' && c <= '9') {
      any = true;
      if (nd >= kMaxDigits) {
        if (!dot) ++e10;
        continue;
      }
      if (dot) --e10;
      if (nd == 0 && c == '0') continue;
      digits[nd++] = c;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!any) return false;
  if (i < t.size()) {
    if (t[i] != 'e' && t[i] != 'E') return false;
    ++i;
    bool eneg = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) eneg = t[i++] == '-';
    if (i >= t.size()) return false;
    int64_t ex = 0;
    for (; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      if (ex < 1000000) ex = ex * 10 + (t[i] - '0');
    }
    e10 += eneg ? -ex : ex;
  }
  if (nd == 0) {
    out_ns = 0;
    return true;
  }
  int64_t shift = e10 + 3;  // ns = D * 10^shift
  if (shift >= 0) {
    if (static_cast<int64_t>(nd) + shift > 19) return false;
    uint64_t v = 0;
    for (size_t k = 0; k < nd; ++k) v = v * 10 + static_cast<uint64_t>(digits[k] - '0');
    for (int64_t k = 0; k < shift; ++k) v *= 10;  // at most 19 digits: no wrap
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    out_ns = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
  }
  // Drop the last -shift digits, rounding half away from zero on the first dropped digit.
  auto drop = static_cast<size_t>(-shift);
  if (drop >= nd) {  // |value| < 1 ns
    out_ns = drop == nd && digits[0] >= '5' ? (neg ? -1 : 1) : 0;
    return true;
  }
  size_t keep = nd - drop;
  if (keep > 19) return false;
  uint64_t v = 0;
  for (size_t k = 0; k < keep; ++k) v = v * 10 + static_cast<uint64_t>(digits[k] - '0');
  if (digits[keep] >= '5') ++v;
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  out_ns = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

namespace {

/// A hw::FileError's text without its leading "PATH: " (TraceError adds the path itself).
std::string strip_path(const std::string& what, const std::string& path) {
  return what.rfind(path + ": ", 0) == 0 ? what.substr(path.size() + 2) : what;
}

// ---- chunked zlib source and the input iterator nlohmann's lexer reads through ----------------

/// Reads a plain or gzip file in large chunks (zlib's gzread is transparent for plain files),
/// counting lines for messages and refusing a single token longer than kMaxTokenBytes.
class ChunkSource {
 public:
  static constexpr size_t kChunkBytes = 1 << 20;

  explicit ChunkSource(const std::string& path) : path_(path), buf_(new char[kChunkBytes]) {
    // Refused before open() (hw::check_input_file: by stat): a FIFO waited forever, /dev/zero was
    // read until the token limit. The stored size is bounded (hw::kMaxTraceFileBytes); what it
    // decompresses to is streamed under ReaderLimits. O_NONBLOCK and fstat: a file swapped for a
    // FIFO after the check does not block either.
    try {
      hw::check_input_file(path, "Kineto / Chrome trace (.json or .json.gz)", hw::kMaxTraceFileBytes);
    } catch (const hw::FileError& e) {
      throw TraceError(path, -1, strip_path(e.what(), path));
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw TraceError(path, -1, fmt::format("cannot open file: {}", std::strerror(errno)));
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw TraceError(path, -1, "is not a regular file (a device, FIFO or socket), expected a Kineto / Chrome trace");
    }
    file_ = gzdopen(fd, "rb");
    if (!file_) {
      ::close(fd);
      throw TraceError(path, -1, "cannot open file");
    }
    gzbuffer(file_, 1 << 18);
    cur_ = end_ = buf_.get();
  }
  ~ChunkSource() { if (file_) gzclose(file_); }
  ChunkSource(const ChunkSource&) = delete;
  ChunkSource& operator=(const ChunkSource&) = delete;

  /// Bytes handed to the parser so far (decompressed).
  uint64_t offset() const { return before_ + static_cast<uint64_t>(cur_ - buf_.get()); }
  /// 1-based line of the current position.
  int64_t line() const {
    return lines_before_ + static_cast<int64_t>(std::count(buf_.get(), cur_, '\n')) + 1;
  }
  bool gzip() const { return gzip_; }
  const std::string& path() const { return path_; }
  /// True once the whole input has been read and handed out.
  bool exhausted() const { return eof_ && cur_ == end_; }
  /// A SAX callback happened here: the next token starts after this point.
  void mark() { mark_ = offset(); }

  bool has_data() { return cur_ != end_ || refill(); }
  char peek() const { return *cur_; }
  void advance() { ++cur_; }

 private:
  bool refill() {
    if (eof_) return false;
    before_ += static_cast<uint64_t>(end_ - buf_.get());
    lines_before_ += static_cast<int64_t>(std::count(buf_.get(), end_, '\n'));
    cur_ = end_ = buf_.get();
    if (before_ - mark_ > static_cast<uint64_t>(ReaderLimits::kMaxTokenBytes)) {
      throw TraceError(path_, static_cast<int64_t>(mark_),
                       fmt::format("a single JSON token (string or number) runs past {} MiB from here: "
                                   "longer than the reader's limit of {} MiB (not a Kineto trace, or a corrupt one)",
                                   ReaderLimits::kMaxTokenBytes >> 20, ReaderLimits::kMaxTokenBytes >> 20));
    }
    int n = gzread(file_, buf_.get(), static_cast<unsigned>(kChunkBytes));
    if (first_) {
      gzip_ = gzdirect(file_) == 0;
      first_ = false;
    }
    int errnum = Z_OK;
    const char* msg = gzerror(file_, &errnum);
    if (n < 0 || (errnum != Z_OK && errnum != Z_BUF_ERROR)) {
      throw TraceError(path_, static_cast<int64_t>(before_),
                       fmt::format("{} read error: {}", gzip_ ? "gzip" : "file", msg ? msg : "?"), lines_before_ + 1);
    }
    if (errnum == Z_BUF_ERROR && n <= 0) {
      throw TraceError(path_, static_cast<int64_t>(before_),
                       "truncated gzip stream (unexpected end of compressed data)", lines_before_ + 1);
    }
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
  uint64_t mark_ = 0;
  int64_t lines_before_ = 0;
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
  device, stream, correlation, event, grid, block, input_dims, input_type,
  coll_name, in_nelems, out_nelems, group_size, coll_dtype, pg_name, pg_desc, pg_ranks, seq,
  wait_on_stream, wait_record_corr,
  trace_events, distributed_info, device_properties, rank, world_size,
};

const char* key_text(Key k) {
  switch (k) {
    case Key::ph: return "ph";
    case Key::cat: return "cat";
    case Key::name: return "name";
    case Key::pid: return "pid";
    case Key::tid: return "tid";
    case Key::ts: return "ts";
    case Key::dur: return "dur";
    case Key::id: return "id";
    case Key::device: return "args.device";
    case Key::stream: return "args.stream";
    case Key::correlation: return "args.correlation";
    case Key::event: return "args.event";
    case Key::grid: return "args.grid";
    case Key::block: return "args.block";
    case Key::input_dims: return "args.Input Dims";
    case Key::in_nelems: return "args.In msg nelems";
    case Key::out_nelems: return "args.Out msg nelems";
    case Key::group_size: return "args.Group size";
    case Key::seq: return "args.Seq";
    case Key::wait_on_stream: return "args.wait_on_stream";
    case Key::wait_record_corr: return "args.wait_on_cuda_event_record_corr_id";
    case Key::rank: return "distributedInfo.rank";
    case Key::world_size: return "distributedInfo.world_size";
    default: return "?";
  }
}

/// A number token as the lexer gave it.
struct NumTok {
  enum Kind : uint8_t { integer, big, real } kind = integer;
  int64_t i = 0;
  uint64_t u = 0;                     // big: an unsigned value above INT64_MAX
  double d = 0;
  const std::string* text = nullptr;  // real: the token's digits
};

std::string num_text(const NumTok& n) {
  if (n.kind == NumTok::integer) return std::to_string(n.i);
  if (n.kind == NumTok::big) return std::to_string(n.u);
  return n.text ? *n.text : fmt::format("{}", n.d);
}

/// An integer field (id, size) of an event: its value, or what was found instead.
struct IntField {
  enum State : uint8_t { unset, ok, bad };
  State state = unset;
  int64_t v = 0;
  std::string found;  // with bad: the offending text, for the message

  void set(int64_t x) { state = ok; v = x; }
  void set_bad(std::string what) { state = bad; found = std::move(what); }
  void set_num(const NumTok& n) {
    if (n.kind == NumTok::integer) return set(n.i);
    if (n.kind == NumTok::real && std::isfinite(n.d) && n.d == std::trunc(n.d) && n.d >= -9.2233720368547758e18 &&
        n.d < 9.2233720368547758e18)
      return set(static_cast<int64_t>(n.d));
    set_bad(num_text(n));
  }
  void set_text(const std::string& s) {
    int64_t x = 0;
    if (parse_id_text(s, x)) set(x);
    else set_bad(fmt::format("\"{}\"", shown(s)));
  }
  int64_t get_or(int64_t dflt) const { return state == ok ? v : dflt; }
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

  bool null() { src_.mark(); return scalar_other(); }
  bool boolean(bool) { src_.mark(); return scalar_other(); }
  bool number_integer(json::number_integer_t v) {
    NumTok n;
    n.i = v;
    return number(n);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    NumTok n;
    if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      n.i = static_cast<int64_t>(v);
    } else {
      n.kind = NumTok::big;
      n.u = v;
    }
    return number(n);
  }
  bool number_float(json::number_float_t v, const std::string& s) {
    NumTok n;
    n.kind = NumTok::real;
    n.d = v;
    n.text = &s;
    return number(n);
  }
  bool binary(json::binary_t&) { return scalar_other(); }

  bool string(std::string& v) {
    src_.mark();
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
          case Key::ts: ev_.ts.set_bad(fmt::format("a string \"{}\"", shown(v))); break;
          case Key::dur: ev_.dur.set_bad(fmt::format("a string \"{}\"", shown(v))); break;
          default: break;
        }
        break;
      case Where::args:
        switch (key_) {
          case Key::device: ev_.device.set_text(v); break;
          case Key::stream: ev_.stream.set_text(v); break;
          case Key::correlation: ev_.correlation.set_text(v); break;
          case Key::event: ev_.event.set_text(v); break;
          case Key::wait_on_stream: ev_.wait_on_stream.set_text(v); break;
          case Key::wait_record_corr: ev_.wait_record_corr.set_text(v); break;
          case Key::in_nelems: ev_.in_nelems.set_text(v); break;
          case Key::out_nelems: ev_.out_nelems.set_text(v); break;
          case Key::group_size: ev_.group_size.set_text(v); break;
          case Key::seq: ev_.seq.set_text(v); break;
          case Key::coll_name: ev_.coll_name = v; ev_.has_coll = true; break;
          case Key::coll_dtype: ev_.coll_dtype = v; break;
          case Key::pg_name: ev_.pg_name = v; break;
          case Key::pg_desc: ev_.pg_desc = v; break;
          case Key::pg_ranks: ev_.pg_ranks = v; break;
          default: break;
        }
        break;
      case Where::events: not_an_event("a string"); break;
      case Where::types: ev_.types.push_back(v); break;
      case Where::dims: ev_.add_input(-1); break;
      case Where::dims_elem: ev_.inputs.back().rank = -1; break;
      case Where::grid: case Where::block: ev_.bad_launch_dims = fmt::format("a string \"{}\"", shown(v)); break;
      case Where::dist: {
        int64_t x = 0;
        if (key_ == Key::rank || key_ == Key::world_size) {
          if (!parse_id_text(v, x)) fail(fmt::format("key \"{}\" must be an integer, found \"{}\"", key_text(key_), shown(v)));
          set_dist(x, v);
        }
        break;
      }
      case Where::devprop:
        if (key_ == Key::name && out_.device_name.empty()) out_.device_name = v;
        break;
      default: break;
    }
    return true;
  }

  bool start_object(std::size_t) {
    src_.mark();
    enter();
    if (skip_) { ++skip_; return true; }
    if (stack_.empty()) { stack_.push_back(Where::top); return true; }
    switch (stack_.back()) {
      case Where::events: stack_.push_back(Where::event); ev_.reset(); ++out_.events; return true;
      case Where::event:
        if (key_ == Key::args) { stack_.push_back(Where::args); return true; }
        break;
      case Where::args:
        if (IntField* f = args_int(key_)) f->set_bad("an object");
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
    src_.mark();
    enter();
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
        // An integer key holding an array ("stream": [1, 2]) is refused where it is required, not
        // skipped as if it were absent.
        if (IntField* f = args_int(key_)) f->set_bad("an array");
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
    src_.mark();
    --depth_;
    if (skip_) { --skip_; return true; }
    if (stack_.back() == Where::event) finish_event();
    stack_.pop_back();
    key_ = Key::other;
    return true;
  }

  bool end_array() {
    src_.mark();
    --depth_;
    if (skip_) { --skip_; return true; }
    stack_.pop_back();
    key_ = Key::other;
    return true;
  }

  bool key(std::string& k) {
    src_.mark();
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
    if (ex.id == 406) {  // "[json.exception.out_of_range.406] number overflow parsing '1e400'"
      const auto p = what.find("] ");
      throw TraceError(out_.path, static_cast<int64_t>(position > 0 ? position - 1 : 0),
                       fmt::format("a number out of the range of a double ({}), expected a finite number",
                                   p == std::string::npos ? what : what.substr(p + 2)),
                       src_.line());
    }
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column N: " prefix:
    // we report the byte offset and line ourselves.
    if (auto p = what.find(": "); p != std::string::npos && what.rfind("[json.exception", 0) == 0)
      what = what.substr(p + 2);
    auto at = static_cast<int64_t>(position > 0 ? position - 1 : 0);
    if (src_.exhausted() && src_.offset() == 0) throw TraceError(out_.path, 0, "the file is empty: not a Kineto trace", 1);
    (void)last_token;
    bool at_end = src_.exhausted() || what.find("end of input") != std::string::npos;
    if (at_end)
      throw TraceError(out_.path, static_cast<int64_t>(src_.offset()),
                       fmt::format("the file ends inside a JSON value: truncated ({})", what), src_.line());
    throw TraceError(out_.path, at, fmt::format("malformed JSON: {}", what), src_.line());
  }

  bool saw_events() const { return saw_events_ || root_is_array_; }
  void finish() {
    resolve_flows();
    if (negative_dims_ops_ > 0)
      out_.warnings.push_back(fmt::format(
          "{}: {} CPU operator(s) carry a negative size in \"Input Dims\" (first: {}, line {}); no GEMM shape is taken "
          "from them, so their kernels join no shape",
          out_.path, negative_dims_ops_, negative_dims_first_, negative_dims_line_));
    if (!foreign_.empty()) {
      int64_t n = 0;
      std::string list;
      for (const auto& [cat, c] : foreign_) {
        n += c;
        list += fmt::format("{}{}: {}", list.empty() ? "" : ", ", cat, c);
      }
      out_.foreign_device_events = foreign_;
      out_.warnings.push_back(fmt::format(
          "{}: {} device event(s) of an accelerator fusesim does not analyse were skipped ({}); fusesim analyses "
          "CUDA and ROCm GPU events (cat kernel, gpu_memcpy, gpu_memset)",
          out_.path, n, list));
    }
    rebase_times();
  }

 private:
  struct EventBuf {
    std::string ph, cat, name;
    IdValue pid, tid, id;
    IntField ts, dur;  // nanoseconds
    IntField device, stream, correlation, event, wait_on_stream, wait_record_corr;
    IntField in_nelems, out_nelems, group_size, seq;
    std::string coll_name, coll_dtype, pg_name, pg_desc, pg_ranks;
    bool has_coll = false;
    std::array<int32_t, 3> grid{0, 0, 0}, block{0, 0, 0};
    std::string bad_launch_dims;  // a grid/block entry that is not an int32
    std::string bad_dims;         // an Input Dims entry that is not an int64
    int idx = 0;
    bool has_dims = false, dims_nonempty = false;
    std::vector<TensorInput> inputs;
    std::vector<int64_t> dims;  // dims of all inputs of this event
    std::vector<std::string> types;

    void reset() {
      ph.clear(); cat.clear(); name.clear();
      pid.set = tid.set = id.set = false;
      // Only the states: `found` is read when a state is bad, and set with it (no string work here).
      for (IntField* f : {&ts, &dur, &device, &stream, &correlation, &event, &wait_on_stream, &wait_record_corr,
                          &in_nelems, &out_nelems, &group_size, &seq})
        f->state = IntField::unset;
      if (has_coll) {
        coll_name.clear(); coll_dtype.clear(); pg_name.clear(); pg_desc.clear(); pg_ranks.clear();
        has_coll = false;
      }
      grid = block = {0, 0, 0};
      bad_launch_dims.clear();
      bad_dims.clear();
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
    throw TraceError(out_.path, static_cast<int64_t>(src_.offset()), msg, src_.line());
  }
  void enter() {
    if (++depth_ > ReaderLimits::kMaxDepth)
      fail(fmt::format("JSON nested deeper than {} levels (the reader's limit; Kineto traces nest about 8)",
                       ReaderLimits::kMaxDepth));
  }
  /// An entry of the event array that is not an object: not a Kineto / Chrome trace.
  [[noreturn]] void not_an_event(const char* got) {
    fail(fmt::format("entry {} of {} is {}, expected an event object: not a Kineto / Chrome trace", out_.events,
                     root_is_array_ ? "the top-level array" : "\"traceEvents\"", got));
  }
  std::string event_text() const { return fmt::format("{} event \"{}\"", ev_.cat, shown(ev_.name)); }
  /// A field of a kept event that is not an integer in range: the key and what was found.
  void require_int(const IntField& f, Key k) {
    if (f.state != IntField::bad) return;
    fail(fmt::format("key \"{}\" of {} must be an integer in range (a number, or a string of decimal or 0x-hex "
                     "digits, |value| < 2^63), found {}", key_text(k), event_text(), f.found));
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
  Key args_key(const std::string& k) {
    Key r = Key::other;
    switch (k.size()) {
      case 3: if (k == "Seq" || k == "seq") r = Key::seq; break;
      case 4: if (k == "grid") r = Key::grid; break;
      case 5:
        if (k == "block") r = Key::block;
        else if (k == "event") r = Key::event;
        else if (k == "dtype") r = Key::coll_dtype;
        break;
      case 6:
        if (k == "device") r = Key::device;
        else if (k == "stream") r = Key::stream;
        break;
      case 10:
        if (k == "Input Dims" || k == "input_dims") r = Key::input_dims;
        else if (k == "Input type") r = Key::input_type;
        else if (k == "Group size") r = Key::group_size;
        break;
      case 11:
        if (k == "correlation") r = Key::correlation;
        else if (k == "Input types") r = Key::input_type;
        break;
      case 13:
        if (k == "In msg nelems") r = Key::in_nelems;
        break;
      case 14:
        if (k == "wait_on_stream") r = Key::wait_on_stream;
        else if (k == "Out msg nelems") r = Key::out_nelems;
        break;
      case 15:
        if (k == "Collective name") r = Key::coll_name;
        break;
      case 18:
        if (k == "Process Group Name") r = Key::pg_name;
        break;
      case 19:
        if (k == "Process Group Ranks") r = Key::pg_ranks;
        break;
      case 25:
        if (k == "Process Group Description") r = Key::pg_desc;
        break;
      case 33:
        if (k == "wait_on_cuda_event_record_corr_id") r = Key::wait_record_corr;
        break;
      default: break;
    }
    return r;
  }

  static void set_id(IdValue& id, const std::string& v) {
    id.set = true;
    int64_t x = 0;
    if (parse_id_text(v, x)) {
      id.is_str = false;
      id.i = x;
    } else {
      id.is_str = true;
      id.s = v;
    }
  }

  void set_dist(int64_t x, const std::string& text) {
    if (x < 0 || x > (int64_t{1} << 24))
      fail(fmt::format("key \"{}\" must be an integer in 0..{}, found {}", key_text(key_), int64_t{1} << 24, text));
    if (key_ == Key::rank) out_.rank = static_cast<int>(x);
    else out_.world_size = static_cast<int>(x);
  }

  bool scalar_other() {
    if (skip_ || stack_.empty()) return true;
    Where w = stack_.back();
    if (w == Where::events) not_an_event("null or a boolean");
    if (w == Where::dims) ev_.add_input(-1);
    else if (w == Where::dims_elem) ev_.inputs.back().rank = -1;
    else if (w == Where::event && key_ == Key::ts) ev_.ts.set_bad("null or a boolean");
    else if (w == Where::event && key_ == Key::dur) ev_.dur.set_bad("null or a boolean");
    return true;
  }

  /// A time in microseconds as integer nanoseconds (exact), or what was found instead.
  static void set_time(IntField& f, const NumTok& n) {
    int64_t ns = 0;
    if (n.kind == NumTok::integer) {
      if (__builtin_mul_overflow(n.i, int64_t{1000}, &ns)) return f.set_bad(num_text(n) + " (out of range)");
      return f.set(ns);
    }
    if (n.kind == NumTok::real && n.text && us_text_to_ns(*n.text, ns)) return f.set(ns);
    f.set_bad(num_text(n) + " (not a time within +-9.2e15 us)");
  }

  static bool int32_of(const NumTok& n, int32_t& out) {
    IntField f;
    f.set_num(n);
    if (f.state != IntField::ok || f.v < std::numeric_limits<int32_t>::min() || f.v > std::numeric_limits<int32_t>::max())
      return false;
    out = static_cast<int32_t>(f.v);
    return true;
  }

  bool number(const NumTok& n) {
    src_.mark();
    if (skip_) return true;
    if (stack_.empty()) fail("the trace must be a JSON object or array, found a number");
    switch (stack_.back()) {
      case Where::events: not_an_event("a number"); break;
      case Where::event:
        switch (key_) {
          case Key::ts: set_time(ev_.ts, n); break;
          case Key::dur: set_time(ev_.dur, n); break;
          case Key::pid: case Key::tid: case Key::id: {
            IntField f;
            f.set_num(n);
            IdValue& id = key_ == Key::pid ? ev_.pid : key_ == Key::tid ? ev_.tid : ev_.id;
            if (f.state == IntField::ok) {
              id.set = true;
              id.is_str = false;
              id.i = f.v;
            } else {
              set_id(id, f.found);  // an out-of-range id is kept as a name
            }
            break;
          }
          default: break;
        }
        break;
      case Where::args:
        if (IntField* f = args_int(key_)) f->set_num(n);
        break;
      case Where::dims_elem: {
        IntField f;
        f.set_num(n);
        if (f.state == IntField::ok) ev_.dims.push_back(f.v);
        else if (ev_.bad_dims.empty()) ev_.bad_dims = f.found;
        if (f.state != IntField::ok) ev_.dims.push_back(0);
        ev_.inputs.back().rank++;
        ev_.dims_nonempty = true;
        break;
      }
      case Where::dims_nested: ev_.dims_nonempty = true; break;
      case Where::dims: ev_.add_input(-1); ev_.dims_nonempty = true; break;
      case Where::grid:
      case Where::block: {
        int32_t v = 0;
        if (!int32_of(n, v) || v < 0) {  // a launch dimension is a count: a negative one is refused, not taken as "no grid"
          if (ev_.bad_launch_dims.empty()) ev_.bad_launch_dims = num_text(n);
        } else if (ev_.idx < 3) {
          (stack_.back() == Where::grid ? ev_.grid : ev_.block)[static_cast<size_t>(ev_.idx)] = v;
        }
        ev_.idx++;
        break;
      }
      case Where::dist:
        if (key_ == Key::rank || key_ == Key::world_size) {
          IntField f;
          f.set_num(n);
          if (f.state != IntField::ok)
            fail(fmt::format("key \"{}\" must be an integer in 0..{}, found {}", key_text(key_), int64_t{1} << 24, f.found));
          set_dist(f.v, num_text(n));
        }
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

  /// ts and dur of a kept event: present, integers in range, dur >= 0, ts + dur in range.
  void require_times() {
    if (ev_.ts.state == IntField::unset || ev_.dur.state == IntField::unset)
      fail(fmt::format("{} lacks \"{}\"", event_text(), ev_.ts.state == IntField::unset ? "ts" : "dur"));
    for (auto [f, k] : {std::pair<const IntField*, Key>{&ev_.ts, Key::ts}, {&ev_.dur, Key::dur}}) {
      if (f->state == IntField::bad)
        fail(fmt::format("key \"{}\" of {} must be a number of microseconds, found {}", key_text(k), event_text(), f->found));
    }
    if (ev_.dur.v < 0)
      fail(fmt::format("key \"dur\" of {} must be >= 0, found {} us", event_text(), ns_to_us(ev_.dur.v)));
    int64_t end = 0;
    if (__builtin_add_overflow(ev_.ts.v, ev_.dur.v, &end))
      fail(fmt::format("{}: ts + dur is beyond the range of the trace clock (+-9.2e15 us)", event_text()));
  }

  void skip_event() {
    skip_key_.assign(ev_.ph);
    skip_key_ += '/';
    skip_key_ += ev_.cat;
    auto it = out_.skipped.find(skip_key_);
    if (it == out_.skipped.end()) out_.skipped.emplace(skip_key_, 1);
    else ++it->second;
    if (ev_.ph == "X" && is_foreign_device_cat(ev_.cat)) foreign_[ev_.cat]++;
  }

  /// A device-timeline category of an accelerator fusesim does not analyse (Kineto's MTIA, HPU,
  /// NPU, TPU, PrivateUse1, ... activity kinds), not one of their host runtime / driver calls.
  static bool is_foreign_device_cat(const std::string& cat) {
    if (cat.size() > 64) return false;
    std::string c(cat);
    for (auto& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    auto ends = [&](std::string_view s) { return c.size() >= s.size() && c.compare(c.size() - s.size(), s.size(), s) == 0; };
    if (ends("_runtime") || ends("_driver") || ends("runtime_api") || ends("_user_annotation")) return false;
    for (std::string_view p : {"mtia", "hpu", "npu", "tpu", "xpu", "ipu", "privateuse1", "gaudi", "neuron", "accelerator"})
      if (c.find(p) != std::string::npos) return true;
    return false;
  }

  /// The integer field an args key fills (device, stream, correlation, ...), or null.
  IntField* args_int(Key k) {
    switch (k) {
      case Key::device: return &ev_.device;
      case Key::stream: return &ev_.stream;
      case Key::correlation: return &ev_.correlation;
      case Key::event: return &ev_.event;
      case Key::wait_on_stream: return &ev_.wait_on_stream;
      case Key::wait_record_corr: return &ev_.wait_record_corr;
      case Key::in_nelems: return &ev_.in_nelems;
      case Key::out_nelems: return &ev_.out_nelems;
      case Key::group_size: return &ev_.group_size;
      case Key::seq: return &ev_.seq;
      default: return nullptr;
    }
  }

  void finish_event() {
    // Events of one file, counted as they are read: an 11.8 MB gzip of 30 million copies of one kernel
    // event had been read for 106 s into 4.4 GB (a fresh-user trial). The largest real capture in the
    // HTA fixtures holds ~10^5 events; a whole-job Kineto trace of a few million stays under the bound.
    if (++events_read_ > kMaxTraceEvents)
      fail(fmt::format("more than {} events in one trace file: refused (split the capture, or profile fewer steps)", kMaxTraceEvents));
    const std::string& cat = ev_.cat;
    if (ev_.ph == "X") {
      if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Kernel" ||
          cat == "Memcpy" || cat == "Memset") {
        require_times();
        require_int(ev_.correlation, Key::correlation);
        require_int(ev_.device, Key::device);
        require_int(ev_.stream, Key::stream);
        if (!ev_.bad_launch_dims.empty())
          fail(fmt::format("key \"args.grid\"/\"args.block\" of {} must hold non-negative integers of 32 bits, found {}", event_text(),
                           ev_.bad_launch_dims));
        GpuOp op;
        op.start_ns = ev_.ts.v;
        op.dur_ns = ev_.dur.v;
        op.correlation = ev_.correlation.get_or(-1);
        op.name = out_.strings.intern(ev_.name);
        op.thread = thread_id();
        int64_t dev = ev_.device.get_or(-1);
        if (ev_.device.state == IntField::ok && (dev < 0 || dev > std::numeric_limits<int32_t>::max()))
          fail(fmt::format("key \"args.device\" of {} must be a device index (0 or more), found {}", event_text(), dev));
        op.device = static_cast<int32_t>(dev);
        op.has_stream = ev_.stream.state == IntField::ok;
        op.stream = ev_.stream.get_or(-1);
        op.grid = ev_.grid;
        op.block = ev_.block;
        op.kind = (cat == "kernel" || cat == "Kernel") ? GpuOpKind::kernel
                  : (cat == "gpu_memcpy" || cat == "Memcpy") ? GpuOpKind::memcpy
                                                             : GpuOpKind::memset;
        if (!op.has_stream && ev_.tid.set && !ev_.tid.is_str) op.stream = ev_.tid.i;
        if (ev_.has_coll) {
          for (auto [f, k] : {std::pair<const IntField*, Key>{&ev_.in_nelems, Key::in_nelems}, {&ev_.out_nelems, Key::out_nelems},
                              {&ev_.group_size, Key::group_size}, {&ev_.seq, Key::seq}})
            require_int(*f, k);
          CollectiveArgs c;
          c.name = out_.strings.intern(ev_.coll_name);
          c.pg_name = out_.strings.intern(ev_.pg_name);
          c.pg_desc = out_.strings.intern(ev_.pg_desc);
          c.pg_ranks = out_.strings.intern(ev_.pg_ranks);
          c.dtype = out_.strings.intern(ev_.coll_dtype);
          c.in_nelems = ev_.in_nelems.get_or(-1);
          c.out_nelems = ev_.out_nelems.get_or(-1);
          c.group_size = ev_.group_size.get_or(-1);
          c.seq = ev_.seq.get_or(-1);
          op.collective = static_cast<int32_t>(out_.collectives.size());
          out_.collectives.push_back(c);
        }
        out_.gpu_ops.push_back(op);
        return;
      }
      if (cat == "cpu_op" || cat == "user_annotation" || cat == "Operator") {
        require_times();
        if (!ev_.bad_dims.empty())
          fail(fmt::format("key \"args.Input Dims\" of {} must hold integers in range (|value| < 2^63), found {}", event_text(),
                           ev_.bad_dims));
        CpuOp op;
        op.start_ns = ev_.ts.v;
        op.dur_ns = ev_.dur.v;
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
          in.dtype = i < ev_.types.size() ? out_.strings.intern(ev_.types[i]) : 0;
          out_.inputs.push_back(in);
        }
        out_.dims.insert(out_.dims.end(), ev_.dims.begin(), ev_.dims.end());
        if (std::any_of(ev_.dims.begin(), ev_.dims.end(), [](int64_t d) { return d < 0; }) && negative_dims_ops_++ == 0) {
          negative_dims_first_ = event_text();
          negative_dims_line_ = src_.line();
        }
        out_.cpu_ops.push_back(op);
        return;
      }
      if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "hip_runtime" || cat == "Runtime") {
        require_times();
        require_int(ev_.correlation, Key::correlation);
        RuntimeCall rc;
        rc.start_ns = ev_.ts.v;
        rc.dur_ns = ev_.dur.v;
        rc.correlation = ev_.correlation.get_or(-1);
        rc.stream_handle = ev_.stream.get_or(-1);  // a handle the runtime wrote; lenient (unused otherwise)
        rc.event_handle = ev_.event.get_or(-1);
        rc.name = out_.strings.intern(ev_.name);
        rc.thread = thread_id();
        out_.runtime_calls.push_back(rc);
        return;
      }
      if (cat == "cuda_sync") {
        require_times();
        for (auto [f, k] : {std::pair<const IntField*, Key>{&ev_.stream, Key::stream}, {&ev_.wait_on_stream, Key::wait_on_stream},
                            {&ev_.wait_record_corr, Key::wait_record_corr}, {&ev_.correlation, Key::correlation}})
          require_int(*f, k);
        SyncEvent s;
        s.start_ns = ev_.ts.v;
        s.dur_ns = ev_.dur.v;
        s.has_stream = ev_.stream.state == IntField::ok;
        s.stream = ev_.stream.get_or(-1);
        s.wait_on_stream = ev_.wait_on_stream.get_or(-1);
        s.wait_record_correlation = ev_.wait_record_corr.get_or(-1);
        s.correlation = ev_.correlation.get_or(-1);
        s.name = out_.strings.intern(ev_.name);
        const std::string& n = ev_.name;
        s.kind = n == "Stream Wait Event" ? SyncEvent::Kind::stream_wait_event
                 : n == "Event Sync"      ? SyncEvent::Kind::event_sync
                 : n == "Stream Sync"     ? SyncEvent::Kind::stream_sync
                 : n == "Context Sync"    ? SyncEvent::Kind::context_sync
                                          : SyncEvent::Kind::other;
        out_.syncs.push_back(s);
        return;
      }
    } else if ((ev_.ph == "s" || ev_.ph == "f") && (cat == "ac2g" || cat == "async_cpu_to_gpu") && ev_.id.set &&
               !ev_.id.is_str && ev_.ts.state == IntField::ok) {
      flows_.push_back({ev_.ts.v, ev_.id.i, thread_id(), ev_.ph == "s"});
      return;
    }
    skip_event();
  }

  /// Fill in correlation ids that are missing on kernels / launches from the flow events
  /// ("s" at the launch's ts on its thread, "f" at the kernel's ts on its thread).
  void resolve_flows() {
    bool missing = std::any_of(out_.gpu_ops.begin(), out_.gpu_ops.end(), [](const GpuOp& g) { return g.correlation < 0; }) ||
                   std::any_of(out_.runtime_calls.begin(), out_.runtime_calls.end(), [](const RuntimeCall& r) { return r.correlation < 0; });
    if (flows_.empty() || !missing) {
      flows_ = {};
      return;
    }
    std::map<std::pair<uint32_t, int64_t>, int64_t> start_at, finish_at;
    for (const auto& f : flows_) (f.start ? start_at : finish_at)[{f.thread, f.ts}] = f.id;
    for (auto& op : out_.gpu_ops) {
      if (op.correlation >= 0) continue;
      auto it = finish_at.find({op.thread, op.start_ns});
      if (it != finish_at.end()) op.correlation = it->second;
    }
    for (auto& rc : out_.runtime_calls) {
      if (rc.correlation >= 0) continue;
      auto it = start_at.find({rc.thread, rc.start_ns});
      if (it != start_at.end()) rc.correlation = it->second;
    }
    flows_.clear();
    flows_.shrink_to_fit();
  }

  /// Make every time relative to the earliest kept timestamp (origin_ns).
  void rebase_times() {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    auto see = [&](int64_t b, int64_t e) { lo = std::min(lo, b); hi = std::max(hi, e); };
    for (const auto& g : out_.gpu_ops) see(g.start_ns, g.end_ns());
    for (const auto& c : out_.cpu_ops) see(c.start_ns, c.end_ns());
    for (const auto& r : out_.runtime_calls) see(r.start_ns, r.end_ns());
    for (const auto& s : out_.syncs) see(s.start_ns, s.end_ns());
    if (lo > hi) return;
    int64_t span = 0;
    if (__builtin_sub_overflow(hi, lo, &span))
      throw TraceError(out_.path, -1, "the events' timestamps span more than 292 years: not a profiler trace");
    out_.origin_ns = lo;
    for (auto& g : out_.gpu_ops) g.start_ns -= lo;
    for (auto& c : out_.cpu_ops) c.start_ns -= lo;
    for (auto& r : out_.runtime_calls) r.start_ns -= lo;
    for (auto& s : out_.syncs) s.start_ns -= lo;
  }

  struct Flow { int64_t ts; int64_t id; uint32_t thread; bool start; };
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
      return std::hash<int64_t>{}(p.first) * 1000003u ^ std::hash<int64_t>{}(p.second);
    }
  };

  TraceFile& out_;
  ChunkSource& src_;
  std::vector<Where> stack_;
  int skip_ = 0;
  int depth_ = 0;
  Key key_ = Key::other;
  EventBuf ev_;
  static constexpr int64_t kMaxTraceEvents = 5'000'000;  ///< events of one file (finish_event)
  int64_t events_read_ = 0;
  int64_t negative_dims_ops_ = 0;  ///< CPU ops with a negative Input Dims entry (warned once)
  std::string negative_dims_first_;
  int64_t negative_dims_line_ = 0;
  std::string skip_key_;
  std::vector<Flow> flows_;
  std::map<std::string, int64_t> foreign_;
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
  if (!ok) throw TraceError(path, static_cast<int64_t>(src.offset()), "JSON parse stopped", src.line());
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
  bool dir = fs::is_directory(path, ec);
  if (dir) {
    // Every status query with an error code: a symbolic-link loop (or an unreadable entry) was a raw
    // std::filesystem error. An entry named like a trace that is not a regular file (a link loop, a
    // FIFO, a folder) is refused, naming it, rather than skipped (a rank would go missing).
    fs::directory_iterator it(path, ec), end;
    if (ec) throw TraceError(path, -1, fmt::format("cannot list the folder: {}", ec.message()));
    for (; it != end; it.increment(ec)) {
      if (ec) throw TraceError(path, -1, fmt::format("cannot list the folder: {}", ec.message()));
      const std::string name = it->path().filename().string();
      if (!is_trace_name(name)) continue;
      std::error_code sec;
      const bool regular = it->is_regular_file(sec);
      if (!regular) {
        const std::string why = sec ? sec.value() == ELOOP ? "a loop of symbolic links" : sec.message()
                                    : "not a regular file (a folder, device, FIFO or socket)";
        throw TraceError(it->path().string(), -1, fmt::format("{}, expected a Kineto / Chrome trace file", why));
      }
      files.push_back(it->path().string());
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
  if (out.size() == 1) {
    if (out[0].rank < 0) out[0].rank = 0;
    return out;
  }
  // A directory: one file per rank. distributedInfo.rank when every file has one (all distinct),
  // the position in name order when none has; anything else is an error, never a silent renumbering.
  std::map<int, size_t> by_rank;
  const TraceFile* without = nullptr;
  const TraceFile* with = nullptr;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& t = out[i];
    if (t.rank < 0) {
      if (!without) without = &t;
      continue;
    }
    if (!with) with = &t;
    auto [it, fresh] = by_rank.emplace(t.rank, i);
    if (!fresh)
      throw TraceError(path, -1, fmt::format("two files carry distributedInfo.rank {}: {} and {}; a directory must hold one "
                                             "trace per rank (move the other captures elsewhere)",
                                             t.rank, out[it->second].path, t.path));
  }
  if (with && without)
    throw TraceError(path, -1, fmt::format("{} carries distributedInfo.rank {} but {} carries none: the ranks of this "
                                           "directory cannot be told apart (one capture per rank, all from the same job)",
                                           with->path, with->rank, without->path));
  if (without)
    for (size_t i = 0; i < out.size(); ++i) out[i].rank = static_cast<int>(i);
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceFile& a, const TraceFile& b) { return a.rank < b.rank; });
  return out;
}

void require_gpu_events(const std::vector<TraceFile>& files, const std::string& what) {
  for (const auto& f : files) {
    if (!f.gpu_ops.empty()) continue;
    std::string holds;
    if (!f.foreign_device_events.empty()) {
      int64_t n = 0;
      std::string list;
      for (const auto& [cat, c] : f.foreign_device_events) {
        n += c;
        list += fmt::format("{}{}: {}", list.empty() ? "" : ", ", cat, c);
      }
      holds = fmt::format("it holds {} device event(s) of an accelerator fusesim does not analyse ({})", n, list);
    } else {
      holds = fmt::format("it holds {} CPU operator(s) and {} runtime call(s) only (was it captured with "
                          "ProfilerActivity.CUDA?)", f.cpu_ops.size(), f.runtime_calls.size());
    }
    throw TraceError(f.path, -1, fmt::format("no GPU events to {}: {}; expected events of cat kernel, gpu_memcpy or "
                                             "gpu_memset (CUDA or ROCm)", what, holds));
  }
}

}  // namespace fusesim::trace
