// fusesim trace: `fusesim trace analyze`, `fusesim trace whatif` and `fusesim trace stragglers`.
#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "calibrate/trace/analysis.hpp"
#include "calibrate/trace/whatif.hpp"
#include "hw/printable.hpp"
#include "models/model.hpp"

namespace fusesim {

namespace {

struct CommonArgs {
  std::string path;
  std::string format = "table";
  std::string categories;            // replacement table
  std::vector<std::string> rules;    // user rules put in front
  trace::AnalyzeOptions analyze;
};

/// CLI11 check of a whole number >= 1 that fits `T` (CLI::PositiveNumber had said "Value 0 not in
/// range 0.000000 to 1797693134862315708..." (309 digits) where the bound is 1: trial 3).
template <class T>
std::string whole_number_from_1(const std::string& t) {
  T v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || v < 1)
    return fmt::format("expected a whole number >= 1{}, got '{}'", ec == std::errc::result_out_of_range ? fmt::format(" and <= {}", std::numeric_limits<T>::max()) : "", t);
  return {};
}

void add_common(CLI::App* cmd, CommonArgs& a) {
  cmd->add_option("PATH", a.path, "Kineto trace: a .json / .json.gz file or a directory of per-rank files")->required();
  cmd->add_option("--format", a.format, "Output: table or json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  cmd->add_option("--rules", a.rules, "YAML file of category rules tried before the built-in ones (repeatable)")->check(CLI::ExistingFile);
  cmd->add_option("--categories", a.categories, "YAML rule table replacing the built-in calibrate/trace/categories.yaml")->check(CLI::ExistingFile);
  cmd->add_option("--step-regex", a.analyze.step_regex, "CPU annotation names that mark a step (RE2 syntax, full match)")->capture_default_str();
  cmd->add_option("--decode-max-m", a.analyze.decode_max_m, "Largest GEMM M of a decode step")->capture_default_str()->check(whole_number_from_1<int64_t>);
  cmd->add_option("--min-phase-votes", a.analyze.min_phase_votes, "Without step annotations: fewest GEMMs forming a phase run")->capture_default_str()->check(whole_number_from_1<int>);
  cmd->add_option("--gap-min-us", a.analyze.gap_min_us, "Shortest idle gap counted as a gap (us, finite, 0 .. 1e12)")->capture_default_str()->check(CLI::Validator(
      [](std::string& t) -> std::string {
        // CLI::NonNegativeNumber let "nan" through and "inf" printed a 309-digit bound (issue 22).
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(t.c_str(), &end);
        if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v) || v < 0 || v > 1e12)
          return "expected a number of microseconds in 0 .. 1e12, got '" + t + "'";  // CLI11 names the option
        return {};
      },
      "US"));
}

trace::CategoryTable load_table(const CommonArgs& a) {
  auto t = a.categories.empty() ? trace::CategoryTable::builtin() : trace::CategoryTable::from_file(a.categories);
  for (auto it = a.rules.rbegin(); it != a.rules.rend(); ++it) t.prepend_user_rules_file(*it);
  return t;
}

std::vector<int> ranks_of(const std::vector<trace::TraceFile>& files) {
  std::vector<int> r;
  for (const auto& f : files) r.push_back(f.rank);
  return r;
}

template <class F>
void run_reporting_errors(F&& f) {
  try {
    f();
  } catch (const CLI::Error&) {
    throw;
  } catch (const std::exception& e) {
    std::cerr << "fusesim: error: " << fusesim::hw::printable(e.what()) << "\n";
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

void register_trace_commands(CLI::App& app, trace::GemmArPredictorFactory gemm_ar) {
  auto* tr = app.add_subcommand("trace", "Profiler (Kineto) traces: compute/communication overlap and what-if replay");
  tr->require_subcommand(1);

  // ---- analyze ----
  auto a = std::make_shared<CommonArgs>();
  auto window = std::make_shared<std::string>("all");
  auto definitions = std::make_shared<std::string>("fusesim");
  auto* an = tr->add_subcommand("analyze", "Per rank and phase: busy/idle, kernel categories, overlap, GEMM shapes, steps");
  add_common(an, *a);
  an->add_option("--window", *window, "Phase to report: prefill, decode or all (every phase plus the whole trace)")
      ->check(CLI::IsMember({"prefill", "decode", "all"}))->capture_default_str();
  an->add_option("--definitions", *definitions,
                 "fusesim (its own figures) or hta (Holistic Trace Analysis' temporal breakdown, communication/computation "
                 "overlap and kernel-type breakdown, with HTA's filter and rounding)")
      ->check(CLI::IsMember({"fusesim", "hta"}))->capture_default_str();
  an->callback([a, window, definitions] {
    run_reporting_errors([&] {
      if (*definitions == "hta") {
        auto files = trace::read_trace(a->path);
        auto rep = trace::hta_report(files, a->path);
        if (a->format == "json") std::cout << trace::to_json(rep).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        else std::cout << fusesim::hw::printable(trace::to_table(rep), true);  // names from the trace: controls escaped
        return;
      }
      auto table = load_table(*a);
      auto files = trace::read_trace(a->path);
      auto rep = trace::analyze(files, table, a->analyze, *window, a->path);
      if (a->format == "json") std::cout << trace::to_json(rep).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      else std::cout << fusesim::hw::printable(trace::to_table(rep), true);  // names from the trace: controls escaped
    });
  });

  // ---- whatif ----
  auto w = std::make_shared<CommonArgs>();
  auto wopt = std::make_shared<trace::WhatIfOptions>();
  auto scales = std::make_shared<std::vector<std::string>>();
  auto rank_scales = std::make_shared<std::vector<std::string>>();
  auto hw = std::make_shared<std::string>();
  auto* wi = tr->add_subcommand("whatif", "Replay the GPU work on the engine and report the step time after a change");
  add_common(wi, *w);
  wi->add_option("--window", wopt->window,
                 "Windows to replay: prefill or decode (the steps of that phase), steps (every step, whatever its phase) "
                 "or all (the whole trace as one window)")
      ->check(CLI::IsMember({"prefill", "decode", "steps", "all"}))->capture_default_str();
  wi->add_flag("--comm-stream", wopt->comm_stream, "Move communication kernels to their own stream (depending only on their producers)");
  wi->add_option("--sms", wopt->sms,
                 "With --comm-stream: the SM-sharing charge of compute kernels beside a moved collective (the sm_sharing "
                 "model's mechanism, models::gemm_beside, on the --sm-hw machine): N must be that machine's SM count "
                 "(a collective whose grid is >= N is refused); 0: no charge (default 132)")
      ->check(CLI::TypeValidator<int>("an integer SM count"))  // "abc": named as not a count, not as out of range
      ->check(CLI::Range(0, 100000));
  auto sm_hw = std::make_shared<std::string>("hw/h200-1gpu.yaml");
  wi->add_option("--sm-hw", *sm_hw,
                 "With --comm-stream: the hardware file of the SM-sharing charge (gpu.compute_units, the smshare.* keys, the "
                 "table sm_map)")
      ->capture_default_str();
  wi->add_option("--comm-consumer-after", wopt->comm_consumer_after,
                 "With --comm-stream: the N-th compute event after a collective waits for it (0: none)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  wi->add_option("--scale-collective", *scales, "REGEX=FACTOR: multiply the time of communication events (collectives, transport) matching REGEX (RE2 syntax, case-insensitive; repeatable)");
  wi->add_option("--scale-on-rank", *rank_scales,
                 "RANK:REGEX=FACTOR: multiply the time of any GPU event matching REGEX on that rank only (a straggler; repeatable); the "
                 "other ranks feel it through the collectives it delays");
  wi->add_flag("--independent-ranks", wopt->independent_ranks,
               "Replay each rank alone (its collectives keep their measured durations, waits included)");
  wi->add_flag("--fuse-gemm-ar", wopt->fuse_gemm_ar, "Replace a GEMM followed by an all-reduce by the fused model's prediction");
  wi->add_option("--hw", *hw, "Hardware file for the fused GEMM+all-reduce prediction")->check(CLI::ExistingFile);
  wi->add_option("--allreduce-regex", wopt->allreduce_regex, "Communication kernels that count as all-reduce for --fuse-gemm-ar")->capture_default_str();
  wi->add_option("--epsilon-us", wopt->epsilon_us, "Dependency inference tolerance (us)")->capture_default_str()->check(CLI::Range(0.0, 1e9));
  wi->add_option("--world-size", wopt->world_size, "Ranks in the all-reduce (default: from the trace)")->check(CLI::NonNegativeNumber);
  wi->callback([w, wopt, scales, rank_scales, hw, sm_hw, gemm_ar] {
    run_reporting_errors([&] {
      trace::WhatIfOptions opt = *wopt;
      if (opt.comm_consumer_after > 0 && !opt.comm_stream)
        throw std::invalid_argument("--comm-consumer-after applies with --comm-stream only (it places the consumer of a "
                                    "collective moved to its own stream); add --comm-stream or drop it");
      if (!hw->empty() && !opt.fuse_gemm_ar)
        throw std::invalid_argument("--hw is read by --fuse-gemm-ar only; add --fuse-gemm-ar or drop --hw");
      if (opt.comm_stream && opt.sms > 0) {
        if (!std::filesystem::is_regular_file(*sm_hw))
          throw std::invalid_argument(fmt::format("--sm-hw {}: no such file (the machine of the SM-sharing charge; run from the "
                                                  "repository root, give --sm-hw FILE, or --sms 0 for no charge)", *sm_hw));
        opt.sm_machine = std::make_shared<const models::SmShareMachine>(models::sm_share_machine(models::load_hardware(*sm_hw)));
      }
      for (const auto& s : *scales) opt.scale.push_back(trace::parse_collective_scale(s));
      for (const auto& s : *rank_scales) opt.scale.push_back(trace::parse_rank_scale(s));
      if (opt.fuse_gemm_ar) {
        if (hw->empty()) throw std::invalid_argument("--fuse-gemm-ar needs --hw FILE (the hardware the fused model predicts for)");
        if (!gemm_ar) throw std::runtime_error("--fuse-gemm-ar: this program has no GEMM+all-reduce model to predict with");
        opt.gemm_ar_predictor = gemm_ar(*hw);
        // What the command line's predictor (cli/commands.cpp) runs: said with the result.
        opt.gemm_ar_model = fmt::format(
            "gemm_ar mode fused-sdma, bf16 wire, quant blockscale, chunks 8, on the hardware file {} at the trace's M, N, K "
            "and world size (the trace's own GPUs are not checked against that hardware)", *hw);
      }
      auto table = load_table(*w);
      auto files = trace::read_trace(w->path);
      for (const auto& s : opt.scale) {
        if (s.rank < 0) continue;
        bool found = std::any_of(files.begin(), files.end(), [&](const trace::TraceFile& f) { return f.rank == s.rank; });
        if (!found)
          throw std::invalid_argument(fmt::format("--scale-on-rank: {} holds no rank {} (its ranks: {})", w->path, s.rank,
                                                  fmt::join(ranks_of(files), ", ")));
      }
      auto rep = trace::whatif(files, table, w->analyze, opt, w->path);
      if (w->format == "json") std::cout << trace::to_json(rep).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      else std::cout << fusesim::hw::printable(trace::to_table(rep), true);  // names from the trace: controls escaped
    });
  });

  // ---- stragglers ----
  auto st = std::make_shared<CommonArgs>();
  auto st_window = std::make_shared<std::string>("all");
  auto st_eps = std::make_shared<double>(2.0);
  auto* sc = tr->add_subcommand("stragglers", "Which ranks hold the others back at the collectives, and by how much");
  add_common(sc, *st);
  sc->add_option("--window", *st_window, "Windows to compare: prefill, decode, steps (every step) or all (the whole trace)")
      ->check(CLI::IsMember({"prefill", "decode", "steps", "all"}))->capture_default_str();
  sc->callback([st, st_window, st_eps] {
    run_reporting_errors([&] {
      auto table = load_table(*st);
      auto files = trace::read_trace(st->path);
      auto rep = trace::stragglers(files, table, st->analyze, *st_window, *st_eps, st->path);
      if (st->format == "json") std::cout << trace::to_json(rep).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      else std::cout << fusesim::hw::printable(trace::to_table(rep), true);  // names from the trace: controls escaped
    });
  });
}

}  // namespace fusesim
