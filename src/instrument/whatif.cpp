// instrument::what_if (include/yolo11/instrument/whatif.h): critical-path estimate of the step without each stage.
#include "yolo11/instrument/whatif.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "yolo11/instrument/profiler.h"

namespace yolo11::instrument {

std::vector<WhatIf> what_if(const WindowSummary& w, int workers) {
  std::vector<WhatIf> out;
  if (w.steps <= 0 || w.step.mean <= 0) return out;
  const double T = w.step.mean;
  // Mean per step (stages that run on some steps only, e.g. optimizer under accumulation, count per step).
  auto per_step = [&](const StageSummary& s) { return s.total / static_cast<double>(w.steps); };
  const StageSummary* dl = w.find("dataloader");
  const double D = dl != nullptr ? per_step(*dl) : 0.0;
  const double C = std::max(0.0, T - D);
  const double P = D > 0.02 * T ? T : 0.0;  // loader period: seen only through the trainer's waits
  for (const char* name : kStepStages) {
    const StageSummary* s = w.find(name);
    if (s == nullptr) continue;
    WhatIf x;
    x.stage = name;
    x.stage_s = per_step(*s);
    if (x.stage == "dataloader") x.step_s = C;
    else if (workers == 0) x.step_s = std::max(0.0, T - x.stage_s);
    else x.step_s = std::max(std::max(0.0, C - x.stage_s), P);
    out.push_back(x);
  }
  return out;
}

std::string format_what_if(const std::vector<WhatIf>& v, double step_s) {
  if (v.empty() || step_s <= 0) return "";
  std::string s = fmt::format("what-if (step {:.0f} ms, each stage at 0 s): without", 1000 * step_s);
  for (size_t i = 0; i < v.size(); ++i)
    s += fmt::format("{} {} {:.0f} ms ({:+.0f}%)", i ? "," : "", v[i].stage, 1000 * v[i].step_s,
                     100.0 * (v[i].step_s / step_s - 1.0));
  return s;
}

}  // namespace yolo11::instrument
