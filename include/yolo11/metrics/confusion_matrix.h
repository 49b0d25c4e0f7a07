#pragma once
// Detection confusion matrix as the Ultralytics 8.4.50 validator builds it (`ConfusionMatrix.process_batch`),
// rendered to PNG with OpenCV.
#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace yolo11::metrics {

/// Confusion matrix (nc + 1) × (nc + 1): rows = predicted class (nc = background), columns = true class.
class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int64_t nc, double conf = 0.25, double iou_thres = 0.45);
  /// pred (n, 6) [x1, y1, x2, y2, conf, cls]; gt_cls (m); gt_boxes (m, 4) xyxy (same pixel space).
  void process_batch(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_boxes);
  /// (nc + 1, nc + 1) float64 counts.
  const std::vector<std::vector<double>>& matrix() const { return m_; }
  /// Column-normalised copy (each true-class column sums to 1; +1e-9 guard).
  std::vector<std::vector<double>> normalized() const;
  /// Renders the matrix (counts or normalised) as a PNG heat map with class labels via OpenCV. Throws
  /// std::runtime_error when the file cannot be written.
  void save_png(const std::string& path, const std::vector<std::string>& names, bool normalize) const;
  int64_t nc() const { return nc_; }

 private:
  int64_t nc_;
  double conf_, iou_thres_;
  std::vector<std::vector<double>> m_;
};

}  // namespace yolo11::metrics
