// The h200_probe model: our portable probes (hw/kernels/) on the H200 pair, predicted with the pair's
// hardware and kernels (gemm_ar_live.hpp), to calibrate them.
#include <map>
#include <memory>

#include <fmt/format.h>

#include "models/gemm_ar_live/gemm_ar_live.hpp"
#include "models/model.hpp"

namespace fusesim::models {
namespace {
/// Each probe's parameters (the probe's own schema, named "<probe> probe" in messages).
const std::map<std::string, CaseSchema>& probe_schemas() {
  auto size = [] { return CaseParam::number("size_bytes", "bytes moved").required().above(0); };
  auto dim = [](const char* k) { return CaseParam::dimension(k, "a GEMM dimension").required(); };
  auto probe = [] { return CaseParam::name("probe", "the probe"); };
  static const std::map<std::string, CaseSchema> s{
      {"peer_copy",
       CaseSchema("peer_copy probe",
                  {probe(), CaseParam::name("direction", "one or both").one_of({"one", "both"}).otherwise("one"), size()})},
      {"cu_remote",
       CaseSchema("cu_remote probe",
                  {probe(), CaseParam::name("mode", "pull (only pulls are modelled)").one_of({"pull"}).otherwise("pull"),
                   CaseParam::integer64("blocks", "the grid").required().at_least(1),
                   CaseParam::integer64("threads", "threads per block").required().at_least(1),
                   CaseParam::number("bytes_in_flight_per_thread", "bytes each lane keeps in flight").required().above(0), size(),
                   CaseParam::flag("both", "both GPUs pull from each other at once").otherwise(false)})},
      {"gemm_banded", CaseSchema("gemm_banded probe", {probe(), dim("m"), dim("n"), dim("k"), dim("bands")})},
      {"gemm_with_copies",
       CaseSchema("gemm_with_copies probe",
                  {probe(), dim("m"), dim("n"), dim("k"),
                   CaseParam::name("background", "copy-engine traffic during the GEMM").required().one_of({"none", "ce_out", "ce_in", "ce_both"}),
                   CaseParam::number("alone_time_us", "the same run's GEMM alone (replaces the table's time)").above(0)})},
      {"copy_hop", CaseSchema("copy_hop probe", {probe(), size()})}};
  return s;
}
/// The probe a case names (its `probe` parameter, one of probe_schemas()).
const CaseSchema& selector() {
  static const CaseSchema s = [] {
    std::vector<std::string> names;
    for (const auto& [name, unused] : probe_schemas()) names.push_back(name);
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return CaseSchema("h200_probe", {CaseParam::name("probe", "one of: " + list).required().one_of(names)});
  }();
  return s;
}
}  // namespace

nlohmann::json run_probe_case(const hw::Hardware& hw, const YAML::Node& p, sim::TraceSink* trace) {
  const std::string probe = selector().read(p, true).name("probe");
  const CaseValues v = probe_schemas().at(probe).read(p);
  sim::Simulation sim;
  sim.set_trace(trace);
  sim::FlowNetwork net(sim);
  const LiveHw h = gemm_ar_live_hardware().read(hw);
  hw::GpuGroup g(sim, net, live_group(h, 2));
  LiveOps node{g, h, hw};
  double t_end = 0;
  if (probe == "peer_copy") {
    const double bytes = v.number("size_bytes");
    const bool both = v.name("direction") == "both";
    auto done = hw::Join::after(both ? 2 : 1, [&] { t_end = sim.now(); });
    node.put(0, 1, bytes, "put 0->1", done);
    if (both) node.put(1, 0, bytes, "put 1->0", done);
  } else if (probe == "cu_remote") {
    const double bytes = v.number("size_bytes");
    const int blocks = int(v.integer("blocks")), threads = int(v.integer("threads"));
    const double per_thread = v.number("bytes_in_flight_per_thread");
    const bool both = v.flag("both");
    auto done = hw::Join::after(both ? 2 : 1, [&] { t_end = sim.now(); });
    node.pull(0, 1, bytes, blocks, threads, per_thread, 1.0, "pull 1->0", done);
    if (both) node.pull(1, 0, bytes, blocks, threads, per_thread, 1.0, "pull 0->1", done);
  } else if (probe == "gemm_banded") {
    const int64_t m = v.integer("m"), n = v.integer("n"), k = v.integer("k");
    const int bands = int(v.integer("bands"));
    if (m % bands) throw ParamError("bands", fmt::format("gemm_banded: m={} is not divisible by bands={}", m, bands));
    // The band chain holds itself only weakly: the pending callbacks (the launch gap's, the band's
    // done) own it until the last band, then nothing does. A function owning the shared pointer that
    // owned it was a cycle, leaked every case.
    auto next = std::make_shared<std::function<void(int)>>();
    *next = [&, self = std::weak_ptr<std::function<void(int)>>(next), m, n, k, bands](int b) {
      if (b == bands) {
        t_end = sim.now();
        return;
      }
      auto chain = self.lock();  // alive: whoever called this holds it
      sim.after(b == 0 ? 0.0 : h.launch_gap, [&, chain, m, n, k, bands, b] {
        node.gemm(0, m / bands, n, k, "band", [chain, b] { (*chain)(b + 1); });
      });
    };
    (*next)(0);
  } else if (probe == "copy_hop") {
    // probe_launch's copy_hop_sync_us: a kernel's end to a dependent kernel on the peer through an
    // ordering-only event, a put of size_bytes on a copy stream and a cross-GPU event wait.
    const double bytes = v.number("size_bytes");
    sim.after(h.event_wait_same_gpu, [&, bytes] {
      node.put(0, 1, bytes, "put 0->1", {}, [&] { t_end = sim.now(); });
    });
  } else {  // gemm_with_copies (the probe name was checked against `keys` above)
    // probe_interference's gemm_time: GPU 0's GEMM while copy-engine puts run out of it (ce_out),
    // into it (ce_in) or both, started together; the puts last longer than the GEMM. With
    // alone_time_us (the same probe run's GEMM alone) the GEMM's own time comes from there, so the
    // point tests the slowdown only, not the run-to-run spread of the GEMM table.
    const int64_t m = v.integer("m"), n = v.integer("n"), k = v.integer("k");
    const std::string bg = v.name("background");
    const double alone = v.given("alone_time_us") ? v.number("alone_time_us") * 1e-6 : 0.0;
    const double xfer = 4.0 * (alone > 0 ? alone : blas_gemm_time(hw, m, n, k)) * h.ce_peak;  // outlasts the GEMM
    if (bg == "ce_out" || bg == "ce_both") node.put(0, 1, xfer, "put 0->1", [] {});
    if (bg == "ce_in" || bg == "ce_both") node.put(1, 0, xfer, "put 1->0", [] {});
    node.gemm(0, m, n, k, "gemm", [&] { t_end = sim.now(); }, alone);
  }
  sim.run();
  return {{"predicted_us", t_end * 1e6}, {"phases", nlohmann::json::array()}};
}

const ModelSpec& h200_probe_spec() {
  // Each probe's parameters, listed as probe.key.
  auto listing = [] {
    std::vector<std::string> out;
    for (const auto& [name, schema] : probe_schemas())
      for (const auto& d : schema.describe()) out.push_back(name + "." + d);
    return out;
  };
  static const ModelSpec spec{"h200_probe",
                              "the portable probes (peer copies, CU remote loads, banded GEMMs, GEMMs under copies, a copy hop) on the H200 pair",
                              "hw/kernels/ probes, measured in calibrate/data/h200x2 (scenarios/h200x2-probes.yaml)",
                              reads_of(gemm_ar_live_hardware()), listing, run_probe_case};
  return spec;
}

}  // namespace fusesim::models
