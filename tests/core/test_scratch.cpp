// The suite's scratch folders (tests/common/golden.h scratch_dir): a passing test's are removed when it ends, a
// failing test's stay for reading. Checked by running this binary on two helper tests, as ctest runs one test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "golden.h"
#include "process.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;
using namespace yolo11::test;

namespace {
// The helpers run only when named with --gtest_also_run_disabled_tests.
void write_scratch_file() { std::ofstream(fs::path(scratch_dir("out")) / "last.safetensors") << "0123456789"; }
fs::path helper_scratch(const std::string& test) {
  return fs::path(YOLO11_TEST_BINARY_DIR) / "test_scratch" / ("Scratch." + test);
}
int run_helper(const std::string& test, const std::string& log) {
  return run(fs::read_symlink("/proc/self/exe").string(),
             {"--gtest_also_run_disabled_tests", "--gtest_filter=Scratch." + test}, log);
}
}  // namespace

TEST(Scratch, DISABLED_HelperPasses) { write_scratch_file(); }
TEST(Scratch, DISABLED_HelperFails) {
  write_scratch_file();
  FAIL() << "this helper fails on purpose";
}

TEST(Scratch, APassingTestsFoldersAreRemovedAFailingTestsStay) {
  if (keep_scratch()) GTEST_SKIP() << "YOLO11_KEEP_SCRATCH is set: every test keeps its scratch folders";
  const fs::path log = fs::path(scratch_dir("log")) / "helpers.log";
  const fs::path passed = helper_scratch("DISABLED_HelperPasses");
  const fs::path failed = helper_scratch("DISABLED_HelperFails");
  fs::remove_all(passed);
  fs::remove_all(failed);
  ASSERT_EQ(run_helper("DISABLED_HelperPasses", log.string()), 0) << read_text(log.string());
  EXPECT_FALSE(fs::exists(passed)) << passed << " was left after the test passed";
  ASSERT_NE(run_helper("DISABLED_HelperFails", log.string()), 0) << read_text(log.string());
  EXPECT_TRUE(fs::exists(failed / "out" / "last.safetensors")) << failed << " was removed although the test failed";
  fs::remove_all(failed);
}
