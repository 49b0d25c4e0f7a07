#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "golden.h"
#include "yolo11/model/modules.h"
#include "yolo11/model/yolo.h"

using namespace yolo11;
using namespace yolo11::model;

namespace {

/// Non-trivial BN statistics so that folding them is actually exercised.
void randomize_bn(torch::nn::Module& m, int64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (const auto& sub : m.modules())
    if (auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(sub.get())) {
      bn->running_mean.normal_(0, 0.1);
      bn->running_var.uniform_(0.5, 1.5);
      bn->weight.uniform_(0.8, 1.2);
      bn->bias.normal_(0, 0.05);
    }
}

}  // namespace

TEST(Conv, ShapesPaddingAndBatchNormSettings) {
  Conv c(ConvOptions{8, 16, 3, 2});
  EXPECT_EQ(c->forward(torch::rand({2, 8, 15, 20})).sizes(), (torch::IntArrayRef{2, 16, 8, 10}));
  EXPECT_DOUBLE_EQ(c->bn->options.eps(), 1e-3);
  EXPECT_DOUBLE_EQ(c->bn->options.momentum().value(), 0.03);
  EXPECT_FALSE(c->conv->options.bias());
  auto dw = DWConv(12, 12, 3);
  EXPECT_EQ(dw->conv->weight.sizes(), (torch::IntArrayRef{12, 1, 3, 3}));
}

TEST(Conv, FuseFoldsBatchNormWithin1e5AndRemovesBnFromTheStateDict) {
  Conv c(ConvOptions{8, 16, 3, 1, 1, true});
  randomize_bn(*c, 1);
  c->eval();
  const auto x = torch::rand({2, 8, 9, 9});
  torch::NoGradGuard no_grad;
  const auto ref = c->forward(x);
  c->fuse();
  EXPECT_TRUE(c->fused());
  EXPECT_ALL_CLOSE(c->forward(x), ref, 1e-5, 1e-5);
  const auto sd = state_dict(*c);
  ASSERT_EQ(sd.size(), 2u);
  EXPECT_EQ(sd[0].first, "conv.weight");
  EXPECT_EQ(sd[1].first, "conv.bias");
  c->fuse();  // idempotent
  EXPECT_ALL_CLOSE(c->forward(x), ref, 1e-5, 1e-5);
}

TEST(YOLOFuse, FusedEvalOutputEqualsUnfusedWithin1e4OnGoldenWeights) {
  torch::NoGradGuard no_grad;
  const auto f = test::load_golden("yolo11n_forward.safetensors");
  YOLO m(ModelOptions{});
  ASSERT_TRUE(transfer_weights(*m, f.tensors, f.path).complete());
  m->eval();
  const auto x = f.at("images");
  const auto feats = m->forward_feats(x);
  const auto out = m->decode(feats);
  const auto params_before = m->num_params();
  m->fuse();
  EXPECT_TRUE(m->is_fused());
  const auto ffeats = m->forward_feats(x);
  for (size_t l = 0; l < feats.size(); ++l) EXPECT_ALL_CLOSE(ffeats[l], feats[l], 1e-4, 1e-4);
  const auto fout = m->decode(ffeats);
  EXPECT_ALL_CLOSE(fout.slice(1, 4), out.slice(1, 4), 1e-4, 0);             // scores
  // Boxes in grid units (pixels / stride): the scale of the logits; in pixels the P5 level multiplies by 32.
  const auto stride = f.at("stride_tensor").t().unsqueeze(0);  // (1, 1, A)
  EXPECT_ALL_CLOSE(fout.slice(1, 0, 4) / stride, out.slice(1, 0, 4) / stride, 1e-4, 0);
  // Reference (Ultralytics fuse): BN γ, β go, a conv bias of c2 comes → params drop by the BN channel count.
  int64_t bn_channels = 0;
  for (const auto& [k, t] : f.tensors)
    if (k.size() > 10 && k.compare(k.size() - 10, 10, ".bn.weight") == 0 && k.rfind("model.", 0) == 0) bn_channels += t.numel();
  EXPECT_EQ(m->num_params(), params_before - bn_channels);
  EXPECT_EQ(m->num_layers(), 181 - 81);  // every BatchNorm leaf removed
  for (const auto& [k, t] : state_dict(*m)) EXPECT_EQ(k.find(".bn."), std::string::npos) << k;
}

TEST(Attention, MatchesAPerHeadLoopImplementation) {
  torch::manual_seed(0);
  Attention a(AttentionOptions{128, 2, 0.5});
  randomize_bn(*a, 2);
  a->eval();
  EXPECT_EQ(a->key_dim(), 32);
  EXPECT_EQ(a->head_dim(), 64);
  EXPECT_EQ(a->qkv->conv->weight.size(0), 128 + 2 * 32 * 2);
  const auto x = torch::randn({2, 128, 3, 5});
  torch::NoGradGuard no_grad;
  const auto got = a->forward(x);
  // Straightforward per-sample, per-head version of the reference formula.
  const auto qkv = a->qkv->forward(x);  // (B, h*(2kd+hd), H, W), head-major
  const int64_t N = 15, kd = 32, hd = 64;
  auto out = torch::zeros({2, 128, N});
  auto vfull = torch::zeros({2, 128, N});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h) {
      const auto blk = qkv[b].reshape({2, 2 * kd + hd, N})[h];
      const auto q = blk.slice(0, 0, kd), k = blk.slice(0, kd, 2 * kd), v = blk.slice(0, 2 * kd);
      const auto w = torch::softmax(torch::mm(q.t(), k) / std::sqrt(static_cast<double>(kd)), 1);  // (Nq, Nk)
      out[b].slice(0, h * hd, (h + 1) * hd) = torch::mm(v, w.t());
      vfull[b].slice(0, h * hd, (h + 1) * hd) = v;
    }
  const auto ref = a->proj->forward(out.view({2, 128, 3, 5}) + a->pe->forward(vfull.view({2, 128, 3, 5})));
  EXPECT_ALL_CLOSE(got, ref, 1e-5, 1e-5);
}

TEST(Blocks, C3k2AndC2PSAShapesAndHiddenWidths) {
  C3k2 a(C3k2Options{32, 64, 1, false, 0.25});
  EXPECT_EQ(a->hidden(), 16);
  EXPECT_EQ(a->forward(torch::rand({1, 32, 8, 8})).sizes(), (torch::IntArrayRef{1, 64, 8, 8}));
  C3k2 b(C3k2Options{64, 64, 2, true});
  EXPECT_EQ(b->cv2->conv->weight.size(1), 4 * 32);  // (2 + n)·c
  EXPECT_EQ(b->forward(torch::rand({1, 64, 4, 4})).sizes(), (torch::IntArrayRef{1, 64, 4, 4}));
  C2PSA p(C2PSAOptions{256, 256, 1});
  EXPECT_EQ(p->hidden(), 128);
  EXPECT_EQ(p->forward(torch::rand({1, 256, 2, 3})).sizes(), (torch::IntArrayRef{1, 256, 2, 3}));
  EXPECT_THROW(C2PSA(C2PSAOptions{256, 128, 1}), std::invalid_argument);
  SPPF s(SPPFOptions{64, 64, 5});
  EXPECT_EQ(s->forward(torch::rand({1, 64, 5, 7})).sizes(), (torch::IntArrayRef{1, 64, 5, 7}));
  Upsample u(2);
  const auto x = torch::arange(4, torch::kFloat).view({1, 1, 2, 2});
  EXPECT_TRUE(torch::equal(u->forward(x)[0][0][1], torch::tensor({0.f, 0.f, 1.f, 1.f})));
}

TEST(Detect, AnchorsMatchGoldenAnchorPointsAndStrides) {
  const auto f = test::load_golden("yolo11n_forward.safetensors");
  const auto [pts, str] = make_anchors({{16, 20}, {8, 10}, {4, 5}}, {8, 16, 32}, torch::kCPU);
  EXPECT_TRUE(torch::equal(pts, f.at("anchor_points")));
  EXPECT_TRUE(torch::equal(str, f.at("stride_tensor")));
}

TEST(Detect, DecodeOfAConstantDistributionGivesCentredBoxes) {
  // All-equal box logits → each side's expectation is 7.5 bins → 15 × 15 grid-unit box centred on the anchor.
  Detect d(DetectOptions{2, {8, 8, 8}, {8, 16, 32}, 16});
  std::vector<torch::Tensor> feats = {torch::zeros({1, 66, 2, 2}), torch::zeros({1, 66, 1, 1}),
                                      torch::zeros({1, 66, 1, 1})};
  const auto out = d->decode(feats);
  ASSERT_EQ(out.sizes(), (torch::IntArrayRef{1, 6, 6}));
  EXPECT_FLOAT_EQ(out[0][0][1].item<float>(), 1.5f * 8);  // cx of cell (1, 0) at stride 8
  EXPECT_FLOAT_EQ(out[0][2][1].item<float>(), 15.f * 8);  // w
  EXPECT_FLOAT_EQ(out[0][3][5].item<float>(), 15.f * 32);
  EXPECT_FLOAT_EQ(out[0][4][0].item<float>(), 0.5f);  // sigmoid(0)
  EXPECT_THROW(d->decode({feats[0]}), std::invalid_argument);
}
