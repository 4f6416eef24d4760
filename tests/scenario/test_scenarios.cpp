// The scenario layer (scenario/): loader errors naming file, line and key, the required hardware
// checked before any case runs, a case's refusals at the parameter's line, and the CSV.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "models/gemm_ar/gemm_ar.hpp"
#include "models/model.hpp"
#include "scenario/load.hpp"
#include "scenario/report.hpp"
#include "scenario/run.hpp"
#include "tests/scenario/scenario_util.hpp"

using namespace fusesim;
using namespace fusesim::test;




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
  expect_load_error(head + "cases:\n  - id: a\n    params: {m: 1}\n  - id: c\n    params: {tokens: 1, tokens: 2}\n",
                    "'cases[c].params.tokens': key given twice in the same mapping", 8);
  // the id given after the repeated key, and a repeat inside a measured list entry
  expect_load_error(head + "cases:\n  - params: {m: 1, m: 2}\n    id: late\n", "'cases[late].params.m': key given twice", 5);
  expect_load_error(head + "cases:\n  - id: b\n    sweep: {m: [1, 2]}\n    measured:\n      - {at: {m: 1}, value_us: 1, value_us: 2, source: x}\n",
                    "'cases[b].measured[0].value_us': key given twice", 8);
  // no usable id (none, empty, or the id itself repeated): the index, as before
  expect_load_error(head + "cases:\n  - params: {m: 1, m: 2}\n", "'cases[0].params.m': key given twice", 5);
  expect_load_error(head + "cases:\n  - {id: \"\", params: {m: 1, m: 2}}\n", "'cases[0].params.m': key given twice", 5);
  expect_load_error(head + "cases:\n  - {id: x, id: y}\n", "'cases[0].id': key given twice", 5);
  // outside the cases, the loader's own naming
  expect_load_error(head + "defaults: {m: 1, m: 2}\ncases:\n  - id: a\n", "'defaults.m': key given twice", 4);
  expect_load_error(head + "model: afd\ncases:\n  - id: a\n", "'model': key given twice", 4);
}

TEST(ScenarioLoader, NonFiniteNumbersAndADirectoryAsHardwareAreRefused) {
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n";
  expect_load_error(head + "cases:\n  - id: a\n    params: {mode: rccl, m: 1024}\n    measured: {value_us: .inf, source: x}\n",
                    "'cases[a].measured.value_us': expected a finite number, got '.inf'", 7);
  expect_load_error(head + "tolerance_pct: .nan\ncases: []\n", "expected a finite number", 4);
  expect_load_error("scenario: s\nmodel: gemm_ar\nhardware: " + kRoot + "/hw\ncases: []\n", "is a directory", 3);
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



TEST(ScenarioLoader, ErrorsNameFileLineAndKey) {
  const std::string head = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\n";
  expect_load_error(head + "cases:\n  - id: a\n    parms: {m: 1}\n", "'cases[a].parms'", 6);
  expect_load_error(head + "colour: red\ncases: []\n", "colour", 4);
  expect_load_error("scenario: s\nmodel: gemm_ar\ncases: []\n", "hardware", 1);
  expect_load_error("scenario: s\nmodel: gemm_ar\nhardware: hw/nope.yaml\ncases: []\n", "no hardware file", 3);
  expect_load_error(head + "cases:\n  - id: a\n    params: {mode: fused-sdma,\n             mode: split-sdma}\n",
                    "'cases[a].params.mode': key given twice in the same mapping", 7);
  expect_load_error(head + "tolerance_pct: -5\ncases: []\n", "tolerance_pct", 4);
  expect_load_error(head + "cases: []\n", "cases", 4);
  expect_load_error(head + "cases:\n  - id: \"\"\n    params: {mode: fused-sdma}\n", "'cases[0].id': is empty", 5);
  expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: -3, source: x}\n", "value_us", 6);
  expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: 3}\n", "source", 6);
  expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: 3, source: \"\"}\n", "source", 6);
  expect_load_error(head + "cases:\n  - id: a\n    sweep: {m: 4}\n", "sweep.m", 6);
  expect_load_error(head + "cases:\n  - id: a\n    sweep: {m: [1, 2]}\n    measured:\n      - {at: {m: 3}, value_us: 1, source: x}\n",
                    "'cases[a].measured[0].at': '{m: 3}' matches no sweep point (swept: m: [1, 2])", 8);
  // A mistyped swept value shows up as a point nothing matches: the message lists the swept values.
  expect_load_error(head + "cases:\n  - id: a\n    sweep: {m: [1, lots]}\n    measured:\n      - {at: {m: 2}, value_us: 1, source: x}\n",
                    "matches no sweep point (swept: m: [1, lots])", 8);
  expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: 1e999, source: x}\n",
                    "'cases[a].measured.value_us': '1e999' is out of the range of a double", 6);
  // Keys name the case by its id, or by its index (from 0) while it has no usable id.
  expect_load_error(head + "cases:\n  - id: a\n  - params: {m: 1}\n", "'cases[1].id': missing", 6);
  expect_load_error(head + "cases:\n  - id: [a]\n", "'cases[0].id': expected a name", 5);
  expect_load_error(head + "cases:\n  - id: a\n  - 7\n", "'cases[1]': each case must be a mapping", 6);
  expect_load_error(head + "cases:\n  - {parms: 1}\n", "'cases[0].parms': unknown key", 5);
  expect_load_error(head + "cases:\n  - id: a\n    sweep: {m: 4}\n", "'cases[a].sweep.m'", 6);
  // Unknown keys of a measured value (single, each entry of the list form, measured_phases) list the accepted ones.
  expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: 100, source: x, zzz: 1}\n",
                    "'cases[a].measured.zzz': unknown key (expected one of: kernels, known_miss, period_us, phases_us, source, value_us)", 6);
  expect_load_error(head + "cases:\n  - id: a\n    sweep: {m: [1, 2]}\n    measured:\n      - {at: {m: 1}, value_us: 1, source: x}\n"
                           "      - {at: {m: 2}, value_us: 1, source: x, bogus: 1}\n",
                    "'cases[a].measured[1].bogus': unknown key (expected one of: at, kernels, known_miss, period_us, phases_us, source, value_us)", 9);
  expect_load_error(head + "cases:\n  - id: a\n    measured_phases:\n      phases_us: {gemm: 1}\n      source: x\n      value_us: 3\n",
                    "'cases[a].measured_phases.value_us': unknown key (expected one of: phases_us, source)", 9);
  expect_load_error(head + "cases:\n  - id: a\n    measured_phases: {source: x}\n", "'cases[a].measured_phases': needs phases_us", 6);
  expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: 1, source: x, kernels: [{device: 0, kernel: k, start_us: 0, end_us: 1, dev: 2}]}\n",
                    "'cases[a].measured.kernels.dev': unknown key", 6);
  expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: 1, period_us: 2, source: x}\n", "not both", 6);
  expect_load_error(head + "cases:\n  - id: a\n    measured: {period_us: 0, source: x}\n", "'cases[a].measured.period_us': a measured time must be from 0.001 to 1e+10 us, got 0", 6);
  expect_load_error(head + "cases:\n  - id: a\n    sweep: {m: [1, 2]}\n    measured: [7]\n", "'cases[a].measured[0]': expected a mapping", 7);
  // A measured list's `at:` names exactly one sweep point, by swept parameters only, once.
  const std::string swept = head + "cases:\n  - id: a\n    sweep: {m: [4096, 8192], n: [1, 2]}\n    measured:\n";
  expect_load_error(swept + "      - {at: {k: 2048}, value_us: 100, source: x}\n",
                    "'cases[a].measured[0].at.k': 'k' is not a swept parameter of this case (swept: m, n)", 8);
  expect_load_error(swept + "      - {at: {m: 4096}, value_us: 100, source: x}\n",
                    "'cases[a].measured[0].at': '{m: 4096}' matches 2 sweep points (a/m=4096/n=1, ...); give a value for each swept "
                    "parameter (m, n)", 8);
  expect_load_error(swept + "      - {at: {m: 4096, n: 1}, value_us: 100, source: x}\n      - {at: {n: 1, m: 4096}, value_us: 90, source: y}\n",
                    "'cases[a].measured[1].at': sweep point '{n: 1, m: 4096}' given twice (also on line 8)", 9);
  expect_load_error(head + "cases:\n  - id: a\n    measured:\n      - {at: {m: 1}, value_us: 100, source: x}\n",
                    "'cases[a].measured[0].at.m': this case has no sweep", 7);
  // known_miss is the reason the model misses the point: a flag or an empty text is refused.
  for (const std::string v : {"false", "true", "5", "\"\"", "", "[a]"})
    expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: 100, source: x, known_miss: " + v + "}\n",
                      "'cases[a].measured.known_miss': expected the reason the model misses this point (a non-empty text)", 6);
  // A top-level field of the wrong type names its key and the type expected (yaml-cpp said "bad conversion", no file).
  const std::string rest = "hardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n  - id: a\n";
  expect_load_error("scenario: [1,2]\n" + rest, "'scenario': expected a name (text), got a list '[1, 2]'", 1);
  expect_load_error("scenario: s\ndescription: {a: 1}\n" + rest, "'description': expected a text, got a mapping", 2);
  expect_load_error("scenario: s\nhardware: [a]\nmodel: gemm_ar\ncases:\n  - id: a\n", "'hardware': expected the path of a hardware file", 2);
  expect_load_error("scenario: s\nmodel: [gemm_ar]\nhardware: x.yaml\ncases:\n  - id: a\n", "'model': expected a model name (text)", 2);
  expect_load_error("scenario: s\nmodel: gemm_ar\nhardware:\ncases:\n  - id: a\n", "'hardware': is empty", 3);
  expect_load_error("scenario:\n" + rest, "'scenario': is empty", 1);
  expect_load_error(head + "cases:\n  - id: a\n    measured: {value_us: 1, source: [a, b]}\n", "'cases[a].measured.source': expected the table", 6);
  // kernel_durations is the afd model's section: another model's file refuses it.
  const std::string afd_head = "scenario: s\nhardware: " + kRoot + "/hw/h200-4gpu-nvlink.yaml\nmodel: afd\n";
  expect_load_error(afd_head + "kernel_durations: {known_misses: 3}\ncases:\n  - id: a\n", "'kernel_durations.known_misses': expected a list", 4);
  expect_load_error(afd_head + "kernel_durations:\n  known_misses:\n    - {case: a, kernel: dev0/x, reason: true}\ncases:\n  - id: a\n",
                    "'kernel_durations.known_misses[0].reason': expected the reason", 6);
  expect_load_error(head + "kernel_durations: {known_misses: 3}\ncases:\n  - id: a\n",
                    "'kernel_durations': only the afd model judges per-kernel durations (this scenario's model is 'gemm_ar')", 4);
  // Any other conversion error still names the file and line.
  expect_load_error(head + "cases:\n  - id: a\n    params: {[m]: 1}\n", "bad.yaml:6: unexpected value", 6);
  // A second YAML document is refused, not ignored.
  expect_load_error(head + "cases:\n  - id: a\n---\nscenario: t\n", "a second YAML document starts here", 6);
  // yaml-cpp notices an unclosed flow map on the next line; the message also names the opening line.
  expect_load_error(head + "cases:\n  - id: a\n    params: {mode: \"gemm-only\", m: 4096\n  - id: b\n",
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








TEST(ScenarioOutput, CsvQuotesEveryTextFieldAndDoublesItsQuotes) {
  // RFC 4180: an id with a comma and a quote stays one field; a newline (any control character) is
  // written as an escape (hw::printable), so a row is one line also on a terminal.
  const nlohmann::json r = {{"cases", {{{"id", "a,\"b\nc"}, {"predicted_us", 1.0}, {"measured_us", nullptr},
                                        {"error_pct", nullptr}, {"params", {{"mode", "gemm-only"}}},
                                        {"phases", nlohmann::json::array()}}}}};
  const std::string csv = scenario::format_csv(r);
  EXPECT_NE(csv.find("\n\"a,\"\"b\\nc\",1.000,,,\"{\"\"mode\"\":\"\"gemm-only\"\"}\",\"\",,,,,,,,\n"), std::string::npos) << csv;
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


// A quoted number or flag is text in YAML and is refused where a number or a flag is expected
// (yaml-cpp converted "256" and "yes"), naming the key; unquoted values still run.
TEST(ScenarioLoader, QuotedNumbersAndFlagsAreRefused) {
  auto run_error = [&](const std::string& text) { return scenario_error("quoted.yaml", text); };
  const std::string afd = "scenario: s\nhardware: " + kRoot + "/hw/h200-4gpu-nvlink.yaml\nmodel: afd\ncases:\n  - id: a\n    params: ";
  EXPECT_NE(run_error(afd + "{attention_ranks: 2, ffn_ranks: 2, tokens: \"256\"}\n").find("'tokens' must be an integer (unquoted)"), std::string::npos);
  EXPECT_NE(run_error(afd + "{attention_ranks: 2, ffn_ranks: 2, tokens: 8, rotate_channels: 'true'}\n").find("'rotate_channels' must be true or false"),
            std::string::npos);
  EXPECT_EQ(run_error(afd + "{attention_ranks: 2, ffn_ranks: 2, tokens: 8, rotate_channels: true}\n"), "");
  const std::string ga = "scenario: s\nhardware: " + kRoot + "/hw/mi355x-8gpu.yaml\nmodel: gemm_ar\ncases:\n  - id: a\n    params: ";
  EXPECT_NE(run_error(ga + "{mode: fused-sdma, m: \"16384\", n: 7168, k: 2048}\n").find("gemm_ar parameter 'm' must be a whole number from 1 to 2^31 (unquoted), got '16384'"),
            std::string::npos);
  EXPECT_EQ(run_error(ga + "{mode: \"fused-sdma\", m: 16384, n: 7168, k: 2048}\n"), "");
}
