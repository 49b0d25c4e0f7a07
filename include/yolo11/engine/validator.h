#pragma once
// engine::Validator: runs a model over a validation split the way Ultralytics' DetectionValidator does:
// letterboxed images (no upscaling past load_image), NMS (conf 0.001, iou 0.7, max_det 300, multi-label),
// matching in network-input pixel space at IoU 0.50:0.05:0.95, AP by 101-point interpolation.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "yolo11/data/loader.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/metrics/det_metrics.h"
#include "yolo11/model/yolo.h"

namespace yolo11::engine {

struct ValidatorOptions {
  double conf = 0.001;        ///< NMS confidence threshold (strictly greater passes)
  double iou = 0.7;           ///< NMS IoU threshold
  int64_t max_det = 300;      ///< detections kept per image
  bool plots = true;          ///< write val_batch0_labels.jpg / val_batch0_pred.jpg / confusion_matrix.png
  std::string save_dir;       ///< where plots go ("" = none)
  bool verbose = true;        ///< print the per-class table
  bool channels_last = true;  ///< feed NHWC batches (the trainer's val model is channels_last)
};

struct ValResult {
  metrics::DetMetrics::Results metrics;
  std::vector<double> loss_items{0, 0, 0};  ///< mean val box, cls, dfl loss per batch (as Ultralytics logs them)
  double ms_preprocess = 0, ms_inference = 0, ms_loss = 0, ms_postprocess = 0;  ///< per image
  int64_t images = 0, instances = 0;
  std::string table;  ///< the printed per-class table
};

class Validator {
 public:
  Validator(std::shared_ptr<data::Loader> loader, std::vector<std::string> names, ValidatorOptions opt);
  /// Evaluates `model` (switched to eval mode and back) on `device`. With `criterion`, also the val losses.
  ValResult run(model::YOLO& model, const loss::DetectionLoss* criterion, const torch::Device& device);

 private:
  std::shared_ptr<data::Loader> loader_;
  std::vector<std::string> names_;
  ValidatorOptions opt_;
};

}  // namespace yolo11::engine
