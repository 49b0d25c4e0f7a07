#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <fstream>

#include "golden.h"
#include "yolo11/model/yolo.h"

using namespace yolo11;

namespace {

nlohmann::json load_json(const std::string& name) {
  std::ifstream f(test::golden_path(name));
  return nlohmann::json::parse(f);
}

void check_keys(const std::string& scale) {
  const auto ref = load_json("model_keys_yolo11" + scale + ".json");
  model::YOLO m(model::ModelOptions{"configs/models/yolo11.yaml", scale, 80, true});
  const auto sd = model::state_dict(*m);
  const auto& ref_sd = ref["state_dict"];
  ASSERT_EQ(sd.size(), ref_sd.size()) << "state_dict entries, scale " << scale;
  ASSERT_EQ(static_cast<int64_t>(sd.size()), ref["num_state_dict_entries"].get<int64_t>());
  for (size_t i = 0; i < sd.size(); ++i) {
    ASSERT_EQ(sd[i].first, ref_sd[i][0].get<std::string>()) << "entry " << i << " scale " << scale;
    const auto shape = ref_sd[i][1].get<std::vector<int64_t>>();
    ASSERT_EQ(sd[i].second.sizes().vec(), shape) << sd[i].first;
    const bool is_count = sd[i].first.size() > 19 &&
                          sd[i].first.compare(sd[i].first.size() - 19, 19, "num_batches_tracked") == 0;
    EXPECT_EQ(sd[i].second.scalar_type(), is_count ? torch::kLong : torch::kFloat) << sd[i].first;
  }
  EXPECT_EQ(m->num_params(), ref["num_params"].get<int64_t>());
  EXPECT_EQ(m->num_gradients(), ref["num_trainable_params"].get<int64_t>());
  const auto& layers = ref["layers"];
  ASSERT_EQ(m->layers().size(), layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(m->layers()[i].params, layers[i]["params"].get<int64_t>()) << "layer " << i;
    if (layers[i].contains("out_channels")) {
      EXPECT_EQ(m->layers()[i].c2, layers[i]["out_channels"].get<int64_t>()) << "layer " << i;
    }
  }
}

}  // namespace

TEST(YOLO, StateDictKeysShapesOrderAndCountsMatchReferenceN) { check_keys("n"); }
TEST(YOLO, StateDictKeysShapesOrderAndCountsMatchReferenceS) { check_keys("s"); }
TEST(YOLO, StateDictKeysShapesOrderAndCountsMatchReferenceM) { check_keys("m"); }
TEST(YOLO, StateDictKeysShapesOrderAndCountsMatchReferenceL) { check_keys("l"); }
TEST(YOLO, StateDictKeysShapesOrderAndCountsMatchReferenceX) { check_keys("x"); }

TEST(YOLO, SummaryMatchesReferenceLayersParamsAndGflopsWithinTwoPercent) {
  struct Ref {
    const char* scale;
    int64_t layers;
    double gflops;
  };
  for (const Ref& r : {Ref{"n", 181, 6.6}, Ref{"s", 181, 21.7}, Ref{"m", 231, 68.5}, Ref{"l", 357, 87.6},
                       Ref{"x", 357, 196.0}}) {
    model::YOLO m(model::ModelOptions{"configs/models/yolo11.yaml", r.scale, 80, true});
    EXPECT_EQ(m->num_layers(), r.layers) << r.scale;
    EXPECT_NEAR(m->gflops(640), r.gflops, 0.02 * r.gflops) << r.scale;
  }
  model::YOLO n(model::ModelOptions{});
  EXPECT_EQ(n->summary(640), "YOLO11n summary: 181 layers, 2,624,080 parameters, 2,624,064 gradients, 6.6 GFLOPs");
}

TEST(YOLO, NcOverrideChangesOnlyTheClassBranchAndStridesComeFromTheGraph) {
  model::YOLO m(model::ModelOptions{"configs/models/yolo11.yaml", "n", 3, true});
  EXPECT_EQ(m->nc(), 3);
  EXPECT_EQ(m->reg_max(), 16);
  EXPECT_EQ(m->strides(), (std::vector<int64_t>{8, 16, 32}));
  const auto sd = model::state_dict(*m);
  for (const auto& [k, t] : sd) {
    if (k == "model.23.cv3.0.2.weight") {
      EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{3, 64, 1, 1}));
    }
  }
  EXPECT_EQ(m->detect()->c3(), 64);  // c3 = max(ch0, min(nc, 100)) = max(64, 3)
  EXPECT_EQ(m->detect()->c2(), 64);  // c2 = max(16, ch0 / 4, 4 * reg_max)
}

TEST(YOLO, DflWeightIsFrozenAndBiasInitFollowsReference) {
  model::YOLO m(model::ModelOptions{});
  for (const auto& [k, t] : model::state_dict(*m)) {
    if (k == "model.23.dfl.conv.weight") {
      EXPECT_FALSE(t.requires_grad());
      EXPECT_TRUE(torch::equal(t.flatten(), torch::arange(16, torch::kFloat)));
    }
    if (k == "model.23.cv2.1.2.bias") {
      EXPECT_TRUE(torch::allclose(t, torch::ones_like(t)));
    }
    if (k == "model.23.cv3.2.2.bias") {
      const double ref = std::log(5.0 / 80.0 / std::pow(640.0 / 32.0, 2));
      EXPECT_NEAR(t[0].item<double>(), ref, 1e-6);
    }
  }
}

TEST(YOLO, UnknownScaleOrMissingYamlIsAClearError) {
  try {
    model::YOLO m(model::ModelOptions{"configs/models/yolo11.yaml", "q", 80, true});
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("scale 'q' not defined (available: n, s, m, l, x)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(model::YOLO(model::ModelOptions{"/nonexistent/nope.yaml", "n", 80, true}), std::runtime_error);
  // A bare file name resolves to the repository's configs/models/ copy.
  EXPECT_NO_THROW(model::YOLO(model::ModelOptions{"yolo11.yaml", "n", 80, true}));
}

// ---- forward goldens ------------------------------------------------------------------------------------------
namespace {

struct Tol {
  double atol, rtol;
};
constexpr Tol kLayer{3e-4, 1e-4}, kEvalFeat{5e-4, 1e-4}, kBoxes{1e-2, 1e-4}, kScores{1e-4, 0}, kTrainFeat{3e-3, 1e-4},
    kTrainBn{1e-4, 1e-4};

model::YOLO load_model(const std::string& scale, int64_t nc, bool sppf_act, const io::TensorFile& f) {
  model::YOLO m(model::ModelOptions{"configs/models/yolo11.yaml", scale, nc, sppf_act});
  const auto r = model::transfer_weights(*m, f.tensors, f.path);
  EXPECT_TRUE(r.complete()) << r.str();
  EXPECT_EQ(r.transferred, r.total);
  return m;
}

void expect_eval_out(const torch::Tensor& got, const torch::Tensor& ref) {
  EXPECT_ALL_CLOSE(got.slice(1, 0, 4), ref.slice(1, 0, 4), kBoxes.atol, kBoxes.rtol);
  EXPECT_ALL_CLOSE(got.slice(1, 4), ref.slice(1, 4), kScores.atol, kScores.rtol);
}

/// Checks eval and train outputs of the model built from `main`'s weights against `ref` (main or *_sppf_silu).
void check_forward(const std::string& scale, int64_t nc, bool sppf_act, const io::TensorFile& main,
                   const io::TensorFile& ref, bool check_bn) {
  torch::NoGradGuard no_grad;
  const auto images = main.at("images");
  auto m = load_model(scale, nc, sppf_act, main);
  m->eval();
  const auto feats = m->forward_feats(images);
  ASSERT_EQ(feats.size(), 3u);
  for (int l = 0; l < 3; ++l) {
    SCOPED_TRACE("eval_feat" + std::to_string(l));
    EXPECT_ALL_CLOSE(feats[l], ref.at("eval_feat" + std::to_string(l)), kEvalFeat.atol, kEvalFeat.rtol);
  }
  expect_eval_out(m->decode(feats), ref.at("eval_out"));
  expect_eval_out(m->forward(images), ref.at("eval_out"));

  auto t = load_model(scale, nc, sppf_act, main);
  t->train();
  const auto tfeats = t->forward_feats(images);
  for (int l = 0; l < 3; ++l) {
    SCOPED_TRACE("train_feat" + std::to_string(l));
    EXPECT_ALL_CLOSE(tfeats[l], ref.at("train_feat" + std::to_string(l)), kTrainFeat.atol, kTrainFeat.rtol);
  }
  if (!check_bn) return;
  int64_t checked = 0;
  for (const auto& [k, v] : model::state_dict(*t)) {
    if (k.find(".bn.") == std::string::npos || k.find(".bn.weight") != std::string::npos ||
        k.find(".bn.bias") != std::string::npos)
      continue;
    SCOPED_TRACE(k);
    const auto& r = main.at("trainbn." + k);
    if (v.scalar_type() == torch::kLong) {
      EXPECT_EQ(v.item<int64_t>(), r.item<int64_t>());
    } else {
      EXPECT_ALL_CLOSE(v, r, kTrainBn.atol, kTrainBn.rtol);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3 * 81) << "BN buffers compared";  // 81 BatchNorms in n and s
}

}  // namespace

TEST(YOLO, Yolo11nEvalLayersMatchGolden) {
  torch::NoGradGuard no_grad;
  const auto main = test::load_golden("yolo11n_forward.safetensors");
  const auto silu = test::load_golden("yolo11n_forward_sppf_silu.safetensors");
  // 8.4.50 graph (SPPF.cv1 without activation): every stored layer.
  auto m = load_model("n", 80, /*sppf_act=*/false, main);
  m->eval();
  const std::vector<int64_t> idx{4, 6, 9, 10, 13, 16, 19, 22};
  auto outs = m->forward_layers(main.at("images"), idx);
  for (size_t i = 0; i < idx.size(); ++i) {
    SCOPED_TRACE("eval_layer" + std::to_string(idx[i]));
    EXPECT_ALL_CLOSE(outs[i], main.at("eval_layer" + std::to_string(idx[i])), kLayer.atol, kLayer.rtol);
  }
  // Released graph (SiLU): layers before SPPF from the main file, after it from the silu file.
  auto r = load_model("n", 80, /*sppf_act=*/true, main);
  r->eval();
  outs = r->forward_layers(main.at("images"), {4, 6, 9, 10, 22});
  EXPECT_ALL_CLOSE(outs[0], main.at("eval_layer4"), kLayer.atol, kLayer.rtol);
  EXPECT_ALL_CLOSE(outs[1], main.at("eval_layer6"), kLayer.atol, kLayer.rtol);
  EXPECT_ALL_CLOSE(outs[2], silu.at("eval_layer9"), kLayer.atol, kLayer.rtol);
  EXPECT_ALL_CLOSE(outs[3], silu.at("eval_layer10"), kLayer.atol, kLayer.rtol);
  EXPECT_ALL_CLOSE(outs[4], silu.at("eval_layer22"), kLayer.atol, kLayer.rtol);
}

TEST(YOLO, Yolo11nForwardMatchesGolden8450Graph) {
  const auto main = test::load_golden("yolo11n_forward.safetensors");
  check_forward("n", 80, false, main, main, /*check_bn=*/true);
}

TEST(YOLO, Yolo11nForwardMatchesGoldenReleasedGraph) {
  const auto main = test::load_golden("yolo11n_forward.safetensors");
  const auto silu = test::load_golden("yolo11n_forward_sppf_silu.safetensors");
  check_forward("n", 80, true, main, silu, /*check_bn=*/false);
}

TEST(YOLO, Yolo11sNc3ForwardFromF16WeightsMatchesGolden8450Graph) {
  const auto main = test::load_golden("yolo11s_nc3_forward.safetensors");
  ASSERT_EQ(main.at("model.0.conv.weight").scalar_type(), torch::kHalf);
  check_forward("s", 3, false, main, main, /*check_bn=*/true);
}

TEST(YOLO, Yolo11sNc3ForwardFromF16WeightsMatchesGoldenReleasedGraph) {
  const auto main = test::load_golden("yolo11s_nc3_forward.safetensors");
  const auto silu = test::load_golden("yolo11s_nc3_forward_sppf_silu.safetensors");
  check_forward("s", 3, true, main, silu, /*check_bn=*/false);
}

TEST(YOLO, ChannelsLastGivesTheSameOutputs) {
  torch::NoGradGuard no_grad;
  const auto f = test::load_golden("yolo11n_forward.safetensors");
  auto m = load_model("n", 80, true, f);
  m->eval();
  const auto ref = m->forward_feats(f.at("images"));
  model::to_channels_last(*m);
  EXPECT_TRUE(model::state_dict(*m)[0].second.is_contiguous(torch::MemoryFormat::ChannelsLast));
  const auto got = m->forward_feats(f.at("images").contiguous(torch::MemoryFormat::ChannelsLast));
  for (size_t l = 0; l < got.size(); ++l) EXPECT_ALL_CLOSE(got[l], ref[l], 1e-4, 1e-4);
}

TEST(YOLO, InputNotAMultipleOfTheMaxStrideIsAClearError) {
  model::YOLO m(model::ModelOptions{});
  try {
    m->forward_feats(torch::rand({1, 3, 96, 100}));
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(m->forward_feats(torch::rand({1, 1, 64, 64})), std::invalid_argument);
}

TEST(YOLO, ModelNameWithScaleLetterSelectsTheScaleLikeUltralytics) {
  EXPECT_EQ(model::guess_model_scale("yolo11n.yaml").value_or(""), "n");
  EXPECT_EQ(model::guess_model_scale("configs/models/yolo11x.yaml").value_or(""), "x");
  EXPECT_EQ(model::guess_model_scale("yolo11m.safetensors").value_or(""), "m");
  EXPECT_FALSE(model::guess_model_scale("yolo11.yaml").has_value());
  model::YOLO m(model::ModelOptions{"yolo11s.yaml", "n", 80, true});
  EXPECT_EQ(m->options().scale, "s");
  EXPECT_EQ(m->num_params(), 9458752);
  const std::string table = m->table();
  EXPECT_NE(table.find("C3k2"), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 25) << table;  // header + 24 layers
}
