// Warmup / LambdaLR / accumulation replayed against golden schedule_cases.json, iteration by iteration.
#include "yolo11/engine/schedule.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "recipe_fixtures.h"

using namespace yolo11;

namespace {

constexpr double kRel = 1e-12;  // golden README §4: schedule lr/momentum 1e-12 relative

::testing::AssertionResult close_rel(const std::vector<double>& got, const nlohmann::json& ref, const std::string& what) {
  if (got.size() != ref.size()) return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs " << ref.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = ref[i].get<double>();
    if (std::abs(got[i] - r) > kRel * std::abs(r))
      return ::testing::AssertionFailure() << what << "[" << i << "]: got " << got[i] << " ref " << r;
  }
  return ::testing::AssertionSuccess();
}

void replay(const std::string& scen) {
  SCOPED_TRACE(scen);
  const auto s = test::load_golden_json("schedule_cases.json").at(scen);
  const auto& in = s.at("inputs");
  const auto cfg = config::TrainConfig::load(
      "", {"epochs=" + std::to_string(in.at("epochs").get<int64_t>()), "batch=" + std::to_string(in.at("batch").get<int64_t>()),
           "optimizer=" + in.at("optimizer_arg").get<std::string>()});
  const int64_t nb = s.at("nb_iterations_per_epoch");
  const int64_t acc = engine::initial_accumulate(cfg.nbs, cfg.batch);
  const int64_t iters = engine::auto_rule_iterations(in.at("n_images"), cfg.batch, cfg.nbs, cfg.epochs);
  auto choice = engine::build_optimizer(engine::build_param_groups(test::yolo11n_named_params()), cfg, 80, iters,
                                        engine::scaled_weight_decay(cfg.weight_decay, cfg.batch, acc, cfg.nbs));
  engine::Scheduler sched(*choice.opt, cfg, choice, nb);
  EXPECT_EQ(sched.warmup_iterations(), s.at("nw_warmup_iterations").get<int64_t>());
  EXPECT_EQ(sched.accumulate(), s.at("accumulate_initial").get<int64_t>());

  std::map<int64_t, nlohmann::json> by_ni;
  for (const auto& it : s.at("iterations")) by_ni[it.at("ni").get<int64_t>()] = it;
  const bool sgd = choice.name == "SGD";
  int64_t steps = 0, checked = 0;
  for (int64_t epoch = 0; epoch < cfg.epochs; ++epoch) {
    const auto& pe = s.at("per_epoch")[epoch];
    sched.on_epoch_start(epoch);
    EXPECT_EQ(sched.lf(epoch), pe.at("lf").get<double>());
    EXPECT_TRUE(close_rel(sched.lrs(), pe.at("lr_after_scheduler_step"), "lr_after_scheduler_step e" + std::to_string(epoch)));
    for (int64_t i = 0; i < nb; ++i) {
      const int64_t ni = i + nb * epoch;
      sched.on_iteration(ni, epoch);
      const bool step = sched.should_step(ni);
      steps += step;
      auto f = by_ni.find(ni);
      if (f == by_ni.end()) continue;
      const auto& r = f->second;
      ++checked;
      SCOPED_TRACE("ni " + std::to_string(ni));
      EXPECT_EQ(sched.in_warmup(ni), r.at("in_warmup").get<bool>());
      EXPECT_EQ(sched.accumulate(), r.at("accumulate").get<int64_t>());
      EXPECT_EQ(step, r.at("optimizer_step").get<bool>());
      EXPECT_EQ(steps, r.at("ema_updates_after").get<int64_t>());
      EXPECT_TRUE(close_rel(sched.lrs(), r.at("lr"), "lr"));
      if (sgd) {
        EXPECT_TRUE(close_rel(sched.momentums(), r.at("momentum"), "momentum"));
      }
    }
    EXPECT_TRUE(close_rel(sched.lrs(), pe.at("lr_logged_end_of_epoch"), "lr_logged_end_of_epoch e" + std::to_string(epoch)));
    if (sgd) {
      EXPECT_TRUE(close_rel(sched.momentums(), pe.at("momentum_end_of_epoch"), "momentum_end_of_epoch"));
    }
    EXPECT_EQ(steps, pe.at("optimizer_steps_so_far").get<int64_t>());
  }
  EXPECT_EQ(checked, static_cast<int64_t>(by_ni.size()));
}

}  // namespace

TEST(Scheduler, SpecAuto128ImagesMatchesGolden) { replay("spec_auto_128img"); }
TEST(Scheduler, Sgd128ImagesMatchesGolden) { replay("sgd_128img"); }
TEST(Scheduler, Sgd1024ImagesLeavesWarmupLikeGolden) { replay("sgd_1024img"); }

TEST(Scheduler, CosineScheduleGoesFromOneToLrf) {
  auto p = torch::zeros({2}, torch::requires_grad());
  torch::optim::SGD opt({p}, torch::optim::SGDOptions(0.01));
  engine::SchedulerOptions o;
  o.epochs = 10;
  o.lrf = 0.01;
  o.cos_lr = true;
  engine::Scheduler s(opt, o);
  EXPECT_DOUBLE_EQ(s.lf(0), 1.0);
  EXPECT_NEAR(s.lf(5), 0.505, 1e-12);
  EXPECT_NEAR(s.lf(10), 0.01, 1e-12);
  o.warmup_epochs = 0;
  engine::Scheduler nowarm(opt, o);
  EXPECT_EQ(nowarm.warmup_iterations(), -1);
  EXPECT_FALSE(nowarm.in_warmup(0));
}

TEST(Scheduler, BaseLrComesFromTheChoiceNotTheCurrentLr) {
  const auto cfg = config::TrainConfig::load("", {"optimizer=SGD", "epochs=10"});
  auto choice = engine::build_optimizer(engine::build_param_groups(test::yolo11n_named_params()), cfg, 80, 20, 5e-4);
  for (auto& g : choice.opt->param_groups()) g.options().set_lr(1e-5);  // as after loading a mid-run optimizer state
  engine::Scheduler sched(*choice.opt, cfg, choice, 8);
  sched.on_epoch_start(5);
  for (double lr : sched.lrs()) EXPECT_DOUBLE_EQ(lr, 0.01 * sched.lf(5));
}

TEST(Scheduler, NumpyHelpersRoundHalfToEven) {
  EXPECT_EQ(engine::round_half_even(2.5), 2.0);
  EXPECT_EQ(engine::round_half_even(3.5), 4.0);
  EXPECT_EQ(engine::round_half_even(-0.5), -0.0);
  EXPECT_EQ(engine::interp2(-1, 0, 10, 1, 4), 1.0);
  EXPECT_EQ(engine::interp2(10, 0, 10, 1, 4), 4.0);
  EXPECT_EQ(engine::interp2(50, 0, 100, 1, 4), 2.5);
}
