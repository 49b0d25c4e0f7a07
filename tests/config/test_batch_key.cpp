// batch= as Ultralytics takes it: an integer, -1 (AutoBatch at 60 %) or a fraction (AutoBatch at that fraction); and
// the benchmark keys max_steps / synthetic_data.
#include <gtest/gtest.h>

#include <filesystem>

#include "yolo11/config/train_config.h"

using yolo11::config::TrainConfig;

TEST(BatchKey, IntegerMinusOneAndFraction) {
  auto c = TrainConfig::load("", {"batch=32"});
  EXPECT_EQ(c.batch, 32);
  EXPECT_DOUBLE_EQ(c.batch_fraction, 0.0);
  c = TrainConfig::load("", {"batch=-1"});
  EXPECT_DOUBLE_EQ(c.batch_fraction, 0.6);
  EXPECT_EQ(c.batch, 16);  // until resolved (CPU: stays 16)
  EXPECT_EQ(c.get("batch"), "0.6");
  c = TrainConfig::load("", {"batch=0.7"});
  EXPECT_DOUBLE_EQ(c.batch_fraction, 0.7);
  c = TrainConfig::load("", {"batch=0.7", "batch=8"});  // the last value wins, also over a fraction
  EXPECT_EQ(c.batch, 8);
  EXPECT_DOUBLE_EQ(c.batch_fraction, 0.0);
  for (const char* bad : {"batch=0", "batch=-2", "batch=1.5", "batch=x", "batch=1.0"}) {
    try {
      TrainConfig::load("", {bad});
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("-1 (AutoBatch"), std::string::npos) << e.what();
    }
  }
}

TEST(BatchKey, FractionRoundTripsThroughArgsYaml) {
  const auto c = TrainConfig::load("", {"batch=0.7", "max_steps=40", "synthetic_data=true"});
  EXPECT_EQ(c.max_steps, 40);
  EXPECT_TRUE(c.synthetic_data);
  const std::string dir = testing::TempDir() + "/batch_key_args";
  std::filesystem::create_directories(dir);
  c.save_args(dir);
  const auto back = TrainConfig::load(dir + "/args.yaml", {});
  EXPECT_DOUBLE_EQ(back.batch_fraction, 0.7);
  EXPECT_EQ(back.max_steps, 40);
  EXPECT_TRUE(back.synthetic_data);
}
