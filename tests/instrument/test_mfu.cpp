// MFU: the GPU peak table, the CPU micro-benchmark and its cache, and MFU in the window line, breakdown.csv and
// summary.json (with a given peak, so nothing here depends on how fast the machine is).
#include <gtest/gtest.h>


#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "yolo11/instrument/analyze.h"
#include "yolo11/instrument/mfu.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"

namespace yolo11::instrument {
namespace {

TEST(Mfu, GpuPeakTableByNameAndDtype) {
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA H200", "bf16"), 989e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA H100 PCIe", "bf16"), 756e12);  // before the plain "H100" entry
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA A100-SXM4-80GB", "tf32"), 156e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA L4", "fp32"), 30.3e12);
  EXPECT_FALSE(gpu_peak_flops("Tesla V100-SXM2-16GB", "tf32"));  // no TF32 units
  EXPECT_FALSE(gpu_peak_flops("Some Future GPU"));
  EXPECT_NEAR(*mfu(3 * 8.7e9, 1000, 989e12), 3 * 8.7e12 / 989e12, 1e-12);
  EXPECT_FALSE(mfu(0, 100, 1e12));
}

TEST(Mfu, CpuPeakIsMeasuredOnceThenCached) {
  const std::string dir = test::scratch_dir("cache");
  setenv("YOLO11_CACHE_DIR", dir.c_str(), 1);
  const CpuPeak a = cpu_peak_flops("float32", 1);
  EXPECT_FALSE(a.cached);
  EXPECT_GT(a.flops_per_s, 1e8);  // any CPU that runs this does > 0.1 GFLOP/s
  EXPECT_FALSE(a.kernel.empty());
  EXPECT_TRUE(std::filesystem::exists(dir + "/cpu_peak.json"));
  const CpuPeak b = cpu_peak_flops("float32", 1);
  EXPECT_TRUE(b.cached);
  EXPECT_DOUBLE_EQ(b.flops_per_s, a.flops_per_s);
  EXPECT_THROW(cpu_peak_flops("int8"), std::runtime_error);
  unsetenv("YOLO11_CACHE_DIR");
}

// A profiler over 1e9-FLOP images with the given peak, windows of 2 steps; run_empty_steps feeds it 4 steps of 8.
ProfilerOptions empty_steps_options(double peak_flops, const std::string& run_dir) {
  ProfilerOptions o;
  o.level = Level::basic;
  o.log_every = 2;
  o.log_lines = false;
  o.run_dir = run_dir;
  o.train_flops_per_image = 1e9;
  o.peak_flops = peak_flops;
  o.peak_source = "test";
  return o;
}
void run_empty_steps(Profiler& p) {
  for (int64_t i = 0; i < 4; ++i) {
    p.begin_step(i);
    { auto s = p.stage("forward"); }
    p.end_step(8);
  }
  p.finish();
}

// A peak measured on a busy machine: a cached figure for 2 threads below the 1-thread one is measured again; a window
// that achieves more than the peak reports MFU n/a (not above 100 %) and drops the cached figure.
TEST(Mfu, AnImplausibleCachedPeakIsMeasuredAgain) {
  const std::string dir = test::scratch_dir("cache_bad");
  setenv("YOLO11_CACHE_DIR", dir.c_str(), 1);
  const CpuPeak one = cpu_peak_flops("float32", 1);
  nlohmann::json cache = nlohmann::json::parse(std::ifstream(dir + "/cpu_peak.json"));
  std::string key1;
  for (const auto& [k, v] : cache.items())
    if (k.find("| 1 threads |") != std::string::npos) key1 = k;
  ASSERT_FALSE(key1.empty());
  std::string key2 = key1;
  key2.replace(key2.find("| 1 threads |"), 13, "| 2 threads |");
  cache[key2] = {{"flops_per_s", one.flops_per_s / 10}, {"kernel", "busy"}};
  std::ofstream(dir + "/cpu_peak.json") << cache.dump(2);
  const CpuPeak two = cpu_peak_flops("float32", 2);
  EXPECT_FALSE(two.cached) << "a 2-thread peak below the 1-thread one must be measured again";
  EXPECT_NE(two.kernel, "busy");

  EXPECT_TRUE(cpu_peak_flops("float32", 1).cached);
  EXPECT_TRUE(forget_cpu_peak("float32", 1));
  EXPECT_FALSE(forget_cpu_peak("float32", 1));
  EXPECT_FALSE(cpu_peak_flops("float32", 1).cached);

  Profiler p(empty_steps_options(/*peak_flops=*/1.0, ""));  // a peak far below what the steps achieve
  run_empty_steps(p);
  EXPECT_EQ(p.last_window().mfu, -1) << "MFU above 100 % is reported as n/a";
  unsetenv("YOLO11_CACHE_DIR");
}

TEST(Mfu, WindowLineCsvAndSummaryCarryMfu) {
  const std::string dir = test::scratch_dir("run");
  Profiler p(empty_steps_options(1e18, dir));  // empty steps run at millions of images/s: MFU stays below 100 %
  run_empty_steps(p);
  const auto& w = p.last_window();
  ASSERT_GT(w.images_per_s, 0);
  EXPECT_NEAR(w.mfu, 1e9 * w.images_per_s / 1e18, 1e-9 * w.mfu + 1e-18);
  EXPECT_NEAR(w.tflops, w.images_per_s * 1e-3, 1e-9 * w.tflops + 1e-12);
  const std::string line = format_window_line(w);
  EXPECT_NE(line.find(", MFU "), std::string::npos) << line;
  WindowSummary back;
  ASSERT_TRUE(parse_window_line(line, back));
  EXPECT_NEAR(back.mfu, w.mfu, 0.0006 + 0.001 * w.mfu);
  const auto windows = read_breakdown_csv(dir + "/breakdown.csv");
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_GE(windows[0].mfu, 0);
  const auto j = nlohmann::json::parse(io::read_file(dir + "/summary.json"));
  EXPECT_DOUBLE_EQ(j["mfu"]["peak_flops"].get<double>(), 1e18);
  EXPECT_EQ(j["mfu"]["peak_source"], "test");
  EXPECT_TRUE(j["run"]["mfu"].is_number());
}

}  // namespace
}  // namespace yolo11::instrument
