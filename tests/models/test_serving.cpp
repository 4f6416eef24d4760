// Serving impact and break-even on the committed MI355X hardware file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "hw/io.hpp"

#include "models/params.hpp"
#include "models/scenario.hpp"
#include "models/serving.hpp"

using namespace fusesim;

TEST(Ttft, V4ProBf16WireWithinOnePercentagePoint) {
  // seed 002: TTFT -3.36 / -3.03 / -3.26% at bs 8 / 16 / 64 (bf16 wire).
  auto sc = models::Scenario::load(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  auto hw = models::load_scenario_hardware(sc);
  models::RunOptions opt;
  opt.only = "v4-pro/";
  const auto res = models::run_scenario(sc, hw, opt);
  int bf16 = 0;
  for (const auto& c : res["cases"]) {
    const double base_us = c["params"]["ttft_base_ms"].get<double>() * 1e3;
    const double meas_pct = (c["measured_us"].get<double>() / base_us - 1) * 100;
    const double pred_pct = c["ttft_change_pct"].get<double>();
    EXPECT_LT(pred_pct, 0) << c["id"];  // fusing shortens the prefill
    if (c["id"].get<std::string>().find("bf16") != std::string::npos) {
      ++bf16;
      EXPECT_NEAR(pred_pct, meas_pct, 1.0) << c["id"];
    }
  }
  EXPECT_EQ(bf16, 3);
}

TEST(Ttft, MeasuredChangeIsTranslatedIntoTheLayerCountItWouldTake) {
  // The diagnostic next to each measured row: (base - measured) / the model's saving per layer over the
  // prompt. At V4.1-Flash it comes out near 20 for five of the six rows, half the 40 layers assumed --
  // the known miss is in the layer count or the base path, not in one row.
  auto sc = models::Scenario::load(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  auto hw = models::load_scenario_hardware(sc);
  const auto res = models::run_scenario(sc, hw, models::RunOptions{});
  int rows = 0;
  for (const auto& c : res["cases"]) {
    ASSERT_TRUE(c.contains("measured_implies_layers")) << c["id"];
    ++rows;
    const double base_us = c["params"]["ttft_base_ms"].get<double>() * 1e3;
    const double saving = c["saving_per_layer_forward_us"].get<double>();
    const double n = c["measured_implies_layers"].get<double>();
    EXPECT_NEAR(n * saving, base_us - c["measured_us"].get<double>(), 1e-6 * base_us) << c["id"];
    // Predicted change = layers x saving; so the implied count equals the stated one exactly when the error is zero.
    EXPECT_NEAR(c["predicted_us"].get<double>(), base_us - c["params"]["layers"].get<double>() * saving, 1e-6 * base_us);
    if (c["id"].get<std::string>().rfind("v41-flash/", 0) == 0) {
      EXPECT_GT(n, 15.0) << c["id"];
      EXPECT_LT(n, 30.0) << c["id"];
    }
  }
  EXPECT_EQ(rows, 12);
}

TEST(Ttft, ImpossibleInputsAreErrorsNamingTheKey) {
  auto sc = models::Scenario::load(FUSESIM_SOURCE_DIR "/scenarios/mi355x-dsv4-serving-ttft.yaml");
  auto hw = models::load_scenario_hardware(sc);
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
  expect_error("batch", YAML::Node(2.5), "'batch' must be a whole number >= 1");
  expect_error("batch", YAML::Node(-4), "'batch' must be a whole number >= 1");
  expect_error("prompt_tokens", YAML::Node(-2048), "'prompt_tokens' must be a whole number >= 1");
  expect_error("ttft_base_ms", YAML::Node(1.0), "'ttft_base_ms' (1 ms) is shorter than the base arm's 61 layers");
  expect_error("n", YAML::Node(4096), "both arms must be the same layer", "fused");
  expect_error("world_size", YAML::Node(4), "both arms must be the same layer", "fused");
  expect_error("m", YAML::Node(4096), "'base' sets 'm'", "base");
  expect_error("batch", YAML::Node(100000000), "at most 4096 chunks");
  expect_error("chunkz", YAML::Node(8), "ttft parameter 'fused': unknown gemm_ar parameter 'chunkz'", "fused");
  sim::TraceSink trace;
  EXPECT_THROW(models::run_ttft_case(hw, good, &trace), std::invalid_argument);  // no timeline of its own
}

TEST(Outputs, SeveralFilesAreWrittenAllOrNothing) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "fusesim_outputs_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string a = (dir / "trace.json").string();
  { std::ofstream(a) << "old"; }
  // The second output cannot be written: the first keeps its old content, no temporary is left.
  EXPECT_THROW(hw::write_files_atomic({{a, "new"}, {(dir / "missing" / "out.txt").string(), "x"}}), std::runtime_error);
  std::ifstream in(a);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, "old");
  EXPECT_FALSE(fs::exists(a + ".tmp"));
  EXPECT_THROW(hw::write_files_atomic({{a, "1"}, {(dir / "." / "trace.json").string(), "2"}}), std::invalid_argument);
  hw::write_files_atomic({{a, "new"}, {(dir / "out.txt").string(), "x"}});
  std::ifstream in2(a);
  std::string got2((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got2, "new");
  fs::remove_all(dir);
}

TEST(BreakEven, FusedWinsFromSomeMAndAtTheServingThresholds) {
  const auto hw = models::load_hardware(FUSESIM_SOURCE_DIR "/hw/mi355x-8gpu.yaml");
  models::GemmArConfig c;
  const auto bf16 = models::break_even(hw, c, 32768);
  ASSERT_GT(bf16.m_vs_split, 0);
  ASSERT_GT(bf16.m_vs_rccl, 0);
  // The thresholds SGLang chose by hand (8192 bf16, 2048 fp8) lie inside the winning range of the M it
  // fuses (multiples of ws x BLOCK_M: it declines ragged M).
  EXPECT_LE(bf16.m_vs_rccl_aligned, 8192);
  c.gather_dtype = "fp8";
  c.gather_transport = "lsa";
  const auto fp8 = models::break_even(hw, c, 32768);
  ASSERT_GT(fp8.m_vs_rccl, 0);
  EXPECT_LE(fp8.m_vs_rccl_aligned, 2048);
  EXPECT_LE(fp8.m_vs_rccl, bf16.m_vs_rccl);  // the fp8 wire pays from no larger an M
  // Over every M, padding costs the fused path: just past a multiple of 1024 the unpadded RCCL
  // baseline wins (M=1025 runs padded to 2048), so the all-M threshold lies above the aligned one,
  // and it is exact: the fused path wins at it and loses one row below.
  auto at = [&](int64_t m, const char* mode) {
    models::GemmArConfig x;
    x.m = m;
    x.mode = mode;
    return models::simulate_gemm_ar(hw, x).total_us;
  };
  EXPECT_GT(at(1025, "fused-sdma"), at(1025, "rccl"));
  EXPECT_GT(bf16.m_vs_rccl, bf16.m_vs_rccl_aligned);
  EXPECT_LT(at(bf16.m_vs_rccl, "fused-sdma"), at(bf16.m_vs_rccl, "rccl"));
  EXPECT_GE(at(bf16.m_vs_rccl - 1, "fused-sdma"), at(bf16.m_vs_rccl - 1, "rccl"));
  // At the returned M the fused path really is faster than the split path.
  bool checked = false;
  for (const auto& p : bf16.curve)
    if (p["m"].get<int64_t>() == bf16.m_vs_split) {
      EXPECT_LT(p["fused_us"].get<double>(), p["split_us"].get<double>());
      checked = true;
    }
  EXPECT_TRUE(checked);
}
