#pragma once
// A detection dataset: verified images + labels of one split, optional image cache (ram / disk), load_image
// (long side → imgsz) and, for rect validation, the aspect-ratio order and per-batch shapes.
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <string>
#include <vector>

#include "yolo11/core/settings.h"
#include "yolo11/data/augment.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/labels.h"

namespace yolo11::data {

/// Dataset construction options (Ultralytics argument names).
struct DatasetOptions {
  int64_t imgsz = 640;
  core::CacheMode cache = core::CacheMode::off;  ///< images kept decoded: off, ram or disk (core/settings.h)
  bool single_cls = false;       ///< every class becomes 0 (after the `classes` filter)
  std::vector<int64_t> classes;  ///< keep only labels of these class ids (empty = all), as Ultralytics' `classes`
  double fraction = 1.0;         ///< use the first ⌈fraction·N⌉ images
  int64_t max_det = 300;         ///< images holding more instances are reported at scan time
  int64_t stride = 32;           ///< rect batch shapes are multiples of it
  bool rect = false;             ///< sort by aspect ratio and compute per-batch shapes (validation)
  int64_t batch = 16;            ///< batch size the rect shapes are computed for
  double pad = 0.5;              ///< rect padding (Ultralytics: 0.5 for val)
  bool require_instances = false;  ///< true for train: a split without any instance is an error
  int threads = 0;               ///< scan / cache threads (0 = hardware concurrency)
  /// In-memory buffer of recently loaded (resized) images, as Ultralytics' `buffer`: mosaic partners are then
  /// mostly served without decoding. −1 = min(N, 8·batch, 1000); 0 = off. Pixels are identical either way.
  int64_t buffer = -1;
};

/// Labels of one image after scanning: normalized xywh (of the original image) + class ids.
struct ImageLabels {
  std::vector<Box> xywhn;
  std::vector<int64_t> cls;
};

class Dataset {
 public:
  /// Lists the images of `sources` (dirs / .txt lists), verifies images and labels (label cache), drops corrupt
  /// images and degenerate boxes, prepares the image cache. Throws std::runtime_error: empty split (naming the
  /// sources); no instances at all when `require_instances` (naming the label path expected for the first image).
  Dataset(const std::vector<std::string>& sources, const DatasetInfo& info, const DatasetOptions& opt);

  size_t size() const { return im_files_.size(); }
  /// One line: "128 images, 2 backgrounds, 0 corrupt, 929 instances, 0 duplicates removed, 0 boxes dropped".
  std::string summary() const;
  /// Per-file warnings (each with its file[:line]).
  const std::vector<std::string>& warnings() const { return warnings_; }
  const ScanStats& stats() const { return stats_; }
  const DatasetInfo& info() const { return info_; }
  const DatasetOptions& options() const { return opt_; }

  const std::string& im_file(size_t i) const { return im_files_.at(i); }
  const ImageLabels& labels(size_t i) const { return labels_.at(i); }
  /// Original (h, w) in pixels (after EXIF orientation).
  std::array<int64_t, 2> ori_shape(size_t i) const { return shapes_.at(i); }
  /// (h, w) after load_image: long side = imgsz (ceil).
  std::array<int64_t, 2> resized_shape(size_t i) const;
  /// load_image + labels: BGR uint8 with long side imgsz (from the image cache when enabled), normalized xywh.
  LoadedSample load(size_t i) const;
  /// Sample source for the transform chains.
  SampleSource source() const;

  /// Rect mode: network input shape (h, w) of the batch holding image i (images are in aspect-ratio order).
  std::array<int, 2> batch_shape(size_t i) const;

  /// Estimated bytes of all images resized to imgsz (what cache=ram needs).
  int64_t cache_bytes_estimate() const;
  /// The cache actually in use: `DatasetOptions::cache`, except that ram falls back to off when memory is short.
  core::CacheMode cache_mode() const { return cache_mode_; }

 private:
  cv::Mat load_uncached(size_t i) const;
  /// cache=disk entry of image i, tied to its exact file (name with extension, size, mtime): beside the image
  /// ("a.jpg.<16 hex>.npy") or, when `user_cache`, under $YOLO11_CACHE_DIR (or ~/.cache/yolo11)/images.
  std::string npy_path(size_t i, bool user_cache) const;
  static void remove_stale_npy(const std::string& im_file, const std::string& keep);

  DatasetInfo info_;
  DatasetOptions opt_;
  ScanStats stats_;
  int64_t dropped_boxes_ = 0;
  std::vector<std::string> im_files_;
  std::vector<ImageLabels> labels_;
  std::vector<std::array<int64_t, 2>> shapes_;
  std::vector<std::string> warnings_;
  std::vector<std::array<int, 2>> batch_shapes_;  // per batch (rect)
  core::CacheMode cache_mode_ = core::CacheMode::off;
  std::vector<cv::Mat> ram_;            // cache=ram
  std::vector<std::string> npy_files_;  // cache=disk
  // recently loaded images (FIFO), guarded by buf_m_
  size_t buf_cap_ = 0;
  mutable std::mutex buf_m_;
  mutable std::unordered_map<size_t, cv::Mat> buf_;
  mutable std::deque<size_t> buf_order_;
};

/// Dataset-wide class-id check after a scan: when some rows have ids ≥ nc, the largest id equals nc and id 0
/// never occurs, the labels are 1-based — throws std::runtime_error saying so (largest id, nc, first file:line).
/// Other out-of-range rows only skip their images (the Dataset warns once with the counts).
void check_class_ids(const ScanStats& stats, const DatasetInfo& info);

}  // namespace yolo11::data
