#pragma once
// Loading a trained detector for validation / prediction from a weights file alone.
#include <string>
#include <vector>

#include "yolo11/model/yolo.h"

namespace yolo11::engine {

struct LoadedDetector {
  model::YOLO model{nullptr};
  std::string scale;                ///< n | s | m | l | x
  int64_t nc = 0;
  /// metadata "names" when present: a JSON list, or an {"id": name} object as tools/export_ultralytics_weights.py
  /// writes it; else "0".."nc-1"
  std::vector<std::string> names;
  std::string report;               ///< the weight-transfer report line
};

/// Builds YOLO11 from `model_yaml` with the scale and nc the weights imply (metadata "model_scale"/"nc" when
/// present, else inferred from tensor shapes: width of model.0 and entry count give the scale, the class
/// branch's last conv gives nc) and loads them (every entry must transfer). Throws std::runtime_error naming
/// the file when it is unreadable or matches no YOLO11 scale. A `.pt` / `.pth` path is read as an Ultralytics
/// checkpoint (io::read_pt_checkpoint): scale, nc, names and the SPPF form come from its model record; a safetensors
/// file's metadata "sppf_act": "false" (a run trained from such a .pt, engine/checkpoint.h) builds SPPF.cv1 without
/// activation.
LoadedDetector load_detector(const std::string& weights, const std::string& model_yaml = "configs/models/yolo11.yaml");

/// The network input of a batch of images (Ultralytics preprocess: `img.to(device).float() / 255`): uint8
/// [B, 3, H, W] RGB (any device; pinned host memory copies asynchronously) → float32 [B, 3, H, W] in [0, 1] on
/// `device`, channels_last (NHWC) memory when `channels_last` (the layout the trainer and validator run in), else
/// contiguous. Used by validation and prediction, and by training on CUDA (engine/preprocess.h). Throws
/// std::invalid_argument for another dtype.
at::Tensor to_input(const at::Tensor& images, const torch::Device& device, bool channels_last = true);

/// Test-time augmentation of a detector as the reference's DetectionModel._predict_augment: passes at scales
/// 1, 0.83 (left-right flipped) and 0.67 (bilinear resize to ⌊s·H⌋ × ⌊s·W⌋, padded with 0.447 bottom-right to
/// multiples of the largest stride), each decoded and mapped back to `x`'s pixels; the full-scale pass drops its
/// stride-32 anchors and the 0.67 pass its stride-8 anchors; the three are concatenated along the anchors.
/// x: (B, 3, H, W) float in [0, 1], H and W multiples of the largest stride. `feats` (optional): forward_feats(x)
/// already computed (reused for the scale-1 pass). Returns (B, 4 + nc, A') as YOLOImpl::decode.
at::Tensor predict_augment(model::YOLO& model, const at::Tensor& x, const std::vector<at::Tensor>* feats = nullptr);

}  // namespace yolo11::engine
