// The afd model's spec: its case parameters (read by the one case reader), the case runner, and the
// hooks the scenario layer calls (NIC placement, kernel-duration judging, report lines and columns).
#include "models/afd/spec.hpp"

#include <algorithm>
#include <set>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/io.hpp"
#include "models/afd/beside.hpp"
#include "models/afd/hardware.hpp"
#include "models/afd/timeline.hpp"

namespace fusesim::afd {
using models::CaseParam;

namespace {
using models::CaseValues;
using models::field;
/// A case's parameters, each bound to its AfdCase member (whose initialiser is its default) or, for
/// the payload and hybrid words, to what they set.
const models::CaseFields<AfdCase>& afd_fields() {
  using C = AfdCase;
  static const models::CaseFields<C> f{
      "afd",
      {field(CaseParam::name("path", "afd, afd_shared (runs as afd) or masked").one_of({"afd", "afd_shared", "masked"}).tunable({"afd_shared"}), &C::path),
       field(CaseParam::integer("attention_ranks", "Attention ranks A, >= 1").required(), &C::attention_ranks),
       field(CaseParam::integer("ffn_ranks", "FFN ranks F, >= 1").required(), &C::ffn_ranks),
       field(CaseParam::integer("tokens", fmt::format("tokens per Attention rank, 1..{}", kMaxTokens)).required(), &C::tokens),
       field(CaseParam::integer("transport_sms", "SMs of dispatch/combine (channels = 8 x this)").at_least(1).at_most(1024).tunable(), &C::transport_sms),
       field(CaseParam::integer("hidden", "elements per token"), &C::hidden),
       field(CaseParam::integer("topk", "experts per token"), &C::topk),
       field(CaseParam::integer("experts", "experts over the FFN ranks"), &C::experts),
       {CaseParam::name("hybrid", "pods: rail-matched forwarding (off: direct sends)").one_of({"on", "off", "true", "false"})
            .otherwise("on").expecting("on or off"),
        [](C& c, const CaseValues& v) { c.hybrid = v.name("hybrid") == "on" || v.name("hybrid") == "true"; }},
       {CaseParam::name("payload", "the dispatch's dtype (the combine stays bf16)").one_of({"bf16", "fp16", "fp8", "fp32"}).otherwise("bf16"),
        [](C& c, const CaseValues& v) { c.dtype_bytes = v.name("payload") == "fp8" ? 1 : v.name("payload") == "fp32" ? 4 : 2; }},
       field(CaseParam::integer("capacity", "rows per expert per Attention rank (rows over it are dropped)"), &C::capacity),
       field(CaseParam::integer("combine_sms", "NVLink domain: combine grid on every rank (0: transport_sms)"), &C::combine_sms),
       field(CaseParam::integer("ffn_combine_sms", "NVLink domain: FFN-only combine grid (0: off)"), &C::ffn_combine_sms),
       field(CaseParam::flag("grid_sync_exit", "NVLink domain: the FFN combine exits through one grid sync"), &C::grid_sync_exit),
       field(CaseParam::integer64("seed", "the routing's random seed").at_least(0).expecting("an integer >= 0"), &C::seed),
       field(CaseParam::flag("skip_empty_finish", "pods what-if: no finish on channels that carried nothing"), &C::skip_empty_finish),
       field(CaseParam::flag("rotate_channels", "what-if: token t of source s rides channel (t + s C / sources) mod C"), &C::rotate_channels),
       field(CaseParam::flag("inline_finish", "pods what-if: data-less finishes as inline writes"), &C::inline_finish),
       field(CaseParam::name("view", "NVLink domain: the metric's clock, span or collect"), &C::view),
       field(CaseParam::name("overlap_ffn_gemm", "the next micro-batch's FFN expert GEMM beside the FFN ranks' transport kernel: "
                                                 "off, dispatch or combine (charged by models::gemm_beside)")
                 .one_of({"off", "dispatch", "combine"}),
             &C::overlap_ffn_gemm),
       field(CaseParam::integer64("ffn_gemm_n", "overlap: the expert GEMM's N (output columns, required with overlap_ffn_gemm)").at_least(0).at_most(double(CaseParam::kMaxDimension)), &C::ffn_gemm_n),
       field(CaseParam::integer64("ffn_gemm_m", "overlap: the expert GEMM's M (0: the rows routed to the FFN rank)").at_least(0).at_most(double(CaseParam::kMaxDimension)), &C::ffn_gemm_m),
       field(CaseParam::integer("ffn_gemm_tile_m", "overlap: the GEMM tile along N").at_least(1), &C::ffn_gemm_tile_m),
       field(CaseParam::integer("ffn_gemm_tile_n", "overlap: the GEMM tile along M").at_least(1), &C::ffn_gemm_tile_n),
       field(CaseParam::integer("ffn_gemm_cluster", "overlap: GEMM CTAs per cluster").at_least(1), &C::ffn_gemm_cluster),
       field(CaseParam::integer("ffn_gemm_grid", "overlap: GEMM CTAs (0: min(tiles, SMs))").at_least(0), &C::ffn_gemm_grid),
       field(CaseParam::integer("ffn_gemm_threads", "overlap: threads per GEMM block").at_least(1), &C::ffn_gemm_threads),
       field(CaseParam::integer("ffn_gemm_regs", "overlap: registers per GEMM thread").at_least(0), &C::ffn_gemm_regs),
       field(CaseParam::number("ffn_gemm_smem_bytes", "overlap: shared memory per GEMM block (bytes)").at_least(0), &C::ffn_gemm_smem_bytes),
       field(CaseParam::number("ffn_gemm_alone_us", "overlap: the GEMM alone, measured (us; 0: predicted)").at_least(0), &C::ffn_gemm_alone_us),
       field(CaseParam::name("gemm_machine", "overlap: hardware file with the SM-pool keys (e.g. hw/h200-1gpu.yaml)"), &C::gemm_machine),
       field(CaseParam::number("transport_smem_bytes", "overlap: shared memory per transport block (bytes; -1: a whole SM)").at_least(-1),
             &C::transport_smem_bytes)}};
  return f;
}
}  // namespace

const models::CaseSchema& afd_case_schema() { return afd_fields().schema(); }

AfdCase afd_case_from_yaml(const YAML::Node& params) {
  const CaseValues v = afd_case_schema().read(params);
  AfdCase c = afd_fields().read(v);
  c.given = v.given_keys();
  return c;
}

namespace {
/// The case's effective parameters: every model input, plus the what-if switches that were set.
nlohmann::json params_json(const AfdCase& c, bool cross_node) {
  nlohmann::json p = {{"path", c.path},
                      {"attention_ranks", c.attention_ranks},
                      {"ffn_ranks", c.ffn_ranks},
                      {"tokens", c.tokens},
                      {"transport_sms", c.transport_sms},
                      {"hidden", c.hidden},
                      {"dtype_bytes", c.dtype_bytes},
                      {"topk", c.topk},
                      {"experts", c.experts},
                      {"capacity", c.capacity},
                      {"seed", c.seed}};
  auto set = [&](const std::string& k, bool v) { return v || c.was_given(k); };
  if (cross_node) {
    p["hybrid"] = c.hybrid;  // the InfiniBand path's mode, given or not
    if (set("skip_empty_finish", c.skip_empty_finish)) p["skip_empty_finish"] = c.skip_empty_finish;
    if (set("inline_finish", c.inline_finish)) p["inline_finish"] = c.inline_finish;
  } else {
    // Settings only the NVLink-domain model reads.
    p["view"] = c.view;
    p["combine_sms"] = c.combine_sms > 0 ? c.combine_sms : c.transport_sms;
    if (set("ffn_combine_sms", c.ffn_combine_sms > 0)) p["ffn_combine_sms"] = c.ffn_combine_sms;
    if (set("grid_sync_exit", c.grid_sync_exit)) p["grid_sync_exit"] = c.grid_sync_exit;
  }
  if (set("rotate_channels", c.rotate_channels)) p["rotate_channels"] = c.rotate_channels;
  return p;
}

nlohmann::json result_json(const AfdCase& c, const AfdResult& r) {
  const nlohmann::json phases = hw::spans_json(r.kernels);
  nlohmann::json nics = nlohmann::json::array();
  for (const auto& n : r.nics)
    nics.push_back({{"device", n.device}, {"role", n.role}, {"atomics_in", n.atomics_in},
                    {"atomics_out", n.atomics_out}, {"inline_writes_out", n.inline_writes_out},
                    {"payload_writes", n.payload_writes}, {"polls", n.polls}});
  nlohmann::json extra = {{"span_us", r.span_us}, {"period_us", r.period_us}, {"channels", r.channels},
                          {"cross_node", r.cross_node}};
  if (!nics.empty()) extra["nic_ops_per_round_trip"] = nics;
  for (const auto& [k, v] : r.extra) extra[k] = v;
  nlohmann::json out = {{"params", params_json(c, r.cross_node)}, {"predicted_us", r.exchange_us},
                        {"phases", phases}, {"extra", extra}};
  if (!r.note.empty()) out["note"] = r.note;
  return out;
}

}  // namespace

nlohmann::json run_afd_case(const hw::Hardware& hw, const YAML::Node& params, sim::TraceSink* trace) {
  const AfdCase c = afd_case_from_yaml(params);
  AfdResult res = simulate_afd(hw, c, trace);
  // The next micro-batch's expert GEMM beside the transport kernel (off by default: no change).
  const std::vector<FfnGemmBeside> beside = ffn_gemm_beside(hw, c, res);
  for (const auto& b : beside) res.kernels.push_back({"ffn_gemm", b.start_us, b.start_us + b.r.beside_s * 1e6, b.device, "ffn"});
  nlohmann::json out = result_json(c, res);
  if (!beside.empty()) {
    nlohmann::json& p = out["params"];
    p["overlap_ffn_gemm"] = c.overlap_ffn_gemm;
    p["ffn_gemm_n"] = c.ffn_gemm_n;
    if (c.ffn_gemm_m > 0) p["ffn_gemm_m"] = c.ffn_gemm_m;
    p["ffn_gemm_tile_m"] = c.ffn_gemm_tile_m;
    p["ffn_gemm_tile_n"] = c.ffn_gemm_tile_n;
    p["ffn_gemm_cluster"] = c.ffn_gemm_cluster;
    if (c.ffn_gemm_alone_us > 0) p["ffn_gemm_alone_us"] = c.ffn_gemm_alone_us;
    if (!c.gemm_machine.empty()) p["gemm_machine"] = c.gemm_machine;
    nlohmann::json ranks = nlohmann::json::array();
    // The summary is the FFN rank whose GEMM ends last beside its transport kernel (the charge is
    // signed: the mechanism's per-SM tile rate rises with fewer CTAs running, so a GEMM whose last wave
    // is partial alone can finish a little sooner beside a short neighbour).
    const FfnGemmBeside* last = &beside.front();
    for (const auto& b : beside) {
      ranks.push_back({{"device", b.device}, {"neighbour", b.neighbour}, {"transport_blocks", b.transport_blocks},
                       {"neighbour_us", b.neighbour_us}, {"m", b.m}, {"n", b.n}, {"k", b.k}, {"tiles", b.gemm.tiles},
                       {"grid", b.gemm.grid}, {"alone_us", b.r.alone_s * 1e6}, {"beside_us", b.r.beside_s * 1e6},
                       {"charge_us", b.charge_us()}, {"held_sms", b.r.held_sms}, {"slots_at_launch", b.r.slots_at_launch},
                       {"late_ctas", b.r.late_ctas}});
      if (b.start_us + b.r.beside_s * 1e6 > last->start_us + last->r.beside_s * 1e6) last = &b;
    }
    nlohmann::json& x = out["extra"];
    x["ffn_gemm_device"] = last->device;
    x["ffn_gemm_alone_us"] = last->r.alone_s * 1e6;
    x["ffn_gemm_beside_us"] = last->r.beside_s * 1e6;
    x["ffn_gemm_charge_us"] = last->charge_us();
    x["ffn_gemm_held_sms"] = last->r.held_sms;
    x["ffn_gemm_beside"] = {{"rule", "models::gemm_beside (the sm_sharing model's mechanism: round-3 placement and slots, round-7 hand-out)"},
                            {"machine", beside.front().machine}, {"ranks", ranks}};
  }
  // A case with protocol what-ifs switched on also reports the same exchange without them, so its
  // predicted effect is on the case's own line.
  std::vector<std::string> on;
  AfdCase base = c;
  if (c.skip_empty_finish) on.push_back("skip_empty_finish"), base.skip_empty_finish = false;
  if (c.inline_finish) on.push_back("inline_finish"), base.inline_finish = false;
  if (c.rotate_channels) on.push_back("rotate_channels"), base.rotate_channels = false;
  if (!on.empty()) {
    const double without = simulate_afd(hw, base, nullptr).exchange_us, with = out["predicted_us"].get<double>();
    // A switch with no effect reports 0 (the two runs order their events differently and can differ
    // by rounding, 1e-13 us, which printed as -0.0).
    const double change = std::fabs(with - without) < 1e-9 ? 0.0 : with - without;
    out["whatif"] = {{"switches", on}, {"without_us", without}, {"change_us", change},
                     {"change_pct", change / without * 100.0}};
  }
  return out;
}


}  // namespace fusesim::afd

namespace fusesim::models {

const ModelSpec& afd_spec() {
  static const ModelSpec spec = [] {
    // The hardware it reads depends on the topology: the NVLink domain's set or the pods'.
    auto hardware = [](const hw::Hardware* on) { return on ? afd::afd_hardware(*on).reads() : afd::afd_hardware_reads(); };
    ModelSpec s{"afd", "MoE dispatch/combine between Attention and FFN ranks: one NVLink domain, or pods over InfiniBand with NIC atomics",
                "seed 004 (the AFD transport's measurements and kernels), AFD.md; fitted by `fusesim calibrate fit --method nelder-mead`", hardware,
                listing_of(afd::afd_case_schema()), afd::run_afd_case};
    s.schema = &afd::afd_case_schema();
    // The pods model's NIC placement is a property of the hardware: refused at the hardware line.
    s.check_hardware = [](const hw::Hardware& hw) {
      if (hw.topology_kind() == "pods") (void)afd::gpus_per_nic(hw);
    };
    s.scenario_sections = {{"kernel_durations", "judges per-kernel durations"}};
    s.check_scenario = [](const Scenario& sc) { (void)afd::kernel_rules(sc); };
    // A case's gemm_machine hardware file and its measured tables are inputs too (issue 22's third
    // trial: `run --out hw/h200-1gpu.yaml` had replaced it).
    s.input_files = [](const Scenario& sc, const std::string& hardware_path) {
      std::vector<std::pair<std::string, std::string>> out;
      std::set<std::string> seen;
      for (uint64_t i = 0; i < sc.case_count(); ++i) {
        const YAML::Node g = sc.case_at(i).params["gemm_machine"];
        if (!g || !g.IsScalar() || !seen.insert(g.Scalar()).second) continue;
        const std::string found = afd::find_gemm_machine(hardware_path, g.Scalar());
        if (found.empty()) continue;
        out.push_back({found, fmt::format("gemm_machine hardware file of {}", sc.path)});
        try {
          const hw::Hardware mh = models::load_hardware(found);
          for (const auto& [name, t] : mh.tables()) out.push_back({t.file, fmt::format("measured table '{}' of the gemm_machine file {}", name, found)});
        } catch (const std::exception&) {
          // Not loadable: the case reports it when it runs; the file itself is still listed.
        }
      }
      return out;
    };
    s.primary_metric = "exchange_us";
    s.judge = [](const Scenario& sc, nlohmann::json& result) {
      if (const auto kd = afd::kernel_durations(sc, result); !kd.is_null()) result["summary"]["kernel_durations"] = kd;
    };
    s.fitted_kernels = [](const Case& c, bool unjudged) {
      return unjudged ? afd::kernels_at_tokens(c, 0, afd::kKernelDurationMinTokens - 1) : afd::judged_kernels(c);
    };
    s.kernels_unjudged = [](const YAML::Node& params) {
      const YAML::Node t = params["tokens"];
      return t && t.IsScalar() && t.as<int>() < afd::kKernelDurationMinTokens;
    };
    // A case compared on another metric (a timeline's exchange period) carries that metric as
    // predicted_us (scenario::run); the row also names it and gives the exchange time.
    s.row_note = [](const nlohmann::json& c) {
      if (!c.contains("compared_metric") || !c.contains("exchange_us")) return std::string();
      return fmt::format("  ({}; exchange time on the slowest Attention rank {:.1f} us)", c["compared_metric"].get<std::string>(),
                         c["exchange_us"].get<double>());
    };
    s.row_lines = [](const nlohmann::json& c) {
      std::vector<std::string> lines;
      if (c.contains("whatif")) {
        const auto& wi = c["whatif"];
        std::string sw;
        for (const auto& x : wi["switches"]) sw += (sw.empty() ? "" : " + ") + x.get<std::string>();
        lines.push_back(fmt::format("what-if: {} {:.1f} us against {:.1f} us without ({:+.1f} us, {:+.1f}%)", sw,
                                    c["predicted_us"].get<double>(), wi["without_us"].get<double>(), wi["change_us"].get<double>(),
                                    wi["change_pct"].get<double>()));
      }
      if (c.contains("extra") && c["extra"].contains("ffn_gemm_beside")) {
        // The next micro-batch's expert GEMM beside the transport kernel (overlap_ffn_gemm), per FFN rank.
        std::string t;
        for (const auto& r : c["extra"]["ffn_gemm_beside"]["ranks"])
          t += fmt::format("{}dev{} {}x{}x{} beside {} ({} SMs held, {} late CTAs): alone {:.1f} us, beside {:.1f} us ({:+.1f} us)",
                           t.empty() ? "" : "; ", r["device"].get<int>(), r["m"].get<int64_t>(), r["n"].get<int64_t>(),
                           r["k"].get<int64_t>(), r["neighbour"].get<std::string>(), r["held_sms"].get<int>(),
                           r["late_ctas"].get<int>(), r["alone_us"].get<double>(), r["beside_us"].get<double>(),
                           r["charge_us"].get<double>());
        lines.push_back("FFN GEMM beside the transport (models::gemm_beside): " + t);
      }
      if (c.contains("extra") && c["extra"].contains("nic_ops_per_round_trip")) {
        // NIC operations per round trip, devices with the same counts on one entry.
        std::vector<std::pair<std::string, std::vector<int>>> groups;
        for (const auto& n : c["extra"]["nic_ops_per_round_trip"]) {
          const std::string k = fmt::format("{} NIC: atomics in {}, out {}, inline writes out {}, payload writes {}, polls {}",
                                            n["role"].get<std::string>(), n["atomics_in"].get<long>(), n["atomics_out"].get<long>(),
                                            n["inline_writes_out"].get<long>(), n["payload_writes"].get<long>(), n["polls"].get<long>());
          auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == k; });
          if (it == groups.end()) groups.push_back({k, {n["device"].get<int>()}});
          else it->second.push_back(n["device"].get<int>());
        }
        std::string t;
        for (const auto& [k, devs] : groups) {
          std::string d;
          for (int x : devs) d += (d.empty() ? "" : ",") + std::to_string(x);
          t += fmt::format("{}dev {}: {}", t.empty() ? "" : "; ", d, k);
        }
        const auto& ex = c["extra"];
        const int share = ex.contains("gpus_per_nic") ? int(ex["gpus_per_nic"].get<double>()) : 1;
        lines.push_back(fmt::format("NIC ops per round trip{}: {}",
                                    share > 1 ? fmt::format(" (per GPU; {} GPUs share each NIC, which serves their sum)", share) : "", t));
      }
      return lines;
    };
    s.summary_lines = [](const nlohmann::json& summary) {
      return summary.contains("kernel_durations") ? afd::kernel_duration_lines(summary["kernel_durations"], true) : std::vector<std::string>{};
    };
    // Per-kernel durations: a miss not listed in kernel_durations.known_misses, or a listed one that
    // now passes, fails the check like a case outside tolerance.
    s.check_extras = [](const nlohmann::json& summary) {
      CheckExtras x;
      if (!summary.contains("kernel_durations")) return x;
      const auto& kd = summary["kernel_durations"];
      x.lines = afd::kernel_duration_lines(kd, false);
      x.failures = kd["new_misses"].get<int>() + int(kd["known_now_within"].size());
      x.file_failure_text = "per-kernel duration(s) outside the known misses";
      x.failure_text = "per-kernel duration(s) outside the known misses or known misses now within tolerance";
      return x;
    };
    s.csv_columns = {
        // On pods: NIC operations per round trip, per device (atomics in/out, inline writes, payload writes, polls).
        {"nic_ops",
         [](const nlohmann::json& c) {
           std::string nic;
           if (c.contains("extra") && c["extra"].contains("nic_ops_per_round_trip"))
             for (const auto& d : c["extra"]["nic_ops_per_round_trip"])
               nic += fmt::format("{}dev{}={}/{}/{}/{}/{}", nic.empty() ? "" : ";", d["device"].get<int>(), d["atomics_in"].get<int64_t>(),
                                  d["atomics_out"].get<int64_t>(), d["inline_writes_out"].get<int64_t>(),
                                  d["payload_writes"].get<int64_t>(), d["polls"].get<int64_t>());
           return nic.empty() ? std::string() : csv_quoted(nic);
         }},
        {"whatif_without_us", [](const nlohmann::json& c) {
           return c.contains("whatif") ? fmt::format("{:.3f}", c["whatif"]["without_us"].get<double>()) : std::string();
         }}};
    return s;
  }();
  return spec;
}

}  // namespace fusesim::models
