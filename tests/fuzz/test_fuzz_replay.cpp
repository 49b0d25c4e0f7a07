// Every committed seed (fuzz/seeds/<target>) and every regression input (fuzz/regressions/<target>: what a fuzz run
// found, fixed since) through the entry of fuzz/entries.h its libFuzzer target calls: each is accepted or rejected
// with the parser's documented error, and passes the entry's checks (docs/fuzzing.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "entries.h"
#include "yolo11/io/file.h"
#include "yolo11_test_config.h"

namespace {
namespace fs = std::filesystem;

std::vector<fs::path> inputs(const std::string& target) {
  std::vector<fs::path> files;
  for (const char* kind : {"seeds", "regressions"}) {
    const fs::path dir = fs::path(YOLO11_TEST_SOURCE_DIR) / "fuzz" / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class FuzzReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzReplay, SeedsAndRegressionInputsPassTheEntry) {
  const std::string target = GetParam();
  const auto files = inputs(target);
  // every target has seeds; a target without them would replay nothing and prove nothing
  ASSERT_FALSE(files.empty()) << "no inputs under fuzz/seeds/" << target;
  const auto entry = yolo11::fuzz::entry(target);
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    const std::string bytes = yolo11::io::read_file(f.string());
    try {
      entry(bytes);
    } catch (const std::exception& e) {
      ADD_FAILURE() << f.string() << ": " << e.what();
    }
  }
  std::error_code ec;
  fs::remove_all(yolo11::fuzz::detail::scratch(), ec);  // the entries recreate what they need
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(yolo11::fuzz::target_names()),
                         [](const auto& info) { return info.param; });

TEST(FuzzReplay, EveryTargetHasAnEntryAndALibFuzzerSource) {
  for (const auto& t : yolo11::fuzz::target_names()) {
    EXPECT_NO_THROW(yolo11::fuzz::entry(t)) << t;
    EXPECT_TRUE(fs::is_regular_file(fs::path(YOLO11_TEST_SOURCE_DIR) / "fuzz" / "targets" / (t + ".cpp"))) << t;
  }
  EXPECT_THROW(yolo11::fuzz::entry("nope"), std::invalid_argument);
}

}  // namespace
