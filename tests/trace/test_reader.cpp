// Reader tests: fields, gzip, bare arrays, directories, flows, malformed / truncated input.
#include <zlib.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>

#include "calibrate/trace/whatif.hpp"
#include "test_util.hpp"
#include "trace_gen.hpp"

namespace fusesim::trace {
namespace {

using test::TempDir;
using test::write_text;

// A hand-written Kineto trace: one CPU op enclosing a launch, its kernel, a memcpy, a memset, the
// flow pair, and events of kinds the reader does not use.
const char* kSmallTrace = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "numSms": 132}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
    {"name": "process_name", "ph": "M", "ts": 0, "pid": 10, "tid": 0, "args": {"name": "python"}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 100.0, "dur": 10.0,
     "args": {"External id": 5, "Input Dims": [[64, 7168], [7168, 1536]], "Input type": ["c10::BFloat16", "c10::BFloat16"],
              "Input Strides": [[7168, 1], [1, 7168]]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 102.5, "dur": 3.0,
     "args": {"External id": 5, "cbid": 211, "correlation": 77}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_tst_64x32_64x16_2x1_2cta", "pid": 0, "tid": 7, "ts": 120.0, "dur": 8.5,
     "args": {"External id": 5, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 77,
              "grid": [136, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 6}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 130.0, "dur": 2.0,
     "args": {"device": 0, "context": 1, "stream": 7, "correlation": 78, "bytes": 4096}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 9, "ts": 131.0, "dur": 1.0,
     "args": {"device": 0, "context": 1, "stream": 9, "correlation": 79}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 10, "tid": 11, "ts": 140.0, "dur": 1.0,
     "args": {"Input Dims": [[], [], [], [], [], []], "Input type": ["Scalar", "", "", "", "", ""]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 10, "tid": 11, "ts": 142.0, "dur": 1.0,
     "args": {"Input Dims": [[[2, 3], [4, 3]], []], "Input type": ["TensorList", "Scalar"]}},
    {"ph": "s", "id": 77, "pid": 10, "tid": 11, "ts": 102.5, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 77, "pid": 0, "tid": 7, "ts": 120.0, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 10, "tid": 11, "ts": 150},
    {"ph": "X", "cat": "python_function", "name": "f.py(1): g", "pid": 10, "tid": 11, "ts": 99, "dur": 20},
    {"ph": "X", "cat": "brand_new_kind", "name": "x", "pid": "str pid", "tid": "str tid", "ts": 99, "dur": 20,
     "args": {"deep": [[1, {"a": [2]}]]}}
  ],
  "traceName": "t.json",
  "displayTimeUnit": "ms"
})json";

std::string gzip_file(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

void expect_small_trace(const TraceFile& t) {
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.device_name, "NVIDIA H200");
  EXPECT_EQ(t.events, 13u);
  ASSERT_EQ(t.gpu_ops.size(), 3u);
  const auto& k = t.gpu_ops[0];
  EXPECT_EQ(t.name_of(k), "nvjet_tst_64x32_64x16_2x1_2cta");
  EXPECT_EQ(k.kind, GpuOpKind::kernel);
  // Times are integer nanoseconds from the earliest kept event (aten::mm at 100 us).
  EXPECT_EQ(t.origin_ns, 100000);
  EXPECT_EQ(t.origin_ns + k.start_ns, 120000);
  EXPECT_EQ(k.dur_ns, 8500);
  EXPECT_DOUBLE_EQ(k.dur_us(), 8.5);
  EXPECT_EQ(k.stream, 7);
  EXPECT_EQ(k.device, 0);
  EXPECT_EQ(k.correlation, 77);
  EXPECT_EQ(k.grid, (std::array<int32_t, 3>{136, 1, 1}));
  EXPECT_EQ(k.block, (std::array<int32_t, 3>{384, 1, 1}));
  EXPECT_EQ(t.gpu_ops[1].kind, GpuOpKind::memcpy);
  EXPECT_EQ(t.gpu_ops[2].kind, GpuOpKind::memset);
  EXPECT_EQ(t.gpu_ops[2].stream, 9);

  ASSERT_EQ(t.cpu_ops.size(), 3u);
  const auto& mm = t.cpu_ops[0];
  EXPECT_EQ(t.name_of(mm), "aten::mm");
  ASSERT_EQ(mm.inputs_count, 2u);
  EXPECT_EQ(t.dims_of(t.inputs[mm.inputs_begin]), (std::vector<int64_t>{64, 7168}));
  EXPECT_EQ(t.dims_of(t.inputs[mm.inputs_begin + 1]), (std::vector<int64_t>{7168, 1536}));
  EXPECT_EQ(t.strings.str(t.inputs[mm.inputs_begin].dtype), "c10::BFloat16");
  EXPECT_FALSE(mm.input_dims_empty);
  EXPECT_TRUE(t.cpu_ops[1].has_input_dims);
  EXPECT_TRUE(t.cpu_ops[1].input_dims_empty);
  EXPECT_EQ(t.cpu_ops[1].inputs_count, 6u);
  const auto& cat = t.cpu_ops[2];
  EXPECT_FALSE(cat.input_dims_empty);
  ASSERT_EQ(cat.inputs_count, 2u);
  EXPECT_EQ(t.inputs[cat.inputs_begin].rank, -1);  // a tensor list is not a plain tensor
  EXPECT_EQ(t.inputs[cat.inputs_begin + 1].rank, 0);

  ASSERT_EQ(t.runtime_calls.size(), 1u);
  EXPECT_EQ(t.runtime_calls[0].correlation, 77);
  EXPECT_EQ(t.strings.str(t.runtime_calls[0].name), "cudaLaunchKernel");

  std::map<std::string, int64_t> skipped{{"M/", 1}, {"i/cpu_instant_event", 1}, {"X/python_function", 1}, {"X/brand_new_kind", 1}};
  EXPECT_EQ(t.skipped, skipped);
}

TEST(TraceReader, ReadsKinetoFields) {
  TempDir d;
  write_text(d.file("t.json"), kSmallTrace);
  auto t = read_trace_file(d.file("t.json"));
  expect_small_trace(t);
  EXPECT_FALSE(t.gzip);
  EXPECT_EQ(t.bytes, std::string(kSmallTrace).size());
}

TEST(TraceReader, ReadsGzipByContent) {
  TempDir d;
  gzip_file(d.file("t.json.gz"), kSmallTrace);
  auto t = read_trace_file(d.file("t.json.gz"));
  expect_small_trace(t);
  EXPECT_TRUE(t.gzip);
}

TEST(TraceReader, ReadsBareEventArray) {
  TempDir d;
  write_text(d.file("a.json"), R"([{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
                                    "args": {"stream": 7, "device": 0}}, {"ph": "M", "name": "x"}])");
  auto t = read_trace_file(d.file("a.json"));
  ASSERT_EQ(t.gpu_ops.size(), 1u);
  EXPECT_EQ(t.gpu_ops[0].stream, 7);
  EXPECT_EQ(t.gpu_ops[0].correlation, -1);
  EXPECT_EQ(t.skipped.at("M/"), 1);
}

TEST(TraceReader, FlowEventsSupplyMissingCorrelation) {
  TempDir d;
  testgen::GenSpec spec{.ranks = 1, .layers = 1, .correlation_in_args = false};
  testgen::write_trace_file(spec, 0, d.file("r.json"));
  auto t = read_trace_file(d.file("r.json"));
  ASSERT_FALSE(t.gpu_ops.empty());
  for (const auto& g : t.gpu_ops) EXPECT_GE(g.correlation, 1) << t.name_of(g);
}

TEST(TraceReader, DirectoryOfRanksInNaturalOrder) {
  TempDir d;
  testgen::GenSpec spec{.ranks = 12, .layers = 1, .prefill_steps = 0, .decode_steps = 1};
  testgen::write_trace_dir(spec, d.str());
  write_text(d.file("notes.txt"), "not a trace");
  auto ranks = read_trace(d.str());
  ASSERT_EQ(ranks.size(), 12u);
  for (int r = 0; r < 12; ++r) {
    EXPECT_EQ(ranks[static_cast<size_t>(r)].rank, r);
    EXPECT_NE(ranks[static_cast<size_t>(r)].path.find(fmt::format("rank{}.json", r)), std::string::npos);
    EXPECT_EQ(ranks[static_cast<size_t>(r)].world_size, 12);
  }
}

TEST(TraceReader, BadRankFileInDirectoryIsNamed) {
  TempDir d;
  testgen::GenSpec spec{.ranks = 4, .layers = 1};
  testgen::write_trace_dir(spec, d.str());
  std::string text = test::read_text(d.file("rank2.json"));
  write_text(d.file("rank2.json"), text.substr(0, text.size() / 3));
  try {
    read_trace(d.str());
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), d.file("rank2.json"));
    EXPECT_EQ(e.byte_offset(), static_cast<int64_t>(text.size() / 3));
  }
}

TEST(TraceReader, EmptyDirectoryIsAnError) {
  TempDir d;
  EXPECT_THROW(read_trace(d.str()), TraceError);
  EXPECT_THROW(read_trace(d.file("missing.json")), TraceError);
}

/// Expect read_trace_file to throw a TraceError whose message contains each of `parts`.
TraceError expect_error(const std::string& path, std::initializer_list<std::string> parts) {
  try {
    read_trace_file(path);
  } catch (const TraceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing '" << p << "' in: " << msg;
    return e;
  }
  ADD_FAILURE() << "no TraceError for " << path;
  return TraceError(path, -2, "none");
}

TEST(TraceReader, MalformedJsonNamesFileAndByteOffset) {
  TempDir d;
  std::string text = kSmallTrace;
  size_t pos = text.find("\"dur\": 8.5");
  ASSERT_NE(pos, std::string::npos);
  text[pos + 6] = ':';  // "dur":: 8.5
  write_text(d.file("bad.json"), text);
  auto e = expect_error(d.file("bad.json"), {"byte", "malformed JSON"});
  EXPECT_EQ(e.byte_offset(), static_cast<int64_t>(pos + 7) - 1);
}

TEST(TraceReader, TruncatedFileReportsEndOffset) {
  TempDir d;
  std::string text = kSmallTrace;
  text.resize(1000);
  write_text(d.file("cut.json"), text);
  auto e = expect_error(d.file("cut.json"), {"truncated", "byte 1000"});
  EXPECT_EQ(e.byte_offset(), 1000);  // the end of the file
}

TEST(TraceReader, TruncatedGzipIsAnError) {
  TempDir d;
  testgen::GenSpec spec{.ranks = 1, .layers = 8, .gzip = true};
  testgen::write_trace_file(spec, 0, d.file("full.json.gz"));
  std::string bytes = test::read_text(d.file("full.json.gz"));
  ASSERT_GT(bytes.size(), 4000u);
  write_text(d.file("cut.json.gz"), bytes.substr(0, bytes.size() / 2));
  expect_error(d.file("cut.json.gz"), {"byte"});
}

TEST(TraceReader, CorruptGzipIsAnError) {
  TempDir d;
  gzip_file(d.file("t.json.gz"), kSmallTrace);
  std::string bytes = test::read_text(d.file("t.json.gz"));
  for (size_t i = 40; i < 80 && i < bytes.size(); ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  write_text(d.file("bad.json.gz"), bytes);
  expect_error(d.file("bad.json.gz"), {"byte"});
}

TEST(TraceReader, MissingDurationNamesTheKey) {
  TempDir d;
  write_text(d.file("nodur.json"), R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm_k", "ts": 5}]})");
  expect_error(d.file("nodur.json"), {"kernel event \"gemm_k\" lacks \"dur\"", "byte"});
}

TEST(TraceReader, MistypedTimestampNamesTheKey) {
  TempDir d;
  write_text(d.file("ts.json"), R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "soon", "dur": 1}]})");
  expect_error(d.file("ts.json"), {"key \"ts\"", "must be a number", "byte"});
}

TEST(TraceReader, JsonWithoutTraceEventsIsNotATrace) {
  TempDir d;
  write_text(d.file("x.json"), R"({"hello": [1, 2, 3]})");
  expect_error(d.file("x.json"), {"traceEvents"});
  write_text(d.file("y.json"), R"({"traceEvents": {"not": "an array"}})");
  expect_error(d.file("y.json"), {"must be an array"});
}

TEST(TraceReader, AnArrayOfNonEventsOrNoEventsIsNotATrace) {
  TempDir d;
  write_text(d.file("numbers.json"), "[1,2,3]");
  expect_error(d.file("numbers.json"), {"entry 0 of the top-level array is a number", "not a Kineto / Chrome trace"});
  write_text(d.file("strings.json"), R"({"traceEvents": [{"ph": "M", "name": "x"}, "event"]})");
  expect_error(d.file("strings.json"), {"entry 1 of \"traceEvents\" is a string", "expected an event object"});
  write_text(d.file("flags.json"), "[true]");
  expect_error(d.file("flags.json"), {"null or a boolean", "not a Kineto / Chrome trace"});
  write_text(d.file("lists.json"), "[[1]]");
  expect_error(d.file("lists.json"), {"is an array", "expected an event object"});
  write_text(d.file("empty.json"), R"({"traceEvents": []})");
  expect_error(d.file("empty.json"), {"no events"});
  write_text(d.file("bare.json"), "[]");
  expect_error(d.file("bare.json"), {"no events"});
  // A directory holding one such file names it.
  try {
    read_trace(d.str());
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(".json"), std::string::npos) << e.what();
  }
}


// ---- ids, exact timestamps, accelerators, ranks, truncation, ranges, limits --------------------

// Ids as captures write them: numbers, or strings of decimal or 0x-hex digits (ROCm writes
// args.stream "0x0"). The kernel joins its launch through the correlation written both ways.
TEST(TraceReader, IdsAreNumbersOrDecimalOrHexStrings) {
  TempDir d;
  write_text(d.file("ids.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": "123", "tid": "0x10", "ts": 10, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 123, "tid": 16, "ts": 12, "dur": 1,
     "args": {"correlation": "0x4d", "stream": "0x7f00aa"}},
    {"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_HHS_BH_MT128x128x32", "pid": "0", "tid": "0x1f", "ts": 20, "dur": 5,
     "args": {"stream": "0x1f", "device": "1", "correlation": "77"}}
  ]})json");
  auto t = read_trace_file(d.file("ids.json"));
  ASSERT_EQ(t.gpu_ops.size(), 1u);
  EXPECT_EQ(t.gpu_ops[0].stream, 31);
  EXPECT_EQ(t.gpu_ops[0].device, 1);
  EXPECT_EQ(t.gpu_ops[0].correlation, 77);
  ASSERT_EQ(t.runtime_calls.size(), 1u);
  EXPECT_EQ(t.runtime_calls[0].correlation, 77);
  EXPECT_EQ(t.runtime_calls[0].stream_handle, 0x7f00aa);
  EXPECT_EQ(t.runtime_calls[0].thread, t.cpu_ops[0].thread);  // "123"/"0x10" and 123/16 are one thread
  auto tl = build_timeline(t, CategoryTable::builtin(), AnalyzeOptions{});
  EXPECT_EQ(tl.ops[0].launch_op, 0);  // joined: kernel -> hipLaunchKernel -> aten::mm
}

// us_text_to_ns: the trace's digits kept exactly; beyond the nanosecond, rounding half away from
// zero; anything outside int64 nanoseconds (9.2e15 us) refused.
TEST(TraceReader, MicrosecondTextToExactNanoseconds) {
  auto ns = [](const char* t) {
    int64_t v = 0;
    if (!us_text_to_ns(t, v)) return std::numeric_limits<int64_t>::min();
    return v;
  };
  EXPECT_EQ(ns("1"), 1000);
  EXPECT_EQ(ns("-1"), -1000);
  EXPECT_EQ(ns("1700000000000123.456"), int64_t{1700000000000123456});
  EXPECT_EQ(ns("1700000000000123.457"), int64_t{1700000000000123457});
  EXPECT_EQ(ns("1.7000000000001234e15"), int64_t{1700000000000123400});
  EXPECT_EQ(ns("123.4565"), 123457);   // half a nanosecond: away from zero
  EXPECT_EQ(ns("123.4564999"), 123456);
  EXPECT_EQ(ns("-0.0005"), -1);
  EXPECT_EQ(ns("0.0004"), 0);
  EXPECT_EQ(ns("1E3"), 1000000);
  EXPECT_EQ(ns("1.5e-3"), 2);
  EXPECT_EQ(ns("0.000"), 0);
  EXPECT_EQ(ns("9223372036854775"), int64_t{9223372036854775000});
  EXPECT_EQ(ns("9223372036854776"), std::numeric_limits<int64_t>::min());  // beyond int64 ns
  EXPECT_EQ(ns("1e300"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ns("12abc"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ns("1e"), std::numeric_limits<int64_t>::min());
  int64_t v = 0;
  EXPECT_TRUE(parse_id_text("0xffffffffffffffff", v));
  EXPECT_EQ(v, -1);  // a 64-bit handle keeps its bits
  EXPECT_FALSE(parse_id_text("0x", v));
  EXPECT_FALSE(parse_id_text("7.5", v));
  EXPECT_FALSE(parse_id_text("99999999999999999999", v));
}

// At 1.7e15 us a double has 0.25 us resolution: 123.456 and 123.457 would be one time. Kept as
// integer nanoseconds they stay 1 ns apart, and the kernel's 0.001 us duration survives.
TEST(TraceReader, LargeTimestampsKeepTheirDigits) {
  TempDir d;
  write_text(d.file("ts.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k1", "ts": 1700000000000123.456, "dur": 0.001, "args": {"stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k2", "ts": 1700000000000123.457, "dur": 2.5, "args": {"stream": 7}}
  ]})json");
  auto t = read_trace_file(d.file("ts.json"));
  ASSERT_EQ(t.gpu_ops.size(), 2u);
  EXPECT_EQ(t.origin_ns, int64_t{1700000000000123456});
  EXPECT_EQ(t.gpu_ops[0].start_ns, 0);
  EXPECT_EQ(t.gpu_ops[0].dur_ns, 1);
  EXPECT_EQ(t.gpu_ops[1].start_ns, 1);
  EXPECT_EQ(t.gpu_ops[1].dur_ns, 2500);
}

// Device events of an accelerator fusesim does not analyse: counted, named in a warning, and a
// trace holding nothing else is refused by the commands with what it holds.
TEST(TraceReader, ForeignAcceleratorEventsAreNamed) {
  TempDir d;
  write_text(d.file("mtia.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5},
    {"ph": "X", "cat": "mtia_runtime", "name": "mtiaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
    {"ph": "X", "cat": "mtia_ccp_events", "name": "gemm_kernel", "pid": 0, "tid": 3, "ts": 10, "dur": 4},
    {"ph": "X", "cat": "mtia_ccp_events", "name": "relu_kernel", "pid": 0, "tid": 3, "ts": 14, "dur": 2}
  ]})json");
  auto files = read_trace(d.file("mtia.json"));
  EXPECT_TRUE(files[0].gpu_ops.empty());
  EXPECT_EQ(files[0].foreign_device_events, (std::map<std::string, int64_t>{{"mtia_ccp_events", 2}}));
  ASSERT_EQ(files[0].warnings.size(), 1u);
  EXPECT_NE(files[0].warnings[0].find("2 device event(s) of an accelerator fusesim does not analyse"), std::string::npos);
  try {
    analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "all", d.file("mtia.json"));
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(d.file("mtia.json")), std::string::npos) << m;
    EXPECT_NE(m.find("no GPU events"), std::string::npos) << m;
    EXPECT_NE(m.find("mtia_ccp_events: 2"), std::string::npos) << m;
  }
}

TEST(TraceReader, ACpuOnlyTraceIsRefusedByTheCommands) {
  TempDir d;
  write_text(d.file("cpu.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5}]})json");
  auto files = read_trace(d.file("cpu.json"));
  for (int which = 0; which < 3; ++which) {
    try {
      if (which == 0) analyze(files, CategoryTable::builtin(), AnalyzeOptions{}, "all", "x");
      if (which == 1) whatif(files, CategoryTable::builtin(), AnalyzeOptions{}, WhatIfOptions{}, "x");
      if (which == 2) hta_report(files, "x");
      ADD_FAILURE() << "no error " << which;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("no GPU events"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("ProfilerActivity.CUDA"), std::string::npos) << e.what();
    }
  }
}

TEST(TraceReader, DuplicateRanksInADirectoryAreAnError) {
  TempDir d;
  const char* one = R"json({"distributedInfo": {"rank": 1}, "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}}]})json";
  write_text(d.file("a.json"), one);
  write_text(d.file("b.json"), one);
  try {
    read_trace(d.str());
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("two files carry distributedInfo.rank 1"), std::string::npos) << m;
    EXPECT_NE(m.find(d.file("a.json")), std::string::npos) << m;
    EXPECT_NE(m.find(d.file("b.json")), std::string::npos) << m;
  }
  write_text(d.file("b.json"), R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}}]})json");
  try {
    read_trace(d.str());
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("carries none"), std::string::npos) << e.what();
  }
}

// A plain JSON file cut anywhere (inside a string, a number, a key, after a comma) says
// "truncated" and names the end of the file.
TEST(TraceReader, ATruncatedPlainFileSaysTruncated) {
  TempDir d;
  const std::string text = kSmallTrace;
  for (const char* cut_after : {"\"nvjet_tst_64x", "\"ts\": 120", "\"Input Di", "\"dur\": 10.0,", "\"traceEvents\": ["}) {
    size_t pos = text.find(cut_after);
    ASSERT_NE(pos, std::string::npos) << cut_after;
    size_t n = pos + std::string(cut_after).size();
    write_text(d.file("cut.json"), text.substr(0, n));
    auto e = expect_error(d.file("cut.json"), {"truncated"});
    EXPECT_EQ(e.byte_offset(), static_cast<int64_t>(n)) << cut_after;
  }
  write_text(d.file("empty.json"), "");
  expect_error(d.file("empty.json"), {"the file is empty"});
}

// Every conversion of an input number to an integer is range-checked: the key and the value named.
TEST(TraceReader, NumbersOutOfRangeNameTheKey) {
  TempDir d;
  struct Case { const char* event; const char* want; };
  const Case cases[] = {
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e300, "dur": 1, "args": {"stream": 7}})", "key \"ts\" of kernel event \"k\""},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -3, "args": {"stream": 7}})", "key \"dur\" of kernel event \"k\" must be >= 0"},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"correlation": 18446744073709551615}})", "key \"args.correlation\""},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"correlation": 1e19}})", "key \"args.correlation\""},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": "0xZZ"}})", "key \"args.stream\""},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7.5}})", "key \"args.stream\""},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"device": 1e10}})", "key \"args.device\""},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"grid": [1e12, 1, 1]}})", "key \"args.grid\""},
      // A negative launch dimension was stored and then read by the what-if as "no grid" (silently uncharged).
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"grid": [-5, 1, 1]}})", "non-negative integers of 32 bits, found -5"},
      {R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"block": [128, -1, 1]}})", "key \"args.grid\"/\"args.block\""},
      {R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 1, "args": {"Input Dims": [[1e300, 2]]}})", "key \"args.Input Dims\""},
      {R"({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "ts": 1, "dur": 1, "args": {"wait_on_stream": "x"}})", "key \"args.wait_on_stream\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.event);
    write_text(d.file("n.json"), std::string(R"({"traceEvents": [)") + c.event + "]}");
    expect_error(d.file("n.json"), {c.want, "byte"});
  }
  write_text(d.file("r.json"), R"({"distributedInfo": {"rank": 1e30}, "traceEvents": []})");
  expect_error(d.file("r.json"), {"distributedInfo.rank", "byte"});
  write_text(d.file("r2.json"), R"({"distributedInfo": {"rank": -1}, "traceEvents": []})");
  expect_error(d.file("r2.json"), {"distributedInfo.rank", "byte"});
  // The same numbers on an event fusesim skips are not its business.
  write_text(d.file("skip.json"), R"({"traceEvents": [{"ph": "X", "cat": "python_function", "name": "f", "ts": 1e300, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7}}]})");
  EXPECT_EQ(read_trace_file(d.file("skip.json")).gpu_ops.size(), 1u);
}

// Nesting and token size are bounded: refused with the limit, the byte offset and the line.
TEST(TraceReader, NestingAndTokenSizeAreBounded) {
  TempDir d;
  std::string deep = "{\"traceEvents\": [\n{\"ph\": \"X\", \"cat\": \"kernel\", \"args\": {\"x\": " + std::string(100000, '[');
  write_text(d.file("deep.json"), deep);
  auto e = expect_error(d.file("deep.json"), {"nested deeper than 100 levels", "byte", "(line 2)"});
  EXPECT_LT(e.byte_offset(), 200);  // refused as soon as the limit is passed
  std::string big = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + std::string(17 << 20, 'a') + "\"}]}";
  write_text(d.file("big.json"), big);
  e = expect_error(d.file("big.json"), {"single JSON token", "16 MiB", "byte"});
  EXPECT_EQ(e.byte_offset(), 52);  // right after the key "name", where the long value begins
}
}  // namespace
}  // namespace fusesim::trace
