// Scenario files: loader errors, and the committed scenarios' predictions against their measured
// values (the tolerances the issues state).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "models/afd/timeline.hpp"
#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"

using namespace fusesim;

namespace {
/// A temporary file name of this test's own: ctest runs the tests of one binary as parallel
/// processes, so a fixed name shared by two tests races (one reads the other's half-written file).
inline std::string test_tmp(const std::string& name) {
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + (t ? std::string(t->test_suite_name()) + "." + t->name() + "-" : std::string()) + name;
}
const std::string kRoot = FUSESIM_SOURCE_DIR;

std::string write_tmp(const std::string& name, const std::string& text) {
  const std::string p = test_tmp(name);
  std::ofstream(p) << text;
  return p;
}

void expect_file_error(const std::string& text, const std::string& needle, int line) {
  const std::string p = write_tmp("bad.yaml", text);
  try {
    scenario::load(p);
    ADD_FAILURE() << "loaded a bad scenario: " << needle;
  } catch (const hw::FileError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find(needle), std::string::npos) << w;
    EXPECT_NE(w.find(":" + std::to_string(line) + ":"), std::string::npos) << w;
  }
}

std::string read_file(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Load, run and judge the kernel durations of the scenario `text` (written to this test's `name`):
/// the message of the hw::FileError raised on the way, or "" when it all runs.
std::string run_file_error(const std::string& name, const std::string& text) {
  try {
    const auto sc = scenario::load(write_tmp(name, text));
    (void)afd::kernel_durations(sc, scenario::run(sc, scenario::load_hardware(sc)));
  } catch (const hw::FileError& e) {
    return e.what();
  }
  return "";
}

// A hardware file loaded against the builtin registry must fail with `needle` at `line`.
void expect_hw_error(const std::string& text, const std::string& needle, int line) {
  const std::string p = write_tmp("bad-hw.yaml", text);
  try {
    models::load_hardware(p);
    ADD_FAILURE() << "loaded a bad hardware file: " << needle;
  } catch (const hw::FileError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find(needle), std::string::npos) << w;
    EXPECT_NE(w.find(":" + std::to_string(line) + ":"), std::string::npos) << w;
  }
}
}  // namespace

TEST(ScenarioHardware, ASecondYamlDocumentIsAnError) {
  const std::string hw = read_file(kRoot + "/hw/mi355x-8gpu.yaml");
  const int lines = int(std::count(hw.begin(), hw.end(), '\n'));
  expect_hw_error(hw + "---\nname: other\n", "a second YAML document starts here: a hardware file holds one document", lines + 1);
  EXPECT_NO_THROW(models::load_hardware(write_tmp("ok-hw.yaml", hw + "---\n")));  // an empty document ignores nothing
}

TEST(ScenarioHardware, TopologyKindMustBeOneTheModelsKnow) {
  const std::string hw = read_file(kRoot + "/hw/mi355x-8gpu.yaml");
  const std::string mesh = "topology: {kind: full_mesh, gpus: 8}";
  ASSERT_NE(hw.find(mesh), std::string::npos);
  const int line = 1 + int(std::count(hw.begin(), hw.begin() + hw.find(mesh), '\n'));
  auto with = [&](const std::string& topo) { return std::string(hw).replace(hw.find(mesh), mesh.size(), topo); };
  expect_hw_error(with("topology: {kind: torus, gpus: 8}"),
                  "'topology.kind': unknown topology kind 'torus' (expected one of: full_mesh, pair, pods)", line);
  expect_hw_error(with("topology: {gpus: 8}"), "'topology.kind': missing (expected one of: full_mesh, pair, pods)", line);
  EXPECT_THROW(hw::parse_quantity(hw::Quantity::Bandwidth, "1e400GBps"), std::invalid_argument);
  // A misspelt NIC-sharing key would silently model one NIC per GPU.
  expect_hw_error(with("topology: {kind: pods, gpus: 8, gpus_per_pod: 4, nic_per_node: 4}"),
                  "'topology.nic_per_node': unknown topology key (expected kind, gpus, gpus_per_pod, gpus_per_node, nics_per_node)", line);
  for (const std::string kind : {"full_mesh", "pair", "pods"})
    EXPECT_NO_THROW(models::load_hardware(write_tmp("ok-hw.yaml", with("topology: {kind: " + kind + ", gpus: 8}")))) << kind;
}

namespace {
/// Run a one-case scenario of `model` on hardware text `hw` (written as `name`.yaml); expect the
/// FileError that run_scenario raises before any case runs, containing `needle` (after replacing
/// "SCENARIO" and "HARDWARE" in it with the two files' paths).
void expect_hardware_refused(const std::string& name, const std::string& hw, const std::string& model,
                             const std::string& params, std::string needle) {
  const std::string hwp = write_tmp(name + "-hw.yaml", hw);
  const std::string p = write_tmp(name + ".yaml", "scenario: s\nmodel: " + model + "\nhardware: " + hwp +
                                                      "\ncases:\n  - id: a\n    params: " + params + "\n");
  for (const auto& [tag, path] : {std::pair<std::string, std::string>{"SCENARIO", p}, {"HARDWARE", hwp}})
    if (const auto at = needle.find(tag); at != std::string::npos) needle.replace(at, tag.size(), path);
  const auto sc = scenario::load(p);
  const auto h = scenario::load_hardware(sc);
  try {
    scenario::run(sc, h);
    ADD_FAILURE() << "ran " << model << " on hardware lacking a parameter it needs";
  } catch (const hw::FileError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(ScenarioHardware, AParameterTheModelRequiresIsCheckedBeforeAnyCaseRuns) {
  // mi355x-8gpu.yaml without gemm.remote_store_rate: the gemm_ar model needs it (found mid-simulation
  // before, as a SystemC dump).
  std::string hw = read_file(kRoot + "/hw/mi355x-8gpu.yaml");
  const size_t at = hw.find("  remote_store_rate:");
  ASSERT_NE(at, std::string::npos);
  hw.erase(at, hw.find('\n', at) + 1 - at);
  expect_hardware_refused("needs-store-rate", hw, "gemm_ar", "{mode: gemm-only, m: 4096}",
                          "SCENARIO:3: 'hardware': HARDWARE lacks gemm.remote_store_rate (required by the gemm_ar model; "
                          "is this the right hardware file?)");
}

TEST(ScenarioHardware, TheH200PairModelsNeedTheGemmKeysTheyRead) {
  // The live-pair and probe models also read keys the gemm_ar module declares (e.g.
  // memory.fabric_bandwidth): a file lacking one is refused before any case runs too.
  std::string hw = read_file(kRoot + "/hw/h200-2gpu.yaml");
  const size_t at = hw.find("memory:\n  fabric_bandwidth:");  // the section's only key: drop both lines
  ASSERT_NE(at, std::string::npos);
  const size_t line2 = hw.find('\n', at) + 1;
  hw.erase(at, hw.find('\n', line2) + 1 - at);
  for (size_t pos; (pos = hw.find("file: ../")) != std::string::npos;) hw.replace(pos, 9, "file: " + kRoot + "/");
  expect_hardware_refused("needs-fabric", hw, "h200_probe", "{probe: copy_hop, size_bytes: 4096}",
                          "lacks memory.fabric_bandwidth (required by the h200_probe model");
}

TEST(ScenarioLoader, AKeyGivenTwiceInACaseNamesTheCaseById) {
  // hw::load_yaml_map finds the repeated key; the scenario loader has it name a case by its id, as
  // every other error of a case with an id.
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n";
  expect_file_error(head + "cases:\n  - id: a\n    params: {m: 1}\n  - id: c\n    params: {tokens: 1, tokens: 2}\n",
                    "'cases[c].params.tokens': key given twice in the same mapping", 8);
  // the id given after the repeated key, and a repeat inside a measured list entry
  expect_file_error(head + "cases:\n  - params: {m: 1, m: 2}\n    id: late\n", "'cases[late].params.m': key given twice", 5);
  expect_file_error(head + "cases:\n  - id: b\n    sweep: {m: [1, 2]}\n    measured:\n      - {at: {m: 1}, value_us: 1, value_us: 2, source: x}\n",
                    "'cases[b].measured[0].value_us': key given twice", 8);
  // no usable id (none, empty, or the id itself repeated): the index, as before
  expect_file_error(head + "cases:\n  - params: {m: 1, m: 2}\n", "'cases[0].params.m': key given twice", 5);
  expect_file_error(head + "cases:\n  - {id: \"\", params: {m: 1, m: 2}}\n", "'cases[0].params.m': key given twice", 5);
  expect_file_error(head + "cases:\n  - {id: x, id: y}\n", "'cases[0].id': key given twice", 5);
  // outside the cases, the loader's own naming
  expect_file_error(head + "defaults: {m: 1, m: 2}\ncases:\n  - id: a\n", "'defaults.m': key given twice", 4);
  expect_file_error(head + "model: afd\ncases:\n  - id: a\n", "'model': key given twice", 4);
}

TEST(ScenarioLoader, NonFiniteNumbersAndADirectoryAsHardwareAreRefused) {
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n";
  expect_file_error(head + "cases:\n  - id: a\n    params: {mode: rccl, m: 1024}\n    measured: {value_us: .inf, source: x}\n",
                    "'cases[a].measured.value_us': expected a finite number, got '.inf'", 7);
  expect_file_error(head + "tolerance_pct: .nan\ncases: []\n", "expected a finite number", 4);
  expect_file_error("scenario: s\nmodel: gemm_ar\nhardware: " + kRoot + "/hw\ncases: []\n", "is a directory", 3);
}

TEST(ScenarioLoader, ABigSweepExpandsEveryPointWithItsOwnValues) {
  // 8 x 8 x 8 x 8 = 4096 points: each point holds its own copy of the swept values (assigning the
  // file's nodes merged the whole document into every point and grew memory faster than the points).
  const std::string p = write_tmp("sweep.yaml", "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n"
                        "cases:\n  - id: a\n    params: {mode: fused-sdma, m: 4096}\n"
                        "    sweep: {m: [1024, 2048, 3072, 4096, 5120, 6144, 7168, 8192], n: [1024, 2048, 3072, 4096, 5120, 6144, 7168, 8192],"
                        " k: [256, 512, 768, 1024, 1280, 1536, 1792, 2048], chunks: [1, 2, 3, 4, 5, 6, 7, 8]}\n");
  const auto sc = scenario::load(p);
  ASSERT_EQ(sc.cases.size(), 4096u);
  const auto& last = sc.cases.back();
  EXPECT_EQ(last.id, "a/m=8192/n=8192/k=2048/chunks=8");
  EXPECT_EQ(last.params["m"].as<int>(), 8192);
  EXPECT_EQ(last.params["chunks"].as<int>(), 8);
  EXPECT_EQ(sc.cases[9].params["k"].as<int>(), 512);
  EXPECT_EQ(sc.cases[9].params["chunks"].as<int>(), 2);
}

TEST(ScenarioAfd, ANicPlacementTheModelCannotTakeIsRefusedAtTheHardwareLine) {
  std::string hwt = read_file(kRoot + "/hw/h100-ib-pods.yaml");
  const std::string from = "gpus_per_node: 8, nics_per_node: 8";
  ASSERT_NE(hwt.find(from), std::string::npos);
  hwt.replace(hwt.find(from), from.size(), "gpus_per_node: 8, nics_per_node: 16");  // more NICs than GPUs
  const std::string hwp = write_tmp("pods-16nic.yaml", hwt);
  const std::string p = write_tmp("nics.yaml", "scenario: s\nmodel: afd\nhardware: " + hwp +
                                                   "\ncases:\n  - id: a\n    params: {attention_ranks: 4, ffn_ranks: 4, tokens: 1}\n");
  const auto sc = scenario::load(p);
  try {
    (void)scenario::run(sc, scenario::load_hardware(sc));
    ADD_FAILURE() << "ran on a NIC placement the model cannot take";
  } catch (const hw::FileError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find(":3: 'hardware'"), std::string::npos) << w;
    EXPECT_NE(w.find("must be a whole number of GPUs per NIC"), std::string::npos) << w;
  }
}

TEST(ScenarioAfd, AWhatIfCaseReportsItsEffectAgainstTheSameExchangeWithout) {
  const std::string p = write_tmp("whatif.yaml", "scenario: s\nhardware: " + kRoot + "/hw/h100-ib-pods.yaml\nmodel: afd\n"
                        "cases:\n  - id: base\n    params: {attention_ranks: 4, ffn_ranks: 4, tokens: 1}\n"
                        "  - id: skip\n    params: {attention_ranks: 4, ffn_ranks: 4, tokens: 1, skip_empty_finish: true}\n");
  const auto sc = scenario::load(p);
  const auto r = scenario::run(sc, scenario::load_hardware(sc));
  const auto& base = r["cases"][0];
  const auto& skip = r["cases"][1];
  EXPECT_FALSE(base.contains("whatif"));
  ASSERT_TRUE(skip.contains("whatif"));
  EXPECT_NEAR(skip["whatif"]["without_us"].get<double>(), base["predicted_us"].get<double>(), 1e-6);
  EXPECT_LT(skip["whatif"]["change_pct"].get<double>(), -5.0);
  const std::string table = scenario::format_table(r);
  EXPECT_NE(table.find("what-if: skip_empty_finish"), std::string::npos) << table;
  EXPECT_NE(table.find("NIC ops per round trip: dev 0,1,2,3: ffn NIC: atomics in 2, out 2"), std::string::npos) << table;
  EXPECT_NE(table.find("dev0 (ffn): hybrid_dispatch"), std::string::npos) << table;
}

TEST(ScenarioLoader, ErrorsNameFileLineAndKey) {
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n";
  expect_file_error(head + "cases:\n  - id: a\n    parms: {m: 1}\n", "'cases[a].parms'", 6);
  expect_file_error(head + "colour: red\ncases: []\n", "colour", 4);
  expect_file_error("scenario: s\nmodel: gemm_ar\ncases: []\n", "hardware", 1);
  expect_file_error("scenario: s\nmodel: gemm_ar\nhardware: hw/nope.yaml\ncases: []\n", "no hardware file", 3);
  expect_file_error(head + "cases:\n  - id: a\n    params: {mode: fused-sdma,\n             mode: split-sdma}\n",
                    "'cases[a].params.mode': key given twice in the same mapping", 7);
  expect_file_error(head + "tolerance_pct: -5\ncases: []\n", "tolerance_pct", 4);
  expect_file_error(head + "cases: []\n", "cases", 4);
  expect_file_error(head + "cases:\n  - id: \"\"\n    params: {mode: fused-sdma}\n", "'cases[0].id': is empty", 5);
  expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: -3, source: x}\n", "value_us", 6);
  expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: 3}\n", "source", 6);
  expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: 3, source: \"\"}\n", "source", 6);
  expect_file_error(head + "cases:\n  - id: a\n    sweep: {m: 4}\n", "sweep.m", 6);
  expect_file_error(head + "cases:\n  - id: a\n    sweep: {m: [1, 2]}\n    measured:\n      - {at: {m: 3}, value_us: 1, source: x}\n",
                    "'cases[a].measured[0].at': '{m: 3}' matches no sweep point (swept: m: [1, 2])", 8);
  // A mistyped swept value shows up as a point nothing matches: the message lists the swept values.
  expect_file_error(head + "cases:\n  - id: a\n    sweep: {m: [1, lots]}\n    measured:\n      - {at: {m: 2}, value_us: 1, source: x}\n",
                    "matches no sweep point (swept: m: [1, lots])", 8);
  expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: 1e999, source: x}\n",
                    "'cases[a].measured.value_us': '1e999' is out of the range of a double", 6);
  // Keys name the case by its id, or by its index (from 0) while it has no usable id.
  expect_file_error(head + "cases:\n  - id: a\n  - params: {m: 1}\n", "'cases[1].id': missing", 6);
  expect_file_error(head + "cases:\n  - id: [a]\n", "'cases[0].id': expected a name", 5);
  expect_file_error(head + "cases:\n  - id: a\n  - 7\n", "'cases[1]': each case must be a mapping", 6);
  expect_file_error(head + "cases:\n  - {parms: 1}\n", "'cases[0].parms': unknown key", 5);
  expect_file_error(head + "cases:\n  - id: a\n    sweep: {m: 4}\n", "'cases[a].sweep.m'", 6);
  // Unknown keys of a measured value (single, each entry of the list form, measured_phases) list the accepted ones.
  expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: 100, source: x, zzz: 1}\n",
                    "'cases[a].measured.zzz': unknown key (expected one of: kernels, known_miss, period_us, phases_us, source, value_us)", 6);
  expect_file_error(head + "cases:\n  - id: a\n    sweep: {m: [1, 2]}\n    measured:\n      - {at: {m: 1}, value_us: 1, source: x}\n"
                           "      - {at: {m: 2}, value_us: 1, source: x, bogus: 1}\n",
                    "'cases[a].measured[1].bogus': unknown key (expected one of: at, kernels, known_miss, period_us, phases_us, source, value_us)", 9);
  expect_file_error(head + "cases:\n  - id: a\n    measured_phases:\n      phases_us: {gemm: 1}\n      source: x\n      value_us: 3\n",
                    "'cases[a].measured_phases.value_us': unknown key (expected one of: phases_us, source)", 9);
  expect_file_error(head + "cases:\n  - id: a\n    measured_phases: {source: x}\n", "'cases[a].measured_phases': needs phases_us", 6);
  expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: 1, source: x, kernels: [{device: 0, kernel: k, start_us: 0, end_us: 1, dev: 2}]}\n",
                    "'cases[a].measured.kernels.dev': unknown key", 6);
  expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: 1, period_us: 2, source: x}\n", "not both", 6);
  expect_file_error(head + "cases:\n  - id: a\n    measured: {period_us: 0, source: x}\n", "'cases[a].measured.period_us': a measured time must be > 0", 6);
  expect_file_error(head + "cases:\n  - id: a\n    sweep: {m: [1, 2]}\n    measured: [7]\n", "'cases[a].measured[0]': expected a mapping", 7);
  // A measured list's `at:` names exactly one sweep point, by swept parameters only, once.
  const std::string swept = head + "cases:\n  - id: a\n    sweep: {m: [4096, 8192], n: [1, 2]}\n    measured:\n";
  expect_file_error(swept + "      - {at: {k: 2048}, value_us: 100, source: x}\n",
                    "'cases[a].measured[0].at.k': 'k' is not a swept parameter of this case (swept: m, n)", 8);
  expect_file_error(swept + "      - {at: {m: 4096}, value_us: 100, source: x}\n",
                    "'cases[a].measured[0].at': '{m: 4096}' matches 2 sweep points (a/m=4096/n=1, ...); give a value for each swept "
                    "parameter (m, n)", 8);
  expect_file_error(swept + "      - {at: {m: 4096, n: 1}, value_us: 100, source: x}\n      - {at: {n: 1, m: 4096}, value_us: 90, source: y}\n",
                    "'cases[a].measured[1].at': sweep point '{n: 1, m: 4096}' given twice (also on line 8)", 9);
  expect_file_error(head + "cases:\n  - id: a\n    measured:\n      - {at: {m: 1}, value_us: 100, source: x}\n",
                    "'cases[a].measured[0].at.m': this case has no sweep", 7);
  // known_miss is the reason the model misses the point: a flag or an empty text is refused.
  for (const std::string v : {"false", "true", "5", "\"\"", "", "[a]"})
    expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: 100, source: x, known_miss: " + v + "}\n",
                      "'cases[a].measured.known_miss': expected the reason the model misses this point (a non-empty text)", 6);
  // A top-level field of the wrong type names its key and the type expected (yaml-cpp said "bad conversion", no file).
  const std::string rest = "hardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n  - id: a\n";
  expect_file_error("scenario: [1,2]\n" + rest, "'scenario': expected a name (text), got a list '[1, 2]'", 1);
  expect_file_error("scenario: s\ndescription: {a: 1}\n" + rest, "'description': expected a text, got a mapping", 2);
  expect_file_error("scenario: s\nhardware: [a]\nmodel: gemm_ar\ncases:\n  - id: a\n", "'hardware': expected the path of a hardware file", 2);
  expect_file_error("scenario: s\nmodel: [gemm_ar]\nhardware: x.yaml\ncases:\n  - id: a\n", "'model': expected a model name (text)", 2);
  expect_file_error("scenario: s\nmodel: gemm_ar\nhardware:\ncases:\n  - id: a\n", "'hardware': is empty", 3);
  expect_file_error("scenario:\n" + rest, "'scenario': is empty", 1);
  expect_file_error(head + "cases:\n  - id: a\n    measured: {value_us: 1, source: [a, b]}\n", "'cases[a].measured.source': expected the table", 6);
  // kernel_durations is the afd model's section: another model's file refuses it.
  const std::string afd_head = "scenario: s\nhardware: " + kRoot + "/hw/h200-4gpu-nvlink.yaml\nmodel: afd\n";
  expect_file_error(afd_head + "kernel_durations: {known_misses: 3}\ncases:\n  - id: a\n", "'kernel_durations.known_misses': expected a list", 4);
  expect_file_error(afd_head + "kernel_durations:\n  known_misses:\n    - {case: a, kernel: dev0/x, reason: true}\ncases:\n  - id: a\n",
                    "'kernel_durations.known_misses[0].reason': expected the reason", 6);
  expect_file_error(head + "kernel_durations: {known_misses: 3}\ncases:\n  - id: a\n",
                    "'kernel_durations': only the afd model judges per-kernel durations (this scenario's model is 'gemm_ar')", 4);
  // Any other conversion error still names the file and line.
  expect_file_error(head + "cases:\n  - id: a\n    params: {[m]: 1}\n", "bad.yaml:6: unexpected value", 6);
  // A second YAML document is refused, not ignored.
  expect_file_error(head + "cases:\n  - id: a\n---\nscenario: t\n", "a second YAML document starts here", 6);
  // yaml-cpp notices an unclosed flow map on the next line; the message also names the opening line.
  expect_file_error(head + "cases:\n  - id: a\n    params: {mode: \"gemm-only\", m: 4096\n  - id: b\n",
                    "the '{' opened on line 6 is not closed", 7);
}

TEST(ScenarioLoader, UnknownParameterIsAnErrorWithTheKeyLine) {
  const std::string p = write_tmp("badparam.yaml", "scenario: s\nhardware: " + kRoot +
                                                       "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n  - id: a\n    params: {mode: fused-sdma, chunk: 8}\n");
  auto sc = scenario::load(p);
  auto hw = scenario::load_hardware(sc);
  try {
    scenario::run(sc, hw);
    ADD_FAILURE() << "ran a case with an unknown parameter";
  } catch (const hw::FileError& e) {
    EXPECT_NE(std::string(e.what()).find("chunk"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(":6:"), std::string::npos) << e.what();  // the params line, not the case's
    EXPECT_NE(std::string(e.what()).find("cases[a].params.chunk"), std::string::npos) << e.what();
    // ... and lists what would have been accepted, so the typo can be fixed from the message alone.
    EXPECT_NE(std::string(e.what()).find("accepted: chunks, fuse_quantize"), std::string::npos) << e.what();
  }
  // A bad value given in `defaults` points at the defaults entry.
  const std::string d = write_tmp("baddefault.yaml", "scenario: s\nhardware: " + kRoot +
                                                         "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ndefaults:\n  world_size: 3\n"
                                                         "cases:\n  - id: a\n    params: {mode: fused-sdma}\n");
  auto sc2 = scenario::load(d);
  try {
    scenario::run(sc2, hw);
    ADD_FAILURE() << "ran a case with world_size 3";
  } catch (const hw::FileError& e) {
    EXPECT_NE(std::string(e.what()).find(":5:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("defaults.world_size"), std::string::npos) << e.what();
  }
}

TEST(ScenarioLoader, HardwareFoundFromAScenarioNamedWithoutItsFolder) {
  // A scenario in <root>/scenarios run from that folder as `a.yaml` (or `./a.yaml`) finds
  // `hardware: hw/x.yaml` in <root>/hw, the scenario folder's parent.
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("fusesim_relhw_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "scenarios");
  fs::create_directories(root / "hw");
  fs::copy_file(kRoot + "/hw/mi355x-8gpu.yaml", root / "hw" / "x.yaml");
  std::ofstream(root / "scenarios" / "a.yaml") << "scenario: s\nhardware: hw/x.yaml\nmodel: gemm_ar\ncases:\n  - id: a\n";
  const fs::path cwd = fs::current_path();
  fs::current_path(root / "scenarios");
  for (const std::string name : {"a.yaml", "./a.yaml"}) {
    const auto sc = scenario::load(name);
    EXPECT_EQ(fs::weakly_canonical(sc.hardware_path), fs::weakly_canonical(root / "hw" / "x.yaml")) << name;
  }
  fs::current_path(cwd);
  fs::remove_all(root);
}

TEST(ScenarioLoader, SweepsExpandAndMatchMeasuredPoints) {
  auto sc = scenario::load(kRoot + "/scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml");
  int pull = 0, measured = 0;
  for (const auto& c : sc.cases)
    if (c.id.rfind("pull-grid/", 0) == 0) {
      ++pull;
      measured += c.measured.has_value();
    }
  EXPECT_EQ(pull, 9);
  EXPECT_EQ(measured, 6);
}

class Mi355xScenario : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sc_ = new models::Scenario(scenario::load(kRoot + "/scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml"));
    hw_ = new hw::Hardware(scenario::load_hardware(*sc_));
    res_ = new nlohmann::json(scenario::run(*sc_, *hw_));
  }
  static models::Scenario* sc_;
  static hw::Hardware* hw_;
  static nlohmann::json* res_;
};
models::Scenario* Mi355xScenario::sc_ = nullptr;
hw::Hardware* Mi355xScenario::hw_ = nullptr;
nlohmann::json* Mi355xScenario::res_ = nullptr;

TEST_F(Mi355xScenario, EveryMeasuredCaseWithinTenPercent) {
  int compared = 0;
  for (const auto& c : (*res_)["cases"]) {
    if (c["error_pct"].is_null()) continue;
    ++compared;
    EXPECT_LE(std::fabs(c["error_pct"].get<double>()), 10.0) << c["id"];
  }
  EXPECT_GE(compared, 30);
}

TEST_F(Mi355xScenario, MedianAndMaxErrorOverSeed000) {
  const auto& s = (*res_)["summary"];
  EXPECT_LE(s["median_abs_error_pct"].get<double>(), 3.0);
  EXPECT_LE(s["max_abs_error_pct"].get<double>(), 8.0);
}

TEST_F(Mi355xScenario, PerPhaseTableWithinFifteenPercent) {
  const std::set<std::string> checked{"gemm", "drain", "reduce", "gather"};
  int n = 0;
  for (const auto& c : (*res_)["cases"]) {
    if (c["id"].get<std::string>().rfind("phases/", 0) != 0) continue;
    for (const auto& p : c["phases"]) {
      if (!p.contains("measured_us") || !checked.count(p["name"].get<std::string>())) continue;
      ++n;
      EXPECT_LE(std::fabs(p["error_pct"].get<double>()), 15.0) << c["id"] << " " << p["name"];
    }
  }
  EXPECT_EQ(n, 11);  // bf16: 4 phases, fp8/sdma: 4, fp8/lsa: gemm, drain, reduce (its gather is the barrier)
}

TEST_F(Mi355xScenario, CasesReportWindowAndWireError) {
  for (const auto& c : (*res_)["cases"]) {
    // Every mori mode allocates the window; the GEMM + RCCL baseline has none.
    if (c["params"]["mode"] == "rccl") EXPECT_EQ(c["window_MiB"].get<double>(), 0.0) << c["id"];
    else EXPECT_GT(c["window_MiB"].get<double>(), 0) << c["id"];
    const bool fp8 = c["params"]["gather_dtype"] == "fp8";
    if (fp8) EXPECT_NEAR(c["wire_rel_l2"].get<double>(), 2.6e-2, 0.3e-2) << c["id"];
    else EXPECT_EQ(c["wire_rel_l2"].get<double>(), 0.0) << c["id"];
  }
}

TEST(Trace, FusedCaseHasOneLanePerResourceAndScatterOverlapsGemm) {
  auto hw = models::load_hardware(kRoot + "/hw/mi355x-8gpu.yaml");
  sim::TraceSink trace;
  models::GemmArConfig c;
  models::simulate_gemm_ar(hw, c, &trace);
  const auto j = trace.to_json();
  ASSERT_TRUE(j.contains("traceEvents"));
  std::set<std::string> threads;
  double gemm_end = 0, first_put = 1e18;
  std::map<int, std::string> tid_name;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") tid_name[e["tid"].get<int>()] = e["args"]["name"];
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid"));
    if (e["ph"] != "X") continue;
    ASSERT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("tid"));
    const std::string lane = tid_name[e["tid"].get<int>()];
    threads.insert(lane);
    const std::string name = e["name"];
    if (name.rfind("gemm wave", 0) == 0) gemm_end = std::max(gemm_end, e["ts"].get<double>() + e["dur"].get<double>());
    if (name.rfind("scatter chunk", 0) == 0) first_put = std::min(first_put, e["ts"].get<double>());
  }
  // Slices on the CUs and on each copy-engine queue; every resource (CUs, HBM, each link direction,
  // each queue) has its lane, the HBM and the links with their utilisation counter.
  for (const std::string lane : {"cu", "sdma->1"})
    EXPECT_TRUE(std::any_of(threads.begin(), threads.end(), [&](const std::string& t) { return t.rfind(lane, 0) == 0; })) << lane;
  const auto lanes = trace.lanes();
  for (const std::string lane : {"gpu0/cu", "gpu0/hbm", "gpu0/fabric-requests", "gpu0/xgmi->1", "gpu1/xgmi->0",
                                 "gpu0/sdma->1", "gpu0/barrier", "gpu7/barrier"})
    EXPECT_NE(std::find(lanes.begin(), lanes.end(), lane), lanes.end()) << lane;
  int counters = 0;
  for (const auto& e : j["traceEvents"]) counters += e["ph"] == "C";
  EXPECT_GT(counters, 0);
  EXPECT_LT(first_put, 0.5 * gemm_end);  // the scatter's puts start while the GEMM still runs
}

TEST(ScenarioOutput, CsvQuotesEveryTextFieldAndDoublesItsQuotes) {
  // RFC 4180: an id with a comma, a quote and a newline stays one field.
  const nlohmann::json r = {{"cases", {{{"id", "a,\"b\nc"}, {"predicted_us", 1.0}, {"measured_us", nullptr},
                                        {"error_pct", nullptr}, {"params", {{"mode", "gemm-only"}}},
                                        {"phases", nlohmann::json::array()}}}}};
  const std::string csv = scenario::format_csv(r);
  EXPECT_NE(csv.find("\n\"a,\"\"b\nc\",1.000,,,\"{\"\"mode\"\":\"\"gemm-only\"\"}\",\"\",,,,,,,,\n"), std::string::npos) << csv;
}

TEST(ScenarioOutput, CsvCarriesNicOpsWhatIfAndFittedLayers) {
  const nlohmann::json nic = nlohmann::json::array(
      {{{"device", 0}, {"atomics_in", 2}, {"atomics_out", 3}, {"inline_writes_out", 4}, {"payload_writes", 5}, {"polls", 6}},
       {{"device", 4}, {"atomics_in", 8}, {"atomics_out", 8}, {"inline_writes_out", 0}, {"payload_writes", 4}, {"polls", 0}}});
  const nlohmann::json r = {{"cases",
                             {{{"id", "afd"}, {"predicted_us", 63.0}, {"measured_us", nullptr}, {"error_pct", nullptr},
                               {"params", {{"path", "afd"}}}, {"phases", nlohmann::json::array()},
                               {"extra", {{"nic_ops_per_round_trip", nic}}}, {"whatif", {{"without_us", 82.25}}}},
                              {{"id", "ttft"}, {"predicted_us", 1.0}, {"measured_us", 2.0}, {"error_pct", -50.0},
                               {"params", {{"layers", 21.5}}}, {"phases", nlohmann::json::array()},
                               {"saving_per_layer_forward_us", 3.0}, {"layers_fit", {{"row", "held out"}}},
                               {"tolerance_pct", 1.5}, {"source", "seed \"001\""}}}}};
  const std::string csv = scenario::format_csv(r);
  EXPECT_NE(csv.find(",\"dev0=2/3/4/5/6;dev4=8/8/0/4/0\",82.250,,,,\n"), std::string::npos) << csv;
  // The measured value's tolerance and source close the row (RFC 4180 quoting).
  EXPECT_NE(csv.find(",,,21.500,\"held out\",1.5,\"seed \"\"001\"\"\"\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("layers,layers_row,tolerance_pct,source\n"), std::string::npos) << csv;
}

// Measured kernel timelines: an entry that could never be compared, or that would be compared wrongly,
// is an error naming its line (each was accepted: a mistyped kernel or a device beyond the ranks was
// dropped, end < start gave a negative duration, a known miss naming nothing could never fail).
TEST(ScenarioAfd, MeasuredKernelEntriesAndKnownMissesAreChecked) {
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/h200-4gpu-nvlink.yaml\nmodel: afd\n";
  const std::string kcase =  // lines 4-6 (+ the kernel_durations block before it, when given)
      "cases:\n  - id: a\n    params: {attention_ranks: 2, ffn_ranks: 2, tokens: 128}\n";
  auto with_kernels = [&](const std::string& kernels, const std::string& before = "") {
    return head + before + kcase + "    measured:\n      period_us: 30\n      source: x\n      kernels:\n" + kernels;
  };
  // Lines: 1-3 head, 4-6 case, 7 measured, 8 period, 9 source, 10 kernels, 11.. entries.
  expect_file_error(with_kernels("        - {device: 1.5, kernel: combine_impl, start_us: 1, end_us: 2}\n"),
                    "expected a device index", 11);
  expect_file_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 3, end_us: 2}\n"),
                    "a kernel must end after it starts", 11);
  expect_file_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 2}\n"
                                 "        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 3}\n"),
                    "listed twice (first at line 11)", 12);
  const std::string kd = "kernel_durations:\n  known_misses:\n    - {case: b, kernel: dev0/combine_impl, reason: r}\n";
  expect_file_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 2}\n", kd), "no case 'b'", 6);
  const std::string kd2 = "kernel_durations:\n  known_misses:\n    - {case: a, kernel: dev0/combine_imp, reason: r}\n";
  expect_file_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 2}\n", kd2),
                    "has no measured kernel 'dev0/combine_imp'", 6);
  expect_file_error(with_kernels("        - {device: 0, kernel: combine_impl, start_us: 1, end_us: 2}\n",
                                 "kernel_durations: {tolerance_pct: -3}\n"),
                    "'kernel_durations.tolerance_pct': must be > 0", 4);
  // A kernel the model does not run on that device: named when the case is compared.
  for (const std::string bad : {"{device: 7, kernel: combine_impl, start_us: 1, end_us: 2}",
                                "{device: 0, kernel: dispatch_implx, start_us: 1, end_us: 2}"}) {
    const std::string w = run_file_error("kern.yaml", with_kernels("        - " + bad + "\n"));
    EXPECT_NE(w.find(":11:"), std::string::npos) << bad << ": " << (w.empty() ? "compared" : w);
    EXPECT_NE(w.find("the model runs no"), std::string::npos) << w;
    EXPECT_NE(w.find("dev0/combine_impl"), std::string::npos) << w;  // what it does run
  }
}

// A quoted number or flag is text in YAML and is refused where a number or a flag is expected
// (yaml-cpp converted "256" and "yes"), naming the key; unquoted values still run.
TEST(ScenarioLoader, QuotedNumbersAndFlagsAreRefused) {
  auto run_error = [&](const std::string& text) { return run_file_error("quoted.yaml", text); };
  const std::string afd = "scenario: s\nhardware: " + kRoot + "/hw/h200-4gpu-nvlink.yaml\nmodel: afd\ncases:\n  - id: a\n    params: ";
  EXPECT_NE(run_error(afd + "{attention_ranks: 2, ffn_ranks: 2, tokens: \"256\"}\n").find("'tokens' must be an integer (unquoted)"), std::string::npos);
  EXPECT_NE(run_error(afd + "{attention_ranks: 2, ffn_ranks: 2, tokens: 8, rotate_channels: 'true'}\n").find("'rotate_channels' must be true or false"),
            std::string::npos);
  EXPECT_EQ(run_error(afd + "{attention_ranks: 2, ffn_ranks: 2, tokens: 8, rotate_channels: true}\n"), "");
  const std::string ga = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n  - id: a\n    params: ";
  EXPECT_NE(run_error(ga + "{mode: fused-sdma, m: \"16384\", n: 7168, k: 2048}\n").find("gemm_ar parameter 'm' must be an integer (unquoted), got '16384'"),
            std::string::npos);
  EXPECT_EQ(run_error(ga + "{mode: \"fused-sdma\", m: 16384, n: 7168, k: 2048}\n"), "");
}
