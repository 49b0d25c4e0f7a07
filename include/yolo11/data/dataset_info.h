#pragma once
// Ultralytics dataset YAML resolution: `path`, `train`/`val`/`test` (dir, .txt list or a list of those), `names`
// (list or {id: name}), optional `nc` checked against names.
#include <cstdint>
#include <string>
#include <vector>

namespace yolo11::data {

struct DatasetInfo {
  std::string yaml;                       ///< the YAML file it came from (absolute)
  std::string root;                       ///< resolved `path` (absolute, not symlink-resolved)
  std::vector<std::string> train, val, test;  ///< sources: dirs or .txt lists, absolute
  std::vector<std::string> names;         ///< class names, index = class id
  int64_t nc = 0;
  std::vector<std::string> warnings;      ///< keys of the YAML this trainer does not use (also logged)
};

/// Default datasets directory: env YOLO11_DATASETS_DIR, else <repo>/datasets.
std::string default_datasets_dir();

/// Parses an Ultralytics dataset YAML. A relative `path` is resolved against `datasets_dir` (default:
/// default_datasets_dir()), then $YOLO11_DATASETS_MIRROR, then the YAML's own directory; the first that exists
/// wins. Without `path` the YAML's directory is the root. Split entries are resolved against the root.
/// Throws std::runtime_error: missing file; missing dataset (naming every candidate path and
/// "run tools/get_dataset.sh NAME"); missing `train`/`val`; `names` that is a string, null, empty, a dict with
/// gaps or non-integer ids; `nc` disagreeing with names (each quoting the offending value); `channels` other than 3
/// (Ultralytics' grayscale/multispectral datasets: this trainer builds 3-channel models; gray images are read as
/// 3-channel). Keys it does not know (anything but path/train/val/test/names/nc/channels/download) are warned about.
/// A `.zip` is unpacked first into `datasets_dir` (unpack_dataset_zip) and the YAML inside is read; its root is the
/// YAML's own folder in the unpacked tree (`path: .`, the dataset's name or a path elsewhere all mean that folder),
/// or a folder inside the unpacked tree that a relative `path` names from there.
/// The dataset YAML `path` names: the path itself when it exists, else <configs dir>/<path>, else
/// configs/datasets/<file name>(.yaml) of the source tree or install (Ultralytics' short names: coco8.yaml, coco128).
/// Throws std::runtime_error listing where it looked.
std::string resolve_dataset_yaml(const std::string& path);

DatasetInfo load_dataset_yaml(const std::string& yaml_path, const std::string& datasets_dir = "");

}  // namespace yolo11::data
