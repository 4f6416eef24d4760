// The model interface: the registry's derived hardware lists, and the one case-parameter reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <string>

#include "models/model.hpp"
#include "scenario/load.hpp"
#include "scenario/run.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using fusesim::test::kRoot;

namespace {
const hw::Hardware& mi355x() {
  static const hw::Hardware h = models::load_hardware(kRoot + "/hw/mi355x-8gpu.yaml");
  return h;
}
}  // namespace

TEST(UnreadKeys, NoModelRequiresThem) {
  const auto& hw = mi355x();
  for (const char* model : {"gemm_ar", "ttft", "gemm_ar_live", "h200_probe", "afd"}) {
    const auto keys = models::required_hardware_keys(model, hw);
    for (const auto& k : models::unread_hardware_keys())
      EXPECT_EQ(std::find(keys.begin(), keys.end(), k), keys.end()) << model << " requires " << k;
  }
}

// The list's claim: changing one of those keys changes no prediction of the committed scenarios that
// set them (gemm_ar, ttft, gemm_ar_live, h200_probe).
TEST(UnreadKeys, ChangingThemChangesNoPrediction) {
  for (const char* name : {"mi355x-dsv4-pro-wo_b-tp8.yaml", "mi355x-dsv4-serving-ttft.yaml", "h200x2-gemm-ar.yaml", "h200x2-probes.yaml"}) {
    const auto sc = scenario::load(kRoot + "/scenarios/" + name);
    const auto hw = scenario::load_hardware(sc);
    const auto base = scenario::run(sc, hw);
    hw::Hardware changed = hw;
    int set = 0;
    for (const auto& k : models::unread_hardware_keys()) {
      const hw::ParamDecl* d = hw.registry().find(k);
      ASSERT_NE(d, nullptr) << k;
      if (!hw.has(k)) continue;
      ++set;
      changed.set_si(k, hw.get(k) == d->lower ? d->upper : d->lower + 0.5 * (hw.get(k) - d->lower));
    }
    if (!set) continue;
    const auto after = scenario::run(sc, changed);
    ASSERT_EQ(base["cases"].size(), after["cases"].size());
    for (size_t i = 0; i < base["cases"].size(); ++i)
    {
      // Equal up to rounding: two runs of one hardware in one process already differ by up to ~1e-9
      // relative (separate processes print identical tables; checked with `fusesim run` too).
      const double b = base["cases"][i]["predicted_us"].get<double>(), a = after["cases"][i]["predicted_us"].get<double>();
      EXPECT_NEAR(a, b, 1e-7 * b) << name << " " << base["cases"][i]["id"];
    }
  }
}

// ---- the registry ------------------------------------------------------------------------------

TEST(Registry, ListsEveryModelOnceWithItsSpec) {
  std::vector<std::string> names;
  for (const models::ModelSpec* s : models::specs()) {
    names.push_back(s->name);
    EXPECT_FALSE(s->description.empty()) << s->name;
    EXPECT_FALSE(s->source.empty()) << s->name;
    EXPECT_TRUE(s->hardware && s->case_parameters && s->run) << s->name;
    EXPECT_EQ(models::find_spec(s->name), s);
  }
  // The registry file's lines, in order: FUSESIM_MODEL(<name>_spec) registers the model <name> (so
  // adding a model touches models/registry.inc, not this test).
  std::vector<std::string> listed;
  std::ifstream inc(std::string(FUSESIM_SOURCE_DIR) + "/models/registry.inc");
  ASSERT_TRUE(inc) << "models/registry.inc";
  const std::regex line(R"(^FUSESIM_MODEL\((\w+)_spec\))");
  std::smatch m;
  for (std::string l; std::getline(inc, l);)
    if (std::regex_search(l, m, line)) listed.push_back(m[1]);
  EXPECT_GE(listed.size(), 7u);  // gemm_ar, gemm_ar_live, h200_probe, afd, ttft, sm_sharing, collective
  EXPECT_EQ(names, listed);
  EXPECT_EQ(models::find_spec("nope"), nullptr);
}

TEST(Registry, TheHardwareRegistryIsDerivedFromTheSpecsAndDeclaresEachConceptOnce) {
  // Every key a model reads is declared, and a concept two models read (compute units, the links,
  // the HBM, the launch gap) is one declaration that both bind.
  const auto& reg = models::builtin_registry();
  for (const models::ModelSpec* s : models::specs())
    for (const auto& h : s->hardware(nullptr)) EXPECT_NE(reg.find(h.decl.key), nullptr) << s->name << " " << h.decl.key;
  for (const char* k : {"gpu.compute_units", "links.per_direction", "memory.fabric_bandwidth", "kernel.launch_gap"})
    for (const char* model : {"gemm_ar", "gemm_ar_live", "afd"}) {
      const auto reads = models::find_spec(model)->hardware(nullptr);
      EXPECT_TRUE(std::any_of(reads.begin(), reads.end(), [&](const hw::HwRead& h) { return h.decl.key == k; })) << model << " " << k;
    }
  // The keys the old vocabularies used are gone.
  for (const char* k : {"gpu.sm_count", "nvlink.per_direction", "afd.kernel_gap", "gpu.hbm_copy_bandwidth"})
    EXPECT_EQ(reg.find(k), nullptr) << k;
}

TEST(Registry, RequiredKeysFollowTheBindingsAndTheTopology) {
  // gemm_ar: every binding but gpu.mall_capacity (default 0), sdma.gemm_request_share, memory.write_cost
  // and gpu.xcds (default 1: one L2; the GEMM's operand reuse is derived from it, issue 17); afd: the NVLink domain's set on the
  // NVLink file, the pods' set on the pods file (gpu.compute_units has a default in both).
  const auto gemm = models::required_hardware_keys("gemm_ar", mi355x());
  EXPECT_EQ(gemm.size(), 36u);  // 27 shared and model keys + 3 routes x 3 GEMM costs (gemm.<route>_*)
  EXPECT_EQ(std::count(gemm.begin(), gemm.end(), "gpu.mall_capacity"), 0);
  EXPECT_EQ(std::count(gemm.begin(), gemm.end(), "gpu.xcds"), 0);
  EXPECT_EQ(std::count(gemm.begin(), gemm.end(), "gemm.operand_l2_hit"), 0);  // derived, not a key (issue 17)
  const auto nv = models::load_hardware(kRoot + "/hw/h200-4gpu-nvlink.yaml");
  const auto pods = models::load_hardware(kRoot + "/hw/h100-ib-pods.yaml");
  const auto a = models::required_hardware_keys("afd", nv), b = models::required_hardware_keys("afd", pods);
  EXPECT_EQ(a.size(), 37u);
  EXPECT_EQ(b.size(), 29u);
  EXPECT_EQ(std::count(a.begin(), a.end(), "nic.wire_latency"), 0);
  EXPECT_EQ(std::count(b.begin(), b.end(), "nic.wire_latency"), 1);
  EXPECT_EQ(std::count(a.begin(), a.end(), "gpu.compute_units"), 0);
  EXPECT_TRUE(models::required_hardware_keys("nope", nv).empty());
}

// ---- the case-parameter reader -----------------------------------------------------------------

namespace {
const models::CaseSchema& schema() {
  using models::CaseParam;
  static const models::CaseSchema s{
      "demo",
      {CaseParam::name("mode", "a or b").required().one_of({"a", "b"}), CaseParam::integer("n", "a count").otherwise(4).at_least(1),
       CaseParam::number("x", "a rate").above(0).otherwise(1.5), CaseParam::flag("on", "a switch").otherwise(false),
       CaseParam::integer("hidden", "not in the JSON").otherwise(7).unreported()}};
  return s;
}
/// The key and message of the ParamError reading `yaml` throws ({"", ""} when it reads).
std::pair<std::string, std::string> refusal(const std::string& yaml) {
  try {
    (void)schema().read(YAML::Load(yaml));
  } catch (const models::ParamError& e) {
    return {e.key(), e.what()};
  }
  return {"", ""};
}
}  // namespace

TEST(CaseReader, ReadsTypedValuesWithDefaultsAndWritesTheParamsJson) {
  const auto v = schema().read(YAML::Load("{mode: b, x: 2.5}"));
  EXPECT_EQ(v.name("mode"), "b");
  EXPECT_EQ(v.integer("n"), 4);
  EXPECT_DOUBLE_EQ(v.number("x"), 2.5);
  EXPECT_FALSE(v.flag("on"));
  EXPECT_TRUE(v.given("x"));
  EXPECT_FALSE(v.given("n"));
  EXPECT_EQ(v.given_keys(), (std::vector<std::string>{"mode", "x"}));
  EXPECT_EQ(v.to_json(), (nlohmann::json{{"mode", "b"}, {"n", 4}, {"x", 2.5}, {"on", false}}));
}

TEST(CaseReader, EveryRefusalCarriesItsKey) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(refusal("{mode: a, colour: red}"), (P{"colour", "unknown demo parameter 'colour' (accepted: hidden, mode, n, on, x)"}));
  EXPECT_EQ(refusal("{n: 2}"), (P{"mode", "demo parameter 'mode' is missing (a or b)"}));
  EXPECT_EQ(refusal("{mode: c}"), (P{"mode", "demo parameter 'mode' must be a or b, got 'c'"}));
  EXPECT_EQ(refusal("{mode: a, n: \"4\"}"), (P{"n", "demo parameter 'n' must be an integer (unquoted), got '4'"}));
  EXPECT_EQ(refusal("{mode: a, n: 1.5}"), (P{"n", "demo parameter 'n' must be an integer, got '1.5'"}));
  EXPECT_EQ(refusal("{mode: a, n: 0}"), (P{"n", "demo parameter 'n' must be >= 1, got 0"}));
  EXPECT_EQ(refusal("{mode: a, n: 99999999999}"), (P{"n", "demo parameter 'n' = 99999999999 is out of range"}));
  EXPECT_EQ(refusal("{mode: a, x: 0}"), (P{"x", "demo parameter 'x' must be > 0, got 0"}));
  EXPECT_EQ(refusal("{mode: a, on: 'yes'}"), (P{"on", "demo parameter 'on' must be true or false (unquoted), got 'yes'"}));
  EXPECT_EQ(refusal("[1, 2]"), (P{"", "demo case: params must be a mapping, got '[1, 2]'"}));
  EXPECT_EQ(refusal("{mode: a}"), (P{"", ""}));
}

TEST(CaseReader, ARequiredKeyCanBeCheckedAfterTheModelsOwnValidation) {
  const auto v = schema().read(YAML::Load("{n: 2}"), false, true);  // mode missing, left for require()
  EXPECT_EQ(v.integer("n"), 2);
  EXPECT_THROW(v.require(), models::ParamError);
}
