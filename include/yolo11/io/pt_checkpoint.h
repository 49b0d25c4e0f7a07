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

#include "yolo11/io/pickle.h"

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

/// The whole unpickled data.pkl of a torch.save file (tensors rebuilt on their storages as stored, e.g. float16;
/// classes as records), for tools and tests that look past the state_dict. Throws as read_pt_checkpoint for the
/// container and the pickle.
pickle::Ref read_pt_pickle(const std::string& path);

/// One tensor storage of a .pt: its key (the pickle's persistent id, stored as <archive>/data/<key>) and raw bytes in
/// little-endian element order.
struct PtStorage {
  std::string key;
  std::string bytes;
};

/// Writes a torch.save zip container atomically (io::write_file_atomic): <archive>/data.pkl (the pickle),
/// <archive>/byteorder ("little"), <archive>/data/<key> for each storage and <archive>/version ("3"), stored
/// uncompressed with each entry's data aligned to 64 bytes, as torch.save does. Throws std::invalid_argument for an
/// archive name that is empty or holds '/', or an archive over 4 GiB (no zip64 here); std::runtime_error naming
/// `path` on I/O failure.
void write_pt_archive(const std::string& path, const std::string& archive, const std::string& data_pkl,
                      const std::vector<PtStorage>& storages);

}  // namespace yolo11::io
