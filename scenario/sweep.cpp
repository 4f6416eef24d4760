// Sweeps: every case run one by one, streamed in case order, split among MPI ranks under mpirun.
#include "scenario/sweep.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <unistd.h>

#include <fmt/format.h>

#include "hw/io.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"

#ifdef FUSESIM_HAVE_MPI
#include <mpi.h>
#endif

namespace fusesim::scenario {

std::vector<int> split_by_cost(const std::vector<double>& cost, int ranks) {
  if (ranks < 1) throw std::invalid_argument(fmt::format("split_by_cost: ranks must be >= 1, got {}", ranks));
  std::vector<double> load(ranks, 0.0);
  std::vector<int> owner(cost.size(), 0);
  for (size_t i = 0; i < cost.size(); ++i) {
    int best = 0;
    for (int r = 1; r < ranks; ++r)
      if (load[r] < load[best]) best = r;
    owner[i] = best;
    load[best] += cost[i] > 0 ? cost[i] : 0.0;
  }
  return owner;
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
  one.cases.push_back(sc.cases.at(index));
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

/// The rows of a previous output to keep: how many complete rows match the scenario's first cases,
/// and the byte length they span (a partial last line is cut). Errors: std::invalid_argument naming
/// the line that is not the row of the case at its position.
std::pair<int64_t, uintmax_t> resumable_rows(const models::Scenario& sc, const std::string& path, const std::string& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {0, 0};
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  size_t pos = 0;
  int64_t rows = 0;
  int line = 0;
  if (format == "csv") {
    const std::string header = sweep_csv_header();
    if (text.size() < header.size()) {
      if (header.compare(0, text.size(), text) == 0) return {0, 0};  // cut inside the header
      throw std::invalid_argument(fmt::format("--resume: {}:1: not a fusesim sweep CSV (its header differs)", path));
    }
    if (text.compare(0, header.size(), header) != 0)
      throw std::invalid_argument(fmt::format("--resume: {}:1: not a fusesim sweep CSV (its header differs)", path));
    pos = header.size();
    line = 1;
  }
  while (true) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a partial last line: cut, run again
    ++line;
    const std::string row = text.substr(pos, nl - pos);
    if (rows >= int64_t(sc.cases.size()))
      throw std::invalid_argument(fmt::format("--resume: {}:{}: more rows than the scenario's {} cases", path, line, sc.cases.size()));
    const std::string& id = sc.cases[rows].id;
    bool ok = false;
    if (format == "csv") {
      const std::string head = models::csv_quoted(id) + ",";
      ok = row.compare(0, head.size(), head) == 0;
    } else {
      try {
        const auto j = nlohmann::json::parse(row);
        ok = j.is_object() && j.contains("id") && j["id"] == id;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok)
      throw std::invalid_argument(fmt::format("--resume: {}:{}: expected the row of case {} ('{}') of {}; is this the output of "
                                              "another scenario or format?",
                                              path, line, rows, id, sc.path));
    ++rows;
    pos = nl + 1;
  }
  return {rows, pos};
}

/// "1m05s" / "12s".
std::string duration_text(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const long t = long(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

#ifdef FUSESIM_HAVE_MPI
constexpr int kTagRow = 1;
/// A row to rank 0: the case index (an error: -(index + 1)) then the text.
void send_row(int64_t index, const std::string& text) {
  std::string buf(sizeof(int64_t) + text.size(), '\0');
  std::memcpy(buf.data(), &index, sizeof(int64_t));
  std::memcpy(buf.data() + sizeof(int64_t), text.data(), text.size());
  MPI_Send(buf.data(), int(buf.size()), MPI_CHAR, 0, kTagRow, MPI_COMM_WORLD);
}
/// The next row sent to rank 0, if one has arrived (*got false: none yet).
std::pair<int64_t, std::string> recv_row(bool* got) {
  MPI_Status st;
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, kTagRow, MPI_COMM_WORLD, &flag, &st);
  *got = flag != 0;
  if (!flag) return {0, ""};
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string buf(n, '\0');
  MPI_Recv(buf.data(), n, MPI_CHAR, st.MPI_SOURCE, kTagRow, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int64_t index = 0;
  std::memcpy(&index, buf.data(), sizeof(int64_t));
  return {index, buf.substr(sizeof(int64_t))};
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
  rep.cases = int64_t(sc.cases.size());
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
  std::string setup_error;
  if (rep.rank == 0) {
    try {
      uintmax_t keep = 0;
      if (opt.resume) std::tie(start, keep) = resumable_rows(sc, opt.out, opt.format);
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
  if (mpi) MPI_Bcast(&start, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
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
  // Who runs what: by expected cost over the cases left.
  std::vector<double> cost;
  for (size_t i = size_t(start); i < sc.cases.size(); ++i) cost.push_back(spec && spec->expected_cost ? spec->expected_cost(sc.cases[i].params) : 1.0);
  const std::vector<int> owner = split_by_cost(cost, rep.ranks);
  std::vector<int64_t> mine;
  for (size_t j = 0; j < owner.size(); ++j)
    if (owner[j] == rep.rank) mine.push_back(start + int64_t(j));

  if (rep.rank != 0) {
#ifdef FUSESIM_HAVE_MPI
    for (int64_t i : mine) {
      try {
        send_row(i, sweep_row(sc, hw, size_t(i), opt.format));
      } catch (const std::exception& e) {
        send_row(-(i + 1), e.what());
        break;
      }
    }
    MPI_Finalize();
#endif
    rep.ran = int64_t(mine.size());
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
      std::fprintf(stderr, "fusesim: error: %s\n", msg.c_str());
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
    bool got = true, any = false;
    while (got || (wait && !any)) {
      auto [i, text] = recv_row(&got);
      if (got) {
        take(i, std::move(text));
        any = true;
      } else if (wait && !any) {
        ::usleep(200);
      }
    }
  };
#endif
  for (int64_t i : mine) {
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
  if (mpi) MPI_Finalize();
#endif
  rep.ran = rep.cases - start;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace fusesim::scenario
