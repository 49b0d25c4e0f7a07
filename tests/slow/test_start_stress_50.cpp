// Opt-in (label "slow"): 50 back-to-back starts of yolo11-train (issue 10 acceptance: "the start-stress test passes
// 50 starts"), workers 0, 1, 2, 4, 8 in turn; any start ended by a signal or an error fails. The normal suite runs
// 10 (tests/engine/test_start_stress.cpp).
#include <gtest/gtest.h>

#include <filesystem>

#include "golden.h"
#include "process.h"

TEST(StartStress, FiftyStartsEndCleanly) {
  ASSERT_TRUE(std::filesystem::exists(yolo11::test::exe("yolo11-train")));
  const auto bad = yolo11::test::start_stress(yolo11::test::scratch_dir("stress50"), 50, {0, 1, 2, 4, 8});
  for (const auto& b : bad) ADD_FAILURE() << b;
  EXPECT_TRUE(bad.empty()) << bad.size() << " of 50 starts failed";
}
