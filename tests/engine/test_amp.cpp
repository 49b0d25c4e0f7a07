// AMP: GradScaler against torch.cuda.amp.GradScaler's rules (scale, unscale, inf → skip + backoff, growth,
// state), the float32-vs-autocast check (bfloat16 on this CPU) and the CPU bf16 detection.
#include "yolo11/engine/amp.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "golden.h"
#include "yolo11/core/compat.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11/model/yolo.h"
#include "yolo11_test_config.h"

using namespace yolo11;
using engine::GradScaler;
using engine::GradScalerOptions;

namespace {

/// One parameter with a given gradient and an SGD(lr 1) optimizer over it: a step subtracts the gradient.
struct OneParam {
  torch::Tensor p = torch::zeros({3}, torch::requires_grad());
  torch::optim::SGD opt{std::vector<torch::Tensor>{p}, torch::optim::SGDOptions(1.0)};
  void set_grad(const torch::Tensor& g) { p.mutable_grad() = g.clone(); }
};

GradScalerOptions opts(int64_t growth_interval = 2000, bool enabled = true) {
  GradScalerOptions o;
  o.growth_interval = growth_interval;
  o.enabled = enabled;
  return o;
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST(GradScaler, ScalesTheLossBy2To16) {
  GradScaler s;
  EXPECT_EQ(s.get_scale(), 65536.0);
  const auto loss = torch::tensor(1.5f);
  EXPECT_EQ(s.scale(loss).item<float>(), 1.5f * 65536.0f);
  EXPECT_EQ(s.scale(loss).scalar_type(), torch::kFloat);
  // Gradients of the scaled loss are scaled: d(scale·x²)/dx = scale·2x.
  auto x = torch::tensor({2.0f}, torch::requires_grad());
  s.scale(x.square().sum()).backward();
  EXPECT_EQ(x.grad().item<float>(), 65536.0f * 4.0f);
}

TEST(GradScaler, UnscaleDividesGradientsByTheScale) {
  GradScaler s;
  OneParam m;
  m.set_grad(torch::tensor({1.0f, -2.0f, 0.25f}) * 65536.0f);
  s.unscale_({m.p});
  EXPECT_TRUE(torch::equal(m.p.grad(), torch::tensor({1.0f, -2.0f, 0.25f})));
  ASSERT_TRUE(s.found_inf().defined());
  EXPECT_EQ(s.found_inf().item<float>(), 0.0f);
  EXPECT_THROW(s.unscale_({m.p}), std::logic_error);  // at most once per step
  EXPECT_TRUE(s.step(m.opt));                         // no second unscale inside step
  EXPECT_TRUE(torch::equal(m.p.detach(), torch::tensor({-1.0f, 2.0f, -0.25f})));
  s.update();
  EXPECT_EQ(s.get_scale(), 65536.0);
  EXPECT_EQ(s.growth_tracker(), 1);
}

TEST(GradScaler, InfOrNanGradientsSkipTheStepAndHalveTheScale) {
  for (const float bad : {kInf, -kInf, kNaN}) {
    GradScaler s;
    OneParam m;
    for (int i = 0; i < 3; ++i) {  // grow the tracker first: a skip resets it
      m.set_grad(torch::ones({3}));
      ASSERT_TRUE(s.step(m.opt));
      s.update();
    }
    EXPECT_EQ(s.growth_tracker(), 3);
    const auto before = m.p.detach().clone();
    m.set_grad(torch::tensor({1.0f, bad, 1.0f}));
    EXPECT_FALSE(s.step(m.opt)) << bad;  // step() unscales itself when unscale_ was not called
    EXPECT_EQ(s.found_inf().item<float>(), 1.0f);
    EXPECT_TRUE(torch::equal(m.p.detach(), before)) << "a skipped step must leave the parameters alone";
    s.update();
    EXPECT_EQ(s.get_scale(), 32768.0);
    EXPECT_EQ(s.growth_tracker(), 0);
    EXPECT_EQ(s.skipped_steps(), 1);
  }
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  GradScaler s(opts(/*growth_interval=*/3));
  OneParam m;
  auto clean_step = [&] {
    m.set_grad(torch::ones({3}));
    s.unscale_({m.p});
    ASSERT_TRUE(s.step(m.opt));
    s.update();
  };
  clean_step();
  clean_step();
  EXPECT_EQ(s.get_scale(), 65536.0);
  EXPECT_EQ(s.growth_tracker(), 2);
  clean_step();
  EXPECT_EQ(s.get_scale(), 131072.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  // An inf step after growth backs off and restarts the count.
  m.set_grad(torch::full({3}, kInf));
  EXPECT_FALSE(s.step(m.opt));
  s.update();
  EXPECT_EQ(s.get_scale(), 65536.0);
  for (int i = 0; i < 3; ++i) clean_step();
  EXPECT_EQ(s.get_scale(), 131072.0);
}

TEST(GradScaler, UpdateWithoutAStepKeepsTheScale) {
  GradScaler s(opts(1));
  s.update();
  EXPECT_EQ(s.get_scale(), 65536.0);
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(GradScaler, StateRoundTripsThroughACheckpoint) {
  GradScaler a(opts(5));
  OneParam m;
  m.set_grad(torch::full({3}, kNaN));
  a.step(m.opt);
  a.update();  // 32768
  for (int i = 0; i < 2; ++i) {
    m.set_grad(torch::ones({3}));
    a.step(m.opt);
    a.update();
  }
  const auto st = a.state();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].first, "scale");
  EXPECT_EQ(st[1].first, "growth_tracker");

  engine::Checkpoint c;
  c.epoch = 0;
  c.model = {{"w", torch::ones({2})}};
  c.ema = c.model;
  c.scaler = st;
  const auto dir = test::scratch_dir("amp_scaler_state");
  ASSERT_TRUE(engine::save_checkpoint(dir, c, false, false));
  const auto back = engine::load_checkpoint(dir);
  ASSERT_TRUE(back.has_value());
  GradScaler b(opts(5));
  b.load(back->scaler);
  EXPECT_EQ(b.get_scale(), 32768.0);
  EXPECT_EQ(b.growth_tracker(), 2);
  // Both continue identically: 3 more clean steps reach the interval of 5.
  for (GradScaler* s : {&a, &b}) {
    for (int i = 0; i < 3; ++i) {
      m.set_grad(torch::ones({3}));
      s->step(m.opt);
      s->update();
    }
    EXPECT_EQ(s->get_scale(), 65536.0);
    EXPECT_EQ(s->growth_tracker(), 0);
  }
  EXPECT_THROW(b.load({{"scale", torch::tensor(2.0f)}}), std::runtime_error);
}

TEST(GradScaler, DisabledIsTheIdentity) {
  GradScaler s(opts(2000, /*enabled=*/false));
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(s.get_scale(), 1.0);
  const auto loss = torch::tensor(3.0f);
  EXPECT_TRUE(s.scale(loss).is_same(loss));
  OneParam m;
  m.set_grad(torch::tensor({1.0f, kInf, 2.0f}));
  s.unscale_({m.p});
  EXPECT_FALSE(s.found_inf().defined());
  EXPECT_TRUE(s.step(m.opt));  // always steps (the trainer's non-finite-loss check is the guard then)
  s.update();
  EXPECT_EQ(s.get_scale(), 1.0);
  EXPECT_TRUE(s.state().empty());
}

TEST(CpuBf16, ParsesCpuinfoFlags) {
  EXPECT_TRUE(engine::cpuinfo_has_bf16("processor\t: 0\nflags\t\t: fpu sse avx512f avx512_bf16 avx512_vnni\n"));
  EXPECT_TRUE(engine::cpuinfo_has_bf16("flags\t\t: fpu amx_bf16 amx_tile\n"));
  EXPECT_TRUE(engine::cpuinfo_has_bf16("Features\t: fp asimd bf16 i8mm\n"));  // aarch64
  EXPECT_FALSE(engine::cpuinfo_has_bf16("flags\t\t: fpu sse avx2 avx512f avx512_vnni\n"));
  EXPECT_FALSE(engine::cpuinfo_has_bf16("model name\t: Xeon bf16 edition\nflags\t\t: fpu avx2\n"));  // only flags count
  EXPECT_FALSE(engine::cpuinfo_has_bf16(""));
}

TEST(CheckAmp, Bfloat16AgreesWithFloat32OnYolo11n) {
  torch::manual_seed(0);
  model::ModelOptions mo;
  mo.yaml = std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/models/yolo11.yaml";
  mo.nc = 80;
  model::YOLO net(mo);
  model::to_channels_last(*net);
  net->train();
  const auto w0 = net->named_parameters()["model.0.conv.weight"].clone();
  const auto bn0 = net->named_buffers()["model.0.bn.running_mean"].clone();
  torch::manual_seed(123);
  const auto r = engine::check_amp(*net, torch::kCPU, torch::kBFloat16, /*imgsz=*/128);
  RecordProperty("max_abs_diff", std::to_string(r.max_abs_diff));
  RecordProperty("message", r.message);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_GT(r.max_abs_diff, 0.0) << "bfloat16 autocast did not change anything: was autocast active?";
  EXPECT_LE(r.max_abs_diff, engine::default_amp_tolerance(torch::kBFloat16));
  EXPECT_NE(r.message.find("BFloat16"), std::string::npos) << r.message;
  // Side-effect free: mode, weights, BN statistics, autocast state and the global RNG stream.
  EXPECT_TRUE(net->is_training());
  EXPECT_TRUE(torch::equal(net->named_parameters()["model.0.conv.weight"], w0));
  EXPECT_TRUE(torch::equal(net->named_buffers()["model.0.bn.running_mean"], bn0));
  EXPECT_FALSE(compat::is_autocast_enabled(c10::DeviceType::CPU));
  const auto after = torch::rand({4});
  torch::manual_seed(123);
  EXPECT_TRUE(torch::equal(after, torch::rand({4}))) << "check_amp drew from the global RNG";
  // What the check exercised: the convolutions really run in bfloat16 under CPU autocast.
  torch::NoGradGuard ng;
  compat::AutocastGuard ac(c10::DeviceType::CPU, true, torch::kBFloat16);
  EXPECT_EQ(net->forward_feats(torch::rand({1, 3, 64, 64}))[0].scalar_type(), torch::kBFloat16);
}

TEST(CheckAmp, FailsWhenAutocastOutputDisagreesOrIsNotFinite) {
  const auto x = torch::linspace(0, 1, 64).view({1, 64});
  // A function whose output moves by 0.2 under autocast (a broken AMP path).
  auto shifted = [](const torch::Tensor& in) {
    return compat::is_autocast_enabled(c10::DeviceType::CPU) ? in + 0.2 : in;
  };
  auto r = engine::compare_amp(shifted, x, c10::DeviceType::CPU, torch::kBFloat16, 0.05);
  EXPECT_FALSE(r.ok) << r.message;
  EXPECT_NEAR(r.max_abs_diff, 0.2, 1e-6);
  EXPECT_NE(r.message.find(">"), std::string::npos) << r.message;
  // NaN under autocast.
  auto nan_out = [](const torch::Tensor& in) {
    return compat::is_autocast_enabled(c10::DeviceType::CPU) ? in * std::nanf("") : in;
  };
  r = engine::compare_amp(nan_out, x, c10::DeviceType::CPU, torch::kBFloat16, 0.05);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(std::isinf(r.max_abs_diff));
  EXPECT_NE(r.message.find("NaN/Inf"), std::string::npos) << r.message;
  // A real op that autocast lowers (matmul → bfloat16) agrees within the tolerance.
  torch::manual_seed(0);
  const auto w = torch::randn({64, 8}) * 0.1;
  r = engine::compare_amp([&](const torch::Tensor& in) { return torch::matmul(in, w); }, x, c10::DeviceType::CPU,
                          torch::kBFloat16, 0.05);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_GT(r.max_abs_diff, 0.0) << "matmul was not lowered to bfloat16";
}
