#pragma once
// AutoBatch (Ultralytics' check_train_batch_size): `batch=-1` trains at the batch that fills 60 % of the device memory,
// `batch=0.7` at 70 %. On CUDA a few probe steps (forward + backward of the output sum at batch 1, 2, 4, 8, 16, as
// Ultralytics' profile_ops) measure the allocator peak; a line fitted through (batch, bytes) gives the batch for the
// fraction. On CPU there is no device memory to fill: the run falls back to batch=16 (Ultralytics' CPU default) and says so.
#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "yolo11/config/train_config.h"

namespace yolo11::engine {

struct AutoBatchFit {
  int64_t batch = 16;        ///< the chosen batch (`fallback` when the fit is unusable)
  bool fitted = false;       ///< false: fewer than 2 samples, a non-positive slope or a result outside [1, 1024]
  double slope_bytes = 0;    ///< bytes per image of the fitted line
  double intercept_bytes = 0;
  std::string note;          ///< why the fallback was used (empty when fitted)
};

/// Least-squares line bytes = intercept + slope·batch through `samples` (batch, peak bytes); the batch whose predicted
/// memory is `fraction` (0, 1) of `free_bytes`, floored, within [1, 1024]; else `fallback` with a note. Pure.
AutoBatchFit fit_batch(const std::vector<std::pair<int64_t, double>>& samples, double free_bytes, double fraction,
                       int64_t fallback = 16);

/// Boxes per image in AutoBatch's probe steps, so the loss and the assigner's (B, boxes, anchors) tensors are in the
/// measured memory (Ultralytics' profile_ops max_num_obj; a mosaic of coco images holds tens to ~100 boxes).
inline constexpr int64_t kAutoBatchProbeTargets = 100;

/// Resolves cfg.batch_fraction (> 0) into cfg.batch for `device` (the run's core::DevicePlan device: this rank's GPU)
/// and returns the line to log; clears batch_fraction. CPU: batch = 16 and a warning line saying AutoBatch needs a CUDA
/// device. CUDA builds: probes the model of cfg.model / cfg.model_scale (80 classes) in the precision choose_amp picks
/// on it, with the loss on kAutoBatchProbeTargets boxes per image, measures the allocator's peak RESERVED bytes per
/// batch and fits against the FREE device memory (cudaMemGetInfo) less the EMA and optimizer state (Ultralytics fits
/// reserved memory against total − reserved − allocated); the default RNG is reseeded with cfg.seed afterwards, so the
/// run's random draws do not depend on the probe. A fixed batch (fraction 0) returns "".
std::string resolve_batch(config::TrainConfig& cfg, const c10::Device& device);

}  // namespace yolo11::engine
