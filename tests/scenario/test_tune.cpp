// fusesim tune (scenario/tune.hpp): the knob space comes from the case schema; on seed 000's
// measured knobs the search picks what was measured best; coordinate descent finds what the
// exhaustive search finds on a space both can cover; the threshold is where the best settings start
// to win for good.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>

#include "models/model.hpp"
#include "scenario/tune.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::test;
using nlohmann::json;

namespace {
const json kWoB = {{"n", 7168}, {"k", 2048}, {"world_size", 8}, {"quant", "blockscale"}};  // DeepSeek-V4-Pro wo_b, TP8

const hw::Hardware& mi355x() {
  static const hw::Hardware h = models::load_hardware(kRoot + "/hw/mi355x-8gpu.yaml");
  return h;
}

/// Seed 000's measured rows of one table (calibrate/data/mi355x/FILE): params and max_rank_time_us.
std::vector<json> measured_rows(const std::string& file) {
  std::ifstream in(kRoot + "/calibrate/data/mi355x/" + file);
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

/// The predicted time of `params` at M=m on the wo_b shape.
double predict(const json& setting, int64_t m) {
  YAML::Node y(YAML::NodeType::Map);
  json p = kWoB;
  for (auto& [k, v] : setting.items()) p[k] = v;
  p["m"] = m;
  for (auto& [k, v] : p.items()) {
    if (v.is_string()) y[k] = v.get<std::string>();
    else if (v.is_boolean()) y[k] = v.get<bool>();
    else y[k] = v.get<int64_t>();
  }
  return models::find_spec("gemm_ar")->run(mi355x(), y, nullptr)["predicted_us"].get<double>();
}
}  // namespace

TEST(TuneKnobs, TheSpaceIsDerivedFromTheSchema) {
  const models::CaseSchema schema("toy", {models::CaseParam::name("path", "a path").one_of({"a", "b", "c"}).tunable({"c"}),
                                          models::CaseParam::flag("fast", "a flag").otherwise(false).tunable(),
                                          models::CaseParam::integer("blocks", "a grid").at_least(3).at_most(20).otherwise(8).tunable(),
                                          models::CaseParam::integer("m", "rows").required()});
  scenario::TuneOptions o;
  auto k = scenario::knob_space(schema, o);
  ASSERT_EQ(k.size(), 3u);  // m is no knob
  EXPECT_EQ(k[0].key, "path");
  EXPECT_EQ(json(k[0].values), json({"a", "b"}));  // c is not searched
  EXPECT_EQ(json(k[1].values), json({false, true}));
  EXPECT_EQ(json(k[2].values), json({3, 4, 6, 8, 12, 16}));  // the ladder within [3, 20]
  o.baseline = {{"path", "a"}};                              // the baseline's own value is left out
  o.values["blocks"] = {4, 16};
  k = scenario::knob_space(schema, o);
  EXPECT_EQ(json(k[0].values), json({"b"}));
  EXPECT_EQ(json(k[2].values), json({4, 16}));
  o.values["blocks"] = {32};
  EXPECT_NE(error_of<std::invalid_argument>([&] { scenario::knob_space(schema, o); }).find("--values blocks: 32 is not a value"), std::string::npos);
  o.values.clear();
  o.values["m"] = {1};
  EXPECT_NE(error_of<std::invalid_argument>([&] { scenario::knob_space(schema, o); }).find("not a knob of the toy model (its knobs: path, fast, blocks)"),
            std::string::npos);
}

TEST(TuneKnobs, GemmArKnobsAreTheSchemasKnobs) {
  scenario::TuneOptions o;
  std::vector<std::string> keys;
  for (const auto& k : scenario::knob_space(*models::find_spec("gemm_ar")->schema, o)) keys.push_back(k.key);
  EXPECT_EQ(json(keys), json({"mode", "chunks", "tile_order", "gather_dtype", "gather_transport", "pull_blocks", "fuse_quantize",
                              "fuse_reduce_push", "gather_bands", "publish"}));
  std::vector<std::string> afd;
  for (const auto& k : scenario::knob_space(*models::find_spec("afd")->schema, o)) afd.push_back(k.key);
  EXPECT_EQ(json(afd), json({"path", "transport_sms"}));
  const auto coll = scenario::knob_space(*models::find_spec("collective")->schema, o);
  ASSERT_EQ(coll.size(), 3u);
  EXPECT_EQ(coll[0].key, "backend");
  EXPECT_EQ(coll[1].key, "stage");
  EXPECT_EQ(coll[2].key, "blocks");
  EXPECT_EQ(coll[2].values.front(), 0);  // the default (the backend's own rule) is a candidate
}

// The collective model: the best backend and grid for an all-reduce, against the RCCL ring, is the
// fastest of every setting (the space is small: exhaustive), and no setting beats it.
TEST(TuneCollective, BestBackendIsTheFastestSetting) {
  scenario::TuneOptions o;
  o.shapes = {{{"op", "all-reduce"}, {"n", 7168}, {"world_size", 8}}};
  o.ms = {64, 16384};
  o.baseline = {{"backend", "rccl"}};
  const auto& spec = *models::find_spec("collective");
  const json r = scenario::tune(spec, mi355x(), "hw", o);
  EXPECT_EQ(r["search"]["method"], "exhaustive");
  for (const auto& p : r["shapes"][0]["points"]) {
    const double best = p["best"]["predicted_us"].get<double>();
    for (const auto& e : p["knob_effects"]) {
      for (const auto& v : e["values"]) {
        if (!v["predicted_us"].is_null()) {
          EXPECT_GE(v["predicted_us"].get<double>(), best);
        }
      }
    }
    EXPECT_NE(p["best"]["setting"]["backend"], "rccl");
  }
}

// Bounded search (from a fresh-user trial): a negative or huge --restarts, or an --exhaustive-limit
// outside 0..10^6, is refused naming the option, not run as a degenerate or endless search.
TEST(TuneSearch, RestartsAndExhaustiveLimitAreBounded) {
  const auto& spec = *models::find_spec("collective");
  auto with = [&](int restarts, int64_t limit) {
    scenario::TuneOptions o;
    o.shapes = {{{"op", "all-reduce"}, {"n", 7168}, {"world_size", 8}}};
    o.ms = {64};
    o.baseline = {{"backend", "rccl"}};
    o.restarts = restarts;
    o.exhaustive_limit = limit;
    return error_of<std::invalid_argument>([&] { scenario::tune(spec, mi355x(), "hw", o); });
  };
  EXPECT_NE(with(-1, 4096).find("--restarts: -1 is outside 0..10000"), std::string::npos);
  EXPECT_NE(with(1000000000, 4096).find("--restarts: 1000000000 is outside 0..10000"), std::string::npos);
  EXPECT_NE(with(4, -1).find("--exhaustive-limit: -1 is outside 0..1000000"), std::string::npos);
  EXPECT_NE(with(4, 100000000000).find("--exhaustive-limit: 100000000000 is outside"), std::string::npos);
  EXPECT_EQ(with(0, 4096), "");  // zero restarts (the defaults' start alone) is a valid search
}

// Seed 000's wire table at M=16384 (02-gather.jsonl): the search over the wire and its transport
// picks the measured best.
TEST(TuneSeed000, PicksTheMeasuredBestWire) {
  const auto rows = measured_rows("02-gather.jsonl");
  ASSERT_EQ(rows.size(), 3u);
  const json* best = &rows[0];
  for (const auto& r : rows)
    if (r["max_rank_time_us"].get<double>() < (*best)["max_rank_time_us"].get<double>()) best = &r;
  scenario::TuneOptions o;
  o.baseline = {{"mode", "rccl"}};
  o.shapes = {kWoB};
  o.ms = {16384};
  o.baseline = {{"mode", "rccl"}};
  o.fixed = {{"mode", "fused-sdma"}};
  o.only = {"gather_dtype", "gather_transport"};
  const json r = scenario::tune(*models::find_spec("gemm_ar"), mi355x(), "hw", o);
  const json& s = r["shapes"][0]["points"][0]["best"]["setting"];
  EXPECT_EQ(s["gather_dtype"], (*best)["gather_dtype"]);
  EXPECT_EQ(s["gather_transport"], (*best)["gather_transport"]);
  EXPECT_EQ((*best)["gather_transport"], "lsa");
}

// Seed 000's pull grid (03-pull-grid.jsonl, fp8/lsa, M=16384): the best grid is in the measured flat
// region (within 1% of the measured best), every grid of that region is within the band of the
// best, and the grids measured slow (more than 4% off) are not.
TEST(TuneSeed000, PicksThePullGridsFlatRegion) {
  const auto rows = measured_rows("03-pull-grid.jsonl");
  ASSERT_GE(rows.size(), 5u);
  double best = std::numeric_limits<double>::infinity();
  std::vector<json> grids;
  for (const auto& r : rows) best = std::min(best, r["max_rank_time_us"].get<double>()), grids.push_back(r["pull_blocks"]);
  std::vector<int64_t> flat, slow;
  for (const auto& r : rows) {
    const double t = r["max_rank_time_us"].get<double>();
    if (t <= best * 1.01) flat.push_back(r["pull_blocks"].get<int64_t>());
    // More than 4% off: 24, 32 and 256 blocks. 32 (measured +4.9% off the best) is predicted +6.3%
    // off, outside the +-5.0% band, since the pull kernel's round trip is fitted on this grid with
    // 7 loads in flight per lane (GEMM_AR.md); with the round trip of the 2026-11-29 fit it had been
    // predicted +3.85% off, a tie inside the band.
    if (t > best * 1.04) slow.push_back(r["pull_blocks"].get<int64_t>());
  }
  ASSERT_GE(flat.size(), 2u);
  ASSERT_GE(slow.size(), 3u);
  scenario::TuneOptions o;
  o.baseline = {{"mode", "rccl"}};
  o.shapes = {kWoB};
  o.ms = {16384};
  o.fixed = {{"mode", "fused-sdma"}, {"gather_dtype", "fp8"}, {"gather_transport", "lsa"}};
  o.only = {"pull_blocks"};
  o.values["pull_blocks"] = grids;
  const json r = scenario::tune(*models::find_spec("gemm_ar"), mi355x(), "hw", o);
  const json& p = r["shapes"][0]["points"][0];
  const int64_t picked = p["best"]["setting"]["pull_blocks"].get<int64_t>();
  EXPECT_NE(std::find(flat.begin(), flat.end(), picked), flat.end()) << picked;
  std::vector<int64_t> tied;
  for (const auto& t : p["within_band"]) tied.push_back(t["setting"]["pull_blocks"].get<int64_t>());
  for (int64_t g : flat) EXPECT_NE(std::find(tied.begin(), tied.end(), g), tied.end()) << g;
  for (int64_t g : slow) EXPECT_EQ(std::find(tied.begin(), tied.end(), g), tied.end()) << g;
  EXPECT_EQ(p["evaluations"].get<int64_t>(), int64_t(grids.size()) + 1);  // every grid once, and the baseline
}

// On a space small enough for both, coordinate descent with restarts finds the exhaustive optimum.
TEST(TuneSearch, CoordinateDescentFindsTheExhaustiveBest) {
  scenario::TuneOptions o;
  o.baseline = {{"mode", "rccl"}};
  o.shapes = {kWoB};
  o.ms = {4096};
  o.fixed = {{"mode", "fused-sdma"}};
  o.only = {"chunks", "tile_order", "gather_dtype", "gather_transport"};
  const auto& spec = *models::find_spec("gemm_ar");
  const json ex = scenario::tune(spec, mi355x(), "hw", o);
  o.exhaustive_limit = 0;
  const json cd = scenario::tune(spec, mi355x(), "hw", o);
  EXPECT_EQ(ex["search"]["method"], "exhaustive");
  EXPECT_EQ(cd["search"]["method"], "coordinate descent with restarts");
  const auto& pe = ex["shapes"][0]["points"][0];
  const auto& pc = cd["shapes"][0]["points"][0];
  EXPECT_EQ(pe["best"]["predicted_us"], pc["best"]["predicted_us"]);
  EXPECT_EQ(pe["evaluations"].get<int64_t>(), 12 * 2 * 2 * 2 + 1);  // every setting once, and the baseline
  EXPECT_LT(pc["evaluations"].get<int64_t>(), pe["evaluations"].get<int64_t>());
}

// The DeepSeek-V4-Pro wo_b shape over M 1024..32768: a best setting per M, and the threshold is an M
// from which the best settings found beat the baseline (M loses one row below it, wins at it).
TEST(TuneSearch, ThresholdIsWhereTheBestSettingsStartToWin) {
  scenario::TuneOptions o;
  o.baseline = {{"mode", "rccl"}};
  o.shapes = {kWoB};
  o.ms = {1024, 4096, 16384, 32768};
  o.baseline = {{"mode", "rccl"}};
  o.only = {"mode", "gather_dtype", "gather_transport", "chunks"};
  const json r = scenario::tune(*models::find_spec("gemm_ar"), mi355x(), "hw", o);
  const auto& sh = r["shapes"][0];
  ASSERT_EQ(sh["points"].size(), 4u);
  for (const auto& p : sh["points"]) {
    EXPECT_LE(p["best"]["predicted_us"].get<double>(), predict(p["best"]["setting"], p["m"].get<int64_t>()) + 1e-9);
    EXPECT_NE(p["best"]["setting"]["mode"], "rccl");  // the baseline's value is not searched
  }
  const int64_t t = sh["threshold"]["m_vs_baseline"].get<int64_t>();
  ASSERT_GT(t, 1);
  auto fused_wins = [&](int64_t m) {
    double f = std::numeric_limits<double>::infinity();
    for (const auto& s : sh["threshold"]["settings"]) f = std::min(f, predict(s, m));
    return f < predict({{"mode", "rccl"}}, m);
  };
  EXPECT_TRUE(fused_wins(t));
  EXPECT_FALSE(fused_wins(t - 1));
  EXPECT_TRUE(fused_wins(32768));
}

// The YAML scenario tune writes is a scenario fusesim run accepts: a best and a baseline case per M.
TEST(TuneOutput, ScenarioYamlHasABestAndABaselineCasePerM) {
  scenario::TuneOptions o;
  o.baseline = {{"mode", "rccl"}};
  o.shapes = {kWoB};
  o.ms = {8192};
  o.fixed = {{"mode", "fused-sdma"}};
  o.only = {"gather_dtype", "gather_transport"};
  const json r = scenario::tune(*models::find_spec("gemm_ar"), mi355x(), kRoot + "/hw/mi355x-8gpu.yaml", o);
  const YAML::Node y = YAML::Load(scenario::format_tune_scenario(r));
  ASSERT_EQ(y["cases"].size(), 2u);
  EXPECT_EQ(y["cases"][0]["id"].as<std::string>(), "shape0/best/m=8192");
  EXPECT_EQ(y["cases"][0]["params"]["gather_transport"].as<std::string>(), "lsa");
  EXPECT_EQ(y["cases"][1]["params"]["mode"].as<std::string>(), "rccl");
  EXPECT_EQ(y["model"].as<std::string>(), "gemm_ar");
  const std::string table = scenario::format_tune_table(r);
  EXPECT_NE(table.find("serving threshold"), std::string::npos) << table;
}
