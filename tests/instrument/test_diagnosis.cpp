// Diagnosis on synthetic windows: each bottleneck is recognised by its documented threshold and its advice
// quotes the current settings and names the right knobs; a balanced window gets no advice.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "yolo11/instrument/diagnosis.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/instrument/stats.h"

namespace yolo11::instrument {
namespace {

// A window of 10 steps of `step_s` seconds whose stages take the given shares; dataloader p50/p95 given.
WindowSummary window(const std::map<std::string, double>& shares, double gpu_util = -1, double step_s = 0.5,
                     double dl_p50 = -1, double dl_p95 = -1) {
  WindowSummary w;
  w.steps = 10;
  w.images = 160;
  w.step.name = "step";
  w.step.count = 10;
  w.step.mean = w.step.p50 = w.step.p95 = w.step.max = step_s;
  w.step.total = 10 * step_s;
  w.images_per_s = w.images / w.step.total;
  w.gpu_util = gpu_util;
  for (const auto& [name, share] : shares) {
    StageSummary s;
    s.name = name;
    s.count = 10;
    s.share = share;
    s.total = share * w.step.total;
    s.mean = s.p50 = s.p95 = s.max = s.total / 10;
    if (name == "dataloader" && dl_p50 >= 0) s.p50 = dl_p50, s.p95 = dl_p95;
    w.stages.push_back(s);
  }
  return w;
}

AdviceContext ctx(int workers, int cores, yolo11::core::CacheMode cache, bool amp, const std::string& device = "0") {
  AdviceContext c;
  c.workers = workers;
  c.cores = cores;
  c.cache = cache;
  c.amp = amp;
  c.device = device;
  c.batch = 16;
  c.imgsz = 640;
  return c;
}

TEST(Diagnosis, DataBoundAdviceNamesWorkersAndCache) {
  const auto w = window({{"dataloader", 0.72}, {"forward", 0.1}, {"backward", 0.15}}, 41, 0.5, 0.1, 0.31);
  const Diagnosis d = diagnose(w, ctx(2, 16, yolo11::core::CacheMode::off, true));
  EXPECT_EQ(d.bottleneck, Bottleneck::data);
  EXPECT_NEAR(d.data_share, 0.72, 1e-9);
  EXPECT_NEAR(d.data_tail, 3.1, 1e-9);
  EXPECT_NE(d.reason.find("data wait 72% of step, p95/p50 3.1"), std::string::npos) << d.reason;
  EXPECT_NE(d.advice.find("workers=2 on 16 cores"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("workers=8"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("cache=ram"), std::string::npos) << d.advice;
  EXPECT_EQ(d.to_string().rfind("data-bound: ", 0), 0u) << d.to_string();
}

TEST(Diagnosis, DataBoundByTailAloneAtModerateShare) {
  // 15% wait is below the 25% share threshold, but p95/p50 = 4 marks stalls → still data-bound.
  const auto w = window({{"dataloader", 0.15}, {"forward", 0.3}, {"backward", 0.4}}, 70, 0.5, 0.02, 0.08);
  EXPECT_EQ(diagnose(w, ctx(8, 16, yolo11::core::CacheMode::off, true)).bottleneck, Bottleneck::data);
  // Same share with a flat distribution is not.
  const auto flat = window({{"dataloader", 0.15}, {"forward", 0.3}, {"backward", 0.4}}, 70, 0.5, 0.075, 0.08);
  EXPECT_NE(diagnose(flat, ctx(8, 16, yolo11::core::CacheMode::off, true)).bottleneck, Bottleneck::data);
}

TEST(Diagnosis, DataBoundWithAllCoresAndRamCacheSuggestsSmallerImages) {
  const auto w = window({{"dataloader", 0.5}, {"forward", 0.2}, {"backward", 0.3}}, 40);
  const Diagnosis d = diagnose(w, ctx(16, 16, yolo11::core::CacheMode::ram, true));
  EXPECT_EQ(d.bottleneck, Bottleneck::data);
  EXPECT_EQ(d.advice.find("try workers="), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("imgsz=640"), std::string::npos) << d.advice;
}

TEST(Diagnosis, ComputeBoundBusyGpuAdviceNamesAmpImgszBatch) {
  const auto w = window({{"dataloader", 0.02}, {"forward", 0.3}, {"loss", 0.05}, {"backward", 0.55},
                         {"optimizer", 0.05}},
                        97);
  const Diagnosis d = diagnose(w, ctx(8, 16, yolo11::core::CacheMode::off, false));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
  EXPECT_NE(d.advice.find("amp=False → amp=True"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("imgsz=640 → 480"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("batch=16"), std::string::npos) << d.advice;
}

TEST(Diagnosis, ComputeBoundUnderfilledGpuSuggestsLargerBatch) {
  const auto w = window({{"forward", 0.35}, {"loss", 0.05}, {"backward", 0.45}}, 45);
  const Diagnosis d = diagnose(w, ctx(8, 16, yolo11::core::CacheMode::ram, true));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
  EXPECT_NE(d.advice.find("batch=16 → 32"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("GPU only 45% busy"), std::string::npos) << d.advice;
}

TEST(Diagnosis, ComputeBoundOnCpuMentionsImgszAndBatch) {
  const auto w = window({{"forward", 0.35}, {"loss", 0.05}, {"backward", 0.5}}, -1);
  const Diagnosis d = diagnose(w, ctx(2, 2, yolo11::core::CacheMode::off, false, "cpu"));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
  EXPECT_NE(d.advice.find("imgsz=640"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("batch=16"), std::string::npos) << d.advice;
  EXPECT_EQ(d.advice.find("amp"), std::string::npos) << "AMP does not apply on CPU: " << d.advice;
}

// A build without CUDA is not told to pass device=0 (which would stop with "no CUDA"), but how to get a CUDA build.
TEST(Diagnosis, ComputeBoundOnACpuOnlyBuildDoesNotAdviseDeviceZeroAlone) {
  const auto w = window({{"forward", 0.35}, {"loss", 0.05}, {"backward", 0.5}}, -1);
  auto c = ctx(2, 2, yolo11::core::CacheMode::off, false, "cpu");
  EXPECT_NE(diagnose(w, c).advice.find("a CUDA device (device=0)"), std::string::npos);
  c.cuda_built = false;
  const Diagnosis d = diagnose(w, c);
  EXPECT_NE(d.advice.find("this build has no CUDA: build against a CUDA LibTorch"), std::string::npos) << d.advice;
}

// A CUDA build on a machine without a visible GPU (this CI machine) is not told device=0 either: it would stop with
// "none is visible to this process".
TEST(Diagnosis, ComputeBoundWithoutAVisibleGpuNamesAMachineWithOne) {
  const auto w = window({{"forward", 0.35}, {"loss", 0.05}, {"backward", 0.5}}, -1);
  auto c = ctx(2, 2, yolo11::core::CacheMode::off, false, "cpu");
  c.cuda_devices = 0;
  const Diagnosis d = diagnose(w, c);
  EXPECT_EQ(d.advice.find("a CUDA device (device=0)"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("no GPU is visible here"), std::string::npos) << d.advice;
  c.cuda_devices = 1;
  EXPECT_NE(diagnose(w, c).advice.find("a CUDA device (device=0)"), std::string::npos);
}

TEST(Diagnosis, NoSmallerImgszIsAdvisedBelow320) {
  const auto w = window({{"forward", 0.35}, {"loss", 0.05}, {"backward", 0.5}}, -1);
  auto c = ctx(2, 2, yolo11::core::CacheMode::off, false, "cpu");
  c.imgsz = 64;
  const Diagnosis d = diagnose(w, c);
  EXPECT_EQ(d.bottleneck, Bottleneck::compute);
  EXPECT_EQ(d.advice.find("imgsz"), std::string::npos) << d.advice;
  c.imgsz = 384;
  EXPECT_NE(diagnose(w, c).advice.find("imgsz=384 → 320"), std::string::npos) << diagnose(w, c).advice;
}

TEST(Diagnosis, OptimizerSyncBound) {
  const auto w = window({{"dataloader", 0.05}, {"h2d", 0.12}, {"forward", 0.2}, {"backward", 0.3},
                         {"optimizer", 0.2}, {"ema", 0.1}},
                        60);
  AdviceContext c = ctx(8, 16, yolo11::core::CacheMode::ram, true);
  c.sync = true;
  const Diagnosis d = diagnose(w, c);
  EXPECT_EQ(d.bottleneck, Bottleneck::optimizer_sync);
  EXPECT_NEAR(d.optimizer_share, 0.42, 1e-9);
  EXPECT_NE(d.advice.find("sync=True → sync=False"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("h2d 12%"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("batch=16 → 32"), std::string::npos) << d.advice;
}

TEST(Diagnosis, BalancedHasNoAdvice) {
  const auto w = window({{"dataloader", 0.10}, {"h2d", 0.05}, {"forward", 0.25}, {"loss", 0.05},
                         {"backward", 0.3}, {"optimizer", 0.1}, {"ema", 0.05}},
                        75, 0.5, 0.048, 0.055);
  const Diagnosis d = diagnose(w, ctx(8, 16, yolo11::core::CacheMode::off, true));
  EXPECT_EQ(d.bottleneck, Bottleneck::balanced);
  EXPECT_TRUE(d.advice.empty()) << d.advice;
  EXPECT_EQ(d.to_string().rfind("balanced: ", 0), 0u);
}

TEST(Diagnosis, ThresholdsAreConfigurable) {
  const auto w = window({{"dataloader", 0.20}, {"forward", 0.3}, {"backward", 0.3}}, 70);
  EXPECT_EQ(diagnose(w, ctx(8, 16, yolo11::core::CacheMode::off, true)).bottleneck, Bottleneck::balanced);
  DiagnosisThresholds t;
  t.data_share = 0.15;
  EXPECT_EQ(diagnose(w, ctx(8, 16, yolo11::core::CacheMode::off, true), t).bottleneck, Bottleneck::data);
}

TEST(Diagnosis, NothingMeasuredOutsideTheWarmUpIsNoDiagnosisRatherThanBalanced) {
  WindowSummary w;  // a run whose every step fell in the warm-up: no steps in the run window
  const Diagnosis d = diagnose(w, ctx(8, 16, yolo11::core::CacheMode::off, true));
  EXPECT_EQ(d.bottleneck, Bottleneck::none);
  EXPECT_EQ(d.to_string().rfind("no diagnosis: no step was measured outside the instrument warm-up", 0), 0u)
      << d.to_string();
}

// One reading per epoch: RSS as given, the heap split so that `leak_share` of each epoch's growth stays in use.
std::vector<ProcessMemory> epochs(const std::vector<double>& rss, double leak_share, int64_t fds = 7) {
  std::vector<ProcessMemory> out;
  for (double r : rss) {
    ProcessMemory m;
    m.rss_mb = r;
    m.heap_in_use_mb = 500 + (r - rss.front()) * leak_share;
    m.heap_free_mb = 100 + (r - rss.front()) * (1 - leak_share);
    m.fds = fds, m.threads = 30;
    out.push_back(m);
  }
  return out;
}

TEST(MemoryTrend, SteadyOrTooShortOrFlatAtTheEndIsQuiet) {
  EXPECT_EQ(memory_trend(epochs({1400, 1700, 1800, 1810, 1805, 1812, 1808}, 0)), "");  // noise after epoch 3
  EXPECT_EQ(memory_trend(epochs({1400, 1700, 1800, 1900, 2000}, 0)), "");              // < 6 epochs
  EXPECT_EQ(memory_trend(epochs({1400, 1700, 1800, 2000, 2100, 2100}, 0)), "");        // not rising at the end
  EXPECT_EQ(memory_trend(epochs({1400, 1700, 1800, 1820, 1840, 1860}, 0)), "");        // +3.3 % < 5 %
}

TEST(MemoryTrend, RisingRssTellsRetentionFromLeakWithFigures) {
  const auto rising = std::vector<double>{1421, 1717, 1806, 1872, 1928, 1953, 1992, 2020};
  const std::string retention = memory_trend(epochs(rising, 0.1));
  EXPECT_NE(retention.find("RSS keeps rising: 1806 MiB after epoch 3, 2020 MiB after epoch 8 (+12 %"), std::string::npos)
      << retention;
  EXPECT_NE(retention.find("retention, not a leak"), std::string::npos) << retention;
  const std::string leak = memory_trend(epochs(rising, 0.9), 11);
  EXPECT_NE(leak.find("after epoch 13, 2020 MiB after epoch 18"), std::string::npos) << leak;
  EXPECT_NE(leak.find("a leak or a growing cache"), std::string::npos) << leak;
  auto more_files = epochs(rising, 0.9);
  more_files.back().fds = 40;
  EXPECT_NE(memory_trend(more_files).find("open files 7 → 40"), std::string::npos);
}

}  // namespace
}  // namespace yolo11::instrument
