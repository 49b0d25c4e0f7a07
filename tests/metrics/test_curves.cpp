// The PR curve of ap_per_class (the reference's prec_values).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "yolo11/metrics/det_metrics.h"

using namespace yolo11;

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
