// Instrumentation overhead: per-step wall time with instrument=off vs basic vs full, interleaved in one run.
// Synthetic step: the seven step stages spin for fixed wall times that add up to a realistic GPU training step
// (default 50 ms: dataloader 5, h2d 2, forward 12, loss 3, backward 22, optimizer 4, ema 2 ms), while a loader
// thread marks load/mosaic/augment/collate ranges. Because stage bodies spin to a fixed duration, the measured
// step time is that duration plus exactly what the instrumentation adds, so machine noise does not swamp a
// sub-1 % effect. Modes rotate every block of steps so drift hits all modes alike. Also prints the cost of a
// single stage() / ScopedRange call per level.
// Usage: yolo11-bench-instrument [step_ms=50] [rounds=20] [steps_per_block=10]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/range.h"
#include "yolo11/instrument/trace.h"

using namespace yolo11::instrument;

namespace {

// Spins for `ns`; returns the wall time actually spent (overshoots when the OS preempts us at the deadline).
int64_t spin_for(int64_t ns) {
  const int64_t start = now_ns(), until = start + ns;
  int64_t t = start;
  while ((t = now_ns()) < until) {
  }
  return t - start;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

ProfilerOptions options(Level level, const std::string& dir, int64_t total_steps) {
  ProfilerOptions o;
  o.level = level;
  o.log_every = 10;
  o.log_lines = false;
  o.run_dir = level == Level::off ? "" : dir;
  if (level == Level::full) o.trace_steps = std::pair<int64_t, int64_t>(0, total_steps);  // trace every step
  return o;
}

// ns per stage() open/close (and per ScopedRange) at a level, outside any step timing.
double call_cost_ns(Level level, bool scoped_range, const std::string& dir) {
  Profiler p(options(level, dir, 1 << 30));
  constexpr int kCalls = 200000;
  p.begin_epoch(0);
  p.begin_step(0);
  const int64_t t0 = now_ns();
  for (int i = 0; i < kCalls; ++i) {
    if (scoped_range) {
      ScopedRange r(LoaderStage::load);
    } else {
      auto s = p.stage(StepStage::forward);
    }
  }
  const double ns = static_cast<double>(now_ns() - t0) / kCalls;
  p.end_step(1);
  p.end_epoch();
  trace::clear();  // do not write 200k events
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  const double step_ms = argc > 1 ? std::atof(argv[1]) : 50.0;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
  const int block = argc > 3 ? std::atoi(argv[3]) : 10;
  const std::string dir = (std::filesystem::temp_directory_path() / "yolo11_bench_instrument").string();
  std::filesystem::create_directories(dir);

  // Stage shares of a step (sum 1).
  const std::vector<std::pair<StepStage, double>> stages = {
      {StepStage::dataloader, 0.10}, {StepStage::h2d, 0.04},       {StepStage::forward, 0.24}, {StepStage::loss, 0.06},
      {StepStage::backward, 0.44},   {StepStage::optimizer, 0.08}, {StepStage::ema, 0.04}};
  std::atomic<bool> stop{false};
  std::thread loader([&] {
    name_this_thread("loader 0");
    while (!stop.load(std::memory_order_relaxed)) {
      {
        ScopedRange load(LoaderStage::load);
        {
          ScopedRange m(LoaderStage::mosaic);
          spin_for(200'000);
        }
        {
          ScopedRange a(LoaderStage::augment);
          spin_for(100'000);
        }
      }
      {
        ScopedRange c(LoaderStage::collate);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  });

  const std::vector<Level> levels = {Level::off, Level::basic, Level::full};
  std::map<Level, std::vector<double>> step_s, glue_s;  // glue: step wall time minus the stage bodies
  int64_t global_step = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < levels.size(); ++k) {
      const Level level = levels[(k + static_cast<size_t>(r)) % levels.size()];  // rotate the order
      Profiler p(options(level, dir, int64_t{1} << 40));
      p.begin_epoch(r);
      for (int i = 0; i < block; ++i, ++global_step) {
        const int64_t t0 = now_ns();
        int64_t body = 0;
        p.begin_step(global_step);
        for (const auto& [name, share] : stages) {
          auto s = p.stage(name);
          body += spin_for(static_cast<int64_t>(share * step_ms * 1e6));
        }
        p.end_step(16);
        if (auto line = p.take_window_line()) (void)line;
        const int64_t wall = now_ns() - t0;
        step_s[level].push_back(static_cast<double>(wall) * 1e-9);
        glue_s[level].push_back(static_cast<double>(wall - body) * 1e-9);
      }
      p.end_epoch();
      p.finish();
    }
  }
  stop = true;
  loader.join();

  const double off_med = median(step_s[Level::off]), off_mean = mean(step_s[Level::off]);
  std::printf("synthetic step %.1f ms, %d rounds x %d steps per level, interleaved\n", step_ms, rounds, block);
  std::printf("%-6s %11s %11s %13s %13s %13s %13s %14s\n", "level", "median ms", "mean ms", "median ovh %",
              "mean ovh %", "glue med us", "glue mean us", "added/step %");
  const double glue_off = median(glue_s[Level::off]);
  for (Level l : levels) {
    const double med = median(step_s[l]), mn = mean(step_s[l]);
    const double gmed = median(glue_s[l]), gmean = mean(glue_s[l]);
    std::printf("%-6s %11.4f %11.4f %13.4f %13.4f %13.2f %13.2f %14.5f\n", to_string(l), med * 1e3, mn * 1e3,
                100.0 * (med - off_med) / off_med, 100.0 * (mn - off_mean) / off_mean, gmed * 1e6, gmean * 1e6,
                100.0 * (gmed - glue_off) / (step_ms * 1e-3));
  }
  for (Level l : levels) {
    std::vector<double> g = glue_s[l];
    std::sort(g.rbegin(), g.rend());
    std::printf("%-6s largest glue (us):", to_string(l));
    for (size_t i = 0; i < std::min<size_t>(5, g.size()); ++i) std::printf(" %.0f", g[i] * 1e6);
    std::printf("\n");
  }
  std::printf("(glue = step wall time minus the stage bodies' own wall time: what the step costs besides its work;\n"
              " added/step = median glue above instrument=off, as a share of the nominal step)\n");
  std::printf("\nper-call cost (open+close), ns:\n");
  for (Level l : levels) {
    std::printf("%-6s stage() %8.1f   ScopedRange %8.1f\n", to_string(l), call_cost_ns(l, false, dir),
                call_cost_ns(l, true, dir));
  }
  std::filesystem::remove_all(dir);
  return 0;
}
