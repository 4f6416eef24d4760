// The file helpers shared by the loaders and the command line (hw/io.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "hw/io.hpp"
#include "tests/test_util.hpp"

using namespace fusesim;
using namespace fusesim::test;

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
