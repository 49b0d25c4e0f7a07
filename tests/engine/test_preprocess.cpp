// The training preprocess (engine/preprocess.h): the loader's format in, the network input out, multi_scale sizes.
#include "yolo11/engine/preprocess.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>
#include <stdexcept>

using namespace yolo11;

TEST(Preprocess, MultiScaleResizesToAStrideMultipleInRange) {
  data::Rng rng(3);
  const auto x = torch::rand({2, 3, 320, 256});
  for (int i = 0; i < 20; ++i) {
    const auto y = engine::multi_scale(x, 320, 32, rng);
    EXPECT_EQ(y.size(2) % 32, 0);
    EXPECT_EQ(y.size(3) % 32, 0);
    EXPECT_GE(y.size(2), 160);
    EXPECT_LE(y.size(2), 512);
  }
  // A narrower range: multi_scale=0.25 → long side in [240, 400 + 32) rounded down to 32.
  std::set<int64_t> sizes;
  for (int i = 0; i < 200; ++i) {
    const auto y = engine::multi_scale(x, 320, 32, rng, 0.25);
    EXPECT_GE(y.size(2), 224);
    EXPECT_LE(y.size(2), 416);
    EXPECT_EQ(y.size(3), static_cast<int64_t>(std::ceil(256.0 * y.size(2) / 320 / 32)) * 32);
    sizes.insert(y.size(2));
  }
  EXPECT_GE(sizes.size(), 5u);  // 224 (240 rounded down) ... 416
  EXPECT_THROW(engine::multi_scale(x, 320, 32, rng, 0.0), std::invalid_argument);
}

TEST(Preprocess, BothInputFormatsGiveTheSameNetworkInput) {
  const auto u8 = torch::randint(0, 256, {2, 3, 64, 96}, torch::kUInt8);
  const auto f = u8.to(torch::kFloat).div_(255.0).contiguous(torch::MemoryFormat::ChannelsLast);
  const engine::Preprocess from_u8({.format = data::InputFormat::uint8});
  const engine::Preprocess from_f({.format = data::InputFormat::float_channels_last});
  const auto a = from_u8(u8, 0, 0), b = from_f(f, 0, 0);
  EXPECT_TRUE(a.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(b.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_THROW(from_u8(f, 0, 0), std::invalid_argument);  // a float batch where uint8 was asked for
  EXPECT_THROW(from_f(u8, 0, 0), std::invalid_argument);  // and the other way
  EXPECT_EQ(engine::train_input_format(torch::kCPU), data::InputFormat::float_channels_last);
  EXPECT_EQ(engine::train_input_format(torch::Device(torch::kCUDA, 0)), data::InputFormat::uint8);
}

TEST(Preprocess, MultiScaleDrawsOneSizePerEpochAndBatch) {
  const engine::Preprocess p(
      {.format = data::InputFormat::uint8, .multi_scale_range = 0.5, .imgsz = 64, .stride = 32, .seed = 7});
  const auto u8 = torch::randint(0, 256, {1, 3, 64, 64}, torch::kUInt8);
  std::set<int64_t> sizes;
  for (int64_t b = 0; b < 20; ++b) {
    const auto x = p(u8, 0, b);
    EXPECT_EQ(x.size(2) % 32, 0);
    EXPECT_TRUE(torch::equal(x, p(u8, 0, b))) << "the same (epoch, batch) draws the same size";
    sizes.insert(x.size(2));
  }
  EXPECT_GE(sizes.size(), 2u);
}
