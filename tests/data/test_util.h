#pragma once
// Helpers shared by the data tests: tensor ↔ cv::Mat and box list conversions.
#include <torch/torch.h>

#include <opencv2/core.hpp>

#include <cstring>
#include <vector>

#include "yolo11/data/transforms.h"

namespace yolo11::data::testutil {

/// (H, W, 3) uint8 tensor → CV_8UC3 (copy).
inline cv::Mat to_mat(const at::Tensor& t) {
  auto c = t.contiguous();
  cv::Mat m(static_cast<int>(c.size(0)), static_cast<int>(c.size(1)), CV_8UC3);
  std::memcpy(m.data, c.data_ptr<uint8_t>(), c.numel());
  return m;
}
/// CV_8UC3 → (H, W, 3) uint8 tensor (copy).
inline at::Tensor to_tensor(const cv::Mat& m) {
  cv::Mat c = m.isContinuous() ? m : m.clone();
  return torch::from_blob(c.data, {c.rows, c.cols, c.channels()}, torch::kUInt8).clone();
}
inline std::vector<Box> to_boxes(const at::Tensor& t) {
  auto c = t.to(torch::kFloat).contiguous();
  std::vector<Box> out(c.size(0));
  if (c.numel()) std::memcpy(out.data(), c.data_ptr<float>(), c.numel() * sizeof(float));
  return out;
}
inline at::Tensor boxes_tensor(const std::vector<Box>& b) {
  return torch::from_blob(const_cast<Box*>(b.data()), {static_cast<int64_t>(b.size()), 4}, torch::kFloat).clone();
}
inline std::vector<int64_t> to_cls(const at::Tensor& t) {
  auto c = t.to(torch::kLong).contiguous().flatten();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
inline at::Tensor cls_tensor(const std::vector<int64_t>& c) {
  return torch::tensor(c, torch::kLong).reshape({static_cast<int64_t>(c.size()), 1});
}
inline at::Tensor keep_tensor(const std::vector<uint8_t>& k) {
  return torch::from_blob(const_cast<uint8_t*>(k.data()), {static_cast<int64_t>(k.size())}, torch::kUInt8)
      .to(torch::kBool);
}

}  // namespace yolo11::data::testutil
