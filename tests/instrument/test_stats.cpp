// Stage statistics, the window line format and its parser (used by yolo11-analyze), the summary table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "yolo11/instrument/stats.h"

namespace yolo11::instrument {
namespace {

TEST(Stats, PercentileInterpolatesLinearly) {
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(percentile({3.0}, 0.95), 3.0);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 0.95), 4.8);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 1.0), 5.0);
}

TEST(Stats, SummarizeSamples) {
  StageSummary s;
  summarize_samples({0.1, 0.2, 0.3, 1.0}, s);
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.total, 1.6);
  EXPECT_DOUBLE_EQ(s.mean, 0.4);
  EXPECT_DOUBLE_EQ(s.p50, 0.25);
  EXPECT_DOUBLE_EQ(s.max, 1.0);
}

WindowSummary example() {
  WindowSummary w;
  w.steps = 10;
  w.images = 160;
  w.step.name = "step";
  w.step.count = 10;
  w.step.mean = 0.56;
  w.step.total = 5.6;
  w.images_per_s = 160 / 5.6;
  w.gpu_util = 54;
  const std::vector<std::pair<std::string, double>> per_step = {{"dataloader", 0.214}, {"h2d", 0.01},
                                                                {"forward", 0.1},      {"loss", 0.02},
                                                                {"backward", 0.18},    {"optimizer", 0.03},
                                                                {"ema", 0.006}};
  for (const auto& [name, t] : per_step) {
    StageSummary s;
    s.name = name;
    s.count = 10;
    s.total = 10 * t;
    s.mean = t;
    s.share = s.total / w.step.total;
    w.stages.push_back(s);
  }
  return w;
}

TEST(Stats, WindowLineHasTheSpecifiedFormat) {
  const std::string line = format_window_line(example());
  EXPECT_EQ(line.rfind("dataloader: 0.214s (38%), h2d: 0.0100s (2%), forward: 0.100s (18%)", 0), 0u) << line;
  EXPECT_NE(line.find("step: 0.560s, 28.6 img/s, data-wait 38%, GPU 54%"), std::string::npos) << line;
  WindowSummary cpu = example();
  cpu.gpu_util = -1;
  cpu.cpu_percent = 180;
  EXPECT_NE(format_window_line(cpu).find("GPU n/a, CPU 180%"), std::string::npos);
  WindowSummary tiny = example();
  tiny.stages[6].total = 10 * 0.0000123;  // ema 12.3 µs: still three digits, no exponent
  EXPECT_NE(format_window_line(tiny).find("ema: 0.000012s"), std::string::npos) << format_window_line(tiny);
}

TEST(Stats, WindowLineRoundTripsThroughTheParser) {
  WindowSummary w = example();
  w.cpu_percent = 412;
  // As it appears in train.log, after the logger's prefix.
  const std::string logged = "[2026-11-30 06:00:00.000] [info] " + format_window_line(w);
  WindowSummary p;
  ASSERT_TRUE(parse_window_line(logged, p));
  ASSERT_EQ(p.stages.size(), w.stages.size());
  for (size_t i = 0; i < w.stages.size(); ++i) {
    EXPECT_EQ(p.stages[i].name, w.stages[i].name);
    EXPECT_NEAR(p.stages[i].mean, w.stages[i].mean, 5e-4);
    EXPECT_NEAR(p.stages[i].share, w.stages[i].share, 5e-3);
  }
  EXPECT_NEAR(p.step.mean, 0.56, 5e-4);
  EXPECT_NEAR(p.images_per_s, 28.6, 0.05);
  EXPECT_DOUBLE_EQ(p.gpu_util, 54);
  EXPECT_DOUBLE_EQ(p.cpu_percent, 412);
  EXPECT_FALSE(parse_window_line("epoch 3/100 box_loss 1.2 cls_loss 0.8", p));
}

TEST(Stats, TableListsStagesStepAndEpochLevelStages) {
  WindowSummary w = example();
  w.kind = "epoch";
  w.epoch = 2;
  w.first_step = 20;
  w.last_step = 29;
  StageSummary val;
  val.name = "val";
  val.count = 1;
  val.mean = val.p50 = val.p95 = val.max = val.total = 3.0;
  val.share = 0.3;
  val.per_epoch = true;
  w.stages.push_back(val);
  const std::string t = format_table(w);
  EXPECT_NE(t.find("epoch 3 (steps 20-29)"), std::string::npos) << t;  // WindowSummary::epoch counts from 0
  EXPECT_NE(format_table(w, 5).find("epoch 3/5 (steps 20-29)"), std::string::npos) << format_table(w, 5);
  EXPECT_NE(t.find("% of step"), std::string::npos) << t;
  for (const char* n : {"dataloader", "backward", "ema", "step", "val"}) EXPECT_NE(t.find(n), std::string::npos) << n;
  EXPECT_NE(t.find("38.2%"), std::string::npos) << t;
  EXPECT_NE(t.find("30.0% of epoch"), std::string::npos) << t;
  w.first_step = w.last_step = -1;  // instrument_warmup longer than the epoch: no measured step
  EXPECT_NE(format_table(w, 5).find("epoch 3/5 (all its steps in the warm-up window)"), std::string::npos);
}

}  // namespace
}  // namespace yolo11::instrument
