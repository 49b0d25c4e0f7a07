#pragma once
// What-if estimates: "if this stage took 0 s the step would take X ms", a critical-path model of one step from its
// stage means. The trainer thread runs dataloader (a wait) → h2d → forward → loss → backward → [optimizer → ema];
// with workers > 0 the loader builds batches in parallel, so a step takes max(trainer work C, loader period P) where
// C = step − data wait. P is seen only when the trainer waits: data wait > 2 % of the step means the loader is the
// critical path (P ≈ step); otherwise it keeps up and P is taken as 0. Hence
//   without dataloader: C                (the wait disappears; also for workers = 0, where it is the loading itself)
//   without stage s:    max(C − s, P)    (workers > 0; a data-bound step does not get faster)
//                       step − s         (workers = 0: loading and compute are serial)
// Not modelled: on a CPU the loader threads share cores with compute, so removing compute work could also speed the
// loader up (the estimate is then pessimistic for data-bound CPU runs). No torch dependency.
#include <string>
#include <vector>

#include "yolo11/instrument/stats.h"

namespace yolo11::instrument {

struct WhatIf {
  std::string stage;
  double stage_s = 0;  ///< the stage's mean time per step (s)
  double step_s = 0;   ///< predicted step time without it (s)
};

/// One entry per step stage present in `w` (kStepStages order); empty when `w` has no steps. Pure.
std::vector<WhatIf> what_if(const WindowSummary& w, int workers);
/// "what-if (step 640 ms): without dataloader 600 ms (−6%), h2d 640 ms (−0%), forward 450 ms (−30%), ..."
std::string format_what_if(const std::vector<WhatIf>& v, double step_s);

}  // namespace yolo11::instrument
