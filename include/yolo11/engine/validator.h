#pragma once
// engine::Validator: runs a model over a validation split the way Ultralytics' DetectionValidator does:
// letterboxed images (no upscaling past load_image), NMS (conf 0.001, iou 0.7, max_det 300, multi-label),
// matching in network-input pixel space at IoU 0.50:0.05:0.95, AP by 101-point interpolation.
// The loader decides the input shapes (engine::make_val_loader: rect batches in training, imgsz × imgsz for
// `yolo11 val`, as the reference's two validators); docs/loss_metrics.md lists both configurations.
#include <torch/torch.h>

#include <array>
#include <memory>
#include <optional>
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
  /// val_batch{0,1,2}_labels.jpg / _pred.jpg, confusion_matrix.png, confusion_matrix_normalized.png,
  /// confusion_matrix.csv and the PR / F1 / P / R curves into save_dir
  bool plots = true;
  std::string save_dir;       ///< where plots and files go ("" = none)
  bool verbose = true;        ///< print the per-class table
  bool channels_last = true;  ///< feed NHWC batches (the trainer's val model is channels_last)
  bool agnostic_nms = false;  ///< one NMS over all classes
  bool augment = false;       ///< test-time augmentation (engine::predict_augment)
  bool half = false;          ///< float16 input (the caller converts the model; CUDA only, as the reference)
  /// On a CUDA device: one untimed forward of the first batch before the timed loop, so that "Speed:" leaves out the
  /// process's CUDA start-up (context, cuDNN handles, lazy kernel loading: 65 ms/image over coco128's 8 batches on
  /// an H200, docs/gpu.md), as the reference's standalone validator warms its model up. Ignored on the CPU.
  bool warmup = false;
  bool save_json = false;     ///< save_dir/predictions.json: COCO results (original-image pixels)
  bool save_txt = false;      ///< save_dir/labels/<stem>.txt: class cx cy w h (normalized to the original image)
  bool save_conf = false;     ///< append the confidence to each save_txt line
  bool keep_images = false;   ///< fill ValResult::per_image (tests, golden comparisons)
  /// category_id of each class in predictions.json (engine::coco_class_map): COCO's 91 ids for COCO's own
  /// val2017/test-dev2017 lists, else class + 1 (the reference's rule). Empty = class + 1.
  std::vector<int64_t> class_map;
};

/// What the validator saw and predicted for one image (ValidatorOptions::keep_images).
struct ValImage {
  std::string im_file;
  std::array<int64_t, 2> input_hw{};  ///< letterboxed network input (h, w), pixels
  std::array<int64_t, 2> ori_hw{};    ///< original image (h, w), pixels
  std::array<double, 4> ratio_pad{};  ///< (ratio_h, ratio_w, pad_w, pad_h) of the letterbox
  at::Tensor target_cls;              ///< (m) int64
  at::Tensor target_xyxy;             ///< (m, 4) float32, network-input pixels
  at::Tensor pred;                    ///< (n, 6) float32 [x1, y1, x2, y2, conf, cls], network-input pixels, NMS order
};

struct ValResult {
  metrics::DetMetrics::Results metrics;
  std::vector<double> loss_items{0, 0, 0};  ///< mean val box, cls, dfl loss per batch (as Ultralytics logs them)
  double ms_preprocess = 0, ms_inference = 0, ms_loss = 0, ms_postprocess = 0;  ///< per image
  int64_t images = 0, instances = 0;
  std::string table;  ///< the printed per-class table
  std::string precision = "float32";  ///< the forward's: "float32", or "bfloat16" / "float16" under autocast
  std::vector<ValImage> per_image;  ///< in loader order, when ValidatorOptions::keep_images
};

class Validator {
 public:
  Validator(std::shared_ptr<data::Loader> loader, std::vector<std::string> names, ValidatorOptions opt);
  /// Evaluates `model` (switched to eval mode and back) on `device`. With `criterion`, also the val losses
  /// (computed on the un-augmented pass). `plots` and `verbose` override ValidatorOptions::plots / verbose for this
  /// run (the trainer plots and prints the per-class rows at its last validation only, as the reference).
  /// `autocast` (Half or BFloat16): the model's forward under autocast to that dtype, its outputs turned back to
  /// float32 before decoding, the loss and NMS (box coordinates keep float32's precision); the trainer passes its
  /// own precision, as the reference validates in float16 during an AMP run. Throws what the loader, the model and
  /// file writing throw.
  ValResult run(model::YOLO& model, const loss::DetectionLoss* criterion, const torch::Device& device,
                std::optional<bool> plots = std::nullopt, std::optional<bool> verbose = std::nullopt,
                std::optional<c10::ScalarType> autocast = std::nullopt);

  const ValidatorOptions& options() const { return opt_; }

 private:
  std::shared_ptr<data::Loader> loader_;
  std::vector<std::string> names_;
  ValidatorOptions opt_;
};

}  // namespace yolo11::engine
