// Matching, AP and DetMetrics against metrics_cases.json (README §3.8), plus edge cases.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "yolo11/io/file.h"
#include "yolo11/loss/iou.h"
#include "yolo11/metrics/det_metrics.h"

using namespace yolo11;
using nlohmann::json;

namespace {

const json& golden() {
  static const json j = json::parse(io::read_file(test::golden_path("metrics_cases.json")));
  return j;
}

struct ImageCase {
  at::Tensor gt_cls, gt_boxes, pred;  // pred (n, 6) x1 y1 x2 y2 conf cls
};

ImageCase image_case(const json& im) {
  ImageCase c;
  std::vector<int64_t> cls;
  std::vector<float> boxes, pred;
  for (const auto& g : im["gt_cls_xyxy"]) {
    cls.push_back(g[0].get<int64_t>());
    for (int k = 1; k < 5; ++k) boxes.push_back(g[k].get<float>());
  }
  for (const auto& p : im["pred_cls_conf_xyxy"]) {
    for (int k = 2; k < 6; ++k) pred.push_back(p[k].get<float>());
    pred.push_back(p[1].get<float>());
    pred.push_back(p[0].get<float>());
  }
  c.gt_cls = torch::tensor(cls, torch::kLong);
  c.gt_boxes = torch::tensor(boxes).view({-1, 4});
  c.pred = torch::tensor(pred).view({-1, 6});
  return c;
}

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (int i = 0; i < 4; ++i) n.push_back(golden()["names"][std::to_string(i)].get<std::string>());
  return n;
}

metrics::DetMetrics golden_metrics() {
  metrics::DetMetrics m(names());
  for (const auto& im : golden()["images"]) {
    auto c = image_case(im);
    m.update(c.pred, c.gt_cls, c.gt_boxes);
  }
  return m;
}

constexpr double kTol = 1e-9;

}  // namespace

TEST(IouThresholds, AreFloat32Linspace) {
  const auto t = metrics::iou_thresholds();
  const auto& ref = golden()["iou_thresholds"];
  for (int i = 0; i < metrics::kNumIou; ++i) EXPECT_EQ(static_cast<double>(t[i]), ref[i].get<double>());
}

TEST(MatchPredictions, IouAndCorrectMatricesMatchGolden) {
  for (const auto& im : golden()["images"]) {
    auto c = image_case(im);
    const int64_t m = c.gt_cls.numel(), n = c.pred.size(0);
    auto iou = loss::box_iou(c.gt_boxes, c.pred.narrow(1, 0, 4));
    if (m > 0) {
      std::vector<double> ref;
      for (const auto& row : im["iou_gt_x_pred"])
        for (const auto& v : row) ref.push_back(v.get<double>());
      EXPECT_ALL_CLOSE(iou, torch::tensor(ref, torch::kDouble).view({m, n}), 1e-6, 0);
    }
    auto correct = m > 0 ? metrics::match_predictions(c.pred.select(1, 5), c.gt_cls, iou)
                         : torch::zeros({n, metrics::kNumIou}, torch::kBool);
    std::vector<int64_t> ref;
    for (const auto& row : im["correct"])
      for (const auto& v : row) ref.push_back(v.get<bool>() ? 1 : 0);
    EXPECT_TRUE(correct.equal(torch::tensor(ref).view({n, metrics::kNumIou}).to(torch::kBool)))
        << "image " << im["image"] << "\n"
        << correct;
  }
}

TEST(MatchPredictions, LowestIndexPredictionWinsTheGt) {
  // One GT, two same-class predictions: index 0 (IoU 0.8) and index 1 (IoU 0.95).
  auto iou = torch::tensor({{0.8f, 0.95f}});
  auto c = metrics::match_predictions(torch::tensor({0L, 0L}), torch::tensor({0L}), iou);
  // Thresholds ≤ 0.8: prediction 0 wins; 0.85..0.95: only prediction 1 qualifies.
  for (int t = 0; t < metrics::kNumIou; ++t) {
    const bool p0 = t <= 6;
    EXPECT_EQ(c[0][t].item<bool>(), p0) << t;
    EXPECT_EQ(c[1][t].item<bool>(), !p0) << t;
  }
  // Different class never matches.
  auto c2 = metrics::match_predictions(torch::tensor({1L, 1L}), torch::tensor({0L}), iou);
  EXPECT_FALSE(c2.any().item<bool>());
}

TEST(ComputeAp, PerfectAndEmptyCurves) {
  // The appended (last recall, 0) point makes the interpolated curve drop to 0 at the last recall, so the last
  // trapezoid of the 101-point rule is half a step: a perfect detector scores 0.995 (the reference's ceiling).
  EXPECT_NEAR(metrics::compute_ap({0.5, 1.0}, {1.0, 1.0}), 0.995, 1e-12);
  EXPECT_NEAR(metrics::compute_ap({0.0, 0.0}, {0.0, 0.0}), 0.0, 1e-12);
  // Half the GTs found at precision 1 then nothing: 0.49 + half a step.
  EXPECT_NEAR(metrics::compute_ap({0.5}, {1.0}), 0.495, 1e-12);
}

TEST(Interp, FollowsNumpyRules) {
  const std::vector<double> xp{0, 1, 1, 2}, fp{0, 10, 20, 30};
  EXPECT_EQ(metrics::interp(-1, xp, fp, -5, 99), -5);
  EXPECT_EQ(metrics::interp(3, xp, fp, -5, 99), 99);
  EXPECT_EQ(metrics::interp(1, xp, fp, -5, 99), 20);  // repeated xp: the last value
  EXPECT_EQ(metrics::interp(0.5, xp, fp, -5, 99), 5);
  EXPECT_EQ(metrics::interp(2, xp, fp, -5, 99), 30);
}

TEST(DetMetrics, PerClassResultsMatchGolden) {
  auto m = golden_metrics();
  auto r = m.compute();
  const auto& g = golden();
  ASSERT_EQ(r.per_class.size(), g["per_class"].size());
  for (size_t i = 0; i < r.per_class.size(); ++i) {
    const auto& pc = g["per_class"][i];
    const auto& c = r.per_class[i];
    EXPECT_EQ(c.cls, pc["class"].get<int64_t>());
    EXPECT_EQ(c.instances, pc["num_gt"].get<int64_t>());
    EXPECT_NEAR(c.p, pc["P"].get<double>(), kTol) << "class " << c.cls;
    EXPECT_NEAR(c.r, pc["R"].get<double>(), kTol) << "class " << c.cls;
    EXPECT_NEAR(c.f1, pc["F1"].get<double>(), kTol) << "class " << c.cls;
    EXPECT_NEAR(c.ap50(), pc["AP50"].get<double>(), kTol) << "class " << c.cls;
    EXPECT_NEAR(c.ap50_95(), pc["AP50_95"].get<double>(), kTol) << "class " << c.cls;
    for (int t = 0; t < metrics::kNumIou; ++t)
      EXPECT_NEAR(c.ap[t], pc["AP_per_iou"][t].get<double>(), kTol) << "class " << c.cls << " iou " << t;
  }
}

TEST(DetMetrics, MeansFitnessAndMapsMatchGolden) {
  auto r = golden_metrics().compute();
  const auto& g = golden();
  EXPECT_NEAR(r.precision, g["mean"]["mP"].get<double>(), kTol);
  EXPECT_NEAR(r.recall, g["mean"]["mR"].get<double>(), kTol);
  EXPECT_NEAR(r.map50, g["mean"]["mAP50"].get<double>(), kTol);
  EXPECT_NEAR(r.map75, g["mean"]["mAP75"].get<double>(), kTol);
  EXPECT_NEAR(r.map50_95, g["mean"]["mAP50_95"].get<double>(), kTol);
  EXPECT_NEAR(r.fitness, g["fitness"].get<double>(), kTol);
  EXPECT_EQ(r.max_f1_index, g["max_f1_index"].get<int64_t>());
  ASSERT_EQ(r.maps.size(), 4u);
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(r.maps[c], g["maps_per_class_index"][c].get<double>(), kTol) << c;
  EXPECT_EQ(r.images, 3);
  EXPECT_EQ(r.instances, 6);
}

TEST(ApPerClass, CurvesAndTpFpMatchGolden) {
  const auto& g = golden();
  std::vector<at::Tensor> tp, conf, pcls, tcls;
  for (const auto& im : g["images"]) {
    auto c = image_case(im);
    auto iou = loss::box_iou(c.gt_boxes, c.pred.narrow(1, 0, 4));
    tp.push_back(c.gt_cls.numel() ? metrics::match_predictions(c.pred.select(1, 5), c.gt_cls, iou)
                                  : torch::zeros({c.pred.size(0), metrics::kNumIou}, torch::kBool));
    conf.push_back(c.pred.select(1, 4));
    pcls.push_back(c.pred.select(1, 5));
    tcls.push_back(c.gt_cls);
  }
  auto a = metrics::ap_per_class(torch::cat(tp), torch::cat(conf), torch::cat(pcls), torch::cat(tcls));
  ASSERT_EQ(a.classes, (std::vector<int64_t>{0, 1, 3}));
  for (size_t ci = 0; ci < 3; ++ci) {
    for (int i = 0; i < 1000; ++i) {
      ASSERT_NEAR(a.p_curve[ci][i], g["p_curve"][ci][i].get<double>(), kTol) << ci << " " << i;
      ASSERT_NEAR(a.r_curve[ci][i], g["r_curve"][ci][i].get<double>(), kTol) << ci << " " << i;
    }
    EXPECT_EQ(a.tp[ci], g["tp_fp_at_max_f1"]["tp"][ci].get<double>());
    EXPECT_EQ(a.fp[ci], g["tp_fp_at_max_f1"]["fp"][ci].get<double>());
  }
}

TEST(DetMetrics, ImageLevelCountsAtIou50MatchGolden) {
  for (const auto& im : golden()["images"]) {
    auto c = image_case(im);
    auto iou = loss::box_iou(c.gt_boxes, c.pred.narrow(1, 0, 4));
    const int64_t n = c.pred.size(0), m = c.gt_cls.numel();
    const int64_t tp =
        m ? metrics::match_predictions(c.pred.select(1, 5), c.gt_cls, iou).select(1, 0).sum().item<int64_t>() : 0;
    const auto& ref = golden()["image_metrics_iou50"]["img" + std::to_string(im["image"].get<int>()) + ".jpg"];
    EXPECT_EQ(tp, ref["tp"].get<int64_t>());
    EXPECT_EQ(n - tp, ref["fp"].get<int64_t>());
    EXPECT_EQ(m - tp, ref["fn"].get<int64_t>());
  }
}

TEST(DetMetrics, NoPredictionsGivesZeros) {
  metrics::DetMetrics m({"a", "b"});
  m.update(torch::zeros({0, 6}), torch::tensor({0L, 1L}),
           torch::tensor({{0.f, 0.f, 10.f, 10.f}, {5.f, 5.f, 9.f, 9.f}}));
  auto r = m.compute();
  ASSERT_EQ(r.per_class.size(), 2u);
  EXPECT_EQ(r.precision, 0.0);
  EXPECT_EQ(r.recall, 0.0);
  EXPECT_EQ(r.map50_95, 0.0);
  EXPECT_EQ(r.instances, 2);
  EXPECT_EQ(m.confusion_matrix().matrix()[2][0], 1.0);  // missed → background row
  EXPECT_EQ(m.confusion_matrix().matrix()[2][1], 1.0);
}

TEST(DetMetrics, NoGroundTruthGivesZerosAndNoClassRows) {
  metrics::DetMetrics m({"a", "b"});
  m.update(torch::tensor({{0.f, 0.f, 10.f, 10.f, 0.9f, 1.f}}), torch::zeros({0}, torch::kLong), torch::zeros({0, 4}));
  auto r = m.compute();
  EXPECT_TRUE(r.per_class.empty());
  EXPECT_EQ(r.map50_95, 0.0);
  EXPECT_EQ(r.fitness, 0.0);
  EXPECT_EQ(m.confusion_matrix().matrix()[1][2], 1.0);  // FP → background column
  // Nothing seen at all.
  metrics::DetMetrics empty({"a"});
  EXPECT_EQ(empty.compute().map50, 0.0);
}

TEST(DetMetrics, PerfectPredictionsGiveOne) {
  metrics::DetMetrics m({"a", "b", "c"});
  auto boxes = torch::tensor({{0.f, 0.f, 10.f, 10.f}, {20.f, 20.f, 40.f, 50.f}});
  m.update(torch::tensor({{20.f, 20.f, 40.f, 50.f, 0.8f, 2.f}, {0.f, 0.f, 10.f, 10.f, 0.7f, 0.f}}),
           torch::tensor({0L, 2L}), boxes);
  auto r = m.compute();
  EXPECT_NEAR(r.map50_95, 0.995, 1e-12);  // the 101-point AP ceiling (see ComputeAp)
  EXPECT_NEAR(r.precision, 1.0, 1e-9);
  EXPECT_NEAR(r.recall, 1.0, 1e-9);
  EXPECT_NEAR(r.maps[1], 0.995, 1e-12);  // class b not evaluated: gets the mean
}

TEST(DetMetrics, RejectsOutOfRangeClass) {
  metrics::DetMetrics m({"a", "b"});
  EXPECT_THROW(m.update(torch::zeros({0, 6}), torch::tensor({2L}), torch::zeros({1, 4})), std::runtime_error);
  EXPECT_THROW(m.update(torch::zeros({3, 5}), torch::tensor({0L}), torch::zeros({1, 4})), std::runtime_error);
}

TEST(DetMetrics, TableHasUltralyticsLayout) {
  auto m = golden_metrics();
  auto r = m.compute();
  const auto t = m.table(r);
  std::vector<std::string> lines;
  std::stringstream ss(t);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 5u);  // header, all, classes 0, 1, 3
  EXPECT_EQ(lines[0], "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95)");
  EXPECT_EQ(lines[1], "                   all          3          6      0.594      0.389      0.498      0.345");
  EXPECT_EQ(lines[4], "                class3          1          1          0          0          0          0");
  EXPECT_EQ(lines[2].size(), 22u + 6 * 11);
}
