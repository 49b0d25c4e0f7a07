// instrument::what_if (include/yolo11/instrument/whatif.h) on fixed stage times: the loader in parallel (workers > 0)
// and serial (workers = 0), data-bound and compute-bound, the loader's CPU contention on a CPU device; and the
// profiler's loader CPU clock that feeds it (loader_cpu_s / loader_cpu_wait_s, through breakdown.csv).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "yolo11/instrument/analyze.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/whatif.h"
#include "yolo11/io/file.h"

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

namespace {

// 2 intra-op threads on 2 cores, the model on the CPU: one loader worker competes with the compute.
constexpr CpuShare kTwoThreadsTwoCores{true, 2, 2};

WindowSummary with_loader_cpu(WindowSummary w, double per_step, double wait_per_step) {
  w.loader_cpu_s = per_step * static_cast<double>(w.steps);
  w.loader_cpu_wait_s = wait_per_step * static_cast<double>(w.steps);
  return w;
}

}  // namespace

TEST(WhatIf, LoaderCpuDuringComputeIsSavedWhenTheWorkersShareTheComputeCores) {
  // Compute-bound (wait 1 % of the step), C = 0.6 s; the worker used 0.12 s of CPU per step, 0.02 s of it during
  // the wait: B_c = 0.10 s ran during compute. One worker on cores all busy with compute: X = B_c.
  const WindowSummary w = with_loader_cpu(window(0.006, 0.2, 0.3, 0.1), 0.12, 0.02);
  const auto v = what_if(w, /*workers=*/1, kTwoThreadsTwoCores);
  EXPECT_NEAR(predicted(v, "dataloader"), 0.6 - 0.10, 1e-12);
  EXPECT_NEAR(v.front().contention_s, 0.10, 1e-12);
  EXPECT_NEAR(predicted(v, "forward"), 0.4, 1e-12);  // other stages as before
  const std::string line = format_what_if(v, w.step.mean);
  EXPECT_NE(line.find("without dataloader 500 ms (-17%, 100 ms of it the loader's CPU contention)"),
            std::string::npos)
      << line;
  // Two workers on two distinct cores each halve one compute thread for half as long: X = B_c / 2.
  EXPECT_NEAR(what_if(w, 2, kTwoThreadsTwoCores).front().contention_s, 0.05, 1e-12);
  // 1 compute thread + 2 workers on 2 cores: one core is free of compute, X = B_c / (1 + 2).
  EXPECT_NEAR(what_if(w, 2, CpuShare{true, 1, 2}).front().contention_s, 0.10 / 3, 1e-12);
}

TEST(WhatIf, NoContentionWhenTheWorkersHaveCoresOfTheirOwnOrTheComputeIsNotOnTheCpu) {
  const WindowSummary w = with_loader_cpu(window(0.006, 0.2, 0.3, 0.1), 0.12, 0.0);
  EXPECT_NEAR(predicted(what_if(w, 1, CpuShare{true, 1, 2}), "dataloader"), 0.6, 1e-12);    // 1 + 1 ≤ 2 cores
  EXPECT_NEAR(predicted(what_if(w, 4, CpuShare{true, 8, 16}), "dataloader"), 0.6, 1e-12);   // 8 + 4 ≤ 16
  EXPECT_NEAR(predicted(what_if(w, 1, CpuShare{false, 2, 2}), "dataloader"), 0.6, 1e-12);   // CUDA device
  EXPECT_NEAR(predicted(what_if(w, 1, CpuShare{true, 0, 2}), "dataloader"), 0.6, 1e-12);    // threads unknown
  EXPECT_NEAR(predicted(what_if(w, 1), "dataloader"), 0.6, 1e-12);                          // no CPU share given
  EXPECT_NEAR(predicted(what_if(window(0.006, 0.2, 0.3, 0.1), 1, kTwoThreadsTwoCores), "dataloader"), 0.6,
              1e-12);  // no loader CPU reading (an older breakdown.csv)
  EXPECT_EQ(format_what_if(what_if(w, 1), 0.606).find("contention"), std::string::npos);
}

TEST(WhatIf, ContentionIsAtMostHalfTheCompute) {
  // A worker using more CPU during compute than the compute's own time cannot have slowed it more than 2×.
  const WindowSummary w = with_loader_cpu(window(0.006, 0.2, 0.3, 0.1), 2.0, 0.0);
  EXPECT_NEAR(predicted(what_if(w, 1, kTwoThreadsTwoCores), "dataloader"), 0.3, 1e-12);
}

TEST(WhatIf, CpuShareFollowsTheAdviceContext) {
  AdviceContext c;
  c.device = "cpu", c.threads = 2, c.cores = 4;
  const CpuShare s = cpu_share(c);
  EXPECT_TRUE(s.compute_on_cpu);
  EXPECT_EQ(s.threads, 2);
  EXPECT_EQ(s.cores, 4);
  c.device = "cuda:0";
  EXPECT_FALSE(cpu_share(c).compute_on_cpu);
}

TEST(WhatIf, ProfilerRecordsTheLoaderCpuClockPerWindowAndInsideTheDataloaderStage) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("yolo11_whatif_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::atomic<double> clock{10.0};  // a fake loader CPU clock (s), advanced by hand
  {
    ProfilerOptions o;
    o.log_every = 2;
    o.log_lines = false;
    o.run_dir = dir.string();
    o.setting.workers = 1, o.setting.cores = 2, o.setting.threads = 2, o.setting.device = "cpu";
    Profiler p(o);
    p.set_loader_cpu_clock([&] { return clock.load(); });
    p.begin_epoch(0);
    for (int64_t i = 0; i < 4; ++i) {
      p.begin_step(i);
      {
        auto s = p.stage("dataloader");
        clock = clock + 0.01;  // 10 ms of loader CPU while the trainer waits
      }
      {
        auto s = p.stage("forward");
        clock = clock + 0.03;  // 30 ms while it computes
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      p.end_step(8);
    }
    const WindowSummary& last = p.last_window();
    EXPECT_NEAR(last.loader_cpu_s, 2 * 0.04, 1e-9);
    EXPECT_NEAR(last.loader_cpu_wait_s, 2 * 0.01, 1e-9);
    const std::string table = p.end_epoch();
    EXPECT_NE(table.find("of it the loader's CPU contention"), std::string::npos) << table;
    clock = clock + 5.0;  // between epochs (prefetch during val): no step's
    p.begin_epoch(1);
    for (int64_t i = 4; i < 6; ++i) {
      p.begin_step(i);
      { auto s = p.stage("dataloader"); }
      p.end_step(8);
    }
    EXPECT_NEAR(p.last_window().loader_cpu_s, 0.0, 1e-9);
    (void)p.end_epoch();
    // The other kinds of breakdown.csv row carry the new columns too (empty).
    p.record_loader(1, {LoaderPartStats{"decode", 4, 0.1, 0.02, 0.03, 0.5}}, "");
    p.record_ranks(analyze_ranks({rank_row(p.last_window()), rank_row(p.last_window())}));
    p.finish();
  }
  {
    std::istringstream in(yolo11::io::read_file((dir / "breakdown.csv").string()));
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    const size_t n = yolo11::io::split_csv_line(line).size();
    std::set<std::string> kinds;
    for (int no = 2; std::getline(in, line); ++no) {
      const auto f = yolo11::io::split_csv_line(line);
      EXPECT_EQ(f.size(), n) << "line " << no << ": " << line;
      kinds.insert(f.at(0));
    }
    EXPECT_EQ(kinds, (std::set<std::string>{"window", "epoch", "loader", "rank"}));
  }
  const auto windows = read_breakdown_csv((dir / "breakdown.csv").string());
  ASSERT_EQ(windows.size(), 3u);
  EXPECT_NEAR(windows[0].loader_cpu_s, 0.08, 1e-4);
  EXPECT_NEAR(windows[0].loader_cpu_wait_s, 0.02, 1e-4);
  const WindowSummary all = combine_windows(windows);
  EXPECT_NEAR(all.loader_cpu_s, 0.16, 1e-4);
  EXPECT_NEAR(all.loader_cpu_wait_s, 0.04, 1e-4);
  fs::remove_all(dir);
}
