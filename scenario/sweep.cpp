// Sweeps: every case run one by one, streamed in case order, split among MPI ranks under mpirun.
#include "scenario/sweep.hpp"
#include "hw/json_limits.hpp"

#include <algorithm>
#include <limits>
#include <array>
#include <cerrno>
#include <cmath>
#include <optional>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <deque>
#include <map>
#include <sstream>
#include <tuple>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include "hw/io.hpp"
#include "hw/printable.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"

#ifdef FUSESIM_HAVE_MPI
#include <mpi.h>
#endif

namespace fusesim::scenario {

CostSplit::CostSplit(int ranks) {
  if (ranks < 1) throw std::invalid_argument(fmt::format("split_by_cost: ranks must be >= 1, got {}", ranks));
  load_.assign(size_t(ranks), 0.0);
}

int CostSplit::next(double cost) {
  int best = 0;
  for (int r = 1; r < int(load_.size()); ++r)
    if (load_[r] < load_[best]) best = r;
  load_[best] += cost > 0 ? cost : 0.0;
  return best;
}

std::vector<int> split_by_cost(const std::vector<double>& cost, int ranks) {
  CostSplit split(ranks);
  std::vector<int> owner(cost.size(), 0);
  for (size_t i = 0; i < cost.size(); ++i) owner[i] = split.next(cost[i]);
  return owner;
}

CaseCosts::CaseCosts(const models::Scenario& sc) : sc_(sc), spec_(models::find_spec(sc.model)) {}

double CaseCosts::at(uint64_t i) {
  if (!spec_ || !spec_->expected_cost) return 1.0;
  if (!sc_.cases.empty()) return spec_->expected_cost(sc_.cases.at(size_t(i)).params);
  const auto [g, j] = sc_.group_of(i);
  if (g != group_) {
    group_ = g;
    scratch_ = YAML::Clone(g->params);
    for (const auto& sw : g->sweep) scratch_[sw.key] = sw.values[0];
  }
  // Only the swept values are set (no clone): the point's parameters as expected_cost reads them.
  const std::vector<size_t> at = g->coordinates(j);
  for (size_t k = 0; k < at.size(); ++k) scratch_[g->sweep[k].key] = g->sweep[k].values[at[k]];
  return spec_->expected_cost(scratch_);
}

std::string sweep_csv_header() {
  nlohmann::json empty{{"cases", nlohmann::json::array()}};
  return format_csv(empty);
}

std::string sweep_row(const models::Scenario& sc, const hw::Hardware& hw, size_t index, const std::string& format) {
  models::Scenario one;  // the scenario without its cases, then the one case
  one.path = sc.path;
  one.name = sc.name;
  one.description = sc.description;
  one.hardware_path = sc.hardware_path;
  one.model = sc.model;
  one.hardware_line = sc.hardware_line;
  one.sections = sc.sections;
  one.section_lines = sc.section_lines;
  one.cases.push_back(sc.case_at(index));
  nlohmann::json res = run(one, hw);
  if (format == "csv") {
    res["summary"] = nlohmann::json::object();
    const std::string text = format_csv(res);
    return text.substr(text.find('\n') + 1);
  }
  return res["cases"][0].dump() + "\n";
}

bool launched_under_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

namespace {

/// The fields of one CSV line (RFC 4180 quoting: a quoted field doubles its quotes).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        out.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

/// A YAML scalar against the JSON value a model echoed for it: the same text, number or flag.
bool same_value(const YAML::Node& given, const nlohmann::json& echoed) {
  if (!given.IsScalar()) return hw::yaml_text(given) == echoed.dump();
  const std::string& t = given.Scalar();
  if (echoed.is_string()) return t == echoed.get<std::string>();
  if (echoed.is_boolean()) {
    bool b = false;
    return YAML::convert<bool>::decode(given, b) && b == echoed.get<bool>();
  }
  if (echoed.is_number()) {
    double v = 0;
    if (!YAML::convert<double>::decode(given, v)) return false;
    const double e = echoed.get<double>();
    return v == e || std::fabs(v - e) <= 1e-12 * std::max(std::fabs(v), std::fabs(e));
  }
  return hw::yaml_text(given) == echoed.dump();
}

/// The first parameter the case sets whose value differs from what a kept row's "params" echo
/// ("" when they agree; a key the model does not echo is not compared): {key, kept, now}.
std::optional<std::array<std::string, 3>> differing_param(const models::Case& c, const nlohmann::json& echoed) {
  if (!echoed.is_object() || !c.params.IsMap()) return std::nullopt;
  for (auto it = c.params.begin(); it != c.params.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    const auto e = echoed.find(k);
    if (e == echoed.end()) continue;
    if (!same_value(it->second, *e)) return std::array<std::string, 3>{k, e->is_string() ? e->get<std::string>() : e->dump(), hw::yaml_text(it->second)};
  }
  return std::nullopt;
}

/// Where a kept row and the row of the same case run now differ: "key (kept X, now Y)", the key a
/// JSON line's top-level key (params.K inside params) or a CSV column; "" when they are the same.
std::string row_difference(const std::string& kept, const std::string& now, const std::string& format) {
  if (kept == now) return "";
  if (format == "csv") {
    const std::vector<std::string> names = csv_fields(sweep_csv_header().substr(0, sweep_csv_header().size() - 1));
    const std::vector<std::string> a = csv_fields(kept), b = csv_fields(now);
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      const std::string x = i < a.size() ? a[i] : "", y = i < b.size() ? b[i] : "";
      if (x != y) return fmt::format("column {} (kept {}, now {})", i < names.size() ? names[i] : std::to_string(i + 1), x, y);
    }
    return "the row's text";
  }
  try {
    hw::check_json_limits(kept, {"", 0, ""});  // a kept row nested thousands deep would overflow the parser's stack
    const auto a = nlohmann::json::parse(kept), b = nlohmann::json::parse(now);
    // The prediction first (what a changed hardware file or model moves), then the keys in order.
    if (a.contains("predicted_us") && b.contains("predicted_us") && a["predicted_us"] != b["predicted_us"])
      return fmt::format("predicted_us (kept {}, now {})", a["predicted_us"].dump(), b["predicted_us"].dump());
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) return fmt::format("{} (kept: none, now {})", k, v.dump());
      if (a[k] == v) continue;
      if (v.is_object() && a[k].is_object())
        for (const auto& [k2, v2] : v.items())
          if (!a[k].contains(k2) || a[k][k2] != v2)
            return fmt::format("{}.{} (kept {}, now {})", k, k2, a[k].contains(k2) ? a[k][k2].dump() : "none", v2.dump());
      return fmt::format("{} (kept {}, now {})", k, a[k].dump(), v.dump());
    }
    for (const auto& [k, v] : a.items())
      if (!b.contains(k)) return fmt::format("{} (kept {}, now: none)", k, v.dump());
  } catch (const std::exception&) {
  }
  return "the row's text";
}

constexpr size_t kMaxRowBytes = size_t(1) << 20;  ///< the longest line --resume reads (bytes)

/// The rows of a previous output to keep: how many complete rows match the scenario's first cases,
/// and the byte length they span (a partial last line is cut). Read line by line (memory does not
/// grow with the file). Each kept row must be the row of the case at its position: its id, and
/// every parameter the case sets that the row's "params" echo; the first and the last kept rows are
/// run again and must come out the same bytes (a hardware file or model changed since is found
/// there). Errors: std::invalid_argument naming the file's line, the case (index and id) and the
/// key that differs; a line longer than kMaxRowBytes, naming the file and line.
std::pair<int64_t, uintmax_t> resumable_rows(const models::Scenario& sc, const hw::Hardware& hw, const std::string& path,
                                             const std::string& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {0, 0};
  uintmax_t pos = 0;
  int64_t rows = 0;
  int64_t line = 0;
  std::string row;
  const uint64_t ncases = sc.case_count();
  if (format == "csv") {
    const std::string header = sweep_csv_header();
    std::string head(header.size(), '\0');
    in.read(head.data(), std::streamsize(header.size()));
    head.resize(size_t(in.gcount()));
    if (header.compare(0, head.size(), head) != 0)
      throw std::invalid_argument(fmt::format("--resume: {}:1: not a fusesim sweep CSV (its header differs)", path));
    if (head.size() < header.size()) return {0, 0};  // cut inside the header
    pos = header.size();
    line = 1;
  }
  std::vector<std::pair<int64_t, std::string>> rerun;  // (case, kept row) of the first and the last kept rows
  int64_t rerun_line[2] = {0, 0};
  // One line into `row` (false: the file ends before its newline, a partial last row: cut, run
  // again). A kept line is bounded (a row is about 1 KiB): a file whose line runs past
  // kMaxRowBytes is not a sweep's output, and is refused before it fills memory.
  std::streambuf* sb = in.rdbuf();
  auto next_line = [&]() -> bool {
    row.clear();
    for (;;) {
      const int ch = sb->sbumpc();
      if (ch == std::char_traits<char>::eof()) return false;
      if (ch == '\n') return true;
      if (row.size() >= kMaxRowBytes)
        throw std::invalid_argument(fmt::format("--resume: {}:{}: a line longer than {} bytes: not a fusesim sweep output (a row is "
                                                "about 1 KiB)",
                                                path, line + 1, kMaxRowBytes));
      row.push_back(char(ch));
    }
  };
  while (next_line()) {
    ++line;
    if (uint64_t(rows) >= ncases)
      throw std::invalid_argument(fmt::format("--resume: {}:{}: more rows than the scenario's {} cases", path, line, ncases));
    const models::Case c = sc.case_at(uint64_t(rows));
    bool ok = false;
    nlohmann::json echoed;
    std::vector<std::string> f;  // the CSV row's fields
    nlohmann::json j;            // the JSON row
    // Bounded before parsing (a fresh-user trial's kept row nested 400000 deep, under 1 MiB, overflowed
    // nlohmann's recursive parser: a segfault); a row fusesim wrote nests 3 deep.
    hw::check_json_limits(row, {path, static_cast<int>(std::min<int64_t>(line, std::numeric_limits<int>::max())), "--resume"});
    if (format == "csv") {
      const std::string head = models::csv_quoted(c.id) + ",";
      ok = row.compare(0, head.size(), head) == 0;
      if (ok) {
        f = csv_fields(row);
        if (f.size() > 4) echoed = nlohmann::json::parse(f[4], nullptr, false);
      }
    } else {
      j = nlohmann::json::parse(row, nullptr, false);
      ok = j.is_object() && j.contains("id") && j["id"] == c.id;
      if (ok && j.contains("params")) echoed = j["params"];
    }
    if (!ok)
      throw std::invalid_argument(fmt::format("--resume: {}:{}: expected the row of case {} ('{}') of {}; is this the output of "
                                              "another scenario or format?",
                                              path, line, rows, c.id, sc.path));
    // What the scenario measured for the case (and its tolerance): a kept row written before a
    // measurement was added or a tolerance changed is refused too (from a fresh-user trial: it had
    // been kept with measured_us null, and a changed tolerance was blamed on the hardware file).
    {
      const std::optional<double> now_meas = c.measured ? c.measured->value_us : std::nullopt;
      std::optional<double> kept_meas, kept_tol;
      bool tol_known = false;
      if (format == "csv") {
        if (f.size() > 2 && !f[2].empty()) kept_meas = std::strtod(f[2].c_str(), nullptr);
        if (f.size() > 6 && !f[f.size() - 2].empty()) kept_tol = std::strtod(f[f.size() - 2].c_str(), nullptr);
        tol_known = f.size() > 6;
      } else {
        if (j.contains("measured_us") && j["measured_us"].is_number()) kept_meas = j["measured_us"].get<double>();
        if (j.contains("tolerance_pct") && j["tolerance_pct"].is_number()) kept_tol = j["tolerance_pct"].get<double>();
        tol_known = j.contains("tolerance_pct");
      }
      auto text = [](const std::optional<double>& v) { return v ? fmt::format("{:g}", *v) : std::string("none"); };
      auto differ = [](const std::optional<double>& a, const std::optional<double>& b) {
        return a.has_value() != b.has_value() || (a && std::abs(*a - *b) > 1e-3 * std::max(1.0, std::abs(*b)));
      };
      std::string what;
      if (differ(kept_meas, now_meas)) what = fmt::format("measured_us {} in the row, {} in the scenario now", text(kept_meas), text(now_meas));
      else if (tol_known && now_meas && kept_tol && differ(kept_tol, c.tolerance_pct))
        what = fmt::format("tolerance_pct {} in the row, {:g} in the scenario now", text(kept_tol), c.tolerance_pct);
      if (!what.empty())
        throw std::invalid_argument(fmt::format("--resume: {}:{}: the kept row of case {} ('{}') has {} (was {} edited since?); nothing was "
                                                "run: remove the rows from line {} on, or the file, to run them again",
                                                path, line, rows, c.id, what, sc.path, line));
    }
    if (const auto d = differing_param(c, echoed))
      throw std::invalid_argument(fmt::format("--resume: {}:{}: the kept row of case {} ('{}') has {} = {}, but the case now sets {}: {} "
                                              "(was {} edited since?); nothing was run: remove the rows from line {} on, or the file, "
                                              "to run them again",
                                              path, line, rows, c.id, (*d)[0], (*d)[1], (*d)[0], (*d)[2], sc.path, line));
    if (rows == 0) {
      rerun.push_back({0, row});
      rerun_line[0] = line;
    } else if (rerun.size() < 2) {
      rerun.push_back({rows, row});
      rerun_line[1] = line;
    } else {
      rerun[1] = {rows, row};
      rerun_line[1] = line;
    }
    ++rows;
    pos += row.size() + 1;
  }
  for (size_t r = 0; r < rerun.size(); ++r) {
    const std::string now = sweep_row(sc, hw, size_t(rerun[r].first), format);
    const std::string diff = row_difference(rerun[r].second, now.substr(0, now.size() - 1), format);
    if (!diff.empty())
      throw std::invalid_argument(fmt::format("--resume: {}:{}: the kept row of case {} ('{}') differs from the case run now at {}: the "
                                              "hardware file ({}) or the model changed since it was written; nothing was run: remove "
                                              "the file to run every case again",
                                              path, rerun_line[r], rerun[r].first, sc.case_at(uint64_t(rerun[r].first)).id, diff,
                                              sc.hardware_path));
  }
  return {rows, pos};
}

/// "1m05s" / "12s".
std::string duration_text(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const long t = long(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

/// An exclusive lock on the sweep's output for the whole sweep (trial 3: two `sweep --resume` on one
/// file at once both kept the same rows and appended the rest, ~1000 rows for 560 cases, exit 0).
/// flock(LOCK_EX | LOCK_NB) on the output itself (opened without truncating; created when absent),
/// taken before the file is read, cut or truncated: a second sweep on the same file fails at once.
/// The output is the lock, so no lock file is left behind; the kernel drops the lock when the
/// process ends, killed or not. A file system without flock (ENOLCK, EOPNOTSUPP) runs unlocked.
class OutputLock {
 public:
  explicit OutputLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) throw std::invalid_argument(fmt::format("--out: cannot open '{}' for writing: {}", path, std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      ::close(fd_);
      fd_ = -1;
      throw std::invalid_argument(fmt::format("--out: another sweep is writing '{}' (it holds the file's lock); wait for it to end or "
                                              "choose another --out",
                                              path));
    }
  }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

#ifdef FUSESIM_HAVE_MPI
constexpr int kTagRow = 1;

/// Wait for a request without spinning a core: MPI_Test then a short sleep. Open MPI's blocking
/// calls (MPI_Send, MPI_Bcast, MPI_Wait, MPI_Finalize's fence) busy-poll, which burns the core that
/// another rank needs when ranks share cores and, measured on the 2-core machine, made a worker's
/// blocking MPI_Send of each row cost about one case of CPU (it spun until rank 0, busy running its
/// own case, drained the shared-memory queue): 2 ranks spent ~2x the CPU of 1 process.
void wait_polling(MPI_Request* req) {
  for (int done = 0;;) {
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    ::usleep(200);
  }
}

/// A worker rank's rows to rank 0, sent in batches (one message: for each row its case index, an
/// error: -(index + 1), its length as int64, then its text) by MPI_Isend: the rank runs on while
/// rank 0 is busy, and never spins waiting for it. A batch goes when it holds kBatchBytes or has
/// waited kBatchSeconds (rank 0 writes in case order, so a batch held long would hold its rows
/// back); at most kInFlight batches are outstanding (then the oldest is waited for, sleeping).
class RowSender {
 public:
  static constexpr size_t kBatchBytes = 64 * 1024;
  static constexpr double kBatchSeconds = 0.05;
  static constexpr size_t kInFlight = 64;

  /// Queue one row (sent now if the batch is full or old).
  void add(int64_t index, const std::string& text) {
    if (batch_.empty()) since_ = std::chrono::steady_clock::now();
    const int64_t n = int64_t(text.size());
    const size_t at = batch_.size();
    batch_.resize(at + 2 * sizeof(int64_t) + text.size());
    std::memcpy(batch_.data() + at, &index, sizeof(int64_t));
    std::memcpy(batch_.data() + at + sizeof(int64_t), &n, sizeof(int64_t));
    std::memcpy(batch_.data() + at + 2 * sizeof(int64_t), text.data(), text.size());
    if (batch_.size() >= kBatchBytes ||
        std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count() >= kBatchSeconds)
      send();
    reap();
  }
  /// Send what is queued and wait (sleeping) until every batch has been received.
  void finish() {
    send();
    for (auto& f : flight_) wait_polling(&f.first);
    flight_.clear();
  }

 private:
  void send() {
    if (batch_.empty()) return;
    while (flight_.size() >= kInFlight) {
      wait_polling(&flight_.front().first);
      flight_.pop_front();
    }
    flight_.emplace_back(MPI_REQUEST_NULL, std::move(batch_));
    batch_ = std::string();
    auto& f = flight_.back();
    MPI_Isend(f.second.data(), int(f.second.size()), MPI_CHAR, 0, kTagRow, MPI_COMM_WORLD, &f.first);
  }
  /// Drop the batches already received (MPI_Test also moves Open MPI's progress on).
  void reap() {
    while (!flight_.empty()) {
      int done = 0;
      MPI_Test(&flight_.front().first, &done, MPI_STATUS_IGNORE);
      if (!done) return;
      flight_.pop_front();
    }
  }
  std::string batch_;
  std::chrono::steady_clock::time_point since_;
  std::deque<std::pair<MPI_Request, std::string>> flight_;  // a request and the buffer it sends (a deque: elements never move while MPI reads them)
};

/// The next batch of rows sent to rank 0, if one has arrived (empty: none yet): (index, text) each.
std::vector<std::pair<int64_t, std::string>> recv_rows() {
  MPI_Status st;
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, kTagRow, MPI_COMM_WORLD, &flag, &st);
  std::vector<std::pair<int64_t, std::string>> rows;
  if (!flag) return rows;
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string buf(size_t(n), '\0');
  MPI_Recv(buf.data(), n, MPI_CHAR, st.MPI_SOURCE, kTagRow, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  for (size_t at = 0; at + 2 * sizeof(int64_t) <= buf.size();) {
    int64_t index = 0, len = 0;
    std::memcpy(&index, buf.data() + at, sizeof(int64_t));
    std::memcpy(&len, buf.data() + at + sizeof(int64_t), sizeof(int64_t));
    at += 2 * sizeof(int64_t);
    if (len < 0 || size_t(len) > buf.size() - at) throw std::runtime_error("sweep: a malformed batch of rows from an MPI rank");
    rows.emplace_back(index, buf.substr(at, size_t(len)));
    at += size_t(len);
  }
  return rows;
}

/// Every rank's end: a barrier waited for by polling, then MPI_Finalize (whose own fence then finds
/// every rank there: a rank that finishes first sleeps rather than spinning in it).
void finalize_polling() {
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  wait_polling(&req);
  MPI_Finalize();
}
#endif

}  // namespace

SweepReport sweep(const models::Scenario& sc, const hw::Hardware& hw, const SweepOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.format != "jsonl" && opt.format != "csv")
    throw std::invalid_argument(fmt::format("--format: expected jsonl or csv, got '{}'", opt.format));
  const models::ModelSpec* spec = models::find_spec(sc.model);
  if (spec && spec->begin_run)
    throw std::invalid_argument(fmt::format("{}: the {} model runs its cases together (e.g. fits across them), so its cases cannot "
                                            "be swept one by one; use fusesim run",
                                            sc.path, sc.model));
  SweepReport rep;
  rep.cases = int64_t(sc.case_count());
  bool mpi = false;
#ifdef FUSESIM_HAVE_MPI
  if (launched_under_mpi()) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(nullptr, nullptr);
    mpi = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rep.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rep.ranks);
  }
#endif
  // Rank 0 checks and opens the output; the others learn where to start (-1: rank 0 failed).
  int64_t start = 0;
  std::ofstream out;
  std::optional<OutputLock> lock;  // held until the sweep returns
  std::string setup_error;
  if (rep.rank == 0) {
    try {
      std::error_code ec0;
      uintmax_t keep = 0;
      // --out must be a file name in a writable folder (a regular file or none yet): a FIFO hung at
      // open(), and /dev/null (accepted before, unlike run --out) cannot be resumed, cut or checked.
      // One rule for every command's outputs: hw::check_output_files.
      hw::check_output_files({{opt.out, "", "--out"}});
      lock.emplace(opt.out);  // before the file is read (--resume), cut or truncated
      if (opt.resume && std::filesystem::exists(opt.out, ec0))
        hw::check_input_file(opt.out, "sweep output to resume (rows of an earlier sweep)", hw::kMaxResumeFileBytes, "--out with --resume");
      if (opt.resume) std::tie(start, keep) = resumable_rows(sc, hw, opt.out, opt.format);
      std::error_code ec;
      if (opt.resume && std::filesystem::exists(opt.out, ec)) {
        std::filesystem::resize_file(opt.out, keep, ec);
        if (ec) throw std::invalid_argument(fmt::format("--resume: cannot cut the partial row of '{}': {}", opt.out, ec.message()));
        out.open(opt.out, std::ios::binary | std::ios::app);
      } else {
        out.open(opt.out, std::ios::binary | std::ios::trunc);
      }
      if (!out) throw std::invalid_argument(fmt::format("--out: cannot open '{}' for writing: {}", opt.out, std::strerror(errno)));
      if (opt.format == "csv" && keep == 0) out << sweep_csv_header();
      out.flush();
    } catch (const std::exception& e) {
      setup_error = e.what();
      start = -1;
    }
  }
#ifdef FUSESIM_HAVE_MPI
  if (mpi) {  // the others sleep-wait while rank 0 checks a file to resume (it may run rows again)
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Ibcast(&start, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &req);
    wait_polling(&req);
  }
#endif
  if (start < 0) {
#ifdef FUSESIM_HAVE_MPI
    if (mpi) {
      if (rep.rank == 0) throw std::invalid_argument(setup_error);
      MPI_Finalize();
      std::exit(1);
    }
#endif
    throw std::invalid_argument(setup_error);
  }
  rep.resumed = start;
  // Who runs what: by expected cost over the cases left, computed case by case on every rank (the
  // same CostSplit from the same costs: no list of cases is kept).
  CostSplit split(rep.ranks);
  CaseCosts costs(sc);
  int64_t scan = start;  // the next case whose owner is not known yet
  // The next case of this rank at or after `scan` (rep.cases: none left).
  auto next_mine = [&]() -> int64_t {
    while (scan < rep.cases) {
      const int64_t i = scan++;
      if (rep.ranks == 1 || split.next(costs.at(uint64_t(i))) == rep.rank) return i;
    }
    return rep.cases;
  };
  if (rep.rank != 0) {
#ifdef FUSESIM_HAVE_MPI
    RowSender sender;
    for (int64_t i = next_mine(); i < rep.cases; i = next_mine()) {
      ++rep.ran;
      try {
        sender.add(i, sweep_row(sc, hw, size_t(i), opt.format));
      } catch (const std::exception& e) {
        sender.add(-(i + 1), e.what());
        break;
      }
    }
    sender.finish();
    finalize_polling();
#endif
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rep;
  }

  // Rank 0: runs its own cases, takes the others' rows as they come, writes in case order.
  std::map<int64_t, std::string> pending;
  int64_t next = start, error_at = -1;
  std::string error_text;
  auto last_progress = std::chrono::steady_clock::now();
  bool progress_shown = false;
  auto progress = [&](bool final) {
    if (!opt.progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (!final && std::chrono::duration<double>(now - last_progress).count() < opt.progress_s) return;
    last_progress = now;
    const double el = std::chrono::duration<double>(now - t0).count();
    const double done = double(next - start), rate = el > 0 ? done / el : 0;
    const double left = rate > 0 ? double(rep.cases - next) / rate : -1;
    std::fprintf(stderr, "\rsweep: %lld/%lld cases, %.1f cases/s, %s left (%d process%s)   ", (long long)next, (long long)rep.cases, rate,
                 duration_text(left).c_str(), rep.ranks, rep.ranks == 1 ? "" : "es");
    if (final) std::fprintf(stderr, "\n");
    std::fflush(stderr);
    progress_shown = true;
  };
  auto take = [&](int64_t index, std::string text) {
    if (index < 0) {
      const int64_t at = -index - 1;
      if (error_at < 0 || at < error_at) {
        error_at = at;
        error_text = std::move(text);
      }
      return;
    }
    pending.emplace(index, std::move(text));
    bool wrote = false;
    for (auto it = pending.find(next); it != pending.end() && (error_at < 0 || next < error_at); it = pending.find(next)) {
      out << it->second;
      pending.erase(it);
      ++next;
      wrote = true;
    }
    if (wrote) out.flush();
  };
  auto fail = [&]() {
    out.flush();
    out.close();
    if (progress_shown) std::fprintf(stderr, "\n");
    const std::string msg = fmt::format("{} (rows of cases before {} are written to {}; --resume continues from there)", error_text,
                                        error_at, opt.out);
#ifdef FUSESIM_HAVE_MPI
    if (mpi && rep.ranks > 1) {
      std::fprintf(stderr, "fusesim: error: %s\n", hw::printable(msg).c_str());  // input text: escaped (issue 22)
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (mpi) MPI_Finalize();
#endif
    throw std::invalid_argument(msg);
  };
#ifdef FUSESIM_HAVE_MPI
  // Waiting for rows polls with short sleeps rather than MPI_Probe, which spins a core that the
  // other ranks may need when ranks share cores (--oversubscribe).
  auto drain = [&](bool wait) {
    bool any = false;
    for (;;) {
      auto rows = recv_rows();
      if (rows.empty()) {
        if (!wait || any) return;
        ::usleep(200);
        continue;
      }
      for (auto& [i, text] : rows) take(i, std::move(text));
      any = true;
    }
  };
#endif
  for (int64_t i = next_mine(); i < rep.cases; i = next_mine()) {
    try {
      take(i, sweep_row(sc, hw, size_t(i), opt.format));
    } catch (const std::exception& e) {
      take(-(i + 1), e.what());
    }
#ifdef FUSESIM_HAVE_MPI
    if (mpi) drain(false);
#endif
    if (error_at >= 0 && next >= error_at) fail();
    progress(false);
  }
#ifdef FUSESIM_HAVE_MPI
  while (mpi && next < rep.cases) {
    if (error_at >= 0 && next >= error_at) fail();
    drain(true);
    progress(false);
  }
#endif
  if (error_at >= 0) fail();
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("--out: writing '{}' failed", opt.out));
  out.close();
  progress(true);
#ifdef FUSESIM_HAVE_MPI
  if (mpi) finalize_polling();
#endif
  rep.ran = rep.cases - start;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace fusesim::scenario
