// Serving impact and break-even on the committed MI355X hardware file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "calibrate/fit.hpp"
#include "hw/io.hpp"

#include "models/model.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "models/gemm_ar/breakeven.hpp"
#include "models/ttft/ttft.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::test;

// Issue 3: every TTFT row within 1 percentage point of the seeds' change. The fused-layer count of each
// model is fitted on its bf16-wire rows (layer_fits); the fp8-wire rows are held out.
TEST(Ttft, EveryRowWithinOnePercentagePointAndTheFp8RowsAreHeldOut) {
  auto sc = scenario::load(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  auto hw = scenario::load_hardware(sc);
  const auto res = scenario::run(sc, hw, scenario::RunOptions{});
  int rows = 0, held = 0;
  for (const auto& c : res["cases"]) {
    const std::string id = c["id"];
    ++rows;
    const double base_us = c["params"]["ttft_base_ms"].get<double>() * 1e3;
    const double meas_pct = (c["measured_us"].get<double>() / base_us - 1) * 100;
    const double pred_pct = c["ttft_change_pct"].get<double>();
    EXPECT_LT(pred_pct, 0) << id;  // fusing shortens the prefill
    const bool miss = id == "v41-flash/tp4/fp8" || id == "v41-flash/tp4/fp8/host2" || id == "v41-flash/tp2/fp8" ||
                      id == "v4-pro/bs64/fp8";
    // Since the MI355X file is fitted from its components (issue 17), the mxfp8 GEMM is its own
    // (183 us at [16384, 5120] TP4 where the seed-000 fit had 260 us): the V4.1-Flash layer becomes
    // gather-bound and its held-out fp8-wire rows over-predict the saving by 1.5-1.8 points (-6.58 vs
    // -5.10, -6.88 vs -5.28, -9.00 vs -7.19; 1.3-1.6 before the launch sum and HBM rates were fitted
    // on seed 000's kernel phases). They are the scenario's known misses, and must stay
    // outside the point. V4-Pro's bs=64 fp8 row is one since the gemm/drain split fix (issue 17): its
    // fp8 saving is under-predicted like the other two V4-Pro fp8 rows, now by 0.97 points of the base
    // TTFT, which is 1.03% of the measured TTFT, outside the scenario's 1% tolerance.
    if (id == "v4-pro/bs64/fp8") {
      EXPECT_GT(std::fabs(c["error_pct"].get<double>()), 1.0) << id << ": a listed miss now within the tolerance";
      EXPECT_LE(std::fabs(pred_pct - meas_pct), 1.0) << id;
    } else if (miss) {
      EXPECT_GT(std::fabs(pred_pct - meas_pct), 1.0) << id << ": a listed miss now within the point";
      EXPECT_LE(std::fabs(pred_pct - meas_pct), 2.0) << id;
    } else {
      EXPECT_NEAR(pred_pct, meas_pct, 1.0) << id;
    }
    EXPECT_EQ(c.contains("known_miss"), miss) << id;
    ASSERT_TRUE(c.contains("layers_fit")) << id;
    const auto& f = c["layers_fit"];
    const bool fp8 = id.find("/fp8") != std::string::npos;
    EXPECT_EQ(f["row"], fp8 ? "held out" : "fitted") << id;
    held += fp8;
    EXPECT_EQ(f["name"], id.rfind("v4-pro/", 0) == 0 ? "v4-pro" : "v41-flash") << id;
    EXPECT_DOUBLE_EQ(c["params"]["layers"].get<double>(), f["layers"].get<double>()) << id;
  }
  EXPECT_EQ(rows, 12);
  EXPECT_EQ(held, 6);
  EXPECT_EQ(res["summary"]["held_out"]["compared"], 6);
  EXPECT_LE(res["summary"]["held_out"]["max_abs_error_pct"].get<double>(), 2.0);  // 1.67: the three rows above
}

TEST(Ttft, FittedLayerCountsAreTheLeastSquaresSolutionAndStayWithinTheirBounds) {
  // Recompute each fit by hand from the rows run with one layer: L = sum(a y) / sum(a a), with a = the
  // layer's change per forward / base TTFT and y = the measured change / base TTFT. V4.1-Flash's count
  // must stay at most the 40 wo_b copies seed 001 reports (they include draft layers that never fuse).
  auto sc = scenario::load(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  auto hw = scenario::load_hardware(sc);
  const auto res = scenario::run(sc, hw, scenario::RunOptions{});
  const auto fits = models::layer_fits(sc).fits;
  ASSERT_EQ(fits.size(), 2u);
  for (const auto& f : fits) {
    double ay = 0, aa = 0, fitted = -1;
    for (const auto& c : res["cases"]) {
      if (std::find(f.cases.begin(), f.cases.end(), c["id"].get<std::string>()) == f.cases.end()) continue;
      const double base_us = c["params"]["ttft_base_ms"].get<double>() * 1e3;
      const double a = -c["saving_per_layer_forward_us"].get<double>() / base_us;
      const double y = (c["measured_us"].get<double>() - base_us) / base_us;
      ay += a * y;
      aa += a * a;
      fitted = c["layers_fit"]["layers"].get<double>();
    }
    EXPECT_NEAR(fitted, ay / aa, 1e-9 * fitted) << f.name;
    if (f.name == "v41-flash") {
      EXPECT_GT(fitted, 10.0);
      EXPECT_LT(fitted, 40.0);
    } else {
      EXPECT_GT(fitted, 30.0);
      EXPECT_LT(fitted, 100.0);
    }
  }
}

TEST(Ttft, MeasuredChangeIsTranslatedIntoTheLayerCountItWouldTake) {
  // The diagnostic next to each measured row: (base - measured) / the model's saving per layer over the
  // prompt; predicted = base - layers x saving, so it equals the layer count used exactly when the error is zero.
  auto sc = scenario::load(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  auto hw = scenario::load_hardware(sc);
  const auto res = scenario::run(sc, hw, scenario::RunOptions{});
  for (const auto& c : res["cases"]) {
    ASSERT_TRUE(c.contains("measured_implies_layers")) << c["id"];
    const double base_us = c["params"]["ttft_base_ms"].get<double>() * 1e3;
    const double saving = c["saving_per_layer_forward_us"].get<double>();
    EXPECT_NEAR(c["measured_implies_layers"].get<double>() * saving, base_us - c["measured_us"].get<double>(), 1e-6 * base_us);
    EXPECT_NEAR(c["predicted_us"].get<double>(), base_us - c["params"]["layers"].get<double>() * saving, 1e-6 * base_us);
  }
}

namespace {
// The committed TTFT scenario with text edits (each {from, to, all?}), written to a temporary file
// whose hardware path is absolute; run like `fusesim run`. Returns the result, or the error text.
struct Edited {
  std::string error;
  nlohmann::json result;
};
struct Edit {
  std::string from, to;
  bool all = false;
};
Edited run_edited(const std::vector<Edit>& edits) {
  std::ifstream in(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& e : edits) {
    size_t at = t.find(e.from);
    if (at == std::string::npos) return {"edit not applied: " + e.from, nullptr};
    do {
      t.replace(at, e.from.size(), e.to);
      at = t.find(e.from, at + e.to.size());
    } while (e.all && at != std::string::npos);
  }
  const std::string hwkey = "hardware: hw/";
  t.replace(t.find(hwkey), hwkey.size(), "hardware: " FUSESIM_SOURCE_DIR "/hw/");
  const std::string path = test_tmp("ttft-fit.yaml");
  std::ofstream(path) << t;
  try {
    auto sc = scenario::load(path);
    auto hw = scenario::load_hardware(sc);
    return {"", scenario::run(sc, hw, scenario::RunOptions{})};
  } catch (const hw::FileError& e) {
    return {e.what(), nullptr};
  }
}
}  // namespace

TEST(Ttft, LayerFitErrorsNameTheKey) {
  auto expect_error = [&](const std::vector<Edit>& edits, const std::string& message) {
    const Edited r = run_edited(edits);
    EXPECT_NE(r.error.find(message), std::string::npos) << "edit " << edits.front().to << ": " << (r.error.empty() ? "accepted" : r.error);
  };
  expect_error({{"layers: {fit: v4-pro}", "layers: {fit: v4-prox}"}}, "'cases[v4-pro/bs8/bf16].params.layers': no layer fit named 'v4-prox'");
  expect_error({{"layers: {fit: v4-pro}", "layers: {fiz: v4-pro}"}}, "'cases[v4-pro/bs8/bf16].params.layers': expected a number or {fit: NAME}");
  expect_error({{"cases: [v4-pro/bs8/bf16,", "cases: [v4-pro/bs8/bf17,"}}, "'layer_fits[0].cases[0]': no case 'v4-pro/bs8/bf17'");
  // A listed row that does not take the fit's count is blamed at its own `layers`, whatever it holds.
  // (the row is a known miss of the scenario, which a fit refuses first: its known_miss is folded into its source here)
  expect_error({{"cases: [v4-pro/bs8/bf16,", "cases: [v41-flash/tp4/fp8,"},
                {"(-5.10%)\", known_miss: \"", "(-5.10%): "}},
               "'cases[v41-flash/tp4/fp8].params.layers': row 'v41-flash/tp4/fp8' is listed by layer_fits[0].cases[0] (fit 'v4-pro')");
  expect_error({{"layers: {fit: v4-pro}", "layers: [61]"}}, "'cases[v4-pro/bs8/bf16].params.layers': row 'v4-pro/bs8/bf16' is listed");
  expect_error({{"  - name: v41-flash", "  - name: v4-pro"}}, "fit 'v4-pro' is named twice");
  expect_error({{"layer_fits:", "layer_fitz:"}}, "'layer_fitz'");
  expect_error({{"    source: \"DeepSeek-V4-Pro", "    sourc: \"DeepSeek-V4-Pro"}}, "'layer_fits[0].sourc'");
  expect_error({{"model: ttft", "model: gemm_ar"}}, "only the ttft model fits a layer count");
  expect_error({{"    nominal: 61\n", ""}}, "'layer_fits[0].nominal': missing (nominal_source without a nominal count)");
  // No layer_fits block at all, while cases ask for a fit: named, not an internal error.
  {
    std::ifstream in(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
    const std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t a = t.find("layer_fits:"), b = t.find("cases:\n");
    ASSERT_TRUE(a != std::string::npos && b != std::string::npos && a < b);
    expect_error({{t.substr(a, b - a), ""}}, "no layer fit named 'v4-pro': this scenario has no layer_fits");
  }
  // A null layer_fits is named at its own line.
  {
    const Edited r = run_edited({{"layer_fits:\n", "layer_fits:\nlayer_fits_was:\n"}});
    EXPECT_NE(r.error.find("'layer_fits_was'"), std::string::npos) << r.error;
  }
  // A known miss cannot be fitted on.
  expect_error({{"fused -3.36%\"}", "fused -3.36%\", known_miss: \"bad run\"}"}},
               "'layer_fits[0].cases[0]': case 'v4-pro/bs8/bf16' is a known miss");
  // The arms predict the same layer: no count can be fitted (was a count of -1e16 from rounding noise).
  expect_error({{"fused: {mode: fused-sdma, n: 7168, k: 2048, world_size: 8, quant: blockscale}}", "fused: {mode: rccl, n: 7168, k: 2048, world_size: 8, quant: blockscale}}", true}},
               "the model's layer changes nothing on its rows");
  // Measured rows equal to their base: a count of 0, said so.
  expect_error({{"value_us: 1097927", "value_us: 1136100"}, {"value_us: 2164370", "value_us: 2232000"}, {"value_us: 8601057", "value_us: 8890900"}},
               "its measured rows show no TTFT change");
  // Measured rows far below their base: a count whose base layers exceed the TTFT, blamed on the fit.
  expect_error({{"value_us: 1097927", "value_us: 136100"}, {"value_us: 2164370", "value_us: 232000"}, {"value_us: 8601057", "value_us: 890900"}},
               "'layer_fits[0]': fit 'v4-pro' gives");
}

TEST(Ttft, LayerFitWarningsAndNominalScale) {
  const Edited base = run_edited({});
  ASSERT_TRUE(base.error.empty()) << base.error;
  EXPECT_TRUE(base.result["summary"]["warnings"].empty()) << base.result["summary"]["warnings"];
  for (const auto& c : base.result["cases"]) {
    const auto& n = c["layers_fit"]["nominal"];
    EXPECT_NEAR(n["scale"].get<double>(), c["layers_fit"]["layers"].get<double>() / n["layers"].get<double>(), 1e-12);
  }
  // One row: it matches by construction. All rows fitted: nothing held out. Above max_layers.
  const Edited one = run_edited({{"cases: [v4-pro/bs8/bf16, v4-pro/bs16/bf16, v4-pro/bs64/bf16]", "cases: [v4-pro/bs8/bf16]"}});
  ASSERT_TRUE(one.error.empty()) << one.error;
  EXPECT_NE(one.result["summary"]["warnings"].dump().find("layer fit 'v4-pro' is fitted on 1 row"), std::string::npos);
  const Edited all = run_edited({{"cases: [v4-pro/bs8/bf16, v4-pro/bs16/bf16, v4-pro/bs64/bf16]",
                                  "cases: [v4-pro/bs8/bf16, v4-pro/bs16/bf16, v4-pro/bs64/bf16, v4-pro/bs8/fp8, v4-pro/bs16/fp8, v4-pro/bs64/fp8]"},
                                 {"-6.44%\", known_miss: \"", "-6.44%: "}});  // a known miss cannot be fitted on
  ASSERT_TRUE(all.error.empty()) << all.error;
  EXPECT_NE(all.result["summary"]["warnings"].dump().find("layer fit 'v4-pro' holds out no row"), std::string::npos);
  const Edited cap = run_edited({{"    max_layers: 40", "    max_layers: 10"}});
  ASSERT_TRUE(cap.error.empty()) << cap.error;
  EXPECT_NE(cap.result["summary"]["warnings"].dump().find("above its max_layers 10"), std::string::npos);
}

TEST(Ttft, CalibrateFitRefusesAScenarioThatFitsItsOwnLayerCounts) {
  try {
    calibrate::points_from_scenarios({FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml"});
    ADD_FAILURE() << "accepted";
  } catch (const hw::FileError& e) {
    EXPECT_NE(std::string(e.what()).find("fits its own layer counts"), std::string::npos) << e.what();
  }
}

TEST(Ttft, ImpossibleInputsAreErrorsNamingTheKey) {
  auto sc = scenario::load(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  auto hw = scenario::load_hardware(sc);
  const YAML::Node good = YAML::Load(
      "{batch: 8, prompt_tokens: 4096, chunk_tokens: 16384, layers: 61, ttft_base_ms: 1136.1,"
      " base: {mode: rccl, n: 7168, k: 2048, world_size: 8, quant: blockscale},"
      " fused: {mode: fused-sdma, n: 7168, k: 2048, world_size: 8, quant: blockscale}}");
  EXPECT_NO_THROW(models::run_ttft_case(hw, good, nullptr));
  auto expect_error = [&](const std::string& key, const YAML::Node& value, const std::string& text, const char* arm = nullptr) {
    YAML::Node p = YAML::Clone(good);
    if (arm) p[arm][key] = value;
    else p[key] = value;
    try {
      models::run_ttft_case(hw, p, nullptr);
      ADD_FAILURE() << key << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error("batch", YAML::Node(2.5), "'batch' must be a whole number from 1 to 2^31");
  expect_error("batch", YAML::Node(-4), "'batch' must be a whole number from 1 to 2^31");
  expect_error("prompt_tokens", YAML::Node(-2048), "'prompt_tokens' must be a whole number from 1 to 2^31");
  expect_error("ttft_base_ms", YAML::Node(1.0), "'ttft_base_ms' (1 ms) is shorter than the base arm's 61 layers");
  expect_error("n", YAML::Node(4096), "both arms must be the same layer", "fused");
  expect_error("world_size", YAML::Node(4), "both arms must be the same layer", "fused");
  expect_error("m", YAML::Node(4096), "'base' sets 'm'", "base");
  expect_error("batch", YAML::Node(100000000), "at most 4096 chunks");
  expect_error("chunkz", YAML::Node(8), "ttft parameter 'fused': unknown gemm_ar parameter 'chunkz'", "fused");
  expect_error("layers", YAML::Node(0), "'layers' must be > 0");
  expect_error("layers", YAML::Load("{fit: v4-pro}"), "resolved by the scenario's layer_fits");
  sim::TraceSink trace;
  EXPECT_THROW(models::run_ttft_case(hw, good, &trace), std::invalid_argument);  // no timeline of its own
}



