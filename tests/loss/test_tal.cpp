// TaskAlignedAssigner against tal_cases.safetensors (README §3.6) and on small constructed cases.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "golden.h"
#include "yolo11/data/loader.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/loss/tal.h"

using namespace yolo11;

TEST(TaskAlignedAssigner, MatchesGoldenTalCases) {
  auto g = test::load_golden("tal_cases.safetensors");
  loss::TaskAlignedAssigner tal(10, 80, 0.5, 6.0);
  auto out = tal(g.at("pd_scores"), g.at("pd_bboxes"), g.at("anc_points"), g.at("gt_labels"), g.at("gt_bboxes"),
                 g.at("mask_gt"));
  const auto& fg_ref = g.at("fg_mask");
  ASSERT_TRUE(out.fg_mask.equal(fg_ref)) << "fg count got " << out.fg_mask.sum().item<int64_t>() << " ref "
                                         << fg_ref.sum().item<int64_t>();
  EXPECT_TRUE(out.target_gt_idx.masked_select(fg_ref).equal(g.at("target_gt_idx").masked_select(fg_ref)));
  EXPECT_TRUE(out.target_labels.masked_select(fg_ref).equal(g.at("target_labels").masked_select(fg_ref)));
  EXPECT_ALL_CLOSE(out.target_bboxes.index({fg_ref}), g.at("target_bboxes").index({fg_ref}), 0, 0);
  EXPECT_ALL_CLOSE(out.target_scores, g.at("target_scores"), 1e-6, 1e-5);
}

TEST(TaskAlignedAssigner, DenseAndCandidateOnlyPathsAgree) {
  auto g = test::load_golden("tal_cases.safetensors");
  loss::TaskAlignedAssigner sparse(10, 80), dense(10, 80);
  sparse.set_dense(false);
  dense.set_dense(true);
  auto a = sparse(g.at("pd_scores"), g.at("pd_bboxes"), g.at("anc_points"), g.at("gt_labels"), g.at("gt_bboxes"),
                  g.at("mask_gt"));
  auto b = dense(g.at("pd_scores"), g.at("pd_bboxes"), g.at("anc_points"), g.at("gt_labels"), g.at("gt_bboxes"),
                 g.at("mask_gt"));
  EXPECT_TRUE(a.fg_mask.equal(b.fg_mask));
  EXPECT_TRUE(a.target_gt_idx.equal(b.target_gt_idx));
  EXPECT_TRUE(a.target_labels.equal(b.target_labels));
  EXPECT_TRUE(a.target_bboxes.equal(b.target_bboxes));
  EXPECT_TRUE(a.target_scores.equal(b.target_scores));
  EXPECT_ALL_CLOSE(b.target_scores, g.at("target_scores"), 1e-6, 1e-5);
}

TEST(TaskAlignedAssigner, NoGroundTruthGivesBackground) {
  loss::TaskAlignedAssigner tal(10, 3);
  auto scores = torch::rand({2, 21, 3});
  auto boxes = torch::rand({2, 21, 4});
  auto anc = torch::rand({21, 2});
  auto out = tal(scores, boxes, anc, torch::zeros({2, 0, 1}, torch::kLong), torch::zeros({2, 0, 4}),
                 torch::zeros({2, 0, 1}, torch::kBool));
  EXPECT_FALSE(out.fg_mask.any().item<bool>());
  EXPECT_EQ(out.target_scores.abs().sum().item<double>(), 0.0);
  EXPECT_TRUE((out.target_labels == 3).all().item<bool>());
}

TEST(TaskAlignedAssigner, SmallBoxEnlargedForCandidates) {
  // One 64×64 image, stride-8 grid of 8×8 anchors only (centres at 4, 12, ...). A 4×4 box at (10..14, 10..14)
  // contains the anchor (12, 12); a 6×6 box centred between anchors (16, 16) contains none unless enlarged to 16.
  std::vector<at::Tensor> feats{torch::zeros({1, 1, 8, 8}), torch::zeros({1, 1, 4, 4})};
  auto [anc, st] = loss::make_anchors(feats, {8, 16});
  auto anc_px = anc * st;
  const int64_t a = anc.size(0);
  auto gt = torch::tensor({{{13.f, 13.f, 19.f, 19.f}}});
  auto pd = gt.expand({1, a, 4}).clone();
  auto scores = torch::full({1, a, 2}, 0.5f);
  loss::TaskAlignedAssigner tal(10, 2, 0.5, 6.0, {8, 16, 32});
  auto out = tal(scores, pd, anc_px, torch::zeros({1, 1, 1}, torch::kLong), gt, torch::ones({1, 1, 1}, torch::kBool));
  // Enlarged to 16×16 around (16,16): x,y in (8, 24) → anchors at 12 and 20 on each axis of the P3 grid (4 anchors).
  EXPECT_EQ(out.fg_mask.sum().item<int64_t>(), 4);
  // An 8×8 box (not < 8) is not enlarged: same centre → no anchor strictly inside (12 < 12 false).
  auto gt8 = torch::tensor({{{12.f, 12.f, 20.f, 20.f}}});
  auto out8 = tal(scores, gt8.expand({1, a, 4}).clone(), anc_px, torch::zeros({1, 1, 1}, torch::kLong), gt8,
                  torch::ones({1, 1, 1}, torch::kBool));
  EXPECT_EQ(out8.fg_mask.sum().item<int64_t>(), 0);
}

TEST(TaskAlignedAssigner, AnchorOfTwoGtsGoesToLargestOverlap) {
  // Stride-8 grid of 8×8 anchors (centres 4, 12, ..., 60). Outer GT (2,2,30,30) holds 16 anchor centres, the
  // inner GT (8,8,24,24) the 4 centres {12,20}². topk 20 selects every candidate, so the 4 inner anchors are
  // positive for both GTs; predictions equal the inner box → its CIoU is larger → they go to GT 1.
  std::vector<at::Tensor> feats{torch::zeros({1, 1, 8, 8})};
  auto [anc, st] = loss::make_anchors(feats, {8});
  auto anc_px = anc * st;
  const int64_t a = anc.size(0);
  auto gts = torch::tensor({{{2.f, 2.f, 30.f, 30.f}, {8.f, 8.f, 24.f, 24.f}}});
  auto pd = gts.select(1, 1).unsqueeze(1).expand({1, a, 4}).clone();
  auto scores = torch::full({1, a, 2}, 0.6f);
  loss::TaskAlignedAssigner tal(20, 2, 0.5, 6.0, {8, 16, 32});
  auto out = tal(scores, pd, anc_px, torch::tensor({{{0L}, {1L}}}), gts, torch::ones({1, 2, 1}, torch::kBool));
  EXPECT_EQ(out.fg_mask.sum().item<int64_t>(), 16);
  auto ax = anc_px.select(1, 0), ay = anc_px.select(1, 1);
  auto in_inner = ((ax > 8) & (ax < 24) & (ay > 8) & (ay < 24)).unsqueeze(0);
  EXPECT_TRUE(out.target_gt_idx.masked_select(in_inner).eq(1).all().item<bool>());
  EXPECT_TRUE(out.target_gt_idx.masked_select(out.fg_mask & ~in_inner).eq(0).all().item<bool>());
  EXPECT_TRUE(out.target_labels.masked_select(in_inner).eq(1).all().item<bool>());
  // The inner GT's anchors have CIoU 1 with their predictions → normalized score ≈ 1 on class 1.
  EXPECT_NEAR(out.target_scores.index({0, in_inner[0]}).select(1, 1).min().item<double>(), 1.0, 1e-4);
}

TEST(MakeAnchors, OrderAndStrides) {
  std::vector<at::Tensor> feats{torch::zeros({1, 1, 2, 3}), torch::zeros({1, 1, 1, 2})};
  auto [anc, st] = loss::make_anchors(feats, {8, 16});
  auto ref = torch::tensor(
      {{0.5f, 0.5f}, {1.5f, 0.5f}, {2.5f, 0.5f}, {0.5f, 1.5f}, {1.5f, 1.5f}, {2.5f, 1.5f}, {0.5f, 0.5f}, {1.5f, 0.5f}});
  EXPECT_ALL_CLOSE(anc, ref, 0, 0);
  EXPECT_ALL_CLOSE(st.squeeze(1), torch::tensor({8.f, 8.f, 8.f, 8.f, 8.f, 8.f, 16.f, 16.f}), 0, 0);
}

namespace {
// Sparse (candidate pairs) and dense (B×M×A) assignments of one batch agree exactly, and the losses too.
void expect_sparse_equals_dense(const at::Tensor& batch_idx, const at::Tensor& cls, const at::Tensor& bboxes,
                                int64_t batch, int64_t imgsz, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<at::Tensor> feats;
  for (int64_t s : {8, 16, 32}) feats.push_back(torch::randn({batch, 64 + 80, imgsz / s, imgsz / s}) * 2);
  loss::DetectionLoss sparse(80), dense(80);
  sparse.set_dense(false);
  dense.set_dense(true);
  loss::DetectionLoss::Diagnostics ds, dd;
  auto ls = sparse(feats, batch_idx, cls, bboxes, &ds);
  auto ld = dense(feats, batch_idx, cls, bboxes, &dd);
  const auto &a = ds.assignment, &b = dd.assignment;
  ASSERT_GT(b.fg_mask.sum().item<int64_t>(), 0);
  EXPECT_TRUE(a.fg_mask.equal(b.fg_mask)) << a.fg_mask.sum().item<int64_t>() << " vs " << b.fg_mask.sum().item<int64_t>();
  EXPECT_TRUE(a.target_gt_idx.equal(b.target_gt_idx));
  EXPECT_TRUE(a.target_labels.equal(b.target_labels));
  EXPECT_TRUE(a.target_bboxes.equal(b.target_bboxes));
  EXPECT_TRUE(a.target_scores.equal(b.target_scores));
  EXPECT_ALL_CLOSE(ls.items, ld.items, 1e-6, 1e-5);
}
}  // namespace

TEST(TaskAlignedAssigner, SparseEqualsDenseOnCoco128MosaicBatches) {
  data::DatasetInfo info;
  info.root = test::dataset_dir("coco128");
  info.nc = 80;
  data::DatasetOptions dopt;
  dopt.imgsz = 320;
  dopt.batch = 8;
  auto ds = std::make_shared<data::Dataset>(std::vector<std::string>{info.root + "/images/train2017"}, info, dopt);
  data::AugmentOptions aug;
  aug.imgsz = 320;
  data::Loader l(ds, aug, data::LoaderOptions{.batch = 8, .workers = 0, .seed = 0, .prefetch = 1});
  l.start_epoch(0);
  for (int i = 0; i < 3; ++i) {
    auto b = l.next();
    ASSERT_TRUE(b.has_value());
    SCOPED_TRACE("batch " + std::to_string(i) + ", " + std::to_string(b->cls.numel()) + " instances");
    expect_sparse_equals_dense(b->batch_idx, b->cls, b->bboxes, 8, 320, i);
  }
}

TEST(TaskAlignedAssigner, SparseEqualsDenseOnA1000BoxImage) {
  torch::manual_seed(1000);
  const int64_t n = 1000;
  auto wh = torch::rand({n, 2}) * (56.0 / 640) + 8.0 / 640;  // 8–64 px boxes at 640, a crowd
  auto xy = wh / 2 + torch::rand({n, 2}) * (1 - wh);
  expect_sparse_equals_dense(torch::zeros({n}, torch::kLong), torch::randint(80, {n}, torch::kLong),
                             torch::cat({xy, wh}, 1), 1, 640, 7);
}
