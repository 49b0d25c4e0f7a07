// ConfusionMatrix: matching rules, background row/column, normalisation and PNG output.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

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
    // The one non-empty cell has the darkest "Blues" colour; the colour bar adds a gradient of many blues.
    cv::Mat dark;
    cv::inRange(img, cv::Scalar(107, 48, 8), cv::Scalar(107, 48, 8), dark);
    EXPECT_GT(cv::countNonZero(dark), 50 * 50) << path;
    std::set<int> blues;
    for (auto it = img.begin<cv::Vec3b>(); it != img.end<cv::Vec3b>(); ++it)
      if ((*it)[0] > (*it)[2] + 5) blues.insert((*it)[0] << 16 | (*it)[1] << 8 | (*it)[2]);
    EXPECT_GT(blues.size(), 100u) << path << ": no colour bar gradient";
  }
  EXPECT_THROW(cm.save_png("/nonexistent_dir_xyz/cm.png", {"a", "b", "c"}, false), std::exception);
}

TEST(ConfusionMatrix, ThousandClassesPlotIsCappedAndTheCsvIsComplete) {
  const int64_t nc = 1000;
  metrics::ConfusionMatrix cm(nc);
  // Class c has (c % 97) + 1 true instances, all detected correctly, so class 96, 193, ... have the most (97).
  for (int64_t c = 0; c < nc; ++c) {  // one batch per class: n disjoint boxes, each detected with its class
    const int64_t n = (c % 97) + 1;
    auto gt = torch::zeros({n, 4});
    for (int64_t k = 0; k < n; ++k) {
      gt[k][0] = static_cast<float>(k) * 20.f;
      gt[k][2] = static_cast<float>(k) * 20.f + 10.f;
      gt[k][3] = 10.f;
    }
    auto pred = torch::cat({gt, torch::full({n, 1}, 0.9f), torch::full({n, 1}, static_cast<float>(c))}, 1);
    cm.process_batch(pred, torch::full({n}, c, torch::kLong), gt);
  }
  const auto shown = cm.plot_classes();
  ASSERT_EQ(shown.size(), 50u);
  // the ten classes with 97 instances (96, 193, ..., 969) are among them, and nothing with fewer than 93
  for (int64_t c = 96; c < nc; c += 97) EXPECT_NE(std::find(shown.begin(), shown.end(), c), shown.end()) << c;
  for (int64_t c : shown) EXPECT_GE(c % 97 + 1, 93) << c;
  EXPECT_EQ(cm.plot_classes(0).size(), static_cast<size_t>(nc));

  const auto dir = test::scratch_dir("cm1000");
  std::vector<std::string> names;
  for (int64_t c = 0; c < nc; ++c) names.push_back("class_" + std::to_string(c));
  names[3] = "a,\"quoted\" name";
  cm.save_png(dir + "/confusion_matrix.png", names, false);
  const cv::Mat img = cv::imread(dir + "/confusion_matrix.png");
  ASSERT_FALSE(img.empty());
  EXPECT_LE(img.cols, 1000);  // was 8178 × 8238 with every class
  EXPECT_LE(img.rows, 1100);
  cm.save_csv(dir + "/confusion_matrix.csv", names);
  std::ifstream f(dir + "/confusion_matrix.csv");
  std::vector<std::string> rows;
  for (std::string l; std::getline(f, l);) rows.push_back(l);
  ASSERT_EQ(rows.size(), static_cast<size_t>(nc + 2));  // header + nc classes + background
  EXPECT_EQ(rows[0].substr(0, 30), "predicted\\true,class_0,class_1");
  EXPECT_NE(rows[0].find(",\"a,\"\"quoted\"\" name\","), std::string::npos);
  EXPECT_EQ(rows[0].substr(rows[0].size() - 11), ",background");
  EXPECT_EQ(std::count(rows[1].begin(), rows[1].end(), ','), nc + 1);
  // row "class_96": 97 on the diagonal, zero elsewhere
  const std::string& r96 = rows[97];
  ASSERT_EQ(r96.rfind("class_96,", 0), 0u) << r96.substr(0, 40);
  std::vector<std::string> cells;
  std::stringstream ss(r96);
  for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
  ASSERT_EQ(cells.size(), static_cast<size_t>(nc + 2));
  EXPECT_EQ(cells[97], "97");
  EXPECT_EQ(cells[98], "0");
  EXPECT_EQ(rows.back().rfind("background,", 0), 0u);
}

TEST(ConfusionMatrix, ManyNominalClassesFewPresentDrawsThosePresentWithNumbers) {
  // coco8: 80 nominal classes, a handful in the validation images. The plot holds those (and background), with the
  // values in the cells and a colour bar, instead of 81 rows without numbers.
  metrics::ConfusionMatrix cm(80);
  auto gt = torch::tensor({{0.f, 0.f, 10.f, 10.f}, {20.f, 0.f, 30.f, 10.f}});
  auto pred = torch::tensor({{0.f, 0.f, 10.f, 10.f, 0.9f, 17.f}, {20.f, 0.f, 30.f, 10.f, 0.9f, 5.f}});
  cm.process_batch(pred, torch::tensor({17L, 45L}), gt);  // 17 right; 45 taken for 5
  EXPECT_EQ(cm.plot_classes(), (std::vector<int64_t>{5, 17, 45}));
  EXPECT_EQ(cm.plot_classes(2).size(), 2u);
  metrics::ConfusionMatrix small(3);  // below kMaxAnnotatedRows every class is drawn, as the reference
  EXPECT_EQ(small.plot_classes().size(), 3u);
  const auto dir = test::scratch_dir("confusion_matrix_coco8");
  std::vector<std::string> names;
  for (int c = 0; c < 80; ++c) names.push_back("class" + std::to_string(c));
  cm.save_png(dir + "/cm.png", names, true);
  const cv::Mat img = cv::imread(dir + "/cm.png");
  ASSERT_FALSE(img.empty());
  EXPECT_LT(img.cols, 1000);
  // The darkest cells (1.00) hold white digits.
  cv::Mat dark;
  cv::inRange(img, cv::Scalar(107, 48, 8), cv::Scalar(107, 48, 8), dark);
  std::vector<std::vector<cv::Point>> blobs;
  cv::findContours(dark, blobs, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);
  ASSERT_FALSE(blobs.empty());
  const cv::Rect cell = cv::boundingRect(blobs.front());
  ASSERT_GT(cell.width, 40);
  cv::Mat white;
  cv::inRange(img(cell), cv::Scalar(200, 200, 200), cv::Scalar(255, 255, 255), white);
  EXPECT_GT(cv::countNonZero(white), 20) << "no number in the cell";
}
