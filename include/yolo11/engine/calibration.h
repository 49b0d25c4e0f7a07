#pragma once
// The speed this model's compute should reach here: a short isolated calibration of forward + loss + backward at the
// run's batch, imgsz, precision, layout and threads, on a separate model copy (the run's weights, BN statistics and
// random streams are untouched), before the loader starts. Cached per setting in <user cache>/compute_calibration.json
// and measured again when older than 30 days or found implausible (a run computing faster than its calibration:
// the calibration ran on a busy machine). The diagnosis compares each window's compute against it
// (instrument/diagnosis.h, "compute slowed").
#include <string>

#include "yolo11/engine/amp.h"
#include "yolo11/model/yolo.h"

namespace yolo11::engine {

struct ComputeCalibration {
  double step_s = 0;   ///< forward + loss + backward per step, s (the fastest of the timed steps); 0 = unknown
  std::string key;     ///< the setting: model, batch, imgsz, precision, threads, device, LibTorch
  bool cached = false;
  double took_s = 0;   ///< wall time this call cost (≈ 0 when cached)
  std::string line;    ///< one log line: the figure, the setting, cached or measured and its cost
};

/// Calibrates (or reads the cache for) `mo` at `batch` × `imgsz` in `amp`'s precision on `device` with the current
/// intra-op threads: 1 warm-up and 2 timed steps on a constant image with 4 synthetic boxes per image. CPU and
/// CUDA; the default CPU generator's state is saved and restored. Never throws: a failure gives step_s 0 and says why.
ComputeCalibration calibrate_compute(const model::ModelOptions& mo, int64_t batch, int64_t imgsz, const AmpPolicy& amp,
                                     const c10::Device& device, bool use_cache = true);

/// Drops the cache entry `key` (a run computed faster than it: measured on a busy machine). False when absent.
bool forget_compute_calibration(const std::string& key);

}  // namespace yolo11::engine
