#pragma once
// Ultralytics .pt checkpoints (torch.save's zip: <name>/data.pkl, <name>/data/<key> raw storages, <name>/version)
// read without Python: an own reader of the zip's central directory (stored entries only, as torch writes them) and
// the non-executing pickle reader of include/yolo11/io/pickle.h.
#include <ATen/Tensor.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace yolo11::io {

/// What a YOLO detection checkpoint holds, as the reference's loader sees it (the `ema` model when not None,
/// else `model`).
struct PtCheckpoint {
  /// The model's state_dict under Ultralytics keys (model.0.conv.weight ... model.23.dfl.conv.weight), in torch's
  /// order, BatchNorm num_batches_tracked included. CPU, contiguous; floating tensors widened to float32 (as the
  /// reference's `.float()`), integer tensors (num_batches_tracked: int64) as stored.
  std::vector<std::pair<std::string, at::Tensor>> state_dict;
  std::vector<std::string> names;  ///< class id → name (model.names), nc entries
  int64_t nc = 0;
  /// The model's yaml dict (scale, nc, backbone, head, ...) plus "sppf_act": whether SPPF.cv1 has an activation
  /// (SiLU: true; Identity, as 8.4.50's SPPF: false), the setting of model::ModelOptions::sppf_act.
  nlohmann::json yaml;
  std::string scale;               ///< yaml "scale" (n | s | m | l | x); empty when the yaml has none
  std::vector<double> stride;      ///< model.stride, e.g. {8, 16, 32}
  nlohmann::json train_args;       ///< the checkpoint's train_args (null when absent)
  std::string source;              ///< "ema" or "model"
  std::string model_class;         ///< e.g. "ultralytics.nn.tasks.DetectionModel"
};

/// True when `path` names a .pt / .pth file (by extension).
bool is_pt_path(const std::string& path);

/// Reads an Ultralytics detection checkpoint. Throws std::runtime_error naming the file and the defect: unreadable
/// or truncated zip, a compressed or missing entry, a malformed pickle, a global outside the reader's allow-list (the
/// name is in the message), a storage shorter than a tensor on it, nesting or size bounds exceeded, no `model`/`ema`
/// object, or a model that is not a YOLO detection model (ultralytics.nn.tasks.DetectionModel with a Detect head).
PtCheckpoint read_pt_checkpoint(const std::string& path);

}  // namespace yolo11::io
