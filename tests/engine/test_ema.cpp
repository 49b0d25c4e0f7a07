// ModelEMA against golden schedule_cases.json "ema" (decay formula and a three-update example).
#include "yolo11/engine/ema.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "recipe_fixtures.h"

using namespace yolo11;

namespace {

torch::Tensor from_json(const nlohmann::json& j, torch::Dtype dtype) {
  if (!j.is_array()) return torch::tensor(j.get<double>(), torch::kDouble).to(dtype);
  std::vector<double> flat;
  std::vector<int64_t> shape;
  std::function<void(const nlohmann::json&, size_t)> walk = [&](const nlohmann::json& a, size_t depth) {
    if (!a.is_array()) {
      flat.push_back(a.get<double>());
      return;
    }
    if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(a.size()));
    for (const auto& e : a) walk(e, depth + 1);
  };
  walk(j, 0);
  return torch::tensor(flat, torch::kDouble).reshape(shape).to(dtype);
}

engine::NamedTensors state_of(const nlohmann::json& j) {
  engine::NamedTensors s;
  for (const auto& [k, v] : j.items())
    s.emplace_back(k, from_json(v, k.find("num_batches_tracked") != std::string::npos ? torch::kLong : torch::kFloat));
  return s;
}

}  // namespace

TEST(ModelEMA, DecayMatchesGolden) {
  const auto j = test::load_golden_json("schedule_cases.json").at("ema").at("decay");
  engine::ModelEMA ema({{"w", torch::zeros({1})}});
  for (const auto& [u, d] : j.items()) {
    const double ref = d.get<double>();
    EXPECT_LE(std::abs(ema.decay_at(std::stoll(u)) - ref), 1e-12 * ref) << "updates " << u;
  }
}

TEST(ModelEMA, UpdatesMatchGoldenExample) {
  const auto ex = test::load_golden_json("schedule_cases.json").at("ema").at("example_three_updates");
  ASSERT_EQ(ex.size(), 3u);
  // Start from the golden EMA after update 1; updates 2 and 3 must reproduce the stored EMA states.
  engine::ModelEMA ema(state_of(ex[0].at("ema_state")), 0.9999, 2000.0, ex[0].at("updates").get<int64_t>());
  EXPECT_LE(std::abs(ema.decay() - ex[0].at("d").get<double>()), 1e-12 * ex[0].at("d").get<double>());
  for (size_t k = 1; k < 3; ++k) {
    SCOPED_TRACE("update " + std::to_string(k + 1));
    const auto model = state_of(ex[k].at("model_state"));
    ema.update(model);
    EXPECT_EQ(ema.updates(), ex[k].at("updates").get<int64_t>());
    EXPECT_LE(std::abs(ema.decay() - ex[k].at("d").get<double>()), 1e-12 * ex[k].at("d").get<double>());
    const auto ref = state_of(ex[k].at("ema_state"));
    ASSERT_EQ(ema.state().size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(ema.state()[i].first, ref[i].first);
      EXPECT_EQ(ema.state()[i].second.scalar_type(), ref[i].second.scalar_type()) << ref[i].first;
      EXPECT_ALL_CLOSE(ema.state()[i].second, ref[i].second, 0, 0);  // bit-exact: same float32 op order
    }
  }
}

TEST(ModelEMA, KeepsItsOwnCopyAndSkipsIntegerBuffers) {
  auto w = torch::ones({3});
  auto n = torch::tensor(int64_t{5});
  engine::NamedTensors model = {{"w", w}, {"bn.num_batches_tracked", n}};
  engine::ModelEMA ema(model);
  w.fill_(3.0);  // changing the model does not change the EMA copy
  n.fill_(9);
  EXPECT_EQ(ema.state()[0].second[0].item<float>(), 1.0f);
  ema.update(model);
  const double d = ema.decay();
  EXPECT_NEAR(ema.state()[0].second[0].item<float>(), d * 1.0 + (1 - d) * 3.0, 1e-6);
  EXPECT_EQ(ema.state()[1].second.item<int64_t>(), 5);
  engine::NamedTensors wrong = {{"x", w}, {"bn.num_batches_tracked", n}};
  EXPECT_THROW(ema.update(wrong), std::runtime_error);
}
