// The PR curve of ap_per_class (the reference's prec_values), the mean curve of the metric-confidence plots, and the
// four curve PNGs of DetMetrics::save_curves.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "golden.h"
#include "yolo11/metrics/curves.h"
#include "yolo11/metrics/det_metrics.h"

using namespace yolo11;

namespace {

const cv::Scalar kMeanBlue(255, 0, 0), kOrange(14, 127, 255);  // BGR: the mean curve, tab:orange (2nd class)

int count_color(const cv::Mat& img, cv::Scalar color) {
  cv::Mat mask;
  cv::inRange(img, color, color, mask);
  return cv::countNonZero(mask);
}

const char* kCurveFiles[] = {"PR_curve.png", "F1_curve.png", "P_curve.png", "R_curve.png"};

}  // namespace

// Class 0: 3 GT, predictions at conf 0.9 (TP), 0.8 (FP), 0.7 (TP). Class 1: 1 GT, 0.6 (FP), 0.5 (TP). Class 2: 2 GT,
// no prediction. At IoU 0.5, class 0 has recall 1/3, 1/3, 2/3 and precision 1, 1/2, 2/3: the envelope is 1 up to
// recall 1/3, 2/3 up to 2/3, then 0. Class 1: recall 0, 1 and precision 0, 1/2: envelope 1/2 from recall 0 to just
// below 1. Ultralytics 8.4.50's ap_per_class on this input gives the same rows (prec_values), with the steps at
// px[333] = 1/3 (already 2/3: repeated recalls take the last envelope value), px[666] (already 0) and px[999].
TEST(ApPerClass, PrCurveIsThePrecisionEnvelopeAtRecallPx) {
  auto tp = torch::zeros({5, metrics::kNumIou}, torch::kBool);
  tp[0].fill_(true);
  tp[2].narrow(0, 0, 5).fill_(true);
  tp[4].narrow(0, 0, 3).fill_(true);
  const auto a = metrics::ap_per_class(tp, torch::tensor({0.9f, 0.8f, 0.7f, 0.6f, 0.5f}),
                                       torch::tensor({0.f, 0.f, 0.f, 1.f, 1.f}), torch::tensor({0L, 0L, 0L, 1L, 2L, 2L}));
  ASSERT_EQ(a.classes, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(a.num_pred, (std::vector<int64_t>{3, 2, 0}));
  EXPECT_NEAR(a.ap[0][0], 0.555, 1e-12);  // the reference's AP50 of this input
  EXPECT_NEAR(a.ap[1][0], 0.4975, 1e-12);
  EXPECT_EQ(a.ap[2][0], 0.0);
  ASSERT_EQ(a.pr_curve.size(), 3u);
  for (const auto& row : a.pr_curve) ASSERT_EQ(row.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    const double c0 = i < 333 ? 1.0 : i < 666 ? 2.0 / 3.0 : 0.0;
    ASSERT_EQ(a.pr_curve[0][i], c0) << "class 0, px index " << i;
    ASSERT_EQ(a.pr_curve[1][i], i < 999 ? 0.5 : 0.0) << "class 1, px index " << i;
    ASSERT_EQ(a.pr_curve[2][i], 0.0) << "class 2 (no predictions), px index " << i;
  }
}

TEST(MeanMetricCurve, SmoothsTheClassMeanWithFraction01) {
  std::vector<double> px(1000);
  for (int i = 0; i < 1000; ++i) px[i] = i / 999.0;
  std::vector<double> peak(1000, 0.0), zero(1000, 0.0);
  peak[500] = 2.0;
  // mean = 1 at index 500; a box of 101 points (fraction 0.1) spreads it over 450..550, first maximum at 450.
  const auto m = metrics::mean_metric_curve(px, {peak, zero});
  ASSERT_EQ(m.y.size(), 1000u);
  EXPECT_DOUBLE_EQ(m.best, 1.0 / 101);
  EXPECT_EQ(m.best_x, px[450]);
  EXPECT_EQ(m.y[449], 0.0);
  EXPECT_EQ(metrics::smooth(peak).size(), 1000u);
  EXPECT_DOUBLE_EQ(metrics::smooth(peak)[475], 2.0 / 51);  // default fraction 0.05: 51 points
  const auto none = metrics::mean_metric_curve(px, {});
  EXPECT_EQ(none.best, 0.0);
  EXPECT_EQ(none.best_x, 0.0);
  EXPECT_THROW(metrics::mean_metric_curve(px, {std::vector<double>(3)}), std::invalid_argument);
}

TEST(DetMetrics, SaveCurvesWritesTheFourPngs) {
  metrics::DetMetrics m({"circle", "square", "triangle"});
  // square: a false positive above its true positive, so its curves differ from the perfect triangle's
  m.update(torch::tensor({{0.f, 0.f, 10.f, 10.f, 0.9f, 0.f},
                          {100.f, 100.f, 110.f, 110.f, 0.95f, 1.f},
                          {20.f, 20.f, 40.f, 40.f, 0.8f, 1.f},
                          {50.f, 50.f, 60.f, 60.f, 0.3f, 0.f}}),
           torch::tensor({0L, 1L}), torch::tensor({{0.f, 0.f, 10.f, 10.f}, {20.f, 20.f, 40.f, 40.f}}));
  m.update(torch::tensor({{5.f, 5.f, 25.f, 25.f, 0.6f, 2.f}}), torch::tensor({2L, 0L}),
           torch::tensor({{5.f, 5.f, 25.f, 25.f}, {70.f, 70.f, 90.f, 90.f}}));
  const auto dir = test::scratch_dir("curves");
  m.save_curves(dir);
  for (const char* f : kCurveFiles) {
    const cv::Mat img = cv::imread(dir + "/" + f);
    ASSERT_FALSE(img.empty()) << f;
    EXPECT_EQ(img.size(), cv::Size(metrics::kCurveWidth, metrics::kCurveHeight)) << f;
    EXPECT_GT(count_color(img, kMeanBlue), 1000) << f << ": no thick blue mean curve";
    EXPECT_GT(count_color(img, kOrange), 200) << f << ": no per-class line in the 2nd colour";
    EXPECT_GT(count_color(img, cv::Scalar(255, 255, 255)), img.total() / 2) << f << ": background not white";
  }
  EXPECT_THROW(m.save_curves("/nonexistent_dir_xyz"), std::runtime_error);
}

TEST(DetMetrics, SaveCurvesWithManyClassesDrawsGreyLinesOnly) {
  std::vector<std::string> names;
  for (int c = 0; c < 25; ++c) names.push_back("class" + std::to_string(c));
  metrics::DetMetrics m(names);
  for (int c = 0; c < 25; ++c) {
    const float conf = 0.3f + 0.02f * static_cast<float>(c), cls = static_cast<float>(c);
    m.update(torch::tensor({{0.f, 0.f, 10.f, 10.f, conf, cls}, {30.f, 30.f, 40.f, 40.f, conf + 0.1f, cls}}),
             torch::tensor({static_cast<int64_t>(c)}), torch::tensor({{0.f, 0.f, 10.f, 10.f}}));
  }
  const auto dir = test::scratch_dir("curves25");
  m.save_curves(dir);
  for (const char* f : kCurveFiles) {
    const cv::Mat img = cv::imread(dir + "/" + f);
    ASSERT_FALSE(img.empty()) << f;
    EXPECT_GT(count_color(img, kMeanBlue), 1000) << f;
    EXPECT_EQ(count_color(img, kOrange), 0) << f << ": more than 20 classes are drawn grey";
  }
}

TEST(DetMetrics, SaveCurvesWithoutGroundTruth) {
  metrics::DetMetrics m({"a", "b"});
  m.update(torch::tensor({{0.f, 0.f, 10.f, 10.f, 0.9f, 1.f}}), torch::zeros({0}, torch::kLong), torch::zeros({0, 4}));
  const auto dir = test::scratch_dir("curves_no_gt");
  m.save_curves(dir);
  for (const char* f : kCurveFiles) EXPECT_FALSE(cv::imread(dir + "/" + f).empty()) << f;
}
