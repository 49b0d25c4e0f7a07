// IoU family and box conversions: hand-computed values, agreement between formats, CIoU gradient behaviour.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "golden.h"
#include "yolo11/loss/iou.h"

using namespace yolo11;

TEST(BoxConvert, XywhXyxyRoundTrip) {
  auto xywh = torch::tensor({{50.f, 40.f, 20.f, 10.f}, {0.5f, 0.5f, 1.f, 1.f}});
  auto xyxy = loss::xywh2xyxy(xywh);
  EXPECT_ALL_CLOSE(xyxy, torch::tensor({{40.f, 35.f, 60.f, 45.f}, {0.f, 0.f, 1.f, 1.f}}), 0, 0);
  EXPECT_ALL_CLOSE(loss::xyxy2xywh(xyxy), xywh, 0, 0);
}

TEST(BboxIou, PlainIouOfKnownBoxes) {
  // [0,0,10,10] vs [5,0,15,10]: inter 50, union 150.
  auto a = torch::tensor({0.f, 0.f, 10.f, 10.f}), b = torch::tensor({5.f, 0.f, 15.f, 10.f});
  const double iou = loss::bbox_iou(a, b, false, loss::IouKind::IoU).item<double>();
  EXPECT_NEAR(iou, 50.0 / 150.0, 1e-6);
  // Same boxes as xywh.
  const double iou2 = loss::bbox_iou(loss::xyxy2xywh(a), loss::xyxy2xywh(b), true).item<double>();
  EXPECT_NEAR(iou2, 50.0 / 150.0, 1e-6);
}

TEST(BboxIou, GiouDiouCiouOfKnownBoxes) {
  auto a = torch::tensor({0.f, 0.f, 10.f, 10.f}), b = torch::tensor({5.f, 0.f, 15.f, 10.f});
  const double iou = 50.0 / 150.0;
  // GIoU: enclosing 15×10 = 150 = union → GIoU = IoU.
  EXPECT_NEAR(loss::bbox_iou(a, b, false, loss::IouKind::GIoU).item<double>(), iou, 1e-6);
  // DIoU: centre distance² 25, enclosing diagonal² 15² + 10² = 325.
  EXPECT_NEAR(loss::bbox_iou(a, b, false, loss::IouKind::DIoU).item<double>(), iou - 25.0 / 325.0, 1e-6);
  // Equal aspect ratios → v = 0 → CIoU = DIoU.
  EXPECT_NEAR(loss::bbox_iou(a, b, false, loss::IouKind::CIoU).item<double>(), iou - 25.0 / 325.0, 1e-6);
  // Different aspect ratio: [0,0,10,20] vs [0,0,10,10]: iou 0.5, rho 25, c2 100+400.
  auto c = torch::tensor({0.f, 0.f, 10.f, 20.f});
  const double v = 4 / (M_PI * M_PI) * std::pow(std::atan(10.0 / 10.0) - std::atan(10.0 / 20.0), 2);
  const double alpha = v / (v - 0.5 + 1);
  EXPECT_NEAR(loss::bbox_iou(a, c, false, loss::IouKind::CIoU).item<double>(), 0.5 - (25.0 / 500.0 + v * alpha), 1e-6);
  // Disjoint boxes: GIoU negative.
  auto d = torch::tensor({20.f, 20.f, 30.f, 30.f});
  EXPECT_LT(loss::bbox_iou(a, d, false, loss::IouKind::GIoU).item<double>(), 0);
}

TEST(BboxIou, BroadcastsAndHasGradient) {
  auto pred = torch::tensor({{0.f, 0.f, 10.f, 10.f}, {2.f, 2.f, 8.f, 9.f}}).requires_grad_(true);
  auto gt = torch::tensor({{1.f, 1.f, 11.f, 12.f}});
  auto iou = loss::bbox_iou(pred.unsqueeze(0), gt.unsqueeze(1), false, loss::IouKind::CIoU);
  ASSERT_EQ(iou.sizes(), (at::IntArrayRef{1, 2, 1}));
  (1 - iou).sum().backward();
  ASSERT_TRUE(pred.grad().defined());
  EXPECT_TRUE(torch::isfinite(pred.grad()).all().item<bool>());
  EXPECT_GT(pred.grad().abs().sum().item<double>(), 0);
}

TEST(BoxIou, PairwiseMatrixMatchesElementwise) {
  auto a = torch::tensor({{0.f, 0.f, 10.f, 10.f}, {5.f, 5.f, 20.f, 25.f}});
  auto b = torch::tensor({{5.f, 0.f, 15.f, 10.f}, {100.f, 100.f, 110.f, 110.f}, {0.f, 0.f, 10.f, 10.f}});
  auto m = loss::box_iou(a, b);
  ASSERT_EQ(m.sizes(), (at::IntArrayRef{2, 3}));
  EXPECT_NEAR(m[0][0].item<double>(), 50.0 / 150.0, 1e-6);
  EXPECT_EQ(m[0][1].item<double>(), 0.0);
  EXPECT_NEAR(m[0][2].item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(m[1][0].item<double>(), 50.0 / (100 + 300 - 50), 1e-6);
}
