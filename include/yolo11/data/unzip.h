#pragma once
// Zip datasets (`data=ds.zip`, as Ultralytics' check_det_dataset): unpacked once, safely, into the datasets dir.
#include <string>

namespace yolo11::data {

/// True when the build has zip support (libzip); without it unpack_dataset_zip throws saying so.
bool has_zip_support();

/// Unpacks `zip_path` into `datasets_dir` and returns the dataset YAML found inside. A zip whose entries share one
/// top-level directory is unpacked as is (ds.zip holding coco8/... → <datasets_dir>/coco8), otherwise into
/// <datasets_dir>/<zip stem>. It unpacks into a temporary directory and renames it into place, so a killed run
/// leaves no half dataset; an unchanged zip (same size and mtime, recorded in `.yolo11-unzipped`) is not unpacked
/// again. The YAML is the only *.yaml/*.yml in the unpacked tree, or the one named like the zip.
/// Throws std::runtime_error naming the zip: not a zip / unreadable; an entry with an absolute path, a '..'
/// component, an empty component ('a//b') or a symlink (path traversal; nothing is written); more bytes than the free space of datasets_dir
/// (with a 10 % margin); no YAML or several YAMLs (listing them; pass data=<the yaml> instead).
std::string unpack_dataset_zip(const std::string& zip_path, const std::string& datasets_dir);

}  // namespace yolo11::data
