#include "calibrate/mori_runner.hpp"
#include "hw/io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "calibrate/measurements.hpp"
#include "hw/hardware.hpp"
#include "hw/json_limits.hpp"
#include "hw/printable.hpp"

extern "C" char** environ;

namespace fusesim::calibrate {
namespace fs = std::filesystem;
using hw::FileError;
using nlohmann::json;

namespace {

std::atomic<int> g_signal{0};
extern "C" void on_signal(int sig) { g_signal = sig; }

int line_of(const YAML::Node& n) { return n && n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,+@%") == std::string::npos)
    return s;
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string hms(double s) {
  const long t = long(std::llround(std::max(0.0, s)));
  return t >= 3600 ? fmt::format("{}h{:02}m{:02}s", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}m{:02}s", t / 60, t % 60);
}

/// Output of a short helper command (argv, no shell); empty when it cannot run.
std::string capture(const std::vector<std::string>& args) {
  int fd[2];
  if (pipe(fd) != 0) return "";
  const pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return "";
  }
  if (pid == 0) {
    dup2(fd[1], 1);
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    close(fd[0]);
    close(fd[1]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(fd[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fd[0], buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  return out;
}

template <class T>
std::vector<T> list_of(const YAML::Node& root, const std::string& key, const std::vector<T>& dflt, const std::string& file) {
  const auto n = root[key];
  if (!n) return dflt;
  if (!n.IsSequence() || n.size() == 0) throw FileError(file, line_of(n), key, "expected a non-empty list, e.g. [a, b]");
  std::vector<T> out;
  for (const auto& v : n) {
    try {
      out.push_back(v.as<T>());
    } catch (const YAML::Exception&) {
      throw FileError(file, line_of(v), key, fmt::format("'{}' has the wrong type", v.IsScalar() ? v.Scalar() : "?"));
    }
  }
  return out;
}

/// The command line of a run without a shell: the launcher, then every argument as its own word.
void finish_run(MoriRun& r) {
  std::string cmd;
  for (const auto& [k, v] : r.env) cmd += k + "=" + shell_quote(v) + " ";
  for (size_t i = 0; i < r.argv.size(); ++i) cmd += (i ? " " : "") + shell_quote(r.argv[i]);
  r.command = cmd;
  r.key = r.params.dump();  // json object keys are sorted: stable
}

/// A run of the benchmark `script` under the launcher, opt.nproc ranks on this node, with mori's SDMA
/// on and its bootstrap socket on the loopback; the benchmark's own flags are appended by the caller.
MoriRun launched(const MoriOptions& opt, const json& p, const char* script) {
  MoriRun r;
  r.params = p;
  r.argv = resolve_launcher(opt);
  r.argv.push_back("--standalone");
  r.argv.push_back(fmt::format("--nproc_per_node={}", opt.nproc));
  r.argv.push_back(script);
  r.env["MORI_ENABLE_SDMA"] = "1";
  r.env["MORI_SOCKET_IFNAME"] = "lo";
  return r;
}

MoriRun make_run(const MoriOptions& opt, const json& p, const std::vector<std::string>& extra_args) {
  MoriRun r = launched(opt, p, kBenchGemmArPath);
  auto add = [&](const std::string& flag, const std::string& v) {
    r.argv.push_back(flag);
    r.argv.push_back(v);
  };
  add("--mode", p["mode"].get<std::string>());
  add("--quant", p["quant"].get<std::string>());
  add("-m", std::to_string(p["m"].get<long>()));
  add("-n", std::to_string(p["n"].get<long>()));
  add("-k", std::to_string(p["k"].get<long>()));
  if (p.contains("gather_dtype")) add("--gather-dtype", p["gather_dtype"].get<std::string>());
  if (p.contains("gather_transport")) add("--gather-transport", p["gather_transport"].get<std::string>());
  if (p.contains("chunks")) add("--chunks", std::to_string(p["chunks"].get<int>()));
  // Always explicit: the benchmark defaulted fuse_quantize on until 96bd9522 (seed 000).
  if (p.contains("fuse_quantize")) r.argv.push_back(p["fuse_quantize"].get<bool>() ? "--fuse-quantize" : "--no-fuse-quantize");
  if (p.value("fuse_reduce_push", false)) {
    r.argv.push_back("--fuse-reduce-push");
    if (p.contains("gather_bands")) add("--gather-bands", std::to_string(p["gather_bands"].get<int>()));
    if (p.contains("publish")) add("--publish", p["publish"].get<std::string>());
  }
  if (p.contains("sdma_queues")) add("--sdma-queues", std::to_string(p["sdma_queues"].get<int>()));
  for (const auto& a : extra_args) r.argv.push_back(a);
  if (p.contains("pull_blocks")) r.env["MORI_GEMM_AR_PULL_BLOCKS"] = std::to_string(p["pull_blocks"].get<int>());
  finish_run(r);
  return r;
}

/// One bench_ar.py run (the standalone all-reduce): --backend B -m M -n N [--dtype D].
MoriRun make_ar_run(const MoriOptions& opt, const json& p, const std::vector<std::string>& extra_args) {
  MoriRun r = launched(opt, p, kBenchArPath);
  for (const auto& [flag, v] : std::vector<std::pair<std::string, std::string>>{
           {"--backend", p["backend"].get<std::string>()}, {"-m", std::to_string(p["m"].get<long>())}, {"-n", std::to_string(p["n"].get<long>())}}) {
    r.argv.push_back(flag);
    r.argv.push_back(v);
  }
  if (p.value("dtype", "bf16") != "bf16") {
    r.argv.push_back("--dtype");
    r.argv.push_back(p["dtype"].get<std::string>());
  }
  for (const auto& a : extra_args) r.argv.push_back(a);
  finish_run(r);
  return r;
}

/// Whether `path` names an executable file.
bool executable(const fs::path& path) { return !path.empty() && fs::is_regular_file(path) && access(path.c_str(), X_OK) == 0; }

}  // namespace

std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return executable(name) ? name : std::string();
  const char* path = std::getenv("PATH");
  std::istringstream ss(path ? path : "");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    const fs::path c = fs::path(dir) / name;
    if (executable(c)) return c.string();
  }
  return "";
}

std::vector<std::string> resolve_launcher(const MoriOptions& opt) {
  std::vector<std::string> argv;
  if (opt.launcher.empty() || opt.launcher == "python") {
    const std::string py = opt.python.empty() ? "python3" : opt.python;
    const std::string found = find_on_path(py);
    if (found.empty())
      throw std::runtime_error(fmt::format("--launcher python: the interpreter '{}' is not {} (pass --python /path/to/env/bin/python, "
                                           "the one that has torch and mori)", py, py.find('/') == std::string::npos ? "on PATH" : "an executable"));
    argv = {found, "-m", "torch.distributed.run"};
  } else if (opt.launcher == "torchrun") {
    const std::string found = find_on_path("torchrun");
    if (found.empty())
      throw std::runtime_error("--launcher torchrun: torchrun is not on PATH (its console script is there only inside an activated "
                               "environment); use --launcher python (python3 -m torch.distributed.run, --python to choose the interpreter)");
    argv = {found};
  } else {
    if (!executable(opt.launcher))
      throw std::runtime_error(fmt::format("--launcher '{}': expected python, torchrun or the path of an executable (no shell "
                                           "command line: its arguments go in --launcher-arg)", opt.launcher));
    argv = {opt.launcher};
  }
  for (const auto& a : opt.launcher_args) argv.push_back(a);
  return argv;
}

int lowered_chunks(int chunks, int64_t bands) {
  while (chunks > 1 && bands % chunks) chunks /= 2;
  return chunks;
}

namespace {
std::vector<MoriRun> expand_ar_sweep(const YAML::Node& root, const std::string& file, const MoriOptions& opt) {
  static const std::set<std::string> known{"kind", "table", "backends", "m", "n", "dtype", "extra_args", "description"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!known.count(k))
      throw FileError(file, line_of(it->first), k, "unknown key of an allreduce sweep (expected kind, table, backends, m, n, dtype, "
                                                   "extra_args, description)");
  }
  const auto backends = list_of<std::string>(root, "backends", {"lsa", "sdma"}, file);
  const auto ms = list_of<long>(root, "m", {64, 1024, 16384}, file);
  const auto ns = list_of<long>(root, "n", {7168}, file);
  const auto dts = list_of<std::string>(root, "dtype", {"bf16"}, file);
  const auto extra = list_of<std::string>(root, "extra_args", {}, file);
  for (const auto& b : backends)
    if (b != "lsa" && b != "sdma")
      throw FileError(file, line_of(root["backends"]), "backends", fmt::format("'{}' is not one of: lsa, sdma (bench_ar.py's backends)", b));
  for (const auto& d : dts)
    if (d != "bf16") throw FileError(file, line_of(root["dtype"]), "dtype", fmt::format("'{}': bench_ar.py prints dtype bf16 only", d));
  for (long m : ms)
    if (m < 1) throw FileError(file, line_of(root["m"]), "m", "M must be >= 1");
  const std::string table = root["table"] ? root["table"].as<std::string>() : fs::path(file).stem().string();
  std::vector<MoriRun> runs;
  for (const auto& b : backends)
    for (long m : ms)
      for (long n : ns)
        for (const auto& d : dts) {
          json p{{"backend", b}, {"m", m}, {"n", n}, {"world_size", opt.nproc}, {"dtype", d}};
          auto run = make_ar_run(opt, p, extra);
          run.params["table"] = table;
          runs.push_back(std::move(run));
        }
  return runs;
}
}  // namespace

std::vector<MoriRun> expand_sweep(const YAML::Node& root, const std::string& file, const MoriOptions& opt, std::vector<std::string>* notes) {
  if (!root || !root.IsMap()) throw FileError(file, 1, "", "expected a mapping of sweep lists (modes, m, quant, wires, ...)");
  const std::string kind = root["kind"] ? root["kind"].as<std::string>() : "gemm_ar";
  if (kind == "allreduce") return expand_ar_sweep(root, file, opt);
  if (kind != "gemm_ar") throw FileError(file, line_of(root["kind"]), "kind", fmt::format("'{}' is not one of: gemm_ar, allreduce", kind));
  static const std::set<std::string> known{"kind", "table", "modes", "m", "n", "k", "quant", "wires", "chunks", "pull_blocks",
                                           "fuse_quantize", "fuse_reduce_push", "gather_bands", "publish", "sdma_queues",
                                           "extra_args", "description"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (!known.count(k))
      throw FileError(file, line_of(it->first), k,
                      "unknown sweep key (expected kind, table, modes, m, n, k, quant, wires, chunks, pull_blocks, fuse_quantize, "
                      "fuse_reduce_push, gather_bands, publish, sdma_queues, extra_args, description)");
  }
  static const std::set<std::string> modes_ok{"gemm-only", "split-sdma", "fused-sdma", "split-lsa", "fused-lsa"},
      quant_ok{"blockscale", "ptpc", "mxfp8"}, wires_ok{"bf16", "fp8-lsa", "fp8-sdma"}, publish_ok{"writethrough", "fence"};
  const auto modes = list_of<std::string>(root, "modes", {"fused-sdma"}, file);
  const auto ms = list_of<long>(root, "m", {16384}, file);
  const auto ns = list_of<long>(root, "n", {7168}, file);
  const auto ks = list_of<long>(root, "k", {2048}, file);
  const auto quants = list_of<std::string>(root, "quant", {"blockscale"}, file);
  const auto wires = list_of<std::string>(root, "wires", {"bf16"}, file);
  const auto chunks = list_of<int>(root, "chunks", {kBenchChunks}, file);
  const auto pulls = list_of<int>(root, "pull_blocks", {-1}, file);
  const auto fqs = list_of<bool>(root, "fuse_quantize", {false}, file);
  const auto frps = list_of<bool>(root, "fuse_reduce_push", {false}, file);
  const auto bands = list_of<int>(root, "gather_bands", {kBenchGatherBands}, file);
  const auto pubs = list_of<std::string>(root, "publish", {"writethrough"}, file);
  const auto queues = list_of<int>(root, "sdma_queues", {-1}, file);
  const auto extra = list_of<std::string>(root, "extra_args", {}, file);
  auto check = [&](const std::vector<std::string>& v, const std::set<std::string>& ok, const std::string& key) {
    for (const auto& x : v)
      if (!ok.count(x)) {
        std::string list;
        for (const auto& o : ok) list += (list.empty() ? "" : ", ") + o;
        throw FileError(file, line_of(root[key]), key, fmt::format("'{}' is not one of: {}", x, list));
      }
  };
  check(modes, modes_ok, "modes");
  check(quants, quant_ok, "quant");
  check(wires, wires_ok, "wires");
  check(pubs, publish_ok, "publish");
  for (long m : ms)
    if (m < 1) throw FileError(file, line_of(root["m"]), "m", "M must be >= 1");
  for (long k : ks)
    if (k < 256 || k % 128) throw FileError(file, line_of(root["k"]), "k", "K must be >= 256 and a multiple of 128");
  for (int c : chunks)
    if (c < 1) throw FileError(file, line_of(root["chunks"]), "chunks", "chunks must be >= 1");
  for (int b : bands)
    if (b < 1) throw FileError(file, line_of(root["gather_bands"]), "gather_bands", "gather_bands must be >= 1");
  const std::string table = root["table"] ? root["table"].as<std::string>() : fs::path(file).stem().string();
  std::vector<MoriRun> runs;
  std::set<std::string> seen, said;
  auto note = [&](const std::string& n) {
    if (notes && said.insert(n).second) notes->push_back(n);
  };
  for (const auto& mode : modes)
    for (long m : ms)
      for (long n : ns)
        for (long k : ks)
          for (const auto& q : quants)
            for (const auto& w : wires)
              for (int c : chunks)
                for (int pb : pulls)
                  for (bool fq : fqs)
                    for (bool frp : frps)
                      for (int b : bands)
                        for (const auto& pub : pubs)
                          for (int sq : queues) {
                            const bool fp8 = w != "bf16";
                            // bench_gemm_ar.py @ad271d19 refuses only split-lsa with the fp8 wire; gemm-only has no wire.
                            if (fp8 && mode == "split-lsa") {
                              note(fmt::format("wire {} with split-lsa: not run (bench_gemm_ar.py refuses --gather-dtype fp8 with split-lsa)", w));
                              continue;
                            }
                            json p{{"mode", mode}, {"m", m}, {"n", n}, {"k", k}, {"quant", q}, {"world_size", opt.nproc}};
                            if (mode != "gemm-only") {
                              p["gather_dtype"] = fp8 ? "fp8" : "bf16";
                              if (fp8) p["gather_transport"] = w == "fp8-lsa" ? "lsa" : "sdma";
                              const bool sdma_scatter = mode == "split-sdma" || mode == "fused-sdma";
                              if (sdma_scatter) {
                                // The benchmark halves chunks until they divide the row bands per destination.
                                const int64_t bm = q == "blockscale" ? 128 : 256, unit = int64_t(opt.nproc) * bm;
                                const int64_t rb = (m + unit - 1) / unit * unit / opt.nproc / bm;
                                const int eff = lowered_chunks(c, rb);
                                p["chunks"] = eff;
                                if (eff != c)
                                  note(fmt::format("chunks {} runs as {} at M={} ({} row bands per destination; the benchmark halves "
                                                   "chunks until they divide them): run once, with --chunks {}", c, eff, m, rb, eff));
                              }
                              if (pb > 0 && w == "fp8-lsa") p["pull_blocks"] = pb;
                              p["fuse_quantize"] = fp8 && fq;
                              const bool push = frp && mode == "fused-sdma" && !fp8;
                              if (push) {
                                p["fuse_reduce_push"] = true;
                                p["gather_bands"] = b;
                                p["publish"] = pub;
                              }
                              if (sq > 0 && sdma_scatter) p["sdma_queues"] = sq;
                            }
                            auto run = make_run(opt, p, extra);
                            run.params["table"] = table;
                            if (seen.insert(run.key).second) runs.push_back(std::move(run));
                          }
  return runs;
}

MoriRun sdma_check_run(const MoriOptions& opt, const std::string& kind) {
  if (kind == "allreduce") {
    json p{{"backend", "sdma"}, {"m", 2048}, {"n", 7168}, {"world_size", opt.nproc}, {"dtype", "bf16"}};
    auto r = make_ar_run(opt, p, {});
    r.params["table"] = "sdma-check";
    return r;
  }
  json p{{"mode", "fused-sdma"}, {"m", 2048}, {"n", 7168}, {"k", 2048}, {"quant", "blockscale"}, {"world_size", opt.nproc},
         {"gather_dtype", "bf16"}, {"chunks", kBenchChunks}, {"fuse_quantize", false}};
  auto r = make_run(opt, p, {});
  r.params["table"] = "sdma-check";
  return r;
}

RunOutcome run_command(const MoriRun& run, const std::string& cwd, double timeout_s, std::ostream* log) {
  RunOutcome out;
  int fd[2];
  if (pipe(fd) != 0) throw std::runtime_error(fmt::format("pipe failed: {}", std::strerror(errno)));
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[0]);
    close(fd[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      std::fprintf(stderr, "cannot enter %s: %s\n", cwd.c_str(), std::strerror(errno));
      _exit(126);
    }
    for (const auto& [k, v] : run.env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : run.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot execute %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with the first kill
  close(fd[1]);
  fcntl(fd[0], F_SETFL, fcntl(fd[0], F_GETFL) | O_NONBLOCK);
  std::string buf;
  std::deque<std::string> tail;
  std::set<std::string> seen;
  int line_no = 0;
  const std::string output_name = "output of run " + run.key;
  auto on_line = [&](const std::string& l) {
    ++line_no;
    if (log) *log << l << "\n";
    tail.push_back(l);
    if (tail.size() > 20) tail.pop_front();
    const auto at = l.find("RESULT_JSON");
    if (at == std::string::npos) return;
    const auto brace = l.find('{', at);
    if (brace == std::string::npos) return;
    try {
      // Bare NaN literals as the benchmark prints them; nesting and size bounded (hw/json_limits.hpp).
      json j = parse_benchmark_json(l.substr(brace), output_name, line_no);
      if (j.is_object() && seen.insert(j.dump()).second) out.results.push_back(std::move(j));
    } catch (const hw::FileError& e) {
      tail.push_back(fmt::format("(unreadable RESULT_JSON line above: {})", e.what()));
    }
  };
  bool eof = false, killed = false;
  double kill_at = -1;
  int status = 0;
  bool reaped = false;
  while (!(eof && reaped)) {
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!killed && (el > timeout_s || g_signal)) {
      out.timed_out = !g_signal;
      kill(-pid, SIGTERM);
      killed = true;
      kill_at = el + 3;
    } else if (killed && kill_at > 0 && el > kill_at) {
      kill(-pid, SIGKILL);
      kill_at = -1;
    }
    if (!eof) {
      pollfd p{fd[0], POLLIN, 0};
      poll(&p, 1, 100);
      char chunk[4096];
      for (;;) {
        const ssize_t n = read(fd[0], chunk, sizeof chunk);
        if (n > 0) {
          buf.append(chunk, size_t(n));
          size_t nl;
          while ((nl = buf.find('\n')) != std::string::npos) {
            on_line(buf.substr(0, nl));
            buf.erase(0, nl + 1);
          }
          continue;
        }
        if (n == 0) eof = true;
        break;
      }
      // A grandchild holding the pipe after the launcher exited: stop reading once killed and reaped.
      if (reaped && killed) eof = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!reaped) {
      const pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        reaped = true;  // the launcher is gone; keep reading until its group closes the pipe (or the timeout)
      }
    }
    if (reaped && !eof) {
      const double el2 = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (el2 > timeout_s && !killed) {
        out.timed_out = true;
        kill(-pid, SIGKILL);
        killed = true;
      }
    }
  }
  if (!buf.empty()) on_line(buf);
  close(fd[0]);
  kill(-pid, SIGKILL);  // leftover ranks of the group, if any (ESRCH otherwise)
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  out.tail.assign(tail.begin(), tail.end());
  if (out.exit_code == 127 && out.results.empty())
    throw std::runtime_error(fmt::format("cannot execute '{}' (exit 127): {}", run.argv.at(0), out.tail.empty() ? "" : out.tail.back()));
  if (g_signal) out.failure = "interrupted";
  else if (out.timed_out) out.failure = fmt::format("timeout after {:.0f} s (process group killed)", timeout_s);
  else if (out.exit_code != 0) out.failure = fmt::format("crash: exit code {}{}", out.exit_code, out.results.empty() ? ", no RESULT_JSON" : "");
  else if (out.results.empty()) out.failure = "no RESULT_JSON line in the output";
  else {
    for (const auto& r : out.results) {
      // The parser's own judgement (validated false, moved nothing, a NaN rel_l2 where the run validates).
      try {
        // The run's argv says whether it skipped validation (--skip-validation): a NaN rel_l2 is then expected.
        json with_argv = r;
        if (!with_argv.contains("argv")) with_argv["argv"] = run.argv;
        const std::string why = run_validation_problem(with_argv);
        if (!why.empty())
          out.failure = fmt::format("{} (rel_l2 {}): {}", why.find("rel_l2") != std::string::npos || why.find("validated") != std::string::npos
                                                              ? "not validated" : "unusable result",
                                    r.contains("rel_l2") ? r["rel_l2"].dump() : "?", why);
      } catch (const hw::FileError& e) {
        out.failure = fmt::format("unreadable RESULT_JSON: {}", e.what());
      }
      if (!out.failure.empty()) break;
    }
  }
  return out;
}

json host_info() {
  json h;
  char name[256] = {0};
  gethostname(name, sizeof name - 1);
  h["hostname"] = name;
  std::string rocm = capture({"hipconfig", "--version"});
  if (rocm.empty()) {
    std::ifstream f("/opt/rocm/.info/version");
    std::getline(f, rocm);
  }
  h["rocm"] = rocm.empty() ? json() : json(rocm);
  utsname u{};
  if (uname(&u) == 0) h["kernel"] = std::string(u.release);
  return h;
}

namespace {

/// Append one line to the output and make it durable (flush + fsync).
void append_line(const std::string& path, const json& j) {
  const std::string text = j.dump() + "\n";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot open '{}' for appending: {}", path, std::strerror(errno)));
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      throw std::runtime_error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    }
    off += size_t(n);
  }
  fsync(fd);
  close(fd);
}

/// Keys of runs with a usable record in an existing output; repairs a torn last line (an
/// interrupted write) by ending the file with a newline so appended records stay one per line.
std::set<std::string> done_runs(const std::string& path, std::ostream& msg) {
  std::set<std::string> done;
  std::error_code ec;
  if (!fs::exists(path, ec)) return done;
  // Bounded (hw/io.hpp): the records file is also a calibrate fit --measurements file; a FIFO or
  // device in its place is refused before it is opened.
  hw::check_input_file(path, "records file of an earlier calibrate mori run (JSON lines)", hw::kMaxMeasurementFileBytes, "--out");
  std::ifstream in(path);
  if (!in) return done;
  std::string line;
  int n = 0;
  bool last_newline = true;
  {
    std::ifstream b(path, std::ios::binary);
    b.seekg(0, std::ios::end);
    if (b.tellg() > 0) {
      b.seekg(-1, std::ios::end);
      char c = 0;
      b.get(c);
      last_newline = c == '\n';
    }
  }
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    json j;
    try {
      j = hw::parse_json_bounded(line, {path, n, ""});  // nesting and size bounded (hw/json_limits.hpp)
    } catch (const hw::FileError& e) {
      msg << fmt::format("resume: ignoring a torn or malformed line: {}\n", hw::printable(e.what()));
      continue;
    }
    if (!j.is_object() || !j.contains("run_key") || !j["run_key"].is_string()) continue;
    if (j.contains("failure") && !j["failure"].is_null()) continue;  // failed runs are retried
    done.insert(j["run_key"].get<std::string>());
  }
  if (!last_newline) {
    // Cut the torn record off (back to the last complete line) so the file stays valid JSON lines.
    std::ifstream b(path, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    const auto nl = all.rfind('\n');
    const auto keep = nl == std::string::npos ? 0 : nl + 1;
    if (truncate(path.c_str(), off_t(keep)) != 0)
      throw std::runtime_error(fmt::format("resume: cannot repair the torn last line of '{}': {}", path, std::strerror(errno)));
    msg << fmt::format("resume: {}: removed the last line, cut off by the interruption ({} bytes)\n", path, all.size() - keep);
  }
  return done;
}

std::string git_commit() {
  const std::string s = capture({"git", "rev-parse", "--short=12", "HEAD"});
  return s.empty() ? "unknown" : s;
}

}  // namespace

int run_mori_sweep(const MoriOptions& opt) {
  std::ostream& msg = opt.progress ? *opt.progress : std::cerr;
  if (opt.mori_dir.empty() || !fs::is_directory(opt.mori_dir))
    throw std::runtime_error(fmt::format("--mori-dir '{}' is not a directory (a mori checkout built with BUILD_CCO_SDMA=ON)", opt.mori_dir));
  YAML::Node sweep;
  try {
    sweep = hw::load_yaml_map(opt.sweep_path, "sweep file");  // bounded (hw/io.hpp): no FIFO, device or huge file
  } catch (const YAML::BadFile&) {
    throw FileError(opt.sweep_path, 0, "", "cannot open sweep file");
  } catch (const YAML::Exception& e) {
    throw FileError(opt.sweep_path, e.mark.line + 1, "", "YAML syntax error: " + e.msg);
  }
  const std::string kind = sweep.IsMap() && sweep["kind"] ? sweep["kind"].as<std::string>() : "gemm_ar";
  const char* script = kind == "allreduce" ? kBenchArPath : kBenchGemmArPath;
  if (!fs::exists(fs::path(opt.mori_dir) / script))
    throw std::runtime_error(fmt::format("'{}' has no {}: is it a mori checkout?", opt.mori_dir, script));
  std::vector<std::string> notes;
  const auto runs = expand_sweep(sweep, opt.sweep_path, opt, &notes);
  for (const auto& n : notes) msg << "note: " << hw::printable(n) << "\n";
  const std::string commit = opt.commit.empty() ? git_commit() : opt.commit;
  const json host = host_info();
  std::set<std::string> done;
  if (opt.resume) done = done_runs(opt.out, msg);
  else if (fs::exists(opt.out) && fs::file_size(opt.out) > 0)
    msg << fmt::format("note: appending to the existing {} (pass --resume to skip runs already in it)\n", opt.out);
  std::ofstream log(opt.out + ".log", std::ios::app);
  g_signal = 0;
  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  struct Restore {
    struct sigaction a, b;
    ~Restore() {
      sigaction(SIGINT, &a, nullptr);
      sigaction(SIGTERM, &b, nullptr);
    }
  } restore{old_int, old_term};

  auto record = [&](const MoriRun& run, const RunOutcome& o) {
    auto base = [&](json j) {
      j["run_key"] = run.key;
      j["table"] = run.params.value("table", "");
      j["command"] = run.command;
      j["argv"] = run.argv;
      j["env"] = run.env;
      j["host"] = host;
      j["date"] = utc_now();
      j["fusesim_commit"] = commit;
      j["sweep"] = opt.sweep_path;
      j["wall_s"] = std::round(o.seconds * 100) / 100;
      if (!opt.layout.empty() && opt.layout != "auto") j["layout"] = opt.layout;  // read by the parser as the stated layout
      return j;
    };
    if (o.failure.empty()) {
      for (const auto& r : o.results) {
        json j = r;
        if (!j.contains("pull_blocks") && run.params.contains("pull_blocks")) j["pull_blocks"] = run.params["pull_blocks"];
        append_line(opt.out, base(j));
      }
    } else {
      json j = run.params;
      j.erase("table");
      if (!o.results.empty())
        for (auto it = o.results.front().begin(); it != o.results.front().end(); ++it) j[it.key()] = it.value();
      j["failure"] = o.failure;
      j["exit_code"] = o.exit_code;
      j["output_tail"] = o.tail;
      append_line(opt.out, base(j));
    }
  };

  // 1. The SDMA check.
  const auto chk = sdma_check_run(opt, kind);
  msg << fmt::format("SDMA check: {}\n", hw::printable(chk.command));
  if (log) log << "### " << utc_now() << " SDMA check: " << chk.command << "\n";
  const auto co = run_command(chk, opt.mori_dir, opt.timeout_s, log ? &log : nullptr);
  if (g_signal) return 130;
  if (!co.failure.empty()) {
    msg << fmt::format(
        "REFUSED: the SDMA check failed: {}.\n"
        "  A mori built without BUILD_CCO_SDMA=ON has no SDMA queues: every put silently moves nothing, the\n"
        "  all-reduce returns mostly the local slice and the fused path measures faster than it is.\n"
        "  Rebuild with `BUILD_CCO_SDMA=ON pip install .` in {} and run the sweep again.\n",
        co.failure, opt.mori_dir);
    for (const auto& l : co.tail) msg << "  | " << hw::printable(l) << "\n";
    return 3;
  }
  msg << fmt::format("SDMA check passed: {:.1f} us, rel_l2 {} ({:.1f} s)\n", co.results.front().value("max_rank_time_us", 0.0),
                     co.results.front().contains("rel_l2") ? co.results.front()["rel_l2"].dump() : "?", co.seconds);
  record(chk, co);

  // 2. The sweep.
  std::vector<const MoriRun*> todo;
  for (const auto& r : runs)
    if (!done.count(r.key)) todo.push_back(&r);
  if (opt.resume) msg << fmt::format("resume: {} of {} runs already in {}; {} to go\n", runs.size() - todo.size(), runs.size(), opt.out, todo.size());
  const auto t0 = std::chrono::steady_clock::now();
  int failed = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (opt.pause_s > 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(opt.pause_s);
      while (std::chrono::steady_clock::now() < until && !g_signal) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (g_signal) break;
    const auto& run = *todo[i];
    msg << fmt::format("[run {} of {}] {}\n", i + 1, todo.size(), hw::printable(run.command));
    if (log) log << "### " << utc_now() << " " << run.command << "\n";
    const auto o = run_command(run, opt.mori_dir, opt.timeout_s, log ? &log : nullptr);
    if (g_signal) break;
    record(run, o);
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double left = el / double(i + 1) * double(todo.size() - i - 1);
    if (o.failure.empty())
      msg << fmt::format("[run {} of {}] {:.1f} us (validated), elapsed {}, about {} left\n", i + 1, todo.size(),
                         o.results.front().value("max_rank_time_us", 0.0), hms(el), hms(left));
    else {
      ++failed;
      msg << fmt::format("[run {} of {}] FAILED: {}, elapsed {}, about {} left\n", i + 1, todo.size(), hw::printable(o.failure), hms(el), hms(left));
    }
  }
  if (g_signal) {
    msg << fmt::format("interrupted: {} keeps what was measured; run again with --resume\n", opt.out);
    return 130;
  }
  msg << fmt::format("done: {} runs, {} failed (recorded with their reason, never fitted); output {}\n", todo.size(), failed, opt.out);
  return failed ? 1 : 0;
}

}  // namespace fusesim::calibrate

namespace fusesim::calibrate {

namespace {
/// A JSON scalar as flow YAML text (strings double-quoted).
std::string yaml_value(const json& v) {
  if (v.is_string()) {
    YAML::Emitter e;
    e << YAML::DoubleQuoted << v.get<std::string>();
    return e.c_str();
  }
  return v.dump();
}

/// The run's case id: the mode (or backend), then every other knob as key=value in sorted order,
/// world_size and table left out ("fused-sdma/chunks=8/.../m=16384/...").
std::string case_id(const json& p) {
  std::string id = p.contains("mode") ? p["mode"].get<std::string>() : p.value("backend", std::string("run"));
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (it.key() == "mode" || it.key() == "backend" || it.key() == "table" || it.key() == "world_size" || it.key() == "op") continue;
    id += "/" + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return id;
}
}  // namespace

int write_plan_scenario(const PlanOptions& po, const MoriOptions& opt) {
  YAML::Node sweep;
  try {
    sweep = hw::load_yaml_map(opt.sweep_path, "sweep file");  // bounded (hw/io.hpp): no FIFO, device or huge file
  } catch (const YAML::BadFile&) {
    throw FileError(opt.sweep_path, 0, "", "cannot open sweep file");
  } catch (const YAML::Exception& e) {
    throw FileError(opt.sweep_path, e.mark.line + 1, "", "YAML syntax error: " + e.msg);
  }
  if (po.hardware.empty()) throw std::runtime_error("--plan-scenario needs --hw (the hardware file the predictions use)");
  const std::string kind = sweep.IsMap() && sweep["kind"] ? sweep["kind"].as<std::string>() : "gemm_ar";
  const auto runs = expand_sweep(sweep, opt.sweep_path, opt);
  // Measured values: accepted records of the measurement file whose run_key is the run's.
  std::map<std::string, const Record*> by_key;
  std::map<std::string, std::string> refused;
  ParseResult measured;
  if (!po.measured.empty()) {
    measured = parse_measurement_file(po.measured, 0.5, opt.layout);
    for (const auto& r : measured.records) {
      if (!r.extra.contains("run_key") || !r.extra["run_key"].is_string()) continue;
      const std::string k = r.extra["run_key"].get<std::string>();
      if (r.rejected) refused[k] = r.reason;
      else by_key[k] = &r;  // the last accepted record of a run (a resumed sweep's retry)
    }
  }
  const std::string commit = opt.commit.empty() ? git_commit() : opt.commit;
  std::ostringstream y;
  y << "# Written by `fusesim calibrate mori --plan-scenario` from " << opt.sweep_path << " at " << utc_now() << ", fusesim commit "
    << commit << ".\n";
  if (po.measured.empty())
    y << "# Predictions only: every case is a run of the sweep; measure them with `fusesim calibrate mori --sweep " << opt.sweep_path
      << "` after these predictions are recorded.\n";
  else
    y << "# Measured values: " << po.measured << " (each record's file:line, date, host and commit in its source).\n";
  const std::string name = po.name.empty() ? fs::path(opt.sweep_path).stem().string() : po.name;
  y << "scenario: " << yaml_value(name) << "\n";
  y << "description: " << yaml_value(fmt::format("{} sweep {} ({} runs){}", kind, opt.sweep_path, runs.size(),
                                                 po.measured.empty() ? ", predicted" : ", measured by calibrate mori"))
    << "\n";
  y << "hardware: " << yaml_value(po.hardware) << "\n";
  y << "model: " << (kind == "allreduce" ? "collective" : "gemm_ar") << "\n";
  y << fmt::format("tolerance_pct: {}\n", po.tolerance_pct);
  y << "cases:\n";
  int with_value = 0;
  std::vector<std::string> missing;
  for (const auto& run : runs) {
    json p = run.params;
    p.erase("table");
    if (kind == "allreduce") p["op"] = "all-reduce";
    y << "  - id: " << yaml_value(case_id(p)) << "\n    params: {";
    bool first = true;
    for (auto it = p.begin(); it != p.end(); ++it) {
      y << (first ? "" : ", ") << it.key() << ": " << yaml_value(it.value());
      first = false;
    }
    y << "}\n";
    if (po.measured.empty()) continue;
    const auto it = by_key.find(run.key);
    if (it == by_key.end()) {
      const auto rf = refused.find(run.key);
      missing.push_back(fmt::format("{}: {}", case_id(p), rf == refused.end() ? "no record" : rf->second));
      continue;
    }
    const Record& r = *it->second;
    const std::string src = fmt::format("{}:{} ({}, {}, fusesim {})", r.file, r.line, r.extra.value("date", std::string("?")),
                                        r.extra.contains("host") ? r.extra["host"].value("hostname", std::string("?")) : std::string("?"),
                                        r.extra.value("fusesim_commit", std::string("?")));
    y << fmt::format("    measured: {{value_us: {}, source: {}}}\n", r.value, yaml_value(src));
    ++with_value;
  }
  for (const auto& m : missing) y << "# not measured: " << m << "\n";
  const std::string tmp = po.out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw std::runtime_error(fmt::format("--plan-scenario '{}': cannot write", po.out));
    f << y.str();
    if (!f) throw std::runtime_error(fmt::format("--plan-scenario '{}': write failed", po.out));
  }
  fs::rename(tmp, po.out);
  std::ostream& msg = opt.progress ? *opt.progress : std::cerr;
  msg << fmt::format("wrote {}: {} cases{}\n", po.out, runs.size(),
                     po.measured.empty() ? "" : fmt::format(", {} with a measured value, {} without", with_value, missing.size()));
  return 0;
}

}  // namespace fusesim::calibrate
