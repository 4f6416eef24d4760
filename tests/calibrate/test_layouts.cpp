// Every RESULT_JSON layout bench_gemm_ar.py has printed (data README's table, by commit), read as that
// version ran: the real 9aaef3e9 gemm-only rows (today's layout), rows written from the table for
// 103655f6, 0b26ebf8 and 16ddbb94 (tests/calibrate/fixtures/layouts/README.md marks them), keys that
// do not apply to a mode ignored, keys that changed what ran modelled or refused by name, NaN rel_l2
// accepted only where the run does not validate; bench_ar.py's standalone all-reduce lines.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "calibrate/measurements.hpp"
#include "hw/hardware.hpp"
#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "test_util.hpp"
#include "tests/test_util.hpp"

namespace fusesim::calibrate {
namespace {
using test::fixture;
using test::src;

std::string s(const Record& r, const char* k) { return r.params[k] ? r.params[k].as<std::string>() : std::string("(absent)"); }

/// The gemm_ar model runs the record's parameters (validate() accepts them) and predicts a positive time.
double predict(const Record& r) {
  static const auto hw = models::load_hardware(src("hw/mi355x-8gpu.yaml"));
  const auto out = models::run_gemm_ar_case(hw, r.params, nullptr);
  return out["predicted_us"].get<double>();
}

// The real file: today's layout, every key printed (gather_bands 8 and publish with fuse_reduce_push
// false, tile_order auto + resolved_tile_order linear, block_m 128, sdma_queues 8); it was refused
// whole at its first row ("gather_bands: only applies with fuse_reduce_push: true").
TEST(Layouts, RealDsv41GemmOnlyRowsParseAndEveryOneRunsInTheModel) {
  const auto pr = parse_measurement_file(fixture("mori-public/sweep_dsv41_gemm_only.jsonl"));
  ASSERT_EQ(pr.records.size(), 9u);
  for (const auto& r : pr.records) {
    EXPECT_FALSE(r.rejected) << r.line << ": " << r.reason;
    EXPECT_EQ(r.extra["layout"], "ad271d19");
    EXPECT_EQ(s(r, "mode"), "gemm-only");
    EXPECT_EQ(s(r, "quant"), "blockscale");
    EXPECT_EQ(s(r, "tile_order"), "linear") << "resolved_tile_order is what ran";
    EXPECT_EQ(r.extra["tile_order_printed"], "auto");
    // gemm-only: the wire and gather knobs do not apply; at the model's defaults, printed values kept
    EXPECT_EQ(r.params["gather_bands"].as<int>(), 1);
    EXPECT_EQ(r.extra["ignored"]["gather_bands"], "8");
    EXPECT_EQ(r.extra["ignored"]["sdma_queues"], "8");
    EXPECT_GT(predict(r), 0.0);
  }
  EXPECT_DOUBLE_EQ(pr.records[0].value, 163.08100521564484);
  EXPECT_EQ(pr.records[1].params["world_size"].as<int>(), 4);
  EXPECT_EQ(to_fit_points(pr.records).size(), 9u);
}

TEST(Layouts, TodaysCompositeRowsIgnoreKeysOfOtherModesAndRefuseUnmodelledOnesByName) {
  const auto pr = parse_measurement_file(fixture("layouts/ad271d19_composite.jsonl"));
  ASSERT_EQ(pr.records.size(), 15u);
  const auto& fused = pr.records[0];  // chunks null = the --chunks default 8
  EXPECT_FALSE(fused.rejected) << fused.reason;
  EXPECT_EQ(fused.params["chunks"].as<int>(), 8);
  EXPECT_EQ(fused.params["sdma_queues"].as<int>(), 8) << "applies to an SDMA mode: kept";
  EXPECT_EQ(fused.params["gather_bands"].as<int>(), 1) << "no fuse_reduce_push: bands ignored";
  const auto& pull = pr.records[1];
  EXPECT_EQ(s(pull, "gather_transport"), "lsa");
  EXPECT_EQ(s(pull, "gather_dtype"), "fp8");
  const auto& split = pr.records[2];  // publish fence printed without fuse_reduce_push: ignored
  EXPECT_FALSE(split.rejected) << split.reason;
  EXPECT_EQ(s(split, "publish"), "writethrough");
  EXPECT_EQ(split.extra["ignored"]["publish"], "fence");
  const auto& push = pr.records[3];
  EXPECT_TRUE(push.params["fuse_reduce_push"].as<bool>());
  EXPECT_EQ(push.params["gather_bands"].as<int>(), 8);
  for (int i = 0; i < 4; ++i) EXPECT_GT(predict(pr.records[size_t(i)]), 0.0) << i;
  // One refusal per key that changes what ran, the key named first.
  const char* keys[] = {"block_m", "fence", "tile_order", "swap_ab", "permlane", "lane_transpose", "atomic_order", "stop_after", "timing"};
  for (size_t i = 0; i < 9; ++i) {
    const auto& r = pr.records[4 + i];
    EXPECT_TRUE(r.rejected) << keys[i];
    EXPECT_EQ(r.reason.rfind(std::string(keys[i]) + ":", 0), 0u) << r.reason;
  }
  EXPECT_NE(pr.records[11].reason.find("times the scatter alone"), std::string::npos) << pr.records[11].reason;
  EXPECT_NE(pr.records[12].reason.find("eager"), std::string::npos) << pr.records[12].reason;
  // NaN rel_l2: refused where gemm-only validates (today's layout), accepted with --skip-validation.
  EXPECT_TRUE(pr.records[13].rejected);
  EXPECT_EQ(pr.records[13].reason.rfind("rel_l2: NaN where mode gemm-only validates (layout ad271d19)", 0), 0u) << pr.records[13].reason;
  EXPECT_FALSE(pr.records[14].rejected) << pr.records[14].reason;
  EXPECT_EQ(pr.records[14].extra["not_validated"], "the run passed --skip-validation");
  EXPECT_EQ(to_fit_points(pr.records).size(), 5u);
  // fuse_reduce_push without gather_bands (a calibrate mori failure record, a hand-written row): the default 8.
  const auto r = record_from_result_json(nlohmann::json::parse(R"({"mode": "fused-sdma", "m": 16384, "quant": "blockscale",
      "gather_dtype": "bf16", "fuse_reduce_push": true, "max_rank_time_us": 1160})"), "x.jsonl", 1);
  EXPECT_EQ(r.params["gather_bands"].as<int>(), 8);
}

// 103655f6: quant printed, no gather keys; --fuse-quantize on by default (a row without it was read as off).
TEST(Layouts, Layout103655f6ReadsFuseQuantizeOnAndItsWire) {
  const auto pr = parse_measurement_file(fixture("layouts/103655f6.log"));
  ASSERT_EQ(pr.records.size(), 3u);
  const auto& g = pr.records[0];
  EXPECT_FALSE(g.rejected) << g.reason;
  EXPECT_EQ(g.extra["layout"], "103655f6");
  EXPECT_EQ(s(g, "quant"), "ptpc");
  EXPECT_FALSE(g.params["fuse_quantize"].as<bool>()) << "gemm-only: no reduce to fuse into";
  EXPECT_GT(predict(g), 0.0);
  const auto& f = pr.records[1];
  EXPECT_FALSE(f.rejected) << f.reason;
  EXPECT_TRUE(f.params["fuse_quantize"].as<bool>());
  EXPECT_EQ(s(f, "gather_dtype"), "fp8");
  EXPECT_EQ(s(f, "gather_transport"), "sdma");
  EXPECT_EQ(f.params["chunks"].as<int>(), 8);
  EXPECT_GT(predict(f), 0.0);
  const auto& off = pr.records[2];
  EXPECT_TRUE(off.rejected);
  EXPECT_EQ(off.reason.rfind("gather_dtype: layout 103655f6 prints no wire", 0), 0u) << off.reason;
}

// 16ddbb94: no quant (ptpc, BLOCK_M 256), chunks 0 = one push per row band, gemm-only rel_l2 NaN.
TEST(Layouts, Layout16ddbb94ReadsPtpcChunksPerBandAndAcceptsItsGemmOnlyNaN) {
  const auto pr = parse_measurement_file(fixture("layouts/16ddbb94.log"));
  ASSERT_EQ(pr.records.size(), 3u);
  const auto& g = pr.records[0];
  EXPECT_FALSE(g.rejected) << g.reason;
  EXPECT_EQ(g.extra["layout"], "16ddbb94 or 0b26ebf8");
  EXPECT_EQ(s(g, "quant"), "ptpc");
  EXPECT_NE(g.extra["not_validated"].get<std::string>().find("not validated"), std::string::npos);
  EXPECT_GT(predict(g), 0.0);
  const auto& f = pr.records[1];
  EXPECT_FALSE(f.rejected) << f.reason;
  EXPECT_EQ(s(f, "quant"), "ptpc");
  EXPECT_EQ(f.params["chunks"].as<int>(), 8);  // 16384 / 8 ranks / BLOCK_M 256 = 8 row bands per destination
  EXPECT_EQ(s(f, "gather_dtype"), "bf16");
  EXPECT_GT(predict(f), 0.0);
  // A composite row's NaN is a check that failed, not a skipped one.
  EXPECT_TRUE(pr.records[2].rejected);
  EXPECT_EQ(pr.records[2].reason.rfind("rel_l2: NaN where mode fused-sdma validates", 0), 0u) << pr.records[2].reason;
}

// 0b26ebf8 has 16ddbb94's key set; only the --chunks default differs: stated by "# layout:" or --layout.
TEST(Layouts, Layout0b26ebf8IsStatedWhereTheKeySetCannotTell) {
  const auto pr = parse_measurement_file(fixture("layouts/0b26ebf8.log"));
  ASSERT_EQ(pr.records.size(), 2u);
  EXPECT_FALSE(pr.records[0].rejected) << pr.records[0].reason;  // gemm-only NaN: not validated at this layout
  EXPECT_EQ(pr.records[0].extra["layout"], "0b26ebf8");
  const auto& sp = pr.records[1];
  EXPECT_FALSE(sp.rejected) << sp.reason;
  EXPECT_EQ(sp.params["chunks"].as<int>(), 1);
  EXPECT_EQ(s(sp, "quant"), "ptpc");
  EXPECT_GT(predict(sp), 0.0);
  // Without the layout line: the composite row is rejected saying why and how to state it.
  std::string text = test::slurp(fixture("layouts/0b26ebf8.log"));
  text.replace(text.find("# layout: 0b26ebf8"), 18, "#");
  std::istringstream in(text);
  const auto un = parse_result_json_stream(in, "x.log");
  ASSERT_EQ(un.records.size(), 2u);
  EXPECT_TRUE(un.records[1].rejected);
  EXPECT_NE(un.records[1].reason.find("state the layout with --layout"), std::string::npos) << un.records[1].reason;
  // Stated as 16ddbb94 instead: one push per row band (8192 / 8 / 256 = 4).
  std::istringstream in2(text);
  const auto as16 = parse_result_json_stream(in2, "x.log", "16ddbb94");
  EXPECT_EQ(as16.records[1].params["chunks"].as<int>(), 4);
  // A stated layout must agree with the key set.
  const std::string w = fusesim::test::error_of<hw::FileError>([] {
    record_from_result_json(nlohmann::json::parse(R"({"mode": "gemm-only", "m": 64, "quant": "ptpc", "max_rank_time_us": 9})"), "y.jsonl", 3,
                            "0b26ebf8");
  });
  EXPECT_NE(w.find("y.jsonl:3: 'layout'"), std::string::npos) << w;
}

TEST(Layouts, NaNLiteralsParseOnlyOutsideStrings) {
  const auto j = parse_benchmark_json(R"({"a": NaN, "b": -Infinity, "c": "NaN here", "d": [1, NaN]})", "z", 1);
  EXPECT_EQ(j["a"], "NaN");
  EXPECT_EQ(j["b"], "-Infinity");
  EXPECT_EQ(j["c"], "NaN here");
  EXPECT_EQ(j["d"][1], "NaN");
  EXPECT_THROW(parse_benchmark_json(R"({"a": NaNa})", "z", 1), hw::FileError);
}

// bench_ar.py lines: collective records (COLLECTIVE_SCHEMA.md); they stopped the parser with
// "did you mean max_rank_time_us" (its max_rank_time_ms).
TEST(Layouts, BenchArLinesAreCollectiveRecords) {
  const auto pr = parse_measurement_file(fixture("bench_ar.log"));
  ASSERT_EQ(pr.records.size(), 7u);
  for (size_t i = 0; i < 4; ++i) {
    const auto& r = pr.records[i];
    EXPECT_FALSE(r.rejected) << r.reason;
    EXPECT_EQ(r.kind, "collective");
    EXPECT_EQ(r.model, "collective");
    EXPECT_EQ(s(r, "op"), "all-reduce");
    EXPECT_EQ(r.params["n"].as<int>(), 7168);
    EXPECT_EQ(r.params["world_size"].as<int>(), 8);
    EXPECT_EQ(s(r, "dtype"), "bf16");
  }
  EXPECT_EQ(s(pr.records[0], "backend"), "lsa");
  EXPECT_EQ(pr.records[0].params["m"].as<int>(), 64);
  EXPECT_EQ(pr.records[0].params["stage"].as<int>(), 1);
  EXPECT_EQ(pr.records[0].params["blocks"].as<int>(), 24);
  EXPECT_DOUBLE_EQ(pr.records[0].value, 30.7);
  EXPECT_EQ(s(pr.records[1], "backend"), "sdma");
  EXPECT_FALSE(pr.records[1].params["stage"]) << "the SDMA backend's stage is not a case key";
  EXPECT_EQ(pr.records[2].params["stage"].as<int>(), 2);
  EXPECT_DOUBLE_EQ(pr.records[3].value, 1047.0);
  EXPECT_NE(pr.records[4].reason.find("timing: 'eager'"), std::string::npos) << pr.records[4].reason;
  EXPECT_NE(pr.records[5].reason.find("validated: false"), std::string::npos) << pr.records[5].reason;
  EXPECT_EQ(pr.records[6].reason.rfind("rel_l2: NaN where bench_ar.py validates", 0), 0u) << pr.records[6].reason;
  // nccl is the library ring: rccl; max_rank_time_ms alone gives the time.
  const auto r = record_from_result_json(nlohmann::json::parse(R"({"backend": "nccl", "m": 16384, "max_rank_time_ms": 1.113})"), "w.jsonl", 2);
  EXPECT_EQ(s(r, "backend"), "rccl");
  EXPECT_NEAR(r.value, 1113.0, 1e-9);
}

// Found by fuzz_measurements on the device machine (2026-12-02, 270409th execution, commit 44debbf):
// a bench_ar.py line whose integer key holds 1e300 reached an unchecked double -> int64 conversion
// (undefined behaviour; INT64_MIN in the release build). Now the checked helper names file, line, key.
TEST(Layouts, BenchArIntegerOutOfRangeNamesFileLineAndKey) {
  for (const char* k : {"m", "n", "world_size"}) {
    nlohmann::json j = nlohmann::json::parse(R"({"backend": "lsa", "m": 64, "n": 7168, "world_size": 8, "dtype": "bf16",
        "max_rank_time_us": 30.7, "timing": "graph", "validated": true, "rel_l2": 0.0, "stage": 1, "blocks": 24})");
    j[k] = 1e300;
    try {
      record_from_result_json(j, "ar.log", 7);
      ADD_FAILURE() << k << ": accepted 1e300";
    } catch (const hw::FileError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("ar.log"), std::string::npos) << what;
      EXPECT_NE(what.find("7"), std::string::npos) << what;
      EXPECT_NE(what.find(k), std::string::npos) << what;
    }
  }
}

// Chunks are lowered by halving as the benchmark does (8 -> 4 at 12 row bands per destination, not 6):
// the case holds what ran.
TEST(Layouts, ChunksLoweredByHalvingAsTheBenchmarkDoes) {
  const auto r = record_from_result_json(nlohmann::json::parse(R"({"mode": "split-sdma", "m": 12288, "quant": "blockscale",
      "gather_dtype": "bf16", "chunks": 8, "max_rank_time_us": 900})"), "x.jsonl", 1);
  EXPECT_EQ(r.params["chunks"].as<int>(), 4);
  EXPECT_EQ(r.extra["chunks_printed"], 8);
}

}  // namespace
}  // namespace fusesim::calibrate
