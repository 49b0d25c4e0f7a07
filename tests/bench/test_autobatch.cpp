// AutoBatch (include/yolo11/engine/autobatch.h, src/engine/autobatch.cpp): the line fit on fixed numbers, and the documented
// CPU fallback. Kept with the sweep tests (the engine suite is large to rebuild); it tests engine code.
#include <gtest/gtest.h>

#include "yolo11/config/train_config.h"
#include "yolo11/engine/autobatch.h"

using namespace yolo11;

TEST(AutoBatch, FitsALineAndPicksTheBatchForTheFraction) {
  // 1 GiB fixed + 100 MiB per image, 10 GiB free, 60 % → (6144 − 1024) / 100 = 51.2 → 51
  const double MiB = 1 << 20;
  std::vector<std::pair<int64_t, double>> s;
  for (int64_t b : {1, 2, 4, 8, 16}) s.emplace_back(b, 1024 * MiB + 100 * MiB * static_cast<double>(b));
  const auto f = engine::fit_batch(s, 10240 * MiB, 0.6);
  EXPECT_TRUE(f.fitted);
  EXPECT_EQ(f.batch, 51);
  EXPECT_NEAR(f.slope_bytes, 100 * MiB, 1.0);
  EXPECT_NEAR(f.intercept_bytes, 1024 * MiB, 1.0);
  // unusable fits fall back to 16 and say why
  EXPECT_FALSE(engine::fit_batch({{1, 5 * MiB}}, 10240 * MiB, 0.6).fitted);
  const auto flat = engine::fit_batch({{1, 5 * MiB}, {2, 5 * MiB}}, 10240 * MiB, 0.6);
  EXPECT_FALSE(flat.fitted);
  EXPECT_EQ(flat.batch, 16);
  EXPECT_FALSE(flat.note.empty());
  EXPECT_FALSE(engine::fit_batch(s, 512 * MiB, 0.6).fitted);  // fixed cost alone exceeds the budget
}

TEST(AutoBatch, OnCpuFallsBackToSixteenAndSaysSo) {
  auto cfg = config::TrainConfig::load("", {"batch=-1"});
  const std::string line = engine::resolve_batch(cfg, c10::Device(c10::kCPU));
  EXPECT_EQ(cfg.batch, 16);
  EXPECT_DOUBLE_EQ(cfg.batch_fraction, 0.0);
  EXPECT_NE(line.find("batch=-1"), std::string::npos) << line;
  EXPECT_NE(line.find("uses batch=16"), std::string::npos) << line;
  auto fixed = config::TrainConfig::load("", {"batch=8"});
  EXPECT_EQ(engine::resolve_batch(fixed, c10::Device(c10::kCPU)), "");
  EXPECT_EQ(fixed.batch, 8);
}
