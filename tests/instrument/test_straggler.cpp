// Straggler report (instrument/straggler.h) on fixed numbers: which rank, which stage, and the all-reduce wait that
// a slow rank causes on the fast ones.
#include <gtest/gtest.h>

#include "yolo11/instrument/straggler.h"

using namespace yolo11::instrument;

namespace {
// dataloader, h2d, forward, loss, backward, allreduce, step
RankRow row(double dl, double fw, double bw, double ar) { return {dl, 0.001, fw, 0.01, bw, ar, dl + 0.001 + fw + 0.01 + bw + ar}; }
}  // namespace

TEST(Straggler, ASlowLoaderOnRank1IsNamedDataBound) {
  // rank 1 waits 0.31 s for data; rank 0 is ready early and waits for rank 1 inside the all-reduce
  const auto r = analyze_ranks({row(0.01, 0.2, 0.4, 0.31), row(0.31, 0.2, 0.4, 0.01)});
  EXPECT_EQ(r.straggler, 1);
  EXPECT_EQ(r.cause, "dataloader");
  EXPECT_NEAR(r.cause_ratio, 0.31 / 0.01, 1e-9);  // against the other rank
  EXPECT_NE(r.verdict.find("straggler rank 1: dataloader"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("data-bound on rank 1"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("wait 0.310 s/step in allreduce"), std::string::npos) << r.verdict;
  // the step is the same on both ranks (the collective equalises it): only time to ready tells them apart
  EXPECT_NEAR(r.fields[6].min, r.fields[6].max, 1e-12);
  EXPECT_EQ(r.fields[5].max_rank, 0);  // the fast rank has the long all-reduce
}

TEST(Straggler, ASlowBackwardIsComputeNotTheFastRanksAllReduceWait) {
  const auto r = analyze_ranks({row(0.01, 0.2, 0.4, 0.5), row(0.01, 0.2, 0.4, 0.5), row(0.01, 0.2, 0.9, 0.0),
                                row(0.01, 0.2, 0.4, 0.5)});
  EXPECT_EQ(r.straggler, 2);
  EXPECT_EQ(r.cause, "backward");
  EXPECT_NEAR(r.cause_ratio, 0.9 / 0.4, 1e-9);
  EXPECT_NEAR(r.imbalance, (1.121 - 0.621) / 0.621, 1e-9);
  EXPECT_NE(r.verdict.find("compute-bound (backward) on rank 2"), std::string::npos) << r.verdict;
  const std::string text = format_rank_report(r);
  EXPECT_NE(text.find("backward 0.4000/0.4000/0.9000 (r2)"), std::string::npos) << text;
}

TEST(Straggler, EqualRanksAreBalancedAndNoRowsIsAnError) {
  const auto r = analyze_ranks({row(0.01, 0.2, 0.4, 0.02), row(0.012, 0.2, 0.41, 0.01)});
  EXPECT_EQ(r.straggler, -1);
  EXPECT_NE(r.verdict.find("balanced"), std::string::npos);
  EXPECT_THROW(analyze_ranks({}), std::invalid_argument);
}

TEST(Straggler, RankRowAveragesStageTotalsOverTheWindowSteps) {
  WindowSummary w;
  w.steps = 4;
  w.step.total = 2.0;
  w.stages = {{"dataloader", 4, 0.4}, {"backward", 4, 1.2}, {"allreduce", 1, 0.2}};  // allreduce: 1 of 4 steps
  const RankRow r = rank_row(w);
  EXPECT_DOUBLE_EQ(r[0], 0.1);
  EXPECT_DOUBLE_EQ(r[4], 0.3);
  EXPECT_DOUBLE_EQ(r[5], 0.05);
  EXPECT_DOUBLE_EQ(r[6], 0.5);
  EXPECT_DOUBLE_EQ(r[2], 0.0);  // forward did not run
}
