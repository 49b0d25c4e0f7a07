// DetectionLoss against loss_cases (README §3.5): values, gradients, assigner internals, no-target cases.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "yolo11/io/file.h"
#include "yolo11/loss/detection_loss.h"

using namespace yolo11;

// Not in the anonymous namespace: the TEST_F classes derive from it, and in a unity batch (YOLO11_UNITY_BUILD) GCC
// warns (-Wsubobject-linkage) about a base with internal linkage defined outside the main file.
struct LossCaseFixture : ::testing::Test {
  static void SetUpTestSuite() {
    cases = new io::TensorFile(test::load_golden("loss_cases.safetensors"));
    auto fwd = test::load_golden("yolo11n_forward.safetensors");
    feats = new std::vector<at::Tensor>{fwd.at("train_feat0"), fwd.at("train_feat1"), fwd.at("train_feat2")};
    json = new nlohmann::json(nlohmann::json::parse(io::read_file(test::golden_path("loss_cases.json"))));
  }
  static void TearDownTestSuite() {
    delete cases;
    delete feats;
    delete json;
  }
  static std::vector<at::Tensor> leaf_feats() {
    std::vector<at::Tensor> f;
    for (auto& t : *feats) f.push_back(t.clone().requires_grad_(true));
    return f;
  }
  static at::Tensor t(const std::string& name) { return cases->at(name); }
  static inline io::TensorFile* cases = nullptr;
  static inline std::vector<at::Tensor>* feats = nullptr;
  static inline nlohmann::json* json = nullptr;
};

namespace {

void check_case(const std::string& c, bool check_assign) {
  loss::DetectionLoss crit(80);
  auto f = LossCaseFixture::leaf_feats();
  loss::DetectionLoss::Diagnostics diag;
  auto out = crit(f, LossCaseFixture::t("case" + c + "_batch_idx"), LossCaseFixture::t("case" + c + "_cls"),
                  LossCaseFixture::t("case" + c + "_bboxes"), &diag);
  EXPECT_ALL_CLOSE(out.loss_vec, LossCaseFixture::t("case" + c + "_loss_vec"), 0, 1e-5);
  EXPECT_ALL_CLOSE(out.items, LossCaseFixture::t("case" + c + "_loss_items"), 0, 1e-5);
  EXPECT_ALL_CLOSE(out.total, LossCaseFixture::t("case" + c + "_total"), 0, 1e-5);
  EXPECT_FALSE(out.items.requires_grad());
  if (check_assign) {
    EXPECT_TRUE(diag.targets.gt_labels.equal(LossCaseFixture::t("case" + c + "_gt_labels")));
    EXPECT_ALL_CLOSE(diag.targets.gt_bboxes, LossCaseFixture::t("case" + c + "_gt_bboxes"), 0, 0);
    EXPECT_TRUE(diag.targets.mask_gt.equal(LossCaseFixture::t("case" + c + "_mask_gt")));
    EXPECT_ALL_CLOSE(diag.pd_bboxes, LossCaseFixture::t("case" + c + "_pd_bboxes"), 1e-4, 1e-5);
    const auto fg = LossCaseFixture::t("case" + c + "_fg_mask");
    ASSERT_TRUE(diag.assignment.fg_mask.equal(fg));
    EXPECT_TRUE(diag.assignment.target_gt_idx.masked_select(fg).equal(
        LossCaseFixture::t("case" + c + "_target_gt_idx").masked_select(fg)));
    EXPECT_TRUE(diag.assignment.target_labels.masked_select(fg).equal(
        LossCaseFixture::t("case" + c + "_target_labels").masked_select(fg)));
    EXPECT_ALL_CLOSE(diag.assignment.target_bboxes.index({fg}),
                     LossCaseFixture::t("case" + c + "_target_bboxes").index({fg}), 0, 0);
  }
  // Gradient summaries recorded in the json for every case.
  out.total.backward();
  const auto& js = (*LossCaseFixture::json)["cases"][c];
  for (int l = 0; l < 3; ++l) {
    const auto& gr = f[l].grad();
    EXPECT_NEAR(gr.abs().max().item<double>(), js["grad_abs_max"][l].get<double>(),
                1e-6 + 1e-4 * js["grad_abs_max"][l].get<double>())
        << "case " << c << " level " << l;
    EXPECT_NEAR(gr.to(torch::kDouble).sum().item<double>(), js["grad_sum"][l].get<double>(),
                1e-3 + 1e-4 * std::abs(js["grad_sum"][l].get<double>()))
        << "case " << c << " level " << l;
  }
}

}  // namespace

TEST_F(LossCaseFixture, MatchesGoldenCaseA) { check_case("A", true); }
TEST_F(LossCaseFixture, MatchesGoldenCaseBImageWithoutBoxes) { check_case("B", true); }
TEST_F(LossCaseFixture, MatchesGoldenCaseCNoTargets) { check_case("C", false); }

TEST_F(LossCaseFixture, GradientsMatchGoldenCaseA) {
  loss::DetectionLoss crit(80);
  auto f = leaf_feats();
  auto out = crit(f, t("caseA_batch_idx"), t("caseA_cls"), t("caseA_bboxes"));
  out.total.backward();
  for (int l = 0; l < 3; ++l)
    EXPECT_ALL_CLOSE(f[l].grad(), t("caseA_grad_feat" + std::to_string(l)), 1e-6, 1e-4) << "level " << l;
}

TEST_F(LossCaseFixture, TargetScoresMatchGoldenCaseA) {
  loss::DetectionLoss crit(80);
  loss::DetectionLoss::Diagnostics diag;
  crit(*feats, t("caseA_batch_idx"), t("caseA_cls"), t("caseA_bboxes"), &diag);
  EXPECT_ALL_CLOSE(diag.assignment.target_scores, t("caseA_target_scores"), 1e-6, 1e-5);
}

TEST_F(LossCaseFixture, NoTargetsGradientIsHalfBatchSigmoidOnClassChannels) {
  loss::DetectionLoss crit(80);
  auto f = leaf_feats();
  auto out = crit(f, t("caseC_batch_idx"), t("caseC_cls"), t("caseC_bboxes"));
  out.total.backward();
  EXPECT_EQ(out.items[0].item<double>(), 0.0);
  EXPECT_EQ(out.items[2].item<double>(), 0.0);
  for (int l = 0; l < 3; ++l) {
    auto g = f[l].grad();
    EXPECT_EQ(g.narrow(1, 0, 64).abs().max().item<double>(), 0.0);
    EXPECT_ALL_CLOSE(g.narrow(1, 64, 80), 0.5 * 2 * (*feats)[l].narrow(1, 64, 80).sigmoid(), 1e-7, 1e-5);
  }
}

TEST(PreprocessTargets, GroupsUnsortedRowsInOrderOfAppearance) {
  auto bi = torch::tensor({1L, 0L, 1L});
  auto cls = torch::tensor({3L, 4L, 5L});
  auto boxes = torch::tensor({{0.5f, 0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.5f, 0.5f}, {0.5f, 0.5f, 1.f, 1.f}});
  auto p = loss::preprocess_targets(bi, cls, boxes, 3, 100, 200, torch::kCPU);
  ASSERT_EQ(p.gt_bboxes.sizes(), (at::IntArrayRef{3, 2, 4}));
  EXPECT_TRUE(p.gt_labels.view({3, 2}).equal(torch::tensor({{4L, 0L}, {3L, 5L}, {0L, 0L}})));
  EXPECT_ALL_CLOSE(p.gt_bboxes[1][0], torch::tensor({50.f, 25.f, 150.f, 75.f}), 0, 0);
  EXPECT_ALL_CLOSE(p.gt_bboxes[1][1], torch::tensor({0.f, 0.f, 200.f, 100.f}), 0, 0);
  EXPECT_TRUE(p.mask_gt.view({3, 2}).equal(torch::tensor({{true, false}, {true, true}, {false, false}})));
  EXPECT_THROW(
      loss::preprocess_targets(torch::tensor({3L}), torch::tensor({0L}), torch::rand({1, 4}), 3, 64, 64, torch::kCPU),
      std::runtime_error);
}

TEST(DetectionLoss, RejectsWrongChannelCount) {
  loss::DetectionLoss crit(3, {8});
  std::vector<at::Tensor> f{torch::zeros({1, 64 + 4, 4, 4})};
  EXPECT_THROW(crit(f, torch::zeros({0}, torch::kLong), torch::zeros({0}, torch::kLong), torch::zeros({0, 4})),
               std::runtime_error);
}

TEST_F(LossCaseFixture, DenseAndForegroundOnlyPathsAgree) {
  for (const std::string c : {"A", "C"}) {
    loss::DetectionLoss sparse(80), dense(80);
    sparse.set_dense(false);
    dense.set_dense(true);
    auto fs = leaf_feats(), fd = leaf_feats();
    auto os = sparse(fs, t("case" + c + "_batch_idx"), t("case" + c + "_cls"), t("case" + c + "_bboxes"));
    auto od = dense(fd, t("case" + c + "_batch_idx"), t("case" + c + "_cls"), t("case" + c + "_bboxes"));
    EXPECT_ALL_CLOSE(od.loss_vec, t("case" + c + "_loss_vec"), 0, 1e-5) << c;
    EXPECT_ALL_CLOSE(os.loss_vec, od.loss_vec, 0, 1e-6) << c;
    os.total.backward();
    od.total.backward();
    for (int l = 0; l < 3; ++l) EXPECT_ALL_CLOSE(fs[l].grad(), fd[l].grad(), 1e-7, 1e-5) << c << " level " << l;
  }
}
