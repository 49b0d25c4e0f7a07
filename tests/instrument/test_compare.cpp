// Run diff (yolo11-analyze A B): the tests' p-values against published examples, and two profiled runs where B has a
// delay injected into one stage: exactly that stage is flagged, the settings diff names the changed key.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "golden.h"
#include "yolo11/instrument/compare.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"

namespace yolo11::instrument {
namespace {

TEST(Compare, WelchMatchesTheWikipediaExample) {
  // Welch's t-test, Wikipedia "Welch's t-test", example 1: t = -2.46, ν ≈ 24.98, two-sided p = 0.021.
  const std::vector<double> a = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
  const std::vector<double> b = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
  EXPECT_NEAR(welch_p(a, b), 0.021, 0.0015);
  EXPECT_NEAR(welch_p(a, a), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(welch_p({1.0}, {2.0, 3.0}), 1.0);  // too few samples: no evidence
  EXPECT_NEAR(hedges_g(a, b), 0.873, 0.01);  // d = t·√(2/15) = 0.897, × (1 − 3/111): B's mean is higher
}

TEST(Compare, MannWhitneySeparatedAndIdenticalSamples) {
  const std::vector<double> lo = {1, 2, 3, 4, 5, 6, 7, 8}, hi = {11, 12, 13, 14, 15, 16, 17, 18};
  // U = 0, n1 = n2 = 8: z = (32 − 0.5) / √(64·17/12) = 3.31 → p = 0.00093
  EXPECT_NEAR(mann_whitney_p(lo, hi), 0.00093, 0.0001);
  EXPECT_NEAR(mann_whitney_p(lo, lo), 1.0, 1e-9);
}

TEST(Compare, SettingsDiffSkipsNameAndProject) {
  const std::string d = test::scratch_dir("args");
  io::write_file_atomic(d + "/a.yaml", "epochs: 3\nname: a\nworkers: 2 # comment\nbatch: 16\n");
  io::write_file_atomic(d + "/b.yaml", "epochs: 3\nname: b\nworkers: 8\nbatch: 16\ncache: ram\n");
  const auto s = diff_args(d + "/a.yaml", d + "/b.yaml");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].first, "workers");
  EXPECT_EQ(s[0].second.first, "2");
  EXPECT_EQ(s[0].second.second, "8");
  EXPECT_EQ(s[1].first, "cache");
  EXPECT_EQ(s[1].second.first, "-");
}

// Steps whose stages do nothing but `loss`, which sleeps `loss_ms`; 40 steps in windows of 5.
void run(const std::string& dir, int loss_ms, int workers) {
  ProfilerOptions o;
  o.level = Level::basic;
  o.log_every = 5;
  o.log_lines = false;
  o.run_dir = dir;
  Profiler p(o);
  p.begin_epoch(0);
  for (int64_t i = 0; i < 40; ++i) {
    p.begin_step(i);
    for (const char* n : {"dataloader", "h2d", "forward"}) auto s = p.stage(n);
    {
      auto s = p.stage("loss");
      std::this_thread::sleep_for(std::chrono::milliseconds(loss_ms));
    }
    for (const char* n : {"backward", "optimizer", "ema"}) auto s = p.stage(n);
    p.end_step(4);
  }
  (void)p.end_epoch();
  p.finish();
  io::write_file_atomic(dir + "/args.yaml", "epochs: 1\nname: x\nworkers: " + std::to_string(workers) + "\n");
}

TEST(Compare, InjectedDelayInOneStageFlagsExactlyThatStage) {
  const std::string a = test::scratch_dir("run_a"), b = test::scratch_dir("run_b");
  run(a, 2, 2);
  run(b, 12, 4);  // +10 ms in loss only
  const auto r = compare_runs(a, b);
  EXPECT_EQ(r.flagged, std::vector<std::string>{"loss"}) << r.report;
  EXPECT_NE(r.verdict.find("loss"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("slower"), std::string::npos) << r.verdict;
  EXPECT_EQ(r.verdict.rfind("loss ", 0), 0u) << r.verdict;  // the one change named first
  EXPECT_EQ(r.verdict.find("; not significant"), std::string::npos) << r.verdict;
  ASSERT_EQ(r.settings.size(), 1u);
  EXPECT_EQ(r.settings[0].first, "workers");
  const auto self = compare_runs(a, a);  // a run against itself: nothing
  EXPECT_TRUE(self.flagged.empty()) << self.report;
}

/// Six windows of a run: per step `loader` s in "dataloader" and `fwd` s in "forward" (each window ± a small
/// alternating jitter), 16 images per step.
std::vector<WindowSummary> windows(double loader, double fwd, double jitter) {
  std::vector<WindowSummary> ws;
  for (int i = 0; i < 6; ++i) {
    const double e = (i % 2 ? 1 : -1) * jitter * (1 + i % 3);
    WindowSummary w;
    w.steps = 10;
    w.images = 160;
    StageSummary dl, fw;
    dl.name = "dataloader";
    dl.count = 10;
    dl.mean = loader * (1 + e);
    fw.name = "forward";
    fw.count = 10;
    fw.mean = fwd * (1 + e);
    w.stages = {dl, fw};
    w.step.name = "step";
    w.step.count = 10;
    w.step.mean = dl.mean + fw.mean;
    w.images_per_s = 16 / w.step.mean;
    ws.push_back(w);
  }
  return ws;
}

TEST(Compare, VerdictSaysUnchangedOnlyOfWhatIsNotSignificant) {
  // B: the loader 16x slower (significant, large) and forward 3 % faster (significant, under min_rel): the verdict
  // names the loader, the step and img/s as changed and forward as a small significant difference, not "unchanged".
  const auto r = compare_windows(windows(0.010, 0.100, 0.001), windows(0.170, 0.097, 0.001));
  EXPECT_EQ(r.flagged, std::vector<std::string>{"dataloader"}) << r.verdict;
  EXPECT_NE(r.verdict.find("dataloader 1600% slower (p < 0.001)"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("img/s"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("lower"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("significant but under 5% of the stage or 1% of a step: forward -3%"), std::string::npos)
      << r.verdict;
  EXPECT_EQ(r.verdict.find("unchanged"), std::string::npos) << r.verdict;  // every row is significant

  // Forward's difference drowned in noise: it is called unchanged, and then so is everything else.
  const auto q = compare_windows(windows(0.010, 0.100, 0.05), windows(0.170, 0.097, 0.05));
  EXPECT_NE(q.verdict.find("everything else unchanged"), std::string::npos) << q.verdict;

  // A large change that is not significant is reported as such, not as unchanged; the rest is named.
  std::vector<CompareRow> rows(3);
  rows[0] = {"dataloader", 6, 6, 0.01, 0.17, 16.0, 1e-6, 1e-3, 9.0, true, true};
  rows[1] = {"forward", 6, 6, 0.1, 0.1, 0.0, 0.9, 0.9, 0.0, false, false};
  rows[2] = {"img/s", 6, 6, 100, 126.8, 0.268, 0.03, 0.04, 1.2, true, false};
  const std::string v = verdict_of(rows);
  EXPECT_EQ(v, "dataloader 1600% slower (p < 0.001); not significant (Welch p ≥ 0.01): img/s +27% (p = 0.030); "
               "unchanged: forward") << v;
}

}  // namespace
}  // namespace yolo11::instrument
