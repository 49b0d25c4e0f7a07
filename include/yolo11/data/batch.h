#pragma once
// The unit that flows from data::Loader to engine::Trainer / engine::Validator.
#include <ATen/Tensor.h>

#include <array>
#include <string>
#include <vector>

namespace yolo11::data {

/// One collated batch. Images stay uint8 until the device (normalisation to float [0,1] happens there).
struct Batch {
  at::Tensor images;     ///< (B, 3, H, W) uint8, RGB, CPU (pinned when training on CUDA)
  at::Tensor batch_idx;  ///< (N) int64: image index in the batch of each target
  at::Tensor cls;        ///< (N) int64: class id of each target
  at::Tensor bboxes;     ///< (N, 4) float32: normalized xywh relative to the network input (W, H)
  std::vector<std::string> im_files;                ///< source image path per image
  std::vector<std::array<int64_t, 2>> ori_shapes;   ///< (h, w) of each original image, pixels
  std::vector<std::array<int64_t, 2>> resized_shapes;  ///< (h, w) after load_image resize, before letterbox
  std::vector<std::array<double, 4>> ratio_pad;     ///< (ratio_h, ratio_w, pad_w, pad_h): letterbox mapping
  int64_t size() const { return images.defined() ? images.size(0) : 0; }
};

}  // namespace yolo11::data
