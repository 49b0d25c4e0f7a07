// NVML GPM through the dlopen'ed NVML, with a fake library (tests/instrument/fake_nvml): SM activity, occupancy,
// tensor and DRAM activity are sampled next to util, and a busy-but-idle-SMs GPU is diagnosed as launch-bound.
#include <gtest/gtest.h>

#include <cstdlib>

#include "yolo11/instrument/diagnosis.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/instrument/stats.h"

namespace yolo11::instrument {
namespace {

TEST(Gpm, FakeNvmlMetricsAreReadFromTheSecondSampleOn) {
  setenv("YOLO11_NVML_LIBRARY", YOLO11_FAKE_NVML_PATH, 1);
  auto nvml = Nvml::open(0);
  unsetenv("YOLO11_NVML_LIBRARY");
  ASSERT_NE(nvml, nullptr);
  EXPECT_EQ(nvml->device_name(), "NVIDIA H200");
  ASSERT_TRUE(nvml->has_gpm());
  Sample first, second;
  ASSERT_TRUE(nvml->read(first));
  EXPECT_DOUBLE_EQ(first.gpu_util, 95);
  EXPECT_DOUBLE_EQ(first.sm_active, -1);  // GPM metrics need two samples
  ASSERT_TRUE(nvml->read(second));
  EXPECT_DOUBLE_EQ(second.sm_active, 31);
  EXPECT_DOUBLE_EQ(second.sm_occupancy, 12);
  EXPECT_DOUBLE_EQ(second.tensor_active, 7);
  EXPECT_DOUBLE_EQ(second.dram_bw, 22);
}

TEST(Gpm, WithoutNvmlEverythingIsNa) {
  setenv("YOLO11_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  EXPECT_EQ(Nvml::open(0), nullptr);
  unsetenv("YOLO11_NVML_LIBRARY");
}

TEST(Gpm, BusyGpuWithIdleSmsIsDiagnosedLaunchBound) {
  WindowSummary w;
  w.step.total = 1.0;
  w.step.mean = 0.1;
  StageSummary f;
  f.name = "forward";
  f.total = 0.9;
  f.share = 0.9;
  f.count = 10;
  w.stages.push_back(f);
  w.gpu_util = 95;
  w.sm_active = 31;
  AdviceContext c;
  c.device = "0";
  c.batch = 16;
  const Diagnosis d = diagnose(w, c);
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
  EXPECT_NE(d.reason.find("SM active only 31%"), std::string::npos) << d.reason;
  EXPECT_NE(d.advice.find("launch-bound"), std::string::npos) << d.advice;
  w.sm_active = 85;  // SMs really busy: the usual compute advice
  EXPECT_EQ(diagnose(w, c).advice.find("launch-bound"), std::string::npos);
}

}  // namespace
}  // namespace yolo11::instrument
