// compat: every call works in a CPU-only build (no-ops / n/a), autocast switches restore their state.
#include <gtest/gtest.h>

#include "yolo11/build_info.h"
#include "yolo11/core/compat.h"

namespace yolo11::compat {
namespace {

TEST(Compat, BuildFlagMatchesConfiguration) { EXPECT_EQ(built_with_cuda(), build::kCuda); }

TEST(Compat, CpuOnlyCallsAreHarmless) {
  if (cuda_available()) GTEST_SKIP() << "CUDA device present: covered by the GPU check";
  synchronize(0);
  EXPECT_EQ(peak_memory_allocated(0), -1);
  EXPECT_EQ(memory_allocated(0), -1);
  reset_peak_memory(0);
  EventTimer t(0);
  const int slot = t.start();
  EXPECT_EQ(slot, -1);
  t.stop(slot);
  EXPECT_FALSE(t.query(slot).has_value());
  t.release(slot);
  if (!built_with_cuda()) {
    EXPECT_FALSE(profiler_start());
    EXPECT_FALSE(profiler_stop());
  }
}

TEST(Compat, AutocastGuardEnablesAndRestoresCpuAutocast) {
  ASSERT_FALSE(is_autocast_enabled(c10::DeviceType::CPU));
  {
    AutocastGuard g(c10::DeviceType::CPU, true, c10::ScalarType::BFloat16);
    EXPECT_TRUE(is_autocast_enabled(c10::DeviceType::CPU));
    {
      AutocastGuard off(c10::DeviceType::CPU, false);
      EXPECT_TRUE(is_autocast_enabled(c10::DeviceType::CPU));  // enabled=false leaves the state alone
    }
  }
  EXPECT_FALSE(is_autocast_enabled(c10::DeviceType::CPU));
  set_autocast_enabled(c10::DeviceType::CPU, true);
  EXPECT_TRUE(is_autocast_enabled(c10::DeviceType::CPU));
  set_autocast_enabled(c10::DeviceType::CPU, false);
}

}  // namespace
}  // namespace yolo11::compat
