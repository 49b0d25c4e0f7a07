// Parameter groups and optimizer choice against golden schedule_cases.json (param_groups_initial).
#include "yolo11/engine/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "recipe_fixtures.h"

using namespace yolo11;

namespace {

int64_t numel(const std::vector<torch::Tensor>& v, bool requires_grad_only = false) {
  int64_t n = 0;
  for (const auto& t : v)
    if (!requires_grad_only || t.requires_grad()) n += t.numel();
  return n;
}

config::TrainConfig cfg_of(const nlohmann::json& in) {
  return config::TrainConfig::load(
      "", {"epochs=" + std::to_string(in.at("epochs").get<int64_t>()), "batch=" + std::to_string(in.at("batch").get<int64_t>()),
           "nbs=" + std::to_string(in.at("nbs").get<int64_t>()), "optimizer=" + in.at("optimizer_arg").get<std::string>(),
           "lr0=" + std::to_string(in.at("lr0").get<double>()), "lrf=" + std::to_string(in.at("lrf").get<double>())});
}

}  // namespace

TEST(ParamGroups, Yolo11nCountsMatchGolden) {
  const auto g = engine::build_param_groups(test::yolo11n_named_params());
  const auto j = test::load_golden_json("schedule_cases.json").at("spec_auto_128img").at("param_groups_initial");
  const std::vector<const std::vector<torch::Tensor>*> got = {&g.weights, &g.norm, &g.bias};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(static_cast<int64_t>(got[i]->size()), j[i].at("num_tensors").get<int64_t>()) << "group " << i;
    EXPECT_EQ(numel(*got[i]), j[i].at("num_elements").get<int64_t>()) << "group " << i;
    EXPECT_EQ(numel(*got[i], true), j[i].at("num_elements_requires_grad").get<int64_t>()) << "group " << i;
  }
  // The frozen DFL weight is in group 0.
  EXPECT_NE(std::find(g.weight_names.begin(), g.weight_names.end(), "model.23.dfl.conv.weight"), g.weight_names.end());
}

TEST(ParamGroups, ModuleTreeRuleFindsNormLayersByType) {
  torch::nn::Sequential m(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).bias(false)), torch::nn::BatchNorm2d(8),
                          torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 4, 1)), torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
  const auto g = engine::build_param_groups(*m);
  EXPECT_EQ(g.weight_names, (std::vector<std::string>{"0.weight", "2.weight"}));
  EXPECT_EQ(g.norm_names, (std::vector<std::string>{"1.weight", "3.weight"}));
  EXPECT_EQ(g.bias_names, (std::vector<std::string>{"1.bias", "2.bias", "3.bias"}));
}

TEST(BuildOptimizer, ScenariosMatchGoldenParamGroups) {
  const auto all = test::load_golden_json("schedule_cases.json");
  for (const std::string scen : {"spec_auto_128img", "sgd_128img", "sgd_1024img"}) {
    SCOPED_TRACE(scen);
    const auto& s = all.at(scen);
    const auto& in = s.at("inputs");
    const auto cfg = cfg_of(in);
    const int64_t acc = engine::initial_accumulate(cfg.nbs, cfg.batch);
    EXPECT_EQ(acc, s.at("accumulate_initial").get<int64_t>());
    const double wd = engine::scaled_weight_decay(cfg.weight_decay, cfg.batch, acc, cfg.nbs);
    EXPECT_DOUBLE_EQ(wd, s.at("weight_decay_scaled").get<double>());
    const int64_t iters = engine::auto_rule_iterations(in.at("n_images"), cfg.batch, cfg.nbs, cfg.epochs);
    EXPECT_EQ(iters, s.at("iterations_for_auto_rule").get<int64_t>());
    const auto g = engine::build_param_groups(test::yolo11n_named_params());
    auto choice = engine::build_optimizer(g, cfg, 80, iters, wd);
    EXPECT_EQ(choice.name, s.at("optimizer_chosen").get<std::string>());
    EXPECT_EQ(choice.warmup_bias_lr, s.at("warmup_bias_lr_effective").get<double>());
    const auto& pgs = choice.opt->param_groups();
    ASSERT_EQ(pgs.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const auto& ref = s.at("param_groups_initial")[i];
      EXPECT_EQ(pgs[i].options().get_lr(), ref.at("lr").get<double>()) << "group " << i;
      EXPECT_EQ(static_cast<int64_t>(pgs[i].params().size()), ref.at("num_tensors").get<int64_t>());
      if (choice.name == "SGD") {
        const auto& o = static_cast<const torch::optim::SGDOptions&>(pgs[i].options());
        EXPECT_EQ(o.weight_decay(), ref.at("weight_decay").get<double>());
        EXPECT_EQ(o.momentum(), ref.at("momentum").get<double>());
        EXPECT_EQ(o.nesterov(), ref.at("nesterov").get<bool>());
        EXPECT_EQ(o.dampening(), ref.at("dampening").get<double>());
      } else {
        const auto& o = static_cast<const torch::optim::AdamWOptions&>(pgs[i].options());
        EXPECT_EQ(o.weight_decay(), ref.at("weight_decay").get<double>());
        EXPECT_EQ(std::get<0>(o.betas()), ref.at("betas")[0].get<double>());
        EXPECT_EQ(std::get<1>(o.betas()), ref.at("betas")[1].get<double>());
        EXPECT_EQ(o.eps(), ref.at("eps").get<double>());
        EXPECT_EQ(o.amsgrad(), ref.at("amsgrad").get<bool>());
      }
    }
  }
}

TEST(BuildOptimizer, AutoForLongRunsIsSgdWithoutBiasWarmup) {
  const auto ex = test::load_golden_json("schedule_cases.json").at("auto_rule_long_run_example");
  const auto cfg = config::TrainConfig::load("", {});
  auto choice = engine::build_optimizer(engine::build_param_groups(test::yolo11n_named_params()), cfg, 80,
                                        ex.at("iterations").get<int64_t>(), 5e-4);
  EXPECT_EQ(choice.name, "SGD");  // the reference's MuSGD (not implemented) with the same lr / momentum
  EXPECT_EQ(choice.lr0, 0.01);
  EXPECT_EQ(choice.momentum, 0.9);
  EXPECT_EQ(choice.warmup_bias_lr, 0.0);
  EXPECT_NE(choice.why.find("10000"), std::string::npos);
  // nc changes the AdamW lr of short runs: shapes3 (nc 3) → 0.001429 as in the shapes3 README.
  auto short_run = engine::build_optimizer(engine::build_param_groups(test::yolo11n_named_params()), cfg, 3, 120, 5e-4);
  EXPECT_EQ(short_run.name, "AdamW");
  EXPECT_EQ(short_run.lr0, 0.001429);
}

TEST(BuildOptimizer, ExplicitAdamUsesMomentumAsBeta1) {
  const auto cfg = config::TrainConfig::load("", {"optimizer=Adam", "lr0=0.001"});
  auto choice = engine::build_optimizer(engine::build_param_groups(test::yolo11n_named_params()), cfg, 80, 20, 5e-4);
  EXPECT_EQ(choice.name, "Adam");
  const auto& o = static_cast<const torch::optim::AdamOptions&>(choice.opt->param_groups()[0].options());
  EXPECT_EQ(o.lr(), 0.001);
  EXPECT_EQ(std::get<0>(o.betas()), 0.937);
  EXPECT_EQ(o.weight_decay(), 5e-4);
  EXPECT_EQ(choice.warmup_bias_lr, 0.1);
}
