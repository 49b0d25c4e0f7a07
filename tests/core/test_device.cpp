// core::resolve_device (include/yolo11/core/device.h): every rule with injected facts, so the CUDA cases run on a
// CPU machine. Ultralytics' meaning of device='' is "the first CUDA device when there is one".
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/version.h>

#include <cstdlib>
#include <string>

#include "yolo11/core/compat.h"
#include "yolo11/core/device.h"

namespace core = yolo11::core;

namespace {

core::DeviceFacts gpus(int n, int world = 1, int local_rank = 0) {
  core::DeviceFacts f;
  f.built_with_cuda = true;
  f.cuda_count = n;
  f.world = world;
  f.local_rank = local_rank;
  return f;
}

std::string error_of(const std::string& device, const core::DeviceFacts& f) {
  try {
    (void)core::resolve_device(device, f);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CoreDevice, EmptyMeansTheFirstGpuWhenThereIsOne) {
  const auto p = core::resolve_device("", gpus(2));
  EXPECT_EQ(p.device.str(), "cuda:0");
  EXPECT_TRUE(p.cuda());
  EXPECT_EQ(p.cuda_index(), 0);
  EXPECT_NE(p.reason.find("2 CUDA device(s) visible"), std::string::npos) << p.reason;
}

TEST(CoreDevice, EmptyMeansCpuWithoutCuda) {
  EXPECT_EQ(core::resolve_device("", gpus(0)).device.str(), "cpu");
  core::DeviceFacts cpu_build;
  const auto p = core::resolve_device("", cpu_build);
  EXPECT_EQ(p.device.str(), "cpu");
  EXPECT_NE(p.reason.find("no CUDA"), std::string::npos) << p.reason;
  EXPECT_EQ(p.cuda_index(), 0);  // index-taking compat calls stay valid no-ops
}

TEST(CoreDevice, ExplicitForms) {
  EXPECT_EQ(core::resolve_device("cpu", gpus(2)).device.str(), "cpu");
  EXPECT_EQ(core::resolve_device("CPU", gpus(2)).device.str(), "cpu");
  EXPECT_EQ(core::resolve_device("1", gpus(2)).device.str(), "cuda:1");
  EXPECT_EQ(core::resolve_device("cuda", gpus(2)).device.str(), "cuda:0");
  EXPECT_EQ(core::resolve_device("cuda:1", gpus(2)).device.str(), "cuda:1");
  EXPECT_EQ(core::resolve_device(" 0 ", gpus(1)).device.str(), "cuda:0");
}

TEST(CoreDevice, DdpRankTakesItsLocalRankDevice) {
  // torchrun: one GPU per process, LOCAL_RANK selects it, whatever single index was given.
  EXPECT_EQ(core::resolve_device("", gpus(2, 2, 1)).device.str(), "cuda:1");
  EXPECT_EQ(core::resolve_device("0", gpus(2, 2, 1)).device.str(), "cuda:1");
  EXPECT_EQ(core::resolve_device("", gpus(2, 2, 1)).cuda_index(), 1);  // the profiler's events/NVML index
  // a list: the LOCAL_RANK-th entry
  EXPECT_EQ(core::resolve_device("2,3", gpus(4, 2, 0)).device.str(), "cuda:2");
  EXPECT_EQ(core::resolve_device("2,3", gpus(4, 2, 1)).device.str(), "cuda:3");
  // DDP on CPU stays on the CPU (Gloo)
  EXPECT_EQ(core::resolve_device("", gpus(0, 2, 1)).device.str(), "cpu");
  EXPECT_EQ(core::resolve_device("cpu", gpus(2, 2, 1)).device.str(), "cpu");
}

TEST(CoreDevice, ClearErrors) {
  EXPECT_NE(error_of("gpu", gpus(1)).find("device=gpu is not a device"), std::string::npos);
  EXPECT_NE(error_of("cuda:x", gpus(1)).find("not a device"), std::string::npos);
  EXPECT_NE(error_of("mps", gpus(1)).find("not supported"), std::string::npos);
  EXPECT_NE(error_of("2", gpus(2)).find("CUDA device 2 does not exist, 2 visible"), std::string::npos);
  EXPECT_NE(error_of("0", gpus(0)).find("none is visible"), std::string::npos);
  EXPECT_NE(error_of("0", core::DeviceFacts{}).find("no CUDA"), std::string::npos);
  // a list in one process: this trainer does not spawn DDP; the message names the launcher
  EXPECT_NE(error_of("0,1", gpus(2)).find("tools/launch_dist.sh 2"), std::string::npos) << error_of("0,1", gpus(2));
  EXPECT_NE(error_of("0,0", gpus(2, 2, 0)).find("twice"), std::string::npos);
  EXPECT_NE(error_of("0,1", gpus(4, 4, 2)).find("LOCAL_RANK=2"), std::string::npos);
  EXPECT_NE(error_of("", gpus(1, 2, 1)).find("does not exist"), std::string::npos);  // rank 1 of 2, one GPU
  EXPECT_NE(error_of("0,a", gpus(2, 2, 0)).find("not a list"), std::string::npos);
}

TEST(CoreDevice, CudaVisibleDevicesIsQuotedInErrors) {
  auto f = gpus(0);
  f.cuda_visible_devices = "";
  EXPECT_NE(error_of("0", f).find("CUDA_VISIBLE_DEVICES=''"), std::string::npos) << error_of("0", f);
  auto g = gpus(1);
  g.cuda_visible_devices = "3";
  EXPECT_NE(error_of("1", g).find("CUDA_VISIBLE_DEVICES='3'"), std::string::npos) << error_of("1", g);
  EXPECT_NE(core::resolve_device("", f).reason.find("CUDA_VISIBLE_DEVICES=''"), std::string::npos);
}

TEST(CoreDevice, ThisMachinesPlan) {
  // The facts of this process: on a machine without a GPU device='' is the CPU and device=0 a clear error.
  const auto f = core::probe_device_facts();
  EXPECT_EQ(f.built_with_cuda, yolo11::compat::built_with_cuda());
  const auto p = core::plan_device("");
  if (!yolo11::compat::cuda_available()) {
    EXPECT_EQ(p.device.str(), "cpu");
    EXPECT_THROW(core::plan_device("0"), std::runtime_error);
  } else {
    EXPECT_EQ(p.device.str(), "cuda:0");
  }
}

TEST(CoreDeterminism, AppliesUltralyticsSwitches) {
  auto& ctx = at::globalContext();
  const std::string on = yolo11::compat::apply_determinism(true);
  EXPECT_TRUE(ctx.deterministicAlgorithms());
  EXPECT_TRUE(ctx.deterministicAlgorithmsWarnOnly());
  EXPECT_TRUE(ctx.deterministicCuDNN());
  EXPECT_FALSE(ctx.benchmarkCuDNN());
  ASSERT_NE(std::getenv("CUBLAS_WORKSPACE_CONFIG"), nullptr);
  EXPECT_NE(on.find("CUBLAS_WORKSPACE_CONFIG="), std::string::npos) << on;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // Deterministic algorithms without LibTorch's NaN fill of every new tensor (10 % of a CPU step), unless asked for.
  EXPECT_FALSE(ctx.deterministicFillUninitializedMemory()) << on;
  EXPECT_NE(on.find("not NaN-filled"), std::string::npos) << on;
  ::setenv("YOLO11_FILL_UNINITIALIZED", "1", 1);
  const std::string filled = yolo11::compat::apply_determinism(true);
  ::unsetenv("YOLO11_FILL_UNINITIALIZED");
  EXPECT_TRUE(ctx.deterministicFillUninitializedMemory()) << filled;
  EXPECT_NE(filled.find("filled with NaN"), std::string::npos) << filled;
  (void)yolo11::compat::apply_determinism(true);
  EXPECT_FALSE(ctx.deterministicFillUninitializedMemory());
#endif
  const std::string off = yolo11::compat::apply_determinism(false);
  EXPECT_FALSE(ctx.deterministicAlgorithms());
  EXPECT_FALSE(ctx.deterministicCuDNN());
  EXPECT_TRUE(ctx.benchmarkCuDNN());
  EXPECT_NE(off.find("cuDNN benchmark on"), std::string::npos) << off;
}
