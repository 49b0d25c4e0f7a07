// instrument::what_if (include/yolo11/instrument/whatif.h) on fixed stage times: the loader in parallel (workers > 0)
// and serial (workers = 0), data-bound and compute-bound.
#include <gtest/gtest.h>

#include "yolo11/instrument/whatif.h"

using namespace yolo11::instrument;

namespace {

WindowSummary window(double dataloader, double forward, double backward, double optimizer, int64_t steps = 10) {
  WindowSummary w;
  w.steps = steps;
  w.images = 16 * steps;
  auto add = [&](const char* n, double per_step) {
    StageSummary s;
    s.name = n;
    s.count = steps;
    s.mean = per_step;
    s.total = per_step * static_cast<double>(steps);
    w.stages.push_back(s);
  };
  add("dataloader", dataloader);
  add("forward", forward);
  add("backward", backward);
  add("optimizer", optimizer);
  w.step.name = "step";
  w.step.count = steps;
  w.step.mean = dataloader + forward + backward + optimizer;
  w.step.total = w.step.mean * static_cast<double>(steps);
  return w;
}

double predicted(const std::vector<WhatIf>& v, const std::string& stage) {
  for (const auto& x : v)
    if (x.stage == stage) return x.step_s;
  ADD_FAILURE() << "no what-if for " << stage;
  return -1;
}

}  // namespace

TEST(WhatIf, DataBoundStepDoesNotGainFromFasterCompute) {
  // 0.4 s wait + 0.6 s work: the loader delivers a batch per 1.0 s; without the wait the step is the work.
  const auto v = what_if(window(0.4, 0.2, 0.3, 0.1), /*workers=*/4);
  EXPECT_NEAR(predicted(v, "dataloader"), 0.6, 1e-12);
  EXPECT_NEAR(predicted(v, "forward"), 1.0, 1e-12);  // still waiting for the loader
  EXPECT_NEAR(predicted(v, "backward"), 1.0, 1e-12);
}

TEST(WhatIf, ComputeBoundStepShrinksByTheStage) {
  const auto v = what_if(window(0.001, 0.2, 0.3, 0.1), 4);  // wait < 2 % of the step: the loader keeps up
  EXPECT_NEAR(predicted(v, "dataloader"), 0.6, 1e-12);
  EXPECT_NEAR(predicted(v, "forward"), 0.4, 1e-12);  // trainer work C = step − wait = 0.6, minus the stage
  EXPECT_NEAR(predicted(v, "backward"), 0.3, 1e-12);
  EXPECT_NEAR(predicted(v, "optimizer"), 0.5, 1e-12);
}

TEST(WhatIf, SerialLoaderAddsUp) {
  const auto v = what_if(window(0.4, 0.2, 0.3, 0.1), /*workers=*/0);  // loading runs inside the step
  EXPECT_NEAR(predicted(v, "dataloader"), 0.6, 1e-12);
  EXPECT_NEAR(predicted(v, "forward"), 0.8, 1e-12);
  const std::string line = format_what_if(v, 1.0);
  EXPECT_NE(line.find("without dataloader 600 ms (-40%)"), std::string::npos) << line;
}

TEST(WhatIf, StagesOnSomeStepsCountPerStep) {
  WindowSummary w = window(0.0, 0.2, 0.3, 0.0);
  StageSummary opt;  // optimizer on 2 of 10 steps (gradient accumulation), 0.5 s each = 0.1 s per step
  opt.name = "optimizer";
  opt.count = 2, opt.mean = 0.5, opt.total = 1.0;
  w.stages.back() = opt;
  w.step.mean = 0.6, w.step.total = 6.0;
  EXPECT_NEAR(predicted(what_if(w, 2), "optimizer"), 0.5, 1e-12);
  EXPECT_TRUE(what_if(WindowSummary{}, 2).empty());
}
