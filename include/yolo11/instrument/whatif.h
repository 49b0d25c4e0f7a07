#pragma once
// What-if estimates: "if this stage took 0 s the step would take X ms", a critical-path model of one step from its
// stage means. The trainer thread runs dataloader (a wait) → h2d → forward → loss → backward → [optimizer → ema];
// with workers > 0 the loader builds batches in parallel, so a step takes max(trainer work C, loader period P) where
// C = step − data wait. P is seen only when the trainer waits: data wait > 2 % of the step means the loader is the
// critical path (P ≈ step); otherwise it keeps up and P is taken as 0. Hence
//   without dataloader: C − X            (the wait disappears; also for workers = 0, where it is the loading itself)
//   without stage s:    max(C − s, P)    (workers > 0; a data-bound step does not get faster)
//                       step − s         (workers = 0: loading and compute are serial)
// X, the loader's CPU contention: on a CPU device the workers run on the cores the compute uses. When intra-op
// threads p + workers k exceed the cores N, the workers' CPU time during compute, B_c = loader_cpu_s −
// loader_cpu_wait_s per step (stats.h, measured from their thread CPU clocks), slows the compute down, and the
// compute alone would be faster. The compute's parallel regions split their work statically over p threads and end
// with the slowest: a worker sharing a core with one compute thread halves that thread, and with it the region, for
// as long as it runs there. With F = max(0, N − p) cores free of compute threads, the workers' CPU during compute
// costs the compute X = B_c / (F + min(k, N)) (X = B_c when one worker meets cores all busy with compute), at most
// half of C. Measured against runs without the loader (data=synthetic) in docs/sweeps.md. No torch dependency.
#include <string>
#include <vector>

#include "yolo11/instrument/diagnosis.h"
#include "yolo11/instrument/stats.h"

namespace yolo11::instrument {

/// How the compute shares the CPU with the loader workers.
struct CpuShare {
  bool compute_on_cpu = false;  ///< the model runs on the CPU (device "cpu"): the workers compete with it
  int threads = 0;              ///< intra-op compute threads; 0 = unknown (no contention modelled)
  int cores = 0;                ///< cores available to the process; 0 = unknown
};
/// From a run's advice context: compute_on_cpu when its device is "cpu".
CpuShare cpu_share(const AdviceContext& ctx);

struct WhatIf {
  std::string stage;
  double stage_s = 0;       ///< the stage's mean time per step (s)
  double step_s = 0;        ///< predicted step time without it (s)
  double contention_s = 0;  ///< dataloader only: X, the compute time the loader's CPU use cost per step (s)
};

/// One entry per step stage present in `w` (kStepStages order); empty when `w` has no steps. Pure.
std::vector<WhatIf> what_if(const WindowSummary& w, int workers, const CpuShare& cpu = {});
/// "what-if (step 640 ms, each stage at 0 s): without dataloader 600 ms (−6%, 40 ms of it the loader's CPU
/// contention), h2d 640 ms (−0%), forward 450 ms (−30%), ..."
std::string format_what_if(const std::vector<WhatIf>& v, double step_s);

}  // namespace yolo11::instrument
