#pragma once
// Detection confusion matrix as the Ultralytics 8.4.50 validator builds it (`ConfusionMatrix.process_batch`),
// rendered to PNG with OpenCV.
#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace yolo11::metrics {

/// Any tensor's elements, flattened in row-major order, as float64 values on the CPU (shared by the metrics).
std::vector<double> to_doubles(const at::Tensor& t);

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
  /// Renders the matrix (counts or normalised) as a PNG heat map (plot::render_heatmap: class names on both axes,
  /// UTF-8 through plot/text.h, a colour bar, and the value in each cell when fewer than kMaxAnnotatedRows rows are
  /// drawn). Only plot_classes(max_classes) and background are drawn (a subtitle says "N of nc classes" when that is
  /// not all of them), so the picture stays under ~1,000 px a side. Throws std::runtime_error when the file cannot be
  /// written.
  void save_png(const std::string& path, const std::vector<std::string>& names, bool normalize,
                int64_t max_classes = kMaxPlotClasses) const;
  /// The full (nc + 1) × (nc + 1) count matrix as CSV: a header "predicted\true,<names...>,background", then one row
  /// per predicted class (and background) of integer counts. Throws std::runtime_error when it cannot be written.
  void save_csv(const std::string& path, const std::vector<std::string>& names) const;
  /// The class indices save_png() draws, ascending. With nc >= kMaxAnnotatedRows, classes without a true instance and
  /// without a prediction are left out (coco8's 80 nominal classes draw as the few it holds, with numbers). Of the
  /// rest, all when they are at most max_classes (or max_classes <= 0), else the max_classes with the most true
  /// instances (ties: most predictions, then lower index).
  std::vector<int64_t> plot_classes(int64_t max_classes = kMaxPlotClasses) const;
  static constexpr int64_t kMaxPlotClasses = 50;
  /// save_png() prints the values in the cells when it draws fewer rows than this (background included).
  static constexpr int64_t kMaxAnnotatedRows = 30;
  int64_t nc() const { return nc_; }

 private:
  int64_t nc_;
  double conf_, iou_thres_;
  std::vector<std::vector<double>> m_;
};

}  // namespace yolo11::metrics
