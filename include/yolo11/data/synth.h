#pragma once
// A small synthetic detection dataset: filled shapes (0 rect, 1 ellipse, 2 triangle) on textured backgrounds, with
// exact labels (the bounding box of each shape's drawn pixels), train + val splits and a dataset YAML.
#include <cstdint>
#include <string>

namespace yolo11::data {

struct SynthOptions {
  int64_t train = 64, val = 16;  ///< image counts
  int64_t imgsz = 256;           ///< images are imgsz × imgsz (± up to 25 % in width when `vary_aspect`)
  bool vary_aspect = true;
  int max_objects = 4;           ///< 1..max_objects non-overlapping shapes per image
  uint64_t seed = 0;
  std::string ext = ".png";      ///< ".png" (lossless, exact) or ".jpg"
};

/// Writes <dir>/images/{train,val}/*.ext, <dir>/labels/{train,val}/*.txt and <dir>/data.yaml (path: <dir>).
/// Deterministic in `seed`. Returns the YAML path. Throws std::runtime_error on I/O errors.
std::string write_synthetic_dataset(const std::string& dir, const SynthOptions& o = {});

}  // namespace yolo11::data
