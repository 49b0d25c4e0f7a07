// The recipe pieces on the real YOLO11n model (model area): parameter groups from the module tree match the
// golden counts, the EMA runs over the full state_dict, and a checkpoint of it loads back into a fresh model.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "golden.h"
#include "yolo11/build_info.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11/engine/ema.h"
#include "yolo11/engine/optimizer.h"
#include "yolo11/model/weights.h"
#include "yolo11/model/yolo.h"

using namespace yolo11;

namespace {
model::YOLO make_yolo11n() {
  model::ModelOptions o;
  o.yaml = std::string(build::kSourceDir) + "/configs/models/yolo11.yaml";
  o.scale = "n";
  o.nc = 80;
  return model::YOLO(o);
}
}  // namespace

TEST(RecipeWithModel, ParamGroupsOfYolo11nMatchGolden) {
  auto m = make_yolo11n();
  const auto g = engine::build_param_groups(*m);
  EXPECT_EQ(g.weights.size(), 88u);
  EXPECT_EQ(g.norm.size(), 81u);
  EXPECT_EQ(g.bias.size(), 87u);
  // The name rule gives the same split.
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& p : m->named_parameters()) named.emplace_back(p.key(), p.value());
  const auto g2 = engine::build_param_groups(named);
  EXPECT_EQ(g2.weight_names, g.weight_names);
  EXPECT_EQ(g2.norm_names, g.norm_names);
  EXPECT_EQ(g2.bias_names, g.bias_names);
}

TEST(RecipeWithModel, EmaAndCheckpointOverTheFullStateDict) {
  auto m = make_yolo11n();
  const auto sd = model::state_dict(*m);
  ASSERT_EQ(sd.size(), 499u);
  engine::ModelEMA ema(sd);
  {
    torch::NoGradGuard ng;
    for (auto& p : m->parameters())
      if (p.requires_grad()) p.add_(0.01);
  }
  ema.update(model::state_dict(*m));
  EXPECT_EQ(ema.updates(), 1);
  const auto dir = test::scratch_dir("recipe_with_model");
  engine::Checkpoint c;
  c.epoch = 0;
  c.model = model::state_dict(*m);
  c.ema = ema.state();
  c.ema_updates = ema.updates();
  ASSERT_TRUE(engine::save_checkpoint(dir, c, false, false));
  auto back = engine::load_checkpoint(dir);
  ASSERT_TRUE(back.has_value());
  auto fresh = make_yolo11n();
  EXPECT_TRUE(model::transfer_weights(*fresh, back->ema).complete());
  const auto fsd = model::state_dict(*fresh);
  for (size_t i = 0; i < fsd.size(); ++i) {
    ASSERT_EQ(fsd[i].first, ema.state()[i].first);
    EXPECT_TRUE(torch::equal(fsd[i].second, ema.state()[i].second)) << fsd[i].first;
  }
}
