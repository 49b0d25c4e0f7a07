#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "golden.h"
#include "yolo11/io/file.h"
#include "yolo11/io/safetensors.h"
#include "yolo11/model/yolo.h"

using namespace yolo11;

namespace {

model::YOLO make(int64_t nc = 80, const std::string& scale = "n") {
  return model::YOLO(model::ModelOptions{"configs/models/yolo11.yaml", scale, nc, true});
}

/// Gives every state_dict entry a distinct, recognisable value (so a copy that went to the wrong key shows).
void scramble(model::YOLO& m, int64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& [k, t] : model::state_dict(*m)) {
    if (t.is_floating_point())
      t.copy_(torch::randn_like(t));
    else
      t.fill_(seed);
  }
}

}  // namespace

TEST(Weights, StateDictAliasesModuleStorageAndSkipsUndefinedBiases) {
  auto m = make();
  auto sd = model::state_dict(*m);
  ASSERT_EQ(sd.size(), 499u);
  for (const auto& [k, t] : sd) EXPECT_EQ(k.find("conv.bias"), std::string::npos) << k;  // bias=false convs
  torch::NoGradGuard no_grad;
  sd[0].second.fill_(0.25);
  EXPECT_EQ(m->model->ptr(0)->named_parameters()["conv.weight"].flatten()[0].item<float>(), 0.25f);
}

TEST(Weights, SaveThenLoadRoundTripGivesIdenticalTensors) {
  const auto dir = test::scratch_dir("model_weights_roundtrip");
  auto a = make();
  scramble(a, 7);
  model::save_weights(*a, dir + "/w.safetensors", {{"epoch", "3"}});
  const auto file = io::load_safetensors(dir + "/w.safetensors");
  EXPECT_EQ(file.metadata.at("epoch"), "3");
  EXPECT_EQ(file.metadata.at("format"), "pt");
  // Keys and order are the reference ones; floats are F32, num_batches_tracked I64 0-d.
  const auto sd = model::state_dict(*a);
  ASSERT_EQ(file.tensors.size(), sd.size());
  for (size_t i = 0; i < sd.size(); ++i) {
    EXPECT_EQ(file.tensors[i].first, sd[i].first);
    EXPECT_EQ(file.tensors[i].second.scalar_type(), sd[i].second.scalar_type());
  }

  auto b = make();
  const auto r = model::load_weights(*b, dir + "/w.safetensors");
  EXPECT_TRUE(r.complete()) << r.str();
  EXPECT_EQ(r.transferred, 499);
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_TRUE(r.unused.empty());
  const auto sb = model::state_dict(*b);
  for (size_t i = 0; i < sd.size(); ++i) EXPECT_TRUE(torch::equal(sd[i].second, sb[i].second)) << sd[i].first;
  EXPECT_FALSE(sb.back().second.requires_grad()) << "DFL stays frozen after loading";
}

TEST(Weights, OtherNcTransfersMatchingShapesAndReportsTheClassOutputs) {
  const auto dir = test::scratch_dir("model_weights_nc");
  auto src = make(80);
  scramble(src, 3);
  model::save_weights(*src, dir + "/coco.safetensors");
  auto dst = make(5);
  const auto before = model::state_dict(*dst);
  std::map<std::string, torch::Tensor> keep;
  for (const auto& [k, t] : before) keep[k] = t.clone();
  const auto r = model::load_weights(*dst, dir + "/coco.safetensors");
  EXPECT_EQ(r.total, 499);
  // nc 80 → 5 changes c3 (80 → 64) for the whole class branch: per level 2 DWConv-BN-blocks of width c3 ... all
  // cv3 entries except the first depthwise conv of each level (input width, unchanged).
  EXPECT_LT(r.transferred, 499);
  EXPECT_GT(r.transferred, 400);
  for (const auto& s : r.skipped) EXPECT_EQ(s.rfind("model.23.cv3.", 0), 0u) << s;
  const auto msg = r.str();
  EXPECT_NE(msg.find("Transferred " + std::to_string(r.transferred) + "/499 items"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.23.cv3.* (shape mismatch)"), std::string::npos) << msg;
  // Skipped tensors keep their initialisation; transferred ones carry the source values.
  const auto src_sd = model::state_dict(*src);
  std::map<std::string, torch::Tensor> src_map(src_sd.begin(), src_sd.end());
  for (const auto& [k, t] : model::state_dict(*dst)) {
    const bool skipped = std::any_of(r.skipped.begin(), r.skipped.end(),
                                     [&](const std::string& s) { return s.rfind(k + " ", 0) == 0; });
    if (skipped)
      EXPECT_TRUE(torch::equal(t, keep[k])) << k;
    else
      EXPECT_TRUE(torch::equal(t, src_map[k])) << k;
  }
}

TEST(Weights, MissingKeysAndExtraKeysAreReportedNotThrown) {
  auto src = make();
  auto sd = model::state_dict(*src);
  std::vector<std::pair<std::string, at::Tensor>> partial(sd.begin() + 6, sd.end());  // drop model.0.*
  partial.emplace_back("not.a.model.key", torch::zeros({2}));
  auto dst = make();
  const auto r = model::transfer_weights(*dst, partial, "partial");
  EXPECT_EQ(r.transferred, 493);
  ASSERT_EQ(r.skipped.size(), 6u);
  EXPECT_EQ(r.skipped[0], "model.0.conv.weight (missing in source)");
  ASSERT_EQ(r.unused.size(), 1u);
  EXPECT_EQ(r.unused[0], "not.a.model.key");
  EXPECT_NE(r.str().find("model.0.conv (missing)"), std::string::npos) << r.str();
  EXPECT_NE(r.str().find("1 source tensors unused"), std::string::npos) << r.str();
}

TEST(Weights, HalfPrecisionFileIsConvertedToParameterDtype) {
  const auto dir = test::scratch_dir("model_weights_f16");
  auto src = make();
  scramble(src, 11);
  std::vector<std::pair<std::string, at::Tensor>> half;
  for (const auto& [k, t] : model::state_dict(*src))
    half.emplace_back(k, t.is_floating_point() ? t.to(torch::kHalf) : t);
  io::save_safetensors(dir + "/h.safetensors", half);
  auto dst = make();
  const auto r = model::load_weights(*dst, dir + "/h.safetensors");
  EXPECT_TRUE(r.complete()) << r.str();
  const auto got = model::state_dict(*dst);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].second.scalar_type(), half[i].second.is_floating_point() ? torch::kFloat : torch::kLong);
    EXPECT_TRUE(torch::equal(got[i].second, half[i].second.to(got[i].second.scalar_type()))) << got[i].first;
  }
}

TEST(Weights, TruncatedOrMissingFileIsAClearErrorNamingIt) {
  const auto dir = test::scratch_dir("model_weights_bad");
  auto m = make();
  model::save_weights(*m, dir + "/ok.safetensors");
  const auto bytes = io::read_file(dir + "/ok.safetensors");
  io::write_file_atomic(dir + "/cut.safetensors", std::string_view(bytes).substr(0, bytes.size() / 2));
  io::write_file_atomic(dir + "/empty.safetensors", "");
  for (const char* name : {"cut.safetensors", "empty.safetensors", "absent.safetensors"}) {
    const std::string path = dir + "/" + name;
    try {
      model::load_weights(*m, path);
      ADD_FAILURE() << "no throw for " << name;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

// Issue 16 item 10: weights of another scale report parameters and buffers apart (BatchNorm step counters are not
// "transferred weights") and say the source looks like another scale.
TEST(Weights, AnotherScaleCountsParametersAndBuffersApartAndSaysSo) {
  const auto dir = test::scratch_dir("model_weights_scale");
  auto s = make(80, "s");
  model::save_weights(*s, dir + "/yolo11s.safetensors");
  auto n = make(80, "n");
  const auto r = model::load_weights(*n, dir + "/yolo11s.safetensors");
  EXPECT_EQ(r.total, 499);
  EXPECT_EQ(r.params_total + r.buffers_total, r.total);
  EXPECT_EQ(r.params_transferred + r.buffers_transferred, r.transferred);
  int64_t params = 0;
  for (const auto& p : n->named_parameters()) params += p.value().defined();
  EXPECT_EQ(r.params_total, params);
  // n and s differ in width only: the BatchNorm step counters (shape []) always "fit", the weights mostly do not.
  EXPECT_GE(r.buffers_transferred, 80);
  EXPECT_LT(r.params_transferred, r.params_total / 4);
  const std::string msg = r.str();
  EXPECT_NE(msg.find("(parameters " + std::to_string(r.params_transferred) + "/" + std::to_string(r.params_total)),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("the source looks like another model scale: its first conv has 32 output channels, this "
                     "model's 16"),
            std::string::npos)
      << msg;
  // Same scale, other nc: no scale note, a class-count note instead.
  auto n5 = make(5, "n");
  const auto r5 = model::transfer_weights(*n5, model::state_dict(*n), "n80");
  EXPECT_EQ(r5.str().find("another model scale"), std::string::npos) << r5.str();
  EXPECT_NE(r5.str().find("class count differs (80 in the source, 5 here)"), std::string::npos) << r5.str();
}
