#pragma once
// Pictures of the data: batch mosaics with boxes (train_batch*.jpg, val_batch*_labels/pred.jpg) and labels.jpg.
#include <ATen/Tensor.h>

#include <string>
#include <vector>

#include "yolo11/data/batch.h"

namespace yolo11::data {
class Dataset;
}

namespace yolo11::plot {

/// Draws up to 16 images of a batch in a grid (max 1920 px wide), each with its boxes and class names, and writes
/// a JPEG to `path` (atomically). Without `preds`: the batch's targets (b.bboxes normalized xywh of the network
/// input). With `preds`: per image an (n, 6) tensor xyxy (network-input pixels), conf, cls; boxes with conf < 0.25
/// are skipped and the confidence is printed. Captions stay inside their image's tile (plot::caption_rect). Throws
/// std::runtime_error when the file cannot be written.
void plot_images(const data::Batch& b, const std::vector<std::string>& names, const std::string& path,
                 const std::vector<at::Tensor>* preds = nullptr);

/// labels.jpg (1400 × 1140 px): instances per class as a bar chart with the class names under the bars
/// (plot::draw_bars: rotated and abbreviated when they do not fit), and the densities of box centres (x, y) and box sizes (w, h) on 0…1
/// axes with ticks. Throws std::runtime_error when the file cannot be written.
void plot_labels(const data::Dataset& ds, const std::string& path);

}  // namespace yolo11::plot
