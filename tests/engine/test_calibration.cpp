// The compute calibration (engine/calibration.h): measured once per setting, then read from the cache; a stale entry
// is measured again; forgetting drops it; the run's random stream is the same with or without it.
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

TEST(ComputeCalibration, MeasuresOnceThenReadsTheCacheAndForgets) {
  CacheDir cache("calibration_cache");
  const engine::AmpPolicy fp32;  // float32, no autocast
  const auto first = engine::calibrate_compute(small_model(), 2, 64, fp32, torch::kCPU);
  ASSERT_GT(first.step_s, 0.0) << first.line;
  EXPECT_FALSE(first.cached);
  EXPECT_NE(first.line.find("measured in"), std::string::npos) << first.line;
  for (const char* part : {"yolo11.yaml", "batch 2", "imgsz 64", "float32", "threads"})
    EXPECT_NE(first.key.find(part), std::string::npos) << part << " not in " << first.key;
  ASSERT_TRUE(fs::exists(cache.file()));
  const auto j = nlohmann::json::parse(io::read_file(cache.file().string()));
  ASSERT_TRUE(j.contains(first.key)) << j.dump();
  EXPECT_DOUBLE_EQ(j[first.key]["step_s"].get<double>(), first.step_s);

  const auto second = engine::calibrate_compute(small_model(), 2, 64, fp32, torch::kCPU);
  EXPECT_TRUE(second.cached);
  EXPECT_DOUBLE_EQ(second.step_s, first.step_s);
  EXPECT_NE(second.line.find("cached in"), std::string::npos) << second.line;
  EXPECT_LT(second.took_s, first.took_s);

  // Another setting is another entry.
  const auto other = engine::calibrate_compute(small_model(), 1, 64, fp32, torch::kCPU);
  EXPECT_FALSE(other.cached);
  EXPECT_NE(other.key, first.key);

  EXPECT_TRUE(engine::forget_compute_calibration(first.key));
  EXPECT_FALSE(engine::forget_compute_calibration(first.key));
  const auto j2 = nlohmann::json::parse(io::read_file(cache.file().string()));
  EXPECT_FALSE(j2.contains(first.key));
  EXPECT_TRUE(j2.contains(other.key));
  EXPECT_FALSE(engine::calibrate_compute(small_model(), 2, 64, fp32, torch::kCPU).cached);
}

TEST(ComputeCalibration, AMonthOldOrBrokenEntryIsMeasuredAgain) {
  CacheDir cache("calibration_stale");
  const engine::AmpPolicy fp32;
  const auto first = engine::calibrate_compute(small_model(), 1, 64, fp32, torch::kCPU);
  ASSERT_GT(first.step_s, 0.0) << first.line;
  auto j = nlohmann::json::parse(io::read_file(cache.file().string()));
  j[first.key]["measured_at"] = j[first.key]["measured_at"].get<double>() - 31.0 * 24 * 3600;
  j[first.key]["step_s"] = 123.0;
  std::ofstream(cache.file()) << j.dump();
  const auto again = engine::calibrate_compute(small_model(), 1, 64, fp32, torch::kCPU);
  EXPECT_FALSE(again.cached);
  EXPECT_LT(again.step_s, 100.0);

  std::ofstream(cache.file()) << "{ not json";  // a broken cache file is replaced, not a failure
  const auto fresh = engine::calibrate_compute(small_model(), 1, 64, fp32, torch::kCPU);
  EXPECT_FALSE(fresh.cached);
  EXPECT_GT(fresh.step_s, 0.0);
  EXPECT_NO_THROW(nlohmann::json::parse(io::read_file(cache.file().string())));
}

TEST(ComputeCalibration, TheRunsRandomStreamIsTheSameWithOrWithoutIt) {
  CacheDir cache("calibration_rng");
  const engine::AmpPolicy fp32;
  torch::manual_seed(7);
  const auto without = torch::rand({6});
  torch::manual_seed(7);
  const auto c = engine::calibrate_compute(small_model(), 1, 64, fp32, torch::kCPU, /*use_cache=*/false);
  ASSERT_GT(c.step_s, 0.0) << c.line;
  const auto with = torch::rand({6});
  EXPECT_TRUE(torch::equal(with, without)) << with << without;
  EXPECT_FALSE(torch::GradMode::is_enabled() == false);  // grad mode left on
}

TEST(ComputeCalibration, AFailureSaysWhyAndGivesNoFigure) {
  CacheDir cache("calibration_fail");
  auto mo = small_model();
  mo.yaml = "/nonexistent/model.yaml";
  const auto c = engine::calibrate_compute(mo, 1, 64, engine::AmpPolicy{}, torch::kCPU);
  EXPECT_EQ(c.step_s, 0.0);
  EXPECT_NE(c.line.find("compute calibration failed"), std::string::npos) << c.line;
  EXPECT_FALSE(fs::exists(cache.file()));
}
