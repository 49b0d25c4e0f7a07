// ConfusionMatrix: matching rules, background row/column, normalisation and PNG output.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "golden.h"
#include "yolo11/metrics/confusion_matrix.h"

using namespace yolo11;

TEST(ConfusionMatrix, CountsCorrectWrongMissedAndBackground) {
  metrics::ConfusionMatrix cm(3);
  auto gt_cls = torch::tensor({0L, 1L, 2L});
  auto gt = torch::tensor({{0.f, 0.f, 10.f, 10.f}, {20.f, 20.f, 30.f, 30.f}, {50.f, 50.f, 60.f, 60.f}});
  auto pred = torch::tensor({
      {0.f, 0.f, 10.f, 10.f, 0.9f, 0.f},        // correct class 0
      {20.f, 20.f, 30.f, 31.f, 0.8f, 2.f},      // GT 1 predicted as class 2
      {100.f, 100.f, 110.f, 110.f, 0.7f, 1.f},  // no GT → background column
      {50.f, 50.f, 60.f, 60.f, 0.1f, 2.f},      // below conf 0.25 → ignored, GT 2 missed
  });
  cm.process_batch(pred, gt_cls, gt);
  const auto& m = cm.matrix();
  EXPECT_EQ(m[0][0], 1);
  EXPECT_EQ(m[2][1], 1);
  EXPECT_EQ(m[1][3], 1);
  EXPECT_EQ(m[3][2], 1);
  double total = 0;
  for (const auto& row : m)
    for (double v : row) total += v;
  EXPECT_EQ(total, 4);
  auto nm = cm.normalized();
  EXPECT_NEAR(nm[0][0], 1.0, 1e-8);
  EXPECT_NEAR(nm[1][3], 1.0, 1e-8);
}

TEST(ConfusionMatrix, OneDetectionPerGtHighestIouWins) {
  metrics::ConfusionMatrix cm(1);
  auto gt = torch::tensor({{0.f, 0.f, 10.f, 10.f}});
  auto pred = torch::tensor({{0.f, 0.f, 10.f, 9.f, 0.9f, 0.f}, {0.f, 0.f, 10.f, 10.f, 0.5f, 0.f}});
  cm.process_batch(pred, torch::tensor({0L}), gt);
  EXPECT_EQ(cm.matrix()[0][0], 1);  // matched pair
  EXPECT_EQ(cm.matrix()[0][1], 1);  // the duplicate is a false positive
}

TEST(ConfusionMatrix, WritesPngCountsAndNormalized) {
  metrics::ConfusionMatrix cm(3);
  cm.process_batch(torch::tensor({{0.f, 0.f, 10.f, 10.f, 0.9f, 0.f}}), torch::tensor({0L}),
                   torch::tensor({{0.f, 0.f, 10.f, 10.f}}));
  const auto dir = test::scratch_dir("confusion_matrix");
  for (bool norm : {false, true}) {
    const auto path = dir + (norm ? "/confusion_matrix_normalized.png" : "/confusion_matrix.png");
    cm.save_png(path, {"person", "car", "dog"}, norm);
    auto img = cv::imread(path);
    ASSERT_FALSE(img.empty()) << path;
    EXPECT_GT(img.cols, 200);
  }
  EXPECT_THROW(cm.save_png("/nonexistent_dir_xyz/cm.png", {"a", "b", "c"}, false), std::exception);
}
