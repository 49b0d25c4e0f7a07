// Parameter groups and optimizer choice against golden schedule_cases.json (param_groups_initial).
#include "yolo11/engine/optimizer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <sstream>

#include "recipe_fixtures.h"
#include "yolo11/engine/multi_tensor_optim.h"

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

// ---- multi-tensor steps (engine/multi_tensor_optim.h): bitwise LibTorch's per-parameter steps on the CPU ----------
namespace {

// Parameters of several shapes (a channels_last conv weight among them), in three groups as the trainer's.
struct ToyParams {
  std::vector<torch::Tensor> all;
  std::vector<torch::optim::OptimizerParamGroup> groups(bool sgd) const {
    auto opts = [&](double decay) -> std::unique_ptr<torch::optim::OptimizerOptions> {
      if (sgd) return std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(0.01).momentum(0.9).nesterov(true).weight_decay(decay));
      return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(0.002).betas({0.9, 0.999}).weight_decay(decay));
    };
    std::vector<torch::optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<torch::Tensor>{all[0], all[1]}, opts(0.0005));
    g.emplace_back(std::vector<torch::Tensor>{all[2]}, opts(0.0));
    g.emplace_back(std::vector<torch::Tensor>{all[3], all[4]}, opts(0.0));
    return g;
  }
};

ToyParams toy_params(uint64_t seed) {
  torch::manual_seed(seed);
  ToyParams t;
  t.all = {torch::randn({16, 8, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast), torch::randn({32, 16}),
           torch::rand({16}) + 0.5, torch::randn({16}), torch::randn({7})};
  for (auto& p : t.all) p.requires_grad_(true);
  return t;
}

// Sets the same gradients on both parameter lists (seeded per step); parameter 4 gets none on step 2.
void set_grads(ToyParams& a, ToyParams& b, int step, double scale = 1.0) {
  torch::manual_seed(1000 + step);
  for (size_t i = 0; i < a.all.size(); ++i) {
    if (i == 4 && step == 2) {
      a.all[i].mutable_grad() = torch::Tensor();
      b.all[i].mutable_grad() = torch::Tensor();
      continue;
    }
    const auto g = torch::randn(a.all[i].sizes()) * scale;
    a.all[i].mutable_grad() = g.clone().contiguous(a.all[i].suggest_memory_format());
    b.all[i].mutable_grad() = g.clone().contiguous(b.all[i].suggest_memory_format());
  }
}

void expect_bitwise(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << what << " " << i;
}

const torch::optim::AdamWParamState& adamw_state(torch::optim::Optimizer& o, const torch::Tensor& p) {
#if TORCH_VERSION_MAJOR >= 2
  const auto key = p.unsafeGetTensorImpl();
#else
  const auto key = c10::guts::to_string(p.unsafeGetTensorImpl());
#endif
  return static_cast<const torch::optim::AdamWParamState&>(*o.state().at(key));
}

}  // namespace

TEST(MultiTensorOptim, AdamWStepsAreBitwiseLibTorchsAdamW) {
  ToyParams ref = toy_params(3), ours = toy_params(3);
  torch::optim::AdamW a(ref.groups(false));
  engine::MultiTensorAdamW b(ours.groups(false));
  for (int step = 0; step < 5; ++step) {
    set_grads(ref, ours, step);
    a.step();
    b.step();
    expect_bitwise(ref.all, ours.all, "step " + std::to_string(step) + " param");
  }
  // The same state, under the same keys: exp_avg, exp_avg_sq and per-parameter step counts (parameter 4: 4 steps).
  for (size_t i = 0; i < ref.all.size(); ++i) {
    const auto& sa = adamw_state(a, ref.all[i]);
    const auto& sb = adamw_state(b, ours.all[i]);
    EXPECT_EQ(sa.step(), sb.step()) << i;
    EXPECT_EQ(sb.step(), i == 4 ? 4 : 5) << i;
    EXPECT_TRUE(torch::equal(sa.exp_avg(), sb.exp_avg())) << i;
    EXPECT_TRUE(torch::equal(sa.exp_avg_sq(), sb.exp_avg_sq())) << i;
  }
  // LibTorch's own save/load reads our state: a copy loaded from it continues bitwise.
  std::ostringstream buf;
  {
    torch::serialize::OutputArchive ar;
    b.save(ar);
    ar.save_to(buf);
  }
  ToyParams copy = toy_params(3);
  for (size_t i = 0; i < copy.all.size(); ++i) copy.all[i].detach().copy_(ours.all[i].detach());
  torch::optim::AdamW c(copy.groups(false));
  {
    std::istringstream in(buf.str());
    torch::serialize::InputArchive ar;
    ar.load_from(in);
    c.load(ar);
  }
  set_grads(ours, copy, 7);
  b.step();
  c.step();
  expect_bitwise(ours.all, copy.all, "after load, param");
}

TEST(MultiTensorOptim, AmsgradIsAClearError) {
  ToyParams t = toy_params(4);
  engine::MultiTensorAdamW o(t.all, torch::optim::AdamWOptions(0.001).amsgrad(true));
  for (auto& p : t.all) p.mutable_grad() = torch::ones_like(p);
  EXPECT_THROW(o.step(), std::invalid_argument);
}

TEST(MultiTensorOptim, NesterovSgdStepsAreBitwiseLibTorchsSgd) {
  ToyParams ref = toy_params(5), ours = toy_params(5);
  torch::optim::SGD a(ref.groups(true), torch::optim::SGDOptions(0.01));
  engine::MultiTensorSGD b(ours.groups(true), torch::optim::SGDOptions(0.01));
  for (int step = 0; step < 5; ++step) {  // step 2 leaves parameter 4 out, so its buffer is created on step 0 only
    set_grads(ref, ours, step);
    a.step();
    b.step();
    expect_bitwise(ref.all, ours.all, "step " + std::to_string(step) + " param");
  }
}

TEST(MultiTensorOptim, ClipGradNormIsLibTorchsWithoutReadingTheNormBack) {
  for (const double scale : {100.0, 1e-3}) {  // clipped, and left alone (coefficient clamped to 1)
    ToyParams ref = toy_params(6), ours = toy_params(6);
    set_grads(ref, ours, 0, scale);
    const double expected = torch::nn::utils::clip_grad_norm_(ref.all, 10.0);
    const at::Tensor total = engine::clip_grad_norm(ours.all, 10.0);
    ASSERT_TRUE(total.defined());
    EXPECT_EQ(total.dim(), 0);
    EXPECT_EQ(total.item<double>(), expected) << scale;
    std::vector<torch::Tensor> ga, gb;
    for (size_t i = 0; i < ref.all.size(); ++i) ga.push_back(ref.all[i].grad()), gb.push_back(ours.all[i].grad());
    expect_bitwise(ga, gb, "scale " + std::to_string(scale) + " grad");
    std::vector<torch::Tensor> norms;
    for (const auto& g : gb) norms.push_back(g.norm());
    const double after = torch::stack(norms).norm().item<double>();
    if (scale > 1) {
      EXPECT_GT(expected, 100.0);
      EXPECT_NEAR(after, 10.0, 1e-4);  // scaled down to max_norm
    } else {
      EXPECT_NEAR(after, expected, 1e-9);  // left alone
    }
  }
  ToyParams none = toy_params(7);
  EXPECT_FALSE(engine::clip_grad_norm(none.all, 10.0).defined());
}
