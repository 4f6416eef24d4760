// The hardware loader (hw/hardware.hpp) against the builtin registry: a file's documents, topology
// and provenance, and the calibration's residuals.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include "models/model.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::test;
namespace fs = std::filesystem;

namespace {
// A hardware file loaded against the builtin registry must fail with `needle` at `line`.
void expect_hw_error(const std::string& text, const std::string& needle, int line) {
  expect_error_at<hw::FileError>([](const std::string& p) { models::load_hardware(p); }, "bad-hw.yaml", text, needle, line);
}
std::string hw_error(const std::string& text) {
  return error_of<hw::FileError>([&] { models::load_hardware(write_tmp("cli_hw_bad.yaml", text)); });
}

std::string with_replaced(const std::string& text, const std::string& from, const std::string& to) {
  std::string s = text;
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

/// 1-based line of the first line of `text` containing `needle`.
int line_with(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string l;
  for (int n = 1; std::getline(in, l); ++n)
    if (has(l, needle)) return n;
  return 0;
}

/// Line `n` (1-based) of `text`, without its newline ("" past the end).
std::string line_at(const std::string& text, int n) {
  std::istringstream in(text);
  std::string l;
  for (int i = 1; i <= n; ++i)
    if (!std::getline(in, l)) return "";
  return l;
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

TEST(HardwareProvenance, EveryFittedValueOfTheRepositoryCarriesItsFit) {
  for (const auto& e : fs::directory_iterator(kRoot + "/hw"))
    if (e.path().extension() == ".yaml") {
      EXPECT_NO_THROW(models::load_hardware(e.path().string())) << e.path();
    }
}

TEST(HardwareProvenance, AFittedValueWithoutDateCommitOrFilesIsRefused) {
  const std::string text = read_file(kRoot + "/hw/mi355x-8gpu.yaml");
  // The first fitted value on one line: drop each of its fit fields in turn.
  const int line = line_with(text, "kind: fitted");
  ASSERT_GT(line, 0);
  const std::string l = line_at(text, line);
  const std::string key = l.substr(l.find_first_not_of(' '), l.find(':') - l.find_first_not_of(' '));
  for (const std::string field : {"fitted_on", "commit", "fitted_from"}) {
    const auto at = l.find(", " + field + ":");
    ASSERT_NE(at, std::string::npos) << field << " in " << l;
    auto end = l.find(field == "fitted_from" ? "]" : ",", at + 2);
    if (field == "fitted_from") ++end;
    const std::string cut = l.substr(0, at) + l.substr(end);
    const std::string w = hw_error(with_replaced(text, l, cut));
    EXPECT_TRUE(has(w, ":" + std::to_string(line) + ":")) << w;
    EXPECT_TRUE(has(w, "." + key + "." + field + "'") && has(w, "missing")) << w;
  }
}

TEST(HardwareCalibration, ANegativeOrNonFiniteResidualIsRefused) {
  const std::string text = read_file(kRoot + "/hw/mi355x-8gpu.yaml");
  const int line = line_with(text, "residual_rms_pct:");
  ASSERT_GT(line, 0);
  const std::string l = line_at(text, line);
  for (const std::string bad : {"-5", ".nan", ".inf", "-.inf"}) {
    const std::string w = hw_error(with_replaced(text, l, "  residual_rms_pct: " + bad));
    EXPECT_TRUE(has(w, ":" + std::to_string(line) + ":") && has(w, "residual_rms_pct")) << bad << ": " << w;
  }
  EXPECT_EQ(hw_error(with_replaced(text, l, "  residual_rms_pct: 0")), "");
}

TEST(ScenarioHardware, ATableNoModelDeclaresIsRefusedAtItsLine) {
  // The models declare the tables they read (ModelSpec::tables); a misspelt one would leave the model without it,
  // unseen (sm_sharing would fall back to the machine's one HBM coefficient for every kernel).
  std::string text = with_replaced(read_file(kRoot + "/hw/h100-1gpu.yaml"), "  hbm_queue_kappa_by_kernel:", "  hbm_queue_kapa_by_kernel:");
  for (size_t at; (at = text.find("file: data/")) != std::string::npos;) text.replace(at, 11, "file: " + kRoot + "/hw/data/");
  expect_hw_error(text, "'tables.hbm_queue_kapa_by_kernel': unknown table (declared: ", line_with(text, "hbm_queue_kapa_by_kernel:"));
  EXPECT_TRUE(has(hw_error(text), "hbm_queue_kappa_by_kernel"));  // the declared names are listed
  const hw::ParamRegistry& r = models::builtin_registry();
  for (const char* t : {"sm_map", "late_cluster_work_ids", "hbm_queue_kappa_by_kernel", "gemm"}) EXPECT_NE(r.find_table(t), nullptr) << t;
}
