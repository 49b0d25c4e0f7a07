// non_max_suppression against nms_cases (README §3.7): exact rows and indices, plus edge cases.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "golden.h"
#include "yolo11/metrics/nms.h"

using namespace yolo11;

namespace {

struct Setting {
  const char* name;
  metrics::NmsOptions opt;
};

std::vector<Setting> settings() {
  auto mk = [](double conf, double iou, int64_t max_det, bool ml, bool ag) {
    metrics::NmsOptions o;
    o.conf = conf, o.iou = iou, o.max_det = max_det, o.multi_label = ml, o.agnostic = ag;
    return o;
  };
  return {{"S1", mk(0.001, 0.7, 300, false, false)},
          {"S2", mk(0.25, 0.45, 300, false, false)},
          {"S3", mk(0.001, 0.7, 300, true, false)},
          {"S4", mk(0.001, 0.7, 3, false, false)},
          {"S5", mk(0.25, 0.45, 300, false, true)}};
}

void check_source(const std::string& src, const at::Tensor& pred, const io::TensorFile& ref, bool all_settings) {
  const auto before = pred.clone();
  for (const auto& s : settings()) {
    const std::string key0 = src + "_" + s.name + "_img0";
    if (!ref.contains(key0)) {
      ASSERT_FALSE(all_settings) << "missing golden " << key0;
      continue;
    }
    std::vector<at::Tensor> idx;
    auto out = metrics::non_max_suppression(pred, s.opt, &idx);
    ASSERT_EQ(out.size(), static_cast<size_t>(pred.size(0)));
    for (int64_t b = 0; b < pred.size(0); ++b) {
      const std::string key = src + "_" + s.name + "_img" + std::to_string(b);
      EXPECT_ALL_CLOSE(out[b], ref.at(key), 0, 0) << key;
      EXPECT_TRUE(idx[b].equal(ref.at(key + "_idx"))) << key << " indices differ";
    }
  }
  EXPECT_TRUE(pred.equal(before)) << "NMS modified its input";
}

}  // namespace

TEST(NonMaxSuppression, MatchesGoldenEvalOutS1S2S3) {
  auto ref = test::load_golden("nms_cases.safetensors");
  auto fwd = test::load_golden("yolo11n_forward.safetensors");
  check_source("eval_out", fwd.at("eval_out"), ref, false);
}

TEST(NonMaxSuppression, MatchesGoldenCraftedAllSettings) {
  auto ref = test::load_golden("nms_cases.safetensors");
  check_source("crafted", ref.at("crafted_pred"), ref, true);
}

TEST(NonMaxSuppression, NoCandidatesGivesEmptyRows) {
  auto pred = torch::zeros({2, 4 + 3, 50});
  pred.narrow(1, 0, 4).fill_(10);
  std::vector<at::Tensor> idx;
  auto out = metrics::non_max_suppression(pred, {}, &idx);
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(out[b].sizes(), (at::IntArrayRef{0, 6}));
    EXPECT_EQ(idx[b].numel(), 0);
  }
}

TEST(NonMaxSuppression, MaxDetKeepsHighestConfidenceRows) {
  // 400 disjoint boxes of one class, scores decreasing: all survive NMS, only the first max_det are returned.
  const int64_t n = 400;
  auto pred = torch::zeros({1, 5, n});
  auto ar = torch::arange(n, torch::kFloat);
  pred[0][0] = ar * 20 + 5;  // cx
  pred[0][1] = 5;
  pred[0][2] = 10;
  pred[0][3] = 10;
  pred[0][4] = 0.9 - ar * 0.001;
  metrics::NmsOptions o;
  o.conf = 0.001, o.iou = 0.7, o.max_det = 300;
  std::vector<at::Tensor> idx;
  auto out = metrics::non_max_suppression(pred, o, &idx);
  ASSERT_EQ(out[0].size(0), 300);
  EXPECT_TRUE(idx[0].equal(torch::arange(300, torch::kLong)));
  EXPECT_TRUE((out[0].select(1, 4).diff() < 0).all().item<bool>());
}

TEST(NonMaxSuppression, EqualIouIsKeptAndOnlyKeptBoxesSuppress) {
  // Boxes A [0,0,10,10] 0.9, B [5,0,15,10] 0.8 (IoU(A,B)=1/3), C [10,0,20,10] 0.7 (IoU(B,C)=1/3, IoU(A,C)=0).
  auto xyxy = torch::tensor({{0.f, 0.f, 10.f, 10.f}, {5.f, 0.f, 15.f, 10.f}, {10.f, 0.f, 20.f, 10.f}});
  auto scores = torch::tensor({0.9f, 0.8f, 0.7f});
  // thr 0.3: B suppressed by A; C survives because B (suppressed) cannot suppress it.
  EXPECT_TRUE(metrics::nms(xyxy, scores, 0.3).equal(torch::tensor({0L, 2L})));
  // thr exactly IoU(A,B) = 50/150 in float: strict '>' keeps B.
  const float iou_ab = 50.f / (100.f + 100.f - 50.f);
  EXPECT_TRUE(metrics::nms(xyxy, scores, iou_ab).equal(torch::tensor({0L, 1L, 2L})));
  EXPECT_TRUE(metrics::nms(xyxy, scores, 0.3, 1).equal(torch::tensor({0L})));
}

TEST(NonMaxSuppression, ClassAwareUnlessAgnostic) {
  // Two identical boxes of different classes: both survive class-aware NMS, one survives agnostic NMS.
  auto pred = torch::zeros({1, 4 + 2, 2});
  pred[0][0] = 50, pred[0][1] = 50, pred[0][2] = 20, pred[0][3] = 20;
  pred[0][4][0] = 0.9, pred[0][5][1] = 0.8;
  metrics::NmsOptions o;
  EXPECT_EQ(metrics::non_max_suppression(pred, o)[0].size(0), 2);
  o.agnostic = true;
  auto out = metrics::non_max_suppression(pred, o)[0];
  ASSERT_EQ(out.size(0), 1);
  EXPECT_EQ(out[0][5].item<float>(), 0.f);
}

TEST(NonMaxSuppression, RejectsBadShape) {
  EXPECT_THROW(metrics::non_max_suppression(torch::zeros({2, 4, 10})), std::runtime_error);
}
