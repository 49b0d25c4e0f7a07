// Start stress (issue 10, item 1: an intermittent SIGSEGV right after "Starting training"): yolo11-train started
// back to back with several `workers` values; any start ended by a signal (or an error) fails the test.
// This short version is in the normal suite; tests/slow/test_start_stress_50.cpp runs 50 starts.
#include <gtest/gtest.h>

#include <filesystem>

#include "golden.h"
#include "process.h"

TEST(StartStress, TenStartsEndCleanly) {
  ASSERT_TRUE(std::filesystem::exists(yolo11::test::exe("yolo11-train")));
  const auto bad = yolo11::test::start_stress(yolo11::test::scratch_dir("stress10"), 10, {0, 1, 2, 4, 8});
  for (const auto& b : bad) ADD_FAILURE() << b;
}
