// instrument::what_if (include/yolo11/instrument/whatif.h): critical-path estimate of the step without each stage.
#include "yolo11/instrument/whatif.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "yolo11/instrument/profiler.h"

namespace yolo11::instrument {

CpuShare cpu_share(const AdviceContext& ctx) {
  CpuShare c;
  c.compute_on_cpu = ctx.device == "cpu";
  c.threads = ctx.threads;
  c.cores = ctx.cores;
  return c;
}

namespace {

// X (whatif.h): the compute time per step that the loader workers' CPU use during compute cost; 0 when they have
// cores of their own, the compute is not on the CPU, or the window has no loader CPU reading.
double loader_contention(const WindowSummary& w, int workers, const CpuShare& cpu, double C) {
  if (!cpu.compute_on_cpu || cpu.threads <= 0 || cpu.cores <= 0 || workers <= 0 || w.loader_cpu_s < 0 ||
      w.loader_cpu_wait_s < 0)
    return 0.0;
  const int p = std::min(cpu.threads, cpu.cores), k = std::min(workers, cpu.cores);
  if (p + k <= cpu.cores) return 0.0;
  const double n = static_cast<double>(w.steps);
  const double B = w.loader_cpu_s / n;
  const double Bc = std::max(0.0, B - std::clamp(w.loader_cpu_wait_s / n, 0.0, B));
  const int free_cores = std::max(0, cpu.cores - p);
  return std::min(Bc / static_cast<double>(free_cores + k), 0.5 * C);
}

}  // namespace

std::vector<WhatIf> what_if(const WindowSummary& w, int workers, const CpuShare& cpu) {
  std::vector<WhatIf> out;
  if (w.steps <= 0 || w.step.mean <= 0) return out;
  const double T = w.step.mean;
  // Mean per step (stages that run on some steps only, e.g. optimizer under accumulation, count per step).
  auto per_step = [&](const StageSummary& s) { return s.total / static_cast<double>(w.steps); };
  const StageSummary* dl = w.find(StepStage::dataloader);
  const double D = dl != nullptr ? per_step(*dl) : 0.0;
  const double C = std::max(0.0, T - D);
  const double P = D > 0.02 * T ? T : 0.0;  // loader period: seen only through the trainer's waits
  for (const char* name : kStepStages) {
    const StageSummary* s = w.find(name);
    if (s == nullptr) continue;
    WhatIf x;
    x.stage = name;
    x.stage_s = per_step(*s);
    if (x.stage == stage_name(StepStage::dataloader)) {
      x.contention_s = loader_contention(w, workers, cpu, C);
      x.step_s = C - x.contention_s;
    } else if (workers == 0) {
      x.step_s = std::max(0.0, T - x.stage_s);
    } else {
      x.step_s = std::max(std::max(0.0, C - x.stage_s), P);
    }
    out.push_back(x);
  }
  return out;
}

std::string format_what_if(const std::vector<WhatIf>& v, double step_s) {
  if (v.empty() || step_s <= 0) return "";
  std::string s = fmt::format("what-if (step {:.0f} ms, each stage at 0 s): without", 1000 * step_s);
  for (size_t i = 0; i < v.size(); ++i) {
    s += fmt::format("{} {} {:.0f} ms ({:+.0f}%", i ? "," : "", v[i].stage, 1000 * v[i].step_s,
                     100.0 * (v[i].step_s / step_s - 1.0));
    if (v[i].contention_s >= 0.0005)
      s += fmt::format(", {:.0f} ms of it the loader's CPU contention", 1000 * v[i].contention_s);
    s += ")";
  }
  return s;
}

}  // namespace yolo11::instrument
