#pragma once
// Ultralytics .pt checkpoints written from our weights, for the reference's tools (`YOLO("best.pt").val()`,
// `yolo export model=best.pt`, fine-tuning with Ultralytics). The reader of the same files is io/pt_checkpoint.h.
#include <ATen/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace yolo11::model {

class YOLOImpl;

/// What a .pt carries beside the model.
struct PtSaveInfo {
  std::vector<std::string> names;     ///< class id → name (model.names); empty: "0", "1", ... (nc entries)
  /// The run's settings as YAML (args.yaml), typed as PyYAML reads it: ckpt["train_args"] and model.args.
  std::string args_yaml;
  int64_t epoch = -1;                 ///< -1 as in the reference's final (stripped) checkpoints
  std::optional<double> best_fitness; ///< None when absent
  std::string date;                   ///< ISO 8601; empty: now (UTC)
};

/// Writes `state` (a state_dict under Ultralytics keys with `arch`'s shapes, e.g. the EMA weights) as the checkpoint
/// the reference trainer (Ultralytics 8.4.50) saves when it finishes: a torch.save zip whose pickle is a dict with
/// `model` = the ultralytics.nn.tasks.DetectionModel module tree (each module's class and the attributes its
/// forward, fuse and export read: layer indices, `from`, yaml, names, stride, Conv2d/BatchNorm2d/MaxPool2d/Upsample
/// settings) with float16 weights, `ema`/`optimizer` None, and `train_args`. The Detect head's anchor cache
/// (anchors/strides/shape) is left to the class defaults; the reference rebuilds it on the first forward.
/// Written atomically. Throws std::invalid_argument for a fused model or a state entry missing or of another shape
/// (naming the key), std::runtime_error naming `path` on I/O failure.
void save_pt(const YOLOImpl& arch, const std::vector<std::pair<std::string, at::Tensor>>& state,
             const std::string& path, const PtSaveInfo& info);

}  // namespace yolo11::model
