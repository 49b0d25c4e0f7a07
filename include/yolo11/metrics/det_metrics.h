#pragma once
// Detection metrics of the Ultralytics 8.4.50 validator: prediction matching at IoU 0.50:0.05:0.95
// (`match_predictions`), AP by 101-point interpolation (`ap_per_class`, `compute_ap`), P/R at the max-F1
// confidence, mAP50 / mAP50-95, fitness (= mAP50-95), the confusion matrix and the per-class table.
#include <ATen/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "yolo11/metrics/confusion_matrix.h"

namespace yolo11::metrics {

constexpr int kNumIou = 10;
/// The 10 IoU thresholds 0.50, 0.55, …, 0.95 as float32 values (torch.linspace(0.5, 0.95, 10)).
std::array<float, kNumIou> iou_thresholds();

/// Which predictions are true positives at each IoU threshold. pred_cls (n) and gt_cls (m) integer or float
/// class ids; iou (m, n) GT × prediction IoU. Per threshold t: pairs with equal class and IoU ≥ t; each
/// prediction keeps its highest-IoU GT; each GT keeps the prediction of smallest index (= highest confidence
/// in NMS order). Returns (n, 10) bool on the CPU.
at::Tensor match_predictions(const at::Tensor& pred_cls, const at::Tensor& gt_cls, const at::Tensor& iou);

/// np.interp(x, xp, fp, left, right) with NumPy's rules (xp non-decreasing; repeated xp take the last value).
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp, double left, double right);

/// AP of one recall/precision curve (cumulative, in confidence order): envelope + 101-point interpolation +
/// trapezoidal integration. Returns AP in [0, 1].
double compute_ap(const std::vector<double>& recall, const std::vector<double>& precision);

/// Per-class results (only classes that occur in the ground truth are evaluated).
struct ClassResult {
  int64_t cls = 0;
  std::string name;
  int64_t images = 0;                ///< images containing this class
  int64_t instances = 0;             ///< GT boxes of this class
  double p = 0, r = 0, f1 = 0;       ///< at the max-F1 confidence (common to all classes)
  std::array<double, kNumIou> ap{};  ///< AP at each IoU threshold
  double ap50() const { return ap[0]; }
  double ap50_95() const;
};

/// Output of ap_per_class, for classes in ascending id order.
struct ApPerClass {
  std::vector<int64_t> classes;   ///< evaluated class ids (unique GT classes)
  std::vector<int64_t> num_gt;    ///< GT count per evaluated class
  std::vector<int64_t> num_pred;  ///< predictions per evaluated class (any confidence)
  std::vector<double> p, r, f1;   ///< at the max-F1 index
  std::vector<std::array<double, kNumIou>> ap;
  std::vector<double> tp, fp;  ///< round(r·n_gt), round(tp/p − tp) at the max-F1 index
  int64_t max_f1_index = 0;    ///< index into the 1000 confidences linspace(0, 1, 1000)
  std::vector<std::vector<double>> p_curve, r_curve, f1_curve;  ///< (classes, 1000) against confidence
  /// (classes, 1000) precision at recall linspace(0, 1, 1000) at IoU 0.50: np.interp of the precision envelope of
  /// compute_ap (the reference's prec_values, the PR curve). A class without predictions has a zero row (the
  /// reference has no row for it).
  std::vector<std::vector<double>> pr_curve;
};

/// tp (N, 10) bool, conf (N), pred_cls (N), target_cls (M) → per-class curves and APs (CPU, computed in double).
ApPerClass ap_per_class(const at::Tensor& tp, const at::Tensor& conf, const at::Tensor& pred_cls,
                        const at::Tensor& target_cls, double eps = 1e-16);

/// Accumulates the validator's per-image statistics; compute() gives per-class and mean P, R, mAP50,
/// mAP50-95 and fitness.
class DetMetrics {
 public:
  explicit DetMetrics(std::vector<std::string> names);

  /// pred (n, 6) [x1, y1, x2, y2, conf, cls] (network-input pixels, NMS order = descending confidence);
  /// gt_cls (m) integer/float; gt_boxes (m, 4) xyxy in the same pixel space. Any device (copied to CPU).
  /// Also feeds the confusion matrix. Throws std::runtime_error for bad shapes or class ids outside [0, nc).
  void update(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_boxes);
  void reset();

  struct Results {
    double precision = 0, recall = 0, map50 = 0, map75 = 0, map50_95 = 0;
    double fitness = 0;                  ///< = map50_95 (Ultralytics 8.4.50 weights [0, 0, 0, 1])
    std::vector<ClassResult> per_class;  ///< evaluated classes (present in GT), ascending id
    std::vector<double> maps;            ///< (nc) AP50-95 per class; mAP50-95 for classes not evaluated
    int64_t images = 0, instances = 0;   ///< images seen, GT boxes
    int64_t max_f1_index = 0;
  };
  Results compute() const;
  /// ap_per_class() over everything accumulated so far (compute() is built on it).
  ApPerClass ap_stats() const;

  /// Ultralytics-style table: header, "all" row, then one row per evaluated class (when nc > 1).
  std::string table(const Results& r) const;
  /// Writes confusion_matrix.png (counts) or the normalised version at `path`.
  void save_confusion_matrix_png(const std::string& path, bool normalize = false) const;
  /// Writes the full confusion matrix (counts, every class) as CSV at `path` (ConfusionMatrix::save_csv).
  void save_confusion_matrix_csv(const std::string& path) const;
  /// Writes PR_curve.png, F1_curve.png, P_curve.png and R_curve.png into the existing directory `save_dir`, as the
  /// reference validator does with plots=true (metrics/curves.h; recomputes ap_stats()). Throws std::runtime_error
  /// when a file cannot be written.
  void save_curves(const std::string& save_dir) const;
  const ConfusionMatrix& confusion_matrix() const { return cm_; }
  const std::vector<std::string>& names() const { return names_; }
  int64_t seen() const { return seen_; }

 private:
  std::vector<std::string> names_;
  ConfusionMatrix cm_;
  std::vector<at::Tensor> tp_, conf_, pred_cls_, target_cls_;
  std::vector<int64_t> images_per_class_;
  int64_t seen_ = 0;
};

}  // namespace yolo11::metrics
