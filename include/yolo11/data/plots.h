#pragma once
// Pictures of the data: batch mosaics with boxes (train_batch*.jpg, val_batch*_labels/pred.jpg) and labels.jpg.
#include <ATen/Tensor.h>

#include <string>
#include <vector>

#include "yolo11/data/batch.h"

namespace yolo11::data {

class Dataset;

/// Draws up to 16 images of a batch in a grid (max 1920 px wide), each with its boxes and class names, and writes
/// a JPEG to `path` (atomically). Without `preds`: the batch's targets (b.bboxes normalized xywh of the network
/// input). With `preds`: per image an (n, 6) tensor xyxy (network-input pixels), conf, cls; boxes with conf < 0.25
/// are skipped and the confidence is printed. Throws std::runtime_error when the file cannot be written.
void plot_images(const Batch& b, const std::vector<std::string>& names, const std::string& path,
                 const std::vector<at::Tensor>* preds = nullptr);

/// labels.jpg: class instance histogram, box centre (x, y) scatter and box size (w, h) scatter (normalized).
void plot_labels(const Dataset& ds, const std::string& path);

}  // namespace yolo11::data
