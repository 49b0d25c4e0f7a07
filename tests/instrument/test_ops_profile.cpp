// Operator profile (profile_ops): aggregation of synthetic events (self times, stages, shapes), ops.csv round trip,
// and a real yolo11n step window under the Profiler: files written, convolutions on top, stage sums vs our timers.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "golden.h"
#include "yolo11/instrument/ops_profile.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/model/yolo.h"
#include "sanitizer.h"

namespace yolo11::instrument {
namespace {

namespace fs = std::filesystem;

OpEvent ev(const std::string& name, int64_t start_us, int64_t dur_us, uint64_t thread = 1, bool scope = false,
           const std::string& shapes = "") {
  OpEvent e;
  e.name = name;
  e.start_ns = start_us * 1000;
  e.dur_ns = dur_us * 1000;
  e.thread = thread;
  e.user_scope = scope;
  e.shapes = shapes;
  return e;
}

TEST(OpsProfile, SelfTimeExcludesChildOpsAndStagesComeFromUserScopes) {
  const std::vector<OpEvent> events = {
      ev("ProfilerStep#7", 0, 1000, 1, true),
      ev("forward", 10, 400, 1, true),
      ev("aten::conv2d", 20, 300, 1, false, "[[2, 3, 8, 8]]"),       // self 300 − 250 = 50
      ev("aten::mkldnn_convolution", 30, 250, 1, false, "[[2, 3, 8, 8]]"),
      ev("aten::add", 350, 40, 1, false, "[[2]]"),
      ev("backward", 500, 400, 1, true),
      ev("aten::conv2d", 510, 100, 1, false, "[[4, 3, 8, 8]]"),       // other shape, no children: self 100
      ev("autograd::engine::evaluate_function", 700, 100, 2),         // another thread, inside backward's interval
  };
  const auto r = aggregate_ops(events, {"forward", "loss", "backward"}, /*by_shape=*/false);
  EXPECT_EQ(r.steps, 1);
  EXPECT_EQ(r.first_step, 7);
  ASSERT_EQ(r.ops.size(), 4u);
  EXPECT_EQ(r.ops[0].name, "aten::mkldnn_convolution");
  EXPECT_DOUBLE_EQ(r.ops[0].self_us, 250);
  EXPECT_EQ(r.ops[0].stage, "forward");
  const OpRow* conv = nullptr;
  for (const auto& o : r.ops)
    if (o.name == "aten::conv2d") conv = &o;
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->calls, 2);
  EXPECT_DOUBLE_EQ(conv->self_us, 150);  // 50 + 100
  EXPECT_DOUBLE_EQ(conv->total_us, 400);
  ASSERT_NE(r.stage("forward"), nullptr);
  EXPECT_DOUBLE_EQ(r.stage("forward")->scope_us, 400);
  EXPECT_DOUBLE_EQ(r.stage("forward")->ops_self_us, 50 + 250 + 40);
  EXPECT_DOUBLE_EQ(r.stage("backward")->ops_self_us, 200);  // 100 on the trainer thread + 100 on thread 2
  EXPECT_EQ(r.stage("loss"), nullptr);                     // never opened
  EXPECT_DOUBLE_EQ(r.cpu_self_total_us, 540);  // 50 + 250 + 40 + 100 + 100
  // Per stage: conv2d's one row (Stage = backward, where most of its self time ran) splits into a forward and a
  // backward share; the stages come in the order given, each by self time.
  EXPECT_EQ(conv->stage, "backward");
  ASSERT_EQ(r.stage_ops.size(), 5u);
  EXPECT_EQ(r.stage_ops[0].stage, "forward");
  EXPECT_EQ(r.stage_ops[0].name, "aten::mkldnn_convolution");
  EXPECT_EQ(r.stage_ops[1].name, "aten::conv2d");
  EXPECT_EQ(r.stage_ops[1].calls, 1);
  EXPECT_DOUBLE_EQ(r.stage_ops[1].self_us, 50);
  EXPECT_EQ(r.stage_ops[2].name, "aten::add");
  EXPECT_EQ(r.stage_ops[3].stage, "backward");
  EXPECT_EQ(r.stage_ops[3].calls, 1);
  EXPECT_DOUBLE_EQ(r.stage_ops[3].self_us, 100);
  const std::string per_stage = format_ops_by_stage(r, 1);
  EXPECT_NE(per_stage.find("forward: 3 operator calls, 340.000us self"), std::string::npos) << per_stage;
  EXPECT_NE(per_stage.find("backward: 2 operator calls, 200.000us self"), std::string::npos) << per_stage;
  EXPECT_EQ(per_stage.find("aten::add"), std::string::npos) << "top 1 per stage:\n" << per_stage;

  const auto by_shape = aggregate_ops(events, {"forward", "backward"}, /*by_shape=*/true);
  EXPECT_EQ(by_shape.ops.size(), 5u);  // conv2d splits by input shape
  const std::string table = format_ops_table(by_shape, 0);
  EXPECT_NE(table.find("[[4, 3, 8, 8]]"), std::string::npos) << table;
  EXPECT_NE(table.find("Self CPU time total: 540.000us"), std::string::npos) << table;
}

TEST(OpsProfile, CsvRoundTripsAndTraceParses) {
  const std::vector<OpEvent> events = {ev("ProfilerStep#3", 0, 100, 1, true), ev("loss", 0, 90, 1, true),
                                       ev("aten::mul", 5, 20, 1, false, "[[3], [\"x\"]]"), ev("aten::sum", 40, 10)};
  auto r = aggregate_ops(events, {"loss"}, true);
  r.stages[0].timer_us = 95;
  const std::string dir = test::scratch_dir("ops_csv");
  io::write_file_atomic(dir + "/ops.csv", ops_csv(r));
  const auto back = read_ops_csv(dir + "/ops.csv");
  EXPECT_EQ(back.steps, 1);
  EXPECT_EQ(back.first_step, 3);
  ASSERT_EQ(back.ops.size(), 2u);
  EXPECT_EQ(back.ops[0].name, "aten::mul");
  EXPECT_EQ(back.ops[0].shapes, "[[3], [\"x\"]]");
  EXPECT_DOUBLE_EQ(back.ops[0].self_us, 20);
  ASSERT_EQ(back.stage_ops.size(), 2u);
  EXPECT_EQ(back.stage_ops[0].stage, "loss");
  EXPECT_EQ(back.stage_ops[0].name, "aten::mul");
  EXPECT_EQ(back.stage_ops[0].calls, 1);
  EXPECT_DOUBLE_EQ(back.stage_ops[0].self_us, 20);
  ASSERT_EQ(back.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(back.stages[0].timer_us, 95);
  EXPECT_DOUBLE_EQ(back.stages[0].ops_self_us, 30);
  const auto j = nlohmann::json::parse(ops_chrome_trace(events));
  int ann = 0, ops = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["dur"].get<double>(), 0);
    (e["cat"] == "user_annotation" ? ann : ops) += 1;
  }
  EXPECT_EQ(ann, 2);
  EXPECT_EQ(ops, 2);
}

// A yolo11n training step at 128 px under the Profiler, steps 1-2 profiled: the three files, convolutions on top,
// and per stage the operators' self time agrees with our stage timer. Tolerance (stated in docs/instrument.md): the
// ops' self time covers the stage timer to within 25 % + 2 ms per step (forward, backward) and 60 % + 2 ms (loss,
// which runs host-side code between small operators); it never exceeds the profiler's own scope time.
TEST(OpsProfile, YoloStepWindowWritesFilesConvolutionsLeadAndStagesAddUp) {
  torch::manual_seed(0);
  const std::string dir = test::scratch_dir("ops_step");
  model::YOLO net(model::ModelOptions{"configs/models/yolo11.yaml", "n", 3, true});
  net->train();
  loss::DetectionLoss crit(3, net->strides());
  auto x = torch::rand({2, 3, 128, 128});
  auto bidx = torch::tensor({0, 1}, torch::kLong), cls = torch::tensor({0, 2}, torch::kLong);
  auto boxes = torch::tensor({{0.5, 0.5, 0.3, 0.3}, {0.4, 0.6, 0.2, 0.4}}, torch::kFloat);
  ProfilerOptions o;
  o.level = Level::basic;
  o.log_every = 10;
  o.log_lines = false;
  o.run_dir = dir;
  o.profile_ops = std::make_pair<int64_t, int64_t>(1, 3);
  Profiler prof(o);
  for (int64_t i = 0; i < 4; ++i) {
    prof.begin_step(i);
    { auto s = prof.stage("dataloader"); }
    std::vector<torch::Tensor> feats;
    {
      auto s = prof.stage("forward");
      feats = net->forward_feats(x);
    }
    loss::DetectionLoss::Output out;
    {
      auto s = prof.stage("loss");
      out = crit(feats, bidx, cls, boxes);
    }
    {
      auto s = prof.stage("backward");
      out.total.backward();
    }
    prof.end_step(2);
  }
  prof.finish();
  for (const char* f : {"ops.txt", "ops.csv", "ops_trace.json"}) EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
  const auto r = read_ops_csv(dir + "/ops.csv");
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(r.first_step, 1);
  EXPECT_EQ(r.last_step, 2);
  ASSERT_GE(r.ops.size(), 5u);
  bool conv_on_top = false;
  for (size_t i = 0; i < 3; ++i) conv_on_top = conv_on_top || r.ops[i].name.find("conv") != std::string::npos;
  EXPECT_TRUE(conv_on_top) << io::read_file(dir + "/ops.txt");
  for (const char* st : {"forward", "loss", "backward"}) {
    const StageOps* s = nullptr;
    for (const auto& x2 : r.stages)
      if (x2.stage == st) s = &x2;
    ASSERT_NE(s, nullptr) << st;
    ASSERT_GT(s->timer_us, 0) << st;
    const bool loss = std::string(st) == "loss";
    const double steps = 2, tol = (loss ? 0.60 : 0.25) * s->timer_us + 2000 * steps;
    // Under a sanitizer our own host code in the loss (the assigner's candidate gathering) runs several times slower
    // while LibTorch's kernels do not (they are not instrumented): there the loss' operators were 23 % of its timer.
    if (!(test::kSanitized && loss)) {
      EXPECT_NEAR(s->ops_self_us, s->timer_us, tol) << st << "\n" << io::read_file(dir + "/ops.txt");
    }
    EXPECT_LE(s->ops_self_us, s->scope_us * 1.001 + 1) << st;
    EXPECT_NEAR(s->scope_us, s->timer_us, 0.05 * s->timer_us + 500 * steps) << st;  // same interval, two clocks
  }
  const auto j = nlohmann::json::parse(io::read_file(dir + "/ops_trace.json"));
  int steps = 0;
  for (const auto& e : j["traceEvents"])
    if (e.value("name", "").rfind("ProfilerStep#", 0) == 0) ++steps;
  EXPECT_EQ(steps, 2);
  // The run summary is unaffected: steps 0-3 are all in the windows.
  EXPECT_EQ(prof.run_summary().steps, 4);
}

}  // namespace
}  // namespace yolo11::instrument
