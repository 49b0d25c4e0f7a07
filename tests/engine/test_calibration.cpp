// The compute calibration (engine/calibration.h): its per-setting cache (stored, read, stale, broken, forgotten), the
// quiet-machine rule over the timed steps, and the loader pause it times under.
#include "yolo11/engine/calibration.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "yolo11/io/file.h"
#include "yolo11_test_config.h"

using namespace yolo11;
namespace fs = std::filesystem;

namespace {

model::ModelOptions small_model() {
  model::ModelOptions mo;
  mo.yaml = std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/models/yolo11.yaml";
  mo.nc = 3;
  return mo;
}

/// A private cache directory for the test; the previous value comes back at the end.
struct CacheDir {
  fs::path dir;
  std::string old;
  bool had = false;
  explicit CacheDir(const std::string& name) : dir(test::scratch_dir(name)) {
    if (const char* e = std::getenv("YOLO11_CACHE_DIR")) old = e, had = true;
    fs::remove_all(dir);
    setenv("YOLO11_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheDir() {
    if (had) setenv("YOLO11_CACHE_DIR", old.c_str(), 1);
    else unsetenv("YOLO11_CACHE_DIR");
  }
  fs::path file() const { return dir / "compute_calibration.json"; }
};

}  // namespace

TEST(ComputeCalibration, StoredOnceThenReadFromTheCacheAndForgotten) {
  CacheDir cache("calibration_cache");
  const engine::AmpPolicy fp32;  // float32, no autocast
  const std::string key = engine::compute_calibration_key(small_model(), 2, 64, fp32, torch::kCPU);
  for (const char* part : {"yolo11.yaml", "batch 2", "imgsz 64", "float32", "threads", "channels_last", "torch "})
    EXPECT_NE(key.find(part), std::string::npos) << part << " not in " << key;
  EXPECT_FALSE(engine::cached_compute_calibration(key).cached);  // nothing yet
  ASSERT_TRUE(engine::store_compute_calibration(key, 0.25));
  const auto j = nlohmann::json::parse(io::read_file(cache.file().string()));
  ASSERT_TRUE(j.contains(key)) << j.dump();
  EXPECT_DOUBLE_EQ(j[key]["step_s"].get<double>(), 0.25);

  const auto c = engine::cached_compute_calibration(key);
  EXPECT_TRUE(c.cached);
  EXPECT_DOUBLE_EQ(c.step_s, 0.25);
  EXPECT_NE(c.line.find("0.250 s per step expected"), std::string::npos) << c.line;
  EXPECT_NE(c.line.find("cached in"), std::string::npos) << c.line;

  // Another setting is another entry.
  const std::string other = engine::compute_calibration_key(small_model(), 1, 64, fp32, torch::kCPU);
  EXPECT_NE(other, key);
  EXPECT_FALSE(engine::cached_compute_calibration(other).cached);
  ASSERT_TRUE(engine::store_compute_calibration(other, 0.125));

  EXPECT_TRUE(engine::forget_compute_calibration(key));
  EXPECT_FALSE(engine::forget_compute_calibration(key));
  const auto j2 = nlohmann::json::parse(io::read_file(cache.file().string()));
  EXPECT_FALSE(j2.contains(key));
  EXPECT_TRUE(j2.contains(other));
  EXPECT_FALSE(engine::cached_compute_calibration(key).cached);
}

TEST(ComputeCalibration, AMonthOldOrBrokenEntryIsNotUsed) {
  CacheDir cache("calibration_stale");
  const std::string key = engine::compute_calibration_key(small_model(), 1, 64, engine::AmpPolicy{}, torch::kCPU);
  ASSERT_TRUE(engine::store_compute_calibration(key, 0.5));
  auto j = nlohmann::json::parse(io::read_file(cache.file().string()));
  j[key]["measured_at"] = j[key]["measured_at"].get<double>() - 31.0 * 24 * 3600;
  std::ofstream(cache.file()) << j.dump();
  EXPECT_FALSE(engine::cached_compute_calibration(key).cached);

  std::ofstream(cache.file()) << "{ not json";  // a broken cache file reads as empty and is replaced, not a failure
  EXPECT_FALSE(engine::cached_compute_calibration(key).cached);
  ASSERT_TRUE(engine::store_compute_calibration(key, 0.5));
  EXPECT_NO_THROW(nlohmann::json::parse(io::read_file(cache.file().string())));
  EXPECT_TRUE(engine::cached_compute_calibration(key).cached);
}

namespace {
engine::CalibrationSpan quiet_span(double s) {
  engine::CalibrationSpan sp;
  sp.compute_s = s;
  sp.rates.runq_wait = 0.01, sp.rates.others_cpu = 0.05, sp.rates.steal = 0, sp.rates.voluntary_switches_per_s = 30;
  sp.rates.major_faults_per_s = 0;
  return sp;
}
}  // namespace

TEST(ComputeCalibration, OnlyAQuietMachineGivesAFigureAndTheEvidenceSaysWhyNot) {
  EXPECT_EQ(engine::calibration_contention({quiet_span(0.4), quiet_span(0.41)}, 2), "");
  auto waited = quiet_span(0.4);
  waited.rates.runq_wait = 0.31;
  EXPECT_EQ(engine::calibration_contention({quiet_span(0.4), waited}, 2),
            "run-queue wait 31% of the trainer threads' time");
  auto others = quiet_span(0.4);
  others.rates.others_cpu = 0.9;
  EXPECT_EQ(engine::calibration_contention({others, others}, 2), "other processes 0.9 of 2 cores");
  // Under 0.5 s in all, /proc/stat's 10 ms ticks are noise: other processes' CPU is not judged...
  auto short_others = others;
  short_others.compute_s = 0.05;
  EXPECT_EQ(engine::calibration_contention({short_others, short_others}, 2), "");
  // ... but the run-queue wait (nanoseconds, schedstat) is.
  short_others.rates.runq_wait = 0.5;
  EXPECT_NE(engine::calibration_contention({short_others, short_others}, 2).find("run-queue wait 50%"),
            std::string::npos);
  auto slept = quiet_span(0.4);
  slept.rates.voluntary_switches_per_s = 40000;
  slept.unparked_workers = 1;
  EXPECT_EQ(engine::calibration_contention({slept, quiet_span(0.4)}, 2),
            "40000 voluntary context switches/s (the intra-op threads slept), 1 loader worker still running");
  auto quota = quiet_span(0.4);
  quota.rates.quota_throttled = 0.8;
  EXPECT_NE(engine::calibration_contention({quota, quota}, 2).find("CPU quota in 80%"), std::string::npos);
}

TEST(ComputeCalibration, TimesTheStepsItWantsAndStoresAQuietFigure) {
  CacheDir cache("calibration_inrun");
  engine::InRunCalibration c("k", 3, 2, torch::kCPU);
  EXPECT_FALSE(c.wants(2));
  EXPECT_TRUE(c.wants(3));
  EXPECT_TRUE(c.wants(4));
  EXPECT_FALSE(c.wants(5));
  const auto a = torch::rand({256, 256});
  for (int i = 0; i < engine::InRunCalibration::kTimedSteps; ++i) {
    c.begin(nullptr);
    for (int k = 0; k < 20; ++k) (void)torch::mm(a, a).sum().item<float>();
    const bool done = c.end();
    EXPECT_EQ(done, i == engine::InRunCalibration::kTimedSteps - 1);
  }
  // Timed on a machine that other ctest processes may share: either a figure (stored) or the evidence of why not.
  const auto& r = c.result();
  if (r.step_s > 0) {
    EXPECT_TRUE(c.finished());
    EXPECT_NE(r.line.find("measured on steps 3-4 with the loader paused"), std::string::npos) << r.line;
    EXPECT_DOUBLE_EQ(engine::cached_compute_calibration("k").step_s, r.step_s);
  } else {
    EXPECT_NE(r.line.find("not taken, the machine was busy over steps 3-4 ("), std::string::npos) << r.line;
    EXPECT_FALSE(engine::cached_compute_calibration("k").cached);
    c.on_epoch_start(10);  // tried again on the next epoch's steps after its first
    EXPECT_TRUE(c.wants(11));
    EXPECT_FALSE(c.wants(10));
  }
}
